/* cmd_tokenizer.c - `andrea tokenizer train|encode|decode|info|export`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "andrea_tokenizer.h"
#include "args.h"
#include "util/atomic_file.h"
#include "commands.h"
#include "util/file.h"
#include "util/perf.h"

#define NSPECS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A whole input: a mapped file, or stdin read into memory ("-"). */
typedef struct {
    const uint8_t *p;
    size_t n;
    int mapped;
    andrea_bytes owned;
} input;

static int input_open(const char *path, input *in) {
    memset(in, 0, sizeof *in);
    if (strcmp(path, "-") == 0) {
        uint8_t buf[1 << 16];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, stdin)) > 0)
            if (andrea_bytes_append(&in->owned, buf, k)) return -1;
        in->p = in->owned.data;
        in->n = in->owned.len;
        return 0;
    }
    uint64_t size;
    int fd = andrea_file_open_regular(path, NULL, SIZE_MAX, &size);
    if (fd < 0) {
        fprintf(stderr, "andrea tokenizer: %s\n", andrea_error());
        return -1;
    }
    in->n = (size_t)size;
    if (in->n) {
        void *m = mmap(NULL, in->n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "andrea tokenizer: cannot map '%s': %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
        in->p = m;
        in->mapped = 1;
    }
    close(fd);
    return 0;
}

static void input_close(input *in) {
    if (in->mapped) munmap((void *)in->p, in->n);
    andrea_bytes_free(&in->owned);
}

static andrea_tokenizer *open_tok(const char *spec) {
    andrea_tokenizer *t = andrea_tokenizer_open(spec);
    if (!t) fprintf(stderr, "andrea tokenizer: %s\n", andrea_error());
    return t;
}

/* ---- train ------------------------------------------------------------------------------- */

/* The trainers' progress lines, printed as they come. */
static void print_progress(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}


/* A tokenizer file written whole, then renamed over `out` (util/atomic_file.h): an
 * interrupted save never leaves a torn .tok nor destroys the previous one. */
typedef struct {
    const andrea_tokenizer *t;
    int json; /* 1: harris_segments.json, 0: .tok */
} tok_out;

static int write_tok(const char *tmp, void *ctx) {
    const tok_out *o = ctx;
    return o->json ? andrea_tokenizer_harris_export(o->t, tmp) : andrea_tokenizer_save(o->t, tmp);
}

static int save_atomic(const andrea_tokenizer *t, const char *out, int json) {
    tok_out o = {t, json};
    return andrea_atomic_write_with(out, write_tok, &o);
}

