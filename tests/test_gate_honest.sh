#!/usr/bin/env bash
# The honest gate (the default of `andrea score` and of training) against the issue's
# kinds of text: random letters, random bytes, the andrea binary and a 100-step byte
# model's samples below 30; English prose and chat answers far above; loops below. The
# course's formula (--gate course) passes the first four, as the issue measured. Then in
# training: samples are the full --sample-tokens on a small context, failing ones are
# marked (printed whole only when counted toward a halt: tests/test_gate_halt.sh), and the
# gate is not armed before its step.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_gate
total() { "$A" score --json "$@" | sed 's/.*"total":\([0-9.]*\).*/\1/'; }
below() { # NAME FILE: honest < 30 (and the course's score, for the record)
    local h c; h=$(total "$2"); c=$(total --gate course "$2")
    awk -v t="$h" 'BEGIN { exit !(t < 30) }' && pass "$1: honest $h < 30 (course $c)" || fail "$1: honest $h"
}
above() { # NAME FILE: honest >= 80
    local h; h=$(total "$2")
    awk -v t="$h" 'BEGIN { exit !(t >= 80) }' && pass "$1: honest $h >= 80" || fail "$1: honest $h: $(head -c 300 "$2")"
}
LC_ALL=C tr -dc 'a-z ' < /dev/urandom | head -c 3000 > "$T/letters.txt"
head -c 3000 /dev/urandom > "$T/urandom.bin"
head -c 2000 "$A" > "$T/binary.bin"
below "random letters and spaces" "$T/letters.txt"
below "3000 bytes of /dev/urandom" "$T/urandom.bin"
below "first 2000 bytes of andrea" "$T/binary.bin"
c=$(total --gate course "$T/letters.txt")
awk -v t="$c" 'BEGIN { exit !(t >= 30) }' && pass "the course's formula passes random letters ($c): why it is not the default" || fail "course on letters: $c"
printf 'region %.0s' $(seq 1 100) > "$T/loop1.txt"
printf 'And so the lord went home to his house in the town. %.0s' $(seq 1 12) > "$T/loop2.txt"
printf 'abc%.0s' $(seq 1 140) > "$T/loop3.txt"
below "loop: region x 100" "$T/loop1.txt"
below "loop: a sentence x 12" "$T/loop2.txt"
below "loop: abc x 140 (no spaces)" "$T/loop3.txt"

# prose: Gutenberg paragraphs when ../shared is there, else fortunes (lib.sh)
G=${ANDREA_DATA_DIR:-}/gutenberg_books.txt
[ -f "$G" ] || need_text G
for n in 10 700 3000; do
    awk -v want=$n 'BEGIN { RS = ""; n = 0 } { if (split($0, l, "\n") >= 8 && ++n == want) { print; exit } }' "$G" > "$T/para_$n.txt"
    [ -s "$T/para_$n.txt" ] && above "paragraph $n of $(basename "$G")" "$T/para_$n.txt"
done
C=${ANDREA_DATA_DIR:-}/chat/oasst_en100_chats.jsonl
if [ -f "$C" ]; then
    python3 "$(dirname "$0")/chat_answers.py" "$C" "$T" 3
    for k in 1 2 3; do above "chat answer $k" "$T/chat_$k.txt"; done
fi

# a 100-step byte model (baby) and its samples; then the gate inside training
need_text TXT
head -c 400000 "$TXT" > "$T/text.txt"
"$A" train --data "$T/text.txt" --preset baby --max-steps 100 --sample-every 50 --gate-arm 75 \
    --eval-every 0 -t 1 -o "$T/m100" > "$T/train.out" || fail "training: $(tail -3 "$T/train.out")"
for s in 1 2; do
    "$A" generate -m "$T/m100/ckpt.bin" -n 420 --context-shift --seed $s -t 1 2> /dev/null > "$T/m100_$s.txt"
    below "100-step byte model, sample $s" "$T/m100_$s.txt"
done
# baby's context is 64 tokens: the samples are still 420 (context shift, on past BOS)
toks=$(grep '"type":"sample"' "$T/m100/log.jsonl" | sed 's/.*"tokens":\([0-9]*\).*/\1/' | sort -u)
[ "$toks" = 420 ] && pass "training samples are 420 tokens on a 64-token context" || fail "sample tokens: $toks"
grep -q 'FAIL (gate not armed yet)' "$T/train.out" && pass "step 50: failing, not armed (--gate-arm 75)" || fail "not-armed line"
grep -q 'step   100/100 .* FAIL (not a collapse: not counted)' "$T/train.out" \
    && pass "step 100: failing, armed, but young letter soup is no collapse: not counted" || fail "armed line"
[ "$(grep -c '^---- sample at step' "$T/train.out")" -eq 0 ] && pass "uncounted failing samples not printed whole" \
    || fail "uncounted samples printed"
grep -q '"gate":"honest","threshold":30,' "$T/m100/log.jsonl" && pass "log: gate and threshold per sample" || fail "log fields"
"$A" train --data "$T/text.txt" --preset tiny --max-steps 4 --sample-every 2 --sample-tokens 50 \
    --gate course --gate-arm 0 -t 1 -q -o "$T/course" > /dev/null || fail "--gate course run"
grep -q '"gate":"course"' "$T/course/log.jsonl" && pass "--gate course in training" || fail "--gate course"
expect_error "unknown gate" "expected honest or course" "$A" train --data "$T/text.txt" --preset tiny --gate fair -o "$T/x"
expect_error "score: unknown gate" "expected honest or course" "$A" score --gate fair "$T/loop1.txt"
finish
