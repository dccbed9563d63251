/*
 * ops_shape.c - importers for constants, shape queries and data movement.
 *
 * This is where dynamic-looking ONNX becomes static IR. Shape and Size turn
 * into constants (every input shape is bound), ConstantOfShape and Range
 * are evaluated here, and every shape-valued operand (Reshape's shape,
 * Slice's starts/ends, Squeeze's axes, Expand's shape, Tile's repeats, Pad's
 * pads, Resize's scales/sizes) must be a constant by the time its node is
 * reached - folding upstream guarantees that for exporters' shape chains -
 * and becomes a resolved attribute. Squeeze, Unsqueeze and Flatten become
 * reshape.
 */
#include "fe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Constants and shape queries                                              */
/* ------------------------------------------------------------------------ */

static bool imp_constant(struct fe_node *nd)
{
	static const char *const kinds[] = { "value",         "value_float", "value_floats",
		                             "value_int",     "value_ints",  "value_string",
		                             "value_strings", "sparse_value" };
	int found = 0, which = -1;
	struct ir_value *v = NULL;
	for (int i = 0; i < 8; i++)
		if (fe_has(nd, kinds[i])) {
			found++;
			which = i;
		}
	if (found != 1)
		return fe_fail(nd, "needs exactly one value attribute, has %d", found);
	if (!fe_inputs(nd, 0, 0))
		return false;
	switch (which) {
	case 0: {
		const Onnx__TensorProto *t = fe_tensor_attr(nd, "value");
		char *who;
		if (!t)
			return false;
		who = ir_arena_printf(&nd->fe->m->arena, "node '%s' (Constant): attribute 'value'",
		                      nd->name);
		v = fe_tensor_const(nd->fe, t, fe_out_name(nd, 0), who);
		if (!v) {
			nd->failed = true;
			return false;
		}
		break;
	}
	case 1: {
		float f = fe_float(nd, "value_float", 0);
		struct ir_type t = { .dtype = IR_F32 };
		if (nd->failed)
			return false;
		v = fe_const(nd, 0, &t, &f);
		break;
	}
	case 2: {
		const float *f;
		int n = fe_floats(nd, "value_floats", &f);
		struct ir_type t = { .dtype = IR_F32, .rank = 1, .dims = { n } };
		if (n < 0)
			return false;
		v = fe_const(nd, 0, &t, f);
		break;
	}
	case 3: {
		int64_t i = fe_int(nd, "value_int", 0);
		struct ir_type t = { .dtype = IR_I64 };
		if (nd->failed)
			return false;
		v = fe_const(nd, 0, &t, &i);
		break;
	}
	case 4: {
		const int64_t *i;
		int n = fe_ints(nd, "value_ints", &i);
		struct ir_type t = { .dtype = IR_I64, .rank = 1, .dims = { n } };
		if (n < 0)
			return false;
		v = fe_const(nd, 0, &t, i);
		break;
	}
	default:
		fe_ignore(nd, kinds[which]);
		return fe_fail(nd, "%s is not supported (onnxc has no string or sparse tensors)",
		               kinds[which]);
	}
	return bind1(nd, v);
}

static bool imp_shape(struct fe_node *nd)
{
	const struct ir_type *x;
	int64_t start = 0, end, dims[IR_MAX_RANK];
	int rank, n = 0;
	struct ir_type t = { .dtype = IR_I64, .rank = 1 };
	if (!fe_inputs(nd, 1, 1))
		return false;
	x = &nd->in[0]->type;
	rank = x->rank;
	end = rank;
	if (nd->opset >= 15) {
		start = fe_int(nd, "start", 0);
		end = fe_int(nd, "end", rank);
		if (nd->failed)
			return false;
		if (start < 0)
			start += rank;
		if (end < 0)
			end += rank;
		start = start < 0 ? 0 : start > rank ? rank : start;
		end = end < 0 ? 0 : end > rank ? rank : end;
	}
	for (int64_t i = start; i < end; i++)
		dims[n++] = x->dims[i];
	t.dims[0] = n;
	return bind1(nd, fe_const(nd, 0, &t, dims));
}

static bool imp_size(struct fe_node *nd)
{
	struct ir_type t = { .dtype = IR_I64 };
	int64_t n;
	if (!fe_inputs(nd, 1, 1))
		return false;
	n = ir_type_elems(&nd->in[0]->type);
	return bind1(nd, fe_const(nd, 0, &t, &n));
}

/* Reads a shape operand (1-D constant of non-negative ints). */
static int shape_input(struct fe_node *nd, int i, const char *what, int64_t *dims)
{
	int64_t *v;
	int n = fe_const_ints(nd, i, what, &v);
	if (n < 0)
		return -1;
	if (fe_in(nd, i)->type.rank != 1)
		return fe_fail(nd, "%s must be 1-D", what), -1;
	if (n > IR_MAX_RANK)
		return fe_fail(nd, "%s has %d entries; onnxc supports rank up to %d", what, n,
		               IR_MAX_RANK),
		       -1;
	memcpy(dims, v, sizeof *v * (size_t)n);
	return n;
}

static bool imp_constant_of_shape(struct fe_node *nd)
{
	const Onnx__TensorProto *val = fe_tensor_attr(nd, "value");
	struct ir_type t = { .dtype = IR_F32 };
	unsigned char one[8] = { 0 };
	struct ir_value *c = NULL;
	void *data;
	int64_t n;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (val) {
		char *who = ir_arena_printf(&nd->fe->m->arena,
		                            "node '%s' (ConstantOfShape): "
		                            "attribute 'value'",
		                            nd->name);
		c = fe_tensor_const(nd->fe, val, fe_tmp_name(nd, "value"), who);
		if (!c)
			return nd->failed = true, false;
		if (ir_type_elems(&c->type) != 1)
			return fe_fail(nd, "attribute 'value' must hold one element");
		t.dtype = c->type.dtype;
		memcpy(one, c->data, (size_t)ir_dtype_size(t.dtype));
	}
	if ((t.rank = shape_input(nd, 0, "shape", t.dims)) < 0)
		return false;
	for (int i = 0; i < t.rank; i++)
		if (t.dims[i] < 0)
			return fe_fail(nd, "negative dimension %lld", (long long)t.dims[i]);
	if (ir_type_elems(&t) < 0)
		return fe_fail(nd,
		               "the result would have more elements than a 64-bit size can count");
	if (c && c->nuses == 0)
		ir_kill_value(nd->fe->m, c);
	n = ir_type_elems(&t);
	if (!fe_fold_ok(nd->fe, n)) {
		/* beyond the folding budget: the value broadcast at run time */
		struct ir_type st = { .dtype = t.dtype };
		struct ir_value *x = fe_const(nd, -1, &st, one);
		const char *name = fe_out_name(nd, 0);
		struct ir_node *e = fe_emit(nd, IR_OP_EXPAND, &x, 1, &name, 1);
		ir_set_ints(nd->fe->m, e, "shape", t.dims, t.rank);
		return fe_finish(nd, e) && bind1(nd, e->out[0]);
	}
	if (!fe_check_const_size(nd, &t))
		return false;
	data = ir_arena_alloc_big(&nd->fe->m->arena,
	                          (size_t)(n ? n : 1) * (size_t)ir_dtype_size(t.dtype));
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)data + i * ir_dtype_size(t.dtype), one,
		       (size_t)ir_dtype_size(t.dtype));
	return bind1(nd, fe_const(nd, 0, &t, data));
}

/*
 * A Range beyond the folding budget, computed at run time: the indices
 * 0..n-1 as an exclusive cumulative sum of ones (int64), then start +
 * i * delta - in T for floats, in int64 then cast for integers (every
 * value lies between start and limit, so the cast is exact).
 */
static bool range_at_run_time(struct fe_node *nd, const struct ir_type *t)
{
	struct fe *fe = nd->fe;
	struct ir_type one_t = { .dtype = IR_I64 };
	const int64_t one = 1;
	bool flt = ir_dtypes[t->dtype].is_float;
	struct ir_value *x, *s = nd->in[0], *d = nd->in[2];
	const char *name = fe_tmp_name(nd, "iota");
	struct ir_node *e;
	x = fe_const(nd, -1, &one_t, &one);
	e = fe_emit(nd, IR_OP_EXPAND, &x, 1, NULL, 1);
	ir_set_ints(fe->m, e, "shape", t->dims, 1);
	if (!fe_finish(nd, e))
		return false;
	x = e->out[0];
	e = fe_emit(nd, IR_OP_CUMSUM, &x, 1, &name, 1);
	ir_set_i(fe->m, e, "axis", 0);
	ir_set_i(fe->m, e, "exclusive", 1);
	ir_set_i(fe->m, e, "reverse", 0);
	if (!fe_finish(nd, e))
		return false;
	x = e->out[0];
	if (flt) {
		e = fe_emit(nd, IR_OP_CAST, &x, 1, NULL, 1);
		ir_set_t(fe->m, e, "to", t->dtype);
		if (!fe_finish(nd, e))
			return false;
		x = e->out[0];
	} else {
		int64_t sv = ir_load_i64(t->dtype, s->data, 0),
		        dv = ir_load_i64(t->dtype, d->data, 0);
		s = fe_const(nd, -1, &one_t, &sv);
		d = fe_const(nd, -1, &one_t, &dv);
	}
	{
		struct ir_value *md[2] = { x, d }, *as[2] = { NULL, s };
		bool last = flt || t->dtype == IR_I64;
		if (!(as[0] = fe_simple(nd, IR_OP_MUL, md, 2, -1)) ||
		    !(x = fe_simple(nd, IR_OP_ADD, as, 2, last ? 0 : -1)))
			return false;
	}
	if (!flt && t->dtype != IR_I64) {
		name = fe_out_name(nd, 0);
		e = fe_emit(nd, IR_OP_CAST, &x, 1, &name, 1);
		ir_set_t(fe->m, e, "to", t->dtype);
		if (!fe_finish(nd, e))
			return false;
		x = e->out[0];
	}
	return bind1(nd, x);
}

