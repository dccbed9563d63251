/*
 * amp_classify.c - the mixed-precision class of every node.
 *
 * The class comes from the op table (ir/ops.h; amp_class_reason below says
 * why for each op, and `onnxc ops --markdown` prints it into docs/ops.md),
 * refined where a node's attributes change the answer, and overridden by
 * the user:
 *   - Resize is clear in nearest mode (it only moves values) and infer when
 *     it interpolates;
 *   - ScatterElements is clear when it places values (reduction none, max,
 *     min) and deny when it adds or multiplies them: many updates may land
 *     on one element, and half would round after each;
 *   - in FP16, a node reading a constant with values beyond the FP16 range
 *     (|x| > 65504) stays FP32: converting it would make them infinite;
 *   - --amp-lists moves op types between classes;
 *   - --keep-fp32 NAME pins nodes to FP32 (they act as deny nodes, so
 *     neighbours that feed only them stay FP32 too), --force-half NAME pins
 *     nodes to half whatever the cost.
 * A node is paintable when it reads or writes FP32 tensors; everything else
 * (integer and boolean arithmetic, FP64) keeps its types.
 */
#include "amp.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool paintable(const struct ir_node *n)
{
	for (int i = 0; i < n->nin; i++)
		if (n->in[i]->type.dtype == IR_F32)
			return true;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]->type.dtype == IR_F32)
			return true;
	return false;
}

/* A constant FP32 input of n holding a finite value beyond FP16's range. */
static const struct ir_value *beyond_f16(const struct ir_node *n)
{
	for (int i = 0; i < n->nin; i++) {
		const struct ir_value *v = n->in[i];
		const float *d = v->data;
		int64_t e;
		if (v->kind != IR_VAL_CONST || !d || v->type.dtype != IR_F32)
			continue;
		e = ir_type_elems(&v->type);
		for (int64_t k = 0; k < e; k++)
			if (fabsf(d[k]) > 65504.0f && isfinite(d[k]))
				return v;
	}
	return NULL;
}