static int tok_train(int argc, char **argv) {
    const char *kind = "bpe", *in_path = NULL, *out = NULL, *json = NULL;
    int vocab = 4096, segments = 2048, min_variety = 20, max_len = 16, quiet = 0;
    uint64_t min_count = 2, max_pieces = (uint64_t)1 << 22;
    arg_spec specs[] = {
        {"kind", 'k', ARG_STR, &kind, "bpe | harris | char | byte (default bpe)", 0},
        {"input", 'i', ARG_STR, &in_path, "training text (UTF-8; '-' = stdin)", 0},
        {"output", 'o', ARG_STR, &out, "tokenizer file to write (.tok)", 0},
        {"vocab-size", 'V', ARG_INT, &vocab, "bpe: total vocabulary incl. 256 bytes + BOS (4096)", 0},
        {"segments", 'N', ARG_INT, &segments, "harris: number of segments N; V = N + 257 (2048)", 0},
        {"min-variety", 0, ARG_INT, &min_variety, "harris: smallest variety spike that cuts (20)", 0},
        {"max-len", 0, ARG_INT, &max_len, "harris: longest segment in bytes (16)", 0},
        {"min-count", 0, ARG_U64, &min_count, "harris: min segment count; bpe: min pair count (2)", 0},
        {"max-pieces", 0, ARG_U64, &max_pieces, "bpe: cap on distinct pre-tokenized pieces (4194304)", 0},
        {"json", 0, ARG_STR, &json, "harris: also write harris_segments.json here", 0},
        {"quiet", 'q', ARG_FLAG, &quiet, "no progress on stderr", 0},
    };
    int rc = args_parse("tokenizer train", argc, argv, specs, NSPECS(specs), NULL, 0, NULL);
    if (rc == 1) {
        args_usage("tokenizer train", "-k KIND -i TEXT -o OUT.tok [flags]", specs, NSPECS(specs));
        return 0;
    }
    if (rc) return 2;
    if (!in_path || !out) {
        fprintf(stderr, "andrea tokenizer train: --input and --output are required\n");
        return 2;
    }
    char target[4096]; /* before minutes of training: can the outputs be written at all? */
    if (andrea_output_target(out, target, sizeof target) ||
        (json && andrea_output_target(json, target, sizeof target))) {
        fprintf(stderr, "andrea tokenizer train: %s\n", andrea_error());
        return 1;
    }
    input in;
    if (input_open(in_path, &in)) return 1;
    if (!quiet)
        fprintf(stderr, "tokenizer train: kind %s, input '%s' (%.2f MB), output '%s'\n", kind, in_path,
                (double)in.n / 1e6, out);
    double t0 = andrea_now();
    andrea_tokenizer *t = NULL;
    if (strcmp(kind, "bpe") == 0) {
        andrea_bpe_train_options o;
        andrea_bpe_train_options_default(&o);
        o.vocab_size = vocab;
        o.min_frequency = (int64_t)min_count;
        o.max_pieces = (size_t)max_pieces;
        if (!quiet) o.progress = print_progress;
        if (!quiet) fprintf(stderr, "tokenizer train: vocab size %d, min pair count %lld\n", vocab, (long long)min_count);
        t = andrea_tokenizer_bpe_train(in.p, in.n, &o);
    } else if (strcmp(kind, "harris") == 0) {
        andrea_harris_train_options o;
        andrea_harris_train_options_default(&o);
        o.n_segments = segments;
        o.min_variety = min_variety;
        o.min_count = (int64_t)min_count;
        o.max_len = max_len;
        if (!quiet) o.progress = print_progress;
        if (!quiet)
            fprintf(stderr, "tokenizer train: %d segments, min variety %d, min count %lld, max len %d\n",
                    segments, min_variety, (long long)min_count, max_len);
        t = andrea_tokenizer_harris_train(in.p, in.n, &o);
    } else if (strcmp(kind, "char") == 0) {
        t = andrea_tokenizer_char_train(in.p, in.n);
    } else if (strcmp(kind, "byte") == 0) {
        t = andrea_tokenizer_byte();
    } else {
        fprintf(stderr, "andrea tokenizer train: --kind must be bpe, harris, char or byte, got '%s'\n", kind);
        input_close(&in);
        return 2;
    }
    if (!t) {
        fprintf(stderr, "andrea tokenizer train: '%s': %s\n", in_path, andrea_error());
        input_close(&in);
        return 1;
    }
    double train_s = andrea_now() - t0;
    int ok = save_atomic(t, out, 0) == 0;
    if (ok && json) ok = save_atomic(t, json, 1) == 0;
    if (!ok) fprintf(stderr, "andrea tokenizer train: %s\n", andrea_error());
    if (ok && !quiet) {
        andrea_ids ids = {0};
        double e0 = andrea_now();
        if (andrea_tokenizer_encode(t, in.p, in.n, 0, &ids) == 0)
            fprintf(stderr, "tokenizer train: wrote '%s': %s, V %d, BOS %d, checksum %016llx; trained in "
                    "%.1fs; the training text is %zu tokens, %.3f bytes/token (encoded at %.1f MB/s)\n",
                    out, andrea_tokenizer_kind_name(andrea_tokenizer_kind(t)),
                    andrea_tokenizer_vocab_size(t), andrea_tokenizer_bos(t),
                    (unsigned long long)andrea_tokenizer_checksum(t), train_s, ids.len,
                    ids.len ? (double)in.n / (double)ids.len : 0.0, (double)in.n / 1e6 / (andrea_now() - e0 + 1e-9));
        andrea_ids_free(&ids);
    }
    andrea_tokenizer_free(t);
    input_close(&in);
    return ok ? 0 : 1;
}

