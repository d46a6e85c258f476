/*
 * test_cuda_decode_graph.c - a single sequence's decoding steps replayed from one CUDA
 * graph (graph_decode.c, cuda's attention_decode_kv) give the bits of the same ops run one
 * by one, at every position: one model on cuda, two KV caches fed the same tokens, one
 * stepped with ANDREA_CUDA_GRAPHS=0. After a prompt's prefill, 20 greedy steps, a
 * truncation and 5 more, a reset and 4 more: every step's logits are the same bits, and so
 * are both caches' keys and values at the end; the graph side captured one graph and
 * replayed every step after its first. Batched steps likewise: three caches at different
 * positions, then another set of two (a second graph). A full context is still refused. Runs on a GPU
 * (scripts/device_check.sh) and in the emulator build; skips where cuda is not listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "model/kv.h"
#include "model/model.h"
#include "test_cuda_util.h"

static int differ, steps;

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* one step of both caches by tok; returns the next greedy token (from the eager side) */
static int32_t step(andrea_model *m, andrea_kv *e, andrea_kv *g, int32_t tok) {
    int V = m->cfg.vocab;
    setenv("ANDREA_CUDA_GRAPHS", "0", 1);
    const float *le = andrea_kv_step(m, e, tok);
    float *keep = le ? malloc(sizeof(float) * (size_t)V) : NULL;
    if (keep) memcpy(keep, le, sizeof(float) * (size_t)V);
    setenv("ANDREA_CUDA_GRAPHS", "1", 1);
    const float *lg = andrea_kv_step(m, g, tok);
    CHECK(keep && lg);
    if (!keep || !lg) return free(keep), 0;
    differ += memcmp(keep, lg, sizeof(float) * (size_t)V) != 0;
    steps++;
    int32_t next = (int32_t)argmax(keep, V);
    free(keep);
    return next;
}

static int32_t steps_from(andrea_model *m, andrea_kv *e, andrea_kv *g, int32_t tok, int n) {
    for (int i = 0; i < n; i++) tok = step(m, e, g, tok);
    return tok;
}

/* 1 when the two caches' first n floats of keys and values are the same bits */
static int same_cache(const andrea_model *m, const andrea_kv *e, const andrea_kv *g, size_t n) {
    float *a = malloc(4 * sizeof(float) * n);
    if (!a) return 0;
    const andrea_backend *be = m->be;
    be->ops.download(be, a, e->k, n * sizeof(float));
    be->ops.download(be, a + n, g->k, n * sizeof(float));
    be->ops.download(be, a + 2 * n, e->v, n * sizeof(float));
    be->ops.download(be, a + 3 * n, g->v, n * sizeof(float));
    int r = memcmp(a, a + n, n * sizeof(float)) == 0 &&
            memcmp(a + 2 * n, a + 3 * n, n * sizeof(float)) == 0;
    free(a);
    return r;
}

/* Batched steps (andrea_kv_batch_step): three caches at different positions, 10 steps,
 * then two of them (another set: seen, then captured) for 5 more; eager and graph sides'
 * logits the same bits at every step. */
