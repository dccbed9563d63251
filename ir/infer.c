/*
 * infer.c - shape and type inference, one function per op family.
 *
 * Each function reads the node's input types and its (complete) attributes
 * and writes the output types. It also validates everything the rest of the
 * compiler relies on: dtypes an op accepts, ranks, attribute lengths and
 * ranges. A message written to err names the problem in terms of the IR op;
 * callers add the file and node. The importer runs inference as it builds
 * nodes, the parser checks declared types against it, and the verifier
 * re-runs it after every pass.
 */
#include "infer.h"

#include <math.h>

#include <string.h>

#define FAIL(...)                                   \
	do {                                        \
		snprintf(err, errlen, __VA_ARGS__); \
		return false;                       \
	} while (0)
#define T(i)       (&n->in[i]->type)
#define TS(t, buf) ir_type_str((t), (buf), sizeof(buf))

typedef char tbuf[IR_TYPE_STR_MAX];

/* Checked int64 arithmetic: attribute values come from untrusted models. */
static bool add3(int64_t a, int64_t b, int64_t c, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r) && !__builtin_add_overflow(*r, c, r);
}

/*
 * Output size of a sliding window: kernel k dilated by dil (extent
 * dil*(k-1)+1), stride st, over an input of size in padded by pb and pe.
 * ceil_mode rounds up, as pooling may, but the last window must start
 * inside the input or its leading padding (PyTorch's and ONNX Runtime's rule).
 */
static bool windows(int64_t in, int64_t k, int64_t dil, int64_t st, int64_t pb, int64_t pe,
                    bool ceil_mode, int dim, int64_t *out, char *err, size_t errlen)
{
	int64_t span, padded, o;
	if (__builtin_mul_overflow(dil, k - 1, &span) || __builtin_add_overflow(span, 1, &span) ||
	    !add3(in, pb, pe, &padded))
		FAIL("window arithmetic overflows in spatial dim %d", dim);
	if (padded < span)
		FAIL("kernel extent %lld exceeds padded input %lld in spatial dim %d",
		     (long long)span, (long long)padded, dim);
	o = (padded - span) / st + 1;
	if (ceil_mode && (padded - span) % st) {
		int64_t last;
		o++;
		if (__builtin_mul_overflow(o - 1, st, &last) || last >= in + pb)
			o--;
	}
	*out = o;
	return true;
}

static bool is_float(enum ir_dtype t) { return ir_dtypes[t].is_float; }
static bool is_int(enum ir_dtype t) { return ir_dtypes[t].is_int; }
static bool is_numeric(enum ir_dtype t) { return is_float(t) || is_int(t); }
static bool is_signed(enum ir_dtype t)
{
	return is_float(t) || (is_int(t) && ir_dtypes[t].is_signed);
}

static bool same_dtype(const struct ir_node *n, int a, int b, char *err, size_t errlen)
{
	if (T(a)->dtype != T(b)->dtype)
		FAIL("input %d is %s but input %d is %s", a, ir_dtype_name(T(a)->dtype), b,
		     ir_dtype_name(T(b)->dtype));
	return true;
}

static bool unary(const struct ir_node *n, struct ir_type *out, bool ok, const char *what,
                  char *err, size_t errlen)
{
	if (!ok)
		FAIL("input type %s is not supported (needs %s)", ir_dtype_name(T(0)->dtype), what);
	out[0] = *T(0);
	return true;
}

bool ir_infer_float(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	return unary(n, out, is_float(T(0)->dtype), "a float type", err, errlen);
}

bool ir_infer_numeric(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	return unary(n, out, is_numeric(T(0)->dtype), "a numeric type", err, errlen);
}

bool ir_infer_signed(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	return unary(n, out, is_signed(T(0)->dtype), "a float or signed integer type", err, errlen);
}

bool ir_infer_bool(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	return unary(n, out, T(0)->dtype == IR_BOOL, "bool", err, errlen);
}

bool ir_infer_any(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	return unary(n, out, true, "", err, errlen);
}

bool ir_infer_isnan(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!unary(n, out, is_float(T(0)->dtype), "a float type", err, errlen))
		return false;
	out[0].dtype = IR_BOOL;
	return true;
}

bool ir_infer_cast(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	enum ir_dtype to = ir_attr_t(n, "to");
	if (to <= IR_DT_NONE || to >= IR_DTYPE_COUNT)
		FAIL("invalid target type");
	out[0] = *T(0);
	out[0].dtype = to;
	return true;
}

static bool broadcast_all(const struct ir_node *n, int first, struct ir_type *out, char *err,
                          size_t errlen)
{
	struct ir_type t = *T(first);
	for (int i = first + 1; i < n->nin; i++) {
		struct ir_type r;
		tbuf a, b;
		if (!ir_broadcast(&t, T(i), &r))
			FAIL("shapes %s and %s do not broadcast", TS(&t, a), TS(T(i), b));
		t = r;
	}
	t.dtype = T(first)->dtype;
	*out = t;
	return true;
}

bool ir_infer_arith(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_numeric(T(0)->dtype))
		FAIL("type %s is not supported (needs a numeric type)", ir_dtype_name(T(0)->dtype));
	return broadcast_all(n, 0, out, err, errlen);
}

bool ir_infer_pow(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!is_numeric(T(0)->dtype) || !is_numeric(T(1)->dtype))
		FAIL("types %s and %s are not supported (need numeric types)",
		     ir_dtype_name(T(0)->dtype), ir_dtype_name(T(1)->dtype));
	return broadcast_all(n, 0, out, err, errlen);
}

bool ir_infer_prelu(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	struct ir_type r;
	tbuf a, b;
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_signed(T(0)->dtype))
		FAIL("type %s is not supported", ir_dtype_name(T(0)->dtype));
	if (!ir_broadcast(T(0), T(1), &r) || !ir_type_eq(&r, T(0)))
		FAIL("slope %s does not broadcast to input %s", TS(T(1), b), TS(T(0), a));
	out[0] = *T(0);
	return true;
}

bool ir_infer_compare(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (n->op != IR_OP_EQUAL && !is_numeric(T(0)->dtype))
		FAIL("type %s is not supported (needs a numeric type)", ir_dtype_name(T(0)->dtype));
	if (!broadcast_all(n, 0, out, err, errlen))
		return false;
	out[0].dtype = IR_BOOL;
	return true;
}

bool ir_infer_logic(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (T(0)->dtype != IR_BOOL || T(1)->dtype != IR_BOOL)
		FAIL("inputs must be bool");
	return broadcast_all(n, 0, out, err, errlen);
}

/* BitwiseNot/And/Or/Xor on integers; BitShift on unsigned integers only. */
bool ir_infer_bitwise(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	enum ir_dtype t = T(0)->dtype;
	bool shift = n->op == IR_OP_BIT_SHIFT;
	if (!is_int(t) || (shift && ir_dtypes[t].is_signed))
		FAIL("type %s is not supported (needs %s)", ir_dtype_name(t),
		     shift ? "an unsigned integer type" : "an integer type");
	if (n->nin == 1) {
		out[0] = *T(0);
		return true;
	}
	return same_dtype(n, 0, 1, err, errlen) && broadcast_all(n, 0, out, err, errlen);
}

bool ir_infer_where(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (T(0)->dtype != IR_BOOL)
		FAIL("condition must be bool, not %s", ir_dtype_name(T(0)->dtype));
	if (!same_dtype(n, 1, 2, err, errlen))
		return false;
	if (!broadcast_all(n, 0, out, err, errlen))
		return false;
	out[0].dtype = T(1)->dtype;
	return true;
}

