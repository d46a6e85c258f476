/*
 * test_device_pick.c - which GPU a process runs on (src/backend/device_pick.h): the
 * variable wins and is checked, ranks of one machine spread over its devices (one rank
 * per GPU), no launcher means device 0. Logic only: it runs without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/device_pick.h"
#include "test_util.h"

static int pick(const char *env, int local, int count, char *why) {
    int dev = -7;
    why[0] = 0;
    return andrea_device_pick(env, local, count, &dev, why, 200) ? -1 : dev;
}

int main(void) {
    char why[200];
    CHECK(pick(NULL, -1, 1, why) == 0);   /* one process, one GPU */
    CHECK(pick("", -1, 8, why) == 0);     /* an empty variable is unset */
    CHECK(pick(NULL, 0, 8, why) == 0);    /* local ranks 0..7 on 8 GPUs: one each */
    CHECK(pick(NULL, 5, 8, why) == 5);
    CHECK(pick(NULL, 9, 8, why) == 1);    /* more ranks than GPUs: wrap (NCCL refuses later) */
    CHECK(pick(NULL, 3, 1, why) == 0);
    CHECK(pick("2", 5, 4, why) == 2);     /* the variable wins over the local rank */
    CHECK(pick("4", -1, 4, why) == -1 && strstr(why, "ANDREA_CUDA_DEVICE=4") &&
          strstr(why, "4 device(s)"));
    CHECK(pick("-1", -1, 4, why) == -1);
    CHECK(pick("1x", -1, 4, why) == -1 && strstr(why, "1x"));
    CHECK(pick("99999999999999999999", -1, 4, why) == -1);

    /* the launchers' variables, OpenMPI's first */
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK"), unsetenv("PMIX_LOCAL_RANK");
    unsetenv("MPI_LOCALRANKID"), unsetenv("SLURM_LOCALID");
    CHECK(andrea_device_local_rank() == -1);
    setenv("SLURM_LOCALID", "3", 1);
    CHECK(andrea_device_local_rank() == 3);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    CHECK(andrea_device_local_rank() == 1);
    return tu_finish("test_device_pick");
}
