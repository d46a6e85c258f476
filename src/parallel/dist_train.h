/*
 * dist_train.h - the trainer's hooks into the ranks (docs/distributed.md). One process is
 * rank 0 of 1 and every hook is then a no-op, so the trainer calls them unconditionally.
 *   run_setup.c  andrea_dist_run_open (who prints), _batch (global batch on resume),
 *                _moments (ZeRO-1 slices), andrea_dist_source (each rank's rows)
 *   step.c       andrea_dist_overlap_arm, andrea_dist_reduce_grads (gradients and loss
 *                summed over the ranks, overlapped with the last backward)
 *   trainer.c    andrea_dist_agree (a stop request seen by any rank stops all)
 *   run_files.c  andrea_dist_save_moments, andrea_dist_root_rc (rank 0 writes)
 *   evaluate.c   validation batches dealt round-robin over the ranks, sums reduced
 *   consistency.c  one ISA for the weight updates, a hash of the weights compared
 */
#ifndef ANDREA_DIST_DIST_TRAIN_H
#define ANDREA_DIST_DIST_TRAIN_H

#include "parallel/dist.h"
#include "train/train_run.h"

/* Opens the ranks; ranks other than 0 report nothing (no sink, no MFU measurement). */
int andrea_dist_run_open(andrea_train_run *r);
/* Resuming on another number of ranks: the checkpoint records the global micro-batch
 * (ranks x B); when --batch and --grad-accum were left as the checkpoint's, B becomes
 * global / ranks (an error when it does not divide). 0 or ANDREA_TRAIN_BAD_OPTIONS. */
int andrea_dist_run_batch(andrea_train_run *r);
/* What a checkpoint records as the batch: the global micro-batch. */
void andrea_dist_run_record_batch(andrea_train_run *r);
/* --zero 1: keeps this rank's slice of r->adam_m, r->adam_v. 0 or -1. */
int andrea_dist_run_moments(andrea_train_run *r);
/* The source's rows of this rank (the source itself when there is one rank). */
andrea_batch_source *andrea_dist_source(andrea_batch_source *inner, int rank, int size);
/* Before each micro-batch's backward: on the last one (and with more than one rank,
 * reductions not deterministic, --dist-overlap on) the gradients are summed over the
 * ranks layer by layer as backward finishes them, overlapping the communication with the
 * rest of the backward pass. */
void andrea_dist_overlap_arm(andrea_train_run *r, int last_micro);
/* Sums the gradients and loss_sum over the ranks (every rank then holds the global ones):
 * waits for the overlapped sums, or sums the whole gradient now. */
int andrea_dist_reduce_grads(andrea_train_run *r, double *loss_sum);
/* *flag becomes non-zero everywhere when it is non-zero on any rank. 0 or -1. */
int andrea_dist_agree(andrea_train_run *r, int *flag);
/* The full moments to save: r's own, or (ZeRO-1) gathered to rank 0. Free with _release. */
int andrea_dist_save_moments(andrea_train_run *r, float **m, float **v);
void andrea_dist_release_moments(andrea_train_run *r, float *m, float *v);
/* consistency.c. The ranks agree on one ISA level for the kernels that write the weights
 * (the lowest any rank has; ranks of different architectures are refused) and describe
 * it in r->dist_ranks. After the model exists. 0 or -1. */
int andrea_dist_run_isa(andrea_train_run *r);
/* After step `step` (and at the start, with saving set): compares a hash of the weights
 * over the ranks when --dist-check-every is due or a checkpoint is about to be written
 * (saving). -1 with an error naming the step and the ranks when the copies differ. */
int andrea_dist_check_weights(andrea_train_run *r, int step, int saving);
/* After andrea_dist_run_isa: the gradient sum's algorithm (--dist-allreduce; auto: both
 * measured now on the gradient's size), appended to r->dist_ranks. 0 or -1. */
int andrea_dist_run_plan(andrea_train_run *r);
/* rank 0's result of an action only it performed (writing a file), on every rank. */
int andrea_dist_root_rc(andrea_train_run *r, int rc);
int andrea_dist_is_root(const andrea_train_run *r);

#endif
