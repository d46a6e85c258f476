#!/usr/bin/env bash
# test_llamacpp.sh - llama.cpp itself runs andrea's GGUF export: a small GPT-2-style
# model with GPT-2's BPE tokenizer is trained, written as GGUF in f32, f16, q8_0 and q4_0,
# and node-llama-cpp's llama.cpp must (test_llamacpp.mjs) tokenize the prompt into
# andrea's ids, continue it greedily with andrea's tokens and give each generated token
# andrea's log-probability within the type's tolerance (docs/formats.md).
#
# The reference for a type is andrea running the weights that GGUF file holds (converted
# back: f16/q8_0 rounding included), so the tolerance measures llama.cpp's arithmetic
# (its f16/q8_0 matmuls also round the activations), not the weight rounding. For q4_0 the
# reference is andrea decoding the q4_0 GGUF itself, through its own q4_0 path (--quant
# auto): llama.cpp and andrea on the same file must give the same greedy tokens.
# Skips (77) without node, node-llama-cpp (ANDREA_NODE_DIR, or build-node/ from .ci/run)
# or GPT-2's tokenizer files.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
A=$ANDREA_BIN
T=$ANDREA_TMP
NODE_DIR=${ANDREA_NODE_DIR:-$HERE/../build-node}
if ! command -v node > /dev/null; then echo "skip: node not found (llama.cpp runs through node-llama-cpp)"; exit 77; fi
if [ ! -d "$NODE_DIR/node_modules/node-llama-cpp" ]; then
    echo "skip: node-llama-cpp not installed in $NODE_DIR (run: mkdir -p build-node && cd build-node && npm i -E node-llama-cpp@3.21.1)"
    exit 77
fi
# the sanitizer build trains ~10x slower; the release build runs this test (as for test_train)
if grep -q __asan_init "$A" 2> /dev/null; then echo "skip: sanitizer build (the release build runs this test)"; exit 77; fi
need_corpus TEXT tinyshakespeare.txt
need_corpus ENC gpt2/encoder.json
GPT2=$(dirname "$ENC")
head -c 300000 "$TEXT" > "$T/train.txt"
# C = 64 keeps every row a whole number of q8_0 blocks (32)
"$A" train -d "$T/train.txt" --tokenizer "gpt2:$GPT2" --preset tiny --norm layernorm --act gelu \
    --bias 1 --tied 1 --d-model 64 --n-head 4 --ctx 64 --seq 64 -b 4 \
    --max-steps "${ANDREA_LLAMACPP_STEPS:-60}" --lr 3e-3 --warmup 10 --eval-every 0 \
    --sample-every 0 -q -t 2 -o "$T/run" > "$T/train.log" 2>&1 || { cat "$T/train.log"; fail "train"; finish; }
ln -sfn "$NODE_DIR/node_modules" "$T/node_modules" # ESM resolves packages from the script's folder
cp "$HERE/test_llamacpp.mjs" "$T/"
PROMPT="ROMEO: Is the day so young?"
IDS=$("$A" tokenizer encode -t "gpt2:$GPT2" -p "$PROMPT")
# tolerances on |log p| per generated token, from measurements (docs/formats.md)
declare -A TOL=([f32]=${ANDREA_TOL_F32:-5e-4} [f16]=${ANDREA_TOL_F16:-2e-3} [q8_0]=${ANDREA_TOL_Q8_0:-3e-2}
               [q4_0]=${ANDREA_TOL_Q4_0:-3e-2})
for type in f32 f16 q8_0 q4_0; do
    "$A" convert "$T/run/ckpt.bin" "$T/m.$type.gguf" --type "$type" > /dev/null &&
        "$A" convert "$T/m.$type.gguf" "$T/ref.$type.ckpt" > /dev/null || { fail "$type: convert"; continue; }
    ref="$T/ref.$type.ckpt"
    if [ "$type" = q4_0 ]; then
        ref="$T/m.$type.gguf"
        "$A" generate -m "$ref" -p "$PROMPT" -n 1 -t 1 2>&1 > /dev/null | grep -q "q4_0 weights (the file's own)" ||
            fail "q4_0: andrea does not decode the q4_0 GGUF through its q4_0 path"
    fi
    "$A" generate -m "$ref" -p "$PROMPT" -n 24 --temp 0 --seed 1 -t 2 \
        --logprobs "$T/lp.$type.jsonl" > /dev/null 2>&1 || { fail "$type: andrea generate"; continue; }
    if out=$(node "$T/test_llamacpp.mjs" "$T/m.$type.gguf" "$IDS" "$T/lp.$type.jsonl" "${TOL[$type]}" 2>&1); then
        pass "$type: llama.cpp agrees (tol ${TOL[$type]}): $out"
    else
        fail "$type: $out"
    fi
done
# f32 round trip is exact: the reference is the trained checkpoint itself
"$A" generate -m "$T/run/ckpt.bin" -p "$PROMPT" -n 24 --temp 0 --seed 1 -t 2 --logprobs "$T/lp.orig.jsonl" > /dev/null 2>&1
cmp -s "$T/lp.orig.jsonl" "$T/lp.f32.jsonl" && pass "f32 GGUF gives the checkpoint's own tokens and log-probs" ||
    fail "f32 GGUF round trip changed andrea's generation"
finish
