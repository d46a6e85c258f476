/*
 * test_backend_memory.c - the memory side of every backend: strided copies, ranges of
 * upload/download, fill (the same bits as the host RNG loop), the count of non-finite
 * values, quantisation (within half a step of a double reference) and the row gather,
 * each against a plain host loop; an incomplete backend refused at model creation; and
 * cpu-guarded's guard: a host read of its memory outside its operations crashes (SIGSEGV,
 * in a child process).
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "test_util.h"

static float *dev(be_t be, const float *host, size_t n) {
    float *d = be->ops.alloc(be, sizeof(float) * (n ? n : 1));
    if (host) be->ops.upload(be, d, host, sizeof(float) * n);
    return d;
}
static void down(be_t be, float *host, const float *d, size_t n) {
    be->ops.download(be, host, d, sizeof(float) * n);
}

static void test_copies(be_t be) {
    enum { R = 5, N = 7, LDS = 11, LDD = 9 };
    float *src = tu_normal_array(R * LDS), got[R * LDD], want[R * LDD];
    for (int i = 0; i < R * LDD; i++) got[i] = want[i] = -1.0f;
    float *ds = dev(be, src, R * LDS), *dd = dev(be, want, R * LDD);
    be->ops.copy_rows(be, dd, LDD, ds + 2, LDS, N, R);
    be->ops.synchronize(be);
    down(be, got, dd, R * LDD);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < N; j++) want[r * LDD + j] = src[r * LDS + 2 + j];
    CHECK(memcmp(got, want, sizeof got) == 0);
    float part[3]; /* a range: pointer arithmetic on backend memory */
    down(be, part, ds + 4, 3);
    CHECK(memcmp(part, src + 4, sizeof part) == 0);
    be->ops.free(be, ds);
    be->ops.free(be, dd);
    free(src);
}

static void test_fill(be_t be) {
    enum { N = 1001 };
    static const int kinds[] = {ANDREA_FILL_CONST, ANDREA_FILL_NORMAL, ANDREA_FILL_UNIFORM};
    for (int k = 0; k < 3; k++) {
        float got[N], want[N];
        andrea_rng r1, r2;
        andrea_rng_seed(&r1, 42);
        andrea_rng_seed(&r2, 42);
        float *d = dev(be, NULL, N);
        be->ops.fill(be, d, N, kinds[k], k == 2 ? -0.5f : 0.25f, 0.02f, &r1);
        down(be, got, d, N);
        for (int i = 0; i < N; i++) /* the initialisation's loops before fill existed */
            want[i] = kinds[k] == ANDREA_FILL_CONST    ? 0.25f
                      : kinds[k] == ANDREA_FILL_NORMAL ? 0.02f * andrea_rng_normal(&r2) + 0.25f
                      : -0.5f + (0.02f + 0.5f) * andrea_rng_uniform(&r2);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK(r1.s[0] == r2.s[0] && r1.s[1] == r2.s[1]); /* the RNG advanced as many draws */
        be->ops.free(be, d);
    }
}

static void test_nonfinite(be_t be) {
    float x[300];
    for (int i = 0; i < 300; i++) x[i] = (float)i;
    x[7] = NAN, x[100] = INFINITY, x[299] = -INFINITY, x[50] = -1.0f;
    float *d = dev(be, x, 300);
    CHECK(be->ops.count_nonfinite(be, d, 300, 0) == 3);
    CHECK(be->ops.count_nonfinite(be, d, 300, 1) == 4); /* and -1, negative */
    CHECK(be->ops.count_nonfinite(be, d, 7, 0) == 0);
    CHECK(be->ops.max_abs(be, d, 300) == INFINITY); /* NaN and inf count as unbounded */
    CHECK(be->ops.max_abs(be, d, 7) == 6.0f);
    CHECK(be->ops.max_abs(be, d + 50, 1) == 1.0f && be->ops.max_abs(be, d, 0) == 0.0f);
    be->ops.free(be, d);
}

