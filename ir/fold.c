/*
 * fold.c - evaluate nodes whose inputs are all constants.
 *
 * The importer folds as it builds, so exporters' shape arithmetic (Shape ->
 * Gather -> Unsqueeze -> Concat -> Reshape, Range, ConstantOfShape, the
 * slicing of a causal-mask buffer) collapses into constants and every later
 * shape is static. The evaluator is a plain reference interpreter, slow and
 * simple on purpose: floats are computed in double and rounded once when
 * stored, integers in int64 (never through double, so INT64_MAX survives).
 *
 * Per-op evaluators are a table indexed by the op enum; an op without an
 * entry is simply not folded. Heavy compute ops (conv, pooling, norms,
 * resize) have no entry: exporters do not feed them constants, and a folded
 * convolution would only move work from run time to compile time.
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fold {
	struct ir_node *n;
	void **out; /* output buffers, typed as the node's results */
	char *err;
	size_t errlen;
};

typedef bool (*eval_fn)(struct fold *f);

#define IN(i)  (f->n->in[i])
#define OUT(i) (f->n->out[i])
#define FAIL(...)                                         \
	do {                                              \
		snprintf(f->err, f->errlen, __VA_ARGS__); \
		return false;                             \
	} while (0)

static bool isf(enum ir_dtype t) { return ir_dtypes[t].is_float; }

/* Row-major strides of a type, in elements. */
static void strides_of(const struct ir_type *t, int64_t *st)
{
	int64_t s = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		st[i] = s;
		s *= t->dims[i];
	}
}

/*
 * For elementwise ops: the strides of input t aligned to the output's rank,
 * zero where t is broadcast.
 */
static void bcast_strides(const struct ir_type *t, const struct ir_type *o, int64_t *st)
{
	int64_t s[IR_MAX_RANK];
	strides_of(t, s);
	for (int i = 0; i < o->rank; i++) {
		int j = i - (o->rank - t->rank);
		st[i] = (j < 0 || t->dims[j] == 1) ? 0 : s[j];
	}
}

