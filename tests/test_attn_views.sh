#!/usr/bin/env bash
# The explorer's head view and cell view in a real browser (issue 15): headless Chromium
# opens the page with #head=L,H,i&cell=L,H,i,j, the script draws both views, and every
# number they show must be the JSON export's: the weights of query i in the head view, and
# in the cell view q_i, k_j, q*k, the engine's score, the scaled and masked scores, the
# softmax and the weighted rows of V. Also: the page in Indonesian, and no horizontal
# overflow at T = 255 in a 1400-pixel window. Skipped (77) without Chromium or python3.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
CHROME=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROME" ]; then echo "skip: $CHROME not found (apt-get install chromium)" >&2; exit 77; fi
command -v python3 > /dev/null || { echo "skip: python3 needed to read the JSON" >&2; exit 77; }
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 5 --val-fraction 0.2 -q -o "$T/m" > /dev/null || fail "training a tiny model failed"
ck="$T/m/ckpt.bin"
prompt='To be, or not <to> be'
"$A" attention -m "$ck" -p "$prompt" --matrices 0 --html "$T/a.html" --json "$T/a.json" --views raw,scaled,masked,softmax > /dev/null 2>&1 || fail "export failed"

dump() { # URL -> DOM on stdout
    local prof; prof=$(mktemp -d)
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --window-size=1400,900 --user-data-dir="$prof" --dump-dom "$1" 2> "$T/chromium.err"
    rm -rf "$prof"
}

# one page load: head view of query 6, cell views above and below the diagonal need two
dump "file://$T/a.html#head=1,1,6&cell=1,1,6,2&select=1,1,6,2,softmax&scale=row" > "$T/dom1.html"
dump "file://$T/a.html#cell=0,1,3,8&head=1,1,6&overlay=1" > "$T/dom2.html"
[ -s "$T/dom1.html" ] && [ -s "$T/dom2.html" ] || fail "chromium printed no DOM: $(tail -3 "$T/chromium.err")"

python3 - "$T/a.json" "$T/dom1.html" "$T/dom2.html" <<'PY' || fail "the views' numbers differ from the JSON export (above)"
import json, re, struct, sys
d = json.load(open(sys.argv[1]))
dom1, dom2 = open(sys.argv[2]).read(), open(sys.argv[3]).read()
f32 = lambda x: struct.unpack('f', struct.pack('f', x))[0]
def head(l, h): return [e for e in d["heads"] if e["layer"] == l and e["head"] == h][0]
def attr(tag, name): m = re.search(name + r'="([^"]*)"', tag); return m.group(1) if m else None
def cells(dom, cls): # data-d -> data-value of <td class="cls" ...>
    return {int(attr(t, 'data-d')): attr(t, 'data-value') for t in re.findall(r'<td class="%s"[^>]*>' % cls, dom)}
def by_id(dom, id_): m = re.search(r'<[^>]*id="%s"[^>]*>' % id_, dom); return attr(m.group(0), 'data-value') if m else None
bad = 0
def want(ok, what):
    global bad
    print(("ok: " if ok else "FAIL: ") + what)
    bad += not ok
h = head(1, 1); A = h["softmax"]; q, k, v = h["qkv"]; HS = d["config"]["head_size"]
# head view: query 6's weights, one span per key 0..6
spans = re.findall(r'<span class="w"[^>]*>', dom1)
got = {int(attr(s, 'data-j')): float(attr(s, 'data-value')) for s in spans
       if attr(s, 'data-layer') == '1' and attr(s, 'data-head') == '1' and attr(s, 'data-i') == '6'}
want(sorted(got) == list(range(7)), "head view lists keys 0..6 of query 6 (%s)" % sorted(got))
want(all(got.get(j) == A[6][j] for j in range(7)), "head view weights equal the JSON's A[6][0..6]")
want(abs(sum(got.values()) - 1) < 1e-6, "head view weights sum to 1 (%.9f)" % sum(got.values()))
svg = re.search(r'<svg id="hv".*?</svg>', dom1, re.S)
n_lines = svg.group(0).count('<line ') if svg else -1
want(n_lines == 7, "head view draws 7 lines for query 6 (%d)" % n_lines)
# cell view (6, 2): q_6, k_2, their products, the score through scale, mask and softmax
cq, ck, cqk = cells(dom1, 'cv-q'), cells(dom1, 'cv-k'), cells(dom1, 'cv-qk')
want(len(cq) == HS and all(float(cq[i]) == q[6][i] for i in range(HS)), "cell view q_6 = JSON qkv[0][6] (%d values)" % len(cq))
want(len(ck) == HS and all(float(ck[i]) == k[2][i] for i in range(HS)), "cell view k_2 = JSON qkv[1][2]")
want(all(float(cqk[i]) == q[6][i] * k[2][i] for i in range(HS)), "cell view q*k = the products")
raw = float(by_id(dom1, 'cv-raw')); s = float(by_id(dom1, 'cv-sum'))
want(raw == h["raw"][6][2], "cell view score = JSON raw[6][2] = %r" % raw)
mag = sum(abs(q[6][i] * k[2][i]) for i in range(HS))
want(abs(s - raw) <= HS * 2**-23 * mag + 1e-30, "the sum of q*k (%r) is the engine's score within float rounding" % s)
want(float(by_id(dom1, 'cv-scaled')) == h["scaled"][6][2], "cell view scaled = JSON scaled[6][2] (fl(raw * 1/sqrt(d_k)))")
want(float(by_id(dom1, 'cv-masked')) == h["masked"][6][2], "cell view masked = JSON masked[6][2] (j <= i: unchanged)")
want(float(by_id(dom1, 'cv-softmax')) == A[6][2], "cell view softmax = JSON A[6][2]")
out = cells(dom1, 'cv-out')
ref = [sum(A[6][j] * v[j][dd] for j in range(7)) for dd in range(HS)]
want(len(out) == HS and all(abs(float(out[dd]) - ref[dd]) <= 1e-12 * (1 + abs(ref[dd])) for dd in range(HS)),
     "cell view output_6 = sum_j A[6][j] v_j from the JSON")
