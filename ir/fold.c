/*
 * fold.c - the reference interpreter's driver, and constant folding.
 *
 * Every IR op has an evaluator: a plain reference implementation, simple and
 * slow on purpose, that the compiled kernels are tested against. Floats are
 * computed in double and rounded once when stored, integers in int64 (never
 * through double, so INT64_MAX survives). The evaluators live in a table
 * indexed by the op enum, generated from the fold column of ops.h; this file
 * holds the driver and the elementwise ops, the other families are in
 * eval_*.c (see eval.h).
 *
 * Two drivers use them. The importer folds as it builds (ir_fold_node), so
 * exporters' shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat ->
 * Reshape, Range, ConstantOfShape, the slicing of a causal-mask buffer)
 * collapses into constants and every later shape is static; there a fold is
 * skipped when its result is larger than the caller allows, or when it is a
 * big matrix product, whose folding would only move work from run time to
 * compile time.
 * ir_fold_all evaluates a whole module with no limits: the reference run of a
 * model whose inputs have been bound to constants (ir_input_to_const).
 */
#include "eval.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Index helpers (eval.h)                                                   */
/* ------------------------------------------------------------------------ */

void eval_strides(const struct ir_type *t, int64_t *strides)
{
	int64_t s = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		strides[i] = s;
		s *= t->dims[i];
	}
}

void eval_bcast_strides(const struct ir_type *t, const struct ir_type *o, int64_t *strides)
{
	int64_t s[IR_MAX_RANK];
	eval_strides(t, s);
	for (int i = 0; i < o->rank; i++) {
		int j = i - (o->rank - t->rank);
		strides[i] = (j < 0 || t->dims[j] == 1) ? 0 : s[j];
	}
}

