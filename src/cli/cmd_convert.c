/* cmd_convert.c - `andrea convert IN OUT`: a model from one file format to another
 * (andrea checkpoint, safetensors, GGUF, llm.c), through the library's readers and
 * writers (src/formats). */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "commands.h"
#include "model_open.h"
#include "util/atomic_file.h"

/* andrea_model_save_as under a temporary name, published whole (util/atomic_file.h) */
typedef struct {
    int format, dtype, names;
    const andrea_model *m;
    const andrea_tokenizer *tok;
} convert_out;

static int write_model(const char *tmp, void *ctx) {
    const convert_out *c = ctx;
    return andrea_model_save_as(tmp, c->format, c->m, c->tok, c->dtype, c->names);
}

int cmd_convert(int argc, char **argv) {
    const char *to = NULL, *type = "f32", *tok_spec = NULL, *names = NULL;
    arg_spec specs[] = {
        {"to", 0, ARG_STR, &to, "output format: safetensors | gguf | llmc | andrea (from OUT's extension)", 0},
        {"type", 0, ARG_STR, &type, "GGUF tensor type: f32 | f16 | q8_0 (f32)", 0},
        {"tokenizer", 0, ARG_STR, &tok_spec,
         "tokenizer to use instead of the one IN carries: byte | gpt2[:DIR] | FILE.tok", 0},
        {"names", 0, ARG_STR, &names, "safetensors tensor names: hf | andrea (hf for GPT-2-style models)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    int r = args_parse("convert", argc, argv, specs, n_specs, pos, 2, &n_pos);
    if (r == 1) {
        args_usage("convert", "IN OUT [--to FORMAT] [--type f32|f16|q8_0] [--tokenizer SPEC]\n"
                   "  formats: andrea checkpoint, .safetensors, .gguf (llama.cpp), llm.c (--to llmc);\n"
                   "  IN's format is read from its first bytes, OUT's from --to or its extension",
                   specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (n_pos != 2) {
        fprintf(stderr, "andrea convert: need IN and OUT (see andrea convert --help)\n");
        return 2;
    }
    int format = to ? ANDREA_FORMAT_UNKNOWN : andrea_format_from_extension(pos[1]), dtype, nm = ANDREA_NAMES_AUTO;
    if (to && andrea_format_parse(to, &format)) {
        fprintf(stderr, "andrea convert: --to: %s\n", andrea_error());
        return 2;
    }
    if (format == ANDREA_FORMAT_UNKNOWN) {
        fprintf(stderr, "andrea convert: cannot tell OUT's format from '%s' (.bin is llm.c's and "
                        "andrea's); give --to safetensors|gguf|llmc|andrea\n", pos[1]);
        return 2;
    }
    if (andrea_dtype_parse(type, &dtype)) {
        fprintf(stderr, "andrea convert: --type: %s\n", andrea_error());
        return 2;
    }
    if (names && strcmp(names, "hf") != 0 && strcmp(names, "andrea") != 0) {
        fprintf(stderr, "andrea convert: --names expects hf or andrea, got '%s'\n", names);
        return 2;
    }
    if (names) nm = strcmp(names, "hf") == 0 ? ANDREA_NAMES_HF : ANDREA_NAMES_ANDREA;
    andrea_tokenizer *tok = NULL;
    andrea_model *m = cli_model_open(pos[0], tok_spec, &tok);
    if (!m) {
        fprintf(stderr, "andrea convert: %s\n", andrea_error());
        return 1;
    }
    const andrea_config *c = andrea_model_config(m);
    printf("andrea convert: %s (%s; L %d, NH %d, C %d, T %d, V %d, %s, %s, bias %d, tied %d; "
           "tokenizer %s) -> %s (%s%s%s)\n", pos[0], andrea_format_name(andrea_format_sniff(pos[0])),
           c->n_layer, c->n_head, c->d_model, c->ctx, c->vocab, andrea_norm_name(c->norm),
           andrea_act_name(c->act), c->bias, c->tied,
           andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), pos[1], andrea_format_name(format),
           format == ANDREA_FORMAT_GGUF ? " " : "", format == ANDREA_FORMAT_GGUF ? type : "");
    convert_out co = {format, dtype, nm, m, tok};
    int rc = andrea_atomic_write_with(pos[1], write_model, &co);
    if (rc) fprintf(stderr, "andrea convert: %s\n", andrea_error());
    else if (format == ANDREA_FORMAT_SAFETENSORS)
        printf("andrea convert: wrote %s, and tokenizer.tok%s beside it\n", pos[1],
               andrea_tokenizer_kind(tok) == ANDREA_TOK_CHAR || andrea_tokenizer_kind(tok) == ANDREA_TOK_HARRIS
                   ? "" : ", vocab.json, merges.txt");
    else printf("andrea convert: wrote %s\n", pos[1]);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc ? 1 : 0;
}
