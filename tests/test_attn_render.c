/*
 * test_attn_render.c - the inspection library without the CLI: a seeded model's
 * attention rendered into memory buffers (andrea_writer_buffer), read back and
 * checked against the maps it came from:
 *   - JSON: parses (jansson), every softmax row sums to 1, every number has the
 *     bits of the map it came from, masked is null above the diagonal, the prompt
 *     round-trips and no < > & appears raw (it sits inside the HTML's <script>);
 *   - HTML: the JSON of all four views verbatim inside one page, every head in it;
 *   - PNG: the signature, decoded by libpng to the documented geometry, the masked
 *     cells in their grey, for a head and for the layers x heads grid;
 *   - the FILE* adapter writes the very bytes of the buffer;
 *   - a failing writer, a bad selection or a missing view give -1 and a message;
 *   - token labels, the JSON string styles and explain's checks on a toy model.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "andrea_tokenizer.h"
#include "test_util.h"
#include "util/json.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
#endif
#ifdef ANDREA_HAVE_PNG
#include <png.h>
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
#endif


/* A writer that accepts `budget` bytes, then fails with ENOSPC. */
static int budget_write(void *user, const void *data, size_t n) {
    (void)data;
    size_t *budget = user;
    if (n > *budget) return ENOSPC;
    *budget -= n;
    return 0;
}

static void test_labels(const andrea_tokenizer *tok) {
    char buf[ANDREA_LABEL_MAX];
    andrea_token_label(tok, 'a', buf);
    CHECK(strcmp(buf, "a") == 0);
    andrea_token_label(tok, ' ', buf);
    CHECK(strcmp(buf, "\xe2\x90\xa3") == 0); /* U+2423 */
    andrea_token_label(tok, '\n', buf);
    CHECK(strcmp(buf, "\\n") == 0);
    andrea_token_label(tok, '\\', buf);
    CHECK(strcmp(buf, "\\\\") == 0);
    andrea_token_label(tok, 0xff, buf);
    CHECK(strcmp(buf, "\\xff") == 0);
    andrea_token_label(tok, andrea_tokenizer_bos(tok), buf);
    CHECK(strcmp(buf, "<BOS>") == 0);

    andrea_attn_tokens tk;
    CHECK(andrea_attn_tokens_encode(tok, "ab c", 1, 16, &tk) == 0);
    CHECK(tk.T == 5 && tk.ids[0] == andrea_tokenizer_bos(tok) && tk.ids[4] == 'c');
    if (tk.T == 5) CHECK(strcmp(tk.labels[0], "<BOS>") == 0 && strcmp(tk.labels[2], "b") == 0);
    andrea_attn_tokens_free(&tk);
    CHECK(andrea_attn_tokens_encode(tok, "abcdef", 0, 4, &tk) == -1);
    CHECK(strstr(andrea_error(), "the prompt is 6 tokens, more than the 4 allowed") != NULL);
    andrea_attn_tokens_free(&tk);
    CHECK(andrea_attn_tokens_encode(tok, "", 0, 4, &tk) == -1);
    CHECK(strstr(andrea_error(), "empty") != NULL);
    andrea_attn_tokens_free(&tk);
}

/* The log style (flags 0) and the export style of the one JSON string writer. */
static void test_json_strings(void) {
    const char s[] = "a\"\\\n<&>\x01\xc3\xa9\xff";
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    CHECK(andrea_json_string(&w, s, sizeof s - 1, 0) == 0);
    CHECK(b.data && strcmp(b.data, "\"a\\\"\\\\\\n<&>\\u0001\xc3\xa9\\ufffd\"") == 0);
    andrea_buffer_free(&b);
    w = andrea_writer_buffer(&b);
    CHECK(andrea_json_string(&w, s, sizeof s - 1,
                             ANDREA_JSON_SCRIPT_SAFE | ANDREA_JSON_KEEP_BYTES |
                                 ANDREA_JSON_HEX_CONTROLS) == 0);
    CHECK(b.data && strcmp(b.data, "\"a\\\"\\\\\\u000a\\u003c\\u0026\\u003e\\u0001\xc3\xa9"
                                   "\\u00ff\"") == 0);
    CHECK(w.written == b.len);
    andrea_buffer_free(&b);
}

