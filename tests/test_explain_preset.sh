#!/usr/bin/env bash
# `andrea explain --preset andrea-120m` (issue 26): the lesson's model with random weights
# (it says so) and its own numbers, computed: 1/sqrtf(64) = 0.125 in the engine's scale,
# 12 heads of d_k 64 concatenated to 768, and at the model's context T = 1024, from one run
# of the engine's attention kernel, (1024, 64) per head, 1,048,576 scores per head of which
# 524,800 are used, outputs in (1024, 768). Some 5 s on 2 cores (the model's init).
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
"$A" explain --preset andrea-120m --lang en > "$T/p.txt" || fail "explain --preset andrea-120m failed: $(tail -3 "$T/p.txt")"
want() { grep -qF -- "$1" "$T/p.txt" && pass "shows '$1'" || fail "lacks '$1'"; }
want "model: preset 'andrea-120m' with random weights (seed 1337; L=12 NH=12 C=768 d_k=64 ctx=1024)"
want "not its trained weights"
want "sqrt(d_k) = sqrt(64) = 8.0000; the engine multiplies by the constant 1/sqrtf(64) = 0.125"
want "7. Per-head output: all 12 heads run in parallel; their outputs are concatenated side by side, (T, 12 x 64) = (T, 768)"
want "a head's Q and K are (1024, 64), its scores (1024, 1024) = 1,048,576, its output (1024, 64);"
want "all 12 heads side by side make (1024, 768)."
want "each head holds 1,048,576 scores, 524,800 of them not 0 (j <= i)"
want "each of the 12 heads' outputs (1024, 64) equals A V in double in its own columns of (1024, 768)"
grep -qE '^explain: 30 checks, 30 passed, 0 failed$' "$T/p.txt" && pass "30 checks pass" || fail "summary: $(tail -1 "$T/p.txt")"
expect_error "unknown preset" "unknown preset 'andrea-7b'" "$A" explain --preset andrea-7b
expect_error "model and preset" "give one model" "$A" explain --preset tiny -m x.bin
finish