static bool imp_range(struct fe_node *nd)
{
	struct ir_type t = { .rank = 1 };
	void *data;
	int64_t n;
	if (!fe_inputs(nd, 3, 3))
		return false;
	t.dtype = nd->in[0]->type.dtype;
	for (int i = 0; i < 3; i++) /* all three, so each is reported */
		fe_need_const(nd, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
	if (nd->failed)
		return false;
	for (int i = 0; i < 3; i++) {
		if (nd->in[i]->type.dtype != t.dtype || ir_type_elems(&nd->in[i]->type) != 1)
			return fe_fail(nd, "start, limit and delta must be scalars of one type");
	}
	if (ir_dtypes[t.dtype].is_float) {
		double s = ir_load_f64(t.dtype, nd->in[0]->data, 0),
		       l = ir_load_f64(t.dtype, nd->in[1]->data, 0),
		       d = ir_load_f64(t.dtype, nd->in[2]->data, 0);
		double c = d != 0 ? ceil((l - s) / d) : NAN;
		if (!(c == c) || c > 9e15)
			return fe_fail(nd, "delta is zero or the range is too long");
		n = c > 0 ? (int64_t)c : 0;
		t.dims[0] = n;
		if (!fe_fold_ok(nd->fe, n))
			return range_at_run_time(nd, &t);
		if (!fe_check_const_size(nd, &t))
			return false;
		data = ir_arena_alloc_big(&nd->fe->m->arena,
		                          (size_t)(n ? n : 1) * (size_t)ir_dtype_size(t.dtype));
		for (int64_t i = 0; i < n; i++)
			ir_store_f64(t.dtype, data, (size_t)i, s + (double)i * d);
	} else if (ir_dtypes[t.dtype].is_int) {
		int64_t s = ir_load_i64(t.dtype, nd->in[0]->data, 0),
		        l = ir_load_i64(t.dtype, nd->in[1]->data, 0),
		        d = ir_load_i64(t.dtype, nd->in[2]->data, 0);
		__int128 span = (__int128)l - s;
		if (d == 0)
			return fe_fail(nd, "delta is zero");
		span = (span + (d > 0 ? d - 1 : d + 1)) / d;
		if (span > ((__int128)1 << 40))
			return fe_fail(nd, "the range is too long");
		n = span > 0 ? (int64_t)span : 0;
		t.dims[0] = n;
		if (!fe_fold_ok(nd->fe, n))
			return range_at_run_time(nd, &t);
		if (!fe_check_const_size(nd, &t))
			return false;
		data = ir_arena_alloc_big(&nd->fe->m->arena,
		                          (size_t)(n ? n : 1) * (size_t)ir_dtype_size(t.dtype));
		for (int64_t i = 0; i < n; i++)
			/* in uint64: s + i * d lies between start and limit, so
			 * the wrapped sum is exact where int64 could overflow */
			ir_store_i64(t.dtype, data, (size_t)i,
			             (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d));
	} else {
		return fe_fail(nd, "type %s is not supported", ir_dtype_name(t.dtype));
	}
	return bind1(nd, fe_const(nd, 0, &t, data));
}

/* ------------------------------------------------------------------------ */
/* Reshape family                                                           */
/* ------------------------------------------------------------------------ */

static bool imp_reshape(struct fe_node *nd)
{
	int64_t dims[IR_MAX_RANK], known = 1, allowzero = 0;
	int n, infer = -1;
	const struct ir_type *x;
	if (nd->opset >= 14)
		allowzero = fe_int(nd, "allowzero", 0);
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	x = &nd->in[0]->type;
	if ((n = shape_input(nd, 1, "shape", dims)) < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (dims[i] == 0 && !allowzero) {
			if (i >= x->rank)
				return fe_fail(
				        nd,
				        "shape[%d] = 0 copies a dimension the input (rank %d) does "
				        "not have",
				        i, x->rank);
			dims[i] = x->dims[i];
		}
		if (dims[i] == -1) {
			if (infer >= 0)
				return fe_fail(nd, "shape has more than one -1");
			infer = i;
			continue;
		}
		if (dims[i] < 0)
			return fe_fail(nd, "shape has negative dimension %lld", (long long)dims[i]);
		if (__builtin_mul_overflow(known, dims[i], &known))
			return fe_fail(nd, "shape overflows");
	}
	if (infer >= 0) {
		int64_t total = ir_type_elems(x);
		if (known == 0 || total % known)
			return fe_fail(nd,
			               "cannot reshape %lld elements into a shape with -1 and %lld "
			               "other elements",
			               (long long)total, (long long)known);
		dims[infer] = total / known;
	}
	return bind1(nd, fe_reshape(nd, nd->in[0], dims, n, 0));
}

static bool imp_flatten(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 1), d2[2] = { 1, 1 };
	const struct ir_type *x;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	x = &nd->in[0]->type;
	if (axis == x->rank)
		axis = x->rank; /* all dims go to the first factor */
	else if ((axis = fe_axis(nd, axis, x->rank, "axis")) < 0)
		return false;
	for (int i = 0; i < x->rank; i++)
		d2[i >= axis] *= x->dims[i];
	return bind1(nd, fe_reshape(nd, nd->in[0], d2, 2, 0));
}

/* Squeeze / Unsqueeze axes: attribute before opset 13, input after. */
static int read_axes(struct fe_node *nd, int64_t *axes, int max)
{
	if (nd->opset >= 13) {
		int64_t *v;
		int n;
		if (!fe_in(nd, 1))
			return 0;
		n = fe_const_ints(nd, 1, "axes", &v);
		if (n > max)
			return fe_fail(nd, "too many axes (%d)", n), -1;
		if (n > 0)
			memcpy(axes, v, sizeof *v * (size_t)n);
		return n;
	} else {
		const int64_t *v;
		int n = fe_ints(nd, "axes", &v);
		if (n > max)
			return fe_fail(nd, "too many axes (%d)", n), -1;
		if (n > 0)
			memcpy(axes, v, sizeof *v * (size_t)n);
		return nd->failed ? -1 : n < 0 ? 0 : n;
	}
}

static bool imp_squeeze(struct fe_node *nd)
{
	int64_t axes[IR_MAX_RANK], dims[IR_MAX_RANK];
	const struct ir_type *x;
	bool drop[IR_MAX_RANK] = { 0 };
	int n, r = 0;
	if (!fe_inputs(nd, 1, nd->opset >= 13 ? 2 : 1))
		return false;
	x = &nd->in[0]->type;
	if ((n = read_axes(nd, axes, IR_MAX_RANK)) < 0)
		return false;
	if (n == 0 && !(nd->opset >= 13 && fe_in(nd, 1))) {
		for (int i = 0; i < x->rank; i++)
			drop[i] = x->dims[i] == 1;
	} else {
		if ((n = fe_norm_axes(nd, axes, n, x->rank)) < 0)
			return false;
		for (int i = 0; i < n; i++) {
			if (x->dims[axes[i]] != 1)
				return fe_fail(nd, "cannot squeeze axis %lld of size %lld",
				               (long long)axes[i], (long long)x->dims[axes[i]]);
			drop[axes[i]] = true;
		}
	}
	for (int i = 0; i < x->rank; i++)
		if (!drop[i])
			dims[r++] = x->dims[i];
	return bind1(nd, fe_reshape(nd, nd->in[0], dims, r, 0));
}