bool ir_infer_trap(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int rank;
	const int64_t *dims = ir_attr_ints(n, "shape", &rank);
	if (rank > IR_MAX_RANK)
		FAIL("a result of rank %d", rank);
	memset(&out[0], 0, sizeof out[0]);
	out[0].dtype = ir_attr_t(n, "dtype");
	out[0].rank = rank;
	for (int d = 0; d < rank; d++) {
		if (dims[d] < 0)
			FAIL("a negative dimension");
		out[0].dims[d] = dims[d];
	}
	return true;
}

bool ir_infer_phi(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	char a[96], b[96];
	if (T(0)->dtype != IR_BOOL || ir_type_elems(T(0)) != 1 || T(0)->rank > T(1)->rank)
		FAIL("the condition must be a bool of one element and rank at most the "
		     "operands', not %s",
		     ir_type_str(T(0), a, sizeof a));
	if (!ir_type_eq(T(1), T(2)))
		FAIL("the two operands must have one type, not %s and %s",
		     ir_type_str(T(1), a, sizeof a), ir_type_str(T(2), b, sizeof b));
	out[0] = *T(1);
	return true;
}

bool ir_infer_loop(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	char a[96];
	if (T(0)->dtype != IR_BOOL || ir_type_elems(T(0)) != 1)
		FAIL("the condition must be a bool of one element, not %s",
		     ir_type_str(T(0), a, sizeof a));
	memset(&out[0], 0, sizeof out[0]);
	out[0].dtype = IR_BOOL;
	return true;
}

/* loop_end(token, cond, carried[k], next[k]) -> k results, the carried
 * values' types */
bool ir_infer_loop_end(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	char a[96], b[96];
	int k = (n->nin - 2) / 2;
	if (n->nin % 2 || n->nout != k)
		FAIL("takes the loop, a condition, k carried values and their k next values, "
		     "and gives k results: %d inputs, %d results",
		     n->nin, n->nout);
	for (int i = 0; i < 2; i++)
		if (T(i)->dtype != IR_BOOL || ir_type_elems(T(i)) != 1)
			FAIL("the %s must be a bool of one element, not %s",
			     i ? "condition" : "loop", ir_type_str(T(i), a, sizeof a));
	for (int i = 0; i < k; i++) {
		if (!ir_type_eq(T(2 + i), T(2 + k + i)))
			FAIL("carried value %d is %s but its next value is %s", i,
			     ir_type_str(T(2 + i), a, sizeof a),
			     ir_type_str(T(2 + k + i), b, sizeof b));
		out[i] = *T(2 + i);
	}
	return true;
}

bool ir_infer_dropout(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	float ratio = ir_attr_f(n, "ratio");
	if (!is_float(T(0)->dtype))
		FAIL("input must be a float type, not %s", ir_dtype_name(T(0)->dtype));
	if (T(1)->dtype != IR_I64 || T(1)->rank != 0)
		FAIL("the seed must be an i64 scalar");
	if (!(ratio >= 0 && ratio <= 1))
		FAIL("ratio %g is outside [0, 1]", (double)ratio);
	if (ir_attr_i(n, "salt") < 0)
		FAIL("salt must not be negative");
	out[0] = *T(0);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Linear algebra, convolution                                              */
/* ------------------------------------------------------------------------ */

bool ir_infer_matmul(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	struct ir_type a = *T(0), b = *T(1), ba, bb, batch;
	tbuf s1, s2;
	int64_t m, k, k2, nn;
	bool a1 = a.rank == 1, b1 = b.rank == 1;
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_numeric(a.dtype))
		FAIL("type %s is not supported", ir_dtype_name(a.dtype));
	if (a.rank < 1 || b.rank < 1)
		FAIL("inputs must have rank >= 1");
	m = a1 ? 1 : a.dims[a.rank - 2];
	k = a.dims[a.rank - 1];
	k2 = b1 ? b.dims[0] : b.dims[b.rank - 2];
	nn = b1 ? 1 : b.dims[b.rank - 1];
	if (k != k2)
		FAIL("inner dimensions differ: %s times %s", TS(T(0), s1), TS(T(1), s2));
	ba = a;
	ba.rank = a1 ? 0 : a.rank - 2;
	bb = b;
	bb.rank = b1 ? 0 : b.rank - 2;
	if (!ir_broadcast(&ba, &bb, &batch))
		FAIL("batch dimensions of %s and %s do not broadcast", TS(T(0), s1), TS(T(1), s2));
	out[0] = batch;
	out[0].dtype = a.dtype;
	if (batch.rank + 2 > IR_MAX_RANK)
		FAIL("rank too large");
	if (!a1)
		out[0].dims[out[0].rank++] = m;
	if (!b1)
		out[0].dims[out[0].rank++] = nn;
	return true;
}

bool ir_infer_gemm(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *a = T(0), *b = T(1);
	bool ta = ir_attr_i(n, "trans_a") != 0, tb = ir_attr_i(n, "trans_b") != 0;
	tbuf s1, s2;
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_numeric(a->dtype))
		FAIL("type %s is not supported", ir_dtype_name(a->dtype));
	if (a->rank != 2 || b->rank != 2)
		FAIL("A and B must be matrices, not %s and %s", TS(a, s1), TS(b, s2));
	int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
	int64_t k2 = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
	if (k != k2)
		FAIL("inner dimensions differ: %s times %s (trans_a=%d, trans_b=%d)", TS(a, s1),
		     TS(b, s2), ta, tb);
	out[0] = (struct ir_type){ .dtype = a->dtype, .rank = 2, .dims = { m, nn } };
	if (n->nin > 2) {
		struct ir_type r;
		if (!same_dtype(n, 0, 2, err, errlen))
			return false;
		if (!ir_broadcast(&out[0], T(2), &r) || !ir_type_eq(&r, &out[0]))
			FAIL("C %s does not broadcast to [%lld,%lld]", TS(T(2), s1), (long long)m,
			     (long long)nn);
	}
	return true;
}

/* Checks an INTS attribute has exactly len entries (min value lo). */
static bool ints_len(const struct ir_node *n, const char *name, int len, int64_t lo, char *err,
                     size_t errlen)
{
	int c;
	const int64_t *v = ir_attr_ints(n, name, &c);
	if (c != len)
		FAIL("attribute %s has %d values, expected %d", name, c, len);
	for (int i = 0; i < c; i++)
		if (v[i] < lo)
			FAIL("attribute %s[%d] = %lld is out of range (min %lld)", name, i,
			     (long long)v[i], (long long)lo);
	return true;
}

