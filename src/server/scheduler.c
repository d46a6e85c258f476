/*
 * scheduler.c - continuous batching. One thread owns the model's decoding state: a pool
 * of --parallel KV caches, one andrea_kv_batch and one context for prefills. Each turn
 * of its loop
 *   1. drops sequences whose client went away or whose deadline passed,
 *   2. admits queued jobs while batch slots are free (each choice prefilled in one pass),
 *   3. samples one token for every sequence from its logits, releases the text that can
 *      no longer be part of a stop string, and hands it to the job (an SSE chunk when
 *      streamed),
 *   4. advances every sequence still running by one token in ONE batched step.
 * So a request joins and leaves the running batch between steps, and every weight row is
 * read once per step for all of them. Connections only touch a job's shared fields
 * (scheduler.h) under the lock; the model is the scheduler's alone.
 */
#include "scheduler_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sse.h"
#include "util/error.h"
#include "util/perf.h"

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void deadline_ts(double wait_s, struct timespec *ts) {
    double t = wall_now() + wait_s;
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
}

/* ---- jobs --------------------------------------------------------------------------- */

serve_job *serve_job_new(serve_params *p, const char *model) {
    static unsigned long counter;
    serve_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->choices = calloc((size_t)p->n, sizeof *j->choices);
    if (!j->choices) {
        free(j);
        return NULL;
    }
    j->p = *p;
    memset(p, 0, sizeof *p);
    j->created = (long)time(NULL);
    j->model = model;
    snprintf(j->id, sizeof j->id, "%s-%lx%04lx", j->p.kind == SERVE_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long)j->created, __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffff);
    pthread_cond_init(&j->cond, NULL);
    j->t_submit = andrea_now();
    j->refs = 1;
    return j;
}

static void job_free(serve_job *j) {
    for (int c = 0; c < j->p.n; c++) {
        andrea_bytes_free(&j->choices[c].text);
        free(j->choices[c].lp);
    }
    free(j->choices);
    andrea_buffer_free(&j->out);
    serve_params_free(&j->p);
    pthread_cond_destroy(&j->cond);
    free(j);
}

void serve_job_retain(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    j->refs++;
    pthread_mutex_unlock(&s->mu);
}

void serve_job_release(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) job_free(j);
}

