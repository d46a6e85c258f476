/* model_open.c - see model_open.h. */
#include "model_open.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "andrea_formats.h"
#include "andrea_inspect.h"
#include "util/error.h"

int cli_is_flat(const char *path) {
    andrea_flat_info info;
    if (andrea_format_sniff(path) != ANDREA_FORMAT_UNKNOWN) return 0;
    return andrea_flat_peek(path, &info) == 0;
}

int cli_flat_resolve(const char *path, const char *tok_spec, andrea_config *cfg, char *spec,
                     size_t n) {
    if (tok_spec) {
        snprintf(spec, n, "%s", tok_spec);
    } else { /* ANDREA ships harris_segments.json beside its checkpoints */
        const char *slash = strrchr(path, '/');
        int dir = slash ? (int)(slash - path + 1) : 0;
        snprintf(spec, n, "%.*sharris_segments.json", dir, path);
        FILE *f = fopen(spec, "rb");
        if (!f)
            return andrea_set_error("'%s' is ANDREA's flat checkpoint; its tokenizer '%s' is not "
                                    "there: give --tokenizer", path, spec);
        fclose(f);
    }
    andrea_flat_info info;
    if (andrea_flat_peek(path, &info)) return -1;
    andrea_tokenizer *tok = andrea_tokenizer_open(spec);
    if (!tok) return -1;
    int rc = 0;
    if (cfg->n_layer > 0) { /* the caller gave the shape; V is the tokenizer's unless that fits */
        if (andrea_flat_num_params(cfg) != info.n_params) cfg->vocab = andrea_tokenizer_vocab_size(tok);
    } else {
        rc = andrea_flat_guess_config(info.n_params, andrea_tokenizer_vocab_size(tok), cfg);
    }
    andrea_tokenizer_free(tok);
    return rc;
}

/* ANDREA's flat file: the shape from its size and tokenizer. */
static andrea_model *open_flat(const char *path, const char *tok_spec, andrea_tokenizer **tok) {
    andrea_config cfg;
    char spec[4096];
    andrea_flat_info info;
    memset(&cfg, 0, sizeof cfg);
    if (cli_flat_resolve(path, tok_spec, &cfg, spec, sizeof spec)) return NULL;
    andrea_model *m = andrea_flat_load(path, &cfg, NULL, NULL, &info);
    if (m && !(*tok = andrea_tokenizer_open(spec))) {
        andrea_model_free(m);
        return NULL;
    }
    return m;
}

andrea_model *cli_model_open(const char *path, const char *tok_spec, andrea_tokenizer **tok) {
    *tok = NULL;
    andrea_model *m = andrea_model_load_any(path, tok_spec ? NULL : tok);
    if (!m) { /* ANDREA's flat file has no magic: tried last, else the first error stands */
        char why[1024];
        snprintf(why, sizeof why, "%s", andrea_error());
        if (!cli_is_flat(path)) return andrea_set_error("%s", why), NULL;
        m = open_flat(path, tok_spec, tok);
        if (!m) return NULL;
    }
    if (!*tok) {
        int V = andrea_model_config(m)->vocab;
        const char *spec = tok_spec ? tok_spec : V == ANDREA_BYTE_VOCAB ? "byte" : V == 50257 ? "gpt2" : NULL;
        if (!spec) {
            andrea_model_free(m);
            return andrea_set_error("'%s' carries no tokenizer and its vocabulary (%d) is not one "
                                    "andrea can guess; give --tokenizer", path, V), NULL;
        }
        *tok = andrea_tokenizer_open(spec);
        if (!*tok) {
            andrea_model_free(m);
            return NULL;
        }
    }
    if (andrea_tokenizer_vocab_size(*tok) > andrea_model_config(m)->vocab) {
        andrea_set_error("'%s': the tokenizer has %d tokens, the model only %d", path,
                         andrea_tokenizer_vocab_size(*tok), andrea_model_config(m)->vocab);
        andrea_tokenizer_free(*tok);
        *tok = NULL;
        andrea_model_free(m);
        return NULL;
    }
    char name[4200]; /* finite numbers under a valid checksum can still be useless weights */
    snprintf(name, sizeof name, "'%s'", path);
    if (andrea_model_probe(m, name)) {
        andrea_tokenizer_free(*tok);
        *tok = NULL;
        andrea_model_free(m);
        return NULL;
    }
    return m;
}

void cli_model_error(const char *cmd, const char *lang, const char *path) {
    struct stat sb;
    if (!lang || !*lang || strcmp(lang, "en") == 0) { /* the library's own words */
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
    } else if (stat(path, &sb) != 0 && errno == ENOENT) {
        fprintf(stderr, "andrea %s: ", cmd);
        fprintf(stderr, andrea_lang_text(lang, "err.no_model"), path);
        fputc('\n', stderr);
    } else { /* the detail is the reader's, in English: said as such */
        fprintf(stderr, "andrea %s: ", cmd);
        fprintf(stderr, andrea_lang_text(lang, "err.bad_model"), path, andrea_error());
        fputc('\n', stderr);
    }
}
