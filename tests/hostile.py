"""hostile.py - builds the hostile inputs of issue 10 for tests/test_hostile_inputs.sh.
usage: python3 hostile.py DIR   (writes the files listed in main into DIR)"""
import math
import os
import struct
import sys

MASK = (1 << 64) - 1
P = 0x100000001B3
INIT = 0xCBF29CE484222325


def word_hash(b):
    """util/hash.c andrea_hash: FNV-1a over little-endian 64-bit words (last one zero-padded)."""
    b = b + b"\0" * (-len(b) % 8)
    h = INIT
    for (w,) in struct.iter_unpack("<Q", b):
        h = ((h ^ w) * P) & MASK
    return h


def byte_hash(b):
    h = INIT
    for c in b:
        h = ((h ^ c) * P) & MASK
    return h


def section(tag, payload, reserved=0):
    return tag + struct.pack("<IQ", reserved, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def opts_float(name, value):
    """an OPTS section with one float entry"""
    return section(b"OPTS", struct.pack("<IB", 1, len(name)) + name.encode() + struct.pack("<Bf", 2, value))


def batc(checksum, rng0, rng1):
    return section(b"BATC", b"corpus\0\0" + struct.pack("<3Q", checksum, rng0, rng1))


def n_params(V, C, T):
    """L 1, RMSNorm, no biases, tied head (src/model/config.c's layout)."""
    return V * C + T * C + 12 * C * C + 3 * C


def checkpoint(V=257, C=8, T=4, params=None, blob=b"", eps=1e-5, step=3, tensor_bytes=None,
               extra=b"", stat_reserved=0, best=math.inf, moments=False):
    conf = struct.pack("<9i2f", 1, 1, C, T, V, 1, 0, 0, 1, eps, 0.02)
    body = section(b"CONF", conf)
    if blob:
        body += section(b"TOKN", struct.pack("<IIQ", struct.unpack_from("<I", blob, 12)[0], 0,
                                             byte_hash(blob)) + blob)
    body += section(b"STAT", struct.pack("<qffiI", step, best, math.nan, 0, 0), stat_reserved)
    body += extra
    n = n_params(V, C, T)
    if tensor_bytes is not None:  # only the header of a PARM section (a sparse file's)
        body += b"PARM" + struct.pack("<IQ", 0, tensor_bytes)
        size = 24 + len(body) + tensor_bytes + 8
        return struct.pack("<8sIIQ", b"ANDRCKPT", 2, 24, size) + body, size
    if params is None:
        params = [0.01 * ((i * 7) % 13 - 6) for i in range(n)]
    body += section(b"PARM", struct.pack("<%df" % n, *params))
    if moments:  # AdamW's m then v, zero: a file a run can resume
        body += section(b"ADAM", b"\0" * (8 * n))
    data = struct.pack("<8sIIQ", b"ANDRCKPT", 2, 24, 24 + len(body) + 8) + body
    return data + struct.pack("<Q", word_hash(data))


def gguf_duplicate_key():
    """a GGUF v3 header whose kv 'general.architecture' appears twice, no tensors"""
    def kv_str(k, v):
        return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(v)) + v
    kvs = kv_str(b"general.architecture", b"gpt2") + kv_str(b"general.architecture", b"llama")
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kvs + b"\0" * 64


def doubling_bpe():
    """32 merges, each doubling the last token: the 32nd has 2^32 bytes (uint32 wraps)."""
    nm = 32
    p = struct.pack("<I", nm) + struct.pack("<256I", *range(256))
    for r in range(nm):
        a = ord("a") if r == 0 else 256 + r - 1
        p += struct.pack("<3I", a, a, 256 + r)
    p += struct.pack("<I", 0)
    return struct.pack("<8sIIIIQ", b"ANDRTOK\0", 1, 3, 256 + nm + 1, 256 + nm, len(p)) + p


def harris_36():
    """vocab 2^30, a 4-byte payload: the loader asked for 8 GB before reading it."""
    V = 1 << 30
    return struct.pack("<8sIIIIQI", b"ANDRTOK\0", 1, 5, V, 256, 4, V - 257)


def main(d):
    def put(name, data):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)

    put("good.bin", checkpoint())
    params = [0.01] * n_params(257, 8, 4)
    params[5] = math.nan
    put("nan.bin", checkpoint(params=params))
    params[5] = math.inf
    put("inf.bin", checkpoint(params=params))
    put("inf_eps.bin", checkpoint(eps=math.inf))
    put("neg_step.bin", checkpoint(step=-5))
    put("reserved_bits.bin", checkpoint(stat_reserved=4))
    put("nan_lr_min.bin", checkpoint(extra=opts_float("lr-min", math.nan)))
    put("nan_clip.bin", checkpoint(extra=opts_float("grad-clip", math.nan)))
    put("neg_wd.bin", checkpoint(extra=opts_float("weight-decay", -0.5)))
    put("zero_rng.bin", checkpoint(extra=batc(0x1234, 0, 0)))
    # issue 22: finite but useless weights under a valid checksum (a diverged run's), one
    # weight of 3e38 in the tied embedding, a NaN best loss, beta2 = 1 saved
    put("blown.bin", checkpoint(params=[1e10 * (1 if i % 3 else -1) for i in range(n_params(257, 8, 4))]))
    big = [0.01 * ((i * 7) % 13 - 6) for i in range(n_params(257, 8, 4))]
    for i in range(8 * 8):
        big[i] = 3e38
    put("big_weight.bin", checkpoint(params=big))
    put("nan_best.bin", checkpoint(best=math.nan))
    put("beta2_one.bin", checkpoint(extra=opts_float("beta2", 1.0), moments=True))
    put("dup_key.gguf", gguf_duplicate_key())
    put("bpe_in_ckpt.bin", checkpoint(V=289, blob=doubling_bpe()))
    good = checkpoint()
    flip = bytearray(good)
    flip[len(good) - 100] ^= 0x10  # a parameter's bit: the header still reads fine
    put("flip.bin", bytes(flip))
    bad_pre = bytearray(good)
    bad_pre[12] = 16  # preamble size
    put("bad_preamble.bin", bytes(bad_pre))
    put("bpe_doubling.tok", doubling_bpe())
    put("harris_36.tok", harris_36())
    # 9.7 GB: a consistent header for V 2^24, C 144, T 16; the rest a hole (truncate -s)
    n = n_params(1 << 24, 144, 16)
    head, size = checkpoint(V=1 << 24, C=144, T=16, tensor_bytes=4 * n)
    with open(os.path.join(d, "sparse.bin"), "wb") as f:
        f.write(head)
        f.truncate(size)
    # a token file whose vocabulary does not fit int32
    put("huge_vocab.tokens", struct.pack("<8sIIIIQQI20s", b"ANDRTOKS", 1, 64, 0x80000001, 4, 1,
                                         0, 0, b"") + struct.pack("<I", 7))


if __name__ == "__main__":
    main(sys.argv[1])
