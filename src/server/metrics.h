/* metrics.h - what /metrics reports (metrics.c): requests by route and status, tokens,
 * latencies as Prometheus histograms, and the scheduler's load. */
#ifndef ANDREA_SERVER_METRICS_H
#define ANDREA_SERVER_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "andrea_writer.h"

/* The routes (http.c dispatches on these, /metrics counts by them). */
enum {
    R_COMPLETIONS, R_CHAT, R_EMBEDDINGS, R_MODELS, R_TOKENIZE, R_DETOKENIZE, R_PROPS, R_HEALTH,
    R_METRICS, R_PAGE, R_FAVICON, R_ATTENTION, R_NONE, MX_ROUTES
};
extern const char *const serve_route_path[MX_ROUTES]; /* R_NONE: "other" */
enum { MX_CODES = 14, MX_BUCKETS = 14 };
enum { MX_TTFT = 0, MX_TOKEN, MX_REQUEST, MX_HISTS };

typedef struct {
    uint64_t count[MX_BUCKETS + 1]; /* per bucket (not cumulative); last: above every bound */
    double sum;
    uint64_t n;
} serve_hist;

typedef struct {
    pthread_mutex_t mu;
    uint64_t requests[MX_ROUTES][MX_CODES];
    uint64_t prompt_tokens, cached_tokens, completion_tokens, batch_steps, batch_seqs, rejected_full, timeouts,
        cancelled;
    serve_hist hist[MX_HISTS];
} serve_metrics;

void serve_metrics_init(serve_metrics *mx);
/* route: R_*, status: HTTP code */
void serve_metrics_request(serve_metrics *mx, int route, int status);
void serve_metrics_observe(serve_metrics *mx, int hist, double seconds);
void serve_metrics_add(serve_metrics *mx, uint64_t *counter, uint64_t n);
/* Prometheus text exposition format 0.0.4. */
int serve_metrics_write(serve_metrics *mx, andrea_writer *w, int queued, int active, int slots);

#endif
