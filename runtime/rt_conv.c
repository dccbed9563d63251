/*
 * rt_conv.c - N-D convolution and transposed convolution (f32, NCHW).
 *
 * Every geometry is handled as 3-D: a 1-D or 2-D convolution gets leading
 * spatial dimensions of size 1, so one set of loops serves nsp = 1, 2, 3
 * and the innermost loop always runs along the last (contiguous) spatial
 * dimension. For each dimension, the output positions whose tap lands
 * inside the input form one interval, computed once per tap (span()); the
 * loops run over that interval and write zeros (or skip) outside it, so
 * there are no per-element bounds checks and nothing is read out of
 * bounds whatever the pads, strides and dilations.
 *
 * Convolution is a GEMM per image and group, done by rt_gemm (which also
 * adds the bias, the residual and the activation right after the
 * multiplication, while the result is in cache):
 *
 *   Y[m/g, out] = W[m/g, c/g * k] x col[c/g * k, out]
 *
 * where col is the im2col expansion of the image's group, built in the
 * workspace (one image and one group: the compiler plans the workspace
 * statically and BLAS threads each GEMM, so a bigger buffer would buy
 * nothing). im2col rows are independent and are filled across the threads.
 * Two shapes skip it: a 1x1 convolution with stride 1 and no padding is a
 * GEMM on the input as it is, and a channel-wise (depthwise) convolution,
 * where each group has a single input channel, is a direct loop per output
 * plane (im2col there would copy k times the input for a GEMM with one
 * row), across the threads by plane, accumulating one tap at a time over
 * the plane so the inner loop is a contiguous multiply-add.
 *
 * Transposed convolution runs the GEMM the other way round,
 * col[m/g * k, in] = W[c/g, m/g * k]^T x X[c/g, in], and scatters col into
 * the output (col2im), each output plane by one thread (no races, a fixed
 * order, so results do not depend on the thread count), starting from the
 * bias and finishing with the activation while the plane is hot.
 */
#include "onnxc_rt.h"

#include <string.h>

/* In rt_gemm.c: y = act(y + residual) over n elements. */
void rt_epilogue_f32(const struct rt_epilogue *ep, float *y, const float *residual, int64_t n);

/* ------------------------------------------------------------------------ */
/* Geometry                                                                 */
/* ------------------------------------------------------------------------ */

struct geom {
	int64_t in[3], k[3], out[3], st[3], dil[3], pb[3], pe[3];
	int64_t in_sp, k_sp, out_sp;
	int64_t cg, mg; /* input and output channels per group */
};

/* d as 3-D geometry; 0 when the descriptor is not one a kernel can run. */
static int geom_init(const struct rt_conv_desc *d, struct geom *g)
{
	int lead;
	if (d->dtype != RT_F32 || d->nsp < 1 || d->nsp > 3 || d->n < 0 || d->c < 0 || d->m < 0 ||
	    d->group < 1 || d->c % d->group || d->m % d->group)
		return 0;
	lead = 3 - d->nsp;
	g->in_sp = g->k_sp = g->out_sp = 1;
	for (int i = 0; i < 3; i++) {
		int j = i - lead;
		g->in[i] = j < 0 ? 1 : d->in[j];
		g->k[i] = j < 0 ? 1 : d->k[j];
		g->out[i] = j < 0 ? 1 : d->out[j];
		g->st[i] = j < 0 ? 1 : d->stride[j];
		g->dil[i] = j < 0 ? 1 : d->dil[j];
		g->pb[i] = j < 0 ? 0 : d->pad_begin[j];
		g->pe[i] = j < 0 ? 0 : d->pad_end[j];
		if (g->in[i] < 0 || g->k[i] < 0 || g->out[i] < 0 || g->st[i] < 1 || g->dil[i] < 1)
			return 0;
		g->in_sp *= g->in[i];
		g->k_sp *= g->k[i];
		g->out_sp *= g->out[i];
	}
	g->cg = d->c / d->group;
	g->mg = d->m / d->group;
	return 1;
}

/* A 1x1 window with stride 1 and no padding: the output is the input's grid. */
static int pointwise(const struct geom *g)
{
	for (int i = 0; i < 3; i++)
		if (g->k[i] != 1 || g->st[i] != 1 || g->pb[i] || g->pe[i] || g->out[i] != g->in[i])
			return 0;
	return 1;
}

/* Each group has one input channel: a direct loop beats im2col. */
static int channelwise(const struct rt_conv_desc *d) { return d->group > 1 && d->c == d->group; }

