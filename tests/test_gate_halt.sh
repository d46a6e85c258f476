#!/usr/bin/env bash
# The halting rule (docs/coherence-gate.md): a healthy run is never halted, whatever its
# young samples score; a run pushed into collapse (its source is one sentence said over
# and over, so its samples end up looping) is halted after --gate-patience counted
# samples in a row, and the halt names a checkpoint saved before the first of them.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
need_gate
samples() { grep '"type":"sample"' "$1"; }

# healthy: real text, a small model, a sample every 20 steps from step 20 on
need_text TXT
head -c 300000 "$TXT" > "$T/text.txt"
"$A" train --data "$T/text.txt" --preset tiny --max-steps 400 --sample-every 20 --eval-every 40 \
    --warmup 20 --ckpt-every 0 -t 1 -o "$T/healthy" > "$T/healthy.out" 2>&1 \
    && pass "healthy run: not halted ($(samples "$T/healthy/log.jsonl" | wc -l) samples)" \
    || fail "healthy run halted: $(tail -1 "$T/healthy.out")"
n_fail=$(samples "$T/healthy/log.jsonl" | grep -c '"pass":false')
n_strike=$(samples "$T/healthy/log.jsonl" | grep -vc '"strike":null')
[ "$n_strike" -eq 0 ] && pass "healthy run: $n_fail failing samples (young), none counted as a collapse" \
    || fail "healthy run: $n_strike samples counted: $(samples "$T/healthy/log.jsonl" | grep -v '"strike":null' | head -1 | cut -c1-300)"
grep -q 'FAIL (not a collapse: not counted)' "$T/healthy.out" && pass "young failing samples marked, not counted" \
    || fail "no 'not counted' line"
v1=$(grep '"type":"eval"' "$T/healthy/log.jsonl" | head -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
v2=$(grep '"type":"eval"' "$T/healthy/log.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
awk -v a="$v1" -v b="$v2" 'BEGIN { exit !(b < a) }' && pass "healthy run improved: validation $v1 -> $v2" || fail "validation $v1 -> $v2"

# collapse: one passage said over and over (tests/fixtures/ckpt_v1_data.txt)
D="$(dirname "$0")/fixtures/ckpt_v1_data.txt"
rc=0
"$A" train --data "$D" --preset tiny --max-steps 800 --sample-every 20 --ckpt-every 20 --eval-every 20 \
    --warmup 10 -t 1 -o "$T/loop" > "$T/loop.out" 2>&1 || rc=$?
L="$T/loop/log.jsonl"
msg=$(tail -1 "$T/loop.out")
[ "$rc" -eq 1 ] && echo "$msg" | grep -q 'consecutive samples collapsed (the last: loops' \
    && pass "collapse halted (exit $rc): $msg" || fail "collapse not halted (exit $rc): $msg"
last=$(samples "$L" | tail -1 | sed 's/.*"step":\([0-9]*\).*/\1/')
first=$((last - 4 * 20)) # the halting streak: the last 5 samples
streak=$(samples "$L" | tail -5 | grep -vc '"strike":null')
before=$(samples "$L" | tail -6 | head -1)
[ "$streak" -eq 5 ] && echo "$before" | grep -q '"strike":null' && echo "$msg" | grep -q "at steps $first-$last" \
    && pass "halted at step $last: 5 counted samples in a row from step $first (--gate-patience 5)" \
    || fail "streak of $streak before the halt at $last: $msg"
samples "$L" | grep -q '"pass":true' && pass "its samples had passed before the collapse" || fail "no passing sample before the collapse"
kept=$("$A" info -m "$T/loop/pre-collapse.bin" 2>/dev/null | sed -n 's/.*trained steps \([0-9]*\).*/\1/p')
echo "$msg" | grep -q "'$T/loop/pre-collapse.bin' (step $kept)" && [ -n "$kept" ] && [ "$kept" -lt "$first" ] \
    && pass "the halt names pre-collapse.bin, saved at step $kept, before the first counted sample ($first)" \
    || fail "pre-collapse checkpoint: step '$kept', first counted $first: $msg"
echo "$before" | grep -q "\"step\":$kept," && pass "pre-collapse.bin is the state of the last uncounted sample ($kept)" \
    || fail "pre-collapse.bin at $kept, the last uncounted sample: $(echo "$before" | cut -c1-60)"
grep -q '^---- sample at step' "$T/loop.out" && pass "counted samples printed whole" || fail "counted samples not printed"
"$A" generate -m "$T/loop/pre-collapse.bin" -n 20 -t 1 > /dev/null 2>&1 && pass "pre-collapse.bin loads and generates" \
    || fail "pre-collapse.bin does not load"
finish
