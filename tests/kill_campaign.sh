#!/usr/bin/env bash
# kill_campaign.sh - crash safety, measured: a tiny model that writes a checkpoint every
# step (most of its time is checkpoint writing: fsync) is killed with SIGKILL at random
# moments, then resumed, again and again until it finishes. After every kill:
#   - ckpt.bin, when there is one, loads (andrea eval reads it whole and checks its checksum)
#     and is no further than the log;
#   - log.jsonl holds whole JSON lines, steps 1..k once each, with the losses of an
#     uninterrupted run bit for bit (a resume cuts the log back to its checkpoint first);
#   - a leftover "ckpt.bin.tmp.*" means the kill landed inside a checkpoint write.
# At the end the finished log equals the uninterrupted run's, step for step.
#
# usage: ANDREA_BIN=build/andrea tests/kill_campaign.sh [KILLS [STEPS [SEED]]]
#   (defaults 130 kills, 2000 steps; tests/test_kill_campaign.sh runs a short one)
# Prints the figures docs/reliability.md quotes; exits 1 if any check failed.
set -u
A="${ANDREA_BIN:?ANDREA_BIN must point to the andrea program (the Release build)}"
KILLS=${1:-130}
STEPS=${2:-2000}
RANDOM=${3:-1}
HERE="$(cd "$(dirname "$0")" && pwd)"
T="${ANDREA_TMP:-$(mktemp -d)}"
rm -rf "$T" && mkdir -p "$T"
cp "$HERE/fixtures/ckpt_v1_data.txt" "$T/data.txt"
flags=(--data "$T/data.txt" --preset tiny --seq 16 --batch 2 --max-steps "$STEPS" --warmup 10
       --eval-every 0 --val-fraction 0.2 --sample-every 0 -t 1 -q)

fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

"$A" train "${flags[@]}" --ckpt-every 0 -o "$T/ref" || { echo "reference run failed" >&2; exit 1; }

# check_log LOG: whole JSON lines, steps 1..k once each, losses = the reference's.
# Prints k. A torn last line is reported (exit 3) but is what a resume cuts away.
check_log() {
    python3 - "$1" "$T/ref/log.jsonl" <<'PY'
import json, sys
ref = {}
for line in open(sys.argv[2]):
    o = json.loads(line)
    if o["type"] == "step": ref[o["step"]] = o["loss"]
k, torn = 0, 0
with open(sys.argv[1], "rb") as f: data = f.read()
lines = data.split(b"\n")
if lines[-1]: torn = 1          # no newline at the end: a torn line
for line in lines[:-1]:
    try: o = json.loads(line)
    except ValueError: sys.exit("invalid JSON line: %r" % line[:80])
    if o["type"] != "step": continue
    if o["step"] != k + 1: sys.exit("step %d after step %d (duplicate or gap)" % (o["step"], k))
    if o["loss"] != ref[o["step"]]: sys.exit("step %d: loss %r, uninterrupted %r" % (o["step"], o["loss"], ref[o["step"]]))
    k += 1
print(k)
sys.exit(3 if torn else 0)
PY
}
ckpt_step() { "$A" info -m "$1" 2> /dev/null | sed -n 's/.*trained steps \([0-9]*\).*/\1/p'; }

R="$T/run"
kills=0 in_write=0 resumes=0 matched=0 torn=0 loads=0 starts=0 finished=0
# final_check: a finished run's log equals the uninterrupted one, step for step
final_check() {
    local rc=0 k
    k=$(check_log "$R/log.jsonl" 2> "$T/err") || rc=$?
    if [ "$rc" -eq 0 ] && [ "$k" = "$STEPS" ] && grep -q '"type":"end"' "$R/log.jsonl"; then
        finished=$((finished + 1))
    else fail "finished run $((finished + 1)): log: $(cat "$T/err") ($k steps)"; fi
}
while [ "$kills" -lt "$KILLS" ]; do
    resumed=0 from=0
    if [ -f "$R/ckpt.bin" ]; then
        from=$(ckpt_step "$R/ckpt.bin")
        "$A" train --resume "$R/ckpt.bin" -t 1 -q -o "$R" 2> "$T/err" & pid=$!
        resumed=1
    else
        "$A" train "${flags[@]}" --ckpt-every 1 --force -o "$R" 2> "$T/err" & pid=$!
    fi
    starts=$((starts + 1))
    # a random moment: 0 to 0.8 s after the start (loading included)
    sleep "$(printf '0.%03d' $((RANDOM % 800)))"
    kill -KILL "$pid" 2> /dev/null
    rc=0; { wait "$pid"; } 2> /dev/null || rc=$?
    if [ "$rc" -eq 0 ]; then # it finished first: check it, then a new run
        final_check
        rm -rf "$R"
        continue
    fi
    if [ "$rc" -ne 137 ]; then fail "run exited $rc: $(cat "$T/err")"; break; fi
    kills=$((kills + 1))
    if [ ! -f "$R/log.jsonl" ]; then # killed while starting, before it wrote anything
        [ -f "$R/ckpt.bin" ] && fail "kill $kills: a ckpt.bin without a log"
        continue
    fi
    ls "$R" | grep -q '^ckpt\.bin\.tmp\.' && in_write=$((in_write + 1))
    if [ -f "$R/ckpt.bin" ]; then
        if "$A" eval -m "$R/ckpt.bin" -d "$T/data.txt" --max-batches 1 -t 1 > /dev/null 2> "$T/err"
        then loads=$((loads + 1))
        else fail "kill $kills: ckpt.bin does not load: $(cat "$T/err")"; fi
    fi
    rc=0; k=$(check_log "$R/log.jsonl" 2> "$T/err") || rc=$?
    if [ "$rc" -eq 3 ]; then torn=$((torn + 1)); rc=0; fi
    if [ "$rc" -ne 0 ]; then fail "kill $kills: log: $(cat "$T/err")"
    elif [ -f "$R/ckpt.bin" ] && [ "$(ckpt_step "$R/ckpt.bin")" -gt "$k" ]; then
        fail "kill $kills: ckpt.bin at step $(ckpt_step "$R/ckpt.bin") is ahead of the log ($k)"
    fi
    # a resume that logged steps past its checkpoint: did they equal the uninterrupted run's?
    if [ "$resumed" -eq 1 ] && { [ "$rc" -ne 0 ] || [ "${k:-0}" -gt "$from" ]; }; then
        resumes=$((resumes + 1))
        [ "$rc" -eq 0 ] && matched=$((matched + 1))
    fi
done
# the last run, left to finish
if [ -f "$R/ckpt.bin" ]; then
    "$A" train --resume "$R/ckpt.bin" -t 1 -q -o "$R" 2> "$T/err" || fail "last resume: $(cat "$T/err")"
    final_check
fi
echo "kill campaign: $kills kills ($in_write during checkpoint writes) over $starts starts;" \
     "ckpt.bin loaded after $loads of the kills that left one; $matched of $resumes resumes that" \
     "logged steps matched the uninterrupted losses bit for bit; $finished finished runs equal" \
     "to the uninterrupted run step for step; $torn torn log lines seen after kills"
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