bool ir_infer_conv(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0), *w = T(1);
	int nsp = x->rank - 2;
	int64_t group = ir_attr_i(n, "group");
	tbuf s1, s2;
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (x->rank < 3 || w->rank != x->rank)
		FAIL("input %s and weight %s must both be [N,C,spatial...]", TS(x, s1), TS(w, s2));
	if (!ints_len(n, "strides", nsp, 1, err, errlen) ||
	    !ints_len(n, "dilations", nsp, 1, err, errlen) ||
	    !ints_len(n, "pads", 2 * nsp, 0, err, errlen))
		return false;
	if (group < 1 || x->dims[1] % group != 0 || w->dims[0] % group != 0)
		FAIL("group %lld does not divide %lld input channels and %lld output channels",
		     (long long)group, (long long)x->dims[1], (long long)w->dims[0]);
	if (x->dims[1] / group != w->dims[1])
		FAIL("weight %s expects %lld input channels per group, input %s has %lld (group "
		     "%lld)",
		     TS(w, s2), (long long)w->dims[1], TS(x, s1), (long long)(x->dims[1] / group),
		     (long long)group);
	if (n->nin > 2) {
		if (!same_dtype(n, 0, 2, err, errlen))
			return false;
		if (T(2)->rank != 1 || T(2)->dims[0] != w->dims[0])
			FAIL("bias %s must be [%lld]", TS(T(2), s1), (long long)w->dims[0]);
	}
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pd = ir_attr_ints(n, "pads", NULL),
	              *dl = ir_attr_ints(n, "dilations", NULL);
	out[0] = *x;
	out[0].dims[1] = w->dims[0];
	for (int i = 0; i < nsp; i++)
		if (!windows(x->dims[2 + i], w->dims[2 + i], dl[i], st[i], pd[i], pd[nsp + i],
		             false, i, &out[0].dims[2 + i], err, errlen))
			return false;
	return true;
}

