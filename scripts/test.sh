#!/usr/bin/env bash
# test.sh - the whole test suite: release build with warnings as errors, every
# CTest test; a clang build with warnings as errors; the CUDA backend built with nvcc and
# run on the CPU through the emulator (tests/cuda_emu); then an AddressSanitizer/UBSan
# build running the unit tests; then every fuzz harness for a bounded time (fuzz/run.sh)
# and the kernel tests on ARM64 under qemu (scripts/test_arm64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
# the kernel tests again at every lower ISA this CPU has (ANDREA_ISA caps every dispatch
# point; the run above was at the best one)
isas=""
grep -qw avx2 /proc/cpuinfo 2> /dev/null && grep -qw fma /proc/cpuinfo && isas="avx2"
grep -qw avx512f /proc/cpuinfo 2> /dev/null || isas=""
for isa in baseline $isas; do
    ANDREA_ISA=$isa ctest --test-dir build --output-on-failure -j"$jobs" \
        -R '^test_(kernels|attention_flash|matmul_backends|matmul_bf16|quant|batch_decode)$'
done
# warning-free under clang too (build only: the same sources were just tested)
if command -v clang > /dev/null; then
    CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON > /dev/null
    cmake --build build-clang -j"$jobs" > build-clang.log 2>&1 || { tail -30 build-clang.log; exit 1; }
    echo "clang -Werror build: ok"
fi
# the CUDA backend compiles warning-free (nvcc is on PATH on our machines, a GPU is not: its
# test and the parity test skip with their reason where no device answers; docs/cuda.md)
if command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON -DANDREA_CUDA=ON > /dev/null
    cmake --build build-cuda -j"$jobs" --target andrea test_cuda > build-cuda.log 2>&1 ||
        { tail -30 build-cuda.log; exit 1; }
    ctest --test-dir build-cuda --output-on-failure -R '^test_cuda$'
    echo "CUDA -Werror build: ok"
fi
# the CUDA backend's code run on the CPU (tests/cuda_emu: the emulator, g++): its own test,
# every per-op and model-level backend test, and the real commands on "cuda" against cpu
if command -v g++ > /dev/null; then
    cmake -S . -B build-cuda-emu -DCMAKE_BUILD_TYPE=Release -DANDREA_WERROR=ON \
        -DANDREA_CUDA_EMU=ON > /dev/null
    cmake --build build-cuda-emu -j"$jobs" --target andrea test_cuda test_cuda_emu test_cuda_lt \
        test_cuda_graph test_cuda_decode_graph test_dist_device test_backend_ops test_backend_memory test_backend_parity test_vocab_pad \
        > build-cuda-emu.log 2>&1 || { tail -30 build-cuda-emu.log; exit 1; }
    ctest --test-dir build-cuda-emu --output-on-failure -j"$jobs" \
        -R '^test_(cuda|cuda_emu|cuda_lt|cuda_graph|cuda_decode_graph|dist_device|backend_ops|backend_memory|backend_parity|vocab_pad|cuda_cli)$'
fi
if [ "${ANDREA_SKIP_ASAN:-0}" != 1 ]; then
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DANDREA_SANITIZE=ON > /dev/null
    cmake --build build-asan -j"$jobs"
    # every test, the end-to-end training runs on the corpora included (about a minute more);
    # but the guarded suite (19 CLI tests again on cpu-guarded): its point, no stray host
    # access, is proven by the release run above, and under the sanitizers it took 14 min
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j"$jobs" \
        -E '^test_guarded_suite$'
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
# ARM64: the kernel tests cross-compiled and run under qemu-aarch64 (skips without the
# cross compiler)
if [ "${ANDREA_SKIP_ARM64:-0}" != 1 ]; then
    scripts/test_arm64.sh
fi
