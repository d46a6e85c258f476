#!/usr/bin/env bash
# Every writer refuses a target that exists and is not a regular file (issue 22): a
# character device, a FIFO, a directory, a symlink to a device and a dangling symlink are
# each refused with one line, exit non-zero, and are left as they were; a symlink to a
# regular file is written through (the link stays a link, its target gets the new bytes).
# Run as root in CI, where nothing else would stop a rename over a device node.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"
T="$ANDREA_TMP"
F="$(cd "$(dirname "$0")" && pwd)/fixtures"
TXT="$F/ckpt_v1_data.txt"

"$A" train -q --data "$TXT" --preset tiny --max-steps 3 --eval-every 0 --sample-every 0 -o "$T/run" \
    > /dev/null 2>&1 || { fail "train the model the writers need"; finish; }
M="$T/run/ckpt.bin"

# the hostile targets, made fresh for each writer: NAME -> a path holding that kind of thing
make_target() { # KIND PATH
    rm -rf "$2"
    case $1 in
        device) if [ "$(id -u)" -eq 0 ]; then mknod "$2" c 1 3; else return 1; fi ;; # like /dev/null
        fifo) mkfifo "$2" ;;
        dir) mkdir "$2" ;;
        link-device) ln -s /dev/null "$2" ;;
        link-dangling) ln -s "$T/nowhere/at/all" "$2" ;;
    esac
}
# what is at PATH, to check it is unchanged: type, and the link's target for links
describe() { if [ -L "$1" ]; then echo "link $(readlink "$1")"; else stat -c %F "$1"; fi; }

# WRITER_NAME KIND TARGET CMD...: refused with one stderr line naming TARGET, nothing changed
refuses() {
    local name=$1 kind=$2 target=$3; shift 3
    if ! make_target "$kind" "$target"; then echo "skip: $name on a $kind (needs root)"; return; fi
    local before; before=$(describe "$target")
    local err="$T/err" rc=0
    timeout 60 "$@" > /dev/null 2> "$err" < /dev/null || rc=$?
    local after; after=$(describe "$target")
    local lines; lines=$(grep -vc '^prepare: \|^note: ' "$err")
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "$name on a $kind: exit $rc"
    elif [ "$before" != "$after" ]; then fail "$name on a $kind: '$before' became '$after'"
    elif [ "$lines" -ne 1 ] || ! grep -q "regular file\|replaces only regular\|cannot be reached" "$err"; then
        fail "$name on a $kind: stderr: $(cat "$err")"
    elif [ -n "$(find "$T" -maxdepth 3 -name '*.tmp.*' 2> /dev/null)" ]; then
        fail "$name on a $kind: a temporary was left: $(find "$T" -name '*.tmp.*')"
    else pass "$name on a $kind: $(grep -v '^prepare: ' "$err")"; fi
}

# WRITER_NAME TARGET CMD...: through a link to a regular file, the file gets the output
writes_through() {
    local name=$1 target=$2; shift 2
    rm -rf "$target" "$T/real.out" && echo old > "$T/real.out" && ln -s "$T/real.out" "$target"
    if timeout 60 "$@" > /dev/null 2> "$T/err" < /dev/null && [ -L "$target" ] &&
        ! printf 'old\n' | cmp -s - "$T/real.out" && [ -s "$T/real.out" ]; then
        pass "$name through a symlink: the link kept, its file written ($(wc -c < "$T/real.out") bytes)"
    else fail "$name through a symlink: $(describe "$target"), $(wc -c < "$T/real.out") bytes: $(cat "$T/err")"; fi
    rm -f "$target" "$T/real.out"
}

X="$T/target"
for kind in device fifo dir link-device link-dangling; do
    refuses "prepare" $kind "$X" "$A" prepare -q -t byte -o "$X" "$TXT"
    refuses "tokenizer export" $kind "$X" "$A" tokenizer export -t byte -o "$X"
    refuses "tokenizer train" $kind "$X" "$A" tokenizer train -k bpe -V 300 -i "$TXT" -o "$X"
    refuses "tokenizer train --json" $kind "$X" "$A" tokenizer train -k harris -N 40 -i "$TXT" \
        -o "$T/h.tok" --json "$X"
    refuses "convert to safetensors" $kind "$X" "$A" convert "$M" "$X" --to safetensors
    refuses "convert to gguf" $kind "$X" "$A" convert "$M" "$X" --to gguf
    refuses "convert to llm.c" $kind "$X" "$A" convert "$M" "$X" --to llmc
    refuses "convert to flat" $kind "$X" "$A" convert "$M" "$X" --to flat
    refuses "attention --json" $kind "$X" "$A" attention -m "$M" -p "To be" --json "$X"
    refuses "attention --html" $kind "$X" "$A" attention -m "$M" -p "To be" --html "$X"
    refuses "report -o" $kind "$X" "$A" report "$T/run" -o "$X"
    refuses "generate --logprobs" $kind "$X" "$A" generate -m "$M" -p "To" -n 2 --logprobs "$X"
done

# the files written beside an output obey the same rule: a FIFO where convert would put
# tokenizer.tok beside a safetensors file stops the conversion (and nothing blocks on it)
mkdir -p "$T/beside" && rm -f "$T/beside/tokenizer.tok" && mkfifo "$T/beside/tokenizer.tok"
refuses "convert's tokenizer.tok beside" fifo "$T/beside/tokenizer.tok" \
    "$A" convert "$M" "$T/beside/m.safetensors"
[ ! -e "$T/beside/m.safetensors" ] && pass "no safetensors file either" || fail "m.safetensors written"

# a run folder whose log.jsonl or ckpt.bin is a FIFO: training stops at once, saying so
for f in log.jsonl ckpt.bin; do
    rm -rf "$T/run2" && mkdir "$T/run2"
    refuses "train's $f" fifo "$T/run2/$f" "$A" train -q --data "$TXT" --preset tiny --max-steps 2 \
        --eval-every 0 --sample-every 0 -o "$T/run2" --force
done
# plot's PNGs
mkdir -p "$T/plots" && rm -rf "$T/plots/loss.png" && mkfifo "$T/plots/loss.png"
refuses "plot's loss.png" fifo "$T/plots/loss.png" "$A" plot "$T/run" -o "$T/plots"

for w in prepare export llmc json html; do
    case $w in
        prepare) writes_through prepare "$X" "$A" prepare -q -t byte -o "$X" "$TXT" ;;
        export) writes_through "tokenizer export" "$X" "$A" tokenizer export -t byte -o "$X" ;;
        llmc) writes_through "convert to safetensors" "$X" "$A" convert "$M" "$X" --to safetensors ;;
        json) writes_through "attention --json" "$X" "$A" attention -m "$M" -p "To be" --json "$X" ;;
        html) writes_through "report -o" "$X" "$A" report "$T/run" -o "$X" ;;
    esac
done
# a checkpoint through a link: the run's ckpt.bin a link to a file elsewhere
rm -rf "$T/run3" && mkdir "$T/run3" && cp "$M" "$T/elsewhere.bin" && ln -s "$T/elsewhere.bin" "$T/run3/ckpt.bin"
if "$A" train -q --resume "$T/run3/ckpt.bin" --data "$TXT" --max-steps 5 --eval-every 0 --sample-every 0 \
    -o "$T/run3" > /dev/null 2> "$T/err" && [ -L "$T/run3/ckpt.bin" ] && ! cmp -s "$M" "$T/elsewhere.bin"; then
    pass "train writes its checkpoint through a symlink (the link kept)"
else fail "checkpoint through a symlink: $(describe "$T/run3/ckpt.bin"): $(cat "$T/err")"; fi
finish
