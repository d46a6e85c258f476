/* fuzz_manifest.c - libFuzzer harness for run manifests (andrea_manifest_read): any bytes
 * give a manifest whose every number is in its documented range, or a one-line error with
 * no control character in it. Numbers that become integers are the point (issue 22): an
 * out-of-range double cast to int is undefined behaviour, which UBSan reports here. */
#include "fuzz_file.h"
#include "train/curriculum/manifest.h"

static void check_manifest(const andrea_manifest *m) {
    if (m->n < 1 || m->n > ANDREA_MANIFEST_MAX_SOURCES) abort();
    if (m->cur.focus < 0 || m->cur.warmup_steps < 0 || m->cur.dice_min < 1 ||
        m->cur.dice_max < m->cur.dice_min)
        abort();
    for (int i = 0; i < m->n; i++) {
        const andrea_manifest_source *s = &m->src[i];
        if (s->floor < 0 || s->cap <= 0 || s->floor > s->cap || s->min_bytes < 0 ||
            s->range_off < 0 || (s->range_len < 1 && s->range_len != -1) || !s->name[0])
            abort();
        for (const char *c = s->name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == '/') abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    andrea_manifest m;
    if (andrea_manifest_read(fuzz_file(data, size), &m) == 0) {
        check_manifest(&m);
    } else {
        fuzz_check_error();
        for (const char *c = andrea_error(); *c; c++)
            if ((unsigned char)*c < 0x20) abort();
    }
    andrea_manifest_free(&m);
    return 0;
}