static bool imp_unsqueeze(struct fe_node *nd)
{
	int64_t axes[IR_MAX_RANK], dims[IR_MAX_RANK];
	const struct ir_type *x;
	bool ins[IR_MAX_RANK] = { 0 };
	int n, r, k = 0;
	if (!fe_inputs(nd, nd->opset >= 13 ? 2 : 1, nd->opset >= 13 ? 2 : 1))
		return false;
	x = &nd->in[0]->type;
	if ((n = read_axes(nd, axes, IR_MAX_RANK)) < 0)
		return false;
	if (n == 0)
		return fe_fail(nd, "axes are required");
	r = x->rank + n;
	if (r > IR_MAX_RANK)
		return fe_fail(nd, "result rank %d exceeds %d", r, IR_MAX_RANK);
	if ((n = fe_norm_axes(nd, axes, n, r)) < 0)
		return false;
	for (int i = 0; i < n; i++)
		ins[axes[i]] = true;
	for (int i = 0; i < r; i++)
		dims[i] = ins[i] ? 1 : x->dims[k++];
	return bind1(nd, fe_reshape(nd, nd->in[0], dims, r, 0));
}

/* ------------------------------------------------------------------------ */
/* Transpose, Concat, Split, Slice                                          */
/* ------------------------------------------------------------------------ */

static bool imp_transpose(struct fe_node *nd)
{
	int64_t perm[IR_MAX_RANK];
	const int64_t *p;
	int rank, c;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 1, 1))
		return false;
	rank = nd->in[0]->type.rank;
	c = fe_ints(nd, "perm", &p);
	if (nd->failed)
		return false;
	if (c < 0) {
		for (int i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
	} else {
		if (c != rank)
			return fe_fail(nd, "perm has %d entries for rank %d", c, rank);
		memcpy(perm, p, sizeof *p * (size_t)c);
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_TRANSPOSE, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "perm", perm, rank);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_concat(struct fe_node *nd)
{
	int64_t axis;
	const char *name;
	struct ir_node *n;
	if (!fe_req_int(nd, "axis", &axis) || !fe_inputs(nd, 1, -1) || nd->failed)
		return false;
	for (int i = 0; i < nd->nin; i++)
		if (!nd->in[i])
			return fe_fail(nd, "input %d is empty", i);
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CONCAT, nd->in, nd->nin, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_split(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 0), *split, dim;
	int ns = -1;
	const char **names;
	struct ir_node *n;
	struct ir_arena *a = &nd->fe->m->arena;
	if (!fe_inputs(nd, 1, nd->opset >= 13 ? 2 : 1) || nd->failed)
		return false;
	if (nd->nout < 1)
		return fe_fail(nd, "has no outputs");
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	dim = nd->in[0]->type.dims[axis];
	if (nd->opset >= 13) {
		if (fe_in(nd, 1))
			ns = fe_const_ints(nd, 1, "split", &split);
	} else {
		const int64_t *v;
		ns = fe_ints(nd, "split", &v);
		if (ns >= 0) {
			split = ir_arena_alloc(a, sizeof *split * (size_t)(ns + 1));
			memcpy(split, v, sizeof *v * (size_t)ns);
		}
	}
	if (nd->version >= 18 && fe_has(nd, "num_outputs")) {
		/* equal chunks of ceil(dim / num_outputs), the last one smaller */
		int64_t k = fe_int(nd, "num_outputs", 0), chunk;
		if (nd->failed)
			return false;
		if (ns >= 0)
			return fe_fail(nd, "has both the split input and num_outputs");
		if (k != nd->nout)
			return fe_fail(nd, "num_outputs is %lld but the node has %d outputs",
			               (long long)k, nd->nout);
		chunk = dim / k + (dim % k != 0);
		if (dim - chunk * (k - 1) < 0)
			return fe_fail(nd,
			               "dimension %lld cannot be split into %lld chunks of %lld",
			               (long long)dim, (long long)k, (long long)chunk);
		ns = (int)k;
		split = ir_arena_alloc(a, sizeof *split * (size_t)ns);
		for (int i = 0; i < ns; i++)
			split[i] = i < ns - 1 ? chunk : dim - chunk * (k - 1);
	}
	if (nd->failed)
		return false;
	if (ns < 0) {
		if (dim % nd->nout)
			return fe_fail(nd, "dimension %lld does not split evenly into %d outputs",
			               (long long)dim, nd->nout);
		ns = nd->nout;
		split = ir_arena_alloc(a, sizeof *split * (size_t)ns);
		for (int i = 0; i < ns; i++)
			split[i] = dim / nd->nout;
	}
	if (ns != nd->nout)
		return fe_fail(nd, "split has %d sizes for %d outputs", ns, nd->nout);
	names = ir_arena_alloc(a, sizeof *names * (size_t)ns);
	for (int i = 0; i < ns; i++)
		names[i] = fe_out_name(nd, i);
	n = fe_emit(nd, IR_OP_SPLIT, nd->in, 1, names, ns);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_ints(nd->fe->m, n, "split", split, ns);
	if (!fe_finish(nd, n))
		return false;
	for (int i = 0; i < ns; i++)
		fe_bind(nd, i, n->out[i]);
	return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool imp_slice(struct fe_node *nd)
{
	const struct ir_type *x;
	int64_t *starts, *ends, *axes = NULL, *steps = NULL;
	int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], sp[IR_MAX_RANK];
	bool seen[IR_MAX_RANK] = { 0 };
	int n, rank;
	const char *name;
	struct ir_node *node;
	struct ir_arena *a = &nd->fe->m->arena;

	if (nd->opset < 10) {
		const int64_t *s, *e, *ax;
		int ns = fe_ints(nd, "starts", &s), ne = fe_ints(nd, "ends", &e);
		int na = fe_ints(nd, "axes", &ax);
		if (!fe_inputs(nd, 1, 1) || nd->failed)
			return false;
		if (ns < 0 || ne < 0 || ns != ne || (na >= 0 && na != ns))
			return fe_fail(nd,
			               "starts, ends (and axes) must be given with equal lengths");
		n = ns;
		starts = ir_arena_alloc(a, sizeof(int64_t) * (size_t)(n + 1));
		ends = ir_arena_alloc(a, sizeof(int64_t) * (size_t)(n + 1));
		memcpy(starts, s, sizeof *s * (size_t)n);
		memcpy(ends, e, sizeof *e * (size_t)n);
		if (na >= 0) {
			axes = ir_arena_alloc(a, sizeof(int64_t) * (size_t)(n + 1));
			memcpy(axes, ax, sizeof *ax * (size_t)n);
		}
	} else {
		int ne, na = -1, nsp = -1;
		if (!fe_inputs(nd, 3, 5))
			return false;
		n = fe_const_ints(nd, 1, "starts", &starts);
		ne = fe_const_ints(nd, 2, "ends", &ends);
		if (fe_in(nd, 3))
			na = fe_const_ints(nd, 3, "axes", &axes);
		if (fe_in(nd, 4))
			nsp = fe_const_ints(nd, 4, "steps", &steps);
		if (nd->failed)
			return false;
		if (n != ne || (na >= 0 && na != n) || (nsp >= 0 && nsp != n))
			return fe_fail(nd, "starts, ends, axes and steps must have equal lengths");
	}
	x = &nd->in[0]->type;
	rank = x->rank;
	for (int i = 0; i < rank; i++) {
		st[i] = 0;
		en[i] = x->dims[i];
		sp[i] = 1;
	}
	for (int i = 0; i < n; i++) {
		int64_t ax = axes ? axes[i] : i, d, s, e, step = steps ? steps[i] : 1;
		if ((ax = fe_axis(nd, ax, rank, "axis")) < 0)
			return false;
		if (seen[ax])
			return fe_fail(nd, "axis %lld is sliced twice", (long long)ax);
		seen[ax] = true;
		if (step == 0)
			return fe_fail(nd, "step must not be zero");
		d = x->dims[ax];
		s = starts[i];
		e = ends[i];
		if (s < 0)
			s += d; /* cannot overflow: s < 0 <= d */
		if (e < 0)
			e += d;
		if (step > 0) {
			s = clamp64(s, 0, d);
			e = clamp64(e, 0, d);
			if (e < s)
				e = s;
		} else {
			s = d > 0 ? clamp64(s, 0, d - 1) : -1;
			e = clamp64(e, -1, d - 1);
			if (e > s)
				e = s;
		}
		st[ax] = s;
		en[ax] = e;
		sp[ax] = step;
	}
	name = fe_out_name(nd, 0);
	node = fe_emit(nd, IR_OP_SLICE, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, node, "starts", st, rank);
	ir_set_ints(nd->fe->m, node, "ends", en, rank);
	ir_set_ints(nd->fe->m, node, "steps", sp, rank);
	return fe_finish(nd, node) && bind1(nd, node->out[0]);
}

/* ------------------------------------------------------------------------ */
/* Gather, Expand, Tile, Pad, Trilu, DepthToSpace, SpaceToDepth             */
/* ------------------------------------------------------------------------ */

/* Constant indices (input 1) into run-time data (input 0) along axis:
 * checked at import, as the reference would at run time. */
static bool const_indices_in_range(struct fe_node *nd, int64_t axis)
{
	const struct ir_value *iv = nd->in[1];
	int64_t dim = nd->in[0]->type.dims[axis], cnt = ir_type_elems(&iv->type);
	if (!fe_is_const(nd, 1) || !ir_dtypes[iv->type.dtype].is_int)
		return true;
	for (int64_t i = 0; i < cnt; i++) {
		int64_t k = ir_load_i64(iv->type.dtype, iv->data, (size_t)i);
		if (k < -dim || k >= dim)
			return fe_fail(nd, "index %lld is out of range for axis %lld of size %lld",
			               (long long)k, (long long)axis, (long long)dim);
	}
	return true;
}

static bool imp_gather(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 0);
	const char *name;
	struct ir_node *n;
	enum ir_op op = nd->def->ir;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	if (!const_indices_in_range(nd, axis))
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, op, nd->in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/*
 * ScatterElements (opset 11; reduction from 16, max and min from 18) and
 * its predecessor Scatter (opsets 9 and 10, no reduction).
 */
static bool imp_scatter(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 0);
	bool legacy = !strcmp(nd->def->name, "Scatter");
	const char *red = legacy ? "none" : fe_str(nd, "reduction", "none"), *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") &&
	    strcmp(red, "min"))
		return fe_fail(nd, "unknown reduction '%s' (none, add, mul, max or min)", red);
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	if (!const_indices_in_range(nd, axis))
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_SCATTER_ELEMENTS, nd->in, 3, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_s(nd->fe->m, n, "reduction", red);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_expand(struct fe_node *nd)
{
	struct ir_type s = { 0 }, r;
	const char *name;
	struct ir_node *n;
	char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
	if (!fe_inputs(nd, 2, 2))
		return false;
	if ((s.rank = shape_input(nd, 1, "shape", s.dims)) < 0)
		return false;
	for (int i = 0; i < s.rank; i++)
		if (s.dims[i] < 0)
			return fe_fail(nd, "shape has negative dimension %lld",
			               (long long)s.dims[i]);
	s.dtype = nd->in[0]->type.dtype;
	/* the result is the broadcast of the input and the shape */
	if (!ir_broadcast(&nd->in[0]->type, &s, &r))
		return fe_fail(nd, "%s does not broadcast with shape %s",
		               ir_type_str(&nd->in[0]->type, a, sizeof a),
		               ir_type_str(&s, b, sizeof b));
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_EXPAND, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "shape", r.dims, r.rank);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_tile(struct fe_node *nd)
{
	int64_t *rep;
	int c;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 2))
		return false;
	if ((c = fe_const_ints(nd, 1, "repeats", &rep)) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_TILE, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "repeats", rep, c);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_pad(struct fe_node *nd)
{
	const char *mode = fe_str(nd, "mode", "constant");
	int64_t pads[2 * IR_MAX_RANK];
	float value = 0;
	int c, rank;
	const char *name;
	struct ir_node *n;
	if (nd->opset < 11) {
		const int64_t *p;
		value = fe_float(nd, "value", 0.0f);
		c = fe_ints(nd, "pads", &p);
		if (!fe_inputs(nd, 1, 1) || nd->failed)
			return false;
		if (c < 0)
			return fe_fail(nd, "attribute 'pads' is required");
		if (c > 2 * IR_MAX_RANK)
			return fe_fail(nd, "too many pads");
		memcpy(pads, p, sizeof *p * (size_t)c);
	} else {
		int64_t *p;
		if (!fe_inputs(nd, 2, nd->version >= 18 ? 4 : 3) || nd->failed)
			return false;
		if ((c = fe_const_ints(nd, 1, "pads", &p)) < 0)
			return false;
		if (c > 2 * IR_MAX_RANK)
			return fe_fail(nd, "too many pads");
		memcpy(pads, p, sizeof *p * (size_t)c);
		if (fe_in(nd, 3)) { /* Pad-18: pads name the axes listed, the rest 0 */
			int64_t *ax, r = nd->in[0]->type.rank;
			int na = fe_const_ints(nd, 3, "axes", &ax);
			bool seen[IR_MAX_RANK] = { 0 };
			if (na < 0)
				return false;
			if (c != 2 * na)
				return fe_fail(nd, "pads has %d values for %d axes", c, na);
			memset(pads, 0, sizeof pads);
			for (int i = 0; i < na; i++) {
				int64_t k = fe_axis(nd, ax[i], (int)r, "axes");
				if (k < 0)
					return false;
				if (seen[k])
					return fe_fail(nd, "axis %lld is listed twice",
					               (long long)ax[i]);
				seen[k] = true;
				pads[k] = p[i];
				pads[r + k] = p[na + i];
			}
			c = (int)(2 * r);
		}
		if (fe_in(nd, 2)) {
			float *v;
			if (fe_const_floats(nd, 2, "constant_value", &v) != 1)
				return nd->failed ? false
				                  : fe_fail(nd, "constant_value must be a scalar");
			value = v[0];
		}
	}
	rank = nd->in[0]->type.rank;
	if (c != 2 * rank)
		return fe_fail(nd, "pads has %d values for rank %d", c, rank);
	if (!strcmp(mode, "wrap") && nd->version < 19)
		return fe_fail(nd, "mode 'wrap' exists from Pad-19 (this is Pad-%d)", nd->version);
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_PAD, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "pads", pads, c);
	ir_set_s(nd->fe->m, n, "mode", mode);
	ir_set_f(nd->fe->m, n, "value", value);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/*
 * CenterCropPad (18): along each listed axis, a centred window of the
 * given size - cropped where it is smaller than the input, zero-padded
 * where larger, the odd element going to the end either way. One pad in
 * constant mode whose negative pads crop.
 */
