/*
 * cmd_bench.c - `andrea bench`: training and generation speed of a preset on
 * this machine, next to what the machine can do (sgemm throughput, copy
 * bandwidth) measured in the same run, so the numbers read as ratios:
 * MFU for training, fraction of the bandwidth bound for generation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "args.h"
#include "commands.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/kv.h"
#include "model/model.h"
#include "backend_flags.h"
#include "model_flags.h"
#ifdef ANDREA_HAVE_CUDA
#include "backend/cuda/cuda_api.h"
#endif
#include "threads.h"
#include "util/bigalloc.h"
#include "util/gpu_peak.h"
#include "util/perf.h"
#include "util/profile.h"

/* OpenBLAS's kernels older than AVX2, which it falls back to on a CPU model it does not
 * know (0.3.21 on a virtualised Xeon picks Prescott: a third of its Haswell kernel's speed). */
static int blas_core_pre_avx2(const char *core) {
    static const char *const old[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                      "Atom", "Opteron", "Barcelona", "Bobcat", "Katmai", NULL};
    for (int i = 0; old[i]; i++)
        if (strcmp(core, old[i]) == 0) return 1;
    return 0;
}

static double bench_train(andrea_model *m, int B, int T, int warmup, int steps) {
    /* in the model's backend memory, as the trainer's (run_setup.c): on the cpu in huge
     * pages, zeroed up front (calloc's zero pages cost a copy-on-write fault each on the
     * first step, and 4 KiB pages TLB misses) */
    float *am = andrea_model_moments_alloc(m), *av = andrea_model_moments_alloc(m);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B * T * 2);
    if (!am || !av || !x) {
        andrea_model_moments_free(m, am), andrea_model_moments_free(m, av), free(x);
        return -1.0;
    }
    int32_t *y = x + (size_t)B * T;
    andrea_rng rng;
    andrea_rng_seed(&rng, 7);
    double t_total = 0.0;
    for (int s = 0; s < warmup + steps; s++) {
        for (int i = 0; i < B * T; i++) {
            x[i] = (int32_t)(andrea_rng_u64(&rng) % (uint64_t)m->cfg.vocab);
            y[i] = (int32_t)(andrea_rng_u64(&rng) % (uint64_t)m->cfg.vocab);
        }
        if (s == warmup) andrea_prof_reset(); /* the table covers the timed steps only */
        double t0 = andrea_now();
        PROF(PROF_ZERO, andrea_model_discard_grads(m)); /* as the trainer does */
        /* as the trainer: replayed from a graph on cuda (graph_step.c; not with --profile) */
        if (isnan(andrea_model_train_micro(m, x, y, B, T, 1.0f)) && andrea_error()[0]) {
            andrea_model_moments_free(m, am), andrea_model_moments_free(m, av), free(x);
            return -2.0;
        }
        /* what the trainer does: the gradient norm, clipping at 1 inside AdamW */
        float gnorm = 0.0f;
        PROF(PROF_OPTIMIZER, gnorm = (float)sqrt(andrea_model_grad_sum_squares(m)));
        float gscale = gnorm > 1.0f ? 1.0f / gnorm : 1.0f;
        PROF(PROF_OPTIMIZER, andrea_model_adamw_step(m, am, av, 1e-4f, 0.9f, 0.99f, 1e-8f, 0.1f,
                                                     s + 1, gscale));
        m->be->ops.synchronize(m->be); /* a device's ops return before they finish */
        if (s >= warmup) t_total += andrea_now() - t0;
    }
    andrea_model_moments_free(m, am), andrea_model_moments_free(m, av), free(x);
    return t_total / steps;
}

/* Greedy batch-1 decoding of n_tokens; each token's seconds into times[]. Returns the
 * tokens timed, or -1 when the KV cache cannot be allocated. */
/* the greedy token: the first of the largest logits */
static int argmax(const float *x, int n) {
    int best = 0;
    for (int v = 1; v < n; v++)
        if (x[v] > x[best]) best = v;
    return best;
}

static int bench_generate(andrea_model *m, int n_tokens, double *times, long *replayed) {
    andrea_kv *kv = andrea_kv_create(m);
    if (!kv) return -1;
    int V = m->cfg.vocab, tok = 0, done = 0;
    if (n_tokens > m->cfg.ctx) n_tokens = m->cfg.ctx;
    int prof = andrea_prof_on;
    /* two untimed steps (caches, branch predictors; a graph backend captures at the second) */
    andrea_prof_on = 0;
    andrea_kv_step(m, kv, tok);
    andrea_kv_step(m, kv, tok);
    andrea_prof_on = prof;
    andrea_kv_reset(kv);
    for (; done < n_tokens; done++) {
        double t0 = andrea_now();
        const float *lg = andrea_kv_step(m, kv, tok);
        if (!lg) break;
        times[done] = andrea_now() - t0;
        tok = argmax(lg, V);
    }
    long captured;
    andrea_kv_graph_counts(kv, replayed, &captured);
    andrea_kv_free(kv);
    return done;
}

