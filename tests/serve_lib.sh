# serve_lib.sh - helpers of the `andrea serve` tests (sourced after lib.sh, not run).
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done; wait 2> /dev/null; }
trap cleanup EXIT

# start_server LOG ARGS...: starts andrea serve on a free loopback port; sets PORT and SPID
start_server() {
    local log=$1; shift
    "$ANDREA_BIN" serve --port 0 -t 1 "$@" 2> "$log" &
    SPID=$!; PIDS+=("$SPID")
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$log")
        [ -n "$PORT" ] && return 0
        kill -0 "$SPID" 2> /dev/null || break
        sleep 0.1
    done
    fail "server did not start: $(cat "$log")"; finish; exit 1
}

# serve_tiny_model DIR: trains the tests' tiny model (60 steps, a few seconds) into DIR
serve_tiny_model() {
    printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 200) > "$ANDREA_TMP/small.txt"
    "$ANDREA_BIN" train --data "$ANDREA_TMP/small.txt" --preset tiny --ctx 96 --seq 32 --batch 8 --max-steps 60 \
        --lr 3e-3 --warmup 10 --eval-every 0 --eval-batches 1 --sample-every 0 -q -t 2 -o "$1" > /dev/null 2>&1 ||
        { fail "train"; finish; exit 1; }
}

# req METHOD PATH [curl args]: prints "BODY STATUS" (B is the server's base URL)
req() { local m=$1 p=$2; shift 2; curl -s -m 30 -X "$m" -H 'Content-Type: application/json' -w ' %{http_code}' "$@" "$B$p"; }
# expect NAME STATUS PATTERN OUTPUT: OUTPUT (from req) ends with STATUS and holds PATTERN
expect() {
    local name=$1 status=$2 pat=$3 out=$4
    if [[ "$out" == *" $status" ]] && grep -q -- "$pat" <<< "$out"; then pass "$name: $status ${out:0:140}"
    else fail "$name: want $status and '$pat', got: ${out:0:300}"; fi
}
