/* main.c - the andrea command: dispatch to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "commands.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command COMMANDS[] = {
    {"train", cmd_train, "train a model on a text file (checkpoints, resume, logs)"},
    {"generate", cmd_generate, "generate text from a checkpoint (KV cache, sampling)"},
    {"eval", cmd_eval, "mean loss and perplexity of a checkpoint on a text file"},
    {"info", cmd_info, "config, parameter counts and memory of a preset or checkpoint"},
    {"tokenizer", cmd_tokenizer, "train, inspect and run tokenizers (byte, char, bpe, gpt2, harris)"},
    {"prepare", cmd_prepare, "tokenize text or JSONL chat files into a token file"},
    {"attention", cmd_attention, "show what attention did on a prompt: text, PNG, HTML, JSON"},
    {"explain", cmd_explain, "walk the attention lesson on a tiny example, checking each claim"},
    {"score", cmd_score, "coherence-gate score (0-100) of a text sample"},
    {"chat", cmd_chat, "talk to a checkpoint in ANDREA's '> user' / '< model' turn format"},
    {"bench", cmd_bench, "training and generation speed, MFU and memory of a preset"},
    {"plot", cmd_plot, "a training run's loss, lr, gradient-norm, gate and source plots (PNG)"},
    {"report", cmd_report, "a training run as one offline HTML page: plots, config, samples"},
    {"convert", cmd_convert, "a model to/from safetensors, GGUF (llama.cpp), llm.c, andrea"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server with a chat page and attention"},
    /* more subcommands register here */
};

static void usage(FILE *f) {
    fprintf(f, "andrea %s - grow, run and explain ANDREA-family language models\n\n", ANDREA_VERSION);
    fprintf(f, "usage: andrea <command> [flags]   (andrea <command> --help for its flags)\n\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-12s %s\n", COMMANDS[i].name, COMMANDS[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) {
        printf("andrea %s\n", ANDREA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(name, COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "andrea: unknown command '%s' (see 'andrea --help')\n", name);
    return 2;
}
