#!/usr/bin/env bash
# The explorer's live view (issue 26) driven in headless Chromium through puppeteer-core
# (test_attn_live.mjs): the mouse moves the divisor slider to three places and the
# temperature, and the max p, entropy and softmax gradient shown must equal those computed
# independently from the JSON export's q and k; a pretended d_k = 4096 shows the lesson's
# 64. Skips (77) without Chromium, node or build-node/node_modules/puppeteer-core.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"; T="$ANDREA_TMP"
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=${ANDREA_NODE_DIR:-$HERE/../build-node}
CHROME=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROME" ] || { echo "skip: $CHROME not found (apt-get install chromium)" >&2; exit 77; }
command -v node > /dev/null || { echo "skip: node not found" >&2; exit 77; }
[ -d "$NODE_DIR/node_modules/puppeteer-core" ] || { echo "skip: puppeteer-core not in $NODE_DIR (.ci/run installs it)" >&2; exit 77; }
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 20 --lr 3e-3 --val-fraction 0.2 -q -o "$T/m" > /dev/null || fail "training a tiny model failed"
"$A" attention -m "$T/m/ckpt.bin" -p 'To be, or not to be, that' --matrices 0 --html "$T/a.html" --json "$T/a.json" > /dev/null 2>&1 || fail "export failed"
ln -sfn "$NODE_DIR/node_modules" "$T/node_modules"
cp "$HERE/test_attn_live.mjs" "$T/"
if out=$(timeout 90 node "$T/test_attn_live.mjs" "$T/a.html" "$T/a.json" "$CHROME" 2>&1); then echo "$out"; pass "live view in Chromium"
else fail "live view: $out"; fi
finish
