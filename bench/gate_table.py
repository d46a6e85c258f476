#!/usr/bin/env python3
"""gate_table.py scores HONEST.jsonl COURSE.jsonl | gate_table.py log LOG.jsonl: the markdown
rows of bench/gate_scores.sh (docs/coherence-gate.md)."""
import json
import os
import sys


def verdict(t):
    return "pass" if t >= 30 else "**FAIL**"


if sys.argv[1] == "scores":
    for hl, cl in zip(open(sys.argv[2]), open(sys.argv[3])):
        h, c = json.loads(hl), json.loads(cl)
        name = os.path.basename(h["file"])[:-4]
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f %s | %.1f %s |" % (
            name, os.path.getsize(h["file"]), h["dict"], h["repeat"], h["charset"], h["common"],
            h["order"], h["total"], verdict(h["total"]), c["total"], verdict(c["total"])))
else:
    val = None
    for line in open(sys.argv[2]):
        d = json.loads(line)
        if d["type"] == "eval":
            val = d["val_loss"]
        if d["type"] == "sample":
            print("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %s |" % (
                d["step"], "-" if val is None else "%.3f" % val, d["dict"], d["repeat"],
                d["charset"], d.get("common", 1), d.get("order", 1), d["score"],
                d.get("strike") or "no"))
