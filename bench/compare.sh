#!/usr/bin/env bash
# compare.sh - andrea's trainer against PyTorch on the CPU: same model, same initial
# weights, same batches, same optimizer, same thread count; ms/step of both and their
# ratio, measured in one run, plus a loss-equality check. Builds nothing.
#
#   bench/compare.sh [ANDREA_BINARY] [CORPUS]
#       ANDREA_BINARY  default build/andrea          CORPUS  default ../shared/data/tinyshakespeare.txt
#   environment (optional):
#       CONFIGS="baby andrea-12m gpt2-124m"   which rows to run
#       THREADS="1 2"                         thread counts
#       REPS=2                                interleaved repetitions (gpt2-124m, andrea-120m: 1)
#       ISAS="avx512 avx2"                    ISA levels, alternated within each repetition
#                                             (default: every SIMD level this CPU has)
#       POLICIES="default passive"            OMP_WAIT_POLICY settings tried with > 1 thread
#       STEPS=N                               timed steps of every config (default per config)
#       PYTHON=python3                        an interpreter that imports torch
#       RESULTS=FILE                          keep every run's per-step ms and losses (JSON lines)
#
# For each config and thread count the runs are interleaved (andrea, torch, andrea, torch)
# so that load from other processes hits both engines alike; each cell is the median of
# every timed step of every repetition. Both engines get the same settings: the thread
# count (for PyTorch: its OpenMP pool and its OpenBLAS), and with more than one thread one
# run with OMP_WAIT_POLICY unset and one with PASSIVE per repetition (spinning OpenMP
# threads cost a lot on a loaded machine). The ratio compares each engine's faster policy.
# ISA levels: andrea gets ANDREA_ISA, PyTorch ATEN_CPU_CAPABILITY and DNNL_MAX_CPU_ISA, and
# both OpenBLASes OPENBLAS_CORETYPE (SkylakeX, Haswell, Prescott), so that at "avx2" no
# engine runs an AVX-512 instruction: on an AVX-512 machine that approximates an AVX2-only
# CPU (the same code; not its clocks, caches or ports).
# Exits 1 when the two engines disagree on the loss of the same weights and batch.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
abspath() { (cd "$(dirname "$1")" 2>/dev/null && printf '%s/%s\n' "${PWD%/}" "$(basename "$1")") || echo "$1"; }
if [ $# -ge 1 ]; then ANDREA=$(abspath "$1"); else ANDREA="$root/build/andrea"; fi
if [ $# -ge 2 ]; then DATA=$(abspath "$2"); else DATA=$(abspath "$root/../shared/data/tinyshakespeare.txt"); fi
CONFIGS=${CONFIGS:-"baby andrea-12m gpt2-124m"}
THREADS=${THREADS:-"1 2"}
REPS=${REPS:-2}
TORCH_REF="$here/torch_ref.py"
if [ -z "${ISAS:-}" ]; then
    ISAS=""
    grep -qw avx512f /proc/cpuinfo 2> /dev/null && ISAS="avx512"
    grep -qw avx2 /proc/cpuinfo 2> /dev/null && ISAS="$ISAS avx2"
    [ -n "$ISAS" ] || ISAS="baseline"
fi
POLICIES=${POLICIES:-"default passive"}
for isa in $ISAS; do
    case "$isa" in avx512 | avx2 | baseline) ;;
    *) echo "compare.sh: unknown ISA '$isa' in ISAS (known: avx512 avx2 baseline)" >&2; exit 2 ;;
    esac
done
# the environment that caps each engine at an ISA level
isa_env() { # isa engine
    local core=SkylakeX aten=avx512 dnnl=AVX512_CORE
    case "$1" in avx2) core=Haswell aten=avx2 dnnl=AVX2 ;; baseline) core=Prescott aten=default dnnl=SSE41 ;; esac
    if [ "$2" = andrea ]; then echo "ANDREA_ISA=$1 OPENBLAS_CORETYPE=$core"
    else echo "ATEN_CPU_CAPABILITY=$aten DNNL_MAX_CPU_ISA=$dnnl OPENBLAS_CORETYPE=$core"; fi
}

