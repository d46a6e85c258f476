/*
 * dot.c - the row dot products of batch-1 decoding: sum_k w[k] x[k] with w in fp32,
 * bf16, f16 (an f16 file's own weights, widened exactly: the f32 dot's bits at half the
 * reads), int8, int8 with a scale per block of 32 (ggml's q8_0) or 4-bit with a scale per
 * block of 32 (ggml's q4_0: the weight formats of quant.c) and x in fp32. Decoding reads every
 * weight once per token, so these run at memory speed only if the arithmetic keeps
 * up: a single accumulator chain (what `omp simd reduction` compiles to) waits 4
 * cycles per FMA, which capped bf16 and int8 well below their bandwidth bound. Each
 * ISA's version keeps 4 independent accumulators and widens bf16/int8 with one
 * instruction per vector of weights (a memory-operand vpmovzxwd/vpmovsxbd on x86,
 * vmovl on NEON); the baseline is a portable simd loop. The ISA is chosen per call
 * under the cap (andrea_cpu_isa), and the summation order is fixed by the code, so
 * results do not vary between runs (they differ between ISAs in the last bits).
 *
 * Batched decoding multiplies n inputs by each row. Calling the one-input dot n times
 * kept the row in L1 but loaded and widened every weight vector n times, so 4 sequences
 * cost 1.7-2.7x one instead of about 1x; the vector ISAs' multi-input dots decode each
 * weight vector once into the accumulators of up to 2 (AVX2) or 4 (AVX-512, NEON) inputs,
 * as many as the registers hold, each input summed exactly as the one-input dot sums it.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels/act_simd.h"
#include "backend/cpu/kernels/dot_q4_0.h"
#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"

/* s[j] = the dot of one weight row (bytes w; d: its per-32 scales for q8_0 and q4_0)
 * with input j of x (x + j K), for j below the function's input count. One signature
 * for every format, so the table and the caller have no per-format cases. */
typedef void (*dot_fn)(const void *w, const float *d, const float *x, int K, float *s);
enum { NFMT = ANDREA_QUANT_F16 + 1 };
typedef struct {
    dot_fn fn[3][NFMT]; /* fn[g][fmt]: 2^g inputs from one pass over a row, by ANDREA_QUANT_* */
    int groups;         /* how many of fn's rows an ISA has: 1, 2 (up to 2 inputs) or 3 */
} dot_fns;

/* Bytes of weights requested ahead of the dot. The hardware prefetcher alone kept
 * decoding's weight stream fed only while the arithmetic per byte was small: int8 and
 * bf16 rows from DRAM ran at about the sum of their compute and memory times (andrea-480m
 * at AVX2: 53% and 67% of the read bound; f32 96%). A software prefetch a few rows'
 * worth of lines ahead (rows are contiguous, so it runs on into the next row) overlaps
 * the two. But on Zen 4 the same request ahead of the 16-bit dots at AVX-512 cost them a
 * third (gpt2-124m f16/bf16 decoding, 2 threads, median tok/s 65-72 with it, 69-106
 * without; AVX2 and the other formats within noise either way): there they request
 * nothing (PF 0 below) and the hardware prefetcher alone feeds them. */
#define DOT_PREFETCH_AHEAD 4096

/* NI inputs against one row: 4 accumulators x VW lanes per input over blocks of 4 VW,
 * then VW at a time, then scalars. Each vector of weights is loaded and decoded once
 * (LOAD(k): the VW weights at k as floats) and multiplied into every input's accumulator
 * (LOADX(p, k): the VW floats at p + k; FMA(a, b, c) = a b + c), so batched decoding
 * reads and widens a row once for NI tokens; REDUCE4 sums an input's four accumulators'
 * lanes, WBYTES(k) is the byte offset of weight k. Each input's sums are the same
 * operations in the same order whatever NI is (the single dot is NI = 1), so a batch gives
 * every sequence the bits it gets alone. Each block first asks for the cache lines
 * PF bytes ahead of it, unless PF is 0 (one request per 64 bytes of weights, at least one
 * per block). The loop is the same for every format, so a format whose LOAD decodes each
 * weight exactly (q8_0, q4_0: a small integer times an f16 scale fits a float) sums in
 * the f32 dot's order and gives its bits. */
