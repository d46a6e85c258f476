#!/usr/bin/env bash
# fuzz/run.sh - builds the libFuzzer harnesses (clang, -DANDREA_FUZZ=ON, ASan + UBSan) and
# runs each on its seed corpus for FUZZ_SECONDS (default 10), one at a time; exits non-zero
# on any crash, leak or sanitizer report. New inputs go to a scratch copy of the corpus,
# never into fuzz/corpus (commit a finding there by hand, as a regression seed).
#   fuzz/run.sh                  every harness
#   FUZZ_SECONDS=600 fuzz/run.sh checkpoint gguf
# Env: FUZZ_BUILD (build-fuzz), FUZZ_WORK (scratch, default a temp dir), FUZZ_JOBS (2, for
# the build).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-10}
build=${FUZZ_BUILD:-build-fuzz}
all=(checkpoint tok_blob tok_file harris_json token_file chat_jsonl corpus safetensors gguf llmc
     manifest)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
if ! command -v clang > /dev/null; then
    echo "fuzz/run.sh: clang not found (libFuzzer needs it)" >&2
    exit 77
fi
CC=clang cmake -S . -B "$build" -DANDREA_FUZZ=ON -DCMAKE_BUILD_TYPE=Release > "$build.log" 2>&1 ||
    { cat "$build.log" >&2; exit 1; }
cmake --build "$build" -j"${FUZZ_JOBS:-2}" >> "$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
work=${FUZZ_WORK:-}
if [ -z "$work" ]; then # a scratch dir of our own: removed unless something failed
    work=$(mktemp -d)
    trap '[ "$failed" -ne 0 ] || rm -rf "$work"' EXIT
fi
failed=0
for n in "${names[@]}"; do
    exe="$build/fuzz/fuzz_$n"
    [ -x "$exe" ] || { echo "fuzz/run.sh: no harness '$n'" >&2; failed=1; continue; }
    mkdir -p "$work/$n" "$work/artifacts"
    # seeds first (read-only), the scratch corpus collects what the run adds
    log="$work/$n.log"
    if "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$work/artifacts/$n-" \
        "$work/$n" "fuzz/corpus/$n" > "$log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
        echo "ok: fuzz_$n: $runs runs in ${secs}s"
    else
        echo "FAIL: fuzz_$n (log $log, artifacts $work/artifacts):" >&2
        grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -10 >&2 || tail -20 "$log" >&2
        failed=1
    fi
done
exit $failed
