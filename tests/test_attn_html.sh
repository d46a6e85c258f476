#!/usr/bin/env bash
# The HTML explorer works in a real browser, offline: headless Chromium opens
# the page with #select=L,H,i,j,VIEW, the page's script selects that head and
# view and "hovers" cell (i, j), and the value it writes into #info-value must
# equal the JSON export's value for that cell. Skipped (77) without Chromium.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
CHROME=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROME" ]; then echo "skip: $CHROME not found (apt-get install chromium)" >&2; exit 77; fi
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 5 --val-fraction 0.2 -q -o "$T/m" > /dev/null || fail "training a tiny model failed"
ck="$T/m/ckpt.bin"
prompt='To be, or "not" <b>'
"$A" attention -m "$ck" -p "$prompt" --matrices 0 --html "$T/a.html" --json "$T/a.json" --views raw,scaled,masked,softmax > /dev/null 2>&1 || fail "export failed"
grep -qiE '(src|href)="https?:' "$T/a.html" && fail "the page references the network"

# value of one cell in the JSON export (python3, else a sed fallback is too fragile: skip)
json_value() { # layer head i j view
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); l, h, i, j = map(int, sys.argv[2:6])
x = [e for e in d["heads"] if e["layer"] == l and e["head"] == h][0][sys.argv[6]][i][j]
print("-inf" if x is None else repr(float(x)))' "$T/a.json" "$@"
}
command -v python3 > /dev/null || { echo "skip: python3 needed to read the JSON" >&2; exit 77; }

# all cells in one page load: #select=L,H,i,j,view;L,H,i,j,view;...
cells="1,1,7,3,softmax 0,1,12,12,softmax 1,0,2,9,softmax 0,0,5,2,raw 1,1,9,4,scaled 0,1,3,8,masked"
# (1,0,2,9) is above the diagonal: exactly 0; (0,1,3,8) masked: -inf
prof=$(mktemp -d)
dom=$(timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$prof" --dump-dom "file://$T/a.html#select=$(echo $cells | tr ' ' ';')" 2> "$T/chromium.err")
rm -rf "$prof"
[ -n "$dom" ] || fail "chromium printed no DOM: $(tail -3 "$T/chromium.err")"
for c in $cells; do
    IFS=, read -r l h i j v <<< "$c"
    probe=$(echo "$dom" | grep -o "<span [^>]*class=\"probe\"[^>]*>" | grep "data-layer=\"$l\" data-head=\"$h\" data-i=\"$i\" data-j=\"$j\" data-view=\"$v\"" | head -1)
    got=$(echo "$probe" | sed -n 's/.*data-value="\([^"]*\)".*/\1/p')
    want=$(json_value "$l" "$h" "$i" "$j" "$v")
    # JS prints the shortest text of the same double; compare as numbers (exactly)
    if [ -n "$got" ] && python3 -c 'import sys; a, b = sys.argv[1:]; sys.exit(0 if float(a) == float(b) else 1)' "$got" "$want"; then
        pass "cell L$l H$h ($i,$j) $v: page shows $got = JSON $want"
    else
        fail "cell L$l H$h ($i,$j) $v: page shows '$got', JSON has '$want'"
    fi
done
echo "$dom" | grep -q 'id="info-pair">layer 0 head 1 masked: query 3' && pass "the hover text names the token pair" || fail "hover text"
finish