/* Flat tap q as kernel coordinates. */
static void tap_coords(const struct geom *g, int64_t q, int64_t *t)
{
	t[2] = q % g->k[2];
	t[1] = q / g->k[2] % g->k[1];
	t[0] = q / g->k[2] / g->k[1];
}

/* [*lo, *hi): the t in [0, count) with 0 <= t * s + off < limit. */
static void span(int64_t count, int64_t limit, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
	int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
	int64_t b = limit - off <= 0 ? 0 : (limit - off + s - 1) / s;
	*lo = a < count ? a : count;
	*hi = b < count ? b : count;
	if (*hi < *lo)
		*hi = *lo;
}

/*
 * The intervals of tap t: for a convolution, the output positions that
 * read inside the input; transposed, the input positions that write
 * inside the output. off[] maps a position to the other side.
 */
static void tap_spans(const struct geom *g, const int64_t *t, int transposed, int64_t *lo,
                      int64_t *hi, int64_t *off)
{
	for (int i = 0; i < 3; i++) {
		off[i] = t[i] * g->dil[i] - g->pb[i];
		if (transposed)
			span(g->in[i], g->out[i], g->st[i], off[i], &lo[i], &hi[i]);
		else
			span(g->out[i], g->in[i], g->st[i], off[i], &lo[i], &hi[i]);
	}
}

static void fill(float *restrict y, float v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = v;
}

/* ------------------------------------------------------------------------ */
/* im2col                                                                   */
/* ------------------------------------------------------------------------ */

struct im2col {
	const struct geom *g;
	const float *x; /* the image's group: cg channels */
	float *col;     /* [cg * k_sp, out_sp] */
};

/* dst[0, n) = src[t * s] over [lo, hi) and 0 elsewhere (src already at lo). */
static void gather_row(float *restrict dst, const float *restrict src, int64_t lo, int64_t hi,
                       int64_t n, int64_t s)
{
	memset(dst, 0, (size_t)lo * sizeof *dst);
	if (s == 1) {
		memcpy(dst + lo, src, (size_t)(hi - lo) * sizeof *dst);
	} else {
		for (int64_t t = lo; t < hi; t++)
			dst[t] = src[(t - lo) * s];
	}
	memset(dst + hi, 0, (size_t)(n - hi) * sizeof *dst);
}

/*
 * gather_row for rows consecutive rows at once, when they are equally far
 * apart in src and dst (stride 1 along the row, and a source row step equal
 * to the row length: the usual "same" convolution). One copy moves them all;
 * it also drags neighbouring pixels into each row's margins, which are
 * zeroed afterwards. The copy starts at the first tap inside the input and
 * ends at the last one, so it reads nothing outside it.
 */
static void copy_rows(float *restrict dst, const float *restrict src, int64_t rows, int64_t lo,
                      int64_t hi, int64_t n)
{
	memcpy(dst + lo, src, (size_t)((rows - 1) * n + hi - lo) * sizeof *dst);
	for (int64_t r = 0; r < rows; r++) {
		memset(dst + r * n, 0, (size_t)lo * sizeof *dst);
		memset(dst + r * n + hi, 0, (size_t)(n - hi) * sizeof *dst);
	}
}

/* col row r (input channel r / k_sp, tap r % k_sp) for every output position. */
static void im2col_row(const struct im2col *j, int64_t r)
{
	const struct geom *g = j->g;
	int64_t t[3], lo[3], hi[3], off[3], n1 = g->out[1], n2 = g->out[2];
	int64_t row_step = g->st[1] * g->in[2]; /* source distance of consecutive rows */
	const float *x = j->x + r / g->k_sp * g->in_sp;
	tap_coords(g, r % g->k_sp, t);
	tap_spans(g, t, 0, lo, hi, off);
	for (int64_t o0 = 0; o0 < g->out[0]; o0++) {
		float *dst = j->col + r * g->out_sp + o0 * n1 * n2;
		const float *src;
		int64_t rows = hi[1] - lo[1];
		if (o0 < lo[0] || o0 >= hi[0] || rows == 0 || lo[2] == hi[2]) {
			memset(dst, 0, (size_t)(n1 * n2) * sizeof *dst);
			continue;
		}
		memset(dst, 0, (size_t)(lo[1] * n2) * sizeof *dst);
		memset(dst + hi[1] * n2, 0, (size_t)((n1 - hi[1]) * n2) * sizeof *dst);
		dst += lo[1] * n2;
		src = x +
		      ((o0 * g->st[0] + off[0]) * g->in[1] + lo[1] * g->st[1] + off[1]) * g->in[2] +
		      lo[2] * g->st[2] + off[2];
		if (g->st[2] == 1 && row_step == n2) {
			copy_rows(dst, src, rows, lo[2], hi[2], n2);
			continue;
		}
		for (int64_t o1 = 0; o1 < rows; o1++)
			gather_row(dst + o1 * n2, src + o1 * row_step, lo[2], hi[2], n2, g->st[2]);
	}
}

