/* respond.h - what http.c and routes.c share: the server, one request, and the answers
 * (respond.c), every one counted in /metrics by route and status. */
#ifndef ANDREA_SERVER_RESPOND_H
#define ANDREA_SERVER_RESPOND_H

#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>

#include "metrics.h"
#include "request.h"
#include "scheduler.h"
#include "server.h"

typedef struct conn_track { /* one open connection, for the header watchdog */
    int fd;
    double since;           /* opened, or its last request ended */
    int busy, killed;       /* busy: a whole request arrived and is being answered */
    struct conn_track *prev, *next;
} conn_track;

typedef struct {
    const serve_config *cfg;
    serve_sched *sched;
    serve_metrics mx;
    pthread_mutex_t track_mu;
    conn_track *tracked;
} server;

typedef struct { /* one request (MHD's con_cls) */
    int route;
    const char *url;
    int post;
    andrea_buffer body;
    int too_big;
    conn_track *ct;
    serve_job *job;   /* the connection's reference */
    double t0;        /* arrival: --timeout counts from here */
} request;

/* set by SIGINT/SIGTERM: waiting connections give up, then the daemon stops */
extern volatile sig_atomic_t serve_stop_signal;

enum MHD_Result serve_respond(server *sv, struct MHD_Connection *c, int route, int status,
                              const char *type, const void *data, size_t n);
/* The same, freeing b. */
enum MHD_Result serve_respond_buf(server *sv, struct MHD_Connection *c, int route, int status,
                                  const char *type, andrea_buffer *b);
enum MHD_Result serve_respond_error(server *sv, struct MHD_Connection *c, int route,
                                    const serve_error *e);
enum MHD_Result serve_respond_fail(server *sv, struct MHD_Connection *c, int route, int status,
                                   const char *type, const char *code, const char *msg);
/* Adds the --cors headers to r (none without --cors). */
void serve_cors_headers(const server *sv, struct MHD_Response *r);
/* Has the client's connection been reset (RST: it is gone)? A client that only shut its
 * sending side (EOF) still waits for its answer. */
int serve_peer_gone(struct MHD_Connection *c);
/* Has the client sent EOF (gone, or half-closed)? */
int serve_peer_eof(struct MHD_Connection *c);

/* The routes (routes.c). */
enum MHD_Result serve_route_get(server *sv, struct MHD_Connection *c, request *r);
enum MHD_Result serve_route_post(server *sv, struct MHD_Connection *c, request *r);

#endif
