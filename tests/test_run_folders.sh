#!/usr/bin/env bash
# Run folders protect themselves and the log never lies (issue 10): two runs into one
# folder, a fresh run over another run, resume without -o, the log on a full disk, the
# log after a kill (no duplicate or torn lines), float flags out of range, the NaN guard's
# last checkpoint and exit status, and the CLI bounds (-t, eval --seq, --resume with
# --tokenizer). Each check failed before the fix it tests.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
F="$(cd "$(dirname "$0")" && pwd)/fixtures"
cp "$F/ckpt_v1_data.txt" "$T/small.txt"
small=(--data "$T/small.txt" --preset tiny --n-layer 1 --d-model 8 --n-head 1 --ctx 8 --tied 1
       --seq 8 --batch 2 --warmup 2 --eval-every 3 --val-fraction 0.2 --sample-every 0 -t 1 -q)
step_of() { "$A" info -m "$1" | sed -n 's/.*trained steps \([0-9]*\).*/\1/p'; }
# every line of a log is one JSON object, and no step is logged twice
check_log() {
    python3 - "$1" <<'PY'
import json, sys
seen = set()
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    o = json.loads(line)   # a torn line or a bare nan/inf raises
    if o["type"] in ("step", "skip"):
        if o["step"] in seen: sys.exit("line %d: step %d logged twice" % (n, o["step"]))
        seen.add(o["step"])
PY
}

# 1. a second run into a folder in use is refused, naming the folder and the holder's pid
"$A" train "${small[@]}" --max-steps 1000000 --ckpt-every 0 -o "$T/busy" & pid=$!
for _ in $(seq 300); do grep -q '"type":"step"' "$T/busy/log.jsonl" 2> /dev/null && break; sleep 0.1; done
expect_error "second run into a busy folder" "'$T/busy' is in use by another run (pid $pid)" \
    "$A" train "${small[@]}" --max-steps 3 -o "$T/busy"
kill -TERM $pid; wait $pid
check_log "$T/busy/log.jsonl" && pass "the first run's log is intact" || fail "busy log"

# 2. a fresh run into a folder holding another run: refused (exit 2), --force replaces it
"$A" train "${small[@]}" --max-steps 4 -o "$T/b" || fail "run b"
rc=0; "$A" train "${small[@]}" --max-steps 2 -o "$T/b" 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "holds another run" "$T/err" && [ "$(step_of "$T/b/ckpt.bin")" = 4 ] \
    && pass "a new run over another run is refused: $(cat "$T/err")" \
    || fail "new run over another: exit $rc '$(cat "$T/err")', step $(step_of "$T/b/ckpt.bin")"
"$A" train "${small[@]}" --max-steps 2 -o "$T/b" --force && [ "$(step_of "$T/b/ckpt.bin")" = 2 ] \
    && [ "$(grep -c '"type":"step"' "$T/b/log.jsonl")" = 2 ] \
    && pass "--force replaces it (checkpoint and log)" || fail "--force"

# 3. resume without -o continues in the checkpoint's folder, not over ./out
mkdir -p "$T/cwd" && (cd "$T/cwd" && "$A" train "${small[@]}" --max-steps 3 -o out) || fail "run in ./out"
cp "$T/cwd/out/ckpt.bin" "$T/out_before.bin"
rc=0; "$A" train "${small[@]}" --max-steps 6 --stop-at 2 -o "$T/c" || rc=$?
(cd "$T/cwd" && "$A" train --resume "$T/c/ckpt.bin" -t 1 -q) || fail "resume without -o"
cmp -s "$T/cwd/out/ckpt.bin" "$T/out_before.bin" && [ "$(step_of "$T/c/ckpt.bin")" = 6 ] \
    && [ "$(grep -c '"type":"step"' "$T/c/log.jsonl")" = 6 ] \
    && pass "resume without -o writes into '$T/c', ./out untouched" \
    || fail "resume without -o: ./out changed or '$T/c' not continued"

# 4. the log on a full disk stops the run with one line and a non-zero exit
rc=0; "$A" train "${small[@]}" --max-steps 4 --stop-at 2 -o "$T/full" || rc=$?
# a device is no log file (issue 22): a link to /dev/full is refused before anything runs
ln -sf /dev/full "$T/full/log.jsonl"
expect_error "log linked to /dev/full" "log.jsonl': it is a symbolic link to a character device" \
    "$A" train --resume "$T/full/ckpt.bin" -t 1 -q -o "$T/full"
# a full disk for real: the log a link to a regular file on a tiny tmpfs filled up (root)
mkdir -p "$T/tiny"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=64k tmpfs "$T/tiny" 2> /dev/null; then
    : > "$T/tiny/log.jsonl"
    dd if=/dev/zero of="$T/tiny/fill" bs=4k 2> /dev/null || true
    ln -sf "$T/tiny/log.jsonl" "$T/full/log.jsonl"
    expect_error "log on a full disk" "log '$T/full/log.jsonl': write failed: No space left on device" \
        "$A" train --resume "$T/full/ckpt.bin" -t 1 -q -o "$T/full"
    umount "$T/tiny"
else
    echo "skip: the full-disk log check needs root and a tmpfs mount"
fi

