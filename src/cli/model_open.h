/* model_open.h - open a model in any format andrea reads (andrea checkpoint,
 * safetensors, GGUF, llm.c, ANDREA's flat checkpoint with the harris_segments.json
 * beside it), with a tokenizer: the one that travels with it, else
 * the one named by tok_spec, else a guess from the vocabulary size (257: byte,
 * 50257: GPT-2's files). */
#ifndef ANDREA_CLI_MODEL_OPEN_H
#define ANDREA_CLI_MODEL_OPEN_H

#include "andrea.h"
#include "andrea_tokenizer.h"

/* tok_spec may be NULL. A model whose forward on a probe batch gives non-finite logits is
 * refused (andrea_model_probe). Returns NULL with andrea_error() set. */
andrea_model *cli_model_open(const char *path, const char *tok_spec, andrea_tokenizer **tok);

/* Prints why cli_model_open(path) failed, as "andrea CMD: ..." in lang (attention and
 * explain's --lang): a missing file in that language; a file that is no usable model in
 * that language, with the reader's own detail. English: the reader's message as it is. */
void cli_model_error(const char *cmd, const char *lang, const char *path);

/* Is path ANDREA's flat checkpoint (no other format's magic; its size fits its header)? */
int cli_is_flat(const char *path);
/* For a flat file: the tokenizer spec (tok_spec, else harris_segments.json beside path)
 * into spec, and the shape into cfg unless cfg->n_layer > 0 (given by the caller):
 * ANDREA's preset with the tokenizer's vocabulary and the file's parameter count. */
int cli_flat_resolve(const char *path, const char *tok_spec, andrea_config *cfg, char *spec,
                     size_t n);

#endif
