/*
 * test_bandit.c - each part of the curriculum's arithmetic (src/train/curriculum/bandit.c) against
 * values computed by hand: EMA and reward, UCB1 scores, the coverage bonus, the epoch
 * penalty, floors and caps with renormalisation, the UCB1/uniform/fixed weights, the
 * warmup's eligibility, the draw and the dice interval.
 */
#include <math.h>
#include <stdio.h>

#include "test_util.h"
#include "train/curriculum/bandit.h"

#define TOL 1e-12

static andrea_bandit_arm arm(double mean, uint64_t pulls, double cov, uint32_t epochs) {
    return (andrea_bandit_arm){mean, pulls, cov, epochs, 0.0, 1.0, 0.0, 1};
}

static void test_ema_reward(void) {
    CHECK_CLOSE(andrea_bandit_ema(2.0, 1.5, 0.1), 1.95, TOL, 0); /* 0.9*2 + 0.1*1.5 */
    CHECK_CLOSE(andrea_bandit_ema(3.0, 3.0, 0.1), 3.0, TOL, 0);
    CHECK_CLOSE(andrea_bandit_reward(2.0, 1.5, 1000), 500.0, 1e-9, 0); /* loss fell 0.5 */
    CHECK_CLOSE(andrea_bandit_reward(2.81, 2.8, 1000), 10.0, 1e-9, 0);
    CHECK(andrea_bandit_reward(1.5, 2.0, 1000) == 0.0); /* a rise is clipped, no penalty */
    CHECK(andrea_bandit_reward(2.0, 2.0, 1000) == 0.0);
}

static void test_ucb(void) {
    /* 100 + 50 sqrt(ln 100 / 10) = 100 + 50 * 0.678614 = 133.930702 */
    CHECK_CLOSE(andrea_bandit_ucb(100, 50, 100, 10), 133.93070212, 1e-6, 0);
    /* 20 + 2 sqrt(ln 1000 / 250) = 20 + 2 * 0.166226 = 20.332452 */
    CHECK_CLOSE(andrea_bandit_ucb(20, 2, 1000, 250), 20.33245163, 1e-6, 0);
    CHECK(isinf(andrea_bandit_ucb(0, 50, 10, 0))); /* never pulled: first */
    CHECK_CLOSE(andrea_bandit_ucb(7, 50, 1, 1), 7.0, TOL, 0); /* ln 1 = 0 */
}

static void test_bonus_penalty(void) {
    CHECK_CLOSE(andrea_bandit_coverage_bonus(0.0, 0.3, 0.5), 1.3, TOL, 0);
    CHECK_CLOSE(andrea_bandit_coverage_bonus(0.25, 0.3, 0.5), 1.15, TOL, 0);
    CHECK_CLOSE(andrea_bandit_coverage_bonus(0.1, 0.3, 0.5), 1.24, TOL, 0);
    CHECK(andrea_bandit_coverage_bonus(0.5, 0.3, 0.5) == 1.0);
    CHECK(andrea_bandit_coverage_bonus(0.9, 0.3, 0.5) == 1.0);
    CHECK(andrea_bandit_epoch_penalty(0) == 1.0); /* not yet read through */
    CHECK_CLOSE(andrea_bandit_epoch_penalty(1), 0.5, TOL, 0);
    CHECK_CLOSE(andrea_bandit_epoch_penalty(4), 0.2, TOL, 0); /* synthetic-chat: 5600/1400 */
    andrea_bandit_settings s;
    andrea_bandit_settings_default(&s);
    andrea_bandit_arm a = arm(10, 10, 0.25, 1);
    /* (10 + 33.930702) * 1.15 * 0.5 = 25.260154 */
    CHECK_CLOSE(andrea_bandit_score(&s, &a, 100), 25.26015372, 1e-6, 0);
    s.epoch_penalty = 0;
    CHECK_CLOSE(andrea_bandit_score(&s, &a, 100), 50.52030744, 1e-6, 0);
}

