/*
 * sequence.c - one sequence of the batch between two steps: its next token drawn from its
 * logits (logit_bias, OpenAI's penalties, the grammar's mask when the draw breaks it, then
 * the sampler), its log-probabilities, and how much of its text may be released: all but
 * what could still begin a stop string or finish a UTF-8 character (infer/stops.c, the
 * same code as andrea_generate()'s).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler_int.h"
#include "util/perf.h"

/* One more pending log-probability entry of q, or NULL. */
static serve_tokprob *new_logprob(seq *q) {
    if (q->n_plp == q->cap_plp) {
        int cap = q->cap_plp ? 2 * q->cap_plp : 16;
        serve_tokprob *p = realloc(q->plp, sizeof *p * (size_t)cap);
        if (!p) return NULL;
        q->plp = p;
        q->cap_plp = cap;
    }
    return &q->plp[q->n_plp++];
}

/* logits: the model's before token id (NULL for a text's first token: no log-probability). */
static int push_logprob(seq *q, const float *logits, int V, int32_t id, int n_top) {
    serve_tokprob *t = new_logprob(q);
    if (!t) return -1;
    t->id = id;
    t->n_top = 0;
    if (!logits) {
        t->logprob = NAN; /* written as null */
        return 0;
    }
    t->logprob = andrea_logprob(logits, V, id);
    /* the alternatives' log-probabilities differ from the chosen one's by their logits' */
    t->n_top = andrea_top_tokens(logits, V, n_top < V ? n_top : V, t->top_id);
    for (int k = 0; k < t->n_top; k++) t->top_lp[k] = logits[t->top_id[k]] - logits[id] + t->logprob;
    return 0;
}

/* OpenAI's penalties on out (V): each token generated so far loses frequency_penalty per
 * occurrence and presence_penalty once. */
static void apply_penalties(serve_sched *s, const seq *q, float *out) {
    const serve_params *p = &q->job->p;
    const int32_t *gen = q->hist.data + p->prompt.len;
    size_t n = q->hist.len - p->prompt.len;
    for (size_t i = 0; i < n; i++) s->counts[gen[i]]++;
    for (size_t i = 0; i < n; i++)
        if (s->counts[gen[i]]) {
            out[gen[i]] -= (float)s->counts[gen[i]] * p->frequency_penalty + p->presence_penalty;
            s->counts[gen[i]] = 0;
        }
}

/* Constrained decoding: every token whose bytes would break the grammar gets -inf, BOS
 * (the end of the text) too unless the text may end here. */
/* 1 when token v keeps the text in the grammar (BOS: when the text may end), 0, -1. */
static int grammar_allowed(serve_sched *s, const seq *q, int v) {
    if (v == andrea_tokenizer_bos(s->cfg->tok)) return andrea_grammar_can_end(q->gs);
    size_t nb = 0;
    const uint8_t *b = andrea_tokenizer_token_bytes(s->cfg->tok, v, &nb);
    return b && nb ? andrea_grammar_allows(q->job->p.grammar, q->gs, b, nb) : 0;
}

static int grammar_mask(serve_sched *s, const seq *q, float *out) {
    int V = andrea_model_config((andrea_model *)s->cfg->m)->vocab;
    for (int v = 0; v < V; v++) {
        int ok = grammar_allowed(s, q, v);
        if (ok < 0) return -1;
        if (!ok) out[v] = -INFINITY;
    }
    return 0;
}

