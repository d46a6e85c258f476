#!/usr/bin/env bash
# gate_scores.sh - the tables of docs/coherence-gate.md: every sample of the calibration
# classes (tests/gate_samples.py: real prose, dialogue, chat answers, dictionary
# definitions; word salads, shuffled prose, loops, random bytes and letters) with the
# honest gate's five factors, its total and the course's; then, given a training log, the
# trainer's own samples of that run by step.
#   bench/gate_scores.sh [ANDREA_BIN] [DATA_DIR] [LOG.jsonl]
# (defaults: build/andrea, ../shared/data; without DATA_DIR the real classes come from
# the fortunes text). Seeded: the same table every run.
set -eu
A=${1:-build/andrea}
D=${2:-../shared/data}
LOG=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
text=$D/tinyshakespeare.txt
if [ ! -f "$text" ]; then
    text=$T/fortunes.txt
    find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -print0 |
        sort -z | xargs -0 cat | grep -v '^%$' > "$text"
fi
mkdir -p "$T/s"
python3 "$(dirname "$0")/../tests/gate_samples.py" "$T/s" "$text" "$D"
"$A" score --json "$T"/s/*.txt > "$T/h.jsonl"
"$A" score --json --gate course "$T"/s/*.txt > "$T/c.jsonl"
echo "| sample | bytes | dict | repeat | charset | common | order | honest (default) | course |"
echo "|---|---|---|---|---|---|---|---|---|"
python3 "$(dirname "$0")/gate_table.py" scores "$T/h.jsonl" "$T/c.jsonl"
if [ -n "$LOG" ]; then
    echo
    echo "| step | val loss | dict | repeat | charset | common | order | honest | counted |"
    echo "|---|---|---|---|---|---|---|---|---|"
    python3 "$(dirname "$0")/gate_table.py" log "$LOG"
fi
