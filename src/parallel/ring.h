/*
 * ring.h - a bandwidth-optimal all-reduce (sum of floats, in place) over MPI point-to-point:
 * a ring reduce-scatter then a ring all-gather, each rank sending 2 (N - 1) / N of the
 * buffer, whatever collective algorithm the MPI library would pick (OpenMPI's
 * non-blocking MPI_Iallreduce is a binomial tree: reduce to rank 0, then broadcast, the
 * whole buffer twice in sequence; docs/distributed.md). Non-blocking: an operation moves
 * on only inside andrea_ring_progress (the caller polls it, as MPI's own calls), so many
 * can be in flight while backward runs. Every rank gets the same bits (each chunk is
 * summed on one rank, in ring order, and copied to the others), and the same bits on a
 * rerun with the same ranks. Built only with MPI (dist_mpi.c uses it).
 */
#ifndef ANDREA_PARALLEL_RING_H
#define ANDREA_PARALLEL_RING_H

#include <mpi.h>
#include <stddef.h>

typedef struct andrea_ring andrea_ring;

/* Starts the sum of buf[0, n) over comm's ranks; tag distinguishes operations in flight
 * together (every rank starts the same sequence, so a counter agrees). bf16: the chunks
 * travel as bf16 (rounded to nearest even; half the bytes), added in fp32; each finished
 * chunk is rounded on its owner too, so every rank still ends with the same bits.
 * one_host (the same on every rank): all ranks share one machine, so each chunk goes as
 * one message; otherwise as 32 KB pieces, pipelined (ring.c says why). Either way each
 * float is summed in the same order, so the bits do not depend on it. NULL when out of
 * memory or MPI refused (*mpi_rc says which: MPI_SUCCESS for memory). */
andrea_ring *andrea_ring_start(MPI_Comm comm, float *buf, size_t n, int tag, int bf16,
                               int one_host, int *mpi_rc);
/* Moves it on without waiting: MPI_SUCCESS with *done set (1: the sum is in buf; free
 * it), or MPI's error code. */
int andrea_ring_progress(andrea_ring *op, int *done);
void andrea_ring_free(andrea_ring *op);

#endif