/* n_tokens greedy steps of n_seq sequences decoded together (andrea_kv_batch_step: every
 * weight read once per step for all), each from its own first token, after two untimed
 * steps (a graph backend captures at the second); each step's seconds into times[], the
 * steps replayed from a graph into *replayed. Returns the steps timed, or -1 when out of
 * memory. */
static int bench_generate_batch(andrea_model *m, int n_seq, int n_tokens, double *times,
                                long *replayed) {
    andrea_kv_batch *b = andrea_kv_batch_create(m, n_seq);
    andrea_kv **kv = calloc((size_t)n_seq, sizeof *kv);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n_seq);
    int V = m->cfg.vocab, done = 0, ok = b && kv && tok;
    for (int s = 0; ok && s < n_seq; s++) ok = (kv[s] = andrea_kv_create(m)) != NULL;
    if (n_tokens > m->cfg.ctx) n_tokens = m->cfg.ctx;
    for (int s = 0; ok && s < n_seq; s++) tok[s] = s % V;
    for (int w = 0; ok && w < 2; w++) /* a failure shows in the first timed step's error */
        if (!andrea_kv_batch_step(m, b, kv, tok, n_seq)) break;
    for (int s = 0; ok && s < n_seq; s++) andrea_kv_reset(kv[s]);
    for (; ok && done < n_tokens; done++) {
        double t0 = andrea_now();
        const float *lg = andrea_kv_batch_step(m, b, kv, tok, n_seq);
        if (!lg) break;
        times[done] = andrea_now() - t0;
        for (int s = 0; s < n_seq; s++) tok[s] = argmax(lg + (size_t)s * V, V);
    }
    long captured;
    *replayed = 0;
    if (b) andrea_kv_batch_graph_counts(b, replayed, &captured);
    for (int s = 0; kv && s < n_seq; s++) andrea_kv_free(kv[s]);
    andrea_kv_batch_free(b);
    free(kv), free(tok);
    return ok ? done : -1;
}

static double cpu_seconds(void) { /* the process's CPU time: every thread's */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* rounds timed prefills of an n-token prompt (random tokens) from an empty cache, after
 * a first one (the product shapes' engine choice, the kernels' own buffers: a fresh
 * process's first prompt as `generate` times it, its scratch reserved) whose seconds go
 * to *first; each round's seconds into times[] and its CPU seconds (all threads) into
 * cpu[]. Returns the rounds timed, or -1 when out of memory. */
static int bench_prefill(andrea_model *m, int n, int rounds, double *times, double *cpu,
                         double *first) {
    if (andrea_prefill_reserve(m, n)) return -1; /* as generate does before its clock */
    andrea_kv *kv = andrea_kv_create(m);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)n);
    if (!kv || !x) {
        andrea_kv_free(kv);
        free(x);
        return -1;
    }
    andrea_rng rng;
    andrea_rng_seed(&rng, 11);
    for (int i = 0; i < n; i++) x[i] = (int32_t)(andrea_rng_u64(&rng) % (uint64_t)m->cfg.vocab);
    int prof = andrea_prof_on, done = 0;
    andrea_prof_on = 0;
    double t_first = andrea_now();
    const float *ok = andrea_kv_prefill(m, kv, x, n);
    *first = andrea_now() - t_first;
    andrea_prof_on = prof;
    for (; ok && done < rounds; done++) {
        andrea_kv_reset(kv);
        double t0 = andrea_now(), c0 = cpu_seconds();
        if (!andrea_kv_prefill(m, kv, x, n)) break;
        times[done] = andrea_now() - t0;
        cpu[done] = cpu_seconds() - c0;
    }
    andrea_kv_free(kv);
    free(x);
    return ok ? done : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}


