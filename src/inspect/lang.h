/* lang.h - the texts of explain, the PNG labels and the HTML page, one table per
 * language (lang_en.c, lang_id.c). Each entry is a key and its text; a text with printf
 * conversions has the same conversions, in the same order, in every language
 * (tests/test_lang.c). Adding a language: copy lang_en.c, translate the texts, add the
 * table to LANGS[] in lang.c. */
#ifndef ANDREA_INSPECT_LANG_H
#define ANDREA_INSPECT_LANG_H

typedef struct {
    const char *key, *text;
} andrea_lang_entry;

typedef struct {
    const char *code;                 /* "en", "id": what --lang takes */
    const char *name;                 /* in its own language */
    const andrea_lang_entry *entries; /* ended by {NULL, NULL} */
} andrea_lang_table;

extern const andrea_lang_table andrea_lang_en, andrea_lang_id;

/* The table of code (NULL or "" = English), or NULL if there is none. */
const andrea_lang_table *andrea_lang_find(const char *code);

#endif