bool eval_next(int64_t *idx, const int64_t *dims, int rank)
{
	for (int i = rank - 1; i >= 0; i--) {
		if (++idx[i] < dims[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

void eval_unflatten(int64_t k, const int64_t *dims, int rank, int64_t *idx)
{
	for (int i = rank - 1; i >= 0; i--) {
		idx[i] = dims[i] ? k % dims[i] : 0;
		k = dims[i] ? k / dims[i] : 0;
	}
}

int64_t eval_dot(const int64_t *idx, const int64_t *strides, int n)
{
	int64_t o = 0;
	for (int i = 0; i < n; i++)
		o += idx[i] * strides[i];
	return o;
}

void eval_axis_blocks(const struct ir_type *t, int axis, int64_t *outer, int64_t *inner)
{
	*outer = 1;
	*inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= t->dims[i];
	for (int i = axis + 1; i < t->rank; i++)
		*inner *= t->dims[i];
}

void *eval_alloc(struct fold *f, size_t bytes)
{
	void *p = ir_arena_alloc_big(&f->m->arena, bytes ? bytes : 1);
	memset(p, 0, bytes ? bytes : 1);
	return p;
}

void eval_free(struct fold *f, void *p) { ir_arena_release(&f->m->arena, p); }

double *eval_doubles(struct fold *f, const struct ir_value *v)
{
	int64_t n = nelems(v);
	double *d;
	if (!isf(v->type.dtype))
		return NULL;
	d = eval_alloc(f, sizeof *d * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		d[i] = getf(v, i);
	return d;
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

/* A float attribute as an int64, saturated (NaN: 0): integer clip bounds and
 * shrink biases may lie outside the integer range. */
static int64_t sat_i64(double d)
{
	return d != d ? 0 : d >= 0x1p63 ? INT64_MAX : d <= -0x1p63 ? INT64_MIN : (int64_t)d;
}

static bool unary_i(enum ir_op op, const struct ir_node *n, int64_t x, int64_t *r)
{
	switch (op) {
	case IR_OP_NEG: *r = (int64_t)(0 - (uint64_t)x); break;
	case IR_OP_ABS: *r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
	case IR_OP_SIGN: *r = x > 0 ? 1 : x < 0 ? -1 : 0; break;
	case IR_OP_RELU: *r = x > 0 ? x : 0; break;
	case IR_OP_BIT_NOT: *r = ~x; break; /* the store truncates to the type's width */
	case IR_OP_CLIP: {
		double lo = ir_attr_f(n, "min"), hi = ir_attr_f(n, "max");
		*r = (double)x < lo ? sat_i64(lo) : (double)x > hi ? sat_i64(hi) : x;
		break;
	}
	case IR_OP_SHRINK: {
		double b = ir_attr_f(n, "bias"), l = ir_attr_f(n, "lambd");
		uint64_t ub = (uint64_t)sat_i64(b);
		*r = (double)x < -l  ? (int64_t)((uint64_t)x + ub)
		     : (double)x > l ? (int64_t)((uint64_t)x - ub)
		                     : 0;
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
	case IR_OP_BIT_AND: *r = a & b; break;
	case IR_OP_BIT_OR: *r = a | b; break;
	case IR_OP_BIT_XOR: *r = a ^ b; break;
	case IR_OP_BIT_SHIFT:
		/* unsigned operands, zero-extended: a shift by the type's width or
		 * more leaves 0 (numpy's, so ONNX's reference), and so does one of
		 * 64 or more here; below 64 the store's truncation does the rest */
		*r = ub >= 64 ? 0 : (int64_t)(ir_attr_i(n, "left") ? ua << ub : ua >> ub);
		break;
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
	enum ir_dtype ti = IN(n->op == IR_OP_WHERE || n->op == IR_OP_PHI ? 1 : 0)->type.dtype,
	              to = o->dtype;
	bool flt = isf(ti);
	if (n->op == IR_OP_PHI) { /* the chosen operand as it is (the other may have no data) */
		const struct ir_value *v = IN(*(const uint8_t *)IN(0)->data ? 1 : 2);
		memcpy(f->out[0], v->data, (size_t)total * (size_t)ir_dtype_size(to));
		return true;
	}
	for (int i = 0; i < n->nin; i++)
		eval_bcast_strides(&IN(i)->type, o, st[i]);
	for (int64_t k = 0; k < total; k++) {
		size_t off[3] = { 0, 0, 0 };
		for (int i = 0; i < n->nin; i++)
			for (int d = 0; d < o->rank; d++)
				off[i] += (size_t)(idx[d] * st[i][d]);
		const void *a = IN(0)->data, *b = n->nin > 1 ? IN(1)->data : NULL;
		switch (n->op) {
		case IR_OP_CAST:
			if (ir_minifloat(to)) /* the IR's cast saturates */
				((uint8_t *)f->out[0])[k] =
				        ir_minifloat_encode(to, ir_load_f64(ti, a, off[0]), true);
			else if (isf(to) || to == IR_BOOL || ti == IR_BOOL || (isf(ti) && !isf(to)))
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
		case IR_OP_DROPOUT: {
			float ratio = ir_attr_f(n, "ratio");
			uint64_t key = ir_dropout_key((uint64_t)ir_load_i64(IR_I64, b, off[1]),
			                              ir_attr_i(n, "salt"));
			uint64_t bits = ir_mix64(key + ((uint64_t)k + 1) * IR_GOLDEN64);
			double m = (bits >> 40) >= ir_dropout_threshold(ratio)
			                   ? (double)ir_dropout_scale(ratio)
			                   : 0.0;
			/* x * m, not a select: an infinite x dropped is NaN as in ONNX */
			ir_store_f64(to, f->out[0], (size_t)k, ir_load_f64(ti, a, off[0]) * m);
			break;
		}
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
		eval_next(idx, o->dims, o->rank);
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                   */
/* ------------------------------------------------------------------------ */

/* A branch that cannot run (trap): evaluating it is its error. */
static bool eval_trap(struct fold *f) { FAIL("%s", ir_attr_s(f->n, "message")); }

/* A run-time loop's ops mean something only together, iteration after
 * iteration: they are not folded node by node (docs/ir.md, Loops). */
#define eval_loop NULL
/* the most body nodes ir_fold_all copies running loops */
#define IR_PEEL_MAX (1 << 22)

/* Every op's evaluator, named by the fold column of its row (ops.h):
 * elementwise ops and copy share eval_eltwise. */
static const eval_fn evaluators[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = eval_##fold,
#include "ops.h"
#undef IR_OP
};

bool ir_can_fold(enum ir_op op) { return evaluators[op] != NULL; }

static bool has_data(const struct ir_value *v) { return v->kind == IR_VAL_CONST && v->data; }

/* Can n be evaluated now: an evaluator, and data for every input (a phi:
 * for its condition and the operand it chooses)? A guarded node's guard
 * does not matter here: its results are unspecified when the guard is
 * false, so any value, the one it computes included, is right (ir_fold_all
 * skips it to avoid errors a branch not taken would report). */
bool ir_fold_ready(const struct ir_node *n)
{
	if (!evaluators[n->op])
		return false;
	if (n->op == IR_OP_PHI)
		return has_data(n->in[0]) &&
		       has_data(n->in[*(const uint8_t *)n->in[0]->data ? 1 : 2]);
	for (int i = 0; i < n->nin; i++)
		if (n->in[i]->kind != IR_VAL_CONST || !n->in[i]->data)
			return false;
	return true;
}

/*
 * Evaluates n (foldable) and turns its results into constants that keep
 * their names and uses; n leaves the module. -1 with a message in err when
 * the constants are invalid for the op.
 */
static int fold(struct ir_module *m, struct ir_node *n, char *err, size_t errlen)
{
	struct fold f = { .m = m, .n = n, .err = err, .errlen = errlen };
	f.out = ir_arena_alloc(&m->arena, sizeof *f.out * (size_t)n->nout);
	for (int i = 0; i < n->nout; i++)
		f.out[i] =
		        eval_alloc(&f, (size_t)ir_type_elems(&n->out[i]->type) * esize(n->out[i]));
	if (!evaluators[n->op](&f)) {
		for (int i = 0; i < n->nout; i++)
			eval_free(&f, f.out[i]);
		return -1;
	}
	ir_detach_node(m, n);
	for (int i = 0; i < n->nout; i++) {
		struct ir_value *v = n->out[i];
		v->kind = IR_VAL_CONST;
		v->def = NULL;
		v->data = f.out[i];
		v->checksum = ir_checksum(v->data, (size_t)ir_type_elems(&v->type) * esize(v));
	}
	return 1;
}

/* Product of the dims of t from dimension `from` on. */
static double dims_from(const struct ir_type *t, int from)
{
	double r = 1;
	for (int i = from; i < t->rank; i++)
		r *= (double)t->dims[i];
	return r;
}

int64_t ir_fold_work(const struct ir_node *n)
{
	double in = 0, out = 0, w;
	for (int i = 0; i < n->nin; i++)
		in += (double)ir_type_elems(&n->in[i]->type);
	for (int i = 0; i < n->nout; i++)
		out += (double)ir_type_elems(&n->out[i]->type);
	switch (n->op) {
	case IR_OP_MATMUL:
	case IR_OP_GEMM: { /* a multiply-add per output and reduced element */
		const struct ir_type *a = &n->in[0]->type;
		bool ta = n->op == IR_OP_GEMM && ir_attr_i(n, "trans_a");
		w = out * (double)a->dims[a->rank - (ta ? 2 : 1)];
		break;
	}
	case IR_OP_CONV: /* per output: Cin/group times the kernel's volume */
		w = out * dims_from(&n->in[1]->type, 1);
		break;
	case IR_OP_CONV_TRANSPOSE: /* per input: Cout/group times the kernel's volume */
		w = (double)ir_type_elems(&n->in[0]->type) * dims_from(&n->in[1]->type, 1);
		break;
	case IR_OP_MAX_POOL:
	case IR_OP_AVG_POOL:
	case IR_OP_LP_POOL: {
		int nk;
		const int64_t *k = ir_attr_ints(n, "kernel", &nk);
		w = out;
		for (int i = 0; i < nk; i++)
			w *= (double)k[i];
		break;
	}
	case IR_OP_LRN: w = out * (double)ir_attr_i(n, "size"); break;
	case IR_OP_TOPK: /* a merge sort of every lane */
		w = in * (1 + log2(1 + (double)n->in[0]->type.dims[ir_attr_i(n, "axis")]));
		break;
	case IR_OP_LINEAR_ATTENTION: { /* per step, about 3 + group passes over each state */
		const struct ir_type *q = &n->in[0]->type;
		double group = (double)(ir_attr_i(n, "q_num_heads") / ir_attr_i(n, "kv_num_heads"));
		w = (double)ir_type_elems(&n->out[1]->type) * (double)q->dims[1] * (3 + group);
		break;
	}
	case IR_OP_LSTM: /* per step, direction and batch row: every gate of x W^T and h R^T */
	case IR_OP_GRU:
	case IR_OP_RNN: {
		const int64_t *x = n->in[0]->type.dims, *r = n->in[2]->type.dims;
		w = (double)x[0] * (double)x[1] * (double)r[0] * (double)r[1] *
		    (double)(x[2] + r[2] + 1);
		break;
	}
	case IR_OP_ATTENTION:        /* a multiply-add per score and head dim, both products */
	case IR_OP_ATTENTION_GRAD: { /* the scores again, then four more products */
		const struct ir_type *q = &n->in[0]->type;
		w = (double)ir_type_elems(q) / (double)q->dims[3] * (double)n->in[1]->type.dims[2] *
		    (double)(q->dims[3] + n->in[2]->type.dims[3]) *
		    (n->op == IR_OP_ATTENTION_GRAD ? 3 : 1);
		break;
	}
	case IR_OP_RESIZE: { /* every combination of one tap per dimension */
		const char *mode = ir_attr_s(n, "mode");
		double taps = !strcmp(mode, "cubic") ? 4 : !strcmp(mode, "linear") ? 2 : 1;
		w = out * pow(taps, n->in[0]->type.rank);
		break;
	}
	default:
		/* elementwise ops and data movement visit each result element
		 * once; the rest (reductions, normalizations) each input too */
		w = ir_ops[n->op].kind == IR_KIND_ELTWISE || ir_ops[n->op].kind == IR_KIND_MOVE
		            ? out
		            : in + out;
	}
	return w < 0x1p62 ? (int64_t)w : INT64_MAX;
}

int ir_fold_node(struct ir_module *m, struct ir_node *n, int64_t max_elems, char *err,
                 size_t errlen)
{
	int64_t work = 0;
	if (!ir_fold_ready(n))
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
	return fold(m, n, err, errlen);
}

int ir_fold_all(struct ir_module *m, char *err, size_t errlen)
{
	struct ir_node *next;
	int left = 0;
	int64_t peeled = 0;
	for (struct ir_node *n = m->first; n; n = next) {
		char msg[512];
		next = n->next;
		/* a run-time loop whose condition is known runs by peeling one
		 * iteration at a time in front of it, until the condition is
		 * false; bounded, since the trip count is the data's */
		if (n->op == IR_OP_LOOP && has_data(n->in[0]) &&
		    (!n->guard || (has_data(n->guard) && *(const uint8_t *)n->guard->data))) {
			struct ir_node *before = n->prev;
			if (!*(const uint8_t *)n->in[0]->data) {
				next = ir_loop_end(n->out[0])->next;
				ir_loop_exit(m, n);
				continue;
			}
			if ((peeled += ir_loop_peel(m, n)) > IR_PEEL_MAX) {
				snprintf(err, errlen,
				         "node '%s' (loop): the loop runs past %d nodes' worth of "
				         "iterations, more than the reference evaluator follows",
				         n->name, IR_PEEL_MAX);
				return -1;
			}
			next = before ? before->next : m->first;
			continue;
		}
		/* a guarded node runs only where its guard was computed and is
		 * true (a nested guard is not computed when the outer is false) */
		if (!ir_fold_ready(n) ||
		    (n->guard && (!has_data(n->guard) || !*(const uint8_t *)n->guard->data))) {
			left++;
			continue;
		}
		if (fold(m, n, msg, sizeof msg) < 0) {
			snprintf(err, errlen, "node '%s' (%s): %s", n->name, ir_ops[n->op].name,
			         msg);
			return -1;
		}
	}
	return left;
}

bool ir_input_to_const(struct ir_module *m, struct ir_value *v, const void *data)
{
	size_t bytes = (size_t)ir_type_elems(&v->type) * (size_t)ir_dtype_size(v->type.dtype);
	int i = 0;
	while (i < m->ninputs && m->inputs[i] != v)
		i++;
	if (v->kind != IR_VAL_INPUT || i == m->ninputs)
		return false;
	memmove(m->inputs + i, m->inputs + i + 1, sizeof *m->inputs * (size_t)(m->ninputs - i - 1));
	m->ninputs--;
	v->kind = IR_VAL_CONST;
	v->data = ir_arena_alloc_big(&m->arena, bytes ? bytes : 1);
	if (bytes)
		memcpy(v->data, data, bytes);
	v->checksum = ir_checksum(v->data, bytes);
	return true;
}
