/*
 * ops_elementwise.c - importers for elementwise ONNX ops.
 *
 * Most map one to one onto an IR op (the fe_op.ir column) and share the
 * generic importers at the top. The rest normalize: attribute defaults are
 * filled in, Clip's opset-11 min/max inputs become attributes, variadic
 * Sum/Mean/Min/Max become chains of binary ops, and Identity, Dropout in
 * inference and no-op Casts become aliases of their input.
 */
#include "fe.h"

#include <float.h>
#include <math.h>
#include <string.h>

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

/* One IR node with the op's inputs, no attributes. */
static bool imp_direct(struct fe_node *nd)
{
	const struct ir_op_info *oi = &ir_ops[nd->def->ir];
	if (!fe_inputs(nd, oi->min_in, oi->max_in))
		return false;
	return bind1(nd, fe_simple(nd, nd->def->ir, nd->in, nd->nin, 0));
}

/* A unary op with float attributes given as name=default pairs. */
static bool unary_attrs(struct fe_node *nd, const char *a1, float d1, const char *a2, float d2)
{
	float v1 = a1 ? fe_float(nd, a1, d1) : 0, v2 = a2 ? fe_float(nd, a2, d2) : 0;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	if (a1)
		ir_set_f(nd->fe->m, n, a1, v1);
	if (a2)
		ir_set_f(nd->fe->m, n, a2, v2);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_leaky_relu(struct fe_node *nd) { return unary_attrs(nd, "alpha", 0.01f, NULL, 0); }
static bool imp_elu(struct fe_node *nd) { return unary_attrs(nd, "alpha", 1.0f, NULL, 0); }
static bool imp_celu(struct fe_node *nd) { return unary_attrs(nd, "alpha", 1.0f, NULL, 0); }
static bool imp_thresholded_relu(struct fe_node *nd)
{
	return unary_attrs(nd, "alpha", 1.0f, NULL, 0);
}
static bool imp_hard_sigmoid(struct fe_node *nd)
{
	return unary_attrs(nd, "alpha", 0.2f, "beta", 0.5f);
}
static bool imp_shrink(struct fe_node *nd) { return unary_attrs(nd, "bias", 0.0f, "lambd", 0.5f); }

static bool imp_selu(struct fe_node *nd)
{
	return unary_attrs(nd, "alpha", 1.67326319217681884765625f, "gamma",
	                   1.05070102214813232421875f);
}

static bool imp_isinf(struct fe_node *nd)
{
	int64_t neg = fe_int(nd, "detect_negative", 1), pos = fe_int(nd, "detect_positive", 1);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_ISINF, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "detect_negative", neg != 0);
	ir_set_i(nd->fe->m, n, "detect_positive", pos != 0);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_mod(struct fe_node *nd)
{
	int64_t fmod_ = fe_int(nd, "fmod", 0);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (!fmod_ && ir_dtypes[nd->in[0]->type.dtype].is_float)
		return fe_fail(nd, "fmod=0 is not defined for floating-point inputs (use fmod=1)");
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_MOD, nd->in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "fmod", fmod_ != 0);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_bit_shift(struct fe_node *nd)
{
	const char *dir = fe_str(nd, "direction", NULL);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (!dir)
		return fe_fail(nd, "attribute 'direction' is required");
	if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
		return fe_fail(nd, "direction '%s' is not LEFT or RIGHT", dir);
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_BIT_SHIFT, nd->in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "left", strcmp(dir, "LEFT") == 0);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_clip(struct fe_node *nd)
{
	float lo = -INFINITY, hi = INFINITY;
	const char *name;
	struct ir_node *n;
	if (nd->opset < 11) {
		lo = fe_float(nd, "min", -FLT_MAX);
		hi = fe_float(nd, "max", FLT_MAX);
		if (!fe_inputs(nd, 1, 1))
			return false;
	} else {
		float *v;
		if (!fe_inputs(nd, 1, 3))
			return false;
		for (int i = 1; i < 3; i++) {
			if (!fe_in(nd, i))
				continue;
			if (fe_in(nd, i)->type.dtype != nd->in[0]->type.dtype)
				return fe_fail(nd, "min/max must have the input's type");
			if (fe_const_floats(nd, i, i == 1 ? "min" : "max", &v) != 1)
				return nd->failed ? false : fe_fail(nd, "min/max must be scalars");
			if (i == 1)
				lo = v[0];
			else
				hi = v[0];
		}
	}
	if (nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CLIP, nd->in, 1, &name, 1);
	ir_set_f(nd->fe->m, n, "min", lo);
	ir_set_f(nd->fe->m, n, "max", hi);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/*
 * Cast's saturate=0 (19) to a float8 type: a value beyond the type's range
 * becomes infinity (f8e5m2) or NaN (the others) instead of +-max, which is
 * the IR's cast. The saturating cast of x, and where |x| overflows (its
 * rounding goes beyond max: ir_minifloat_overflow) the infinity or NaN of
 * t, picked by sign.
 */
struct ir_value *fe_cast_no_saturate(struct fe_node *nd, struct ir_value *x, enum ir_dtype t, int k)
{
	struct ir_type st = { .dtype = t };
	struct ir_value *xf, *over, *in[3];
	bool incl, inf = ir_minifloat(t)->kind == IR_MF_IEEE;
	if (!x)
		return NULL;
	double lim = ir_minifloat_overflow(t, &incl);
	uint8_t pos = ir_minifloat_encode(t, inf ? INFINITY : NAN, false), neg = pos;
	if (inf)
		neg = ir_minifloat_encode(t, -INFINITY, false);
	xf = ir_dtype_float_valued(x->type.dtype) && x->type.dtype != IR_F64 ? x : NULL;
	if (!xf) /* integers and f64: compared as f64 */
		xf = fe_cast(nd, x, ir_minifloat(x->type.dtype) ? IR_F32 : IR_F64, -1);
	if (xf && ir_minifloat(xf->type.dtype))
		xf = fe_cast(nd, xf, IR_F32, -1);
	over = fe_binary(nd, incl ? IR_OP_GREATER_EQUAL : IR_OP_GREATER,
	                 fe_unary(nd, IR_OP_ABS, xf, -1),
	                 fe_scalar(nd, xf ? xf->type.dtype : IR_F32, lim), -1);
	in[0] = fe_binary(nd, IR_OP_LESS, xf, fe_scalar(nd, xf ? xf->type.dtype : IR_F32, 0), -1);
	in[1] = fe_const(nd, -1, &st, &neg), in[2] = fe_const(nd, -1, &st, &pos);
	return fe_where(nd, over, fe_where(nd, in[0], in[1], in[2], -1), fe_cast(nd, x, t, -1), k);
}

/*
 * Cast (24) to float8e8m0 with round_mode down or nearest, from the IR's
 * cast, which rounds up to a power of two: in f64, u = up(x); down(x) is u
 * where u == x, else u / 2; nearest(x) is 2 * down(x) from 1.5 * down(x) on
 * (ties up), else down(x). Each result is a power of two, which the final
 * cast keeps (2^128 overflows: +max, or NaN without saturate); NaN and
 * negative x stay NaN.
 */
static struct ir_value *e8m0_round(struct fe_node *nd, struct ir_value *x, bool nearest,
                                   bool saturate)
{
	struct ir_value *xd = fe_cast(nd, x, IR_F64, -1), *u, *d;
	u = fe_cast(nd, fe_cast(nd, x, IR_F8E8M0, -1), IR_F64, -1);
	d = fe_where(nd, fe_binary(nd, IR_OP_GREATER, u, xd, -1),
	             fe_binary(nd, IR_OP_MUL, u, fe_scalar(nd, IR_F64, 0.5), -1), u, -1);
	if (nearest)
		d = fe_where(nd,
		             fe_binary(nd, IR_OP_GREATER_EQUAL, xd,
		                       fe_binary(nd, IR_OP_MUL, d, fe_scalar(nd, IR_F64, 1.5), -1),
		                       -1),
		             fe_binary(nd, IR_OP_MUL, d, fe_scalar(nd, IR_F64, 2), -1), d, -1);
	return saturate ? fe_cast(nd, d, IR_F8E8M0, 0) : fe_cast_no_saturate(nd, d, IR_F8E8M0, 0);
}

/* x as element type t: a cast, or x itself when it has that type already */
static bool cast_to(struct fe_node *nd, enum ir_dtype t)
{
	const char *name;
	struct ir_node *n;
	/* saturate (19) and round_mode (24) govern conversions to float8 */
	bool saturate = nd->version < 19 || fe_int(nd, "saturate", 1) != 0;
	const char *round = nd->version >= 24 ? fe_str(nd, "round_mode", "up") : "up";
	if (nd->failed)
		return false;
	if (t == IR_F8E8M0 && strcmp(round, "up")) {
		if (strcmp(round, "down") && strcmp(round, "nearest"))
			return fe_fail(nd, "round_mode '%s' is not one of up, down, nearest",
			               round);
		if (t != nd->in[0]->type.dtype)
			return bind1(
			        nd, e8m0_round(nd, nd->in[0], !strcmp(round, "nearest"), saturate));
	}
	if (t == nd->in[0]->type.dtype) {
		fe_bind(nd, 0, nd->in[0]); /* a no-op: alias */
		return true;
	}
	if (!saturate && ir_minifloat(t) && t != IR_F4E2M1) /* float4 always saturates */
		return bind1(nd, fe_cast_no_saturate(nd, nd->in[0], t, 0));
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CAST, nd->in, 1, &name, 1);
	ir_set_t(nd->fe->m, n, "to", t);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* The type the "to" attribute of Cast or BitCast (what) names, after
 * checking the node's one input; IR_DT_NONE after reporting. */
static enum ir_dtype to_dtype(struct fe_node *nd, const char *what)
{
	int64_t to;
	enum ir_dtype t;
	if (!fe_req_int(nd, "to", &to) || !fe_inputs(nd, 1, 1) || nd->failed)
		return IR_DT_NONE;
	t = to >= 0 && to <= 64 ? ir_dtype_from_onnx((int)to) : IR_DT_NONE;
	if (t == IR_DT_NONE)
		fe_fail(nd, "%s to %s (type %lld) is not supported", what,
		        ir_onnx_dtype_name(to >= 0 && to <= 64 ? (int)to : -1), (long long)to);
	return t;
}

static bool imp_cast(struct fe_node *nd)
{
	enum ir_dtype t = to_dtype(nd, "cast");
	return t != IR_DT_NONE && cast_to(nd, t);
}

/* BitCast (26): the input's bytes as another type of their size (the
 * spec's rule: the same bit width, the same shape; inference refuses other
 * widths, and another type as bool: onnxc's bool holds only 0 and 1). */
static bool imp_bitcast(struct fe_node *nd)
{
	enum ir_dtype t = to_dtype(nd, "bitcast");
	const char *name;
	struct ir_node *n;
	if (t == IR_DT_NONE)
		return false;
	if (t == nd->in[0]->type.dtype) {
		fe_bind(nd, 0, nd->in[0]);
		return true;
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_BITCAST, nd->in, 1, &name, 1);
	ir_set_t(nd->fe->m, n, "to", t);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* CastLike (15): Cast to the element type of the second input, whose values
 * are not read */
static bool imp_cast_like(struct fe_node *nd)
{
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	return cast_to(nd, nd->in[1]->type.dtype);
}

static bool imp_identity(struct fe_node *nd)
{
	if (!fe_inputs(nd, 1, 1))
		return false;
	fe_bind(nd, 0, nd->in[0]);
	return true;
}

/*
 * Training-mode Dropout for onnxc train: y = dropout(x, seed) with a
 * placeholder seed that train_build turns into the step's seed input; the
 * salt numbers the model's Dropouts so each draws its own mask. The mask
 * output is the same draw applied to ones.
 */
static bool dropout_training(struct fe_node *nd, float ratio)
{
	struct fe *fe = nd->fe;
	struct ir_type st = { .dtype = IR_I64 };
	int64_t zero = 0;
	struct ir_value *in[2] = { nd->in[0], fe_const(nd, -1, &st, &zero) };
	int64_t salt = fe->ndropout++;
	for (int k = 0; k < 2 && k < nd->nout; k++) {
		struct ir_node *n;
		const char *name;
		if (!nd->proto->output[k][0])
			continue; /* an unused mask is removed by dce after the import */
		if (k == 1) {     /* mask = dropout(ones) > 0 */
			const struct ir_type *xt = &nd->in[0]->type;
			struct ir_type ot = { .dtype = xt->dtype };
			unsigned char buf[8];
			ir_store_f64(ot.dtype, buf, 0, 1);
			in[0] = fe_const(nd, -1, &ot, buf);
			name = fe_tmp_name(nd, "ones");
			n = fe_emit(nd, IR_OP_EXPAND, in, 1, &name, 1);
			ir_set_ints(fe->m, n, "shape", xt->dims, xt->rank);
			if (!fe_finish(nd, n))
				return false;
			in[0] = n->out[0];
		}
		name = k == 0 ? fe_out_name(nd, 0) : fe_tmp_name(nd, "dropout");
		n = fe_emit(nd, IR_OP_DROPOUT, in, 2, &name, 1);
		ir_set_f(fe->m, n, "ratio", ratio);
		ir_set_i(fe->m, n, "salt", salt);
		if (!fe_finish(nd, n))
			return false;
		if (k == 1) {
			struct ir_type zt = { .dtype = nd->in[0]->type.dtype };
			unsigned char buf[8];
			struct ir_value *gz[2], *mask;
			ir_store_f64(zt.dtype, buf, 0, 0);
			gz[0] = n->out[0];
			gz[1] = fe_const(nd, -1, &zt, buf);
			if (!(mask = fe_simple(nd, IR_OP_GREATER, gz, 2, 1)))
				return false;
			fe_bind(nd, 1, mask);
		} else {
			fe_bind(nd, 0, n->out[0]);
		}
	}
	return true;
}

/*
 * Dropout is the identity at inference. Opset 12 made ratio and
 * training_mode inputs; a constant true training_mode means training. An
 * import for onnxc train (fe_options.training) keeps training-mode
 * Dropouts, and every Dropout before opset 12 (which had no mode: exporters
 * leave it out of inference graphs), as the IR's dropout; any other import
 * refuses a training-mode Dropout. The optional mask output is all true at
 * inference.
 */
static bool imp_dropout(struct fe_node *nd)
{
	bool training = false, for_train = nd->fe->opt && nd->fe->opt->training;
	float ratio = 0.5f;
	fe_ignore(nd, "seed");
	if (nd->opset < 12) {
		ratio = fe_float(nd, "ratio", 0.5f);
		training = for_train;
		if (!fe_inputs(nd, 1, 1))
			return false;
	} else {
		struct ir_value *mode;
		if (!fe_inputs(nd, 1, 3))
			return false;
		if ((mode = fe_in(nd, 2))) {
			if (!fe_need_const(nd, 2, "training_mode"))
				return false;
			if (mode->type.dtype != IR_BOOL || ir_type_elems(&mode->type) != 1)
				return fe_fail(nd, "training_mode must be a bool scalar");
			training = *(const uint8_t *)mode->data != 0;
		}
		if (training && fe_in(nd, 1)) {
			struct ir_value *r = fe_in(nd, 1);
			if (!fe_need_const(nd, 1, "ratio"))
				return false;
			if (!ir_dtypes[r->type.dtype].is_float || ir_type_elems(&r->type) != 1)
				return fe_fail(nd, "ratio must be a float scalar");
			ratio = (float)ir_load_f64(r->type.dtype, r->data, 0);
		}
	}
	if (training && !for_train)
		return fe_fail(nd, "training-mode Dropout cannot be compiled for inference");
	if (training && !(ratio >= 0 && ratio <= 1))
		return fe_fail(nd, "ratio %g is outside [0, 1]", (double)ratio);
	if (training && !ir_dtypes[nd->in[0]->type.dtype].is_float)
		return fe_fail(nd, "input is %s: Dropout takes a float tensor",
		               ir_dtype_name(nd->in[0]->type.dtype));
	if (training && ratio > 0)
		return dropout_training(nd, ratio);
	fe_bind(nd, 0, nd->in[0]);
	if (nd->nout > 1 && nd->proto->output[1][0]) {
		struct ir_type t = { .dtype = IR_BOOL };
		uint8_t one = 1;
		struct ir_value *c = fe_const(nd, -1, &t, &one);
		const struct ir_type *xt = &nd->in[0]->type;
		const char *name = fe_out_name(nd, 1);
		struct ir_node *n = fe_emit(nd, IR_OP_EXPAND, &c, 1, &name, 1);
		ir_set_ints(nd->fe->m, n, "shape", xt->dims, xt->rank);
		if (!fe_finish(nd, n))
			return false;
		fe_bind(nd, 1, n->out[0]);
	}
	return true;
}

/* Sum, Mean, Min, Max: a left-to-right chain of binary ops. */
static bool imp_variadic(struct fe_node *nd)
{
	enum ir_op op = nd->def->ir;
	bool mean = !strcmp(nd->op, "Mean");
	struct ir_value *acc;
	if (!fe_inputs(nd, 1, -1))
		return false;
	for (int i = 0; i < nd->nin; i++)
		if (!nd->in[i])
			return fe_fail(nd, "input %d is empty", i);
	acc = nd->in[0];
	for (int i = 1; i < nd->nin; i++) {
		struct ir_value *ab[2] = { acc, nd->in[i] };
		bool last = i == nd->nin - 1 && !mean;
		if (!(acc = fe_simple(nd, op, ab, 2, last ? 0 : -1)))
			return false;
	}
	if (mean && nd->nin > 1) {
		struct ir_type t = { .dtype = acc->type.dtype };
		unsigned char buf[8];
		struct ir_value *ab[2] = { acc, NULL };
		if (!ir_dtypes[t.dtype].is_float)
			return fe_fail(nd, "Mean needs float inputs");
		ir_store_f64(t.dtype, buf, 0, (double)nd->nin);
		ab[1] = fe_const(nd, -1, &t, buf);
		if (!(acc = fe_simple(nd, IR_OP_DIV, ab, 2, 0)))
			return false;
	}
	fe_bind(nd, 0, acc);
	return true;
}

/* An op imported as one IR op of the same inputs, outputs and no
 * attributes; then every ONNX version of it onnxc implements. */
#define U(onnx, irop, ...)                                      \
	{                                                       \
		onnx, imp_direct, IR_OP_##irop, { __VA_ARGS__ } \
	}

const struct fe_op fe_ops_elementwise[] = {
	U("Neg", NEG, 6, 13),
	U("Abs", ABS, 6, 13),
	U("Sign", SIGN, 9, 13),
	U("Relu", RELU, 6, 13, 14),
	U("Floor", FLOOR, 6, 13),
	U("Ceil", CEIL, 6, 13),
	U("Round", ROUND, 11, 22),
	U("Sqrt", SQRT, 6, 13),
	U("Reciprocal", RECIPROCAL, 6, 13),
	U("Exp", EXP, 6, 13),
	U("Log", LOG, 6, 13),
	U("Erf", ERF, 9, 13),
	U("Tanh", TANH, 6, 13),
	U("Sigmoid", SIGMOID, 6, 13),
	U("Sin", SIN, 7, 22),
	U("Cos", COS, 7, 22),
	U("Tan", TAN, 7, 22),
	U("Asin", ASIN, 7, 22),
	U("Acos", ACOS, 7, 22),
	U("Atan", ATAN, 7, 22),
	U("Sinh", SINH, 9, 22),
	U("Cosh", COSH, 9, 22),
	U("Asinh", ASINH, 9, 22),
	U("Acosh", ACOSH, 9, 22),
	U("Atanh", ATANH, 9, 22),
	U("Softplus", SOFTPLUS, 1, 22),
	U("Softsign", SOFTSIGN, 1, 22),
	U("Mish", MISH, 18, 22),
	U("HardSwish", HARD_SWISH, 14, 22),
	U("Not", NOT, 1),
	U("IsNaN", ISNAN, 9, 13, 20),
	U("Add", ADD, 7, 13, 14),
	U("Sub", SUB, 7, 13, 14),
	U("Mul", MUL, 7, 13, 14),
	U("Div", DIV, 7, 13, 14),
	U("Pow", POW, 7, 12, 13, 15),
	U("PRelu", PRELU, 6, 7, 9, 16),
	U("Equal", EQUAL, 7, 11, 13, 19),
	U("Less", LESS, 7, 9, 13),
	U("LessOrEqual", LESS_EQUAL, 12, 16),
	U("Greater", GREATER, 7, 9, 13),
	U("GreaterOrEqual", GREATER_EQUAL, 12, 16),
	U("And", AND, 7),
	U("Or", OR, 7),
	U("Xor", XOR, 7),
	U("Where", WHERE, 9, 16),
	U("BitwiseNot", BIT_NOT, 18),
	U("BitwiseAnd", BIT_AND, 18),
	U("BitwiseOr", BIT_OR, 18),
	U("BitwiseXor", BIT_XOR, 18),
	{ "BitShift", imp_bit_shift, IR_OP_BIT_SHIFT, { 11 } },
	{ "LeakyRelu", imp_leaky_relu, IR_OP_LEAKY_RELU, { 6, 16 } },
	{ "Elu", imp_elu, IR_OP_ELU, { 6, 22 } },
	{ "Celu", imp_celu, IR_OP_CELU, { 12 } },
	{ "Selu", imp_selu, IR_OP_SELU, { 6, 22 } },
	{ "ThresholdedRelu", imp_thresholded_relu, IR_OP_THRESHOLDED_RELU, { 10, 22 } },
	{ "HardSigmoid", imp_hard_sigmoid, IR_OP_HARD_SIGMOID, { 6, 22 } },
	{ "Shrink", imp_shrink, IR_OP_SHRINK, { 9 } },
	{ "IsInf", imp_isinf, IR_OP_ISINF, { 10, 20 } },
	{ "Mod", imp_mod, IR_OP_MOD, { 10, 13 } },
	{ "Clip", imp_clip, IR_OP_CLIP, { 6, 11, 12, 13 } },
	{ "Cast", imp_cast, IR_OP_CAST, { 6, 9, 13, 19, 21, 23, 24, 25 } },
	{ "CastLike", imp_cast_like, IR_OP_CAST, { 15, 19, 21, 23, 24, 25 } },
	{ "BitCast", imp_bitcast, IR_OP_BITCAST, { 26 } },
	{ "Identity", imp_identity, IR_OP_COPY, { 1, 13, 14, 16, 19, 21, 23, 24, 25 } },
	{ "Dropout", imp_dropout, IR_OP_COPY, { 7, 10, 12, 13, 22 } },
	{ "Sum", imp_variadic, IR_OP_ADD, { 6, 8, 13 } },
	{ "Mean", imp_variadic, IR_OP_ADD, { 6, 8, 13 } },
	{ "Min", imp_variadic, IR_OP_MIN, { 6, 8, 12, 13 } },
	{ "Max", imp_variadic, IR_OP_MAX, { 6, 8, 12, 13 } },
	{ NULL, NULL, 0, { 0 } },
};
