#!/usr/bin/env bash
# `andrea attention` and `andrea explain` from the outside: the text report
# (labels, row sums, PASS check lines), JSON on stdout, clean errors for bad
# flags, and explain's step-by-step checks passing on a toy model and on a
# (briefly) trained checkpoint.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 60) > "$T/small.txt"
"$A" train --data "$T/small.txt" --preset tiny --seq 16 --batch 2 --max-steps 5 --val-fraction 0.2 -q -o "$T/m" > /dev/null || fail "training a tiny model failed"
ck="$T/m/ckpt.bin"

# text report of one head: labels on rows and columns, row sums, check lines
out=$("$A" attention -m "$ck" -p 'To be, or' --layer 1 --head 0 --views raw,masked,softmax) || fail "attention exited non-zero"
echo "$out" | grep -q '^== layer 1 head 0 | softmax ==' && pass "softmax matrix printed" || fail "no softmax matrix: $out"
echo "$out" | grep -q '^== layer 1 head 0 | raw ==' && pass "raw matrix printed" || fail "no raw matrix"
echo "$out" | grep -q -- '-inf' && pass "masked view shows -inf" || fail "masked view lacks -inf"
[ "$(echo "$out" | grep -c '| 1.000000$')" -eq 9 ] && pass "9 rows, each summing to 1.000000" || fail "row sums: $out"
echo "$out" | grep -q '^check: rows sum to 1 .*PASS | above the diagonal exactly 0 (36 entries, 0 not 0): PASS' \
    && pass "per-head check line" || fail "per-head check line missing"
echo "$out" | grep -q '␣' && pass "space shown as an open box" || fail "space label missing"
for what in 'rows of A sum to 1' 'exactly 0 above the diagonal' "exported numbers are the engine's"; do
    echo "$out" | grep -q "$what.*PASS" && pass "summary: $what" || fail "summary line '$what' not PASS"
done
echo "$out" | grep -q '^    1    0 ' && pass "statistics row for layer 1 head 0" || fail "statistics table missing"
[ "$(echo "$out" | grep -c '^== layer')" -eq 3 ] && pass "only the selected head" || fail "selection ignored"

# long prompts: no matrices, still statistics and checks
out=$("$A" attention -m "$ck" -p 'abcdefghijklmnopqrstuvwxyz0123') || fail "long prompt failed"
echo "$out" | grep -q 'shown for T <= 24' && pass "long prompt: matrices skipped with a note" || fail "long prompt note"
[ "$(echo "$out" | grep -cE '^ +[0-9]+ +[0-9]+ +[0-9.]+ ')" -eq 4 ] && pass "4 statistics rows (2 layers x 2 heads)" || fail "stats rows: $out"

# JSON to stdout is valid JSON and holds what was asked
"$A" attention -m "$ck" -p 'hi there' --json - --views softmax,masked > "$T/a.json" 2> "$T/a.err" || fail "--json - failed"
if command -v python3 > /dev/null; then
    python3 - "$T/a.json" <<'PY' && pass "JSON parses; rows sum to 1; masked is null above the diagonal" || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "andrea-attention" and d["T"] == 8 and len(d["heads"]) == 4
for h in d["heads"]:
    A, M = h["softmax"], h["masked"]
    for i in range(8):
        assert abs(sum(A[i]) - 1) < 1e-5
        for j in range(i + 1, 8):
            assert A[i][j] == 0 and M[i][j] is None
    assert "raw" not in h and 0 <= h["first_token_weight"] <= 1
PY
fi
grep -q '^attention: model' "$T/a.err" && pass "--json -: the banner goes to stderr" || fail "banner not on stderr"

