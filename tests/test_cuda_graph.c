/*
 * test_cuda_graph.c - training micro-batches replayed from CUDA graphs (graph_step.c,
 * cuda_graph.cu) give the bits of the same ops run one by one: two models of one seed on
 * cuda, one with ANDREA_CUDA_GRAPHS=0, trained side by side for 6 AdamW steps of 2
 * micro-batches each (the first overwrites the gradients, the second adds: two graphs),
 * with fresh token ids and a different set of masked targets (-1) in every micro-batch (the
 * captured backward divides by each replay's own count of valid rows). Every loss is equal
 * to the bit, so are the final weights and gradients; the graph side captured 2 graphs and
 * replayed the rest. A batch of another shape runs unreplayed, and right. Runs on a GPU
 * (scripts/device_check.sh) and in the emulator build; skips where cuda is not listed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "model/model.h"
#include "test_cuda_util.h"

enum { B = 2, T = 16, STEPS = 6, ACCUM = 2 };

/* micro-batch k's ids: inputs, and targets with rows masked in a pattern of k */
static void batch(int k, int V, int32_t *x, int32_t *y) {
    for (int i = 0; i < B * T; i++) {
        x[i] = (int32_t)((i * 7 + k * 13 + 3) % V);
        y[i] = (i + k) % (3 + k % 4) == 0 ? -1 : (int32_t)((i * 5 + k * 11 + 1) % V);
    }
}

/* one micro-batch on m, with graphs on or off */
static float micro(andrea_model *m, int graphs, int k, float scale) {
    int32_t x[B * T], y[B * T];
    batch(k, m->cfg.vocab, x, y);
    setenv("ANDREA_CUDA_GRAPHS", graphs ? "1" : "0", 1);
    return andrea_model_train_micro(m, x, y, B, T, scale);
}

/* 1 when a's and b's n floats at the two host pointers are the same bits */
static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

#ifdef ANDREA_HAVE_CUDA
/* A capture that fails (here a download, which CUDA refuses while capturing) turns graphs
 * off for the process, not the backend: no CUDA error stays, a new capture is refused, and
 * the next micro-batches run one by one, with eager's bits. */
static void failed_capture(andrea_model *e, andrea_model *g) {
    const andrea_backend *be = g->be;
    float x;
    CHECK(andrea_cuda_graphs_off() == NULL);
    CHECK(be->graph->begin(be) == 0);
    be->ops.download(be, &x, g->params, sizeof x);
    CHECK(be->graph->end(be) == NULL);
    const char *why = andrea_cuda_graphs_off();
    printf("test_cuda_graph: a failed capture: graphs off (%s), CUDA error %s\n",
           why ? why : "NOT OFF", andrea_cuda_last_error() ? andrea_cuda_last_error() : "none");
    CHECK(why && strstr(why, "download") && andrea_cuda_last_error() == NULL);
    CHECK(be->graph->begin(be) == -1);
    long r0, c0, r1, c1;
    andrea_model_graph_counts(g, &r0, &c0);
    int differ = 0;
    for (int k = 100; k < 104; k++) {
        andrea_model_discard_grads(e), andrea_model_discard_grads(g);
        float le = micro(e, 0, k, 1.0f), lg = micro(g, 1, k, 1.0f);
        differ += !isfinite(le) || memcmp(&le, &lg, sizeof le) != 0;
    }
    andrea_model_graph_counts(g, &r1, &c1);
    CHECK(differ == 0 && r1 == r0 && c1 == c0);
}
#endif

int main(void) {
    tu_cuda_or_skip("test_cuda_graph");
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *e = andrea_model_create_on(&cfg, 42, "cuda"), *g = andrea_model_create_on(&cfg, 42, "cuda");
    CHECK(e && g && e->be->graph);
    if (!e || !g) return tu_finish("test_cuda_graph");
    float *em = andrea_model_moments_alloc(e), *ev = andrea_model_moments_alloc(e);
    float *gm = andrea_model_moments_alloc(g), *gv = andrea_model_moments_alloc(g);
    CHECK(em && ev && gm && gv);
    int k = 0, differ = 0;
    for (int s = 1; s <= STEPS; s++) {
        andrea_model_discard_grads(e), andrea_model_discard_grads(g);
        for (int a = 0; a < ACCUM; a++, k++) {
            float le = micro(e, 0, k, 1.0f / ACCUM), lg = micro(g, 1, k, 1.0f / ACCUM);
            CHECK(isfinite(le));
            differ += memcmp(&le, &lg, sizeof le) != 0;
            if (k < 3 || k == STEPS * ACCUM - 1)
                printf("test_cuda_graph: micro-batch %d: loss %.7f eager, %.7f graph (%d valid rows)\n",
                       k, le, lg, g->ctx->n_valid);
            CHECK(e->ctx->n_valid == g->ctx->n_valid);
        }
        andrea_model_adamw_step(e, em, ev, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s, 1.0f);
        andrea_model_adamw_step(g, gm, gv, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s, 1.0f);
    }
    CHECK(differ == 0);
    long replayed, captured;
    andrea_model_graph_counts(g, &replayed, &captured);
    printf("test_cuda_graph: %d micro-batches: %d losses differ; graphs captured %ld, "
           "micro-batches replayed %ld\n", k, differ, captured, replayed);
    CHECK(captured == 2 && replayed >= STEPS * ACCUM - 4);

    /* another shape: run one by one (first seen), the same loss as eager */
    int32_t x[T], y[T];
    for (int i = 0; i < T; i++) x[i] = (int32_t)(i % cfg.vocab), y[i] = (int32_t)((i + 1) % cfg.vocab);
    andrea_model_discard_grads(e), andrea_model_discard_grads(g);
    setenv("ANDREA_CUDA_GRAPHS", "1", 1);
    float l1 = andrea_model_train_micro(g, x, y, 1, T, 1.0f);
    setenv("ANDREA_CUDA_GRAPHS", "0", 1);
    float l0 = andrea_model_train_micro(e, x, y, 1, T, 1.0f);
    CHECK(isfinite(l1) && memcmp(&l0, &l1, sizeof l0) == 0);

#ifdef ANDREA_HAVE_CUDA
    failed_capture(e, g);
#endif
    andrea_model_moments_free(e, em), andrea_model_moments_free(e, ev);
    andrea_model_moments_free(g, gm), andrea_model_moments_free(g, gv);
    /* the weights and gradients, home on cpu: the same bits */
    size_t n = (size_t)andrea_model_num_params(e);
    CHECK(andrea_model_set_backend(e, "cpu") == 0 && andrea_model_set_backend(g, "cpu") == 0);
    int wsame = same(andrea_model_params(e), andrea_model_params(g), n);
    int gsame = same(andrea_model_grads(e), andrea_model_grads(g), n);
    printf("test_cuda_graph: %zu weights: %s; gradients: %s\n", n, wsame ? "the same bits" : "DIFFER",
           gsame ? "the same bits" : "DIFFER");
    CHECK(wsame && gsame);
    tu_check_no_cuda_error("test_cuda_graph");
    andrea_model_free(e), andrea_model_free(g);
    return tu_finish("test_cuda_graph");
}