/* ---- JSON --------------------------------------------------------------------------- */

static void check_json(const char *text, const andrea_attn_export *x, unsigned views) {
    const andrea_attn_maps *mp = x->maps;
    int T = mp->T;
    CHECK(strpbrk(text, "<>&") == NULL); /* safe inside <script> */
#ifdef ANDREA_HAVE_JANSSON
    json_error_t err;
    json_t *d = json_loads(text, 0, &err);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "JSON: %s (line %d)\n", err.text, err.line);
        return;
    }
    CHECK(strcmp(json_string_value(json_object_get(d, "format")), "andrea-attention") == 0);
    CHECK(strcmp(json_string_value(json_object_get(d, "prompt")), x->prompt) == 0);
    CHECK(json_integer_value(json_object_get(d, "T")) == T);
    json_t *toks = json_object_get(d, "tokens"), *labs = json_object_get(d, "labels");
    for (int i = 0; i < T; i++) {
        CHECK(json_integer_value(json_array_get(toks, (size_t)i)) == x->tokens->ids[i]);
        CHECK(strcmp(json_string_value(json_array_get(labs, (size_t)i)), x->tokens->labels[i]) == 0);
    }
    json_t *heads = json_object_get(d, "heads");
    CHECK((int)json_array_size(heads) == mp->n_layer * mp->n_head);
    long bad_bits = 0, bad_rows = 0, bad_null = 0;
    for (size_t k = 0; k < json_array_size(heads); k++) {
        json_t *h = json_array_get(heads, k);
        int l = (int)json_integer_value(json_object_get(h, "layer"));
        int hd = (int)json_integer_value(json_object_get(h, "head"));
        CHECK(l == (int)k / mp->n_head && hd == (int)k % mp->n_head);
        for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
            json_t *M = json_object_get(h, andrea_attn_view_name(v));
            CHECK((M != NULL) == !!(views & ANDREA_VIEW_BIT(v)));
            if (!M) continue;
            const float *want = andrea_attn_map(mp, v, l, hd);
            for (int i = 0; i < T; i++) {
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    json_t *e = json_array_get(json_array_get(M, (size_t)i), (size_t)j);
                    float w = want[(size_t)i * T + j];
                    if (json_is_null(e)) {
                        if (!isinf(w)) bad_null++;
                        continue;
                    }
                    float got = (float)json_number_value(e);
                    if (!same_bits(got, w)) bad_bits++;
                    sum += got;
                }
                if (v == ANDREA_VIEW_SOFTMAX && !(fabs(sum - 1) < 1e-5)) bad_rows++;
                if (v == ANDREA_VIEW_MASKED)
                    for (int j = i + 1; j < T; j++)
                        if (!json_is_null(json_array_get(json_array_get(M, (size_t)i), (size_t)j)))
                            bad_null++;
            }
        }
    }
    CHECK(bad_bits == 0);
    CHECK(bad_rows == 0);
    CHECK(bad_null == 0);
    json_decref(d);
#else /* without jansson: the frame and one entry per head */
    (void)views;
    CHECK(strncmp(text, "{\"format\":\"andrea-attention\"", 28) == 0);
    int n = 0;
    for (const char *p = text; (p = strstr(p, "{\"layer\":")) != NULL; p++) n++;
    CHECK(n == mp->n_layer * mp->n_head && T > 0);
#endif
}

/* ---- PNG ---------------------------------------------------------------------------- */

#ifdef ANDREA_HAVE_PNG
/* The PNG in b as RGB pixels (h, w, 3), NULL if it does not decode; free() it. */
static uint8_t *decode_rgb(const andrea_buffer *b, int *w, int *h) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    *w = *h = 0;
    if (!png_image_begin_read_from_memory(&pi, b->data, b->len)) return NULL;
    pi.format = PNG_FORMAT_RGB;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(pi));
    if (!px || !png_image_finish_read(&pi, NULL, px, 0, NULL)) {
        png_image_free(&pi);
        free(px);
        return NULL;
    }
    *w = (int)pi.width;
    *h = (int)pi.height;
    return px;
}