static void test_quant(be_t be) {
    enum { R = 6, C = 37 };
    float *x = tu_normal_array(R * C);
    for (int c = 0; c < C; c++) x[3 * C + c] = 0.0f; /* a zero row: scale 1 */
    float *dx = dev(be, x, R * C);
    void *dq = be->ops.alloc(be, R * C * 2);
    float *ds = dev(be, NULL, R), *dout = dev(be, NULL, R * C);
    float out[R * C], scale[R];
    int32_t ids[3] = {5, 0, 3};
    /* bf16: round to nearest with 8 significant bits, relative error <= 2^-8 */
    be->ops.quantize(be, dq, NULL, dx, ANDREA_QUANT_BF16, R, C);
    be->ops.gather_rows(be, dout, dq, ANDREA_QUANT_BF16, NULL, NULL, R, C);
    down(be, out, dout, R * C);
    for (int i = 0; i < R * C; i++)
        CHECK(fabs((double)out[i] - x[i]) <= fabs((double)x[i]) / 256.0);
    /* int8: scale absmax/127, every value within half a step of the double reference */
    be->ops.quantize(be, dq, ds, dx, ANDREA_QUANT_INT8, R, C);
    down(be, scale, ds, R);
    be->ops.gather_rows(be, dout, dq, ANDREA_QUANT_INT8, ds, NULL, R, C);
    down(be, out, dout, R * C);
    for (int r = 0; r < R; r++) {
        double amax = 0;
        for (int c = 0; c < C; c++) amax = fmax(amax, fabs((double)x[r * C + c]));
        double s = amax > 0 ? amax / 127.0 : 1.0;
        CHECK_CLOSE(scale[r], s, 0, 1e-6);
        for (int c = 0; c < C; c++)
            CHECK(fabs(out[r * C + c] - x[r * C + c]) <= 0.5 * s * (1 + 1e-5));
    }
    /* gather by ids, f32: the rows themselves */
    be->ops.gather_rows(be, dout, dx, ANDREA_QUANT_NONE, NULL, ids, 3, C);
    down(be, out, dout, 3 * C);
    for (int i = 0; i < 3; i++) CHECK(memcmp(out + i * C, x + ids[i] * C, sizeof(float) * C) == 0);
    be->ops.free(be, dx), be->ops.free(be, dq), be->ops.free(be, ds), be->ops.free(be, dout);
    free(x);
}

/* q8_0 (ggml's blocks: int8 with an f16 scale per 32): the backend's quantize and
 * gather_rows give the host kernels' bits, and each block is within half a step of
 * max|block|/127 plus the f16 rounding of the scale. */
static void test_quant_q8_0(be_t be) {
    enum { R = 6, C = 64, NB = R * C / 32 };
    float *x = tu_normal_array(R * C);
    float *dx = dev(be, x, R * C), *ds = dev(be, NULL, NB), *dout = dev(be, NULL, 3 * C);
    void *dq = be->ops.alloc(be, R * C);
    int8_t q[R * C];
    float scale[NB], want[R * C], got[3 * C];
    int32_t ids[3] = {5, 0, 3};
    andrea_quantize_rows(q, scale, x, ANDREA_QUANT_Q8_0, R, C);
    andrea_gather_rows(want, q, ANDREA_QUANT_Q8_0, scale, NULL, R, C);
    for (int b = 0; b < NB; b++)
        CHECK(tu_check_array("q8_0 block", want + 32 * b, x + 32 * b, 32,
                             0.57 / 127 * tu_max_abs(x + 32 * b, 32), 0));
    be->ops.quantize(be, dq, ds, dx, ANDREA_QUANT_Q8_0, R, C);
    be->ops.gather_rows(be, dout, dq, ANDREA_QUANT_Q8_0, ds, ids, 3, C);
    down(be, got, dout, 3 * C);
    for (int i = 0; i < 3; i++) CHECK(memcmp(got + i * C, want + ids[i] * C, sizeof(float) * C) == 0);
    be->ops.free(be, dx), be->ops.free(be, dq), be->ops.free(be, ds), be->ops.free(be, dout);
    free(x);
}

/* An incomplete backend is refused when a model is created on it, naming the op. */
static void test_incomplete(void) {
    andrea_backend half = andrea_backend_cpu;
    half.name = "half";
    half.ops.count_nonfinite = NULL;
    CHECK(andrea_backend_missing(&andrea_backend_cpu) == NULL);
    CHECK(andrea_backend_missing(&andrea_backend_cpu_guarded) == NULL);
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    CHECK(andrea_model_alloc_on(&cfg, &half) == NULL);
    CHECK(strstr(andrea_error(), "count_nonfinite") != NULL);
}

/* A host read of cpu-guarded memory outside its operations: the child must die of SIGSEGV. */
static void test_guard_crashes(void) {
    be_t be = &andrea_backend_cpu_guarded;
    float one = 1.0f;
    float *d = dev(be, &one, 1);
    float back = 0;
    down(be, &back, d, 1); /* through the backend: fine */
    CHECK(back == 1.0f);
    CHECK(andrea_guarded_is_locked());
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        volatile float v = *(volatile float *)d; /* the stray access */
        (void)v;
        _exit(0); /* reached only if the guard failed */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    printf("cpu-guarded: a host read outside its operations %s\n",
           WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV ? "crashed (SIGSEGV), as it must"
                                                              : "did NOT crash");
    be->ops.free(be, d);
}

int main(void) {
    tu_rng_seed(7);
    for (int i = 0; i < andrea_backend_count(); i++) {
        be_t be = andrea_backend_get(i);
        int before = tu_failures;
        test_copies(be);
        test_fill(be);
        test_nonfinite(be);
        test_quant(be);
        test_quant_q8_0(be);
        printf("%-13s copy_rows, ranges, fill, count_nonfinite, quantize, gather_rows: %s\n",
               be->name, tu_failures == before ? "OK" : "FAIL");
    }
    test_incomplete();
    test_guard_crashes();
    return tu_finish("test_backend_memory");
}
