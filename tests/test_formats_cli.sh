#!/usr/bin/env bash
# test_formats_cli.sh - `andrea convert` end to end. A trained GPT-2-style checkpoint
# goes through safetensors (HF and andrea names), GGUF and llm.c and back: generation
# (tokens and log-probs) is unchanged; an independent reader (python3, json module
# only) checks the safetensors header, HF's names and Conv1D transposes, the tokenizer
# files and llm.c's parameter order against andrea's own names; ANDREA's architecture
# is refused by GGUF and llm.c and kept exactly by safetensors; broken files give one
# line and a non-zero exit.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
A=$ANDREA_BIN
T=$ANDREA_TMP
TEXT=${ANDREA_DATA_DIR:-}/tinyshakespeare.txt
[ -f "$TEXT" ] || TEXT=$HERE/fixtures/gpt2_adversarial.txt
head -c 100000 "$TEXT" > "$T/train.txt"
train() { "$A" train -d "$T/train.txt" --preset tiny --seq 32 -b 4 --max-steps 15 --eval-every 0 \
              --sample-every 0 -q -t 2 -o "$T/$1" "${@:2}" > "$T/$1.log" 2>&1 || fail "train $1: $(tail -1 "$T/$1.log")"; }
train g2 --norm layernorm --act gelu --bias 1 --tied 1
train an
mkdir -p "$T/hf" "$T/own"
gen() { "$A" generate -m "$1" -p "ROMEO: " -n 24 --temp 0 --seed 1 -t 1 --logprobs "$2" "${@:3}" > "$2.txt" 2> /dev/null; }
# the default prompt pass of a q8_0/q4_0 file rounds the prompt's activations to int8 per
# 32 (as llama.cpp does): the same tokens, log-probs within 0.01 of the exact weights'
near() { python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
ok = len(a) == len(b) > 0 and all(x["id"] == y["id"] and abs(x["logprob"] - y["logprob"]) <= 0.01 for x, y in zip(a, b))
sys.exit(0 if ok else 1)
PY
}
gen "$T/g2/ckpt.bin" "$T/ref.jsonl"

# a chain through every format, back to an andrea checkpoint
"$A" convert "$T/g2/ckpt.bin" "$T/hf/model.safetensors" > /dev/null &&
"$A" convert "$T/g2/ckpt.bin" "$T/own/model.safetensors" --names andrea > /dev/null &&
"$A" convert "$T/hf/model.safetensors" "$T/m.gguf" > /dev/null &&
"$A" convert "$T/m.gguf" "$T/m.llmc.bin" --to llmc > /dev/null &&
"$A" convert "$T/m.llmc.bin" "$T/back.ckpt" --tokenizer byte > /dev/null || fail "convert chain"
for f in hf/model.safetensors own/model.safetensors m.gguf m.llmc.bin back.ckpt; do
    gen "$T/$f" "$T/out.jsonl"
    cmp -s "$T/ref.jsonl" "$T/out.jsonl" && cmp -s "$T/ref.jsonl.txt" "$T/out.jsonl.txt" &&
        pass "generate -m $f: same tokens and log-probs as the checkpoint" || fail "generate -m $f differs"
done

# a q8_0 GGUF decodes at its own precision (int8 with the file's per-32 scales, `--quant
# auto`, the default) and, with --exact-prefill, gives the tokens and log-probs of its
# dequantised f32 weights bit for bit; an f16 GGUF decodes in f16, an andrea checkpoint
# in f32
"$A" convert "$T/g2/ckpt.bin" "$T/q8.gguf" --type q8_0 > /dev/null &&
    "$A" convert "$T/g2/ckpt.bin" "$T/f16.gguf" --type f16 > /dev/null || fail "convert q8_0/f16"
