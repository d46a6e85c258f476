/*
 * test_run_options.c - the option table: its defaults are the documented values (floats
 * bit-equal to the literals the trainer used before the table), every row is well formed,
 * the "train:" line is generated from it, options restore from a checkpoint, and
 * validation names the flag and reports a usage error.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "test_ckpt.h"
#include "test_util.h"
#include "train/run_options.h"

static void test_defaults(void) {
    andrea_train_options o;
    andrea_train_options_default(&o);
    CHECK(o.batch == 12 && o.seq == 0 && o.grad_accum == 1 && o.max_steps == 2000);
    CHECK(o.lr == 1e-3f && o.lr_min == 1e-4f && o.warmup == 100);
    CHECK(o.beta1 == 0.9f && o.beta2 == 0.99f && o.eps == 1e-8f && o.weight_decay == 0.1f);
    CHECK(o.grad_clip == 1.0f && o.seed == 1337 && o.val_fraction == 0.1f);
    CHECK(o.eval_every == 250 && o.eval_batches == 0 && o.ckpt_every == 500 && o.log_every == 1);
    CHECK(o.max_bad_steps == 5 && o.sample_every == 100 && o.sample_tokens == 420);
    CHECK(o.gate_threshold == 30.0f && o.gate_patience == 5 && o.inject_nan_step == -1);
    CHECK(o.data_path == NULL && o.tokenizer == NULL && strcmp(o.out_dir, "out") == 0);
    CHECK(o.resume_path == NULL && o.quiet == 0 && o.sink == NULL && o.should_stop == NULL);
}

static void test_rows(void) {
    int n;
    const andrea_train_option *t = andrea_train_option_table(&n);
    CHECK(n >= 30);
    int saved = 0;
    for (int i = 0; i < n; i++) {
        CHECK(t[i].offset < sizeof(andrea_train_options));
        CHECK(t[i].help && t[i].help[0]);
        CHECK(t[i].ckpt < (long)sizeof(andrea_ckpt_state));
        CHECK(!(t[i].ckpt >= 0 && t[i].type == ANDREA_OPT_FLAG));
        CHECK(andrea_train_option_find(t[i].flag) == &t[i]); /* names are unique */
        for (int j = 0; j < i; j++) {
            CHECK(t[j].offset != t[i].offset);
            CHECK(t[i].ckpt < 0 || t[j].ckpt != t[i].ckpt);
            CHECK(!t[i].short_flag || t[j].short_flag != t[i].short_flag);
        }
        saved += t[i].ckpt >= 0;
    }
    CHECK(saved == 24); /* the 23 numbers version 1 stored, and the data path */
    CHECK(andrea_train_option_find("lr")->ckpt == (long)offsetof(andrea_ckpt_state, lr));
    CHECK(andrea_train_option_find("no-such-flag") == NULL);
}

static void test_describe(void) {
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.seq = 64;
    char line[512];
    andrea_train_options_describe(&o, line, sizeof line);
    CHECK(strcmp(line, "B=12 T=64 accum=1 steps=2000 lr=0.001->0.0001 warmup=100 betas=0.9/0.99 "
                       "eps=1e-08 wd=0.1 clip=1 seed=1337") == 0);
    if (strcmp(line, "B=12 T=64 accum=1 steps=2000 lr=0.001->0.0001 warmup=100 betas=0.9/0.99 "
                     "eps=1e-08 wd=0.1 clip=1 seed=1337") != 0)
        fprintf(stderr, "  got '%s'\n", line);
}

static void test_from_checkpoint(void) {
    const char *dir = getenv("ANDREA_TMP") ? getenv("ANDREA_TMP") : "/tmp";
    char cmd[600], path[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/opts.bin", dir);
    andrea_config c;
    andrea_config_preset("tiny", &c);
    andrea_model *m = andrea_model_create(&c, 1);
    static andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.batch = 3;
    o.seq = 31;
    o.lr = 2.5e-3f;
    o.seed = 99;
    o.data_path = "corpus.txt";
    o.out_dir = "not saved";
    andrea_train_options_to_state(&o, &st);
    CHECK(strcmp(st.data_path, "corpus.txt") == 0 && st.batch == 3 && st.seed == 99);
    CHECK(andrea_checkpoint_save(path, m, NULL, NULL, &st, NULL, 0) == 0);
    andrea_train_options r;
    andrea_train_options_default(&r);
    andrea_config rc;
    CHECK(andrea_train_options_from_checkpoint(path, &rc, &r) == 0);
    CHECK(memcmp(&rc, &c, sizeof c) == 0);
    CHECK(r.batch == 3 && r.seq == 31 && r.lr == 2.5e-3f && r.seed == 99);
    CHECK(r.resume_path == path && strcmp(r.out_dir, "out") == 0);
    CHECK(r.data_path == NULL); /* strings stay with the checkpoint: andrea_train reads them */
    andrea_model_free(m);
}

static void test_validate(void) {
    andrea_config c;
    andrea_config_preset("tiny", &c); /* ctx 32 */
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.data_path = "x";
    o.seq = 32;
    CHECK(andrea_train_options_validate(&c, &o) == 0);
    o.seq = 64;
    CHECK(andrea_train_options_validate(&c, &o) == ANDREA_TRAIN_BAD_OPTIONS);
    CHECK(strstr(andrea_error(), "--seq 64 is longer than the model context 32") != NULL);
    o.seq = 32;
    o.data_path = NULL;
    CHECK(andrea_train_options_validate(&c, &o) == ANDREA_TRAIN_BAD_OPTIONS);
    CHECK(strstr(andrea_error(), "--data") != NULL);
}

int main(void) {
    test_defaults();
    test_rows();
    test_describe();
    test_from_checkpoint();
    test_validate();
    return tu_finish("test_run_options");
}
