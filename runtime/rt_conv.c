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
 * Convolution is a GEMM per image and group:
 *
 *   Y[m/g, out] = W[m/g, c/g * k] x col[c/g * k, out]
 *
 * where col is the im2col expansion of the image's group. With the
 * runtime's own GEMM (rt_sgemm.c: AVX-512 or AVX2) col is never built:
 * the GEMM asks for its B operand a block at a time, in panels of 32 (or
 * 16) output positions, and conv_pack writes those panels straight from
 * the image (implicit im2col), saving a pass over a buffer k times the
 * size of the input. A panel's positions are cut into segments that lie
 * on one output row (struct seg); for each tap, a segment reads one run of
 * an input row, so a vector of the panel row is one masked load per
 * segment (stride 1; a "same" convolution's consecutive rows continue one
 * another in the input and merge into one load), two loads and a permute
 * (stride 2) or a gather, and the tap's loads serve every channel of the
 * block. The bias, the residual and the activation are fused into the
 * GEMM's kernels. Images and groups are GEMMs of one shape, run one after
 * the other across the threads or side by side when small
 * (rt_sgemm_batch).
 *
 * Without those kernels (ONNXC_GEMM=blas, or a CPU without AVX2), col is
 * built in the workspace (one image and one group, so the compiler can
 * plan it statically) with its rows filled across the threads, and rt_gemm
 * (OpenBLAS) multiplies it, adding the bias, the residual and the
 * activation right after. rt_conv_workspace is that buffer's size either
 * way: it depends on the descriptor only, not on the CPU.
 *
 * Two shapes skip im2col: a 1x1 convolution with stride 1 and no padding
 * is a GEMM on the input as it is, and a channel-wise (depthwise)
 * convolution, where each group has a single input channel, is a direct
 * loop per output plane (im2col there would copy k times the input for a
 * GEMM with one row), across the threads by plane, accumulating one tap
 * at a time over the plane so the inner loop is a contiguous multiply-add.
 *
 * Transposed convolution runs the GEMM the other way round,
 * col[m/g * k, in] = W[c/g, m/g * k]^T x X[c/g, in], and scatters col into
 * the output (col2im), each output plane by one thread (no races, a fixed
 * order, so results do not depend on the thread count), starting from the
 * bias and finishing with the activation while the plane is hot.
 */
#include "onnxc_rt.h"
#include "rt_sgemm.h"

#include <immintrin.h>

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
/* ceil(a / s) for a >= 0: strides 1 and 2 without a division (packing calls this a lot). */
static int64_t cdiv_pos(int64_t a, int64_t s)
{
	return s == 1 ? a : s == 2 ? (a + 1) >> 1 : (a + s - 1) / s;
}

static void span(int64_t count, int64_t limit, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
	int64_t a = off >= 0 ? 0 : cdiv_pos(-off, s);
	int64_t b = limit - off <= 0 ? 0 : cdiv_pos(limit - off, s);
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

/* ------------------------------------------------------------------------ */
/* Implicit im2col: GEMM panels packed straight from the image              */
/* ------------------------------------------------------------------------ */

#define AVX512    __attribute__((target("avx512f")))
#define PANEL_MAX 32 /* the widest panel (rt_sgemm_nr) */
#define VEC       16 /* lanes of an AVX-512 vector */

/*
 * Lanes [l0, l1) of a panel: consecutive output positions on one output
 * row (and, for the vector packer, in one vector). i[] is where lane l0's
 * window starts in the input (out * stride - pad_begin, per dimension).
 */
struct seg {
	int l0, l1;
	int64_t i[3];
};

/* The segments of panel columns [j, j + w), cut at multiples of cut lanes too. */
static int panel_segs(const struct geom *g, int64_t j, int w, int cut, struct seg *s)
{
	int n = 0;
	for (int l = 0; l < w; n++) {
		int64_t o2 = (j + l) % g->out[2], row = (j + l) / g->out[2];
		int64_t len = g->out[2] - o2;
		if (len > w - l)
			len = w - l;
		if (len > cut - l % cut)
			len = cut - l % cut;
		s[n].l0 = l;
		s[n].l1 = l + (int)len;
		s[n].i[0] = row / g->out[1] * g->st[0] - g->pb[0];
		s[n].i[1] = row % g->out[1] * g->st[1] - g->pb[1];
		s[n].i[2] = o2 * g->st[2] - g->pb[2];
		l += (int)len;
	}
	return n;
}

/*
 * Segment s at tap t: lanes [*lo, *hi) read inside the input, lane *lo at
 * *off in the channel (the next ones every st[2]); 0 when no lane does.
 */
static int seg_at_tap(const struct geom *g, const struct seg *s, const int64_t *t, int *lo, int *hi,
                      int64_t *off)
{
	int64_t i0 = s->i[0] + t[0] * g->dil[0], i1 = s->i[1] + t[1] * g->dil[1];
	int64_t i2 = s->i[2] + t[2] * g->dil[2], a, b;
	if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1])
		return 0;
	span(s->l1 - s->l0, g->in[2], g->st[2], i2, &a, &b);
	if (a == b)
		return 0;
	*lo = s->l0 + (int)a;
	*hi = s->l0 + (int)b;
	*off = (i0 * g->in[1] + i1) * g->in[2] + i2 + a * g->st[2];
	return 1;
}

