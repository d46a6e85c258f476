#!/usr/bin/env bash
# bench_prefill.sh - batch-1 prompt processing (prefill) of two or more andrea binaries,
# alternated process by process so that load from other processes falls on all alike:
# `andrea bench --preset S --steps 0 --generate 0 --prefill N` (random weights and tokens:
# speed does not depend on them; each process times 5 prefills after an untimed one and
# prints their median), ROUNDS processes per binary and shape. Prints per shape each
# binary's median over the rounds of wall tok/s and of CPU ms per prefill, and the ratios
# of medians to the first binary (> 1: faster). With THREADS=1 the CPU time is the work
# itself, whatever else the machine runs; with more threads it includes OpenMP's waits.
# A benchmark, never a test: it asserts nothing about time. The binaries need bench
# --prefill (an older tree: cherry-pick the commit that added it).
#
#   bench/bench_prefill.sh OLD_ANDREA NEW_ANDREA [MORE...]
#   ROUNDS=5 THREADS=1 SHAPES="baby:63 andrea-12m:512 gpt2-124m:306" bench/bench_prefill.sh old new
#
# Env: ROUNDS (5), THREADS (2), SHAPES (preset:prompt tokens, "baby:63 andrea-12m:512
# gpt2-124m:306"), ATTENTION (the model context's setting, explicit: what generate, chat
# and the server's contexts have; a prefill since the flash commit ignores it),
# ANDREA_ISA (caps the ISA of every binary).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_ANDREA NEW_ANDREA [MORE...]" >&2; exit 2; }
BINS=("$@")
ROUNDS=${ROUNDS:-5} THREADS=${THREADS:-2} ATTENTION=${ATTENTION:-explicit}
SHAPES=${SHAPES:-"baby:63 andrea-12m:512 gpt2-124m:306"}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

isa=$("${BINS[-1]}" bench --preset tiny --steps 0 --generate 0 --prefill 4 -t 1 | sed -n 's/.*| ISA \([a-z0-9]*\).*/\1/p')
echo "# prefill batch 1, $THREADS thread(s), context attention $ATTENTION, $ROUNDS processes per binary alternated, $(date -u +%FT%TZ)"
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), andrea's ISA: $isa${ANDREA_ISA:+ (capped)}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| shape | tokens |'
for b in "${BINS[@]}"; do printf ' %s: tok/s, CPU ms |' "$b"; done
for b in "${BINS[@]:1}"; do printf ' %s / %s: wall, CPU |' "$b" "${BINS[0]}"; done
echo
printf '|---|---|'; for _ in "${BINS[@]}" "${BINS[@]:1}"; do printf -- '---|'; done; echo
for sn in $SHAPES; do
    shape=${sn%%:*} n=${sn##*:}
    for _ in $(seq "$ROUNDS"); do
        for i in "${!BINS[@]}"; do
            # prefill batch 1, 306 tokens (f32 weights): 241.8 tok/s (fastest of 5; median 232.7) | ... | CPU time 1300.12 ms (median, all threads)
            line=$("${BINS[$i]}" bench --preset "$shape" --steps 0 --generate 0 --prefill "$n" -t "$THREADS" --attention "$ATTENTION" | grep '^prefill batch')
            echo "$line" | sed -n 's/.*; median \([0-9.]*\)).*/\1/p' >> "$W/$shape.tok.$i"
            echo "$line" | sed -n 's/.*CPU time \([0-9.]*\) ms.*/\1/p' >> "$W/$shape.cpu.$i"
        done
    done
    printf '| %s | %s |' "$shape" "$n"
    tok=() cpu=()
    for i in "${!BINS[@]}"; do
        tok[i]=$(median < "$W/$shape.tok.$i")
        cpu[i]=$(median < "$W/$shape.cpu.$i")
        printf ' %.0f, %.1f |' "${tok[$i]}" "${cpu[$i]}"
    done
    for i in "${!BINS[@]}"; do
        [ "$i" = 0 ] || printf ' **%.2f**, %.2f |' "$(echo "${tok[$i]} / ${tok[0]}" | bc -l)" \
                                "$(echo "${cpu[0]} / ${cpu[$i]}" | bc -l)"
    done
    echo
done
echo "# ratio: median wall tok/s over the first binary's, and the first binary's median CPU ms over this one's (> 1: faster)"
