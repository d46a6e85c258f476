#!/usr/bin/env bash
# The curriculum end to end, small: six fortunes files (Debian's fortune-mod data, one
# document per fortune) as six sources of a run manifest. A UCB1 run uses several sources
# and logs the per-step batch lines, the bandit's lines and per-source validation; stopped
# and resumed it gives exactly the uninterrupted run's losses and batches (the bandit's
# state is in the checkpoint); a resume under a new manifest policy (other floors) is
# logged as a pivot; `prepare --manifest` token files give the same run; a manifest with other sources is refused; uniform and fixed run.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
FD="${ANDREA_FORTUNES:-/usr/share/games/fortunes}"
for f in art computers cookie food law science; do
    [ -f "$FD/$f" ] || { echo "skip: fortunes file $FD/$f not found (scripts/setup.sh installs fortune-mod data)" >&2; exit 77; }
done
"$A" train --help 2>&1 | grep -q -- --manifest || { fail "train --help lacks --manifest"; finish; }

manifest() { # FILE POLICY FLOOR_OF_LAW
    {
        printf '{"tokenizer": "byte", "val_fraction": 0.05,\n'
        printf ' "curriculum": {"policy": "%s", "dice": [3, 6], "focus": 2, "warmup_steps": 6,\n' "$2"
        printf '                "warmup_sources": ["cookie", "law"]},\n "sources": [\n'
        local sep=""
        for f in art computers cookie food law science; do
            local extra=""
            [ "$f" = law ] && extra=", \"floor\": $3"
            [ "$f" = food ] && extra=", \"weight\": 0.5"
            printf '%s  {"name": "%s", "path": "%s/%s", "separator": "\\n%%\\n"%s}' "$sep" "$f" "$FD" "$f" "$extra"
            sep=$',\n'
        done
        printf '\n]}\n'
    } > "$1"
}
manifest "$T/m.json" ucb1 0
manifest "$T/pivot.json" ucb1 0.9
if "$A" prepare --manifest "$T/m.json" -o "$T/probe" -q 2>&1 | grep -q "needs jansson"; then
    echo "skip: this andrea was built without jansson: no manifests" >&2
    exit 77
fi
small="--preset tiny --n-layer 1 --d-model 16 --n-head 2 --ctx 16 --seq 16 --batch 2
       --max-steps 24 --warmup 2 --eval-every 12 --eval-batches 2 --ckpt-every 0 --sample-every 0 -t 1 -q"

"$A" train --manifest "$T/m.json" $small -o "$T/full" || fail "uninterrupted run"
L="$T/full/log.jsonl"
batches() { grep '"type":"batch"' "$1"; }
[ "$(batches "$L" | wc -l)" -eq 24 ] && pass "24 batch lines" || fail "batch lines: $(batches "$L" | wc -l)"
used=$(batches "$L" | sed 's/.*"source":"\([a-z]*\)".*/\1/' | sort -u | wc -l)
[ "$used" -ge 3 ] && pass "$used sources trained on in 24 steps" || fail "only $used sources used"
warm=$(batches "$L" | head -6 | sed 's/.*"source":"\([a-z]*\)".*/\1/' | sort -u | tr '\n' ' ')
case "$warm" in "cookie "|"law "|"cookie law ") pass "warmup steps 1-6 only on cookie/law ($warm)";; *) fail "warmup used: $warm";; esac
grep -q '"type":"sources".*"name":"science","format":"text","docs":' "$L" && pass "sources line" || fail "no sources line"
grep '"type":"curriculum"' "$L" | head -1 | grep -q '"ema":.*"reward":.*"ucb":.*"weight":.*"coverage":.*"epochs":' \
    && pass "curriculum lines carry ema, reward, ucb, weight, coverage, epochs" || fail "curriculum line fields"
[ "$(grep -c '"type":"eval_source"' "$L")" -eq 12 ] && pass "6 per-source validation losses at each of 2 evaluations" \
    || fail "eval_source lines: $(grep -c eval_source "$L")"
# the overall validation loss is the mean of the six
awk -F'"val_loss":' '/eval_source","step":24/ { split($2, a, ","); s += a[1]; n++ } /"type":"eval","step":24/ { split($2, b, "}"); v = b[1] }
    END { d = s / n - v; exit !(n == 6 && d * d < 1e-12) }' "$L" && pass "overall validation = mean of the sources'" || fail "overall validation"

