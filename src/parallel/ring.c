/* ring.c - ring reduce-scatter + all-gather over MPI_Isend/MPI_Irecv (ring.h). */
#ifdef ANDREA_HAVE_MPI
#include "parallel/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct andrea_ring {
    MPI_Comm comm;
    float *buf, *tmp;   /* tmp: one chunk received, before it is added */
    uint16_t *wire;     /* bf16: the chunk being sent, and (after it) the one received */
    size_t n, cmax;     /* cmax: the largest chunk */
    int rank, size, tag, bf16;
    int step;           /* 0 .. 2 (size - 1): reduce-scatter steps, then all-gather steps */
    int posted;         /* this step's send and receive are in flight */
    MPI_Request req[2];
};

/* Chunk c of the buffer: [lo, hi). Chunks differ by at most one float. */
static void chunk(const andrea_ring *op, int c, size_t *lo, size_t *hi) {
    size_t q = op->n / (size_t)op->size, r = op->n % (size_t)op->size, uc = (size_t)c;
    *lo = uc * q + (uc < r ? uc : r);
    *hi = *lo + q + (uc < r);
}

static int mod(int a, int m) { return ((a % m) + m) % m; }

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

/* Step s < N-1 (reduce-scatter): send chunk rank-s, receive chunk rank-s-1 and add it.
 * Step s >= N-1 (all-gather, t = s-(N-1)): send chunk rank+1-t (complete here), receive
 * chunk rank-t into place. After the reduce-scatter rank r holds chunk r+1 summed. */
static int post(andrea_ring *op) {
    int N = op->size, s = op->step, right = (op->rank + 1) % N, left = mod(op->rank - 1, N);
    int gather = s >= N - 1, t = gather ? s - (N - 1) : s;
    int send_c = gather ? mod(op->rank + 1 - t, N) : mod(op->rank - t, N);
    int recv_c = gather ? mod(op->rank - t, N) : mod(op->rank - t - 1, N);
    size_t slo, shi, rlo, rhi;
    chunk(op, send_c, &slo, &shi);
    chunk(op, recv_c, &rlo, &rhi);
    int rc;
    if (op->bf16) { /* half the bytes: the sender rounds, the receiver widens */
        uint16_t *out = op->wire, *in = op->wire + op->cmax;
        /* the chunk this rank completed goes out rounded, and stays rounded here too, so
         * that every rank ends with the same bits */
        for (size_t i = slo; i < shi; i++) {
            out[i - slo] = to_bf16(op->buf[i]);
            if (gather) op->buf[i] = from_bf16(out[i - slo]);
        }
        rc = MPI_Irecv(in, (int)(rhi - rlo), MPI_UINT16_T, left, op->tag, op->comm, &op->req[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(out, (int)(shi - slo), MPI_UINT16_T, right, op->tag, op->comm,
                           &op->req[1]);
    } else {
        float *into = gather ? op->buf + rlo : op->tmp;
        rc = MPI_Irecv(into, (int)(rhi - rlo), MPI_FLOAT, left, op->tag, op->comm, &op->req[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(op->buf + slo, (int)(shi - slo), MPI_FLOAT, right, op->tag, op->comm,
                           &op->req[1]);
    }
    op->posted = rc == MPI_SUCCESS;
    return rc;
}

andrea_ring *andrea_ring_start(MPI_Comm comm, float *buf, size_t n, int tag, int bf16,
                               int *mpi_rc) {
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
    op->cmax = n / (size_t)op->size + 1;
    op->tmp = malloc(sizeof(float) * op->cmax);
    op->wire = bf16 ? malloc(sizeof(uint16_t) * 2 * op->cmax) : NULL;
    if (!op->tmp || (bf16 && !op->wire)) {
        andrea_ring_free(op);
        return NULL;
    }
    if (op->size > 1 && (*mpi_rc = post(op)) != MPI_SUCCESS) {
        andrea_ring_free(op);
        return NULL;
    }
    return op;
}

int andrea_ring_progress(andrea_ring *op, int *done) {
    int N = op->size;
    while (op->step < 2 * (N - 1)) {
        int ok = 0, rc = MPI_Testall(2, op->req, &ok, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        if (!ok) break;
        size_t lo, hi;
        const uint16_t *in = op->wire ? op->wire + op->cmax : NULL;
        if (op->step < N - 1) { /* add the received chunk into ours */
            chunk(op, mod(op->rank - op->step - 1, N), &lo, &hi);
            if (in)
                for (size_t i = lo; i < hi; i++) op->buf[i] += from_bf16(in[i - lo]);
            else
                for (size_t i = lo; i < hi; i++) op->buf[i] += op->tmp[i - lo];
        } else if (in) { /* a finished chunk, widened into place */
            chunk(op, mod(op->rank - (op->step - (N - 1)), N), &lo, &hi);
            for (size_t i = lo; i < hi; i++) op->buf[i] = from_bf16(in[i - lo]);
        }
        op->posted = 0;
        if (++op->step < 2 * (N - 1) && (rc = post(op)) != MPI_SUCCESS) return rc;
    }
    *done = op->step >= 2 * (N - 1);
    return MPI_SUCCESS;
}

void andrea_ring_free(andrea_ring *op) {
    if (!op) return;
    if (op->posted) { /* a broken run: the peers are gone; drop what is in flight */
        MPI_Cancel(&op->req[0]);
        MPI_Request_free(&op->req[0]);
        MPI_Request_free(&op->req[1]);
    }
    free(op->tmp);
    free(op->wire);
    free(op);
}
#else
typedef int andrea_ring_unused; /* built without MPI: nothing here */
#endif
