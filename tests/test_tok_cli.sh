#!/usr/bin/env bash
# test_tok_cli.sh - `andrea tokenizer` and `andrea prepare` end to end: train each
# kind, encode -> decode gives the input bytes back, prepare writes valid token
# files for text and JSONL chat, and errors are one line with a non-zero exit.
set -u
A=${ANDREA_BIN:?ANDREA_BIN not set}
D=${ANDREA_DATA_DIR:-../shared/data}
T=${ANDREA_TMP:-/tmp/test_tok_cli}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$T"
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

TEXT=$D/tinyshakespeare.txt
[ -f "$TEXT" ] || TEXT=$HERE/fixtures/gpt2_adversarial.txt
head -c 200000 "$TEXT" > "$T/train.txt"

# train every kind and round-trip a file with non-ASCII and odd whitespace through the CLI
for kind in byte char harris bpe; do
    if ! "$A" tokenizer train -q -k "$kind" -i "$T/train.txt" -o "$T/$kind.tok" -V 600 -N 300 2> "$T/err"; then
        if grep -q "PCRE2" "$T/err"; then echo "skip $kind (built without PCRE2)"; continue; fi
        bad "train $kind: $(cat "$T/err")"; continue
    fi
    probe=$T/train.txt
    [ "$kind" = char ] || probe=$HERE/fixtures/gpt2_adversarial.txt
    "$A" tokenizer encode -t "$T/$kind.tok" -i "$probe" > "$T/$kind.ids" &&
        "$A" tokenizer decode -t "$T/$kind.tok" -i "$T/$kind.ids" > "$T/$kind.back" &&
        cmp -s "$probe" "$T/$kind.back" && ok "$kind: encode | decode is the identity" ||
        bad "$kind: round trip"
    "$A" tokenizer info -t "$T/$kind.tok" > "$T/info" && grep -q "kind: *$kind" "$T/info" &&
        ok "$kind: info" || bad "$kind: info"
done

# JSON support (jansson) is optional at build time
HAVE_JSON=1
if ! "$A" tokenizer export -t byte -o "$T/probe.json" 2> "$T/err" && grep -q jansson "$T/err"; then
    HAVE_JSON=0; echo "skip JSON parts (built without jansson)"
fi
# harris_segments.json export / import keeps the identity
if [ $HAVE_JSON = 0 ]; then :
elif "$A" tokenizer export -t "$T/harris.tok" -o "$T/harris_segments.json" &&
    [ "$("$A" tokenizer info -t "$T/harris_segments.json" | grep checksum)" = \
      "$("$A" tokenizer info -t "$T/harris.tok" | grep checksum)" ]; then
    ok "harris_segments.json round trip"
else
    bad "harris_segments.json round trip"
fi

# decode with positional ids; the GPT-2 special token only with --special
if [ -f "$D/gpt2/encoder.json" ] && "$A" tokenizer info -t "gpt2:$D/gpt2" > /dev/null 2>&1; then
    [ "$("$A" tokenizer encode -t "gpt2:$D/gpt2" -p 'Hello world<|endoftext|>' --special)" = "15496 995 50256" ] &&
        ok "gpt2 --special" || bad "gpt2 --special"
    [ "$("$A" tokenizer decode -t "gpt2:$D/gpt2" 15496 995)" = "Hello world" ] && ok "gpt2 decode" || bad "gpt2 decode"
fi

# prepare: text and chat; the token file is checked on reopening
if "$A" prepare -q --check -t "$T/harris.tok" -o "$T/text.tokens" "$T/train.txt"; then
    ok "prepare text"
else
    bad "prepare text"
fi
if [ $HAVE_JSON = 1 ]; then
CHAT=$D/chat/oasst_en100_chats.jsonl
if [ -f "$CHAT" ]; then
    "$A" prepare -q --check -t byte -o "$T/chat.tokens" "$CHAT" && ok "prepare jsonl" || bad "prepare jsonl"
fi
printf '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}\n' > "$T/c.jsonl"
"$A" prepare -q -t byte -o "$T/c.tokens" "$T/c.jsonl" || bad "prepare small jsonl"
# BOS "> hi\n< hello\n" BOS: 2 + 13 tokens, 2 bytes each after the 64-byte header
[ "$(stat -c %s "$T/c.tokens")" = $((64 + 2 * 15)) ] && ok "chat rendering size" || bad "chat rendering size"