/* Samples q's next token (no lock: q is the scheduler's) and decides what to release. */
void seq_sample(serve_sched *s, seq *q, int32_t *next) {
    const andrea_config *c = andrea_model_config((andrea_model *)s->cfg->m);
    const serve_params *p = &q->job->p;
    const float *logits = andrea_kv_logits(q->kv);
    serve_choice *ch = &q->job->choices[q->choice];
    int adjust = p->n_bias || p->frequency_penalty != 0 || p->presence_penalty != 0 || q->gs;
    /* (s->biased also takes the grammar's mask, when a draw needs it) */
    if (adjust) { /* reported log-probabilities stay the model's own */
        memcpy(s->biased, logits, sizeof(float) * (size_t)c->vocab);
        for (int i = 0; i < p->n_bias; i++) s->biased[p->bias_id[i]] += p->bias[i];
        apply_penalties(s, q, s->biased);
    }
    int tok = andrea_sample_ex(adjust ? s->biased : logits, c->vocab, &p->sampler, q->hist.data,
                               (int)q->hist.len, &q->rng);
    /* constrained: a draw the grammar allows stands (most do inside a string); otherwise
     * every token that breaks it is masked and the draw made again, as llama.cpp does.
     * Exact for greedy and for plain sampling (a rejection sampler of the masked
     * distribution); with top-k/top-p the nucleus is the unmasked one's first. */
    if (q->gs && tok >= 0 && grammar_allowed(s, q, tok) != 1) {
        if (grammar_mask(s, q, s->biased)) {
            q->finish = "error";
            return;
        }
        tok = andrea_sample_ex(s->biased, c->vocab, &p->sampler, q->hist.data, (int)q->hist.len, &q->rng);
    }
    double now = andrea_now();
    if (ch->n_tokens == 0) serve_metrics_observe(s->mx, MX_TTFT, now - q->job->t_submit);
    else serve_metrics_observe(s->mx, MX_TOKEN, now - q->t_last);
    q->t_last = now;
    *next = tok;
    if (tok < 0 || (p->logprobs && push_logprob(q, logits, c->vocab, tok, p->top_logprobs)) ||
        andrea_ids_push(&q->hist, tok)) {
        q->finish = "error";
        return;
    }
    if (tok == andrea_tokenizer_bos(s->cfg->tok)) { /* the end of a text: not part of it */
        q->finish = "stop";
        q->n_plp -= p->logprobs;
        q->rel_len = q->text.pend.len;
        return;
    }
    ch->n_tokens++;
    size_t nb = 0;
    const uint8_t *b = andrea_tokenizer_token_bytes(s->cfg->tok, tok, &nb);
    if ((b && andrea_stops_push(&q->text, b, nb)) ||
        (q->gs && andrea_grammar_advance(p->grammar, q->gs, b, nb))) {
        q->finish = "error";
        return;
    }
    size_t rel = 0; /* before the stop string, or what may be released now */
    if (andrea_stops_check(&q->text, &rel)) {
        q->finish = "stop";
        q->rel_len = rel;
    } else if (q->gs && !andrea_grammar_can_continue(q->gs)) { /* the grammar's text is complete */
        q->finish = "stop";
        q->rel_len = q->text.pend.len;
    } else if (ch->n_tokens >= p->max_tokens || andrea_kv_pos(q->kv) >= c->ctx) {
        q->finish = "length";
        q->rel_len = q->text.pend.len;
    } else {
        q->rel_len = rel;
    }
}

/* echo: the prompt's text and (with logprobs) its tokens' log-probabilities go first,
 * from the prefill's logits at every position (prompt_logits: (T, V), after a fresh
 * prefill in one pass, andrea_kv_prefill_all; read only with logprobs). */
int seq_echo(serve_sched *s, seq *q, const float *prompt_logits) {
    const serve_params *p = &q->job->p;
    int V = andrea_model_config((andrea_model *)s->cfg->m)->vocab;
    for (size_t i = 0; i < p->prompt.len; i++) {
        size_t nb = 0;
        const uint8_t *b = andrea_tokenizer_token_bytes(s->cfg->tok, p->prompt.data[i], &nb);
        if (b && andrea_stops_push(&q->text, b, nb)) return -1;
        const float *lg = i && prompt_logits ? prompt_logits + (i - 1) * (size_t)V : NULL;
        if (p->logprobs && push_logprob(q, lg, V, p->prompt.data[i], p->top_logprobs)) return -1;
    }
    andrea_stops_echoed(&q->text);
    return 0;
}

