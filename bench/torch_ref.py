#!/usr/bin/env python3
"""torch_ref.py - the andrea architecture and trainer re-written in PyTorch, for
benchmarks and cross-checks. Reads the config and the weights from an andrea
checkpoint, so both engines start from bit-identical parameters.

  train mode (default): AdamW + global-norm clipping + andrea's LR schedule on
      the same random windows as `andrea train` (the same xoroshiro128+ sampler
      and seed), timing ms/step after --warmup-steps untimed steps.
  --check: mean loss of the first B windows of the file, computed exactly like
      `andrea eval -m CKPT -d FILE --seq T --batch B --max-batches 1`.

Both modes print one JSON object on the last line of stdout.

On a GPU (scripts/device_check.sh): --device cuda, --bf16 (autocast to bf16, fp32 master
weights), --sdpa (F.scaled_dot_product_attention, PyTorch's flash attention; torch >= 2.0)
and --fused-adamw, the PyTorch that andrea's CUDA backend is measured against.

  python3 bench/torch_ref.py --ckpt run/ckpt.bin --data tiny.txt --batch 12 --seq 64 \
      --steps 30 --warmup-steps 5 --threads 2
  python3 bench/torch_ref.py --check --ckpt run/ckpt.bin --data tiny.txt --batch 12 --seq 64
"""
import argparse
import contextlib
import ctypes
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HEADER = 512
MAGIC = b"ANDRCKPT"
NORM_LAYER, NORM_RMS = 0, 1
ACT_GELU, ACT_RELU, ACT_RELU2 = 0, 1, 2
M64 = (1 << 64) - 1


# ---- checkpoint ---------------------------------------------------------------------------

def layout(cfg):
    """(name, shape, decay) in file order; mirrors andrea_layout_build (src/model/config.c)."""
    L, C, V, T = cfg["n_layer"], cfg["d_model"], cfg["vocab"], cfg["ctx"]
    ln_bias = cfg["norm"] == NORM_LAYER and cfg["bias"]
    t = [("wte", (V, C), 1), ("wpe", (T, C), 1)]
    for l in range(L):
        h = "h.%d." % l
        t.append((h + "ln1.w", (C,), 0))
        if ln_bias:
            t.append((h + "ln1.b", (C,), 0))
        t.append((h + "attn.wqkv", (3 * C, C), 1))
        if cfg["bias"]:
            t.append((h + "attn.bqkv", (3 * C,), 0))
        t.append((h + "attn.wo", (C, C), 1))
        if cfg["bias"]:
            t.append((h + "attn.bo", (C,), 0))
        t.append((h + "ln2.w", (C,), 0))
        if ln_bias:
            t.append((h + "ln2.b", (C,), 0))
        t.append((h + "mlp.wfc", (4 * C, C), 1))
        if cfg["bias"]:
            t.append((h + "mlp.bfc", (4 * C,), 0))
        t.append((h + "mlp.wproj", (C, 4 * C), 1))
        if cfg["bias"]:
            t.append((h + "mlp.bproj", (C,), 0))
    t.append(("lnf.w", (C,), 0))
    if ln_bias:
        t.append(("lnf.b", (C,), 0))
    if not cfg["tied"]:
        t.append(("lm_head", (V, C), 1))
    return t


def load_checkpoint(path):
    """Returns (cfg, state, {name: float32 tensor}); checks magic, version, sizes, length.
    Reads version 1 (a 512-byte header) and version 2 (tagged sections, train/checkpoint/checkpoint.c)."""
    with open(path, "rb") as f:
        h = f.read(24)
        if len(h) < 24 or h[:8] != MAGIC:
            sys.exit("torch_ref: '%s' is not an andrea checkpoint (bad magic)" % path)
        version, hsize = struct.unpack_from("<II", h, 8)
        if version == 2 and hsize == 24:
            cfg, st, flat = read_v2(f, path)
        elif version == 1 and hsize == HEADER:
            cfg, st, flat = read_v1(f, path, h + f.read(HEADER - 24))
        else:
            sys.exit("torch_ref: '%s': checkpoint version %d / header %d, expected 1 / %d or 2 / 24"
                     % (path, version, hsize, HEADER))
    lay = layout(cfg)
    n_params = sum(int(np.prod(s)) for _, s, _ in lay)
    if flat.size != n_params:
        sys.exit("torch_ref: '%s': %d parameters, the config implies %d" % (path, flat.size, n_params))
    tensors, off = {}, 0
    for name, shape, _ in lay:
        n = int(np.prod(shape))
        tensors[name] = torch.from_numpy(flat[off:off + n].reshape(shape).copy())
        off += n
    return cfg, st, tensors