/* Pixels of the masked grey (214, 214, 214); -1 if it does not decode. */
static long grey_pixels(const andrea_buffer *b, int *w, int *h) {
    uint8_t *px = decode_rgb(b, w, h);
    if (!px) return -1;
    long n = 0;
    for (long k = 0; k < (long)*w * *h; k++)
        if (px[3 * k] == 214 && px[3 * k + 1] == 214 && px[3 * k + 2] == 214) n++;
    free(px);
    return n;
}

/* Sum over the pixels of the distance from white (|255 - r| + |255 - g| + |255 - b|): how
 * much colour a picture has. -1 if it does not decode. */
static long ink(const andrea_buffer *b) {
    int w, h;
    uint8_t *px = decode_rgb(b, &w, &h);
    if (!px) return -1;
    long n = 0;
    for (size_t k = 0; k < (size_t)w * h * 3; k++) n += 255 - px[k];
    free(px);
    return n;
}
#endif

static void check_png(const andrea_attn_export *x) {
    const andrea_attn_maps *mp = x->maps;
    int L = mp->n_layer, NH = mp->n_head;
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    int rc = andrea_attention_render_png(&w, x, L - 1, NH - 1, ANDREA_VIEW_SOFTMAX);
#ifndef ANDREA_HAVE_PNG
    CHECK(rc == -1 && strstr(andrea_error(), "built without libpng") != NULL);
    CHECK(andrea_attention_render_png_grid(&w, x, ANDREA_VIEW_SOFTMAX) == -1);
    andrea_buffer_free(&b);
#else
    int T = mp->T;
    CHECK(rc == 0);
    CHECK(b.len > 8 && memcmp(b.data, "\x89PNG\r\n\x1a\n", 8) == 0);
    long masked = (long)T * (T - 1) / 2;
    int cs = clampi(512 / T, 1, 24), pw, ph;
    CHECK(grey_pixels(&b, &pw, &ph) == masked * cs * cs);
    CHECK(pw >= T * cs && pw <= T * cs + 300 && ph >= T * cs && ph <= T * cs + 300);
    andrea_buffer_free(&b);

    w = andrea_writer_buffer(&b);
    CHECK(andrea_attention_render_png_grid(&w, x, ANDREA_VIEW_MASKED) == 0);
    int gcs = clampi(128 / T, 1, 8);
    CHECK(grey_pixels(&b, &pw, &ph) == (long)L * NH * masked * gcs * gcs);
    CHECK(pw >= NH * T * gcs && ph >= L * T * gcs);
    andrea_buffer_free(&b);

    /* raw and scaled share one colour scale (issue 15): the scaled picture has less colour,
     * where each coloured to its own maximum gave the same picture twice */
    long ink_raw = -1, ink_scaled = -1;
    w = andrea_writer_buffer(&b);
    CHECK(andrea_attention_render_png(&w, x, 0, 0, ANDREA_VIEW_RAW) == 0);
    ink_raw = ink(&b);
    andrea_buffer_free(&b);
    w = andrea_writer_buffer(&b);
    CHECK(andrea_attention_render_png(&w, x, 0, 0, ANDREA_VIEW_SCALED) == 0);
    ink_scaled = ink(&b);
    andrea_buffer_free(&b);
    CHECK(ink_raw > 0 && ink_scaled > 0 && ink_scaled < ink_raw);
    /* the labels in Indonesian: another picture from the same numbers */
    andrea_attn_export xi = *x;
    xi.lang = "id";
    andrea_buffer be = {0}, bi = {0};
    andrea_writer we = andrea_writer_buffer(&be), wi = andrea_writer_buffer(&bi);
    CHECK(andrea_attention_render_png_grid(&we, x, ANDREA_VIEW_SOFTMAX) == 0);
    CHECK(andrea_attention_render_png_grid(&wi, &xi, ANDREA_VIEW_SOFTMAX) == 0);
    CHECK(be.len > 0 && bi.len > 0 && (be.len != bi.len || memcmp(be.data, bi.data, be.len) != 0));
    andrea_buffer_free(&be);
    andrea_buffer_free(&bi);

    /* the writer fails inside libpng's output callback: no crash, -1, its reason */
    size_t budget = 100;
    andrea_writer bad = {budget_write, &budget, 0, 0};
    CHECK(andrea_attention_render_png(&bad, x, 0, 0, ANDREA_VIEW_RAW) == -1);
    CHECK(strstr(andrea_error(), "attention PNG: write failed after") != NULL);
    CHECK(strstr(andrea_error(), strerror(ENOSPC)) != NULL);
    CHECK(andrea_attention_render_png(&w, x, 0, NH, ANDREA_VIEW_RAW) == -1);
    CHECK(strstr(andrea_error(), "not in the model") != NULL);
#endif
}

