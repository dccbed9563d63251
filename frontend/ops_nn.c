/*
 * ops_nn.c - importers for linear algebra, convolution, normalization,
 * softmax, pooling and reductions.
 *
 * Normalizations done here so the IR is canonical: auto_pad is resolved into
 * explicit pads, kernel_shape is checked against the weight, defaults are
 * filled, reduction axes become a sorted non-negative list (or an alias when
 * there is nothing to reduce), and opset < 13 Softmax, which flattens to 2-D
 * from its axis on, is rewritten as reshape -> softmax -> reshape.
 */
#include "fe.h"

#include <string.h>

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

static bool finish1(struct fe_node *nd, struct ir_node *n)
{
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* An INTS attribute with an exact length, or a default filled with fill. */
static bool ints_attr(struct fe_node *nd, const char *name, int len, int64_t fill, int64_t *out)
{
	const int64_t *v;
	int c = fe_ints(nd, name, &v);
	if (c < 0) {
		for (int i = 0; i < len; i++)
			out[i] = fill;
		return !nd->failed;
	}
	if (c != len)
		return fe_fail(nd, "attribute '%s' has %d values, expected %d", name, c, len);
	memcpy(out, v, sizeof *out * (size_t)len);
	return true;
}

/* ------------------------------------------------------------------------ */
/* MatMul, Gemm                                                             */
/* ------------------------------------------------------------------------ */

static bool imp_matmul(struct fe_node *nd)
{
	const char *name;
	if (!fe_inputs(nd, 2, 2))
		return false;
	name = fe_out_name(nd, 0);
	return finish1(nd, fe_emit(nd, IR_OP_MATMUL, nd->in, 2, &name, 1));
}

static bool imp_gemm(struct fe_node *nd)
{
	float alpha = fe_float(nd, "alpha", 1.0f), beta = fe_float(nd, "beta", 1.0f);
	int64_t ta = fe_int(nd, "transA", 0), tb = fe_int(nd, "transB", 0);
	const char *name;
	struct ir_node *n;
	if (nd->opset < 9)
		fe_ignore(nd, "broadcast");
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_GEMM, nd->in, nd->nin, &name, 1);
	ir_set_f(nd->fe->m, n, "alpha", alpha);
	ir_set_f(nd->fe->m, n, "beta", fe_in(nd, 2) ? beta : 1.0f);
	ir_set_i(nd->fe->m, n, "trans_a", ta != 0);
	ir_set_i(nd->fe->m, n, "trans_b", tb != 0);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Convolution and pooling geometry                                         */
/* ------------------------------------------------------------------------ */

/*
 * Reads strides, dilations, pads and auto_pad for a window op over input x.
 * kernel must already be set. SAME_UPPER / SAME_LOWER give ceil(in/stride)
 * outputs with the odd padding at the end / at the start.
 */
static bool read_window(struct fe_node *nd, const struct ir_type *x, struct fe_window *w,
                        bool has_dilations)
{
	const char *auto_pad = fe_str(nd, "auto_pad", "NOTSET");
	int nsp = w->nsp;
	if (!ints_attr(nd, "strides", nsp, 1, w->strides))
		return false;
	if (has_dilations && !ints_attr(nd, "dilations", nsp, 1, w->dilations))
		return false;
	if (!has_dilations)
		for (int i = 0; i < nsp; i++)
			w->dilations[i] = 1;
	for (int i = 0; i < nsp; i++)
		if (w->strides[i] < 1 || w->dilations[i] < 1 || w->kernel[i] < 1)
			return fe_fail(nd, "kernel, strides and dilations must be positive");
	if (!strcmp(auto_pad, "NOTSET")) {
		if (!ints_attr(nd, "pads", 2 * nsp, 0, w->pads))
			return false;
		for (int i = 0; i < 2 * nsp; i++)
			if (w->pads[i] < 0)
				return fe_fail(nd, "pads must not be negative");
	} else if (!strcmp(auto_pad, "VALID")) {
		fe_ignore(nd, "pads");
		memset(w->pads, 0, sizeof w->pads);
	} else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
		fe_ignore(nd, "pads");
		for (int i = 0; i < nsp; i++) {
			int64_t in = x->dims[2 + i], s = w->strides[i];
			int64_t out = in / s + (in % s != 0), ext, total;
			/* total = (out - 1) * s + dil * (k - 1) + 1 - in */
			if (__builtin_mul_overflow(w->kernel[i] - 1, w->dilations[i], &ext) ||
			    __builtin_mul_overflow(out > 0 ? out - 1 : 0, s, &total) ||
			    __builtin_add_overflow(total, ext + 1 - in, &total))
				return fe_fail(nd, "SAME padding overflows in spatial dim %d", i);
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			bool upper = auto_pad[5] == 'U';
			w->pads[i] = upper ? small : big;
			w->pads[nsp + i] = upper ? big : small;
		}
	} else {
		return fe_fail(nd,
		               "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER",
		               auto_pad);
	}
	return !nd->failed;
}