static bool imp_center_crop_pad(struct fe_node *nd)
{
	int64_t *shape, pads[2 * IR_MAX_RANK] = { 0 }, axes[IR_MAX_RANK];
	const int64_t *ax;
	int rank, ns, na;
	bool seen[IR_MAX_RANK] = { 0 };
	const char *name;
	struct ir_node *n;
	na = fe_ints(nd, "axes", &ax);
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	rank = nd->in[0]->type.rank;
	if ((ns = fe_const_ints(nd, 1, "shape", &shape)) < 0)
		return false;
	if (na < 0) {
		na = rank;
		for (int i = 0; i < rank; i++)
			axes[i] = i;
	} else if (na > rank) {
		return fe_fail(nd, "%d axes for rank %d", na, rank);
	} else {
		memcpy(axes, ax, sizeof *ax * (size_t)na);
	}
	if (ns != na)
		return fe_fail(nd, "shape has %d values for %d axes", ns, na);
	for (int i = 0; i < na; i++) {
		int64_t a = fe_axis(nd, axes[i], rank, "axes"), dim, d;
		if (a < 0)
			return false;
		if (seen[a])
			return fe_fail(nd, "axis %lld is listed twice", (long long)axes[i]);
		seen[a] = true;
		dim = nd->in[0]->type.dims[a];
		if (shape[i] < 0)
			return fe_fail(nd, "shape[%d] is negative", i);
		d = shape[i] - dim; /* > 0: pad, < 0: crop */
		pads[a] = d >= 0 ? d / 2 : -(-d / 2);
		pads[rank + a] = d - pads[a];
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_PAD, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "pads", pads, 2 * rank);
	ir_set_s(nd->fe->m, n, "mode", "constant");
	ir_set_f(nd->fe->m, n, "value", 0);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

static bool imp_trilu(struct fe_node *nd)
{
	int64_t upper = fe_int(nd, "upper", 1), k = 0, *kv;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 1, 2) || nd->failed)
		return false;
	if (fe_in(nd, 1)) {
		if (fe_const_ints(nd, 1, "k", &kv) != 1)
			return nd->failed ? false : fe_fail(nd, "k must be a scalar");
		k = kv[0];
	}
	if (nd->in[0]->type.rank < 2)
		return fe_fail(nd, "input must have rank >= 2");
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_TRILU, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "upper", upper != 0);
	ir_set_i(nd->fe->m, n, "k", k);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* ------------------------------------------------------------------------ */
/* Scatters into a zero tensor: MaxUnpool, Col2Im                           */
/* ------------------------------------------------------------------------ */

/* MaxUnpool (9, 11, 22): X's values written at MaxPool's flat indices I
 * into a zero tensor of the shape the pooling came from, padded at the end
 * to output_shape if given (as ONNX's reference does). */
