/* st_header.h - the JSON header of a safetensors file, parsed strictly. */
#ifndef ANDREA_FORMATS_ST_HEADER_H
#define ANDREA_FORMATS_ST_HEADER_H

#include <stddef.h>
#include <stdint.h>

enum { ANDREA_ST_F32 = 0, ANDREA_ST_F16 = 1, ANDREA_ST_BF16 = 2 };
#define ANDREA_ST_MAX_DIMS 8

typedef struct {
    char *name;
    int dtype; /* ANDREA_ST_* */
    int ndim;
    int64_t shape[ANDREA_ST_MAX_DIMS];
    uint64_t begin, end; /* byte offsets into the data section */
} andrea_st_tensor;

typedef struct {
    char *key, *val;
} andrea_st_meta;

typedef struct {
    andrea_st_tensor *t;
    int nt;
    andrea_st_meta *m;
    int nm;
} andrea_st_header;

/* Parses {"name": {"dtype": .., "shape": [..], "data_offsets": [b, e]}, ...,
 * "__metadata__": {"k": "v"}}; checks dtypes, shapes against offsets (with
 * overflow checks) and nothing else (the caller checks offsets against the file). */
int andrea_st_header_parse(const uint8_t *json, size_t n, andrea_st_header *h, const char *what);
void andrea_st_header_free(andrea_st_header *h);
const andrea_st_tensor *andrea_st_find(const andrea_st_header *h, const char *name);
const char *andrea_st_meta_get(const andrea_st_header *h, const char *key);

#endif
