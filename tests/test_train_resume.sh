#!/usr/bin/env bash
# Resume and the trainer's usage errors: a version-1 checkpoint (written by the code before
# checkpoint format 2) resumes with exactly the losses the old code gave; `--resume` alone
# finds the data a version-2 checkpoint records, from any directory; a version-1 file
# without --data is a usage error naming it; --preset tiny trains with its own defaults
# (seq = min(64, ctx)); `info -m` reports the true size; the trainer's objects never print.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
F="$(cd "$(dirname "$0")" && pwd)/fixtures"
cp "$F/ckpt_v1_data.txt" "$T/small.txt"
small="--preset tiny --n-layer 1 --d-model 8 --n-head 1 --ctx 8 --tied 1 --seq 8 --batch 2
       --max-steps 6 --warmup 2 --eval-every 3 --val-fraction 0.2 --sample-every 0 -t 1 -q"

# 1. version 1: what the old code logged for steps 4-6 of this run, uninterrupted
expected='4 5.52637482
5 5.53162479
6 5.53904438'
mkdir -p "$T/v1" && cp "$F/ckpt_v1.bin" "$T/v1/ckpt.bin"
rc=0; "$A" train --resume "$T/v1/ckpt.bin" -q -o "$T/v1" 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--data" "$T/err" && [ "$(wc -l < "$T/err")" -eq 1 ] \
    && pass "v1 resume without --data: usage error (exit 2): $(cat "$T/err")" \
    || fail "v1 resume without --data: exit $rc, '$(cat "$T/err")'"
"$A" train --resume "$T/v1/ckpt.bin" --data "$T/small.txt" -t 1 -q -o "$T/v1" || fail "v1 resume failed"
# bit for bit in the Release build that wrote the fixture; other builds (Debug, another
# compiler) round the validation sums differently, so the check allows 1e-6 relative
got=$(step_losses "$T/v1/log.jsonl"; grep '"type":"eval"' "$T/v1/log.jsonl" | sed 's/.*"step":\([0-9]*\),"val_loss":\([^}]*\)}/v\1 \2/')
want="$expected
v6 5.52796894"
if [ "$got" = "$want" ]; then pass "a version-1 checkpoint resumes with the old code's losses, bit for bit"
elif paste -d' ' <(echo "$got") <(echo "$want") | awk '{ if ($1 != $3 || ($2 - $4) ^ 2 > (1e-6 * $4) ^ 2) bad = 1 } END { exit bad }'
then pass "a version-1 checkpoint resumes with the old code's losses (within 1e-6 in this build)"
else fail "v1 resume losses: $got"; fi

# 2. version 2: stop, then resume with --resume alone from another directory
(cd "$T" && "$A" train --data small.txt $small -o full) || fail "uninterrupted run"
rc=0; (cd "$T" && "$A" train --data small.txt $small --stop-at 3 -o part) || rc=$?
[ "$rc" -eq 130 ] || fail "--stop-at: exit $rc, expected 130"
(cd / && "$A" train --resume "$T/part/ckpt.bin" -t 1 -q -o "$T/part") \
    && pass "--resume without --data uses the recorded data path" || fail "resume without --data failed"
if [ "$(step_losses "$T/full/log.jsonl")" = "$(step_losses "$T/part/log.jsonl")" ] &&
   cmp -s <(grep '"type":"eval"' "$T/full/log.jsonl") <(grep '"type":"eval"' "$T/part/log.jsonl"); then
    pass "stopped + resumed = uninterrupted (steps and validation)"
else fail "resumed run differs"; fi
cp "$T/part/ckpt.bin" "$T/moved.bin" && mv "$T/small.txt" "$T/small_moved.txt"
expect_error "recorded data gone" "cannot open '$T/small.txt'" "$A" train --resume "$T/moved.bin" -o "$T/part2"
mv "$T/small_moved.txt" "$T/small.txt"

# 3. usage errors exit 2 and name the flag
rc=0; "$A" train -o "$T/nodata" 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--data" "$T/err" && pass "no data: exit 2 naming --data" || fail "no data: exit $rc '$(cat "$T/err")'"
rc=0; "$A" train --data "$T/small.txt" --preset tiny --seq 33 -o "$T/o" 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--seq 33" "$T/err" && pass "seq beyond ctx: exit 2 naming --seq" || fail "seq: exit $rc '$(cat "$T/err")'"

# 4. --preset tiny with its own defaults: seq = min(64, ctx 32)
out=$("$A" train --data "$T/small.txt" --preset tiny --max-steps 2 --batch 2 --val-fraction 0.2 \
      --sample-every 0 -t 1 -o "$T/tiny" 2>&1) && echo "$out" | grep -q "^train: B=2 T=32 " \
    && pass "--preset tiny trains with seq 32 = its ctx" || fail "--preset tiny: $out"

# 5. info reports the size of the file and of what training would write
sz=$(stat -c %s "$T/tiny/ckpt.bin")
"$A" info -m "$T/tiny/ckpt.bin" | grep -q "checkpoint size: $sz bytes (format version 2, with AdamW" \
    && pass "info -m: $sz bytes, the file's size" || fail "info -m size: $("$A" info -m "$T/tiny/ckpt.bin" | tail -1), file $sz"
est=$("$A" info --preset tiny | sed -n 's/^checkpoint size: \([0-9]*\) bytes.*/\1/p')
path=$(realpath "$T/small.txt"); plen=${#path}
"$A" train --data "$T/small.txt" --preset tiny --max-steps 0 --val-fraction 0.2 --sample-every 0 -q -o "$T/zero" || fail "max-steps 0"
sz0=$(stat -c %s "$T/zero/ckpt.bin"); pad=$((sz0 - est - plen))
[ "$pad" -ge -7 ] && [ "$pad" -le 7 ] && pass "info --preset: $est bytes + the data path ($plen) + alignment ($pad) = $sz0, the written file" \
    || fail "info --preset size $est (+ path $plen) vs written $sz0"

# 6. the trainer's parts never print: no stdio printer or stream in their objects
: "${ANDREA_LIB:?}"
if command -v nm > /dev/null; then
    objs='^(trainer|run_setup|run_options|run_files|step|evaluate|sample_gate|jsonl_sink|checkpoint|checkpoint_read|checkpoint_v1|ckpt_stream|corpus|corpus_source|data|schedule)\.c\.o$'
    used=$(nm -A "$ANDREA_LIB" 2>/dev/null | awk '$2 == "U" || $3 == "U" { print }' |
           sed -n 's/^[^:]*:\([^:]*\):.* U \(.*\)$/\1 \2/p' | awk -v re="$objs" '$1 ~ re' |
           grep -E ' (printf|puts|putchar|vprintf|perror|stdout|stderr)(@.*)?$' || true)
    n=$(nm -A "$ANDREA_LIB" 2>/dev/null | sed -n 's/^[^:]*:\([^:]*\):.*/\1/p' | sort -u | awk -v re="$objs" '$1 ~ re' | wc -l)
    [ "$n" -ge 14 ] || fail "only $n trainer objects found in $ANDREA_LIB"
    [ -z "$used" ] && pass "none of the $n trainer objects names printf, puts, stdout or stderr" \
        || fail "the trainer prints: $used"
fi
finish