static void set_window(struct fe_node *nd, struct ir_node *n, const struct fe_window *w,
                       bool kernel, bool dilations)
{
	struct ir_module *m = nd->fe->m;
	if (kernel)
		ir_set_ints(m, n, "kernel", w->kernel, w->nsp);
	ir_set_ints(m, n, "strides", w->strides, w->nsp);
	ir_set_ints(m, n, "pads", w->pads, 2 * w->nsp);
	if (dilations)
		ir_set_ints(m, n, "dilations", w->dilations, w->nsp);
}

/* Kernel from the weight, checked against kernel_shape if given. */
static bool conv_kernel(struct fe_node *nd, const struct ir_type *x, const struct ir_type *wt,
                        struct fe_window *w)
{
	const int64_t *ks;
	int c;
	if (x->rank < 3 || wt->rank != x->rank)
		return fe_fail(nd,
		               "input and weight must be [N,C,spatial...] of equal rank (rank %d "
		               "and %d)",
		               x->rank, wt->rank);
	w->nsp = x->rank - 2;
	for (int i = 0; i < w->nsp; i++)
		w->kernel[i] = wt->dims[2 + i];
	c = fe_ints(nd, "kernel_shape", &ks);
	if (c >= 0) {
		if (c != w->nsp)
			return fe_fail(nd, "kernel_shape has %d values for %d spatial dims", c,
			               w->nsp);
		for (int i = 0; i < c; i++)
			if (ks[i] != w->kernel[i])
				return fe_fail(nd,
				               "kernel_shape[%d] = %lld but the weight has %lld", i,
				               (long long)ks[i], (long long)w->kernel[i]);
	}
	return !nd->failed;
}

bool fe_conv_window(struct fe_node *nd, const struct ir_type *x, const struct ir_type *wt,
                    struct fe_window *w)
{
	return conv_kernel(nd, x, wt, w) && read_window(nd, x, w, true);
}

static bool imp_conv(struct fe_node *nd)
{
	struct fe_window w = { 0 };
	int64_t group = fe_int(nd, "group", 1);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 3) || !fe_conv_window(nd, &nd->in[0]->type, &nd->in[1]->type, &w))
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CONV, nd->in, nd->nin, &name, 1);
	set_window(nd, n, &w, false, true);
	ir_set_i(nd->fe->m, n, "group", group);
	return finish1(nd, n);
}

