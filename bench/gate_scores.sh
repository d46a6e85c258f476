#!/usr/bin/env bash
# gate_scores.sh - the table of docs/coherence-gate.md: each kind of text the issue names,
# scored by the honest gate (the default) and by the course's formula.
#   bench/gate_scores.sh [ANDREA_BIN] [DATA_DIR]      (defaults: build/andrea, ../shared/data)
# Texts: random letters and spaces, 3000 bytes of /dev/urandom, the first 2000 bytes of the
# andrea binary, three 420-token samples of a 100-step byte model (baby preset, trained here
# on tinyshakespeare or the fortunes text, ~10 s), five Gutenberg paragraphs, five chat answers,
# loops. Random inputs differ per run; their scores move by a point or so.
set -eu
A=${1:-build/andrea}
D=${2:-../shared/data}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
field() { sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
verdict() { awk -v t="$1" 'BEGIN { print (t >= 30 ? "pass" : "**FAIL**") }'; }
row() { # NAME FILE
    local j h c
    j=$("$A" score --json "$2")
    h=$(echo "$j" | field total)
    c=$("$A" score --json --gate course "$2" | field total)
    local dl l
    dl=$(echo "$j" | field english_letters); l=$(echo "$j" | field letters)
    printf '| %s | %s | %.2f (%.2f) | %.2f | %.2f | %.1f %s | %.1f %s |\n' "$1" "$(wc -c < "$2")" \
        "$(awk -v a="$dl" -v b="$l" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$(echo "$j" | field dict)" \
        "$(echo "$j" | field repeat)" "$(echo "$j" | field charset)" \
        "$h" "$(verdict "$h")" "$c" "$(verdict "$c")"
}
text=$D/tinyshakespeare.txt
if [ ! -f "$text" ]; then
    text=$T/fortunes.txt
    find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -print0 |
        sort -z | xargs -0 cat | grep -v '^%$' > "$text"
fi
LC_ALL=C tr -dc 'a-z ' < /dev/urandom | head -c 3000 > "$T/letters.txt"
head -c 3000 /dev/urandom > "$T/urandom.bin"
head -c 2000 "$A" > "$T/binary.bin"
"$A" train --data "$text" --preset baby --max-steps 100 --sample-every 0 --eval-every 0 \
    -o "$T/m100" -q -t 1 > /dev/null
for s in 1 2 3; do
    "$A" generate -m "$T/m100/ckpt.bin" -n 420 --context-shift --seed "$s" -t 1 \
        2> /dev/null > "$T/m100_$s.txt"
done
printf 'region %.0s' $(seq 1 100) > "$T/loop_region.txt"
printf 'the king %.0s' $(seq 1 60) > "$T/loop_king.txt"
printf 'And so the lord went home to his house in the town. %.0s' $(seq 1 12) > "$T/loop_sentence.txt"
printf "'%.0s" $(seq 1 420) > "$T/loop_quotes.txt"
printf 'abc%.0s' $(seq 1 140) > "$T/loop_abc.txt"

echo "| text | bytes | dictionary letters (dict) | repeat | charset | honest (default) | course |"
echo "|---|---|---|---|---|---|---|"
row "random letters and spaces" "$T/letters.txt"
row "/dev/urandom" "$T/urandom.bin"
row "first 2000 bytes of andrea" "$T/binary.bin"
for s in 1 2 3; do row "100-step byte model, sample $s" "$T/m100_$s.txt"; done
if [ -f "$D/gutenberg_books.txt" ]; then
    for n in 10 200 700 1500 3000; do # the nth block of 8+ non-empty lines
        awk -v want=$n 'BEGIN { RS = ""; n = 0 } { if (split($0, l, "\n") >= 8 && ++n == want) { print; exit } }' \
            "$D/gutenberg_books.txt" > "$T/gut_$n.txt"
        row "Gutenberg paragraph $n" "$T/gut_$n.txt"
    done
fi
if [ -f "$D/chat/oasst_en100_chats.jsonl" ]; then
    python3 "$(dirname "$0")/../tests/chat_answers.py" "$D/chat/oasst_en100_chats.jsonl" "$T" 5
    for k in 1 2 3 4 5; do row "chat answer $k (oasst)" "$T/chat_$k.txt"; done
fi
head -c 3000 "$text" | tail -c 2000 > "$T/text.txt"
row "$(basename "$text"), 2000 bytes" "$T/text.txt"
row "loop: 'region' x 100" "$T/loop_region.txt"
row "loop: 'the king' x 60" "$T/loop_king.txt"
row "loop: one sentence x 12" "$T/loop_sentence.txt"
row "loop: a quote x 420" "$T/loop_quotes.txt"
row "loop: 'abc' x 140" "$T/loop_abc.txt"
