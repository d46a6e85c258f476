#!/usr/bin/env bash
# `andrea score`: the lesson's failure modes score below 30, a paragraph of a
# Gutenberg book above 60; --fail-below sets the exit code; clear errors.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
if [ ! -r /usr/share/dict/american-english ] && [ -z "${ANDREA_WORDS:-}" ]; then
    echo "skip: no word list (apt-get install wamerican)" >&2; exit 77
fi
total() { sed -n 's/^  total *\([0-9.]*\) .*/\1/p'; }

printf 'region %.0s' $(seq 1 100) > "$T/region.txt"
t=$("$A" score "$T/region.txt" | total)
awk -v t="$t" 'BEGIN { exit !(t < 30) }' && pass "'region region ...' scores $t < 30" || fail "'region region ...' scores $t"
printf "''''''''" > "$T/quotes.txt"
t=$("$A" score "$T/quotes.txt" | total)
awk -v t="$t" 'BEGIN { exit !(t < 30) }' && pass "\"''''''''\" scores $t < 30" || fail "quotes score $t"
printf '... %.0s' $(seq 1 80) | "$A" score - > "$T/dots.out" || fail "score - failed"
t=$(total < "$T/dots.out")
awk -v t="$t" 'BEGIN { exit !(t < 30) }' && pass "'... ... ...' from stdin scores $t < 30" || fail "dots score $t"

# a paragraph of a Gutenberg book; without ../shared, of the fortunes text (lib.sh)
G=${ANDREA_DATA_DIR:-}/gutenberg_books.txt
[ -f "$G" ] || need_text G
# a paragraph: the 10th block of 8+ non-empty lines
awk 'BEGIN { RS = ""; n = 0 } { if (split($0, l, "\n") >= 8 && ++n == 10) { print; exit } }' "$G" > "$T/para.txt"
[ -s "$T/para.txt" ] || fail "no paragraph found in $G"
t=$("$A" score "$T/para.txt" | total)
awk -v t="$t" 'BEGIN { exit !(t > 60) }' && pass "a Gutenberg paragraph ($(wc -w < "$T/para.txt") words) scores $t > 60" || fail "paragraph scores $t: $(cat "$T/para.txt")"

# the four parts are printed, and the JSON form agrees with the table
out=$("$A" score "$T/para.txt")
for part in 'bigram diversity' 'trigram diversity' 'English words' 'character variety'; do
    echo "$out" | grep -q "$part" || fail "no '$part' line"
done
"$A" score --json "$T/region.txt" | grep -q '"pass":false' && pass "--json reports pass:false" || fail "--json"

# --fail-below: exit 1 under the bar, 0 over it
"$A" score --fail-below 30 "$T/region.txt" > /dev/null; [ $? -eq 1 ] && pass "--fail-below 30: exit 1 for repetition" || fail "--fail-below exit code (repetition)"
"$A" score --fail-below 30 "$T/para.txt" > /dev/null && pass "--fail-below 30: exit 0 for prose" || fail "--fail-below exit code (prose)"
"$A" score "$T/region.txt" > /dev/null && pass "without --fail-below: exit 0 even when failing" || fail "exit code without --fail-below"

# several files: one JSON line each, in order; --fail-below fails when any is under
[ "$("$A" score --json "$T/para.txt" "$T/region.txt" | sed 's/.*"file":"\([^"]*\)".*"pass":\([a-z]*\).*/\1 \2/' | tr '\n' ' ')" = \
  "$T/para.txt true $T/region.txt false " ] && pass "two files: one JSON line each" || fail "two files"
"$A" score --fail-below 30 "$T/para.txt" "$T/region.txt" > /dev/null; [ $? -eq 1 ] && pass "--fail-below: exit 1 when one of two is under" || fail "--fail-below with two files"
printf 'the the cat\n' > "$T/tiny_ref.txt"
expect_error "reference too small" "reference text has 3 words; it needs 50000" "$A" score --reference "$T/tiny_ref.txt" "$T/para.txt"
expect_error "missing reference" "cannot read the reference text '$T/noref'" "$A" score --reference "$T/noref" "$T/para.txt"
expect_error "missing file" "cannot open '$T/none.txt'" "$A" score "$T/none.txt"
expect_error "no file" "give the text files" "$A" score
expect_error "missing word list" "cannot read the word list '$T/nowords'" "$A" score --words "$T/nowords" "$T/para.txt"
expect_error "bad threshold" "--fail-below must be between 0 and 100" "$A" score --fail-below 300 "$T/para.txt"
finish
