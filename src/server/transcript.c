/*
 * transcript.c - OpenAI chat messages in ANDREA's turn format, as `andrea chat` writes it
 * (docs/server.md):
 *   system, developer   its text on a line of its own
 *   user                "> " text
 *   assistant           "< " text (tool_calls as the call JSON the model writes)
 *   tool                "> tool " text (a turn of the user's side)
 * then "< " for the reply. A message is one line: newlines inside it become spaces. Content
 * is a string, null, or text parts; a name prefixes its text ("NAME: ").
 */
#include "transcript.h"

#include <stdlib.h>
#include <string.h>

#define BAD(e, param, ...) serve_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)
#define OOM(e) serve_fail(e, 500, "server_error", NULL, NULL, "out of memory")

/* Appends text with newlines as spaces (one turn, one line). */
static int append_line(andrea_bytes *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
        if (andrea_bytes_append(t, &ch, 1)) return -1;
    }
    return 0;
}

/* A message's content: a string, null (empty), or an array of text parts
 * ([{"type":"text","text":...}], joined by spaces); other parts (images, audio, files)
 * are refused, since the model reads text only. */
static int append_content(andrea_bytes *t, json_t *content, size_t i, serve_error *e) {
    if (!content || json_is_null(content)) return 0;
    if (json_is_string(content))
        return append_line(t, json_string_value(content), json_string_length(content)) ? OOM(e) : 0;
    if (!json_is_array(content))
        return BAD(e, "messages", "messages[%zu].content must be a string, null or an array of text parts", i);
    size_t k;
    json_t *part;
    json_array_foreach(content, k, part) {
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0 || !json_is_string(text))
            return BAD(e, "messages", "messages[%zu].content[%zu]: only {\"type\":\"text\",\"text\":...} "
                       "parts are supported (the model reads text only)", i, k);
        if ((k && andrea_bytes_append(t, " ", 1)) ||
            append_line(t, json_string_value(text), json_string_length(text)))
            return OOM(e);
    }
    return 0;
}

/* An assistant message's tool_calls, written as the JSON the model produces for one
 * ({"name":...,"arguments":...}, docs/server.md), so a conversation reads as it ran. */
static int append_tool_calls(andrea_bytes *t, json_t *calls, size_t i, serve_error *e) {
    if (!calls || json_is_null(calls)) return 0;
    if (!json_is_array(calls)) return BAD(e, "messages", "messages[%zu].tool_calls must be an array", i);
    size_t k;
    json_t *call;
    json_array_foreach(calls, k, call) {
        json_t *fn = json_object_get(call, "function");
        json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (!json_is_string(name) || !json_is_string(args))
            return BAD(e, "messages", "messages[%zu].tool_calls[%zu] needs function.name and "
                       "function.arguments (strings)", i, k);
        json_t *o = json_pack("{s:O}", "name", name);
        json_error_t je;
        json_t *a = json_loads(json_string_value(args), JSON_DECODE_ANY, &je);
        if (o) json_object_set_new(o, "arguments", a ? a : json_string(""));
        char *js = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        int rc = !js || (k && andrea_bytes_append(t, " ", 1)) || append_line(t, js, strlen(js));
        free(js);
        if (rc) return OOM(e);
    }
    return 0;
}

int serve_chat_transcript(json_t *msgs, andrea_bytes *t, serve_error *e) {
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return BAD(e, "messages", "'messages' must be a non-empty array");
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        json_t *role = json_object_get(msg, "role"), *name = json_object_get(msg, "name");
        if (!json_is_object(msg) || !json_is_string(role))
            return BAD(e, "messages", "messages[%zu] needs a string 'role'", i);
        if (name && !json_is_null(name) && !json_is_string(name))
            return BAD(e, "messages", "messages[%zu].name must be a string", i);
        const char *r = json_string_value(role), *prefix;
        if (strcmp(r, "system") == 0 || strcmp(r, "developer") == 0) prefix = "";
        else if (strcmp(r, "user") == 0) prefix = "> ";
        else if (strcmp(r, "assistant") == 0) prefix = "< ";
        else if (strcmp(r, "tool") == 0) prefix = "> tool ";
        else return BAD(e, "messages", "messages[%zu].role '%.40s' is not system, developer, user, "
                        "assistant or tool", i, r);
        json_t *content = json_object_get(msg, "content");
        if (json_is_null(content) && strcmp(r, "assistant") != 0 && strcmp(r, "tool") != 0)
            return BAD(e, "messages", "messages[%zu].content must not be null for role '%s'", i, r);
        if (andrea_bytes_append(t, prefix, strlen(prefix))) return OOM(e);
        if (json_is_string(name) &&
            (append_line(t, json_string_value(name), json_string_length(name)) ||
             andrea_bytes_append(t, ": ", 2)))
            return OOM(e);
        if (append_content(t, content, i, e) ||
            append_tool_calls(t, json_object_get(msg, "tool_calls"), i, e))
            return -1;
        if (andrea_bytes_append(t, "\n", 1)) return OOM(e);
    }
    if (andrea_bytes_append(t, "< ", 2)) return OOM(e);
    return 0;
}

