"""test_torch_gpt2.py - PyTorch's side of test_torch_gpt2.sh: a GPT-2 written the way
Hugging Face's transformers computes it (Conv1D weights stored (in, out), gelu_new, layer
norm eps 1e-5, tied head), nothing of andrea's.

  make DIR VOCAB   random weights in HF's file layout: DIR/model.safetensors (the
                   "transformer." prefix and the attn.bias causal-mask buffers HF keeps),
                   DIR/config.json; the tokenizer files are the caller's.
  bytevocab DIR    a byte-level vocabulary in GPT-2's conventions (256 bytes as GPT-2 maps
                   them to characters, then <|endoftext|>; no merges) as vocab.json/merges.txt
                   and, the same files under GPT-2's own names, encoder.json/vocab.bpe.
  run DIR IDS N    greedy continuation of the prompt ids (comma-separated) by N tokens:
                   one JSON line per token, {"id":..,"logprob":..,"margin":..} where margin is
                   the gap between the best and second-best logit (a near-tie flags a token
                   whose choice float rounding could flip).
"""
import json
import math
import struct
import sys

import torch

L, C, NH, T = 2, 64, 4, 128


def save_safetensors(path, tensors):
    header, blob = {"__metadata__": {"format": "pt"}}, bytearray()
    for name, t in tensors.items():
        raw = t.contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    hj = json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + bytes(blob))


def load_safetensors(path):
    d = open(path, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    h.pop("__metadata__", None)
    out = {}
    for k, v in h.items():
        b, e = v["data_offsets"]
        x = torch.frombuffer(bytearray(d[8 + n + b:8 + n + e]), dtype=torch.float32)
        out[k.removeprefix("transformer.")] = x.reshape(v["shape"])
    return out


def make(out_dir, vocab):
    g = torch.Generator().manual_seed(1234)
    # std 0.15, not GPT-2's 0.02: peaked distributions, so greedy choices are not near-ties
    r = lambda *s: torch.randn(*s, generator=g) * 0.15
    w = {"wte.weight": r(vocab, C), "wpe.weight": r(T, C)}
    for l in range(L):
        p = "h.%d." % l
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + r(C), r(C)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = r(C, 3 * C), r(3 * C)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = r(C, C), r(C)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + r(C), r(C)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r(C, 4 * C), r(4 * C)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r(4 * C, C), r(C)
        w[p + "attn.bias"] = torch.tril(torch.ones(T, T)).reshape(1, 1, T, T)
        w[p + "attn.masked_bias"] = torch.tensor(-1e4)
    w["ln_f.weight"], w["ln_f.bias"] = 1 + r(C), r(C)
    save_safetensors(out_dir + "/model.safetensors", {"transformer." + k: v for k, v in w.items()})
    json.dump({"model_type": "gpt2", "n_layer": L, "n_embd": C, "n_head": NH, "n_positions": T,
               "vocab_size": vocab, "layer_norm_epsilon": 1e-5}, open(out_dir + "/config.json", "w"))


def bytevocab(out_dir):
    # GPT-2's byte-to-character map: printable bytes stand for themselves, the rest
    # move to 256 + n in order (so space is "\u0120", written "Ġ")
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    vocab = {chars[b]: b for b in range(256)}
    vocab["<|endoftext|>"] = 256
    for name in ("vocab.json", "encoder.json"):
        json.dump(vocab, open(out_dir + "/" + name, "w", encoding="utf-8"), ensure_ascii=False)
    for name in ("merges.txt", "vocab.bpe"):
        open(out_dir + "/" + name, "w").write("#version: 0.2\n")


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))


def forward(w, ids):
    n = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:n]
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (C,), w[p + ".weight"], w[p + ".bias"], 1e-5)
    mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
    for l in range(L):
        p = "h.%d." % l
        qkv = ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(n, NH, C // NH).transpose(0, 1) for t in qkv.split(C, dim=-1))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(C // NH)
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v
        x = x + a.transpose(0, 1).reshape(n, C) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = gelu_new(ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return ln(x, "ln_f") @ w["wte.weight"].T


def run(model_dir, ids, steps):
    w = load_safetensors(model_dir + "/model.safetensors")
    ids = list(ids)
    with torch.no_grad():
        for _ in range(steps):
            logits = forward(w, ids)[-1]
            top2 = torch.topk(logits, 2).values
            nxt = int(torch.argmax(logits))
            lp = float(torch.log_softmax(logits, dim=-1)[nxt])
            print(json.dumps({"id": nxt, "logprob": lp, "margin": float(top2[0] - top2[1])}))
            ids.append(nxt)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1] == "bytevocab":
        bytevocab(sys.argv[2])
    elif sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2], [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4]))
