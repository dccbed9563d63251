/*
 * eval_reduce.c - reference evaluators for reductions and the ops that work
 * along one axis: argmax/argmin, topk, cumsum, cumprod, softmax, log_softmax,
 * hardmax.
 *
 * A reduction splits the input's dimensions into kept and reduced ones and
 * walks the reduced index space once per kept index. Floats accumulate in
 * double. Integer sums and products are exact and wrap like integer kernels
 * (computed in uint64, where overflow is defined); the reductions whose
 * results are not integers (l2, log_sum, log_sum_exp) go through double for
 * integer inputs too and are truncated when stored.
 *
 * The single-axis ops see the input as lanes: with outer and inner the
 * products of the dimensions before and after the axis, lane (o, i) holds
 * the elements o*dim*inner + i + j*inner for j < dim.
 */
#include "eval.h"

#include <math.h>

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
	eval_strides(t, s);
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

/* Reduces the elements at base + the reduced offsets, in double. An empty
 * max is -inf, an empty min +inf; a NaN wins both. */
static double reduce_f(struct fold *f, const struct red *r, int64_t base, enum ir_op op)
{
	double acc = op == IR_OP_REDUCE_PROD  ? 1
	             : op == IR_OP_REDUCE_MAX ? -INFINITY
	             : op == IR_OP_REDUCE_MIN ? INFINITY
	                                      : 0;
	double shift = 0;
	int64_t ri[IR_MAX_RANK] = { 0 };
	if (op == IR_OP_REDUCE_LOG_SUM_EXP) {
		/* subtracting the maximum keeps exp from overflowing */
		shift = reduce_f(f, r, base, IR_OP_REDUCE_MAX);
		shift = isfinite(shift) ? shift : 0;
	}
	for (int64_t j = 0; j < r->nr; j++) {
		double x = getf(IN(0), base + eval_dot(ri, r->red_st, r->nred));
		switch (op) {
		case IR_OP_REDUCE_MAX: acc = x > acc || x != x ? x : acc; break;
		case IR_OP_REDUCE_MIN: acc = x < acc || x != x ? x : acc; break;
		case IR_OP_REDUCE_PROD: acc *= x; break;
		case IR_OP_REDUCE_L1: acc += fabs(x); break;
		case IR_OP_REDUCE_L2:
		case IR_OP_REDUCE_SUM_SQUARE: acc += x * x; break;
		case IR_OP_REDUCE_LOG_SUM_EXP: acc += exp(x - shift); break;
		default: acc += x; break; /* sum, mean, log_sum */
		}
		eval_next(ri, r->red_dims, r->nred);
	}
	switch (op) {
	case IR_OP_REDUCE_MEAN: return acc / (double)r->nr;
	case IR_OP_REDUCE_L2: return sqrt(acc);
	case IR_OP_REDUCE_LOG_SUM: return log(acc);
	case IR_OP_REDUCE_LOG_SUM_EXP: return shift + log(acc);
	default: return acc;
	}
}

/* The same for integers, exactly; an empty max or min is 0. */
static int64_t reduce_i(struct fold *f, const struct red *r, int64_t base, enum ir_op op)
{
	bool is_signed = ir_dtypes[IN(0)->type.dtype].is_signed;
	uint64_t acc = op == IR_OP_REDUCE_PROD;
	int64_t ri[IR_MAX_RANK] = { 0 }, best = -1, sign = op == IR_OP_REDUCE_MAX ? 1 : -1;
	for (int64_t j = 0; j < r->nr; j++) {
		int64_t at = base + eval_dot(ri, r->red_st, r->nred);
		uint64_t x = (uint64_t)geti(IN(0), at);
		switch (op) {
		case IR_OP_REDUCE_MAX:
		case IR_OP_REDUCE_MIN:
			if (best < 0 || sign * eval_cmp(IN(0), at, best) > 0)
				best = at;
			break;
		case IR_OP_REDUCE_PROD: acc *= x; break;
		case IR_OP_REDUCE_L1: acc += is_signed && (int64_t)x < 0 ? 0 - x : x; break;
		case IR_OP_REDUCE_SUM_SQUARE: acc += x * x; break;
		default: acc += x; break; /* sum, mean */
		}
		eval_next(ri, r->red_dims, r->nred);
	}
	if (op == IR_OP_REDUCE_MAX || op == IR_OP_REDUCE_MIN)
		return best < 0 ? 0 : geti(IN(0), best);
	if (op == IR_OP_REDUCE_MEAN && r->nr)
		return is_signed ? (int64_t)acc / r->nr : (int64_t)(acc / (uint64_t)r->nr);
	return (int64_t)acc;
}