static void im2col_range(void *arg, int64_t b, int64_t e)
{
	for (int64_t r = b; r < e; r++)
		im2col_row(arg, r);
}

/* ------------------------------------------------------------------------ */
/* Convolution                                                              */
/* ------------------------------------------------------------------------ */

struct conv {
	const struct rt_conv_desc *d;
	struct geom g;
	const float *x, *w, *bias, *res;
	float *y;
	float *ws;
};

/* Are x or w NULL while they have elements? */
static int missing_operand(const struct conv *cv)
{
	const struct geom *g = &cv->g;
	return (!cv->x && cv->d->c * g->in_sp > 0) ||
	       (!cv->w && cv->d->group * g->cg * g->mg * g->k_sp > 0);
}

typedef int (*group_fn)(struct rt_ctx *ctx, const struct conv *cv, int64_t img, int64_t gi);

/* fn on each image's each group in turn; stops at the first failure. */
static int each_group(struct rt_ctx *ctx, const struct conv *cv, group_fn fn)
{
	for (int64_t img = 0; img < cv->d->n; img++)
		for (int64_t gi = 0; gi < cv->d->group; gi++) {
			int status = fn(ctx, cv, img, gi);
			if (status)
				return status;
		}
	return RT_OK;
}

/*
 * The last spatial dimension of a depthwise window: output o of a line
 * takes taps j = 0..k-1 from input o * s + off + j * dil. Outputs [a, b)
 * have every tap inside the input; the few others (the margins that see
 * padding) check each tap.
 */
struct dw_line {
	int64_t n, in, s, dil, off, k, a, b;
};

static struct dw_line dw_line_of(const struct geom *g)
{
	struct dw_line l = { g->out[2], g->in[2], g->st[2], g->dil[2], -g->pb[2], g->k[2], 0, 0 };
	int64_t unused;
	/* the first tap bounds the interior from below, the last from above */
	span(l.n, l.in, l.s, l.off, &l.a, &unused);
	span(l.n, l.in, l.s, l.off + (l.k - 1) * l.dil, &unused, &l.b);
	if (l.b < l.a)
		l.b = l.a;
	return l;
}

/* Margin outputs [from, to) of a line: taps checked one by one. */
static void dw_margin(float *y, const float *x, const float *w, const struct dw_line *l,
                      int64_t from, int64_t to)
{
	for (int64_t o = from; o < to; o++) {
		float acc = 0;
		for (int64_t j = 0; j < l->k; j++) {
			int64_t i = o * l->s + l->off + j * l->dil;
			if (i >= 0 && i < l->in)
				acc += w[j] * x[i];
		}
		y[o] += acc;
	}
}

/* y[o] += sum_j w[j] * x[o * s + off + j * dil] over the taps inside x. */
static void dw_apply(float *restrict y, const float *restrict x, const float *restrict w,
                     const struct dw_line *l)
{
	int64_t len = l->b - l->a, s = l->s, dil = l->dil;
	dw_margin(y, x, w, l, 0, l->a);
	dw_margin(y, x, w, l, l->b, l->n);
	if (len == 0)
		return;
	y += l->a;
	x += l->a * s + l->off;
	if (l->k == 3) {
		/* the common 3-wide window in one pass over the line */
		const float w0 = w[0], w1 = w[1], w2 = w[2];
		for (int64_t i = 0; i < len; i++)
			y[i] += w0 * x[i * s] + w1 * x[i * s + dil] + w2 * x[i * s + 2 * dil];
		return;
	}
	for (int64_t j = 0; j < l->k; j++) {
		const float wj = w[j];
		const float *xj = x + j * dil;
		for (int64_t i = 0; i < len; i++)
			y[i] += wj * xj[i * s];
	}
}

