/*
 * cuda_lt.cu - cuda-bf16's products through cuBLASLt (cuda_lt.h): bf16 operands, fp32
 * accumulation and result, and the epilogues that fold what were separate passes over the
 * output into the product: the bias, the residual (as C, beta 1), GELU keeping its input
 * for the backward (GELU_AUX_BIAS), and GELU's derivative in the input-gradient product
 * (DGELU). One cuBLASLt call writes the output once instead of two to four passes over it.
 *
 * Per host thread, like the cuBLAS handles: one cuBLASLt handle, a 32 MiB workspace and a
 * table of plans, one per product shape and epilogue (descriptor, layouts, the algorithm the
 * heuristic chose), made once and reused: a training step runs the same dozen shapes every
 * step. A shape or epilogue cuBLASLt has no algorithm for is remembered as such, and the
 * caller runs it the unfused way (cublasGemmEx and its passes). Never run on a GPU yet:
 * the emulator's cuBLASLt (tests/cuda_emu/cublaslt_emu.cpp) checks the calls and the
 * epilogues' arithmetic, not cuBLASLt's own behaviour.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_lt.h"

enum {
    LT_PLANS = 64,             /* distinct shapes a thread keeps (a GPT step has ~15) */
    LT_WORKSPACE = 32 << 20,   /* what the heuristic may use: split-K and the like */
};

typedef struct {
    int m, n, k, ta, tb, lda, ldb, epilogue, aux_ld; /* aux_ld: 0 without one, else m */
    int bias_align, aux_align; /* what the chosen algorithm may assume of those pointers */
} lt_key;

typedef struct {
    lt_key key;
    int state; /* 0 empty, 1 ready, 2 cuBLASLt has no algorithm: the caller's unfused path */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, cd;
    cublasLtMatmulAlgo_t algo;
} lt_plan;

static __thread cublasLtHandle_t lt_handle;
static __thread lt_plan plans[LT_PLANS];
static __thread int plans_next; /* the slot the next new plan takes (round robin) */

/* for tests and the first GPU run: products fused, run unfused, refused by cublasLtMatmul
 * after the heuristic chose an algorithm (then unfused); all threads, roughly (no locks) */
static struct {
    long fused, unfused, refused;
} lt_counts;

/* The largest power of two (to 256) dividing p's address: cuBLASLt's heuristic reads the
 * bias and aux pointers to learn their alignment, so plans differ by it. */
static int alignment_of(const void *p) {
    int a = 1;
    while (a < 256 && ((uintptr_t)p & (uintptr_t)a) == 0) a <<= 1;
    return a;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static void plan_free(lt_plan *p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->cd) cublasLtMatrixLayoutDestroy(p->cd);
    memset(p, 0, sizeof *p);
}

#define LT_TRY(call)                                                                          \
    do {                                                                                      \
        if ((st = (call)) != CUBLAS_STATUS_SUCCESS) goto done;                                \
    } while (0)

/* The descriptor and layouts of key, and the heuristic's first algorithm for them with
 * every matrix 16-byte aligned (the preference says so: its default is 256). */
static cublasStatus_t plan_make(lt_plan *p, const lt_key *k, const cuda_epilogue *e) {
    cublasStatus_t st;
    cublasLtMatmulPreference_t pref = NULL;
    uint32_t epi = (uint32_t)k->epilogue, align = 16;
    int32_t ta = k->ta, tb = k->tb;
    uint64_t ws = LT_WORKSPACE;
    int64_t aux_ld = k->aux_ld;
    cublasLtMatmulHeuristicResult_t found;
    int n_found = 0;
    p->key = *k;
    LT_TRY(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    /* the bias's and aux's types are left unset: D's (fp32), as wanted; setting them is
     * for fp8 and int8 kernels (cuBLASLt refuses other combinations at the matmul) */
    if (e->bias)
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                              &e->bias, sizeof e->bias));
    if (e->pre) {
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                              &aux_ld, sizeof aux_ld));
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                              &e->pre, sizeof e->pre));
    }
    /* column-major: op(A) is (m, k), op(B) (k, n), C and D (m, n) with ld m */
    LT_TRY(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k->ta ? k->k : k->m,
                                      k->ta ? k->m : k->k, k->lda));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k->tb ? k->n : k->k,
                                      k->tb ? k->k : k->n, k->ldb));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->cd, CUDA_R_32F, k->m, k->n, k->m));
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof ws));
    for (int i = 0; i < 4; i++) {
        cublasLtMatmulPreferenceAttributes_t a =
            (cublasLtMatmulPreferenceAttributes_t)(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i);
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, a, &align, sizeof align));
    }
    st = cublasLtMatmulAlgoGetHeuristic(lt_handle, p->desc, p->a, p->b, p->cd, p->cd, pref, 1,
                                        &found, &n_found);
    if (st == CUBLAS_STATUS_SUCCESS && (n_found < 1 || found.state != CUBLAS_STATUS_SUCCESS))
        st = CUBLAS_STATUS_NOT_SUPPORTED;
    if (st == CUBLAS_STATUS_SUCCESS) p->algo = found.algo;
done:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    return st;
}

/* key's plan, made on first use; NULL with *unfused set when cuBLASLt has no algorithm
 * for it, NULL with the failure recorded when cuBLASLt fails otherwise */
static lt_plan *plan_for(const char *op, const lt_key *k, const cuda_epilogue *e,
                         int *unfused) {
    for (int i = 0; i < LT_PLANS; i++)
        if (plans[i].state && memcmp(&plans[i].key, k, sizeof *k) == 0) {
            *unfused = plans[i].state == 2;
            return *unfused ? NULL : &plans[i];
        }
    lt_plan *p = &plans[plans_next];
    plans_next = (plans_next + 1) % LT_PLANS;
    plan_free(p);
    cublasStatus_t st = plan_make(p, k, e);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
        plan_free(p);
        p->key = *k, p->state = 2, *unfused = 1; /* remembered: not asked again */
        return NULL;
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        plan_free(p);
        cuda_failf(op, cublasGetStatusString(st), "cuBLASLt plan m %d n %d k %d epilogue %d",
                   k->m, k->n, k->k, k->epilogue);
        return NULL;
    }
    p->state = 1;
    return p;
}

static int lt_ready(const char *op) {
    if (lt_handle) return 0;
    cublasStatus_t st = cublasLtCreate(&lt_handle);
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    lt_handle = NULL;
    return cuda_failf(op, cublasGetStatusString(st), "%s", "cublasLtCreate");
}

/* cuBLASLt's epilogue for e, or 0 when it has none (an activation but GELU, a bias or C
 * with the backward's derivative) */
static int epilogue_of(const cuda_epilogue *e) {
    if (e->act < 0) return e->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (e->act != ANDREA_ACT_GELU) return 0;
    if (e->backward) return e->bias || e->C ? 0 : CUBLASLT_EPILOGUE_DGELU;
    return e->bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
}

/* ANDREA_CUDA_LT=0: every product unfused (to tell a cuBLASLt problem from others) */
static int lt_enabled(void) {
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("ANDREA_CUDA_LT");
        on = !(v && strcmp(v, "0") == 0);
    }
    return on;
}

int cuda_lt_matmul(const char *op, int m, int n, int k, const void *A, int ta, int lda,
                   const void *B, int tb, int ldb, float *D, const cuda_epilogue *e) {
    if (!lt_enabled()) return 1;
    int epilogue = epilogue_of(e);
    float *pre = e->act >= 0 ? e->pre : NULL;
    /* cuBLASLt's vectorised loads: every matrix 16-byte aligned, aux rows a multiple of 8 */
    if (!epilogue || !aligned16(A) || !aligned16(B) || !aligned16(D) ||
        (e->C && !aligned16(e->C)) || (e->bias && !aligned16(e->bias)) ||
        (pre && (!aligned16(pre) || m % 8))) {
        lt_counts.unfused++;
        return 1;
    }
    if (lt_ready(op)) return -1;
    lt_key key = {m, n, k, ta, tb, lda, ldb, epilogue, pre ? m : 0,
                  e->bias ? alignment_of(e->bias) : 0, pre ? alignment_of(pre) : 0};
    cuda_epilogue with_pre = *e;
    with_pre.pre = pre;
    int unfused = 0;
    lt_plan *p = plan_for(op, &key, &with_pre, &unfused);
    if (!p) return unfused ? (lt_counts.unfused++, 1) : -1;
    void *ws = cuda_scratch(CUDA_SCRATCH_LT, LT_WORKSPACE, op);
    if (!ws) return -1;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (e->bias)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &e->bias,
                                            sizeof e->bias);
    if (pre && st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                            &pre, sizeof pre);
    float one = 1.0f, beta = e->C ? 1.0f : 0.0f;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmul(lt_handle, p->desc, &one, A, p->a, B, p->b, &beta, e->C ? e->C : D,
                            p->cd, D, p->cd, &p->algo, ws, LT_WORKSPACE, cuda_stream());
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
        /* refused before it ran (D untouched): this plan is unfused from now on */
        p->state = 2;
        lt_counts.refused++;
        return 1;
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda_failf(op, cublasGetStatusString(st), "cublasLtMatmul m %d n %d k %d "
                          "epilogue %d", m, n, k, epilogue);
    lt_counts.fused++;
    return 0;
}

extern "C" void andrea_cuda_lt_counts(long *fused, long *unfused, long *refused) {
    *fused = lt_counts.fused, *unfused = lt_counts.unfused, *refused = lt_counts.refused;
}
