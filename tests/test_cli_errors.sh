#!/usr/bin/env bash
# Bad input never crashes, never overwrites: a one-line error naming what and
# where, and a non-zero exit, for missing/empty/truncated/corrupt files, wrong
# magic, unknown flags, malformed numbers and impossible configs.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
: > "$T/empty.txt"
printf 'hello\n' > "$T/tiny.txt"

expect_error "unknown command" "unknown command 'trian'" "$A" trian
expect_error "unknown flag" "unknown flag '--lrr'" "$A" train --data "$T/small.txt" --lrr 1
expect_error "malformed number" "--lr expects a number, got 'fast'" "$A" train --data "$T/small.txt" --lr fast
expect_error "malformed integer" "--max-steps expects an integer, got '1e3'" "$A" train --data "$T/small.txt" --max-steps 1e3
expect_error "flag without value" "--seed needs a value" "$A" train --data "$T/small.txt" --seed
expect_error "missing data file" "cannot open '$T/nope.txt'" "$A" train --data "$T/nope.txt" -o "$T/o1"
expect_error "no data given" "no training data" "$A" train -o "$T/o1"
expect_error "empty data file" "'$T/empty.txt' is empty" "$A" train --data "$T/empty.txt" -o "$T/o1"
expect_error "data too small" "training tokens, need at least" "$A" train --data "$T/tiny.txt" -o "$T/o1"
expect_error "directory as data" "not a regular file" "$A" train --data "$T" -o "$T/o1"
expect_error "heads do not divide" "d_model 128 is not divisible by n_head 3" "$A" train --data "$T/small.txt" --n-head 3
expect_error "zero layers" "must all be positive" "$A" train --data "$T/small.txt" --n-layer 0
expect_error "unknown preset" "unknown preset 'gpt5'" "$A" train --data "$T/small.txt" --preset gpt5
expect_error "unknown norm" "unknown norm 'batchnorm'" "$A" train --data "$T/small.txt" --norm batchnorm
expect_error "seq beyond ctx" "--seq 100 is longer than the model context 64" "$A" train --data "$T/small.txt" --seq 100
expect_error "bad lr range" "--lr-min" "$A" train --data "$T/small.txt" --lr 1e-4 --lr-min 1e-3

# a good checkpoint to protect
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 5 --val-fraction 0.2 -q -o "$T/good" || fail "training the good checkpoint failed"
good="$T/good/ckpt.bin"
sum_before=$(sha256sum "$good" | cut -d' ' -f1)

cp "$good" "$T/trunc.bin" && truncate -s 2000 "$T/trunc.bin"
expect_error "truncated checkpoint" "truncated (2000 of" "$A" generate -m "$T/trunc.bin"
cp "$good" "$T/flip.bin" && printf '\xff' | dd of="$T/flip.bin" bs=1 seek=3000 conv=notrunc status=none
expect_error "corrupt checkpoint" "checksum mismatch" "$A" generate -m "$T/flip.bin"
expect_error "wrong magic" "not an andrea checkpoint (bad magic)" "$A" generate -m "$T/small.txt"
expect_error "short file" "truncated header" "$A" eval -m "$T/tiny.txt" -d "$T/small.txt"
expect_error "missing checkpoint" "cannot open checkpoint '$T/none.bin'" "$A" generate -m "$T/none.bin"
expect_error "no model" "no model given" "$A" generate -p hi
expect_error "bad top-p" "top-p" "$A" generate -m "$good" --top-p 1.5
# issue 15: an over-long prompt is cut from the left with a notice, as llama.cpp does
"$A" generate -m "$good" -p "$(head -c 100 "$T/small.txt")" -n 4 > /dev/null 2> "$T/cut.err" \
    && grep -q "more than the context of 32: cut from the left" "$T/cut.err" \
    && pass "prompt beyond context: cut from the left with a notice" || fail "prompt beyond context: $(cat "$T/cut.err")"
expect_error "resume corrupt" "checksum mismatch" "$A" train --resume "$T/flip.bin" --data "$T/small.txt" -o "$T/good"
tr a-z A-Z < "$T/small.txt" > "$T/other.txt"
expect_error "resume other data" "is not the data checkpoint" "$A" train --resume "$good" --data "$T/other.txt" -o "$T/good"
expect_error "resume conflicting shape" "conflict with checkpoint" "$A" train --resume "$good" --data "$T/small.txt" --n-layer 3 -o "$T/good"
expect_error "eval missing text" "cannot open '$T/nope.txt'" "$A" eval -m "$good" -d "$T/nope.txt"
expect_error "eval text too short" "evaluation needs at least" "$A" eval -m "$good" -d "$T/tiny.txt"
expect_error "output dir is a file" "exists and is not a directory" "$A" train --data "$T/small.txt" --preset tiny --seq 16 --max-steps 1 -o "$T/small.txt"

# non-finite steps are skipped with a warning; too many in a row stop training cleanly
out=$("$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 8 --val-fraction 0.2 --inject-nan-step 3 --inject-nan-count 2 -q -o "$T/nan1" 2>&1) \
    && echo "$out" | grep -q "step 4: non-finite gradient norm" && pass "2 NaN steps skipped, training finished" || fail "NaN skip: $out"
expect_error "NaN stops training" "training stopped at step 8: 5 consecutive skipped steps (4-8: non-finite" \
    sh -c "'$A' train --data '$T/small.txt' --preset tiny --seq 16 --batch 2 --max-steps 20 --val-fraction 0.2 --inject-nan-step 3 --inject-nan-count 10 -q -o '$T/nan2' 2>&1 >/dev/null | grep -v '^warning' >&2; exit 1"
"$A" eval -m "$T/nan1/ckpt.bin" -d "$T/small.txt" --seq 16 > /dev/null || fail "checkpoint after skipped NaN steps does not load"

# the coherence gate halts a run whose samples collapse: its source is one passage said
# over and over, so its samples end up looping (tests/test_gate_halt.sh checks more)
expect_error "gate halts training" "coherence gate: 2 consecutive samples collapsed (the last: loops" \
    "$A" train --data "$(dirname "$0")/fixtures/ckpt_v1_data.txt" --preset tiny --max-steps 800 \
    --sample-every 20 --eval-every 20 --warmup 10 --gate-patience 2 -t 1 -q -o "$T/gate"
[ "$(grep '"type":"sample"' "$T/gate/log.jsonl" | tail -2 | grep -c '"strike":"loops"')" -eq 2 ] \
    && pass "the last two samples logged were counted as loops" || fail "gate samples in log"
expect_error "gate without word list" "install wamerican" "$A" train --data "$T/small.txt" --preset tiny --seq 16 --max-steps 5 --val-fraction 0.2 --words "$T/no_words.txt" -q -o "$T/gate2"

sum_after=$(sha256sum "$good" | cut -d' ' -f1)
[ "$sum_before" = "$sum_after" ] && pass "the good checkpoint was never overwritten" || fail "good checkpoint changed"
ls "$T/good" | grep -q '\.tmp$' && fail "a temp file was left behind" || pass "no temp files left"
finish
