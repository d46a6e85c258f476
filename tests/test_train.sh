#!/usr/bin/env bash
# End to end: a tiny model learns tinyshakespeare (or the fortunes text); same seed gives the same
# losses; a run stopped and resumed gives exactly the losses of one that was not.
. "$(dirname "$0")/lib.sh"
need_text data
T="$ANDREA_TMP"
common=(--data "$data" --preset tiny --batch 8 --seq 32 --max-steps 400 --warmup 20 --lr 3e-3
        --eval-every 100 --eval-batches 40 --ckpt-every 100 -t 2 -q)

"$ANDREA_BIN" train "${common[@]}" -o "$T/a" || fail "run a exited non-zero"
"$ANDREA_BIN" train "${common[@]}" -o "$T/b" || fail "run b exited non-zero"

# 1. it learns: the final validation loss is far below uniform (ln 257 = 5.55)
#    and below the unigram entropy of the text (~3.3 nats/char for this corpus).
#    The fortunes text (no ../shared) has the same unigram entropy (3.30) and gives 2.73.
lim=2.65; [ "$TEXT_KIND" = fortunes ] && lim=2.85
val=$(grep '"type":"eval"' "$T/a/log.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
if awk -v v="$val" -v lim=$lim 'BEGIN { exit !(v < lim) }'; then pass "val loss $val < $lim after 400 steps"
else fail "val loss $val, expected < $lim"; fi

# 2. determinism: identical step losses for the same seed
if diff <(step_losses "$T/a/log.jsonl") <(step_losses "$T/b/log.jsonl") > /dev/null; then
    pass "same seed, same 400 losses"
else fail "runs with the same seed differ"; fi

# 3. exact resume after a deterministic stop
rc=0; "$ANDREA_BIN" train "${common[@]}" --stop-at 150 -o "$T/c" || rc=$?
[ "$rc" -eq 130 ] || fail "--stop-at: exit $rc, expected 130"
"$ANDREA_BIN" train --resume "$T/c/ckpt.bin" --data "$data" -t 2 -q -o "$T/c" || fail "resume failed"
if diff <(step_losses "$T/a/log.jsonl") <(step_losses "$T/c/log.jsonl") > /dev/null; then
    pass "stopped at 150 + resumed = uninterrupted, all 400 losses bit-identical"
else fail "resumed run differs: $(diff <(step_losses "$T/a/log.jsonl") <(step_losses "$T/c/log.jsonl") | head -3)"; fi
if cmp -s <(grep '"type":"eval"' "$T/a/log.jsonl") <(grep '"type":"eval"' "$T/c/log.jsonl"); then pass "validation losses identical too"
else fail "validation losses differ after resume"; fi

# 4. a real SIGTERM mid-run: checkpoint written, exit 130, and the resume still matches
"$ANDREA_BIN" train "${common[@]}" --max-steps 4000 -o "$T/d" & pid=$!
for _ in $(seq 1 200); do
    n=$(grep -c '"type":"step"' "$T/d/log.jsonl" 2>/dev/null || true)
    [ "${n:-0}" -ge 50 ] && break; sleep 0.05
done
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?
if [ "$rc" -eq 130 ] && [ -f "$T/d/ckpt.bin" ]; then
    stopped=$(step_losses "$T/d/log.jsonl" | tail -1 | cut -d' ' -f1)
    pass "SIGTERM: exit 130 at step $stopped with a checkpoint"
    "$ANDREA_BIN" train --resume "$T/d/ckpt.bin" --data "$data" --max-steps 4000 --stop-at $((stopped + 20)) -t 2 -q -o "$T/d"
    "$ANDREA_BIN" train "${common[@]}" --max-steps 4000 --stop-at $((stopped + 20)) -o "$T/e"
    if diff <(step_losses "$T/d/log.jsonl") <(step_losses "$T/e/log.jsonl") > /dev/null; then
        pass "resume after SIGTERM matches an uninterrupted run"
    else fail "resume after SIGTERM differs"; fi
elif [ "$rc" -eq 0 ]; then echo "note: run finished before the signal; SIGTERM case not exercised"
else fail "SIGTERM: exit $rc, ckpt present: $([ -f "$T/d/ckpt.bin" ] && echo yes || echo no)"; fi

# 5. the best checkpoint exists, generates, and eval agrees with training's last validation
[ -f "$T/a/best.bin" ] || fail "no best.bin"
out=$("$ANDREA_BIN" generate -m "$T/a/ckpt.bin" -p "ROMEO:" -n 20 --temp 0 2>/dev/null)
out2=$("$ANDREA_BIN" generate -m "$T/a/ckpt.bin" -p "ROMEO:" -n 20 --temp 0 2>/dev/null)
[ "$out" = "$out2" ] && [ ${#out} -ge 20 ] && pass "greedy generation is stable: $(echo "$out" | head -c 60 | tr '\n' ' ')" || fail "greedy generation unstable or short"
s1=$("$ANDREA_BIN" generate -m "$T/a/ckpt.bin" -n 25 --seed 5 2>/dev/null)
s2=$("$ANDREA_BIN" generate -m "$T/a/ckpt.bin" -n 25 --seed 5 2>/dev/null)
[ "$s1" = "$s2" ] && pass "sampling with --seed is reproducible" || fail "same --seed, different samples"
finish