/* Advances a multi-index over dims; returns false after the last one. */
static bool next_index(int64_t *idx, const int64_t *dims, int rank)
{
	for (int i = rank - 1; i >= 0; i--) {
		if (++idx[i] < dims[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */
/* ------------------------------------------------------------------------ */

static double fsign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static bool unary_f(enum ir_op op, const struct ir_node *n, double x, double *r)
{
	switch (op) {
	case IR_OP_NEG: *r = -x; break;
	case IR_OP_ABS: *r = fabs(x); break;
	case IR_OP_SIGN: *r = fsign(x); break;
	case IR_OP_RELU: *r = x > 0 ? x : 0; break;
	case IR_OP_FLOOR: *r = floor(x); break;
	case IR_OP_CEIL: *r = ceil(x); break;
	case IR_OP_ROUND: *r = nearbyint(x); break; /* half to even */
	case IR_OP_SQRT: *r = sqrt(x); break;
	case IR_OP_RECIPROCAL: *r = 1 / x; break;
	case IR_OP_EXP: *r = exp(x); break;
	case IR_OP_LOG: *r = log(x); break;
	case IR_OP_ERF: *r = erf(x); break;
	case IR_OP_TANH: *r = tanh(x); break;
	case IR_OP_SIGMOID: *r = 1 / (1 + exp(-x)); break;
	case IR_OP_SIN: *r = sin(x); break;
	case IR_OP_COS: *r = cos(x); break;
	case IR_OP_TAN: *r = tan(x); break;
	case IR_OP_ASIN: *r = asin(x); break;
	case IR_OP_ACOS: *r = acos(x); break;
	case IR_OP_ATAN: *r = atan(x); break;
	case IR_OP_SINH: *r = sinh(x); break;
	case IR_OP_COSH: *r = cosh(x); break;
	case IR_OP_ASINH: *r = asinh(x); break;
	case IR_OP_ACOSH: *r = acosh(x); break;
	case IR_OP_ATANH: *r = atanh(x); break;
	case IR_OP_SOFTPLUS: *r = log1p(exp(x)); break;
	case IR_OP_SOFTSIGN: *r = x / (1 + fabs(x)); break;
	case IR_OP_MISH: *r = x * tanh(log1p(exp(x))); break;
	case IR_OP_HARD_SWISH: *r = x * fmax(0, fmin(1, x / 6 + 0.5)); break;
	case IR_OP_LEAKY_RELU: *r = x >= 0 ? x : ir_attr_f(n, "alpha") * x; break;
	case IR_OP_ELU: *r = x >= 0 ? x : ir_attr_f(n, "alpha") * (exp(x) - 1); break;
	case IR_OP_CELU: {
		double a = ir_attr_f(n, "alpha");
		*r = fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
		break;
	}
	case IR_OP_SELU:
		*r = ir_attr_f(n, "gamma") * (x > 0 ? x : ir_attr_f(n, "alpha") * (exp(x) - 1));
		break;
	case IR_OP_THRESHOLDED_RELU: *r = x > ir_attr_f(n, "alpha") ? x : 0; break;
	case IR_OP_HARD_SIGMOID:
		*r = fmax(0, fmin(1, ir_attr_f(n, "alpha") * x + ir_attr_f(n, "beta")));
		break;
	case IR_OP_SHRINK: {
		double b = ir_attr_f(n, "bias"), l = ir_attr_f(n, "lambd");
		*r = x < -l ? x + b : x > l ? x - b : 0;
		break;
	}
	case IR_OP_CLIP: *r = fmin(fmax(x, ir_attr_f(n, "min")), ir_attr_f(n, "max")); break;
	default: return false;
	}
	return true;
}

static bool unary_i(enum ir_op op, const struct ir_node *n, int64_t x, int64_t *r)
{
	switch (op) {
	case IR_OP_NEG: *r = (int64_t)(0 - (uint64_t)x); break;
	case IR_OP_ABS: *r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
	case IR_OP_SIGN: *r = x > 0 ? 1 : x < 0 ? -1 : 0; break;
	case IR_OP_RELU: *r = x > 0 ? x : 0; break;
	case IR_OP_CLIP: {
		double lo = ir_attr_f(n, "min"), hi = ir_attr_f(n, "max");
		*r = (double)x < lo ? (int64_t)lo : (double)x > hi ? (int64_t)hi : x;
		break;
	}
	case IR_OP_SHRINK: {
		double b = ir_attr_f(n, "bias"), l = ir_attr_f(n, "lambd");
		*r = (double)x < -l ? x + (int64_t)b : (double)x > l ? x - (int64_t)b : 0;
		break;
	}
	default: return false;
	}
	return true;
}

static bool binary_f(enum ir_op op, const struct ir_node *n, double a, double b, double *r)
{
	switch (op) {
	case IR_OP_ADD: *r = a + b; break;
	case IR_OP_SUB: *r = a - b; break;
	case IR_OP_MUL: *r = a * b; break;
	case IR_OP_DIV: *r = a / b; break;
	case IR_OP_POW: *r = pow(a, b); break;
	case IR_OP_MIN: *r = (a != a || b != b) ? NAN : fmin(a, b); break;
	case IR_OP_MAX: *r = (a != a || b != b) ? NAN : fmax(a, b); break;
	case IR_OP_MOD: *r = fmod(a, b); break; /* importer allows only fmod=1 on floats */
	case IR_OP_PRELU: *r = a >= 0 ? a : a * b; break;
	default: return false;
	}
	(void)n;
	return true;
}

static bool binary_i(enum ir_op op, const struct ir_node *n, int64_t a, int64_t b, int64_t *r,
                     struct fold *f)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (op) {
	case IR_OP_ADD: *r = (int64_t)(ua + ub); break;
	case IR_OP_SUB: *r = (int64_t)(ua - ub); break;
	case IR_OP_MUL: *r = (int64_t)(ua * ub); break;
	case IR_OP_DIV:
		if (b == 0)
			FAIL("integer division by zero");
		*r = (a == INT64_MIN && b == -1) ? a : a / b;
		break;
	case IR_OP_MOD:
		if (b == 0)
			FAIL("integer modulo by zero");
		*r = (a == INT64_MIN && b == -1) ? 0 : a % b;
		if (!ir_attr_i(n, "fmod") && *r != 0 && ((*r < 0) != (b < 0)))
			*r += b; /* Python semantics: the sign of the divisor */
		break;
	case IR_OP_POW: {
		int64_t acc = 1;
		if (b < 0) {
			*r = a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
			break;
		}
		for (int64_t e = b, x = a; e; e >>= 1) {
			if (e & 1)
				acc = (int64_t)((uint64_t)acc * (uint64_t)x);
			x = (int64_t)((uint64_t)x * (uint64_t)x);
		}
		*r = acc;
		break;
	}
	case IR_OP_MIN: *r = a < b ? a : b; break;
	case IR_OP_MAX: *r = a > b ? a : b; break;
	case IR_OP_PRELU: *r = a >= 0 ? a : (int64_t)((uint64_t)a * ub); break;
	default: return false;
	}
	return true;
}

static bool compare(enum ir_op op, bool flt, const struct ir_node *n, const void *pa,
                    const void *pb, size_t ia, size_t ib)
{
	enum ir_dtype t = n->in[0]->type.dtype;
	int c;
	if (flt) {
		double a = ir_load_f64(t, pa, ia), b = ir_load_f64(t, pb, ib);
		if (a != a || b != b)
			return false; /* every comparison with NaN is false */
		c = a < b ? -1 : a > b ? 1 : 0;
	} else if (t == IR_U64) {
		uint64_t a = ((const uint64_t *)pa)[ia], b = ((const uint64_t *)pb)[ib];
		c = a < b ? -1 : a > b ? 1 : 0;
	} else {
		int64_t a = ir_load_i64(t, pa, ia), b = ir_load_i64(t, pb, ib);
		c = a < b ? -1 : a > b ? 1 : 0;
	}
	switch (op) {
	case IR_OP_EQUAL: return c == 0;
	case IR_OP_LESS: return c < 0;
	case IR_OP_LESS_EQUAL: return c <= 0;
	case IR_OP_GREATER: return c > 0;
	case IR_OP_GREATER_EQUAL: return c >= 0;
	default: ir_panic(__FILE__, __LINE__, "not a comparison");
	}
}

static bool eval_eltwise(struct fold *f)
{
	struct ir_node *n = f->n;
	const struct ir_type *o = &OUT(0)->type;
	int64_t st[3][IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 };
	int64_t total = ir_type_elems(o);
	enum ir_dtype ti = IN(n->op == IR_OP_WHERE ? 1 : 0)->type.dtype, to = o->dtype;
	bool flt = isf(ti);
	for (int i = 0; i < n->nin; i++)
		bcast_strides(&IN(i)->type, o, st[i]);
	for (int64_t k = 0; k < total; k++) {
		size_t off[3] = { 0, 0, 0 };
		for (int i = 0; i < n->nin; i++)
			for (int d = 0; d < o->rank; d++)
				off[i] += (size_t)(idx[d] * st[i][d]);
		const void *a = IN(0)->data, *b = n->nin > 1 ? IN(1)->data : NULL;
		switch (n->op) {
		case IR_OP_CAST:
			if (isf(to) || to == IR_BOOL || ti == IR_BOOL || (isf(ti) && !isf(to)))
				ir_store_f64(to, f->out[0], (size_t)k, ir_load_f64(ti, a, off[0]));
			else if (ti == IR_U64 && ir_dtypes[to].is_int)
				ir_store_i64(to, f->out[0], (size_t)k,
				             (int64_t)((const uint64_t *)a)[off[0]]);
			else
				ir_store_i64(to, f->out[0], (size_t)k, ir_load_i64(ti, a, off[0]));
			break;
		case IR_OP_COPY:
			memcpy((char *)f->out[0] + k * ir_dtype_size(to),
			       (const char *)a + off[0] * (size_t)ir_dtype_size(ti),
			       (size_t)ir_dtype_size(to));
			break;
		case IR_OP_NOT: ((uint8_t *)f->out[0])[k] = !((const uint8_t *)a)[off[0]]; break;
		case IR_OP_AND:
		case IR_OP_OR:
		case IR_OP_XOR: {
			bool x = ((const uint8_t *)a)[off[0]] != 0,
			     y = ((const uint8_t *)b)[off[1]] != 0;
			bool r = n->op == IR_OP_AND  ? (x && y)
			         : n->op == IR_OP_OR ? (x || y)
			                             : (x != y);
			((uint8_t *)f->out[0])[k] = r;
			break;
		}
		case IR_OP_ISNAN: {
			double x = ir_load_f64(ti, a, off[0]);
			((uint8_t *)f->out[0])[k] = x != x;
			break;
		}
		case IR_OP_ISINF: {
			double x = ir_load_f64(ti, a, off[0]);
			bool r = isinf(x) && ((x > 0 && ir_attr_i(n, "detect_positive")) ||
			                      (x < 0 && ir_attr_i(n, "detect_negative")));
			((uint8_t *)f->out[0])[k] = r;
			break;
		}
		case IR_OP_EQUAL:
		case IR_OP_LESS:
		case IR_OP_LESS_EQUAL:
		case IR_OP_GREATER:
		case IR_OP_GREATER_EQUAL:
			((uint8_t *)f->out[0])[k] = compare(n->op, flt, n, a, b, off[0], off[1]);
			break;
		case IR_OP_WHERE: {
			bool c = ((const uint8_t *)a)[off[0]] != 0;
			int es = ir_dtype_size(to);
			const char *src = c ? (const char *)IN(1)->data + off[1] * (size_t)es
			                    : (const char *)IN(2)->data + off[2] * (size_t)es;
			memcpy((char *)f->out[0] + k * es, src, (size_t)es);
			break;
		}
		default:
			if (n->nin == 1) {
				if (flt) {
					double r;
					if (!unary_f(n->op, n, ir_load_f64(ti, a, off[0]), &r))
						FAIL("cannot evaluate %s", ir_ops[n->op].name);
					ir_store_f64(to, f->out[0], (size_t)k, r);
				} else {
					int64_t r;
					if (!unary_i(n->op, n, ir_load_i64(ti, a, off[0]), &r))
						FAIL("cannot evaluate %s on integers",
						     ir_ops[n->op].name);
					ir_store_i64(to, f->out[0], (size_t)k, r);
				}
			} else {
				enum ir_dtype tb = IN(1)->type.dtype;
				if (flt || isf(tb)) {
					double r;
					if (!binary_f(n->op, n, ir_load_f64(ti, a, off[0]),
					              ir_load_f64(tb, b, off[1]), &r))
						FAIL("cannot evaluate %s", ir_ops[n->op].name);
					ir_store_f64(to, f->out[0], (size_t)k, r);
				} else {
					int64_t r;
					if (!binary_i(n->op, n, ir_load_i64(ti, a, off[0]),
					              ir_load_i64(tb, b, off[1]), &r, f))
						return false;
					ir_store_i64(to, f->out[0], (size_t)k, r);
				}
			}
		}
		next_index(idx, o->dims, o->rank);
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

static size_t esize(const struct ir_value *v) { return (size_t)ir_dtype_size(v->type.dtype); }

static bool eval_reshape(struct fold *f)
{
	memcpy(f->out[0], IN(0)->data, (size_t)ir_type_elems(&IN(0)->type) * esize(IN(0)));
	return true;
}

/*
 * Copies out[i] = in[off + sum_d idx[d] * st[d]] over the output's index
 * space: transpose, slice, expand and tile are all this with different
 * strides (tile additionally wraps, handled by its caller).
 */
static void strided_copy(struct fold *f, int64_t off, const int64_t *st)
{
	const struct ir_type *o = &OUT(0)->type;
	int64_t idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	size_t es = esize(IN(0));
	for (int64_t k = 0; k < total; k++) {
		int64_t src = off;
		for (int d = 0; d < o->rank; d++)
			src += idx[d] * st[d];
		memcpy((char *)f->out[0] + (size_t)k * es,
		       (const char *)IN(0)->data + (size_t)src * es, es);
		next_index(idx, o->dims, o->rank);
	}
}

static bool eval_transpose(struct fold *f)
{
	int64_t s[IR_MAX_RANK], st[IR_MAX_RANK];
	const int64_t *perm = ir_attr_ints(f->n, "perm", NULL);
	strides_of(&IN(0)->type, s);
	for (int i = 0; i < IN(0)->type.rank; i++)
		st[i] = s[perm[i]];
	strided_copy(f, 0, st);
	return true;
}

static bool eval_slice(struct fold *f)
{
	int64_t s[IR_MAX_RANK], st[IR_MAX_RANK], off = 0;
	const int64_t *starts = ir_attr_ints(f->n, "starts", NULL);
	const int64_t *steps = ir_attr_ints(f->n, "steps", NULL);
	strides_of(&IN(0)->type, s);
	for (int i = 0; i < IN(0)->type.rank; i++) {
		if (OUT(0)->type.dims[i] == 0)
			return true; /* empty result */
		off += starts[i] * s[i];
		st[i] = steps[i] * s[i];
	}
	strided_copy(f, off, st);
	return true;
}

static bool eval_expand(struct fold *f)
{
	int64_t st[IR_MAX_RANK];
	bcast_strides(&IN(0)->type, &OUT(0)->type, st);
	strided_copy(f, 0, st);
	return true;
}

static bool eval_tile(struct fold *f)
{
	const struct ir_type *in = &IN(0)->type, *o = &OUT(0)->type;
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	size_t es = esize(IN(0));
	strides_of(in, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t src = 0;
		for (int d = 0; d < o->rank; d++)
			src += (idx[d] % in->dims[d]) * s[d];
		memcpy((char *)f->out[0] + (size_t)k * es,
		       (const char *)IN(0)->data + (size_t)src * es, es);
		next_index(idx, o->dims, o->rank);
	}
	return true;
}

/* outer x (axis extent x inner) blocks, shared by concat and split. */
static void axis_blocks(const struct ir_type *t, int axis, int64_t *outer, int64_t *inner)
{
	*outer = 1;
	*inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= t->dims[i];
	for (int i = axis + 1; i < t->rank; i++)
		*inner *= t->dims[i];
}

static bool eval_concat(struct fold *f)
{
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t outer, inner;
	size_t es = esize(OUT(0)), pos = 0;
	axis_blocks(&OUT(0)->type, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int i = 0; i < f->n->nin; i++) {
			size_t chunk = (size_t)(IN(i)->type.dims[axis] * inner) * es;
			memcpy((char *)f->out[0] + pos,
			       (const char *)IN(i)->data + (size_t)o * chunk, chunk);
			pos += chunk;
		}
	return true;
}

static bool eval_split(struct fold *f)
{
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t outer, inner;
	size_t es = esize(IN(0)), pos = 0;
	axis_blocks(&IN(0)->type, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int i = 0; i < f->n->nout; i++) {
			size_t chunk = (size_t)(OUT(i)->type.dims[axis] * inner) * es;
			memcpy((char *)f->out[i] + (size_t)o * chunk,
			       (const char *)IN(0)->data + pos, chunk);
			pos += chunk;
		}
	return true;
}

static bool eval_gather(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *it = &IN(1)->type;
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t outer, inner, nidx = ir_type_elems(it), dim = x->dims[axis];
	size_t es = esize(IN(0)), pos = 0;
	axis_blocks(x, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < nidx; j++) {
			int64_t k = ir_load_i64(it->dtype, IN(1)->data, (size_t)j);
			if (k < -dim || k >= dim)
				FAIL("index %lld is out of range for axis %d of size %lld",
				     (long long)k, axis, (long long)dim);
			if (k < 0)
				k += dim;
			memcpy((char *)f->out[0] + pos,
			       (const char *)IN(0)->data + (size_t)((o * dim + k) * inner) * es,
			       (size_t)inner * es);
			pos += (size_t)inner * es;
		}
	return true;
}

static bool eval_gather_elements(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *it = &IN(1)->type;
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(it);
	size_t es = esize(IN(0));
	strides_of(x, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t j = ir_load_i64(it->dtype, IN(1)->data, (size_t)k), src = 0;
		if (j < -x->dims[axis] || j >= x->dims[axis])
			FAIL("index %lld is out of range for axis %d of size %lld", (long long)j,
			     axis, (long long)x->dims[axis]);
		if (j < 0)
			j += x->dims[axis];
		for (int d = 0; d < x->rank; d++) {
			if (d != axis && idx[d] >= x->dims[d])
				FAIL("indices shape exceeds the data shape");
			src += (d == axis ? j : idx[d]) * s[d];
		}
		memcpy((char *)f->out[0] + (size_t)k * es,
		       (const char *)IN(0)->data + (size_t)src * es, es);
		next_index(idx, it->dims, it->rank);
	}
	return true;
}

static bool eval_trilu(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int64_t rows = t->rank >= 2 ? t->dims[t->rank - 2] : 1, cols = t->dims[t->rank - 1];
	int64_t total = ir_type_elems(t), k = ir_attr_i(f->n, "k");
	bool upper = ir_attr_i(f->n, "upper") != 0;
	size_t es = esize(IN(0));
	if (t->rank < 2)
		FAIL("trilu needs rank >= 2");
	memcpy(f->out[0], IN(0)->data, (size_t)total * es);
	for (int64_t e = 0; e < total; e++) {
		int64_t c = e % cols, r = (e / cols) % rows;
		bool keep = upper ? (c - r >= k) : (c - r <= k);
		if (!keep)
			memset((char *)f->out[0] + (size_t)e * es, 0, es);
	}
	return true;
}

static bool eval_pad(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *o = &OUT(0)->type;
	const int64_t *pads = ir_attr_ints(f->n, "pads", NULL);
	const char *mode = ir_attr_s(f->n, "mode");
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	enum ir_dtype t = x->dtype;
	size_t es = esize(IN(0));
	strides_of(x, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t src = 0;
		bool inside = true;
		for (int d = 0; d < o->rank; d++) {
			int64_t i = idx[d] - pads[d], n = x->dims[d];
			if (i < 0 || i >= n) {
				if (!strcmp(mode, "constant")) {
					inside = false;
					break;
				}
				if (!strcmp(mode, "edge"))
					i = i < 0 ? 0 : n - 1;
				else /* reflect */
					i = i < 0 ? -i : 2 * (n - 1) - i;
			}
			src += i * s[d];
		}
		if (inside)
			memcpy((char *)f->out[0] + (size_t)k * es,
			       (const char *)IN(0)->data + (size_t)src * es, es);
		else if (isf(t))
			ir_store_f64(t, f->out[0], (size_t)k, ir_attr_f(f->n, "value"));
		else
			ir_store_i64(t, f->out[0], (size_t)k, (int64_t)ir_attr_f(f->n, "value"));
		next_index(idx, o->dims, o->rank);
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Reductions and small compute                                             */
/* ------------------------------------------------------------------------ */

/* Splits the input index space into kept / reduced parts. */
struct red {
	int64_t kept_dims[IR_MAX_RANK], red_dims[IR_MAX_RANK];
	int64_t kept_st[IR_MAX_RANK], red_st[IR_MAX_RANK];
	int nkept, nred;
	int64_t nk, nr;
};

static void red_setup(struct red *r, const struct ir_type *t, const int64_t *axes, int naxes)
{
	int64_t s[IR_MAX_RANK];
	bool isred[IR_MAX_RANK] = { 0 };
	strides_of(t, s);
	for (int i = 0; i < naxes; i++)
		isred[axes[i]] = true;
	r->nkept = r->nred = 0;
	r->nk = r->nr = 1;
	for (int d = 0; d < t->rank; d++) {
		if (isred[d]) {
			r->red_dims[r->nred] = t->dims[d];
			r->red_st[r->nred++] = s[d];
			r->nr *= t->dims[d];
		} else {
			r->kept_dims[r->nkept] = t->dims[d];
			r->kept_st[r->nkept++] = s[d];
			r->nk *= t->dims[d];
		}
	}
}

static int64_t red_offset(const int64_t *idx, const int64_t *st, int n)
{
	int64_t o = 0;
	for (int i = 0; i < n; i++)
		o += idx[i] * st[i];
	return o;
}

static bool eval_reduce(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int naxes;
	const int64_t *axes = ir_attr_ints(f->n, "axes", &naxes);
	enum ir_op op = f->n->op;
	enum ir_dtype dt = t->dtype;
	struct red r;
	int64_t ki[IR_MAX_RANK] = { 0 };
	red_setup(&r, t, axes, naxes);
	for (int64_t k = 0; k < r.nk; k++) {
		int64_t base = red_offset(ki, r.kept_st, r.nkept), ri[IR_MAX_RANK] = { 0 };
		double acc = 0, mx = -INFINITY;
		int64_t iacc = (op == IR_OP_REDUCE_PROD) ? 1 : 0;
		bool first = true;
		if (op == IR_OP_REDUCE_PROD)
			acc = 1;
		if (op == IR_OP_REDUCE_LOG_SUM_EXP)
			for (int64_t j = 0; j < r.nr; j++) {
				double x = ir_load_f64(
				        dt, IN(0)->data,
				        (size_t)(base + red_offset(ri, r.red_st, r.nred)));
				mx = fmax(mx, x);
				next_index(ri, r.red_dims, r.nred);
			}
		memset(ri, 0, sizeof ri);
		for (int64_t j = 0; j < r.nr; j++) {
			size_t at = (size_t)(base + red_offset(ri, r.red_st, r.nred));
			if (isf(dt)) {
				double x = ir_load_f64(dt, IN(0)->data, at);
				switch (op) {
				case IR_OP_REDUCE_SUM:
				case IR_OP_REDUCE_MEAN:
				case IR_OP_REDUCE_LOG_SUM: acc += x; break;
				case IR_OP_REDUCE_PROD: acc *= x; break;
				case IR_OP_REDUCE_MAX:
					acc = first || x > acc || x != x ? x : acc;
					break;
				case IR_OP_REDUCE_MIN:
					acc = first || x < acc || x != x ? x : acc;
					break;
				case IR_OP_REDUCE_L1: acc += fabs(x); break;
				case IR_OP_REDUCE_L2:
				case IR_OP_REDUCE_SUM_SQUARE: acc += x * x; break;
				case IR_OP_REDUCE_LOG_SUM_EXP: acc += exp(x - mx); break;
				default: FAIL("cannot evaluate %s", ir_ops[op].name);
				}
			} else {
				int64_t x = ir_load_i64(dt, IN(0)->data, at);
				switch (op) {
				case IR_OP_REDUCE_SUM:
				case IR_OP_REDUCE_MEAN: iacc += x; break;
				case IR_OP_REDUCE_PROD: iacc *= x; break;
				case IR_OP_REDUCE_MAX: iacc = first || x > iacc ? x : iacc; break;
				case IR_OP_REDUCE_MIN: iacc = first || x < iacc ? x : iacc; break;
				case IR_OP_REDUCE_L1: iacc += x < 0 ? -x : x; break;
				case IR_OP_REDUCE_SUM_SQUARE: iacc += x * x; break;
				default: FAIL("cannot evaluate %s on integers", ir_ops[op].name);
				}
			}
			first = false;
			next_index(ri, r.red_dims, r.nred);
		}
		if (isf(dt)) {
			if (op == IR_OP_REDUCE_MEAN)
				acc /= (double)r.nr;
			if (op == IR_OP_REDUCE_L2)
				acc = sqrt(acc);
			if (op == IR_OP_REDUCE_LOG_SUM)
				acc = log(acc);
			if (op == IR_OP_REDUCE_LOG_SUM_EXP)
				acc = mx + log(acc);
			if (r.nr == 0 && (op == IR_OP_REDUCE_MAX || op == IR_OP_REDUCE_MIN))
				acc = op == IR_OP_REDUCE_MAX ? -INFINITY : INFINITY;
			ir_store_f64(dt, f->out[0], (size_t)k, acc);
		} else {
			if (op == IR_OP_REDUCE_MEAN)
				iacc = r.nr ? iacc / r.nr : 0;
			ir_store_i64(dt, f->out[0], (size_t)k, iacc);
		}
		next_index(ki, r.kept_dims, r.nkept);
	}
	return true;
}

static bool eval_arg(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int64_t axis = ir_attr_i(f->n, "axis");
	bool last = ir_attr_i(f->n, "select_last_index") != 0, mx = f->n->op == IR_OP_ARGMAX;
	struct red r;
	int64_t ki[IR_MAX_RANK] = { 0 };
	red_setup(&r, t, &axis, 1);
	for (int64_t k = 0; k < r.nk; k++) {
		int64_t base = red_offset(ki, r.kept_st, r.nkept), best = 0;
		double bv = 0;
		for (int64_t j = 0; j < r.nr; j++) {
			double x = ir_load_f64(t->dtype, IN(0)->data,
			                       (size_t)(base + j * r.red_st[0]));
			bool better = j == 0 || (mx ? x > bv : x < bv) || (last && x == bv);
			if (better) {
				bv = x;
				best = j;
			}
		}
		((int64_t *)f->out[0])[k] = best;
		next_index(ki, r.kept_dims, r.nkept);
	}
	return true;
}

static bool eval_cumsum(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int64_t axis = ir_attr_i(f->n, "axis");
	bool excl = ir_attr_i(f->n, "exclusive") != 0, rev = ir_attr_i(f->n, "reverse") != 0;
	struct red r;
	int64_t ki[IR_MAX_RANK] = { 0 };
	red_setup(&r, t, &axis, 1);
	for (int64_t k = 0; k < r.nk; k++) {
		int64_t base = red_offset(ki, r.kept_st, r.nkept);
		double acc = 0;
		int64_t iacc = 0;
		for (int64_t j0 = 0; j0 < r.nr; j0++) {
			int64_t j = rev ? r.nr - 1 - j0 : j0;
			size_t at = (size_t)(base + j * r.red_st[0]);
			if (isf(t->dtype)) {
				double x = ir_load_f64(t->dtype, IN(0)->data, at);
				if (!excl)
					acc += x;
				ir_store_f64(t->dtype, f->out[0], at, acc);
				if (excl)
					acc += x;
			} else {
				int64_t x = ir_load_i64(t->dtype, IN(0)->data, at);
				if (!excl)
					iacc += x;
				ir_store_i64(t->dtype, f->out[0], at, iacc);
				if (excl)
					iacc += x;
			}
		}
		next_index(ki, r.kept_dims, r.nkept);
	}
	return true;
}

static bool eval_matmul(struct fold *f)
{
	const struct ir_type *a = &IN(0)->type, *b = &IN(1)->type, *o = &OUT(0)->type;
	enum ir_dtype dt = a->dtype;
	int64_t K = a->dims[a->rank - 1];
	int64_t M = a->rank >= 2 ? a->dims[a->rank - 2] : 1,
	        N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	int64_t batch = ir_type_elems(o) / ((M * N) != 0 ? M * N : 1);
	int brank = o->rank - (a->rank >= 2) - (b->rank >= 2);
	struct ir_type bo = { .rank = brank }, ba = { .rank = a->rank >= 2 ? a->rank - 2 : 0 },
	               bb = { .rank = b->rank >= 2 ? b->rank - 2 : 0 };
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 };
	memcpy(bo.dims, o->dims, sizeof(int64_t) * (size_t)brank);
	memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.rank);
	memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.rank);
	bcast_strides(&ba, &bo, sa);
	bcast_strides(&bb, &bo, sb);
	if (ir_type_elems(o) == 0)
		return true;
	for (int64_t p = 0; p < batch; p++) {
		int64_t oa = red_offset(idx, sa, brank) * M * K,
		        ob = red_offset(idx, sb, brank) * K * N;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				size_t at = (size_t)((p * M + i) * N + j);
				if (isf(dt)) {
					double acc = 0;
					for (int64_t k = 0; k < K; k++)
						acc += ir_load_f64(dt, IN(0)->data,
						                   (size_t)(oa + i * K + k)) *
						       ir_load_f64(dt, IN(1)->data,
						                   (size_t)(ob + k * N + j));
					ir_store_f64(dt, f->out[0], at, acc);
				} else {
					uint64_t acc = 0;
					for (int64_t k = 0; k < K; k++)
						acc += (uint64_t)ir_load_i64(
						               dt, IN(0)->data,
						               (size_t)(oa + i * K + k)) *
						       (uint64_t)ir_load_i64(
						               dt, IN(1)->data,
						               (size_t)(ob + k * N + j));
					ir_store_i64(dt, f->out[0], at, (int64_t)acc);
				}
			}
		next_index(idx, bo.dims, brank);
	}
	return true;
}

/* ------------------------------------------------------------------------ */

static const eval_fn evaluators[IR_OP_COUNT] = {
#define ELT(id) [IR_OP_##id] = eval_eltwise,
	ELT(NEG) ELT(ABS) ELT(SIGN) ELT(RELU) ELT(FLOOR) ELT(CEIL) ELT(ROUND) ELT(SQRT) ELT(
	        RECIPROCAL) ELT(EXP) ELT(LOG) ELT(ERF) ELT(TANH) ELT(SIGMOID) ELT(SIN) ELT(COS)
	        ELT(TAN) ELT(ASIN) ELT(ACOS) ELT(ATAN) ELT(SINH) ELT(COSH) ELT(ASINH) ELT(
	                ACOSH) ELT(ATANH) ELT(SOFTPLUS) ELT(SOFTSIGN) ELT(MISH) ELT(HARD_SWISH)
	                ELT(LEAKY_RELU) ELT(ELU) ELT(CELU) ELT(SELU) ELT(THRESHOLDED_RELU) ELT(
	                        HARD_SIGMOID) ELT(SHRINK) ELT(CLIP) ELT(NOT) ELT(ISNAN) ELT(ISINF)
	                        ELT(CAST) ELT(COPY) ELT(ADD) ELT(SUB) ELT(MUL) ELT(DIV) ELT(POW)
	                                ELT(MIN) ELT(MAX) ELT(MOD) ELT(PRELU) ELT(EQUAL) ELT(LESS)
	                                        ELT(LESS_EQUAL) ELT(GREATER) ELT(GREATER_EQUAL)
	                                                ELT(AND) ELT(OR) ELT(XOR) ELT(WHERE)
#undef ELT
	                                                        [IR_OP_RESHAPE] = eval_reshape,
	[IR_OP_TRANSPOSE] = eval_transpose,
	[IR_OP_CONCAT] = eval_concat,
	[IR_OP_SPLIT] = eval_split,
	[IR_OP_SLICE] = eval_slice,
	[IR_OP_GATHER] = eval_gather,
	[IR_OP_GATHER_ELEMENTS] = eval_gather_elements,
	[IR_OP_EXPAND] = eval_expand,
	[IR_OP_TILE] = eval_tile,
	[IR_OP_PAD] = eval_pad,
	[IR_OP_TRILU] = eval_trilu,
	[IR_OP_REDUCE_SUM] = eval_reduce,
	[IR_OP_REDUCE_MEAN] = eval_reduce,
	[IR_OP_REDUCE_MAX] = eval_reduce,
	[IR_OP_REDUCE_MIN] = eval_reduce,
	[IR_OP_REDUCE_PROD] = eval_reduce,
	[IR_OP_REDUCE_L1] = eval_reduce,
	[IR_OP_REDUCE_L2] = eval_reduce,
	[IR_OP_REDUCE_SUM_SQUARE] = eval_reduce,
	[IR_OP_REDUCE_LOG_SUM] = eval_reduce,
	[IR_OP_REDUCE_LOG_SUM_EXP] = eval_reduce,
	[IR_OP_ARGMAX] = eval_arg,
	[IR_OP_ARGMIN] = eval_arg,
	[IR_OP_CUMSUM] = eval_cumsum,
	[IR_OP_MATMUL] = eval_matmul,
};

bool ir_can_fold(enum ir_op op) { return evaluators[op] != NULL; }

int ir_fold_node(struct ir_module *m, struct ir_node *n, int64_t max_elems, char *err,
                 size_t errlen)
{
	struct fold f = { .n = n, .err = err, .errlen = errlen };
	int64_t work = 0;
	if (!evaluators[n->op])
		return 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i]->kind != IR_VAL_CONST || !n->in[i]->data)
			return 0;
	for (int i = 0; i < n->nout; i++) {
		int64_t e = ir_type_elems(&n->out[i]->type);
		if (e < 0 || e > max_elems)
			return 0;
		work += e;
	}
	if (n->op == IR_OP_MATMUL) { /* do not burn compile time on big products */
		const struct ir_type *a = &n->in[0]->type;
		if ((double)work * (double)a->dims[a->rank - 1] > 1e8)
			return 0;
	}
	f.out = ir_arena_alloc(&m->arena, sizeof *f.out * (size_t)n->nout);
	for (int i = 0; i < n->nout; i++) {
		size_t bytes = (size_t)ir_type_elems(&n->out[i]->type) * esize(n->out[i]);
		f.out[i] = ir_arena_alloc_big(&m->arena, bytes ? bytes : 1);
		memset(f.out[i], 0, bytes ? bytes : 1);
	}
	if (!evaluators[n->op](&f)) {
		for (int i = 0; i < n->nout; i++)
			ir_arena_release(&m->arena, f.out[i]);
		return -1;
	}
	ir_detach_node(m, n);
	for (int i = 0; i < n->nout; i++) {
		struct ir_value *v = n->out[i];
		size_t bytes = (size_t)ir_type_elems(&v->type) * esize(v);
		v->kind = IR_VAL_CONST;
		v->def = NULL;
		v->data = f.out[i];
		v->checksum = ir_checksum(v->data, bytes);
	}
	return 1;
}