static bool imp_max_unpool(struct fe_node *nd)
{
	const int64_t *ks;
	int nk = fe_ints(nd, "kernel_shape", &ks), rank;
	int64_t out[IR_MAX_RANK], st[IR_MAX_RANK], pd[2 * IR_MAX_RANK], total, flat;
	const struct ir_type *t;
	struct ir_value *y;
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	t = &nd->in[0]->type;
	rank = t->rank;
	if (rank < 3 || nk != rank - 2)
		return fe_fail(nd, "kernel_shape must have a value per spatial axis (%d)",
		               rank - 2);
	if (!fe_ints_len(nd, "strides", nk, 1, st) || !fe_ints_len(nd, "pads", 2 * nk, 0, pd))
		return false;
	if (nd->in[1]->type.dtype != IR_I64 || nd->in[1]->type.rank != rank ||
	    memcmp(nd->in[1]->type.dims, t->dims, sizeof *t->dims * (size_t)rank))
		return fe_fail(nd, "indices must be int64 of the input's shape");
	/* the indices are positions in the shape the pooling came from */
	out[0] = t->dims[0], out[1] = t->dims[1];
	for (int d = 0; d < nk; d++)
		out[d + 2] = (t->dims[d + 2] - 1) * st[d] + ks[d] - pd[d] - pd[d + nk];
	total = ir_dims_elems(out, rank);
	if (total <= 0)
		return fe_fail(nd, "the output shape is empty or too large");
	flat = ir_type_elems(t);
	y = fe_reshape(nd,
	               fe_scatter(nd, fe_zeros(nd, t->dtype, &total, 1),
	                          fe_reshape(nd, nd->in[1], &flat, 1, -1),
	                          fe_reshape(nd, nd->in[0], &flat, 1, -1), 0, "none", -1),
	               out, rank, fe_in(nd, 2) ? -1 : 0);
	if (fe_in(nd, 2)) { /* a larger output_shape: zeros after the end */
		int64_t *os, pads[2 * IR_MAX_RANK] = { 0 };
		const char *name = fe_out_name(nd, 0);
		struct ir_node *n;
		if (fe_const_ints(nd, 2, "output_shape", &os) != rank)
			return nd->failed ? false
			                  : fe_fail(nd, "output_shape must have %d values", rank);
		for (int d = 0; d < rank; d++) {
			if (os[d] < out[d] || (d < 2 && os[d] != out[d]))
				return fe_fail(nd,
				               "output_shape must not be smaller than the unpooled "
				               "shape, nor differ in batch and channels");
			pads[rank + d] = os[d] - out[d];
		}
		if (!y)
			return false;
		n = fe_emit(nd, IR_OP_PAD, &y, 1, &name, 1);
		ir_set_ints(nd->fe->m, n, "pads", pads, 2 * rank);
		ir_set_s(nd->fe->m, n, "mode", "constant");
		ir_set_f(nd->fe->m, n, "value", 0);
		y = fe_finish(nd, n) ? n->out[0] : NULL;
	}
	return bind1(nd, y);
}

/*
 * Col2Im (18): the columns [N, C * prod(block), L] summed into the padded
 * image [N, C, padded...] at the positions each block element covers (a
 * scatter-add with constant indices), then the pads sliced off.
 */
static bool imp_col2im(struct fe_node *nd)
{
	int64_t *img, *blk, nsp, c, kprod = 1, lcount = 1, pprod = 1, padded[IR_MAX_RANK],
	                            nb[IR_MAX_RANK], dil[IR_MAX_RANK], str[IR_MAX_RANK],
	                            pad[2 * IR_MAX_RANK], dims[IR_MAX_RANK + 2], *idx, n2[2];
	const struct ir_type *t;
	struct ir_type it = { .dtype = IR_I64, .rank = 2 };
	struct ir_value *y;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	t = &nd->in[0]->type;
	nsp = fe_const_ints(nd, 1, "image_shape", &img);
	if (nsp < 1 || nsp > IR_MAX_RANK - 2 || fe_const_ints(nd, 2, "block_shape", &blk) != nsp)
		return nd->failed ? false
		                  : fe_fail(nd,
		                            "image_shape and block_shape must have the same "
		                            "1 to %d values",
		                            IR_MAX_RANK - 2);
	if (!fe_ints_len(nd, "dilations", (int)nsp, 1, dil) ||
	    !fe_ints_len(nd, "strides", (int)nsp, 1, str) ||
	    !fe_ints_len(nd, "pads", 2 * (int)nsp, 0, pad))
		return false;
	if (t->rank != 3)
		return fe_fail(nd, "input must be [N, C * prod(block_shape), L]");
	for (int d = 0; d < nsp; d++) {
		if (blk[d] < 1 || img[d] < 1 || dil[d] < 1 || str[d] < 1 || pad[d] < 0 ||
		    pad[d + nsp] < 0)
			return fe_fail(nd,
			               "image_shape, block_shape, dilations and strides must be "
			               "positive, pads not negative");
		/* sizes a hostile model makes overflow int64 cannot describe the
		 * input, whose every dimension is an int64 */
		if (__builtin_add_overflow(img[d], pad[d], &padded[d]) ||
		    __builtin_add_overflow(padded[d], pad[d + nsp], &padded[d]) ||
		    __builtin_mul_overflow(dil[d], blk[d] - 1, &nb[d]) ||
		    __builtin_mul_overflow(kprod, blk[d], &kprod) ||
		    __builtin_mul_overflow(pprod, padded[d], &pprod))
			return fe_fail(nd,
			               "image_shape, block_shape, pads or dilations are too large");
		nb[d] = (padded[d] - nb[d] - 1) / str[d] + 1;
		if (nb[d] < 1)
			return fe_fail(nd, "the block is larger than the padded image");
		if (__builtin_mul_overflow(lcount, nb[d], &lcount))
			return fe_fail(nd,
			               "image_shape, block_shape, pads or dilations are too large");
	}
	if (t->dims[1] % kprod || t->dims[2] != lcount)
		return fe_fail(nd,
		               "input is [%lld, %lld, %lld]: expected C * %lld columns and %lld "
		               "blocks",
		               (long long)t->dims[0], (long long)t->dims[1], (long long)t->dims[2],
		               (long long)kprod, (long long)lcount);
	c = t->dims[1] / kprod;
	if (!fe_fold_ok(nd->fe, c * kprod * lcount))
		return fe_fail(nd, "the scatter's index (%lld entries) exceeds the folding budget",
		               (long long)(c * kprod * lcount));
	/* idx[col][l]: where column col (channel, block offset) of block l lands
	 * in the flattened [C, padded...] image */
	idx = ir_arena_alloc(&nd->fe->m->arena, sizeof *idx * (size_t)(c * kprod * lcount));
	for (int64_t col = 0; col < c * kprod; col++)
		for (int64_t l = 0; l < lcount; l++) {
			int64_t ko = col % kprod, lo = l, pos = 0, stride = 1;
			for (int64_t d = nsp - 1; d >= 0; d--) {
				int64_t kd = ko % blk[d], ld = lo % nb[d];
				ko /= blk[d], lo /= nb[d];
				pos += (ld * str[d] + kd * dil[d]) * stride;
				stride *= padded[d];
			}
			idx[col * lcount + l] = col / kprod * pprod + pos;
		}
	it.dims[0] = 1, it.dims[1] = c * kprod * lcount;
	n2[0] = t->dims[0], n2[1] = c * kprod * lcount;
	{
		struct ir_value *ix = fe_const(nd, -1, &it, idx);
		struct ir_node *e = ix ? fe_emit(nd, IR_OP_EXPAND, &ix, 1, NULL, 1) : NULL;
		int64_t img2[2] = { t->dims[0], c * pprod };
		if (!e)
			return false;
		ir_set_ints(nd->fe->m, e, "shape", n2, 2);
		if (!fe_finish(nd, e))
			return false;
		y = fe_scatter(nd, fe_zeros(nd, t->dtype, img2, 2), e->out[0],
		               fe_reshape(nd, nd->in[0], n2, 2, -1), 1, "add", -1);
	}
	dims[0] = t->dims[0], dims[1] = c;
	memcpy(dims + 2, padded, sizeof *dims * (size_t)nsp);
	y = fe_reshape(nd, y, dims, (int)nsp + 2, -1);
	for (int d = 0; d < nsp && y; d++)
		if (pad[d] || pad[d + nsp])
			y = fe_slice_axis(nd, y, d + 2, pad[d], pad[d] + img[d], 1, -1);
	return bind1(nd, y);
}

/* ------------------------------------------------------------------------ */
/* GatherND, ScatterND: rows of a 2-D view                                  */
/* ------------------------------------------------------------------------ */

/*
 * The row of data's [prod(dims[0, b + k)), rest] view that each index
 * tuple of idx [..., k] names (idx's last axis indexes dims b .. b+k-1;
 * negative entries count from the end), for batch_dims b whose leading
 * index dims are the batch. Shape idx.shape[:-1].
 */