# errors
expect_error "no prompt" "need a model and a prompt" "$A" attention -m "$ck"
expect_error "bad view" "unknown attention view 'probs'" "$A" attention -m "$ck" -p x --views softmax,probs
expect_error "layer out of range" "--layer 2 is out of range (the model has 2" "$A" attention -m "$ck" -p x --layer 2
expect_error "head out of range" "--head -2 is out of range" "$A" attention -m "$ck" -p x --head -2
long=$(printf 'x%.0s' $(seq 1 40))
expect_error "prompt beyond context" "the prompt is 40 tokens, more than the 32 allowed" "$A" attention -m "$ck" -p "$long"
expect_error "empty prompt" "the prompt is empty" "$A" attention -m "$ck" -p ''
expect_error "missing checkpoint" "cannot open checkpoint" "$A" attention -m "$T/none.bin" -p x
expect_error "unwritable html" "cannot create '$T/no/such/dir/a.html'" "$A" attention -m "$ck" -p x --matrices 0 --html "$T/no/such/dir/a.html"

# BOS first
"$A" attention -m "$ck" -p 'ab' --bos --layer 0 --head 0 | grep -q '^<BOS>' && pass "--bos labels the first row <BOS>" || fail "--bos"

# explain: every check passes, on the toy model and on the checkpoint
out=$("$A" explain) && pass "explain (toy model) exits 0" || fail "explain (toy) failed: $out"
echo "$out" | grep -q 'FAIL' && fail "explain printed FAIL"
n=$(echo "$out" | grep -c ': PASS$'); [ "$n" -ge 15 ] && pass "explain: $n checks passed" || fail "explain: only $n PASS lines"
for step in '^1\. Query, key and value: Q = x W_Q' '^2\. The score matrix: S = Q K\^T' '^3\. Why divide by sqrt(d_k)' '^4\. The causal mask' '^5\. Softmax' '^6\. The weighted sum of V: output_i' '^7\. Per-head output: all 2 heads'; do
    echo "$out" | grep -q "$step" || fail "explain lacks step '$step'"
done
echo "$out" | grep -qE '^ +4096 +6[0-9]\.[0-9]+ +64\.000' && pass "explain measures d_k = 4096 -> ~64" || fail "d_k 4096 row"
out=$("$A" explain -m "$ck" -p 'To be' --layer 1 --head 1) && pass "explain -m CKPT exits 0" || fail "explain -m failed: $out"
expect_error "explain: prompt too long" "more than the 8 allowed" "$A" explain -p 'To be or not'
expect_error "explain: bad layer" "--layer 7 --head 0 is outside the model" "$A" explain --layer 7
# issue 15: the walked head's own columns of the concatenation, the new claims, --lang id
out=$("$A" explain -m "$ck" -p 'To be' --layer 1 --head 1)
echo "$out" | grep -q 'concatenated heads, columns 16\.\.23 (head 1' && pass "explain shows head 1's columns 16..23 of the concatenation (d_k 16)" || fail "concat columns: $(echo "$out" | grep concatenated)"
echo "$out" | grep -qE '^explain: 30 checks, 30 passed, 0 failed$' && pass "explain -m: 30 checks" || fail "explain -m summary: $(echo "$out" | tail -1)"
for claim in 'without the mask the training loss falls' 'same bits (0 differ)' '1024 x 1024 = 1,048,576' 'gradient through the softmax' 'layer 1 head 1: '; do
    echo "$out" | grep -q "$claim" || fail "explain lacks '$claim'"
done
out=$("$A" explain --lang id) && pass "explain --lang id exits 0" || fail "explain --lang id failed"
echo "$out" | grep -qE '^explain: 30 pemeriksaan, 30 lulus, 0 gagal$' && echo "$out" | grep -qi 'mask kausal' \
    && echo "$out" | grep -q 'jalan pintas' && pass "explain --lang id: the lesson's words, 30 checks" || fail "explain --lang id: $(echo "$out" | tail -2)"
expect_error "explain: unknown language" "unknown language 'fr'" "$A" explain --lang fr
expect_error "attention: unknown language" "unknown language 'fr'" "$A" attention -m "$ck" -p x --lang fr
finish
