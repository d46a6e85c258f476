/*
 * curriculum.c - the curriculum's moves: which source is active (drawn from the bandit's
 * weights every 7 to 42 steps), what a step's loss teaches the bandit, and reading a
 * source's training documents in a shuffled order, epoch after epoch.
 */
#include "train/curriculum/curriculum.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

double andrea_cur_coverage(const andrea_cur_source *s) {
    if (s->epochs > 0) return 1.0;
    return (double)(s->pos + (s->off > 0)) / (double)s->d.n_train;
}

void andrea_cur_shuffle(andrea_curriculum *c, int k) {
    andrea_cur_source *s = &c->s[k];
    uint64_t key[3] = {c->seed, (uint64_t)k, s->epochs};
    andrea_rng r;
    andrea_rng_seed(&r, andrea_hash(ANDREA_HASH_INIT, key, sizeof key));
    int64_t n = s->d.n_train;
    for (int64_t i = 0; i < n; i++) s->perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)(andrea_rng_u64(&r) % (uint64_t)(i + 1));
        int64_t t = s->perm[i];
        s->perm[i] = s->perm[j];
        s->perm[j] = t;
    }
}

/* Warmup: only the listed sources are eligible for the first warmup_steps steps. */
static int in_warmup(const andrea_curriculum *c) {
    if (c->man.cur.warmup_steps <= 0 || c->step >= c->man.cur.warmup_steps) return 0;
    for (int k = 0; k < c->man.n; k++)
        if (c->man.src[k].warmup) return 1;
    return 0;
}

void andrea_cur_draw(andrea_curriculum *c) {
    const andrea_bandit_settings *set = &c->man.cur;
    int n = c->man.n, warm = in_warmup(c);
    andrea_bandit_arm arms[ANDREA_MANIFEST_MAX_SOURCES] = {{0}};
    double w[ANDREA_MANIFEST_MAX_SOURCES] = {0}, score[ANDREA_MANIFEST_MAX_SOURCES] = {0};
    for (int k = 0; k < n; k++) {
        const andrea_cur_source *s = &c->s[k];
        const andrea_manifest_source *ms = &c->man.src[k];
        arms[k] = (andrea_bandit_arm){s->pulls ? s->reward_sum / (double)s->pulls : 0.0, s->pulls,
                                      andrea_cur_coverage(s), s->epochs, ms->floor, ms->cap,
                                      ms->weight, !warm || ms->warmup};
    }
    andrea_bandit_weights(set, arms, n, w, score);
    for (int k = 0; k < n; k++) {
        c->s[k].weight = w[k];
        c->s[k].score = score[k];
    }
    c->active = andrea_bandit_draw(w, n, (double)andrea_rng_uniform(&c->rng));
    c->steps_left = andrea_bandit_dice_interval(set, andrea_rng_u64(&c->rng));
    if (warm && c->step + c->steps_left > set->warmup_steps) /* redraw when warmup ends */
        c->steps_left = (int)(set->warmup_steps - c->step);
    c->log_draw = 1;
}

void andrea_cur_observe(andrea_curriculum *c, float loss) {
    andrea_cur_source *s = &c->s[c->active];
    double l = (double)loss;
    if (s->pulls == 0) s->ema = l; /* [D] the first loss starts the EMA: reward 0 */
    double reward = andrea_bandit_reward(s->ema, l, c->man.cur.reward_scale);
    s->ema = andrea_bandit_ema(s->ema, l, c->man.cur.ema_alpha);
    s->pulls++;
    s->reward_sum += reward;
    s->last_reward = reward;
    s->last_loss = loss;
    c->step++;
    c->new_step = 1;
    if (--c->steps_left <= 0) andrea_cur_draw(c);
}

/* The token at the position of s, then the position one further. */
static int32_t take(andrea_curriculum *c, int k) {
    andrea_cur_source *s = &c->s[k];
    int64_t doc = s->perm[s->pos];
    int64_t a = s->d.start[doc], len = s->d.start[doc + 1] - a;
    int32_t t = (int64_t)s->off < len ? s->d.tok[a + (int64_t)s->off] : c->bos;
    if ((int64_t)++s->off > len) {
        s->off = 0;
        if (++s->pos == (uint64_t)s->d.n_train) {
            s->pos = 0;
            s->epochs++;
            andrea_cur_shuffle(c, k);
        }
    }
    return t;
}

void andrea_cur_read_row(andrea_curriculum *c, int T, int32_t *row) {
    int k = c->active;
    if (c->new_step) {
        c->step_doc = c->s[k].perm[c->s[k].pos];
        c->new_step = 0;
    }
    for (int i = 0; i <= T; i++) row[i] = take(c, k);
}