static bool imp_conv_transpose(struct fe_node *nd)
{
	struct fe_window w = { 0 };
	int64_t group = fe_int(nd, "group", 1), outpad[IR_MAX_RANK], oshape_buf[IR_MAX_RANK];
	const char *auto_pad = fe_str(nd, "auto_pad", "NOTSET");
	const int64_t *oshape;
	int noshape;
	const char *name;
	struct ir_node *n;
	const struct ir_type *x;
	if (!fe_inputs(nd, 2, 3) || !conv_kernel(nd, &nd->in[0]->type, &nd->in[1]->type, &w))
		return false;
	x = &nd->in[0]->type;
	if (!ints_attr(nd, "strides", w.nsp, 1, w.strides) ||
	    !ints_attr(nd, "dilations", w.nsp, 1, w.dilations) ||
	    !ints_attr(nd, "output_padding", w.nsp, 0, outpad) ||
	    !ints_attr(nd, "pads", 2 * w.nsp, 0, w.pads))
		return false;
	noshape = fe_ints(nd, "output_shape", &oshape);
	if (noshape >= 0 && noshape != w.nsp && noshape != w.nsp + 2)
		return fe_fail(nd, "output_shape has %d values", noshape);
	if (noshape > w.nsp)
		oshape += 2;
	if (noshape >= 0 || strncmp(auto_pad, "SAME", 4) == 0) {
		bool upper = strcmp(auto_pad, "SAME_LOWER") != 0;
		for (int i = 0; i < w.nsp; i++) {
			/* total = st * (in - 1) + output_padding + dil * (k - 1) + 1 - out */
			int64_t ext, out, total;
			if (__builtin_mul_overflow(w.kernel[i] - 1, w.dilations[i], &ext) ||
			    (noshape < 0 && __builtin_mul_overflow(x->dims[2 + i], w.strides[i],
			                                           &oshape_buf[i])) ||
			    __builtin_mul_overflow(w.strides[i], x->dims[2 + i] - 1, &total) ||
			    __builtin_add_overflow(total, outpad[i], &total) ||
			    __builtin_add_overflow(total, ext, &total) ||
			    __builtin_add_overflow(total, 1, &total))
				return fe_fail(nd, "output size overflows in spatial dim %d", i);
			out = noshape >= 0 ? oshape[i] : oshape_buf[i];
			if (out < 0 || __builtin_sub_overflow(total, out, &total))
				return fe_fail(nd, "invalid output_shape %lld", (long long)out);
			if (total < 0) {
				/* a larger output than the natural one: no padding, and
				 * the rest appended, as ONNX Runtime does */
				outpad[i] -= total;
				total = 0;
			}
			w.pads[i] = upper ? total / 2 : total - total / 2;
			w.pads[w.nsp + i] = total - w.pads[i];
		}
	} else if (!strcmp(auto_pad, "VALID")) {
		memset(w.pads, 0, sizeof w.pads);
	} else if (strcmp(auto_pad, "NOTSET")) {
		return fe_fail(nd, "auto_pad '%s' is not supported", auto_pad);
	}
	if (nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CONV_TRANSPOSE, nd->in, nd->nin, &name, 1);
	set_window(nd, n, &w, false, true);
	ir_set_i(nd->fe->m, n, "group", group);
	ir_set_ints(nd->fe->m, n, "output_padding", outpad, w.nsp);
	return finish1(nd, n);
}

/* MaxPool, AveragePool, LpPool. */
static bool imp_pool(struct fe_node *nd)
{
	enum ir_op op = nd->def->ir;
	struct fe_window w = { 0 };
	const struct ir_type *x;
	int64_t ceil_mode = 0, p = 2;
	const char *names[2];
	struct ir_node *n;
	int nout = 1;
	if (!fe_inputs(nd, 1, 1))
		return false;
	x = &nd->in[0]->type;
	if (x->rank < 3)
		return fe_fail(nd, "input must be [N,C,spatial...], not rank %d", x->rank);
	w.nsp = x->rank - 2;
	{
		const int64_t *ks;
		int c = fe_ints(nd, "kernel_shape", &ks);
		if (c != w.nsp)
			return nd->failed ? false
			                  : fe_fail(nd, "kernel_shape must have %d values", w.nsp);
		memcpy(w.kernel, ks, sizeof *ks * (size_t)c);
	}
	/* ceil_mode: MaxPool and AveragePool from 10, LpPool from 18; dilations:
	 * MaxPool from 10, LpPool from 18, AveragePool from 19 */
	if (nd->version >= (op == IR_OP_LP_POOL ? 18 : 10))
		ceil_mode = fe_int(nd, "ceil_mode", 0);
	if (op == IR_OP_LP_POOL)
		p = fe_int(nd, "p", 2);
	if (!read_window(nd, x, &w,
	                 nd->version >= (op == IR_OP_MAX_POOL  ? 10
	                                 : op == IR_OP_LP_POOL ? 18
	                                                       : 19)))
		return false;
	names[0] = fe_out_name(nd, 0);
	if (op == IR_OP_MAX_POOL && nd->nout > 1 && nd->proto->output[1][0]) {
		names[1] = fe_out_name(nd, 1);
		nout = 2;
	}
	n = fe_emit(nd, op, nd->in, 1, names, nout);
	set_window(nd, n, &w, true, true);
	ir_set_i(nd->fe->m, n, "ceil_mode", ceil_mode != 0);
	if (op == IR_OP_MAX_POOL)
		ir_set_i(nd->fe->m, n, "storage_order", fe_int(nd, "storage_order", 0) != 0);
	else if (op == IR_OP_AVG_POOL)
		ir_set_i(nd->fe->m, n, "count_include_pad",
		         fe_int(nd, "count_include_pad", 0) != 0);
	else
		ir_set_i(nd->fe->m, n, "p", p);
	if (nd->failed || !fe_finish(nd, n))
		return false;
	fe_bind(nd, 0, n->out[0]);
	if (nout > 1)
		fe_bind(nd, 1, n->out[1]);
	return true;
}