static struct ir_value *nd_rows(struct fe_node *nd, const struct ir_type *data,
                                struct ir_value *idx, int b)
{
	int k = (int)idx->type.dims[idx->type.rank - 1], r = idx->type.rank - 1;
	struct ir_type kt = { .dtype = IR_I64, .rank = 1, .dims = { k } };
	int64_t *dims = ir_arena_alloc(&nd->fe->m->arena, sizeof *dims * (size_t)k),
	        *strides = ir_arena_alloc(&nd->fe->m->arena, sizeof *strides * (size_t)k),
	        stride = 1, last = idx->type.rank - 1;
	struct ir_value *in[3], *rows;
	for (int j = k - 1; j >= 0; j--) {
		dims[j] = data->dims[b + j];
		strides[j] = stride;
		stride *= dims[j];
	}
	idx = idx->type.dtype == IR_I64 ? idx : fe_cast(nd, idx, IR_I64, -1);
	in[0] = fe_binary(nd, IR_OP_LESS, idx, fe_scalar(nd, IR_I64, 0), -1);
	in[1] = fe_binary(nd, IR_OP_ADD, idx, fe_const(nd, -1, &kt, dims), -1);
	in[2] = idx;
	if (!in[0] || !in[1] || !in[2])
		return NULL;
	rows = fe_reduce(nd, IR_OP_REDUCE_SUM,
	                 fe_binary(nd, IR_OP_MUL, fe_simple(nd, IR_OP_WHERE, in, 3, -1),
	                           fe_const(nd, -1, &kt, strides), -1),
	                 &last, 1, false, -1);
	if (b && rows) { /* + the batch's first row: batch position times stride */
		struct ir_type bt = { .dtype = IR_I64, .rank = r };
		int64_t nb = 1, *off;
		for (int d = 0; d < r; d++)
			bt.dims[d] = d < b ? data->dims[d] : 1;
		nb = ir_dims_elems(bt.dims, r);
		off = ir_arena_alloc(&nd->fe->m->arena, sizeof *off * (size_t)nb);
		for (int64_t i = 0; i < nb; i++)
			off[i] = i * stride;
		rows = fe_binary(nd, IR_OP_ADD, rows, fe_const(nd, -1, &bt, off), -1);
	}
	return rows;
}

/* GatherND (11, 12: batch_dims, 13): a gather of rows of the 2-D view. */
static bool imp_gather_nd(struct fe_node *nd)
{
	int64_t b = fe_int(nd, "batch_dims", 0), view[2], out[IR_MAX_RANK], k;
	const struct ir_type *d, *it;
	struct ir_value *in[2];
	int n = 0;
	struct ir_node *g;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	d = &nd->in[0]->type, it = &nd->in[1]->type;
	if (!ir_dtypes[it->dtype].is_int || it->rank < 1)
		return fe_fail(nd, "indices must be integers of rank >= 1");
	k = it->dims[it->rank - 1];
	if (b < 0 || b >= it->rank || b >= d->rank || k < 1 || b + k > d->rank)
		return fe_fail(nd,
		               "batch_dims %lld and index length %lld do not fit data of rank %d",
		               (long long)b, (long long)k, d->rank);
	for (int i = 0; i < b; i++)
		if (it->dims[i] != d->dims[i])
			return fe_fail(nd, "indices and data differ in batch dimension %d", i);
	if (it->rank - 1 + d->rank - b - k > IR_MAX_RANK)
		return fe_fail(nd, "the output would have more than %d axes", IR_MAX_RANK);
	view[0] = ir_dims_elems(d->dims, (int)(b + k));
	view[1] = ir_dims_elems(d->dims + b + k, d->rank - (int)(b + k));
	for (int i = 0; i < it->rank - 1; i++)
		out[n++] = it->dims[i];
	for (int i = (int)(b + k); i < d->rank; i++)
		out[n++] = d->dims[i];
	in[0] = fe_reshape(nd, nd->in[0], view, 2, -1);
	in[1] = nd_rows(nd, d, nd->in[1], (int)b);
	if (!in[0] || !in[1])
		return false;
	g = fe_emit(nd, IR_OP_GATHER, in, 2, NULL, 1);
	ir_set_i(nd->fe->m, g, "axis", 0);
	if (!fe_finish(nd, g))
		return false;
	return bind1(nd, fe_reshape(nd, g->out[0], out, n, 0));
}

/* ScatterND (11; reduction add/mul 16, max/min 18): rows of the 2-D view
 * replaced (or reduced) by the updates', a scatter_elements along rows. */
static bool imp_scatter_nd(struct fe_node *nd)
{
	const char *red = nd->version >= 16 ? fe_str(nd, "reduction", "none") : "none";
	int64_t view[2], rows2[2], k, n;
	const struct ir_type *d, *it;
	struct ir_value *rows;
	struct ir_node *e;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") &&
	    ((strcmp(red, "max") && strcmp(red, "min")) || nd->version < 18))
		return fe_fail(nd, "reduction '%s' is not one of none, add, mul%s", red,
		               nd->version >= 18 ? ", max and min"
		                                 : " (max and min from opset 18)");
	d = &nd->in[0]->type, it = &nd->in[1]->type;
	if (!ir_dtypes[it->dtype].is_int || it->rank < 1)
		return fe_fail(nd, "indices must be integers of rank >= 1");
	k = it->dims[it->rank - 1];
	if (k < 1 || k > d->rank)
		return fe_fail(nd, "index length %lld does not fit data of rank %d", (long long)k,
		               d->rank);
	view[0] = ir_dims_elems(d->dims, (int)k);
	view[1] = ir_dims_elems(d->dims + k, d->rank - (int)k);
	n = ir_dims_elems(it->dims, it->rank - 1);
	if (ir_type_elems(&nd->in[2]->type) != n * view[1] || nd->in[2]->type.dtype != d->dtype)
		return fe_fail(nd,
		               "updates must be indices.shape[:-1] + data.shape[%lld:] of data's "
		               "type",
		               (long long)k);
	rows2[0] = n, rows2[1] = 1;
	rows = fe_reshape(nd, nd_rows(nd, d, nd->in[1], 0), rows2, 2, -1);
	if (!rows)
		return false;
	rows2[1] = view[1];
	e = fe_emit(nd, IR_OP_EXPAND, &rows, 1, NULL, 1);
	ir_set_ints(nd->fe->m, e, "shape", rows2, 2);
	if (!fe_finish(nd, e))
		return false;
	return bind1(nd,
	             fe_reshape(nd,
	                        fe_scatter(nd, fe_reshape(nd, nd->in[0], view, 2, -1), e->out[0],
	                                   fe_reshape(nd, nd->in[2], rows2, 2, -1), 0, red, -1),
	                        d->dims, d->rank, 0));
}

