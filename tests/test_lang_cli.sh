#!/usr/bin/env bash
# `--lang id` leaves no English sentence (issue 26): the text reports of `andrea attention`
# and `andrea explain`, their notices, their errors and the HTML page are scanned for
# English words that a translation would have replaced (the lesson keeps query, key,
# value, head, layer, softmax, dot product and loss in English; those are allowed); also
# the experiment's report and page, and the flag parser's and model opening's errors.
# The strings the issue named: no "rata2", "periksa:", "PASS", "praktis -inf", "dikali ",
# "peluang acak", "Dari Skor ke Output." glued to a sentence, "perhatian andrea", and one
# number style (1 048 576, never 1.048.576).
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 2 --val-fraction 0.2 -q -o "$T/m" > /dev/null || fail "training a tiny model failed"
ck="$T/m/ckpt.bin"

# English words no Indonesian sentence of ours contains (whole words, case-insensitive)
ENGLISH='the|of|and|with|without|is|are|from|this|each|every|rows?|sums?|checks?|statistics|entropy|weights?|wrote|pass|fail(ed)?|over|above|below|exactly|shown|uniform|would|use|only|need|give|empty|shorten|allowed|outside|range|note|tokens|scores?|random|claim|walking|numbers|matrix|previous|first|self|broad|mixed|masked|scaled|raw'
scan() { # NAME FILE: no English word in FILE (the temp folder's path is not ours: a clone
    local hits    # under /check/... once made 'check' a hit)
    sed "s#$T##g" "$2" > "$2.nopath"
    hits=$(grep -ioEw "$ENGLISH" "$2.nopath" | sort | uniq -c | sort -rn | head -8 | tr -s ' \n' ' ')
    [ -z "$hits" ] && pass "$1: no English words" || fail "$1: English words left: $hits ($(grep -iEw "$ENGLISH" "$2.nopath" | head -2))"
}
# identifiers the report prints as they are (file names, C names, formulas) leave the scan
clean() { sed -E -e "s/'[^']*'//g" -e 's/andrea_[a-z_]+//g' -e 's/masked\[i\]\[j\]//g' \
    -e 's/softmax\([^)]*\)+//g' "$1"; }

"$A" explain --lang id > "$T/explain.txt" 2> "$T/explain.err" || fail "explain --lang id exited non-zero"
clean "$T/explain.txt" > "$T/explain.clean"
scan "explain --lang id" "$T/explain.clean"
"$A" attention -m "$ck" -p 'To be, or' --layer 1 --views raw,scaled,masked,softmax --lang id \
    --html "$T/a.html" --json "$T/a.json" > "$T/attn.txt" 2> "$T/attn.err" || fail "attention --lang id exited non-zero"
cat "$T/attn.txt" "$T/attn.err" | clean /dev/stdin > "$T/attn.clean"
scan "attention --lang id" "$T/attn.clean"
"$A" attention -m "$ck" -p "$(printf 'abcdefghij%.0s' 1 2 3)" --lang id > "$T/long.txt" 2>&1 || fail "long prompt"
clean "$T/long.txt" > "$T/long.clean"
scan "attention --lang id, T = 30" "$T/long.clean"
grep -q 'pemeriksaan: setiap baris berjumlah 1' "$T/attn.txt" && pass "per-head check line in Indonesian" || fail "per-head check line: $(grep -m1 baris "$T/attn.txt")"
grep -q 'LULUS' "$T/attn.txt" && grep -q 'LULUS' "$T/explain.txt" && pass "LULUS, not PASS" || fail "no LULUS"
grep -q 'statistik per head' "$T/attn.txt" && pass "statistics header in Indonesian" || fail "statistics header"

# the experiment's report and page (a few steps: only its words are checked here)
"$A" explain --experiment scale --data "$T/small.txt" --seq 16 --steps 10 --lang id --html "$T/sx.html" > "$T/sx.txt" 2>&1
sed -E "s/'[^']*'//g" "$T/sx.txt" > "$T/sx.clean"
scan "explain --experiment scale --lang id" "$T/sx.clean"
sed -E -e 's/<[^>]*>/ /g' -e "s/'[^']*'//g" "$T/sx.html" > "$T/sxh.clean"
scan "the experiment's page in Indonesian" "$T/sxh.clean"

