/* rng.c - xoroshiro128+ : small, fast, and its whole state fits in a checkpoint. */
#include <math.h>

#include "andrea.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void andrea_rng_seed(andrea_rng *r, uint64_t seed) {
    uint64_t x = seed;
    r->s[0] = splitmix64(&x);
    r->s[1] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t andrea_rng_u64(andrea_rng *r) {
    uint64_t s0 = r->s[0], s1 = r->s[1];
    uint64_t result = s0 + s1;
    s1 ^= s0;
    r->s[0] = rotl(s0, 24) ^ s1 ^ (s1 << 16);
    r->s[1] = rotl(s1, 37);
    return result;
}

float andrea_rng_uniform(andrea_rng *r) {
    return (float)(andrea_rng_u64(r) >> 40) * (1.0f / 16777216.0f); /* 24 bits: exact in float */
}

float andrea_rng_normal(andrea_rng *r) {
    /* Box-Muller in double; one sample per call keeps the state simple to reason about. */
    double u1 = ((andrea_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double u2 = (andrea_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
