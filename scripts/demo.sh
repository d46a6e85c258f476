#!/usr/bin/env bash
# demo.sh - the main job: build, train a small model on real English text, print a sample.
# Corpus: $1 if given, else ../shared/data/tinyshakespeare.txt, else Debian's fortunes.
# Environment: STEPS (1000), OUT (out/demo: checkpoints, log), ANDREA (build/andrea).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-1000}
OUT=${OUT:-out/demo}
ANDREA=${ANDREA:-build/andrea}
corpus=${1:-}
if [ -z "$corpus" ]; then
    if [ -f ../shared/data/tinyshakespeare.txt ]; then
        corpus=../shared/data/tinyshakespeare.txt
    elif [ -d /usr/share/games/fortunes ]; then
        corpus=out/fortunes.txt
        mkdir -p out
        # every plain-text fortune file, without the '%' separators
        find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' \
            -exec cat {} + | grep -v '^%$' > "$corpus"
    else
        echo "demo: no corpus: pass a text file, or install Debian's 'fortunes' package" >&2
        exit 1
    fi
fi
[ -x "$ANDREA" ] || scripts/build.sh
echo "demo: training the baby model (4 layers, 4 heads, d_model 128) on $corpus for $STEPS steps"
"$ANDREA" train --data "$corpus" --preset baby --max-steps "$STEPS" --log-every 100 \
    --eval-every 250 -o "$OUT"
echo "demo: sample from $OUT/best.bin"
"$ANDREA" generate -m "$OUT/best.bin" -p "${PROMPT:-The }" -n 400 --temp 0.8 --seed 42 --context-shift
