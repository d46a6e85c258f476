#!/usr/bin/env bash
# A job that ends and comes back (scripts/train_restart.sh, docs/distributed.md):
# 1. rank 1 killed (SIGKILL) once a checkpoint exists: the job ends (mpirun exits
#    non-zero), the launcher resumes from the newest loadable checkpoint, and the run
#    ends with the losses of an uninterrupted run, bit for bit (2 ranks: sums are a + b);
# 2. rank 1 stopped (SIGSTOP): rank 0's --dist-timeout aborts the whole job (MPI_Abort)
#    with the message; with --restarts 0 the launcher gives up and says so, and the
#    checkpoint left loads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
R="$(dirname "$0")/../scripts/train_restart.sh"
need_text text
head -c 200000 "$text" > "$T/d.txt"
M="--data $T/d.txt --preset tiny --n-layer 2 --d-model 64 --n-head 2 --ctx 32 --seq 32 --batch 4
   --max-steps 150 --warmup 5 --eval-every 50 --ckpt-every 10 --sample-every 0 -t 1 -q"
mpi_probe $M

$MPI -np 2 "$A" train $M -o "$T/full" || fail "uninterrupted run"

# 1. killed rank, launcher
"$R" --restarts 2 --resume-flags "-t 1 -q" "$T/k" -- $MPI -np 2 "$A" train $M -o "$T/k" \
    > "$T/k.log" 2>&1 & lp=$!
v=$(hit KILL "$T/k")
rc=0; wait $lp || rc=$?
if [ -n "$v" ] && [ "$rc" -eq 0 ] && grep -q "train_restart: the job failed (exit [1-9][0-9]*); restarting" "$T/k.log" \
    && grep -q "train_restart: attempt 2 of 3: resuming '$T/k/ckpt.bin' (step [1-9][0-9]*)" "$T/k.log"; then
    pass "rank 1 killed: the job ended, the launcher resumed: $(grep -m1 'resuming' "$T/k.log")"
else fail "kill + launcher: victim '$v', exit $rc: $(tail -5 "$T/k.log")"; fi
if cmp -s <(step_losses "$T/full/log.jsonl") <(step_losses "$T/k/log.jsonl") \
    && [ "$(step_losses "$T/k/log.jsonl" | wc -l)" -eq 150 ]; then
    pass "after the restart: the 150 losses of the uninterrupted run, bit for bit"
else fail "restarted losses differ: $(diff <(step_losses "$T/full/log.jsonl") <(step_losses "$T/k/log.jsonl") | head -4)"; fi
cmp -s "$T/full/ckpt.bin" "$T/k/ckpt.bin" && pass "and its final checkpoint, bit for bit" \
    || fail "restarted final checkpoint differs from the uninterrupted one"

# 2. stopped rank: the timeout aborts the job
"$R" --restarts 0 "$T/s" -- $MPI -np 2 "$A" train $M --max-steps 100000 --dist-timeout 3 \
    -o "$T/s" > "$T/s.log" 2>&1 & lp=$!
v=$(hit STOP "$T/s")
# The job ending while rank 1 is still stopped is the proof that the abort took every
# rank down. OpenMPI's own "MPI_ABORT was invoked" text is not checked: mpirun sometimes
# loses it while the job is torn down ("ORTE_ERROR_LOG: Data unpack would read past end
# of buffer in file util/show_help.c", open-mpi/ompi#8356), and CI saw exactly that.
ended=""
for i in $(seq 400); do kill -0 $lp 2> /dev/null || { ended=1; break; }; sleep 0.05; done
[ -n "$ended" ] || fail "SIGSTOP: the job still runs 20 s later"
[ -n "$v" ] && kill -CONT $v 2> /dev/null; kill -9 $v 2> /dev/null
rc=0; wait $lp || rc=$?
[ -n "$ended" ] && [ "$rc" -ne 0 ] \
    && grep -q "not complete after 3 s (--dist-timeout): another rank died or hangs" "$T/s.log" \
    && grep -q "train_restart: exit $rc; 0 restart(s) used up: giving up" "$T/s.log" \
    && pass "rank 1 stopped: rank 0 timed out and aborted the job (exit $rc), the launcher gave up" \
    || fail "SIGSTOP: exit $rc: $(tail -5 "$T/s.log")"
"$A" info -m "$T/s/ckpt.bin" > /dev/null && pass "the checkpoint left loads" \
    || fail "checkpoint after the abort: $("$A" info -m "$T/s/ckpt.bin" 2>&1)"
finish