# prepared once into token files: the same documents, so the same run, bit for bit
"$A" prepare --manifest "$T/m.json" -o "$T/prep" -q || fail "prepare --manifest"
"$A" train --manifest "$T/prep/manifest.json" $small -o "$T/fromtok" || fail "run from token files"
[ -f "$T/prep/science.tokens" ] && [ "$(step_losses "$L")" = "$(step_losses "$T/fromtok/log.jsonl")" ] &&
   cmp -s <(batches "$L") <(batches "$T/fromtok/log.jsonl") \
    && pass "prepare --manifest: token files train exactly like the text" || fail "prepared run differs"
# a trailing slash on -o gives no '//' in what is written, floats are written short
# (0.05, not 0.050000000000000003), and -q (no sgemm peak measured) logs mfu as null
"$A" prepare --manifest "$T/m.json" -o "$T/prep2/" 2> "$T/prep2.err" || fail "prepare -o DIR/"
grep -q "'$T/prep2/science.tokens'" "$T/prep2.err" && ! grep -q '//' "$T/prep2.err" \
    && pass "prepare -o DIR/: paths without //" || fail "prepare paths: $(grep -m1 // "$T/prep2.err")"
grep -q '"val_fraction": 0.05,' "$T/prep2/manifest.json" && grep -q '"weight": 0.5' "$T/prep2/manifest.json" \
    && pass "prepared manifest: floats written short" || fail "prepared floats: $(grep -m1 val_fraction "$T/prep2/manifest.json")"
grep '"type":"step"' "$L" | head -1 | grep -q '"mfu":null' && pass "-q: mfu logged as null" \
    || fail "-q mfu: $(grep -m1 '"type":"step"' "$L")"

# stopped at 10 and resumed: the same batches and losses, bit for bit
rc=0; "$A" train --manifest "$T/m.json" $small --stop-at 10 -o "$T/part" || rc=$?
[ "$rc" -eq 130 ] || fail "--stop-at: exit $rc"
cp "$T/part/ckpt.bin" "$T/step10.bin"
"$A" train --resume "$T/part/ckpt.bin" -t 1 -q -o "$T/part" || fail "resume"
if [ "$(step_losses "$L")" = "$(step_losses "$T/part/log.jsonl")" ] &&
   cmp -s <(batches "$L") <(batches "$T/part/log.jsonl") &&
   cmp -s <(grep '"type":"eval' "$L") <(grep '"type":"eval' "$T/part/log.jsonl"); then
    pass "stopped at 10 + resumed = uninterrupted (losses, sources, documents, validation)"
else fail "resumed curriculum run differs"; fi

# the polish pivot: resumed under new floors, logged
mkdir -p "$T/pivot"
"$A" train --resume "$T/step10.bin" --data "$T/pivot.json" -t 1 -q -o "$T/pivot" || fail "pivot resume"
grep -q '"type":"curriculum_pivot","step":10' "$T/pivot/log.jsonl" && pass "pivot logged at step 10" || fail "no pivot line"
law=$(batches "$T/pivot/log.jsonl" | grep -c '"source":"law"')
[ "$law" -ge 5 ] && pass "after the pivot (law floor 0.9) law trained $law of 14 steps" || fail "law after pivot: $law"

# a manifest with other sources is refused
sed 's/"name": "science"/"name": "sci"/' "$T/m.json" > "$T/other.json"
expect_error "other sources" "does not have the sources" "$A" train --resume "$T/step10.bin" --data "$T/other.json" -o "$T/o"

# uniform and fixed
for p in uniform fixed; do
    manifest "$T/$p.json" $p 0.5
    "$A" train --manifest "$T/$p.json" $small --max-steps 12 -o "$T/$p" && grep -q "\"policy\":\"$p\"" "$T/$p/log.jsonl" \
        && pass "$p policy runs" || fail "$p policy"
done
# fixed: weights food 0.5, law floor 0.5, the rest 0 -> after the warmup only food and law
other=$(batches "$T/fixed/log.jsonl" | tail -n +7 | grep -vc '"source":"\(food\|law\)"' || true)
[ "$other" -eq 0 ] && pass "fixed policy: steps 7-12 only on food and law" || fail "fixed: $other other batches"

