#!/usr/bin/env bash
# bench_vs_llamacpp.sh - andrea against llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU
# build) on the same GGUF files, the same prompt and the same threads: batch-1 prefill and
# generation tokens/s for f32, f16, q8_0 and q4_0 files of a model shape (random weights,
# GPT-2's tokenizer), at each ISA level asked for. A benchmark, never a test: it asserts
# nothing about time.
#
#   bench/bench_vs_llamacpp.sh                       gpt2-124m, every format, avx512 and avx2
#   ROUNDS=5 SHAPES="gpt2-124m andrea-120m" ISAS=avx2 bench/bench_vs_llamacpp.sh
#
# How, and why so:
# - the files: `andrea train --max-steps 0` writes the shape's initial weights (andrea-120m
#   is run with LayerNorm + GELU: the only learned-position architecture llama.cpp has),
#   `andrea convert --type T` writes each GGUF. Both engines read the very same file; andrea
#   decodes every file in its own type (--quant auto: f32, f16 exactly widened, q8_0 and
#   q4_0 blocks, whose prompts run as int8 products), llama.cpp in the file's type.
# - the ISA: andrea is capped with ANDREA_ISA; llama.cpp picks its CPU backend variant by
#   the CPU's features, so its AVX2 run loads a copy of node-llama-cpp holding only the
#   `haswell` variant (AVX2 + FMA, no AVX-512); each run reports the features it used.
# - the rounds alternate andrea and llama.cpp, format by format, ISA by ISA, so load from
#   other processes falls on both alike; on a shared machine the best round is the cost
#   and the median the cost plus the load, so both are reported, and the ratios.
# - prefill: the whole prompt (PROMPT tokens of tinyshakespeare) in one call (andrea's
#   andrea_kv_prefill, llama.cpp's one evaluation of batch = the prompt); generation:
#   greedy, GEN tokens, counted as forwards per second after the first generated token
#   (andrea's `generate` prints n tokens / the time of n - 1 forwards and n samplings, so
#   its rate is scaled by (n - 1) / n; llama.cpp's: (n - 1) / the time from its first token).
# Env: ANDREA_BIN (build/andrea), ANDREA_NODE_DIR (build-node), ANDREA_DATA_DIR (holds
# tinyshakespeare.txt and gpt2/{encoder.json,vocab.bpe}; default /work/shared/data),
# ROUNDS (3), PROMPT (128), GEN (32), THREADS (2), FORMATS, SHAPES, ISAS, BENCH_WORK (a
# scratch folder; default a temp dir, removed at the end). Prints a markdown table.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
A=${ANDREA_BIN:-$HERE/../build/andrea}
NODE_DIR=${ANDREA_NODE_DIR:-$HERE/../build-node}
DATA=${ANDREA_DATA_DIR:-/work/shared/data}
ROUNDS=${ROUNDS:-3} PROMPT=${PROMPT:-128} GEN=${GEN:-32} THREADS=${THREADS:-2}
FORMATS=${FORMATS:-"f32 f16 q8_0 q4_0"} SHAPES=${SHAPES:-gpt2-124m} ISAS=${ISAS:-"avx512 avx2"}
die() { echo "bench_vs_llamacpp: $*" >&2; exit 1; }
[ -x "$A" ] || die "no andrea at $A (build first, or set ANDREA_BIN)"
command -v node > /dev/null || die "node not found (llama.cpp runs through node-llama-cpp)"
NODE_DIR=$(cd "$NODE_DIR" 2> /dev/null && pwd) || die "no folder ${ANDREA_NODE_DIR:-build-node} (ANDREA_NODE_DIR)"  # links to it are made from a temp dir
[ -d "$NODE_DIR/node_modules/node-llama-cpp" ] ||
    die "node-llama-cpp not in $NODE_DIR (mkdir -p build-node && cd build-node && npm i -E node-llama-cpp@3.21.1)"
[ -f "$DATA/tinyshakespeare.txt" ] && [ -f "$DATA/gpt2/encoder.json" ] ||
    die "$DATA lacks tinyshakespeare.txt or gpt2/encoder.json (set ANDREA_DATA_DIR)"
W=${BENCH_WORK:-}
if [ -z "$W" ]; then W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; fi
mkdir -p "$W"

