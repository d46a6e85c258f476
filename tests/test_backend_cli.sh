#!/usr/bin/env bash
# The backend is chosen per command (--backend), not by a process-wide switch: every CPU
# variant trains the same model to the same losses within rounding, --matmul blas and
# --precision bf16 are spellings of cpu-blas and cpu-bf16, and an unknown or unavailable
# backend is a usage error naming the flag and the ones this machine has.
. "$(dirname "$0")/lib.sh"
need_text data
T="$ANDREA_TMP"
common=(--data "$data" --preset tiny --batch 4 --max-steps 20 --eval-every 20 --sample-every 0 -t 2 -q)
last_loss() { step_losses "$1/log.jsonl" | tail -1 | cut -d' ' -f2; }

"$ANDREA_BIN" train "${common[@]}" -o "$T/default" || fail "train --backend default"
"$ANDREA_BIN" bench --list-backends > "$T/list.txt" || fail "bench --list-backends"
ref=$(last_loss "$T/default")
while read -r be _; do
    "$ANDREA_BIN" train "${common[@]}" --backend "$be" -o "$T/$be" || { fail "train --backend $be"; continue; }
    got=$(last_loss "$T/$be")
    # 20 steps of a tiny model: the variants differ in summation order (FMA, BLAS, bf16
    # operands), which moves the loss in the 4th-5th digit at most (bf16: the 3rd)
    tol=1e-3; case "$be" in *-bf16) tol=2e-2 ;; esac
    if awk -v a="$got" -v b="$ref" -v t=$tol 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
    then pass "--backend $be: loss after 20 steps $got (cpu: $ref)"
    else fail "--backend $be: loss $got, cpu's $ref (tolerance $tol)"; fi
done < "$T/list.txt"

if grep -q '^cpu-blas ' "$T/list.txt"; then
    "$ANDREA_BIN" train "${common[@]}" --matmul blas -o "$T/legacy" || fail "train --matmul blas"
    if diff <(step_losses "$T/legacy/log.jsonl") <(step_losses "$T/cpu-blas/log.jsonl") > /dev/null
    then pass "--matmul blas is --backend cpu-blas, to the bit"
    else fail "--matmul blas differs from --backend cpu-blas"; fi
fi

expect_error "train, unknown backend" "--backend 'nope'" "$ANDREA_BIN" train "${common[@]}" --backend nope -o "$T/x"
rc=0; "$ANDREA_BIN" train "${common[@]}" --backend nope -o "$T/x" 2> /dev/null || rc=$?
[ "$rc" -eq 2 ] && pass "unknown backend: exit 2" || fail "unknown backend: exit $rc, expected 2"
expect_error "train, --backend with --matmul" "give it alone" \
    "$ANDREA_BIN" train "${common[@]}" --backend cpu --matmul blas -o "$T/x"
# --precision goes with --backend cuda only (cuda-bf16), and is checked before the device is
expect_error "train, --backend cuda --precision fp16" "expected fp32 or bf16" \
    "$ANDREA_BIN" train "${common[@]}" --backend cuda --precision fp16 -o "$T/x"
expect_error "train, --backend cpu --precision bf16" "give it alone" \
    "$ANDREA_BIN" train "${common[@]}" --backend cpu --precision bf16 -o "$T/x"
expect_error "generate, unknown backend" "--backend 'nope'" \
    "$ANDREA_BIN" generate -m "$T/cpu/ckpt.bin" --backend nope -n 4
expect_error "eval, unknown backend" "--backend 'nope'" \
    "$ANDREA_BIN" eval -m "$T/cpu/ckpt.bin" -d "$data" --backend nope

# decoding: a generation on each backend (greedy); baseline and default agree on the text
a=$("$ANDREA_BIN" generate -m "$T/cpu/ckpt.bin" -p "The " -n 40 --temp 0 --backend cpu 2> /dev/null) || fail "generate cpu"
b=$("$ANDREA_BIN" generate -m "$T/cpu/ckpt.bin" -p "The " -n 40 --temp 0 --backend cpu-baseline 2> /dev/null) || fail "generate cpu-baseline"
[ -n "$a" ] && [ "$a" = "$b" ] && pass "greedy generation equal on cpu and cpu-baseline" \
    || fail "greedy generation differs: '$a' vs '$b'"
finish
