/* le.h - the one explicit little-endian codec: every file format of andrea (checkpoints,
 * tokenizer blobs, token files) stores integers and floats little-endian, whatever the
 * host's byte order. */
#ifndef ANDREA_LE_H
#define ANDREA_LE_H

#include <stdint.h>
#include <string.h>

static inline void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void put_u64(uint8_t *p, uint64_t v) {
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}
/* floats travel as their IEEE-754 bit patterns */
static inline void put_f32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(p, u);
}
static inline float get_f32(const uint8_t *p) {
    uint32_t u = get_u32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