#define DOT_BODY(NI, T, VT, VW, ZERO, LOAD, SCALAR, WBYTES, PF)                                 \
    const T *w = wv;                                                                          \
    VT a[NI][4];                                                                              \
    for (int j = 0; j < (NI); j++) a[j][0] = a[j][1] = a[j][2] = a[j][3] = ZERO;              \
    int k = 0;                                                                                \
    for (; k + 4 * (VW) <= K; k += 4 * (VW)) {                                                \
        const char *ahead = (const char *)w + WBYTES(k) + (PF);                               \
        for (int b = 0; (PF) && b < (int)WBYTES(4 * (VW)); b += 64)                           \
            __builtin_prefetch(ahead + b);                                                    \
        for (int u = 0; u < 4; u++) {                                                         \
            VT wu = LOAD(k + u * (VW));                                                       \
            for (int j = 0; j < (NI); j++)                                                    \
                a[j][u] = FMA(wu, LOADX(x + (long)j * K, k + u * (VW)), a[j][u]);             \
        }                                                                                     \
    }                                                                                         \
    for (; k + (VW) <= K; k += (VW)) {                                                        \
        VT wu = LOAD(k);                                                                      \
        for (int j = 0; j < (NI); j++) a[j][0] = FMA(wu, LOADX(x + (long)j * K, k), a[j][0]); \
    }                                                                                         \
    for (int j = 0; j < (NI); j++) {                                                          \
        const float *xj = x + (long)j * K;                                                    \
        float sj = REDUCE4(a[j][0], a[j][1], a[j][2], a[j][3]);                               \
        for (int t = k; t < K; t++) sj = fmaf(SCALAR(t), xj[t], sj); /* one rule per term */   \
        s[j] = sj;                                                                            \
    }

#define SCALAR_F32(k) w[k]
#define SCALAR_BF16(k) andrea_bf16_to_f32(w[k])
#define SCALAR_F16(k) andrea_f16_to_f32_simd(w[k])
#define SCALAR_I8(k) (float)w[k]
#define SCALAR_Q8B(k) ((float)w[k] * d[(k) >> 5])
/* q4_0: weight k of a row is nibble k % 16 of block k / 32's 16 bytes, low for the first
 * half of the block, high for the second */
#define Q4_NIBBLE(k) ((w[16 * ((k) >> 5) + ((k) & 15)] >> ((k) & 16 ? 4 : 0)) & 15)
#define SCALAR_Q4B(k) ((float)(Q4_NIBBLE(k) - 8) * d[(k) >> 5])
#define WBYTES_ELEM(k) ((long)(k) * (long)sizeof *w)
#define WBYTES_NIBBLE(k) ((long)(k) / 2)

/* dot_FMT_SFX_NI: one format's dot for NI inputs */
#define DEFINE_DOT(FMT, SFX, ATTR, VT, VW, ZERO, NI, T, LOAD, SCALAR, WBYTES, PF)             \
    ATTR static void dot_##FMT##_##SFX##_##NI(const void *wv, const float *d, const float *x, \
                                              int K, float *s) {                              \
        DOT_BODY(NI, T, VT, VW, ZERO, LOAD, SCALAR, WBYTES, PF)                               \
    }
/* ... for 1, 2 and, where the registers hold 4 inputs' accumulators (WIDE4 = 1), 4 inputs:
 * a batch of n runs as groups of 4, then 2, then 1 (7 = 4 + 2 + 1), so a leftover pair
 * still shares its decoding */
#define IF_WIDE4_0(...)
#define IF_WIDE4_1(...) __VA_ARGS__
#define DEFINE_DOT_SET(FMT, SFX, ATTR, VT, VW, ZERO, WIDE4, T, LOAD, SCALAR, WBYTES, PF)      \
    DEFINE_DOT(FMT, SFX, ATTR, VT, VW, ZERO, 1, T, LOAD, SCALAR, WBYTES, PF)                  \
    DEFINE_DOT(FMT, SFX, ATTR, VT, VW, ZERO, 2, T, LOAD, SCALAR, WBYTES, PF)                  \
    IF_WIDE4_##WIDE4(DEFINE_DOT(FMT, SFX, ATTR, VT, VW, ZERO, 4, T, LOAD, SCALAR, WBYTES, PF))
