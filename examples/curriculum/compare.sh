#!/usr/bin/env bash
# compare.sh DATA_DIR OUT_DIR [STEPS [SEED]] - docs/curriculum.md's comparison: the same model,
# steps and seed on the ten shared sources under the three policies (ucb1, uniform, fixed),
# then a table of each source's final validation loss, the overall (mean over sources) and
# each source's share of the training steps. Needs python3 for the table.
set -eu
D=${1:?usage: compare.sh DATA_DIR OUT_DIR [STEPS [SEED]]}
O=${2:?usage: compare.sh DATA_DIR OUT_DIR [STEPS [SEED]]}
STEPS=${3:-2000}
SEED=${4:-1337}
A=${ANDREA_BIN:-$(dirname "$0")/../../build/andrea}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O"
MODEL="--preset tiny --n-layer 2 --d-model 48 --n-head 4 --ctx 64 --seq 64 --batch 8"
for p in ucb1 uniform fixed; do
    [ -f "$O/$p/log.jsonl" ] && grep -q "\"type\":\"eval\",\"step\":$STEPS," "$O/$p/log.jsonl" && continue
    "$HERE/shared_manifest.sh" "$D" "$O/$p.json" "$p" > /dev/null
    rm -rf "${O:?}/$p"
    "$A" train --manifest "$O/$p.json" $MODEL --max-steps "$STEPS" --eval-every 500 --eval-batches 16 \
        --sample-every 0 --seed "$SEED" -t 1 -q -o "$O/$p"
done
python3 - "$O" "$STEPS" <<'PY'
import json, sys, collections
out, steps = sys.argv[1], int(sys.argv[2])
runs = {}
for p in ("ucb1", "uniform", "fixed"):
    val, share, overall = {}, collections.Counter(), None
    for line in open(f"{out}/{p}/log.jsonl"):
        d = json.loads(line)
        if d["type"] == "eval_source" and d["step"] == steps: val[d["source"]] = d["val_loss"]
        if d["type"] == "eval" and d["step"] == steps: overall = d["val_loss"]
        if d["type"] == "batch": share[d["source"]] += 1
    runs[p] = (val, share, overall)
names = list(runs["ucb1"][0])
print("| source | " + " | ".join(f"{p} val | {p} share" for p in runs) + " |")
print("|---|" + "---:|---:|" * len(runs))
for n in names:
    print(f"| {n} | " + " | ".join(f"{runs[p][0][n]:.4f} | {100 * runs[p][1][n] / steps:.1f}%" for p in runs) + " |")
print("| **overall (mean)** | " + " | ".join(f"**{runs[p][2]:.4f}** | 100%" for p in runs) + " |")
PY
