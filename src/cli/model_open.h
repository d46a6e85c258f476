/* model_open.h - open a model in any format andrea reads (andrea checkpoint,
 * safetensors, GGUF, llm.c), with a tokenizer: the one that travels with it, else
 * the one named by tok_spec, else a guess from the vocabulary size (257: byte,
 * 50257: GPT-2's files). */
#ifndef ANDREA_CLI_MODEL_OPEN_H
#define ANDREA_CLI_MODEL_OPEN_H

#include "andrea.h"
#include "andrea_tokenizer.h"

/* tok_spec may be NULL. Returns NULL with andrea_error() set. */
andrea_model *cli_model_open(const char *path, const char *tok_spec, andrea_tokenizer **tok);

#endif