bool ir_infer_conv_transpose(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0), *w = T(1);
	int nsp = x->rank - 2;
	int64_t group = ir_attr_i(n, "group");
	tbuf s1, s2;
	if (!same_dtype(n, 0, 1, err, errlen))
		return false;
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (x->rank < 3 || w->rank != x->rank)
		FAIL("input %s and weight %s must both be [N,C,spatial...]", TS(x, s1), TS(w, s2));
	if (!ints_len(n, "strides", nsp, 1, err, errlen) ||
	    !ints_len(n, "dilations", nsp, 1, err, errlen) ||
	    !ints_len(n, "pads", 2 * nsp, 0, err, errlen) ||
	    !ints_len(n, "output_padding", nsp, 0, err, errlen))
		return false;
	if (group < 1 || x->dims[1] % group != 0 || w->dims[0] != x->dims[1])
		FAIL("weight %s does not match input %s with group %lld", TS(w, s2), TS(x, s1),
		     (long long)group);
	int64_t cout;
	if (__builtin_mul_overflow(w->dims[1], group, &cout))
		FAIL("output channels overflow");
	if (n->nin > 2) {
		if (!same_dtype(n, 0, 2, err, errlen))
			return false;
		if (T(2)->rank != 1 || T(2)->dims[0] != cout)
			FAIL("bias %s must be [%lld]", TS(T(2), s1), (long long)cout);
	}
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pd = ir_attr_ints(n, "pads", NULL),
	              *dl = ir_attr_ints(n, "dilations", NULL),
	              *op = ir_attr_ints(n, "output_padding", NULL);
	out[0] = *x;
	out[0].dims[1] = cout;
	for (int i = 0; i < nsp; i++) {
		/* st * (in - 1) + output_padding + dil * (k - 1) + 1 - pads */
		int64_t a, b, o;
		if (__builtin_mul_overflow(st[i], x->dims[2 + i] - 1, &a) ||
		    __builtin_mul_overflow(dl[i], w->dims[2 + i] - 1, &b) ||
		    !add3(a, b, op[i], &o) || __builtin_add_overflow(o, 1, &o) ||
		    __builtin_sub_overflow(o, pd[i], &o) ||
		    __builtin_sub_overflow(o, pd[nsp + i], &o))
			FAIL("output size overflows in spatial dim %d", i);
		if (o < 0)
			FAIL("negative output size in spatial dim %d", i);
		out[0].dims[2 + i] = o;
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Normalization                                                            */
/* ------------------------------------------------------------------------ */

static bool vec_of(const struct ir_node *n, int i, int64_t len, const char *what, char *err,
                   size_t errlen)
{
	tbuf s;
	if (T(i)->rank != 1 || T(i)->dims[0] != len)
		FAIL("%s %s must be [%lld]", what, TS(T(i), s), (long long)len);
	if (!is_float(T(i)->dtype))
		FAIL("%s must be a float type", what);
	return true;
}

bool ir_infer_batch_norm(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	static const char *const what[] = { "", "scale", "bias", "mean", "var" };
	const struct ir_type *x = T(0);
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (x->rank < 2)
		FAIL("input must be [N,C,...]");
	for (int i = 1; i < 5; i++)
		if (!vec_of(n, i, x->dims[1], what[i], err, errlen))
			return false;
	out[0] = *x;
	return true;
}

bool ir_infer_layer_norm(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int64_t axis = ir_attr_i(n, "axis");
	tbuf s1, s2;
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	struct ir_type norm = *x, r;
	norm.rank = x->rank - (int)axis;
	memmove(norm.dims, x->dims + axis, sizeof(int64_t) * (size_t)norm.rank);
	for (int i = 1; i < n->nin; i++) {
		if (!is_float(T(i)->dtype))
			FAIL("scale and bias must be float");
		if (!ir_broadcast(&norm, T(i), &r) || !ir_type_eq(&r, &norm))
			FAIL("%s %s does not broadcast to the normalized shape %s",
			     i == 1 ? "scale" : "bias", TS(T(i), s1), TS(&norm, s2));
	}
	out[0] = *x;
	for (int i = 1; i < n->nout; i++) {
		out[i] = *x;
		out[i].dtype = IR_F32;
		for (int d = (int)axis; d < x->rank; d++)
			out[i].dims[d] = 1;
	}
	return true;
}

bool ir_infer_instance_norm(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (x->rank < 3)
		FAIL("input must be [N,C,spatial...]");
	if (!vec_of(n, 1, x->dims[1], "scale", err, errlen) ||
	    !vec_of(n, 2, x->dims[1], "bias", err, errlen))
		return false;
	out[0] = *x;
	return true;
}

bool ir_infer_lrn(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!is_float(T(0)->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(T(0)->dtype));
	if (T(0)->rank < 3)
		FAIL("input must be [N,C,spatial...]");
	if (ir_attr_i(n, "size") < 1)
		FAIL("size must be positive");
	out[0] = *T(0);
	return true;
}

bool ir_infer_axis_op(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int64_t axis = ir_attr_i(n, "axis");
	bool scan = n->op == IR_OP_CUMSUM || n->op == IR_OP_CUMPROD;
	bool num_ok = scan ? is_numeric(T(0)->dtype) : is_float(T(0)->dtype);
	if (!num_ok)
		FAIL("type %s is not supported", ir_dtype_name(T(0)->dtype));
	if (axis < 0 || axis >= T(0)->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, T(0)->rank);
	out[0] = *T(0);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */
/* ------------------------------------------------------------------------ */

bool ir_infer_pool(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int nsp = x->rank - 2;
	bool has_dil = true;
	bool ceil_mode = ir_attr_i(n, "ceil_mode") != 0;
	if (!is_numeric(x->dtype) || (n->op != IR_OP_MAX_POOL && !is_float(x->dtype)))
		FAIL("type %s is not supported", ir_dtype_name(x->dtype));
	if (x->rank < 3)
		FAIL("input must be [N,C,spatial...]");
	if (!ints_len(n, "kernel", nsp, 1, err, errlen) ||
	    !ints_len(n, "strides", nsp, 1, err, errlen) ||
	    !ints_len(n, "pads", 2 * nsp, 0, err, errlen) ||
	    (has_dil && !ints_len(n, "dilations", nsp, 1, err, errlen)))
		return false;
	const int64_t *k = ir_attr_ints(n, "kernel", NULL), *st = ir_attr_ints(n, "strides", NULL),
	              *pd = ir_attr_ints(n, "pads", NULL),
	              *dl = has_dil ? ir_attr_ints(n, "dilations", NULL) : NULL;
	out[0] = *x;
	for (int i = 0; i < nsp; i++) {
		if (!windows(x->dims[2 + i], k[i], dl ? dl[i] : 1, st[i], pd[i], pd[nsp + i],
		             ceil_mode, i, &out[0].dims[2 + i], err, errlen))
			return false;
		/* windows() has checked that dil * (k - 1) does not overflow */
		int64_t ext = (dl ? dl[i] : 1) * (k[i] - 1);
		if (pd[i] > ext || pd[nsp + i] > ext)
			FAIL("padding must be smaller than the kernel in spatial dim %d", i);
	}
	if (n->nout > 1) {
		out[1] = out[0];
		out[1].dtype = IR_I64;
	}
	return true;
}

bool ir_infer_global_pool(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	if (!is_float(T(0)->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(T(0)->dtype));
	if (T(0)->rank < 3)
		FAIL("input must be [N,C,spatial...]");
	out[0] = *T(0);
	for (int i = 2; i < T(0)->rank; i++)
		out[0].dims[i] = 1;
	return true;
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                               */
/* ------------------------------------------------------------------------ */

bool ir_infer_reduce(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int c;
	const int64_t *axes = ir_attr_ints(n, "axes", &c);
	bool keep = ir_attr_i(n, "keepdims") != 0;
	bool red[IR_MAX_RANK] = { 0 };
	if (!is_numeric(x->dtype))
		FAIL("type %s is not supported", ir_dtype_name(x->dtype));
	if (c == 0)
		FAIL("axes must not be empty");
	for (int i = 0; i < c; i++) {
		if (axes[i] < 0 || axes[i] >= x->rank)
			FAIL("axis %lld out of range for rank %d", (long long)axes[i], x->rank);
		if (i && axes[i] <= axes[i - 1])
			FAIL("axes must be sorted and unique");
		red[axes[i]] = true;
	}
	out[0] = *x;
	out[0].rank = 0;
	for (int i = 0; i < x->rank; i++) {
		if (!red[i])
			out[0].dims[out[0].rank++] = x->dims[i];
		else if (keep)
			out[0].dims[out[0].rank++] = 1;
	}
	return true;
}

bool ir_infer_arg(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int64_t axis = ir_attr_i(n, "axis");
	if (!is_numeric(x->dtype))
		FAIL("type %s is not supported", ir_dtype_name(x->dtype));
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	out[0] = *x;
	out[0].dtype = IR_I64;
	if (ir_attr_i(n, "keepdims")) {
		out[0].dims[axis] = 1;
	} else {
		memmove(out[0].dims + axis, out[0].dims + axis + 1,
		        sizeof(int64_t) * (size_t)(x->rank - axis - 1));
		out[0].rank--;
	}
	return true;
}

/* topk: the k first of each lane along axis in the order largest picks */
bool ir_infer_topk(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int64_t axis = ir_attr_i(n, "axis"), k = ir_attr_i(n, "k");
	if (!is_numeric(x->dtype))
		FAIL("type %s is not supported", ir_dtype_name(x->dtype));
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	if (k < 0 || k > x->dims[axis])
		FAIL("k %lld is out of range for axis %lld of size %lld", (long long)k,
		     (long long)axis, (long long)x->dims[axis]);
	if (ir_attr_i(n, "largest") != 0 && ir_attr_i(n, "largest") != 1)
		FAIL("largest must be 0 or 1");
	out[0] = *x;
	out[0].dims[axis] = k;
	out[1] = out[0];
	out[1].dtype = IR_I64;
	return true;
}

/* ------------------------------------------------------------------------ */
/* Recurrences                                                              */
/* ------------------------------------------------------------------------ */

struct ir_linattn_inputs ir_linear_attention_inputs(const struct ir_node *n)
{
	const char *rule = ir_attr_s(n, "update_rule");
	struct ir_linattn_inputs r = { -1, -1, -1, -1, false, false };
	int i = 3;
	r.gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
	r.delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
	if (ir_attr_i(n, "past"))
		r.past = i++;
	if (r.gated)
		r.decay = i++;
	if (r.delta)
		r.beta = i++;
	if (ir_attr_i(n, "erase"))
		r.erase = i++;
	return r;
}

/* Is input i of n [b, t, one of w0 and w1]? */
static bool packed3(const struct ir_node *n, int i, int64_t b, int64_t t, int64_t w0, int64_t w1)
{
	const struct ir_type *x = T(i);
	return x->rank == 3 && x->dims[0] == b && x->dims[1] == t &&
	       (x->dims[2] == w0 || x->dims[2] == w1);
}

/*
 * linear_attention: query [B, T, Hq*dk], key [B, T, Hkv*dk], value
 * [B, T, Hkv*dv]; decay [B, T, Hkv or Hkv*dk], beta [B, T, Hkv or 1],
 * erase_gate [B, T, Hkv*dk or Hkv], past_state [B, Hkv, dk, dv]. Results:
 * output [B, T, Hq*dv] of the query's type and the state of past_state's
 * (the query's without one).
 */
bool ir_infer_linear_attention(const struct ir_node *n, struct ir_type *out, char *err,
                               size_t errlen)
{
	const char *rule = ir_attr_s(n, "update_rule");
	struct ir_linattn_inputs in = ir_linear_attention_inputs(n);
	int64_t hq = ir_attr_i(n, "q_num_heads"), hkv = ir_attr_i(n, "kv_num_heads");
	int64_t b, t, dk, dv, erase = ir_attr_i(n, "erase"), past = ir_attr_i(n, "past");
	int want = 3 + (past != 0) + in.gated + in.delta + (erase != 0);
	const struct ir_type *q = T(0);
	tbuf s1;
	if (!in.gated && !in.delta && strcmp(rule, "linear"))
		FAIL("update_rule '%s' is not one of linear, gated, delta and gated_delta", rule);
	if ((past != 0 && past != 1) || (erase != 0 && erase != 1))
		FAIL("past and erase must be 0 or 1");
	if (erase && !in.delta)
		FAIL("update_rule '%s' takes no erase_gate", rule);
	if (n->nin != want)
		FAIL("update_rule '%s' with past %lld and erase %lld takes %d inputs, not %d", rule,
		     (long long)past, (long long)erase, want, n->nin);
	if (hq <= 0 || hkv <= 0 || hq % hkv)
		FAIL("q_num_heads %lld must be a positive multiple of kv_num_heads %lld",
		     (long long)hq, (long long)hkv);
	if (q->dtype != IR_F32 && q->dtype != IR_F16 && q->dtype != IR_BF16)
		FAIL("type %s is not supported (needs f32, f16 or bf16)", ir_dtype_name(q->dtype));
	for (int i = 1; i < n->nin; i++)
		if (i != in.past && !same_dtype(n, 0, i, err, errlen))
			return false;
	for (int i = 0; i < 3; i++)
		if (T(i)->rank != 3)
			FAIL("query, key and value must be [batch, time, heads * dim], not %s",
			     TS(T(i), s1));
	b = q->dims[0], t = q->dims[1];
	if (q->dims[2] % hq || (dk = q->dims[2] / hq) == 0)
		FAIL("query's last dimension %lld is not q_num_heads %lld times a head size",
		     (long long)q->dims[2], (long long)hq);
	if (!packed3(n, 1, b, t, hkv * dk, hkv * dk))
		FAIL("key %s must be [%lld, %lld, %lld]", TS(T(1), s1), (long long)b, (long long)t,
		     (long long)(hkv * dk));
	if (T(2)->dims[0] != b || T(2)->dims[1] != t || T(2)->dims[2] % hkv ||
	    (dv = T(2)->dims[2] / hkv) == 0)
		FAIL("value %s must be [%lld, %lld, kv_num_heads %lld times a head size]",
		     TS(T(2), s1), (long long)b, (long long)t, (long long)hkv);
	if (in.decay >= 0 && !packed3(n, in.decay, b, t, hkv, hkv * dk))
		FAIL("decay %s must be [%lld, %lld, %lld or %lld]", TS(T(in.decay), s1),
		     (long long)b, (long long)t, (long long)hkv, (long long)(hkv * dk));
	if (in.beta >= 0 && !packed3(n, in.beta, b, t, hkv, 1))
		FAIL("beta %s must be [%lld, %lld, %lld or 1]", TS(T(in.beta), s1), (long long)b,
		     (long long)t, (long long)hkv);
	if (in.erase >= 0 && !packed3(n, in.erase, b, t, hkv * dk, hkv))
		FAIL("erase_gate %s must be [%lld, %lld, %lld or %lld]", TS(T(in.erase), s1),
		     (long long)b, (long long)t, (long long)(hkv * dk), (long long)hkv);
	out[1] = (struct ir_type){ .dtype = q->dtype, .rank = 4, .dims = { b, hkv, dk, dv } };
	if (in.past >= 0) {
		const struct ir_type *p = T(in.past);
		if (p->dtype != IR_F32 && p->dtype != IR_F16 && p->dtype != IR_BF16)
			FAIL("past_state type %s is not supported (needs f32, f16 or bf16)",
			     ir_dtype_name(p->dtype));
		out[1].dtype = p->dtype;
		if (!ir_type_eq(p, &out[1]))
			FAIL("past_state %s must be [%lld, %lld, %lld, %lld]", TS(p, s1),
			     (long long)b, (long long)hkv, (long long)dk, (long long)dv);
	}
	out[0] = (struct ir_type){ .dtype = q->dtype, .rank = 3, .dims = { b, t, hq * dv } };
	return true;
}

const struct ir_rnn_act_def ir_rnn_acts[IR_RNN_ACT_COUNT] = {
	[IR_RNN_RELU] = { "Relu", false, false, 0, 0 },
	[IR_RNN_TANH] = { "Tanh", false, false, 0, 0 },
	[IR_RNN_SIGMOID] = { "Sigmoid", false, false, 0, 0 },
	[IR_RNN_AFFINE] = { "Affine", true, true, 1, 0 },
	[IR_RNN_LEAKY_RELU] = { "LeakyRelu", true, false, 0.01f, 0 },
	[IR_RNN_THRESHOLDED_RELU] = { "ThresholdedRelu", true, false, 1, 0 },
	[IR_RNN_SCALED_TANH] = { "ScaledTanh", true, true, 1, 1 },
	[IR_RNN_HARD_SIGMOID] = { "HardSigmoid", true, true, 0.2f, 0.5f },
	[IR_RNN_ELU] = { "Elu", true, false, 1, 0 },
	[IR_RNN_SOFTSIGN] = { "Softsign", false, false, 0, 0 },
	[IR_RNN_SOFTPLUS] = { "Softplus", false, false, 0, 0 },
};

bool ir_rnn_cell(const struct ir_node *n, struct ir_rnn *c, char *err, size_t errlen)
{
	const char *dir = ir_attr_s(n, "direction"), *a = ir_attr_s(n, "activations");
	const float *al, *be;
	int nal, nbe, k = 0;
	memset(c, 0, sizeof *c);
	c->gates = n->op == IR_OP_LSTM ? 4 : n->op == IR_OP_GRU ? 3 : 1;
	c->nact = n->op == IR_OP_LSTM ? 3 : n->op == IR_OP_GRU ? 2 : 1;
	c->dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	c->reverse = !strcmp(dir, "reverse");
	if (c->dirs == 1 && !c->reverse && strcmp(dir, "forward"))
		FAIL("direction '%s' is not one of forward, reverse and bidirectional", dir);
	al = ir_attr_floats(n, "alphas", &nal);
	be = ir_attr_floats(n, "betas", &nbe);
	if (nal != c->dirs * c->nact || nbe != nal)
		FAIL("alphas and betas have %d and %d values, not one per activation (%d)", nal,
		     nbe, c->dirs * c->nact);
	while (*a) {
		size_t len = strcspn(a, ",");
		int act = 0;
		while (act < IR_RNN_ACT_COUNT && (strlen(ir_rnn_acts[act].name) != len ||
		                                  strncmp(a, ir_rnn_acts[act].name, len)))
			act++;
		if (act == IR_RNN_ACT_COUNT)
			FAIL("activation '%.*s' is not one of ONNX's", (int)len, a);
		if (k == c->dirs * c->nact)
			break;
		c->act[k / c->nact][k % c->nact] = act;
		c->alpha[k / c->nact][k % c->nact] = al[k];
		c->beta[k / c->nact][k % c->nact] = be[k];
		k++;
		a += len + (a[len] == ',');
	}
	if (k != c->dirs * c->nact || *a)
		FAIL("activations '%s' must name %d functions", ir_attr_s(n, "activations"),
		     c->dirs * c->nact);
	if (!(ir_attr_f(n, "clip") >= 0))
		FAIL("clip %g must be positive (0: none)", (double)ir_attr_f(n, "clip"));
	if (n->op == IR_OP_LSTM && (ir_attr_i(n, "input_forget") & ~(int64_t)1))
		FAIL("input_forget must be 0 or 1");
	if (n->op == IR_OP_GRU && (ir_attr_i(n, "linear_before_reset") & ~(int64_t)1))
		FAIL("linear_before_reset must be 0 or 1");
	return true;
}

/* Is input i of n of type dt and shape dims? */
static bool rnn_shape(const struct ir_node *n, int i, enum ir_dtype dt, int rank,
                      const int64_t *dims)
{
	struct ir_type t = { .dtype = dt, .rank = rank };
	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return ir_type_eq(T(i), &t);
}

/*
 * lstm, gru, rnn: x [T, B, I] of f32, f16 or bf16, every other float input
 * of its type and the shapes of ops.h's comment (H from r), sequence_lens
 * i32 [B]. Results in x's type.
 */
bool ir_infer_rnn(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	static const char *const names[] = { "x",         "w",         "r", "b", "sequence_lens",
		                             "initial_h", "initial_c", "p" };
	struct ir_rnn c;
	const struct ir_type *x = T(0), *r = T(2);
	int64_t t, b, in, h, d, g, want[8][3];
	int ranks[8] = { 3, 3, 3, 2, 1, 3, 3, 2 };
	tbuf s1, s2;
	if (!ir_rnn_cell(n, &c, err, errlen))
		return false;
	if (x->dtype != IR_F32 && x->dtype != IR_F16 && x->dtype != IR_BF16)
		FAIL("type %s is not supported (needs f32, f16 or bf16)", ir_dtype_name(x->dtype));
	if (x->rank != 3 || r->rank != 3)
		FAIL("x %s and r %s must be [seq, batch, input] and [directions, gates * hidden, "
		     "hidden]",
		     TS(x, s1), TS(r, s2));
	t = x->dims[0], b = x->dims[1], in = x->dims[2], h = r->dims[2], d = c.dirs, g = c.gates;
	if (h <= 0)
		FAIL("hidden size %lld must be positive", (long long)h);
	memcpy(want,
	       (int64_t[8][3]){ { t, b, in },
	                        { d, g * h, in },
	                        { d, g * h, h },
	                        { d, 2 * g * h },
	                        { b },
	                        { d, b, h },
	                        { d, b, h },
	                        { d, 3 * h } },
	       sizeof want);
	for (int i = 1; i < n->nin; i++) {
		enum ir_dtype dt = i == 4 ? IR_I32 : x->dtype;
		if (!rnn_shape(n, i, dt, ranks[i], want[i])) {
			struct ir_type w = { .dtype = dt, .rank = ranks[i] };
			memcpy(w.dims, want[i], sizeof(int64_t) * (size_t)ranks[i]);
			FAIL("%s %s must be %s", names[i], TS(T(i), s1), TS(&w, s2));
		}
	}
	out[0] = (struct ir_type){ .dtype = x->dtype, .rank = 4, .dims = { t, d, b, h } };
	for (int k = 1; k < n->nout; k++)
		out[k] = (struct ir_type){ .dtype = x->dtype, .rank = 3, .dims = { d, b, h } };
	return true;
}

/* q, k, v and the mask (NULL: none) of an attention or attention_grad node. */
static bool attention_operands(const struct ir_node *n, const struct ir_type *q,
                               const struct ir_type *k, const struct ir_type *v,
                               const struct ir_type *m, char *err, size_t errlen)
{
	int64_t causal = ir_attr_i(n, "causal");
	double scale = ir_attr_f(n, "scale"), cap = ir_attr_f(n, "softcap");
	tbuf s1, s2, s3;
	if (q->dtype != IR_F32 && q->dtype != IR_F16 && q->dtype != IR_BF16)
		FAIL("type %s is not supported (needs f32, f16 or bf16)", ir_dtype_name(q->dtype));
	if (k->dtype != q->dtype || v->dtype != q->dtype)
		FAIL("q, k and v differ in type: %s, %s and %s", ir_dtype_name(q->dtype),
		     ir_dtype_name(k->dtype), ir_dtype_name(v->dtype));
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		FAIL("q, k and v must be [batch, heads, sequence, head size], not %s, %s and %s",
		     TS(q, s1), TS(k, s2), TS(v, s3));
	if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] || k->dims[3] != q->dims[3] ||
	    v->dims[1] != k->dims[1] || v->dims[2] != k->dims[2])
		FAIL("k %s and v %s do not fit q %s: [B, Hkv, Lk, dk] and [B, Hkv, Lk, dv] against "
		     "[B, Hq, Lq, dk]",
		     TS(k, s1), TS(v, s2), TS(q, s3));
	if (k->dims[1] <= 0 || q->dims[1] % k->dims[1])
		FAIL("q's %lld heads are not a multiple of k's %lld", (long long)q->dims[1],
		     (long long)k->dims[1]);
	if (q->dims[3] <= 0 || v->dims[3] <= 0)
		FAIL("head sizes must be positive");
	if (causal != 0 && causal != 1)
		FAIL("causal must be 0 or 1");
	if (!causal && ir_attr_i(n, "causal_offset"))
		FAIL("causal_offset must be 0 when causal is 0");
	if (!isfinite(scale) || !(cap >= 0) || !isfinite(cap))
		FAIL("scale must be finite and softcap finite and >= 0");
	if (m) {
		const int64_t full[4] = { q->dims[0], q->dims[1], q->dims[2], k->dims[2] };
		if (m->dtype != IR_BOOL && m->dtype != q->dtype && m->dtype != IR_F32)
			FAIL("mask type %s must be bool, %s or f32", ir_dtype_name(m->dtype),
			     ir_dtype_name(q->dtype));
		if (m->rank > 4)
			FAIL("mask %s has rank above 4", TS(m, s1));
		for (int d = 0; d < m->rank; d++) {
			int64_t want = full[4 - m->rank + d];
			if (m->dims[d] != 1 && m->dims[d] != want)
				FAIL("mask %s does not broadcast to [%lld, %lld, %lld, %lld]",
				     TS(m, s1), (long long)full[0], (long long)full[1],
				     (long long)full[2], (long long)full[3]);
		}
	}
	return true;
}

/*
 * attention: q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv] of
 * one float type, Hq a multiple of Hkv; the optional mask is bool (true:
 * attend) or a bias of q's type or f32, of rank <= 4, broadcastable to
 * [B, Hq, Lq, Lk]. Results: y [B, Hq, Lq, dv] of q's type and, when asked
 * for, the f32 log-sum-exp [B, Hq, Lq].
 */
bool ir_infer_attention(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *q = T(0);
	if (!attention_operands(n, q, T(1), T(2), n->nin == 4 ? T(3) : NULL, err, errlen))
		return false;
	out[0] = (struct ir_type){ .dtype = q->dtype,
		                   .rank = 4,
		                   .dims = { q->dims[0], q->dims[1], q->dims[2], T(2)->dims[3] } };
	if (n->nout == 2)
		out[1] = (struct ir_type){ .dtype = IR_F32,
			                   .rank = 3,
			                   .dims = { q->dims[0], q->dims[1], q->dims[2] } };
	return true;
}

/*
 * attention_grad(q, k, v, y, lse, dy[, mask]): the forward's operands, its
 * results y (q's type) and lse (f32) and the gradient dy of y; results dq,
 * dk, dv of q's, k's and v's types.
 */
bool ir_infer_attention_grad(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *q = T(0);
	struct ir_type y, lse;
	tbuf s1, s2;
	if (!attention_operands(n, q, T(1), T(2), n->nin == 7 ? T(6) : NULL, err, errlen))
		return false;
	y = (struct ir_type){ .dtype = q->dtype,
		              .rank = 4,
		              .dims = { q->dims[0], q->dims[1], q->dims[2], T(2)->dims[3] } };
	lse = (struct ir_type){ .dtype = IR_F32,
		                .rank = 3,
		                .dims = { q->dims[0], q->dims[1], q->dims[2] } };
	if (!ir_type_eq(T(3), &y) || !ir_type_eq(T(5), &y))
		FAIL("y %s and dy %s must be %s", TS(T(3), s1), TS(T(5), s2), TS(&y, s1));
	if (!ir_type_eq(T(4), &lse))
		FAIL("lse %s must be %s", TS(T(4), s1), TS(&lse, s2));
	out[0] = *q;
	out[1] = *T(1);
	out[2] = *T(2);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

bool ir_infer_reshape(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c;
	const int64_t *shape = ir_attr_ints(n, "shape", &c);
	tbuf s1, s2;
	if (c > IR_MAX_RANK)
		FAIL("rank %d exceeds the maximum %d", c, IR_MAX_RANK);
	out[0] = (struct ir_type){ .dtype = T(0)->dtype, .rank = c };
	for (int i = 0; i < c; i++) {
		if (shape[i] < 0)
			FAIL("shape has negative dimension %lld", (long long)shape[i]);
		out[0].dims[i] = shape[i];
	}
	if (ir_type_elems(&out[0]) != ir_type_elems(T(0)))
		FAIL("cannot reshape %s to %s", TS(T(0), s1), TS(&out[0], s2));
	return true;
}

/* bitcast: the same bytes as another type of their size; onnxc's bool holds
 * only 0 and 1, which the bytes of another type need not be */
bool ir_infer_bitcast(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	enum ir_dtype to = ir_attr_t(n, "to"), from = T(0)->dtype;
	if (to <= IR_DT_NONE || to >= IR_DTYPE_COUNT)
		FAIL("invalid target type");
	if (ir_dtype_size(to) != ir_dtype_size(from))
		FAIL("cannot reinterpret %s (%d bytes) as %s (%d bytes)", ir_dtype_name(from),
		     ir_dtype_size(from), ir_dtype_name(to), ir_dtype_size(to));
	if (to == IR_BOOL && from != IR_BOOL)
		FAIL("cannot reinterpret %s as bool: a bool holds only the bytes 0 and 1",
		     ir_dtype_name(from));
	out[0] = *T(0);
	out[0].dtype = to;
	return true;
}

bool ir_infer_transpose(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c;
	const int64_t *perm = ir_attr_ints(n, "perm", &c);
	bool seen[IR_MAX_RANK] = { 0 };
	if (c != T(0)->rank)
		FAIL("perm has %d entries for rank %d", c, T(0)->rank);
	out[0] = *T(0);
	for (int i = 0; i < c; i++) {
		if (perm[i] < 0 || perm[i] >= c || seen[perm[i]])
			FAIL("perm is not a permutation of 0..%d", c - 1);
		seen[perm[i]] = true;
		out[0].dims[i] = T(0)->dims[perm[i]];
	}
	return true;
}

bool ir_infer_concat(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int64_t axis = ir_attr_i(n, "axis");
	const struct ir_type *x = T(0);
	tbuf s1, s2;
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	out[0] = *x;
	for (int i = 1; i < n->nin; i++) {
		const struct ir_type *y = T(i);
		bool ok = y->dtype == x->dtype && y->rank == x->rank;
		for (int d = 0; ok && d < x->rank; d++)
			ok = d == axis || y->dims[d] == x->dims[d];
		if (!ok)
			FAIL("input %d %s does not match input 0 %s outside axis %lld", i,
			     TS(y, s1), TS(x, s2), (long long)axis);
		if (__builtin_add_overflow(out[0].dims[axis], y->dims[axis], &out[0].dims[axis]))
			FAIL("dimension overflow");
	}
	return true;
}

bool ir_infer_split(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int64_t axis = ir_attr_i(n, "axis"), sum = 0;
	int c;
	const int64_t *split = ir_attr_ints(n, "split", &c);
	if (axis < 0 || axis >= T(0)->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, T(0)->rank);
	if (c != n->nout)
		FAIL("split has %d sizes for %d outputs", c, n->nout);
	for (int i = 0; i < c; i++) {
		if (split[i] < 0)
			FAIL("negative split size");
		if (__builtin_add_overflow(sum, split[i], &sum))
			FAIL("split sizes overflow");
		out[i] = *T(0);
		out[i].dims[axis] = split[i];
	}
	if (sum != T(0)->dims[axis])
		FAIL("split sizes add up to %lld, not the dimension %lld", (long long)sum,
		     (long long)T(0)->dims[axis]);
	return true;
}

bool ir_infer_slice(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c1, c2, c3, r = T(0)->rank;
	const int64_t *st = ir_attr_ints(n, "starts", &c1), *en = ir_attr_ints(n, "ends", &c2),
	              *sp = ir_attr_ints(n, "steps", &c3);
	if (c1 != r || c2 != r || c3 != r)
		FAIL("starts, ends and steps must have one entry per dimension (%d)", r);
	out[0] = *T(0);
	for (int i = 0; i < r; i++) {
		int64_t d = T(0)->dims[i], cnt;
		if (sp[i] > 0) {
			if (st[i] < 0 || st[i] > d || en[i] < st[i] || en[i] > d)
				FAIL("dim %d: range [%lld,%lld) is not normalized for size %lld", i,
				     (long long)st[i], (long long)en[i], (long long)d);
			/* the range is within [0, d]: no overflow, and (diff-1)/step
			 * cannot overflow for any step */
			cnt = en[i] == st[i] ? 0 : (en[i] - st[i] - 1) / sp[i] + 1;
		} else if (sp[i] < 0) {
			if (st[i] < -1 || st[i] >= d || en[i] < -1 || en[i] > st[i])
				FAIL("dim %d: range [%lld,%lld) is not normalized for size %lld", i,
				     (long long)st[i], (long long)en[i], (long long)d);
			int64_t diff = st[i] - en[i];
			/* -step overflows for INT64_MIN: any step beyond the range takes 1 */
			cnt = diff == 0 ? 0 : sp[i] < -diff ? 1 : (diff - 1) / -sp[i] + 1;
		} else {
			FAIL("step must not be zero");
		}
		out[0].dims[i] = cnt;
	}
	return true;
}

void ir_slice_view(const struct ir_node *n, int64_t *offset, int64_t *strides)
{
	const struct ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
	const int64_t *starts = ir_attr_ints(n, "starts", NULL),
	              *steps = ir_attr_ints(n, "steps", NULL);
	int64_t s = 1;
	*offset = 0;
	for (int i = x->rank - 1; i >= 0; i--) {
		/* more than one element taken: |step| < dim, so step * s fits */
		strides[i] = y->dims[i] > 1 ? steps[i] * s : 0;
		if (y->dims[i] > 0)
			*offset += starts[i] * s;
		s *= x->dims[i];
	}
}

bool ir_infer_gather(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0), *idx = T(1);
	int64_t axis = ir_attr_i(n, "axis");
	if (idx->dtype != IR_I32 && idx->dtype != IR_I64)
		FAIL("indices must be i32 or i64, not %s", ir_dtype_name(idx->dtype));
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	if (x->rank - 1 + idx->rank > IR_MAX_RANK)
		FAIL("result rank exceeds %d", IR_MAX_RANK);
	out[0] = (struct ir_type){ .dtype = x->dtype };
	for (int i = 0; i < axis; i++)
		out[0].dims[out[0].rank++] = x->dims[i];
	for (int i = 0; i < idx->rank; i++)
		out[0].dims[out[0].rank++] = idx->dims[i];
	for (int i = (int)axis + 1; i < x->rank; i++)
		out[0].dims[out[0].rank++] = x->dims[i];
	if (x->dims[axis] == 0 && ir_type_elems(idx) > 0)
		FAIL("gathering from an empty axis");
	return true;
}

/* GatherElements' and ScatterElements' shared checks: integer indices of
 * the data's rank, an axis inside it. */
static bool elements_indices(const struct ir_node *n, char *err, size_t errlen)
{
	const struct ir_type *x = T(0), *idx = T(1);
	int64_t axis = ir_attr_i(n, "axis");
	if (idx->dtype != IR_I32 && idx->dtype != IR_I64)
		FAIL("indices must be i32 or i64, not %s", ir_dtype_name(idx->dtype));
	if (axis < 0 || axis >= x->rank)
		FAIL("axis %lld out of range for rank %d", (long long)axis, x->rank);
	if (idx->rank != x->rank)
		FAIL("indices must have the rank of the data (%d)", x->rank);
	return true;
}

bool ir_infer_gather_elements(const struct ir_node *n, struct ir_type *out, char *err,
                              size_t errlen)
{
	const struct ir_type *x = T(0), *idx = T(1);
	if (!elements_indices(n, err, errlen))
		return false;
	out[0] = *idx;
	out[0].dtype = x->dtype;
	return true;
}

/*
 * ScatterElements: the data with updates written (or combined) at the
 * positions indices name along axis; updates has the shape of indices,
 * which may be smaller than the data outside the axis.
 */
bool ir_infer_scatter_elements(const struct ir_node *n, struct ir_type *out, char *err,
                               size_t errlen)
{
	const struct ir_type *x = T(0), *idx = T(1), *u = T(2);
	int64_t axis = ir_attr_i(n, "axis");
	const char *red = ir_attr_s(n, "reduction");
	tbuf s1, s2;
	if (!elements_indices(n, err, errlen))
		return false;
	if (u->dtype != x->dtype)
		FAIL("updates are %s but the data is %s", ir_dtype_name(u->dtype),
		     ir_dtype_name(x->dtype));
	if (u->rank != idx->rank || memcmp(u->dims, idx->dims, sizeof(int64_t) * (size_t)u->rank))
		FAIL("updates %s must have the shape of indices %s", TS(u, s1), TS(idx, s2));
	for (int i = 0; i < x->rank; i++)
		if (i != axis && idx->dims[i] > x->dims[i])
			FAIL("indices %s exceed the data %s in dimension %d", TS(idx, s1),
			     TS(x, s2), i);
	if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") &&
	    strcmp(red, "min"))
		FAIL("unknown reduction '%s' (none, add, mul, max, min)", red);
	if (strcmp(red, "none") && x->dtype == IR_BOOL)
		FAIL("reduction '%s' on bool data", red);
	if (x->dims[axis] == 0 && ir_type_elems(idx) > 0)
		FAIL("scattering into an empty axis");
	out[0] = *x;
	return true;
}

bool ir_infer_expand(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c;
	const int64_t *shape = ir_attr_ints(n, "shape", &c);
	struct ir_type s = { .dtype = T(0)->dtype, .rank = c }, r;
	tbuf s1, s2;
	if (c > IR_MAX_RANK)
		FAIL("rank %d exceeds the maximum %d", c, IR_MAX_RANK);
	for (int i = 0; i < c; i++) {
		if (shape[i] < 0)
			FAIL("negative dimension in shape");
		s.dims[i] = shape[i];
	}
	if (!ir_broadcast(T(0), &s, &r) || !ir_type_eq(&r, &s))
		FAIL("%s does not broadcast to %s", TS(T(0), s1), TS(&s, s2));
	out[0] = s;
	return true;
}

bool ir_infer_tile(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c;
	const int64_t *rep = ir_attr_ints(n, "repeats", &c);
	if (c != T(0)->rank)
		FAIL("repeats has %d entries for rank %d", c, T(0)->rank);
	out[0] = *T(0);
	for (int i = 0; i < c; i++) {
		if (rep[i] < 0)
			FAIL("negative repeat count");
		if (__builtin_mul_overflow(T(0)->dims[i], rep[i], &out[0].dims[i]))
			FAIL("dimension overflow");
	}
	return true;
}

bool ir_infer_pad(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	int c, r = T(0)->rank;
	const int64_t *pads = ir_attr_ints(n, "pads", &c);
	const char *mode = ir_attr_s(n, "mode");
	if (c != 2 * r)
		FAIL("pads has %d entries for rank %d", c, r);
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
	    strcmp(mode, "wrap"))
		FAIL("mode '%s' is not one of constant, reflect, edge, wrap", mode);
	out[0] = *T(0);
	for (int i = 0; i < r; i++) {
		int64_t d = T(0)->dims[i];
		if (__builtin_add_overflow(d, pads[i], &d) ||
		    __builtin_add_overflow(d, pads[r + i], &d))
			FAIL("dimension overflow");
		if (d < 0)
			FAIL("pads remove more than dimension %d holds", i);
		if (strcmp(mode, "constant") && (pads[i] < 0 || pads[r + i] < 0))
			FAIL("negative pads need mode constant");
		if (!strcmp(mode, "reflect") &&
		    (pads[i] >= T(0)->dims[i] || pads[r + i] >= T(0)->dims[i]))
			FAIL("reflect pads must be smaller than dimension %d", i);
		if ((!strcmp(mode, "edge") || !strcmp(mode, "wrap")) && T(0)->dims[i] == 0 &&
		    (pads[i] || pads[r + i]))
			FAIL("%s padding of an empty dimension", mode);
		out[0].dims[i] = d;
	}
	return true;
}

