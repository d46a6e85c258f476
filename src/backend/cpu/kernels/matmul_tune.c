/*
 * matmul_tune.c - never slower than the machine's BLAS: under the "auto" engine (the
 * default cpu backend when BLAS is built in) each product shape a model uses is timed
 * once with the built-in kernels and with the BLAS, and the faster runs it from then on.
 * BLAS must win by 10% to be taken: the built-in kernels' results do not depend on the
 * thread count or the machine's BLAS, so ties go to them.
 *
 * Choices are kept per process and in a per-machine file (ANDREA_TUNE_CACHE, default
 * $XDG_CACHE_HOME/andrea/matmul.tsv or ~/.cache/andrea/matmul.tsv; "off": none), one
 * line per (CPU model, ISA, BLAS core, product, shape): the first line for a key wins,
 * so every later process on the machine makes the same choices (and gets the same bits).
 * Timing a shape costs two runs of each engine (gpt2's LM head: ~2 s, once per machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cpu/kernels/kernels.h"
#include "util/atomic_file.h"
#include "util/perf.h"

#define MAX_CHOICES 256
static andrea_mm_choice g_choices[MAX_CHOICES];
static int g_n = 0, g_loaded = 0;
static char g_cpu[128] = "";

/* The CPU's model name with blanks made '_' (one field of the cache file). */
static void cpu_model(char *out, size_t n) {
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon || strncmp(line, "model name", 10) != 0) continue;
        char *v = colon + 1;
        while (*v == ' ') v++;
        size_t i = 0;
        for (; v[i] && v[i] != '\n' && i + 1 < n; i++)
            out[i] = (v[i] == ' ' || v[i] == '\t') ? '_' : v[i];
        out[i] = '\0';
        break;
    }
    fclose(f);
}

static int cache_path(char *out, size_t n) {
    const char *env = getenv("ANDREA_TUNE_CACHE");
    if (env && strcmp(env, "off") == 0) return -1;
    if (env && *env) return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len = xdg && *xdg ? snprintf(out, n, "%s/andrea", xdg)
              : home && *home ? snprintf(out, n, "%s/.cache/andrea", home) : -1;
    if (len < 0 || len + 16 >= (int)n) return -1;
    if (!(xdg && *xdg)) { /* ~/.cache may not exist yet */
        char parent[1024];
        snprintf(parent, sizeof parent, "%s/.cache", home);
        mkdir(parent, 0755);
    }
    mkdir(out, 0755);
    strcat(out, "/matmul.tsv");
    return 0;
}

static andrea_mm_choice *find(int isa, int op, int M, int K, int N) {
    for (int i = 0; i < g_n; i++) {
        andrea_mm_choice *c = &g_choices[i];
        if (c->isa == isa && c->op == op && c->M == M && c->K == K && c->N == N) return c;
    }
    return NULL;
}

/* The version of the built-in kernels the timings are of: a new tile or packing makes the
 * old lines stale (v2: the tiles that add C after the loop and the byte-counting split,
 * which moved dw at AVX2 from below OpenBLAS to level with it), so their lines are
 * ignored and the shapes timed again. */
#define TUNE_VERSION "v2"

/* One line of the cache file for this CPU and BLAS kernel, into *c; 0 or -1. */
static int parse_line(const char *line, andrea_mm_choice *c) {
    char cpu[128], isa[16], core[64];
    *c = (andrea_mm_choice){0};
    if (sscanf(line, TUNE_VERSION " %127s %15s %63s %d %d %d %d %lf %lf", cpu, isa, core, &c->op, &c->M,
               &c->K, &c->N, &c->builtin, &c->blas) != 9)
        return -1;
    c->isa = andrea_isa_parse(isa);
    if (strcmp(cpu, g_cpu) || strcmp(core, andrea_blas_core()) || c->isa < 0) return -1;
    c->use_blas = c->blas > 1.1 * c->builtin;
    c->cached = 1;
    return 0;
}

static void load_cache(void) {
    g_loaded = 1;
    cpu_model(g_cpu, sizeof g_cpu);
    char path[1100], line[512];
    if (cache_path(path, sizeof path)) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    andrea_mm_choice c;
    while (fgets(line, sizeof line, f) && g_n < MAX_CHOICES)
        if (parse_line(line, &c) == 0 && !find(c.isa, c.op, c.M, c.K, c.N)) g_choices[g_n++] = c;
    fclose(f);
}

/* After appending a measurement: the file's first line for the key is the machine's choice
 * (another process may have measured the same shape a moment earlier, differently), so that
 * every process on the machine runs the same engine for it and gets the same bits. */