/* ---- encode / decode ------------------------------------------------------------------------ */

static int tok_encode(int argc, char **argv) {
    const char *spec = "byte", *in_path = NULL, *prompt = NULL, *format = "ids";
    int special = 0;
    arg_spec specs[] = {
        {"tokenizer", 't', ARG_STR, &spec, "byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json", 0},
        {"input", 'i', ARG_STR, &in_path, "text file to encode ('-' = stdin, the default)", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text to encode, instead of a file", 0},
        {"special", 0, ARG_FLAG, &special, "gpt2: '<|endoftext|>' in the text is the special token", 0},
        {"format", 'f', ARG_STR, &format, "ids (one line, space separated) | count | pieces", 0},
    };
    int rc = args_parse("tokenizer encode", argc, argv, specs, NSPECS(specs), NULL, 0, NULL);
    if (rc == 1) {
        args_usage("tokenizer encode", "-t TOKENIZER [-i FILE | -p TEXT] [flags]", specs, NSPECS(specs));
        return 0;
    }
    if (rc) return 2;
    if (strcmp(format, "ids") && strcmp(format, "count") && strcmp(format, "pieces")) {
        fprintf(stderr, "andrea tokenizer encode: --format must be ids, count or pieces, got '%s'\n", format);
        return 2;
    }
    andrea_tokenizer *t = open_tok(spec);
    if (!t) return 1;
    if (special && andrea_tokenizer_kind(t) != ANDREA_TOK_GPT2) {
        fprintf(stderr, "andrea tokenizer encode: --special is for the gpt2 tokenizer "
                "('<|endoftext|>'); '%s' is a %s tokenizer without a special token\n", spec,
                andrea_tokenizer_kind_name(andrea_tokenizer_kind(t)));
        andrea_tokenizer_free(t);
        return 2;
    }
    input in = {0};
    if (prompt) {
        in.p = (const uint8_t *)prompt;
        in.n = strlen(prompt);
    } else if (input_open(in_path ? in_path : "-", &in)) {
        andrea_tokenizer_free(t);
        return 1;
    }
    andrea_ids ids = {0};
    int ok = andrea_tokenizer_encode(t, in.p, in.n, special ? ANDREA_ENCODE_SPECIAL : 0, &ids) == 0;
    if (!ok) {
        fprintf(stderr, "andrea tokenizer encode: %s%s%s\n", in_path ? in_path : "", in_path ? ": " : "",
                andrea_error());
    } else if (strcmp(format, "count") == 0) {
        printf("%zu tokens, %zu bytes, %.3f bytes/token\n", ids.len, in.n,
               ids.len ? (double)in.n / (double)ids.len : 0.0);
    } else if (strcmp(format, "pieces") == 0) {
        for (size_t i = 0; i < ids.len; i++) { /* id, then the token's bytes with escapes */
            size_t len;
            const uint8_t *p = andrea_tokenizer_token_bytes(t, ids.data[i], &len);
            printf("%d\t'", ids.data[i]);
            for (size_t k = 0; k < len; k++) {
                if (p[k] == '\n') printf("\\n");
                else if (p[k] == '\t') printf("\\t");
                else if (p[k] == '\\' || p[k] == '\'') printf("\\%c", p[k]);
                else if (p[k] < 0x20 || p[k] == 0x7f) printf("\\x%02x", p[k]);
                else putchar(p[k]);
            }
            printf("'\n");
        }
    } else {
        for (size_t i = 0; i < ids.len; i++) printf(i ? " %d" : "%d", ids.data[i]);
        printf("\n");
    }
    andrea_ids_free(&ids);
    if (!prompt) input_close(&in);
    andrea_tokenizer_free(t);
    return ok ? 0 : 1;
}

static int tok_decode(int argc, char **argv) {
    const char *spec = "byte", *in_path = NULL;
    arg_spec specs[] = {
        {"tokenizer", 't', ARG_STR, &spec, "byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json", 0},
        {"input", 'i', ARG_STR, &in_path, "file of whitespace-separated ids ('-' = stdin, the default)", 0},
    };
    const char *pos[4096];
    int npos = 0;
    int rc = args_parse("tokenizer decode", argc, argv, specs, NSPECS(specs), pos, 4096, &npos);
    if (rc == 1) {
        args_usage("tokenizer decode", "-t TOKENIZER [-i FILE | ID ...]", specs, NSPECS(specs));
        return 0;
    }
    if (rc) return 2;
    andrea_tokenizer *t = open_tok(spec);
    if (!t) return 1;
    andrea_ids ids = {0};
    int ok = 1;
    if (npos) {
        for (int i = 0; i < npos && ok; i++) {
            char *end;
            errno = 0;
            long v = strtol(pos[i], &end, 10);
            if (*end || errno || v < INT32_MIN || v > INT32_MAX) {
                fprintf(stderr, "andrea tokenizer decode: argument %d: '%s' is not a token id\n", i + 1, pos[i]);
                ok = 0;
            } else {
                andrea_ids_push(&ids, (int32_t)v);
            }
        }
    } else {
        const char *name = in_path ? in_path : "-";
        uint64_t size;
        FILE *f = strcmp(name, "-") == 0 ? stdin : andrea_file_fopen_regular(name, NULL, 0, &size);
        if (!f) {
            fprintf(stderr, "andrea tokenizer decode: %s\n", andrea_error());
            andrea_tokenizer_free(t);
            return 1;
        }
        /* ids separated by whitespace; line numbers in errors */
        long line = 1, v;
        int c;
        while (ok) {
            while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','))
                line += c == '\n';
            if (c == EOF) break;
            ungetc(c, f);
            if (fscanf(f, "%ld", &v) != 1 || v < INT32_MIN || v > INT32_MAX) {
                fprintf(stderr, "andrea tokenizer decode: '%s' line %ld: expected a token id\n", name, line);
                ok = 0;
                break;
            }
            andrea_ids_push(&ids, (int32_t)v);
        }
        if (f != stdin) fclose(f);
    }
    andrea_bytes out = {0};
    if (ok && andrea_tokenizer_decode(t, ids.data, ids.len, &out)) {
        fprintf(stderr, "andrea tokenizer decode: %s\n", andrea_error());
        ok = 0;
    }
    if (ok && out.len) fwrite(out.data, 1, out.len, stdout);
    andrea_bytes_free(&out);
    andrea_ids_free(&ids);
    andrea_tokenizer_free(t);
    return ok ? 0 : 1;
}

