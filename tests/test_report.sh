#!/usr/bin/env bash
# andrea plot / andrea report on a short real run: the PNGs are PNGs, the HTML is one
# offline file whose images load in headless Chromium and whose sample table lists every
# sample; a curriculum-shaped log (per-step source, per-source evals) adds the
# per-source plots.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_text TXT
head -c 200000 "$TXT" > "$T/text.txt"
"$A" train --data "$T/text.txt" --preset tiny --max-steps 60 --eval-every 20 --sample-every 20 \
    --sample-tokens 100 --gate-arm 1000 -t 1 -o "$T/run" > "$T/train.out" || fail "training"
out=$("$A" plot "$T/run") || fail "plot: $out"
for p in loss lr grad_norm gate; do
    f="$T/run/plots/$p.png"
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && pass "$p.png is a PNG ($(wc -c < "$f") bytes)" || fail "$p.png"
done
"$A" report "$T/run" > /dev/null || fail "report"
H="$T/run/report.html"
grep -q 'src="http\|src="//\|<link' "$H" && fail "the report fetches something" || pass "nothing fetched from the network"
[ "$(grep -c 'data:image/png;base64,' "$H")" -eq 4 ] && pass "4 plots embedded" || fail "embedded plots: $(grep -c 'data:image/png' "$H")"
n_samples=$(grep -c '"type":"sample"' "$T/run/log.jsonl")

# a curriculum-shaped log: steps name their source, evaluations one source each
mkdir -p "$T/cur"
cp "$T/run/ckpt.bin" "$T/cur/"
awk '/"type":"step"/ { n++; s = (n % 3 == 0) ? "books" : (n % 3 == 1) ? "chat" : "dict"; sub(/"type":"step",/, "\"type\":\"step\",\"source\":\"" s "\",\"doc\":" n ",") }
     /"type":"eval"/ { print; for (k = 1; k <= 3; k++) { e = $0; sub(/"type":"eval",/, "\"type\":\"eval\",\"source\":\"src" k "\",", e); print e }; next }
     { print }' "$T/run/log.jsonl" > "$T/cur/log.jsonl"
"$A" plot "$T/cur" > "$T/cur.out" || fail "plot of a curriculum log: $(cat "$T/cur.out")"
for p in loss_by_source sources; do
    [ -s "$T/cur/plots/$p.png" ] && pass "curriculum log: $p.png" || fail "no $p.png"
done
# sources.png is a strip, one 16-pixel row per source (3 drawn + 3 evaluated): 34 + 6 x 16 + 40
h=$(od -An -tu1 -j20 -N4 "$T/cur/plots/sources.png" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
[ "$h" -eq 170 ] && pass "sources.png: a strip of 6 rows ($h px high)" || fail "sources.png height $h"
grep -q 'wrote .*loss.png .*source switches' "$T/cur.out" && pass "loss.png marks the source switches" || fail "loss.png title: $(grep loss.png "$T/cur.out")"
grep -q 'gate.png .*armed from step\|gate.png .*never armed' "$T/cur.out" && pass "gate.png says when the gate is armed" || fail "gate.png title"
# the curriculum's "sources" record: settings and per-source table in the report
sed -i '1a {"type":"sources","step":0,"policy":"ucb1","manifest":"m.json","warmup_steps":6,"sources":[{"name":"books","format":"text","docs":12,"tokens":3400,"floor":0,"cap":1,"weight":0.5,"warmup":true}]}' "$T/cur/log.jsonl"
"$A" report "$T/cur" > /dev/null || fail "report of a curriculum log"
rows=$(sed -n '/id="sources"/,/<\/table>/p' "$T/cur/report.html" | grep -c '<tr><td>')
[ "$rows" -eq 6 ] && pass "report: a row per source ($rows)" || fail "report source rows: $rows"
grep -q '<tr><td>books</td><td>text</td><td>12</td><td>3400</td><td>0</td><td>1</td><td>0.5</td><td>yes</td><td>20</td><td>' "$T/cur/report.html" \
    && pass "report: books' manifest entry and its 20 steps" || fail "books row: $(grep -o '<tr><td>books[^\n]*' "$T/cur/report.html" | head -c 300)"
grep -q '<th>policy</th><td>ucb1</td>' "$T/cur/report.html" && pass "report: the curriculum's settings" || fail "report: no policy"
grep -q '<th>toward a halt</th>' "$T/cur/report.html" && pass "report: samples say whether they counted" || fail "report: no counted column"
expect_error "no run" "cannot open the run's log" "$A" plot "$T/none"

# progress: one updating line on a terminal (script(1) gives a pty), every line when piped
piped=$("$A" train --data "$T/text.txt" --preset tiny --max-steps 20 --sample-every 0 --eval-every 0 -t 1 -o "$T/p1" | grep -c '^step.*ETA')
[ "$piped" -eq 20 ] && pass "piped: 20 step lines" || fail "piped: $piped step lines"
if command -v script > /dev/null; then
    script -qc "'$A' train --data '$T/text.txt' --preset tiny --max-steps 20 --sample-every 0 --eval-every 0 -t 1 -o '$T/p2'" "$T/tty.log" > /dev/null
    cr=$(grep -o $'\rstep' "$T/tty.log" | wc -l)
    lines=$(grep -c $'^step.*ETA' "$T/tty.log")
    [ "$cr" -eq 20 ] && [ "$lines" -eq 0 ] && pass "terminal: 20 steps rewrite one line (\\r), none on a line of its own" || fail "terminal: $cr carriage returns, $lines step lines"
fi

if ! command -v chromium > /dev/null; then
    echo "note: no chromium: the browser checks are skipped"
    finish
    exit 0 # finish returns when every check passed
fi
# images load: a copy of the page that records how many images decoded
sed 's#</body>#<script>addEventListener("load",()=>{document.body.dataset.loaded=[...document.images].filter(i=>i.complete\&\&i.naturalWidth>0).length})</script></body>#' "$H" > "$T/check.html"
timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
    --dump-dom "file://$T/check.html" > "$T/dom.html" 2> /dev/null || fail "chromium --dump-dom"
grep -q 'data-loaded="4"' "$T/dom.html" && pass "Chromium: 4 of 4 images load" || fail "images loaded: $(grep -o 'data-loaded="[0-9]*"' "$T/dom.html")"
rows=$(grep -o '<tr class="\(pass\|fail\)"' "$T/dom.html" | wc -l)
grep -q 'id="samples"' "$T/dom.html" && [ "$rows" -eq "$n_samples" ] && pass "Chromium: sample table with $rows rows" || fail "sample rows $rows, log has $n_samples"
timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1200,1600 \
    --screenshot="$T/report.png" "file://$H" > /dev/null 2>&1 && [ -s "$T/report.png" ] && pass "screenshot $T/report.png" || fail "screenshot"
finish
