#!/usr/bin/env bash
# Chat and sampling: a scripted session produces one '< ' reply per '> ' turn,
# replies end at the stop string, over-long messages get a clear message, and
# generate's --stop, --logprobs, --min-p and --repeat-penalty work end to end; and
# generate as llama.cpp users expect it (issue 15): --stop escapes, -f FILE, --logprobs N,
# sampler errors naming the flag, a sliding window by default, long prompts cut.
. "$(dirname "$0")/lib.sh"
need_text data
A="$ANDREA_BIN"; T="$ANDREA_TMP"
head -c 300000 "$data" > "$T/text.txt"
"$A" train --data "$T/text.txt" --preset tiny --ctx 96 --seq 32 --batch 8 --max-steps 150 --lr 3e-3 \
    --warmup 10 --eval-every 0 --eval-batches 5 --sample-every 0 -q -t 2 -o "$T/m" || fail "train"
M="$T/m/ckpt.bin"

printf 'Good morrow\nWhat news?\n' | "$A" chat -m "$M" -n 40 --seed 1 --stop e > "$T/chat.out" 2> "$T/chat.err" || fail "chat exited non-zero"
[ "$(grep -c '^> ' "$T/chat.out")" -eq 2 ] && [ "$(grep -c '^< ' "$T/chat.out")" -eq 2 ] \
    && pass "two turns, two replies: $(tr '\n' '|' < "$T/chat.out" | head -c 120)" || fail "turns: $(cat "$T/chat.out")"
grep '^< ' "$T/chat.out" | cut -c3- | grep -q e && fail "a reply contains the stop string 'e'" || pass "replies end before the stop string"
grep -q "seed 1" "$T/chat.err" && grep -q "sampler: repeat-penalty" "$T/chat.err" && pass "seed and sampler order printed" || fail "chat header: $(cat "$T/chat.err")"
printf 'Good morrow\nWhat news?\n' | "$A" chat -m "$M" -n 40 --seed 1 --stop e > "$T/chat2.out" 2>/dev/null
cmp -s "$T/chat.out" "$T/chat2.out" && pass "same seed, same conversation" || fail "chat not reproducible"
long=$(head -c 200 "$T/text.txt" | tr '\n' ' ')
printf '%s\nhi\n' "$long" | "$A" chat -m "$M" -n 10 --seed 1 > "$T/chat3.out" 2> "$T/chat3.err"
grep -q "does not fit the model's context of 96" "$T/chat3.err" && pass "over-long message: clear message, chat goes on" || fail "long message: $(cat "$T/chat3.err")"
[ "$(grep -c '^< ' "$T/chat3.out")" -eq 1 ] && pass "the next turn is answered" || fail "after long message: $(cat "$T/chat3.out")"
# many turns: the oldest are dropped to fit
for i in $(seq 1 12); do echo "turn number $i"; done | "$A" chat -m "$M" -n 8 --seed 2 > "$T/chat4.out" 2> "$T/chat4.err"
grep -q "context full: dropped the" "$T/chat4.err" && [ "$(grep -c '^< ' "$T/chat4.out")" -eq 12 ] \
    && pass "12 turns in a 96-token context: oldest turns dropped, every turn answered" || fail "long chat: $(cat "$T/chat4.err")"

# generate: stop string, logprobs, min-p, repeat penalty
out=$("$A" generate -m "$M" -p "KING" -n 60 --seed 4 --stop "o" 2>/dev/null)
[[ "${out#KING}" != *o* ]] && pass "generate --stop: '${out:0:30}'" || fail "generate --stop printed past 'o': $out"
"$A" generate -m "$M" -p "KING" -n 20 --seed 4 --logprobs "$T/lp.jsonl" > /dev/null 2>&1
n=$(grep -c '"logprob":-' "$T/lp.jsonl"); [ "$n" -eq 20 ] && pass "--logprobs: 20 lines" || fail "--logprobs lines: $n"
"$A" generate -m "$M" -p "KING" -n 30 --seed 4 --min-p 0.2 --repeat-penalty 1.3 --top-k 20 --top-p 0.9 > /dev/null 2> "$T/gen.err" \
    && grep -q "repeat-penalty 1.3 (last 64) -> temp 0.8 -> top-k 20 -> top-p 0.9 -> min-p 0.2" "$T/gen.err" \
    && pass "sampler chain printed in order" || fail "sampler flags: $(cat "$T/gen.err")"
