#!/usr/bin/env bash
# grow.sh DATA_DIR OUT_DIR [MAX_STEPS] [PRESET] - the published growth run of issue 28 (item 4)
# (docs/growth/ holds its report, plots and samples): a model like ANDREA grown on the shared sources with the Harris
# tokenizer, the UCB1 curriculum, the coherence gate, checkpoints and plots, and a uniform-policy
# run of the same budget to compare the validation loss per source.
#   DATA_DIR  ../shared/data (books, tinyshakespeare, OASST chats, the WordNet dictionary)
#   OUT_DIR   where the tokenizer, manifests, token files, both runs and their reports go
#   MAX_STEPS 3000 by default; PRESET andrea-12m (measure first: --max-steps 20 prints s/step,
#             and pick the budget that fits the hour, or a smaller preset such as baby)
# Environment: ANDREA (the binary, build/andrea), THREADS (per run, 2), TOGETHER=1 runs the two
# policies at once (one thread each is fair on 2 cores: both see the same machine load), and
# EVAL_BATCHES (8 per source: the whole held-out split is 339k tokens, 4 minutes per evaluation
# on 2 cores, where 8 batches of 12 x 64 per source take about 30 s).
# The sources are examples/curriculum/shared_manifest.sh's ten, in ANDREA's shapes: the
# dictionary as `> define X` / `< X (pos): ...` turns, chats as user/assistant turns, books
# and Shakespeare as paragraph blocks. Each step: the time, tokens seen and per-source
# validation are in OUT_DIR/*/report.html.
set -eu
D=${1:?usage: grow.sh DATA_DIR OUT_DIR [MAX_STEPS] [PRESET]}
OUT=${2:?usage: grow.sh DATA_DIR OUT_DIR [MAX_STEPS] [PRESET]}
STEPS=${3:-3000}
PRESET=${4:-andrea-12m}
A=${ANDREA:-build/andrea}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
# 1. the Harris tokenizer (N = 2048: V = 2305, the ANDREA-12M card's) on books + Shakespeare
[ -f "$OUT/harris.tok" ] || { cat "$D/gutenberg_books.txt" "$D/tinyshakespeare.txt" > "$OUT/corpus.txt";
    "$A" tokenizer train -k harris -i "$OUT/corpus.txt" -N 2048 -o "$OUT/harris.tok" \
        --json "$OUT/harris_segments.json"; }
# 2. the manifests (UCB1 and uniform), tokenized once
for policy in ucb1 uniform; do
    bash "$HERE/../curriculum/shared_manifest.sh" "$D" "$OUT/$policy.json" "$policy"
    "$A" prepare --manifest "$OUT/$policy.json" -t "$OUT/harris.tok" -o "$OUT/prep-$policy" -q
done
# 3. the two runs, the same budget and seed; the gate samples every 100 steps (420 tokens)
THREADS=${THREADS:-2}
EVAL_BATCHES=${EVAL_BATCHES:-8}
grow() { # POLICY: one run, its plots and report
    /usr/bin/time -v "$A" train --manifest "$OUT/prep-$1/manifest.json" --preset "$PRESET" \
        --max-steps "$STEPS" --eval-every 250 --eval-batches "$EVAL_BATCHES" --sample-every 100 \
        --ckpt-every 100 --keep-last 3 --seed 1 -t "$THREADS" -o "$OUT/$1" \
        > "$OUT/$1.out" 2> "$OUT/$1.time"
    "$A" plot "$OUT/$1" && "$A" report "$OUT/$1"
}
if [ "${TOGETHER:-0}" = 1 ]; then
    grow ucb1 & pid=$!
    grow uniform || { wait $pid; exit 1; }
    wait $pid
else
    grow ucb1
    grow uniform
fi
# 4. a page of samples: definitions, chat answers, prose, from the UCB1 run's best state
{
    for w in trust river honest; do "$A" generate -m "$OUT/ucb1/best.bin" -p "> define $w
< " -n 60 --seed 1 -t "$THREADS"; echo; done
    for q in "How do I boil an egg?" "What is a star?"; do "$A" generate -m "$OUT/ucb1/best.bin" -p "> $q
< " -n 120 --seed 1 -t "$THREADS"; echo; done
    "$A" generate -m "$OUT/ucb1/best.bin" -p "It was a dark and stormy night" -n 300 --seed 1 -t "$THREADS"
} > "$OUT/samples.txt" 2>&1
echo "grow.sh: done; compare $OUT/ucb1/report.html and $OUT/uniform/report.html"
