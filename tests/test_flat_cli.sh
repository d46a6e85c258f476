#!/usr/bin/env bash
# ANDREA's flat checkpoint through `andrea convert`: a run with a Harris tokenizer goes out
# as [step][n][weights][m][v] with its harris_segments.json, comes back as a training
# checkpoint that resumes at the same step, and goes out again byte-identical.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_text TXT
head -c 300000 "$TXT" > "$T/text.txt"
"$A" tokenizer train -k harris -i "$T/text.txt" -N 200 -o "$T/h.tok" > /dev/null || fail "harris tokenizer"
"$A" train --data "$T/text.txt" --tokenizer "$T/h.tok" --preset tiny --max-steps 20 --lr 1e-2 \
    --warmup 2 --sample-every 0 --eval-every 0 -q -t 1 -o "$T/run" > /dev/null || fail "training"
mkdir -p "$T/andrea"
"$A" convert "$T/run/ckpt.bin" "$T/andrea/model.bin" --to flat > "$T/out1.txt" || fail "export: $(cat "$T/out1.txt")"
grep -q "step 20, .* parameters, weights + AdamW m, v" "$T/out1.txt" && pass "exported step 20 with moments" || fail "export line: $(cat "$T/out1.txt")"
[ -s "$T/andrea/harris_segments.json" ] && pass "harris_segments.json beside it" || fail "no harris_segments.json"
n=$(od -An -t d4 -j 4 -N 4 "$T/andrea/model.bin" | tr -d ' ')
step=$(od -An -t d4 -N 4 "$T/andrea/model.bin" | tr -d ' ')
size=$(wc -c < "$T/andrea/model.bin")
[ "$step" -eq 20 ] && [ "$size" -eq $((8 + 12 * n)) ] && pass "header step $step, n_params $n, $size bytes = 8 + 12 n" || fail "header step $step n $n size $size"

# back: the shape of tiny, V from the harris_segments.json found beside the file
"$A" convert "$T/andrea/model.bin" "$T/back.ckpt" --preset tiny --data "$T/text.txt" > "$T/out2.txt" || fail "import: $(cat "$T/out2.txt")"
grep -q "continue with: andrea train --resume" "$T/out2.txt" && pass "imported" || fail "import line: $(cat "$T/out2.txt")"
"$A" convert "$T/back.ckpt" "$T/again.bin" --to flat > /dev/null || fail "re-export"
cmp -s "$T/andrea/model.bin" "$T/again.bin" && pass "flat -> andrea -> flat: byte-identical (weights, m, v, step)" || fail "re-export differs"

# the imported checkpoint resumes at step 21 from the trained weights
"$A" train --resume "$T/back.ckpt" --max-steps 24 -q -t 1 -o "$T/resumed" > /dev/null || fail "resume"
first=$(step_losses "$T/resumed/log.jsonl" | head -1)
init=$(step_losses "$T/run/log.jsonl" | head -1 | cut -d' ' -f2)
last=$(step_losses "$T/run/log.jsonl" | tail -1 | cut -d' ' -f2)
set -- $first
[ "$1" = 21 ] && awk -v a="$2" -v i="$init" -v l="$last" 'BEGIN { exit !(a < i - 0.5 && a < l + 0.3) }' &&
    pass "resumed at step $1, loss $2 (step 1 had $init, step 20 $last)" || fail "resume: first step '$first', init $init"
mkdir -p "$T/bare" && cp "$T/again.bin" "$T/bare/"
expect_error "flat without tokenizer" "give --tokenizer" "$A" convert "$T/bare/again.bin" "$T/x.ckpt" --preset tiny
finish