for cfg in $CONFIGS; do
    case "$cfg" in baby | andrea-12m | gpt2-124m | andrea-120m) ;;
    *) echo "compare.sh: unknown config '$cfg' in CONFIGS (known: baby andrea-12m gpt2-124m andrea-120m)" >&2; exit 2 ;;
    esac
done
for t in $THREADS; do
    case "$t" in '' | *[!0-9]* | 0) echo "compare.sh: THREADS must list positive integers, got '$t'" >&2; exit 2 ;; esac
done
case "$REPS" in '' | *[!0-9]* | 0) echo "compare.sh: REPS must be a positive integer, got '$REPS'" >&2; exit 2 ;; esac
if [ ! -x "$ANDREA" ]; then
    echo "compare.sh: '$ANDREA' is not an executable; build it first (cmake -S . -B build && cmake --build build)" >&2
    exit 2
fi
if [ ! -f "$DATA" ]; then
    echo "compare.sh: corpus '$DATA' not found; pass a text file as the second argument" >&2
    exit 2
fi
if [ -z "${PYTHON:-}" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import torch, numpy' 2>/dev/null; then PYTHON=$p; break; fi
    done
fi
if [ -z "${PYTHON:-}" ] || ! "$PYTHON" -c 'import torch, numpy' 2>/dev/null; then
    echo "compare.sh: no python3 with torch and numpy (Debian: apt-get install -y python3-torch python3-numpy; or set PYTHON)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/andrea-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
# a private copy, so a rebuild elsewhere during the run cannot swap the binary under us
cp "$ANDREA" "$work/andrea"
A="$work/andrea"
results="$work/results.jsonl"
: >"$results"
t_start=$(date +%s)

# name | model flags | B | T | untimed warmup steps | timed steps | repetitions
config_row() {
    case "$1" in
    baby)        echo "--preset baby|12|64|5|30|$REPS" ;;
    andrea-12m)  echo "--preset andrea-12m --vocab 257|4|256|1|3|$REPS" ;;
    gpt2-124m)   echo "--preset gpt2-124m --vocab 50257|4|64|1|3|1" ;;
    andrea-120m) echo "--preset andrea-120m --vocab 257|1|1024|1|1|1" ;;
    esac
}

# andrea's trainer: ms of the timed steps (log.jsonl) and the loss of every step
run_andrea() { # cfg flags B T W N threads rep policy isa
    local cfg=$1 flags=$2 B=$3 T=$4 W=$5 N=$6 t=$7 rep=$8 policy=$9 isa=${10} out="$work/run"
    local envs=(OMP_NUM_THREADS="$t")
    # shellcheck disable=SC2207
    envs+=($(isa_env "$isa" andrea))
    [ "$policy" = passive ] && envs+=(OMP_WAIT_POLICY=PASSIVE)
    rm -rf "$out"
    # shellcheck disable=SC2086
    env -u OMP_WAIT_POLICY "${envs[@]}" "$A" train --data "$DATA" $flags --batch "$B" --seq "$T" --max-steps $((W + N)) -t "$t" \
        --eval-every 0 --eval-batches 1 --ckpt-every 0 -q -o "$out" >"$work/andrea.out" 2>&1 ||
        { cat "$work/andrea.out" >&2; exit 1; }
    "$PYTHON" - "$out/log.jsonl" "$cfg" "$t" "$rep" "$W" "$policy" "$isa" >>"$results" <<'EOF'
import json, sys
path, cfg, t, rep, W = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
steps = [r for r in map(json.loads, open(path)) if r.get("type") == "step"]
print(json.dumps({"config": cfg, "threads": t, "rep": rep, "engine": "andrea", "policy": sys.argv[6],
                  "isa": sys.argv[7], "ms": [r["ms"] for r in steps[W:]],
                  "losses": [r["loss"] for r in steps]}))
EOF
    rm -rf "$out"
    printf '  andrea  %-8s t=%s rep %s (%s): done\n' "$isa" "$t" "$rep" "$policy"
}

