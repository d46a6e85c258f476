#!/usr/bin/env bash
# build.sh - configure and build a release build in build/ (pass extra CMake flags).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" > build.log 2>&1 || { cat build.log; exit 1; }
grep "andrea:" build.log || true
cmake --build build -j"$(nproc)" 2>&1 | grep -E "warning|error" || true
test -x build/andrea
