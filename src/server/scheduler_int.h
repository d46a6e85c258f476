/* scheduler_int.h - the scheduler's own state (scheduler.c) and one sequence's sampling
 * (sequence.c); nothing outside the scheduler thread reads them. */
#ifndef ANDREA_SERVER_SCHEDULER_INT_H
#define ANDREA_SERVER_SCHEDULER_INT_H

#include "infer/stops.h"
#include "scheduler.h"

typedef struct {
    serve_job *job;
    int choice;
    andrea_kv *kv;
    andrea_rng rng;
    andrea_ids hist;        /* prompt and generated tokens (the repeat penalty's window) */
    andrea_stops text;      /* text not yet released, and the stop strings it is matched against */
    andrea_grammar_state *gs; /* constrained decoding: where the text is in the grammar */
    serve_tokprob *plp;     /* log-probabilities of tokens not yet released */
    int n_plp, cap_plp;
    int opened;             /* chat streams: the role chunk was sent */
    double t_last;          /* when its last token was sampled */
    const char *finish;     /* set when the sequence ends this turn */
    /* released this turn: text and tokens handed over under the lock */
    size_t rel_len;
    int rel_lp;
} seq;

struct serve_sched {
    const serve_config *cfg;
    serve_metrics *mx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int stop;
    serve_job **queue;      /* ring of cfg->queue + cfg->parallel */
    int q_head, q_len, q_cap;
    int busy;               /* sequences admitted or running: the free slots are parallel - busy */
    seq *seqs;              /* (parallel): [0, n_seqs) in the batch */
    int n_seqs;
    andrea_kv **pool;       /* free caches */
    andrea_ids *pool_toks;  /* (parallel) the tokens each free cache holds: the prompt cache */
    int n_pool;
    andrea_kv_batch *batch;
    andrea_context *ctx;
    andrea_kv **step_kv;
    int32_t *step_tok;
    int32_t *next;          /* (parallel) each sequence's sampled token */
    float *biased;          /* (V) logits plus a request's logit_bias and penalties */
    int *counts;            /* (V) zero between uses: the penalties' token counts */
};

/* Samples q's next token from its logits (biases, penalties, the grammar), records it and
 * decides what text can be released (q->rel_len, q->finish). No lock: q is the scheduler's. */
void seq_sample(serve_sched *s, seq *q, int32_t *next);
/* echo: the prompt's text (and log-probabilities) first; prompt_logits (T, V) from a fresh
 * prefill in one pass that keeps every position's (andrea_kv_prefill_all; read only with
 * logprobs). 0, or -1 on out of memory. */
int seq_echo(serve_sched *s, seq *q, const float *prompt_logits);

#endif
