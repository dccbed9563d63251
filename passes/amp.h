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

/* Which rule decided a node's precision (onnxc report, the plan file). */
enum amp_rule {
	AMP_BY_CLASS,  /* its class alone: deny, or nothing to paint */
	AMP_BY_POLICY, /* the cost model or greedy painting */
	AMP_BY_RANGE,  /* calibrated values out of FP16's range: BF16 or FP32 */
	AMP_BY_BUDGET, /* moved back to FP32 to keep the error within the budget */
	AMP_BY_USER,   /* --keep-fp32, --force-half, a constant beyond FP16 */
	AMP_BY_PLAN,   /* --precision-plan */
};
const char *amp_rule_name(enum amp_rule r);

/* One calibration sample: a tensor for each graph input, by name, in the
 * input's type (the caller loads and checks them). */
struct amp_sample {
	const char *const *names;
	const void *const *data;
	int n;
};

/* The calibration data (--calibrate): samples, and where they came from for
 * messages. */
struct amp_calib {
	const struct amp_sample *samples;
	int nsamples;
	const char *source;
};

/* A node's precision fixed by name (--precision-plan): IR_F32, IR_F16 or
 * IR_BF16, and the reason the plan gives. */
struct amp_pin {
	const char *node;
	enum ir_dtype dtype;
	const char *why;
};

/* The range-aware defaults (docs/precision.md#calibration). */
#define AMP_WHY               96   /* bytes of a node's why */
#define AMP_DEFAULT_HEADROOM  2.0  /* absmax x headroom must stay within 65504 */
#define AMP_DEFAULT_UNDERFLOW 0.01 /* share of a tensor's L2 mass below 2^-14 */
#define AMP_F16_MAX           65504.0
#define AMP_F16_MIN_NORMAL    6.103515625e-05

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
	/* calibration (NULL: none): the range table, the range rule and the
	 * accuracy budget */
	const struct amp_calib *calib;
	double headroom;            /* 0: AMP_DEFAULT_HEADROOM */
	double underflow;           /* 0: AMP_DEFAULT_UNDERFLOW; above 1: never */
	double max_rel_l2;          /* the budget; 0: 1e-2 for FP16, 5e-2 for BF16 */
	const struct amp_pin *plan; /* --precision-plan, by node name */
	int nplan;
};

/* What was decided for one node, and why (onnxc report). */
struct amp_node {
	enum ir_amp cls;
	bool paintable; /* has FP32 tensors to paint */
	enum amp_prec prec;
	enum ir_dtype half;           /* the half type it runs in when prec is AMP_HALF */
	enum ir_dtype pin;            /* fixed by range, budget or plan: IR_F32, IR_F16,
	                       IR_BF16; IR_DT_NONE: not */
	enum amp_rule rule, pin_rule; /* pin_rule: who set pin */
	char reason[160];
	char why[AMP_WHY]; /* what the range rule, the budget or the plan said */
	double t32, t16;   /* predicted microseconds (t16 in its half type) */
	/* calibrated: the largest magnitude among the FP32 tensors it reads
	 * and writes, and the largest share of L2 mass below FP16's smallest
	 * normal among them; absmax < 0: not calibrated */
	double absmax, under;
};

/* The range table: each value's calibrated magnitude (by value id). */
struct amp_range {
	double absmax;           /* largest finite magnitude, over every sample */
	double under;            /* share of the L2 mass below FP16's smallest normal */
	double mass, mass_below; /* sums of squares: all, below 2^-14 */
	int64_t n;               /* finite elements seen */
	int64_t below;           /* nonzero elements below the smallest normal */
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
	/* calibration */
	struct amp_range *ranges; /* by value id, NULL without calibration */
	int nranges;
	int calib_samples;
	int range_bf16, range_fp32;  /* nodes the range rule moved */
	double err_first, err_final; /* the budget's measure (max rel-L2) */
	double budget;
	int budget_moved; /* nodes the budget moved back to FP32 */
	int budget_evals; /* mixed evaluations it took */
};

/* Why op has its class in the op table (one line). */
const char *amp_class_reason(enum ir_op op);

/* The string attribute whose value refines op's class (NULL: none), and in
 * *cls the class its listed values give (passes/amp_classify.c). */
const char *amp_class_attr(enum ir_op op, enum ir_amp *cls);
/* Does a half node n still read its input i in FP32 (its why says so)? */
bool amp_reads_fp32(const struct ir_node *n, int i);
/* Whether name is one of list[0..n). */
bool amp_named(const char *name, const char *const *list, int n);

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

/* The precision plan: what was decided, one line per painted node, and a
 * plan read back (docs/precision.md#precision-plan). false after reporting. */
bool amp_write_plan(struct ir_ctx *ctx, const struct ir_module *m, const struct amp_result *r,
                    const char *path);
bool amp_read_plan(struct ir_ctx *ctx, struct ir_arena *a, const char *path, struct amp_pin **pins,
                   int *npins);

/* The steps, in pass_amp's order (internal to passes/). */
void amp_classify(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
void amp_decide(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
void amp_rewrite(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
int amp_pad(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
/* amp_range.c: the FP32 reference run of every sample (ranges, reference
 * outputs), the range rule, and the error of the decisions in r. */
struct amp_calib_run;
struct amp_calib_run *amp_calibrate(struct ir_module *m, const struct amp_options *o,
                                    struct amp_result *r);
void amp_range_rule(struct ir_module *m, const struct amp_options *o, struct amp_result *r);
double amp_measure(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                   struct amp_calib_run *run);
/* What each half node adds to the error: the relative L2 error of its
 * results in the mixed run less the largest of its inputs', by node id, the
 * worst over the samples (contrib is zeroed by the caller). */
void amp_contributions(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                       struct amp_calib_run *run, double *contrib);
void amp_calib_free(struct amp_calib_run *run);
/* amp_budget.c: moves half nodes back to FP32 until the error fits. */
void amp_budget(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                struct amp_calib_run *run);
/* amp.c: classify, time and decide again (after pins changed). */
void amp_assign(struct ir_module *m, const struct amp_options *o, struct amp_result *r);

#endif
