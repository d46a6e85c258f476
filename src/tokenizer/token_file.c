/* token_file.c - token files: what `andrea prepare` writes and training reads.
 *
 * Layout (little-endian), 64-byte header then the tokens:
 *   0  char[8] "ANDRTOKS"      8  u32 version (1)     12 u32 header bytes (64)
 *   16 u32 vocab size          20 u32 bytes per token (2 if V <= 65536, else 4)
 *   24 u64 token count         32 u64 tokenizer checksum   40 u32 bos   44..63 zero
 * The writer streams tokens and patches the count at close; the reader maps
 * the file and checks every header field against the file length.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/file.h"

#define TF_MAGIC "ANDRTOKS"
#define TF_VERSION 1u
#define TF_HEADER 64

struct andrea_token_writer {
    FILE *f;
    char *path;
    int32_t vocab, bos;
    uint32_t width;
    uint64_t count, checksum;
    uint8_t *buf;
    size_t buf_len;
};

#define TW_BUF (1u << 20)

static void header_bytes(uint8_t h[TF_HEADER], int32_t vocab, uint32_t width, uint64_t count,
                         uint64_t checksum, int32_t bos) {
    memset(h, 0, TF_HEADER);
    memcpy(h, TF_MAGIC, 8);
    put_u32(h + 8, TF_VERSION);
    put_u32(h + 12, TF_HEADER);
    put_u32(h + 16, (uint32_t)vocab);
    put_u32(h + 20, width);
    put_u64(h + 24, count);
    put_u64(h + 32, checksum);
    put_u32(h + 40, (uint32_t)bos);
}

andrea_token_writer *andrea_token_writer_create(const char *path, const andrea_tokenizer *t) {
    andrea_token_writer *w = calloc(1, sizeof *w);
    if (!w) return andrea_set_error("out of memory"), NULL;
    w->vocab = t->vocab;
    w->bos = t->bos;
    w->width = t->vocab <= 65536 ? 2 : 4;
    w->checksum = andrea_tokenizer_checksum(t);
    w->buf = malloc(TW_BUF);
    w->path = strdup(path);
    w->f = fopen(path, "wb");
    if (!w->f || !w->buf || !w->path) {
        andrea_set_error("cannot write '%s': %s", path, w->f ? "out of memory" : strerror(errno));
        if (w->f) fclose(w->f);
        free(w->buf);
        free(w->path);
        free(w);
        return NULL;
    }
    uint8_t h[TF_HEADER];
    header_bytes(h, w->vocab, w->width, 0, w->checksum, w->bos); /* count patched at close */
    if (fwrite(h, 1, TF_HEADER, w->f) != TF_HEADER) {
        andrea_set_error("'%s': write failed", path);
        fclose(w->f);
        free(w->buf);
        free(w->path);
        free(w);
        return NULL;
    }
    return w;
}

static int tw_flush(andrea_token_writer *w) {
    if (w->buf_len && fwrite(w->buf, 1, w->buf_len, w->f) != w->buf_len)
        return andrea_set_error("'%s': write failed after %llu tokens (disk full?)", w->path,
                                (unsigned long long)w->count);
    w->buf_len = 0;
    return 0;
}

int andrea_token_writer_write(andrea_token_writer *w, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= w->vocab)
            return andrea_set_error("'%s': token %d outside vocabulary [0, %d)", w->path, ids[i], w->vocab);
        if (w->buf_len + 4 > TW_BUF && tw_flush(w)) return -1;
        uint32_t v = (uint32_t)ids[i];
        w->buf[w->buf_len++] = (uint8_t)v;
        w->buf[w->buf_len++] = (uint8_t)(v >> 8);
        if (w->width == 4) {
            w->buf[w->buf_len++] = (uint8_t)(v >> 16);
            w->buf[w->buf_len++] = (uint8_t)(v >> 24);
        }
        w->count++;
    }
    return 0;
}

uint64_t andrea_token_writer_count(const andrea_token_writer *w) { return w->count; }

int andrea_token_writer_close(andrea_token_writer *w) {
    if (!w) return 0;
    int rc = tw_flush(w);
    uint8_t h[TF_HEADER];
    header_bytes(h, w->vocab, w->width, w->count, w->checksum, w->bos);
    if (!rc && (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, TF_HEADER, w->f) != TF_HEADER))
        rc = andrea_set_error("'%s': cannot patch the header", w->path);
    if (fclose(w->f) != 0 && !rc) rc = andrea_set_error("'%s': close failed (disk full?)", w->path);
    free(w->buf);
    free(w->path);
    free(w);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

