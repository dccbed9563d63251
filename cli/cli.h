/*
 * cli.h - what the onnxc subcommands share: option parsing, loading a model
 * (ONNX or IR text) with its shape bindings, and the exit-status convention.
 * One file per subcommand family (cmd_*.c); main.c dispatches.
 *
 * cli/ owns the onnxc executable: the subcommands and what only they need
 * (run's build cache run_cache.c, the declared inputs model_inputs.c, the
 * protobuf scanner pb_scan.c). It is the top of the build and may include
 * every library's header (ir/, frontend/, passes/, codegen/, runtime/);
 * nothing outside cli/ includes it.
 */
#ifndef ONNXC_CLI_H
#define ONNXC_CLI_H

#include "frontend/fe.h"
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
	/* calibration and the precision plan (docs/precision.md#calibration) */
	const char *calib_args[64]; /* --calibrate DATA, in order */
	int ncalib;
	const char *plan_in;     /* --precision-plan FILE */
	const char *plan_out;    /* --write-precision-plan FILE */
	bool max_l2_given;       /* --max-rel-l2 (in amp.max_rel_l2) */
	struct pass_stats stats; /* what prepare_model's passes did */
	int64_t max_memory;      /* --max-memory (0: CLI_DEFAULT_MAX_MEMORY) */
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

/*
 * The option loop every command runs (parse_args), on each argument left to
 * right: --help / -h (prints help, then the precision options' help); the
 * model options (--shape, --dim, --const, --max-memory, --verify,
 * --dump-after, and --precision, --half, --amp-policy, --gpu, --keep-fp32,
 * --force-half, --amp-lists, --no-tc-pad); the command's own (own: 1 if
 * argv[*i] was one, 0 if not, -1 after a usage error); else an unknown
 * option (a usage error) or the command's one operand, stored in *operand
 * (a second one is an error). Returns 0 to go on, 2 after printing the help
 * (the command then exits 0), -1 after a usage error.
 */
typedef int (*cmd_opt_fn)(int argc, char **argv, int *i, void *ud);
struct cmd_args {
	const char *cmd;  /* what usage errors start with: "compile" */
	const char *help; /* --help's text */
	struct model_opts *mo;
	cmd_opt_fn own; /* NULL: none */
	void *ud;       /* own's */
	const char **operand;
	bool folder; /* the operand is a test folder (check), not a model */
};
int parse_args(int argc, char **argv, const struct cmd_args *a);
void free_model_opts(struct model_opts *mo);

bool is_ir_text(const char *path);
/* --shape, --dim and --const specialize ONNX models; IR text has its shapes
 * fixed. false after a usage error when they are given for IR text. */
bool model_opts_fit(const char *cmd, const char *path, const struct model_opts *mo);
/* Whether the graph input is one mo makes a constant (--const). */
bool model_opts_const(const struct model_opts *mo, const char *input);
/* Imports an ONNX model (then runs the pipeline's import stage) or parses
 * IR text. NULL after diagnostics. */
struct ir_module *load_model(struct ir_ctx *ctx, const char *path, struct model_opts *mo);
/* Prepares a loaded module for what consumes it (code generation, export,
 * reports): runs the pipeline's codegen stage, mixed precision last when
 * asked. false after diagnostics. */
bool prepare_model(struct ir_module *m, struct model_opts *mo);
/* The samples of --calibrate (calibrate.c), loaded for m's graph inputs
 * and checked against their types; the tensors live in data. */
struct calib_data {
	struct ir_module *data;
	struct amp_sample *samples;
	struct amp_calib calib;
};
bool calib_load(struct ir_ctx *ctx, const struct ir_module *m, const char *const *args, int nargs,
                struct calib_data *cd);
void calib_free(struct calib_data *cd);
/* Every file the --calibrate arguments name (for cache keys and depfiles),
 * in order, with the input it is given to (NAME=FILE) or NULL (a data
 * set's .pb names its input), without loading them; false when an
 * argument names nothing usable. */
bool calib_files(const char *const *args, int nargs,
                 void (*fn)(void *ud, const char *input, const char *path), void *ud);

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
/* false with errno set: EINVAL for a path holding a newline or CR, which
 * Make cannot express (it would inject rules). */
bool write_depfile(const char *path, const char *const *outputs, int nouts, const struct deps *d);
/* Why collecting d or write_depfile failed, from d and errno. */
const char *depfile_why(const struct deps *d);

