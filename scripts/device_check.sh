#!/usr/bin/env bash
# device_check.sh - the CUDA backend's check on a fresh GPU machine (docs/cuda.md): the
# repository copied over, nothing installed, no network, none of the optional Debian
# libraries. Builds with -DANDREA_CUDA=ON for sm_90 (ANDREA_CUDA_ARCH to change), runs
# every CUDA test and a short benchmark, and writes report.md and report.json into $OUT
# (default ./device_check_out), each step's log under $OUT/logs. Under 8 minutes: every
# step has a timeout and later steps are skipped once DEADLINE_S (420) has passed.
# A step that fails is recorded and the next one still runs; exit 0 when every step passed
# (a skip counts as a failure: on a GPU machine every CUDA test must run).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device_check_out}
ARCH=${ANDREA_CUDA_ARCH:-90}
BUILD=${BUILD:-build-device}
DEADLINE_S=${DEADLINE_S:-420}
mkdir -p "$OUT/logs"
START=$(date +%s)
export PATH="/usr/local/cuda/bin:$PATH"
JOBS=$(nproc 2>/dev/null || echo 4)

NAMES=() STATUS=() SECS=() NOTES=()
# step NAME TIMEOUT_S CMD...: runs CMD with its output in logs/NAME.log, records its status
step() {
    local name=$1 limit=$2
    shift 2
    local now rc t0 note=""
    now=$(date +%s)
    if [ $((now - START)) -ge "$DEADLINE_S" ]; then
        NAMES+=("$name") STATUS+=("skipped") SECS+=(0) NOTES+=("past the ${DEADLINE_S}s deadline")
        return 0
    fi
    t0=$now
    timeout "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
    rc=$?
    local st=pass
    if [ $rc -eq 77 ]; then st=skipped
    elif [ $rc -eq 124 ]; then st=fail note="timed out after ${limit}s"
    elif [ $rc -ne 0 ]; then st=fail note="exit $rc"
    elif grep -q '(Skipped)' "$OUT/logs/$name.log"; then st=skipped; fi
    [ -z "$note" ] && note=$(tail -n 1 "$OUT/logs/$name.log" | tr -d '\r' | cut -c1-200)
    NAMES+=("$name") STATUS+=("$st") SECS+=($(($(date +%s) - t0))) NOTES+=("$note")
    echo "device_check: $name: $st (${SECS[-1]}s) $note"
}

step gpu 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
step nvcc 30 nvcc --version
GEN=()
command -v ninja > /dev/null && GEN=(-G Ninja)
# NCCL: the toolkit's, else the one PyTorch's wheel brings (site-packages/nvidia/nccl:
# include/nccl.h and lib/libnccl.so.2); without either the build says so and the device
# collectives are left out (test_dist_device then skips: a failure here)
NCCL=()
if [ ! -f /usr/local/cuda/include/nccl.h ]; then
    nccl_root=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2> /dev/null)
    [ -n "$nccl_root" ] && [ -f "$nccl_root/include/nccl.h" ] && NCCL=(-DANDREA_NCCL_ROOT="$nccl_root")
fi
step configure 120 cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DANDREA_WERROR=ON -DANDREA_CUDA=ON -DANDREA_CUDA_ARCH="$ARCH" "${NCCL[@]}"
step build 300 cmake --build "$BUILD" -j"$JOBS"
if [ "${STATUS[-1]}" != pass ]; then
    # another gcc may warn where this one did not: the tests still run, the failure stays
    step configure_no_werror 120 cmake -S . -B "$BUILD" -DANDREA_WERROR=OFF
    step build_no_werror 300 cmake --build "$BUILD" -j"$JOBS"
