#!/usr/bin/env bash
# --eval-batches N counts global batches (ranks x --batch windows each): 1 process x 8 and
# 2 ranks x 4 validate the same windows, so the validation loss is the same (to the float
# rounding of per-batch means) and the token counts are equal; the same per source of a
# curriculum (the eval_source lines), when fortunes and manifests are available.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
mpi_text
M="--preset tiny --n-layer 1 --d-model 16 --n-head 2 --ctx 16 --seq 16 --max-steps 4
   --warmup 1 --eval-every 2 --eval-batches 3 --ckpt-every 0 --sample-every 0 -t 1 -q"
mpi_probe --data "$T/d.txt" $M

evals() { grep '"type":"eval"' "$1" | sed 's/.*"step":\([0-9]*\),"val_loss":\([^}]*\)}/\1 \2/'; }
# NAME FILE1 FILE2 with lines "key value": the same keys, values within 1e-6 relative
same() {
    local worst; worst=$(paste -d' ' "$2" "$3" | awk '
        $1 != $3 || NF != 4 { print "mismatch"; exit } { d = ($2 - $4) / $4; d = d < 0 ? -d : d;
        if (d > w) w = d } END { if (NR == 0) print "mismatch"; else printf "%.2g", w }')
    if [ "$worst" != mismatch ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-6) }'; then
        pass "$1: $(wc -l < "$2") values within 1e-6 (worst relative difference $worst)"
    else fail "$1: $worst: $(paste -d' ' "$2" "$3" | head -4)"; fi
}

# a plain text: one validation set
"$A" train --data "$T/d.txt" $M --batch 8 -o "$T/one" || fail "1 process"
$MPI -np 2 "$A" train --data "$T/d.txt" $M --batch 4 -o "$T/two" || fail "2 ranks"
evals "$T/one/log.jsonl" > "$T/one.ev"; evals "$T/two/log.jsonl" > "$T/two.ev"
[ "$(wc -l < "$T/one.ev")" -eq 2 ] || fail "1 process: $(wc -l < "$T/one.ev") evaluations, expected 2"
same "validation loss, --eval-batches 3: 2 ranks x 4 = 1 process x 8" "$T/one.ev" "$T/two.ev"

# a curriculum: per-source validation, token counts equal exactly
FD="${ANDREA_FORTUNES:-/usr/share/games/fortunes}"
if [ -f "$FD/art" ] && [ -f "$FD/law" ] && [ -f "$FD/food" ]; then
    printf '{"tokenizer": "byte", "val_fraction": 0.05, "curriculum": {"policy": "uniform"},\n "sources": [\n' > "$T/m.json"
    printf '  {"name": "%s", "path": "%s/%s", "separator": "\\n%%\\n"},\n' art "$FD" art law "$FD" law >> "$T/m.json"
    printf '  {"name": "food", "path": "%s/food", "separator": "\\n%%\\n"}\n]}\n' "$FD" >> "$T/m.json"
    if "$A" train --manifest "$T/m.json" $M --batch 8 -o "$T/c1" 2> "$T/c1.err"; then
        $MPI -np 2 "$A" train --manifest "$T/m.json" $M --batch 4 -o "$T/c2" || fail "curriculum, 2 ranks"
        src() { grep '"type":"eval_source"' "$1" | sed 's/.*"step":\([0-9]*\),"source":"\([a-z]*\)","val_loss":\([^,]*\),"tokens":\([0-9]*\)}/\1\2 \3 \4/'; }
        src "$T/c1/log.jsonl" > "$T/c1.s"; src "$T/c2/log.jsonl" > "$T/c2.s"
        [ "$(wc -l < "$T/c1.s")" -eq 6 ] || fail "curriculum: $(wc -l < "$T/c1.s") eval_source lines, expected 6"
        cut -d' ' -f1,2 "$T/c1.s" > "$T/c1.l"; cut -d' ' -f1,2 "$T/c2.s" > "$T/c2.l"
        same "per-source validation losses: 2 ranks x 4 = 1 process x 8" "$T/c1.l" "$T/c2.l"
        cut -d' ' -f1,3 "$T/c1.s" > "$T/c1.n"; cut -d' ' -f1,3 "$T/c2.s" > "$T/c2.n"
        # 3 global batches x 8 windows x 16 tokens (each source has more than that)
        awk '$2 != 384 { exit 1 }' "$T/c2.n" && pass "2 ranks: 3 x 8 x 16 = 384 tokens per source" \
            || fail "2 ranks validate $(head -1 "$T/c2.n" | cut -d' ' -f2) tokens per source, expected 384"
        cmp -s "$T/c1.n" "$T/c2.n" && pass "per-source token counts equal: $(head -3 "$T/c2.n" | cut -d' ' -f2 | tr '\n' ' ')" \
            || fail "per-source token counts differ: $(paste -d' ' "$T/c1.n" "$T/c2.n" | head -3)"
    elif grep -q "needs jansson" "$T/c1.err"; then echo "note: built without jansson: no curriculum check"
    else fail "curriculum, 1 process: $(cat "$T/c1.err")"; fi
else
    echo "note: fortunes files not found: no curriculum check"
fi
finish
