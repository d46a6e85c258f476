#!/usr/bin/env bash
# The gradient sum's algorithm (src/parallel/ring.c, docs/distributed.md):
# 1. the ring all-reduce sums right: bench_allreduce checks every element, 2 ranks on a
#    size sweep and 3 ranks on a size the ranks cannot split evenly, with whole chunks
#    (one machine) and in 32 KB pieces (a network: forced by ANDREA_RING_PIECES=1);
# 2. training with the ring (--dist-allreduce ring) and with MPI's (mpi), 4 ranks x 2,
#    give the losses of 1 process x 8 within float rounding; the ring with the overlap
#    forced (--dist-overlap) is bit-identical on a rerun (each chunk is summed in ring
#    order on one rank); with 3 ranks pieces and whole chunks give the same weights;
# 3. --dist-bf16: ranks agree, losses near fp32's;
# 4. auto: the start line names the measured choice and a dist_plan line the overlap
#    decision from the timed steps; a bad --dist-allreduce is a usage error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
mpi_text
M="--data $T/d.txt --preset tiny --n-layer 2 --d-model 32 --n-head 2 --ctx 32 --seq 32
   --max-steps 20 --warmup 2 --eval-every 10 --ckpt-every 0 --sample-every 0 -t 1 -q"
mpi_probe $M

B="$(dirname "$A")/bench/bench_allreduce"
if [ -x "$B" ]; then
    $MPI -np 2 "$B" 0 2 ring > "$T/b2" 2>&1 && pass "ring sums right, 2 ranks, 1 K - 16 M floats" \
        || fail "bench_allreduce 2 ranks: $(tail -2 "$T/b2")"
    $MPI -np 3 "$B" 100003 2 both > "$T/b3" 2>&1 && pass "ring and mpi sums right, 3 ranks, 100003 floats" \
        || fail "bench_allreduce 3 ranks: $(tail -2 "$T/b3")"
    # the pieces a network gets (32 KB: 8192 floats, 16384 in bf16), forced on loopback:
    # one piece (1 K), an exact multiple (16 K, 256 K), more pieces than the 16 in flight
    # (1 M: 64 a chunk); 3 ranks: chunks of 33335/33334 floats, in 5 uneven pieces (3 in
    # bf16); every element checked
    P="-x ANDREA_RING_PIECES=1"
    $MPI -np 2 $P "$B" 0 2 ring > "$T/p2" 2>&1 && pass "ring in 32 KB pieces sums right, 2 ranks, 1 K - 16 M floats" \
        || fail "bench_allreduce pieces 2 ranks: $(tail -2 "$T/p2")"
    $MPI -np 3 $P "$B" 100003 2 ring > "$T/p3" 2>&1 && $MPI -np 3 $P "$B" 100003 2 bf16 >> "$T/p3" 2>&1 \
        && pass "ring in pieces sums right, 3 ranks, 100003 floats, fp32 and bf16 wire" \
        || fail "bench_allreduce pieces 3 ranks: $(tail -2 "$T/p3")"
else
    echo "note: $B not built: no direct check of the sums"
fi

