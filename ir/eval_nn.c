/*
 * eval_nn.c - reference evaluators for the sliding-window ops: conv,
 * conv_transpose and pooling, in any number of spatial dimensions.
 *
 * All of them are written in gather form: each result element is computed
 * by one loop over the kernel taps that feed it, so every result is summed
 * in double and rounded exactly once. A tap of output position o at kernel
 * offset j reads input coordinate o*stride - pad_begin + j*dilation in each
 * spatial dimension; conv_transpose inverts that map (input i feeds output
 * i*stride - pad_begin + j*dilation). A tap outside the input reads padding,
 * which contributes nothing: zero for sums, absent for max and averages.
 *
 * Tensors are [N, C, spatial...]; spatial positions are flattened row-major,
 * so channel c of batch n starts at (n*C + c) * (spatial size).
 */
#include "eval.h"

#include <math.h>

struct window {
	int nsp; /* spatial dimensions */
	int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK];
	int64_t st[IR_MAX_RANK], dil[IR_MAX_RANK], pb[IR_MAX_RANK], pe[IR_MAX_RANK];
	int64_t nin, nout, nk; /* element counts of in, out and k */
	bool transposed;
};

/* The geometry of node n; kernel gives the kernel's spatial dims. */
static void window_init(struct window *w, const struct ir_node *n, const int64_t *kernel)
{
	const struct ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pads = ir_attr_ints(n, "pads", NULL);
	/* convolutions and the windowed pools have dilations, global pools none */
	const int64_t *dil =
	        ir_attr_get(n, "dilations") ? ir_attr_ints(n, "dilations", NULL) : NULL;
	w->nsp = x->rank - 2;
	w->nin = w->nout = w->nk = 1;
	w->transposed = n->op == IR_OP_CONV_TRANSPOSE;
	for (int d = 0; d < w->nsp; d++) {
		w->in[d] = x->dims[2 + d];
		w->out[d] = y->dims[2 + d];
		w->k[d] = kernel[d];
		w->st[d] = st[d];
		w->dil[d] = dil ? dil[d] : 1;
		w->pb[d] = pads[d];
		w->pe[d] = pads[w->nsp + d];
		w->nin *= w->in[d];
		w->nout *= w->out[d];
		w->nk *= w->k[d];
	}
}

/*
 * The input position that tap j of output position o reads, as coordinates
 * in at[] and as a flat spatial offset, which is -1 when the tap falls
 * outside the input.
 */
static int64_t tap(const struct window *w, const int64_t *o, const int64_t *j, int64_t *at)
{
	int64_t flat = 0;
	bool inside = true;
	for (int d = 0; d < w->nsp; d++) {
		int64_t i = o[d] * w->st[d] - w->pb[d] + j[d] * w->dil[d];
		if (w->transposed) {
			/* o = i*st - pb + j*dil: i must be a whole number */
			int64_t t = o[d] + w->pb[d] - j[d] * w->dil[d];
			i = t >= 0 && t % w->st[d] == 0 ? t / w->st[d] : -1;
		}
		at[d] = i;
		inside = inside && i >= 0 && i < w->in[d];
		flat = flat * w->in[d] + i;
	}
	return inside ? flat : -1;
}

/* Does input position at[] lie within the input or its explicit padding? */
static bool in_padded(const struct window *w, const int64_t *at)
{
	for (int d = 0; d < w->nsp; d++)
		if (at[d] < -w->pb[d] || at[d] >= w->in[d] + w->pe[d])
			return false;
	return true;
}

/* ------------------------------------------------------------------------ */
/* Convolution                                                              */
/* ------------------------------------------------------------------------ */

/*
 * conv weights are [Cout, Cin/group, k...]; conv_transpose weights are
 * [Cin, Cout/group, k...]. Either way output channel oc of group g sums over
 * the group's input channels g*cin_g .. g*cin_g + cin_g - 1.
 */