want(dom1.count('class="cv-wv"') == 7 * HS, "cell view shows the 7 weighted rows of V")
# issue 26: the row's softmax arithmetic, v_j, the shaded prompt, the sorted weights
import math
srow = [f32(h["raw"][6][j] * f32(d["scale"])) for j in range(7)]
mx = max(srow); ex = [math.exp(x - mx) for x in srow]; Z = sum(ex)
by_j = lambda cls: {int(attr(t, 'data-d')): float(attr(t, 'data-value')) for t in re.findall(r'<td class="%s"[^>]*>' % cls, dom1)}
want(abs(float(by_id(dom1, 'cv-z')) - Z) <= 1e-12 * Z, "cell view: the row's sum of exp(s - max) = %.6f" % Z)
ca = by_j('cv-a')
want(sorted(ca) == list(range(7)) and all(abs(ca[j] - A[6][j]) <= 1e-6 * A[6][j] + 1e-12 for j in range(7)),
     "cell view: each exp / sum equals the engine's A[6][j] (float softmax, within 1e-6)")
cv = by_j('cv-v')
want(len(cv) == HS and all(cv[dd] == v[2][dd] for dd in range(HS)), "cell view shows v_2 itself")
sh = {int(attr(t, 'data-j')): float(attr(t, 'data-w')) for t in re.findall(r'<span[^>]*data-j="[0-9]+"[^>]*data-w="[^"]*"[^>]*>', dom1)}
want(len(sh) == d["T"] and all(sh[j] == A[6][j] for j in range(7)) and all(sh[j] == 0 for j in range(7, d["T"])),
     "the prompt shaded by query 6's weights (%d tokens)" % len(sh))
order = [int(attr(sp, 'data-j')) for sp in spans if attr(sp, 'data-i') == '6']
want([A[6][j] for j in order] == sorted([A[6][j] for j in range(7)], reverse=True), "head view lists the weights largest first")
want('each row on its own scale' in dom1, "per-row colour scale chosen from the URL")
svg2 = re.search(r'<svg id="hv".*?</svg>', dom2, re.S)
heads1 = sorted(e["head"] for e in d["heads"] if e["layer"] == 1)
lines = re.findall(r'<line data-head="([0-9]+)"', svg2.group(0)) if svg2 else []
want(sorted(set(map(int, lines))) == heads1 and len(lines) == 7 * len(heads1),
     "overlay: query 6's lines for every head of layer 1 (%d lines, heads %s)" % (len(lines), sorted(set(lines))))
# above the diagonal: masked to -inf, weight exactly 0
h0 = head(0, 1)
want(by_id(dom2, 'cv-masked') == '-inf' and h0["masked"][3][8] is None, "cell (3, 8): masked is -inf")
want(float(by_id(dom2, 'cv-softmax')) == 0.0 == h0["softmax"][3][8], "cell (3, 8): weight exactly 0")
want(float(by_id(dom2, 'cv-raw')) == h0["raw"][3][8], "cell (3, 8): the raw score the mask removes")
sys.exit(1 if bad else 0)
PY

# T = 255 in a 1400-pixel window, in Indonesian: the maps scroll inside their boxes, the page
# does not overflow, and the script wrote the lesson's words
"$A" train --data "$T/small.txt" --preset tiny --ctx 256 --n-head 8 --seq 16 --batch 2 --max-steps 1 --val-fraction 0.2 -q -o "$T/m256" > /dev/null || fail "training a ctx-256 model failed"
long=$(head -c 4000 "$T/small.txt" | tr -d '\n' | head -c 255)
"$A" attention -m "$T/m256/ckpt.bin" -p "$long" --layer 0 --matrices 0 --html "$T/long.html" --lang id > /dev/null 2>&1 || fail "T = 255 export failed"
dom=$(dump "file://$T/long.html")
sw=$(echo "$dom" | sed -n 's/.*data-scroll-width="\([0-9]*\)".*/\1/p' | head -1)
iw=$(echo "$dom" | sed -n 's/.*data-inner-width="\([0-9]*\)".*/\1/p' | head -1)
[ -n "$sw" ] && [ -n "$iw" ] && [ "$sw" -le "$iw" ] && pass "T = 255: page width $sw <= window $iw" || fail "T = 255 overflows: scroll width '$sw', window '$iw'"
echo "$dom" | grep -q 'id="zoom"' && pass "zoom control present" || fail "no zoom control"
for w in 'Tampilan head' 'Tampilan sel' 'skor mentah' 'softmax tanpa penskalaan' 'lang="id"'; do
    echo "$dom" | grep -q "$w" && pass "id page shows '$w'" || fail "id page lacks '$w'"
done
echo "$dom" | grep -q '>Head view<' && fail "id page still shows English 'Head view'"
finish
