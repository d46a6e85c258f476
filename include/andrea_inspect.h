/*
 * andrea_inspect.h - look inside one forward pass: the attention maps of every
 * layer and head, in four views, with the very numbers the engine computed; their
 * token labels; the JSON, HTML and PNG renderings of them, written into a caller's
 * andrea_writer (a FILE*, a memory buffer); and the attention lesson's claims,
 * checked (explain). Front ends (the CLI, a server) only load, call and print.
 *
 * Usage (error handling elided):
 *
 *     andrea_attn_tokens tk;
 *     andrea_attn_tokens_encode(tok, "To be, or", 0, ctx, &tk);
 *     andrea_attn_maps maps;
 *     andrea_attention_inspect(m, tk.ids, tk.T, ANDREA_VIEWS_ALL, &maps);
 *     const float *A = andrea_attn_map(&maps, ANDREA_VIEW_SOFTMAX, layer, head); // (T, T)
 *     andrea_attn_stats st;
 *     andrea_attention_stats(A, tk.T, &st);
 *     andrea_attn_export x = {"model.bin", "To be, or", &tk, &maps, NULL, NULL, 0, 0};
 *     andrea_buffer page = {0};
 *     andrea_writer w = andrea_writer_buffer(&page);
 *     andrea_attention_render_html(&w, &x);   // page.data, page.len
 *     andrea_buffer_free(&page);
 *     andrea_attn_maps_free(&maps);
 *     andrea_attn_tokens_free(&tk);
 *
 * The four views of head h in layer l, for query i and key j (docs/attention.md):
 *   raw      q_i . k_j                        (full T x T, see below)
 *   scaled   raw * (1/sqrtf(HS))              (full T x T)
 *   masked   scaled for j <= i, -INFINITY for j > i: what the softmax saw
 *   softmax  A[i][j]: the probabilities; exactly 0 for j > i
 *
 * Where each number comes from:
 * - softmax is copied from the forward pass (andrea_model_attention). The
 *   inspector also re-runs the same kernel, andrea_attention_forward, on the q, k, v
 *   the forward stored, and counts entries whose bits differ (0 expected).
 * - masked, and scaled for j <= i, are the kernel's own scores (its preatt
 *   output from that re-run), so they are bit-for-bit what the softmax used.
 * - raw is recomputed here with a copy of the kernel's dot-product loop (the
 *   same float accumulation and the same `omp simd` reduction, which the
 *   compiler turns into the same order of partial sums); for j <= i the
 *   inspector checks that fl(raw * scale) equals the kernel's scaled score bit
 *   for bit and counts mismatches (0 expected, tested with gcc and clang,
 *   with and without -march=native). raw is NOT scaled / scale: that division
 *   would round differently whenever sqrt(HS) is not a power of two.
 * - above the diagonal (j > i) the engine never computes a score (it would be
 *   masked); raw and scaled show there what it would have been, computed the
 *   same way, so a reader can see what the mask removes.
 */
#ifndef ANDREA_INSPECT_H
#define ANDREA_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "andrea_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ANDREA_VIEW_RAW = 0,
    ANDREA_VIEW_SCALED = 1,
    ANDREA_VIEW_MASKED = 2,
    ANDREA_VIEW_SOFTMAX = 3,
    ANDREA_VIEW_COUNT = 4
} andrea_attn_view;
#define ANDREA_VIEW_BIT(v) (1u << (v))
#define ANDREA_VIEWS_ALL 0xFu

const char *andrea_attn_view_name(int view); /* "raw", "scaled", "masked", "softmax" */
/* Parses a comma-separated list ("raw,softmax") into view bits. 0 or -1 with andrea_error(). */
int andrea_attn_views_parse(const char *list, unsigned *views);

