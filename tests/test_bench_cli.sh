#!/usr/bin/env bash
# `andrea bench`: its reproduce: line rebuilds the model that was measured (every
# architecture flag that differs from the preset, not just --preset), and --backend
# picks where the model runs, with one-line errors for what cannot run here.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
QUICK=(--steps 1 --warmup 0 --generate 4 --batch 1 --seq 16 -t 1)

"$A" bench --n-layer 4 --d-model 64 --n-head 2 --ctx 32 --norm layernorm "${QUICK[@]}" > "$T/a.txt" 2>&1 \
    || fail "bench of a custom model failed: $(cat "$T/a.txt")"
repro=$(grep '^reproduce: ' "$T/a.txt" | sed 's/^reproduce: andrea //')
want="bench --preset andrea-12m --n-layer 4 --n-head 2 --d-model 64 --ctx 32 --norm layernorm --batch 1"
case "$repro" in
    "$want"*) pass "reproduce line names every override: $repro" ;;
    *) fail "reproduce line '$repro' does not start with '$want'" ;;
esac
# running the line measures the same model again
# shellcheck disable=SC2086
"$A" $repro > "$T/b.txt" 2>&1 || fail "the reproduce line did not run: $(cat "$T/b.txt")"
if [ "$(grep '^model: ' "$T/a.txt")" = "$(grep '^model: ' "$T/b.txt")" ] && \
   [ "$(grep '^reproduce: ' "$T/a.txt")" = "$(grep '^reproduce: ' "$T/b.txt")" ]; then
    pass "the reproduce line rebuilds the same model: $(grep '^model: ' "$T/b.txt")"
else
    fail "model lines differ: '$(grep '^model: ' "$T/a.txt")' vs '$(grep '^model: ' "$T/b.txt")'"
fi
# a preset alone reproduces as the preset alone
"$A" bench --preset tiny "${QUICK[@]}" > "$T/c.txt" 2>&1 || fail "bench --preset tiny failed"
grep -q '^reproduce: andrea bench --preset tiny --batch' "$T/c.txt" \
    && pass "no overrides: --preset tiny alone" || fail "tiny: $(grep '^reproduce' "$T/c.txt")"
# MFU is a share of a measured peak: never printed above 100%
mfu=$(grep -o 'MFU [0-9.]*%' "$T/a.txt" "$T/b.txt" "$T/c.txt" | sed 's/.*MFU \([0-9.]*\)%/\1/' | sort -g | tail -1)
awk -v m="$mfu" 'BEGIN { exit !(m <= 100) }' && pass "MFU <= 100% (highest $mfu%)" || fail "MFU $mfu% > 100%"

"$A" bench --list-backends > "$T/list.txt" || fail "--list-backends failed"
grep -q '^cpu ' "$T/list.txt" && grep -q '^cpu-baseline ' "$T/list.txt" \
    && pass "backends listed: $(cut -d' ' -f1 "$T/list.txt" | tr '\n' ' ')" || fail "list: $(cat "$T/list.txt")"
"$A" bench --preset tiny --backend cpu-baseline "${QUICK[@]}" > "$T/d.txt" 2>&1 \
    && grep -q 'backend cpu-baseline' "$T/d.txt" && pass "--backend cpu-baseline runs" \
    || fail "--backend cpu-baseline: $(cat "$T/d.txt")"
expect_error "unknown backend" "unknown backend 'gpu9' (available here: cpu" "$A" bench --backend gpu9
expect_error "backend with matmul" "--backend replaces --matmul" "$A" bench --backend cpu --matmul blas
expect_error "bad matmul" "--matmul 'fast': expected builtin or blas" "$A" bench --matmul fast
# --isa caps every kernel (= ANDREA_ISA): the baseline is on every CPU
"$A" bench --preset tiny --isa baseline "${QUICK[@]}" > "$T/e.txt" 2>&1 \
    && grep -q '| ISA baseline (capped' "$T/e.txt" && grep -q -- '--isa baseline' "$T/e.txt" \
    && pass "--isa baseline runs, says so and reproduces" || fail "--isa baseline: $(cat "$T/e.txt")"
"$A" bench --isa baseline --list-backends > "$T/l2.txt" && ! grep -q '^cpu-avx2 ' "$T/l2.txt" \
    && pass "--isa baseline: cpu-avx2 not listed" || fail "--isa baseline list: $(cat "$T/l2.txt")"
expect_error "bad isa" "--isa 'sse9': expected avx512, avx2, neon or baseline" "$A" bench --isa sse9
# --prefill times batch-1 prompt processing; --steps 0 skips training
"$A" bench --preset tiny --steps 0 --generate 0 --prefill 20 --profile -t 1 > "$T/p.txt" 2>&1 \
    && grep -q '^prefill batch 1, 20 tokens (f32 weights): [0-9.]* tok/s' "$T/p.txt" \
    && grep -q '^prefill profile.*matmul [0-9.]* ([1-9][0-9]*%)' "$T/p.txt" && ! grep -q '^train ' "$T/p.txt" \
    && grep -q -- '--steps 0 .*--prefill 20 --profile' "$T/p.txt" \
    && pass "--prefill 20 --steps 0: $(grep '^prefill batch' "$T/p.txt")" || fail "--prefill: $(cat "$T/p.txt")"
# --quant applies to the prefill too: q8_0 weights run in their blocks (the products' share
# of the profile is there: the prefill's own forward is timed by kind)
"$A" bench --preset tiny --steps 0 --generate 0 --prefill 20 --quant q8_0 --profile -t 1 > "$T/q.txt" 2>&1 \
    && grep -q '^prefill batch 1, 20 tokens (q8_0 weights): [0-9.]* tok/s' "$T/q.txt" \
    && grep -q '^prefill profile.*matmul [0-9.]* ([1-9][0-9]*%)' "$T/q.txt" \
    && pass "--prefill 20 --quant q8_0: $(grep '^prefill batch' "$T/q.txt")" || fail "--prefill --quant q8_0: $(cat "$T/q.txt")"
expect_error "prefill past the context" "--prefill <= ctx" "$A" bench --preset tiny --prefill 33
# --gen-batch times that many sequences decoded together (batched decoding), after batch 1
"$A" bench --preset tiny --steps 0 --generate 8 --gen-batch 4 -t 1 > "$T/g.txt" 2>&1 \
    && grep -q '^generate batch 1 (f32 weights): [0-9.]* tok/s' "$T/g.txt" \
    && grep -q '^generate batch 4 (f32 weights): [0-9.]* tok/s in all' "$T/g.txt" \
    && grep -q -- '--generate 8 --gen-batch 4 ' "$T/g.txt" \
    && pass "--gen-batch 4: $(grep '^generate batch 4' "$T/g.txt")" || fail "--gen-batch: $(cat "$T/g.txt")"
expect_error "gen-batch out of range" "--gen-batch 0..256" "$A" bench --preset tiny --gen-batch 300
finish
