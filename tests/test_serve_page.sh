#!/usr/bin/env bash
# test_serve_page.sh - the chat page that `andrea serve` embeds, driven in headless Chromium
# through puppeteer-core (test_serve_page.mjs): type a message, watch the answer stream in,
# open its attention view (the `andrea attention` explorer) and read one cell.
# Skips (77) without the server, Chromium, node or build-node/node_modules/puppeteer-core
# (.ci/run installs it).
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"; T="$ANDREA_TMP"
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=${ANDREA_NODE_DIR:-$HERE/../build-node}
CHROME=${CHROMIUM:-/usr/bin/chromium}
if "$A" serve --help 2>&1 | grep -q "has no server"; then echo "skip: built without libmicrohttpd" >&2; exit 77; fi
[ -x "$CHROME" ] || { echo "skip: $CHROME not found (apt-get install chromium)" >&2; exit 77; }
command -v node > /dev/null || { echo "skip: node not found" >&2; exit 77; }
[ -d "$NODE_DIR/node_modules/puppeteer-core" ] || { echo "skip: puppeteer-core not in $NODE_DIR (.ci/run installs it)" >&2; exit 77; }
# one long line: no newline, so the answer seldom ends early at the next turn ("\n>")
printf 'To be, or not to be, that is the question: whether tis nobler in the mind to suffer %.0s' $(seq 1 200) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --ctx 96 --seq 32 --batch 8 --max-steps 60 --lr 3e-3 --warmup 10 \
    --eval-every 0 --eval-batches 1 --sample-every 0 -q -t 2 -o "$T/m" > /dev/null 2>&1 || { fail "train"; finish; }
"$A" serve -m "$T/m/ckpt.bin" --port 0 -t 1 --api-key pagekey 2> "$T/serve.log" & SPID=$!
trap 'kill $SPID 2> /dev/null' EXIT
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$T/serve.log"); [ -n "$PORT" ] && break; sleep 0.1
done
[ -n "$PORT" ] || { fail "server did not start: $(cat "$T/serve.log")"; finish; }
page=$(curl -s "http://127.0.0.1:$PORT/")
grep -qiE '(src|href)="https?:' <<< "$page" && fail "the page references the network" || pass "the page at / is self-contained ($(wc -c <<< "$page") bytes)"
ln -sfn "$NODE_DIR/node_modules" "$T/node_modules"
cp "$HERE/test_serve_page.mjs" "$T/"
if out=$(timeout 90 node "$T/test_serve_page.mjs" "http://127.0.0.1:$PORT" pagekey "$CHROME" 2>&1); then echo "$out"; pass "chat page in Chromium"
else fail "chat page: $out"; fi
finish