run_torch() { # cfg ckpt B T W N threads rep policy isa
    local cfg=$1 ckpt=$2 B=$3 T=$4 W=$5 N=$6 t=$7 rep=$8 policy=$9 isa=${10}
    local envs=(OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t")
    # shellcheck disable=SC2207
    envs+=($(isa_env "$isa" torch))
    [ "$policy" = passive ] && envs+=(OMP_WAIT_POLICY=PASSIVE)
    env -u OMP_WAIT_POLICY "${envs[@]}" "$PYTHON" "$TORCH_REF" --ckpt "$ckpt" --data "$DATA" \
        --batch "$B" --seq "$T" --steps "$N" --warmup-steps "$W" --threads "$t" \
        >"$work/torch.out" 2>&1 || { cat "$work/torch.out" >&2; exit 1; }
    tail -n 1 "$work/torch.out" | "$PYTHON" -c '
import json, sys
r = json.loads(sys.stdin.read())
cfg, t, rep, policy, isa = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
W = r["warmup_steps"]
print(json.dumps({"config": cfg, "threads": t, "rep": rep, "engine": "torch", "policy": policy,
                  "isa": isa, "ms": r["ms"][W:], "losses": r["losses"],
                  "blas_threads": r["blas_threads"]}))
' "$cfg" "$t" "$rep" "$policy" "$isa" >>"$results"
    printf '  torch   %-8s t=%s rep %s (%s): done\n' "$isa" "$t" "$rep" "$policy"
}

for cfg in $CONFIGS; do
    IFS='|' read -r flags B T W N R <<<"$(config_row "$cfg")"
    [ -n "${STEPS:-}" ] && N=$STEPS
    echo "== $cfg ($flags, B=$B T=$T, $W warmup + $N timed steps, $R rep(s))"
    init="$work/init-$cfg"
    # shellcheck disable=SC2086
    "$A" train --data "$DATA" $flags --batch "$B" --seq "$T" --max-steps 0 -q -o "$init" \
        >"$work/andrea.out" 2>&1 || { cat "$work/andrea.out" >&2; exit 1; }
    ckpt="$init/ckpt.bin"

    # loss check: andrea eval and torch_ref --check on the first B windows, same weights
    a_eval=$("$A" eval -m "$ckpt" -d "$DATA" --seq "$T" --batch "$B" --max-batches 1 -t 2 |
        sed -n 's/.*| loss \([0-9.eE+-]*\) |.*/\1/p')
    t_eval=$(OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$PYTHON" "$TORCH_REF" --check --ckpt "$ckpt" \
        --data "$DATA" --batch "$B" --seq "$T" --threads 2 | tail -n 1)
    printf '{"config":"%s","engine":"eval","andrea":%s,"torch":%s}\n' "$cfg" "$a_eval" "$t_eval" >>"$results"
    echo "  eval loss: andrea $a_eval, torch $(echo "$t_eval" | "$PYTHON" -c 'import json,sys; print("%.6f" % json.load(sys.stdin)["loss"])')"

    for t in $THREADS; do
        policies="default"
        [ "$t" -gt 1 ] && policies="$POLICIES"
        for rep in $(seq 1 "$R"); do
            for pol in $policies; do
                for isa in $ISAS; do
                    run_andrea "$cfg" "$flags" "$B" "$T" "$W" "$N" "$t" "$rep" "$pol" "$isa"
                    run_torch "$cfg" "$ckpt" "$B" "$T" "$W" "$N" "$t" "$rep" "$pol" "$isa"
                done
            done
        done
    done
    rm -rf "$init"
done

elapsed=$(($(date +%s) - t_start))
if [ -n "${RESULTS:-}" ]; then cp "$results" "$RESULTS"; fi
status=0
"$PYTHON" - "$results" "$elapsed" <<'EOF' || status=$?
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
elapsed = int(sys.argv[2])
configs = list(dict.fromkeys(r["config"] for r in rows))
print()
def med(engine, t, pol, isa):
    ms = [m for r in runs if r["threads"] == t and r["engine"] == engine and r["policy"] == pol
          and r.get("isa") == isa for m in r["ms"]]
    return statistics.median(ms) if ms else None

def cell(x):
    return "%9.1f" % x if x is not None else "%9s" % "-"

print("ms/step: median over every timed step of every repetition; 'pass' = OMP_WAIT_POLICY=PASSIVE")
print("%-11s %-8s %3s | %9s %9s | %9s %9s | %12s" % ("config", "isa", "thr", "andrea", "andrea",
                                                     "torch", "torch", "torch/andrea"))
print("%-11s %-8s %3s | %9s %9s | %9s %9s | %12s" % ("", "", "", "default", "pass", "default",
                                                     "pass", "(best/best)"))
for cfg in configs:
    runs = [r for r in rows if r["config"] == cfg and r["engine"] != "eval"]
    for isa in list(dict.fromkeys(r.get("isa") for r in runs)):
        for t in sorted(set(r["threads"] for r in runs)):
            a = [med("andrea", t, p, isa) for p in ("default", "passive")]
            b = [med("torch", t, p, isa) for p in ("default", "passive")]
            ratio = min(x for x in b if x) / min(x for x in a if x)
            print("%-11s %-8s %3d | %s %s | %s %s | %12.2f" % (cfg, isa, t, cell(a[0]), cell(a[1]),
                                                             cell(b[0]), cell(b[1]), ratio))

print()
print("loss check, identical weights and batches:")
print("  eval: `andrea eval --max-batches 1` (prints 4 decimals) vs torch_ref.py --check, first B windows")
print("  step-1 / max: per-step training loss of every run above (both engines, all thread counts")
print("  and policies) vs andrea's first run; step 1 is a forward on the initial weights, later")
print("  steps also compare backward, clipping and AdamW")
print("%-11s %9s %10s %8s | %9s %9s %6s | %s" % ("config", "andrea", "torch", "|diff|", "step-1",
                                                "max", "steps", "verdict"))
ok = True
for cfg in configs:
    ev = next(r for r in rows if r["config"] == cfg and r["engine"] == "eval")
    d = abs(ev["andrea"] - ev["torch"]["loss"])
    ref = next(r for r in rows if r["config"] == cfg and r["engine"] == "andrea")["losses"]
    d1, dmax = 0.0, 0.0
    for r in rows:
        if r["config"] == cfg and r["engine"] in ("andrea", "torch"):
            d1 = max(d1, abs(r["losses"][0] - ref[0]))
            dmax = max(dmax, max(abs(a - b) for a, b in zip(r["losses"], ref)))
    # andrea's %.4f rounds by <= 5e-5; float32 engines agree to ~1e-6 on the same batch
    good = d <= 1e-4 and d1 <= 1e-4
    ok &= good
    print("%-11s %9.4f %10.6f %8.1e | %9.1e %9.1e %6d | %s" % (
        cfg, ev["andrea"], ev["torch"]["loss"], d, d1, dmax, len(ref), "OK" if good else "DIFFER"))
print()
print("wall time %dm%02ds" % (elapsed // 60, elapsed % 60))
sys.exit(0 if ok else 1)
EOF
echo
echo "reproduce: CONFIGS=\"$CONFIGS\" THREADS=\"$THREADS\" REPS=$REPS ISAS=\"$ISAS\" POLICIES=\"$POLICIES\" $0 $ANDREA $DATA"
exit "$status"
