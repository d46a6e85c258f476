/* ring.c - ring reduce-scatter + all-gather over MPI_Isend/MPI_Irecv (ring.h). */
#ifdef ANDREA_HAVE_MPI
#include "parallel/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How a chunk travels. Across machines (TCP): as pieces of RING_PIECE_BYTES, up to
 * RING_WINDOW in flight each way. Over TCP OpenMPI sends a message above its eager limit
 * (btl_tcp_eager_limit, 64 KB with its header) only after a handshake: the receiver's
 * clear-to-send goes back over the TCP stream that also carries the receiver's own data,
 * and with 2 ranks, where left and right are one peer, it queued behind this rank's whole
 * chunk: the two directions of a step ran one after the other (the 2-rank ring at 1.7x
 * libnbc's time, docs/distributed.md). A 32 KB piece goes eagerly, no handshake, so
 * nothing waits behind data; each piece is added, and sent on, as soon as it arrives.
 * Measured between two namespaces at 100 Mbit/s, 4 MB, 2 ranks: 32 KB pieces 348-351 ms,
 * 60 KB 349-391, 128 KB 369-518 (handshakes again), libnbc 369-386. 16 in flight (512 KB)
 * is past the knee (4 x 128 KB: 581 ms); eager sends complete once in the kernel's socket
 * buffer, so the window bounds memory, not the bytes on the wire.
 * On one machine (shared memory) every piece costs a handshake between two processes
 * that may not be running (2 cores, 4 ranks): 32 KB pieces took 1.3-1.4x as long at 16 MB
 * and 64 MB, so there a chunk goes whole, as one message, RING_WHOLE_WINDOW in flight. */
#define RING_PIECE_BYTES (32u * 1024u)
#define RING_WINDOW 16
#define RING_WHOLE_WINDOW 2

struct andrea_ring {
    MPI_Comm comm;
    float *buf;
    float *tmp;         /* fp32: received reduce-scatter pieces, before they are added */
    uint16_t *wire;     /* bf16: `window` pieces being sent, then as many received */
    size_t n, piece;    /* piece: the most floats in one piece */
    int rank, size, tag, bf16;
    int pieces;         /* pieces per chunk, the same for every chunk */
    int window;         /* messages in flight each way, at most RING_WINDOW */
    /* Messages, each way, in one order on every rank: step 0's pieces 0 .. pieces-1, then
     * step 1's, ... 2 (N - 1) steps. Both ends post them in that order with one tag, so
     * MPI's non-overtaking rule pairs them. Counters: posted, and completed (in order). */
    long total, sent, sent_done, recvd, recvd_done;
    MPI_Request sreq[RING_WINDOW], rreq[RING_WINDOW]; /* slot m % window: message m */
};

static int mod(int a, int m) { return ((a % m) + m) % m; }

/* [lo, hi) of k out of `parts` near-equal parts of [0, n) (they differ by at most 1) */
static void split(size_t n, size_t parts, size_t k, size_t *lo, size_t *hi) {
    size_t q = n / parts, r = n % parts;
    *lo = k * q + (k < r ? k : r);
    *hi = *lo + q + (k < r);
}

/* Message m's step, whether it is an all-gather step, and the chunk sent or received */
static int step_of(const andrea_ring *op, long m) { return (int)(m / op->pieces); }
static int is_gather(const andrea_ring *op, long m) { return step_of(op, m) >= op->size - 1; }

/* Step s < N-1 (reduce-scatter): send chunk rank-s, receive chunk rank-s-1 and add it.
 * Step s >= N-1 (all-gather, t = s-(N-1)): send chunk rank+1-t (complete here), receive
 * chunk rank-t into place. After the reduce-scatter rank r holds chunk r+1 summed. */
static int chunk_of(const andrea_ring *op, long m, int sending) {
    int N = op->size, s = step_of(op, m), t = s - (N - 1);
    if (t >= 0) return sending ? mod(op->rank + 1 - t, N) : mod(op->rank - t, N);
    return sending ? mod(op->rank - s, N) : mod(op->rank - s - 1, N);
}

/* The floats message m carries: piece m % pieces of its chunk */
static void range(const andrea_ring *op, long m, int sending, size_t *lo, size_t *hi) {
    size_t clo, chi;
    split(op->n, (size_t)op->size, (size_t)chunk_of(op, m, sending), &clo, &chi);
    split(chi - clo, (size_t)op->pieces, (size_t)(m % op->pieces), lo, hi);
    *lo += clo;
    *hi += clo;
}

/* fp32 -> bf16, rounded to nearest even (NaN kept a NaN), and back (exact) */
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t *send_slot(andrea_ring *op, long m) {
    return op->wire + (size_t)(m % op->window) * op->piece;
}
static uint16_t *recv_slot(andrea_ring *op, long m) {
    return op->wire + (size_t)(op->window + m % op->window) * op->piece;
}

static int post_send(andrea_ring *op, long m) {
    size_t lo, hi;
    range(op, m, 1, &lo, &hi);
    int right = (op->rank + 1) % op->size, cnt = (int)(hi - lo);
    MPI_Request *req = &op->sreq[m % op->window];
    if (!op->bf16)
        return MPI_Isend(op->buf + lo, cnt, MPI_FLOAT, right, op->tag, op->comm, req);
    /* half the bytes: the sender rounds, the receiver widens. A piece this rank completed
     * goes out rounded and stays rounded here too, so every rank ends with the same bits */
    uint16_t *out = send_slot(op, m);
    int gather = is_gather(op, m);
    for (size_t i = lo; i < hi; i++) {
        out[i - lo] = to_bf16(op->buf[i]);
        if (gather) op->buf[i] = from_bf16(out[i - lo]);
    }
    return MPI_Isend(out, cnt, MPI_UINT16_T, right, op->tag, op->comm, req);
}

static int post_recv(andrea_ring *op, long m) {
    size_t lo, hi;
    range(op, m, 0, &lo, &hi);
    int left = mod(op->rank - 1, op->size), cnt = (int)(hi - lo);
    MPI_Request *req = &op->rreq[m % op->window];
    if (op->bf16)
        return MPI_Irecv(recv_slot(op, m), cnt, MPI_UINT16_T, left, op->tag, op->comm, req);
    float *into = is_gather(op, m) ? op->buf + lo : op->tmp + (size_t)(m % op->window) * op->piece;
    return MPI_Irecv(into, cnt, MPI_FLOAT, left, op->tag, op->comm, req);
}

/* A received piece: added into ours (reduce-scatter), or widened into place (bf16
 * all-gather; fp32 all-gather pieces arrive in place) */
static void apply(andrea_ring *op, long m) {
    size_t lo, hi;
    range(op, m, 0, &lo, &hi);
    const uint16_t *in = op->bf16 ? recv_slot(op, m) : NULL;
    const float *tmp = op->tmp + (size_t)(m % op->window) * op->piece;
    if (!is_gather(op, m)) {
        if (in)
            for (size_t i = lo; i < hi; i++) op->buf[i] += from_bf16(in[i - lo]);
        else
            for (size_t i = lo; i < hi; i++) op->buf[i] += tmp[i - lo];
    } else if (in) {
        for (size_t i = lo; i < hi; i++) op->buf[i] = from_bf16(in[i - lo]);
    }
}

/* Retires the oldest send and receive while they are complete; *moved when any was */
static int retire(andrea_ring *op, int *moved) {
    int rc = MPI_SUCCESS, ok = 1;
    while (rc == MPI_SUCCESS && ok && op->sent_done < op->sent) {
        rc = MPI_Test(&op->sreq[op->sent_done % op->window], &ok, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && ok) {
            op->sent_done++;
            *moved = 1;
        }
    }
    ok = 1;
    while (rc == MPI_SUCCESS && ok && op->recvd_done < op->recvd) {
        rc = MPI_Test(&op->rreq[op->recvd_done % op->window], &ok, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && ok) {
            apply(op, op->recvd_done++);
            *moved = 1;
        }
    }
    return rc;
}

/* Posts every message whose data is ready and whose slot is free; *moved when any was.
 * A send after step 0 carries a piece this rank received (and added) one step before; a
 * receive into place (fp32 all-gather) overwrites the piece this rank sent N-1 steps
 * before, so waits for that send to complete. Sends go first: with the receive posted
 * first, OpenMPI 4.1 over TCP ran the two directions of each step one after the other
 * (docs/distributed.md). */
static int post_ready(andrea_ring *op, int *moved) {
    long P = op->pieces, back = (long)(op->size - 1) * P;
    int rc = MPI_SUCCESS;
    while (rc == MPI_SUCCESS && op->sent < op->total && op->sent - op->sent_done < op->window &&
           (op->sent < P || op->recvd_done > op->sent - P)) {
        rc = post_send(op, op->sent);
        if (rc == MPI_SUCCESS) {
            op->sent++;
            *moved = 1;
        }
    }
    while (rc == MPI_SUCCESS && op->recvd < op->total &&
           op->recvd - op->recvd_done < op->window &&
           (op->bf16 || op->recvd < back || op->sent_done > op->recvd - back)) {
        rc = post_recv(op, op->recvd);
        if (rc == MPI_SUCCESS) {
            op->recvd++;
            *moved = 1;
        }
    }
    return rc;
}

/* Sizes the pieces and the window, and allocates the slots: as many as can be in use */
static int layout(andrea_ring *op, int one_host) {
    size_t cmax = op->n / (size_t)op->size + 1;
    size_t most = one_host ? cmax : RING_PIECE_BYTES / (op->bf16 ? 2 : 4);
    op->pieces = (int)((cmax + most - 1) / most);
    op->piece = (cmax + (size_t)op->pieces - 1) / (size_t)op->pieces;
    op->total = 2L * (op->size - 1) * op->pieces;
    op->window = one_host ? RING_WHOLE_WINDOW : RING_WINDOW;
    /* fp32 needs a slot per reduce-scatter receive in flight; bf16 one per message */
    long reduce = (long)(op->size - 1) * op->pieces;
    size_t slots = (size_t)(op->bf16 ? op->window : (reduce < op->window ? reduce : op->window));
    if (op->bf16) op->wire = malloc(sizeof(uint16_t) * 2 * slots * op->piece);
    else op->tmp = malloc(sizeof(float) * (slots ? slots : 1) * op->piece);
    return op->bf16 ? op->wire != NULL : op->tmp != NULL;
}

andrea_ring *andrea_ring_start(MPI_Comm comm, float *buf, size_t n, int tag, int bf16,
                               int one_host, int *mpi_rc) {
    *mpi_rc = MPI_SUCCESS;
    andrea_ring *op = calloc(1, sizeof *op);
    if (!op) return NULL;
    op->comm = comm;
    op->buf = buf;
    op->n = n;
    op->tag = tag;
    op->bf16 = bf16;
    MPI_Comm_rank(comm, &op->rank);
    MPI_Comm_size(comm, &op->size);
    int moved = 0;
    if (!layout(op, one_host) || (*mpi_rc = post_ready(op, &moved)) != MPI_SUCCESS) {
        andrea_ring_free(op);
        return NULL;
    }
    return op;
}

int andrea_ring_progress(andrea_ring *op, int *done) {
    int rc = MPI_SUCCESS, moved = 1;
    while (rc == MPI_SUCCESS && moved) {
        moved = 0;
        rc = retire(op, &moved);
        if (rc == MPI_SUCCESS) rc = post_ready(op, &moved);
    }
    *done = op->sent_done == op->total && op->recvd_done == op->total;
    return rc;
}

void andrea_ring_free(andrea_ring *op) {
    if (!op) return;
    /* a broken run: the peers are gone; drop what is in flight */
    for (long m = op->recvd_done; m < op->recvd; m++) {
        MPI_Cancel(&op->rreq[m % op->window]);
        MPI_Request_free(&op->rreq[m % op->window]);
    }
    for (long m = op->sent_done; m < op->sent; m++) MPI_Request_free(&op->sreq[m % op->window]);
    free(op->tmp);
    free(op->wire);
    free(op);
}
#else
typedef int andrea_ring_unused; /* built without MPI: nothing here */
#endif
