#!/usr/bin/env bash
# The coherence gate's score table (docs/coherence-gate.md): six samples of each class of
# tests/gate_samples.py through `andrea score`. Real prose, dialogue, chat answers and
# dictionary definitions must score 60 or more on the honest gate (the default); word
# salads, shuffled prose, a phrase x 20, a paragraph said twice, random bytes and random
# letters under 30. Without ../shared the real classes come from the fortunes text.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_gate
command -v python3 > /dev/null || { echo "skip: no python3" >&2; exit 77; }
need_text TXT
mkdir -p "$T/s"
python3 "$(dirname "$0")/gate_samples.py" "$T/s" "$TXT" "${ANDREA_DATA_DIR:-}" || fail "gate_samples.py"
"$A" score --json "$T"/s/*.txt > "$T/honest.jsonl" || fail "score (honest)"
"$A" score --json --gate course "$T"/s/*.txt > "$T/course.jsonl" || fail "score (course)"
# class, min, max of the honest total, and the course's max, one line per class
summary() {
    paste -d' ' <(sed 's/.*"file":"[^"]*\/\([a-z_0-9]*\)_[0-9]*\.txt".*"total":\([0-9.]*\).*/\1 \2/' "$T/honest.jsonl") \
                <(sed 's/.*"total":\([0-9.]*\).*/\1/' "$T/course.jsonl") |
        awk '{ n[$1]++; if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2; if ($2 > hi[$1]) hi[$1] = $2;
               if ($3 > ch[$1]) ch[$1] = $3; if (!($1 in cl) || $3 < cl[$1]) cl[$1] = $3 }
             END { for (c in n) printf "%s %d %.1f %.1f %.1f %.1f\n", c, n[c], lo[c], hi[c], cl[c], ch[c] }' | sort
}
echo "| class | samples | honest min | honest max | course min | course max |"
echo "|---|---|---|---|---|---|"
summary | while read -r c n lo hi clo chi; do echo "| $c | $n | $lo | $hi | $clo | $chi |"; done
while read -r c n lo hi clo chi; do
    [ "$n" -ge 5 ] || fail "$c: only $n samples"
    case "$c" in
    prose|dialogue|chat|definitions)
        awk -v x="$lo" 'BEGIN { exit !(x >= 60) }' && pass "$c: every sample >= 60 (lowest $lo)" || fail "$c: lowest $lo < 60";;
    *)
        awk -v x="$hi" 'BEGIN { exit !(x < 30) }' && pass "$c: every sample < 30 (highest $hi; course up to $chi)" || fail "$c: highest $hi >= 30";;
    esac
done < <(summary)
classes=$(summary | wc -l)
[ "$classes" -ge 8 ] && pass "$classes classes" || fail "only $classes classes"
finish