bool ir_infer_depth_to_space(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int64_t b = ir_attr_i(n, "blocksize"), bb;
	const char *mode = ir_attr_s(n, "mode");
	if (x->rank != 4)
		FAIL("input must be [N,C,H,W]");
	if (b < 1 || __builtin_mul_overflow(b, b, &bb) || x->dims[1] % bb)
		FAIL("blocksize %lld squared does not divide %lld channels", (long long)b,
		     (long long)x->dims[1]);
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
		FAIL("mode must be DCR or CRD");
	out[0] = *x;
	out[0].dims[1] /= bb;
	if (__builtin_mul_overflow(x->dims[2], b, &out[0].dims[2]) ||
	    __builtin_mul_overflow(x->dims[3], b, &out[0].dims[3]))
		FAIL("output size overflows");
	return true;
}

bool ir_infer_space_to_depth(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	const struct ir_type *x = T(0);
	int64_t b = ir_attr_i(n, "blocksize"), bb;
	if (x->rank != 4)
		FAIL("input must be [N,C,H,W]");
	if (b < 1 || x->dims[2] % b || x->dims[3] % b)
		FAIL("blocksize %lld does not divide the spatial size", (long long)b);
	out[0] = *x;
	if (__builtin_mul_overflow(b, b, &bb) ||
	    __builtin_mul_overflow(x->dims[1], bb, &out[0].dims[1]))
		FAIL("output channels overflow");
	out[0].dims[2] /= b;
	out[0].dims[3] /= b;
	return true;
}

