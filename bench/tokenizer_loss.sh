#!/usr/bin/env bash
# tokenizer_loss.sh - the same small model trained with each tokenizer for the same wall
# time; validation loss per BYTE (so tokenizers with longer tokens are compared fairly).
# usage: bench/tokenizer_loss.sh [ANDREA_BIN] [CORPUS] [SECONDS_PER_RUN]
set -euo pipefail
A=${1:-build/andrea}
corpus=${2:-../shared/data/tinyshakespeare.txt}
budget=${3:-60}
W=$(mktemp -d)
n=$(wc -c < "$corpus")
head -c $((n * 9 / 10)) "$corpus" > "$W/train.txt"
tail -c $((n - n * 9 / 10)) "$corpus" > "$W/val.txt"
val_bytes=$(wc -c < "$W/val.txt")
"$A" tokenizer train -k bpe -i "$W/train.txt" -V 2305 -o "$W/bpe.tok" -q
"$A" tokenizer train -k harris -i "$W/train.txt" -N 2048 -o "$W/harris.tok" -q
common=(--preset baby --seq 64 --batch 12 --val-fraction 0.01 --eval-every 0 --eval-batches 1
        --sample-every 0 --ckpt-every 0 -t "${THREADS:-2}" -q)
printf "%-8s %6s %8s %10s %12s %14s %14s\n" tokenizer V steps ms/step "val loss/tok" "val bytes/tok" "val loss/byte"
for tok in byte char "$W/bpe.tok" "$W/harris.tok"; do
    name=$(basename "$tok" .tok)
    # calibrate: 20 steps give ms/step, then the budget sets the number of steps
    "$A" train --data "$W/train.txt" --tokenizer "$tok" "${common[@]}" --max-steps 20 -o "$W/cal_$name"
    ms=$(grep '"type":"step"' "$W/cal_$name/log.jsonl" | tail -10 | sed 's/.*"ms":\([0-9.]*\).*/\1/' | sort -n | sed -n 5p)
    steps=$(awk -v b="$budget" -v ms="$ms" 'BEGIN { printf "%d", b * 1000 / ms }')
    "$A" train --data "$W/train.txt" --tokenizer "$tok" "${common[@]}" --max-steps "$steps" -o "$W/run_$name"
    line=$("$A" eval -m "$W/run_$name/ckpt.bin" -d "$W/val.txt" --seq 64 --batch 16 -t "${THREADS:-2}")
    loss=$(echo "$line" | sed 's/.*| loss \([0-9.]*\) .*/\1/')
    toks=$(echo "$line" | sed 's/.*: \([0-9]*\) tokens.*/\1/')
    V=$("$A" info -m "$W/run_$name/ckpt.bin" | grep -o 'vocab [0-9]*' | cut -d' ' -f2)
    awk -v n="$name" -v V="$V" -v s="$steps" -v ms="$ms" -v l="$loss" -v t="$toks" -v b="$val_bytes" \
        'BEGIN { printf "%-8s %6d %8d %10.1f %12.4f %14.3f %14.4f\n", n, V, s, ms, l, b / t, l * t / b }'
done
echo "reproduce: bench/tokenizer_loss.sh $A $corpus $budget   (THREADS=${THREADS:-2})"
rm -rf "$W"
