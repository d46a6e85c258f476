/* hash.h - the one FNV-1a 64 of the library: over little-endian 8-byte words for speed
 * (andrea_hash), and the byte-wise original the tokenizer checksum was defined with. */
#ifndef ANDREA_UTIL_HASH_H
#define ANDREA_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ANDREA_HASH_INIT 0xcbf29ce484222325ull

/* Continues hash h over n bytes. Calls must feed multiples of 8 bytes except
 * the last one (the tail is zero-padded to a word). */
uint64_t andrea_hash(uint64_t h, const void *data, size_t n);

/* Classic byte-at-a-time FNV-1a 64, continued from h (start at ANDREA_HASH_INIT).
 * Slower than andrea_hash and different values; kept for the one value already
 * on disk that uses it: andrea_tokenizer_checksum() (checkpoint headers and token
 * files store it). New code uses andrea_hash. */
uint64_t andrea_fnv1a64(uint64_t h, const void *data, size_t n);

#endif
