#!/usr/bin/env bash
# The divergence guard end to end (issue 22's reproducers): a run started with --lr 1e10
# stops with one line and leaves a checkpoint that evaluates to a finite loss (was: weights
# of 1e10, `eval` printing loss -nan with exit 0); resuming a good checkpoint with --lr 1e10
# leaves that checkpoint byte for byte (was: overwritten with the damaged step); a run whose
# loss blows up at a high but finite lr is stopped at the spike and keeps the weights from
# before it; a healthy run is never touched by the guard (no skip line).
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
D="$(cd "$(dirname "$0")" && pwd)/fixtures/ckpt_v1_data.txt"
q=(-q --preset tiny --data "$D" --sample-every 0 --eval-every 0)

# 1. --lr 1e10 from the start
rc=0; "$A" train "${q[@]}" --lr 1e10 --warmup 1 --max-steps 30 -o "$T/x" 2> "$T/err" || rc=$?
if [ "$rc" -ne 0 ] && grep -q "past --max-weight" "$T/err" &&
    grep -q "training stopped at step 5: 5 consecutive skipped steps" "$T/err"; then
    pass "--lr 1e10: stopped at step 5, every update refused by the weight bound"
else fail "--lr 1e10: exit $rc: $(cat "$T/err")"; fi
loss=$("$A" eval -m "$T/x/ckpt.bin" -d "$D" 2> "$T/err" | sed 's/.*| loss //; s/ |.*//')
awk -v l="$loss" 'BEGIN { exit !(l + 0 == l && l > 5 && l < 6) }' \
    && pass "its checkpoint evaluates to $loss (the initial weights: about ln 257 = 5.55)" \
    || fail "eval after --lr 1e10: '$loss' $(cat "$T/err")"
grep -q '"type":"skip","step":1,.*"reason":"this update could carry a weight' "$T/x/log.jsonl" \
    && pass "log.jsonl records each skip with its reason" || fail "skip reason not in log.jsonl"

# 2. a good checkpoint resumed with a destructive setting stays as it was
"$A" train "${q[@]}" --max-steps 20 -o "$T/g" 2> /dev/null && cp "$T/g/ckpt.bin" "$T/g20.bin"
rc=0; "$A" train -q --resume "$T/g/ckpt.bin" --lr 1e10 --max-steps 40 2> "$T/err" || rc=$?
if [ "$rc" -ne 0 ] && cmp -s "$T/g/ckpt.bin" "$T/g20.bin" &&
    grep -q "'$T/g/ckpt.bin' is untouched and holds the last sane state (the weights of step 20)" "$T/err"; then
    pass "resume with --lr 1e10: the step-20 checkpoint is untouched, and the message says so"
else fail "resume with --lr 1e10: exit $rc, $(cmp "$T/g/ckpt.bin" "$T/g20.bin" 2>&1): $(cat "$T/err")"; fi

# 3. a finite lr that blows the loss up, resumed from a good checkpoint: the spike stops
# the run; the update before it did the damage, so the state is not checkpointed (its loss
# on the run's own text is far worse than guessing) and ckpt.bin stays the good one
"$A" train "${q[@]}" --max-steps 40 --ckpt-every 20 -o "$T/s" 2> /dev/null && cp "$T/s/ckpt.bin" "$T/s40.bin"
rc=0; "$A" train -q --resume "$T/s/ckpt.bin" --lr 30 --max-steps 100 2> "$T/err" || rc=$?
if [ "$rc" -ne 0 ] && grep -q "(--spike-loss)" "$T/err" && cmp -s "$T/s/ckpt.bin" "$T/s40.bin" &&
    grep -q "refusing to checkpoint a diverged state: its loss on a row of the training text is" "$T/err"; then
    pass "--lr 30 after 40 good steps: the loss spike stopped the run; the step-40 checkpoint kept"
else fail "--lr 30: exit $rc, $(cmp "$T/s/ckpt.bin" "$T/s40.bin" 2>&1): $(grep -v '^warning' "$T/err")"; fi

# 4. the guard never fires on a healthy run, and can be turned off
"$A" train "${q[@]}" --max-steps 60 -o "$T/h" 2> "$T/err" && ! grep -q '"type":"skip"' "$T/h/log.jsonl" \
    && [ ! -s "$T/err" ] && pass "a healthy 60-step run: no step skipped" || fail "healthy run: $(cat "$T/err")"
rc=0; "$A" train "${q[@]}" --lr 30 --warmup 10 --max-steps 12 --spike-loss 0 --spike-grad 0 \
    --max-weight 0 -o "$T/off" 2> "$T/err" || rc=$?
[ "$rc" -eq 0 ] && ! grep -q '"type":"skip"' "$T/off/log.jsonl" \
    && pass "--spike-loss 0 --spike-grad 0 --max-weight 0: the guard is off" || fail "guard off: exit $rc $(cat "$T/err")"
expect_error "--spike-loss -1" "spike-loss, --spike-grad and --max-weight must be finite and >= 0" \
    "$A" train "${q[@]}" --spike-loss -1 -o "$T/neg"
finish