bool eval_reduce(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int naxes;
	const int64_t *axes = ir_attr_ints(f->n, "axes", &naxes);
	enum ir_op op = f->n->op;
	bool exact = !isf(t->dtype) && op != IR_OP_REDUCE_L2 && op != IR_OP_REDUCE_LOG_SUM &&
	             op != IR_OP_REDUCE_LOG_SUM_EXP;
	struct red r;
	int64_t ki[IR_MAX_RANK] = { 0 };
	red_setup(&r, t, axes, naxes);
	for (int64_t k = 0; k < r.nk; k++) {
		int64_t base = eval_dot(ki, r.kept_st, r.nkept);
		if (exact)
			puti(f, 0, k, reduce_i(f, &r, base, op));
		else
			putf(f, 0, k, reduce_f(f, &r, base, op));
		eval_next(ki, r.kept_dims, r.nkept);
	}
	return true;
}

/* The lanes along the node's axis attribute. */
struct lanes {
	int64_t outer, dim, inner;
};

static struct lanes lanes_of(struct fold *f)
{
	struct lanes l;
	int axis = (int)ir_attr_i(f->n, "axis");
	eval_axis_blocks(&IN(0)->type, axis, &l.outer, &l.inner);
	l.dim = IN(0)->type.dims[axis];
	return l;
}

/* The first extreme of each lane, or the last with select_last_index. */
bool eval_arg(struct fold *f)
{
	struct lanes l = lanes_of(f);
	bool last = ir_attr_i(f->n, "select_last_index") != 0;
	int sign = f->n->op == IR_OP_ARGMAX ? 1 : -1;
	for (int64_t o = 0; o < l.outer; o++)
		for (int64_t i = 0; i < l.inner; i++) {
			int64_t base = o * l.dim * l.inner + i, best = 0;
			for (int64_t j = 1; j < l.dim; j++) {
				int c = sign *
				        eval_cmp(IN(0), base + j * l.inner, base + best * l.inner);
				if (c > 0 || (last && c == 0))
					best = j;
			}
			puti(f, 0, o * l.inner + i, best);
		}
	return true;
}

/*
 * topk: each lane sorted whole, then its first k taken. The order is ONNX's
 * reference (a lexsort): by value, a NaN above every number and equal to
 * another NaN, ties to the lower index; largest 0 reverses the values'
 * order, not the ties'. A stable merge sort keeps equal values in index
 * order.
 */
static int topk_cmp(const struct ir_value *v, int64_t a, int64_t b)
{
	if (isf(v->type.dtype)) {
		bool na = isnan(getf(v, a)), nb = isnan(getf(v, b));
		if (na || nb)
			return na - nb;
	}
	return eval_cmp(v, a, b);
}

/* Sorts idx[0..n) (element offsets into IN(0)) by sign * value, stably. */
static void topk_sort(struct fold *f, int64_t *idx, int64_t *tmp, int64_t n, int sign)
{
	int64_t h = n / 2, i = 0, j = h, k = 0;
	if (n < 2)
		return;
	topk_sort(f, idx, tmp, h, sign);
	topk_sort(f, idx + h, tmp, n - h, sign);
	while (i < h && j < n)
		tmp[k++] = sign * topk_cmp(IN(0), idx[j], idx[i]) > 0 ? idx[j++] : idx[i++];
	while (i < h)
		tmp[k++] = idx[i++];
	while (j < n)
		tmp[k++] = idx[j++];
	memcpy(idx, tmp, sizeof *idx * (size_t)n);
}