# llama.cpp's node_modules per ISA: avx512 = the installed one; avx2 = a copy whose
# @node-llama-cpp/linux-x64 holds only the haswell CPU variant (node-llama-cpp imports
# that package from its own folder, so node-llama-cpp itself is copied too; the rest are links)
node_modules_for() { # isa -> a folder holding node_modules and the bench script
    local isa=$1 d="$W/node-$1"
    if [ ! -d "$d" ]; then
        mkdir -p "$d/node_modules"
        local N="$NODE_DIR/node_modules"
        if [ "$isa" = avx2 ]; then
            for e in "$N"/* "$N"/.bin; do
                case $(basename "$e") in node-llama-cpp | @node-llama-cpp) ;; *) ln -s "$e" "$d/node_modules/";; esac
            done
            cp -r "$N/node-llama-cpp" "$d/node_modules/"
            mkdir -p "$d/node_modules/@node-llama-cpp"
            for e in "$N"/@node-llama-cpp/*; do
                [ "$(basename "$e")" = linux-x64 ] || ln -s "$e" "$d/node_modules/@node-llama-cpp/"
            done
            cp -r "$N/@node-llama-cpp/linux-x64" "$d/node_modules/@node-llama-cpp/"
            find "$d/node_modules/@node-llama-cpp/linux-x64" -name 'libggml-cpu-*.so' \
                ! -name 'libggml-cpu-haswell.so' -delete
        else
            rmdir "$d/node_modules"
            ln -s "$N" "$d/node_modules"
        fi
        cp "$HERE/bench_llamacpp.mjs" "$d/"
    fi
    echo "$d"
}

# the prompt: the first PROMPT GPT-2 tokens of tinyshakespeare, as text for andrea and as
# ids for llama.cpp (andrea's encoding of that text: the same tokens)
head -c 4000 "$DATA/tinyshakespeare.txt" > "$W/text.txt"
ALL=$("$A" tokenizer encode -t "gpt2:$DATA/gpt2" -p "$(cat "$W/text.txt")")
IDS=$(echo "$ALL" | tr ' ' '\n' | head -n "$PROMPT" | tr '\n' ' ')
# shellcheck disable=SC2086
PTEXT=$("$A" tokenizer decode -t "gpt2:$DATA/gpt2" $IDS 2> /dev/null) ||
    die "andrea tokenizer decode failed"
[ "$("$A" tokenizer encode -t "gpt2:$DATA/gpt2" -p "$PTEXT")" = "$(echo $IDS)" ] ||
    die "the prompt's text does not re-encode to its ids"

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "# andrea vs llama.cpp: $cpu, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), -t $THREADS," \
    "prompt $PROMPT tokens, $GEN generated, $ROUNDS rounds, $(date -u +%FT%TZ)"
res="$W/results.tsv" # shape fmt isa engine round prefill gen
: > "$res"
for shape in $SHAPES; do
    flags="--preset $shape"
    [ "$shape" = gpt2-124m ] || flags="$flags --norm layernorm --act gelu --bias 1 --tied 1"
    need=0 # a BENCH_WORK from an earlier run may hold the files already
    for f in $FORMATS; do [ -f "$W/$shape.$f.gguf" ] || need=1; done
    if [ $need = 1 ]; then
        # shellcheck disable=SC2086
        "$A" train -d "$W/text.txt" --tokenizer "gpt2:$DATA/gpt2" $flags --max-steps 0 -q -t "$THREADS" \
            -o "$W/$shape" > "$W/$shape.log" 2>&1 || { cat "$W/$shape.log"; die "$shape: init"; }
        for f in $FORMATS; do
            "$A" convert "$W/$shape/ckpt.bin" "$W/$shape.$f.gguf" --type "$f" > /dev/null || die "$shape: convert $f"
        done
        rm -rf "$W/$shape" # 12 bytes a parameter (AdamW moments): the GGUFs are enough
    fi
    for r in $(seq "$ROUNDS"); do
        for f in $FORMATS; do
            for isa in $ISAS; do
                file="$W/$shape.$f.gguf"
                out=$(ANDREA_ISA=$isa "$A" generate -m "$file" -p "$PTEXT" -n "$GEN" --temp 0 --seed 1 \
                    -t "$THREADS" 2>&1 > /dev/null | tail -1)
                # generate: stopped: n-predict | 32 tokens | prompt 128 tokens in 0.512 s | 25.3 tok/s
                echo "$out" | awk -v s="$shape" -v f="$f" -v i="$isa" -v r="$r" -F' [|] ' '
                    { split($2, n, " "); split($3, p, " "); split($4, g, " ");
                      if (n[1] > 1) printf "%s\t%s\t%s\tandrea\t%s\t%.2f\t%.2f\n", s, f, i, r,
                                           p[2] / p[5], g[1] * (n[1] - 1) / n[1] }' >> "$res"
                d=$(node_modules_for "$isa")
                j=$(cd "$d" && node bench_llamacpp.mjs "$file" "$IDS" "$GEN" "$THREADS") ||
                    die "llama.cpp on $file failed"
                if [ "$r" = 1 ] && [ "$f" = q4_0 ]; then
                    echo "# llama.cpp at $isa: $(echo "$j" | sed 's/.*"features":"\([^"]*\)".*/\1/')"
                fi
                echo "$j" | awk -v s="$shape" -v f="$f" -v i="$isa" -v r="$r" '
                    { match($0, /"prefill_tok_s":[0-9.e+-]*/); p = substr($0, RSTART + 16, RLENGTH - 16);
                      match($0, /"gen_tok_s":[0-9.e+-]*/); g = substr($0, RSTART + 12, RLENGTH - 12);
                      printf "%s\t%s\t%s\tllama\t%s\t%.2f\t%.2f\n", s, f, i, r, p, g }' >> "$res"
            done
        done
    done
done
[ -z "${BENCH_KEEP_TSV:-}" ] || cp "$res" "$BENCH_KEEP_TSV"
# the table: per shape, format and ISA, best and median of each engine, ratios andrea / llama
python3 - "$res" << 'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
keys = []
for r in rows:
    if tuple(r[:3]) not in keys: keys.append(tuple(r[:3]))
def col(k, eng, i): return [float(r[i]) for r in rows if tuple(r[:3]) == k and r[3] == eng]
print("| shape | file | ISA | prefill andrea (best / median) | prefill llama.cpp | ratio | "
      "generation andrea | generation llama.cpp | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for k in keys:
    cells = []
    for i in (5, 6):
        a, l = col(k, "andrea", i), col(k, "llama", i)
        if not a or not l: cells += ["-", "-", "-"]; continue
        cells += [f"{max(a):.1f} / {st.median(a):.1f}", f"{max(l):.1f} / {st.median(l):.1f}",
                  f"**{max(a) / max(l):.2f}** / {st.median(a) / st.median(l):.2f}"]
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
EOF