banner() { "$A" generate -m "$1" -p "ROMEO: " -n 1 --temp 0 --seed 1 -t 1 2>&1 > /dev/null | head -1; }
banner "$T/q8.gguf" | grep -q "q8_0 weights (the file's own)" && pass "q8_0 GGUF: generate says q8_0 (the file's own)" ||
    fail "q8_0 GGUF banner: $(banner "$T/q8.gguf")"
banner "$T/f16.gguf" | grep -q "f16 weights (the file's own)" && banner "$T/g2/ckpt.bin" | grep -q ", f32 weights)" &&
    pass "f16 GGUF: f16 path; checkpoint: f32 path" || fail "f16 GGUF banner: $(banner "$T/f16.gguf")"
# an f16 file's own weights widen exactly: the tokens and log-probs of its f32 values
gen "$T/f16.gguf" "$T/h.jsonl"
gen "$T/f16.gguf" "$T/hf.jsonl" --quant f32
cmp -s "$T/h.jsonl" "$T/hf.jsonl" && cmp -s "$T/h.jsonl.txt" "$T/hf.jsonl.txt" &&
    pass "f16 path: same tokens and log-probs as its f32 values" || fail "f16 path differs from f32"
gen "$T/q8.gguf" "$T/q8.jsonl" --exact-prefill
gen "$T/q8.gguf" "$T/q8f.jsonl" --quant f32
cmp -s "$T/q8.jsonl" "$T/q8f.jsonl" && cmp -s "$T/q8.jsonl.txt" "$T/q8f.jsonl.txt" &&
    pass "q8_0 path, --exact-prefill: same tokens and log-probs as the dequantised f32 weights" || fail "q8_0 path differs from f32"
gen "$T/q8.gguf" "$T/q8b.jsonl"
near "$T/q8b.jsonl" "$T/q8f.jsonl" && pass "q8_0 path, int8 prompt products: same tokens, log-probs within 0.01" ||
    fail "q8_0 int8 prompt products drift: $(head -2 "$T/q8b.jsonl") vs $(head -2 "$T/q8f.jsonl")"
# a q4_0 GGUF the same way: its own 4-bit blocks, each weight exact, the f32 dot's order
"$A" convert "$T/g2/ckpt.bin" "$T/q4.gguf" --type q4_0 > /dev/null || fail "convert q4_0"
banner "$T/q4.gguf" | grep -q "q4_0 weights (the file's own)" && pass "q4_0 GGUF: generate says q4_0 (the file's own)" ||
    fail "q4_0 GGUF banner: $(banner "$T/q4.gguf")"
gen "$T/q4.gguf" "$T/q4.jsonl" --exact-prefill
gen "$T/q4.gguf" "$T/q4f.jsonl" --quant f32
cmp -s "$T/q4.jsonl" "$T/q4f.jsonl" && cmp -s "$T/q4.jsonl.txt" "$T/q4f.jsonl.txt" &&
    pass "q4_0 path, --exact-prefill: same tokens and log-probs as the dequantised f32 weights" || fail "q4_0 path differs from f32"
gen "$T/q4.gguf" "$T/q4b.jsonl"
near "$T/q4b.jsonl" "$T/q4f.jsonl" && pass "q4_0 path, int8 prompt products: same tokens, log-probs within 0.01" ||
    fail "q4_0 int8 prompt products drift: $(head -2 "$T/q4b.jsonl") vs $(head -2 "$T/q4f.jsonl")"

# the independent reader
if command -v python3 > /dev/null; then
    if python3 - "$T" << 'PY'; then pass "python reader: HF names, Conv1D transposes, tokenizer files, llm.c order"; else fail "python reader"; fi
