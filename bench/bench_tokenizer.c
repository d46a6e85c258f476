/* bench_tokenizer.c - encode speed of our GPT-2 BPE, and bytes per token of every
 * tokenizer kind on the shared corpora.
 *
 *   bench_tokenizer [DATA_DIR]        (default $ANDREA_DATA_DIR or ../shared/data)
 *
 * Speed: MB/s of andrea_tokenizer_encode over a whole corpus, cold (a freshly
 * loaded tokenizer, empty piece cache) and warm (best of 3 on the same object).
 * bench/tokenizer_compare.sh runs this beside the npm reference on the same input.
 * Bytes per token: each trained tokenizer is trained on the corpus it is
 * measured on (in-sample), plus Harris/BPE trained on gutenberg measured on
 * tinyshakespeare (out of sample). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea_tokenizer.h"
#include "util/file.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bytes_per_token(const andrea_tokenizer *t, const andrea_bytes *text) {
    andrea_ids ids = {0};
    if (andrea_tokenizer_encode(t, text->data, text->len, 0, &ids)) {
        andrea_ids_free(&ids);
        return 0;
    }
    double r = ids.len ? (double)text->len / (double)ids.len : 0;
    andrea_ids_free(&ids);
    return r;
}

int main(int argc, char **argv) {
    const char *data = argc > 1 ? argv[1] : getenv("ANDREA_DATA_DIR");
    if (!data || !*data) data = "../shared/data";
    const char *names[] = {"tinyshakespeare.txt", "gutenberg_books.txt"};
    andrea_bytes text[2] = {{0}, {0}};
    char path[4096];
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof path, "%s/%s", data, names[c]);
        if (andrea_file_read(path, &text[c])) {
            fprintf(stderr, "bench_tokenizer: cannot read '%s'; pass the data directory\n", path);
            return 1;
        }
    }
    snprintf(path, sizeof path, "gpt2:%s/gpt2", data);

    printf("== GPT-2 BPE encode speed (andrea, C) ==\n");
    for (int c = 0; c < 2; c++) {
        double t0 = now_s();
        andrea_tokenizer *t = andrea_tokenizer_open(path);
        if (!t) {
            fprintf(stderr, "bench_tokenizer: %s\n", andrea_error());
            return 1;
        }
        double load = now_s() - t0;
        andrea_ids ids = {0};
        t0 = now_s();
        andrea_tokenizer_encode(t, text[c].data, text[c].len, 0, &ids);
        double cold = now_s() - t0, warm = 1e9;
        for (int r = 0; r < 3; r++) {
            ids.len = 0;
            t0 = now_s();
            andrea_tokenizer_encode(t, text[c].data, text[c].len, 0, &ids);
            double dt = now_s() - t0;
            if (dt < warm) warm = dt;
        }
        andrea_bytes back = {0};
        t0 = now_s();
        andrea_tokenizer_decode(t, ids.data, ids.len, &back);
        double dec = now_s() - t0;
        printf("%-22s %8.2f MB %8zu tokens  encode cold %6.1f MB/s  warm %6.1f MB/s  decode %7.1f MB/s"
               "  (load %.2fs)\n", names[c], text[c].len / 1e6, ids.len, text[c].len / 1e6 / cold,
               text[c].len / 1e6 / warm, text[c].len / 1e6 / dec, load);
        andrea_bytes_free(&back);
        andrea_ids_free(&ids);
        andrea_tokenizer_free(t);
    }

    printf("\n== bytes per token (higher = shorter sequences) ==\n");
    printf("%-34s %6s %12s %12s\n", "tokenizer", "V", names[0], names[1]);
    andrea_tokenizer *gpt2 = andrea_tokenizer_open(path);
    andrea_tokenizer *byte = andrea_tokenizer_byte();
    printf("%-34s %6d %12.3f %12.3f\n", "byte", 257, bytes_per_token(byte, &text[0]), bytes_per_token(byte, &text[1]));
    if (gpt2)
        printf("%-34s %6d %12.3f %12.3f\n", "gpt2 (OpenAI's, trained on WebText)", 50257,
               bytes_per_token(gpt2, &text[0]), bytes_per_token(gpt2, &text[1]));
    andrea_tokenizer_free(gpt2);
    andrea_tokenizer_free(byte);
    double bpt[2];
    int V = 0;
    for (int c = 0; c < 2; c++) {
        andrea_tokenizer *t = andrea_tokenizer_char_train(text[c].data, text[c].len);
        bpt[c] = t ? bytes_per_token(t, &text[c]) : 0;
        if (t && c == 0) V = andrea_tokenizer_vocab_size(t);
        andrea_tokenizer_free(t);
    }
    printf("%-34s %6s %12.3f %12.3f\n", "char (in-sample)", "", bpt[0], bpt[1]);
    (void)V;
    const int sizes[] = {2048, 8192};
    for (int s = 0; s < 2; s++) {
        double h[2], b[2], train_h[2], train_b[2];
        for (int c = 0; c < 2; c++) {
            andrea_harris_train_options ho;
            andrea_harris_train_options_default(&ho);
            ho.n_segments = sizes[s];
            double t0 = now_s();
            andrea_tokenizer *t = andrea_tokenizer_harris_train(text[c].data, text[c].len, &ho);
            train_h[c] = now_s() - t0;
            h[c] = t ? bytes_per_token(t, &text[c]) : 0;
            andrea_tokenizer_free(t);
            andrea_bpe_train_options bo;
            andrea_bpe_train_options_default(&bo);
            bo.vocab_size = sizes[s] + 257;
            t0 = now_s();
            t = andrea_tokenizer_bpe_train(text[c].data, text[c].len, &bo);
            train_b[c] = now_s() - t0;
            b[c] = t ? bytes_per_token(t, &text[c]) : 0;
            andrea_tokenizer_free(t);
        }
        char label[64];
        snprintf(label, sizeof label, "harris N=%d (in-sample)", sizes[s]);
        printf("%-34s %6d %12.3f %12.3f   (train %.2fs / %.2fs)\n", label, sizes[s] + 257, h[0], h[1],
               train_h[0], train_h[1]);
        snprintf(label, sizeof label, "bpe V=%d (in-sample)", sizes[s] + 257);
        printf("%-34s %6d %12.3f %12.3f   (train %.2fs / %.2fs)\n", label, sizes[s] + 257, b[0], b[1],
               train_b[0], train_b[1]);
        /* out of sample: trained on gutenberg, measured on shakespeare */
        andrea_harris_train_options ho;
        andrea_harris_train_options_default(&ho);
        ho.n_segments = sizes[s];
        andrea_tokenizer *t = andrea_tokenizer_harris_train(text[1].data, text[1].len, &ho);
        double ho_bpt = t ? bytes_per_token(t, &text[0]) : 0;
        andrea_tokenizer_free(t);
        andrea_bpe_train_options bo;
        andrea_bpe_train_options_default(&bo);
        bo.vocab_size = sizes[s] + 257;
        t = andrea_tokenizer_bpe_train(text[1].data, text[1].len, &bo);
        double bo_bpt = t ? bytes_per_token(t, &text[0]) : 0;
        andrea_tokenizer_free(t);
        snprintf(label, sizeof label, "harris N=%d (gutenberg -> shk)", sizes[s]);
        printf("%-34s %6d %12.3f %12s\n", label, sizes[s] + 257, ho_bpt, "");
        snprintf(label, sizeof label, "bpe V=%d (gutenberg -> shk)", sizes[s] + 257);
        printf("%-34s %6d %12.3f %12s\n", label, sizes[s] + 257, bo_bpt, "");
    }
    andrea_bytes_free(&text[0]);
    andrea_bytes_free(&text[1]);
    return 0;
}