typedef struct {
    int32_t n_layer, n_head, d_model, head_size; /* L, NH, C, HS */
    int32_t T;                                   /* tokens inspected (batch of 1) */
    float scale;                                 /* 1/sqrtf(HS), the kernel's constant */
    unsigned views;                              /* which maps[] are filled */
    float *maps[ANDREA_VIEW_COUNT];              /* each (L, NH, T, T), NULL if not asked */
    float *qkv;                                  /* (L, T, 3C) as the forward stored it */
    float *atty;                                 /* (L, T, C) heads' A.V, concatenated */
    float *proj;                                 /* (L, T, C) atty W_O^T (+ b_O) */
    /* consistency counts, all 0 when the inspector reproduced the forward exactly */
    int64_t prob_mismatches; /* re-run probabilities whose bits differ from the forward's */
    int64_t out_mismatches;  /* re-run A.V outputs whose bits differ from the forward's */
    int64_t raw_mismatches;  /* entries j <= i where fl(raw * scale) != the kernel's score
                              * (scores_exact 0: off by more than the dot's rounding) */
    /* 1: the backend's attention is the CPU kernel, whose dot product raw is computed with,
     * so its scaled scores are fl(raw * scale) to the bit; 0 (a GPU: its own summation
     * order): they agree within the float rounding of a head_size-term dot product */
    int32_t scores_exact;
} andrea_attn_maps;

/* Runs tokens (T <= ctx, batch 1) through m and fills out (which the caller
 * frees with andrea_attn_maps_free, even after a failure). views: bits of
 * ANDREA_VIEW_BIT(); memory is 4 L NH T^2 bytes per view. The forward runs in a
 * context of its own (explicit attention), so m is only read: inspections may share
 * one model across threads. 0 or -1 with andrea_error(). */
int andrea_attention_inspect(const andrea_model *m, const int32_t *tokens, int T, unsigned views,
                             andrea_attn_maps *out);
void andrea_attn_maps_free(andrea_attn_maps *maps);
/* The (T, T) matrix of one view, layer and head; NULL if absent or out of range. */
const float *andrea_attn_map(const andrea_attn_maps *maps, int view, int layer, int head);

/* Per-head summary of a (T, T) causal probability matrix A. Row 0 can only
 * attend to itself, so the means run over rows i = 1..T-1 (row 0 alone if T = 1). */
typedef struct {
    double entropy;         /* mean_i -sum_j A_ij ln A_ij, nats */
    double entropy_uniform; /* the same for a uniform causal head: mean_i ln(i + 1) */
    double mean_distance;   /* mean_i sum_j A_ij (i - j): how far back it looks */
    double first_weight;    /* mean_i A_i0: weight on the first token */
    double prev_weight;     /* mean_i A_i,i-1: weight on the previous token */
    double self_weight;     /* mean_i A_ii: weight on the token itself */
} andrea_attn_stats;
void andrea_attention_stats(const float *A, int T, andrea_attn_stats *out);

/* What a head does, named from its measurements (andrea_attention_stats over rows
 * 1..T-1): the largest of prev_weight, first_weight and self_weight when it is at least
 * 1/2 (previous-token, first-token, self), else broad when the entropy is at least 3/4
 * of a uniform head's, else mixed. T = 1 is mixed: one row says nothing. */
typedef enum {
    ANDREA_HEAD_MIXED = 0,
    ANDREA_HEAD_PREVIOUS,
    ANDREA_HEAD_FIRST,
    ANDREA_HEAD_SELF,
    ANDREA_HEAD_BROAD,
    ANDREA_HEAD_KIND_COUNT
} andrea_head_kind;
int andrea_attention_head_kind(const andrea_attn_stats *st, int T);
/* "mixed", "previous-token", "first-token", "self", "broad" (stable ids, used in JSON). */
const char *andrea_head_kind_name(int kind);

/* The lesson's two promises about a (T, T) probability matrix A: every row sums
 * to 1 and every entry above the diagonal is exactly 0. */
typedef struct {
    double max_row_error;   /* max_i |sum_j A_ij - 1|, summed in double */
    double tolerance;       /* (T + 2) 2^-23, see andrea_attention_check */
    int64_t upper_nonzero;  /* entries j > i that are not exactly +0.0f */
    int64_t negative;       /* entries < 0 or NaN */
    int ok;                 /* 1 if all three hold */
} andrea_attn_check;
/* Tolerance: each probability is fl(e_j * fl(1/sum)) with sum accumulated in
 * float over at most T terms, so the row sum is off by at most ~(T + 2) half
 * ulps of 1; we allow (T + 2) 2^-23, twice that. */
