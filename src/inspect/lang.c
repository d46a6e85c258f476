/* lang.c - looking up a text by language and key (lang.h). A key missing from a
 * language falls back to English, so a half-done translation still runs; a key missing
 * from English comes back as the key itself, which a test catches. */
#include "inspect/lang.h"

#include <stdio.h>
#include <string.h>

#include "andrea_inspect.h"
#include "util/error.h"

static const andrea_lang_table *const LANGS[] = {&andrea_lang_en, &andrea_lang_id};
enum { N_LANGS = (int)(sizeof LANGS / sizeof LANGS[0]) };

const andrea_lang_table *andrea_lang_find(const char *code) {
    if (!code || !*code) return &andrea_lang_en;
    for (int i = 0; i < N_LANGS; i++)
        if (strcmp(LANGS[i]->code, code) == 0) return LANGS[i];
    return NULL;
}

int andrea_lang_check(const char *code) {
    if (andrea_lang_find(code)) return 0;
    return andrea_set_error("unknown language '%s' (known: en = English, id = Bahasa Indonesia)",
                            code);
}

static const char *lookup(const andrea_lang_table *t, const char *key) {
    for (const andrea_lang_entry *e = t->entries; e->key; e++)
        if (strcmp(e->key, key) == 0) return e->text;
    return NULL;
}

const char *andrea_lang_text(const char *code, const char *key) {
    const andrea_lang_table *t = andrea_lang_find(code);
    const char *s = t ? lookup(t, key) : NULL;
    if (!s) s = lookup(&andrea_lang_en, key);
    return s ? s : key;
}

const char *andrea_lang_key(const char *code, int k) {
    const andrea_lang_table *t = andrea_lang_find(code);
    if (!t || k < 0) return NULL;
    for (int i = 0; t->entries[i].key; i++)
        if (i == k) return t->entries[i].key;
    return NULL;
}

char *andrea_lang_group(const char *lang, long long v, char *buf, size_t n) {
    const char *sep = andrea_lang_text(lang, "num.group");
    char d[24];
    int len = snprintf(d, sizeof d, "%llu", v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
    size_t k = 0, sl = strlen(sep);
    if (v < 0 && k + 1 < n) buf[k++] = '-';
    for (int i = 0; i < len && k + 1 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            for (size_t s = 0; s < sl && k + 1 < n; s++) buf[k++] = sep[s];
        buf[k++] = d[i];
    }
    if (n) buf[k] = '\0';
    return buf;
}