static void test_floors_caps(void) {
    andrea_bandit_arm a[3] = {arm(0, 1, 1, 0), arm(0, 1, 1, 0), arm(0, 1, 1, 0)};
    a[0].floor = 0.2;
    a[1].cap = 0.4;
    double w[3] = {0.1, 0.6, 0.3}; /* -> 0.2, 0.4, 0.3; sum 0.9 */
    andrea_bandit_floors_caps(a, 3, w);
    CHECK_CLOSE(w[0], 0.2 / 0.9, TOL, 0);
    CHECK_CLOSE(w[1], 0.4 / 0.9, TOL, 0);
    CHECK_CLOSE(w[2], 0.3 / 0.9, TOL, 0);
    /* the course's chatbot floors on zero tentative weights: 0.8 0.8 0.7 0.7 0 over 3.0 */
    andrea_bandit_arm c[5];
    double f[5] = {0.8, 0.8, 0.7, 0.7, 0.0}, v[5] = {0};
    for (int k = 0; k < 5; k++) c[k] = arm(0, 1, 1, 0), c[k].floor = f[k];
    andrea_bandit_floors_caps(c, 5, v);
    CHECK_CLOSE(v[0], 0.8 / 3.0, TOL, 0);
    CHECK_CLOSE(v[2], 0.7 / 3.0, TOL, 0);
    CHECK(v[4] == 0.0);
    double z[2] = {0, 0}; /* nothing anywhere: uniform */
    andrea_bandit_floors_caps(c, 2, z);
    CHECK_CLOSE(z[0], 0.5, TOL, 0);
}

static void test_ucb_weights(void) {
    andrea_bandit_settings s;
    andrea_bandit_settings_default(&s);
    s.ucb_c = 0; /* scores = mean rewards, to follow by hand */
    s.focus = 2;
    andrea_bandit_arm a[3] = {arm(10, 10, 0.6, 0), arm(40, 10, 0.6, 0), arm(20, 10, 0.6, 0)};
    double w[3], sc[3];
    /* focus: arm 1 (40) -> 1, arm 2 (20) -> 0.5, arm 0 out -> 0; sum 1.5 */
    CHECK(andrea_bandit_weights(&s, a, 3, w, sc) == 2);
    CHECK_CLOSE(sc[1], 40.0, TOL, 0);
    CHECK_CLOSE(w[0], 0.0, TOL, 0);
    CHECK_CLOSE(w[1], 2.0 / 3.0, TOL, 0);
    CHECK_CLOSE(w[2], 1.0 / 3.0, TOL, 0);
    a[0].floor = 0.5; /* a floor lifts the arm out of focus: 0.5, 1, 0.5 over 2 */
    andrea_bandit_weights(&s, a, 3, w, sc);
    CHECK_CLOSE(w[0], 0.25, TOL, 0);
    CHECK_CLOSE(w[1], 0.5, TOL, 0);
    a[0].floor = 0;
    a[2].coverage = 0.0; /* bonus 1.3: 26 -> 0.65 */
    andrea_bandit_weights(&s, a, 3, w, sc);
    CHECK_CLOSE(sc[2], 26.0, 1e-12, 0);
    CHECK_CLOSE(w[2], 0.65 / 1.65, TOL, 0);
    a[1].epochs = 3; /* penalty 1/4: 10 -> now arm 2 leads (26), arm 1 at 10/26 */
    andrea_bandit_weights(&s, a, 3, w, sc);
    CHECK_CLOSE(sc[1], 10.0, TOL, 0);
    CHECK_CLOSE(w[2], 1.0 / (1.0 + 10.0 / 26.0), TOL, 0);
    /* an unplayed arm goes first (+inf): only it (and the other unplayed) get weight */
    andrea_bandit_arm b[3] = {arm(50, 5, 0.6, 0), arm(0, 0, 0, 0), arm(0, 0, 0, 0)};
    CHECK(andrea_bandit_weights(&s, b, 3, w, sc) == 2);
    CHECK(w[0] == 0.0 && isinf(sc[1]));
    CHECK_CLOSE(w[1], 0.5, TOL, 0);
}

