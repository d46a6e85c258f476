/*
 * curriculum_state.c - the curriculum in a checkpoint (the batch source's position):
 *   "sources\0", u32 version (1), u32 n, u64 data hash, u64 policy hash,
 *   u64 rng[2], i32 active, i32 steps_left, i64 step,
 *   per source: f64 ema, u64 pulls, f64 reward_sum, f64 last_reward, f32 last_loss,
 *               u32 epochs, u64 pos, u64 off
 * little-endian (64 + 56 n bytes). The document order is not stored: it is a function of
 * the seed, the source and its epoch. The policy may differ at a resume (a new manifest
 * with other floors or caps: the polish pivot); the data may not.
 */
#include <string.h>

#include "train/curriculum/curriculum.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/le.h"

#define HEAD 64
#define PER 56

static void put_f64(uint8_t *p, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    put_u64(p, u);
}

static double get_f64(const uint8_t *p) {
    uint64_t u = get_u64(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

uint64_t andrea_cur_data_hash(const andrea_curriculum *c) {
    uint64_t h = ANDREA_HASH_INIT;
    for (int k = 0; k < c->man.n; k++) {
        char name[ANDREA_MANIFEST_NAME] = {0};
        strcpy(name, c->man.src[k].name);
        h = andrea_hash(h, name, sizeof name);
        h = andrea_hash(h, &c->s[k].d.checksum, 8);
    }
    return h;
}

size_t andrea_cur_save(const andrea_curriculum *c, uint8_t *out, size_t cap) {
    int n = c->man.n;
    size_t len = HEAD + (size_t)PER * (size_t)n;
    if (cap < len) return 0;
    memset(out, 0, HEAD);
    memcpy(out, "sources", 7);
    put_u32(out + 8, 1);
    put_u32(out + 12, (uint32_t)n);
    put_u64(out + 16, andrea_cur_data_hash(c));
    put_u64(out + 24, andrea_manifest_policy_hash(&c->man));
    put_u64(out + 32, c->rng.s[0]);
    put_u64(out + 40, c->rng.s[1]);
    put_u32(out + 48, (uint32_t)c->active);
    put_u32(out + 52, (uint32_t)c->steps_left);
    put_u64(out + 56, (uint64_t)c->step);
    for (int k = 0; k < n; k++) {
        const andrea_cur_source *s = &c->s[k];
        uint8_t *p = out + HEAD + (size_t)PER * (size_t)k;
        put_f64(p, s->ema);
        put_u64(p + 8, s->pulls);
        put_f64(p + 16, s->reward_sum);
        put_f64(p + 24, s->last_reward);
        put_f32(p + 32, s->last_loss);
        put_u32(p + 36, s->epochs);
        put_u64(p + 40, s->pos);
        put_u64(p + 48, s->off);
    }
    return len;
}

int andrea_cur_restore(andrea_curriculum *c, const uint8_t *pos, size_t n, const char *from) {
    int ns = c->man.n;
    if (n < HEAD || memcmp(pos, "sources\0", 8) != 0)
        return andrea_set_error("%s: its batch position (%zu bytes, kind '%.8s') is not a "
                                "curriculum position (was it trained on one file, not a "
                                "manifest?)", from, n, n >= 8 ? (const char *)pos : "");
    if (get_u32(pos + 8) != 1 || get_u32(pos + 12) != (uint32_t)ns ||
        n != HEAD + (size_t)PER * (size_t)ns || get_u64(pos + 16) != andrea_cur_data_hash(c))
        return andrea_set_error("manifest '%s' does not have the sources %s was trained on "
                                "(names, documents or tokens differ; %u sources saved)",
                                c->man.path, from, get_u32(pos + 12));
    c->saved_policy = get_u64(pos + 24);
    c->rng.s[0] = get_u64(pos + 32);
    c->rng.s[1] = get_u64(pos + 40);
    c->active = (int32_t)get_u32(pos + 48);
    c->steps_left = (int32_t)get_u32(pos + 52);
    c->step = (int64_t)get_u64(pos + 56);
    for (int k = 0; k < ns; k++) {
        andrea_cur_source *s = &c->s[k];
        const uint8_t *p = pos + HEAD + (size_t)PER * (size_t)k;
        s->ema = get_f64(p);
        s->pulls = get_u64(p + 8);
        s->reward_sum = get_f64(p + 16);
        s->last_reward = get_f64(p + 24);
        s->last_loss = get_f32(p + 32);
        s->epochs = get_u32(p + 36);
        s->pos = get_u64(p + 40);
        s->off = get_u64(p + 48);
        if (s->pos >= (uint64_t)s->d.n_train)
            return andrea_set_error("%s: source '%s' position %llu is past its %lld documents",
                                    from, c->man.src[k].name, (unsigned long long)s->pos,
                                    (long long)s->d.n_train);
        andrea_cur_shuffle(c, k);
    }
    if (c->active >= ns) return andrea_set_error("%s: active source %d of %d", from, c->active, ns);
    c->new_step = 1;
    c->log_start = 1;
    if (c->saved_policy != andrea_manifest_policy_hash(&c->man)) {
        c->pivot = 1; /* the new floors and caps act now */
        andrea_cur_draw(c);
    } else if (c->active >= 0) {
        c->log_draw = 0;
    }
    return 0;
}
