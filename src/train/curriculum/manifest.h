/*
 * manifest.h - a run manifest: the data sources of a curriculum run and its settings, read
 * from JSON (docs/curriculum.md has the full format):
 *
 *   {"tokenizer": "byte", "val_fraction": 0.1,
 *    "curriculum": {"policy": "ucb1", "ema_alpha": 0.1, "ucb_c": 50, "focus": 3,
 *                   "dice": [7, 42], "warmup_steps": 200, "warmup_sources": ["chat"],
 *                   "coverage_bonus": 0.3, "coverage_full": 0.5, "epoch_penalty": true},
 *    "sources": [{"name": "austen", "path": "books.txt", "range": [0, 691843],
 *                 "split": "paragraph", "min_bytes": 2000, "floor": 0.2, "cap": 0.8},
 *                {"name": "chat", "path": "chats.jsonl"},
 *                {"name": "dict", "path": "dict.tokens"}]}
 *
 * Paths are relative to the manifest's directory. Needs jansson (cmake/optional.cmake).
 */
#ifndef ANDREA_TRAIN_MANIFEST_H
#define ANDREA_TRAIN_MANIFEST_H

#include <stdint.h>

#include "train/curriculum/bandit.h"

#define ANDREA_MANIFEST_MAX_SOURCES 48 /* what a checkpoint's batch position holds */
#define ANDREA_MANIFEST_NAME 48

enum { ANDREA_SRC_TEXT = 0, ANDREA_SRC_CHAT = 1, ANDREA_SRC_TOKENS = 2 };
/* How a text source is cut into documents. */
enum {
    ANDREA_SPLIT_NONE = 0,      /* the whole file (or range) is one document */
    ANDREA_SPLIT_LINE = 1,      /* every non-empty line */
    ANDREA_SPLIT_PARAGRAPH = 2, /* blocks between blank lines */
    ANDREA_SPLIT_BOOK = 3,      /* blocks between two or more blank lines */
    ANDREA_SPLIT_SEPARATOR = 4, /* blocks between occurrences of `separator` */
};

typedef struct {
    char name[ANDREA_MANIFEST_NAME];
    char *path;         /* resolved against the manifest's directory */
    int format;         /* ANDREA_SRC_* */
    int split;          /* ANDREA_SPLIT_* (text only) */
    char *separator;    /* ANDREA_SPLIT_SEPARATOR */
    int64_t min_bytes;  /* consecutive pieces merged until a document has this many bytes */
    int64_t range_off, range_len; /* text: the byte range used (len -1: to the end) */
    double floor, cap, weight;    /* 0, 1, 0 when not given */
    int warmup;         /* listed in curriculum.warmup_sources */
} andrea_manifest_source;

typedef struct {
    char *path;
    char *tokenizer;    /* NULL: not given */
    double val_fraction;/* < 0: not given */
    andrea_bandit_settings cur;
    andrea_manifest_source *src;
    int n;
} andrea_manifest;

/* Reads and checks a manifest; 0 or -1 (andrea_error() names the file and the field). */
int andrea_manifest_read(const char *path, andrea_manifest *m);
void andrea_manifest_free(andrea_manifest *m);

/* Is path a manifest: a JSON object with a "sources" array (cheap: reads the file)? */
int andrea_manifest_detect(const char *path);

/* Hash of the policy (curriculum settings, floors, caps, weights, warmup list), which a
 * resume may change: the "polish pivot". */
uint64_t andrea_manifest_policy_hash(const andrea_manifest *m);

const char *andrea_policy_name(int policy);

#endif