static bool imp_global_pool(struct fe_node *nd)
{
	const char *name;
	struct ir_node *n;
	int64_t p = nd->def->ir == IR_OP_GLOBAL_LP_POOL ? fe_int(nd, "p", 2) : 0;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	if (nd->def->ir == IR_OP_GLOBAL_LP_POOL)
		ir_set_i(nd->fe->m, n, "p", p);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Normalization                                                            */
/* ------------------------------------------------------------------------ */

static bool training(const struct fe_node *nd) { return nd->fe->opt && nd->fe->opt->training; }

static bool imp_batch_norm(struct fe_node *nd)
{
	float eps = fe_float(nd, "epsilon", 1e-5f);
	const char *name;
	struct ir_node *n;
	fe_ignore(nd, "momentum");
	if (nd->opset < 9 && fe_int(nd, "spatial", 1) != 1)
		return fe_fail(nd, "spatial=0 (per-activation statistics) is not supported");
	if (nd->opset >= 14 && fe_int(nd, "training_mode", 0) != 0 && !training(nd))
		return fe_fail(nd, "training_mode=1 cannot be compiled for inference");
	if (!fe_inputs(nd, 5, 5) || nd->failed)
		return false;
	for (int k = 1; k < nd->nout; k++) {
		if (!nd->proto->output[k][0])
			continue;
		if (!training(nd))
			return fe_fail(nd, "output %d (running statistics) exists only in training",
			               k);
		/* onnxc train updates the running statistics itself
		 * (passes/autodiff.c, ad_train_mode); an exporter's copies of
		 * them (torch's training-mode export) must be unused */
		if (fe_tensor_used(nd->fe, nd->proto->output[k]))
			return fe_fail(nd,
			               "output %d (the updated running statistics) is used by the "
			               "graph: onnxc train computes those updates itself",
			               k);
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_BATCH_NORM, nd->in, 5, &name, 1);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!finish1(nd, n))
		return false;
	/* the unused statistics outputs stand for the inputs' (never read) */
	for (int k = 1; k < nd->nout && k < 3; k++)
		if (nd->proto->output[k][0])
			fe_bind(nd, k, nd->in[k + 2]);
	return true;
}

static bool imp_layer_norm(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1);
	float eps = fe_float(nd, "epsilon", 1e-5f);
	const char *names[3];
	int nout = 1;
	struct ir_node *n;
	/* statistics are always computed in FP32 (stash_type 1); doing so for
	 * stash_type 0 only adds precision */
	fe_ignore(nd, "stash_type");
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	for (int k = 0; k < nd->nout && k < 3; k++)
		if (nd->proto->output[k][0])
			nout = k + 1;
	for (int k = 0; k < nout; k++)
		names[k] = fe_out_name(nd, k);
	n = fe_emit(nd, IR_OP_LAYER_NORM, nd->in, nd->nin, names, nout);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!fe_finish(nd, n))
		return false;
	for (int k = 0; k < nout; k++)
		fe_bind(nd, k, n->out[k]);
	return true;
}

static bool imp_instance_norm(struct fe_node *nd)
{
	float eps = fe_float(nd, "epsilon", 1e-5f);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_INSTANCE_NORM, nd->in, 3, &name, 1);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	return finish1(nd, n);
}

static bool imp_lrn(struct fe_node *nd)
{
	int64_t size;
	float alpha = fe_float(nd, "alpha", 1e-4f), beta = fe_float(nd, "beta", 0.75f),
	      bias = fe_float(nd, "bias", 1.0f);
	const char *name;
	struct ir_node *n;
	if (!fe_req_int(nd, "size", &size) || !fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (size < 1)
		return fe_fail(nd, "attribute 'size' must be positive, not %lld", (long long)size);
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_LRN, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "size", size);
	ir_set_f(nd->fe->m, n, "alpha", alpha);
	ir_set_f(nd->fe->m, n, "beta", beta);
	ir_set_f(nd->fe->m, n, "bias", bias);
	return finish1(nd, n);
}

