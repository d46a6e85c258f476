/* respond.c - answers in one place: headers (Content-Type, Retry-After on 429,
 * WWW-Authenticate on 401, the --cors ones), OpenAI's error JSON, the metrics count, and
 * what a waiting connection learns of its client. */
#include "respond.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "sse.h"

volatile sig_atomic_t serve_stop_signal;

void serve_cors_headers(const server *sv, struct MHD_Response *r) {
    if (!sv->cfg->cors) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", sv->cfg->cors);
    MHD_add_response_header(r, "Vary", "Origin");
}

enum MHD_Result serve_respond(server *sv, struct MHD_Connection *c, int route, int status,
                              const char *type, const void *data, size_t n) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (type) MHD_add_response_header(r, "Content-Type", type);
    if (status == 429) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    serve_cors_headers(sv, r);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    serve_metrics_request(&sv->mx, route, status);
    return ok;
}

enum MHD_Result serve_respond_buf(server *sv, struct MHD_Connection *c, int route, int status,
                                  const char *type, andrea_buffer *b) {
    enum MHD_Result ok = serve_respond(sv, c, route, status, type, b->data ? b->data : "", b->len);
    andrea_buffer_free(b);
    return ok;
}

enum MHD_Result serve_respond_error(server *sv, struct MHD_Connection *c, int route,
                                    const serve_error *e) {
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    serve_error_json(&w, e);
    return serve_respond_buf(sv, c, route, e->status, "application/json", &b);
}

enum MHD_Result serve_respond_fail(server *sv, struct MHD_Connection *c, int route, int status,
                                   const char *type, const char *code, const char *msg) {
    serve_error e;
    serve_fail(&e, status, type, NULL, code, "%s", msg);
    return serve_respond_error(sv, c, route, &e);
}

static short peer_events(struct MHD_Connection *c, int *eof) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    *eof = 0;
    if (!ci) return POLLNVAL;
    struct pollfd p = {ci->connect_fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & POLLIN) {
        char ch;
        ssize_t k = recv(ci->connect_fd, &ch, 1, MSG_PEEK);
        *eof = k == 0;
        if (k < 0 && errno != EAGAIN && errno != EINTR) p.revents |= POLLERR;
    }
    return p.revents;
}

int serve_peer_gone(struct MHD_Connection *c) {
    int eof;
    return (peer_events(c, &eof) & (POLLERR | POLLHUP | POLLNVAL)) != 0;
}

int serve_peer_eof(struct MHD_Connection *c) {
    int eof;
    short ev = peer_events(c, &eof);
    return eof || (ev & (POLLERR | POLLHUP | POLLNVAL));
}
