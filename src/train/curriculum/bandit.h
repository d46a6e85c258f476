/*
 * bandit.h - the curriculum's arithmetic, pure functions of numbers (no data, no RNG), so
 * each part is tested against hand-computed values (tests/test_bandit.c). ANDREA's rules
 * (spec §5) where they are known; our choices, marked [D], where they are not
 * (docs/curriculum.md):
 *   EMA_k(t)   = (1 - a) EMA_k(t-1) + a loss_k(t), a = 0.1, the pulled arm only; the
 *                first loss of an arm initialises it [D]
 *   reward_k   = max(0, EMA_k(t-1) - loss_k(t)) * 1000
 *   UCB(k)     = mean_reward(k) + C sqrt(ln N / n_k); an arm never pulled is +inf
 *   bonus      = 1 + 0.3 (1 - coverage / 0.5) below 50% coverage, else 1
 *   penalty    = 1 / (1 + epochs) once a source was read through (epochs >= 1), else 1
 *   score      = UCB * bonus * penalty [D: where the modifiers act]
 *   tentative  = score / max score for the `focus` best-ranked eligible arms, 0 for the
 *                others [D: the dice-control assembly]; unplayed arms first (1 each)
 *   final      = min(max(tentative, floor), cap), renormalised to sum 1 [D]
 */
#ifndef ANDREA_TRAIN_BANDIT_H
#define ANDREA_TRAIN_BANDIT_H

#include <stdint.h>

enum { ANDREA_POLICY_UCB1 = 0, ANDREA_POLICY_UNIFORM = 1, ANDREA_POLICY_FIXED = 2 };

/* The settings a manifest gives (andrea_manifest.curriculum); defaults in
 * andrea_bandit_settings_default. */
typedef struct {
    int policy;            /* ANDREA_POLICY_* */
    double ema_alpha;      /* 0.1 */
    double ucb_c;          /* exploration constant C (50) [D] */
    double reward_scale;   /* 1000 */
    int focus;             /* arms given a tentative weight by rank (3) [D] */
    int dice_min, dice_max;/* the active source is redrawn every [7, 42] steps */
    int warmup_steps;      /* steps during which only warmup sources are eligible */
    double coverage_bonus; /* 0.3: the bonus at 0% coverage is 1 + this */
    double coverage_full;  /* 0.5: coverage from which there is no bonus */
    int epoch_penalty;     /* 1: apply 1/(1+epochs) */
} andrea_bandit_settings;

void andrea_bandit_settings_default(andrea_bandit_settings *s);

/* One arm as the weights need it. */
typedef struct {
    double mean_reward;  /* reward_sum / pulls */
    uint64_t pulls;      /* n_k: steps trained on this source */
    double coverage;     /* unique training documents seen / training documents */
    uint32_t epochs;     /* complete passes over the training documents */
    double floor, cap;   /* on the tentative weight (0 and 1 when not given) */
    double fixed;        /* the fixed policy's weight */
    int eligible;        /* 0 during warmup for a source not in the warmup list */
} andrea_bandit_arm;

double andrea_bandit_ema(double ema_prev, double loss, double alpha);
double andrea_bandit_reward(double ema_prev, double loss, double scale);
double andrea_bandit_ucb(double mean_reward, double c, uint64_t total_pulls, uint64_t pulls);
double andrea_bandit_coverage_bonus(double coverage, double bonus, double full);
double andrea_bandit_epoch_penalty(uint32_t epochs);

/* The modified UCB score of arm a (+inf when never pulled). */
double andrea_bandit_score(const andrea_bandit_settings *s, const andrea_bandit_arm *a,
                           uint64_t total_pulls);

/* Final weights w[n] (sum 1 over eligible arms; 0 for the others) under s->policy;
 * score[n] (may be NULL) gets each arm's score (0 for uniform/fixed). Returns the number
 * of arms with a weight > 0 (0 only when no arm is eligible). */
int andrea_bandit_weights(const andrea_bandit_settings *s, const andrea_bandit_arm *arms, int n,
                          double *w, double *score);

/* Clamps each eligible w[k] to [floor, cap] and renormalises to sum 1; an all-zero result
 * becomes uniform over the eligible arms. */
void andrea_bandit_floors_caps(const andrea_bandit_arm *arms, int n, double *w);

/* Index drawn from weights w[n] (sum 1) with u in [0, 1). */
int andrea_bandit_draw(const double *w, int n, double u);

/* The dice interval for a uniform 64-bit draw r: dice_min + r mod (dice_max - dice_min + 1). */
int andrea_bandit_dice_interval(const andrea_bandit_settings *s, uint64_t r);

#endif
