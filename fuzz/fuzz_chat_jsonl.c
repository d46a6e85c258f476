/* fuzz_chat_jsonl.c - libFuzzer harness for JSONL chat files as `andrea prepare` reads
 * them (one {"messages": [...]} conversation per line), through the command itself so the
 * harness follows the reader wherever it lives. Any bytes give a token file or an error
 * exit; never a crash, a leak or an out-of-bounds read. Run with -close_fd_mask=2 (the
 * command prints its errors; libFuzzer keeps its own stderr for reports). */
#include "fuzz_file.h" /* first: it defines _GNU_SOURCE */
#include "cli/commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char out[64];
    if (!out[0]) {
        char dir[] = "/tmp/andrea-fuzz-XXXXXX";
        if (!mkdtemp(dir)) abort();
        snprintf(out, sizeof out, "%s/out.tokens", dir);
    }
    char *argv[] = {"prepare", "-q", "-t", "byte", "--format", "jsonl", "-o", out,
                    (char *)fuzz_file(data, size), NULL};
    int rc = cmd_prepare(9, argv);
    if (rc != 0 && rc != 1) abort(); /* 2 is a usage error: the harness's fault */
    return 0;
}
