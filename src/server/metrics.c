/*
 * metrics.c - the server's counters and latency histograms, and their Prometheus text
 * (GET /metrics). One mutex: every update is a few additions, far cheaper than a token.
 */
#include "metrics.h"

#include <string.h>

const char *const serve_route_path[MX_ROUTES] = {
    "/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/tokenize",
    "/detokenize", "/props", "/health", "/metrics", "/", "/favicon.ico", "/attention", "other"};
static const int CODES[MX_CODES] = {200, 204, 400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 503, 0};
/* seconds: from a fast token on a tiny model to a long answer of a big one */
static const double BOUNDS[MX_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,    1,     2.5,  5,     10,   30};
static const char *const HIST_NAME[MX_HISTS] = {"andrea_time_to_first_token_seconds",
                                                "andrea_inter_token_seconds",
                                                "andrea_request_duration_seconds"};
static const char *const HIST_HELP[MX_HISTS] = {
    "Time from a request's arrival to its first generated token.",
    "Time between consecutive tokens of one sequence.",
    "Time from a completion request's arrival to its last byte queued."};

void serve_metrics_init(serve_metrics *mx) {
    memset(mx, 0, sizeof *mx);
    pthread_mutex_init(&mx->mu, NULL);
}

void serve_metrics_request(serve_metrics *mx, int route, int status) {
    int r = route >= 0 && route < MX_ROUTES ? route : R_NONE, c = MX_CODES - 1; /* code 0: any other */
    for (int i = 0; i < MX_CODES - 1; i++)
        if (CODES[i] == status) c = i;
    pthread_mutex_lock(&mx->mu);
    mx->requests[r][c]++;
    pthread_mutex_unlock(&mx->mu);
}

void serve_metrics_observe(serve_metrics *mx, int hist, double seconds) {
    int b = 0;
    while (b < MX_BUCKETS && seconds > BOUNDS[b]) b++;
    pthread_mutex_lock(&mx->mu);
    serve_hist *h = &mx->hist[hist];
    h->count[b]++;
    h->sum += seconds;
    h->n++;
    pthread_mutex_unlock(&mx->mu);
}

void serve_metrics_add(serve_metrics *mx, uint64_t *counter, uint64_t n) {
    pthread_mutex_lock(&mx->mu);
    *counter += n;
    pthread_mutex_unlock(&mx->mu);
}

static void counter(andrea_writer *w, const char *name, const char *help, uint64_t v) {
    andrea_writef(w, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                  (unsigned long long)v);
}

static void gauge(andrea_writer *w, const char *name, const char *help, long v) {
    andrea_writef(w, "# HELP %s %s\n# TYPE %s gauge\n%s %ld\n", name, help, name, name, v);
}

static void histogram(andrea_writer *w, int k, const serve_hist *h) {
    const char *name = HIST_NAME[k];
    andrea_writef(w, "# HELP %s %s\n# TYPE %s histogram\n", name, HIST_HELP[k], name);
    uint64_t cum = 0;
    for (int b = 0; b < MX_BUCKETS; b++) {
        cum += h->count[b];
        andrea_writef(w, "%s_bucket{le=\"%g\"} %llu\n", name, BOUNDS[b], (unsigned long long)cum);
    }
    andrea_writef(w, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                  (unsigned long long)h->n, name, h->sum, name, (unsigned long long)h->n);
}

int serve_metrics_write(serve_metrics *mx, andrea_writer *w, int queued, int active, int slots) {
    pthread_mutex_lock(&mx->mu);
    serve_metrics m = *mx; /* a consistent copy; write outside the lock */
    pthread_mutex_unlock(&mx->mu);
    andrea_write_str(w, "# HELP andrea_requests_total HTTP requests by route and status code "
                        "(code 0: any other).\n# TYPE andrea_requests_total counter\n");
    for (int r = 0; r < MX_ROUTES; r++)
        for (int c = 0; c < MX_CODES; c++)
            if (m.requests[r][c])
                andrea_writef(w, "andrea_requests_total{route=\"%s\",code=\"%d\"} %llu\n", serve_route_path[r],
                              CODES[c], (unsigned long long)m.requests[r][c]);
    counter(w, "andrea_prompt_tokens_total", "Prompt tokens (those from a cache included).", m.prompt_tokens);
    counter(w, "andrea_prompt_cached_tokens_total", "Prompt tokens taken from a slot's cache (not prefilled again).", m.cached_tokens);
    counter(w, "andrea_completion_tokens_total", "Tokens generated.", m.completion_tokens);
    counter(w, "andrea_batch_steps_total", "Batched decoding steps.", m.batch_steps);
    counter(w, "andrea_batch_sequences_total", "Sequences summed over batched steps (divide by "
            "steps for the mean batch size).", m.batch_seqs);
    counter(w, "andrea_rejected_queue_full_total", "Requests refused with 429.", m.rejected_full);
    counter(w, "andrea_timeouts_total", "Requests stopped by the per-request timeout.", m.timeouts);
    counter(w, "andrea_cancelled_total", "Requests whose client went away.", m.cancelled);
    gauge(w, "andrea_queue_depth", "Requests waiting for a batch slot.", queued);
    gauge(w, "andrea_active_sequences", "Sequences in the running batch.", active);
    gauge(w, "andrea_batch_slots", "Sequences the batch holds (--parallel).", slots);
    for (int k = 0; k < MX_HISTS; k++) histogram(w, k, &m.hist[k]);
    return andrea_writer_status(w, "metrics");
}