static double conv_at(struct fold *f, const struct window *w, int64_t n, int64_t oc,
                      const int64_t *o)
{
	int64_t group = ir_attr_i(f->n, "group"), cin = IN(0)->type.dims[1];
	int64_t cout = OUT(0)->type.dims[1], cin_g = cin / group, cout_g = cout / group;
	int64_t g = oc / cout_g, j[IR_MAX_RANK], at[IR_MAX_RANK];
	double acc = f->n->nin > 2 ? getf(IN(2), oc) : 0;
	for (int64_t q = 0; q < w->nk; q++) {
		int64_t s;
		eval_unflatten(q, w->k, w->nsp, j);
		if ((s = tap(w, o, j, at)) < 0)
			continue;
		for (int64_t ic = 0; ic < cin_g; ic++) {
			int64_t c = g * cin_g + ic;
			int64_t wi = w->transposed ? c * cout_g + oc % cout_g : oc * cin_g + ic;
			acc += getf(IN(0), (n * cin + c) * w->nin + s) *
			       getf(IN(1), wi * w->nk + q);
		}
	}
	return acc;
}

/*
 * conv_at for every output position of a channel at once: the same terms
 * added in the same order (bias, then each kernel tap, each input channel
 * of the group within it), so the same sums, but with the taps' input
 * offsets computed once per node and the operands read as doubles. Calibration
 * (passes/amp_range.c) evaluates whole CNNs with it.
 */
static void conv_fast(struct fold *f, const struct window *w)
{
	const struct ir_type *y = &OUT(0)->type;
	int64_t group = ir_attr_i(f->n, "group"), cin = IN(0)->type.dims[1];
	int64_t cout = y->dims[1], cin_g = cin / group, cout_g = cout / group;
	int64_t *taps = eval_alloc(f, sizeof *taps * (size_t)(w->nk * w->nout + 1));
	double *x = eval_doubles(f, IN(0)), *wt = eval_doubles(f, IN(1));
	double *acc = eval_alloc(f, sizeof *acc * (size_t)(w->nout + 1));
	int64_t o[IR_MAX_RANK], j[IR_MAX_RANK], at[IR_MAX_RANK];
	for (int64_t q = 0; q < w->nk; q++) {
		eval_unflatten(q, w->k, w->nsp, j);
		for (int64_t p = 0; p < w->nout; p++) {
			eval_unflatten(p, w->out, w->nsp, o);
			taps[q * w->nout + p] = tap(w, o, j, at);
		}
	}
	for (int64_t n = 0; n < y->dims[0]; n++)
		for (int64_t oc = 0; oc < cout; oc++) {
			double b = f->n->nin > 2 ? getf(IN(2), oc) : 0;
			int64_t g = oc / cout_g;
			for (int64_t p = 0; p < w->nout; p++)
				acc[p] = b;
			for (int64_t q = 0; q < w->nk; q++) {
				const int64_t *tq = taps + q * w->nout;
				for (int64_t ic = 0; ic < cin_g; ic++) {
					const double *xc = x + (n * cin + g * cin_g + ic) * w->nin;
					double wv = wt[(oc * cin_g + ic) * w->nk + q];
					for (int64_t p = 0; p < w->nout; p++)
						if (tq[p] >= 0)
							acc[p] += xc[tq[p]] * wv;
				}
			}
			for (int64_t p = 0; p < w->nout; p++)
				putf(f, 0, (n * cout + oc) * w->nout + p, acc[p]);
		}
	eval_free(f, taps);
	eval_free(f, x);
	eval_free(f, wt);
	eval_free(f, acc);
}

