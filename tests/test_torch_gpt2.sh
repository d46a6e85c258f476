#!/usr/bin/env bash
# test_torch_gpt2.sh - andrea reads a GPT-2 in Hugging Face's own file layout and computes
# what PyTorch computes. tests/test_torch_gpt2.py makes a GPT-2 with random weights the
# way HF stores it (the "transformer." prefix, Conv1D weights (in, out), the attn.bias mask
# buffers, config.json, vocab.json + merges.txt) and runs its own forward pass in PyTorch;
# `andrea generate -m model.safetensors --temp 0` must continue the prompt with the same
# tokens and the same log-probabilities (within 2e-4: float32 summed in other orders).
# With ../shared/data/gpt2 the vocabulary is GPT-2's real one (50257 tokens); without it,
# a byte-level vocabulary in GPT-2's conventions. Skips (77) without python3's torch.
# (GPT-2 124M's own weights are not on this machine; the layout and the maths are.)
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
A=$ANDREA_BIN
T=$ANDREA_TMP
# Debian's python3-torch lives in /usr/bin/python3, which a pyenv on PATH may shadow
PYTHON=
for p in python3 /usr/bin/python3; do
    if "$p" -c "import torch" 2> /dev/null; then PYTHON=$p; break; fi
done
if [ -z "$PYTHON" ]; then
    echo "skip: no python3 with torch (Debian: apt-get install python3-torch)" >&2
    exit 77
fi
PY="$PYTHON $HERE/test_torch_gpt2.py"
D=$T/hf
mkdir -p "$D"
G=${ANDREA_DATA_DIR:-}/gpt2
if [ -f "$G/encoder.json" ] && [ -f "$G/vocab.bpe" ]; then
    cp "$G/encoder.json" "$D/vocab.json" && cp "$G/vocab.bpe" "$D/merges.txt" &&
        cp "$G/encoder.json" "$G/vocab.bpe" "$D/"
    V=50257 KIND="GPT-2's vocabulary"
else
    $PY bytevocab "$D" || fail "bytevocab"
    V=257 KIND="a byte-level vocabulary (no ../shared/data/gpt2)"
fi
$PY make "$D" "$V" || fail "python make"
PROMPT="The meaning of attention is"
IDS=$("$A" tokenizer encode -t "gpt2:$D" -p "$PROMPT" | tr -s ' \n' ',' | sed 's/,$//')
[ -n "$IDS" ] || fail "tokenizer encode gave no ids"
N=24
$PY run "$D" "$IDS" "$N" > "$T/torch.jsonl" || fail "python run"
"$A" generate -m "$D/model.safetensors" -p "$PROMPT" -n "$N" --temp 0 -t 1 \
    --logprobs "$T/andrea.jsonl" > /dev/null 2> "$T/gen.err" || fail "generate: $(tail -1 "$T/gen.err")"
if $PYTHON - "$T" << 'PY'; then pass "HF-layout GPT-2 ($KIND): $N greedy tokens and log-probs equal PyTorch's"; else fail "andrea and PyTorch differ"; fi
import json, sys
T = sys.argv[1]
want = [json.loads(l) for l in open(T + "/torch.jsonl")]
got = [json.loads(l) for l in open(T + "/andrea.jsonl")]
assert len(got) == len(want), (len(got), len(want))
worst = 0.0
for i, (w, g) in enumerate(zip(want, got)):
    if g["id"] != w["id"]:
        # only a near-tie may differ, and then the rest of the sequence is not comparable
        assert w["margin"] < 1e-3, "token %d: andrea %d, torch %d (margin %g)" % (i, g["id"], w["id"], w["margin"])
        break
    worst = max(worst, abs(g["logprob"] - w["logprob"]))
assert worst < 2e-4, worst
print("max |logprob difference| = %.2e over %d tokens" % (worst, len(got)))
PY
finish
