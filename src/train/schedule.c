/* schedule.c - ANDREA's learning rate: a cosine decay multiplied by a linear warmup. */
#include <math.h>

#include "andrea.h"

float andrea_lr_at(const andrea_train_options *o, int step) {
    double progress = o->max_steps > 0 ? (double)step / o->max_steps : 1.0;
    if (progress > 1.0) progress = 1.0;
    double sched = o->lr_min + 0.5 * (o->lr - o->lr_min) * (1.0 + cos(3.14159265358979323846 * progress));
    double warm = o->warmup > 0 ? (double)(step + 1) / o->warmup : 1.0;
    return (float)(sched * (warm < 1.0 ? warm : 1.0));
}