# numbered checkpoints: every 4 steps, the newest 2 kept
"$A" train --manifest "$T/m.json" $small --max-steps 12 --ckpt-every 4 --keep-last 2 -o "$T/keep" || fail "keep-last run"
[ "$(cd "$T/keep" && ls step_*.bin | tr '\n' ' ')" = "step_000008.bin step_000012.bin " ] \
    && cmp -s "$T/keep/step_000012.bin" "$T/keep/ckpt.bin" && pass "--keep-last 2: step_000008.bin, step_000012.bin (= ckpt.bin)" \
    || fail "numbered checkpoints: $(ls "$T/keep")"

# SIGUSR1 writes a checkpoint and training goes on; SIGTERM then stops it
"$A" train --manifest "$T/m.json" $small --max-steps 1000000 --eval-every 0 --keep-last 3 -o "$T/usr" &
pid=$!
alive() { kill -0 $pid 2> /dev/null; }
for i in $(seq 200); do alive || break; grep -q '"type":"batch"' "$T/usr/log.jsonl" 2> /dev/null && break; sleep 0.1; done
kill -USR1 $pid
for i in $(seq 200); do alive || break; ls "$T/usr"/step_*.bin > /dev/null 2>&1 && break; sleep 0.1; done
n1=$(ls "$T/usr"/step_*.bin 2> /dev/null | head -1 | sed 's/.*step_0*\([0-9]*\)\.bin/\1/')
for i in $(seq 200); do alive || break; [ "$(grep -c '"type":"batch"' "$T/usr/log.jsonl")" -gt "$((${n1:-0} + 5))" ] && break; sleep 0.1; done
kill -TERM $pid 2> /dev/null; rc=0; wait $pid || rc=$?
last=$(grep -c '"type":"batch"' "$T/usr/log.jsonl" 2> /dev/null || echo 0)
[ -n "$n1" ] && [ "$rc" -eq 130 ] && [ "$last" -gt "$n1" ] \
    && pass "SIGUSR1: step_$n1 written, training went on to step $last, SIGTERM stopped it (exit 130)" \
    || fail "SIGUSR1: numbered '$n1', exit $rc, last step $last"

# with ../shared/data: the ten real sources of examples/curriculum/shared_manifest.sh
if [ -f "${ANDREA_DATA_DIR:-}/dictionary/wordnet_define.jsonl" ]; then
    bash "$(dirname "$0")/../examples/curriculum/shared_manifest.sh" "$ANDREA_DATA_DIR" "$T/shared.json" > /dev/null
    "$A" train --manifest "$T/shared.json" $small --max-steps 8 --eval-every 0 -o "$T/shared" || fail "shared run"
    n=$(grep '"type":"sources"' "$T/shared/log.jsonl" | grep -o '"name":' | wc -l)
    d=$(grep '"type":"sources"' "$T/shared/log.jsonl" | sed 's/.*"name":"dictionary","format":"chat","docs":\([0-9]*\).*/\1/')
    [ "$n" -eq 10 ] && [ "$d" = 92907 ] && [ "$(grep -c '"type":"eval_source"' "$T/shared/log.jsonl")" -eq 10 ] \
        && pass "shared data: 10 sources (dictionary: $d documents), 10 per-source validation losses" \
        || fail "shared data: $n sources, dictionary '$d'"
else
    echo "note: ${ANDREA_DATA_DIR:-(no ANDREA_DATA_DIR)}: no shared data, the ten-source run is skipped"
fi

# andrea plot reads the curriculum's own records (batch, eval_source, curriculum)
if "$A" plot "$T/full" > "$T/plot.txt" 2>&1; then
    for f in loss_by_source sources weights; do
        [ -s "$T/full/plots/$f.png" ] && pass "plot: $f.png from the curriculum's log" ||
            fail "plot wrote no $f.png: $(cat "$T/plot.txt")"
    done
elif grep -q "libpng\|jansson" "$T/plot.txt"; then echo "skip: plot: $(head -1 "$T/plot.txt")"
else fail "plot: $(cat "$T/plot.txt")"; fi
finish