close() { # NAME LOG1 LOG2: step losses within 1e-5 relative
    local w; w=$(paste -d' ' <(step_losses "$2") <(step_losses "$3") | awk '
        $1 != $3 || NF != 4 { print "mismatch"; exit } { d = ($2 - $4) / $4; d = d < 0 ? -d : d;
        if (d > w) w = d } END { if (NR != 20) print "mismatch"; else printf "%.2g", w }')
    [ "$w" != mismatch ] && awk -v w="$w" 'BEGIN { exit !(w <= 1e-5) }' \
        && pass "$1: 20 losses within 1e-5 (worst $w)" || fail "$1: $w"
}
"$A" train $M --batch 8 -o "$T/one" || fail "1 process"
for a in ring mpi; do
    $MPI -np 4 "$A" train $M --batch 2 --dist-allreduce $a -o "$T/$a" || fail "4 ranks, $a"
    close "4 ranks x 2, --dist-allreduce $a = 1 process x 8" "$T/one/log.jsonl" "$T/$a/log.jsonl"
    grep -q "gradient sums: $a (--dist-allreduce)" "$T/$a/log.jsonl" || fail "$a: start line lacks the choice"
done
$MPI -np 4 "$A" train $M --batch 2 --dist-allreduce ring --dist-overlap -o "$T/r1" || fail "ring rerun 1"
$MPI -np 4 "$A" train $M --batch 2 --dist-allreduce ring --dist-overlap -o "$T/r2" || fail "ring rerun 2"
cmp -s "$T/r1/ckpt.bin" "$T/r2/ckpt.bin" && pass "4 ranks, ring, overlap: a rerun is bit-identical" \
    || fail "4 ranks ring reruns differ"
# pieces (what a network gets) against whole chunks (one machine): each float is summed
# in the same order, so 3 ranks (where the order shows) give the same weights, bit for bit
# (the overlap forced: with and without it the buckets, so the chunks, differ). A wider
# model, so that a layer's chunk (about 65 K floats) is 8 pieces.
for w in "" --dist-bf16; do
    for p in 0 1; do
        $MPI -np 3 -x ANDREA_RING_PIECES=$p "$A" train $M --d-model 128 --max-steps 4 --batch 2 \
            --dist-allreduce ring --dist-overlap $w -o "$T/pc$p$w" || fail "3 ranks, ANDREA_RING_PIECES=$p $w"
    done
    cmp -s "$T/pc0$w/ckpt.bin" "$T/pc1$w/ckpt.bin" \
        && pass "3 ranks, ring${w:+ $w}: 32 KB pieces = whole chunks, bit for bit (4 steps)" \
        || fail "3 ranks ring${w:+ $w}: pieces and whole chunks differ"
done

# bf16 on the wire: the ranks still agree (the hash after every step), the losses stay
# within 1e-3 of fp32's, and they are not fp32's bits (the bf16 path did run)
$MPI -np 4 "$A" train $M --batch 2 --dist-bf16 --dist-check-every 1 -o "$T/bf" || fail "4 ranks, --dist-bf16"
w=$(paste -d' ' <(step_losses "$T/ring/log.jsonl") <(step_losses "$T/bf/log.jsonl") | awk '
    { d = ($2 - $4) / $4; d = d < 0 ? -d : d; if (d > w) w = d; n++ } END { printf "%d %.2g", n, w }')
awk -v w="${w#* }" -v n="${w% *}" 'BEGIN { exit !(n == 20 && w > 0 && w <= 1e-3) }' \
    && grep -q 'gradient sums: ring (--dist-bf16: bf16 on the wire)' "$T/bf/log.jsonl" \
    && pass "--dist-bf16, 4 ranks: weights equal on every rank at every step; losses within 1e-3 of fp32 (worst ${w#* })" \
    || fail "--dist-bf16: $w"
rc=0; $MPI -np 2 "$A" train $M --batch 4 --dist-bf16 --dist-allreduce mpi -o "$T/bfm" 2> "$T/bfm.err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "dist-bf16 needs andrea's ring, not --dist-allreduce mpi" "$T/bfm.err" \
    && pass "--dist-bf16 with --dist-allreduce mpi: refused" || fail "bf16 + mpi: exit $rc $(cat "$T/bfm.err")"

$MPI -np 2 "$A" train $M --batch 4 -o "$T/auto" || fail "auto"
grep -q '"ranks":"2 ranks (mpi); weights updated at [a-z0-9]* on every rank; gradient sums: \(ring\|mpi\) (measured on [0-9]* floats: ring [0-9.]* ms, mpi [0-9.]* ms); overlap: measured on steps 2-7"' \
    "$T/auto/log.jsonl" && grep -q '"type":"dist_plan","step":7,"overlap":\(true\|false\),"ms_during_backward":[0-9.]*,"ms_after_backward":[0-9.]*' "$T/auto/log.jsonl" \
    && pass "auto: $(grep -o 'gradient sums: [a-z]*' "$T/auto/log.jsonl"), $(grep -o '"overlap":[a-z]*,"ms_during_backward":[0-9.]*,"ms_after_backward":[0-9.]*' "$T/auto/log.jsonl")" \
    || fail "auto: $(grep -o '"ranks":"[^"]*"' "$T/auto/log.jsonl"); $(grep dist_plan "$T/auto/log.jsonl")"
rc=0; $MPI -np 2 "$A" train $M --batch 4 --dist-allreduce tree -o "$T/bad" 2> "$T/bad.err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "dist-allreduce 'tree': expected auto, ring, mpi or nccl" "$T/bad.err" \
    && pass "--dist-allreduce tree: refused (exit $rc)" || fail "bad --dist-allreduce: exit $rc $(cat "$T/bad.err")"
finish