def read_v1(f, path, h):
    keys = ["n_layer", "n_head", "d_model", "ctx", "vocab", "norm", "act", "bias", "tied"]
    cfg = dict(zip(keys, struct.unpack_from("<9i", h, 16)))
    cfg["norm_eps"], cfg["init_std"] = struct.unpack_from("<2f", h, 52)
    (n_params,) = struct.unpack_from("<q", h, 64)
    st = {}
    st["step"], st["rng0"], st["rng1"], st["seed"] = struct.unpack_from("<qQQQ", h, 96)
    ints = struct.unpack_from("<10i", h, 144)
    st["warmup"] = ints[4]
    fl = struct.unpack_from("<8f", h, 184)
    for k, v in zip(["lr", "lr_min", "beta1", "beta2", "eps", "weight_decay", "grad_clip",
                     "val_fraction"], fl):
        st[k] = v
    return cfg, st, np.fromfile(f, dtype="<f4", count=n_params)


def read_v2(f, path):
    """Sections: tag[4], u32 0, u64 length, payload padded to 8 bytes."""
    cfg, st, flat = None, {}, None
    while True:
        sh = f.read(16)
        if len(sh) < 16:
            break
        tag, (length,) = sh[:4], struct.unpack_from("<Q", sh, 8)
        if tag == b"PARM":
            flat = np.fromfile(f, dtype="<f4", count=length // 4)
            break
        body = f.read(length + (8 - length % 8) % 8)
        if tag == b"CONF":
            keys = ["n_layer", "n_head", "d_model", "ctx", "vocab", "norm", "act", "bias", "tied"]
            cfg = dict(zip(keys, struct.unpack_from("<9i", body, 0)))
            cfg["norm_eps"], cfg["init_std"] = struct.unpack_from("<2f", body, 36)
        elif tag == b"STAT":
            (st["step"],) = struct.unpack_from("<q", body, 0)
        elif tag == b"BATC":  # a corpus position: kind[8], data checksum, rng[2]
            st["rng0"], st["rng1"] = struct.unpack_from("<QQ", body, 16)
        elif tag == b"OPTS":
            (count,), off = struct.unpack_from("<I", body, 0), 4
            for _ in range(count):
                n = body[off]
                flag, typ = body[off + 1:off + 1 + n].decode(), body[off + 1 + n]
                off += 2 + n
                if typ == 1:
                    (v,) = struct.unpack_from("<i", body, off); off += 4
                elif typ == 2:
                    (v,) = struct.unpack_from("<f", body, off); off += 4
                elif typ == 3:
                    (v,) = struct.unpack_from("<Q", body, off); off += 8
                else:
                    (sl,) = struct.unpack_from("<I", body, off)
                    v = body[off + 4:off + 4 + sl].decode(errors="replace"); off += 4 + sl
                st[flag.replace("-", "_")] = v
    if cfg is None or flat is None or "rng0" not in st:
        sys.exit("torch_ref: '%s': a version-2 checkpoint without CONF, BATC or PARM" % path)
    return cfg, st, flat


# ---- the model ----------------------------------------------------------------------------

class Andrea(torch.nn.Module):
    """x = wte[tok] + wpe[pos]; x += Attn(Norm(x)); x += MLP(Norm(x)); logits = Norm(x) @ lm_head^T."""

    def __init__(self, cfg, tensors, sdpa=False):
        super().__init__()
        self.cfg = cfg
        self.sdpa = sdpa
        self.decay = {}
        for name, _, decay in layout(cfg):
            p = torch.nn.Parameter(tensors[name])
            self.register_parameter(name.replace(".", "_"), p)
            self.decay[name.replace(".", "_")] = decay

    def p(self, name):
        return getattr(self, name.replace(".", "_"), None)

    def norm(self, x, w, b):
        eps = self.cfg["norm_eps"]
        if self.cfg["norm"] == NORM_LAYER:
            return F.layer_norm(x, (x.shape[-1],), w, b, eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def act(self, x):
        a = self.cfg["act"]
        if a == ACT_GELU:
            return F.gelu(x, approximate="tanh")
        if a == ACT_RELU:
            return F.relu(x)
        return F.relu(x).square()

    def forward(self, idx, targets):
        B, T = idx.shape
        C, NH = self.cfg["d_model"], self.cfg["n_head"]
        HS = C // NH
        scale = 1.0 / math.sqrt(HS)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
        x = self.wte[idx] + self.wpe[:T]
        for l in range(self.cfg["n_layer"]):
            h = "h.%d." % l
            y = self.norm(x, self.p(h + "ln1.w"), self.p(h + "ln1.b"))
            qkv = F.linear(y, self.p(h + "attn.wqkv"), self.p(h + "attn.bqkv"))
            q, k, v = (t.view(B, T, NH, HS).transpose(1, 2) for t in qkv.split(C, dim=2))
            if self.sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * scale
                att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
                y = att @ v
            y = y.transpose(1, 2).reshape(B, T, C)
            x = x + F.linear(y, self.p(h + "attn.wo"), self.p(h + "attn.bo"))
            y = self.norm(x, self.p(h + "ln2.w"), self.p(h + "ln2.b"))
            y = self.act(F.linear(y, self.p(h + "mlp.wfc"), self.p(h + "mlp.bfc")))
            x = x + F.linear(y, self.p(h + "mlp.wproj"), self.p(h + "mlp.bproj"))
        x = self.norm(x, self.p("lnf.w"), self.p("lnf.b"))
        logits = F.linear(x, self.wte if self.cfg["tied"] else self.lm_head)
        # targets -1 are padding (andrea eval's last batch) and are ignored, as in andrea
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-1)


# ---- andrea's data sampler and LR schedule -----------------------------------------------

class Xoroshiro128p:
    """andrea_rng (src/util/rng.c), so both engines draw the same training windows."""

    def __init__(self, s0, s1):
        self.s0, self.s1 = s0, s1

    @staticmethod
    def seeded(seed):
        x = seed
        out = []
        for _ in range(2):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            out.append(z ^ (z >> 31))
        return Xoroshiro128p(*out)

    def u64(self):
        s0, s1 = self.s0, self.s1
        r = (s0 + s1) & M64
        s1 ^= s0
        self.s0 = (((s0 << 24) | (s0 >> 40)) & M64) ^ s1 ^ ((s1 << 16) & M64)
        self.s1 = ((s1 << 37) | (s1 >> 27)) & M64
        return r


def lr_at(st, step, max_steps):
    """andrea_lr_at (src/train/schedule.c): cosine to lr_min times a linear warmup."""
    progress = min(step / max_steps, 1.0) if max_steps > 0 else 1.0
    sched = st["lr_min"] + 0.5 * (st["lr"] - st["lr_min"]) * (1.0 + math.cos(math.pi * progress))
    warm = (step + 1) / st["warmup"] if st["warmup"] > 0 else 1.0
    return sched * min(warm, 1.0)


def set_blas_threads(n):
    """torch.set_num_threads limits ATen's OpenMP pool but not an external OpenBLAS
    (Debian's torch calls libblas.so.3 = OpenBLAS with its own pthreads), so a
    1-thread run would still multiply on every core. Returns the BLAS threads, or None."""
    for lib in ("libopenblas.so.0", "libopenblas.so"):
        try:
            ob = ctypes.CDLL(lib)
        except OSError:
            continue
        if n > 0:
            ob.openblas_set_num_threads(n)
        return ob.openblas_get_num_threads()
    return None


def read_tokens(path):
    """The byte tokenizer: token i = byte i of the file."""
    return torch.from_numpy(np.fromfile(path, dtype=np.uint8).astype(np.int64))


# ---- modes ----------------------------------------------------------------------------------

def check(model, tokens, B, T, device):
    """andrea_eval_tokens on the whole file, first batch: window w is tokens[w*T : w*T+T+1]
    (stride T), windows past the end are padding; returns the mean over valid targets."""
    nw = (tokens.numel() - 1) // T
    x = torch.zeros(B, T, dtype=torch.int64)
    y = torch.full((B, T), -1, dtype=torch.int64)
    for b in range(min(B, nw)):
        x[b] = tokens[b * T:b * T + T]
        y[b] = tokens[b * T + 1:b * T + T + 1]
    x, y = x.to(device), y.to(device)
    with torch.no_grad():
        loss = model(x, y).item()
    # the same loss in float64 as a precision reference for the float32 result
    model64 = model.double()
    with torch.no_grad():
        loss64 = model64(x, y).item()
    model.float()
    return loss, loss64


def train(model, st, tokens, B, T, steps, warmup_steps, max_steps, foreach, device,
          bf16=False, fused=False):
    decay = [p for n, p in model.named_parameters() if model.decay[n]]
    no_decay = [p for n, p in model.named_parameters() if not model.decay[n]]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": st["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=st["lr"], betas=(st["beta1"], st["beta2"]), eps=st["eps"], foreach=foreach,
        **({"fused": True} if fused else {}))
    # bf16: the products and attention in bf16 under autocast, the weights and AdamW fp32
    autocast = (lambda: torch.autocast(device_type=device.type, dtype=torch.bfloat16)) if bf16 \
        else contextlib.nullcontext
    params = list(model.parameters())
    n = tokens.numel()
    n_train = n - int(n * st["val_fraction"])   # andrea_dataset_init, val_fraction as float
    span = n_train - T
    rng = Xoroshiro128p(st["rng0"], st["rng1"])
    offs = torch.arange(T + 1)
    losses, ms = [], []
    total = warmup_steps + steps
    for step in range(total):
        t0 = time.perf_counter()
        starts = torch.tensor([rng.u64() % span for _ in range(B)], dtype=torch.int64)
        win = tokens[starts[:, None] + offs]
        x, y = win[:, :-1].to(device), win[:, 1:].to(device)
        lr = lr_at(st, step, max_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = model(x, y)
        loss.backward()
        if st["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, st["grad_clip"])
        opt.step()
        lv = loss.item()  # waits for the device: the step's time is its whole time
        dt = (time.perf_counter() - t0) * 1e3
        losses.append(lv)
        ms.append(dt)
        print("step %4d/%d | loss %.6f | lr %.3e | %.1f ms" % (step + 1, total, lv, lr, dt),
              flush=True)
    return losses, ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", required=True, help="andrea checkpoint with the initial weights")
    ap.add_argument("--data", required=True, help="text file (byte tokens)")
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=5, help="untimed steps before them")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="length of the LR schedule (default: warmup-steps + steps, which is "
                         "what `andrea train --max-steps` gets)")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads, 0 = torch default")
    ap.add_argument("--check", action="store_true", help="print the eval loss of the first batch")
    # On the CPU, torch 1.13's multi-tensor AdamW was 2-4x slower than the per-tensor loop
    # (gpt2-124m, 1 thread: 4.8 s vs 1.1-1.9 s per optimizer step), so it is off by default.
    ap.add_argument("--foreach", action="store_true", help="multi-tensor AdamW (slower on CPU)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda (default cpu)")
    ap.add_argument("--bf16", action="store_true", help="autocast the forward to bf16")
    ap.add_argument("--sdpa", action="store_true",
                    help="F.scaled_dot_product_attention (flash attention; torch >= 2.0)")
    ap.add_argument("--fused-adamw", action="store_true", help="AdamW(fused=True) (CUDA)")
    a = ap.parse_args()
    if a.device not in ("cpu", "cuda"):
        sys.exit("torch_ref: --device '%s': expected cpu or cuda" % a.device)
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_ref: --device cuda: torch sees no CUDA device")
    if a.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        sys.exit("torch_ref: --sdpa needs torch >= 2.0 (this is %s)" % torch.__version__)
    device = torch.device(a.device)

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    blas_threads = set_blas_threads(a.threads)
    cfg, st, tensors = load_checkpoint(a.ckpt)
    if a.seq > cfg["ctx"] or a.seq <= 0 or a.batch <= 0:
        sys.exit("torch_ref: need --batch >= 1 and 1 <= --seq <= ctx %d" % cfg["ctx"])
    torch.manual_seed(0)
    model = Andrea(cfg, tensors, sdpa=a.sdpa).to(device)
    tokens = read_tokens(a.data)
    if tokens.numel() < a.seq + 1:
        sys.exit("torch_ref: '%s' has %d tokens, need at least %d" % (a.data, tokens.numel(),
                                                                      a.seq + 1))
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "blas_threads": blas_threads,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "batch": a.batch, "seq": a.seq, "device": a.device, "bf16": a.bf16,
            "sdpa": a.sdpa, "fused_adamw": a.fused_adamw,
            "gpu": torch.cuda.get_device_name() if a.device == "cuda" else None}
    if a.check:
        loss, loss64 = check(model, tokens, a.batch, a.seq, device)
        info.update(mode="check", loss=loss, loss_f64=loss64)
    else:
        max_steps = a.max_steps or a.warmup_steps + a.steps
        losses, ms = train(model, st, tokens, a.batch, a.seq, a.steps, a.warmup_steps, max_steps,
                           a.foreach, device, a.bf16, a.fused_adamw)
        timed = ms[a.warmup_steps:]
        info.update(mode="train", foreach=a.foreach, steps=a.steps, warmup_steps=a.warmup_steps,
                    ms_median=float(np.median(timed)) if timed else None,
                    ms_mean=float(np.mean(timed)) if timed else None,
                    tok_s=a.batch * a.seq * 1e3 / float(np.median(timed)) if timed else None,
                    losses=losses, ms=ms)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