fi
step list_backends 30 bash -c "'$BUILD/andrea' bench --list-backends && '$BUILD/andrea' bench --list-backends | grep -q '^cuda '"
# the CUDA tests: test_cuda, then every backend test (they run each listed backend: cuda too)
# (test_cuda_cli: the real commands on cuda against cpu; test_gpu_peak: the MFU table)
# English text for the tests that train and for the benchmarks: the machine has no corpus
# and no fortunes, so the repository's own documentation (lib.sh's need_text reads the
# folder ANDREA_FORTUNES names)
TEXT_DIR="$OUT/text"
mkdir -p "$TEXT_DIR" && cat README.md docs/*.md > "$TEXT_DIR/docs.txt"
export ANDREA_FORTUNES="$TEXT_DIR"
# (test_cuda_cli's bf16 check at andrea-12m's shape for 20 steps, the issue's; the emulator's
# CI run uses a tiny model)
export ANDREA_CUDA_BF16_PRESET=andrea-12m ANDREA_CUDA_BF16_STEPS=20
for t in test_cuda test_gpu_peak test_device_pick test_dist_device test_vocab_pad test_cuda_graph \
         test_cuda_decode_graph \
         test_backend_ops \
         test_backend_memory test_backend_parity test_cuda_cli test_backend_cli; do
    step "$t" 180 ctest --test-dir "$BUILD" -R "^$t\$" --output-on-failure
done
# a failing per-op test once more with cuda-bf16's cuBLASLt path off (every product unfused):
# tells a cuBLASLt problem (epilogue, alignment, heuristic) from the kernels' own
status_of() { for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$1" ] && echo "${STATUS[$i]}"; done; }
if [ "$(status_of test_backend_ops)" != pass ]; then
    step test_backend_ops_no_lt 180 env ANDREA_CUDA_LT=0 ctest --test-dir "$BUILD" \
        -R '^test_backend_ops$' --output-on-failure
fi
# benchmarks, short (numbers for the note; fp32 exact mode, then --precision bf16):
# training tokens/s and MFU against the GPU's dense bf16 peak at the issue's shapes, and
# batch-1 and batch-32 generation for the two 124M-class models
BENCHES=("baby --batch 64 --seq 64" "andrea-12m --batch 8 --seq 1024"
         "andrea-120m --batch 8 --seq 1024 --generate 32 --gen-batch 32"
         "gpt2-124m --batch 8 --seq 1024 --generate 32 --gen-batch 32"
         "andrea-120m --batch 8 --seq 1024 --generate 0 --precision bf16"
         "gpt2-124m --batch 8 --seq 1024 --generate 0 --precision bf16")
for b in "${BENCHES[@]}"; do
    read -r -a args <<< "$b"
    name="bench_cuda_${args[0]}"
    [[ "$b" == *bf16 ]] && name="${name}_bf16"
    step "$name" 150 "$BUILD/andrea" bench --backend cuda --preset "${args[@]}" --steps 3 --warmup 1
done
# the small models once more with CUDA graphs off (every op launched from the host): what
# replaying a step's capture gains where launches bound the step
for p in baby andrea-12m; do
    a=(--batch 64 --seq 64); [ "$p" = andrea-12m ] && a=(--batch 8 --seq 1024)
    step "bench_cuda_${p}_nograph" 150 env ANDREA_CUDA_GRAPHS=0 "$BUILD/andrea" bench --backend cuda \
        --preset "$p" "${a[@]}" --steps 3 --warmup 1
done
# batch-1 generation of andrea-120m with the decoding step's graph off (its run with graphs
# on is bench_cuda_andrea-120m above)
step bench_cuda_andrea-120m_gen_nograph 120 env ANDREA_CUDA_GRAPHS=0 "$BUILD/andrea" bench \
    --backend cuda --preset andrea-120m --steps 0 --generate 32
step bench_cpu_baby 120 "$BUILD/andrea" bench --backend cpu --preset baby --steps 3 --warmup 1 -n 16
# PyTorch on the same GPU (bench/torch_ref.py: bf16 autocast, its flash attention, fused AdamW)
# from the same initial weights, after andrea's bf16 run of the same shape
PY=$(command -v python3)
for p in andrea-120m gpt2-124m; do
    step "init_$p" 60 "$BUILD/andrea" train --data "$TEXT_DIR/docs.txt" --preset "$p" --batch 8 \
        --seq 1024 --max-steps 0 -q -o "$OUT/init_$p"
    step "torch_$p" 150 "$PY" bench/torch_ref.py --ckpt "$OUT/init_$p/ckpt.bin" \
        --data "$TEXT_DIR/docs.txt" --batch 8 --seq 1024 --steps 10 --warmup-steps 3 \
        --device cuda --bf16 --sdpa --fused-adamw
done

# ---- the report ------------------------------------------------------------------------
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037'; }
GPU=$(head -n 2 "$OUT/logs/gpu.log" 2>/dev/null | tail -n 1)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
failed=0
{
    echo "# device_check: CUDA backend"
    echo
    echo "- commit: $COMMIT, arch sm_$ARCH, GPU: ${GPU:-unknown}"
    echo "- total: $(($(date +%s) - START)) s"
    echo
    echo "| step | status | seconds | note |"
    echo "|---|---|---|---|"
    for i in "${!NAMES[@]}"; do
        echo "| ${NAMES[$i]} | ${STATUS[$i]} | ${SECS[$i]} | $(printf '%s' "${NOTES[$i]}" | tr '|' '/') |"
    done
    echo
    # CUDA graphs: the same bench with and without (fp32 exact mode)
    echo "| model | graphs on tok/s | graphs off tok/s | on / off |"
    echo "|---|---|---|---|"
    for p in baby andrea-12m; do
        on=$(sed -n 's/^train B=[0-9]* T=[0-9]* cuda: [0-9.]* ms\/step | \([0-9]*\) tok\/s.*/\1/p' \
            "$OUT/logs/bench_cuda_$p.log" 2>/dev/null)
        off=$(sed -n 's/^train B=[0-9]* T=[0-9]* cuda: [0-9.]* ms\/step | \([0-9]*\) tok\/s.*/\1/p' \
            "$OUT/logs/bench_cuda_${p}_nograph.log" 2>/dev/null)
        r=$(awk -v a="${on:-0}" -v t="${off:-0}" 'BEGIN { if (a > 0 && t > 0) printf "%.2f", a / t; else print "n/a" }')
        echo "| $p | ${on:-n/a} | ${off:-n/a} | $r |"
    done
    gen() { sed -n 's/^generate batch 1 (f32 weights): \([0-9.]*\) tok\/s.*/\1/p' "$1" 2>/dev/null; }
    on=$(gen "$OUT/logs/bench_cuda_andrea-120m.log") off=$(gen "$OUT/logs/bench_cuda_andrea-120m_gen_nograph.log")
    r=$(awk -v a="${on:-0}" -v t="${off:-0}" 'BEGIN { if (a > 0 && t > 0) printf "%.2f", a / t; else print "n/a" }')
    echo "| andrea-120m, batch-1 generation | ${on:-n/a} | ${off:-n/a} | $r |"
    echo
    # andrea (cuda-bf16) against PyTorch (bf16 autocast, SDPA, fused AdamW), B 8, T 1024
    echo "| model | andrea cuda-bf16 tok/s | PyTorch bf16 tok/s | andrea / PyTorch |"
    echo "|---|---|---|---|"
    for p in andrea-120m gpt2-124m; do
        a=$(sed -n 's/^train B=8 T=1024 cuda-bf16: [0-9.]* ms\/step | \([0-9]*\) tok\/s.*/\1/p' \
            "$OUT/logs/bench_cuda_${p}_bf16.log" 2>/dev/null)
        t=$(tail -n 1 "$OUT/logs/torch_$p.log" 2>/dev/null | sed -n 's/.*"tok_s": \([0-9.]*\).*/\1/p')
        r=$(awk -v a="${a:-0}" -v t="${t:-0}" 'BEGIN { if (a > 0 && t > 0) printf "%.2f", a / t; else print "n/a" }')
        echo "| $p | ${a:-n/a} | ${t:-n/a} | $r |"
    done
    echo
    for p in baby andrea-12m andrea-120m gpt2-124m andrea-120m_bf16 gpt2-124m_bf16; do
        f="$OUT/logs/bench_cuda_$p.log"
        [ -f "$f" ] && { echo "## bench --backend cuda --preset ${p%_bf16}"
                         [[ "$p" == *_bf16 ]] && echo "(--precision bf16)"
                         echo '```'; cat "$f"; echo '```'; }
    done
} > "$OUT/report.md"
{
    printf '{"commit":"%s","arch":"sm_%s","gpu":"%s","total_s":%d,"steps":[' \
        "$COMMIT" "$ARCH" "$(json_str "${GPU:-unknown}")" $(($(date +%s) - START))
    for i in "${!NAMES[@]}"; do
        [ "$i" -gt 0 ] && printf ','
        printf '{"name":"%s","status":"%s","seconds":%d,"note":"%s"}' "${NAMES[$i]}" \
            "${STATUS[$i]}" "${SECS[$i]}" "$(json_str "${NOTES[$i]}")"
        # on a GPU machine nothing may skip: a skipped test is a failed one
        [ "${STATUS[$i]}" != pass ] && failed=$((failed + 1))
    done
    printf '],"failed":%d}\n' "$failed"
} > "$OUT/report.json"
echo "device_check: report in $OUT/report.md and $OUT/report.json ($failed step(s) failed)"
[ "$failed" -eq 0 ] # every step passed
