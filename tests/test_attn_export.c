/*
 * test_attn_export.c - `andrea attention --json` writes the engine's numbers to the
 * last bit. A checkpoint is saved from a seeded model, the CLI exports all four
 * views, and every value read back (strtof of the %.9g text) must have the same
 * bits as andrea_model_attention() after our own forward pass (softmax) and as
 * andrea_attention_inspect() (raw, scaled, masked; null = -inf). Also the token
 * ids and the recorded consistency counts.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "test_ckpt.h"
#include "test_util.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    *n = (size_t)len;
    return buf;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Parses n JSON numbers (or null -> -inf) after p; returns the position after them or NULL. */
static const char *parse_numbers(const char *p, float *out, int n) {
    for (int k = 0; k < n; k++) {
        while (*p == '[' || *p == ']' || *p == ',' || *p == ' ' || *p == '\n') p++;
        if (strncmp(p, "null", 4) == 0) {
            out[k] = -INFINITY;
            p += 4;
            continue;
        }
        char *end;
        out[k] = strtof(p, &end);
        if (end == p) return NULL;
        p = end;
    }
    return p;
}

int main(void) {
    const char *bin = getenv("ANDREA_BIN");
    const char *dir = getenv("ANDREA_TMP") ? getenv("ANDREA_TMP") : "/tmp";
    if (!bin) {
        fprintf(stderr, "skip: ANDREA_BIN is not set\n");
        return 77;
    }
    char cmd[2048], ckpt[512], json[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(ckpt, sizeof ckpt, "%s/attn_export.bin", dir);
    snprintf(json, sizeof json, "%s/attn_export.json", dir);

    andrea_config cfg;
    andrea_config_preset("tiny", &cfg);
    cfg.n_head = 4;
    cfg.d_model = 48; /* d_k = 12: 1/sqrt(12) is not exact, so raw must not be scaled / scale */
    cfg.init_std = 0.3f;
    andrea_model *m = tu_random_checkpoint(ckpt, &cfg, 7);

    /* quotes, a backslash, '<', a tab and a newline exercise the label escaping */
    const char *prompt = "To be, or \"not\" <b>\\ to\tbe:\nthat";
    snprintf(cmd, sizeof cmd, "'%s' attention -m '%s' -p '%s' --views raw,scaled,masked,softmax "
                              "--json '%s' > /dev/null", bin, ckpt, prompt, json);
    int rc = system(cmd);
    CHECK(rc == 0);
    size_t n = 0;
    char *doc = slurp(json, &n);
    CHECK(doc != NULL);
    if (!doc || rc != 0) return tu_finish("test_attn_export");

    int T = (int)strlen(prompt), L = cfg.n_layer, NH = cfg.n_head;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)T);
    for (int i = 0; i < T; i++) tok[i] = (unsigned char)prompt[i];

    /* header fields */
    char want[64];
    snprintf(want, sizeof want, "\"T\":%d,", T);
    CHECK(strstr(doc, want) != NULL);
    CHECK(strstr(doc, "\"prob_mismatches\":0,\"out_mismatches\":0,\"raw_mismatches\":0") != NULL);
    const char *tp = strstr(doc, "\"tokens\":[");
    CHECK(tp != NULL);
    if (tp) {
        tp += strlen("\"tokens\":[");
        for (int i = 0; i < T; i++) {
            char *end;
            long v = strtol(tp, &end, 10);
            CHECK(v == tok[i]);
            tp = end + 1;
        }
    }
    CHECK(strstr(doc, "\"\\u003c\"") != NULL); /* the '<' label, escaped for <script> */
    CHECK(strstr(doc, "\"\\\\n\"") != NULL);   /* the newline label is the two characters \n */

    /* the reference: our own forward, and the inspector for the score views */
    andrea_attn_maps mp;
    CHECK(andrea_attention_inspect(m, tok, T, ANDREA_VIEWS_ALL, &mp) == 0);
    CHECK(andrea_model_forward(m, tok, NULL, 1, T) == 0.0f);
    float *vals = malloc(sizeof(float) * (size_t)T * T);
    long heads = 0, diff[ANDREA_VIEW_COUNT] = {0};
    const char *p = doc;
    while ((p = strstr(p, "{\"layer\":"))) {
        int l = -1, h = -1;
        CHECK(sscanf(p, "{\"layer\":%d,\"head\":%d", &l, &h) == 2);
        CHECK(l >= 0 && l < L && h >= 0 && h < NH);
        if (l < 0 || l >= L || h < 0 || h >= NH) break;
        heads++;
        const char *next = strstr(p + 1, "{\"layer\":");
        for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
            char key[32];
            snprintf(key, sizeof key, "\"%s\":[", andrea_attn_view_name(v));
            const char *q = strstr(p, key);
            CHECK(q != NULL && (!next || q < next));
            if (!q || (next && q > next)) continue;
            CHECK(parse_numbers(q + strlen(key), vals, T * T) != NULL);
            const float *ref = v == ANDREA_VIEW_SOFTMAX
                                   ? andrea_model_attention(m, l) + (size_t)h * T * T
                                   : andrea_attn_map(&mp, v, l, h);
            for (int k = 0; k < T * T; k++)
                if (!same_bits(vals[k], ref[k])) diff[v]++;
        }
        p++;
    }
    CHECK(heads == (long)L * NH);
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
        if (diff[v]) fprintf(stderr, "view %s: %ld values differ from the engine's bits\n",
                             andrea_attn_view_name(v), diff[v]);
        CHECK(diff[v] == 0);
    }

    /* --layer/--head select what is exported */
    snprintf(cmd, sizeof cmd, "'%s' attention -m '%s' -p 'abc' --layer 1 --head 2 --json '%s' "
                              "> /dev/null", bin, ckpt, json);
    CHECK(system(cmd) == 0);
    free(doc);
    doc = slurp(json, &n);
    CHECK(doc && strstr(doc, "{\"layer\":1,\"head\":2,") && !strstr(doc, "{\"layer\":0,") &&
          !strstr(doc, "\"raw\":["));

    free(doc);
    free(vals);
    free(tok);
    andrea_attn_maps_free(&mp);
    andrea_model_free(m);
    return tu_finish("test_attn_export");
}