/* Which engine ran each product shape of the step, and why. */
static void print_engines(const andrea_backend *be) {
    const andrea_cpu_engine *e = andrea_backend_cpu_engine(be);
    if (!e) {
        printf("matmul engine: the backend's own (backend %s)\n", andrea_backend_name(be));
        return;
    }
    if (e->precision == ANDREA_PRECISION_BF16 || e->engine != ANDREA_MATMUL_AUTO ||
        !andrea_blas_available()) {
        printf("matmul engine: %s for every large product (backend %s)\n",
               e->precision == ANDREA_PRECISION_BF16 ? "built-in bf16"
               : e->engine == ANDREA_MATMUL_BLAS     ? "BLAS"
                                                     : "built-in",
               andrea_backend_name(be));
        return;
    }
    static const char *const ops[] = {"forward", "dinp", "dw"};
    printf("matmul engine per shape (the faster by more than 10%% of built-in %s and OpenBLAS "
           "%s, GFLOP/s as timed once per machine; ANDREA_TUNE_CACHE):\n",
           andrea_isa_name(andrea_cpu_isa(-1)), andrea_blas_core());
    for (int i = 0; i < andrea_mm_tune_count(); i++) {
        andrea_mm_choice c;
        andrea_mm_tune_get(i, &c);
        printf("  %-7s M %5d K %5d N %5d: %-8s (built-in %.0f, BLAS %.0f%s)\n", ops[c.op], c.M,
               c.K, c.N, c.use_blas ? "BLAS" : "built-in", c.builtin, c.blas,
               c.cached ? ", from the cache" : "");
    }
}

/* What the command line asked for, once parsed and checked. */
typedef struct {
    model_flags mf;
    andrea_config cfg;
    int batch, seq, steps, warmup, gen, gen_batch, prefill, profile;
    int nt;    /* the OpenMP threads in use */
    int qkind; /* --quant, parsed */
    const char *quant, *attention, *be_name;
    const andrea_backend *be;
} bench_request;

/* The flags that need the model's shape and the backend, checked: seq's default is the
 * model's context. Returns -1 to go on, else the exit status. */
static int check_request(bench_request *q, const char *backend, const char *matmul,
                         const char *precision, int threads) {
    if (q->seq <= 0) q->seq = q->cfg.ctx < 256 ? q->cfg.ctx : 256;
    if (q->batch <= 0 || q->seq > q->cfg.ctx || q->steps < 0 || q->warmup < 0 || q->gen < 0 ||
        q->prefill < 0 || q->prefill > q->cfg.ctx || q->gen_batch < 0 || q->gen_batch > 256) {
        fprintf(stderr, "andrea bench: need --batch >= 1, --seq <= ctx %d, --steps >= 0, "
                        "--prefill <= ctx, --gen-batch 0..256\n", q->cfg.ctx);
        return 2;
    }
    q->be_name = backend_from_flags("bench", backend, matmul, precision);
    if (!q->be_name) return 2;
    q->be = andrea_backend_find(q->be_name);
    if (!q->be) {
        fprintf(stderr, "andrea bench: --backend: %s\n", andrea_error());
        return 2;
    }
    if (andrea_quant_parse(q->quant, &q->qkind)) {
        fprintf(stderr, "andrea bench: --quant: %s\n", andrea_error());
        return 2;
    }
    if (strcmp(q->attention, "flash") != 0 && strcmp(q->attention, "explicit") != 0) {
        fprintf(stderr, "andrea bench: --attention '%s': expected flash or explicit\n", q->attention);
        return 2;
    }
    q->nt = cli_set_threads(threads);
    return -1;
}

/* Parses the flags into q. Returns -1 to go on, else the exit status (0 after --help
 * and --list-backends). */
