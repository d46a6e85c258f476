/* model_open.c - see model_open.h. */
#include "model_open.h"

#include "andrea_formats.h"
#include "util/error.h"

andrea_model *cli_model_open(const char *path, const char *tok_spec, andrea_tokenizer **tok) {
    *tok = NULL;
    andrea_model *m = andrea_model_load_any(path, tok_spec ? NULL : tok);
    if (!m) return NULL;
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
    return m;
}
