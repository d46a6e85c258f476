/* hash.h - a 64-bit FNV-1a hash, run over little-endian 8-byte words for speed. */
#ifndef ANDREA_UTIL_HASH_H
#define ANDREA_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ANDREA_HASH_INIT 0xcbf29ce484222325ull

/* Continues hash h over n bytes. Calls must feed multiples of 8 bytes except
 * the last one (the tail is zero-padded to a word). */
uint64_t andrea_hash(uint64_t h, const void *data, size_t n);

#endif
