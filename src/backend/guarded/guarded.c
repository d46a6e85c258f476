/*
 * guarded.c - "cpu-guarded": a backend whose memory the host cannot touch, so that any
 * code outside the backend that reads or writes a tensor directly crashes at once
 * (SIGSEGV) instead of working by accident on the CPU and failing on a GPU.
 *
 * Every buffer is carved from one arena (a reserved, never-moving mapping) that is kept
 * PROT_NONE; each operation opens it (PROT_READ|PROT_WRITE), runs the "cpu" backend's
 * operation on it, and closes it again. The kernels are the CPU's own, so results are
 * bit-identical to "cpu". Operations may run on several threads at once (the server): a
 * count of operations in flight keeps the arena open until the last one leaves, so a stray
 * access is caught for certain only while no operation runs. Slow by design (two
 * mprotect calls per operation): a proof, not a production backend.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/backend.h"

#define ARENA_RESERVE ((size_t)1 << 37) /* 128 GiB of address space, no memory until used */
#define PAGE ((size_t)4096)

typedef struct {
    size_t off, len;
    int used;
} block;

typedef struct {
    atomic_flag lock; /* guards everything below */
    char *base;       /* the reservation (NULL until the first alloc) */
    size_t top;       /* bytes handed out so far: [base, base + top) toggles protection */
    int depth;        /* operations in flight: the arena is open while > 0 */
    block *b;         /* sorted by offset, covering [0, top) */
    int n, cap;
} arena;

static arena A = {ATOMIC_FLAG_INIT, NULL, 0, 0, NULL, 0, 0};
static const andrea_backend *const CPU = &andrea_backend_cpu;

static void lock(arena *a) {
    while (atomic_flag_test_and_set_explicit(&a->lock, memory_order_acquire)) {
    }
}
static void unlock(arena *a) { atomic_flag_clear_explicit(&a->lock, memory_order_release); }

static void protect(arena *a, int open) {
    if (a->top) mprotect(a->base, a->top, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static void enter(be_t be) {
    arena *a = be->state;
    lock(a);
    if (a->depth++ == 0) protect(a, 1);
    unlock(a);
}
static void leave(be_t be) {
    arena *a = be->state;
    lock(a);
    if (--a->depth == 0) protect(a, 0);
    unlock(a);
}

int andrea_guarded_is_locked(void) {
    lock(&A);
    int locked = A.depth == 0;
    unlock(&A);
    return locked;
}

/* ---- the arena's blocks: first fit, neighbours merged on free --------------------------- */

static int insert_block(arena *a, int at, block bl) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 64;
        block *nb = realloc(a->b, sizeof *nb * (size_t)cap);
        if (!nb) return -1;
        a->b = nb;
        a->cap = cap;
    }
    memmove(a->b + at + 1, a->b + at, sizeof *a->b * (size_t)(a->n - at));
    a->b[at] = bl;
    a->n++;
    return 0;
}

static void *g_alloc(be_t be, size_t bytes) {
    arena *a = be->state;
    size_t len = (bytes + PAGE - 1) / PAGE * PAGE;
    if (!len) len = PAGE;
    void *p = NULL;
    lock(a);
    if (!a->base) {
        void *r = mmap(NULL, ARENA_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        a->base = r == MAP_FAILED ? NULL : r;
    }
    for (int i = 0; a->base && !p && i < a->n; i++) {
        block *bl = &a->b[i];
        if (bl->used || bl->len < len) continue;
        if (bl->len > len && insert_block(a, i + 1, (block){bl->off + len, bl->len - len, 0}))
            break;
        bl = &a->b[i]; /* insert_block may have moved the array */
        bl->len = len;
        bl->used = 1;
        p = a->base + bl->off;
    }
    if (a->base && !p && a->top + len <= ARENA_RESERVE &&
        insert_block(a, a->n, (block){a->top, len, 1}) == 0) {
        p = a->base + a->top;
        if (a->depth) mprotect(p, len, PROT_READ | PROT_WRITE); /* the arena is open now */
        a->top += len;
    }
    unlock(a);
    return p;
}

static void g_free(be_t be, void *p) {
    arena *a = be->state;
    if (!p) return;
    lock(a);
    size_t off = (size_t)((char *)p - a->base);
    for (int i = 0; i < a->n; i++) {
        if (a->b[i].off != off || !a->b[i].used) continue;
        madvise(p, a->b[i].len, MADV_DONTNEED); /* give the memory back; reads zero later */
        a->b[i].used = 0;
        if (i + 1 < a->n && !a->b[i + 1].used) {
            a->b[i].len += a->b[i + 1].len;
            memmove(a->b + i + 1, a->b + i + 2, sizeof *a->b * (size_t)(a->n - i - 2));
            a->n--;
        }
        if (i > 0 && !a->b[i - 1].used) {
            a->b[i - 1].len += a->b[i].len;
            memmove(a->b + i, a->b + i + 1, sizeof *a->b * (size_t)(a->n - i - 1));
            a->n--;
        }
        break;
    }
    unlock(a);
}

/* ---- every other operation: the CPU's, with the arena open ------------------------------ */

#define WRAP(op, params, args)                                                                \
    static void g_##op params {                                                               \
        enter(be);                                                                            \
        CPU->ops.op args;                                                                     \
        leave(be);                                                                            \
    }