/* Softmax, LogSoftmax, Hardmax. */
static bool imp_softmax(struct fe_node *nd)
{
	bool v13 = nd->opset >= 13;
	int64_t axis = fe_int(nd, "axis", v13 ? -1 : 1);
	struct ir_value *x;
	struct ir_node *n;
	const char *name;
	int rank;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	x = nd->in[0];
	rank = x->type.rank;
	if (rank == 0)
		return fe_fail(nd, "input must have rank >= 1");
	if ((axis = fe_axis(nd, axis, rank, "axis")) < 0)
		return false;
	if (!v13 && axis != rank - 1) {
		/* before opset 13 the op works on the 2-D view [prod(:axis), prod(axis:)] */
		int64_t d2[2] = { 1, 1 };
		for (int i = 0; i < rank; i++)
			d2[i >= axis] *= x->type.dims[i];
		if (!(x = fe_reshape(nd, x, d2, 2, -1)))
			return false;
		name = fe_tmp_name(nd, ir_ops[nd->def->ir].name);
		n = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
		ir_set_i(nd->fe->m, n, "axis", 1);
		if (!fe_finish(nd, n))
			return false;
		return bind1(nd, fe_reshape(nd, n->out[0], nd->in[0]->type.dims, rank, 0));
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                               */
/* ------------------------------------------------------------------------ */

/* ReduceMax and ReduceMin of bool (20): any and all, as the max and min of
 * the values as uint8. */
static bool reduce_bool(struct fe_node *nd, const int64_t *axes, int n, bool keep)
{
	struct ir_value *x = fe_cast(nd, nd->in[0], IR_U8, -1);
	const char *name = fe_tmp_name(nd, ir_ops[nd->def->ir].name);
	struct ir_node *r;
	if (!x)
		return false;
	r = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, r, "axes", axes, n);
	ir_set_i(nd->fe->m, r, "keepdims", keep);
	if (!fe_finish(nd, r) || !(x = fe_cast(nd, r->out[0], IR_BOOL, 0)))
		return false;
	fe_bind(nd, 0, x);
	return true;
}

static bool imp_reduce(struct fe_node *nd)
{
	/* axes became an input in ReduceSum-13 and the other Reduce*-18 */
	bool axes_input = nd->version >= (!strcmp(nd->op, "ReduceSum") ? 13 : 18);
	int64_t keep = fe_int(nd, "keepdims", 1), noop = 0, axes[IR_MAX_RANK];
	int rank, n = -1;
	const char *name;
	struct ir_node *node;
	if (axes_input)
		noop = fe_int(nd, "noop_with_empty_axes", 0);
	if (!fe_inputs(nd, 1, axes_input ? 2 : 1) || nd->failed)
		return false;
	rank = nd->in[0]->type.rank;
	if (axes_input && fe_in(nd, 1)) {
		int64_t *v;
		n = fe_const_ints(nd, 1, "axes", &v);
		if (n < 0)
			return false;
		if (n > rank)
			return fe_fail(nd, "%d axes for rank %d", n, rank);
		memcpy(axes, v, sizeof *v * (size_t)n);
	} else if (!axes_input) {
		const int64_t *v;
		n = fe_ints(nd, "axes", &v);
		if (n > rank)
			return fe_fail(nd, "%d axes for rank %d", n, rank);
		if (n > 0)
			memcpy(axes, v, sizeof *v * (size_t)n);
	}
	if (nd->failed)
		return false;
	if (n <= 0) {
		if (noop) {
			fe_bind(nd, 0, nd->in[0]);
			return true;
		}
		n = rank;
		for (int i = 0; i < rank; i++)
			axes[i] = i;
	}
	if ((n = fe_norm_axes(nd, axes, n, rank)) < 0)
		return false;
	if (n == 0) { /* a scalar: nothing to reduce */
		fe_bind(nd, 0, nd->in[0]);
		return true;
	}
	if (nd->in[0]->type.dtype == IR_BOOL && nd->version >= 20 &&
	    (nd->def->ir == IR_OP_REDUCE_MAX || nd->def->ir == IR_OP_REDUCE_MIN))
		return reduce_bool(nd, axes, n, keep != 0);
	name = fe_out_name(nd, 0);
	node = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, node, "axes", axes, n);
	ir_set_i(nd->fe->m, node, "keepdims", keep != 0);
	return finish1(nd, node);
}

static bool imp_arg(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 0), keep = fe_int(nd, "keepdims", 1), last = 0;
	const char *name;
	struct ir_node *n;
	if (nd->opset >= 12)
		last = fe_int(nd, "select_last_index", 0);
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_i(nd->fe->m, n, "keepdims", keep != 0);
	ir_set_i(nd->fe->m, n, "select_last_index", last != 0);
	return finish1(nd, n);
}