/* the table row of 2^g inputs: the dots dot_FMT_SFX_NI, Q4B##NI for q4_0 */
#define DOT_ROW(SFX, NI, Q4B)                                                                 \
    {dot_f32_##SFX##_##NI, dot_bf16_##SFX##_##NI, dot_i8_##SFX##_##NI, dot_q8b_##SFX##_##NI,  \
     Q4B##NI, dot_f16_##SFX##_##NI}
/* Defines the f32, bf16, int8, q8_0 and f16 dots from the ISA's LOAD_{F32,BF16,I8,Q8B,F16}, LOADX,
 * FMA and REDUCE4, and the table dots_SFX with Q4B##1, Q4B##2 (Q4B##4) as its q4_0 dots;
 * PF16: the prefetch distance of the 16-bit formats (bf16, f16) at this ISA. */
#define DEFINE_DOTS(SFX, ATTR, VT, VW, ZERO, WIDE4, Q4B, PF16)                                \
    DEFINE_DOT_SET(f32, SFX, ATTR, VT, VW, ZERO, WIDE4, float, LOAD_F32, SCALAR_F32, WBYTES_ELEM, \
                   DOT_PREFETCH_AHEAD)                                                        \
    DEFINE_DOT_SET(bf16, SFX, ATTR, VT, VW, ZERO, WIDE4, uint16_t, LOAD_BF16, SCALAR_BF16,    \
                   WBYTES_ELEM, PF16)                                                         \
    DEFINE_DOT_SET(i8, SFX, ATTR, VT, VW, ZERO, WIDE4, int8_t, LOAD_I8, SCALAR_I8, WBYTES_ELEM, \
                   DOT_PREFETCH_AHEAD)                                                        \
    DEFINE_DOT_SET(q8b, SFX, ATTR, VT, VW, ZERO, WIDE4, int8_t, LOAD_Q8B, SCALAR_Q8B,         \
                   WBYTES_ELEM, DOT_PREFETCH_AHEAD)                                           \
    DEFINE_DOT_SET(f16, SFX, ATTR, VT, VW, ZERO, WIDE4, uint16_t, LOAD_F16, SCALAR_F16,       \
                   WBYTES_ELEM, PF16)                                                         \
    static const dot_fns dots_##SFX = {                                                       \
        {DOT_ROW(SFX, 1, Q4B), DOT_ROW(SFX, 2, Q4B) IF_WIDE4_##WIDE4(, DOT_ROW(SFX, 4, Q4B))}, \
        2 + (WIDE4)};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_DOT_X86 1

/* ---- AVX-512: 16 lanes ---- */
#define LOADX(p, k) _mm512_loadu_ps((p) + (k))
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define REDUCE4(a, b, c, d) _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)))
#define LOAD_F32(k) _mm512_loadu_ps(w + (k))
#define LOAD_BF16(k)                                                                          \
    _mm512_castsi512_ps(_mm512_slli_epi32(                                                    \
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(w + (k)))), 16))
#define LOAD_I8(k)                                                                            \
    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + (k)))))
#define LOAD_Q8B(k) _mm512_mul_ps(LOAD_I8(k), _mm512_set1_ps(d[(k) >> 5]))
#define LOAD_F16(k) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + (k))))
/* 32 zmm: 4 inputs' 16 accumulators, the weights and x */
DEFINE_DOTS(avx512, __attribute__((target("avx512f"))), __m512, 16, _mm512_setzero_ps(), 1,
            andrea_dot_q4_0_avx512_, 0)
#undef LOAD_Q8B
#undef LOADX
#undef FMA
#undef REDUCE4
#undef LOAD_F32
#undef LOAD_BF16
#undef LOAD_F16
#undef LOAD_I8