static int parse_request(int argc, char **argv, bench_request *q) {
    *q = (bench_request){.batch = 4, .steps = 10, .warmup = 2, .gen = 64, .quant = "f32",
                         .attention = "flash", .qkind = ANDREA_QUANT_NONE};
    int threads = 0, list = 0;
    const char *backend = NULL, *matmul = NULL, *precision = NULL, *isa = NULL;
    arg_spec specs[] = {
        MODEL_FLAG_SPECS(q->mf),
        {"batch", 'b', ARG_INT, &q->batch, "training batch B (4)", 0},
        {"seq", 0, ARG_INT, &q->seq, "training sequence length T (default: min(ctx, 256))", 0},
        {"steps", 0, ARG_INT, &q->steps, "timed training steps, 0 = skip training (10)", 0},
        {"warmup", 0, ARG_INT, &q->warmup, "untimed steps first (2)", 0},
        {"generate", 'n', ARG_INT, &q->gen, "tokens of batch-1 generation to time, 0 = skip (64)", 0},
        {"gen-batch", 0, ARG_INT, &q->gen_batch,
         "also time --generate tokens of this many sequences decoded together, 0 = skip (0)", 0},
        {"prefill", 0, ARG_INT, &q->prefill,
         "prompt tokens of a batch-1 prefill (one batched pass) to time, best and median of 5; 0 = skip (0)", 0},
        {"attention", 0, ARG_STR, &q->attention, "flash | explicit (flash)", 0},
        {"backend", 0, ARG_STR, &backend,
         "where the model runs: cpu, cpu-blas, cpu-bf16, cpu-avx2, ... (--list-backends) (cpu)", 0},
        {"list-backends", 0, ARG_FLAG, &list, "list the backends this machine can run, and stop", 0},
        {"precision", 0, ARG_STR, &precision, "fp32 | bf16: bf16 is --backend cpu-bf16", 0},
        {"quant", 0, ARG_STR, &q->quant, "weights for the generation and prefill tests: f32 | f16 | bf16 | int8 | q8_0 | q4_0", 0},
        {"matmul", 0, ARG_STR, &matmul, "builtin | blas: blas is --backend cpu-blas", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
        {"isa", 0, ARG_STR, &isa,
         "cap every kernel's instruction set: avx512 | avx2 | neon | baseline (= ANDREA_ISA)", 0},
        {"profile", 0, ARG_FLAG, &q->profile, "time each kind of operation of a training step", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("bench", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("bench", "[--preset andrea-12m] [overrides] [--batch B --seq T] [--steps N]",
                   specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (isa_flag_apply("bench", isa)) return 2; /* before any kernel asks for the ISA */
    if (list) {
        backend_list();
        return 0;
    }
    if (model_flags_apply("bench", &q->mf, specs, n_specs, "andrea-12m", &q->cfg)) return 2;
    return check_request(q, backend, matmul, precision, threads);
}

/* The machine's product rates, GFLOP/s of a 1024^3 product, measured in this run. */
typedef struct {
    const andrea_backend *be_blas; /* NULL without BLAS */
    double ours, blas, bf16;       /* bf16: only when the bench runs on cpu-bf16 */
    int bf16_run;
    /* a device backend: its GPU and that GPU's datasheet peaks (TFLOP/s, 0: unknown) */
    int device;
    const char *gpu;
    double gpu_bf16, gpu_fp32;
} bench_peaks;

/* The GPU a device backend runs on, or NULL. */
static const char *gpu_name(const andrea_backend *be) {
#ifdef ANDREA_HAVE_CUDA
    if (strncmp(andrea_backend_name(be), "cuda", 4) == 0) return andrea_cuda_device_name();
#endif
    (void)be;
    return NULL;
}

/* cuda-bf16: how many products went through cuBLASLt with their epilogue (docs/cuda.md) */
static void print_fusion(const andrea_backend *be) {
#ifdef ANDREA_HAVE_CUDA
    if (strcmp(andrea_backend_name(be), "cuda-bf16") != 0) return;
    long fused, unfused, refused;
    andrea_cuda_lt_counts(&fused, &unfused, &refused);
    printf("products (all so far): %ld fused through cuBLASLt, %ld unfused, %ld refused by "
           "cublasLtMatmul\n", fused, unfused, refused);
#else
    (void)be;
#endif
}

/* A GPU's MFU is against its datasheet's dense bf16 peak (the issue's, llm.c's), not a
 * product measured here; an unknown GPU gets none. */
static bench_peaks gpu_peaks(const bench_request *q) {
    bench_peaks pk = {0};
    pk.device = 1;
    pk.gpu = gpu_name(q->be);
    printf("machine: GPU %s | ", pk.gpu ? pk.gpu : "(unnamed)");
    if (andrea_gpu_peak(pk.gpu, &pk.gpu_bf16, &pk.gpu_fp32))
        printf("dense peak bf16 %.1f TFLOP/s, fp32 %.1f TFLOP/s (datasheet, src/util/gpu_peak.c)\n",
               pk.gpu_bf16, pk.gpu_fp32);
    else
        printf("not in the peak table (src/util/gpu_peak.c): no MFU\n");
    return pk;
}

/* The machine, measured now (and again after training: see best_peak), and its line. */
static bench_peaks measure_machine(const bench_request *q) {
    if (gpu_name(q->be)) return gpu_peaks(q); /* not cpu-guarded, whose memory is "device" too */
    bench_peaks pk = {0};
    pk.be_blas = andrea_backend_find("cpu-blas");
    pk.bf16_run = strcmp(andrea_backend_name(q->be), "cpu-bf16") == 0;
    pk.ours = andrea_perf_gemm_gflops(andrea_backend_find("cpu"), 1024, 1.0);
    pk.blas = pk.be_blas ? andrea_perf_gemm_gflops(pk.be_blas, 1024, 1.0) : 0.0;
    /* bf16 training is measured against the bf16 product's own rate (twice fp32's peak) */
    pk.bf16 = pk.bf16_run ? andrea_perf_gemm_gflops(q->be, 1024, 1.0) : 0.0;
    printf("machine: %d threads | ISA %s%s | sgemm 1024^3: cpu %.1f GFLOP/s", q->nt,
           andrea_isa_name(andrea_cpu_isa(-1)), getenv("ANDREA_ISA") ? " (capped by ANDREA_ISA/--isa)" : "",
           pk.ours);
    if (pk.blas > 0) printf(", OpenBLAS (%s kernel) %.1f GFLOP/s", andrea_blas_core(), pk.blas);
    if (pk.bf16 > 0) printf(" | bf16 gemm 1024^3: %.1f GFLOP/s", pk.bf16);
    printf("\n");
    if (pk.blas > 0 && blas_core_pre_avx2(andrea_blas_core()) && andrea_cpu_isa(-1) >= ANDREA_ISA_AVX2)
        printf("note: OpenBLAS chose its %s kernel (SSE only), likely a CPU model it does not "
               "know; OPENBLAS_CORETYPE=Haswell (AVX2) or SkylakeX (AVX-512) gives it this "
               "CPU's vectors\n", andrea_blas_core());
    return pk;
}

/* The reference product measured again, after training: a peak measured while other
 * work had the cores is too low (MFU over 100% was printed), and the better of two
 * moments is less likely to be that. */
static double best_peak(const bench_request *q, const bench_peaks *pk) {
    double peak = pk->bf16_run ? pk->bf16 : (pk->ours > pk->blas ? pk->ours : pk->blas);
    const andrea_backend *ref = pk->bf16_run            ? q->be
                                : pk->ours >= pk->blas ? andrea_backend_find("cpu")
                                                       : pk->be_blas;
    double again = andrea_perf_gemm_gflops(ref, 1024, 0.5);
    return again > peak ? again : peak;
}

/* Times the training steps and prints the train line: speed, MFU against the best
 * peak, and the peak RSS against the estimate. Returns seconds per step, or -1. */
static double report_training(const bench_request *q, andrea_model *m, const bench_peaks *pk) {
    andrea_prof_on = q->profile != 0;
    double s = bench_train(m, q->batch, q->seq, q->warmup, q->steps);
    andrea_prof_on = 0;
    if (s < 0) {
        fprintf(stderr, "andrea bench: %s\n", s < -1.5 ? andrea_error() : "out of memory");
        return -1.0;
    }
    long replayed, captured;
    andrea_model_graph_counts(m, &replayed, &captured);
    if (m->be->graph)
        printf("graphs: %ld micro-batches replayed from %ld captured (ANDREA_CUDA_GRAPHS=0: "
               "none)\n", replayed, captured);
#ifdef ANDREA_HAVE_CUDA
    if (andrea_cuda_graphs_off()) printf("graphs: off, a capture failed: %s\n", andrea_cuda_graphs_off());
#endif
    double tok_s = q->batch * q->seq / s;
    double gflops = andrea_train_flops_per_token(&q->cfg, q->seq) * tok_s / 1e9;
    if (pk->device) {
        double tf = gflops / 1e3;
        printf("train B=%d T=%d %s: %.1f ms/step | %.0f tok/s | %.2f TFLOP/s | ", q->batch,
               q->seq, q->be_name, s * 1e3, tok_s, tf);
        if (pk->gpu_bf16 > 0)
            printf("MFU %.2f%% of the %s's dense bf16 peak %.1f TFLOP/s (%.1f%% of its fp32 "
                   "peak %.1f)\n", 100.0 * tf / pk->gpu_bf16, pk->gpu, pk->gpu_bf16,
                   100.0 * tf / pk->gpu_fp32, pk->gpu_fp32);
        else
            printf("MFU n/a (no peak for this GPU)\n");
        print_fusion(q->be);
        return s;
    }
    double rss = (double)andrea_perf_peak_rss(); /* before the product's buffers below */
    double peak = best_peak(q, pk);
    double mfu = 100.0 * gflops / peak;
    andrea_memory mem = andrea_config_memory(&q->cfg, q->batch, q->seq);
    double est = (double)(mem.weights + mem.grads + mem.optimizer + mem.activations);
    const char *ref = pk->bf16_run ? "bf16 gemm" : "sgemm";
    printf("train B=%d T=%d %s: %.1f ms/step | %.0f tok/s | %.1f GFLOP/s | MFU %.1f%% of the best "
           "%s (%.1f GFLOP/s) | peak RSS %.0f MiB = %.2f x (weights+grads+adam+activations %.0f MiB)\n",
           q->batch, q->seq, q->be_name, s * 1e3, tok_s, gflops, mfu > 100.0 ? 100.0 : mfu, ref, peak,
           rss / 1048576.0, rss / est, est / 1048576.0);
    if (mfu > 100.0) /* training cannot outrun its own products: the reference was slowed */
        printf("note: MFU capped at 100%% (measured %.0f%%): the reference %s ran slower than "
               "training's products, so other work had the cores while it was measured; rerun on "
               "an idle machine for a true figure\n", mfu, ref);
    return s;
}

/* --profile of training: each kind's ms per step of s seconds, and its share. */
static void print_train_profile(double s, int steps) {
    double sum = 0.0;
    printf("profile (ms per step, share of the step):");
    for (int k = 0; k < PROF_N; k++) {
        double ms = andrea_prof_seconds[k] * 1e3 / steps;
        sum += ms;
        printf(" %s %.1f (%.0f%%) |", andrea_prof_name(k), ms, ms / (s * 10.0));
    }
    printf(" other %.1f (%.0f%%)\n", s * 1e3 - sum, (s * 1e3 - sum) / (s * 10.0));
}

/* Three rounds of (decode, then read bandwidth): interleaved, so that a noisy spell of
 * this shared machine hits both alike. The bound compares like with like: the fastest
 * token (~10 ms) against the fastest read of 512 MiB (also ~10 ms), each what the
 * machine does when undisturbed. The bandwidth is measured last: its buffer must not
 * count in the training peak. Returns the tokens timed into times (room for 3 x gen,
 * or NULL: none), the best GB/s into *bw. */
static int time_generation(const bench_request *q, andrea_model *m, double *times, double *bw) {
    int n_times = 0;
    *bw = 0.0;
    andrea_prof_reset();
    andrea_prof_on = q->profile != 0;
    long replayed = 0, r;
    for (int round = 0; round < 3 && times; round++) {
        int got = bench_generate(m, q->gen, times + n_times, &r);
        if (got < 0) break;
        n_times += got, replayed += r;
        if (gpu_name(q->be)) continue; /* the host's bandwidth bounds nothing on a GPU */
        double b = andrea_perf_read_gbps((size_t)512 << 20, 0.4);
        if (b > *bw) *bw = b;
    }
    andrea_prof_on = 0;
    if (m->be->graph) /* the untimed second step of each round replays too */
        printf("graphs: %ld decoding steps replayed (%d timed; ANDREA_CUDA_GRAPHS=0: none)\n",
               replayed, n_times);
    return n_times;
}

/* Bytes that decoding one token reads: every weight matrix once, at 4, 2 or 1 bytes
 * (q8_0: 1 + a float scale per 32, q4_0: 1/2 + the same); of the embedding tables
 * only one row each (a tied head reads wte whole, as the head). */
static double weight_bytes_per_token(const andrea_config *cfg, const andrea_param_counts *pc, int qkind) {
    double C = cfg->d_model, read = (double)pc->total - cfg->ctx * C + 2.0 * C;
    if (!cfg->tied) read -= (double)cfg->vocab * C;
    return read * (qkind == ANDREA_QUANT_BF16 || qkind == ANDREA_QUANT_F16 ? 2.0
                   : qkind == ANDREA_QUANT_INT8 ? 1.0
                   : qkind == ANDREA_QUANT_Q8_0 ? 1.0 + 4.0 / 32
                   : qkind == ANDREA_QUANT_Q4_0 ? 0.5 + 4.0 / 32
                                                : 4.0);
}

/* --profile of generation: the kinds that decoding has, per token, over every timed token. */
static void print_generate_profile(double token_sum, int n_times) {
    double ms = token_sum * 1e3 / n_times, sum = 0.0;
    printf("generate profile (ms per token, share):");
    static const int kinds[] = {PROF_MATMUL, PROF_ATTENTION, PROF_NORM};
    for (int k = 0; k < 3; k++) {
        double v = andrea_prof_seconds[kinds[k]] * 1e3 / n_times;
        sum += v;
        printf(" %s %.3f (%.0f%%) |", kinds[k] == PROF_MATMUL ? "matvec" : andrea_prof_name(kinds[k]),
               v, 100.0 * v / ms);
    }
    printf(" other %.3f (%.0f%%)\n", ms - sum, 100.0 * (ms - sum) / ms);
}

/* Batch-1 generation in the --quant weights: the fastest token against the bandwidth
 * bound, the median token too. Returns 0, or 1 after an error. */
static int report_generation(const bench_request *q, andrea_model *m, const andrea_param_counts *pc) {
    double *times = malloc(sizeof(double) * 3 * (size_t)q->gen), bw;
    int n_times = time_generation(q, m, times, &bw);
    if (n_times == 0) {
        fprintf(stderr, "andrea bench: out of memory for the KV cache\n");
        free(times);
        return 1;
    }
    double token_sum = 0.0;
    for (int i = 0; i < n_times; i++) token_sum += times[i];
    qsort(times, (size_t)n_times, sizeof(double), cmp_double);
    double per = times[0], median = times[n_times / 2];
    free(times);
    double bytes = weight_bytes_per_token(&q->cfg, pc, q->qkind);
    double bound = bw * 1e9 / bytes;
    if (bw <= 0.0) /* a GPU: the host's read bandwidth bounds nothing there */
        printf("generate batch 1 (%s weights): %.1f tok/s (fastest token; median %.1f) | %.0f MB "
               "of weights per token\n", q->quant, 1.0 / per, 1.0 / median, bytes / 1e6);
    else
        printf("generate batch 1 (%s weights): %.1f tok/s (fastest token; median %.1f) | "
               "bandwidth bound %.1f tok/s (%.0f MB of weights per token at %.1f GB/s read) | "
               "%.0f%% of bound\n", q->quant, 1.0 / per, 1.0 / median, bound, bytes / 1e6, bw,
               100.0 / per / bound);
    if (q->profile) print_generate_profile(token_sum, n_times);
    return 0;
}

/* --gen-batch: the sequences' tokens per second in all, at the median step and the fastest.
 * Returns 0, or 1 after an error. */
static int report_generation_batch(const bench_request *q, andrea_model *m) {
    int n = q->gen < m->cfg.ctx ? q->gen : m->cfg.ctx;
    double *times = malloc(sizeof(double) * (size_t)n);
    long replayed = 0;
    int got = times ? bench_generate_batch(m, q->gen_batch, n, times, &replayed) : -1;
    if (got <= 0) {
        fprintf(stderr, "andrea bench: generate batch %d: %s\n", q->gen_batch,
                got < 0 ? "out of memory for the KV caches" : andrea_error());
        free(times);
        return 1;
    }
    if (m->be->graph)
        printf("graphs: %ld batched decoding steps replayed (%d timed)\n", replayed, got);
    qsort(times, (size_t)got, sizeof(double), cmp_double);
    double median = times[got / 2];
    printf("generate batch %d (%s weights): %.1f tok/s in all at the median step (%.1f per "
           "sequence; fastest step %.1f tok/s in all)\n", q->gen_batch, q->quant,
           q->gen_batch / median, 1.0 / median, q->gen_batch / times[0]);
    free(times);
    return 0;
}

/* --profile of the prefills: the kinds a prefill has, per prefill, over the rounds timed. */
static void print_prefill_profile(double sum, int got) {
    double ms = sum * 1e3 / got, part = 0.0;
    printf("prefill profile (ms per prefill, share):");
    static const int kinds[] = {PROF_MATMUL, PROF_ATTENTION, PROF_NORM};
    for (int k = 0; k < 3; k++) {
        double v = andrea_prof_seconds[kinds[k]] * 1e3 / got;
        part += v;
        printf(" %s %.2f (%.0f%%) |", andrea_prof_name(kinds[k]), v, 100.0 * v / ms);
    }
    printf(" other %.2f (%.0f%%)\n", ms - part, 100.0 * (ms - part) / ms);
}

/* A batch-1 prefill of --prefill tokens: the fastest and median of 5 rounds, its rate
 * against this run's sgemm, and the CPU time (with one thread: the work itself, whatever
 * else the machine runs). Returns 0, or 1 after an error. */
static int report_prefill(const bench_request *q, andrea_model *m, const bench_peaks *pk) {
    enum { ROUNDS = 5 };
    double times[ROUNDS], cpu[ROUNDS], first = 0.0;
    andrea_prof_reset();
    andrea_prof_on = q->profile != 0;
    int got = bench_prefill(m, q->prefill, ROUNDS, times, cpu, &first);
    andrea_prof_on = 0;
    if (got <= 0) {
        fprintf(stderr, "andrea bench: prefill: %s\n", got < 0 ? "out of memory" : andrea_error());
        return 1;
    }
    double sum = 0.0;
    for (int i = 0; i < got; i++) sum += times[i];
    qsort(times, (size_t)got, sizeof(double), cmp_double);
    qsort(cpu, (size_t)got, sizeof(double), cmp_double);
    /* the work a prefill must do: every block's products over n rows, causal attention
     * (Q K^T and A V: 2 n^2 C per layer), the LM head for the last row */
    double C = q->cfg.d_model, n = q->prefill;
    double flops = 2.0 * 12.0 * q->cfg.n_layer * C * C * n + 2.0 * q->cfg.n_layer * C * n * n +
                   2.0 * (double)q->cfg.vocab * C;
    if (pk->device) {
        printf("prefill batch 1, %d tokens (%s weights): %.1f tok/s (fastest of %d; median %.1f) "
               "| %.1f GFLOP/s | the first %.1f tok/s\n", q->prefill, q->quant, n / times[0], got,
               n / times[got / 2], flops / times[0] / 1e9, n / first);
        return 0;
    }
    printf("prefill batch 1, %d tokens (%s weights): %.1f tok/s (fastest of %d; median %.1f) | "
           "%.1f GFLOP/s = %.0f%% of sgemm 1024^3 (%.1f GFLOP/s) | CPU time %.2f ms "
           "(median, all threads) | the first %.1f tok/s\n", q->prefill, q->quant, n / times[0],
           got, n / times[got / 2], flops / times[0] / 1e9,
           100.0 * flops / times[0] / 1e9 / pk->ours, pk->ours, cpu[got / 2] * 1e3, n / first);
    if (q->profile) print_prefill_profile(sum, got);
    return 0;
}

/* The command line that measures the same model the same way again. */
static void print_reproduce(const bench_request *q) {
    char model[512], gen_batch[32] = "";
    model_flags_reproduce(q->mf.preset ? q->mf.preset : "andrea-12m", &q->cfg, model, sizeof model);
    if (q->gen_batch > 0) snprintf(gen_batch, sizeof gen_batch, " --gen-batch %d", q->gen_batch);
    printf("reproduce: andrea bench %s --batch %d --seq %d --steps %d --warmup %d -t %d --backend %s "
           "--attention %s --generate %d%s --quant %s --prefill %d%s%s%s\n", model, q->batch,
           q->seq, q->steps, q->warmup, q->nt, q->be_name, q->attention, q->gen, gen_batch,
           q->quant, q->prefill, q->profile ? " --profile" : "",
           getenv("ANDREA_ISA") ? " --isa " : "", getenv("ANDREA_ISA") ? andrea_isa_name(andrea_cpu_isa(-1)) : "");
}

int cmd_bench(int argc, char **argv) {
    bench_request q;
    int rc = parse_request(argc, argv, &q);
    if (rc >= 0) return rc;
    rc = 0;
    bench_peaks pk = measure_machine(&q);
    andrea_model *m = andrea_model_create_on(&q.cfg, 1, q.be_name);
    if (!m) {
        fprintf(stderr, "andrea bench: %s\n", andrea_error());
        return 1;
    }
    andrea_model_set_flash_attention(m, strcmp(q.attention, "flash") == 0);
    andrea_param_counts pc = andrea_config_param_counts(&q.cfg);
    printf("model: L=%d NH=%d C=%d V=%d %s/%s | %.2fM params | backend %s | attention %s\n",
           q.cfg.n_layer, q.cfg.n_head, q.cfg.d_model, q.cfg.vocab, andrea_norm_name(q.cfg.norm),
           andrea_act_name(q.cfg.act), pc.total / 1e6, q.be_name, q.attention);
    if (q.steps > 0) {
        double s = report_training(&q, m, &pk);
        rc = s < 0 ? 1 : 0;
        if (!rc) {
            print_engines(q.be);
            if (q.profile) print_train_profile(s, q.steps);
        }
    }
    if (!rc && (q.gen > 0 || q.prefill > 0) && andrea_model_quantize(m, q.qkind)) {
        fprintf(stderr, "andrea bench: %s\n", andrea_error());
        rc = 1;
    }
    if (!rc && q.gen > 0) rc = report_generation(&q, m, &pc);
    if (!rc && q.gen > 0 && q.gen_batch > 0) rc = report_generation_batch(&q, m);
    if (!rc && q.prefill > 0) rc = report_prefill(&q, m, &pk);
    if (!rc) print_reproduce(&q);
    andrea_model_free(m);
    return rc;
}
