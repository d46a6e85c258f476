#!/usr/bin/env bash
# Training works with every tokenizer (byte, char, BPE, Harris, GPT-2) and from a
# token file; the checkpoint embeds the tokenizer, so generate and eval decode
# with it; a token file made by another tokenizer is a clear error.
. "$(dirname "$0")/lib.sh"
need_text data
A="$ANDREA_BIN"; T="$ANDREA_TMP"
head -c 200000 "$data" > "$T/text.txt"
run() { # run NAME TOKENIZER-FLAGS... : 30 quick steps, then generate and eval
    local name=$1; shift
    "$A" train --data "$T/text.txt" "$@" --preset tiny --batch 4 --seq 32 --max-steps 30 \
        --eval-every 0 --eval-batches 5 -q -t 2 -o "$T/$name" || { fail "$name: train"; return; }
    local v; v=$("$A" info -m "$T/$name/ckpt.bin" | grep -o 'vocab [0-9]*')
    local g; g=$("$A" generate -m "$T/$name/ckpt.bin" -p "KING" -n 12 --seed 1 2>/dev/null) || { fail "$name: generate"; return; }
    [[ "$g" == KING* ]] || { fail "$name: generated text does not start with the prompt: $g"; return; }
    "$A" eval -m "$T/$name/ckpt.bin" -d "$T/text.txt" --max-batches 2 > "$T/$name.eval" || { fail "$name: eval"; return; }
    pass "$name: trained ($v), generated '$(echo "$g" | head -c 30 | tr '\n' ' ')', $(grep -o 'loss [0-9.]*' "$T/$name.eval")"
}
run byte --tokenizer byte
run char --tokenizer char
"$A" tokenizer train -k bpe -i "$T/text.txt" -V 512 -o "$T/bpe.tok" -q || fail "bpe tokenizer train"
run bpe --tokenizer "$T/bpe.tok"
"$A" tokenizer train -k harris -i "$T/text.txt" -N 256 -o "$T/harris.tok" --json "$T/harris_segments.json" -q || fail "harris tokenizer train"
run harris --tokenizer "$T/harris.tok"
run harris_json --tokenizer "$T/harris_segments.json"
if [ -f "${ANDREA_DATA_DIR:-}/gpt2/encoder.json" ] && "$A" tokenizer info gpt2:"$ANDREA_DATA_DIR/gpt2" > /dev/null 2>&1; then
    run gpt2 --tokenizer "gpt2:$ANDREA_DATA_DIR/gpt2"
    # vocab came from the tokenizer, not the preset
    "$A" info -m "$T/gpt2/ckpt.bin" | grep -q 'vocab 50257' && pass "gpt2: V = 50257" || fail "gpt2 vocab"
else echo "note: GPT-2 tokenizer unavailable in this build; gpt2 case skipped"; fi

# token files: prepare with BPE, train from the token file, eval it
"$A" prepare -t "$T/bpe.tok" -o "$T/text.tokens" -q "$T/text.txt" || fail "prepare"
"$A" train --data "$T/text.tokens" --tokenizer "$T/bpe.tok" --preset tiny --batch 4 --seq 32 --max-steps 10 -q -o "$T/tokfile" \
    && pass "trained from a token file" || fail "train from token file"
"$A" eval -m "$T/tokfile/ckpt.bin" -d "$T/text.tokens" --max-batches 2 > /dev/null && pass "eval on a token file" || fail "eval token file"
expect_error "token file, other tokenizer" "made by a different tokenizer" "$A" eval -m "$T/harris/ckpt.bin" -d "$T/text.tokens"
expect_error "token file without tokenizer" "say which tokenizer made it" "$A" train --data "$T/text.tokens" --preset tiny --seq 32 -o "$T/x"
expect_error "missing tokenizer file" "nope.tok" "$A" train --data "$T/text.txt" --tokenizer "$T/nope.tok" -o "$T/x"
finish