/*
 * Direct channel-wise convolution of output plane p = image * m + channel:
 * each output line accumulates every kernel line that lands inside the
 * input, so the line stays in L1 while its taps are summed.
 */
static void dw_plane(const struct conv *cv, int64_t p)
{
	const struct geom *g = &cv->g;
	const struct dw_line l = dw_line_of(g);
	int64_t oc = p % cv->d->m, img = p / cv->d->m;
	const float *x = cv->x + (img * cv->d->c + oc / g->mg) * g->in_sp;
	const float *w = cv->w + oc * g->k_sp;
	float *y = cv->y + p * g->out_sp;
	fill(y, cv->bias ? cv->bias[oc] : 0.0f, g->out_sp);
	for (int64_t o0 = 0; o0 < g->out[0] && g->k_sp; o0++)
		for (int64_t o1 = 0; o1 < g->out[1]; o1++) {
			float *yl = y + (o0 * g->out[1] + o1) * g->out[2];
			for (int64_t k0 = 0; k0 < g->k[0]; k0++) {
				int64_t i0 = o0 * g->st[0] + k0 * g->dil[0] - g->pb[0];
				if (i0 < 0 || i0 >= g->in[0])
					continue;
				for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
					int64_t i1 = o1 * g->st[1] + k1 * g->dil[1] - g->pb[1];
					if (i1 < 0 || i1 >= g->in[1])
						continue;
					dw_apply(yl, x + (i0 * g->in[1] + i1) * g->in[2],
					         w + (k0 * g->k[1] + k1) * g->k[2], &l);
				}
			}
		}
	rt_epilogue_f32(&cv->d->ep, y, cv->res ? cv->res + p * g->out_sp : NULL, g->out_sp);
}

static void dw_range(void *arg, int64_t b, int64_t e)
{
	for (int64_t p = b; p < e; p++)
		dw_plane(arg, p);
}

/* One image's group: im2col (unless pointwise), then the GEMM with the epilogue. */
static int conv_group(struct rt_ctx *ctx, const struct conv *cv, int64_t img, int64_t gi)
{
	const struct rt_conv_desc *d = cv->d;
	const struct geom *g = &cv->g;
	int64_t yoff = (img * d->m + gi * g->mg) * g->out_sp;
	const float *x = cv->x + (img * d->c + gi * g->cg) * g->in_sp;
	struct rt_gemm_desc gd = {
		.dtype = RT_F32,
		.m = g->mg,
		.n = g->out_sp,
		.k = g->cg * g->k_sp,
		.alpha = 1,
		.beta = 1,
		.bias = cv->bias ? RT_BIAS_COL : RT_BIAS_NONE,
		.ep = d->ep,
	};
	if (!pointwise(g)) {
		struct im2col j = { g, x, cv->ws };
		rt_parallel(ctx, gd.k, (16384 + g->out_sp - 1) / g->out_sp, im2col_range, &j);
		x = cv->ws;
	}
	return rt_gemm(ctx, &gd, cv->w + gi * g->mg * gd.k, x,
	               cv->bias ? cv->bias + gi * g->mg : NULL, cv->res ? cv->res + yoff : NULL,
	               cv->y + yoff);
}

size_t rt_conv_workspace(const struct rt_conv_desc *d)
{
	struct geom g;
	if (!geom_init(d, &g) || pointwise(&g) || channelwise(d))
		return 0;
	return (size_t)(g.cg * g.k_sp * g.out_sp) * sizeof(float);
}

int rt_conv(struct rt_ctx *ctx, const struct rt_conv_desc *d, const void *x, const void *w,
            const void *bias, const void *residual, void *y, void *ws)
{
	struct conv cv = { d, { { 0 } }, x, w, bias, d->ep.has_residual ? residual : NULL, y, ws };
	if (!geom_init(d, &cv.g))
		return RT_ERR_ARGUMENT;
	if (d->n == 0 || d->m == 0 || cv.g.out_sp == 0)
		return RT_OK;
	if (!y || missing_operand(&cv) || (d->ep.has_residual && !residual) ||
	    (rt_conv_workspace(d) && !ws))
		return RT_ERR_ARGUMENT;
	if (channelwise(d)) {
		int64_t work = cv.g.out_sp * cv.g.k_sp + 1;
		rt_parallel(ctx, d->n * d->m, (32768 + work - 1) / work, dw_range, &cv);
		return RT_OK;
	}
	return each_group(ctx, &cv, conv_group);
}

