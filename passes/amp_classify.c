/*
 * amp_classify.c - the mixed-precision class of every node.
 *
 * The class comes from the op table (ir/ops.h; the row's why column names
 * the amp_why below that says why, which `onnxc ops --markdown` prints into
 * docs/ops.md), refined where a node's attributes change the answer (the
 * same amp_why names the attribute and its values), and overridden by the
 * user:
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

/* ------------------------------------------------------------------------ */
/* Why each op has its class                                                */
/* ------------------------------------------------------------------------ */

/*
 * The why column of ops.h names one of these per op (amp_<why>): the reason
 * `onnxc ops` prints for the row's class, and where a node's string
 * attribute changes the answer, which attribute, the values that do, and
 * the class they give.
 */
struct amp_why {
	const char *reason;
	const char *attr;      /* NULL: the row's class holds for every node */
	const char *values[2]; /* attr's values that give cls instead */
	enum ir_amp cls;
	unsigned fp32_inputs; /* bit i: a half node still reads its input i in FP32 */
};

#define MOVES   "only moves or selects values: exact in any precision"
#define CHEAP   "exact or nearly so in half, cheap: follows its neighbours"
#define BOUNDED "bounded or well-conditioned output: half where its inputs are"
#define WIDE    "its output range or error grows fast: FP16 overflows or loses it"
#define REDUCES "sums many terms: kept in FP32 as in Micikevicius et al."
#define BOOL    "compares values: exact on half inputs"
#define ONE_OP  "rounding error of one operation: TensorFlow lists it infer"
#define TC      "Tensor Cores with FP32 accumulation: the reason to use half"

static const struct amp_why amp_moves = { MOVES }, amp_cheap = { CHEAP }, amp_bounded = { BOUNDED },
                            amp_wide = { WIDE }, amp_reduces = { REDUCES }, amp_compares = { BOOL },
                            amp_one_rounding = { ONE_OP }, amp_tensor_cores = { TC };
static const struct amp_why amp_sqrt = { "halves exponents: no overflow, error within half's own" };
static const struct amp_why amp_reciprocal = {
	"relative error stays that of half; TensorFlow lists it infer"
};
static const struct amp_why amp_exp = {
	"overflows FP16 beyond 11.1; TensorFlow, TVM and autocast keep it FP32"
};
static const struct amp_why amp_log = {
	"near 1 its result loses all of half's digits; autocast keeps it FP32"
};
static const struct amp_why amp_act_tf = { "an activation: TensorFlow lists it infer" };
static const struct amp_why amp_act = { "an activation: half where its input is" };
static const struct amp_why amp_piecewise = {
	"piecewise polynomial activation: half where its input is"
};
static const struct amp_why amp_clamps = {
	"clamps: exact in half (TensorFlow: ClipByValue clear)"
};
static const struct amp_why amp_cast = {
	"existing casts are repainted to the precision around them or folded"
};
static const struct amp_why amp_pow = { "overflows FP16 easily; TensorFlow and TVM keep it FP32" };
static const struct amp_why amp_bits = { "integer bit operations: no precision to choose" };
/* the bytes of an FP32 input in half would be other bytes */
static const struct amp_why amp_reinterprets = {
	"reinterprets its input's bytes: they must keep the model's type"
};
static const struct amp_why amp_mod = { "loses all precision for large quotients: FP32" };
static const struct amp_why amp_dropout = {
	"scales by 1/(1-ratio) or zeroes: as exact as a multiply"
};
static const struct amp_why amp_batch_norm = {
	"statistics and scale stay FP32 inside onnxc's kernel"
};
static const struct amp_why amp_layer_norm = {
	"onnxc's kernel keeps mean and variance in FP32 (stash_type 1)"
};
static const struct amp_why amp_instance_norm = {
	"onnxc's kernel keeps mean and variance in FP32"
};
static const struct amp_why amp_lrn = { "a sum of squares raised to a power: overflows FP16" };
static const struct amp_why amp_softmax = { "onnxc's kernel computes max, exp and sum in FP32" };
static const struct amp_why amp_avg_pool = { "a small window averaged in FP32 inside the kernel" };
static const struct amp_why amp_powers = { "powers of the inputs overflow FP16" };
static const struct amp_why amp_accumulates = { "onnxc's kernel accumulates in FP32" };
static const struct amp_why amp_prod = { "TensorFlow lists Prod infer" };
/* the state sums T steps of outer products and decays: half would round
 * (and exp overflow) at every step, and ONNX's reference keeps it FP32 */