/* [*c0, *c1): the channels whose im2col row c * k_sp + q is in [k0, k0 + kc). */
static void tap_channels(const struct geom *g, int64_t q, int64_t k0, int64_t kc, int64_t *c0,
                         int64_t *c1)
{
	*c0 = k0 <= q ? 0 : (k0 - q + g->k_sp - 1) / g->k_sp;
	*c1 = k0 + kc <= q ? 0 : (k0 + kc - 1 - q) / g->k_sp + 1;
	if (*c1 < *c0)
		*c1 = *c0;
}

/*
 * Im2col rows [k0, k0 + kc) x columns [j, j + w) as one panel nr wide, in
 * plain C: taps outside, then the segments that read inside the input,
 * then every channel of the block with that tap.
 */
static void pack_panel(const struct geom *g, const float *x, float *dst, int64_t k0, int64_t kc,
                       int64_t j, int w, int nr)
{
	struct seg s[PANEL_MAX];
	int ns = panel_segs(g, j, w, nr, s);
	memset(dst, 0, (size_t)(kc * nr) * sizeof *dst);
	for (int64_t q = 0; q < g->k_sp; q++) {
		int64_t t[3], c0, c1, off;
		tap_coords(g, q, t);
		tap_channels(g, q, k0, kc, &c0, &c1);
		for (int i = 0; i < ns && c0 < c1; i++) {
			int lo, hi;
			if (!seg_at_tap(g, &s[i], t, &lo, &hi, &off))
				continue;
			for (int64_t c = c0; c < c1; c++) {
				float *restrict d = dst + (c * g->k_sp + q - k0) * nr;
				const float *restrict src = x + c * g->in_sp + off;
				for (int l = lo; l < hi; l++)
					d[l] = src[(l - lo) * g->st[2]];
			}
		}
	}
}

/*
 * The loads of one vector (16 lanes of a panel row) at one tap: where lane
 * 0 would read in the channel (off; it may lie before the channel, the
 * lanes read do not) and which lanes are read (m); with stride 2, which
 * elements of the two loads whose even elements are the lanes (mlo, mhi).
 */
struct vload {
	int64_t off;
	unsigned m, mlo, mhi;
};

/* Bits [lo, hi) of a 16-bit mask. */
static unsigned bit_range(int lo, int hi) { return (0xffffu >> (16 - hi)) & ~((1u << lo) - 1); }

/*
 * Adds segment s's reads at tap t to its vector's loads v[0, *n): a new
 * load, or the last one widened when the segment continues it in the input
 * (the output rows of a stride-1 "same" convolution do, so such a vector
 * is one load whatever rows it spans).
 */
static void add_vload(const struct geom *g, const struct seg *s, const int64_t *t, struct vload *v,
                      int *n)
{
	int lo, hi, a, b;
	int64_t off;
	unsigned m, mlo, mhi;
	if (!seg_at_tap(g, s, t, &lo, &hi, &off))
		return;
	a = lo % VEC;
	b = a + hi - lo;
	off -= a * g->st[2];
	m = bit_range(a, b);
	mlo = a < VEC / 2 ? bit_range(2 * a, 2 * (b < VEC / 2 ? b : VEC / 2)) & 0x5555 : 0;
	mhi = b > VEC / 2 ? bit_range(2 * (a > VEC / 2 ? a : VEC / 2) - VEC, 2 * b - VEC) & 0x5555
	                  : 0;
	if (*n > 0 && v[*n - 1].off == off) {
		v[*n - 1].m |= m;
		v[*n - 1].mlo |= mlo;
		v[*n - 1].mhi |= mhi;
		return;
	}
	v[(*n)++] = (struct vload){ off, m, mlo, mhi };
}