/* ---- AVX2+FMA: 8 lanes ---- */
#define LOADX(p, k) _mm256_loadu_ps((p) + (k))
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define REDUCE4(a, b, c, d) andrea_hsum_avx2(_mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)))
#define LOAD_F32(k) _mm256_loadu_ps(w + (k))
#define LOAD_BF16(k)                                                                          \
    _mm256_castsi256_ps(_mm256_slli_epi32(                                                    \
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + (k)))), 16))
#define LOAD_I8(k)                                                                            \
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(w + (k)))))
#define LOAD_Q8B(k) _mm256_mul_ps(LOAD_I8(k), _mm256_set1_ps(d[(k) >> 5]))
#define LOAD_F16(k) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + (k))))
/* 16 ymm: 2 inputs' 8 accumulators, the weights and x (4 inputs' 16 would spill) */
DEFINE_DOTS(avx2, ANDREA_TARGET_AVX2, __m256, 8, _mm256_setzero_ps(), 0, andrea_dot_q4_0_avx2_,
            DOT_PREFETCH_AHEAD)
#undef LOAD_Q8B
#undef LOADX
#undef FMA
#undef REDUCE4
#undef LOAD_F32
#undef LOAD_BF16
#undef LOAD_F16
#undef LOAD_I8
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
#define HAVE_DOT_NEON 1
/* ---- NEON: 4 lanes ---- */
#define LOADX(p, k) vld1q_f32((p) + (k))
#define FMA(a, b, c) vfmaq_f32(c, a, b)
#define REDUCE4(a, b, c, d) vaddvq_f32(vaddq_f32(vaddq_f32(a, b), vaddq_f32(c, d)))
#define LOAD_F32(k) vld1q_f32(w + (k))
#define LOAD_BF16(k) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(w + (k)), 16))
#define LOAD_F16(k) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w + (k))))
/* 4 int8 at a time: 32 bits into a d register, widened twice */
static inline float32x4_t load_i8x4(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    int8x8_t b = vreinterpret_s8_u32(vdup_n_u32(v));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
}
#define LOAD_I8(k) load_i8x4(w + (k))
#define LOAD_Q8B(k) vmulq_n_f32(LOAD_I8(k), d[(k) >> 5])
/* q4_0, 4 at a time: bytes k % 16 .. + 3 of the block, widened twice, shifted right by 0
 * or 4 (a left shift by -0 / -4), masked; (q - 8) exact, times d exact */
static inline float32x4_t load_q4x4(const uint8_t *w, int k, float d) {
    uint32_t v;
    memcpy(&v, w + 16 * (k >> 5) + (k & 15), sizeof v);
    uint32x4_t u = vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(v)))));
    u = vandq_u32(vshlq_u32(u, vdupq_n_s32(-((k & 16) >> 2))), vdupq_n_u32(15));
    return vmulq_n_f32(vcvtq_f32_s32(vsubq_s32(vreinterpretq_s32_u32(u), vdupq_n_s32(8))), d);
}
#define LOAD_Q4B(k) load_q4x4(w, k, d[(k) >> 5])
/* 32 q registers, as AVX-512's zmm: 4 inputs are 16 accumulators, leaving room for the
 * weights, x and q4_0's decoding */
DEFINE_DOT_SET(q4b, neon, , float32x4_t, 4, vdupq_n_f32(0.0f), 1, uint8_t, LOAD_Q4B, SCALAR_Q4B,
               WBYTES_NIBBLE, DOT_PREFETCH_AHEAD)
DEFINE_DOTS(neon, , float32x4_t, 4, vdupq_n_f32(0.0f), 1, dot_q4b_neon_, DOT_PREFETCH_AHEAD)
#endif

/* The baseline: one simd reduction per row (SSE2 on x86-64, what the compiler makes of
 * it elsewhere), one input at a time. */
#define DEFINE_DOT_PLAIN(FMT, T, SCALAR)                                                      \
    static void dot_##FMT##_plain(const void *wv, const float *d, const float *x, int K,      \
                                  float *out) {                                               \
        const T *w = wv;                                                                      \
        float s = 0.0f;                                                                       \
        _Pragma("omp simd reduction(+ : s)") for (int k = 0; k < K; k++) s += SCALAR(k) * x[k]; \
        *out = s;                                                                             \
    }
