#!/usr/bin/env python3
"""compare.py OUT_DIR - the published growth run's table (docs/growth/README.md): for the UCB1
run and the uniform-policy run of the same budget in OUT_DIR/{ucb1,uniform}/log.jsonl, the
validation loss per source at the last evaluation, the training tokens each source was given
(batches x B x T, from the `batch` lines), the best overall loss, the gate's samples and the
wall time. Markdown on stdout; only the standard library."""
import json
import sys


def read_log(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"compare.py: {path}:{n}: not JSON ({e.msg})")
    return rows


def summarise(rows):
    start = next(r for r in rows if r["type"] == "start")
    tokens_per_batch = start["options"]["batch"] * start["options"]["seq"]
    evals = [r for r in rows if r["type"] == "eval"]
    last_step = evals[-1]["step"] if evals else None
    per_source = {r["source"]: r["val_loss"] for r in rows
                  if r["type"] == "eval_source" and r["step"] == last_step}
    seen = {}
    for r in rows:
        if r["type"] == "batch":
            seen[r["source"]] = seen.get(r["source"], 0) + tokens_per_batch
    samples = [r for r in rows if r["type"] == "sample"]
    end = next((r for r in rows if r["type"] == "end"), {})
    return {"per_source": per_source, "seen": seen, "last_step": last_step,
            "best": end.get("best_val_loss"), "seconds": end.get("seconds"),
            "reason": end.get("reason"), "samples": samples,
            "last_eval": evals[-1]["val_loss"] if evals else None}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: compare.py OUT_DIR (holding ucb1/log.jsonl and uniform/log.jsonl)")
    runs = {p: summarise(read_log(f"{sys.argv[1]}/{p}/log.jsonl")) for p in ("ucb1", "uniform")}
    u, f = runs["ucb1"], runs["uniform"]
    print(f"| source | val loss, UCB1 | val loss, uniform | UCB1 - uniform | tokens, UCB1 | tokens, uniform |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in u["per_source"]:
        a, b = u["per_source"][name], f["per_source"].get(name)
        diff = f"{a - b:+.3f}" if b is not None else "n/a"
        print(f"| {name} | {a:.3f} | {b:.3f} | {diff} | {u['seen'].get(name, 0):,} | "
              f"{f['seen'].get(name, 0):,} |")
    for label, key in (("mean over sources, last evaluation", "last_eval"),
                       ("best mean over sources", "best")):
        print(f"| **{label}** | {u[key]:.3f} | {f[key]:.3f} | {u[key] - f[key]:+.3f} | | |")
    print()
    for p, r in runs.items():
        scores = [s.get("score") for s in r["samples"]]
        print(f"- {p}: ended '{r['reason']}' at step {r['last_step']} after {r['seconds']:.0f} s; "
              f"{sum(r['seen'].values()):,} training tokens; gate scores {scores}")


if __name__ == "__main__":
    main()