void serve_job_cancel(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    if (!j->done) j->cancelled = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

int serve_sched_submit(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    /* --queue requests may wait beyond those a free slot takes at the next turn */
    int free_slots = s->cfg->parallel - s->busy;
    int full = s->q_len >= s->cfg->queue + (free_slots > 0 ? free_slots : 0) || s->q_len == s->q_cap || s->stop;
    if (!full) {
        j->refs++;
        j->deadline = j->t_submit + s->cfg->timeout;
        s->queue[(s->q_head + s->q_len++) % s->q_cap] = j;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->mu);
    if (full) serve_metrics_add(s->mx, &s->mx->rejected_full, 1);
    return full ? -1 : 0;
}

int serve_job_wait_done(serve_sched *s, serve_job *j, double wait_s) {
    struct timespec ts;
    deadline_ts(wait_s, &ts);
    pthread_mutex_lock(&s->mu);
    while (!j->done && pthread_cond_timedwait(&j->cond, &s->mu, &ts) != ETIMEDOUT) {}
    int done = j->done;
    pthread_mutex_unlock(&s->mu);
    return done;
}

int serve_job_take(serve_sched *s, serve_job *j, char *buf, size_t max, size_t *n, double wait_s) {
    struct timespec ts;
    deadline_ts(wait_s, &ts);
    pthread_mutex_lock(&s->mu);
    while (!j->done && j->out_sent == j->out.len &&
           pthread_cond_timedwait(&j->cond, &s->mu, &ts) != ETIMEDOUT) {}
    size_t k = j->out.len - j->out_sent;
    if (k > max) k = max;
    if (k) memcpy(buf, j->out.data + j->out_sent, k);
    j->out_sent += k;
    if (j->out_sent == j->out.len) j->out_sent = j->out.len = 0; /* the buffer is reused */
    int finished = j->done && j->out.len == 0;
    pthread_mutex_unlock(&s->mu);
    *n = k;
    return finished;
}

void serve_sched_load(serve_sched *s, int *queued, int *active) {
    pthread_mutex_lock(&s->mu);
    *queued = s->q_len;
    *active = s->n_seqs;
    pthread_mutex_unlock(&s->mu);
}

/* Under the lock: the job ends with an error (408, 500, ...). */
static void job_fail(serve_job *j, const serve_error *e) {
    if (j->done) return;
    j->failed = 1;
    j->err = *e;
    if (j->p.stream) {
        andrea_writer w = andrea_writer_buffer(&j->out);
        sse_error(&w, e);
    }
    j->done = 1;
    pthread_cond_broadcast(&j->cond);
}

/* ---- a sequence's output --------------------------------------------------------- */

/* Under the lock: hands q's released text and log-probabilities to its job. */
static void seq_deliver(serve_sched *s, seq *q) {
    serve_job *j = q->job;
    serve_choice *ch = &j->choices[q->choice];
    int n_lp = q->rel_len || q->finish ? q->n_plp : 0;
    if (!j->done && !j->cancelled && (q->rel_len || n_lp || q->finish)) {
        int held = j->p.stream && j->p.tools; /* a call or not is known at the end */
        if (held) {
            if (q->rel_len) andrea_bytes_append(&ch->text, q->text.pend.data, q->rel_len);
            if (q->finish) ch->finish = q->finish;
            andrea_writer w = andrea_writer_buffer(&j->out);
            if (!q->opened) sse_chunk(&w, j, s->cfg->tok, q->choice, "", 0, NULL, 0, NULL, 1);
            if (q->finish) sse_tool_answer(&w, j, s->cfg->tok, q->choice);
        } else if (j->p.stream) {
            andrea_writer w = andrea_writer_buffer(&j->out);
            if (j->p.kind == SERVE_CHAT && !q->opened)
                sse_chunk(&w, j, s->cfg->tok, q->choice, "", 0, NULL, 0, NULL, 1);
            if (q->rel_len || n_lp)
                sse_chunk(&w, j, s->cfg->tok, q->choice, q->rel_len ? (const void *)q->text.pend.data : "",
                          q->rel_len, q->plp, n_lp, NULL, 0);
            if (q->finish)
                sse_chunk(&w, j, s->cfg->tok, q->choice, "", 0, NULL, 0, q->finish, 0);
        } else if (n_lp) {
            serve_tokprob *lp = realloc(ch->lp, sizeof *lp * (size_t)(ch->n_lp + n_lp));
            if (lp) {
                memcpy(lp + ch->n_lp, q->plp, sizeof *lp * (size_t)n_lp);
                ch->lp = lp;
                ch->n_lp += n_lp;
            }
        }
        q->opened = 1;
        if (!held && q->rel_len) andrea_bytes_append(&ch->text, q->text.pend.data, q->rel_len);
        if (!held && q->finish) ch->finish = q->finish;
        pthread_cond_broadcast(&j->cond);
    }
    andrea_stops_release(&q->text, q->rel_len);
    if (n_lp) memmove(q->plp, q->plp + n_lp, sizeof *q->plp * (size_t)(q->n_plp - n_lp));
    q->n_plp -= n_lp;
    q->rel_len = 0;
}

/* ---- the batch ------------------------------------------------------------------------ */

/* Under the lock: the scheduler lets go of j (its reference), and j ends if it had not. */
static void job_leave(serve_sched *s, serve_job *j) {
    if (!j->done) {
        if (j->p.stream) {
            andrea_writer w = andrea_writer_buffer(&j->out);
            sse_end(&w, j);
        }
        j->done = 1;
        pthread_cond_broadcast(&j->cond);
    }
    if (j->cancelled) serve_metrics_add(s->mx, &s->mx->cancelled, 1);
    serve_metrics_observe(s->mx, MX_REQUEST, andrea_now() - j->t_submit);
    if (--j->refs == 0) job_free(j);
}

/* Under the lock: sequence i leaves the batch; its cache goes back to the pool. */
static void seq_retire(serve_sched *s, int i) {
    seq *q = &s->seqs[i];
    serve_job *j = q->job;
    /* the cache keeps what was fed to it, for a later prompt that starts the same way */
    if (q->hist.len > (size_t)andrea_kv_pos(q->kv)) q->hist.len = (size_t)andrea_kv_pos(q->kv);
    andrea_ids_free(&s->pool_toks[s->n_pool]);
    s->pool_toks[s->n_pool] = q->hist;
    s->pool[s->n_pool++] = q->kv;
    memset(&q->hist, 0, sizeof q->hist);
    andrea_stops_free(&q->text);
    free(q->plp);
    andrea_grammar_state_free(q->gs);
    s->seqs[i] = s->seqs[--s->n_seqs];
    s->busy--;
    if (--j->live == 0) job_leave(s, j);
}

static void drop_expired(serve_sched *s) {
    double now = andrea_now();
    serve_error e;
    serve_fail(&e, 408, "timeout_error", NULL, "timeout", "the request took longer than the "
               "server's --timeout of %g s", s->cfg->timeout);
    for (int i = s->n_seqs - 1; i >= 0; i--) {
        serve_job *j = s->seqs[i].job;
        if (!j->cancelled && now <= j->deadline) continue;
        if (!j->cancelled && !j->done) {
            serve_metrics_add(s->mx, &s->mx->timeouts, 1);
            job_fail(j, &e);
        }
        seq_retire(s, i);
    }
    int n = s->q_len; /* the queue, kept in order */
    for (int k = 0, kept = 0; k < n; k++) {
        serve_job *j = s->queue[(s->q_head + k) % s->q_cap];
        if (j->cancelled || now > j->deadline) {
            if (!j->cancelled) serve_metrics_add(s->mx, &s->mx->timeouts, 1), job_fail(j, &e);
            s->q_len--;
            job_leave(s, j);
        } else {
            s->queue[(s->q_head + kept++) % s->q_cap] = j;
        }
    }
}

/* Takes a free cache for prompt p off the pool (it is then s->pool[s->n_pool]): with
 * reuse, the one whose tokens share the longest start with the prompt, and returns how
 * many of its positions stand (at most all but the prompt's last token, whose logits the
 * first draw needs). A continued prompt is then fed one token at a time from there, a
 * fresh one in one batched pass. */
static int pool_take(serve_sched *s, const serve_params *p, int reuse) {
    int best = s->n_pool - 1;
    size_t best_len = 0;
    for (int i = 0; reuse && i < s->n_pool; i++) {
        const andrea_ids *t = &s->pool_toks[i];
        size_t k = 0;
        while (k < t->len && k + 1 < p->prompt.len && t->data[k] == p->prompt.data[k]) k++;
        if (k > best_len) best = i, best_len = k;
    }
    s->n_pool--;
    andrea_kv *kv = s->pool[best];
    andrea_ids toks = s->pool_toks[best];
    s->pool[best] = s->pool[s->n_pool];
    s->pool_toks[best] = s->pool_toks[s->n_pool];
    s->pool[s->n_pool] = kv;
    s->pool_toks[s->n_pool] = toks;
    /* the rest is fed one token at a time, a fresh prompt in one batched pass: on
     * andrea-12m (2 cores) 3 new tokens of 200 took 38 ms against 292 ms afresh, but ~20
     * new of 56 took longer than afresh; so the cache is used when it holds 7/8 or more */
    size_t rest = p->prompt.len - best_len;
    return best_len && rest * 8 <= p->prompt.len ? (int)best_len : 0;
}

/* Without the lock: the job's choices join the batch at seqs[at..], each prefilled in one
 * pass. */
static void job_start(serve_sched *s, serve_job *j, int at) {
    static uint64_t clock_seed;
    const serve_params *p = &j->p;
    for (int c = 0; c < p->n; c++) {
        seq *q = &s->seqs[at + c];
        memset(q, 0, sizeof *q);
        q->job = j;
        q->choice = c;
        andrea_stops_init(&q->text, (const char *const *)p->stops, p->n_stops);
        /* echo with logprobs needs the logits of every prompt position: a fresh prefill
         * that keeps them all (any other prefill computes the last position's alone) */
        int reuse = pool_take(s, p, p->cache_prompt && !p->echo);
        q->kv = s->pool[s->n_pool];
        uint64_t seed = p->seed_given ? p->seed + (uint64_t)c
                                      : (uint64_t)(wall_now() * 1e6) + ++clock_seed;
        andrea_rng_seed(&q->rng, seed);
        if (andrea_kv_truncate(q->kv, reuse) ||
            !(p->echo && p->logprobs ? andrea_kv_prefill_all : andrea_kv_prefill_ctx)(
                s->cfg->m, s->ctx, q->kv, p->prompt.data + reuse, (int)p->prompt.len - reuse) ||
            andrea_ids_push(&q->hist, 0))
            q->finish = "error";
        serve_metrics_add(s->mx, &s->mx->cached_tokens, (uint64_t)reuse);
        q->hist.len = 0;
        for (size_t i = 0; i < p->prompt.len && !q->finish; i++) andrea_ids_push(&q->hist, p->prompt.data[i]);
        if (!q->finish && p->echo && seq_echo(s, q, andrea_context_logits(s->ctx))) q->finish = "error";
        if (!q->finish && p->grammar && !(q->gs = andrea_grammar_start(p->grammar))) q->finish = "error";
        if (!q->finish && p->max_tokens == 0) { /* the prompt scored, nothing generated */
            q->finish = "length";
            q->rel_len = q->text.pend.len;
        }
    }
    serve_metrics_add(s->mx, &s->mx->prompt_tokens, p->prompt.len * (size_t)p->n);
}

/* Prompt tokens prefilled per turn at most (but always one job): the running sequences
 * wait for the prefills of a turn, so a burst of arrivals is spread over a few turns. */
enum { PREFILL_BUDGET = 512 };

/* Under the lock: queued jobs whose choices fit the free slots, in order. */
static int admit(serve_sched *s, serve_job **out) {
    int n = 0, free_slots = s->cfg->parallel - s->busy;
    size_t budget = PREFILL_BUDGET;
    while (s->q_len) {
        serve_job *j = s->queue[s->q_head];
        size_t cost = j->p.prompt.len * (size_t)j->p.n;
        if (j->p.n > free_slots || (n && cost > budget)) break;
        budget = cost < budget ? budget - cost : 0;
        free_slots -= j->p.n;
        s->busy += j->p.n;
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        j->live = j->p.n;
        out[n++] = j;
    }
    return n;
}

/* Under the lock: every sequence hands over its output; the finished ones leave. */
static void deliver_all(serve_sched *s) {
    serve_error e;
    serve_fail(&e, 500, "server_error", NULL, NULL, "decoding failed: %s", andrea_error());
    for (int i = s->n_seqs - 1; i >= 0; i--) {
        seq *q = &s->seqs[i];
        if (q->finish && strcmp(q->finish, "error") == 0) {
            job_fail(q->job, &e);
            seq_retire(s, i);
            continue;
        }
        seq_deliver(s, q);
        if (q->finish) seq_retire(s, i);
    }
}

static void *sched_main(void *arg) {
    serve_sched *s = arg;
    serve_job **admitted = malloc(sizeof *admitted * (size_t)s->cfg->parallel);
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        drop_expired(s);
        if (s->n_seqs == 0 && s->q_len == 0) {
            struct timespec ts;
            deadline_ts(1.0, &ts);
            pthread_cond_timedwait(&s->wake, &s->mu, &ts);
            continue;
        }
        int n_adm = admitted ? admit(s, admitted) : 0, n = s->n_seqs;
        pthread_mutex_unlock(&s->mu);
        /* the scheduler's own arrays: the connections never read them */
        for (int k = 0; k < n_adm; k++) {
            job_start(s, admitted[k], n);
            n += admitted[k]->p.n;
        }
        int32_t *next = s->next;
        for (int i = 0; i < n; i++)
            if (!s->seqs[i].finish) seq_sample(s, &s->seqs[i], &next[i]);
        pthread_mutex_lock(&s->mu);
        s->n_seqs = n;
        int n_step = 0;
        for (int i = 0; i < n; i++)
            if (!s->seqs[i].finish) {
                s->step_kv[n_step] = s->seqs[i].kv;
                s->step_tok[n_step++] = next[i];
            }
        serve_metrics_add(s->mx, &s->mx->completion_tokens, (uint64_t)n);
        deliver_all(s);
        pthread_mutex_unlock(&s->mu);
        if (n_step) { /* every running sequence, one token, one pass over the weights */
            if (!andrea_kv_batch_step(s->cfg->m, s->batch, s->step_kv, s->step_tok, n_step))
                fprintf(stderr, "serve: batched step failed: %s\n", andrea_error());
            serve_metrics_add(s->mx, &s->mx->batch_steps, 1);
            serve_metrics_add(s->mx, &s->mx->batch_seqs, (uint64_t)n_step);
        }
        pthread_mutex_lock(&s->mu);
    }
    /* shutting down: every job ends */
    while (s->n_seqs) seq_retire(s, s->n_seqs - 1);
    while (s->q_len) {
        serve_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        job_leave(s, j);
    }
    pthread_mutex_unlock(&s->mu);
    free(admitted);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------- */

static void sched_free(serve_sched *s) {
    for (int i = 0; i < s->n_pool; i++) andrea_kv_free(s->pool[i]);
    for (int i = 0; s->pool_toks && i < s->cfg->parallel; i++) andrea_ids_free(&s->pool_toks[i]);
    free(s->pool_toks);
    free(s->pool);
    free(s->seqs);
    free(s->queue);
    free(s->step_kv);
    free(s->step_tok);
    free(s->next);
    free(s->biased);
    free(s->counts);
    andrea_kv_batch_free(s->batch);
    andrea_context_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    free(s);
}

serve_sched *serve_sched_start(const serve_config *cfg, serve_metrics *mx) {
    serve_sched *s = calloc(1, sizeof *s);
    if (!s) return andrea_set_error("out of memory"), NULL;
    size_t P = (size_t)cfg->parallel;
    s->cfg = cfg;
    s->mx = mx;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->pool = calloc(P, sizeof *s->pool);
    s->pool_toks = calloc(P, sizeof *s->pool_toks);
    s->seqs = calloc(P, sizeof *s->seqs);
    s->q_cap = cfg->queue + cfg->parallel;
    s->queue = calloc((size_t)s->q_cap, sizeof *s->queue);
    s->step_kv = calloc(P, sizeof *s->step_kv);
    s->step_tok = calloc(P, sizeof *s->step_tok);
    s->next = calloc(P, sizeof *s->next);
    s->biased = calloc((size_t)andrea_model_config((andrea_model *)cfg->m)->vocab, sizeof *s->biased);
    s->counts = calloc((size_t)andrea_model_config((andrea_model *)cfg->m)->vocab, sizeof *s->counts);
    s->batch = andrea_kv_batch_create(cfg->m, cfg->parallel);
    s->ctx = andrea_context_create(cfg->m);
    int ok = s->pool && s->pool_toks && s->seqs && s->queue && s->step_kv && s->step_tok && s->next && s->biased && s->counts && s->batch && s->ctx;
    for (size_t i = 0; ok && i < P; i++) /* the caches of every slot, allocated once */
        if ((s->pool[i] = andrea_kv_create(cfg->m))) s->n_pool++;
        else ok = 0;
    if (!ok || pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        if (ok) andrea_set_error("cannot start the scheduler thread");
        sched_free(s);
        return NULL;
    }
    return s;
}

void serve_sched_stop(serve_sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    sched_free(s);
}
