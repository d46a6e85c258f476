/*
 * test_curriculum_state.c - the curriculum's moves on a two-source manifest, against
 * values computed by hand: the warmup allows only its source and cuts the dice interval
 * to end with it; the pulled source's EMA, rewards and mean reward after four losses;
 * the draw at the end of the warmup goes to the source never pulled; coverage counts the
 * documents read; the saved position restores to the same bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_tokenizer.h"
#include "test_util.h"
#include "train/data/batch_source.h"
#include "train/curriculum/curriculum.h"

static char g_dir[1024];

static const char *put(const char *name, const char *text) {
    const char *p = tu_path(g_dir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

int main(void) {
    if (tu_tmp_dir(g_dir, sizeof g_dir)) return 1;
#ifndef ANDREA_HAVE_JANSSON
    printf("skip: manifests need jansson\n");
    return 77;
#endif
    /* a: 4 documents of 40 bytes (1 held out), b: 2 documents */
    char a[400] = "", b[200] = "";
    for (int i = 0; i < 4; i++) strcat(a, "the quick brown fox jumps over the dog.\n\n");
    for (int i = 0; i < 2; i++) strcat(b, "lorem ipsum dolor sit amet, consectetur\n\n");
    put("a.txt", a);
    put("b.txt", b);
    const char *m = put("m.json",
        "{\"val_fraction\": 0.25, \"curriculum\": {\"warmup_steps\": 5, \"warmup_sources\": [\"a\"]},"
        " \"sources\": [{\"name\": \"a\", \"path\": \"a.txt\", \"split\": \"paragraph\"},"
        "              {\"name\": \"b\", \"path\": \"b.txt\", \"split\": \"paragraph\"}]}");
    andrea_tokenizer *tok = NULL;
    andrea_batch_source *s = andrea_sources_open(m, NULL, &tok, 0.1f, 8, 42);
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "%s\n", andrea_error());
        return 1;
    }
    andrea_curriculum *c = s->state;
    CHECK(c->s[0].d.n_docs == 4 && c->s[0].d.n_train == 3 && c->s[1].d.n_train == 1);
    int32_t x[2 * 8], y[2 * 8];
    CHECK(s->next(s, 2, 8, x, y) == 0);      /* the first draw: warmup, only a */
    CHECK(c->active == 0 && c->steps_left == 5); /* 7..42 cut to the warmup's 5 steps */
    CHECK(c->s[0].weight == 1.0 && c->s[1].weight == 0.0);
    /* 18 tokens read of a's first document (39 bytes + BOS): coverage 1 of 3 */
    CHECK_CLOSE(andrea_cur_coverage(&c->s[0]), 1.0 / 3.0, 1e-12, 0);
    /* rows of T + 1 = 9 consecutive tokens: row 1 starts at the 10th byte */
    CHECK(x[0] == 't' && y[0] == 'h' && y[7] == a[8] && x[8] == a[9]);
    float losses[4] = {3.0f, 2.5f, 2.6f, 2.0f};
    for (int i = 0; i < 4; i++) s->observe(s, i + 1, losses[i], NULL);
    /* EMA 3.0 (first loss), then 2.95, 2.915, 2.8235; rewards 0, 500, 350, 915 */
    CHECK_CLOSE(c->s[0].ema, 2.8235, 1e-6, 0);
    CHECK_CLOSE(c->s[0].last_reward, 915.0, 1e-3, 0);
    CHECK_CLOSE(c->s[0].reward_sum / (double)c->s[0].pulls, 441.25, 1e-3, 0);
    CHECK(c->s[0].pulls == 4 && c->steps_left == 1 && c->active == 0);
    s->observe(s, 5, 2.9f, NULL); /* step 5: warmup over, redraw: b never pulled goes first */
    CHECK(c->active == 1 && c->s[1].weight == 1.0 && isinf(c->s[1].score));
    CHECK(c->steps_left >= 7 && c->steps_left <= 42);
    /* the position round-trips to the same bytes */
    uint8_t pos[4096], pos2[4096];
    size_t n = s->save(s, pos, sizeof pos);
    CHECK(n == 64 + 2 * 56);
    andrea_batch_source *r = andrea_sources_open(m, NULL, &tok, 0.1f, 8, 42);
    CHECK(r && r->restore(r, pos, n, "test") == 0);
    CHECK(r && r->save(r, pos2, sizeof pos2) == n && memcmp(pos, pos2, n) == 0);
    andrea_curriculum *rc = r ? r->state : NULL;
    CHECK(rc && rc->active == 1 && rc->s[0].pulls == 5 && rc->s[0].ema == c->s[0].ema);
    if (r) r->free(r);
    s->free(s);
    andrea_tokenizer_free(tok);
    return tu_finish("test_curriculum_state");
}