struct andrea_token_file {
    const uint8_t *map;
    size_t map_len;
    const uint8_t *tokens;
    uint64_t count, checksum;
    int32_t vocab, bos;
    uint32_t width;
};

andrea_token_file *andrea_token_file_open(const char *path, int check_ids) {
    uint64_t size;
    int fd = andrea_file_open_regular(path, "token file", SIZE_MAX, &size);
    if (fd < 0) return NULL;
    size_t len = (size_t)size;
    if (len < TF_HEADER) {
        close(fd);
        return andrea_set_error("token file '%s': %zu bytes, shorter than the %d-byte header", path,
                                len, TF_HEADER), NULL;
    }
    const uint8_t *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return andrea_set_error("'%s': mmap failed: %s", path, strerror(errno)), NULL;
    const char *why = NULL;
    uint32_t version = get_u32(m + 8), hdr = get_u32(m + 12), vocab = get_u32(m + 16);
    uint32_t width = get_u32(m + 20), bos = get_u32(m + 40);
    uint64_t count = get_u64(m + 24);
    char msg[256];
    if (memcmp(m, TF_MAGIC, 8) != 0) why = "not an andrea token file (bad magic); make one with 'andrea prepare'";
    else if (version != TF_VERSION) {
        snprintf(msg, sizeof msg, "format version %u, this andrea reads %u", version, TF_VERSION);
        why = msg;
    } else if (hdr != TF_HEADER) why = "bad header size";
    else if (vocab < 2 || vocab > INT32_MAX || bos >= vocab) {
        /* ids are int32_t everywhere: a larger vocabulary would come back negative */
        snprintf(msg, sizeof msg, "bad vocab size %u or BOS %u (vocab must be in [2, %d])", vocab,
                 bos, INT32_MAX);
        why = msg;
    }
    else if (width != (vocab <= 65536 ? 2u : 4u)) why = "bytes per token does not match the vocab size";
    else if (count > (len - TF_HEADER) / width || TF_HEADER + count * width != len) {
        snprintf(msg, sizeof msg, "header says %llu tokens (%llu bytes) but the file has %zu; truncated?",
                 (unsigned long long)count, (unsigned long long)(TF_HEADER + count * width), len);
        why = msg;
    }
    if (why) {
        munmap((void *)m, len);
        return andrea_set_error("token file '%s': %s", path, why), NULL;
    }
    andrea_token_file *f = calloc(1, sizeof *f);
    if (!f) {
        munmap((void *)m, len);
        return andrea_set_error("out of memory"), NULL;
    }
    f->map = m;
    f->map_len = len;
    f->tokens = m + TF_HEADER;
    f->count = count;
    f->checksum = get_u64(m + 32);
    f->vocab = (int32_t)vocab;
    f->bos = (int32_t)bos;
    f->width = width;
    if (check_ids) {
        for (uint64_t i = 0; i < count; i++) {
            uint32_t v = width == 2 ? (uint32_t)f->tokens[2 * i] | (uint32_t)f->tokens[2 * i + 1] << 8
                                    : get_u32(f->tokens + 4 * i);
            if (v >= vocab) {
                andrea_token_file_close(f);
                return andrea_set_error("token file '%s': token %llu is %u, outside vocab %u", path,
                                        (unsigned long long)i, v, vocab), NULL;
            }
        }
    }
    return f;
}

void andrea_token_file_close(andrea_token_file *f) {
    if (!f) return;
    munmap((void *)f->map, f->map_len);
    free(f);
}

uint64_t andrea_token_file_count(const andrea_token_file *f) { return f->count; }
int32_t andrea_token_file_vocab(const andrea_token_file *f) { return f->vocab; }
int32_t andrea_token_file_bos(const andrea_token_file *f) { return f->bos; }
uint64_t andrea_token_file_checksum(const andrea_token_file *f) { return f->checksum; }

int andrea_token_file_read(const andrea_token_file *f, uint64_t start, size_t n, int32_t *out) {
    if (start > f->count || n > f->count - start)
        return andrea_set_error("token file: read [%llu, %llu) past its %llu tokens",
                                (unsigned long long)start, (unsigned long long)(start + n),
                                (unsigned long long)f->count);
    const uint8_t *p = f->tokens + start * f->width;
    if (f->width == 2)
        for (size_t i = 0; i < n; i++) out[i] = (int32_t)((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8);
    else
        for (size_t i = 0; i < n; i++) out[i] = (int32_t)get_u32(p + 4 * i);
    return 0;
}