/* Creates the folder path and its missing parents (as mkdir -p); false
 * with errno set when it cannot. */
bool make_dirs(const char *path);

/* ------------------------------------------------------------------------ */
/* onnxc run and check (cmd_run.c and the files below)                      */
/* ------------------------------------------------------------------------ */

/* Fields read from protobuf's wire format without unpacking (pb_scan.c):
 * the external data locations an ONNX model's tensors name, and a
 * TensorProto's name (NULL, 0 when it has none; points into buf). false on
 * malformed or too deeply nested input. */
typedef void (*pb_location_fn)(void *ud, const char *location, size_t n);
bool pb_external_locations(const void *buf, size_t len, pb_location_fn fn, void *ud);
bool pb_tensor_name(const void *buf, size_t len, const char **name, size_t *n);

/* The graph inputs a model declares (model_inputs.c): not the initializers;
 * for IR text, its inputs. */
struct input_decl {
	const char *name;
	enum ir_dtype dtype;             /* IR_DT_NONE: not a tensor onnxc takes */
	int rank;                        /* -1: no shape declared */
	int64_t dims[IR_MAX_RANK];       /* -1: symbolic or unknown */
	const char *params[IR_MAX_RANK]; /* a symbolic dimension's name, or NULL */
};
struct input_decls {
	struct ir_arena arena; /* owns v and the names */
	struct input_decl *v;
	int n;
};
bool input_decls_load(struct ir_ctx *ctx, const char *path, const struct model_opts *mo,
                      struct input_decls *d);
void input_decls_free(struct input_decls *d);
const struct input_decl *input_decl_find(const struct input_decls *d, const char *name);
/* Checks data[k] (read from files[k]) against the declared input names[k],
 * and mo's --shape, --dim and --const: every mismatch is reported naming the
 * file, the input and what differs. false after diagnostics. */
bool check_input_data(struct ir_ctx *ctx, const struct input_decls *d, const struct model_opts *mo,
                      const char *const *names, const char *const *files,
                      struct ir_value *const *data, int n);

/* The key of a cached build (run_cache.c): a text naming everything the
 * build depends on; the folder is named by its hash. */
struct run_key {
	char *text;
	size_t len, cap;
	bool failed;     /* out of memory */
	const char *why; /* why the model cannot be keyed (then no cache) */
};
void key_printf(struct run_key *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A name as key text: its length, then its bytes (unprintable ones '?'). */
void key_name(struct run_key *k, const char *s);
/* "WHAT LABEL DIGEST SIZE" of the bytes of the file at path ("unreadable"
 * when it is). */
void key_file(struct run_key *k, const char *what, const char *label, const char *path);
/* The model's bytes and those of every external data file it names; false
 * (k->why says why) when they cannot be known without the import. onnx:
 * the model is ONNX, not IR text. */
bool key_model(struct run_key *k, struct ir_ctx *ctx, const char *path, bool onnx);
/* This onnxc build, its runtime, the environment and the host CPU (where
 * cpu is "native"). false after diagnostics (no runtime). */
bool key_build(struct run_key *k, struct ir_ctx *ctx, const char *target, const char *cpu);
uint64_t key_hash(const struct run_key *k);
void key_free(struct run_key *k);

/* What run needs of a compiled model: its inputs and outputs, and the
 * graph inputs that inputs given without a name bind to, in order. */
struct run_tensor {
	const char *name;
	struct ir_type type;
};
struct run_sig {
	struct ir_arena arena; /* owns everything below */
	struct run_tensor *in, *out;
	int nin, nout;
	const char **order;
	int norder;
};
void run_sig_init(struct run_sig *s, struct ir_ctx *ctx);
void run_sig_free(struct run_sig *s);
void run_sig_from_module(struct run_sig *s, const struct ir_module *m);
/* DIR/manifest: the key text and the signature. manifest_read is true only
 * for a manifest of exactly key k that parses and is in range. */
bool manifest_write(const char *dir, const struct run_key *k, const struct run_sig *s);
bool manifest_read(struct ir_ctx *ctx, const char *dir, const struct run_key *k, struct run_sig *s);
/* The cache folder (--cache-dir, else $XDG_CACHE_HOME/onnxc or
 * ~/.cache/onnxc), created with its parents; NULL after a diagnostic. */
char *cache_root(struct ir_ctx *ctx, const char *base);
/* Removes a folder of files (a build). */
void rm_tree(const char *dir);

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