DEFINE_DOT_PLAIN(f32, float, SCALAR_F32)
DEFINE_DOT_PLAIN(bf16, uint16_t, SCALAR_BF16)
DEFINE_DOT_PLAIN(i8, int8_t, SCALAR_I8)
DEFINE_DOT_PLAIN(q8b, int8_t, SCALAR_Q8B)
DEFINE_DOT_PLAIN(f16, uint16_t, SCALAR_F16)
/* q4_0: each weight decoded exactly, as q8_0's, in the baseline's simd reduction */
static void dot_q4b_plain(const void *wv, const float *d, const float *x, int K, float *out) {
    const uint8_t *w = wv;
    float s = 0.0f;
    for (int b = 0; b < K / 32; b++, w += 16, x += 32) {
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < 16; j++)
            s += (float)((w[j] & 15) - 8) * d[b] * x[j] + (float)((w[j] >> 4) - 8) * d[b] * x[16 + j];
    }
    *out = s;
}
static const dot_fns dots_plain = {
    {{dot_f32_plain, dot_bf16_plain, dot_i8_plain, dot_q8b_plain, dot_q4b_plain, dot_f16_plain}}, 1};

static const dot_fns *dot_pick(int cap) {
    int isa = andrea_cpu_isa(cap);
#ifdef HAVE_DOT_X86
    if (isa == ANDREA_ISA_AVX512) return &dots_avx512;
    if (isa == ANDREA_ISA_AVX2) return &dots_avx2;
#endif
#ifdef HAVE_DOT_NEON
    if (isa >= ANDREA_ISA_NEON) return &dots_neon;
#endif
    (void)isa;
    return &dots_plain;
}

static float dot_one(int fmt, const void *w, const float *x, int K) {
    float s;
    dot_pick(-1)->fn[0][fmt](w, NULL, x, K, &s);
    return s;
}
float andrea_dot_f32(const float *w, const float *x, int K) { return dot_one(ANDREA_QUANT_NONE, w, x, K); }
float andrea_dot_bf16(const uint16_t *w, const float *x, int K) {
    return dot_one(ANDREA_QUANT_BF16, w, x, K);
}
float andrea_dot_i8(const int8_t *w, const float *x, int K) { return dot_one(ANDREA_QUANT_INT8, w, x, K); }

/* Row r of w in format fmt: its weights and (q8_0, q4_0) its per-32 scales. */
static const void *row_at(const void *w, int fmt, long row) {
    static const int bytes[NFMT] = {4, 2, 1, 1, 0, 2};
    return fmt == ANDREA_QUANT_Q4_0 ? (const char *)w + row / 2 : (const char *)w + row * bytes[fmt];
}

void andrea_matvec_rows_isa(int isa, float *out, const float *x, const void *w, int fmt,
                            const float *scale, const float *bias, int K, int N, int n) {
    const dot_fns *d = dot_pick(isa);
    int blocks = fmt == ANDREA_QUANT_Q8_0 || fmt == ANDREA_QUANT_Q4_0;
    /* threads only pay off once there is real work (a fork/join costs microseconds) */
#pragma omp parallel for schedule(static) if ((long)N * K * n >= (1L << 16))
    for (int r = 0; r < N; r++) {
        long row = (long)r * K;
        const void *wr = row_at(w, fmt, row);
        const float *dr = blocks ? scale + row / 32 : NULL;
        /* the largest groups of inputs the ISA takes from one pass over the row (4, 2,
         * 1): each output is the same dot in any group, so n changes no sequence's bits */
        for (int i = 0, g = d->groups - 1, m; i < n; i += m) {
            float s[4];
            while ((1 << g) > n - i) g--;
            m = 1 << g;
            d->fn[g][fmt](wr, dr, x + (long)i * K, K, s);
            for (int j = 0; j < m; j++)
                out[(long)(i + j) * N + r] = (fmt == ANDREA_QUANT_INT8 ? s[j] * scale[r] : s[j]) +
                                             (bias ? bias[r] : 0.0f);
        }
    }
}

void andrea_matvec_rows(float *out, const float *x, const void *w, int fmt, const float *scale,
                        const float *bias, int K, int N, int n) {
    andrea_matvec_rows_isa(-1, out, x, w, fmt, scale, bias, K, N, n);
}