static void adopt_first(andrea_mm_choice *mine) {
    char path[1100], line[512];
    if (cache_path(path, sizeof path)) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    andrea_mm_choice c;
    while (fgets(line, sizeof line, f))
        if (parse_line(line, &c) == 0 && c.isa == mine->isa && c.op == mine->op &&
            c.M == mine->M && c.K == mine->K && c.N == mine->N) {
            mine->builtin = c.builtin, mine->blas = c.blas, mine->use_blas = c.use_blas;
            break;
        }
    fclose(f);
}

static void save(const andrea_mm_choice *c) {
    char path[1100];
    if (cache_path(path, sizeof path)) return;
    /* one short append: whole lines even with writers in parallel */
    FILE *f = andrea_output_fopen(path, "a");
    if (!f) return;
    fprintf(f, TUNE_VERSION " %s %s %s %d %d %d %d %.1f %.1f\n", g_cpu, andrea_isa_name(c->isa),
            andrea_blas_core(), c->op, c->M, c->K, c->N, c->builtin, c->blas);
    fclose(f);
}

/* GFLOP/s of one engine on product op of a linear layer (M tokens, K in, N out), the best
 * of at least 3 runs and 5 ms (small products: a first call pays for thread start-up and
 * packing buffers, which a model pays once). */
static double time_product(int blas, int isa, int op, int M, int K, int N, float *x, float *w,
                           float *y) {
    double best = 0.0, flop = 2.0 * M * K * N, t_end = andrea_now() + 0.005;
    for (int r = 0; r < 100 && (r < 3 || andrea_now() < t_end); r++) {
        double t0 = andrea_now();
        if (op == ANDREA_MM_FWD) { /* y(M, N) = x(M, K) @ w(N, K)^T */
            if (blas) andrea_blas_gemm(0, 1, M, N, K, x, K, w, K, y, N);
            else andrea_gemm_nn_isa(isa, y, N, x, K, 1, w, 1, K, M, K, N, 0);
        } else if (op == ANDREA_MM_DINP) { /* x(M, K) += y(M, N) @ w(N, K) */
            if (blas) andrea_blas_gemm(0, 0, M, K, N, y, N, w, K, x, K);
            else andrea_gemm_nn_isa(isa, x, K, y, N, 1, w, K, 1, M, N, K, 1);
        } else { /* w(N, K) += y(M, N)^T @ x(M, K) */
            if (blas) andrea_blas_gemm(1, 0, N, K, M, y, N, x, K, w, K);
            else andrea_gemm_nn_isa(isa, w, K, y, 1, N, x, K, 1, N, M, K, 1);
        }
        double g = flop / (andrea_now() - t0) * 1e-9;
        if (g > best) best = g;
    }
    return best;
}

static void measure(andrea_mm_choice *c) {
    size_t mk = (size_t)c->M * c->K, nk = (size_t)c->N * c->K, mn = (size_t)c->M * c->N;
    float *x = calloc(mk, sizeof(float)), *w = calloc(nk, sizeof(float));
    float *y = calloc(mn, sizeof(float));
    if (x && w && y) { /* interleaved, so that a noisy moment hits both */
        double a1 = time_product(0, c->isa, c->op, c->M, c->K, c->N, x, w, y);
        double b1 = time_product(1, c->isa, c->op, c->M, c->K, c->N, x, w, y);
        double a2 = time_product(0, c->isa, c->op, c->M, c->K, c->N, x, w, y);
        c->builtin = a1 > a2 ? a1 : a2;
        c->blas = b1;
    }
    free(x), free(w), free(y);
    c->use_blas = c->blas > 1.1 * c->builtin;
}

int andrea_mm_tune_blas(int isa, int op, int M, int K, int N) {
    if (!andrea_blas_available()) return 0;
    isa = andrea_cpu_isa(isa);
    int use = 0;
#pragma omp critical /* unnamed: a named one is a global symbol */
    {
        if (!g_loaded) load_cache();
        andrea_mm_choice *c = find(isa, op, M, K, N);
        if (!c && g_n < MAX_CHOICES) {
            c = &g_choices[g_n];
            *c = (andrea_mm_choice){op, M, K, N, isa, 0.0, 0.0, 0, 0};
            measure(c);
            save(c);
            adopt_first(c);
            g_n++;
        }
        use = c ? c->use_blas : 0;
    }
    return use;
}

int andrea_mm_tune_count(void) { return g_n; }

int andrea_mm_tune_get(int i, andrea_mm_choice *out) {
    if (i < 0 || i >= g_n) return -1;
    *out = g_choices[i];
    return 0;
}
