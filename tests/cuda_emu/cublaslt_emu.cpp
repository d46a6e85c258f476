/*
 * cublaslt_emu.cpp (the emulator's) - cuBLASLt's matmul (cublasLt.h says what is checked):
 * D = alpha op(A) op(B) + beta C in double, then the epilogue on each element: + bias[row],
 * GELU (tanh form, as cuBLASLt's) keeping its input in aux, or the GELU derivative at aux.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cublasLt.h"

static long matmuls_by_epilogue[256];
long cuda_emu::lt_matmuls(int epilogue) { return matmuls_by_epilogue[epilogue & 255]; }

struct cuda_emu_lt {
    int unused;
};
struct cuda_emu_lt_desc {
    cublasComputeType_t compute;
    int32_t ta, tb;
    uint32_t epilogue;
    const void *bias;
    void *aux;
    int64_t aux_ld;
    int32_t bias_type, aux_type;
};
struct cuda_emu_lt_layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
};
struct cuda_emu_lt_pref {
    uint64_t workspace;
    uint32_t align[4]; /* A, B, C, D: 0 = unset, 256 */
};

template <class T> static cublasStatus_t make(T **out) {
    *out = (T *)calloc(1, sizeof(T));
    return *out ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
template <class T> static cublasStatus_t drop(T *p) {
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { return make(h); }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { return drop(h); }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    if (scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    cublasStatus_t s = make(d);
    if (s == CUBLAS_STATUS_SUCCESS) {
        (*d)->compute = compute, (*d)->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        (*d)->bias_type = (*d)->aux_type = -1; /* unset: D's type */
    }
    return s;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { return drop(d); }

/* each attribute has one size, as the library checks */
template <class T> static cublasStatus_t put(T *field, const void *buf, size_t bytes) {
    if (!buf || bytes != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
    if (!d) return CUBLAS_STATUS_NOT_INITIALIZED;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return put(&d->ta, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB: return put(&d->tb, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return put(&d->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return put(&d->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return put(&d->aux, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return put(&d->aux_ld, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return put(&d->aux_type, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return put(&d->bias_type, buf, bytes);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    if (ld < (int64_t)(rows > 1 ? rows : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t s = make(l);
    if (s == CUBLAS_STATUS_SUCCESS) **l = cuda_emu_lt_layout{type, rows, cols, ld};
    return s;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { return drop(l); }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) { return make(p); }
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { return drop(p); }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t bytes) {
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return put(&p->workspace, buf, bytes);
    if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
        attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES)
        return put(&p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* what an algorithm may assume of a pointer it was chosen for: its address's alignment */
static uint64_t address_alignment(const void *p) {
    uint64_t a = 1;
    while (a < 256 && ((uintptr_t)p & a) == 0) a <<= 1;
    return a;
}

static int known_epilogue(uint32_t e) {
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_AUX ||
           e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
}
static int uses_bias(uint32_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
static int uses_aux(uint32_t e) {
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
           e == CUBLASLT_EPILOGUE_DGELU;
}

/* the shapes agree: op(A) (m, k), op(B) (k, n), C and D (m, n); the types are ones the
 * backend uses (bf16 or fp32 operands of one type, fp32 C and D, fp32 bias and aux) */
static cublasStatus_t check_shapes(const cuda_emu_lt_desc *d, const cuda_emu_lt_layout *a,
                                   const cuda_emu_lt_layout *b, const cuda_emu_lt_layout *c,
                                   const cuda_emu_lt_layout *dl) {
    uint64_t m = dl->rows, n = dl->cols;
    uint64_t am = d->ta ? a->cols : a->rows, ak = d->ta ? a->rows : a->cols;
    uint64_t bk = d->tb ? b->cols : b->rows, bn = d->tb ? b->rows : b->cols;
    if (am != m || bn != n || ak != bk || c->rows != m || c->cols != n)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a->type != b->type || (a->type != CUDA_R_16BF && a->type != CUDA_R_32F) ||
        c->type != CUDA_R_32F || dl->type != CUDA_R_32F || !known_epilogue(d->epilogue) ||
        (d->bias_type != -1 && d->bias_type != CUDA_R_32F) ||
        (d->aux_type != -1 && d->aux_type != CUDA_R_32F) || d->compute != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (uses_aux(d->epilogue) && (d->aux_ld % 8 || d->aux_ld < (int64_t)m))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                              cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
    if (!h || !d || !a || !b || !c || !dl || !p) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requested <= 0) return CUBLAS_STATUS_INVALID_VALUE;
    *returned = 0;
    cublasStatus_t s = check_shapes(d, a, b, c, dl);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    memset(&results[0], 0, sizeof results[0]);
    cublasLtMatmulAlgo_t *algo = &results[0].algo;
    algo->data[0] = 0x616e647265614c74ull; /* "andreaLt": checked at the matmul */
    for (int i = 0; i < 4; i++) algo->data[1 + i] = p->align[i] ? p->align[i] : 256;
    algo->data[5] = address_alignment(d->bias), algo->data[6] = address_alignment(d->aux);
    results[0].workspaceSize = p->workspace < 4096 ? p->workspace : 4096;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static double at(const void *p, cudaDataType t, size_t i) {
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    return __uint_as_float((unsigned)((const uint16_t *)p)[i] << 16); /* bf16 */
}
static size_t elem(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }
static size_t span(const cuda_emu_lt_layout *l) {
    return l->cols ? ((size_t)l->ld * (l->cols - 1) + l->rows) * elem(l->type) : 0;
}
/* device memory over the span, aligned as the algorithm assumed */
static int fits(const void *p, size_t bytes, uint64_t align) {
    return !bytes || (((uintptr_t)p & (align - 1)) == 0 && cuda_emu::is_device_span(p, bytes));
}

static double gelu(double x) {
    const double k = 0.7978845608028654;
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}
static double gelu_grad(double x) {
    const double k = 0.7978845608028654;
    double u = k * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

/* one element of D after the product: the epilogue */
static float finish(const cuda_emu_lt_desc *d, double v, size_t row, size_t aux_at) {
    float *aux = (float *)d->aux;
    if (uses_bias(d->epilogue)) v += ((const float *)d->bias)[row];
    if (d->epilogue == CUBLASLT_EPILOGUE_DGELU) return (float)(v * gelu_grad(aux[aux_at]));
    if (d->epilogue & CUBLASLT_EPILOGUE_GELU) {
        if (uses_aux(d->epilogue)) aux[aux_at] = (float)v;
        return (float)gelu((float)v); /* the kept input is the float the derivative reads */
    }
    return (float)v;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t a, const void *B,
                              cublasLtMatrixLayout_t b, const void *beta, const void *C,
                              cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t dl,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
    if (!h || !d || !a || !b || !c || !dl) return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t s = check_shapes(d, a, b, c, dl);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (!algo || algo->data[0] != 0x616e647265614c74ull) return CUBLAS_STATUS_INVALID_VALUE;
    const uint64_t *al = &algo->data[1]; /* A, B, C, D, bias, aux */
    size_t m = dl->rows, n = dl->cols, k = d->ta ? a->rows : a->cols;
    size_t aux_bytes = n ? ((size_t)d->aux_ld * (n - 1) + m) * sizeof(float) : 0;
    if (!fits(A, span(a), al[0]) || !fits(B, span(b), al[1]) || !fits(C, span(c), al[2]) ||
        !fits(D, span(dl), al[3]) ||
        (uses_bias(d->epilogue) && !fits(d->bias, m * sizeof(float), al[4])) ||
        (uses_aux(d->epilogue) && !fits(d->aux, aux_bytes, al[5])) ||
        (workspace_bytes && !cuda_emu::is_device_span(workspace, workspace_bytes)) ||
        cuda_emu::stream_valid("cublasLtMatmul", stream) != cudaSuccess)
        return CUBLAS_STATUS_INVALID_VALUE; /* a GPU would fault or refuse: say so here */
    matmuls_by_epilogue[d->epilogue & 255]++;
    double alf = *(const float *)alpha, be = *(const float *)beta;
    /* the call's values, as a captured call keeps them: the backend sets a cached
     * descriptor's bias pointer again for its next call */
    cuda_emu_lt_desc dd = *d;
    cuda_emu_lt_layout la = *a, lb = *b, lc = *c, ld = *dl;
    cudaError_t e = cuda_emu::enqueue(stream, "cublasLtMatmul", [=]() {
        cuda_emu::device_access open;
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < m; i++) {
                double acc = 0.0;
                for (size_t p = 0; p < k; p++) {
                    size_t ai = dd.ta ? i * la.ld + p : p * la.ld + i;
                    size_t bi = dd.tb ? p * lb.ld + j : j * lb.ld + p;
                    acc += at(A, la.type, ai) * at(B, lb.type, bi);
                }
                double v = alf * acc + (be != 0.0 ? be * ((const float *)C)[j * lc.ld + i] : 0.0);
                ((float *)D)[j * ld.ld + i] = finish(&dd, v, i, j * (size_t)dd.aux_ld + i);
            }
    });
    if (e != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}
