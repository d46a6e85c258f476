/* cmd_prepare.c - `andrea prepare`: text or JSONL chat files -> one token file.
 *
 * Token stream: BOS doc BOS doc ... doc BOS. A text file is one document; a
 * JSONL chat file has one conversation per line, {"messages": [{"role":
 * "user"|"assistant", "content": "..."}, ...]}, rendered as "> user text\n"
 * and "< assistant text\n" turns. Text is read in blocks (4 MiB, --block-size)
 * cut at andrea_tokenizer_safe_cut, so memory stays bounded and the ids, and
 * the byte offsets in error messages, equal those of encoding each file whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea_tokenizer.h"
#include "args.h"
#include "commands.h"
#include "train/curriculum/docset.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file.h"
#include "util/perf.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
#endif

#define BLOCK ((size_t)4 << 20)
#define MIN_BLOCK ((size_t)1 << 10)
#define MAX_BLOCK ((size_t)64 << 20)

typedef struct {
    andrea_tokenizer *tok;
    andrea_token_writer *w;
    andrea_ids ids;
    int flags, quiet;
    size_t block; /* bytes read at a time */
    double t0, last;
    uint64_t bytes_in, total_bytes, docs;
} prep;

static void progress(prep *p, int force, uint64_t tokens) {
    double t = andrea_now();
    if (p->quiet || (!force && t - p->last < 2.0)) return;
    p->last = t;
    double mbps = (double)p->bytes_in / 1e6 / (t - p->t0 + 1e-9);
    double eta = mbps > 0 ? (double)(p->total_bytes - p->bytes_in) / 1e6 / mbps : 0;
    fprintf(stderr, "prepare: %.1f/%.1f MB, %llu tokens, %llu documents, %.1f MB/s, ETA %.0fs\n",
            (double)p->bytes_in / 1e6, (double)p->total_bytes / 1e6,
            (unsigned long long)tokens, (unsigned long long)p->docs, mbps, eta);
}

/* Encodes s[0..n), which starts at byte `base` of `file`. */
static int emit(prep *p, const char *file, const uint8_t *s, size_t n, uint64_t base) {
    p->ids.len = 0;
    if (andrea_tokenizer_encode_part(p->tok, s, n, base, p->flags, &p->ids) ||
        andrea_token_writer_write(p->w, p->ids.data, p->ids.len)) {
        fprintf(stderr, "andrea prepare: '%s': %s\n", file, andrea_error());
        return -1;
    }
    return 0;
}

static int emit_bos(prep *p) {
    int32_t bos = andrea_tokenizer_bos(p->tok);
    if (andrea_token_writer_write(p->w, &bos, 1)) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        return -1;
    }
    return 0;
}

/* Where a block may end: andrea_tokenizer_safe_cut_flags with the encoding's flags (with
 * special tokens, never inside the whitespace run before "<|endoftext|>"). Reads
 * buf[0 .. len). */
static size_t block_cut(const uint8_t *buf, size_t len, int special) {
    return andrea_tokenizer_safe_cut_flags(buf, len, special ? ANDREA_ENCODE_SPECIAL : 0);
}

static int prepare_text(prep *p, const char *path) {
    FILE *f = andrea_file_fopen_regular(path, NULL, 0, NULL); /* never a FIFO or a device */
    if (!f) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        return -1;
    }
    size_t cap = p->block + 1, len = 0;
    uint8_t *buf = malloc(cap);
    int rc = buf ? 0 : -1, eof = 0;
    uint64_t off = 0;
    while (!rc && (!eof || len)) {
        if (!eof && len < cap) {
            size_t k = fread(buf + len, 1, cap - len, f);
            len += k;
            if (k == 0) {
                if (ferror(f)) {
                    fprintf(stderr, "andrea prepare: '%s': read error at byte %llu\n", path,
                            (unsigned long long)(off + len));
                    rc = -1;
                    break;
                }
                eof = 1;
            }
            if (!eof && len < cap) continue;
        }
        size_t cut = len;
        if (!eof) { /* keep one byte of look-ahead; cut where encoding cannot change */
            cut = block_cut(buf, len, p->flags & ANDREA_ENCODE_SPECIAL);
            if (cut == 0) {
                if (cap < MAX_BLOCK) { /* a long line: read more before cutting */
                    uint8_t *nb = realloc(buf, cap * 2);
                    if (!nb) { rc = -1; break; }
                    buf = nb;
                    cap *= 2;
                    continue;
                }
                cut = len - 1;
                fprintf(stderr, "andrea prepare: '%s': warning: no line break in %zu MB before byte %llu; "
                        "cutting there may change a few tokens\n", path, MAX_BLOCK >> 20,
                        (unsigned long long)(off + cut));
            }
        }
        if (emit(p, path, buf, cut, off)) { rc = -1; break; }
        memmove(buf, buf + cut, len - cut);
        len -= cut;
        off += cut;
        p->bytes_in += cut;
        progress(p, 0, andrea_token_writer_count(p->w));
        if (eof && len == 0) break;
    }
    if (!buf) fprintf(stderr, "andrea prepare: out of memory\n");
    free(buf);
    fclose(f);
    if (!rc) p->docs++;
    return rc;
}

