/*
 * ops_quant.c - importers for the quantization ops: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul and QLinearConv, as decompositions into IR ops with the
 * exact integer semantics of ONNX's reference (onnx/reference/ops).
 *
 * Every step computes in f64, and a step that ONNX rounds to a narrower
 * float (the division of QuantizeLinear in the scale's type, the scale
 * products of QLinear*) is the f64 operation followed by a cast to that
 * type and back. That is exact: f64 holds every value of the narrower
 * types, and rounding a sum, product or quotient of f32 (or f16, bf16)
 * operands first to f64 and then to the narrower type gives the correctly
 * rounded result, because 53 >= 2 * 24 + 2 (Figueroa, "When is double
 * rounding innocuous?", 1995). Working in f64 also keeps mixed precision
 * out: it paints FP32 tensors only (docs/precision.md), so none of this
 * arithmetic can become FP16.
 *
 * The integer products (MatMulInteger, ConvInteger, QLinear*) are an f64
 * MatMul of the zero-point-corrected operands: each product is at most
 * 255 * 255 < 2^16 in magnitude, so every partial sum of K of them is an
 * integer below 2^53 - exact in any order on every target - for K < 2^37;
 * larger K is refused. The exact sum then wraps to int32 (i64, then i32),
 * which is ONNX's int32 accumulation. The targets' integer MatMul would not
 * do: the CUDA GEMM (cuBLASLt) has none, and the convolutions run f32
 * (CPU) or f32/f16/bf16 (cuDNN) only, so a convolution is an im2col - one
 * strided slice of the padded input per kernel position, concatenated -
 * and that f64 MatMul.
 *
 * The storage types (int4, uint4, int2, uint2, float8, float4: docs/ir.md)
 * quantize and dequantize like the others, through the IR's cast: an
 * integer one after the clip to its range, a float8 one straight from
 * x / y_scale, saturating unless saturate=0 (fe_cast_no_saturate), float4
 * from x / y_scale + y_zero_point, as ONNX's reference computes them.
 */
#include "fe.h"

#include <stdio.h>
#include <string.h>

/* Every partial sum of fewer than 2^37 products below 2^16 is below 2^53. */
#define MAX_EXACT_K ((int64_t)1 << 37)

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

static bool is_float(enum ir_dtype t) { return ir_dtypes[t].is_float; }

/* The shape of t as text, "[2,3]" (the dtype left out). */
struct shape_str {
	char s[IR_TYPE_STR_MAX];
};
static struct shape_str shape_of(const struct ir_type *t)
{
	struct shape_str r;
	char buf[IR_TYPE_STR_MAX];
	ir_type_str(t, buf, sizeof buf);
	snprintf(r.s, sizeof r.s, "%s", strchr(buf, '[') ? strchr(buf, '[') : "[]");
	return r;
}