static bool imp_depth_space(struct fe_node *nd)
{
	int64_t b;
	const char *mode = nd->def->ir == IR_OP_DEPTH_TO_SPACE && nd->opset >= 11
	                           ? fe_str(nd, "mode", "DCR")
	                           : "DCR";
	const char *name;
	struct ir_node *n;
	if (!fe_req_int(nd, "blocksize", &b) || !fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (b < 1)
		return fe_fail(nd, "attribute 'blocksize' must be positive, not %lld",
		               (long long)b);
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "blocksize", b);
	if (nd->def->ir == IR_OP_DEPTH_TO_SPACE)
		ir_set_s(nd->fe->m, n, "mode", mode);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* ------------------------------------------------------------------------ */
/* Resize, Upsample                                                         */
/* ------------------------------------------------------------------------ */

static bool emit_resize(struct fe_node *nd, const char *mode, const char *coord,
                        const char *nearest, float cubic_a, int64_t exclude, float extrap,
                        const float *scales, int nscales, const int64_t *sizes, const float *roi,
                        int nroi)
{
	const char *name = fe_out_name(nd, 0);
	int rank = nd->in[0]->type.rank;
	struct ir_node *n = fe_emit(nd, IR_OP_RESIZE, nd->in, 1, &name, 1);
	struct ir_module *m = nd->fe->m;
	ir_set_s(m, n, "mode", mode);
	ir_set_s(m, n, "coord", coord);
	ir_set_s(m, n, "nearest", nearest);
	ir_set_f(m, n, "cubic_a", cubic_a);
	ir_set_i(m, n, "exclude_outside", exclude != 0);
	ir_set_f(m, n, "extrapolation", extrap);
	ir_set_floats(m, n, "scales", scales, nscales);
	ir_set_ints(m, n, "sizes", sizes, rank);
	ir_set_floats(m, n, "roi", roi, nroi);
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* Output sizes from scales: floor(in * scale), as the ONNX spec defines. */
static bool sizes_from_scales(struct fe_node *nd, const float *scales, int64_t *sizes)
{
	const struct ir_type *x = &nd->in[0]->type;
	for (int i = 0; i < x->rank; i++) {
		double s = (double)x->dims[i] * (double)scales[i];
		if (!(scales[i] > 0) || !(s >= 0 && s <= 9e15))
			return fe_fail(nd, "scale %g is not a positive finite factor",
			               (double)scales[i]);
		sizes[i] = (int64_t)floor(s);
	}
	return true;
}

/* Before opset 11 the coordinate mapping was not specified; this follows
 * ONNX Runtime (asymmetric, nearest rounding down when upsampling). */
static bool legacy_resize(struct fe_node *nd, const float *scales, int n)
{
	const char *mode = fe_str(nd, "mode", "nearest");
	int64_t sizes[IR_MAX_RANK];
	bool down = false;
	if (nd->failed)
		return false;
	if (n != nd->in[0]->type.rank)
		return fe_fail(nd, "scales has %d values for rank %d", n, nd->in[0]->type.rank);
	if (!strcmp(mode, "bilinear") || !strcmp(mode, "trilinear"))
		mode = "linear";
	if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
		return fe_fail(nd, "mode '%s' is not supported", mode);
	if (!sizes_from_scales(nd, scales, sizes))
		return false;
	for (int i = 0; i < n; i++)
		down |= scales[i] < 1;
	return emit_resize(nd, mode, "asymmetric", down ? "ceil" : "floor", -0.75f, 0, 0, scales, n,
	                   sizes, NULL, 0);
}

static bool imp_upsample(struct fe_node *nd)
{
	if (nd->opset < 9) {
		const float *s;
		int n = fe_floats(nd, "scales", &s);
		if (!fe_inputs(nd, 1, 1))
			return false;
		if (n < 0)
			return nd->failed ? false : fe_fail(nd, "attribute 'scales' is required");
		return legacy_resize(nd, s, n);
	} else {
		float *s;
		int n;
		if (!fe_inputs(nd, 2, 2))
			return false;
		if ((n = fe_const_floats(nd, 1, "scales", &s)) < 0)
			return false;
		return legacy_resize(nd, s, n);
	}
}

#define AA_MAX_TAPS    256       /* downsampling by at most 1/64 (cubic) */
#define AA_MAX_WEIGHTS (1 << 24) /* elements of one dimension's weight matrix */

/* The first tap (relative to the source coordinate's floor) and the taps
 * of the antialiased filter at scale: the support is 1 (linear) or 2
 * (cubic) stretched by 1 / min(scale, 1). */
static int aa_taps(bool cubic, double scale, int64_t *start)
{
	double s = scale < 1 ? scale : 1;
	*start = (int64_t)floor(-(cubic ? 2 : 1) / s) + 1;
	return (int)(2 - 2 * *start);
}

/*
 * The weights of Resize-18's antialiased linear or cubic filter along one
 * dimension, out x in (row y: what output y takes of each input), as ONNX's
 * reference computes them: downsampling by scale < 1 stretches the filter
 * by 1 / scale (the taps grow with it), the weights are normalized to sum 1,
 * taps past the ends read the edge (or, with exclude_outside, are dropped).
 */
static void antialias_weights(bool cubic, const char *coord, double a, bool exclude, double scale,
                              int64_t in, int64_t out, double *w)
{
	double s = scale < 1 ? scale : 1, c[AA_MAX_TAPS];
	int64_t start;
	int n = aa_taps(cubic, scale, &start), pad = (n + 1) / 2;
	memset(w, 0, sizeof *w * (size_t)(in * out));
	for (int64_t y = 0; y < out; y++) {
		double xo = ir_resize_coord(coord, y, scale, in, out, 0, 1), sum = 0, frac;
		double ratio = xo == floor(xo) ? 1 : xo - floor(xo), xp = xo + pad;
		int64_t p = (int64_t)floor(xp), first;
		for (int k = 0; k < n; k++) {
			double t = fabs(s * ((double)(start + k) - ratio)), t2 = t * t;
			c[k] = !cubic   ? (t < 1 ? 1 - t : 0)
			       : t <= 1 ? ((a + 2) * t - (a + 3)) * t2 + 1
			       : t < 2  ? ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
			                : 0;
			sum += c[k];
		}
		/* the n taps nearest xo, ties to the smaller index (edge-padded) */
		frac = xp - (double)p;
		first = n % 2 == 0 ? p + (frac == 0 ? -(n / 2) : -(n / 2) + 1)
		                   : p - (n - 1) / 2 + (frac <= 0.5 ? 0 : 1);
		first -= pad;
		for (int k = 0; k < n; k++)
			c[k] /= sum;
		if (exclude) {
			sum = 0;
			for (int k = 0; k < n; k++) {
				if (first + k < 0 || first + k >= in)
					c[k] = 0;
				sum += c[k];
			}
			for (int k = 0; k < n && sum != 0; k++)
				c[k] /= sum;
		}
		for (int k = 0; k < n; k++) {
			int64_t i = first + k < 0 ? 0 : first + k >= in ? in - 1 : first + k;
			w[y * in + i] += c[k];
		}
	}
}

/*
 * Resize-18 with antialias=1 in linear or cubic mode, lowered exactly: the
 * filter is separable, so each resized dimension is a MatMul by its weight
 * matrix (the dimension moved last and back by transposes). The weights are
 * dense: a constant of in x out per dimension, bounded by AA_MAX_WEIGHTS
 * elements.
 */
static bool resize_antialias(struct fe_node *nd, bool cubic, const char *coord, double a,
                             bool exclude, const float *scales, int ns, const int64_t *sizes)
{
	struct ir_value *x = nd->in[0];
	int rank = x->type.rank, last = -1;
	if (!ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "antialias=1 needs a float input, not %s",
		               ir_dtype_name(x->type.dtype));
	if (!strcmp(coord, "tf_crop_and_resize"))
		return fe_fail(nd, "antialias=1 with tf_crop_and_resize is not supported");
	for (int d = 0; d < rank; d++)
		if (sizes[d] != x->type.dims[d] || (ns && scales[d] != 1))
			last = d;
	for (int d = 0; d <= last; d++) {
		int64_t in = x->type.dims[d], out = sizes[d], perm[IR_MAX_RANK];
		double scale = ns ? scales[d] : in ? (double)out / (double)in : 1;
		struct ir_type wt = { .dtype = x->type.dtype, .rank = 2, .dims = { in, out } };
		double *w, *wt_data;
		void *data;
		struct ir_value *ab[2];
		int64_t start;
		if (sizes[d] == in && (!ns || scales[d] == 1))
			continue;
		if (in == 0 || in * out > AA_MAX_WEIGHTS ||
		    aa_taps(cubic, scale, &start) > AA_MAX_TAPS)
			return fe_fail(
			        nd,
			        "antialias=1 from %lld to %lld elements along dimension %d is "
			        "beyond the lowering's weight matrix (%d elements, %d taps)",
			        (long long)in, (long long)out, d, AA_MAX_WEIGHTS, AA_MAX_TAPS);
		w = ir_arena_alloc_big(&nd->fe->m->arena, sizeof *w * (size_t)(in * out));
		wt_data = ir_arena_alloc_big(&nd->fe->m->arena, sizeof *w * (size_t)(in * out));
		antialias_weights(cubic, coord, a, exclude, scale, in, out, w);
		for (int64_t i = 0; i < in; i++) /* [in, out]: x @ w^T */
			for (int64_t y = 0; y < out; y++)
				wt_data[i * out + y] = w[y * in + i];
		data = ir_arena_alloc_big(&nd->fe->m->arena,
		                          (size_t)(in * out) * (size_t)ir_dtype_size(wt.dtype));
		for (int64_t i = 0; i < in * out; i++)
			ir_store_f64(wt.dtype, data, i, wt_data[i]);
		for (int k = 0, j = 0; k < rank; k++) /* d last */
			if (k != d)
				perm[j++] = k;
		perm[rank - 1] = d;
		if (d != rank - 1 && !(x = fe_transpose(nd, x, perm, -1)))
			return false;
		ab[0] = x;
		ab[1] = fe_const(nd, -1, &wt, data);
		if (!(x = fe_simple(nd, IR_OP_MATMUL, ab, 2, d == last && d == rank - 1 ? 0 : -1)))
			return false;
		if (d != rank - 1) {
			int64_t inv[IR_MAX_RANK];
			for (int k = 0; k < rank; k++)
				inv[perm[k]] = k;
			if (!(x = fe_transpose(nd, x, inv, d == last ? 0 : -1)))
				return false;
		}
	}
	fe_bind(nd, 0, x);
	return true;
}

static bool imp_resize(struct fe_node *nd)
{
	const struct ir_type *x;
	float *scales = NULL, *roi = NULL;
	int64_t sizes[IR_MAX_RANK];
	int ns = 0, nz = 0, nroi = 0, rank;
	const char *mode, *coord, *nearest;
	const char *policy = "stretch";
	bool antialias = false;
	float cubic_a, extrap;
	int64_t exclude, axes[IR_MAX_RANK];
	int na = -1;

	if (nd->opset < 11) {
		if (!fe_inputs(nd, 2, 2))
			return false;
		if ((ns = fe_const_floats(nd, 1, "scales", &scales)) < 0)
			return false;
		return legacy_resize(nd, scales, ns);
	}
	mode = fe_str(nd, "mode", "nearest");
	coord = fe_str(nd, "coordinate_transformation_mode", "half_pixel");
	nearest = fe_str(nd, "nearest_mode", "round_prefer_floor");
	cubic_a = fe_float(nd, "cubic_coeff_a", -0.75f);
	exclude = fe_int(nd, "exclude_outside", 0);
	extrap = fe_float(nd, "extrapolation_value", 0.0f);
	if (nd->version >= 18) {
		const int64_t *ax;
		antialias = fe_int(nd, "antialias", 0) != 0;
		policy = fe_str(nd, "keep_aspect_ratio_policy", "stretch");
		if (strcmp(policy, "stretch") && strcmp(policy, "not_larger") &&
		    strcmp(policy, "not_smaller"))
			return fe_fail(nd,
			               "keep_aspect_ratio_policy '%s' is not one of stretch, "
			               "not_larger, not_smaller",
			               policy);
		if ((na = fe_ints(nd, "axes", &ax)) > IR_MAX_RANK)
			return fe_fail(nd, "%d axes", na);
		if (na > 0)
			memcpy(axes, ax, sizeof *ax * (size_t)na);
	}
	if (nd->version < 19 && !strcmp(coord, "half_pixel_symmetric"))
		return fe_fail(nd,
		               "coordinate_transformation_mode 'half_pixel_symmetric' exists "
		               "from Resize-19 (this is Resize-%d)",
		               nd->version);
	if (!fe_inputs(nd, 1, 4) || nd->failed)
		return false;
	x = &nd->in[0]->type;
	rank = x->rank;
	if (na < 0) { /* every axis */
		na = rank;
		for (int i = 0; i < rank; i++)
			axes[i] = i;
	}
	for (int i = 0; i < na; i++) {
		bool dup = false;
		if ((axes[i] = fe_axis(nd, axes[i], rank, "axes")) < 0)
			return false;
		for (int k = 0; k < i; k++)
			dup |= axes[k] == axes[i];
		if (dup)
			return fe_fail(nd, "axis %lld is listed twice", (long long)axes[i]);
	}
	if (fe_in(nd, 1) && !strcmp(coord, "tf_crop_and_resize")) {
		float *r,
		        *full = ir_arena_alloc(&nd->fe->m->arena, sizeof *full * 2 * (size_t)rank);
		if ((nroi = fe_const_floats(nd, 1, "roi", &r)) < 0)
			return false;
		if (nroi != 2 * na)
			return fe_fail(nd, "roi has %d values for %d axes", nroi, na);
		for (int i = 0; i < rank; i++) /* the whole extent of the other axes */
			full[i] = 0, full[rank + i] = 1;
		for (int i = 0; i < na; i++)
			full[axes[i]] = r[i], full[rank + axes[i]] = r[na + i];
		roi = full;
		nroi = 2 * rank;
	}
	if (fe_in(nd, 2) && ir_type_elems(&fe_in(nd, 2)->type) > 0)
		if ((ns = fe_const_floats(nd, 2, "scales", &scales)) < 0)
			return false;
	if (fe_in(nd, 3) && ir_type_elems(&fe_in(nd, 3)->type) > 0) {
		int64_t *z;
		if ((nz = fe_const_ints(nd, 3, "sizes", &z)) < 0)
			return false;
		if (nz != na)
			return fe_fail(nd, "sizes has %d values for %s %d", nz,
			               na == rank ? "rank" : "axes", na);
		for (int i = 0; i < rank; i++)
			sizes[i] = x->dims[i];
		for (int i = 0; i < na; i++)
			sizes[axes[i]] = z[i];
	}
	if ((ns > 0) == (nz > 0))
		return fe_fail(nd, "exactly one of scales and sizes must be given");
	if (ns > 0) {
		float *full = ir_arena_alloc(&nd->fe->m->arena, sizeof *full * (size_t)rank);
		if (ns != na)
			return fe_fail(nd, "scales has %d values for %s %d", ns,
			               na == rank ? "rank" : "axes", na);
		for (int i = 0; i < rank; i++)
			full[i] = 1;
		for (int i = 0; i < na; i++)
			full[axes[i]] = scales[i];
		scales = full;
		ns = rank;
		if (!sizes_from_scales(nd, scales, sizes))
			return false;
	} else if (strcmp(policy, "stretch")) {
		/* one scale for the listed axes, the smallest (not_larger) or the
		 * largest (not_smaller) of theirs; sizes rounded half up from it */
		double s = 0;
		float *full = ir_arena_alloc(&nd->fe->m->arena, sizeof *full * (size_t)rank);
		for (int i = 0; i < na; i++) {
			double si;
			if (x->dims[axes[i]] == 0 || sizes[axes[i]] < 0)
				return fe_fail(nd, "keep_aspect_ratio_policy needs positive sizes "
				                   "and non-empty axes");
			si = (double)sizes[axes[i]] / (double)x->dims[axes[i]];
			if (i == 0 || (policy[4] == 'l' ? si < s : si > s))
				s = si;
		}
		for (int i = 0; i < rank; i++)
			full[i] = 1;
		for (int i = 0; i < na; i++) {
			full[axes[i]] = (float)s;
			sizes[axes[i]] = (int64_t)floor(s * (double)x->dims[axes[i]] + 0.5);
		}
		scales = full;
		ns = rank;
	} else {
		/* sizes given: empty scales, meaning out/in in double (docs/ir.md) */
		for (int i = 0; i < rank; i++)
			if (sizes[i] < 0)
				return fe_fail(nd, "negative size");
	}
	if (antialias && (!strcmp(mode, "linear") || !strcmp(mode, "cubic")))
		return resize_antialias(nd, mode[0] == 'c', coord, cubic_a, exclude != 0, scales,
		                        ns, sizes);
	return emit_resize(nd, mode, coord, nearest, cubic_a, exclude, extrap, scales, ns, sizes,
	                   roi, nroi);
}

const struct fe_op fe_ops_shape[] = {
	{ "Constant", imp_constant, IR_OP_COUNT, { 1, 9, 11, 12, 13, 19, 21, 23, 24, 25 } },
	{ "Shape", imp_shape, IR_OP_COUNT, { 1, 13, 15, 19, 21, 23, 24, 25 } },
	{ "Size", imp_size, IR_OP_COUNT, { 1, 13, 19, 21, 23, 24, 25 } },
	{ "ConstantOfShape", imp_constant_of_shape, IR_OP_COUNT, { 9, 20, 21, 23, 24, 25 } },
	{ "Range", imp_range, IR_OP_COUNT, { 11, 27 } },
	{ "MaxUnpool", imp_max_unpool, IR_OP_SCATTER_ELEMENTS, { 9, 11, 22 } },
	{ "Col2Im", imp_col2im, IR_OP_SCATTER_ELEMENTS, { 18 } },
	{ "GatherND", imp_gather_nd, IR_OP_GATHER, { 11, 12, 13 } },
	{ "ScatterND", imp_scatter_nd, IR_OP_SCATTER_ELEMENTS, { 11, 13, 16, 18 } },
	{ "Reshape", imp_reshape, IR_OP_RESHAPE, { 5, 13, 14, 19, 21, 23, 24, 25 } },
	{ "Flatten", imp_flatten, IR_OP_RESHAPE, { 1, 9, 11, 13, 21, 23, 24, 25 } },
	{ "Squeeze", imp_squeeze, IR_OP_RESHAPE, { 1, 11, 13, 21, 23, 24, 25 } },
	{ "Unsqueeze", imp_unsqueeze, IR_OP_RESHAPE, { 1, 11, 13, 21, 23, 24, 25 } },
	{ "Transpose", imp_transpose, IR_OP_TRANSPOSE, { 1, 13, 21, 23, 24, 25 } },
	{ "Concat", imp_concat, IR_OP_CONCAT, { 4, 11, 13 } },
	{ "Split", imp_split, IR_OP_SPLIT, { 2, 11, 13, 18 } },
	{ "Slice", imp_slice, IR_OP_SLICE, { 1, 10, 11, 13 } },
	{ "Gather", imp_gather, IR_OP_GATHER, { 1, 11, 13 } },
	{ "GatherElements", imp_gather, IR_OP_GATHER_ELEMENTS, { 11, 13 } },
	{ "ScatterElements", imp_scatter, IR_OP_SCATTER_ELEMENTS, { 11, 13, 16, 18 } },
	{ "Scatter", imp_scatter, IR_OP_SCATTER_ELEMENTS, { 9 }, .removed = 11 },
	{ "Expand", imp_expand, IR_OP_EXPAND, { 8, 13 } },
	{ "Tile", imp_tile, IR_OP_TILE, { 6, 13 } },
	{ "Pad", imp_pad, IR_OP_PAD, { 2, 11, 13, 18, 19, 21, 23, 24, 25 } },
	{ "CenterCropPad", imp_center_crop_pad, IR_OP_PAD, { 18 } },
	{ "Trilu", imp_trilu, IR_OP_TRILU, { 14 } },
	{ "DepthToSpace", imp_depth_space, IR_OP_DEPTH_TO_SPACE, { 1, 11, 13 } },
	{ "SpaceToDepth", imp_depth_space, IR_OP_SPACE_TO_DEPTH, { 1, 13 } },
	{ "Resize", imp_resize, IR_OP_RESIZE, { 10, 11, 13, 18, 19 } },
	{ "Upsample", imp_upsample, IR_OP_RESIZE, { 7, 9 }, .removed = 10 },
	{ NULL, NULL, 0, { 0 } },
};
