#!/usr/bin/env bash
# Two "machines" for real: two network namespaces this test creates (and removes at the
# end, whatever happens), joined by a veth pair whose addresses exist only inside them,
# one rank in each, OpenMPI over TCP (btl tcp, no shared memory), launched without ssh
# (a launch agent that runs OpenMPI's daemon inside the other namespace: `ip netns exec`).
# 1. 2 ranks across the namespaces give the checkpoint of 2 ranks on loopback, bit for bit;
# 2. rank 1 killed (SIGKILL): the job ends, the checkpoint left loads;
# 3. rank 1 stopped (SIGSTOP): rank 0's --dist-timeout ends the job with the message;
# 4. a partition (the link set down): the job ends within the timeout and the abort's
#    grace (mpirun's own channel is cut too: src/parallel/dist_mpi.c), with the message;
#    the checkpoint loads;
# 5. scripts/train_restart.sh across the namespaces: rank 1 killed after the first
#    checkpoint, the launcher's run ends with the losses of the uninterrupted run.
# Needs root and `ip netns` (CI runs as root); skips (77) otherwise.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
R="$(cd "$(dirname "$0")/.." && pwd)/scripts/train_restart.sh"
[ "$(id -u)" -eq 0 ] || { echo "skip: not root (network namespaces need CAP_NET_ADMIN)" >&2; exit 77; }
command -v ip > /dev/null || { echo "skip: no ip (apt install iproute2)" >&2; exit 77; }
NA=andrea_a$$ NB=andrea_b$$ VA=anda$$ VB=andb$$ NET=10.227.1
cleanup() {
    local ns p
    for ns in $NA $NB; do
        for p in $(ip netns pids $ns 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
        ip netns del $ns 2> /dev/null
    done
    ip link del $VA 2> /dev/null || true
}
trap cleanup EXIT
if ! ip netns add $NA 2> "$T/ns.err"; then
    echo "skip: ip netns add failed: $(cat "$T/ns.err")" >&2; exit 77
fi
ip netns add $NB && ip link add $VA type veth peer name $VB && ip link set $VA netns $NA \
    && ip link set $VB netns $NB && ip -n $NA addr add $NET.1/24 dev $VA \
    && ip -n $NB addr add $NET.2/24 dev $VB && ip -n $NA link set $VA up \
    && ip -n $NB link set $VB up && ip -n $NA link set lo up && ip -n $NB link set lo up \
    || { fail "setting up the namespaces"; finish; }
cat > "$T/agent.sh" << AGENT
#!/bin/sh
# OpenMPI's launch agent (plm_rsh_agent): HOST COMMAND... runs COMMAND in HOST's namespace
h=\$1; shift
case "\$h" in $NET.1) ns=$NA ;; $NET.2) ns=$NB ;; *) echo "agent: unknown host \$h" >&2; exit 1 ;; esac
exec ip netns exec \$ns sh -c "\$*"
AGENT
chmod +x "$T/agent.sh"
printf '%s slots=1\n%s slots=1\n' $NET.1 $NET.2 > "$T/hosts"
# a daemon cut off from mpirun notices within seconds (TCP keepalive on OpenMPI's own
# channel; the default waits 5 minutes) and exits, instead of lingering on its machine
export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1 OMPI_MCA_oob_tcp_keepalive_probes=2
NS_MPI="ip netns exec $NA mpirun --hostfile $T/hosts -np 2 --map-by node --mca plm_rsh_agent $T/agent.sh
        --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24 --mca oob_tcp_if_include $NET.0/24"

mpi_text
M="--data $T/d.txt --preset tiny --n-layer 2 --d-model 64 --n-head 2 --ctx 32 --seq 32 --batch 4
   --max-steps 60 --warmup 2 --eval-every 30 --ckpt-every 10 --sample-every 0 -t 1 -q
   --dist-timeout 2"
mpi_probe $M
where=$($NS_MPI sh -c 'echo "rank $OMPI_COMM_WORLD_RANK: $(ip -o -4 addr show | grep -o "'$NET'\.[0-9]*")"' 2>&1 | sort | tr '\n' ' ')
[ "$where" = "rank 0: $NET.1 rank 1: $NET.2 " ] && pass "one rank per namespace, launched without ssh: $where" \
    || { fail "ranks placed: $where"; finish; }

