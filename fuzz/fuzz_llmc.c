/* fuzz_llmc.c - libFuzzer harness for the llmc reader: any bytes must give a model or a
 * one-line error, never a crash, a leak or an out-of-bounds read (ASan + UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy of exactly size bytes, so ASan catches a read one past the end */
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    andrea_model *m = andrea_llmc_parse(p, size, "fuzz");
    if (m) andrea_model_free(m);
    else if (!andrea_error()[0] || strchr(andrea_error(), '\n')) abort();
    free(p);
    return 0;
}
