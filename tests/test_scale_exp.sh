#!/usr/bin/env bash
# The lesson's "without the scale, training stalls" checked by training (issue 26):
# `andrea explain --experiment scale` trains one attention-only model twice on real text,
# from the same weights on the same batches, its scores divided by 1 and by sqrt(d_k) = 8,
# on a fixed seed, 100 steps (some 2 s on 2 cores). Its three checks must pass: the
# held-out loss is worse without the scale by at least 0.1 nats, the rows are sharper
# from step 1, and less gradient passes the softmax. Also the PNG charts, the page, the
# Indonesian report and clean errors. The text: tinyshakespeare from ANDREA_DATA_DIR,
# else the fortunes text (lib.sh need_text).
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_text text
"$A" explain --experiment scale --data "$text" --steps 100 --seed 1 --png "$T/png" --html "$T/sx.html" > "$T/out.txt" 2> "$T/err.txt" \
    && pass "the experiment's checks pass (exit 0)" || fail "experiment exit non-zero: $(tail -5 "$T/out.txt") $(cat "$T/err.txt")"
[ "$(grep -c ': PASS$' "$T/out.txt")" -eq 3 ] && pass "three checks PASS" || fail "checks: $(grep 'check:' "$T/out.txt")"
# the margin as printed, and the numbers behind it
python3 - "$T/out.txt" <<'PY' || fail "the printed numbers do not support the claim (above)"
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r'after 100 steps: ([0-9.]+) against ([0-9.]+) \(worse by ([0-9.]+)\)', out)
assert m, "no held-out loss line"
a, b, d = map(float, m.groups())
print("held-out loss: %.4f without the scale, %.4f with it (worse by %.4f)" % (a, b, d))
assert abs((a - b) - d) < 2e-4 and d >= 0.1
rows = [list(map(float, re.findall(r'-?[0-9]+\.[0-9]+', l))) for l in out.splitlines() if re.match(r'^ +[0-9]+ \|', l)]
assert len(rows) == 11, len(rows)                    # steps 1, 10, ..., 100
assert all(r[2] < r[3] for r in rows), "entropy"    # sharper rows without the scale, every point
assert all(r[4] > r[5] for r in rows), "max p"
late = rows[6:]
assert sum(r[6] for r in late) < 0.6 * sum(r[7] for r in late), "gradient through the softmax"
PY
for f in scale_loss scale_entropy scale_grad scale_grad_qk; do
    head -c 8 "$T/png/$f.png" 2> /dev/null | od -An -c | grep -q 'P   N   G' && pass "$f.png written" || fail "$f.png"
done
[ "$(grep -o '<svg class="chart"' "$T/sx.html" | wc -l)" -eq 4 ] && pass "page: four SVG charts" || fail "page charts"
[ "$(grep -o 'data-ok="1"' "$T/sx.html" | wc -l)" -eq 3 ] && pass "page: three checks ok" || fail "page checks"
grep -qiE '(src|href)="https?:' "$T/sx.html" && fail "the page references the network"
# Indonesian: a short run, its words
"$A" explain --experiment scale --data "$text" --steps 20 --lang id > "$T/id.txt" 2>&1
grep -q 'Tanpa skala, pelatihan terhenti' "$T/id.txt" && grep -q 'pemeriksaan: tanpa skala' "$T/id.txt" \
    && pass "the report in Indonesian" || fail "id report: $(head -3 "$T/id.txt")"
grep -qE '\b(the|with|without|step)\b' "$T/id.txt" && fail "English in the id report: $(grep -E '\b(the|with|without|step)\b' "$T/id.txt" | head -2)"
# errors: one line, non-zero
expect_error "no data" "give a text with --data" "$A" explain --experiment scale
expect_error "unknown experiment" "unknown experiment 'mask'" "$A" explain --experiment mask --data "$text"
head -c 1000 "$text" > "$T/short.txt"
expect_error "short text" "needs at least" "$A" explain --experiment scale --data "$T/short.txt"
expect_error "missing file" "cannot read '$T/none.txt'" "$A" explain --experiment scale --data "$T/none.txt"
expect_error "bad d_k" "d_k 0" "$A" explain --experiment scale --data "$text" --dk 0
finish
