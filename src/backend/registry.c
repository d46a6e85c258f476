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

static const andrea_backend *const BACKENDS[] = {
    &andrea_backend_cpu,      &andrea_backend_cpu_avx512, &andrea_backend_cpu_avx2,
    &andrea_backend_cpu_baseline, &andrea_backend_cpu_blas, &andrea_backend_cpu_bf16,
};
#define N_BACKENDS (int)(sizeof BACKENDS / sizeof BACKENDS[0])

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

const andrea_backend *andrea_backend_find(const char *name) {
    if (!name || !*name) return andrea_backend_default();
    for (int k = 0; k < N_BACKENDS; k++) {
        if (strcmp(BACKENDS[k]->name, name) != 0) continue;
        if (BACKENDS[k]->available(BACKENDS[k])) return BACKENDS[k];
        andrea_set_error("backend '%s' (%s) cannot run here: %s", name, BACKENDS[k]->description,
                         BACKENDS[k]->cpu.engine == ANDREA_MATMUL_BLAS
                             ? "this build has no BLAS; install libopenblas-dev and rebuild"
                             : getenv("ANDREA_ISA")
                             ? "this CPU lacks the instructions, or ANDREA_ISA caps them"
                             : "this CPU lacks the instructions");
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

const char *andrea_backend_name(const andrea_backend *be) { return be ? be->name : NULL; }
const char *andrea_backend_description(const andrea_backend *be) {
    return be ? be->description : NULL;
}

const andrea_backend *andrea_backend_default(void) { return &andrea_backend_cpu; }