static bool same_dims(const struct ir_type *a, const struct ir_type *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

/* ------------------------------------------------------------------------ */
/* Arithmetic in f64                                                        */
/* ------------------------------------------------------------------------ */

static struct ir_value *f64_of(struct fe_node *nd, struct ir_value *v)
{
	return !v || v->type.dtype == IR_F64 ? v : fe_cast(nd, v, IR_F64, -1);
}

static struct ir_value *reshape(struct fe_node *nd, struct ir_value *x, const int64_t *dims,
                                int rank)
{
	return x ? fe_reshape(nd, x, dims, rank, -1) : NULL;
}

static struct ir_value *scalar(struct fe_node *nd, double v)
{
	struct ir_type t = { .dtype = IR_F64 };
	return fe_const(nd, -1, &t, &v);
}

static struct ir_value *bin(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                            struct ir_value *b)
{
	struct ir_value *in[2] = { a, b };
	return a && b ? fe_simple(nd, op, in, 2, -1) : NULL;
}

/* v, the f64 result of one operation on values of type t, rounded to t as
 * ONNX computes it there (see the top). Integer t: numpy's true division
 * of integers is f64's, v itself. */
static struct ir_value *rounded_to(struct fe_node *nd, struct ir_value *v, enum ir_dtype t)
{
	if (!v || !is_float(t) || t == IR_F64)
		return v;
	return f64_of(nd, fe_cast(nd, v, t, -1));
}

/* a op b computed in type t: the operation of ONNX's reference on t */
static struct ir_value *op_in(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                              struct ir_value *b, enum ir_dtype t)
{
	return rounded_to(nd, bin(nd, op, f64_of(nd, a), f64_of(nd, b)), t);
}

static struct ir_value *clip(struct fe_node *nd, struct ir_value *v, double lo, double hi)
{
	const char *name = fe_tmp_name(nd, "clip");
	struct ir_node *n;
	if (!v)
		return NULL;
	n = fe_emit(nd, IR_OP_CLIP, &v, 1, &name, 1);
	ir_set_f(nd->fe->m, n, "min", (float)lo);
	ir_set_f(nd->fe->m, n, "max", (float)hi);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* The integer types quantization produces, with their ranges. */
static bool quant_range(enum ir_dtype t, double *lo, double *hi)
{
	switch (t) {
	case IR_I8: *lo = -128, *hi = 127; return true;
	case IR_U8: *lo = 0, *hi = 255; return true;
	case IR_I16: *lo = -32768, *hi = 32767; return true;
	case IR_U16: *lo = 0, *hi = 65535; return true;
	case IR_I4: *lo = -8, *hi = 7; return true;
	case IR_U4: *lo = 0, *hi = 15; return true;
	case IR_I2: *lo = -2, *hi = 1; return true;
	case IR_U2: *lo = 0, *hi = 3; return true;
	default: return false;
	}
}

/* The first version of QuantizeLinear and DequantizeLinear that has the
 * quantized type t (0: none has it). */
static int quant_since(enum ir_dtype t)
{
	switch (t) {
	case IR_I8:
	case IR_U8: return 10;
	case IR_F8E4M3FN:
	case IR_F8E4M3FNUZ:
	case IR_F8E5M2:
	case IR_F8E5M2FNUZ: return 19;
	case IR_I16:
	case IR_U16:
	case IR_I4:
	case IR_U4: return 21;
	case IR_F4E2M1: return 23;
	case IR_I2:
	case IR_U2: return 25;
	default: return 0;
	}
}

/* A float8 or float4 zero point of DequantizeLinear, or a float8 one of
 * QuantizeLinear, must be zero (ONNX's reference refuses any other in
 * float8, and leaves it out in float4); it is then left out. False after reporting a constant one that is not. */
static bool zero_point_zero(struct fe_node *nd, const char *what)
{
	struct ir_value *z = fe_in(nd, 2);
	if (!z || !z->data)
		return true;
	for (int64_t i = 0; i < ir_type_elems(&z->type); i++)
		if (ir_load_f64(z->type.dtype, z->data, (size_t)i) != 0)
			return fe_fail(nd, "%s of a float8 or float4 type must be 0", what);
	return true;
}

/*
 * v (f64, integer-valued) saturated to t's range and converted to t: ONNX
 * output k. Infinities saturate; NaN becomes 0 (the IR's conversion), where
 * the reference's numpy gives whatever its platform's conversion of NaN to
 * int32 does.
 */
static struct ir_value *saturate(struct fe_node *nd, struct ir_value *v, enum ir_dtype t, int k)
{
	double lo = 0, hi = 0;
	quant_range(t, &lo, &hi);
	v = clip(nd, v, lo, hi);
	return v ? fe_cast(nd, v, t, k) : NULL;
}

/* v rounded half to even */
static struct ir_value *round_even(struct fe_node *nd, struct ir_value *v)
{
	return v ? fe_simple(nd, IR_OP_ROUND, &v, 1, -1) : NULL;
}

/* An exact integer sum (f64) as int32, wrapping as ONNX's int32 does. */
static struct ir_value *wrap_i32(struct fe_node *nd, struct ir_value *v, int k)
{
	return v ? fe_cast(nd, fe_cast(nd, v, IR_I64, -1), IR_I32, k) : NULL;
}

/* An element type given as an attribute: false after reporting one onnxc
 * has no kernels for. 0 (the default) is IR_DT_NONE. */
static bool type_attr(struct fe_node *nd, const char *name, enum ir_dtype *t)
{
	int64_t code = fe_int(nd, name, 0);
	*t = IR_DT_NONE;
	if (code == 0 || nd->failed)
		return !nd->failed;
	*t = code > 0 && code <= 64 ? ir_dtype_from_onnx((int)code) : IR_DT_NONE;
	if (*t == IR_DT_NONE)
		return fe_fail(nd, "%s has element type %s (%lld), which onnxc does not support",
		               name, ir_onnx_dtype_name(code > 0 && code <= 64 ? (int)code : -1),
		               (long long)code);
	return true;
}

/* ------------------------------------------------------------------------ */
/* QuantizeLinear, DequantizeLinear                                         */
/* ------------------------------------------------------------------------ */

/* axis (13) matters only to a per-axis or blocked scale: read it either way,
 * so that a per-tensor one does not leave it unread (and refused). */
static void axis_read(struct fe_node *nd)
{
	if (nd->version >= 13)
		(void)fe_int(nd, "axis", 1);
}

/* The quantization axis, normalized (a negative axis counts from the end). */
static bool quant_axis(struct fe_node *nd, const struct ir_type *x, int64_t *axis)
{
	*axis = nd->version >= 13 ? fe_int(nd, "axis", 1) : 1;
	if (nd->failed)
		return false;
	return (*axis = fe_axis(nd, *axis, x->rank, "axis")) >= 0;
}

/*
 * A scale or zero point v made to broadcast against x: a scalar (or one
 * value) as is; per-axis (13), a 1-D tensor of x's axis dimension, shaped
 * [1, ..., D, ..., 1]; blocked (21, block > 0), x's shape but
 * ceil(D / block) along the axis, each value repeated block times along it
 * and the last block cut to D (reshape, expand, reshape, slice).
 */
static struct ir_value *per_axis(struct fe_node *nd, struct ir_value *v, const struct ir_type *x,
                                 int64_t block, const char *what)
{
	const struct ir_type *t = &v->type;
	int64_t axis, dims[IR_MAX_RANK + 1], st[IR_MAX_RANK], en[IR_MAX_RANK], one[IR_MAX_RANK];
	const char *name;
	struct ir_node *n;
	if (ir_type_elems(t) == 1 && block == 0)
		return t->rank == 0 ? v : reshape(nd, v, NULL, 0);
	if (nd->version < 13 || (nd->version < 21 && t->rank > 1)) {
		fe_fail(nd, "%s must be a scalar%s", what, nd->version < 13 ? "" : " or 1-D");
		return NULL;
	}
	if (!quant_axis(nd, x, &axis))
		return NULL;
	if (block == 0) {
		if (t->rank != 1 || t->dims[0] != x->dims[axis]) {
			fe_fail(nd,
			        "%s of shape %s is neither a scalar nor 1-D of the %lld values of "
			        "axis %lld",
			        what, shape_of(t).s, (long long)x->dims[axis], (long long)axis);
			return NULL;
		}
		for (int i = 0; i < x->rank; i++)
			dims[i] = i == axis ? x->dims[axis] : 1;
		return reshape(nd, v, dims, x->rank);
	}
	for (int i = 0; i < x->rank; i++)
		if (t->rank != x->rank ||
		    t->dims[i] != (i == axis ? (x->dims[i] + block - 1) / block : x->dims[i])) {
			fe_fail(nd,
			        "blocked %s of shape %s does not fit input %s with block_size %lld "
			        "along axis %lld",
			        what, shape_of(t).s, shape_of(x).s, (long long)block,
			        (long long)axis);
			return NULL;
		}
	/* [.., S, ..] -> [.., S, 1, ..] -> [.., S, block, ..] -> [.., S * block, ..] */
	for (int i = 0, j = 0; i < t->rank; i++) {
		dims[j++] = t->dims[i];
		if (i == axis)
			dims[j++] = 1;
	}
	if (!(v = reshape(nd, v, dims, t->rank + 1)))
		return NULL;
	dims[axis + 1] = block;
	name = fe_tmp_name(nd, "repeat");
	n = fe_emit(nd, IR_OP_EXPAND, &v, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "shape", dims, x->rank + 1);
	if (!fe_finish(nd, n))
		return NULL;
	memcpy(dims, x->dims, sizeof *dims * (size_t)x->rank);
	dims[axis] = v->type.dims[axis] * block;
	if (!(v = reshape(nd, n->out[0], dims, x->rank)) || dims[axis] == x->dims[axis])
		return v;
	for (int i = 0; i < x->rank; i++)
		st[i] = 0, en[i] = x->dims[i], one[i] = 1;
	name = fe_tmp_name(nd, "block");
	n = fe_emit(nd, IR_OP_SLICE, &v, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "starts", st, x->rank);
	ir_set_ints(nd->fe->m, n, "ends", en, x->rank);
	ir_set_ints(nd->fe->m, n, "steps", one, x->rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* The zero point (input 2, optional) agrees with the scale (input 1). */
static bool check_zero_point(struct fe_node *nd, const char *what)
{
	const struct ir_type *s = &nd->in[1]->type, *z = fe_in(nd, 2) ? &fe_in(nd, 2)->type : NULL;
	/* one value each is one value, whatever the ranks (as the reference) */
	if (z && !same_dims(s, z) && !(ir_type_elems(s) == 1 && ir_type_elems(z) == 1))
		return fe_fail(nd, "%s of shape %s differs from the scale's %s", what,
		               shape_of(z).s, shape_of(s).s);
	return true;
}

/*
 * y = saturate(round(x / y_scale) + y_zero_point), the division in the
 * scale's type (or precision's, 23), with x cast to it first when it
 * differs, as the reference does; y has the zero point's type, else
 * output_dtype's (21), else uint8. saturate (19) applies to float8 only.
 */
static bool imp_quantize(struct fe_node *nd)
{
	int64_t block = nd->version >= 21 ? fe_int(nd, "block_size", 0) : 0;
	bool sat = nd->version < 19 || fe_int(nd, "saturate", 1) != 0;
	enum ir_dtype out = IR_DT_NONE, prec = IR_DT_NONE, c;
	struct ir_value *x, *s, *z, *q;
	axis_read(nd);
	if ((nd->version >= 21 && !type_attr(nd, "output_dtype", &out)) ||
	    (nd->version >= 23 && !type_attr(nd, "precision", &prec)) || !fe_inputs(nd, 2, 3))
		return false;
	x = nd->in[0], s = nd->in[1], z = fe_in(nd, 2);
	if (block < 0)
		return fe_fail(nd, "block_size %lld is negative", (long long)block);
	if (z && out != IR_DT_NONE && z->type.dtype != out)
		return fe_fail(nd, "output_dtype %s differs from y_zero_point's %s",
		               ir_dtype_name(out), ir_dtype_name(z->type.dtype));
	out = z ? z->type.dtype : out != IR_DT_NONE ? out : IR_U8;
	if (!quant_since(out) || nd->version < quant_since(out))
		return fe_fail(nd, "QuantizeLinear-%d does not produce %s", nd->version,
		               ir_dtype_name(out));
	c = prec != IR_DT_NONE ? prec : s->type.dtype;
	if ((!is_float(x->type.dtype) && x->type.dtype != IR_I32) || (!is_float(c) && c != IR_I32))
		return fe_fail(nd, "x is %s and the division is in %s: expected float or int32",
		               ir_dtype_name(x->type.dtype), ir_dtype_name(c));
	if (!check_zero_point(nd, "y_zero_point"))
		return false;
	if (is_float(c)) {
		if (x->type.dtype != c && !(x = fe_cast(nd, x, c, -1)))
			return false;
		if (s->type.dtype != c && !(s = fe_cast(nd, s, c, -1)))
			return false;
	}
	if (!(s = per_axis(nd, s, &nd->in[0]->type, block, "y_scale")))
		return false;
	q = op_in(nd, IR_OP_DIV, x, s, c);
	if (ir_minifloat(out) && out != IR_F4E2M1) { /* float8: x / y_scale, cast */
		if (!zero_point_zero(nd, "y_zero_point"))
			return false;
		return bind1(nd, sat ? fe_cast(nd, q, out, 0) : fe_cast_no_saturate(nd, q, out, 0));
	}
	if (!ir_minifloat(out))
		q = round_even(nd, q);
	if (z) {
		if (!(z = per_axis(nd, z, &nd->in[0]->type, block, "y_zero_point")))
			return false;
		q = bin(nd, IR_OP_ADD, q, f64_of(nd, z));
	}
	if (out == IR_F4E2M1) /* (x / y_scale + y_zero_point), saturating */
		return bind1(nd, fe_cast(nd, q, out, 0));
	return bind1(nd, saturate(nd, q, out, 0));
}

/*
 * y = (x - x_zero_point) * x_scale, computed as the reference does: the
 * product in f32 (exact in f64 first: |x - zp| < 2^17 and a 24-bit scale
 * give at most 41 bits; int32 x is exact while |x - zp| < 2^29), then
 * converted to the scale's type or output_dtype's (23).
 */
static bool imp_dequantize(struct fe_node *nd)
{
	int64_t block = nd->version >= 21 ? fe_int(nd, "block_size", 0) : 0;
	enum ir_dtype out = IR_DT_NONE, xt;
	struct ir_value *x, *s, *z, *y;
	axis_read(nd);
	if ((nd->version >= 23 && !type_attr(nd, "output_dtype", &out)) || !fe_inputs(nd, 2, 3))
		return false;
	x = nd->in[0], s = nd->in[1], z = fe_in(nd, 2), xt = x->type.dtype;
	if (block < 0)
		return fe_fail(nd, "block_size %lld is negative", (long long)block);
	if ((nd->version < quant_since(xt) || !quant_since(xt)) && xt != IR_I32)
		return fe_fail(nd, "DequantizeLinear-%d does not read %s", nd->version,
		               ir_dtype_name(xt));
	if (z && z->type.dtype != xt)
		return fe_fail(nd, "x_zero_point is %s, x is %s", ir_dtype_name(z->type.dtype),
		               ir_dtype_name(xt));
	out = out != IR_DT_NONE ? out : s->type.dtype;
	if (!is_float(s->type.dtype) || !is_float(out) || out == IR_F64)
		return fe_fail(nd, "x_scale is %s and y %s: expected float, float16 or bfloat16",
		               ir_dtype_name(s->type.dtype), ir_dtype_name(out));
	if (!check_zero_point(nd, "x_zero_point") ||
	    !(s = per_axis(nd, s, &x->type, block, "x_scale")))
		return false;
	y = f64_of(nd, x);
	if (ir_minifloat(xt)) { /* float8, float4: the zero point must be 0 */
		if (!zero_point_zero(nd, "x_zero_point"))
			return false;
		z = NULL;
	}
	if (z && !(z = per_axis(nd, z, &x->type, block, "x_zero_point")))
		return false;
	if (z)
		y = bin(nd, IR_OP_SUB, y, f64_of(nd, z));
	y = rounded_to(nd, bin(nd, IR_OP_MUL, y, f64_of(nd, s)), IR_F32);
	return bind1(nd, y ? fe_cast(nd, y, out, 0) : NULL);
}

/* ------------------------------------------------------------------------ */
/* DynamicQuantizeLinear                                                    */
/* ------------------------------------------------------------------------ */

/*
 * uint8 quantization with the scale and zero point of x's range widened
 * to hold 0, in f32 as the reference and ONNX Runtime compute them:
 *   scale = (max(0, max x) - min(0, min x)) / 255  (1 / 255 when the range is 0)
 *   zero  = round(clip(0 - min(0, min x) / scale, 0, 255))
 *   y     = saturate(round(x / scale) + zero)
 * A zero range (x all zeros) gives scale 1/255 as they do: the spec's
 * function body would divide 0 by 0 there (its y and zero are 0 either way).
 */
static bool imp_dynamic_quantize(struct fe_node *nd)
{
	struct ir_value *x, *hi, *lo, *range, *scale, *zero, *y, *in[3];
	if (!fe_inputs(nd, 1, 1))
		return false;
	if (nd->in[0]->type.dtype != IR_F32)
		return fe_fail(nd, "x is %s: DynamicQuantizeLinear takes float",
		               ir_dtype_name(nd->in[0]->type.dtype));
	x = f64_of(nd, nd->in[0]);
	hi = bin(nd, IR_OP_MAX, fe_reduce_all(nd, IR_OP_REDUCE_MAX, x, -1), scalar(nd, 0));
	lo = bin(nd, IR_OP_MIN, fe_reduce_all(nd, IR_OP_REDUCE_MIN, x, -1), scalar(nd, 0));
	range = op_in(nd, IR_OP_SUB, hi, lo, IR_F32);
	in[0] = bin(nd, IR_OP_EQUAL, hi, lo), in[1] = scalar(nd, 1), in[2] = range;
	range = in[0] && range ? fe_simple(nd, IR_OP_WHERE, in, 3, -1) : NULL;
	scale = op_in(nd, IR_OP_DIV, range, scalar(nd, 255), IR_F32);
	zero = bin(nd, IR_OP_SUB, scalar(nd, 0), op_in(nd, IR_OP_DIV, lo, scale, IR_F32));
	zero = round_even(nd, clip(nd, zero, 0, 255));
	y = bin(nd, IR_OP_ADD, round_even(nd, op_in(nd, IR_OP_DIV, x, scale, IR_F32)), zero);
	if (!(y = saturate(nd, y, IR_U8, 0)) || !(scale = fe_cast(nd, scale, IR_F32, 1)) ||
	    !(zero = fe_cast(nd, zero, IR_U8, 2)))
		return false;
	fe_bind(nd, 0, y);
	fe_bind(nd, 1, scale);
	fe_bind(nd, 2, zero);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Integer products                                                         */
/* ------------------------------------------------------------------------ */

static bool is_8bit(const struct ir_value *v)
{
	return v->type.dtype == IR_I8 || v->type.dtype == IR_U8;
}

/*
 * A per-row parameter of a [.., M, K] operand (the zero point or scale of
 * MatMulInteger's and QLinearMatMul's a): an M-vector becomes a column
 * [M, 1]; a scalar and the N-D forms ([.., M, 1]) broadcast as they are.
 */
static struct ir_value *per_row(struct fe_node *nd, struct ir_value *v, const struct ir_value *a)
{
	int64_t col[2];
	if (!v || v->type.rank != 1 || a->type.rank < 2 || ir_type_elems(&v->type) == 1)
		return v;
	col[0] = v->type.dims[0], col[1] = 1;
	return reshape(nd, v, col, 2);
}

/* x - zero (zero optional), in f64: exact integers */
static struct ir_value *centered(struct fe_node *nd, struct ir_value *x, struct ir_value *zero)
{
	x = f64_of(nd, x);
	return zero ? bin(nd, IR_OP_SUB, x, f64_of(nd, zero)) : x;
}

static bool check_k(struct fe_node *nd, int64_t k)
{
	if (k >= MAX_EXACT_K)
		return fe_fail(nd,
		               "the products sum over %lld terms: onnxc accumulates them exactly "
		               "only below 2^37",
		               (long long)k);
	return true;
}

/* The exact integer product of a and b (f64, zero points applied). */
static struct ir_value *exact_matmul(struct fe_node *nd, struct ir_value *a, struct ir_value *b)
{
	if (!a || !b || !check_k(nd, a->type.dims[a->type.rank - 1]))
		return NULL;
	return bin(nd, IR_OP_MATMUL, a, b);
}

/*
 * The requantization of QLinearMatMul and QLinearConv, as the reference:
 * the multiplier a_scale * b_scale / y_scale in the scales' type, the
 * int32 accumulator times it in f64 (numpy's int32 by float), plus the
 * zero point, rounded and saturated to the zero point's type.
 */
static bool requantize(struct fe_node *nd, struct ir_value *acc, struct ir_value *sa,
                       struct ir_value *sb, struct ir_value *sy, struct ir_value *zy)
{
	enum ir_dtype st = sa->type.dtype;
	struct ir_value *mult;
	double lo, hi;
	if (!is_float(st) || st == IR_F64 || sb->type.dtype != st || sy->type.dtype != st ||
	    (nd->version < 21 && st != IR_F32))
		return fe_fail(nd, "the scales are %s, %s and %s: expected one of float%s",
		               ir_dtype_name(st), ir_dtype_name(sb->type.dtype),
		               ir_dtype_name(sy->type.dtype),
		               nd->version < 21 ? "" : ", float16 and bfloat16");
	if (!quant_range(zy->type.dtype, &lo, &hi) || !is_8bit(zy))
		return fe_fail(nd, "y_zero_point is %s: expected int8 or uint8",
		               ir_dtype_name(zy->type.dtype));
	mult = op_in(nd, IR_OP_DIV, op_in(nd, IR_OP_MUL, sa, sb, st), sy, st);
	acc = f64_of(nd, wrap_i32(nd, acc, -1));
	acc = bin(nd, IR_OP_ADD, bin(nd, IR_OP_MUL, acc, mult), f64_of(nd, zy));
	return bind1(nd, saturate(nd, round_even(nd, acc), zy->type.dtype, 0));
}

/* The 8-bit operands and their zero points agree in type. */
static bool check_operands(struct fe_node *nd, const int *idx, int n)
{
	for (int i = 0; i < n; i += 2) {
		struct ir_value *x = nd->in[idx[i]], *z = fe_in(nd, idx[i + 1]);
		if (!is_8bit(x))
			return fe_fail(nd, "input %d is %s: expected int8 or uint8", idx[i],
			               ir_dtype_name(x->type.dtype));
		if (z && z->type.dtype != x->type.dtype)
			return fe_fail(nd, "input %d is %s but its zero point %s", idx[i],
			               ir_dtype_name(x->type.dtype), ir_dtype_name(z->type.dtype));
	}
	return true;
}

/* MatMulInteger: int32 (A - a_zero_point) x (B - b_zero_point). */
static bool imp_matmul_integer(struct fe_node *nd)
{
	static const int idx[4] = { 0, 2, 1, 3 };
	struct ir_value *a, *b;
	if (!fe_inputs(nd, 2, 4) || !check_operands(nd, idx, 4))
		return false;
	a = centered(nd, nd->in[0], per_row(nd, fe_in(nd, 2), nd->in[0]));
	b = centered(nd, nd->in[1], fe_in(nd, 3));
	return bind1(nd, wrap_i32(nd, exact_matmul(nd, a, b), 0));
}

/* QLinearMatMul (10, 21: float16 and bfloat16 scales) */
static bool imp_qlinear_matmul(struct fe_node *nd)
{
	static const int idx[4] = { 0, 2, 3, 5 };
	struct ir_value *a, *b, *sa;
	if (!fe_inputs(nd, 8, 8) || !check_operands(nd, idx, 4))
		return false;
	a = centered(nd, nd->in[0], per_row(nd, nd->in[2], nd->in[0]));
	b = centered(nd, nd->in[3], nd->in[5]);
	if (!(sa = per_row(nd, nd->in[1], nd->in[0])))
		return false;
	return requantize(nd, exact_matmul(nd, a, b), sa, nd->in[4], nd->in[6], nd->in[7]);
}

/* ------------------------------------------------------------------------ */
/* Integer convolutions                                                     */
/* ------------------------------------------------------------------------ */

static struct ir_value *emit_moves(struct fe_node *nd, enum ir_op op, struct ir_value *x,
                                   const char *attr, const int64_t *v, int n)
{
	const char *name = fe_tmp_name(nd, ir_ops[op].name);
	struct ir_node *node;
	if (!x)
		return NULL;
	node = fe_emit(nd, op, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, node, attr, v, n);
	return fe_finish(nd, node) ? node->out[0] : NULL;
}

/* A per-output-channel (1-D [M]) parameter as [M, 1, ...] (rank r, at
 * dimension at) to broadcast against the weight or the result. */
static struct ir_value *per_channel(struct fe_node *nd, struct ir_value *v, int r, int at)
{
	int64_t dims[IR_MAX_RANK];
	if (!v || v->type.rank != 1 || ir_type_elems(&v->type) == 1)
		return v;
	for (int i = 0; i < r; i++)
		dims[i] = i == at ? v->type.dims[0] : 1;
	return reshape(nd, v, dims, r);
}

/*
 * The exact integer convolution of x [N, C, D...] by w [M, C/G, k...]
 * (both f64, zero points applied; the padding adds zeros to x - zp as the
 * reference's does): col[n, g, (c, kk), p] is x padded at channel
 * g * C/G + c, shifted by kernel position kk, strided, at output position
 * p, and the result is w [G, M/G, C/G * KK] times it, an f64 MatMul.
 */
static struct ir_value *exact_conv(struct fe_node *nd, struct ir_value *x, struct ir_value *w,
                                   const struct fe_window *win, int64_t group)
{
	const struct ir_type *xt = &nd->in[0]->type, *wt = &w->type;
	int r = xt->rank, nsp = win->nsp;
	int64_t n = xt->dims[0], c = xt->dims[1], m = wt->dims[0], cg = wt->dims[1], kk = 1, p = 1;
	int64_t out[IR_MAX_RANK], pads[2 * IR_MAX_RANK], st[IR_MAX_RANK], en[IR_MAX_RANK],
	        step[IR_MAX_RANK], dims[IR_MAX_RANK], pos[IR_MAX_RANK] = { 0 };
	struct ir_value **cols;
	const char *name;
	struct ir_node *cat;
	if (group < 1 || c != group * cg || m % group) {
		fe_fail(nd,
		        "group %lld does not fit %lld input channels and a weight of %lld x %lld",
		        (long long)group, (long long)c, (long long)m, (long long)cg);
		return NULL;
	}
	for (int i = 0; i < nsp; i++) {
		int64_t span = win->dilations[i] * (win->kernel[i] - 1) + 1;
		int64_t in = xt->dims[2 + i] + win->pads[i] + win->pads[nsp + i];
		if (in < span) {
			fe_fail(nd,
			        "the kernel spans %lld in spatial dim %d, the padded input %lld",
			        (long long)span, i, (long long)in);
			return NULL;
		}
		out[i] = (in - span) / win->strides[i] + 1;
		kk *= win->kernel[i], p *= out[i];
	}
	if (!check_k(nd, cg * kk))
		return NULL;
	memset(pads, 0, sizeof pads);
	for (int i = 0; i < nsp; i++)
		pads[2 + i] = win->pads[i], pads[r + 2 + i] = win->pads[nsp + i];
	name = fe_tmp_name(nd, "pad");
	{
		struct ir_node *pad = fe_emit(nd, IR_OP_PAD, &x, 1, &name, 1);
		ir_set_ints(nd->fe->m, pad, "pads", pads, 2 * r);
		ir_set_s(nd->fe->m, pad, "mode", "constant");
		ir_set_f(nd->fe->m, pad, "value", 0);
		if (!fe_finish(nd, pad))
			return NULL;
		x = pad->out[0];
	}
	cols = ir_arena_alloc(&nd->fe->m->arena, sizeof *cols * (size_t)kk);
	for (int64_t k = 0; k < kk; k++) {
		struct ir_node *s;
		st[0] = st[1] = 0, en[0] = n, en[1] = c, step[0] = step[1] = 1;
		for (int i = 0; i < nsp; i++) {
			st[2 + i] = pos[i] * win->dilations[i];
			en[2 + i] = st[2 + i] + (out[i] - 1) * win->strides[i] + 1;
			step[2 + i] = win->strides[i];
		}
		name = fe_tmp_name(nd, "tap");
		s = fe_emit(nd, IR_OP_SLICE, &x, 1, &name, 1);
		ir_set_ints(nd->fe->m, s, "starts", st, r);
		ir_set_ints(nd->fe->m, s, "ends", en, r);
		ir_set_ints(nd->fe->m, s, "steps", step, r);
		dims[0] = n, dims[1] = c, dims[2] = 1, dims[3] = p;
		if (!fe_finish(nd, s) || !(cols[k] = reshape(nd, s->out[0], dims, 4)))
			return NULL;
		for (int i = nsp - 1; i >= 0 && ++pos[i] == win->kernel[i]; i--)
			pos[i] = 0;
	}
	name = fe_tmp_name(nd, "im2col");
	cat = fe_emit(nd, IR_OP_CONCAT, cols, (int)kk, &name, 1);
	ir_set_i(nd->fe->m, cat, "axis", 2);
	if (!fe_finish(nd, cat))
		return NULL;
	x = cat->out[0];
	if (group == 1) { /* [M, K] x [N, K, P]: one batch dimension, w shared */
		dims[0] = m, dims[1] = cg * kk;
		w = reshape(nd, w, dims, 2);
		dims[0] = n, dims[1] = cg * kk, dims[2] = p;
		x = exact_matmul(nd, w, reshape(nd, x, dims, 3));
	} else { /* [G, M/G, K] x [G, K, N * P], and back to [N, G, M/G, P] */
		static const int64_t to_g[4] = { 1, 2, 0, 3 }, from_g[4] = { 2, 0, 1, 3 };
		dims[0] = group, dims[1] = m / group, dims[2] = cg * kk;
		w = reshape(nd, w, dims, 3);
		dims[0] = n, dims[1] = group, dims[2] = cg * kk, dims[3] = p;
		x = emit_moves(nd, IR_OP_TRANSPOSE, reshape(nd, x, dims, 4), "perm", to_g, 4);
		dims[0] = group, dims[1] = cg * kk, dims[2] = n * p;
		x = x ? exact_matmul(nd, w, reshape(nd, x, dims, 3)) : NULL;
		dims[0] = group, dims[1] = m / group, dims[2] = n, dims[3] = p;
		x = x ? emit_moves(nd, IR_OP_TRANSPOSE, reshape(nd, x, dims, 4), "perm", from_g, 4)
		      : NULL;
	}
	dims[0] = n, dims[1] = m;
	memcpy(dims + 2, out, sizeof *out * (size_t)nsp);
	return x ? reshape(nd, x, dims, r) : NULL;
}

/* The window and group of a convolution of input 0 by input wi. */
static bool int_conv_window(struct fe_node *nd, int wi, struct fe_window *win, int64_t *group)
{
	*group = fe_int(nd, "group", 1);
	return fe_conv_window(nd, &nd->in[0]->type, &nd->in[wi]->type, win);
}

/* ConvInteger: int32 conv(x - x_zero_point, w - w_zero_point). */
static bool imp_conv_integer(struct fe_node *nd)
{
	static const int idx[4] = { 0, 2, 1, 3 };
	struct fe_window win = { 0 };
	int64_t group;
	struct ir_value *x, *w;
	if (!fe_inputs(nd, 2, 4) || !int_conv_window(nd, 1, &win, &group) ||
	    !check_operands(nd, idx, 4))
		return false;
	x = centered(nd, nd->in[0], fe_in(nd, 2));
	w = centered(nd, nd->in[1], per_channel(nd, fe_in(nd, 3), nd->in[1]->type.rank, 0));
	return bind1(nd, x && w ? wrap_i32(nd, exact_conv(nd, x, w, &win, group), 0) : NULL);
}

/* QLinearConv: the int32 convolution plus the int32 bias B, requantized. */
static bool imp_qlinear_conv(struct fe_node *nd)
{
	static const int idx[4] = { 0, 2, 3, 5 };
	struct fe_window win = { 0 };
	int64_t group;
	int r;
	struct ir_value *x, *w, *acc, *bias;
	if (!fe_inputs(nd, 8, 9) || !int_conv_window(nd, 3, &win, &group) ||
	    !check_operands(nd, idx, 4))
		return false;
	r = nd->in[0]->type.rank;
	if ((bias = fe_in(nd, 8)) && bias->type.dtype != IR_I32)
		return fe_fail(nd, "B is %s: expected int32", ir_dtype_name(bias->type.dtype));
	x = centered(nd, nd->in[0], nd->in[2]);
	w = centered(nd, nd->in[3], per_channel(nd, nd->in[5], r, 0));
	acc = x && w ? exact_conv(nd, x, w, &win, group) : NULL;
	if (bias)
		acc = bin(nd, IR_OP_ADD, acc, f64_of(nd, per_channel(nd, bias, r, 1)));
	return acc && requantize(nd, acc, nd->in[1], per_channel(nd, nd->in[4], r, 1), nd->in[6],
	                         nd->in[7]);
}

const struct fe_op fe_ops_quant[] = {
	{ "QuantizeLinear", imp_quantize, IR_OP_ROUND, { 10, 13, 19, 21, 23, 24, 25 } },
	{ "DequantizeLinear", imp_dequantize, IR_OP_MUL, { 10, 13, 19, 21, 23, 24, 25 } },
	{ "DynamicQuantizeLinear", imp_dynamic_quantize, IR_OP_ROUND, { 11 } },
	{ "MatMulInteger", imp_matmul_integer, IR_OP_MATMUL, { 10 } },
	{ "QLinearMatMul", imp_qlinear_matmul, IR_OP_MATMUL, { 10, 21 } },
	{ "ConvInteger", imp_conv_integer, IR_OP_MATMUL, { 10 } },
	{ "QLinearConv", imp_qlinear_conv, IR_OP_MATMUL, { 10 } },
	{ NULL, NULL, 0, { 0 } },
};
