/*
 * cmd_chat.c - `andrea chat`: an interactive conversation in ANDREA's turn
 * format (docs/cli.md): user lines start with "> ", model lines with "< ".
 * Every turn the transcript is re-encoded and prefilled in one batched pass;
 * when it no longer fits the context, the oldest turns are dropped (and the
 * user is told). The model's reply ends at BOS, at "\n>" (it starting the next
 * user turn), at a --stop string, or after -n tokens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "backend_flags.h"
#include "commands.h"
#include "sampler_flags.h"
#include "threads.h"

typedef struct {
    andrea_bytes *reply;
} chat_sink;

static void emit_reply(const void *bytes, size_t n, void *user) {
    chat_sink *s = user;
    fwrite(bytes, 1, n, stdout);
    fflush(stdout);
    andrea_bytes_append(s->reply, bytes, n);
}

/* Drops the first turn ("> ...\n< ...\n") of the transcript; 0 if none left. */
static int drop_oldest_turn(andrea_bytes *t) {
    for (size_t i = 1; i + 2 < t->len; i++)
        if (t->data[i] == '\n' && t->data[i + 1] == '>' && t->data[i + 2] == ' ') {
            memmove(t->data, t->data + i + 1, t->len - i - 1);
            t->len -= i + 1;
            return 1;
        }
    return 0;
}

int cmd_chat(int argc, char **argv) {
    const char *model_path = NULL, *stop = NULL;
    int n_predict = 256, threads = 0;
    uint64_t seed = 0;
    int exact_prefill = 0;
    const char *quant = "auto", *backend = NULL;
    int qkind = ANDREA_QUANT_NONE;
    andrea_sampler s;
    andrea_sampler_default(&s);
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint to talk to", 0},
        {"n-predict", 'n', ARG_INT, &n_predict, "max tokens per reply (256)", 0},
        SAMPLER_FLAG_SPECS(s),
        {"stop", 0, ARG_STR, &stop, "also end a reply at this text (not printed)", 0},
        EXACT_PREFILL_SPEC(exact_prefill),
        {"quant", 0, ARG_STR, &quant, "weights for decoding: auto (the file's own: f16, q8_0 or q4_0 for such a GGUF, else f32) | f32 | f16 | bf16 | int8 | q8_0 | q4_0 (auto)", 0},
        {"backend", 0, ARG_STR, &backend, "where the model runs: cpu, cpu-blas, ... (cpu)", 0},
        {"seed", 0, ARG_U64, &seed, "sampling seed (default: from the clock, printed)", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("chat", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("chat", "-m CKPT [sampler flags]   (type lines; /reset, /quit)", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (backend_check("chat", backend)) return 2;
    if (gen_flags_check("chat", model_path, n_predict, 1, &s, stop, quant, &qkind,
                        args_seen(specs, n_specs, "seed"), &seed))
        return 2;
    cli_set_threads(threads);
    gen_session gs;
    if (gen_open("chat", model_path, qkind, backend, exact_prefill, &gs)) return 1;
    andrea_model *m = gs.m;
    andrea_tokenizer *tok = gs.tok;
    andrea_kv *kv = gs.kv;
    const andrea_config *c = andrea_model_config(m);
    char desc[256];
    andrea_sampler_describe(&s, desc, sizeof desc);
    fprintf(stderr, "chat: model '%s' (T=%d, %s tokenizer) | seed %llu | turns: '> you' / '< model'"
                    " | /reset, /quit\nsampler: %s\n", model_path, c->ctx,
            andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), (unsigned long long)seed, desc);
    andrea_rng rng;
    andrea_rng_seed(&rng, seed);
    const char *stops[2] = {"\n>", stop};
    andrea_bytes transcript = {0}, reply = {0};
    andrea_ids ids = {0};
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, interactive = isatty(0);
    for (;;) {
        if (interactive) fputs("> ", stderr);
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        if (strcmp(line, "/quit") == 0) break;
        if (strcmp(line, "/reset") == 0) {
            transcript.len = 0;
            fprintf(stderr, "[conversation reset]\n");
            continue;
        }
        if (andrea_bytes_append(&transcript, "> ", 2) || andrea_bytes_append(&transcript, line, (size_t)n) ||
            andrea_bytes_append(&transcript, "\n< ", 3)) {
            rc = 1;
            break;
        }
        if (!interactive) printf("> %s\n", line);
        /* fit the transcript, leaving room for at least a short reply */
        int dropped = 0, fits = 0;
        for (;;) {
            ids.len = 0;
            if (andrea_tokenizer_encode(tok, transcript.data, transcript.len, 0, &ids)) {
                fprintf(stderr, "andrea chat: %s\n", andrea_error());
                rc = 1;
                break;
            }
            if ((long)ids.len + 16 <= c->ctx) {
                fits = 1;
                break;
            }
            if (!drop_oldest_turn(&transcript)) break;
            dropped++;
        }
        if (rc) break;
        if (!fits) {
            fprintf(stderr, "[your message is %zu tokens; with room for a reply it does not fit the "
                            "model's context of %d tokens: shorten it]\n", ids.len, c->ctx);
            transcript.len = 0; /* every older turn was dropped trying; start afresh */
            continue;
        }
        if (dropped)
            fprintf(stderr, "[context full: dropped the %d oldest turn%s]\n", dropped,
                    dropped > 1 ? "s" : "");
        andrea_kv_reset(kv);
        const float *logits = andrea_kv_prefill(m, kv, ids.data, (int)ids.len);
        int room = c->ctx - (int)ids.len;
        chat_sink sink = {&reply};
        reply.len = 0;
        andrea_gen_options g = {s, n_predict < room ? n_predict : room, stops, stop ? 2 : 1,
                                emit_reply, &sink, NULL, ids.data, (int)ids.len, 0, 0};
        andrea_gen_result res;
        fputs("< ", stdout);
        if (!logits || andrea_generate(m, kv, tok, logits, &g, &rng, &res)) {
            fprintf(stderr, "andrea chat: %s\n", andrea_error());
            rc = 1;
            break;
        }
        /* the reply ends the model's line; keep it in the transcript */
        while (reply.len && (reply.data[reply.len - 1] == '\n' || reply.data[reply.len - 1] == ' '))
            reply.len--;
        putchar('\n');
        fflush(stdout);
        andrea_bytes_append(&transcript, reply.data, reply.len);
        andrea_bytes_append(&transcript, "\n", 1);
        if (interactive)
            fprintf(stderr, "[%d tokens, %s, %.1f tok/s]\n", res.n_generated, res.stop_reason,
                    res.n_generated / (res.seconds > 0 ? res.seconds : 1e-9));
    }
    free(line);
    andrea_ids_free(&ids);
    andrea_bytes_free(&transcript);
    andrea_bytes_free(&reply);
    gen_close(&gs);
    return rc;
}
