/*
 * eval_norm.c - reference evaluators for the normalizations: batch_norm
 * (inference, with given statistics), instance_norm, layer_norm and lrn.
 *
 * Statistics are computed in double in two passes (the mean, then the mean
 * squared deviation), the population variance as ONNX defines it, so the
 * reference is not the thing that loses precision on inputs with a large
 * mean. layer_norm's optional mean and inverse standard deviation results
 * are f32 whatever the input type, as inference declares them.
 */
#include "eval.h"

#include <math.h>

/* Mean and population variance of the n contiguous elements of v at off. */
static void moments(const struct ir_value *v, int64_t off, int64_t n, double *mean, double *var)
{
	double sum = 0, sq = 0;
	for (int64_t i = 0; i < n; i++)
		sum += getf(v, off + i);
	*mean = n ? sum / (double)n : 0;
	for (int64_t i = 0; i < n; i++) {
		double d = getf(v, off + i) - *mean;
		sq += d * d;
	}
	*var = n ? sq / (double)n : 0;
}

/* Channels are dimension 1 of [N, C, ...]; inner is the size of one channel's
 * spatial block. */
static int64_t spatial_size(const struct ir_type *t)
{
	int64_t inner = 1;
	for (int d = 2; d < t->rank; d++)
		inner *= t->dims[d];
	return inner;
}

bool eval_batch_norm(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type;
	int64_t inner = spatial_size(x), C = x->dims[1], total = ir_type_elems(x);
	double eps = ir_attr_f(f->n, "epsilon");
	for (int64_t k = 0; k < total; k++) {
		int64_t c = k / inner % C;
		double y = (getf(IN(0), k) - getf(IN(3), c)) / sqrt(getf(IN(4), c) + eps);
		putf(f, 0, k, y * getf(IN(1), c) + getf(IN(2), c));
	}
	return true;
}

bool eval_instance_norm(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type;
	int64_t inner = spatial_size(x), C = x->dims[1], nc = x->dims[0] * C;
	double eps = ir_attr_f(f->n, "epsilon");
	for (int64_t b = 0; b < nc; b++) {
		double mean, var, scale = getf(IN(1), b % C), bias = getf(IN(2), b % C);
		moments(IN(0), b * inner, inner, &mean, &var);
		for (int64_t i = 0; i < inner; i++) {
			int64_t k = b * inner + i;
			putf(f, 0, k, (getf(IN(0), k) - mean) / sqrt(var + eps) * scale + bias);
		}
	}
	return true;
}

/*
 * Each row of the dimensions from axis on is normalized on its own; scale
 * and bias broadcast (numpy style) to the row's shape.
 */
bool eval_layer_norm(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type;
	int axis = (int)ir_attr_i(f->n, "axis");
	struct ir_type row = { .dtype = x->dtype, .rank = x->rank - axis };
	int64_t outer, inner, ss[IR_MAX_RANK] = { 0 }, bs[IR_MAX_RANK] = { 0 }, idx[IR_MAX_RANK];
	double eps = ir_attr_f(f->n, "epsilon");
	memcpy(row.dims, x->dims + axis, sizeof(int64_t) * (size_t)row.rank);
	eval_axis_blocks(x, axis, &outer, &inner);
	inner *= x->dims[axis];
	eval_bcast_strides(&IN(1)->type, &row, ss);
	if (f->n->nin > 2)
		eval_bcast_strides(&IN(2)->type, &row, bs);
	for (int64_t r = 0; r < outer; r++) {
		double mean, var, inv;
		moments(IN(0), r * inner, inner, &mean, &var);
		inv = 1 / sqrt(var + eps);
		memset(idx, 0, sizeof idx);
		for (int64_t i = 0; i < inner; i++) {
			int64_t k = r * inner + i;
			double y = (getf(IN(0), k) - mean) * inv *
			           getf(IN(1), eval_dot(idx, ss, row.rank));
			if (f->n->nin > 2)
				y += getf(IN(2), eval_dot(idx, bs, row.rank));
			putf(f, 0, k, y);
			eval_next(idx, row.dims, row.rank);
		}
		if (f->n->nout > 1)
			putf(f, 1, r, mean);
		if (f->n->nout > 2)
			putf(f, 2, r, inv);
	}
	return true;
}

/*
 * Local response normalization across channels: each element is divided by
 * (bias + alpha/size * s)^beta, s summing the squares over the channels
 * c - floor((size-1)/2) .. c + ceil((size-1)/2) that exist.
 */
bool eval_lrn(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type;
	int64_t inner = spatial_size(x), C = x->dims[1], total = ir_type_elems(x);
	int64_t size = ir_attr_i(f->n, "size");
	double alpha = ir_attr_f(f->n, "alpha"), beta = ir_attr_f(f->n, "beta"),
	       bias = ir_attr_f(f->n, "bias");
	for (int64_t k = 0; k < total; k++) {
		int64_t c = k / inner % C, base = k - c * inner;
		int64_t lo = c - (size - 1) / 2, hi = c + size / 2;
		double sq = 0;
		for (int64_t i = lo < 0 ? 0 : lo; i <= hi && i < C; i++) {
			double v = getf(IN(0), base + i * inner);
			sq += v * v;
		}
		putf(f, 0, k, getf(IN(0), k) / pow(bias + alpha / (double)size * sq, beta));
	}
	return true;
}