#ifdef ANDREA_HAVE_JANSSON
static int prepare_jsonl(prep *p, const char *path) {
    FILE *f = andrea_file_fopen_regular(path, NULL, 0, NULL); /* never a FIFO or a device */
    if (!f) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        return -1;
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t ll;
    long lineno = 0;
    int rc = 0, first = 1;
    andrea_bytes doc = {0};
    while (!rc && (ll = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        p->bytes_in += (uint64_t)ll;
        size_t n = (size_t)ll;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
        if (n == 0) continue;
        doc.len = 0;
        if (andrea_chat_render(line, n, &doc)) {
            fprintf(stderr, "andrea prepare: '%s' line %ld: %s\n", path, lineno, andrea_error());
            rc = -1;
            break;
        }
        if (!first && emit_bos(p)) { rc = -1; break; }
        first = 0;
        if (emit(p, path, doc.data, doc.len, 0)) { rc = -1; break; }
        p->docs++;
        progress(p, 0, andrea_token_writer_count(p->w));
    }
    if (!rc && ferror(f)) {
        fprintf(stderr, "andrea prepare: '%s': read error after line %ld\n", path, lineno);
        rc = -1;
    }
    if (!rc && first) {
        fprintf(stderr, "andrea prepare: '%s': no conversations found\n", path);
        rc = -1;
    }
    free(line);
    andrea_bytes_free(&doc);
    fclose(f);
    return rc;
}
#else
static int prepare_jsonl(prep *p, const char *path) {
    (void)p;
    fprintf(stderr, "andrea prepare: '%s': JSONL needs jansson; this andrea was built without it "
            "(install libjansson-dev and rebuild)\n", path);
    return -1;
}
#endif

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int cmd_prepare(int argc, char **argv) {
    const char *spec = NULL, *out = NULL, *format = "auto", *manifest = NULL;
    int special = 0, quiet = 0, check = 0;
    uint64_t block = BLOCK;
    arg_spec specs[] = {
        {"tokenizer", 't', ARG_STR, &spec, "byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json", 0},
        {"output", 'o', ARG_STR, &out, "token file to write (with --manifest: a directory)", 0},
        {"manifest", 0, ARG_STR, &manifest, "run manifest: each source to OUT/NAME.tokens, and OUT/manifest.json", 0},
        {"format", 'f', ARG_STR, &format, "auto (.jsonl = chat, else text) | text | jsonl", 0},
        {"special", 0, ARG_FLAG, &special, "gpt2: '<|endoftext|>' in the text is the special token", 0},
        {"check", 0, ARG_FLAG, &check, "re-open the written file and validate every token", 0},
        {"block-size", 0, ARG_U64, &block, "text is read and encoded this many bytes at a time (4194304)", 0},
        {"quiet", 'q', ARG_FLAG, &quiet, "no progress on stderr", 0},
    };
    const char *inputs[256];
    int n_in = 0;
    int rc = args_parse("prepare", argc, argv, specs, (int)(sizeof specs / sizeof specs[0]), inputs,
                        256, &n_in);
    if (rc == 1) {
        args_usage("prepare", "-t TOKENIZER -o OUT.tokens FILE... (.txt or .jsonl)", specs,
                   (int)(sizeof specs / sizeof specs[0]));
        return 0;
    }
    if (rc) return 2;
    if (manifest && out && n_in == 0) return prepare_manifest(manifest, spec, out, quiet);
    if (!spec) spec = "byte";
    if (!out || n_in == 0) {
        fprintf(stderr, "andrea prepare: need -o OUT and at least one input file (see --help)\n");
        return 2;
    }
    if (strcmp(format, "auto") && strcmp(format, "text") && strcmp(format, "jsonl")) {
        fprintf(stderr, "andrea prepare: --format must be auto, text or jsonl, got '%s'\n", format);
        return 2;
    }
    if (block < MIN_BLOCK || block > MAX_BLOCK) {
        fprintf(stderr, "andrea prepare: --block-size must be between %zu and %zu bytes, got %llu\n",
                MIN_BLOCK, MAX_BLOCK, (unsigned long long)block);
        return 2;
    }
    prep p = {0};
    p.block = (size_t)block;
    p.flags = special ? ANDREA_ENCODE_SPECIAL : 0;
    p.quiet = quiet;
    p.tok = andrea_tokenizer_open(spec);
    if (!p.tok) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        return 1;
    }
    if (special && andrea_tokenizer_kind(p.tok) != ANDREA_TOK_GPT2) {
        fprintf(stderr, "andrea prepare: --special is for the gpt2 tokenizer ('<|endoftext|>'); "
                "'%s' is a %s tokenizer without a special token\n", spec,
                andrea_tokenizer_kind_name(andrea_tokenizer_kind(p.tok)));
        andrea_tokenizer_free(p.tok);
        return 2;
    }
    for (int i = 0; i < n_in; i++) {
        uint64_t size = 0;
        FILE *f = andrea_file_fopen_regular(inputs[i], NULL, 0, &size);
        if (!f) {
            fprintf(stderr, "andrea prepare: %s\n", andrea_error());
            andrea_tokenizer_free(p.tok);
            return 1;
        }
        long sz = (long)size;
        fclose(f);
        p.total_bytes += sz > 0 ? (uint64_t)sz : 0;
    }
    if (!quiet)
        fprintf(stderr, "prepare: tokenizer %s (%s, V %d, BOS %d), %d input(s), %.1f MB -> '%s'\n", spec,
                andrea_tokenizer_kind_name(andrea_tokenizer_kind(p.tok)),
                andrea_tokenizer_vocab_size(p.tok), andrea_tokenizer_bos(p.tok), n_in,
                (double)p.total_bytes / 1e6, out);
    /* written whole under a temporary name, then renamed over OUT: a kill or an error
     * never destroys an existing OUT nor leaves a half-written one */
    char tmp[4200];
    if (andrea_atomic_tmp_name(out, tmp, sizeof tmp)) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        andrea_tokenizer_free(p.tok);
        return 2;
    }
    p.w = andrea_token_writer_create(tmp, p.tok);
    if (!p.w) {
        andrea_error_rename(tmp, out);
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        andrea_tokenizer_free(p.tok);
        return 1;
    }
    p.t0 = p.last = andrea_now();
    rc = 0;
    for (int i = 0; i < n_in && !rc; i++) {
        int jsonl = strcmp(format, "jsonl") == 0 || (strcmp(format, "auto") == 0 && ends_with(inputs[i], ".jsonl"));
        rc = emit_bos(&p) || (jsonl ? prepare_jsonl(&p, inputs[i]) : prepare_text(&p, inputs[i]));
    }
    if (!rc) rc = emit_bos(&p);
    uint64_t count = andrea_token_writer_count(p.w);
    if (andrea_token_writer_close(p.w) && !rc) {
        andrea_error_rename(tmp, out);
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        rc = -1;
    }
    if (rc) {
        remove(tmp);
    } else if (andrea_atomic_publish(tmp, out)) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        rc = -1;
    } else {
        progress(&p, 1, count); /* the writer is closed (freed) by now */
        if (!quiet)
            fprintf(stderr, "prepare: wrote '%s': %llu tokens (%llu documents), %.3f bytes/token, %.1fs\n",
                    out, (unsigned long long)count, (unsigned long long)p.docs,
                    count ? (double)p.bytes_in / (double)count : 0.0, andrea_now() - p.t0);
        if (check) {
            andrea_token_file *tf = andrea_token_file_open(out, 1);
            if (!tf || andrea_token_file_count(tf) != count ||
                andrea_token_file_checksum(tf) != andrea_tokenizer_checksum(p.tok)) {
                fprintf(stderr, "andrea prepare: check of '%s' failed: %s\n", out,
                        tf ? "count or checksum differs" : andrea_error());
                rc = -1;
            } else if (!quiet) {
                fprintf(stderr, "prepare: '%s' checked: header, length and every token id are valid\n", out);
            }
            andrea_token_file_close(tf);
        }
    }
    andrea_ids_free(&p.ids);
    andrea_tokenizer_free(p.tok);
    return rc ? 1 : 0;
}
