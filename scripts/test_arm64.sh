#!/usr/bin/env bash
# test_arm64.sh - the kernel tests on 64-bit ARM: cross-compiled with Debian's
# aarch64-linux-gnu-gcc (cmake/toolchain-aarch64.cmake) and run under qemu-user, at
# every ISA level ARM has here (baseline and NEON, via ANDREA_ISA). Correctness only:
# qemu says nothing about speed. Skips (exit 0, with a message) when the cross compiler
# or qemu-aarch64 is absent. About 2-3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
    if ! command -v "$tool" > /dev/null; then
        echo "test_arm64: skipped ($tool not found; apt-get install gcc-aarch64-linux-gnu qemu-user)"
        exit 0
    fi
done
jobs=$(nproc)
tests="test_kernels test_attention_flash test_quant test_q8_0_decode test_q4_0_decode test_f16_decode test_prefill_blocks"
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
    -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON > build-arm64.log 2>&1 ||
    { tail -30 build-arm64.log; exit 1; }
# shellcheck disable=SC2086
cmake --build build-arm64 -j"$jobs" --target $tests >> build-arm64.log 2>&1 ||
    { tail -30 build-arm64.log; exit 1; }
run() { # isa test
    local out
    if ! out=$(ANDREA_ISA=$1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \
        qemu-aarch64 -L /usr/aarch64-linux-gnu "build-arm64/tests/$2" 2>&1); then
        echo "$out" | tail -20
        echo "test_arm64: $2 FAILED at ANDREA_ISA=$1"
        return 1
    fi
    echo "test_arm64: $2 at $1: $(echo "$out" | tail -n 1)"
}
status=0
for t in $tests; do run neon "$t" || status=1; done
run baseline test_kernels || status=1
exit $status