# 1. the same bits as loopback
$MPI -np 2 "$A" train $M -o "$T/lo" || fail "loopback run"
$NS_MPI "$A" train $M -o "$T/ns" > "$T/ns.log" 2>&1 || fail "namespaces run: $(tail -3 "$T/ns.log")"
cmp -s "$T/lo/ckpt.bin" "$T/ns/ckpt.bin" && cmp -s <(step_losses "$T/lo/log.jsonl") <(step_losses "$T/ns/log.jsonl") \
    && pass "2 ranks over TCP between namespaces = 2 ranks on loopback, bit for bit (60 steps)" \
    || fail "the namespaces run differs from loopback"

# 2-4. faults: a long run, hit once a checkpoint exists; the job must end by itself
fault() { # NAME ACTION(KILL|STOP|CUT): prints the exit status; the job's output in NAME.log
    local out="$T/$1" mp v i t0
    $NS_MPI "$A" train $M --max-steps 1000000 -o "$out" > "$out.log" 2>&1 & mp=$!
    if [ "$2" = CUT ]; then
        for i in $(seq 300); do [ -f "$out/ckpt.bin" ] && break; sleep 0.05; done
        ip -n $NB link set $VB down
    else
        v=$(hit "$2" "$out")
    fi
    t0=$SECONDS
    for i in $(seq 600); do kill -0 $mp 2> /dev/null || break; sleep 0.1; done
    if kill -0 $mp 2> /dev/null; then
        echo "FAIL: $1: the job still runs 60 s later" >> "$out.log"; kill -9 $mp
    fi
    local rc=0; wait $mp || rc=$?
    [ -n "${v:-}" ] && kill -9 "$v" 2> /dev/null
    ip -n $NB link set $VB up
    for p in $(ip netns pids $NB); do kill -9 "$p" 2> /dev/null; done # what the cut left
    echo "$rc $((SECONDS - t0))"
}
loads() { "$A" info -m "$1/ckpt.bin" > /dev/null 2>&1; }
msg="not complete after 2 s (--dist-timeout): another rank died or hangs"
read -r rc s < <(fault kill KILL)
[ "$rc" -ne 0 ] && loads "$T/kill" && ! grep -q FAIL "$T/kill.log" \
    && pass "rank 1 killed: the job ended in ${s} s (exit $rc), the checkpoint loads" \
    || fail "kill: exit $rc: $(tail -3 "$T/kill.log")"
read -r rc s < <(fault stop STOP)
[ "$rc" -ne 0 ] && grep -q "$msg" "$T/stop.log" && loads "$T/stop" && ! grep -q FAIL "$T/stop.log" \
    && pass "rank 1 stopped: the job ended in ${s} s (exit $rc): $(grep -m1 -o "rank 0 of 2: .*hangs" "$T/stop.log")" \
    || fail "stop: exit $rc: $(tail -3 "$T/stop.log")"
read -r rc s < <(fault cut CUT)
[ "$rc" -ne 0 ] && grep -q "$msg" "$T/cut.log" && loads "$T/cut" && ! grep -q FAIL "$T/cut.log" \
    && pass "partition: the job ended in ${s} s (exit $rc) with the message, the checkpoint loads" \
    || fail "partition: exit $rc: $(grep -v '^ *$' "$T/cut.log" | tail -4)"

# 5. the restart launcher across the namespaces
"$R" --restarts 1 --resume-flags "-t 1 -q --dist-timeout 2" "$T/re" -- $NS_MPI "$A" train $M -o "$T/re" \
    > "$T/re.log" 2>&1 & lp=$!
v=$(hit KILL "$T/re")
rc=0; wait $lp || rc=$?
for p in $(ip netns pids $NB); do kill -9 "$p" 2> /dev/null; done
[ -n "$v" ] && [ "$rc" -eq 0 ] && grep -q "train_restart: attempt 2 of 2: resuming" "$T/re.log" \
    && cmp -s <(step_losses "$T/lo/log.jsonl") <(step_losses "$T/re/log.jsonl") \
    && pass "launcher: rank 1 killed, resumed ($(grep -o "resuming.*" "$T/re.log")), the 60 losses of the uninterrupted run" \
    || fail "launcher: victim '$v', exit $rc: $(tail -4 "$T/re.log")"
finish
