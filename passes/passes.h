/*
 * passes.h - the pass pipeline.
 *
 * A pass is a function over a module with a name; the pipeline is a table of
 * them run top to bottom (pass_pipeline.c). Between passes the verifier runs
 * when asked (debug builds always ask), and --dump-after=NAME prints the IR
 * after the named pass. One pass per file; each file opens with what the
 * pass guarantees.
 */
#ifndef ONNXC_PASSES_H
#define ONNXC_PASSES_H

#include "ir/ir.h"

struct pass_options {
	bool verify;            /* run the verifier after every pass */
	const char *dump_after; /* pass name, "all", or NULL */
	FILE *dump;             /* where dumps go (NULL: stderr) */
};

/* Returns false after reporting errors through m->ctx. */
typedef bool (*pass_fn)(struct ir_module *m, const struct pass_options *opt);

struct pass {
	const char *name;
	pass_fn run;
	const char *what; /* one line for --help and docs */
};

/* The passes. */
bool pass_dce(struct ir_module *m, const struct pass_options *opt);
bool pass_batchnorm(struct ir_module *m, const struct pass_options *opt);

/* Runs passes[0..n) in order. */
bool pass_run(struct ir_module *m, const struct pass *passes, int n,
              const struct pass_options *opt);

/* The pipeline `onnxc ir` runs after import. */
extern const struct pass pass_import_pipeline[];
extern const int pass_import_pipeline_len;
/* The pipeline code generation runs before lowering. */
extern const struct pass pass_codegen_pipeline[];
extern const int pass_codegen_pipeline_len;

/* Every pass by name, for --dump-after validation. */
const struct pass *pass_find(const char *name);

#endif