void andrea_attention_check(const float *A, int T, andrea_attn_check *out);

/* ---- token labels (src/inspect/labels.c) ------------------------------------------- */

#define ANDREA_LABEL_MAX 64
/* The printable label of one token into buf (ANDREA_LABEL_MAX bytes, UTF-8, NUL-ended):
 * printable ASCII as is, space as U+2423 (the open box), \n \t \r \\ escaped, every
 * other byte as \xNN, the BOS token (or an empty one) as <BOS>, an unknown id <ID?>. */
void andrea_token_label(const andrea_tokenizer *tok, int32_t id, char *buf);

/* A prompt's tokens and their labels, one per position. */
typedef struct {
    int T;
    int32_t *ids;                      /* (T) */
    char (*labels)[ANDREA_LABEL_MAX];  /* (T) */
} andrea_attn_tokens;
/* Encodes prompt with tok (BOS first if bos) and labels every token; fails when the
 * result is empty or longer than max_T. out is zeroed first; free it with
 * andrea_attn_tokens_free (also after a failure). 0 or -1 with andrea_error(). */
int andrea_attn_tokens_encode(const andrea_tokenizer *tok, const char *prompt, int bos, int max_T,
                              andrea_attn_tokens *out);
void andrea_attn_tokens_free(andrea_attn_tokens *t);

/* ---- languages (src/inspect/lang*.c) ------------------------------------------------
 * explain's texts, the PNG labels and the HTML page come from one table per language:
 * "en" (English, the default; NULL and "" mean it too) and "id" (Bahasa Indonesia, with
 * the lesson's terms). */
/* 0 if code names a language, else -1 with andrea_error() listing them. */
int andrea_lang_check(const char *code);
/* The text of key in code (English where that language lacks it; the key itself if
 * English lacks it too). Texts with printf conversions have the same ones in every
 * language. */
const char *andrea_lang_text(const char *code, const char *key);
/* The k-th key of code's table (k = 0, 1, ...), NULL past the end: to list them all. */
const char *andrea_lang_key(const char *code, int k);

/* v in lang's style: digits in groups of three split by "," (English: 1,048,576) or " "
 * (Indonesian: 1 048 576), into buf (n >= 32); returns buf. */
char *andrea_lang_group(const char *lang, long long v, char *buf, size_t n);

/* ---- size of an export, and its guard (src/inspect/attn_size.c) ---------------------
 * Maps grow as L NH T^2: andrea-120m (12 x 12 heads) at T = 1024 is 151 M scores per view,
 * 604 MB of floats, some 2.4 GB of JSON per view. Front ends ask before they inspect. */
typedef struct {
    int64_t map_bytes;  /* what andrea_attention_inspect holds: the forward's (L, NH, T, T)
                         * probabilities plus 4 L NH T^2 per view kept */
    int64_t json_bytes; /* at most: the JSON export of the selection (16 bytes a number) */
    int64_t html_bytes; /* at most: the HTML page of the selection (raw, softmax, q, k, v) */
} andrea_attn_size;
/* Estimates for a model of config c, T tokens, n_layers x n_heads selected and the views
 * bits kept and written to JSON. Upper bounds: every number counted at its widest. */
void andrea_attention_size(const andrea_config *c, int T, int n_layers, int n_heads,
                           unsigned views, andrea_attn_size *out);

/* The guard: keeps an export under a limit by choosing fewer heads, and says so. */
typedef struct {
    /* in */
    int layer, head;   /* -1 = all; the guard may change a -1 to one layer / head */
    unsigned views;    /* the views of the JSON export (0: no JSON) */
    int html;          /* 1: an HTML page too */
    int64_t limit;     /* the largest document allowed, bytes; 0 = 64 MB (64e6) */
    const char *lang;  /* the note's and the error's language: NULL = "en", "id" */
    /* out */
    andrea_attn_size asked, chosen; /* sizes of the selection asked for and the one chosen */
    int limited;       /* 1 if layer or head was narrowed */
    char note[320];    /* one line saying what was narrowed and how to get more */
} andrea_attn_guard;
/* Narrows g->layer (all -> layer 0), then g->head (all -> head 0), while the largest
 * document would exceed the limit, and writes the note. 0 (possibly limited), or -1 with
 * andrea_error() when even one head is over the limit (a shorter prompt, or a higher
 * limit, is needed). Needs only the config: runs before any inspection. */