static void batched(andrea_model *m) {
    enum { S = 3 };
    int V = m->cfg.vocab, bdiff = 0;
    andrea_kv_batch *be = andrea_kv_batch_create(m, S), *bg = andrea_kv_batch_create(m, S);
    andrea_kv *e[S], *g[S];
    int32_t tok[S], prompt[4] = {2, 7, 1, 8};
    for (int s = 0; s < S; s++) {
        e[s] = andrea_kv_create(m), g[s] = andrea_kv_create(m);
        CHECK(e[s] && g[s] && andrea_kv_prefill(m, e[s], prompt, s + 1) &&
              andrea_kv_prefill(m, g[s], prompt, s + 1));
        tok[s] = (int32_t)((s * 5 + 3) % V);
    }
    float *keep = malloc(sizeof(float) * S * (size_t)V);
    CHECK(be && bg && keep);
    for (int i = 0; i < 15 && keep; i++) {
        int n = i < 10 ? S : 2;
        andrea_kv **se = i < 10 ? e : e + 1, **sg = i < 10 ? g : g + 1; /* then the last two */
        setenv("ANDREA_CUDA_GRAPHS", "0", 1);
        const float *le = andrea_kv_batch_step(m, be, se, tok, n);
        if (le) memcpy(keep, le, sizeof(float) * (size_t)n * V);
        setenv("ANDREA_CUDA_GRAPHS", "1", 1);
        const float *lg = andrea_kv_batch_step(m, bg, sg, tok, n);
        CHECK(le && lg);
        if (!le || !lg) break;
        bdiff += memcmp(keep, lg, sizeof(float) * (size_t)n * V) != 0;
        for (int s = 0; s < n; s++) tok[s] = (int32_t)argmax(keep + (size_t)s * V, V);
    }
    long replayed, captured;
    andrea_kv_batch_graph_counts(bg, &replayed, &captured);
    printf("test_cuda_decode_graph: batched, 10 steps of 3 sequences then 5 of 2: %d differ; "
           "graphs captured %ld, steps replayed %ld\n", bdiff, captured, replayed);
    CHECK(bdiff == 0 && captured == 2 && replayed == 9 + 4);
    for (int s = 0; s < S; s++) andrea_kv_free(e[s]), andrea_kv_free(g[s]);
    andrea_kv_batch_free(be), andrea_kv_batch_free(bg);
    free(keep);
}

int main(void) {
    tu_cuda_or_skip("test_cuda_decode_graph");
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *m = andrea_model_create_on(&cfg, 7, "cuda");
    CHECK(m && m->be->graph && m->be->ops.attention_decode_kv);
    if (!m) return tu_finish("test_cuda_decode_graph");
    andrea_kv *e = andrea_kv_create(m), *g = andrea_kv_create(m);
    CHECK(e && g);
    if (!e || !g) return tu_finish("test_cuda_decode_graph");

    int32_t prompt[5] = {3, 1, 4, 1, 5};
    CHECK(andrea_kv_prefill(m, e, prompt, 5) && andrea_kv_prefill(m, g, prompt, 5));
    int32_t tok = steps_from(m, e, g, 9 % cfg.vocab, 20);
    CHECK(andrea_kv_truncate(e, 3) == 0 && andrea_kv_truncate(g, 3) == 0);
    tok = steps_from(m, e, g, tok, 5);
    andrea_kv_reset(e), andrea_kv_reset(g);
    steps_from(m, e, g, 2 % cfg.vocab, 4);
    long replayed, captured;
    andrea_kv_graph_counts(g, &replayed, &captured);
    int cache_same = same_cache(m, e, g, (size_t)cfg.n_layer * cfg.ctx * cfg.d_model);
    printf("test_cuda_decode_graph: %d steps (positions 5-24, 3-7, 0-3): %d differ; graphs "
           "captured %ld, steps replayed %ld; the caches: %s\n", steps, differ, captured,
           replayed, cache_same ? "the same bits" : "DIFFER");
    CHECK(steps == 29 && differ == 0 && cache_same);
    CHECK(captured == 1 && replayed == steps - 1);
    long eager_replayed, eager_captured;
    andrea_kv_graph_counts(e, &eager_replayed, &eager_captured);
    CHECK(eager_replayed == 0 && eager_captured == 0);

    batched(m);

    /* a full context is refused before anything is replayed */
    setenv("ANDREA_CUDA_GRAPHS", "1", 1);
    int pos = andrea_kv_pos(g), ok = 1;
    for (; pos < cfg.ctx && ok; pos++) ok = andrea_kv_step(m, g, 1) != NULL;
    CHECK(ok && andrea_kv_pos(g) == cfg.ctx);
    CHECK(andrea_kv_step(m, g, 1) == NULL && strstr(andrea_error(), "context full"));
    tu_check_no_cuda_error("test_cuda_decode_graph");
    andrea_kv_free(e), andrea_kv_free(g);
    andrea_model_free(m);
    return tu_finish("test_cuda_decode_graph");
}