import json, struct, sys
T = sys.argv[1]
def st(path):
    d = open(path, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    meta = h.pop("__metadata__")
    data = d[8 + n:]
    out = {}
    for k, v in h.items():
        b, e = v["data_offsets"]
        assert v["dtype"] == "F32", k
        cnt = 1
        for s in v["shape"]: cnt *= s
        assert e - b == 4 * cnt, k
        out[k] = (v["shape"], struct.unpack("<%df" % cnt, data[b:e]))
    return meta, out
hm, hf = st(T + "/hf/model.safetensors")
om, own = st(T + "/own/model.safetensors")
assert hm["format"] == "pt" and hm["andrea.names"] == "hf" and om["andrea.names"] == "andrea"
L, C, V, Tc = int(hm["andrea.n_layer"]), int(hm["andrea.d_model"]), int(hm["andrea.vocab"]), int(hm["andrea.ctx"])
expect = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"}
for l in range(L):
    for s in ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
              "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
              "mlp.c_proj.weight", "mlp.c_proj.bias"]:
        expect.add("h.%d.%s" % (l, s))
assert set(hf) == expect, sorted(set(hf) ^ expect)
def same(a, b, name):
    assert a[1] == b[1], name
def transposed(hfv, ov, name):
    (r, c), x = hfv      # HF Conv1D: (in, out)
    (r2, c2), y = ov     # andrea: (out, in)
    assert (r, c) == (c2, r2), name
    for i in range(r):
        for j in range(c):
            assert x[i * c + j] == y[j * r + i], name
same(hf["wte.weight"], own["wte"], "wte"); same(hf["wpe.weight"], own["wpe"], "wpe")
same(hf["ln_f.weight"], own["lnf.w"], "lnf.w"); same(hf["ln_f.bias"], own["lnf.b"], "lnf.b")
pairs = [("ln_1.weight", "ln1.w", 0), ("ln_1.bias", "ln1.b", 0), ("attn.c_attn.weight", "attn.wqkv", 1),
         ("attn.c_attn.bias", "attn.bqkv", 0), ("attn.c_proj.weight", "attn.wo", 1), ("attn.c_proj.bias", "attn.bo", 0),
         ("ln_2.weight", "ln2.w", 0), ("ln_2.bias", "ln2.b", 0), ("mlp.c_fc.weight", "mlp.wfc", 1),
         ("mlp.c_fc.bias", "mlp.bfc", 0), ("mlp.c_proj.weight", "mlp.wproj", 1), ("mlp.c_proj.bias", "mlp.bproj", 0)]
for l in range(L):
    for h_, o_, t in pairs:
        a, b = hf["h.%d.%s" % (l, h_)], own["h.%d.%s" % (l, o_)]
        transposed(a, b, h_) if t else same(a, b, h_)