int andrea_attention_guard(const andrea_config *c, int T, andrea_attn_guard *g);

/* ---- renderers (src/inspect/attn_json.c, attn_html.c, attn_png.c) -------------------
 * Each writes one document into a caller's writer (andrea_writer.h: a FILE*, a memory
 * buffer, ...) and returns 0, or -1 with andrea_error() (a bad selection, a view the
 * maps lack, out of memory, or the writer's own failure). Same input, same bytes. */

/* What the renderers show besides the maps. */
typedef struct {
    const char *model;                /* the model's name as shown ("model" in the JSON) */
    const char *prompt;
    const andrea_attn_tokens *tokens; /* tokens->T == maps->T */
    const andrea_attn_maps *maps;     /* softmax always needed, plus the views rendered */
    const int *layers, *heads;        /* the selected layers and heads; NULL = all */
    int n_layers, n_heads;            /* their counts (ignored where the list is NULL) */
    const char *lang;                 /* texts of the page and PNG labels: NULL = "en", "id" */
} andrea_attn_export;

/* The JSON document (docs/attention.md): config, tokens, labels, checks, and per
 * selected head its statistics, its kind (andrea_head_kind_name) and the views in
 * `views`, and per selected layer and head its q, k, v (T, HS) ("qkv": [q, k, v]).
 * Floats as %.9g (they read back to the same bits), null for -inf. */
int andrea_attention_render_json(andrea_writer *w, const andrea_attn_export *x, unsigned views);
/* The offline HTML explorer: one page, its script and the JSON inline, in x->lang:
 * heatmaps (raw and scaled on one shared colour scale, softmax with and without the
 * scale, with a legend), thumbnails of every selected head, a head view (lines from a
 * token to the tokens it attends to) and a cell view (q, k, q*k, the sum, the scale, the
 * mask, the softmax, the weighted rows of V), zoom and scroll. The page carries the raw
 * scores and the probabilities (maps must hold all four views: scaled and masked are
 * derived in the page, bit for bit, as fl(raw * scale)). URL hash: docs/attention.md. */
int andrea_attention_render_html(andrea_writer *w, const andrea_attn_export *x);
/* A PNG heatmap of one head and view: labelled T x T cells of side clamp(512 / T, 1, 24). */
int andrea_attention_render_png(andrea_writer *w, const andrea_attn_export *x, int layer,
                                int head, int view);
/* A PNG of the selected layers x heads, each panel T x T cells of side clamp(128 / T, 1, 8).
 * Both PNG renderers return -1 ("built without libpng ...") when the build has no libpng. */
int andrea_attention_render_png_grid(andrea_writer *w, const andrea_attn_export *x, int view);

/* ---- explain: the lesson's claims, checked (src/inspect/explain.c) -------------------- */

#define ANDREA_EXPLAIN_MAX_T 8
#define ANDREA_EXPLAIN_CHECK_MAX 48

/* Where a check belongs in the walk-through: the steps of the lesson, then its claims. */
typedef enum {
    ANDREA_EXPLAIN_SCORES = 2,   /* S = Q K^T */
    ANDREA_EXPLAIN_SCALE,        /* S / sqrt(d_k) */
    ANDREA_EXPLAIN_MASK,         /* causal mask */
    ANDREA_EXPLAIN_SOFTMAX,      /* softmax rows */
    ANDREA_EXPLAIN_AV,           /* A V */
    ANDREA_EXPLAIN_WO,           /* concatenated heads times W_O */
    ANDREA_EXPLAIN_MAGNITUDE,    /* std(q.k) ~ sqrt(d_k) on random vectors */
    ANDREA_EXPLAIN_SHARPNESS,    /* unscaled softmax is sharper, random vectors */
    ANDREA_EXPLAIN_SHARP_MODEL,  /* ... and on this model */
    ANDREA_EXPLAIN_DISTRIBUTION, /* every row of every head a distribution */
    ANDREA_EXPLAIN_CAUSAL,       /* the future cannot change the past */
    ANDREA_EXPLAIN_MASK_VALUE,   /* -1e9 against -inf */
    ANDREA_EXPLAIN_COUNT,        /* T x T scores per head */
    ANDREA_EXPLAIN_GRADIENT,     /* softmax gradient with and without the scale */
    ANDREA_EXPLAIN_SHORTCUT,     /* training without the mask */
    ANDREA_EXPLAIN_HEAD_KINDS,   /* heads named from measurements */
    ANDREA_EXPLAIN_CONTEXT       /* the kernel at the model's own context: its shapes */
} andrea_explain_part;

