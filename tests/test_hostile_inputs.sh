#!/usr/bin/env bash
# test_hostile_inputs.sh - issue 10's reproducers: hostile or damaged inputs, built on the
# fly (tests/hostile.py), must each end in a non-zero exit with one error line naming the
# file, within 10 s: no crash, no hang on a FIFO or an endless device, no gigabytes
# allocated for a forged size, no model with NaN weights, no damaged file passed as fine.
source "$(dirname "$0")/lib.sh"
A=$ANDREA_BIN
T=$ANDREA_TMP
command -v python3 > /dev/null || { echo "skip: python3 not found" >&2; exit 77; }
python3 "$(dirname "$0")/hostile.py" "$T" || { echo "FAIL: hostile.py" >&2; exit 1; }
head -c 3000 /dev/urandom | base64 > "$T/text.txt"
mkfifo "$T/fifo"
# -k: the trainer catches SIGTERM (it saves on a stop), so a hang needs a KILL after it
to() { timeout -k 5 10 "$@"; }

# the BPE blob whose 32 merges double a token's length (was: SIGSEGV, heap overflow)
expect_error "bpe doubling: tokenizer info" "bpe_doubling.tok.*makes a token of" to "$A" tokenizer info "$T/bpe_doubling.tok"
expect_error "bpe doubling: --tokenizer" "bpe_doubling.tok.*makes a token of" to "$A" train --data "$T/text.txt" --tokenizer "$T/bpe_doubling.tok" -o "$T/o1"
expect_error "bpe doubling in a checkpoint: info" "bpe_in_ckpt.bin.*makes a token of" to "$A" info -m "$T/bpe_in_ckpt.bin"
expect_error "bpe doubling in a checkpoint: generate" "bpe_in_ckpt.bin.*makes a token of" to "$A" generate -m "$T/bpe_in_ckpt.bin" -p a -n 2
expect_error "bpe doubling in a checkpoint: eval" "bpe_in_ckpt.bin.*makes a token of" to "$A" eval -m "$T/bpe_in_ckpt.bin" -d "$T/text.txt"
# 36 bytes that asked for 8 GB: refused on the payload's length, before allocating
expect_error "harris 36 bytes" "harris_36.tok.*cannot hold" to "$A" tokenizer info "$T/harris_36.tok"

# FIFOs and endless devices: refused on the open descriptor, never read (was: hang, 3.8 GB)
expect_error "fifo: eval -m" "fifo' is not a regular file (a FIFO)" to "$A" eval -m "$T/fifo" -d "$T/text.txt"
expect_error "fifo: info -m" "fifo' is not a regular file (a FIFO)" to "$A" info -m "$T/fifo"
expect_error "fifo: generate -m" "fifo' is not a regular file (a FIFO)" to "$A" generate -m "$T/fifo" -p a
expect_error "fifo: --resume" "fifo' is not a regular file (a FIFO)" to "$A" train --resume "$T/fifo" -o "$T/o2"
expect_error "fifo: --data" "fifo' is not a regular file (a FIFO)" to "$A" train --data "$T/fifo" -o "$T/o3"
expect_error "fifo: eval -d" "fifo' is not a regular file (a FIFO)" to "$A" eval -m "$T/good.bin" -d "$T/fifo"
expect_error "fifo: --tokenizer" "fifo' is not a regular file (a FIFO)" to "$A" train --data "$T/text.txt" --tokenizer "$T/fifo" -o "$T/o4"
expect_error "fifo: score" "fifo' is not a regular file (a FIFO)" to "$A" score "$T/fifo"
expect_error "fifo: tokenizer encode" "fifo' is not a regular file (a FIFO)" to "$A" tokenizer encode -t byte -i "$T/fifo"
expect_error "/dev/zero as tokenizer" "/dev/zero' is not a regular file (a character device)" to "$A" tokenizer info /dev/zero
expect_error "fifo: prepare" "fifo' is not a regular file (a FIFO)" to "$A" prepare -q -t byte -o "$T/p.tokens" "$T/fifo"
expect_error "/dev/zero: prepare" "/dev/zero' is not a regular file (a character device)" to "$A" prepare -q -t byte -o "$T/p.tokens" /dev/zero
expect_error "NaN --lr-min" "lr-min" to "$A" train --data "$T/text.txt" --lr-min nan -o "$T/o6"
expect_error "NaN --grad-clip" "grad-clip" to "$A" train --data "$T/text.txt" --grad-clip nan -o "$T/o7"
expect_error "/dev/zero as --tokenizer" "/dev/zero' is not a regular file (a character device)" to "$A" train --data "$T/text.txt" --tokenizer /dev/zero -o "$T/o5"

