#!/usr/bin/env bash
# bench_mpi.sh - data parallel on one machine: tokens/s of 1 rank x 2 threads against
# 2 ranks x 1 thread at the same global batch (interleaved, REPS times each), with the
# gradient sums overlapped with backward (the default) and after it (--dist-no-overlap),
# the time each step spent in collectives (comm_ms, the part the overlap did not hide), the
# time of one gradient all-reduce of that model alone against the step time, and the
# all-reduce bandwidth on loopback (a size sweep). Builds nothing; needs mpirun and an MPI build.
#
#   bench/bench_mpi.sh [ANDREA_BINARY] [CORPUS]
#   environment: PRESET=andrea-12m SEQ=256 GLOBAL_BATCH=8 STEPS=12 REPS=2
# tokens/s is the median over the timed steps (the first two are warm-up) of all reps.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
A=${1:-$root/build/andrea}
DATA=${2:-$root/../shared/data/tinyshakespeare.txt}
BENCH=$(dirname "$A")/bench/bench_allreduce
PRESET=${PRESET:-andrea-12m} SEQ=${SEQ:-256} G=${GLOBAL_BATCH:-8} STEPS=${STEPS:-12} REPS=${REPS:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
command -v mpirun > /dev/null || { echo "bench_mpi: no mpirun (apt install openmpi-bin)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
M="--data $DATA --preset $PRESET --seq $SEQ --max-steps $STEPS --warmup 2 --eval-every 0
   --sample-every 0 --ckpt-every 0 --val-fraction 0.01"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { grep '"type":"step"' "$1" | awk -v k="\"$2\":" -F, '{ for (i = 1; i <= NF; i++)
    if (index($i, k) == 1) { sub(k, "", $i); s = $i } } NR > 2 { print s }'; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "model $PRESET, T=$SEQ, global batch $G sequences = $((G * SEQ)) tokens/step, $STEPS steps x $REPS reps"
: > "$T/one.tok"; : > "$T/two.ms"
for k in two twono; do : > "$T/$k.tok"; : > "$T/$k.comm"; done
for r in $(seq "$REPS"); do
    "$A" train $M --batch "$G" -t 2 -q -o "$T/one$r"
    field "$T/one$r/log.jsonl" tok_per_s >> "$T/one.tok"
    for k in two twono; do
        flag=; [ "$k" = twono ] && flag=--dist-no-overlap
        mpirun -np 2 --oversubscribe --bind-to core "$A" train $M --batch $((G / 2)) -t 1 -q \
            $flag -o "$T/$k$r"
        field "$T/$k$r/log.jsonl" tok_per_s >> "$T/$k.tok"
        field "$T/$k$r/log.jsonl" comm_ms >> "$T/$k.comm"
    done
    field "$T/two$r/log.jsonl" ms >> "$T/two.ms"
done
one=$(median < "$T/one.tok"); two=$(median < "$T/two.tok"); ms=$(median < "$T/two.ms")
twono=$(median < "$T/twono.tok")
printf '%-44s %10.0f tokens/s\n' "1 rank x 2 threads" "$one" \
    "2 ranks x 1 thread, sums during backward" "$two" \
    "2 ranks x 1 thread, sums after backward" "$twono"
awk -v a="$one" -v b="$two" -v c="$twono" 'BEGIN {
    printf "ratio (2 ranks / 1 rank): %.2f overlapped, %.2f not\n", b / a, c / a }'
awk -v c="$(median < "$T/two.comm")" -v n="$(median < "$T/twono.comm")" -v ms="$ms" 'BEGIN {
    printf "time in collectives per step (median): %.1f ms overlapped, %.1f ms after backward; step %.0f ms\n", c, n, ms }'
"$A" train $M --max-steps 0 -t 1 -q -o "$T/p"
params=$("$A" info -m "$T/p/ckpt.bin" | awk '$1 == "total" && NF == 2 { print $2; exit }')
if [ -x "$BENCH" ] && [ -n "$params" ]; then
    ar=$(mpirun -np 2 --oversubscribe "$BENCH" "$params" 10 | awk 'NR == 3 { print $3 }')
    awk -v p="$params" -v ar="$ar" -v ms="$ms" 'BEGIN {
        printf "gradient all-reduce: %d floats (%.1f MiB), %.2f ms alone; 2-rank step %.0f ms: %.1f%%\n",
               p, p * 4 / 1048576, ar, ms, 100 * ar / ms }'
    echo "loopback all-reduce bandwidth, 2 ranks:"
    mpirun -np 2 --oversubscribe "$BENCH" 0 10
else
    echo "(no $BENCH or no parameter count: skipping the all-reduce timings)"
fi