#define WRAP_R(type, op, params, args)                                                        \
    static type g_##op params {                                                               \
        enter(be);                                                                            \
        type r = CPU->ops.op args;                                                            \
        leave(be);                                                                            \
        return r;                                                                             \
    }

WRAP(upload, (be_t be, void *dst, const void *src, size_t n), (CPU, dst, src, n))
WRAP(download, (be_t be, void *dst, const void *src, size_t n), (CPU, dst, src, n))
WRAP(zero, (be_t be, void *p, size_t n), (CPU, p, n))
WRAP(copy_rows, (be_t be, float *d, size_t ldd, const float *s, size_t lds, size_t n, size_t r),
     (CPU, d, ldd, s, lds, n, r))
static void g_synchronize(be_t be) { (void)be; }
WRAP(fill, (be_t be, float *p, size_t n, int kind, float a, float b, andrea_rng *rng),
     (CPU, p, n, kind, a, b, rng))
WRAP_R(uint64_t, count_nonfinite, (be_t be, const float *x, size_t n, int nonneg),
       (CPU, x, n, nonneg))
WRAP_R(float, max_abs, (be_t be, const float *x, size_t n), (CPU, x, n))
WRAP(quantize, (be_t be, void *d, float *s, const float *x, int fmt, size_t r, size_t c),
     (CPU, d, s, x, fmt, r, c))
WRAP(gather_rows,
     (be_t be, float *o, const void *w, int fmt, const float *s, const int32_t *ids, int n, int K),
     (CPU, o, w, fmt, s, ids, n, K))
WRAP(embedding_forward,
     (be_t be, float *o, const int32_t *tok, const float *te, const float *pe, int B, int T, int C),
     (CPU, o, tok, te, pe, B, T, C))
WRAP(embedding_backward,
     (be_t be, float *dte, float *dpe, const float *d, const int32_t *tok, int B, int T, int C),
     (CPU, dte, dpe, d, tok, B, T, C))
WRAP(residual_forward, (be_t be, float *o, const float *a, const float *b, size_t n),
     (CPU, o, a, b, n))
WRAP(matmul_forward,
     (be_t be, float *o, const float *x, const float *w, const float *b, int M, int K, int N),
     (CPU, o, x, w, b, M, K, N))
WRAP(matmul_forward_residual,
     (be_t be, float *o, const float *x, const float *w, const float *b, const float *r, int M,
      int K, int N),
     (CPU, o, x, w, b, r, M, K, N))
WRAP(matmul_forward_act,
     (be_t be, float *pre, float *post, const float *x, const float *w, const float *b, int M,
      int K, int N, int act),
     (CPU, pre, post, x, w, b, M, K, N, act))
WRAP(matmul_backward,
     (be_t be, float *dx, float *dw, float *db, const float *d, const float *x, const float *w,
      int M, int K, int N, int init),
     (CPU, dx, dw, db, d, x, w, M, K, N, init))
WRAP(matmul_backward_act,
     (be_t be, float *dpre, float *dw, float *db, const float *d, const float *post,
      const float *w, const float *pre, int M, int K, int N, int act, int init),
     (CPU, dpre, dw, db, d, post, w, pre, M, K, N, act, init))
WRAP(matvec,
     (be_t be, float *o, const float *x, const void *w, int fmt, const float *s, const float *b,
      int K, int N, int n),
     (CPU, o, x, w, fmt, s, b, K, N, n))
