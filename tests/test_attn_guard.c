/*
 * test_attn_guard.c - the size guard of attention exports at andrea-120m's shape with
 * T = 1024 (issue 15), whose full export would be gigabytes. The guard works from the
 * config alone, before a model is run (the CLI calls it after loading, before inspecting),
 * so this test takes the preset's config and never renders a byte: the estimates against
 * the arithmetic, the guard narrowing to one layer and then one head, refusing what one
 * head cannot fit, and saying so. (A random-init model of the config adds nothing the guard
 * reads and took 12 s to allocate and initialise here, so it is not made.)
 */
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "test_util.h"

int main(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("andrea-120m", &cfg) == 0);
    const andrea_config *c = &cfg;
    CHECK(c->n_layer == 12 && c->n_head == 12 && c->d_model == 768 && c->ctx == 1024);
    const int T = 1024;
    const int64_t TT = (int64_t)T * T;

    /* estimates: the seed lesson's 1,048,576 scores per head; 144 heads */
    andrea_attn_size s;
    andrea_attention_size(c, T, 12, 12, ANDREA_VIEWS_ALL, &s);
    CHECK(TT == 1048576);
    CHECK(s.map_bytes == 4 * 144 * TT * 5); /* the forward's probabilities + 4 views */
    CHECK(s.json_bytes > 144 * 4 * TT * 10 && s.json_bytes < 144 * 4 * TT * 17); /* ~9.7 GB */
    const int64_t page = 2 * TT + 3 * T * 64; /* numbers per head: raw, softmax, q, k, v */
    CHECK(s.html_bytes > 144 * page * 10 && s.html_bytes < 144 * page * 17); /* ~5.3 GB */

    /* the page of every head: narrowed to layer 0, head 0 (one head's page: ~37 MB) */
    andrea_attn_guard g = {0};
    g.layer = g.head = -1;
    g.html = 1;
    CHECK(andrea_attention_guard(c, T, &g) == 0);
    CHECK(g.limited == 1 && g.layer == 0 && g.head == 0);
    CHECK(g.asked.html_bytes == s.html_bytes);
    CHECK(g.chosen.html_bytes <= 64000000 && g.chosen.html_bytes > page * 10);
    CHECK(strstr(g.note, "the 12 x 12 heads at T = 1024 would be") != NULL);
    CHECK(strstr(g.note, "showing layer 0 head 0 only") != NULL);
    printf("guard: %s\n", g.note);

    /* a higher limit keeps a whole layer: 12 heads' pages fit in 500 MB */
    g.layer = g.head = -1;
    g.limit = 500000000;
    CHECK(andrea_attention_guard(c, T, &g) == 0);
    CHECK(g.limited == 1 && g.layer == 0 && g.head == -1);
    CHECK(strstr(g.note, "showing layer 0 only") != NULL);

    /* the JSON of all four views of one head is ~67 MB: refused at 64 MB, with the sizes */
    andrea_attn_guard j = {0};
    j.layer = 3;
    j.head = 5;
    j.views = ANDREA_VIEWS_ALL;
    CHECK(andrea_attention_guard(c, T, &j) == -1);
    CHECK(strstr(andrea_error(), "one head at T = 1024 is") != NULL);
    CHECK(strstr(andrea_error(), "over the limit of 64 MB") != NULL);
    CHECK(j.layer == 3 && j.head == 5); /* left as asked */
    printf("guard: %s\n", andrea_error());

    /* what was asked explicitly and fits is left alone */
    andrea_attn_guard k = {0};
    k.layer = 3;
    k.head = 5;
    k.views = ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX);
    CHECK(andrea_attention_guard(c, T, &k) == 0 && !k.limited && k.note[0] == '\0');

    /* a tiny model is never limited */
    andrea_config tiny;
    CHECK(andrea_config_preset("tiny", &tiny) == 0);
    andrea_attn_guard t = {0};
    t.layer = t.head = -1;
    t.html = 1;
    t.views = ANDREA_VIEWS_ALL;
    CHECK(andrea_attention_guard(&tiny, 32, &t) == 0 && !t.limited && t.layer == -1);
    return tu_finish("test_attn_guard");
}
