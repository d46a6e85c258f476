/*
 * test_attn_inspect.c - andrea_attention_inspect() exports the engine's own numbers:
 *   - softmax maps are bit-identical to andrea_model_attention() of an
 *     independent forward pass, for every layer and head;
 *   - the re-run of the kernel reproduces the forward bit for bit (counts 0);
 *   - rows sum to 1, the upper triangle is exactly +0.0f, row 0 is [1, 0, ...];
 *   - masked = -inf above the diagonal, the kernel's scores below, scaled =
 *     fl(raw * scale) below the diagonal, raw = q.k (checked in double);
 * and the helpers (stats, check, view parsing) on crafted matrices.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "test_util.h"

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void test_model(const char *preset, int n_head, int d_model, float init_std, int T) {
    andrea_config cfg;
    CHECK(andrea_config_preset(preset, &cfg) == 0);
    if (n_head) cfg.n_head = n_head;
    if (d_model) cfg.d_model = d_model;
    cfg.init_std = init_std; /* large enough that attention is far from uniform */
    andrea_model *m = andrea_model_create(&cfg, 42);
    CHECK(m != NULL);
    if (!m) return;
    int L = cfg.n_layer, NH = cfg.n_head, C = cfg.d_model, HS = C / NH;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)T);
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 37 + 11) % 256);

    andrea_attn_maps mp;
    CHECK(andrea_attention_inspect(m, tok, T, ANDREA_VIEWS_ALL, &mp) == 0);
    CHECK(mp.prob_mismatches == 0);
    CHECK(mp.out_mismatches == 0);
    CHECK(mp.raw_mismatches == 0);
    CHECK(mp.T == T && mp.n_layer == L && mp.n_head == NH && mp.head_size == HS);
    CHECK(same_bits(mp.scale, 1.0f / sqrtf((float)HS)));

    /* an independent forward: the engine's attention must equal the export to the last bit */
    CHECK(andrea_model_forward(m, tok, NULL, 1, T) == 0.0f);
    long diff = 0, upper = 0, bad_mask = 0, bad_scaled = 0, bad_raw = 0;
    double worst_row = 0;
    for (int l = 0; l < L; l++) {
        const float *eng = andrea_model_attention(m, l);
        const float *qkv = mp.qkv + (size_t)l * T * 3 * C;
        for (int h = 0; h < NH; h++) {
            const float *A = andrea_attn_map(&mp, ANDREA_VIEW_SOFTMAX, l, h);
            const float *raw = andrea_attn_map(&mp, ANDREA_VIEW_RAW, l, h);
            const float *sc = andrea_attn_map(&mp, ANDREA_VIEW_SCALED, l, h);
            const float *mk = andrea_attn_map(&mp, ANDREA_VIEW_MASKED, l, h);
            for (int i = 0; i < T; i++) {
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    size_t k = (size_t)i * T + j;
                    if (!same_bits(A[k], eng[(size_t)h * T * T + k])) diff++;
                    sum += A[k];
                    if (j > i && !same_bits(A[k], 0.0f)) upper++;
                    if (j > i ? !(isinf(mk[k]) && mk[k] < 0) : !same_bits(mk[k], sc[k])) bad_mask++;
                    if (j <= i && !same_bits(raw[k] * mp.scale, sc[k])) bad_scaled++;
                    double dot = 0, mag = 0;
                    for (int d = 0; d < HS; d++) {
                        double a = qkv[(size_t)i * 3 * C + h * HS + d];
                        double b = qkv[(size_t)j * 3 * C + C + h * HS + d];
                        dot += a * b;
                        mag += fabs(a * b);
                    }
                    /* HS float additions: at most ~HS half-ulps of the magnitude each */
                    if (!(fabs(raw[k] - dot) <= HS * ldexp(1.0, -23) * mag + 1e-30)) bad_raw++;
                }
                if (fabs(sum - 1) > worst_row) worst_row = fabs(sum - 1);
            }
            CHECK(A[0] == 1.0f);
            andrea_attn_check ck;
            andrea_attention_check(A, T, &ck);
            CHECK(ck.ok);
        }
    }
    if (diff) fprintf(stderr, "%s: %ld probabilities differ from the engine's\n", preset, diff);
    CHECK(diff == 0);
    CHECK(upper == 0);
    CHECK(bad_mask == 0);
    CHECK(bad_scaled == 0);
    CHECK(bad_raw == 0);
    /* (T + 2) 2^-23: see andrea_attention_check */
    CHECK(worst_row <= (T + 2) * ldexp(1.0, -23));

    /* only the views asked for are allocated */
    andrea_attn_maps one;
    CHECK(andrea_attention_inspect(m, tok, T, ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX), &one) == 0);
    CHECK(one.maps[ANDREA_VIEW_RAW] == NULL && one.maps[ANDREA_VIEW_SOFTMAX] != NULL);
    CHECK(andrea_attn_map(&one, ANDREA_VIEW_RAW, 0, 0) == NULL);
    CHECK(andrea_attn_map(&one, ANDREA_VIEW_SOFTMAX, L, 0) == NULL);
    CHECK(memcmp(one.maps[ANDREA_VIEW_SOFTMAX], mp.maps[ANDREA_VIEW_SOFTMAX],
                 sizeof(float) * (size_t)L * NH * T * T) == 0);
    andrea_attn_maps_free(&one);

    /* bad arguments are errors, not crashes */
    andrea_attn_maps bad;
    CHECK(andrea_attention_inspect(m, tok, cfg.ctx + 1, ANDREA_VIEWS_ALL, &bad) != 0);
    CHECK(strstr(andrea_error(), "context") != NULL);
    andrea_attn_maps_free(&bad);
    CHECK(andrea_attention_inspect(m, tok, 0, ANDREA_VIEWS_ALL, &bad) != 0);
    andrea_attn_maps_free(&bad);

    andrea_attn_maps_free(&mp);
    free(tok);
    andrea_model_free(m);
}

