/* schema.h - structured output as GBNF grammars (schema.c): JSON mode, JSON Schema, and
 * the function calls of `tools`. */
#ifndef ANDREA_SERVER_SCHEMA_H
#define ANDREA_SERVER_SCHEMA_H

#include <jansson.h>

#include "andrea_writer.h"
#include "request.h"

/* The GBNF of any JSON object ({"type":"json_object"}). */
void serve_gbnf_json_object(andrea_writer *w);
/* The GBNF of the values of a JSON Schema (root: the schema; its $defs by $ref). 0, or -1
 * with e naming a keyword the grammar cannot enforce (param: the request field). */
int serve_gbnf_schema(json_t *schema, andrea_writer *w, const char *param, serve_error *e);
/* The GBNF of a call of one of tools ({"name": ..., "arguments": {...}}): only the tool
 * `only` when not NULL; with or_text also any text that does not start with "{" (the model
 * decides: tool_choice "auto"). 0, or -1 with e. */
int serve_gbnf_tools(json_t *tools, const char *only, int or_text, andrea_writer *w, serve_error *e);

#endif