typedef struct {
    int part;       /* andrea_explain_part */
    int ok;         /* 1 PASS, 0 FAIL */
    char what[320]; /* the claim with the numbers measured, in the run's language */
} andrea_explain_check;

/* Everything `andrea explain` shows about one layer and head of one prompt. Our
 * re-computations are in double; each check's tolerance is explained in explain.c. */
typedef struct {
    int layer, head, T, C, NH, HS;
    andrea_attn_maps maps;       /* all four views of the prompt */
    double *av;                  /* (T, HS) A V of the head, in double */
    double *wo;                  /* (T, C) concat W_O^T (+ b_O), in double */
    /* claim: std(q.k) of random N(0, 1) vectors, per d_k in magnitude_dk */
    int magnitude_dk[3], magnitude_pairs;
    double magnitude_std[3];
    /* claim: softmax without / with the scale, random keys (mean max p, mean entropy) */
    int sharp_rows, sharp_keys, sharp_dk;
    double unscaled_max, unscaled_entropy, scaled_max, scaled_entropy;
    /* the same on this model, all layers and heads, rows 1..T-1 (model_rows 0: T = 1) */
    int model_rows;
    double model_entropy_scaled, model_entropy_unscaled;
    /* claim: the last token replaced by changed_id (T >= 2 only) */
    int32_t changed_id;
    long changed_last, changed_past; /* softmax weights whose bits changed */
    /* the mask value: the lesson's -1e9 against the engine's -inf, on the walked head */
    double mask_value;             /* -1e9 */
    long mask_value_differ;        /* probabilities whose bits differ between the two */
    /* scores per head: at the prompt (T^2), at the model's context (ctx^2) */
    int ctx;
    int64_t scores_prompt, scores_ctx, scores_used, scores_masked;
    /* the softmax's gradient d softmax(s) / d s (its Jacobian, Frobenius norm), on the same
     * raw scores without and with the scale: random rows (sharp_*) and the walked head */
    double grad_unscaled, grad_scaled;             /* mean over the random rows */
    double grad_tiny_unscaled, grad_tiny_scaled;   /* share of entries below 1e-6 */
    double grad_model_unscaled, grad_model_scaled; /* walked head, rows 1..T-1 */
    double grad_fd_error;                          /* analytic vs finite differences */
    /* the shortcut: a one-head attention model trained on random tokens, with and
     * without the mask; loss when training and when generating (the future absent) */
    int shortcut_run, shortcut_steps, shortcut_vocab, shortcut_T;
    double shortcut_train, shortcut_gen, causal_train, causal_gen;
    /* every head of the model, named from measurements: (L, NH) andrea_head_kind */
    int *head_kind;
    /* the shapes at the model's own context: the engine's attention kernel run once on
     * ctx positions of random unit-variance q, k, v (andrea-120m: 12 heads of (1024, 64),
     * 1024 x 1024 scores each, outputs concatenated to (1024, 768)) */
    int ctx_T;                          /* = ctx */
    int64_t ctx_scores, ctx_nonzero;    /* per head: T^2 scores; probabilities > 0 (max) */
    double ctx_row_error, ctx_av_error; /* max |row sum - 1|; last row's A V vs double */
    const char *lang;
    andrea_explain_check checks[ANDREA_EXPLAIN_CHECK_MAX];
    int n_checks, n_failed;
} andrea_explain;

/* What andrea_explain_run_opts does; zero is the default (layer 0, head 0, seed 0, English,
 * with the shortcut run). */
