#!/usr/bin/env bash
# bench_serve.sh - `andrea serve` under load on loopback, against single-stream decoding.
#   bench/bench_serve.sh [BUILD_DIR]
#   env: PRESET (andrea-12m), CTX (256), CLIENTS ("1 4 16 64"), TOKENS (64), ROUNDS (2), THREADS (2),
#        CACHES ("true false": the load with the prompt cache, then without)
# Makes a random-weight model of PRESET (one training step; speed does not depend on the
# weights), prints `andrea generate`'s single-stream tokens/s and bench_decode_batch's
# batched-vs-sequential ratio, then starts the server (--parallel = the most clients) and
# runs bench_serve.mjs: every level is bounded (CLIENTS x ROUNDS requests of TOKENS tokens).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
A=$BUILD/andrea
PRESET=${PRESET:-andrea-12m}; CLIENTS=${CLIENTS:-1 4 16 64}; TOKENS=${TOKENS:-64}; ROUNDS=${ROUNDS:-2}; THREADS=${THREADS:-2}
CTX=${CTX:-256} # every slot holds a cache of L x ctx x C keys and values: 64 slots of 1024 would be 1.2 GB
T=$(mktemp -d)
trap 'kill $SPID 2> /dev/null || true; rm -rf "$T"' EXIT
SPID=
printf 'To be, or not to be, that is the question:\n%.0s' $(seq 1 300) > "$T/text.txt"
"$A" train --data "$T/text.txt" --preset "$PRESET" --ctx "$CTX" --seq 16 --batch 1 --max-steps 1 --eval-every 0 --eval-batches 1 \
    --sample-every 0 -q -t "$THREADS" -o "$T/m" > /dev/null 2>&1
M=$T/m/best.bin
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; threads $THREADS; preset $PRESET"
echo "single stream, andrea generate (greedy, up to 4 x $TOKENS tokens; stops early at BOS):"
"$A" generate -m "$M" -p "To be, or not to be" -n $((4 * TOKENS)) --temp 0 -t "$THREADS" 2>&1 > /dev/null | grep stopped
if [ -x "$BUILD/bench/bench_decode_batch" ]; then
    echo "library, 4 sequences batched vs one after another (bench_decode_batch $PRESET f32 3):"
    OMP_NUM_THREADS=$THREADS "$BUILD/bench/bench_decode_batch" "$PRESET" f32 3 | tail -2
fi
max=0; for c in $CLIENTS; do [ "$c" -gt "$max" ] && max=$c; done
"$A" serve -m "$M" --port 0 -t "$THREADS" --parallel "$max" --queue $((4 * max)) --max-tokens "$TOKENS" \
    --timeout 600 2> "$T/serve.log" & SPID=$!
PORT=
for _ in $(seq 1 600); do
    PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$T/serve.log"); [ -n "$PORT" ] && break; sleep 0.1
done
[ -n "$PORT" ] || { echo "the server did not start: $(cat "$T/serve.log")" >&2; exit 1; }
echo "server: --parallel $max, $TOKENS tokens per request, $ROUNDS requests per client"
for cache in ${CACHES:-true false}; do # with and without the prompt cache
    timeout 900 node "$HERE/bench_serve.mjs" "http://127.0.0.1:$PORT" "$CLIENTS" "$TOKENS" "$ROUNDS" "$cache"
done
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^andrea_(batch_steps|batch_sequences|completion_tokens)_total'
echo "prompt cache: a 10-turn chat, time to first token with and without cache_prompt (bench_prompt_cache.mjs):"
timeout 600 node "$HERE/bench_prompt_cache.mjs" "http://127.0.0.1:$PORT" 10 8 3 # fits ctx 256
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^andrea_prompt_(cached_)?tokens_total'