/* ---- info / export ------------------------------------------------------------------------- */

static int tok_info(int argc, char **argv) {
    const char *spec = "byte", *prompt = "The unbelievable walkers were walking home.";
    int show = 20;
    arg_spec specs[] = {
        {"tokenizer", 't', ARG_STR, &spec, "byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json", 0},
        {"prompt", 'p', ARG_STR, &prompt, "example text to show encoded", 0},
        {"show", 'n', ARG_INT, &show, "how many learned tokens to list (20)", 0},
    };
    const char *pos[1];
    int npos = 0;
    int rc = args_parse("tokenizer info", argc, argv, specs, NSPECS(specs), pos, 1, &npos);
    if (rc == 1) {
        args_usage("tokenizer info", "-t TOKENIZER", specs, NSPECS(specs));
        return 0;
    }
    if (rc) return 2;
    if (npos) spec = pos[0];
    andrea_tokenizer *t = open_tok(spec);
    if (!t) return 1;
    int kind = andrea_tokenizer_kind(t);
    int32_t V = andrea_tokenizer_vocab_size(t), bos = andrea_tokenizer_bos(t);
    andrea_bytes blob = {0};
    andrea_tokenizer_serialize(t, &blob);
    printf("tokenizer:  %s\nkind:       %s\nvocab:      %d\nbos:        %d\nchecksum:   %016llx\n"
           "blob bytes: %zu\n", spec, andrea_tokenizer_kind_name(kind), V, bos,
           (unsigned long long)andrea_tokenizer_checksum(t), blob.len);
    andrea_bytes_free(&blob);
    int32_t first = kind == ANDREA_TOK_CHAR ? 0 : kind == ANDREA_TOK_GPT2 ? 256 : 257;
    if (kind != ANDREA_TOK_BYTE && show > 0) {
        printf("first learned tokens (id 'bytes'):");
        for (int32_t id = first; id < V && id < first + show; id++) {
            size_t len;
            const uint8_t *p = andrea_tokenizer_token_bytes(t, id, &len);
            printf(" %d'", id);
            for (size_t k = 0; k < len; k++) printf(p[k] == '\n' ? "\\n" : "%c", p[k]);
            printf("'");
        }
        printf("\n");
    }
    andrea_ids ids = {0};
    if (andrea_tokenizer_encode(t, prompt, strlen(prompt), 0, &ids) == 0) {
        printf("example:    \"%s\" -> %zu tokens:", prompt, ids.len);
        for (size_t i = 0; i < ids.len; i++) {
            size_t len;
            const uint8_t *p = andrea_tokenizer_token_bytes(t, ids.data[i], &len);
            printf(" %s%.*s", i ? "|" : "", (int)len, (const char *)p);
        }
        printf("\n");
    } else {
        printf("example:    cannot encode \"%s\": %s\n", prompt, andrea_error());
    }
    andrea_ids_free(&ids);
    andrea_tokenizer_free(t);
    return 0;
}