/*
 * One vector of channel x: its loads v[0, n) merged, contiguous (st 1),
 * the even elements of two loads (st 2, idx picks them) or gathered (st 0,
 * idx holds the lane offsets). Lanes no load covers are zero.
 */
static inline __attribute__((always_inline)) AVX512 __m512 vec_loads(const float *x,
                                                                     const struct vload *v, int n,
                                                                     const int st,
                                                                     const __m512i idx)
{
	__m512 acc = _mm512_setzero_ps();
	for (int i = 0; i < n; i++) {
		const float *p = x + v[i].off;
		const __mmask16 m = (__mmask16)v[i].m;
		if (st == 1) {
			acc = _mm512_mask_loadu_ps(acc, m, p);
		} else if (st == 2) {
			__m512 lo = _mm512_maskz_loadu_ps((__mmask16)v[i].mlo, p);
			__m512 hi = _mm512_maskz_loadu_ps((__mmask16)v[i].mhi, p + VEC);
			acc = _mm512_mask_mov_ps(acc, m, _mm512_permutex2var_ps(lo, idx, hi));
		} else {
			acc = _mm512_mask_i32gather_ps(acc, m, idx, p, 4);
		}
	}
	return acc;
}

/* pack_panel512's loops for input stride st (0: any). */
static inline __attribute__((always_inline)) AVX512 void
pack_taps512(const struct geom *g, const float *x, float *dst, int64_t k0, int64_t kc,
             const struct seg *s, int ns, const int st, const __m512i idx)
{
	for (int64_t q = 0; q < g->k_sp; q++) {
		struct vload v[2][VEC];
		int64_t t[3], c0, c1;
		int n[2] = { 0, 0 };
		tap_coords(g, q, t);
		tap_channels(g, q, k0, kc, &c0, &c1);
		for (int i = 0; i < ns && c0 < c1; i++)
			add_vload(g, &s[i], t, v[s[i].l0 / VEC], &n[s[i].l0 / VEC]);
		for (int64_t c = c0; c < c1; c++) {
			float *d = dst + (c * g->k_sp + q - k0) * 2 * VEC;
			const float *xc = x + c * g->in_sp;
			_mm512_store_ps(d, vec_loads(xc, v[0], n[0], st, idx));
			_mm512_store_ps(d + VEC, vec_loads(xc, v[1], n[1], st, idx));
		}
	}
}

/* pack_panel for AVX-512 panels (32 lanes): two vectors per im2col row. */
static AVX512 void pack_panel512(const struct geom *g, const float *x, float *dst, int64_t k0,
                                 int64_t kc, int64_t j, int w)
{
	struct seg s[PANEL_MAX];
	const int ns = panel_segs(g, j, w, VEC, s);
	const __m512i iota =
	        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	if (g->st[2] == 1)
		pack_taps512(g, x, dst, k0, kc, s, ns, 1, iota);
	else if (g->st[2] == 2)
		pack_taps512(g, x, dst, k0, kc, s, ns, 2, _mm512_slli_epi32(iota, 1));
	else
		pack_taps512(g, x, dst, k0, kc, s, ns, 0,
		             _mm512_mullo_epi32(iota, _mm512_set1_epi32((int)g->st[2])));
}

/* rt_sgemm_pack_fn: the image group's im2col, panel by panel. */
static void conv_pack(const struct rt_sgemm *s, float *dst, int64_t k0, int64_t kc, int64_t j0,
                      int64_t nc)
{
	const struct conv *cv = s->pack_arg;
	const int nr = rt_sgemm_nr(s->isa);
	for (int64_t q = 0; q < nc; q += nr, dst += kc * nr) {
		int w = (int)(nc - q < nr ? nc - q : nr);
		if (nr == 2 * VEC)
			pack_panel512(&cv->g, s->b, dst, k0, kc, j0 + q, w);
		else
			pack_panel(&cv->g, s->b, dst, k0, kc, j0 + q, w, nr);
	}
}

