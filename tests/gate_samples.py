#!/usr/bin/env python3
"""gate_samples.py OUT_DIR TEXT [DATA_DIR]: the coherence gate's calibration classes, 6
samples each, as OUT_DIR/CLASS_K.txt (seeded: the same files every run).

Real text (must pass): prose, dialogue, chat answers and dictionary definitions from
DATA_DIR (../shared/data) when there, else pieces of TEXT (tests/lib.sh's need_text).
Not coherent (must fail): word salads of random dictionary words, shuffled prose, a phrase
x 20, a 300-byte paragraph said twice, random bytes, random letters.
Used by tests/test_gate_table.sh and bench/gate_scores.sh."""
import json
import os
import random
import sys

out, text_path = sys.argv[1], sys.argv[2]
data = sys.argv[3] if len(sys.argv) > 3 else ""
rng = random.Random(28)
N = 6


def write(name, k, body):
    mode = "wb" if isinstance(body, bytes) else "w"
    with open(os.path.join(out, f"{name}_{k}.txt"), mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
        f.write(body)


def pieces(text, size, n):
    """n pieces of about size bytes, cut at line starts, from spread-out offsets."""
    got = []
    for k in range(n):
        a = text.find("\n", (k * 7919 * 131 + 1000) % max(1, len(text) - 4 * size)) + 1
        b = text.rfind("\n", a, a + size)
        got.append(text[a:b if b > a else a + size])
    return got


def have(p):
    return data and os.path.isfile(os.path.join(data, p))


fallback = open(text_path, encoding="utf-8", errors="replace").read()
books = open(os.path.join(data, "gutenberg_books.txt"), encoding="utf-8").read() if have("gutenberg_books.txt") else None
if books:
    paras = [p for p in books.split("\n\n") if 800 <= len(p) <= 2000 and p.count("\n") >= 8]
    prose = [paras[(k * 397) % len(paras)] for k in range(N)]
else:
    prose = pieces(fallback, 1200, N)
for k, p in enumerate(prose, 1):
    write("prose", k, p)
shakes = open(os.path.join(data, "tinyshakespeare.txt"), encoding="utf-8").read() if have("tinyshakespeare.txt") else fallback
for k, p in enumerate(pieces(shakes, 1200, N), 1):
    write("dialogue", k, p)
if have("chat/oasst_en100_chats.jsonl"):
    answers = []
    for line in open(os.path.join(data, "chat/oasst_en100_chats.jsonl"), encoding="utf-8"):
        for m in json.loads(line)["messages"]:
            if m["role"] == "assistant" and len(m["content"]) >= 600:
                answers.append(m["content"][:1500])
    for k in range(N):
        write("chat", k + 1, answers[(k * 11) % len(answers)])
if have("dictionary/wordnet_define.jsonl"):
    docs = []
    with open(os.path.join(data, "dictionary/wordnet_define.jsonl"), encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)["messages"]
            docs.append(f"> {m[0]['content']}\n< {m[1]['content']}\n")
            if len(docs) >= 20 * N:
                break
    for k in range(N):
        write("definitions", k + 1, "".join(docs[k * 20:(k + 1) * 20]))

words_path = os.environ.get("ANDREA_WORDS") or "/usr/share/dict/american-english"
words = [w.strip() for w in open(words_path, encoding="utf-8", errors="replace") if w.strip()]
for k in range(N):
    write("salad", k + 1, " ".join(rng.choice(words) for _ in range(80)))
for k, p in enumerate(prose, 1):
    w = p.split()
    rng.shuffle(w)
    write("shuffled", k, " ".join(w))
phrases = ["region", "the king is dead", "games, games", "I will not go there",
           "To be, or not to be, that is the question:", "Budy"]
for k, p in enumerate(phrases, 1):
    write("phrase_x20", k, " ".join([p] * 20))
for k, p in enumerate(prose, 1):
    para = p[:300]
    write("paragraph_x2", k, para + "\n" + para)
for k in range(N):
    write("random_bytes", k + 1, bytes(rng.randrange(256) for _ in range(1500)))
    write("random_letters", k + 1, "".join(rng.choice("abcdefghijklmnopqrstuvwxyz    ") for _ in range(1500)))
