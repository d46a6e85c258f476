/*
 * test_cuda_decode_graph.c - a single sequence's decoding steps replayed from one CUDA
 * graph (graph_decode.c, cuda's attention_decode_kv) give the bits of the same ops run one
 * by one, at every position: one model on cuda, two KV caches fed the same tokens, one
 * stepped with ANDREA_CUDA_GRAPHS=0. After a prompt's prefill, 20 greedy steps, a
 * truncation and 5 more, a reset and 4 more: every step's logits are the same bits, and so
 * are both caches' keys and values at the end; the graph side captured one graph and
 * replayed every step after its first. A full context is still refused. Runs on a GPU
 * (scripts/device_check.sh) and in the emulator build; skips where cuda is not listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "model/kv.h"
#include "model/model.h"
#include "test_util.h"

#ifdef ANDREA_HAVE_CUDA
#include "backend/cuda/cuda_api.h"
#endif

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

int main(void) {
    const andrea_backend *be = andrea_backend_find("cuda");
    if (!be) {
        printf("test_cuda_decode_graph: skipped: %s\n", andrea_error());
        return 77;
    }
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

    /* a full context is refused before anything is replayed */
    setenv("ANDREA_CUDA_GRAPHS", "1", 1);
    int pos = andrea_kv_pos(g), ok = 1;
    for (; pos < cfg.ctx && ok; pos++) ok = andrea_kv_step(m, g, 1) != NULL;
    CHECK(ok && andrea_kv_pos(g) == cfg.ctx);
    CHECK(andrea_kv_step(m, g, 1) == NULL && strstr(andrea_error(), "context full"));
#ifdef ANDREA_HAVE_CUDA
    const char *err = andrea_cuda_last_error();
    if (err) printf("test_cuda_decode_graph: first CUDA error: %s\n", err);
    CHECK(err == NULL);
#endif
    andrea_kv_free(e), andrea_kv_free(g);
    andrea_model_free(m);
    return tu_finish("test_cuda_decode_graph");
}
