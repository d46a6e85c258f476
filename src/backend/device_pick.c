/* device_pick.c - which GPU a process runs on (device_pick.h). */
#include "backend/device_pick.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int andrea_device_pick(const char *env_device, int local_rank, int count, int *device,
                       char *why, size_t cap) {
    if (env_device && *env_device) {
        char *end = NULL;
        errno = 0;
        long v = strtol(env_device, &end, 10);
        if (errno || *end || v < 0 || v >= count) {
            snprintf(why, cap, "ANDREA_CUDA_DEVICE=%s but this machine has %d device(s) "
                     "(0..%d)", env_device, count, count - 1);
            return -1;
        }
        *device = (int)v;
        return 0;
    }
    *device = local_rank > 0 ? local_rank % count : 0;
    return 0;
}

int andrea_device_local_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}
