/*
 * passes.h - the pass pipeline.
 *
 * passes/ owns the rewrites of IR into IR - one pass per file, each opening
 * with what it guarantees - and the one pipeline that runs them
 * (pipeline.c). It includes ir/ and its own headers only: never frontend/,
 * codegen/, runtime/ or cli/ (code generation starts where the pipeline
 * ends, on the module it leaves).
 *
 * A pass is a function over a module with a name; the pipeline is one table
 * of them (pipeline.c), run top to bottom in stages: the import's
 * normalisation, onnxc train's rewrite into a training step, and the passes
 * code generation and export need, mixed precision (with its Tensor Core
 * padding) last. After every pass the graph outputs keep their names, the
 * verifier runs when asked (debug builds always ask), and --dump-after=NAME
 * prints the IR after the named pass.
 */
#ifndef ONNXC_PASSES_H
#define ONNXC_PASSES_H

#include "amp.h"

struct train_options;
struct train_step;

/* --precision mixed as the pipeline's amp pass takes it; the pointers are
 * the caller's, which it fills (the profile, the lists, the result). */
struct pass_mixed {
	struct amp_options *amp;     /* keep_fp32 / force_half: checked against the module */
	const char *gpu;             /* --gpu: a built-in name or a profile file; NULL: h200 */
	struct gpu_profile *profile; /* where --gpu is loaded (then amp->gpu points at it) */
	const char *lists;           /* --amp-lists FILE, or NULL */
	struct amp_result *result;   /* what the pass decided (onnxc report) */
	const char *plan_out;        /* --write-precision-plan FILE, or NULL */
};

struct pass_options {
	bool verify;            /* run the verifier after every pass */
	const char *dump_after; /* pass name, "all", or NULL */
	FILE *dump;             /* where dumps go (NULL: stderr) */
	/* The amp pass runs when mixed is set (--precision mixed). */
	struct pass_mixed *mixed;
	/* The train stage's input and output (onnxc train). */
	const struct train_options *train;
	struct train_step *step;
	/* --no-fuse-attention: the attention pass leaves decomposed attention */
	bool no_fuse_attention;
	struct pass_stats *stats; /* the caller's counters, or NULL */
};

/* What the passes did, for onnxc compile and report (NULL: nobody asks). */
struct pass_stats {
	int attention_fused;   /* decomposed attention made one attention node */
	int attention_refused; /* softmaxes between matmuls left decomposed */
	bool explain;          /* a note for each of those, saying why */
};

/* Returns false after reporting errors through m->ctx. */
typedef bool (*pass_fn)(struct ir_module *m, const struct pass_options *opt);

/* When a pass runs: each stage is one call of pass_pipeline. */
enum pass_stage {
	PASS_STAGE_IMPORT,  /* after the import (onnxc's load_model) */
	PASS_STAGE_TRAIN,   /* onnxc train: the forward model becomes a step */
	PASS_STAGE_CODEGEN, /* before code generation, export and reports */
};

struct pass {
	enum pass_stage stage;
	const char *name; /* for --dump-after */
	pass_fn run;
	const char *what; /* one line for docs */
	bool mixed_only;  /* runs with --precision mixed only */
	bool verify;      /* always verified, whatever the build and --verify */
	bool new_outputs; /* makes the model's interface anew: outputs may change */
};

/* The passes. */
bool pass_dce(struct ir_module *m, const struct pass_options *opt);
/* guard.c: after every pass, each node reading a guarded result gets the
 * strongest guard among its operands' producers (docs/ir.md, Guards). */
void pass_guards(struct ir_module *m);
bool pass_batchnorm(struct ir_module *m, const struct pass_options *opt);
/* attention.c: decomposed attention becomes the fused attention op */
bool pass_attention(struct ir_module *m, const struct pass_options *opt);
/* train.c: train_build with opt->train, into opt->step. */
bool pass_train(struct ir_module *m, const struct pass_options *opt);
/* amp.c: opt->mixed checked against the module and completed (the profile,
 * the lists), then pass_amp. */
bool pass_mixed_precision(struct ir_module *m, const struct pass_options *opt);

/* Runs the passes of one stage in order (opt may be NULL: no dumps, and the
 * verifier as the build has it). false after diagnostics. */
bool pass_pipeline(struct ir_module *m, enum pass_stage stage, const struct pass_options *opt);

/* A pass by name, for --dump-after validation. */
const struct pass *pass_find(const char *name);

#endif