static bool imp_cumsum(struct fe_node *nd)
{
	int64_t excl = fe_int(nd, "exclusive", 0), rev = fe_int(nd, "reverse", 0), *axis;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (fe_const_ints(nd, 1, "axis", &axis) != 1)
		return nd->failed ? false : fe_fail(nd, "axis must be a scalar");
	if ((axis[0] = fe_axis(nd, axis[0], nd->in[0]->type.rank, "axis")) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CUMSUM, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis[0]);
	ir_set_i(nd->fe->m, n, "exclusive", excl != 0);
	ir_set_i(nd->fe->m, n, "reverse", rev != 0);
	return finish1(nd, n);
}

const struct fe_op fe_ops_nn[] = {
	{ "MatMul", imp_matmul, IR_OP_MATMUL, { 1, 9, 13 } },
	{ "Gemm", imp_gemm, IR_OP_GEMM, { 7, 9, 11, 13 } },
	{ "Conv", imp_conv, IR_OP_CONV, { 1, 11, 22 } },
	{ "ConvTranspose", imp_conv_transpose, IR_OP_CONV_TRANSPOSE, { 1, 11, 22 } },
	{ "MaxPool", imp_pool, IR_OP_MAX_POOL, { 1, 8, 10, 11, 12, 22 } },
	{ "AveragePool", imp_pool, IR_OP_AVG_POOL, { 7, 10, 11, 19, 22 } },
	{ "LpPool", imp_pool, IR_OP_LP_POOL, { 2, 11, 18, 22 } },
	{ "GlobalAveragePool", imp_global_pool, IR_OP_GLOBAL_AVG_POOL, { 1, 22 } },
	{ "GlobalMaxPool", imp_global_pool, IR_OP_GLOBAL_MAX_POOL, { 1, 22 } },
	{ "GlobalLpPool", imp_global_pool, IR_OP_GLOBAL_LP_POOL, { 2, 22 } },
	{ "BatchNormalization", imp_batch_norm, IR_OP_BATCH_NORM, { 7, 9, 14, 15 } },
	{ "LayerNormalization", imp_layer_norm, IR_OP_LAYER_NORM, { 17 } },
	{ "InstanceNormalization", imp_instance_norm, IR_OP_INSTANCE_NORM, { 6, 22 } },
	{ "LRN", imp_lrn, IR_OP_LRN, { 1, 13 } },
	{ "Softmax", imp_softmax, IR_OP_SOFTMAX, { 1, 11, 13 } },
	{ "LogSoftmax", imp_softmax, IR_OP_LOG_SOFTMAX, { 1, 11, 13 } },
	{ "Hardmax", imp_softmax, IR_OP_HARDMAX, { 1, 11, 13 } },
	{ "ReduceSum", imp_reduce, IR_OP_REDUCE_SUM, { 1, 11, 13 } },
	{ "ReduceMean", imp_reduce, IR_OP_REDUCE_MEAN, { 1, 11, 13, 18 } },
	{ "ReduceMax", imp_reduce, IR_OP_REDUCE_MAX, { 1, 11, 12, 13, 18, 20 } },
	{ "ReduceMin", imp_reduce, IR_OP_REDUCE_MIN, { 1, 11, 12, 13, 18, 20 } },
	{ "ReduceProd", imp_reduce, IR_OP_REDUCE_PROD, { 1, 11, 13, 18 } },
	{ "ReduceL1", imp_reduce, IR_OP_REDUCE_L1, { 1, 11, 13, 18 } },
	{ "ReduceL2", imp_reduce, IR_OP_REDUCE_L2, { 1, 11, 13, 18 } },
	{ "ReduceSumSquare", imp_reduce, IR_OP_REDUCE_SUM_SQUARE, { 1, 11, 13, 18 } },
	{ "ReduceLogSum", imp_reduce, IR_OP_REDUCE_LOG_SUM, { 1, 11, 13, 18 } },
	{ "ReduceLogSumExp", imp_reduce, IR_OP_REDUCE_LOG_SUM_EXP, { 1, 11, 13, 18 } },
	{ "ArgMax", imp_arg, IR_OP_ARGMAX, { 1, 11, 12, 13 } },
	{ "ArgMin", imp_arg, IR_OP_ARGMIN, { 1, 11, 12, 13 } },
	{ "CumSum", imp_cumsum, IR_OP_CUMSUM, { 11, 14 } },
	{ NULL, NULL, 0, { 0 } },
};
