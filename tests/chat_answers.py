#!/usr/bin/env python3
"""chat_answers.py JSONL OUT_DIR N: the first N assistant answers of a chat JSONL file
({"messages": [{"role", "content"}, ...]} per line) that are prose of 1200 characters or more
(no code blocks), written to OUT_DIR/chat_1.txt ... chat_N.txt. Used by
tests/test_gate_honest.sh and bench/gate_scores.sh."""
import json
import sys

path, out, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
k = 0
for line in open(path, encoding="utf-8"):
    for msg in json.loads(line)["messages"]:
        if msg["role"] == "assistant" and len(msg["content"]) >= 1200 and "```" not in msg["content"]:
            k += 1
            with open(f"{out}/chat_{k}.txt", "w", encoding="utf-8") as f:
                f.write(msg["content"])
            break
    if k == want:
        break