bool eval_conv(struct fold *f)
{
	struct window w;
	const struct ir_type *y = &OUT(0)->type;
	int64_t o[IR_MAX_RANK], at = 0;
	window_init(&w, f->n, IN(1)->type.dims + 2);
	if (f->n->op == IR_OP_CONV && isf(IN(0)->type.dtype) && isf(IN(1)->type.dtype)) {
		conv_fast(f, &w);
		return true;
	}
	for (int64_t n = 0; n < y->dims[0]; n++)
		for (int64_t oc = 0; oc < y->dims[1]; oc++)
			for (int64_t p = 0; p < w.nout; p++) {
				eval_unflatten(p, w.out, w.nsp, o);
				putf(f, 0, at++, conv_at(f, &w, n, oc, o));
			}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * The max_pool index result: the flat offset of the maximum in the whole
 * input, row-major, or with the spatial dimensions column-major when
 * storage_order is 1 (the batch and channel still count row-major).
 */
static int64_t argmax_index(struct fold *f, const struct window *w, int64_t nc, int64_t s)
{
	int64_t at[IR_MAX_RANK], col = 0;
	if (!ir_attr_i(f->n, "storage_order"))
		return nc * w->nin + s;
	eval_unflatten(s, w->in, w->nsp, at);
	for (int d = w->nsp - 1; d >= 0; d--)
		col = col * w->in[d] + at[d];
	return nc * w->nin + col;
}

/* The first maximum of the window wins; padding never does. */
static void max_pool_at(struct fold *f, const struct window *w, int64_t nc, const int64_t *o,
                        int64_t dst)
{
	int64_t j[IR_MAX_RANK], at[IR_MAX_RANK], base = nc * w->nin, best = -1;
	for (int64_t q = 0; q < w->nk; q++) {
		int64_t s;
		eval_unflatten(q, w->k, w->nsp, j);
		s = tap(w, o, j, at);
		if (s >= 0 && (best < 0 || eval_cmp(IN(0), base + s, base + best) > 0))
			best = s;
	}
	if (best < 0) { /* a window entirely in the padding */
		putf(f, 0, dst, -INFINITY);
		return;
	}
	copy_elem(f, 0, dst, base + best);
	if (f->n->nout > 1)
		puti(f, 1, dst, argmax_index(f, w, nc, best));
}

/*
 * avg_pool divides by the taps inside the input, or with count_include_pad
 * by the taps inside the input and its explicit padding; in ceil mode a
 * window may reach past both, and those taps never count. lp_pool is
 * (sum |x|^p)^(1/p), padding adding nothing.
 */
static double sum_pool_at(struct fold *f, const struct window *w, int64_t nc, const int64_t *o)
{
	bool lp = f->n->op == IR_OP_LP_POOL;
	bool pad_counts = !lp && ir_attr_i(f->n, "count_include_pad");
	double p = lp ? (double)ir_attr_i(f->n, "p") : 1, sum = 0;
	int64_t j[IR_MAX_RANK], at[IR_MAX_RANK], count = 0;
	for (int64_t q = 0; q < w->nk; q++) {
		int64_t s;
		eval_unflatten(q, w->k, w->nsp, j);
		s = tap(w, o, j, at);
		if (s >= 0)
			sum += lp ? pow(fabs(getf(IN(0), nc * w->nin + s)), p)
			          : getf(IN(0), nc * w->nin + s);
		count += s >= 0 || (pad_counts && in_padded(w, at));
	}
	return lp ? pow(sum, 1 / p) : sum / (double)count;
}

bool eval_pool(struct fold *f)
{
	struct window w;
	const struct ir_type *y = &OUT(0)->type;
	int64_t o[IR_MAX_RANK], nc = y->dims[0] * y->dims[1];
	window_init(&w, f->n, ir_attr_ints(f->n, "kernel", NULL));
	for (int64_t c = 0; c < nc; c++)
		for (int64_t p = 0; p < w.nout; p++) {
			int64_t dst = c * w.nout + p;
			eval_unflatten(p, w.out, w.nsp, o);
			if (f->n->op == IR_OP_MAX_POOL)
				max_pool_at(f, &w, c, o, dst);
			else
				putf(f, 0, dst, sum_pool_at(f, &w, c, o));
		}
	return true;
}

/* The global pools reduce each channel's whole spatial extent. */
bool eval_global_pool(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type;
	int64_t nc = x->dims[0] * x->dims[1], size = nc ? ir_type_elems(x) / nc : 0;
	enum ir_op op = f->n->op;
	double p = op == IR_OP_GLOBAL_LP_POOL ? (double)ir_attr_i(f->n, "p") : 1;
	for (int64_t c = 0; c < nc; c++) {
		double acc = op == IR_OP_GLOBAL_MAX_POOL ? -INFINITY : 0;
		for (int64_t i = 0; i < size; i++) {
			double v = getf(IN(0), c * size + i);
			if (op == IR_OP_GLOBAL_MAX_POOL)
				acc = v > acc || v != v ? v : acc;
			else
				acc += op == IR_OP_GLOBAL_LP_POOL ? pow(fabs(v), p) : v;
		}
		if (op == IR_OP_GLOBAL_AVG_POOL)
			acc /= (double)size;
		else if (op == IR_OP_GLOBAL_LP_POOL)
			acc = pow(acc, 1 / p);
		putf(f, 0, c, acc);
	}
	return true;
}
