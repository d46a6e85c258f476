/* safetensors_files.c - a safetensors model on disk with what travels beside it:
 * tokenizer.tok (andrea's exact tokenizer), vocab.json + merges.txt (Hugging Face's
 * byte-level BPE files, for byte/bpe/gpt2 tokenizers) and, read only, config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/fmt.h"
#include "util/error.h"

static void json_escaped(andrea_wbuf *w, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') andrea_wb_put(w, "\\", 1);
        andrea_wb_put(w, s, 1);
    }
}

static int write_vocab_merges(const char *path, const andrea_tokenizer *tok) {
    char vpath[4096], mpath[4096], s[1024], s2[1024];
    andrea_fmt_sibling(path, "vocab.json", vpath, sizeof vpath);
    andrea_fmt_sibling(path, "merges.txt", mpath, sizeof mpath);
    int32_t V = andrea_tokenizer_vocab_size(tok), *merges = NULL, nm = 0;
    if (andrea_fmt_tok_merges(tok, &merges, &nm)) return -1;
    andrea_wbuf v = {0}, m = {0};
    int rc = -1;
    andrea_wb_str(&v, "{");
    for (int32_t i = 0; i < V; i++) {
        if (andrea_fmt_token_string(tok, i, s, sizeof s)) {
            andrea_set_error("token %d is too long for vocab.json", i);
            goto done;
        }
        andrea_wb_str(&v, i ? ", \"" : "\"");
        json_escaped(&v, s);
        snprintf(s, sizeof s, "\": %d", i);
        andrea_wb_str(&v, s);
    }
    andrea_wb_str(&v, "}\n");
    andrea_wb_str(&m, "#version: 0.2\n");
    for (int32_t i = 0; i < nm; i++) {
        if (andrea_fmt_token_string(tok, merges[3 * i], s, sizeof s) ||
            andrea_fmt_token_string(tok, merges[3 * i + 1], s2, sizeof s2)) {
            andrea_set_error("merge %d is too long for merges.txt", i);
            goto done;
        }
        andrea_wb_str(&m, s);
        andrea_wb_str(&m, " ");
        andrea_wb_str(&m, s2);
        andrea_wb_str(&m, "\n");
    }
    rc = andrea_wb_save(&v, vpath) || andrea_wb_save(&m, mpath) ? -1 : 0;
done:
    free(merges);
    andrea_wb_free(&v);
    andrea_wb_free(&m);
    return rc;
}

/* Called by andrea_safetensors_save after the model file is in place. */
int andrea_st_write_tokenizer_files(const char *path, const andrea_tokenizer *tok) {
    char tpath[4096];
    andrea_fmt_sibling(path, "tokenizer.tok", tpath, sizeof tpath);
    if (andrea_tokenizer_save(tok, tpath)) return -1;
    return andrea_fmt_tok_is_bpe(tok) ? write_vocab_merges(path, tok) : 0;
}

/* "n_head" and "layer_norm_epsilon" of a Hugging Face config.json, if present. */
static void read_hf_config(const char *path, int *n_head, float *eps) {
    char cpath[4096];
    andrea_fmt_sibling(path, "config.json", cpath, sizeof cpath);
    uint8_t *d;
    size_t n;
    if (access(cpath, R_OK) != 0 || andrea_fmt_slurp(cpath, &d, &n)) return;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, d, n);
        s[n] = 0;
        const char *k = strstr(s, "\"n_head\"");
        if (k && (k = strchr(k, ':'))) *n_head = atoi(k + 1);
        k = strstr(s, "\"layer_norm_epsilon\"");
        if (k && (k = strchr(k, ':'))) *eps = strtof(k + 1, NULL);
    }
    free(s);
    free(d);
}

/* NULL with *failed = 0 when no tokenizer travels with the file. */
static andrea_tokenizer *read_tokenizer(const char *path, const andrea_model *m, int *failed) {
    *failed = 1;
    char tpath[4096], vpath[4096], mpath[4096];
    andrea_fmt_sibling(path, "tokenizer.tok", tpath, sizeof tpath);
    andrea_fmt_sibling(path, "vocab.json", vpath, sizeof vpath);
    andrea_fmt_sibling(path, "merges.txt", mpath, sizeof mpath);
    andrea_tokenizer *t = NULL;
    if (access(tpath, R_OK) == 0) t = andrea_tokenizer_load(tpath);
    else if (access(vpath, R_OK) == 0 && access(mpath, R_OK) == 0)
        t = andrea_tokenizer_gpt2_load(vpath, mpath);
    else return *failed = 0, NULL;
    if (t && andrea_tokenizer_vocab_size(t) > andrea_model_config(m)->vocab) {
        andrea_set_error("'%s': the tokenizer beside it has %d tokens, the model %d", path,
                         andrea_tokenizer_vocab_size(t), andrea_model_config(m)->vocab);
        andrea_tokenizer_free(t);
        t = NULL;
    }
    return t;
}

andrea_model *andrea_safetensors_load(const char *path, andrea_tokenizer **tok) {
    if (tok) *tok = NULL;
    uint8_t *d;
    size_t n;
    if (andrea_fmt_slurp(path, &d, &n)) return NULL;
    int n_head = 0;
    float eps = 0;
    read_hf_config(path, &n_head, &eps);
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    andrea_model *m = andrea_safetensors_parse(d, n, what, n_head, eps);
    free(d);
    int failed = 0;
    if (m && tok && !(*tok = read_tokenizer(path, m, &failed)) && failed) {
        andrea_model_free(m);
        return NULL;
    }
    return m;
}