static void test_policies_warmup(void) {
    andrea_bandit_settings s;
    andrea_bandit_settings_default(&s);
    andrea_bandit_arm a[4] = {arm(1, 1, 0, 0), arm(2, 1, 0, 0), arm(3, 1, 0, 0), arm(4, 1, 0, 0)};
    a[3].eligible = 0; /* warmup: not listed */
    double w[4];
    s.policy = ANDREA_POLICY_UNIFORM;
    CHECK(andrea_bandit_weights(&s, a, 4, w, NULL) == 3);
    CHECK_CLOSE(w[0], 1.0 / 3.0, TOL, 0);
    CHECK(w[3] == 0.0);
    s.policy = ANDREA_POLICY_FIXED;
    a[0].fixed = 0.5;
    a[1].fixed = 0.25;
    a[2].floor = 0.25; /* fixed 0, floor 0.25 */
    a[3].floor = 0.9;  /* not eligible: its floor does not count */
    andrea_bandit_weights(&s, a, 4, w, NULL);
    CHECK_CLOSE(w[0], 0.5, TOL, 0);
    CHECK_CLOSE(w[1], 0.25, TOL, 0);
    CHECK_CLOSE(w[2], 0.25, TOL, 0);
    CHECK(w[3] == 0.0);
    s.policy = ANDREA_POLICY_UCB1; /* warmup with UCB1: ineligible arm never weighted */
    s.ucb_c = 0;
    s.focus = 0;
    a[2].floor = 0;
    andrea_bandit_weights(&s, a, 4, w, NULL); /* 1.3 * (1, 2, 3) -> 1/3, 2/3, 1 over 2 */
    CHECK_CLOSE(w[0], 1.0 / 6.0, TOL, 0);
    CHECK_CLOSE(w[2], 0.5, TOL, 0);
    CHECK(w[3] == 0.0);
    for (int k = 0; k < 4; k++) a[k].eligible = 0;
    CHECK(andrea_bandit_weights(&s, a, 4, w, NULL) == 0);
}

static void test_draw_dice(void) {
    double w[4] = {0.2, 0.5, 0.0, 0.3};
    CHECK(andrea_bandit_draw(w, 4, 0.0) == 0);
    CHECK(andrea_bandit_draw(w, 4, 0.1999) == 0);
    CHECK(andrea_bandit_draw(w, 4, 0.2) == 1);
    CHECK(andrea_bandit_draw(w, 4, 0.69) == 1);
    CHECK(andrea_bandit_draw(w, 4, 0.7) == 3); /* a zero weight is never drawn */
    CHECK(andrea_bandit_draw(w, 4, 0.99999) == 3);
    andrea_bandit_settings s;
    andrea_bandit_settings_default(&s);
    CHECK(s.dice_min == 7 && s.dice_max == 42);
    CHECK(andrea_bandit_dice_interval(&s, 0) == 7);
    CHECK(andrea_bandit_dice_interval(&s, 35) == 42);
    CHECK(andrea_bandit_dice_interval(&s, 36) == 7); /* 36 values: 7..42 */
    CHECK(andrea_bandit_dice_interval(&s, 1000) == 7 + 1000 % 36);
    int lo = 100, hi = 0;
    for (uint64_t r = 0; r < 1000; r++) {
        int d = andrea_bandit_dice_interval(&s, r * 0x9E3779B97F4A7C15ull);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    CHECK(lo == 7 && hi == 42);
}

int main(void) {
    test_ema_reward();
    test_ucb();
    test_bonus_penalty();
    test_floors_caps();
    test_ucb_weights();
    test_policies_warmup();
    test_draw_dice();
    if (tu_failures) {
        fprintf(stderr, "test_bandit: %d failure(s)\n", tu_failures);
        return 1;
    }
    printf("test_bandit: ok\n");
    return 0;
}
