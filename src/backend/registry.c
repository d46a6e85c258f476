/*
 * registry.c - the backends this build knows, in the order they are listed, and
 * the lookups of the public API (andrea_backend_count/get/find). A new backend is
 * one more line in BACKENDS; what this machine cannot run is not listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_CUDA
/* src/backend/cuda/cuda_ops.cu */
extern const andrea_backend andrea_backend_cuda, andrea_backend_cuda_bf16;
#endif

static const andrea_backend *const BACKENDS[] = {
    &andrea_backend_cpu,          &andrea_backend_cpu_avx512, &andrea_backend_cpu_avx2,
    &andrea_backend_cpu_baseline, &andrea_backend_cpu_blas,   &andrea_backend_cpu_bf16,
    &andrea_backend_cpu_guarded,
#ifdef ANDREA_HAVE_CUDA
    &andrea_backend_cuda,         &andrea_backend_cuda_bf16,
#endif
};
#define N_BACKENDS (int)(sizeof BACKENDS / sizeof BACKENDS[0])

int andrea_backend_vocab_multiple(be_t be) {
    if (be->vocab_multiple == 1) return 1;
    const char *env = getenv("ANDREA_VOCAB_MULTIPLE");
    char *end = NULL;
    long v = env && *env ? strtol(env, &end, 10) : 0;
    if (v >= 1 && v <= 4096 && end && *end == 0) return (int)v;
    return be->vocab_multiple > 1 ? be->vocab_multiple : 1;
}

int andrea_backend_precision(be_t be) {
    const andrea_cpu_engine *e = andrea_backend_cpu_engine(be);
    return e ? e->precision : be->precision;
}

int andrea_backend_graphs_on(be_t be) {
    const char *env = getenv("ANDREA_CUDA_GRAPHS");
    return be->graph && !(env && strcmp(env, "0") == 0);
}

void *andrea_backend_host_ids(be_t be, size_t n) {
    if (be->graph) return be->graph->host_alloc(be, sizeof(int32_t) * (n ? n : 1));
    void *p = malloc(sizeof(int32_t) * (n ? n : 1));
    if (!p) andrea_set_error("out of memory: %zu token ids", n);
    return p;
}

void andrea_backend_host_ids_free(be_t be, void *p) {
    if (be->graph) be->graph->host_free(be, p);
    else free(p);
}

int andrea_backend_count(void) {
    int n = 0;
    for (int i = 0; i < N_BACKENDS; i++) n += BACKENDS[i]->available(BACKENDS[i]);
    return n;
}

const andrea_backend *andrea_backend_get(int i) {
    for (int k = 0; k < N_BACKENDS; k++)
        if (BACKENDS[k]->available(BACKENDS[k]) && i-- == 0) return BACKENDS[k];
    return NULL;
}

static const andrea_backend *find(const char *name) {
    for (int k = 0; k < N_BACKENDS; k++) {
        if (strcmp(BACKENDS[k]->name, name) != 0) continue;
        if (BACKENDS[k]->available(BACKENDS[k])) return BACKENDS[k];
        andrea_set_error("backend '%s' (%s) cannot run here: %s", name, BACKENDS[k]->description,
                         BACKENDS[k]->why_unavailable ? BACKENDS[k]->why_unavailable(BACKENDS[k])
                                                      : "not on this machine or build");
        return NULL;
    }
    char list[256] = "";
    for (int i = 0; i < andrea_backend_count(); i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", andrea_backend_get(i)->name);
    }
    andrea_set_error("unknown backend '%s' (available here: %s)", name, list);
    return NULL;
}

const andrea_backend *andrea_backend_find(const char *name) {
    return !name || !*name ? andrea_backend_default() : find(name);
}

const char *andrea_backend_name(const andrea_backend *be) { return be ? be->name : NULL; }
const char *andrea_backend_description(const andrea_backend *be) {
    return be ? be->description : NULL;
}

/* ANDREA_BACKEND names the default so that a whole test suite runs on another backend
 * (tests/test_guarded_cli.sh: cpu-guarded); unknown or unavailable names fall back to
 * "cpu" (the first --backend or model creation reports them). */
const andrea_backend *andrea_backend_default(void) {
    const char *env = getenv("ANDREA_BACKEND");
    const andrea_backend *be = NULL;
    if (env && *env)
        for (int k = 0; k < N_BACKENDS && !be; k++)
            if (strcmp(BACKENDS[k]->name, env) == 0 && BACKENDS[k]->available(BACKENDS[k]))
                be = BACKENDS[k];
    return be ? be : &andrea_backend_cpu;
}

const char *andrea_backend_missing(be_t be) {
    const andrea_backend_ops *o = &be->ops;
    const struct { const char *name; const void *op; } need[] = {
#define NEED(op) {#op, (const void *)o->op}
        NEED(alloc), NEED(free), NEED(upload), NEED(download), NEED(zero), NEED(copy_rows),
        NEED(synchronize), NEED(fill), NEED(count_nonfinite), NEED(max_abs), NEED(quantize),
        NEED(gather_rows),
        NEED(embedding_forward), NEED(embedding_backward), NEED(residual_forward),
        NEED(matmul_forward), NEED(matmul_forward_residual), NEED(matmul_forward_act),
        NEED(matmul_backward), NEED(matmul_backward_act), NEED(matvec), NEED(norm_forward),
        NEED(norm_backward), NEED(activation_forward), NEED(attention_forward),
        NEED(attention_backward), NEED(attention_flash_forward), NEED(attention_flash_backward),
        NEED(attention_decode), NEED(crossentropy_forward), NEED(crossentropy_backward),
        NEED(adamw_update), NEED(sum_squares),
#undef NEED
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i].op) return need[i].name;
    return NULL;
}