# the NaN guard on load: finite weights only, however valid the checksum (was: loss nan, exit 0)
expect_error "NaN parameters: eval" "nan.bin': parameter 5 is nan" to "$A" eval -m "$T/nan.bin" -d "$T/text.txt"
expect_error "Inf parameters: generate" "inf.bin': parameter 5 is inf" to "$A" generate -m "$T/inf.bin" -p a
expect_error "NaN parameters: info -m" "nan.bin': parameter 5 is nan" to "$A" info -m "$T/nan.bin"
# finite weights that are useless (issue 22): the probe forward overflows; one line, exit 1
for cmd in eval generate info; do
    case $cmd in
        eval) args=(eval -m "$T/blown.bin" -d "$T/text.txt") ;;
        generate) args=(generate -m "$T/blown.bin" -p a -n 2) ;;
        info) args=(info -m "$T/blown.bin") ;;
    esac
    expect_error "1e10 weights: $cmd" "blown.bin' is unusable: its largest weight is 1e+10" to "$A" "${args[@]}"
done
expect_error "3e38 weight: generate" "big_weight.bin' is unusable: its largest weight is 3e+38" to "$A" generate -m "$T/big_weight.bin" -p a -n 2
expect_error "1e10 weights: chat" "blown.bin' is unusable" to "$A" chat -m "$T/blown.bin"
expect_error "1e10 weights: convert" "blown.bin' is unusable" to "$A" convert "$T/blown.bin" "$T/blown.safetensors"
expect_error "NaN best loss in STAT" "nan_best.bin': its best validation loss is nan" to "$A" info -m "$T/nan_best.bin"
expect_error "beta2 = 1 saved" "resuming '$T/beta2_one.bin' (its saved options, with the flags given): need 0 <= --beta1, --beta2 < 1" \
    to "$A" train --resume "$T/beta2_one.bin" --data "$T/text.txt" --batch 2 --grad-accum 1 --max-steps 9 --lr 1e-3 -o "$T/o8"
expect_error "duplicate GGUF key" "key 'general.architecture' appears twice" to "$A" info -m "$T/dup_key.gguf"
# loose validation
expect_error "norm_eps inf" "inf_eps.bin': norm_eps inf" to "$A" info -m "$T/inf_eps.bin"
expect_error "negative step" "neg_step.bin': negative step -5" to "$A" info -m "$T/neg_step.bin"
expect_error "reserved bits" "reserved_bits.bin': section 'STAT' has reserved bits set" to "$A" info -m "$T/reserved_bits.bin"
expect_error "NaN lr-min" "nan_lr_min.bin': option lr-min is nan" to "$A" info -m "$T/nan_lr_min.bin"
expect_error "NaN grad-clip" "nan_clip.bin': option grad-clip is nan" to "$A" info -m "$T/nan_clip.bin"
expect_error "negative weight decay" "neg_wd.bin': option weight-decay is -0.5" to "$A" info -m "$T/neg_wd.bin"
expect_error "all-zero RNG state" "zero_rng.bin': its batch sampler state is all zero" to "$A" info -m "$T/zero_rng.bin"
expect_error "bad preamble size" "bad_preamble.bin': version 2 with a preamble of 16 bytes" to "$A" info -m "$T/bad_preamble.bin"
# ids are int32: a token file's vocabulary above INT32_MAX came back negative
expect_error "token file vocab > INT32_MAX" "huge_vocab.tokens': bad vocab size 2147483649" to "$A" train --data "$T/huge_vocab.tokens" --tokenizer byte -o "$T/o6"
# info -m reads the whole file (was: the header only, exit 0)
expect_error "info -m bit flip" "flip.bin': checksum mismatch" to "$A" info -m "$T/flip.bin"
head -c 30000 "$(dirname "$0")/fixtures/ckpt_v1.bin" > "$T/v1_trunc.bin"
expect_error "info -m truncated v1" "v1_trunc.bin': truncated (30000 of" to "$A" info -m "$T/v1_trunc.bin"
# 9.7 GB of holes behind a consistent header: refused before allocating or reading it
expect_error "sparse 9.7 GB: info -m" "sparse.bin': checksum mismatch" to "$A" info -m "$T/sparse.bin"
expect_error "sparse 9.7 GB: generate" "sparse.bin': checksum mismatch" to "$A" generate -m "$T/sparse.bin" -p a
# and the sane file still loads (the checks above are not refusing everything)
if to "$A" info -m "$T/good.bin" > "$T/info.txt" 2>&1 && grep -q "verified: the whole file" "$T/info.txt"; then
    pass "good checkpoint: info -m verifies it"
else
    fail "good checkpoint: $(cat "$T/info.txt")"
fi
rm -f "$T/sparse.bin"
finish