assert hf["h.0.attn.c_attn.weight"][0] == [C, 3 * C]
# tokenizer files beside: byte-level BPE, space = "Ġ", BOS = <|endoftext|>
vocab = json.load(open(T + "/hf/vocab.json", encoding="utf-8"))
assert len(vocab) == 257 and vocab["Ġ"] == 32 and vocab["A"] == 65 and vocab["<|endoftext|>"] == 256
assert open(T + "/hf/merges.txt", encoding="utf-8").read() == "#version: 0.2\n"
# llm.c: 256 int32 header, then tensor-major over layers in llm.c's order
d = open(T + "/m.llmc.bin", "rb").read()
hdr = struct.unpack("<256i", d[:1024])
assert hdr[:7] == (20240326, 3, Tc, V, L, int(hm["andrea.n_head"]), C), hdr[:8]
Vp = hdr[7]
assert Vp % 128 == 0 and Vp >= V
f = struct.unpack("<%df" % ((len(d) - 1024) // 4), d[1024:])
pos = 0
def take(n):
    global pos
    pos += n
    return f[pos - n:pos]
assert take(V * C) == own["wte"][1] and set(take((Vp - V) * C)) <= {0.0}
assert take(Tc * C) == own["wpe"][1]
for o_ in ["ln1.w", "ln1.b", "attn.wqkv", "attn.bqkv", "attn.wo", "attn.bo", "ln2.w", "ln2.b",
           "mlp.wfc", "mlp.bfc", "mlp.wproj", "mlp.bproj"]:
    for l in range(L):
        x = own["h.%d.%s" % (l, o_)][1]
        assert take(len(x)) == x, o_
assert take(C) == own["lnf.w"][1] and take(C) == own["lnf.b"][1] and pos == len(f)
PY
else
    echo "skip: python3 not found (independent safetensors reader)"
fi

# a file as Hugging Face writes it: no andrea metadata, a "transformer." prefix, the
# attn.bias / attn.masked_bias buffers, config.json for n_head, vocab.json + merges.txt only
if command -v python3 > /dev/null && python3 - "$T" << 'PY'
import json, os, struct, sys
T = sys.argv[1]
d = open(T + "/hf/model.safetensors", "rb").read()
n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); meta = h.pop("__metadata__"); data = bytearray(d[8 + n:])
L, Tc, NH = int(meta["andrea.n_layer"]), int(meta["andrea.ctx"]), int(meta["andrea.n_head"])
out = {"__metadata__": {"format": "pt"}}
for k, v in h.items(): out["transformer." + k] = v
for l in range(L):  # the causal-mask buffers HF keeps in GPT-2 checkpoints
    for name in ("attn.bias", "attn.masked_bias"):
        b = len(data); data += struct.pack("<%df" % (Tc * Tc), *([1.0] * (Tc * Tc)))
        out["transformer.h.%d.%s" % (l, name)] = {"dtype": "F32", "shape": [1, 1, Tc, Tc], "data_offsets": [b, len(data)]}
hj = json.dumps(out).encode(); hj += b" " * (-len(hj) % 8)
os.makedirs(T + "/hfraw", exist_ok=True)
open(T + "/hfraw/model.safetensors", "wb").write(struct.pack("<Q", len(hj)) + hj + bytes(data))
json.dump({"n_head": NH, "layer_norm_epsilon": 1e-5}, open(T + "/hfraw/config.json", "w"))
for f in ("vocab.json", "merges.txt"): open(T + "/hfraw/" + f, "wb").write(open(T + "/hf/" + f, "rb").read())
PY
then
    gen "$T/hfraw/model.safetensors" "$T/hfraw.jsonl"
    if cmp -s "$T/ref.jsonl" "$T/hfraw.jsonl"; then pass "HF-style file (prefix, mask buffers, config.json, vocab.json) generates identically"
    elif grep -q jansson "$T/hfraw.jsonl.txt" 2> /dev/null; then echo "skip: vocab.json needs jansson"
    else fail "HF-style safetensors: $(cat "$T/hfraw.jsonl.txt" | head -2)"; fi
fi

# F16 and BF16 tensors are read exactly: python writes them, andrea converts to F32
cat > "$T/half.py" << 'PY'
import json, os, struct, sys
T, dt, mode = sys.argv[1:4]
def read(path):
    d = open(path, "rb").read(); n = struct.unpack("<Q", d[:8])[0]
    return json.loads(d[8:8 + n]), d[8 + n:]
if mode == "w":
    h, data = read(T + "/own/model.safetensors")
    out, blob = {"__metadata__": h.pop("__metadata__")}, bytearray()
    for k, v in h.items():
        b, e = v["data_offsets"]; x = struct.unpack("<%df" % ((e - b) // 4), data[b:e])
        enc = struct.pack("<%de" % len(x), *x) if dt == "F16" else b"".join(data[b + 4 * i + 2:b + 4 * i + 4] for i in range(len(x)))
        out[k] = {"dtype": dt, "shape": v["shape"], "data_offsets": [len(blob), len(blob) + len(enc)]}; blob += enc
    hj = json.dumps(out).encode(); hj += b" " * (-len(hj) % 8)
    os.makedirs(T + "/" + dt, exist_ok=True)
    open(T + "/" + dt + "/model.safetensors", "wb").write(struct.pack("<Q", len(hj)) + hj + bytes(blob))
else:
    h16, d16 = read(T + "/" + dt + "/model.safetensors"); h32, d32 = read(T + "/" + dt + ".f32.safetensors")
    h16.pop("__metadata__"); h32.pop("__metadata__")
    for k, v in h16.items():
        b, e = v["data_offsets"]; n = (e - b) // 2
        if dt == "F16": want = struct.unpack("<%de" % n, d16[b:e])
        else: want = struct.unpack("<%df" % n, b"".join(b"\0\0" + d16[b + 2 * i:b + 2 * i + 2] for i in range(n)))
        b2, e2 = h32[k]["data_offsets"]
        assert struct.unpack("<%df" % n, d32[b2:e2]) == tuple(want), k
PY
if command -v python3 > /dev/null; then
    for dt in F16 BF16; do
        python3 "$T/half.py" "$T" "$dt" w &&
            "$A" convert "$T/$dt/model.safetensors" "$T/$dt.f32.safetensors" --names andrea > /dev/null &&
            python3 "$T/half.py" "$T" "$dt" r && pass "safetensors $dt read exactly" || fail "safetensors $dt"
        # ... and decode in their own 16 bits (each value exact): the f32 tokens and log-probs
        lc=$(echo "$dt" | tr A-Z a-z)
        banner "$T/$dt/model.safetensors" | grep -q "$lc weights (the file's own)" &&
            gen "$T/$dt/model.safetensors" "$T/$dt.jsonl" && gen "$T/$dt/model.safetensors" "$T/$dt.f.jsonl" --quant f32 &&
            cmp -s "$T/$dt.jsonl" "$T/$dt.f.jsonl" && cmp -s "$T/$dt.jsonl.txt" "$T/$dt.f.jsonl.txt" &&
            pass "safetensors $dt: decodes in $lc, the tokens and log-probs of its f32 values" ||
            fail "safetensors $dt own path: $(banner "$T/$dt/model.safetensors")"
    done
fi

# ANDREA's architecture: exact in safetensors, refused by GGUF and llm.c
"$A" convert "$T/an/ckpt.bin" "$T/an.safetensors" > /dev/null && "$A" convert "$T/an.safetensors" "$T/an.back.ckpt" > /dev/null &&
    gen "$T/an/ckpt.bin" "$T/an.ref.jsonl" && gen "$T/an.back.ckpt" "$T/an.out.jsonl" &&
    cmp -s "$T/an.ref.jsonl" "$T/an.out.jsonl" && pass "ANDREA architecture: safetensors round trip generates identically" ||
    fail "ANDREA architecture through safetensors"
expect_error "gguf refuses ANDREA" "no architecture computing rmsnorm + relu2" "$A" convert "$T/an/ckpt.bin" "$T/an.gguf"
expect_error "llm.c refuses ANDREA" "only GPT-2's architecture" "$A" convert "$T/an/ckpt.bin" "$T/an.bin" --to llmc
expect_error "q8_0 is GGUF's" "is for GGUF" "$A" convert "$T/g2/ckpt.bin" "$T/x.safetensors" --type q8_0
expect_error ".bin is ambiguous" "give --to" "$A" convert "$T/g2/ckpt.bin" "$T/x.bin"

# broken files: one line, non-zero exit
head -c 5000 "$T/m.gguf" > "$T/trunc.gguf"
expect_error "truncated gguf" "truncated\|outside" "$A" convert "$T/trunc.gguf" "$T/x.safetensors"
head -c 3000 "$T/hf/model.safetensors" > "$T/trunc.safetensors"
expect_error "truncated safetensors" "outside\|beyond" "$A" convert "$T/trunc.safetensors" "$T/x.gguf"
head -c 2000 "$T/m.llmc.bin" > "$T/trunc.bin"
expect_error "truncated llm.c" "needs" "$A" convert "$T/trunc.bin" "$T/x.gguf"
printf 'hello world, not a model' > "$T/junk.gguf"
expect_error "not a model" "nor safetensors, GGUF or llm.c" "$A" convert "$T/junk.gguf" "$T/x.safetensors"
finish
