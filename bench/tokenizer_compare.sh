#!/usr/bin/env bash
# tokenizer_compare.sh - our GPT-2 BPE against the npm reference on the same input,
# in one run, plus the bytes-per-token table of every tokenizer kind.
#   bench/tokenizer_compare.sh [BUILD_DIR] [DATA_DIR]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
DATA=${2:-${ANDREA_DATA_DIR:-$HERE/../../shared/data}}
"$BUILD/bench/bench_tokenizer" "$DATA"
echo
if [ -d "$HERE/../tests/fixtures/node_modules/js-tiktoken" ] && command -v node > /dev/null; then
    node "$HERE/tokenizer_reference.js" "$DATA"
else
    echo "(npm reference not installed: cd tests/fixtures && npm install --no-save js-tiktoken@1.0.21 gpt-tokenizer@2.9.0)"
fi
