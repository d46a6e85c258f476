/* backend_flags.c - --backend and its older spellings, shared by the commands. */
#include "backend_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/cpu/kernels/kernels.h"

const char *backend_from_flags(const char *cmd, const char *backend, const char *matmul,
                               const char *precision) {
    if (backend) {
        /* the GPU's precision is a flag of its own (issue 24's --precision fp32|bf16) */
        if (!matmul && precision && strcmp(backend, "cuda") == 0) {
            if (strcmp(precision, "fp32") == 0) return "cuda";
            if (strcmp(precision, "bf16") == 0) return "cuda-bf16";
            fprintf(stderr, "andrea %s: --precision '%s': expected fp32 or bf16\n", cmd,
                    precision);
            return NULL;
        }
        if (matmul || precision) {
            fprintf(stderr, "andrea %s: --backend replaces --matmul and --precision (but "
                    "--backend cuda --precision bf16); give it alone\n", cmd);
            return NULL;
        }
        return backend;
    }
    if (matmul && strcmp(matmul, "builtin") != 0 && strcmp(matmul, "blas") != 0) {
        fprintf(stderr, "andrea %s: --matmul '%s': expected builtin or blas\n", cmd, matmul);
        return NULL;
    }
    if (precision && strcmp(precision, "fp32") != 0 && strcmp(precision, "bf16") != 0) {
        fprintf(stderr, "andrea %s: --precision '%s': expected fp32 or bf16\n", cmd, precision);
        return NULL;
    }
    int blas = matmul && strcmp(matmul, "blas") == 0;
    int bf16 = precision && strcmp(precision, "bf16") == 0;
    if (blas && bf16) {
        fprintf(stderr, "andrea %s: --matmul blas and --precision bf16 do not combine\n", cmd);
        return NULL;
    }
    return blas ? "cpu-blas" : bf16 ? "cpu-bf16" : "cpu";
}

int backend_check(const char *cmd, const char *name) {
    if (andrea_backend_find(name)) return 0;
    fprintf(stderr, "andrea %s: --backend '%s': %s\n", cmd, name ? name : "", andrea_error());
    return -1;
}

/* The backends this machine runs, one a line on stdout (scripts read it); those it cannot,
 * with the reason, on stderr. */
void backend_list(void) {
    for (int i = 0; i < andrea_backend_count(); i++) {
        const andrea_backend *be = andrea_backend_get(i);
        printf("%-14s %s\n", andrea_backend_name(be), andrea_backend_description(be));
    }
#ifdef ANDREA_HAVE_CUDA
    if (!andrea_backend_find("cuda")) fprintf(stderr, "unavailable: %s\n", andrea_error());
#else
    fprintf(stderr, "unavailable: backend 'cuda': not built (cmake -DANDREA_CUDA=ON, "
                    "docs/cuda.md)\n");
#endif
}

int isa_flag_apply(const char *cmd, const char *isa) {
    if (!isa) return 0;
    if (andrea_isa_parse(isa) < 0) {
        fprintf(stderr, "andrea %s: --isa '%s': expected avx512, avx2, neon or baseline\n", cmd, isa);
        return -1;
    }
    /* the kernels read the cap from the environment, once, at their first call */
    setenv("ANDREA_ISA", isa, 1);
    return 0;
}