# errors: one line naming the file, non-zero exit
printf '{"messages":[{"role":"user","content":"hi"}]}\n{"messages": 3}\n' > "$T/bad.jsonl"
if "$A" prepare -q -t byte -o "$T/bad.tokens" "$T/bad.jsonl" 2> "$T/err"; then bad "bad jsonl accepted"
elif [ "$(wc -l < "$T/err")" = 1 ] && grep -q "bad.jsonl' line 2" "$T/err" && [ ! -e "$T/bad.tokens" ]; then ok "bad jsonl: $(cat "$T/err")"
else bad "bad jsonl message: $(cat "$T/err")"; fi
fi
printf 'garbage' > "$T/garbage.tok"
if "$A" tokenizer info -t "$T/garbage.tok" > /dev/null 2> "$T/err"; then bad "garbage tokenizer accepted"
elif [ "$(wc -l < "$T/err")" = 1 ] && grep -q "garbage.tok" "$T/err"; then ok "garbage tokenizer: $(cat "$T/err")"
else bad "garbage tokenizer message: $(cat "$T/err")"; fi
if "$A" tokenizer decode -t byte 65 999 > /dev/null 2> "$T/err"; then bad "id 999 accepted"
elif grep -q "999" "$T/err"; then ok "bad id: $(cat "$T/err")"; else bad "bad id message"; fi
if "$A" tokenizer train -k bpe -i "$T/nope.txt" -o "$T/x.tok" 2> "$T/err"; then bad "missing input accepted"
elif grep -q "nope.txt" "$T/err"; then ok "missing input: $(cat "$T/err")"; else bad "missing input message"; fi

# prepare reads text in blocks: an unknown character's offset is counted from the start
# of the file, not of its block (a 1 KiB block puts byte 5000 in the fifth)
for i in $(seq 1 500); do echo "line $i of plain text"; done > "$T/plain.txt"
"$A" tokenizer train -q -k char -i "$T/plain.txt" -o "$T/plain_char.tok" || bad "char train (plain)"
{ head -c 5000 "$T/plain.txt"; printf 'Z'; tail -c +5001 "$T/plain.txt"; } > "$T/badchar.txt"
for bs in 1024 4194304; do
    if "$A" prepare -q -t "$T/plain_char.tok" --block-size $bs -o "$T/badchar.tokens" "$T/badchar.txt" 2> "$T/err"; then
        bad "char prepare accepted an unknown character"
    elif grep -q "U+005A 'Z' at byte offset 5000 " "$T/err" && [ "$(wc -l < "$T/err")" = 1 ]; then
        ok "char prepare, block $bs: $(cat "$T/err")"
    else bad "char prepare offset, block $bs: $(cat "$T/err")"; fi
done
"$A" prepare -q -t "$T/plain_char.tok" --block-size 1024 -o "$T/p1.tokens" "$T/plain.txt" &&
    "$A" prepare -q -t "$T/plain_char.tok" -o "$T/p2.tokens" "$T/plain.txt" && cmp -s "$T/p1.tokens" "$T/p2.tokens" &&
    ok "prepare: 1 KiB blocks give the same token file as 4 MiB" || bad "prepare: block size changes the tokens"
usage() { # usage NAME PATTERN CMD...: exit 2 and one stderr line matching PATTERN
    local name=$1 pattern=$2 rc=0; shift 2
    "$@" > /dev/null 2> "$T/err" || rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q -- "$pattern" "$T/err"; then ok "$name: $(cat "$T/err")"
    else bad "$name: exit $rc: $(cat "$T/err")"; fi
}
usage "prepare --block-size 10" "--block-size" "$A" prepare -t byte --block-size 10 -o "$T/x.tokens" "$T/plain.txt"
# --special names GPT-2's special token; any other tokenizer has none
usage "prepare --special, char" "--special is for the gpt2 tokenizer" "$A" prepare -q -t "$T/plain_char.tok" --special -o "$T/x.tokens" "$T/plain.txt"
usage "encode --special, byte" "--special is for the gpt2 tokenizer" "$A" tokenizer encode -t byte --special -p hi
[ ! -e "$T/x.tokens" ] || bad "a usage error left a token file"
# a gpt2 directory without its files names the missing file (not jansson's "line -1")
mkdir -p "$T/gpt2_empty"
if "$A" tokenizer info -t "gpt2:$T/gpt2_empty" > /dev/null 2> "$T/err"; then bad "empty gpt2 dir accepted"
elif grep -q "cannot open '$T/gpt2_empty/encoder.json': No such file" "$T/err" && ! grep -q "line -1" "$T/err"; then
    ok "missing gpt2 files: $(cat "$T/err")"
else bad "missing gpt2 files message: $(cat "$T/err")"; fi

exit $fail