typedef struct {
    int layer, head;
    uint64_t seed;       /* drives the random-vector claims and the shortcut run */
    const char *lang;    /* NULL = "en", "id" */
    int skip_shortcut;   /* 1: leave out the shortcut run (some 50 ms) */
} andrea_explain_options;

/* Runs tokens (1 <= T <= ANDREA_EXPLAIN_MAX_T, T <= ctx) through m, walks layer and head,
 * and checks every step and claim; seed drives the random-vector claims. The checks'
 * verdicts are in out (n_failed); -1 with andrea_error() only when they could not be run.
 * out is zeroed first; free it with andrea_explain_free (also after a failure). */
int andrea_explain_run(andrea_model *m, const int32_t *tokens, int T, int layer, int head,
                       uint64_t seed, andrea_explain *out);
/* The same with options (a language; the shortcut run optional). */
int andrea_explain_run_opts(andrea_model *m, const int32_t *tokens, int T,
                            const andrea_explain_options *o, andrea_explain *out);
void andrea_explain_free(andrea_explain *e);

/* ---- the scale experiment (src/inspect/scale_exp.c) -----------------------------------
 * The lesson's "without the scale, training stalls", shown by training: one attention-only
 * model (character embeddings + positions, one head of d_k, no residual) trained twice on
 * the same text from the same weights on the same batches, its scores divided by 1 and by
 * sqrt(d_k). q and k start with unit-variance entries, as the lesson assumes. */
typedef struct {
    int d_model, d_k, T, batch, steps, every; /* every: a measurement every N steps */
    double lr;                                /* Adam's learning rate */
    uint64_t seed;                            /* initial weights and batches */
} andrea_scale_exp_options;

typedef struct {
    andrea_scale_exp_options options;
    int vocab;           /* the text's distinct bytes */
    double divisor[2];   /* run 0: 1 (no scale); run 1: sqrt(d_k) */
    int n_points;        /* measurements per run, at steps step[0..n_points-1] */
    int *step;
    /* per run r and point: the batch's loss (nats), the mean entropy and max p of the rows
     * 1..T-1 of A, ||dL/dz|| at the softmax's input z = scores / divisor (what the
     * softmax's Jacobian lets through), and ||dL/dWq, dL/dWk|| (what reaches the queries
     * and keys: the divisor multiplies it by sqrt(d_k) / divisor again) */
    double *loss[2], *entropy[2], *max_p[2], *grad_z[2], *grad_qk[2];
    double eval_loss[2]; /* after the last step, on the held-out last 10% of the text */
    double grad_z_late[2]; /* mean ||dL/dz|| over the second half of the points */
    /* the claim's checks: held-out loss worse by >= ANDREA_SCALE_EXP_MARGIN nats without
     * the scale; entropy at step 1 below half the scaled run's; grad_z_late below
     * ANDREA_SCALE_EXP_GRAD_RATIO of the scaled run's */
    int ok_loss, ok_sharp, ok_grad;
} andrea_scale_exp;
#define ANDREA_SCALE_EXP_MARGIN 0.1
#define ANDREA_SCALE_EXP_GRAD_RATIO 0.6

/* Runs the experiment on text (n bytes, >= 160 T); 0, or -1 with andrea_error() (bad
 * options, a short text, out of memory). Free out with andrea_scale_exp_free. */
int andrea_scale_experiment(const uint8_t *text, size_t n, const andrea_scale_exp_options *o,
                            andrea_scale_exp *out);
void andrea_scale_exp_free(andrea_scale_exp *e);
/* Its pictures, in lang: which 0 the loss curves, 1 the entropy of A, 2 ||dL/dz||, 3
 * ||dL/dWq, dL/dWk|| (PNG; -1 without libpng); and one offline HTML page with all four
 * (SVG), the numbers and the checks. 0 or -1 with andrea_error(). */
int andrea_scale_exp_render_png(andrea_writer *w, const andrea_scale_exp *e, const char *lang,
                                int which);
int andrea_scale_exp_render_html(andrea_writer *w, const andrea_scale_exp *e, const char *lang,
                                 const char *data_name);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_INSPECT_H */