# issue 15: the window slides by default (llama.cpp's behaviour); --no-context-shift stops
"$A" generate -m "$M" -p "KING" -n 200 --seed 4 --no-context-shift > /dev/null 2> "$T/full.err"
grep -q "stopped: context full" "$T/full.err" && pass "--no-context-shift: stops when the 96-token context is full" || fail "context full: $(cat "$T/full.err")"
"$A" generate -m "$M" -p "KING" -n 200 --seed 4 > "$T/slide.out" 2> "$T/slide.err"
grep -q "stopped: n-predict | 200 tokens" "$T/slide.err" && grep -q "note: prompt (4 tokens) + -n 200 exceed the context of 96: when it is full the window slides" "$T/slide.err" \
    && pass "by default: 200 tokens from a 96-token context, with a notice" || fail "default slide: $(cat "$T/slide.err")"
"$A" generate -m "$M" -p "KING" -n 200 --seed 4 --context-shift > "$T/shift.out" 2> "$T/shift.err"
grep -q "stopped: n-predict | 200 tokens" "$T/shift.err" && [ "$(wc -c < "$T/shift.out")" -ge 200 ] \
    && pass "--context-shift: 200 tokens from a 96-token context" || fail "context shift: $(cat "$T/shift.err")"
cmp -s "$T/slide.out" "$T/shift.out" && pass "the default slide is --context-shift's output" || fail "default slide differs from --context-shift"
expect_error "bad min-p" "min-p" "$A" generate -m "$M" --min-p 1.5

# issue 15: generation as llama.cpp users expect it
expect_error "sampler errors name the flag" "--top-p must be in (0, 1] (1 = off), got 1.5" "$A" generate -m "$M" --top-p 1.5
expect_error "sampler errors name the flag" "--repeat-penalty must be > 0 (1 = off), got -2" "$A" generate -m "$M" --repeat-penalty -2
expect_error "-p and -f" "give the prompt with -p or -f, not both" "$A" generate -m "$M" -p x -f "$T/text.txt"
expect_error "-f missing" "-f: " "$A" generate -m "$M" -f "$T/no-such-prompt.txt"
expect_error "--stop escapes to nothing" "--stop must not be empty" "$A" generate -m "$M" --stop ''
out=$("$A" generate -m "$M" -p "KING" -n 300 --seed 4 --stop '\n' 2> "$T/nl.err")
grep -q "stopped: stop string" "$T/nl.err" && [ "$(printf '%s' "$out" | wc -l)" -eq 0 ] && [ "${#out}" -gt 4 ] \
    && pass "--stop '\\n' stops at the first newline: '$out'" || fail "--stop '\\n': $(cat "$T/nl.err") | $out"
printf 'KING RICHARD:\nWhat news?' > "$T/prompt.txt"
"$A" generate -m "$M" -f "$T/prompt.txt" -n 30 --seed 5 > "$T/f.out" 2> /dev/null
"$A" generate -m "$M" -p "$(cat "$T/prompt.txt")" -n 30 --seed 5 > "$T/p.out" 2> /dev/null
[ -s "$T/f.out" ] && cmp -s "$T/f.out" "$T/p.out" && pass "-f FILE generates what -p with the same text does" || fail "-f differs from -p"
"$A" generate -m "$M" -p "KING" -n 12 --seed 4 --logprobs 3 > /dev/null 2> "$T/top.err" || fail "--logprobs 3"
"$A" generate -m "$M" -p "KING" -n 12 --seed 4 --logprobs 5 --logprobs-file "$T/top5.jsonl" > /dev/null 2>&1 || fail "--logprobs-file"
if command -v python3 > /dev/null; then
    python3 - "$T/top.err" "$T/top5.jsonl" <<'PY' && pass "--logprobs N: N alternatives per token, most likely first, the drawn token's logprob never above the best" || fail "--logprobs N content"
import json, sys
for path, n in ((sys.argv[1], 3), (sys.argv[2], 5)):
    rows = [json.loads(l) for l in open(path) if l.startswith('{"pos"')]
    assert len(rows) == 12, len(rows)
    for r in rows:
        top = r["top"]
        assert len(top) == n
        lp = [t["logprob"] for t in top]
        assert lp == sorted(lp, reverse=True) and r["logprob"] <= lp[0] + 1e-6
        assert all(t["logprob"] <= 0 for t in top)
        if r["id"] in [t["id"] for t in top]:
            assert [t["logprob"] for t in top if t["id"] == r["id"]][0] == r["logprob"]
PY
fi
long=$(head -c 400 "$T/text.txt")
"$A" generate -m "$M" -p "$long" -n 10 --seed 4 > /dev/null 2> "$T/long.err"
grep -q "more than the context of 96: cut from the left to its last 86 tokens" "$T/long.err" && grep -q "stopped: n-predict | 10 tokens" "$T/long.err" \
    && pass "an over-long prompt is cut from the left with a notice, then generates" || fail "long prompt: $(cat "$T/long.err")"
expect_error "chat without model" "no model given" "$A" chat
finish