static const struct amp_why amp_recurrent = {
	"a recurrent state summed over every step: FP32, as ONNX's reference keeps it"
};
/* a rounding at every iteration compounds over a trip count known only
 * at run time */
static const struct amp_why amp_loop = {
	"a loop-carried value keeps FP32 from one iteration to the next (a run-time loop's "
	"rounding would compound with its trip count)"
};
/* FlashAttention's rule (Micikevicius et al.'s, per tile): the scores,
 * the running max and sum, the log-sum-exp and the accumulators stay FP32
 * inside the kernel, and the bias is never rounded to half (a finfo(f32).min
 * mask would become -inf, and small biases would lose their digits) */
static const struct amp_why amp_attention = {
	"Tensor Cores for Q.K^T and P.V; scores, softmax statistics and accumulators stay FP32 "
	"in the kernel, and so does the bias",
	.fp32_inputs = 1u << 3
};
/* its backward: the same, and the forward's log-sum-exp (input 4) is FP32
 * whatever the node's precision; the bias is input 6 there */
static const struct amp_why amp_attention_grad = {
	"attention's backward: recomputes the scores in FP32 from the FP32 log-sum-exp; Tensor "
	"Cores for its four products",
	.fp32_inputs = 1u << 4 | 1u << 6
};
/* many updates may land on one element, and half would round after each */
static const struct amp_why amp_scatter = {
	"clear when it places values (none, max, min); deny when it adds or multiplies them "
	"(sums many terms)",
	"reduction",
	{ "add", "mul" },
	IR_AMP_DENY
};
static const struct amp_why amp_resize = {
	"infer when it interpolates; clear in nearest mode (it only moves)",
	"mode",
	{ "nearest" },
	IR_AMP_CLEAR
};

static const struct amp_why *const whys[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = &amp_##why,
#include "ir/ops.h"
#undef IR_OP
};

const char *amp_class_reason(enum ir_op op) { return whys[op]->reason; }

bool amp_reads_fp32(const struct ir_node *n, int i)
{
	return (whys[n->op]->fp32_inputs >> i & 1) && n->in[i]->type.dtype != IR_BOOL;
}

const char *amp_class_attr(enum ir_op op, enum ir_amp *cls)
{
	if (cls)
		*cls = whys[op]->cls;
	return whys[op]->attr;
}

/* n's class by its row, refined by the attribute its why names. */
static enum ir_amp row_class(const struct ir_node *n)
{
	const struct amp_why *w = whys[n->op];
	if (w->attr)
		for (int i = 0; i < 2 && w->values[i]; i++)
			if (!strcmp(ir_attr_s(n, w->attr), w->values[i]))
				return w->cls;
	return ir_ops[n->op].amp;
}

bool amp_named(const char *name, const char *const *list, int n)
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
		enum ir_amp c = o->override[n->op] ? o->override_class[n->op] : row_class(n);
		a->cls = c;
		a->paintable = paintable(n) && c != IR_AMP_SPECIAL;
		a->prec = AMP_FP32;
		a->reason[0] = 0;
		a->rule = AMP_BY_CLASS;
		if (a->pin == IR_F32) { /* the range rule, the budget or the plan */
			a->cls = IR_AMP_DENY;
			a->rule = a->pin_rule;
			snprintf(a->reason, sizeof a->reason, "FP32: %s", a->why);
		} else if (amp_named(n->name, o->keep_fp32, o->nkeep)) {
			a->cls = IR_AMP_DENY;
			a->rule = AMP_BY_USER;
			snprintf(a->reason, sizeof a->reason, "FP32: pinned (--keep-fp32)");
		} else if (a->paintable && a->half == IR_F16) {
			const struct ir_value *big = beyond_f16(n);
			if (big) {
				a->cls = IR_AMP_DENY;
				a->rule = AMP_BY_RANGE;
				snprintf(a->reason, sizeof a->reason,
				         "FP32: constant %s has values beyond the FP16 range",
				         big->name);
			}
		}
	}
}

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
