/*
 * amp.h - automatic mixed precision (docs/precision.md).
 *
 * Three steps over a module, each its own file:
 *   amp_classify.c  every node gets its class (allow / infer / deny / clear,
 *                   special for Cast) from the op table, refined per node and
 *                   overridden by the user's lists and pins;
 *   amp_policy.c    every node gets a precision, by TensorFlow's greedy
 *                   painting or by Campo's cost-aware traversals;
 *   amp_rewrite.c   the decisions become types and casts: half nodes read and
 *                   write half tensors, one cast per value and direction at
 *                   every boundary (shared by all consumers), casts of
 *                   constants folded into the weights, existing casts
 *                   repainted and cast chains folded.
 * tc_pad.c then pads Tensor Core candidates, and amp.c runs the four in
 * order (pass_amp). Only FP32 tensors are painted; integers, booleans and
 * FP64 never are.
 */
#ifndef ONNXC_AMP_H
#define ONNXC_AMP_H

#include "cost.h"

enum amp_policy { AMP_COST, AMP_GREEDY };
enum amp_prec { AMP_FP32, AMP_HALF };

/* Zero is the default everywhere: the cost policy, FP16, the h200 profile,
 * Tensor Core padding on. */
struct amp_options {
	enum amp_policy policy;
	enum ir_dtype half;            /* IR_F16 or IR_BF16 (IR_DT_NONE: FP16) */
	const struct gpu_profile *gpu; /* NULL: the h200 profile */
	const char *const *keep_fp32;  /* node names pinned to FP32 */
	int nkeep;
	const char *const *force_half; /* node names pinned to half */
	int nforce;
	bool override[IR_OP_COUNT]; /* from --amp-lists */
	enum ir_amp override_class[IR_OP_COUNT];
	bool no_pad; /* no Tensor Core padding */
};

/* What was decided for one node, and why (onnxc report). */
struct amp_node {
	enum ir_amp cls;
	bool paintable; /* has FP32 tensors to paint */
	enum amp_prec prec;
	char reason[160];
	double t32, t16; /* predicted microseconds */
};

struct amp_result {
	struct amp_node *nodes; /* by node id (ids of the original nodes) */
	int nids;
	int half_nodes, fp32_nodes;
	int casts_inserted;  /* cast nodes the rewrite added */
	int casts_folded;    /* casts of constants folded into weights */
	int casts_repainted; /* model casts retargeted or folded */
	int padded_ops;
	double predicted_us_fp32, predicted_us_mixed;
};

/* Why op has its class in the op table (one line). */
const char *amp_class_reason(enum ir_op op);

/* The string attribute whose value refines op's class (NULL: none), and in
 * *cls the class its listed values give (passes/amp_classify.c). */
const char *amp_class_attr(enum ir_op op, enum ir_amp *cls);
/* Does a half node n still read its input i in FP32 (its why says so)? */
bool amp_reads_fp32(const struct ir_node *n, int i);

/* Parses an --amp-lists file ("allow: MatMul, Conv" lines; ONNX or IR op
 * names) into o's overrides. false after reporting. */
bool amp_read_lists(struct ir_ctx *ctx, const char *path, struct amp_options *o);

/* The whole mixed-precision rewrite: classify, decide, rewrite, pad. */
bool pass_amp(struct ir_module *m, const struct amp_options *o, struct amp_result *r);

/*
 * Where a cast needs no kernel of its own - the rule codegen/lower.c
 * implements and the cost model prices: a cast of v is fused when it is v's
 * only reader and v comes from an elementwise op or a library computation
 * (amp_fuses_output_cast), or when its only reader is elementwise.
 */
bool amp_fuses_output_cast(enum ir_op op);
bool amp_cast_fuses(const struct ir_value *v, bool sole_reader, const struct ir_node *only);

/* The steps, in pass_amp's order (internal to passes/). */
void amp_classify(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
void amp_decide(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
void amp_rewrite(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
int amp_pad(struct ir_module *m, const struct amp_options *o, struct amp_result *r);

#endif
