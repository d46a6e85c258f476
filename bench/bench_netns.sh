#!/usr/bin/env bash
# bench_netns.sh - data parallel over a slow link between two "machines": two network
# namespaces joined by a veth pair shaped to RATE each way (tc tbf; this kernel has no
# netem, so no added delay), ranks split between them, OpenMPI over TCP, launched without
# ssh. Times (1) the all-reduce alone, MPI's MPI_Iallreduce against andrea's ring, for 2
# and 4 ranks, and (2) the training step of a model whose gradient is GRAD_MB, for:
# MPI's default (libnbc's tree: coll_libnbc_iallreduce_algorithm 0), MPI with libnbc's
# ring (1, what andrea now sets unless told otherwise), andrea's own ring, each with the
# sums during backward and after it, and auto (measured). Root only; not in CI.
#
#   sudo bench/bench_netns.sh [ANDREA_BINARY]     environment: RATE=100mbit STEPS=8
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A=${1:-$here/../build/andrea}
BENCH=$(dirname "$A")/bench/bench_allreduce
RATE=${RATE:-100mbit} STEPS=${STEPS:-8}
[ "$(id -u)" -eq 0 ] || { echo "bench_netns: needs root (ip netns)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
NA=bench_a$$ NB=bench_b$$ VA=bena$$ VB=benb$$ NET=10.228.1
T=$(mktemp -d)
cleanup() {
    for ns in $NA $NB; do
        for p in $(ip netns pids $ns 2> /dev/null); do kill -9 "$p" 2> /dev/null || true; done
        ip netns del $ns 2> /dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT
ip netns add $NA; ip netns add $NB
ip link add $VA type veth peer name $VB
ip link set $VA netns $NA; ip link set $VB netns $NB
ip -n $NA addr add $NET.1/24 dev $VA; ip -n $NB addr add $NET.2/24 dev $VB
for x in "$NA $VA" "$NB $VB"; do
    set -- $x
    ip -n "$1" link set "$2" up; ip -n "$1" link set lo up
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$RATE" burst 64kb latency 400ms
done
cat > "$T/agent.sh" << AGENT
#!/bin/sh
h=\$1; shift
case "\$h" in $NET.1) ns=$NA ;; $NET.2) ns=$NB ;; *) exit 1 ;; esac
exec ip netns exec \$ns sh -c "\$*"
AGENT
chmod +x "$T/agent.sh"
mpi() { # RANKS_PER_NAMESPACE ARGS...
    local k=$1; shift
    printf '%s slots=%d\n%s slots=%d\n' $NET.1 "$k" $NET.2 "$k" > "$T/hosts"
    ip netns exec $NA mpirun --hostfile "$T/hosts" -np $((2 * k)) --map-by ppr:"$k":node \
        --mca plm_rsh_agent "$T/agent.sh" --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24 \
        --mca oob_tcp_if_include $NET.0/24 "$@"
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(grep -c ^processor /proc/cpuinfo) cores (nproc obeys OMP_NUM_THREADS); link $RATE each way (tbf)"
echo "== all-reduce alone (fp32 sum, median of 3; bus GB/s = 2(N-1)/N x bytes / time)"
for k in 1 2; do
    echo "-- $((2 * k)) ranks, $k per namespace"
    mpi "$k" --mca coll_libnbc_iallreduce_algorithm 0 "$BENCH" 262144 3 mpi | tail -n +2 | sed 's/^   mpi/mpi-tree/'
    mpi "$k" --mca coll_libnbc_iallreduce_algorithm 0 "$BENCH" 1048576 3 mpi | tail -n 1 | sed 's/^   mpi/mpi-tree/'
    mpi "$k" --mca coll_libnbc_iallreduce_algorithm 1 "$BENCH" 262144 3 mpi | tail -n 1 | sed 's/^   mpi/mpi-ring/'
    mpi "$k" --mca coll_libnbc_iallreduce_algorithm 1 "$BENCH" 1048576 3 mpi | tail -n 1 | sed 's/^   mpi/mpi-ring/'
    mpi "$k" "$BENCH" 262144 3 ring | tail -n 1
    mpi "$k" "$BENCH" 1048576 3 ring | tail -n 1
    mpi "$k" "$BENCH" 1048576 3 bf16 | tail -n 1
done
head -c 400000 "${DATA:-/usr/share/dict/words}" > "$T/d.txt" 2> /dev/null || head -c 400000 /dev/urandom | base64 > "$T/d.txt"
M="--data $T/d.txt --preset tiny --n-layer 2 --d-model 192 --n-head 4 --ctx 64 --seq 64 --batch 2
   --max-steps $STEPS --warmup 1 --eval-every 0 --ckpt-every 0 --sample-every 0 -t 1 -q --val-fraction 0.01"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { grep '"type":"step"' "$1" | awk -v k="\"$2\":" -F, '{ for (i = 1; i <= NF; i++)
    if (index($i, k) == 1) { sub(k, "", $i); s = $i } } NR > 2 { print s }'; }
echo "== training step, 2 ranks (one per namespace), median of steps 3-$STEPS"
params=""
run() { # NAME MPI_FLAGS -- TRAIN_FLAGS
    local name=$1 mf=() tf=(); shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do mf+=("$1"); shift; done; shift
    tf=("$@")
    rm -rf "$T/o"
    mpi 1 "${mf[@]}" "$A" train $M "${tf[@]}" -o "$T/o" > /dev/null
    [ -n "$params" ] || { params=$(grep -o '"params":[0-9]*' "$T/o/log.jsonl" | cut -d: -f2)
        echo "model: $params parameters = $((params * 4 / 1000000)) MB of gradient"; }
    printf '%-44s step %8.1f ms   in collectives %8.1f ms\n' "$name" \
        "$(field "$T/o/log.jsonl" ms | median)" "$(field "$T/o/log.jsonl" comm_ms | median)"
}
run "MPI default (libnbc tree), during backward" --mca coll_libnbc_iallreduce_algorithm 0 -- --dist-allreduce mpi --dist-overlap
run "MPI default (libnbc tree), after backward" --mca coll_libnbc_iallreduce_algorithm 0 -- --dist-allreduce mpi --dist-no-overlap
run "MPI, libnbc ring forced, during backward" --mca coll_libnbc_iallreduce_algorithm 1 -- --dist-allreduce mpi --dist-overlap
run "MPI, libnbc ring forced, after backward" --mca coll_libnbc_iallreduce_algorithm 1 -- --dist-allreduce mpi --dist-no-overlap
run "andrea ring, during backward" -- --dist-allreduce ring --dist-overlap
run "andrea ring, after backward" -- --dist-allreduce ring --dist-no-overlap
run "andrea ring, bf16 on the wire, during backward" -- --dist-bf16 --dist-overlap
run "andrea ring, bf16 on the wire, after backward" -- --dist-bf16 --dist-no-overlap
run "auto (measured at start and on steps 2-7)" --
grep -o '"ranks":"[^"]*"' "$T/o/log.jsonl"
grep dist_plan "$T/o/log.jsonl" || true
