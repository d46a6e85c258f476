/* bandit.c - the curriculum's arithmetic (bandit.h): rewards, UCB1 scores, freshness
 * modifiers, weights with floors and caps, the dice. No state: curriculum.c keeps it. */
#include "train/curriculum/bandit.h"

#include <math.h>
#include <string.h>

void andrea_bandit_settings_default(andrea_bandit_settings *s) {
    memset(s, 0, sizeof *s);
    s->policy = ANDREA_POLICY_UCB1;
    s->ema_alpha = 0.1;
    s->ucb_c = 50.0;
    s->reward_scale = 1000.0;
    s->focus = 3;
    s->dice_min = 7;
    s->dice_max = 42;
    s->coverage_bonus = 0.3;
    s->coverage_full = 0.5;
    s->epoch_penalty = 1;
}

double andrea_bandit_ema(double ema_prev, double loss, double alpha) {
    return (1.0 - alpha) * ema_prev + alpha * loss;
}

double andrea_bandit_reward(double ema_prev, double loss, double scale) {
    double d = ema_prev - loss;
    return d > 0.0 ? d * scale : 0.0;
}

double andrea_bandit_ucb(double mean_reward, double c, uint64_t total_pulls, uint64_t pulls) {
    if (pulls == 0) return INFINITY;
    double n = total_pulls > 1 ? (double)total_pulls : 1.0; /* ln 1 = 0: no bonus yet */
    return mean_reward + c * sqrt(log(n) / (double)pulls);
}

double andrea_bandit_coverage_bonus(double coverage, double bonus, double full) {
    if (full <= 0.0 || coverage >= full) return 1.0;
    if (coverage < 0.0) coverage = 0.0;
    return 1.0 + bonus * (1.0 - coverage / full);
}

double andrea_bandit_epoch_penalty(uint32_t epochs) {
    return epochs >= 1 ? 1.0 / (1.0 + (double)epochs) : 1.0;
}

double andrea_bandit_score(const andrea_bandit_settings *s, const andrea_bandit_arm *a,
                           uint64_t total_pulls) {
    double u = andrea_bandit_ucb(a->mean_reward, s->ucb_c, total_pulls, a->pulls);
    if (isinf(u)) return u;
    u *= andrea_bandit_coverage_bonus(a->coverage, s->coverage_bonus, s->coverage_full);
    if (s->epoch_penalty) u *= andrea_bandit_epoch_penalty(a->epochs);
    return u;
}

void andrea_bandit_floors_caps(const andrea_bandit_arm *arms, int n, double *w) {
    double sum = 0.0;
    int n_el = 0;
    for (int k = 0; k < n; k++) {
        if (!arms[k].eligible) {
            w[k] = 0.0;
            continue;
        }
        n_el++;
        if (w[k] < arms[k].floor) w[k] = arms[k].floor;
        if (w[k] > arms[k].cap) w[k] = arms[k].cap;
        sum += w[k];
    }
    for (int k = 0; k < n; k++)
        if (arms[k].eligible) w[k] = sum > 0.0 ? w[k] / sum : 1.0 / n_el;
}

/* Rank of arm k among the eligible ones by score (descending; ties: lower index first). */
static int rank_of(const andrea_bandit_arm *arms, const double *score, int n, int k) {
    int r = 0;
    for (int j = 0; j < n; j++)
        if (j != k && arms[j].eligible && (score[j] > score[k] || (score[j] == score[k] && j < k)))
            r++;
    return r;
}

/* UCB1: the `focus` best eligible arms get score / best score (unplayed arms, +inf, get
 * 1 and push the played ones out: explore first), the rest 0. */
static void ucb_tentative(const andrea_bandit_settings *s, const andrea_bandit_arm *arms, int n,
                          const double *score, double *w) {
    int focus = s->focus > 0 ? s->focus : n, unplayed = 0;
    double best = 0.0;
    for (int k = 0; k < n; k++) {
        if (!arms[k].eligible) continue;
        if (isinf(score[k])) unplayed = 1;
        else if (score[k] > best) best = score[k];
    }
    for (int k = 0; k < n; k++) {
        w[k] = 0.0;
        if (!arms[k].eligible || rank_of(arms, score, n, k) >= focus) continue;
        if (unplayed) w[k] = isinf(score[k]) ? 1.0 : 0.0;
        else w[k] = best > 0.0 ? score[k] / best : 1.0;
    }
}

int andrea_bandit_weights(const andrea_bandit_settings *s, const andrea_bandit_arm *arms, int n,
                          double *w, double *score) {
    uint64_t total = 0;
    for (int k = 0; k < n; k++) total += arms[k].pulls;
    double tmp[256];
    double *sc = score ? score : (n <= 256 ? tmp : NULL);
    int n_el = 0;
    for (int k = 0; k < n; k++) {
        n_el += arms[k].eligible != 0;
        if (sc) sc[k] = s->policy == ANDREA_POLICY_UCB1 ? andrea_bandit_score(s, &arms[k], total) : 0.0;
    }
    if (n_el == 0) {
        for (int k = 0; k < n; k++) w[k] = 0.0;
        return 0;
    }
    if (s->policy == ANDREA_POLICY_UNIFORM) {
        for (int k = 0; k < n; k++) w[k] = arms[k].eligible ? 1.0 / n_el : 0.0;
    } else {
        if (s->policy == ANDREA_POLICY_FIXED || !sc)
            for (int k = 0; k < n; k++) w[k] = arms[k].fixed;
        else
            ucb_tentative(s, arms, n, sc, w);
        andrea_bandit_floors_caps(arms, n, w);
    }
    int pos = 0;
    for (int k = 0; k < n; k++) pos += w[k] > 0.0;
    return pos;
}

int andrea_bandit_draw(const double *w, int n, double u) {
    double acc = 0.0;
    int last = -1;
    for (int k = 0; k < n; k++) {
        if (w[k] <= 0.0) continue;
        last = k;
        acc += w[k];
        if (u < acc) return k;
    }
    return last; /* rounding: the sum fell just short of 1 */
}

int andrea_bandit_dice_interval(const andrea_bandit_settings *s, uint64_t r) {
    int lo = s->dice_min, hi = s->dice_max < s->dice_min ? s->dice_min : s->dice_max;
    return lo + (int)(r % (uint64_t)(hi - lo + 1));
}
