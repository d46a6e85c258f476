#!/usr/bin/env bash
# test_guarded_cli.sh - the real commands on cpu-guarded, the backend whose memory the host
# cannot touch outside its operations (a stray access outside src/backend is a SIGSEGV),
# against the same commands on cpu: the kernels are the same, so every number must be
# the same to the bit. ANDREA_BACKEND=cpu-guarded makes it the default, so checkpoints
# load straight onto it, as they would onto a GPU.
. "$(dirname "$0")/lib.sh"
need_text data
T="$ANDREA_TMP"
A="$ANDREA_BIN"
G=(env ANDREA_BACKEND=cpu-guarded "$A")
# GPT-2's shape, which GGUF and llm.c carry (the flat format gets a model of its own)
common=(--data "$data" --preset tiny --norm layernorm --act gelu --bias 1 --tied 1
        --norm-eps 1e-5 --batch 4 --max-steps 30
        --eval-every 15 --sample-every 15 --sample-tokens 16 -t 2 -q --seed 3)
# the log's steps, evaluations and gate samples without their timings
strip() { grep -E '"type":"(step|eval|sample)"' "$1" | sed -E 's/"(time|pid|ms|[a-z_]*_ms|[a-z_]*_s|mfu)":("[^"]*"|[0-9.e+-]*),?//g'; }
same() { # same WHAT CMD...: stdout of CMD on cpu and on cpu-guarded, byte for byte
    local what=$1; shift
    local a b
    a=$("$A" "$@" 2> "$T/err_cpu") || { fail "$what on cpu: $(tail -1 "$T/err_cpu")"; return; }
    b=$("${G[@]}" "$@" 2> "$T/err_g") || { fail "$what on cpu-guarded: $(tail -1 "$T/err_g")"; return; }
    [ "$a" = "$b" ] && pass "$what: the same output on cpu-guarded" ||
        fail "$what: cpu-guarded's output differs from cpu's"
}

"$A" train "${common[@]}" -o "$T/cpu" || fail "train on cpu"
"$A" train "${common[@]}" --backend cpu-guarded -o "$T/g" || fail "train --backend cpu-guarded"
"${G[@]}" train "${common[@]}" -o "$T/genv" || fail "train, ANDREA_BACKEND=cpu-guarded"
for r in g genv; do
    if diff <(strip "$T/cpu/log.jsonl") <(strip "$T/$r/log.jsonl") > /dev/null; then
        pass "train ($r): log.jsonl (losses, evaluations, gate samples) equal to cpu's"
    else fail "train ($r): log.jsonl differs from cpu's"; fi
done
cmp -s "$T/cpu/ckpt.bin" "$T/g/ckpt.bin" && pass "train: ckpt.bin the same bytes" ||
    fail "train: ckpt.bin differs"
"$A" train --resume "$T/cpu/ckpt.bin" --max-steps 40 -q -o "$T/cpu" || fail "resume on cpu"
"${G[@]}" train --resume "$T/g/ckpt.bin" --max-steps 40 -q -o "$T/g" || fail "resume on cpu-guarded"
cmp -s "$T/cpu/ckpt.bin" "$T/g/ckpt.bin" && pass "resume: ckpt.bin the same bytes" ||
    fail "resume: ckpt.bin differs"

m="$T/cpu/ckpt.bin"
same "eval" eval -m "$m" -d "$data" --max-batches 4
same "eval --quant int8" eval -m "$m" -d "$data" --max-batches 4 --quant int8
same "generate greedy" generate -m "$m" -p "The " -n 24 --temp 0
same "generate sampled" generate -m "$m" -p "The " -n 24 --seed 5
same "generate --quant bf16" generate -m "$m" -p "The " -n 24 --temp 0 --quant bf16
same "generate --quant int8" generate -m "$m" -p "The " -n 24 --temp 0 --quant int8
same "generate --backend cpu-guarded" generate -m "$m" -p "The " -n 24 --temp 0 --backend cpu-guarded
printf 'hello\nhow are you\n' > "$T/chat.in"
a=$("$A" chat -m "$m" -n 8 --temp 0 < "$T/chat.in" 2> /dev/null) && b=$("${G[@]}" chat -m "$m" -n 8 --temp 0 < "$T/chat.in" 2> /dev/null) &&
    [ "$a" = "$b" ] && pass "chat: the same conversation on cpu-guarded" || fail "chat on cpu-guarded"
same "explain" explain
same "attention" attention -m "$m" -p "To be or" --matrices 0
same "attention --json" attention -m "$m" -p "To be" --json -
"$A" train --data "$data" --preset tiny --batch 4 --max-steps 5 -t 2 -q -o "$T/flat" ||
    fail "train the flat-shaped model"
for to in safetensors gguf llmc flat andrea; do
    [ "$to" = flat ] && m="$T/flat/ckpt.bin"
    "$A" convert "$m" "$T/c_cpu.$to" --to "$to" > /dev/null 2>&1 || { fail "convert --to $to on cpu"; continue; }
    "${G[@]}" convert "$m" "$T/c_g.$to" --to "$to" > /dev/null 2> "$T/err_g" ||
        { fail "convert --to $to on cpu-guarded: $(tail -1 "$T/err_g")"; continue; }
    cmp -s "$T/c_cpu.$to" "$T/c_g.$to" && pass "convert --to $to: the same file" ||
        fail "convert --to $to: the files differ"
done

# two ranks (ZeRO-1 too), when this build and machine have MPI: the same logs as on cpu
if command -v mpirun > /dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" # OpenMPI's plugins
    M=(--data "$data" --preset tiny --batch 2 --max-steps 12 --eval-every 6 --sample-every 0 -t 1 -q)
    for z in 0 1; do
        if OMP_NUM_THREADS=1 mpirun -np 2 "$A" train "${M[@]}" --zero $z -o "$T/mc$z" 2> "$T/err" &&
           OMP_NUM_THREADS=1 mpirun -np 2 "$A" train "${M[@]}" --zero $z --backend cpu-guarded \
               -o "$T/mg$z" 2>> "$T/err"; then
            diff <(strip "$T/mc$z/log.jsonl") <(strip "$T/mg$z/log.jsonl") > /dev/null &&
                cmp -s "$T/mc$z/ckpt.bin" "$T/mg$z/ckpt.bin" &&
                pass "mpirun -np 2 --zero $z: the same log and checkpoint on cpu-guarded" ||
                fail "mpirun -np 2 --zero $z: cpu-guarded differs from cpu"
        elif grep -q "built without MPI" "$T/err"; then
            echo "note: built without MPI: the 2-rank checks skipped"; break
        else fail "mpirun -np 2 --zero $z: $(tail -1 "$T/err")"; fi
    done
fi
finish
