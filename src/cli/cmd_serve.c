/*
 * cmd_serve.c - `andrea serve`: the command line of the OpenAI-compatible server
 * (src/server/, docs/server.md). Opens the model like generate and chat do, checks the
 * flags and hands over to serve_run. Built without libmicrohttpd, it says so.
 */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "args.h"
#include "backend_flags.h"
#include "commands.h"
#include "sampler_flags.h"
#include "threads.h"
#ifdef ANDREA_HAVE_SERVER
#include "server/server.h"
#endif

int cmd_serve(int argc, char **argv) {
#ifndef ANDREA_HAVE_SERVER
    (void)argc;
    (void)argv;
    fprintf(stderr, "andrea serve: this build has no server (it needs libmicrohttpd and jansson: "
                    "apt install libmicrohttpd-dev libjansson-dev and re-run cmake)\n");
    return 2;
#else
    const char *model_path = NULL, *host = "127.0.0.1", *api_key = NULL, *name = NULL,
               *quant = "auto", *backend = NULL, *cors = NULL;
    int port = 8080, parallel = 8, queue = 64, max_tokens = 256, max_prompt = 0, threads = 0,
        conn_timeout = 30, header_timeout = 10, max_conns = 512, per_client = 128, attn_max = 128, max_body = 1 << 20;
    int exact_prefill = 0;
    float timeout = 120;
    andrea_sampler s;
    andrea_sampler_default(&s);
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "model to serve (any format andrea reads)", 0},
        {"host", 0, ARG_STR, &host, "address to listen on (127.0.0.1)", 0},
        {"port", 0, ARG_INT, &port, "port, 0 = any free one (8080)", 0},
        {"api-key", 0, ARG_STR, &api_key, "require 'Authorization: Bearer KEY' on /v1 and /attention", 0},
        {"name", 0, ARG_STR, &name, "the model's id in /v1/models (the file name)", 0},
        {"parallel", 0, ARG_INT, &parallel, "sequences decoded together in one batch (8)", 0},
        {"queue", 0, ARG_INT, &queue, "requests waiting for a slot before 429 (64)", 0},
        {"max-tokens", 0, ARG_INT, &max_tokens, "largest max_tokens a request may ask, and the "
                                                "default (256)", 0},
        {"max-prompt", 0, ARG_INT, &max_prompt, "prompt tokens at most, 0 = the context - 1 (0)", 0},
        {"max-body", 0, ARG_INT, &max_body, "request body bytes at most (1048576)", 0},
        {"timeout", 0, ARG_FLOAT, &timeout, "seconds a request may take, queue included (120)", 0},
        {"conn-timeout", 0, ARG_INT, &conn_timeout, "seconds an idle connection stays open (30)", 0},
        {"header-timeout", 0, ARG_INT, &header_timeout, "seconds to send a whole request (10)", 0},
        {"max-conns", 0, ARG_INT, &max_conns, "open connections at most (512)", 0},
        {"max-conns-per-client", 0, ARG_INT, &per_client, "open connections from one IP address "
                                                         "at most (128)", 0},
        {"cors", 0, ARG_STR, &cors, "let web pages of this origin call the API "
                                    "(https://app.example); off by default", 0},
        {"attn-max-tokens", 0, ARG_INT, &attn_max, "tokens an /attention page shows, the last "
                                                   "ones (128)", 0},
        SAMPLER_FLAG_SPECS(s),
        EXACT_PREFILL_SPEC(exact_prefill),
        {"quant", 0, ARG_STR, &quant, "weights for decoding: auto (the file's own: f16, q8_0 or q4_0 for such a GGUF, else f32) | f32 | f16 | bf16 | int8 | q8_0 | q4_0 (auto)", 0},
        {"backend", 0, ARG_STR, &backend, "where the model runs: cpu, cpu-blas, ... (cpu)", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("serve", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("serve", "-m MODEL [--host H] [--port P] [--api-key K] [--parallel N] ...",
                   specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (backend_check("serve", backend)) return 2;
    uint64_t seed = 0;
    int qkind = 0;
    if (gen_flags_check("serve", model_path, max_tokens, 1, &s, NULL, quant, &qkind, 1, &seed))
        return 2;
    if (port < 0 || port > 65535 || parallel < 1 || parallel > 1024 || queue < 1 || max_prompt < 0 ||
        !(timeout > 0) || conn_timeout < 1 || header_timeout < 1 || max_conns < 4 || per_client < 1 || attn_max < 1 ||
        max_body < 1024) {
        fprintf(stderr, "andrea serve: need 0 <= --port <= 65535, 1 <= --parallel <= 1024, --queue >= 1, "
                        "--max-prompt >= 0, --timeout > 0, --conn-timeout and --header-timeout >= 1, "
                        "--max-conns >= 4, --max-conns-per-client >= 1, --attn-max-tokens >= 1, --max-body >= 1024\n");
        return 2;
    }
    cli_set_threads(threads);
    gen_session gs;
    if (gen_open("serve", model_path, qkind, backend, exact_prefill, &gs)) return 1;
    const andrea_config *c = andrea_model_config(gs.m);
    if (!name) {
        name = strrchr(model_path, '/');
        name = name ? name + 1 : model_path;
    }
    serve_config cfg = {host, port, api_key, name, parallel, queue, (size_t)max_body, max_tokens,
                        max_prompt ? max_prompt : c->ctx - 1, timeout, conn_timeout, header_timeout,
                        max_conns, per_client, cors, attn_max, s, gs.m, gs.tok};
    char desc[256], wdesc[96];
    andrea_sampler_describe(&s, desc, sizeof desc);
    fprintf(stderr, "serve: model '%s' as '%s' (L=%d C=%d ctx=%d V=%d, %s) | default sampler: %s\n",
            model_path, name, c->n_layer, c->d_model, c->ctx, c->vocab,
            gen_weights_desc(&gs, wdesc, sizeof wdesc), desc);
    int rc = serve_run(&cfg);
    gen_close(&gs);
    return rc;
#endif
}