/* rt_sgemm_done_fn: bias, residual and activation on a finished block. */
static void conv_done(const struct rt_sgemm *s, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	const struct conv *cv = s->done_arg;
	const float *bias = cv->bias ? cv->bias + s->item % cv->d->group * cv->g.mg : NULL;
	for (int64_t i = i0; i < i1; i++) {
		float *restrict y = s->c + i * s->ldc + j0;
		if (bias) {
			const float b = bias[i];
			for (int64_t j = 0; j < j1 - j0; j++)
				y[j] += b;
		}
		rt_epilogue_f32(&cv->d->ep, y, cv->res ? cv->res + (y - cv->y) : NULL, j1 - j0);
	}
}

struct conv_sg {
	const struct conv *cv;
	int isa;
};

/* Image and group i as an rt_sgemm: W x im2col(x), packed from x directly. */
static void conv_item(void *arg, int64_t i, struct rt_sgemm *s)
{
	const struct conv_sg *cs = arg;
	const struct conv *cv = cs->cv;
	const struct geom *g = &cv->g;
	int64_t img = i / cv->d->group, gi = i % cv->d->group, k = g->cg * g->k_sp;
	*s = (struct rt_sgemm){
		.isa = cs->isa,
		.m = g->mg,
		.n = g->out_sp,
		.k = k,
		.a = cv->w + gi * g->mg * k,
		.a_rs = k,
		.a_cs = 1,
		.b = cv->x + (img * cv->d->c + gi * g->cg) * g->in_sp,
		.b_rs = g->in_sp,
		.b_cs = 1,
		.pack_b = pointwise(g) ? NULL : conv_pack,
		.pack_arg = cv,
		.c = cv->y + (img * cv->d->m + gi * g->mg) * g->out_sp,
		.ldc = g->out_sp,
		.alpha = 1,
		.done_arg = (void *)cv,
	};
	if (!rt_sgemm_fusable(cv->d->ep.act)) {
		s->done = conv_done;
		return;
	}
	/* bias, residual and activation in the GEMM's kernels */
	s->fuse = 1;
	s->ep = (struct rt_sgemm_ep){
		.bias = cv->bias ? cv->bias + gi * g->mg : NULL,
		.bias_rs = 1,
		.bias_scale = 1,
		.res = cv->res ? cv->res + (s->c - cv->y) : NULL,
		.res_ld = g->out_sp,
		.act = cv->d->ep.act,
		.alpha = cv->d->ep.alpha,
		.beta = cv->d->ep.beta,
	};
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

/*
 * Few output positions under a big kernel - a filter gradient is such a
 * convolution: the input by the output's gradient, a 16x16 "kernel" over
 * 64 channels for 3x3 outputs. The usual orientation would pack panels of
 * 32 positions holding 9, each row one tap of one channel (tens of
 * thousands of rows), so the time goes into working out each tap's loads.
 * Turned around, every output is a long dot product of two contiguous rows,
 *
 *   Y[i, q] = W[i, 0 .. c/g * k) . col^T[q, 0 .. c/g * k)
 *
 * with col^T built in the workspace a row per output position (the window
 * under it: runs along the last dimension, copied). A GEMM would pack one
 * operand through a stride of c/g * k floats; the dot products read both
 * rows in order, sixteen independent sums wide (so they vectorize and the
 * order of additions is fixed), an output channel per task.
 */
#define FEW_OUTPUTS 32

static int few_outputs(const struct geom *g)
{
	return !pointwise(g) && g->out_sp <= FEW_OUTPUTS && g->k_sp > g->out_sp;
}

struct colt {
	const struct geom *g;
	const float *x; /* the image's group */
	float *dst;     /* [out_sp, cg * k_sp] */
};

static void colt_row(const struct colt *j, int64_t q)
{
	const struct geom *g = j->g;
	int64_t o0 = q / (g->out[1] * g->out[2]), o1 = q / g->out[2] % g->out[1],
	        o2 = q % g->out[2];
	int64_t off2 = o2 * g->st[2] - g->pb[2], lo, hi;
	float *dst = j->dst + q * g->cg * g->k_sp;
	span(g->k[2], g->in[2], g->dil[2], off2, &lo, &hi);
	for (int64_t c = 0; c < g->cg; c++)
		for (int64_t t0 = 0; t0 < g->k[0]; t0++) {
			int64_t i0 = o0 * g->st[0] - g->pb[0] + t0 * g->dil[0];
			for (int64_t t1 = 0; t1 < g->k[1]; t1++, dst += g->k[2]) {
				int64_t i1 = o1 * g->st[1] - g->pb[1] + t1 * g->dil[1];
				if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1]) {
					memset(dst, 0, (size_t)g->k[2] * sizeof *dst);
					continue;
				}
				gather_row(dst,
				           j->x + c * g->in_sp + (i0 * g->in[1] + i1) * g->in[2] +
				                   off2 + lo * g->dil[2],
				           lo, hi, g->k[2], g->dil[2]);
			}
		}
}

