/* cmd_convert.c - `andrea convert IN OUT`: a model from one file format to another
 * (andrea checkpoint, safetensors, GGUF, llm.c, ANDREA's flat checkpoint), through the
 * library's readers and writers (src/formats). Between ANDREA's flat file and andrea's
 * checkpoint the AdamW moments and the step go along, so training continues either side. */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "commands.h"
#include "model_flags.h"
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

/* The harris_segments.json ANDREA keeps beside its flat file, when tok is Harris. */
static void write_segments(const char *out, const andrea_tokenizer *tok) {
    if (andrea_tokenizer_kind(tok) != ANDREA_TOK_HARRIS) {
        printf("andrea convert: note: the tokenizer is %s, not Harris: no harris_segments.json "
               "written (ANDREA's engine needs one)\n",
               andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)));
        return;
    }
    char path[4096];
    const char *slash = strrchr(out, '/');
    snprintf(path, sizeof path, "%.*sharris_segments.json", slash ? (int)(slash - out + 1) : 0, out);
    if (andrea_tokenizer_harris_export(tok, path))
        fprintf(stderr, "andrea convert: %s\n", andrea_error());
    else printf("andrea convert: wrote %s\n", path);
}

static void print_flat(const char *verb, const char *path, const andrea_flat_info *info) {
    printf("andrea convert: %s %s: ANDREA flat checkpoint, step %d, %lld parameters, %s",
           verb, path, info->step, (long long)info->n_params,
           info->has_moments ? "weights + AdamW m, v" : "weights only");
    if (info->max_gain_dev > 0)
        printf("; norm gains folded into the matrices they feed (largest |gain - 1| %.4g)",
               (double)info->max_gain_dev);
    printf("\n");
}

/* IN is ANDREA's flat file, OUT an andrea checkpoint: weights, moments and step. */
static int flat_to_ckpt(const char *in, const char *out, const char *tok_spec, const char *data,
                        andrea_config *cfg) {
    char spec[4096];
    andrea_flat_info info;
    if (cli_flat_resolve(in, tok_spec, cfg, spec, sizeof spec) ||
        andrea_flat_to_checkpoint(in, out, cfg, spec, data, &info)) {
        fprintf(stderr, "andrea convert: %s\n", andrea_error());
        return 1;
    }
    print_flat("read", in, &info);
    printf("andrea convert: wrote %s (L %d, NH %d, C %d, T %d, V %d; tokenizer %s); continue "
           "with: andrea train --resume %s%s\n", out, cfg->n_layer, cfg->n_head, cfg->d_model,
           cfg->ctx, cfg->vocab, spec, out, data ? "" : " --data FILE");
    return 0;
}

/* OUT is ANDREA's flat file: from an andrea checkpoint with its moments and step, from
 * other formats the weights (moments zero, step 0). */
static int to_flat(const char *in, const char *out, const char *tok_spec) {
    andrea_tokenizer *tok = NULL;
    andrea_model *m = cli_model_open(in, tok_spec, &tok);
    andrea_flat_info info;
    int rc = !m;
    if (m && andrea_format_sniff(in) == ANDREA_FORMAT_ANDREA) rc = andrea_checkpoint_to_flat(in, out, &info);
    else if (m) rc = andrea_flat_save(out, m, NULL, NULL, 0, &info);
    if (rc) fprintf(stderr, "andrea convert: %s\n", andrea_error());
    else {
        print_flat("wrote", out, &info);
        write_segments(out, tok);
    }
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc ? 1 : 0;
}

int cmd_convert(int argc, char **argv) {
    const char *to = NULL, *type = "f32", *tok_spec = NULL, *names = NULL, *data = NULL;
    model_flags mf;
    memset(&mf, 0, sizeof mf);
    arg_spec specs[] = {
        {"to", 0, ARG_STR, &to, "output format: safetensors | gguf | llmc | andrea | flat "
         "(ANDREA's own checkpoint) (from OUT's extension)", 0},
        {"data", 0, ARG_STR, &data, "flat IN -> andrea OUT: the data the resumed run reads "
         "(its batch position is recorded)", 0},
        MODEL_FLAG_SPECS(mf),
        {"type", 0, ARG_STR, &type, "GGUF tensor type: f32 | f16 | q8_0 | q4_0 (f32)", 0},
        {"tokenizer", 0, ARG_STR, &tok_spec,
         "tokenizer to use instead of the one IN carries: byte | gpt2[:DIR] | FILE.tok", 0},
        {"names", 0, ARG_STR, &names, "safetensors tensor names: hf | andrea (hf for GPT-2-style models)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    int r = args_parse("convert", argc, argv, specs, n_specs, pos, 2, &n_pos);
    if (r == 1) {
        args_usage("convert", "IN OUT [--to FORMAT] [--type f32|f16|q8_0|q4_0] [--tokenizer SPEC]\n"
                   "  formats: andrea checkpoint, .safetensors, .gguf (llama.cpp), llm.c (--to llmc),\n"
                   "  ANDREA's flat checkpoint (--to flat; read with the harris_segments.json beside\n"
                   "  it, its shape from its size, or --preset and the shape flags);\n"
                   "  IN's format is read from its first bytes, OUT's from --to or its extension",
                   specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (n_pos != 2) {
        fprintf(stderr, "andrea convert: need IN and OUT (see andrea convert --help)\n");
        return 2;
    }
    if (to && (strcmp(to, "flat") == 0 || strcmp(to, "andrea-flat") == 0))
        return to_flat(pos[0], pos[1], tok_spec);
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
    if (format == ANDREA_FORMAT_ANDREA && cli_is_flat(pos[0])) {
        andrea_config cfg;
        memset(&cfg, 0, sizeof cfg);
        if (model_flags_any(specs, n_specs) &&
            model_flags_apply("convert", &mf, specs, n_specs, "andrea-12m", &cfg))
            return 2;
        return flat_to_ckpt(pos[0], pos[1], tok_spec, data, &cfg);
    }
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