static int tok_export(int argc, char **argv) {
    const char *spec = NULL, *out = NULL;
    arg_spec specs[] = {
        {"tokenizer", 't', ARG_STR, &spec, "byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json", 0},
        {"output", 'o', ARG_STR, &out, "OUT.tok (any kind) or OUT.json (harris_segments.json)", 0},
    };
    int rc = args_parse("tokenizer export", argc, argv, specs, NSPECS(specs), NULL, 0, NULL);
    if (rc == 1) {
        args_usage("tokenizer export", "-t TOKENIZER -o OUT", specs, NSPECS(specs));
        return 0;
    }
    if (rc) return 2;
    if (!spec || !out) {
        fprintf(stderr, "andrea tokenizer export: --tokenizer and --output are required\n");
        return 2;
    }
    andrea_tokenizer *t = open_tok(spec);
    if (!t) return 1;
    size_t n = strlen(out);
    int json = n >= 5 && strcmp(out + n - 5, ".json") == 0;
    rc = save_atomic(t, out, json);
    if (rc) fprintf(stderr, "andrea tokenizer export: %s\n", andrea_error());
    andrea_tokenizer_free(t);
    return rc ? 1 : 0;
}

int cmd_tokenizer(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(int, char **);
        const char *help;
    } subs[] = {
        {"train", tok_train, "learn a tokenizer (bpe, harris, char) from a text file"},
        {"encode", tok_encode, "text -> ids"},
        {"decode", tok_decode, "ids -> text"},
        {"info", tok_info, "kind, vocabulary, checksum and an example"},
        {"export", tok_export, "write a tokenizer as .tok, or a harris one as harris_segments.json"},
    };
    if (argc >= 2)
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (strcmp(argv[1], subs[i].name) == 0) return subs[i].run(argc - 1, argv + 1);
    int help = argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
    FILE *f = help ? stdout : stderr;
    if (argc >= 2 && !help) fprintf(stderr, "andrea tokenizer: unknown subcommand '%s'\n", argv[1]);
    fprintf(f, "usage: andrea tokenizer <subcommand> [flags]   (--help on each for its flags)\n\n");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        fprintf(f, "  %-8s %s\n", subs[i].name, subs[i].help);
    fprintf(f, "\nTOKENIZER is: byte | gpt2 | gpt2:DIR | FILE.tok | harris_segments.json\n");
    return help ? 0 : 2;
}
