/* commands.h - one entry point per subcommand (src/cli/cmd_<name>.c). */
#ifndef ANDREA_CLI_COMMANDS_H
#define ANDREA_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_prepare(int argc, char **argv);
/* prepare_manifest.c: `prepare --manifest M -o DIR`; spec NULL: the manifest's. 0 or 1. */
int prepare_manifest(const char *manifest, const char *spec, const char *dir, int quiet);
int cmd_attention(int argc, char **argv);
int cmd_explain(int argc, char **argv);
/* attn_scale_exp.c: `explain --experiment NAME` (argv without those two words). */
int cmd_explain_experiment(int argc, char **argv, const char *name);
int cmd_score(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