static bool one_of(const char *s, const char *const *opts)
{
	for (; *opts; opts++)
		if (!strcmp(s, *opts))
			return true;
	return false;
}

bool ir_infer_resize(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen)
{
	static const char *const modes[] = { "nearest", "linear", "cubic", NULL };
	static const char *const coords[] = { "half_pixel",
		                              "half_pixel_symmetric",
		                              "pytorch_half_pixel",
		                              "align_corners",
		                              "asymmetric",
		                              "tf_crop_and_resize",
		                              NULL };
	static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
		                                "ceil", NULL };
	const struct ir_type *x = T(0);
	int cs, cz, cr;
	const int64_t *sizes = ir_attr_ints(n, "sizes", &cz);
	ir_attr_floats(n, "scales", &cs);
	ir_attr_floats(n, "roi", &cr);
	if (!is_float(x->dtype))
		FAIL("type %s is not supported (needs a float type)", ir_dtype_name(x->dtype));
	if (!one_of(ir_attr_s(n, "mode"), modes))
		FAIL("unknown mode '%s'", ir_attr_s(n, "mode"));
	if (!one_of(ir_attr_s(n, "coord"), coords))
		FAIL("unknown coordinate transformation '%s'", ir_attr_s(n, "coord"));
	if (!one_of(ir_attr_s(n, "nearest"), nearests))
		FAIL("unknown nearest mode '%s'", ir_attr_s(n, "nearest"));
	if ((cs != 0 && cs != x->rank) || cz != x->rank || (cr != 0 && cr != 2 * x->rank))
		FAIL("sizes needs one entry per dimension, scales none or one, roi none or two");
	out[0] = *x;
	for (int i = 0; i < x->rank; i++) {
		if (sizes[i] < 0)
			FAIL("negative output size");
		out[0].dims[i] = sizes[i];
	}
	return true;
}
