/*
 * cli.h - what the onnxc subcommands share: option parsing, loading a model
 * (ONNX or IR text) with its shape bindings, and the exit-status convention.
 * One file per subcommand family (cmd_*.c); main.c dispatches.
 */
#ifndef ONNXC_CLI_H
#define ONNXC_CLI_H

#include "fe.h"
#include "passes/amp.h"
#include "passes/passes.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s as a JSON string literal. */
void json_string(FILE *f, const char *s);

/*
 * Matches argv[*i] against --name / --name=value (or -o / -o VALUE); takes
 * the value from the next argument when needed. Returns the value, "" for a
 * flag, NULL when it does not match; sets *bad on a missing value.
 */
const char *opt_value(int argc, char **argv, int *i, const char *name, bool takes_value, bool *bad);

/* Options every model-loading command accepts. */
struct model_opts {
	struct fe_options fe;
	struct fe_dim_binding dims[64];
	struct fe_shape_binding shapes[64];
	struct fe_const_input consts[64];
	struct pass_options passes;
	/* mixed precision: --precision mixed and the options that shape it */
	bool mixed;
	const char *amp_flag; /* the first of those options given */
	struct amp_options amp;
	const char *gpu_arg;    /* --gpu NAME|FILE */
	const char *lists_arg;  /* --amp-lists FILE */
	struct gpu_profile gpu; /* loaded by prepare_model */
	const char *keep[64], *force[64];
	struct amp_result amp_result; /* what prepare_model decided */
	int64_t max_memory;           /* --max-memory (0: CLI_DEFAULT_MAX_MEMORY) */
};

/* --max-memory's default: a model whose planned arena + weights exceed it is
 * refused with a diagnostic rather than killed by the system. */
#define CLI_DEFAULT_MAX_MEMORY ((int64_t)16 << 30)
static inline int64_t model_max_memory(const struct model_opts *mo)
{
	return mo->max_memory > 0 ? mo->max_memory : CLI_DEFAULT_MAX_MEMORY;
}
/* Parses a byte count: "512M", "8G", "1.5G", "4096" (K, M, G, T: powers of
 * 1024). false when s is not one or is not positive. */
bool parse_size(const char *s, int64_t *out);

/* Parses --shape, --dim, --const, --verify, --dump-after and the precision
 * options (--precision, --half, --amp-policy, --gpu, --keep-fp32,
 * --force-half, --amp-lists, --no-tc-pad): 1 if argv[*i] was one, 0 if not,
 * -1 after a usage error. */
int parse_model_opt(int argc, char **argv, int *i, struct model_opts *mo);

/*
 * What every command's option loop starts with: --help / -h (prints help
 * and the precision options' help) and the model options. Returns 1 when
 * argv[*i] was one of them, 0 when not, -1 after a usage error, 2 after
 * printing the help.
 */
int common_opt(int argc, char **argv, int *i, struct model_opts *mo, const char *help);
/* What it ends with: arg is an unknown option (a usage error) or the
 * command's one operand, stored in *operand (a second one is an error).
 * false after a usage error. */
bool operand_arg(const char *cmd, const char *arg, const char **operand);
void free_model_opts(struct model_opts *mo);

bool is_ir_text(const char *path);
/* --shape, --dim and --const specialize ONNX models; IR text has its shapes
 * fixed. false after a usage error when they are given for IR text. */
bool model_opts_fit(const char *cmd, const char *path, const struct model_opts *mo);
/* Whether the graph input is one mo makes a constant (--const). */
bool model_opts_const(const struct model_opts *mo, const char *input);
/* Imports an ONNX model or parses IR text, then runs the import pipeline.
 * NULL after diagnostics. */
struct ir_module *load_model(struct ir_ctx *ctx, const char *path, struct model_opts *mo);
/* Prepares a loaded module for what consumes it (code generation, export,
 * reports): runs the code generation pipeline, then mixed precision when
 * asked. false after diagnostics. */
bool prepare_model(struct ir_module *m, struct model_opts *mo);
/* The help lines for the precision options. */
extern const char precision_help[];
/* What decides the compiled code among mo's precision options, for cache
 * keys ("" for FP32). */
void precision_config(const struct model_opts *mo, char *buf, size_t n);

/* --depfile: the files a compile read, in first-read order (copies: the
 * module's arena that holds the external data paths is gone by the time
 * the depfile is written). dep_read is struct fe_options' on_read hook. */
struct deps {
	char **paths;
	int n, cap;
	bool failed; /* out of memory */
};
void dep_add(struct deps *d, const char *path);
void dep_read(void *ud, const char *path);
void deps_free(struct deps *d);
/* The other files that decide the output: --const tensors, a --gpu profile
 * file, --amp-lists. */
void deps_add_options(struct deps *d, const struct model_opts *mo);
/* Writes a Make-syntax depfile: outputs depend on d's files. */
bool write_depfile(const char *path, const char *const *outputs, int nouts, const struct deps *d);

/* Creates the folder path and its missing parents (as mkdir -p); false
 * with errno set when it cannot. */
bool make_dirs(const char *path);

/* The commands. */
int cmd_ir(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);

#endif