/* ---- the renderers together ------------------------------------------------------------- */

static void test_render(andrea_model *m, const andrea_tokenizer *tok) {
    const char *prompt = "To be, \"or\" <not> & \xc3\xa9\n";
    andrea_attn_tokens tk;
    CHECK(andrea_attn_tokens_encode(tok, prompt, 0, andrea_model_config(m)->ctx, &tk) == 0);
    andrea_attn_maps mp;
    CHECK(andrea_attention_inspect(m, tk.ids, tk.T, ANDREA_VIEWS_ALL, &mp) == 0);
    andrea_attn_export x = {"models/<toy>.bin", prompt, &tk, &mp, NULL, NULL, 0, 0, NULL};

    /* JSON of two views into memory */
    unsigned views = ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX) | ANDREA_VIEW_BIT(ANDREA_VIEW_MASKED);
    andrea_buffer json = {0};
    andrea_writer w = andrea_writer_buffer(&json);
    CHECK(andrea_attention_render_json(&w, &x, views) == 0);
    CHECK(json.data != NULL && w.written == json.len && strlen(json.data) == json.len);
    if (json.data) check_json(json.data, &x, views);

    /* the FILE* adapter gives the same bytes */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f && json.data) {
        andrea_writer fw = andrea_writer_file(f);
        CHECK(andrea_attention_render_json(&fw, &x, views) == 0);
        CHECK(fflush(f) == 0 && (size_t)ftell(f) == json.len);
        rewind(f);
        char *back = malloc(json.len);
        CHECK(back && fread(back, 1, json.len, f) == json.len && memcmp(back, json.data, json.len) == 0);
        free(back);
    }
    if (f) fclose(f);
    andrea_buffer_free(&json);

    /* HTML: the JSON of the raw scores and the probabilities inside, every head (the page
     * derives scaled and masked from raw: issue 15, the page was twice the size it needs) */
    const unsigned page_views = ANDREA_VIEW_BIT(ANDREA_VIEW_RAW) | ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX);
    w = andrea_writer_buffer(&json);
    CHECK(andrea_attention_render_json(&w, &x, page_views) == 0);
    andrea_buffer html = {0};
    w = andrea_writer_buffer(&html);
    CHECK(andrea_attention_render_html(&w, &x) == 0);
    if (html.data && json.data) {
        CHECK(strncmp(html.data, "<!DOCTYPE html>", 15) == 0);
        CHECK(strstr(html.data, "<script type=\"application/json\" id=\"andrea-data\">\n") != NULL);
        CHECK(strstr(html.data, json.data) != NULL);
        CHECK(html.len > 15 && strcmp(html.data + html.len - 15, "</body></html>\n") == 0);
        CHECK(strstr(html.data, "http://") == NULL && strstr(html.data, "https://") == NULL);
        char key[64];
        for (int l = 0; l < mp.n_layer; l++)
            for (int h = 0; h < mp.n_head; h++) {
                snprintf(key, sizeof key, "{\"layer\":%d,\"head\":%d,", l, h);
                CHECK(strstr(html.data, key) != NULL);
            }
        for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
            snprintf(key, sizeof key, "\"%s\":[[", andrea_attn_view_name(v));
            CHECK(!strstr(html.data, key) == !(page_views & ANDREA_VIEW_BIT(v)));
        }
        CHECK(strstr(html.data, "<html lang=\"en\">") != NULL);
        CHECK(strstr(html.data, "\"page.hv\":\"Head view\"") != NULL);
    }
    andrea_buffer_free(&html);
    /* the same page in Indonesian: the lesson's words, the same data */
    andrea_attn_export xi = x;
    xi.lang = "id";
    w = andrea_writer_buffer(&html);
    CHECK(andrea_attention_render_html(&w, &xi) == 0);
    CHECK(html.data && strstr(html.data, "<html lang=\"id\">") != NULL &&
          strstr(html.data, "mask kausal") != NULL && strstr(html.data, json.data) != NULL);
    andrea_buffer_free(&html);
    xi.lang = "klingon";
    w = andrea_writer_buffer(&html);
    CHECK(andrea_attention_render_html(&w, &xi) == -1 && html.len == 0);
    andrea_buffer_free(&html);
    andrea_buffer_free(&json);

    /* a selection: one layer, both heads */
    int one[1] = {1};
    andrea_attn_export sel = x;
    sel.layers = one;
    sel.n_layers = 1;
    w = andrea_writer_buffer(&json);
    CHECK(andrea_attention_render_json(&w, &sel, views) == 0);
    CHECK(json.data && strstr(json.data, "{\"layer\":0,") == NULL &&
          strstr(json.data, "{\"layer\":1,\"head\":1,") != NULL);
    andrea_buffer_free(&json);

    check_png(&x);

    /* failures: a writer that runs out, a layer that does not exist, a missing view */
    size_t budget = 300;
    andrea_writer bad = {budget_write, &budget, 0, 0};
    CHECK(andrea_attention_render_json(&bad, &x, views) == -1);
    CHECK(strstr(andrea_error(), "attention JSON: write failed after") != NULL);
    CHECK(strstr(andrea_error(), strerror(ENOSPC)) != NULL);
    CHECK(bad.written <= 300);
    budget = 5000;
    bad = (andrea_writer){budget_write, &budget, 0, 0};
    CHECK(andrea_attention_render_html(&bad, &x) == -1);
    CHECK(strstr(andrea_error(), "write failed") != NULL);
    int nine[1] = {9};
    sel.layers = nine;
    w = andrea_writer_buffer(&json);
    CHECK(andrea_attention_render_json(&w, &sel, views) == -1);
    CHECK(strstr(andrea_error(), "layer 9 is not in the model") != NULL);
    andrea_buffer_free(&json);
    andrea_attn_maps soft;
    CHECK(andrea_attention_inspect(m, tk.ids, tk.T, ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX), &soft) == 0);
    x.maps = &soft;
    w = andrea_writer_buffer(&html);
    CHECK(andrea_attention_render_html(&w, &x) == -1);
    CHECK(strstr(andrea_error(), "the maps lack the raw view") != NULL);
    CHECK(html.len == 0);
    andrea_buffer_free(&html);
    andrea_attn_maps_free(&soft);
    andrea_attn_maps_free(&mp);
    andrea_attn_tokens_free(&tk);
}

