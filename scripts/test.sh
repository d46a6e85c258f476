#!/usr/bin/env bash
# test.sh - the whole test suite: release build with warnings as errors, every
# CTest test; a clang build with warnings as errors; then an AddressSanitizer/UBSan
# build running the unit tests; then every fuzz harness for a bounded time (fuzz/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
# warning-free under clang too (build only: the same sources were just tested)
if command -v clang > /dev/null; then
    CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON > /dev/null
    cmake --build build-clang -j"$jobs" > build-clang.log 2>&1 || { tail -30 build-clang.log; exit 1; }
    echo "clang -Werror build: ok"
fi
if [ "${ANDREA_SKIP_ASAN:-0}" != 1 ]; then
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DANDREA_SANITIZE=ON > /dev/null
    cmake --build build-asan -j"$jobs"
    # the long end-to-end runs are covered by the release build above
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j"$jobs" -E 'test_train'
fi
# fuzzing: every reader's libFuzzer harness for FUZZ_SECONDS (10) each on its seeds and the
# reproducers in fuzz/corpus; any crash or sanitizer report fails (docs/reliability.md)
if [ "${ANDREA_SKIP_FUZZ:-0}" != 1 ]; then
    if command -v clang > /dev/null; then
        fuzz/run.sh
    else
        echo "skip: fuzz/run.sh (clang not found; libFuzzer needs it)"
    fi
fi