static void test_stats_and_check(void) {
    enum { T = 5 };
    float A[T * T];
    andrea_attn_stats st;
    andrea_attn_check ck;
    /* every row on itself: entropy 0, distance 0, nothing on the first token (rows 1..) */
    memset(A, 0, sizeof A);
    for (int i = 0; i < T; i++) A[i * T + i] = 1;
    andrea_attention_stats(A, T, &st);
    CHECK_CLOSE(st.entropy, 0, 1e-12, 0);
    CHECK_CLOSE(st.mean_distance, 0, 1e-12, 0);
    CHECK_CLOSE(st.first_weight, 0, 1e-12, 0);
    /* mean ln(i + 1) over i = 1..4 */
    CHECK_CLOSE(st.entropy_uniform, (log(2) + log(3) + log(4) + log(5)) / 4, 1e-12, 0);
    andrea_attention_check(A, T, &ck);
    CHECK(ck.ok && ck.upper_nonzero == 0 && ck.max_row_error == 0);
    /* every row on the first token: distance = mean of 1..4, first weight 1 */
    memset(A, 0, sizeof A);
    for (int i = 0; i < T; i++) A[i * T] = 1;
    andrea_attention_stats(A, T, &st);
    CHECK_CLOSE(st.mean_distance, 2.5, 1e-12, 0);
    CHECK_CLOSE(st.first_weight, 1, 1e-12, 0);
    /* uniform causal rows: entropy = the uniform reference, distance i/2 */
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) A[i * T + j] = j <= i ? 1.0f / (float)(i + 1) : 0.0f;
    andrea_attention_stats(A, T, &st);
    CHECK_CLOSE(st.entropy, st.entropy_uniform, 1e-6, 0);
    CHECK_CLOSE(st.mean_distance, (0.5 + 1 + 1.5 + 2) / 4, 1e-6, 0);
    andrea_attention_check(A, T, &ck);
    CHECK(ck.ok);
    /* the check catches: the smallest positive float above the diagonal, -0.0f there too,
     * a row that sums to 1.001, a negative entry */
    A[0 * T + 3] = 1e-45f;
    andrea_attention_check(A, T, &ck);
    CHECK(!ck.ok && ck.upper_nonzero == 1);
    A[0 * T + 3] = -0.0f;
    andrea_attention_check(A, T, &ck);
    CHECK(!ck.ok && ck.upper_nonzero == 1);
    A[0 * T + 3] = 0.0f;
    A[4 * T + 4] += 0.001f;
    andrea_attention_check(A, T, &ck);
    CHECK(!ck.ok && ck.max_row_error > 5e-4 && ck.upper_nonzero == 0);
    A[4 * T + 4] -= 0.001f;
    A[2 * T + 0] = -A[2 * T + 0];
    andrea_attention_check(A, T, &ck);
    CHECK(!ck.ok && ck.negative == 1);
    /* T = 1: row 0 alone */
    float one = 1.0f;
    andrea_attention_stats(&one, 1, &st);
    CHECK_CLOSE(st.first_weight, 1, 0, 0);
    CHECK_CLOSE(st.entropy, 0, 0, 0);
}

static void test_views_parse(void) {
    unsigned v = 0;
    CHECK(andrea_attn_views_parse("softmax", &v) == 0 && v == ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX));
    CHECK(andrea_attn_views_parse("raw,scaled,masked,softmax", &v) == 0 && v == ANDREA_VIEWS_ALL);
    CHECK(andrea_attn_views_parse("raw,raw", &v) == 0 && v == ANDREA_VIEW_BIT(ANDREA_VIEW_RAW));
    CHECK(andrea_attn_views_parse("probs", &v) != 0);
    CHECK(strstr(andrea_error(), "probs") != NULL);
    CHECK(andrea_attn_views_parse("", &v) != 0);
    CHECK(andrea_attn_views_parse("raw,", &v) != 0);
    CHECK(strcmp(andrea_attn_view_name(ANDREA_VIEW_MASKED), "masked") == 0);
}

int main(void) {
    test_model("tiny", 0, 0, 0.3f, 17);     /* HS = 16: sqrt is a power of two */
    test_model("tiny", 4, 48, 0.3f, 32);    /* HS = 12: scale 1/sqrt(12) is inexact */
    test_model("baby", 0, 0, 0.1f, 64);     /* the docs' model shape, full context */
    test_stats_and_check();
    test_views_parse();
    return tu_finish("test_attn_inspect");
}