/* ---- explain ---------------------------------------------------------------------------- */

static void test_explain(andrea_model *m, const andrea_tokenizer *tok) {
    andrea_attn_tokens tk;
    CHECK(andrea_attn_tokens_encode(tok, "To be or", 0, ANDREA_EXPLAIN_MAX_T, &tk) == 0);
    andrea_explain e;
    CHECK(andrea_explain_run(m, tk.ids, tk.T, 1, 1, 1337, &e) == 0);
    /* 19 checks of the walk-through and the first claims, 9 of issue 15's claims, 2 of the
     * shapes at the model's context (issue 26) */
    CHECK(e.n_checks == 30 && e.n_failed == 0);
    int parts[ANDREA_EXPLAIN_CONTEXT + 1] = {0};
    for (int k = 0; k < e.n_checks; k++) {
        if (!e.checks[k].ok) fprintf(stderr, "explain check failed: %s\n", e.checks[k].what);
        if (e.checks[k].part >= 0 && e.checks[k].part <= ANDREA_EXPLAIN_CONTEXT)
            parts[e.checks[k].part]++;
    }
    for (int p = ANDREA_EXPLAIN_SCORES; p <= ANDREA_EXPLAIN_CONTEXT; p++) CHECK(parts[p] >= 1);
    int ctx = andrea_model_config(m)->ctx;
    CHECK(e.ctx_T == ctx && e.ctx_scores == (int64_t)ctx * ctx);
    CHECK(e.ctx_nonzero == (int64_t)ctx * (ctx + 1) / 2 && e.ctx_av_error < 1e-5);
    /* issue 15's measurements: -1e9 = -inf, the score count, the gradient, the shortcut */
    int T = tk.T;
    CHECK(e.mask_value == -1e9 && e.mask_value_differ == 0);
    CHECK(e.scores_prompt == (int64_t)T * T && e.scores_used == (int64_t)T * (T + 1) / 2);
    CHECK(e.scores_ctx == (int64_t)andrea_model_config(m)->ctx * andrea_model_config(m)->ctx);
    CHECK(e.grad_fd_error < 1e-8 && e.grad_unscaled < e.grad_scaled);
    CHECK(e.grad_tiny_unscaled > 0.5 && e.grad_tiny_scaled < 0.1);
    CHECK(e.shortcut_run && e.shortcut_train < 0.5 * log(8.0) && e.shortcut_gen > log(8.0));
    CHECK(fabs(e.causal_train - e.causal_gen) < 1e-9 && fabs(e.causal_train - log(8.0)) < 0.1);
    CHECK(e.head_kind != NULL);
    /* the same run in Indonesian: the same verdicts, other words */
    andrea_explain_options o = {1, 1, 1337, "id", 1};
    andrea_explain ei;
    CHECK(andrea_explain_run_opts(m, tk.ids, tk.T, &o, &ei) == 0);
    CHECK(ei.n_checks == 30 - 3 && ei.n_failed == 0 && !ei.shortcut_run);
    CHECK(strstr(ei.checks[0].what, "dihitung ulang dalam double") != NULL);
    CHECK(strcmp(ei.checks[0].what, e.checks[0].what) != 0);
    andrea_explain_free(&ei);
    o.lang = "xx";
    CHECK(andrea_explain_run_opts(m, tk.ids, tk.T, &o, &ei) == -1);
    CHECK(strstr(andrea_error(), "unknown language 'xx'") != NULL);
    andrea_explain_free(&ei);
    CHECK(e.changed_past == 0 && e.changed_last > 0);
    /* the magnitude claim: std(q.k) of random N(0, 1) vectors near sqrt(d_k) */
    for (int t = 0; t < 3; t++)
        CHECK_CLOSE(e.magnitude_std[t], sqrt((double)e.magnitude_dk[t]), 0, 0.1);
    CHECK(e.unscaled_max > e.scaled_max && e.unscaled_entropy < e.scaled_entropy);
    andrea_explain_free(&e);
    CHECK(andrea_explain_run(m, tk.ids, tk.T, 5, 0, 1, &e) == -1);
    CHECK(strstr(andrea_error(), "outside the model") != NULL);
    andrea_explain_free(&e);
    andrea_attn_tokens_free(&tk);
    int32_t ids[ANDREA_EXPLAIN_MAX_T + 1] = {0};
    CHECK(andrea_explain_run(m, ids, ANDREA_EXPLAIN_MAX_T + 1, 0, 0, 1, &e) == -1);
    andrea_explain_free(&e);
}

int main(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    cfg.n_head = 2;
    cfg.d_model = 16;
    cfg.ctx = 32;
    cfg.init_std = 0.35f; /* visible attention, far from uniform */
    andrea_model *m = andrea_model_create(&cfg, 1337);
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    CHECK(m && tok);
    if (!m || !tok) return tu_finish("test_attn_render");
    CHECK(cfg.n_layer == 2);
    test_labels(tok);
    test_json_strings();
    test_render(m, tok);
    test_explain(m, tok);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return tu_finish("test_attn_render");
}