WRAP(norm_forward,
     (be_t be, int kind, float *o, float *mean, float *rstd, const float *x, const float *w,
      const float *b, int N, int C, float eps),
     (CPU, kind, o, mean, rstd, x, w, b, N, C, eps))
WRAP(norm_backward,
     (be_t be, int kind, float *dx, float *dw, float *db, const float *d, const float *x,
      const float *w, const float *mean, const float *rstd, int N, int C),
     (CPU, kind, dx, dw, db, d, x, w, mean, rstd, N, C))
WRAP(activation_forward, (be_t be, float *o, const float *x, size_t n, int act),
     (CPU, o, x, n, act))
WRAP(attention_forward,
     (be_t be, float *o, float *att, float *pre, const float *qkv, int B, int T, int C, int NH),
     (CPU, o, att, pre, qkv, B, T, C, NH))
WRAP(attention_backward,
     (be_t be, float *dqkv, const float *d, const float *qkv, const float *att, int B, int T,
      int C, int NH),
     (CPU, dqkv, d, qkv, att, B, T, C, NH))
WRAP(attention_flash_forward,
     (be_t be, float *o, float *lse, const float *qkv, int B, int T, int C, int NH),
     (CPU, o, lse, qkv, B, T, C, NH))
WRAP(attention_flash_backward,
     (be_t be, float *dqkv, const float *d, const float *qkv, const float *o, const float *lse,
      int B, int T, int C, int NH),
     (CPU, dqkv, d, qkv, o, lse, B, T, C, NH))
WRAP(attention_decode,
     (be_t be, float *o, float *att, int ld, const float *q, const float *kc, const float *vc,
      int pos, int C, int NH),
     (CPU, o, att, ld, q, kc, vc, pos, C, NH))
WRAP_R(float, crossentropy_forward,
       (be_t be, float *lp, float *losses, const int32_t *tg, int N, int V, int ld, int *n_valid),
       (CPU, lp, losses, tg, N, V, ld, n_valid))
WRAP(crossentropy_backward,
     (be_t be, float *p, const int32_t *tg, int N, int V, int ld, float dloss),
     (CPU, p, tg, N, V, ld, dloss))
WRAP(adamw_update,
     (be_t be, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
      float b2, float eps, float wd, int t, float gs),
     (CPU, p, g, m, v, n, lr, b1, b2, eps, wd, t, gs))
WRAP_R(double, sum_squares, (be_t be, const float *g, size_t n), (CPU, g, n))

static int always(be_t be) {
    (void)be;
    return 1;
}

const andrea_backend andrea_backend_cpu_guarded = {
    "cpu-guarded",
    "CPU kernels on memory the host cannot touch outside the backend's operations (a "
    "stray access crashes): proves that no code outside the backend reads tensors",
    {
        .alloc = g_alloc, .free = g_free, .upload = g_upload, .download = g_download,
        .zero = g_zero, .copy_rows = g_copy_rows, .synchronize = g_synchronize,
        .fill = g_fill, .count_nonfinite = g_count_nonfinite, .quantize = g_quantize,
        .max_abs = g_max_abs,
        .gather_rows = g_gather_rows, .embedding_forward = g_embedding_forward,
        .embedding_backward = g_embedding_backward, .residual_forward = g_residual_forward,
        .matmul_forward = g_matmul_forward, .matmul_forward_residual = g_matmul_forward_residual,
        .matmul_forward_act = g_matmul_forward_act, .matmul_backward = g_matmul_backward,
        .matmul_backward_act = g_matmul_backward_act, .matvec = g_matvec,
        .norm_forward = g_norm_forward, .norm_backward = g_norm_backward,
        .activation_forward = g_activation_forward, .attention_forward = g_attention_forward,
        .attention_backward = g_attention_backward,
        .attention_flash_forward = g_attention_flash_forward,
        .attention_flash_backward = g_attention_flash_backward,
        .attention_decode = g_attention_decode, .crossentropy_forward = g_crossentropy_forward,
        .crossentropy_backward = g_crossentropy_backward, .adamw_update = g_adamw_update,
        .sum_squares = g_sum_squares,
    },
    &A, ANDREA_MEM_DEVICE, always, NULL, ANDREA_PRECISION_FP32, NULL,
    0 /* pads only when ANDREA_VOCAB_MULTIPLE asks (test_vocab_pad): its other tests
       * compare bits with cpu, and a BLAS product's columns depend on N */,
    NULL /* no graphs: every op runs when called */};
