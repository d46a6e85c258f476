#!/usr/bin/env bash
# shared_manifest.sh DATA_DIR OUT.json [POLICY] - the run manifest of ten real sources made
# from ../shared/data (its README.md lists the files and the books' byte offsets):
#   six Gutenberg books, each a source of its own, documents = paragraph blocks of at
#   least 2,000 bytes; tinyshakespeare, documents = blocks of speeches (>= 1,000 bytes);
#   the OASST best-path chats and all-paths chats (one conversation = one document); the
#   WordNet dictionary, one `> define X` / `< X (pos): ...` conversation per document.
# POLICY: ucb1 (default), uniform, or fixed (weight 0.1 for each book and shakespeare,
# the floors for the chats and the dictionary; "weight" is read by the fixed policy only).
# The floors and caps follow the course's chatbot configuration in spirit: chat and
# dictionary floored, nothing capped but the dictionary (list-like text lowers the loss
# trivially, spec §5.3), and a warmup on the turn-structured and narrative sources.
set -eu
D=$(cd "${1:?usage: shared_manifest.sh DATA_DIR OUT.json [POLICY]}" && pwd)
OUT=${2:?usage: shared_manifest.sh DATA_DIR OUT.json [POLICY]}
POLICY=${3:-ucb1}
for f in gutenberg_books.txt tinyshakespeare.txt chat/oasst_en100_chats.jsonl \
         chat/oasst_en100_all_paths.jsonl dictionary/wordnet_define.jsonl; do
    [ -f "$D/$f" ] || { echo "shared_manifest.sh: $D/$f not found" >&2; exit 1; }
done
G="$D/gutenberg_books.txt"
book() { # name offset bytes
    printf '  {"name": "%s", "path": "%s", "range": [%s, %s], "split": "paragraph", "min_bytes": 2000, "weight": 0.1},\n' "$1" "$G" "$2" "$3"
}
{
    printf '{"tokenizer": "byte", "val_fraction": 0.05,\n'
    printf ' "curriculum": {"policy": "%s", "ema_alpha": 0.1, "ucb_c": 50, "focus": 3, "dice": [7, 42],\n' "$POLICY"
    printf '                "coverage_bonus": 0.3, "coverage_full": 0.5, "epoch_penalty": true,\n'
    printf '                "warmup_steps": 100, "warmup_sources": ["oasst-chats", "oasst-paths", "austen", "shakespeare"]},\n'
    printf ' "sources": [\n'
    book austen 0 691843
    book shelley 691845 423260
    book carroll 1115107 150404
    book doyle 1265513 562346
    book stoker 3830565 847611
    book wells 6087344 181456
    printf '  {"name": "shakespeare", "path": "%s", "split": "paragraph", "min_bytes": 1000, "weight": 0.1},\n' "$D/tinyshakespeare.txt"
    printf '  {"name": "oasst-chats", "path": "%s", "floor": 0.3},\n' "$D/chat/oasst_en100_chats.jsonl"
    printf '  {"name": "oasst-paths", "path": "%s", "floor": 0.3},\n' "$D/chat/oasst_en100_all_paths.jsonl"
    printf '  {"name": "dictionary", "path": "%s", "floor": 0.2, "cap": 0.6}\n' "$D/dictionary/wordnet_define.jsonl"
    printf ' ]}\n'
} > "$OUT"
echo "wrote $OUT: 10 sources, policy $POLICY"