/* ------------------------------------------------------------------------ */
/* Transposed convolution                                                   */
/* ------------------------------------------------------------------------ */

/* Scatters output channel oc's col rows into its plane y (col2im). */
static void col2im_plane(const struct conv *cv, const float *col, float *y, int64_t oc_abs,
                         int64_t oc)
{
	const struct geom *g = &cv->g;
	fill(y, cv->bias ? cv->bias[oc_abs] : 0.0f, g->out_sp);
	for (int64_t q = 0; q < g->k_sp; q++) {
		int64_t t[3], lo[3], hi[3], off[3];
		const float *c = col + (oc * g->k_sp + q) * g->in_sp;
		tap_coords(g, q, t);
		tap_spans(g, t, 1, lo, hi, off);
		if (lo[2] == hi[2])
			continue;
		for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
			for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
				int64_t o0 = i0 * g->st[0] + off[0], o1 = i1 * g->st[1] + off[1];
				float *restrict yr = y + (o0 * g->out[1] + o1) * g->out[2] +
				                     lo[2] * g->st[2] + off[2];
				const float *restrict cr =
				        c + (i0 * g->in[1] + i1) * g->in[2] + lo[2];
				int64_t len = hi[2] - lo[2], s = g->st[2];
				for (int64_t i = 0; i < len; i++)
					yr[i * s] += cr[i];
			}
	}
	rt_epilogue_f32(&cv->d->ep, y, NULL, g->out_sp);
}

struct col2im {
	const struct conv *cv;
	int64_t img, gi;
};

static void col2im_range(void *arg, int64_t b, int64_t e)
{
	const struct col2im *j = arg;
	const struct conv *cv = j->cv;
	int64_t first = j->gi * cv->g.mg;
	for (int64_t oc = b; oc < e; oc++)
		col2im_plane(cv, cv->ws, cv->y + (j->img * cv->d->m + first + oc) * cv->g.out_sp,
		             first + oc, oc);
}

/* One image's group of a transposed convolution. */
static int conv_transpose_group(struct rt_ctx *ctx, const struct conv *cv, int64_t img, int64_t gi)
{
	const struct rt_conv_desc *d = cv->d;
	const struct geom *g = &cv->g;
	const float *x = cv->x + (img * d->c + gi * g->cg) * g->in_sp;
	const float *w = cv->w + gi * g->cg * g->mg * g->k_sp;
	int64_t yoff = (img * d->m + gi * g->mg) * g->out_sp;
	struct rt_gemm_desc gd = {
		.dtype = RT_F32,
		.m = g->mg * g->k_sp,
		.n = g->in_sp,
		.k = g->cg,
		.trans_a = 1,
		.alpha = 1,
		.beta = 1,
	};
	struct col2im j = { cv, img, gi };
	int status;
	if (pointwise(g)) {
		/* the GEMM lands on the output grid: bias and activation fuse into it */
		gd.bias = cv->bias ? RT_BIAS_COL : RT_BIAS_NONE;
		gd.ep = d->ep;
		return rt_gemm(ctx, &gd, w, x, cv->bias ? cv->bias + gi * g->mg : NULL, NULL,
		               cv->y + yoff);
	}
	if ((status = rt_gemm(ctx, &gd, w, x, NULL, NULL, cv->ws)))
		return status;
	rt_parallel(ctx, g->mg, (16384 + g->out_sp - 1) / g->out_sp, col2im_range, &j);
	return RT_OK;
}

size_t rt_conv_transpose_workspace(const struct rt_conv_desc *d)
{
	struct geom g;
	if (!geom_init(d, &g) || pointwise(&g))
		return 0;
	return (size_t)(g.mg * g.k_sp * g.in_sp) * sizeof(float);
}

int rt_conv_transpose(struct rt_ctx *ctx, const struct rt_conv_desc *d, const void *x,
                      const void *w, const void *bias, void *y, void *ws)
{
	struct conv cv = { d, { { 0 } }, x, w, bias, NULL, y, ws };
	/* there is no residual argument to honour has_residual with */
	if (!geom_init(d, &cv.g) || d->ep.has_residual)
		return RT_ERR_ARGUMENT;
	if (d->n == 0 || d->m == 0 || cv.g.out_sp == 0)
		return RT_OK;
	if (!y || missing_operand(&cv) || (rt_conv_transpose_workspace(d) && !ws))
		return RT_ERR_ARGUMENT;
	return each_group(ctx, &cv, conv_transpose_group);
}