static void colt_range(void *arg, int64_t b, int64_t e)
{
	for (int64_t q = b; q < e; q++)
		colt_row(arg, q);
}

static float dot(const float *restrict a, const float *restrict b, int64_t n)
{
	float acc[16] = { 0 }, s = 0;
	int64_t p = 0;
	for (; p + 16 <= n; p += 16)
		for (int l = 0; l < 16; l++)
			acc[l] += a[p + l] * b[p + l];
	for (int l = 0; p + l < n; l++)
		acc[l] += a[p + l] * b[p + l];
	for (int l = 0; l < 16; l++)
		s += acc[l];
	return s;
}

/* Work on one image's group, split across the threads by output channel
 * (few_range, col2im_range). */
struct group_job {
	const struct conv *cv;
	int64_t img, gi;
};

/* Output channels [b, e) of the group: dot products, bias, epilogue. */
static void few_range(void *arg, int64_t b, int64_t e)
{
	const struct group_job *f = arg;
	const struct conv *cv = f->cv;
	const struct geom *g = &cv->g;
	int64_t k = g->cg * g->k_sp;
	for (int64_t i = b; i < e; i++) {
		int64_t ch = f->gi * g->mg + i;
		const float *w = cv->w + ch * k;
		float *y = cv->y + (f->img * cv->d->m + ch) * g->out_sp;
		float bias = cv->bias ? cv->bias[ch] : 0;
		for (int64_t q = 0; q < g->out_sp; q++)
			y[q] = dot(w, cv->ws + q * k, k) + bias;
		rt_epilogue_f32(&cv->d->ep, y, cv->res ? cv->res + (y - cv->y) : NULL, g->out_sp);
	}
}

/* Image img's group gi, turned around (above). */
static int conv_group_few(struct rt_ctx *ctx, const struct conv *cv, int64_t img, int64_t gi)
{
	const struct geom *g = &cv->g;
	struct colt j = { g, cv->x + (img * cv->d->c + gi * g->cg) * g->in_sp, cv->ws };
	struct group_job f = { cv, img, gi };
	int64_t per = g->cg * g->k_sp * g->out_sp + 1;
	rt_parallel(ctx, g->out_sp, 1, colt_range, &j);
	rt_parallel(ctx, g->mg, (32768 + per - 1) / per, few_range, &f);
	return RT_OK;
}

/* a * b * c floats in bytes; SIZE_MAX when that overflows (a hostile
 * descriptor: no plan can hold it, and the compiler refuses it) */
static size_t floats_bytes(int64_t a, int64_t b, int64_t c)
{
	int64_t n;
	size_t bytes;
	if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) ||
	    __builtin_mul_overflow((size_t)n, sizeof(float), &bytes))
		return SIZE_MAX;
	return bytes;
}

size_t rt_conv_workspace(const struct rt_conv_desc *d)
{
	struct geom g;
	if (!geom_init(d, &g) || pointwise(&g) || channelwise(d))
		return 0;
	return floats_bytes(g.cg, g.k_sp, g.out_sp); /* col, or col^T */
}

int rt_conv(struct rt_ctx *ctx, const struct rt_conv_desc *d, const void *x, const void *w,
            const void *bias, const void *residual, void *y, void *ws)
{
	struct conv cv = { d, { { 0 } }, x, w, bias, d->ep.has_residual ? residual : NULL, y, ws };
	int isa;
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
	if ((isa = rt_sgemm_isa()) != RT_SGEMM_BLAS && few_outputs(&cv.g))
		return each_group(ctx, &cv, conv_group_few);
	if (isa != RT_SGEMM_BLAS) {
		struct conv_sg cs = { &cv, isa };
		rt_sgemm_batch(ctx, d->n * d->group, conv_item, &cs);
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

static void col2im_range(void *arg, int64_t b, int64_t e)
{
	const struct group_job *j = arg;
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
	struct group_job j = { cv, img, gi };
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
	return floats_bytes(g.mg, g.k_sp, g.in_sp);
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