# the strings the issue named
for bad in 'rata2' 'periksa:' 'PASS' 'praktis -inf' 'dikali ' 'peluang acak' 'Output\. Dari' '1\.048\.576' 'semua [0-9]+ head'; do
    if grep -qE "$bad" "$T/explain.txt" "$T/attn.txt"; then fail "'$bad' is still there"; else pass "no '$bad'"; fi
done
grep -q '1024 x 1024 = 1 048 576' "$T/explain.txt" && pass "numbers grouped with spaces (1 048 576)" || fail "1 048 576 missing"
grep -q 'Jumlah V Tertimbang' "$T/explain.txt" && grep -q 'Mengapa Membagi dengan sqrt(d_k)' "$T/explain.txt" \
    && pass "the lesson's headings as step titles" || fail "step titles"
grep -q 'kedua head berjalan paralel' "$T/explain.txt" && pass "'kedua head' (not 'semua 2 head')" || fail "all-heads wording"

# the page: title, texts, no doubled brackets, and the value's word
grep -q '"page.title":"andrea: peta attention"' "$T/a.html" && pass "page title" || fail "page title"
grep -q '<title>andrea: peta attention</title>' "$T/a.html" && pass "page <title> in Indonesian" || fail "<title>: $(grep -o '<title>[^<]*' "$T/a.html")"
grep -q '"page.value":"angka"' "$T/a.html" && grep -q '"page.minus_inf":"−∞ (dimask)"' "$T/a.html" && pass "hover: angka, −∞ (dimask)" || fail "hover texts"
grep -q '"page.cv_v":"[^"]*Dari Skor' "$T/a.html" && fail "lesson heading glued onto page.cv_v" || pass "page.cv_v is one sentence"
python3 - "$T/a.html" <<'PY' || fail "page texts hold English (above)"
import json, re, sys
html = open(sys.argv[1]).read()
tx = json.loads(re.search(r'id="andrea-text">\s*(\{.*?\})\s*</script>', html, re.S).group(1))
eng = re.compile(r'\b(the|of|and|with|without|is|are|each|every|rows?|sums?|click|weights?|masked|scaled|future)\b', re.I)
bad = {k: v for k, v in tx.items() if eng.search(re.sub(r'`[^`]*`', '', v))}
for k, v in bad.items(): print("English in", k, ":", v)
sys.exit(1 if bad else 0)
PY

# errors and notices, one line each, in Indonesian
expect_error "range" "di luar jangkauan" "$A" attention -m "$ck" -p 'ab' --layer 9 --lang id
expect_error "empty prompt" "prompt kosong" "$A" attention -m "$ck" -p '' --lang id
expect_error "need" "perlu model dan prompt" "$A" attention --lang id
expect_error "max-mb" "harus > 0" "$A" attention -m "$ck" -p 'ab' --max-mb 0 --lang id
expect_error "explain layer" "di luar model" "$A" explain --layer 5 --lang id
expect_error "explain long prompt" "prompt berisi 20 token" "$A" explain -p 'abcdefghijklmnopqrst' --lang id
"$A" attention -m "$ck" -p "$(head -c 31 "$T/small.txt" | tr -d '\n')" --html "$T/b.html" --max-mb 0.25 --matrices 0 --lang id > /dev/null 2> "$T/note.err" || fail "narrowed export failed: $(cat "$T/note.err")"
grep -q 'catatan: .*hanya layer 0' "$T/note.err" && pass "the size guard's note in Indonesian" || fail "guard note: $(cat "$T/note.err")"
scan "attention notices" "$T/note.err"
# the flag parser and model opening speak the command's --lang too
expect_error "unknown flag" "flag '--bogus' tidak dikenal" "$A" attention --bogus --lang id
expect_error "bad number" "--layer harus bilangan bulat, bukan 'x'" "$A" explain --lang=id --layer x
expect_error "no model file" "berkas model '$T/none.bin' tidak ada" "$A" attention -m "$T/none.bin" -p ab --lang id
expect_error "not a model" "tidak dapat dipakai sebagai model" "$A" explain -m "$T/small.txt" --lang id
expect_error "English stays English" "unknown flag '--bogus'" "$A" attention --bogus
finish
