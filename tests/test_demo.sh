#!/usr/bin/env bash
# The README's main job (scripts/demo.sh) end to end, shortened: it trains into an output
# directory whose parents do not exist yet (a fresh checkout has no out/), then samples.
. "$(dirname "$0")/lib.sh"
need_text data
root=$(cd "$(dirname "$0")/.." && pwd)
out="$ANDREA_TMP/fresh/parents/demo"
log="$ANDREA_TMP/demo.txt"
if STEPS=30 OUT="$out" ANDREA="$ANDREA_BIN" bash "$root/scripts/demo.sh" "$data" > "$log" 2>&1; then
    pass "demo.sh exits 0"
else
    fail "demo.sh failed: $(tail -3 "$log")"
fi
[ -f "$out/best.bin" ] && pass "train -o created the missing parents and wrote best.bin" ||
    fail "no $out/best.bin"
sample=$(sed -n '/^demo: sample from/,$p' "$log" | tail -n +2 | tr -d '\000')
[ ${#sample} -ge 200 ] && pass "a sample of ${#sample} characters" || fail "sample too short: '$sample'"
finish
