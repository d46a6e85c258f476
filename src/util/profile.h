/* profile.h - where a training step's time goes: wall time per kind of operation,
 * summed while profiling is on (`andrea bench --profile`). Off, a PROF() costs one
 * branch; on, two clock reads per operation. Global, for the calling thread's ops. */
#ifndef ANDREA_UTIL_PROFILE_H
#define ANDREA_UTIL_PROFILE_H

enum {
    PROF_MATMUL, /* with the MLP activation and the residual adds fused into it */
    PROF_ATTENTION,
    PROF_NORM,
    PROF_CROSSENTROPY,
    PROF_ZERO,      /* clearing gradient buffers */
    PROF_OPTIMIZER, /* AdamW (+ gradient norm and clipping in the trainer) */
    PROF_N
};

extern int andrea_prof_on;
extern double andrea_prof_seconds[PROF_N];
double andrea_now(void);

/* Times one statement under a category when profiling is on. */
#define PROF(cat, stmt)                                                                      \
    do {                                                                                     \
        if (andrea_prof_on) {                                                                \
            double prof_t0_ = andrea_now();                                                  \
            stmt;                                                                            \
            andrea_prof_seconds[cat] += andrea_now() - prof_t0_;                             \
        } else {                                                                             \
            stmt;                                                                            \
        }                                                                                    \
    } while (0)

void andrea_prof_reset(void);
const char *andrea_prof_name(int cat);

#endif
