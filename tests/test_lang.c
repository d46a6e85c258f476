/*
 * test_lang.c - the language tables of explain, the PNG labels and the HTML page
 * (src/inspect/lang*.c): every language has every English key and no other, each text
 * has the same printf conversions in the same order as the English one (a missing %d
 * would read a wrong argument), lookups fall back to English, and unknown languages are
 * refused with the list.
 */
#include <string.h>

#include "andrea_inspect.h"
#include "test_util.h"

/* The printf conversions of s ("%d%.4f%s" -> "dfs"; %% skipped), into out. */
static void conversions(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; *s && k + 1 < n; s++) {
        if (*s != '%') continue;
        s++;
        if (*s == '%') continue;
        while (*s && strchr("-+ #0123456789.*", *s)) s++;
        while (*s && strchr("hlLzjt", *s)) out[k++] = *s++;
        if (*s) out[k++] = *s;
        if (!*s) break;
    }
    out[k] = '\0';
}

static int count_keys(const char *lang) {
    int n = 0;
    while (andrea_lang_key(lang, n)) n++;
    return n;
}

int main(void) {
    int n_en = count_keys("en"), n_id = count_keys("id");
    CHECK(n_en > 100);
    CHECK(n_id == n_en);
    for (int k = 0; k < n_id; k++) {
        const char *key = andrea_lang_key("id", k);
        char ce[64], ci[64];
        /* the key exists in English: andrea_lang_text returns the key itself otherwise */
        const char *en = andrea_lang_text("en", key), *id = andrea_lang_text("id", key);
        if (en == key || strcmp(en, key) == 0) {
            fprintf(stderr, "key '%s' of id is not in en\n", key);
            CHECK(0);
        }
        /* the page's {0}, {1}, ... placeholders: the same set */
        for (int n = 0; n < 10; n++) {
            char ph[4] = {'{', (char)('0' + n), '}', 0};
            if (!strstr(en, ph) != !strstr(id, ph)) {
                fprintf(stderr, "key '%s': placeholder %s in one language only\n", key, ph);
                CHECK(0);
            }
        }
        conversions(en, ce, sizeof ce);
        conversions(id, ci, sizeof ci);
        if (strcmp(ce, ci) != 0) {
            fprintf(stderr, "key '%s': conversions '%s' in en, '%s' in id\n", key, ce, ci);
            CHECK(0);
        }
    }
    /* defaults and fallbacks */
    CHECK(strcmp(andrea_lang_text(NULL, "view.raw"), "raw") == 0);
    CHECK(strcmp(andrea_lang_text("", "view.raw"), "raw") == 0);
    CHECK(strcmp(andrea_lang_text("id", "view.raw"), "mentah") == 0);
    CHECK(strcmp(andrea_lang_text("id", "no.such.key"), "no.such.key") == 0);
    CHECK(andrea_lang_check(NULL) == 0 && andrea_lang_check("id") == 0);
    CHECK(andrea_lang_check("fr") == -1);
    CHECK(strstr(andrea_error(), "known: en") != NULL);
    /* the lesson's own terms are there (seed-attention.md, "The lesson's own words") */
    const char *terms[] = {"explain.step4", "Mask kausal", "explain.claim_shortcut", "jalan pintas",
                           "explain.claim_grad", "gradien hilang", "explain.claim_dist",
                           "segitiga bawah", "explain.step6", "Jumlah V Tertimbang"};
    for (int t = 0; t < 10; t += 2) {
        if (!strstr(andrea_lang_text("id", terms[t]), terms[t + 1])) {
            fprintf(stderr, "'%s' lacks the lesson's term '%s'\n", terms[t], terms[t + 1]);
            CHECK(0);
        }
    }
    printf("test_lang: %d keys in en and id, %d failures\n", n_en, tu_failures);
    return tu_failures ? 1 : 0;
}