# 5. a resume after a kill: the steps after the checkpoint are not logged twice, a torn
# last line goes, and the losses equal an uninterrupted run's
"$A" train "${small[@]}" --max-steps 9 -o "$T/whole" || fail "uninterrupted run"
rc=0; "$A" train "${small[@]}" --max-steps 9 --stop-at 4 -o "$T/k" || rc=$?
cp "$T/k/ckpt.bin" "$T/k4.bin"
rc=0; "$A" train --resume "$T/k/ckpt.bin" --stop-at 7 -t 1 -q || rc=$?
# as if killed after step 7 while the last checkpoint was step 4's, mid-line
cp "$T/k4.bin" "$T/k/ckpt.bin" && printf '{"type":"step","step":8,"lo' >> "$T/k/log.jsonl"
"$A" train --resume "$T/k/ckpt.bin" -t 1 -q || fail "resume after the kill"
if check_log "$T/k/log.jsonl" && [ "$(step_losses "$T/k/log.jsonl")" = "$(step_losses "$T/whole/log.jsonl")" ]
then pass "resume after a kill: each step once, no torn line, losses = uninterrupted"
else fail "log after kill+resume: $(step_losses "$T/k/log.jsonl" | cut -d' ' -f1 | tr '\n' ' ')"; fi
grep -q '"type":"resume","step":4,' "$T/k/log.jsonl" && grep -q '"type":"end","step":9,' "$T/k/log.jsonl" \
    && pass "start, stop, resume and end events" || fail "events missing"

# 6. numbers: a float flag that overflows float is refused; the log stays valid JSON
expect_error "--lr 1e39" "--lr 1e39 is out of range for a float" "$A" train "${small[@]}" --lr 1e39 -o "$T/lr"
expect_error "--lr 1e-50" "--lr 1e-50 is out of range" "$A" train "${small[@]}" --lr 1e-50 -o "$T/lr"

# 7. the NaN guard: the last steps skipped -> ckpt.bin holds the last finite state (the
# weights of step 5, the same as a run stopped there) and the exit status says so
rc=0; "$A" train "${small[@]}" --max-steps 8 --ckpt-every 100 --eval-every 100 --inject-nan-step 5 \
    --inject-nan-count 3 -o "$T/nan" 2> "$T/err" || rc=$?
"$A" train "${small[@]}" --max-steps 8 --ckpt-every 100 --eval-every 100 --stop-at 5 -o "$T/nan5" || true
e1=$("$A" eval -m "$T/nan/ckpt.bin" -d "$T/small.txt" -t 1 | sed 's/.*| loss //; s/ |.*//')
e2=$("$A" eval -m "$T/nan5/ckpt.bin" -d "$T/small.txt" -t 1 | sed 's/.*| loss //; s/ |.*//')
if [ "$rc" -eq 1 ] && grep -q "training ended at step 8: 3 consecutive skipped steps (6-8: non-finite" "$T/err" &&
   grep -q "'$T/nan/ckpt.bin' holds the last sane state (the weights of step 5)" "$T/err" &&
   [ -n "$e1" ] && [ "$e1" = "$e2" ] && check_log "$T/nan/log.jsonl"
then pass "last steps skipped: exit 1, ckpt.bin = the weights of step 5 (eval loss $e1)"
else fail "last steps skipped: exit $rc, eval '$e1' vs '$e2', $(grep -v '^warning' "$T/err")"; fi
# the halt of --max-bad-steps names a checkpoint that exists (none was due before it)
rc=0; "$A" train "${small[@]}" --max-steps 20 --ckpt-every 100 --inject-nan-step 2 --inject-nan-count 50 \
    --max-bad-steps 2 -o "$T/halt" 2> "$T/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "training stopped at step 4: 2 consecutive" "$T/err" && [ "$(step_of "$T/halt/ckpt.bin")" = 4 ] \
    && pass "halt on non-finite steps: the checkpoint it names exists" \
    || fail "halt: exit $rc, $(grep -v '^warning' "$T/err"), ckpt: $(ls "$T/halt")"
# a skipped checkpoint step is still saved, and --stop-at N stops at N when N is skipped
rc=0; "$A" train "${small[@]}" --max-steps 8 --ckpt-every 4 --inject-nan-step 3 --inject-nan-count 1 \
    --stop-at 4 -o "$T/skip4" 2> /dev/null || rc=$?
[ "$rc" -eq 130 ] && [ "$(step_of "$T/skip4/ckpt.bin")" = 4 ] && ! grep -q '"step":5,' "$T/skip4/log.jsonl" \
    && pass "--stop-at 4 with step 4 skipped: stops at 4 with its checkpoint" \
    || fail "--stop-at on a skipped step: exit $rc, checkpoint step $(step_of "$T/skip4/ckpt.bin")"

# 8. flags out of bounds and flags a resume cannot honour
expect_error "-t 10000" "--threads must be between 0 (all cores) and 1024, got 10000" \
    "$A" train "${small[@]}" -t 10000 -o "$T/t"
expect_error "eval --seq -5" "--seq must be >= 0" "$A" eval -m "$T/b/ckpt.bin" -d "$T/small.txt" --seq -5
expect_error "--resume with --tokenizer" "--tokenizer cannot be given with --resume" \
    "$A" train --resume "$T/b/ckpt.bin" --tokenizer char -o "$T/tokres"
finish