static bool named(const char *name, const char *const *list, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

void amp_classify(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		enum ir_amp c = o->override[n->op] ? o->override_class[n->op] : ir_ops[n->op].amp;
		if (!o->override[n->op] && n->op == IR_OP_RESIZE)
			c = strcmp(ir_attr_s(n, "mode"), "nearest") ? IR_AMP_INFER : IR_AMP_CLEAR;
		if (!o->override[n->op] && n->op == IR_OP_SCATTER_ELEMENTS &&
		    (!strcmp(ir_attr_s(n, "reduction"), "add") ||
		     !strcmp(ir_attr_s(n, "reduction"), "mul")))
			c = IR_AMP_DENY; /* accumulates many updates per element */
		a->cls = c;
		a->paintable = paintable(n) && c != IR_AMP_SPECIAL;
		a->prec = AMP_FP32;
		if (named(n->name, o->keep_fp32, o->nkeep)) {
			a->cls = IR_AMP_DENY;
			snprintf(a->reason, sizeof a->reason, "FP32: pinned (--keep-fp32)");
		} else if (a->paintable && o->half == IR_F16) {
			const struct ir_value *big = beyond_f16(n);
			if (big) {
				a->cls = IR_AMP_DENY;
				snprintf(a->reason, sizeof a->reason,
				         "FP32: constant %s has values beyond the FP16 range",
				         big->name);
			}
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Why each op has its class                                                */
/* ------------------------------------------------------------------------ */

#define MOVES   "only moves or selects values: exact in any precision"
#define CHEAP   "exact or nearly so in half, cheap: follows its neighbours"
#define BOUNDED "bounded or well-conditioned output: half where its inputs are"
#define WIDE    "its output range or error grows fast: FP16 overflows or loses it"
#define REDUCES "sums many terms: kept in FP32 as in Micikevicius et al."
#define BOOL    "compares values: exact on half inputs"

static const char *const reasons[IR_OP_COUNT] = {
	[IR_OP_NEG] = CHEAP,
	[IR_OP_ABS] = CHEAP,
	[IR_OP_SIGN] = CHEAP,
	[IR_OP_RELU] = CHEAP,
	[IR_OP_FLOOR] = CHEAP,
	[IR_OP_CEIL] = CHEAP,
	[IR_OP_ROUND] = CHEAP,
	[IR_OP_SQRT] = "halves exponents: no overflow, error within half's own",
	[IR_OP_RECIPROCAL] = "relative error stays that of half; TensorFlow lists it infer",
	[IR_OP_EXP] = "overflows FP16 beyond 11.1; TensorFlow, TVM and autocast keep it FP32",
	[IR_OP_LOG] = "near 1 its result loses all of half's digits; autocast keeps it FP32",
	[IR_OP_ERF] = BOUNDED,
	[IR_OP_TANH] = BOUNDED,
	[IR_OP_SIGMOID] = BOUNDED,
	[IR_OP_SIN] = BOUNDED,
	[IR_OP_COS] = BOUNDED,
	[IR_OP_TAN] = WIDE,
	[IR_OP_ASIN] = WIDE,
	[IR_OP_ACOS] = WIDE,
	[IR_OP_ATAN] = BOUNDED,
	[IR_OP_SINH] = WIDE,
	[IR_OP_COSH] = WIDE,
	[IR_OP_ASINH] = WIDE,
	[IR_OP_ACOSH] = WIDE,
	[IR_OP_ATANH] = WIDE,
	[IR_OP_SOFTPLUS] = "an activation: TensorFlow lists it infer",
	[IR_OP_SOFTSIGN] = BOUNDED,
	[IR_OP_MISH] = "an activation: half where its input is",
	[IR_OP_HARD_SWISH] = "piecewise polynomial activation: half where its input is",
	[IR_OP_LEAKY_RELU] = "an activation: TensorFlow lists it infer",
	[IR_OP_ELU] = "an activation: TensorFlow lists it infer",
	[IR_OP_CELU] = "an activation: half where its input is",
	[IR_OP_SELU] = "an activation: TensorFlow lists it infer",
	[IR_OP_THRESHOLDED_RELU] = CHEAP,
	[IR_OP_HARD_SIGMOID] = BOUNDED,
	[IR_OP_SHRINK] = CHEAP,
	[IR_OP_CLIP] = "clamps: exact in half (TensorFlow: ClipByValue clear)",
	[IR_OP_NOT] = BOOL,
	[IR_OP_ISNAN] = BOOL,
	[IR_OP_ISINF] = BOOL,
	[IR_OP_CAST] = "existing casts are repainted to the precision around them or folded",
	[IR_OP_COPY] = MOVES,
	[IR_OP_ADD] = "rounding error of one operation: TensorFlow lists it infer",
	[IR_OP_SUB] = "rounding error of one operation: TensorFlow lists it infer",
	[IR_OP_MUL] = "rounding error of one operation: TensorFlow lists it infer",
	[IR_OP_DIV] = "rounding error of one operation: TensorFlow lists it infer",
	[IR_OP_POW] = "overflows FP16 easily; TensorFlow and TVM keep it FP32",
	[IR_OP_MIN] = CHEAP,
	[IR_OP_MAX] = CHEAP,
	[IR_OP_MOD] = "loses all precision for large quotients: FP32",
	[IR_OP_PRELU] = "an activation: half where its input is",
	[IR_OP_EQUAL] = BOOL,
	[IR_OP_LESS] = BOOL,
	[IR_OP_LESS_EQUAL] = BOOL,
	[IR_OP_GREATER] = BOOL,
	[IR_OP_GREATER_EQUAL] = BOOL,
	[IR_OP_AND] = BOOL,
	[IR_OP_OR] = BOOL,
	[IR_OP_XOR] = BOOL,
	[IR_OP_WHERE] = MOVES,
	[IR_OP_DROPOUT] = "scales by 1/(1-ratio) or zeroes: as exact as a multiply",
	[IR_OP_MATMUL] = "Tensor Cores with FP32 accumulation: the reason to use half",
	[IR_OP_GEMM] = "Tensor Cores with FP32 accumulation: the reason to use half",
	[IR_OP_CONV] = "Tensor Cores with FP32 accumulation: the reason to use half",
	[IR_OP_CONV_TRANSPOSE] = "Tensor Cores with FP32 accumulation: the reason to use half",
	[IR_OP_BATCH_NORM] = "statistics and scale stay FP32 inside onnxc's kernel",
	[IR_OP_LAYER_NORM] = "onnxc's kernel keeps mean and variance in FP32 (stash_type 1)",
	[IR_OP_INSTANCE_NORM] = "onnxc's kernel keeps mean and variance in FP32",
	[IR_OP_LRN] = "a sum of squares raised to a power: overflows FP16",
	[IR_OP_SOFTMAX] = "onnxc's kernel computes max, exp and sum in FP32",
	[IR_OP_LOG_SOFTMAX] = "onnxc's kernel computes max, exp and sum in FP32",
	[IR_OP_HARDMAX] = MOVES,
	[IR_OP_MAX_POOL] = MOVES,
	[IR_OP_AVG_POOL] = "a small window averaged in FP32 inside the kernel",
	[IR_OP_LP_POOL] = "powers of the inputs overflow FP16",
	[IR_OP_GLOBAL_AVG_POOL] = "onnxc's kernel accumulates in FP32",
	[IR_OP_GLOBAL_MAX_POOL] = MOVES,
	[IR_OP_GLOBAL_LP_POOL] = "powers of the inputs overflow FP16",
	[IR_OP_REDUCE_SUM] = REDUCES,
	[IR_OP_REDUCE_MEAN] = REDUCES,
	[IR_OP_REDUCE_MAX] = MOVES,
	[IR_OP_REDUCE_MIN] = MOVES,
	[IR_OP_REDUCE_PROD] = "TensorFlow lists Prod infer",
	[IR_OP_REDUCE_L1] = REDUCES,
	[IR_OP_REDUCE_L2] = REDUCES,
	[IR_OP_REDUCE_SUM_SQUARE] = REDUCES,
	[IR_OP_REDUCE_LOG_SUM] = REDUCES,
	[IR_OP_REDUCE_LOG_SUM_EXP] = REDUCES,
	[IR_OP_ARGMAX] = MOVES,
	[IR_OP_ARGMIN] = MOVES,
	[IR_OP_CUMSUM] = REDUCES,
	[IR_OP_RESHAPE] = MOVES,
	[IR_OP_TRANSPOSE] = MOVES,
	[IR_OP_CONCAT] = MOVES,
	[IR_OP_SPLIT] = MOVES,
	[IR_OP_SLICE] = MOVES,
	[IR_OP_GATHER] = MOVES,
	[IR_OP_GATHER_ELEMENTS] = MOVES,
	[IR_OP_SCATTER_ELEMENTS] = "clear when it places values (none, max, min); deny when it "
	                           "adds or multiplies them (sums many terms)",
	[IR_OP_EXPAND] = MOVES,
	[IR_OP_TILE] = MOVES,
	[IR_OP_PAD] = MOVES,
	[IR_OP_DEPTH_TO_SPACE] = MOVES,
	[IR_OP_SPACE_TO_DEPTH] = MOVES,
	[IR_OP_TRILU] = MOVES,
	[IR_OP_RESIZE] = "infer when it interpolates; clear in nearest mode (it only moves)",
};

const char *amp_class_reason(enum ir_op op) { return reasons[op]; }

/* ------------------------------------------------------------------------ */
/* --amp-lists                                                              */
/* ------------------------------------------------------------------------ */

/* An op by IR name ("matmul") or ONNX name ("MatMul"); IR_OP_COUNT if none.
 * An ONNX name may stand for several IR ops (none do today but reshape's
 * sources); the first row with that ONNX name is taken. */
static enum ir_op op_by_name(const char *s)
{
	enum ir_op op = ir_op_from_name(s, strlen(s));
	if (op != IR_OP_COUNT)
		return op;
	for (int i = 0; i < IR_OP_COUNT; i++)
		if (!strcmp(ir_ops[i].onnx, s))
			return (enum ir_op)i;
	return IR_OP_COUNT;
}

bool amp_read_lists(struct ir_ctx *ctx, const char *path, struct amp_options *o)
{
	static const struct {
		const char *name;
		enum ir_amp cls;
	} classes[] = { { "allow", IR_AMP_ALLOW },
		        { "infer", IR_AMP_INFER },
		        { "deny", IR_AMP_DENY },
		        { "clear", IR_AMP_CLEAR } };
	FILE *f = fopen(path, "r");
	char line[4096];
	int lineno = 0, errors = ctx->nerrors;
	if (!f) {
		ir_error(ctx, "cannot read --amp-lists %s", path);
		return false;
	}
	while (fgets(line, sizeof line, f)) {
		char *colon, *tok, *save = NULL;
		size_t k;
		lineno++;
		if ((tok = strchr(line, '#')))
			*tok = 0;
		for (tok = line; isspace((unsigned char)*tok); tok++)
			;
		if (!*tok)
			continue;
		if (!(colon = strchr(tok, ':'))) {
			ir_error(ctx,
			         "%s:%d: expected CLASS: OP, OP, ... (classes: allow, infer, deny, "
			         "clear)",
			         path, lineno);
			continue;
		}
		*colon = 0;
		for (k = 0; k < sizeof classes / sizeof classes[0]; k++)
			if (!strcmp(classes[k].name, tok))
				break;
		if (k == sizeof classes / sizeof classes[0]) {
			ir_error(ctx, "%s:%d: unknown class '%s'", path, lineno, tok);
			continue;
		}
		for (char *op = strtok_r(colon + 1, ", \t\r\n", &save); op;
		     op = strtok_r(NULL, ", \t\r\n", &save)) {
			enum ir_op id = op_by_name(op);
			if (id == IR_OP_COUNT) {
				ir_error(ctx, "%s:%d: unknown op '%s'", path, lineno, op);
				continue;
			}
			o->override[id] = true;
			o->override_class[id] = classes[k].cls;
		}
	}
	fclose(f);
	return ctx->nerrors == errors;
}
