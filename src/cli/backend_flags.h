/* backend_flags.h - the backend a command runs on: --backend NAME, or the older
 * --matmul builtin|blas and --precision fp32|bf16 (= cpu-blas, cpu-bf16); --backend cuda
 * --precision bf16 is cuda-bf16. */
#ifndef ANDREA_CLI_BACKEND_FLAGS_H
#define ANDREA_CLI_BACKEND_FLAGS_H

/* The backend's name (NULL args: not given), or NULL after printing a one-line usage
 * error for `andrea cmd`. */
const char *backend_from_flags(const char *cmd, const char *backend, const char *matmul,
                               const char *precision);
/* 0 when name (NULL: the default) is a backend this machine runs; else prints a one-line
 * usage error for `andrea cmd` naming --backend and the ones available, and returns -1. */
int backend_check(const char *cmd, const char *name);
/* --isa NAME (NULL: not given): caps every kernel's instruction set, as ANDREA_ISA does;
 * call before anything runs a kernel. 0, or -1 after a one-line usage error. */
int isa_flag_apply(const char *cmd, const char *isa);
/* Prints the backends this machine and build can run, one per line. */
void backend_list(void);

#endif
