/*
 * test_attn_png.c - `andrea attention --png` writes heatmaps that libpng can read
 * back, with the documented geometry: a per-head image holds a T x T grid of
 * cs x cs cells, cs = clamp(512 / T, 1, 24); the layers x heads grid holds
 * L x NH panels of T x T cells of cs = clamp(128 / T, 1, 8). The causal mask is
 * drawn in one grey, so the number of grey pixels is exactly the masked area,
 * and the top-left cell (A[0][0] = 1) has the top colour of the ramp.
 * Skipped (77) when the build has no libpng.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "test_ckpt.h"
#include "test_util.h"

#ifndef ANDREA_HAVE_PNG
int main(void) {
    fprintf(stderr, "skip: built without libpng\n");
    return 77;
}
#else
#include <png.h>

typedef struct {
    int w, h;
    uint8_t *px; /* RGB */
} image;

static int read_png(const char *path, image *im) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) {
        fprintf(stderr, "%s: %s\n", path, pi.message);
        return -1;
    }
    pi.format = PNG_FORMAT_RGB;
    im->w = (int)pi.width;
    im->h = (int)pi.height;
    im->px = malloc(PNG_IMAGE_SIZE(pi));
    if (!im->px || !png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        fprintf(stderr, "%s: %s\n", path, pi.message);
        png_image_free(&pi);
        free(im->px);
        return -1;
    }
    return 0;
}

static long count_rgb(const image *im, int r, int g, int b) {
    long n = 0;
    for (long k = 0; k < (long)im->w * im->h; k++)
        if (im->px[3 * k] == r && im->px[3 * k + 1] == g && im->px[3 * k + 2] == b) n++;
    return n;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void check_case(const char *bin, const char *ckpt, const char *dir, const char *prompt,
                       int L, int NH) {
    char cmd[2048], path[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' attention -m '%s' -p '%s' --views "
                              "softmax,masked,raw --png '%s' --matrices 0 > /dev/null 2>&1",
             dir, bin, ckpt, prompt, dir);
    CHECK(system(cmd) == 0);
    int T = (int)strlen(prompt);
    long masked_cells = (long)T * (T - 1) / 2;

    int cs = clampi(512 / T, 1, 24);
    const char *views[3] = {"softmax", "masked", "raw"};
    for (int v = 0; v < 3; v++) {
        image im;
        snprintf(path, sizeof path, "%s/L%d_H%d_%s.png", dir, L - 1, NH - 1, views[v]);
        CHECK(read_png(path, &im) == 0);
        if (!im.px) continue;
        /* the heatmap plus margins, labels and the colour bar, all of modest size */
        CHECK(im.w >= T * cs && im.w <= T * cs + 300);
        CHECK(im.h >= T * cs && im.h <= T * cs + 300);
        long grey = count_rgb(&im, 214, 214, 214);
        if (v < 2) {
            CHECK(grey == masked_cells * cs * cs);
        } else {
            CHECK(grey == 0); /* raw scores are shown everywhere, nothing is masked */
        }
        if (v == 0) CHECK(count_rgb(&im, 253, 231, 37) >= (long)cs * cs); /* A[0][0] = 1 */
        free(im.px);
    }
    image g;
    snprintf(path, sizeof path, "%s/grid_softmax.png", dir);
    CHECK(read_png(path, &g) == 0);
    if (g.px) {
        int gcs = clampi(128 / T, 1, 8), side = T * gcs;
        CHECK(g.w >= NH * side && g.w <= NH * (side + 8) + 300);
        CHECK(g.h >= L * side && g.h <= L * (side + 8) + 300);
        CHECK(count_rgb(&g, 214, 214, 214) == (long)L * NH * masked_cells * gcs * gcs);
        free(g.px);
    }
}

int main(void) {
    const char *bin = getenv("ANDREA_BIN");
    const char *tmp = getenv("ANDREA_TMP") ? getenv("ANDREA_TMP") : "/tmp";
    if (!bin) {
        fprintf(stderr, "skip: ANDREA_BIN is not set\n");
        return 77;
    }
    char cmd[1024], ckpt[512], dir[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", tmp);
    CHECK(system(cmd) == 0);
    snprintf(ckpt, sizeof ckpt, "%s/attn_png.bin", tmp);
    snprintf(dir, sizeof dir, "%s/png", tmp);
    andrea_config cfg;
    andrea_config_preset("tiny", &cfg);
    cfg.init_std = 0.3f;
    andrea_model *m = tu_random_checkpoint(ckpt, &cfg, 3);
    check_case(bin, ckpt, dir, "To be, or not", cfg.n_layer, cfg.n_head); /* labels drawn */
    check_case(bin, ckpt, dir, "abcdefghijklmnopqrstuvwxyz012345", cfg.n_layer, cfg.n_head);
    check_case(bin, ckpt, dir, "x", cfg.n_layer, cfg.n_head);             /* T = 1 */
    andrea_model_free(m);
    return tu_finish("test_attn_png");
}
#endif
