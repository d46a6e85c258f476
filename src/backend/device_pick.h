/*
 * device_pick.h - which GPU a process runs on: ANDREA_CUDA_DEVICE when set (one device
 * for every rank, or a per-rank value the launcher sets), else, under an MPI launcher,
 * the rank's index on its machine modulo the machine's devices (one rank per GPU: the
 * NCCL layout), else device 0. Plain logic, so that it is tested without a GPU.
 */
#ifndef ANDREA_BACKEND_DEVICE_PICK_H
#define ANDREA_BACKEND_DEVICE_PICK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* env_device: ANDREA_CUDA_DEVICE's value (NULL or "" when unset); local_rank: the rank
 * on this machine (-1 without a launcher); count: the devices here (> 0). 0 with
 * *device set, or -1 with why filled. */
int andrea_device_pick(const char *env_device, int local_rank, int count, int *device,
                       char *why, size_t cap);

/* The rank's index on its machine as the launcher announced it (OpenMPI, PMIx, MPICH,
 * Slurm), or -1 when none did. */
int andrea_device_local_rank(void);

#ifdef __cplusplus
}
#endif

#endif