bool eval_topk(struct fold *f)
{
	struct lanes l = lanes_of(f);
	int64_t k = ir_attr_i(f->n, "k");
	int sign = ir_attr_i(f->n, "largest") ? 1 : -1;
	int64_t *idx = eval_alloc(f, sizeof *idx * (size_t)l.dim);
	int64_t *tmp = eval_alloc(f, sizeof *tmp * (size_t)l.dim);
	for (int64_t o = 0; o < l.outer; o++)
		for (int64_t i = 0; i < l.inner; i++) {
			int64_t base = o * l.dim * l.inner + i;
			for (int64_t j = 0; j < l.dim; j++)
				idx[j] = base + j * l.inner;
			topk_sort(f, idx, tmp, l.dim, sign);
			for (int64_t j = 0; j < k; j++) {
				int64_t at = o * k * l.inner + i + j * l.inner;
				copy_elem(f, 0, at, idx[j]);
				puti(f, 1, at, (idx[j] - base) / l.inner);
			}
		}
	eval_free(f, tmp);
	eval_free(f, idx);
	return true;
}

/* cumsum and cumprod: floats accumulate in double, integers wrap in uint64 */
bool eval_cumsum(struct fold *f)
{
	struct lanes l = lanes_of(f);
	bool excl = ir_attr_i(f->n, "exclusive") != 0, rev = ir_attr_i(f->n, "reverse") != 0;
	bool flt = isf(IN(0)->type.dtype), prod = f->n->op == IR_OP_CUMPROD;
	for (int64_t o = 0; o < l.outer; o++)
		for (int64_t i = 0; i < l.inner; i++) {
			double acc = prod;
			uint64_t iacc = prod;
			for (int64_t j = 0; j < l.dim; j++) {
				int64_t at = o * l.dim * l.inner + i +
				             (rev ? l.dim - 1 - j : j) * l.inner;
				if (flt) {
					double x = getf(IN(0), at), next = prod ? acc * x : acc + x;
					putf(f, 0, at, excl ? acc : next);
					acc = next;
				} else {
					uint64_t x = (uint64_t)geti(IN(0), at);
					uint64_t next = prod ? iacc * x : iacc + x;
					puti(f, 0, at, (int64_t)(excl ? iacc : next));
					iacc = next;
				}
			}
		}
	return true;
}

/*
 * softmax, log_softmax and hardmax of one lane. Softmax subtracts the
 * lane's maximum before exponentiating so that large inputs do not
 * overflow; hardmax marks the lane's first maximum.
 */
static void softmax_lane(struct fold *f, int64_t base, int64_t dim, int64_t step)
{
	enum ir_op op = f->n->op;
	double mx = -INFINITY, sum = 0;
	int64_t arg = 0;
	for (int64_t j = 0; j < dim; j++) {
		double x = getf(IN(0), base + j * step);
		if (x > mx) {
			mx = x;
			arg = j;
		}
	}
	for (int64_t j = 0; j < dim; j++)
		sum += exp(getf(IN(0), base + j * step) - mx);
	for (int64_t j = 0; j < dim; j++) {
		int64_t at = base + j * step;
		double x = getf(IN(0), at) - mx;
		if (op == IR_OP_SOFTMAX)
			putf(f, 0, at, exp(x) / sum);
		else if (op == IR_OP_LOG_SOFTMAX)
			putf(f, 0, at, x - log(sum));
		else
			putf(f, 0, at, j == arg);
	}
}

bool eval_softmax(struct fold *f)
{
	struct lanes l = lanes_of(f);
	for (int64_t o = 0; o < l.outer; o++)
		for (int64_t i = 0; i < l.inner; i++)
			softmax_lane(f, o * l.dim * l.inner + i, l.dim, l.inner);
	return true;
}
