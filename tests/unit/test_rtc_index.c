/*
 * test_rtc_index.c - the CUDA kernels' index arithmetic
 * (runtime/cuda/rtc_index*.h, over the runtime's shared rt_index*.h)
 * against the CPU runtime, on a machine without a GPU.
 *
 * The kernels address memory only through those headers. Here the same
 * functions run on the host: each test builds random descriptors, runs the
 * CPU kernel (rt_pool, rt_reduce, rt_copy, ...) and an emulation that
 * visits the outputs the way the CUDA kernels do - the same plans, flat
 * index decoding, window taps, tiles, lane and segment offsets, and for
 * the parallel kernels the same split of the work over the threads of a
 * group and the same combine rules (RTC_MAX_TAKE, RTC_ARG_BETTER) - and
 * compares: data movement byte for byte, max, indices and integer results
 * exactly, float sums within rounding. It also checks the fast divider
 * against division and that the launch plans cover every row or output
 * exactly once. What it cannot check is the kernels' execution itself
 * (shuffles, shared memory, the device's arithmetic): tests/gpu does that
 * where there is a GPU.
 */
#include "onnxc_rt.h"
#include "rtc_index.h"
#include "rtc_index_attention.h"
#include "rtc_index_move.h"
#include "rtc_index_pool.h"
#include "rtc_index_reduce.h"
#include "rtc_index_resize.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct rt_ctx *ctx;
static uint64_t seed = 0x853c49e6748fea9bull;

static uint64_t rnd_u64(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Uniform in [0, n) (0 for n <= 0). */
static int64_t rnd(int64_t n) { return n > 0 ? (int64_t)(rnd_u64() % (uint64_t)n) : 0; }

/* Uniform in [lo, hi]. */
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + rnd(hi - lo + 1); }

static double rnd_unit(void) { return (double)(rnd_u64() >> 11) * 0x1p-53; }

static void rnd_bytes(void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)rnd_u64();
}

/* Equal as results: NaN matches NaN, otherwise within tol relative. */
static int close_to(double a, double b, double tol)
{
	if (a != a || b != b)
		return a != a && b != b;
	if (a == b)
		return 1;
	return fabs(a - b) <= tol * (1 + fabs(b));
}

static void setup(void)
{
	if (!ctx)
		CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
}

/* 64-byte aligned, zeroed, at least one byte. */
static void *alloc(size_t n)
{
	size_t m = (n + 63) / 64 * 64 + 64;
	void *p = aligned_alloc(64, m);
	memset(p, 0, m);
	return p;
}

/* ------------------------------------------------------------------------ */
/* Division, launch plans                                                   */
/* ------------------------------------------------------------------------ */

static void check_div(int64_t d, int *bad)
{
	struct rtc_div v = rtc_div_of(d);
	int64_t ns[] = { 0,
		         1,
		         d - 1,
		         d,
		         d + 1,
		         2 * d - 1,
		         2 * d,
		         RTC_SMALL - 1,
		         RTC_SMALL - 2,
		         RTC_SMALL - d,
		         (RTC_SMALL - 1) / d * d,
		         (RTC_SMALL - 1) / d * d - 1 };
	for (int k = 0; k < 40; k++) {
		int64_t n = k < 12 ? ns[k] : rnd(RTC_SMALL);
		uint32_t r, q;
		if (n < 0 || n >= RTC_SMALL)
			continue;
		q = rtc_divmod(v, (uint32_t)n, &r);
		if (q != (uint32_t)(n / d) || r != (uint32_t)(n % d)) {
			if (*bad < 5)
				fprintf(stderr, "div: %lld / %lld = %u r %u\n", (long long)n,
				        (long long)d, q, r);
			++*bad;
		}
	}
}

static void test_div(void)
{
	int bad = 0;
	for (int64_t d = 1; d <= 5000; d++)
		check_div(d, &bad);
	for (int s = 0; s < 31; s++) {
		check_div((int64_t)1 << s, &bad);
		check_div(((int64_t)1 << s) + 1, &bad);
		check_div(((int64_t)1 << s) - 1 > 0 ? ((int64_t)1 << s) - 1 : 1, &bad);
	}
	for (int k = 0; k < 20000; k++)
		check_div(1 + rnd(k % 2 ? 1 << 16 : RTC_SMALL - 1), &bad);
	CHECK_EQ(bad, 0);
}

static void test_launch(void)
{
	int64_t rows_set[] = { 0, 1, 5, 8, 9, 100, 1000, 5001 };
	int64_t cols_set[] = { 1, 1000, 1024, 1025, 5000 };
	int sms[] = { 1, 3, 132 };
	CHECK_EQ(rtc_blocks(0, 256, 8), 1);
	CHECK_EQ(rtc_blocks(1000, 256, 8), 4);
	CHECK_EQ(rtc_blocks(INT64_MAX / 2, 256, 132), 132 * RTC_WAVES);
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 5; b++)
			for (int c = 0; c < 3; c++)
				for (int gsel = 0; gsel < 4; gsel++) {
					int64_t rows = rows_set[a];
					struct rtc_rows p =
					        gsel == 3 ? rtc_rows_plan(rows, cols_set[b], sms[c])
					                  : rtc_rows_group(rows,
					                                   gsel == 0 ? 1
					                                   : gsel == 1
					                                           ? 32
					                                           : RTC_ROW_BLOCK,
					                                   sms[c]);
					int *seen =
					        calloc((size_t)(rows * p.group + 1), sizeof *seen);
					int bad = 0;
					CHECK(p.threads <= 1024 && p.threads % 32 == 0);
					for (int64_t blk = 0; blk < p.blocks; blk++)
						for (int64_t t = 0; t < p.threads; t++) {
							int64_t r = rtc_rows_first(&p, blk, t);
							/* block groups: one row for the whole block */
							if (p.per_block == 1)
								bad += r !=
								       rtc_rows_first(&p, blk, 0);
							for (; r < rows; r += rtc_rows_step(&p))
								seen[r * p.group + t % p.group]++;
						}
					for (int64_t i = 0; i < rows * p.group; i++)
						bad += seen[i] != 1;
					CHECK_EQ(bad, 0);
					free(seen);
				}
	for (int64_t inner = 1; inner < 100; inner++) {
		int tx = rtc_red_cols_tx(inner);
		CHECK(tx >= 1 && tx <= 32 && 256 % tx == 0 && (tx >= inner || tx == 32));
	}
}

static void test_dtypes(void)
{
	CHECK_EQ(rtc_out_dtype(RT_F32, 0), RT_F32);
	CHECK_EQ(rtc_out_dtype(RT_F16, RT_F32), RT_F32);
	CHECK_EQ(rtc_out_dtype(RT_F32, RT_BF16), RT_BF16);
	CHECK_EQ(rtc_out_dtype(RT_BF16, RT_F16), RT_F16);
	CHECK_EQ(rtc_out_dtype(RT_F64, 0), RT_F64);
	CHECK_EQ(rtc_out_dtype(RT_F64, RT_F32), 0);
	CHECK_EQ(rtc_out_dtype(RT_F32, RT_F64), 0);
	CHECK_EQ(rtc_out_dtype(RT_I32, RT_I32), RT_I32);
	CHECK_EQ(rtc_out_dtype(RT_I32, RT_F32), 0);
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */
/* ------------------------------------------------------------------------ */

/* Output size along one dim as ONNX computes it (ceil mode: the last
 * window starts inside the input or its begin padding). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pe,
                        int ceil_mode)
{
	int64_t span = in + pb + pe - ((k - 1) * dil + 1), out;
	if (span < 0)
		return -1;
	out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
	if (ceil_mode && (out - 1) * s >= in + pb)
		out--;
	return out;
}

static double pool_term(int mode, double v, int p)
{
	switch (mode) {
	case RT_PM_ABS: return fabs(v);
	case RT_PM_SQ: return v * v;
	case RT_PM_POW: return pow(fabs(v), p);
	default: return v;
	}
}

static double pool_finish(int mode, double acc, int64_t count, int p)
{
	switch (mode) {
	case RT_PM_AVG: return acc / (double)count;
	case RT_PM_SQ: return sqrt(acc);
	case RT_PM_POW: return pow(acc, 1.0 / p);
	default: return acc;
	}
}

/* One output as pool_thread computes it (lanes 1) or pool_warp (lanes 32:
 * strided taps, then the butterfly). */
static void pool_emulate(const struct rtc_pool_geom *g, const double *x, int64_t f, int lanes,
                         int track, double *val, int64_t *index)
{
	struct rtc_win w;
	double best[32], sum[32];
	int64_t at[32], n;
	rtc_pool_win(g, f, &w);
	n = rtc_pool_ntaps(&w);
	for (int l = 0; l < lanes; l++) {
		best[l] = -INFINITY;
		sum[l] = 0;
		at[l] = -1;
	}
	if (lanes == 1) {
		for (int64_t j0 = w.j0[0]; j0 < w.j1[0]; j0++)
			for (int64_t j1 = w.j0[1]; j1 < w.j1[1]; j1++)
				for (int64_t j2 = w.j0[2]; j2 < w.j1[2]; j2++) {
					int64_t off = rtc_pool_off(g, &w, j0, j1, j2);
					double v = x[w.c * g->geom.nin + off];
					if (track && RTC_MAX_TAKE(v, off, best[0], at[0])) {
						best[0] = v;
						at[0] = off;
					}
					sum[0] += pool_term(g->mode, v, g->p);
				}
	} else {
		for (int l = 0; l < lanes; l++)
			for (int64_t t = l; t < n; t += lanes) {
				int64_t off = rtc_pool_tap(g, &w, t);
				double v = x[w.c * g->geom.nin + off];
				if (track && RTC_MAX_TAKE(v, off, best[l], at[l])) {
					best[l] = v;
					at[l] = off;
				}
				sum[l] += pool_term(g->mode, v, g->p);
			}
		for (int o = 16; o > 0; o /= 2) {
			double ob[32], os[32];
			int64_t oa[32];
			memcpy(ob, best, sizeof ob);
			memcpy(os, sum, sizeof os);
			memcpy(oa, at, sizeof oa);
			for (int l = 0; l < 32; l++) {
				if (track && RTC_MAX_TAKE(ob[l ^ o], oa[l ^ o], best[l], at[l])) {
					best[l] = ob[l ^ o];
					at[l] = oa[l ^ o];
				}
				sum[l] = os[l] + os[l ^ o];
			}
		}
	}
	*val = g->mode == RT_PM_MAX ? best[0] : pool_finish(g->mode, sum[0], w.count, g->p);
	*index = at[0] < 0 ? 0 : rtc_pool_index(g, w.c, at[0]);
}

/* A random pooling descriptor with its output shape; 0 if none fits. */
static int pool_case(struct rt_pool_desc *d, int dtype)
{
	memset(d, 0, sizeof *d);
	d->dtype = dtype;
	d->kind = dtype == RT_F64 ? (int)rnd(3) : RT_POOL_MAX;
	d->nsp = (int)rnd_in(1, 3);
	d->n = rnd(8) ? rnd_in(1, 2) : 0;
	d->c = rnd(8) ? rnd_in(1, 3) : 0;
	d->p = (int)rnd_in(1, 3);
	d->count_include_pad = (int)rnd(2);
	d->storage_order = (int)rnd(2);
	int ceil_mode = (int)rnd(2), global = rnd(6) == 0;
	for (int i = 0; i < d->nsp; i++) {
		d->in[i] = rnd_in(1, d->nsp == 3 ? 5 : 9);
		d->k[i] = global ? d->in[i] : rnd_in(1, 4);
		d->stride[i] = global ? 1 : rnd_in(1, 3);
		d->dil[i] = global || rnd(3) ? 1 : 2;
		d->pad_begin[i] = global ? 0 : rnd(d->k[i]);
		d->pad_end[i] = global ? 0 : rnd(d->k[i]);
		d->out[i] = pool_out(d->in[i], d->k[i], d->stride[i], d->dil[i], d->pad_begin[i],
		                     d->pad_end[i], ceil_mode);
		if (d->out[i] < 0)
			return 0;
	}
	return 1;
}

static void test_pool(void)
{
	int cases = 0, bad = 0;
	setup();
	while (cases < 3000) {
		struct rt_pool_desc d;
		struct rtc_pool_geom g;
		int dtype = rnd(4) ? RT_F64 : RT_I32;
		if (!pool_case(&d, dtype))
			continue;
		cases++;
		CHECK_EQ(rtc_pool_geom_of(&d, &g), RT_OK);
		int64_t nx = d.n * d.c, ny = d.n * d.c;
		for (int i = 0; i < d.nsp; i++) {
			nx *= d.in[i];
			ny *= d.out[i];
		}
		CHECK_EQ(g.total, ny);
		int with_idx = d.kind == RT_POOL_MAX && rnd(2);
		double *x = alloc(sizeof(double) * (size_t)nx),
		       *y = alloc(sizeof(double) * (size_t)ny);
		int32_t *xi = alloc(4 * (size_t)nx), *yi = alloc(4 * (size_t)ny);
		int64_t *idx = alloc(8 * (size_t)ny);
		for (int64_t i = 0; i < nx; i++) {
			/* few distinct values: ties; some NaN for max */
			x[i] = (double)rnd_in(-3, 3) / 2;
			if (d.kind == RT_POOL_MAX && rnd(12) == 0)
				x[i] = NAN;
			if (d.kind == RT_POOL_LP || d.kind == RT_POOL_AVG)
				x[i] = rnd_unit() * 2 - 1;
			xi[i] = (int32_t)rnd_in(-3, 3);
		}
		if (dtype == RT_I32)
			CHECK_EQ(rt_pool(ctx, &d, xi, yi, with_idx ? idx : NULL), RT_OK);
		else
			CHECK_EQ(rt_pool(ctx, &d, x, y, with_idx ? idx : NULL), RT_OK);
		for (int64_t f = 0; f < ny; f++)
			for (int lanes = 1; lanes <= 32; lanes += 31) {
				double v, want = dtype == RT_I32 ? (double)yi[f] : y[f];
				int64_t at;
				if (dtype == RT_I32) {
					double *xd = alloc(sizeof(double) * (size_t)nx);
					for (int64_t i = 0; i < nx; i++)
						xd[i] = xi[i];
					pool_emulate(&g, xd, f, lanes, 1, &v, &at);
					free(xd);
					if (v == -INFINITY)
						v = INT32_MIN; /* the integer max of no taps */
				} else {
					pool_emulate(&g, x, f, lanes,
					             d.kind == RT_POOL_MAX || with_idx, &v, &at);
				}
				if (!close_to(v, want, d.kind == RT_POOL_MAX ? 0 : 1e-12) ||
				    (with_idx && at != idx[f])) {
					if (bad < 5)
						fprintf(stderr,
						        "pool case %d kind %d output %lld lanes "
						        "%d: %g "
						        "(%lld), want %g (%lld)\n",
						        cases, d.kind, (long long)f, lanes, v,
						        (long long)at, want,
						        (long long)(with_idx ? idx[f] : -1));
					bad++;
				}
			}
		free(x);
		free(y);
		free(xi);
		free(yi);
		free(idx);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                               */
/* ------------------------------------------------------------------------ */

/* One output of a reduction as the kernels compute it, over x (int64 or
 * double), in the element order e (any order gives the same integer
 * results; floats are compared within rounding). */
static void reduce_emulate(const struct rtc_red *r, int kind, int is_float, const void *xv,
                           int64_t k, double *fo, int64_t *io)
{
	const int64_t *xi = xv;
	const double *xf = xv;
	int p = rt_red_prim_of(kind);
	int64_t base = rtc_red_base(r, k);
	double f = p == RT_PRIM_PROD ? 1 : 0, shift = 0;
	uint64_t u = p == RT_PRIM_PROD ? 1 : 0;
	int64_t mx = p == RT_PRIM_MAX ? INT64_MIN : INT64_MAX;
	if (is_float && p == RT_PRIM_MAX)
		f = -INFINITY;
	if (is_float && p == RT_PRIM_MIN)
		f = INFINITY;
	if (p == RT_PRIM_EXP) {
		double m = -INFINITY;
		for (int64_t e = 0; e < r->c.nred; e++) {
			int64_t off = base + rtc_red_elem(r, e);
			double v = is_float ? xf[off] : (double)xi[off];
			m = (v > m || v != v) ? v : m;
		}
		shift = rt_red_lse_shift(m);
	}
	for (int64_t e = 0; e < r->c.nred; e++) {
		int64_t off = base + rtc_red_elem(r, e);
		double v = is_float ? xf[off] : (double)xi[off];
		int64_t iv = is_float ? 0 : xi[off];
		switch (p) {
		case RT_PRIM_SUM:
			f += v;
			u += (uint64_t)iv;
			break;
		case RT_PRIM_ABS:
			f += fabs(v);
			u += iv < 0 ? 0 - (uint64_t)iv : (uint64_t)iv;
			break;
		case RT_PRIM_SQ:
			f += v * v;
			u += (uint64_t)iv * (uint64_t)iv;
			break;
		case RT_PRIM_EXP: f += exp(v - shift); break;
		case RT_PRIM_PROD:
			f *= v;
			u *= (uint64_t)iv;
			break;
		case RT_PRIM_MAX:
			f = (v > f || v != v) ? v : f;
			mx = iv > mx ? iv : mx;
			break;
		case RT_PRIM_MIN:
			f = (v < f || v != v) ? v : f;
			mx = iv < mx ? iv : mx;
			break;
		}
	}
	*io = 0;
	if (!is_float && p != RT_PRIM_EXP) {
		*io = p == RT_PRIM_MAX || p == RT_PRIM_MIN ? mx : (int64_t)u;
		f = (double)*io;
	}
	rt_red_finish(kind, is_float, r->c.nred, shift, &f, io);
	*fo = f;
}

/* Each input element belongs to exactly one (output, element) pair, and
 * the cols form's block tasks cover every output once. */
static int reduce_layout_ok(const struct rtc_red *r, int64_t total)
{
	char *used = calloc((size_t)total + 1, 1);
	int ok = 1;
	for (int64_t k = 0; k < r->c.nout; k++)
		for (int64_t e = 0; e < r->c.nred; e++) {
			int64_t off = rtc_red_base(r, k) + rtc_red_elem(r, e);
			if (off < 0 || off >= total || used[off]++)
				ok = 0;
		}
	if (!r->c.rows) {
		int tx = rtc_red_cols_tx(r->c.inner);
		int64_t ntile = rt_ceil_div(r->c.inner, tx), tasks = r->c.nout / r->c.inner * ntile;
		char *hit = calloc((size_t)r->c.nout + 1, 1);
		for (int64_t t = 0; t < tasks; t++)
			for (int cx = 0; cx < tx; cx++) {
				int64_t c = t % ntile * tx + cx;
				if (c < r->c.inner && hit[t / ntile * r->c.inner + c]++)
					ok = 0;
			}
		for (int64_t k = 0; k < r->c.nout; k++)
			ok &= hit[k] == 1;
		free(hit);
	}
	free(used);
	return ok;
}

static void test_reduce(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 4000; cs++) {
		struct rt_reduce_desc d;
		struct rtc_red r;
		int is_float = (int)rnd(2);
		int64_t total = 1, nout = 1;
		memset(&d, 0, sizeof d);
		d.dtype = is_float ? RT_F64 : RT_I64;
		d.kind = (int)rnd(RT_REDUCE_LOG_SUM_EXP + 1);
		d.rank = (int)rnd_in(0, 5);
		d.axes_mask = (unsigned)rnd(1 << d.rank);
		for (int i = 0; i < d.rank; i++) {
			d.dims[i] = rnd(20) == 0 ? 0 : rnd(8) == 0 ? rnd_in(5, 40) : rnd_in(1, 4);
			total *= d.dims[i];
			if (!((d.axes_mask >> i) & 1))
				nout *= d.dims[i];
		}
		if (total > 20000)
			continue;
		int64_t *xi = alloc(8 * (size_t)total), *yi = alloc(8 * (size_t)nout);
		double *xf = alloc(8 * (size_t)total), *yf = alloc(8 * (size_t)nout);
		for (int64_t i = 0; i < total; i++) {
			xi[i] = rnd_in(-5, 5);
			xf[i] = d.kind == RT_REDUCE_LOG_SUM ? rnd_unit() + 0.01
			                                    : rnd_unit() * 2 - 1;
			if ((d.kind == RT_REDUCE_MAX || d.kind == RT_REDUCE_MIN) && rnd(50) == 0)
				xf[i] = NAN;
			if (d.kind == RT_REDUCE_LOG_SUM_EXP && cs % 3 == 0)
				xf[i] = cs % 2 ? -INFINITY : rnd(10) ? xf[i] : INFINITY;
		}
		CHECK_EQ(rt_reduce(ctx, &d, is_float ? (void *)xf : (void *)xi,
		                   is_float ? (void *)yf : (void *)yi),
		         RT_OK);
		if (rtc_red_canon(&d, &r)) {
			CHECK_EQ(r.c.nout, nout);
			if (!reduce_layout_ok(&r, total)) {
				if (bad < 5)
					fprintf(stderr, "reduce case %d: layout\n", cs);
				bad++;
			}
		}
		for (int64_t k = 0; k < nout; k++) {
			double f;
			int64_t i;
			if (r.c.nred == 0 || r.c.nout == 0) { /* the finished identity */
				int p = rt_red_prim_of(d.kind);
				f = p == RT_PRIM_PROD ? 1 : 0;
				i = p == RT_PRIM_PROD ? 1 : 0;
				if (is_float && p == RT_PRIM_MAX)
					f = -INFINITY;
				if (is_float && p == RT_PRIM_MIN)
					f = INFINITY;
				rt_red_finish(d.kind, is_float, 0, 0, &f, &i);
			} else {
				reduce_emulate(&r, d.kind, is_float,
				               is_float ? (void *)xf : (void *)xi, k, &f, &i);
			}
			if (is_float ? !close_to(f, yf[k], 1e-9) : i != yi[k]) {
				if (bad < 5)
					fprintf(stderr,
					        "reduce case %d kind %d out %lld: %g %lld, want %g "
					        "%lld\n",
					        cs, d.kind, (long long)k, f, (long long)i, yf[k],
					        (long long)yi[k]);
				bad++;
			}
		}
		free(xi);
		free(yi);
		free(xf);
		free(yf);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* ArgMax / ArgMin, softmax lanes, CumSum                                   */
/* ------------------------------------------------------------------------ */

/* arg_rows with a group of G lanes (warps of 32 combined by butterflies,
 * then the warps in order). */
static int64_t arg_group(const double *x, int64_t n, int is_min, int last, int G)
{
	double bv[RTC_ROW_BLOCK], first = x[0];
	int64_t bi[RTC_ROW_BLOCK], from = 0, nan = -1, res;
	for (int64_t i = 0; last && i < n; i++)
		if (x[i] != x[i])
			nan = i; /* the group's max of each lane's last NaN */
	from = nan + 1;
	for (int l = 0; l < G; l++) {
		bv[l] = first;
		bi[l] = -1;
		for (int64_t i = from + l; i < n; i += G) {
			double v = x[i];
			if (v == v && RTC_ARG_BETTER(is_min, last, v, i, bv[l], bi[l])) {
				bv[l] = v;
				bi[l] = i;
			}
		}
	}
	for (int w = 0; w < G; w += 32)
		for (int o = 16; G > 1 && o > 0; o /= 2) {
			double ov[32];
			int64_t oi[32];
			for (int l = 0; l < 32; l++) {
				ov[l] = bv[w + l];
				oi[l] = bi[w + l];
			}
			for (int l = 0; l < 32; l++)
				if (oi[l ^ o] >= 0 &&
				    RTC_ARG_BETTER(is_min, last, ov[l ^ o], oi[l ^ o], bv[w + l],
				                   bi[w + l])) {
					bv[w + l] = ov[l ^ o];
					bi[w + l] = oi[l ^ o];
				}
		}
	for (int w = 32; w < G; w += 32)
		if (bi[w] >= 0 && RTC_ARG_BETTER(is_min, last, bv[w], bi[w], bv[0], bi[0])) {
			bv[0] = bv[w];
			bi[0] = bi[w];
		}
	res = bi[0];
	if (last && from == n)
		res = n - 1;
	if (!last && first != first)
		res = 0;
	return res;
}

static void test_arg(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 3000; cs++) {
		struct rt_arg_desc d = { RT_F64,
			                 (int)rnd(2),
			                 (int)rnd(2),
			                 rnd_in(1, 3),
			                 rnd(4) ? rnd_in(1, 12) : rnd_in(30, 1200),
			                 rnd_in(1, 3) };
		struct rtc_lanes l;
		int nan_rate = (int)rnd_in(0, 3);
		if (rnd(3) == 0)
			d.inner = 1;
		int64_t n = d.outer * d.axis * d.inner, *y = alloc(8 * (size_t)(d.outer * d.inner));
		double *x = alloc(8 * (size_t)n);
		for (int64_t i = 0; i < n; i++)
			x[i] = nan_rate && rnd(nan_rate * 8) == 0 ? NAN : (double)rnd_in(-2, 2);
		CHECK_EQ(rt_arg(ctx, &d, x, y), RT_OK);
		l = rtc_lanes_of(d.outer, d.axis, d.inner);
		for (int64_t lane = 0; lane < l.lanes; lane++) {
			const double *xl = x + rtc_lane_base(&l, lane);
			double best = xl[0];
			int64_t at = 0, seq[4];
			for (int64_t a = 1; a < d.axis; a++) {
				double v = xl[a * d.inner];
				int better = d.select_last ? (d.is_min ? !(v > best) : !(v < best))
				                           : (d.is_min ? v < best : v > best);
				if (better) {
					best = v;
					at = a;
				}
			}
			seq[0] = at;
			seq[1] = seq[2] = seq[3] = at;
			if (d.inner == 1) {
				seq[1] = arg_group(xl, d.axis, d.is_min, d.select_last, 1);
				seq[2] = arg_group(xl, d.axis, d.is_min, d.select_last, 32);
				seq[3] = arg_group(xl, d.axis, d.is_min, d.select_last,
				                   RTC_ROW_BLOCK);
			}
			for (int k = 0; k < 4; k++)
				if (seq[k] != y[lane]) {
					if (bad < 5)
						fprintf(stderr,
						        "arg case %d (min %d last %d axis %lld) "
						        "lane %lld "
						        "way %d: %lld, want %lld\n",
						        cs, d.is_min, d.select_last,
						        (long long)d.axis, (long long)lane, k,
						        (long long)seq[k], (long long)y[lane]);
					bad++;
				}
		}
		free(x);
		free(y);
	}
	CHECK_EQ(bad, 0);
}

static void test_softmax_lanes(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 500; cs++) {
		struct rt_softmax_desc d = { RT_F64,        (int)rnd(3),   rnd_in(1, 3),
			                     rnd_in(1, 20), rnd_in(2, 70), 0 };
		struct rtc_lanes l = rtc_lanes_of(d.outer, d.axis, d.inner);
		int64_t n = d.outer * d.axis * d.inner;
		double *x = alloc(8 * (size_t)n), *y = alloc(8 * (size_t)n),
		       *z = alloc(8 * (size_t)n);
		for (int64_t i = 0; i < n; i++)
			x[i] = rnd(30) == 0 ? -INFINITY : rnd_unit() * 8 - 4;
		CHECK_EQ(rt_softmax(ctx, &d, x, y), RT_OK);
		for (int64_t lane = 0; lane < l.lanes; lane++) {
			int64_t base = rtc_lane_base(&l, lane), at = 0;
			double m = -INFINITY, s = 0;
			for (int64_t a = 0; a < d.axis; a++)
				if (x[base + a * d.inner] > m) {
					m = x[base + a * d.inner];
					at = a;
				}
			for (int64_t a = 0; a < d.axis; a++)
				s += exp(x[base + a * d.inner] - m);
			for (int64_t a = 0; a < d.axis; a++) {
				double v = x[base + a * d.inner];
				z[base + a * d.inner] = d.kind == RT_HARDMAX   ? (a == at)
				                        : d.kind == RT_SOFTMAX ? exp(v - m) / s
				                                               : (v - m) - log(s);
			}
		}
		for (int64_t i = 0; i < n; i++)
			if (!close_to(z[i], y[i], 1e-12)) {
				if (bad < 5)
					fprintf(stderr, "softmax case %d at %lld: %g, want %g\n",
					        cs, (long long)i, z[i], y[i]);
				bad++;
			}
		free(x);
		free(y);
		free(z);
	}
	CHECK_EQ(bad, 0);
}

/* The scan's operation: CumProd's product or CumSum's sum, wrapping. */
static uint64_t cum_op(int prod, uint64_t a, uint64_t b) { return prod ? a * b : a + b; }

/* CumSum and CumProd as cum_lanes (sequential) and as cum_blocks (chunks of
 * threads' items, exclusive prefixes over the threads, a carry between
 * chunks). */
static void test_cumsum(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 600; cs++) {
		struct rt_cumsum_desc d = { RT_I64,
			                    (int)rnd(2),
			                    (int)rnd(2),
			                    rnd_in(1, 3),
			                    rnd(3) ? rnd_in(0, 40) : rnd_in(1000, 5000),
			                    rnd_in(1, 3),
			                    0,
			                    (int)rnd(2) };
		struct rtc_lanes l = rtc_lanes_of(d.outer, d.axis, d.inner);
		int64_t n = d.outer * d.axis * d.inner;
		int64_t *x = alloc(8 * (size_t)n), *y = alloc(8 * (size_t)n),
		        *z = alloc(8 * (size_t)n), *w = alloc(8 * (size_t)n);
		const int threads = 256, items = 4;
		for (int64_t i = 0; i < n; i++)
			x[i] = rnd(50) == 0 ? INT64_MAX - rnd(5) : rnd_in(-1000, 1000);
		CHECK_EQ(rt_cumsum(ctx, &d, x, y), RT_OK);
		for (int64_t lane = 0; lane < l.lanes; lane++) {
			int64_t base = rtc_lane_base(&l, lane);
			uint64_t id = d.prod ? 1 : 0, acc = id, carry = id;
			for (int64_t p = 0; p < d.axis; p++) {
				int64_t at = base + rtc_scan_pos(d.axis, d.reverse, p) * d.inner;
				uint64_t next = cum_op(d.prod, acc, (uint64_t)x[at]);
				z[at] = (int64_t)(d.exclusive ? acc : next);
				acc = next;
			}
			for (int64_t c0 = 0; c0 < d.axis; c0 += threads * items) {
				uint64_t pre = carry;
				for (int t = 0; t < threads; t++) {
					uint64_t run = pre, sum = id;
					for (int k = 0; k < items; k++) {
						int64_t p = c0 + t * items + k;
						if (p < d.axis) {
							int64_t at =
							        base +
							        rtc_scan_pos(d.axis, d.reverse, p) *
							                d.inner;
							uint64_t next = cum_op(d.prod, run,
							                       (uint64_t)x[at]);
							w[at] = (int64_t)(d.exclusive ? run : next);
							run = next;
							sum = cum_op(d.prod, sum, (uint64_t)x[at]);
						}
					}
					pre = cum_op(d.prod, pre, sum);
				}
				carry = pre;
			}
		}
		for (int64_t i = 0; i < n; i++)
			if (z[i] != y[i] || w[i] != y[i]) {
				if (bad < 5)
					fprintf(stderr,
					        "cumsum case %d at %lld: %lld %lld, want %lld\n",
					        cs, (long long)i, (long long)z[i], (long long)w[i],
					        (long long)y[i]);
				bad++;
			}
		free(x);
		free(y);
		free(z);
		free(w);
	}
	CHECK_EQ(bad, 0);
}

/* TopK's rank of element i of x (dtype dt): the kernels' key through the
 * type's FP32/FP64 value or integer. */
static int topk_bits(int dt)
{
	return dt == RT_F32 ? 32 : dt == RT_F64 ? 64 : 8 * rt_dtype_size(dt);
}

static uint64_t topk_host_rank(int dt, const void *x, int64_t i, int small)
{
	uint64_t key;
	switch (dt) {
	case RT_F32: key = rtc_topk_key_f32(((const float *)x)[i]); break;
	case RT_F64: key = rtc_topk_key_f64(((const double *)x)[i]); break;
	case RT_I8: key = rtc_topk_key_signed(((const int8_t *)x)[i], 8); break;
	case RT_I16: key = rtc_topk_key_signed(((const int16_t *)x)[i], 16); break;
	case RT_I32: key = rtc_topk_key_signed(((const int32_t *)x)[i], 32); break;
	case RT_I64: key = rtc_topk_key_signed(((const int64_t *)x)[i], 64); break;
	case RT_U8: key = ((const uint8_t *)x)[i]; break;
	case RT_U16: key = ((const uint16_t *)x)[i]; break;
	case RT_U32: key = ((const uint32_t *)x)[i]; break;
	default: key = ((const uint64_t *)x)[i]; break;
	}
	return rtc_topk_rank(key, topk_bits(dt), small);
}

/* Is lane position i (elements st apart from xl) better than j? */
static int topk_host_better(int dt, const char *xl, int64_t st, int small, int64_t i, int64_t j)
{
	int es = rt_dtype_size(dt);
	uint64_t a = topk_host_rank(dt, xl + i * st * es, 0, small),
	         b = topk_host_rank(dt, xl + j * st * es, 0, small);
	return a > b || (a == b && i < j);
}

/*
 * rtc_reduce.cu's topk_blocks over one lane, its threads in turn: the radix
 * select's passes (rtc_topk_bucket), the compaction's block scans in
 * chunks of nt positions, the bitonic network's phases (rtc_bitonic_pair),
 * the gather. Writes the lane's k values and indices.
 */
static void topk_block_lane(int dt, const char *xl, int64_t n, int64_t st, int64_t k, int small,
                            char *yl, int64_t *h)
{
	const int nt = 256, es = rt_dtype_size(dt);
	int64_t need = k, taken = 0, eq_seen = 0, n2 = 1;
	uint64_t prefix = 0, mask = 0;
	for (int shift = topk_bits(dt) - 8; shift >= 0; shift -= 8) {
		unsigned long long hist[256] = { 0 };
		for (int64_t p = 0; p < n; p++) {
			uint64_t r = topk_host_rank(dt, xl + p * st * es, 0, small);
			if ((r & mask) == prefix)
				hist[(r >> shift) & 255]++;
		}
		prefix |= (uint64_t)rtc_topk_bucket(hist, &need) << shift;
		mask |= 255ull << shift;
	}
	for (int64_t c0 = 0; c0 < n && taken < k; c0 += nt) {
		int64_t eq_before = 0, slot = 0;
		for (int t = 0; t < nt; t++) {
			int64_t p = c0 + t;
			uint64_t r = p < n ? topk_host_rank(dt, xl + p * st * es, 0, small) : 0;
			int eq = p < n && r == prefix;
			int take = (p < n && r > prefix) || (eq && eq_seen + eq_before < need);
			if (take)
				h[(taken + slot) * st] = p;
			eq_before += eq;
			slot += take;
		}
		taken += slot;
		eq_seen += eq_before;
	}
	while (n2 < k)
		n2 *= 2;
	for (int64_t size = 2; size <= n2; size *= 2)
		for (int64_t j = size / 2; j > 0; j /= 2)
			for (int64_t t = 0; t < n2 / 2; t++) {
				int64_t a, b;
				rtc_bitonic_pair(t, size, j, &a, &b);
				CHECK(a >= 0 && a < b && b < n2);
				if (b < k &&
				    topk_host_better(dt, xl, st, small, h[b * st], h[a * st])) {
					int64_t tmp = h[a * st];
					h[a * st] = h[b * st];
					h[b * st] = tmp;
				}
			}
	for (int64_t q = 0; q < k; q++)
		memcpy(yl + q * st * es, xl + h[q * st] * st * es, (size_t)es);
}

/* TopK: the block kernel's select, compaction and sort emulated over random
 * lanes (ties, NaNs, signed zeros, extremes) against rt_topk. */
static void test_topk(void)
{
	static const int dts[] = { RT_F32, RT_F64, RT_I8,  RT_U8,  RT_I16,
		                   RT_U16, RT_I32, RT_U32, RT_I64, RT_U64 };
	int bad = 0;
	setup();
	for (int cs = 0; cs < 1500; cs++) {
		int dt = dts[rnd(10)], es = rt_dtype_size(dt);
		struct rt_topk_desc d = { dt,           (int)rnd(2),
			                  rnd_in(1, 3), rnd(3) ? rnd_in(1, 40) : rnd_in(200, 3000),
			                  rnd_in(1, 3), 0 };
		if (rnd(2))
			d.inner = 1;
		d.k = rnd(3) == 0 ? d.axis
		      : rnd(2)    ? rnd_in(1, rt_min64(d.axis, 5))
		                  : rnd_in(0, d.axis);
		int64_t n = d.outer * d.axis * d.inner, nout = d.outer * d.k * d.inner;
		char *x = alloc((size_t)(n * es)), *yv = alloc((size_t)(nout * es)),
		     *ev = alloc((size_t)(nout * es));
		int64_t *yi = alloc(8 * (size_t)nout), *ei = alloc(8 * (size_t)nout);
		int spread = (int)rnd_in(1, 6);
		for (int64_t i = 0; i < n; i++) {
			if (dt == RT_F32 || dt == RT_F64) {
				static const double special[] = { NAN, -0.0, 0.0, INFINITY,
					                          -INFINITY };
				double v = rnd(8) == 0 ? special[rnd(5)]
				                       : (double)rnd_in(-spread, spread) / 2;
				if (dt == RT_F32)
					((float *)x)[i] = (float)v;
				else
					((double *)x)[i] = v;
			} else {
				rnd_bytes(x + i * es, (size_t)es);
				if (rnd(2)) /* ties: a few small values */
					memset(x + i * es + 1, 0, (size_t)es - 1),
					        x[i * es] = (char)rnd(spread);
			}
		}
		CHECK_EQ(rt_topk(ctx, &d, x, ev, ei), RT_OK);
		struct rtc_lanes l = rtc_lanes_of(d.outer, d.axis, d.inner);
		for (int64_t lane = 0; lane < l.lanes && d.k > 0; lane++) {
			int64_t xb, yb;
			rtc_topk_bases(&l, d.k, lane, &xb, &yb);
			topk_block_lane(dt, x + xb * es, d.axis, d.inner, d.k, d.smallest,
			                yv + yb * es, yi + yb);
		}
		if (memcmp(yi, ei, 8 * (size_t)nout) || memcmp(yv, ev, (size_t)(nout * es))) {
			if (bad < 5)
				fprintf(stderr,
				        "topk case %d: dtype %d smallest %d [%lld, %lld, %lld] k "
				        "%lld "
				        "differs\n",
				        cs, dt, d.smallest, (long long)d.outer, (long long)d.axis,
				        (long long)d.inner, (long long)d.k);
			bad++;
		}
		free(x);
		free(yv);
		free(ev);
		free(yi);
		free(ei);
	}
	CHECK_EQ(bad, 0);
	/* the keys keep the order: NaN on top, -0 with +0, extremes at the ends */
	CHECK(rtc_topk_key_f32(NAN) > rtc_topk_key_f32(INFINITY));
	CHECK(rtc_topk_key_f32(-0.0f) == rtc_topk_key_f32(0.0f));
	CHECK(rtc_topk_key_f32(-INFINITY) < rtc_topk_key_f32(-3e38f));
	CHECK(rtc_topk_key_f64(-1e-300) < rtc_topk_key_f64(0) &&
	      rtc_topk_key_f64(0) < rtc_topk_key_f64(1e-300));
	CHECK(rtc_topk_key_signed(INT64_MIN, 64) == 0 &&
	      rtc_topk_key_signed(INT64_MAX, 64) == UINT64_MAX);
	CHECK(rtc_topk_key_signed(-128, 8) == 0 && rtc_topk_key_signed(127, 8) == 255);
	CHECK(rtc_topk_rank(0, 8, 1) == 255 && rtc_topk_rank(5, 64, 1) == ~5ull);
}

/* ------------------------------------------------------------------------ */
/* Linear attention                                                         */
/* ------------------------------------------------------------------------ */

/* The sum of one value per part in xor-shuffle order (parts_sum). */
static float parts_sum_host(float *v, int parts)
{
	float w[32];
	for (int o = parts / 2; o > 0; o /= 2) {
		for (int q = 0; q < parts; q++)
			w[q] = v[q] + v[q ^ o];
		memcpy(v, w, sizeof *v * (size_t)parts);
	}
	return v[0];
}

/*
 * rtc_attention.cu's linattn_cols emulated: every block (item, column
 * block) and thread (column, part) of the plan, the state's parts held per
 * thread, the sums in shuffle order; against rt_linear_attention.
 */
static void linattn_emulate(const struct rt_linattn_desc *d, const float *q, const float *k,
                            const float *v, const float *past, const float *decay,
                            const float *beta, const float *erase, float *y, float *state,
                            int *seen)
{
	struct rtc_linattn p;
	const int64_t hkv = d->kv_heads, hq = d->q_heads, dk = d->dk, dv = d->dv, group = hq / hkv;
	CHECK(rtc_linattn_plan(d, &p));
	float *sk = alloc(4 * (size_t)dk), *sg = alloc(4 * (size_t)dk), *se = alloc(4 * (size_t)dk),
	      *sq = alloc(4 * (size_t)dk);
	for (int64_t it = 0; it < p.items; it++)
		for (int cb = 0; cb < p.col_blocks; cb++)
			for (int tid = 0; tid < RTC_LINATTN_THREADS; tid += p.parts) {
				int64_t m, b = it / hkv, h = it % hkv;
				int part;
				float s[32][RTC_LINATTN_DK], acc[32];
				rtc_linattn_thread(&p, cb, tid, &m, &part);
				CHECK_EQ(part, 0);
				if (m >= dv)
					continue;
				seen[it * dv + m]++;
				for (int q0 = 0; q0 < p.parts; q0++)
					for (int j = 0; j < RTC_LINATTN_DK; j++) {
						int64_t i = rtc_linattn_dim(&p, q0, j);
						s[q0][j] = past && i < dk
						                   ? past[(it * dk + i) * dv + m]
						                   : 0;
					}
				for (int64_t t = 0; t < d->seq; t++) {
					int64_t bt = b * d->seq + t;
					for (int64_t i = 0; i < dk; i++) {
						sk[i] = k[(bt * hkv + h) * dk + i];
						if (d->gated)
							sg[i] = expf(decay[rtc_linattn_gate(
							        d->decay_width, hkv, dk, bt, h,
							        i)]);
						if (d->delta)
							se[i] = erase ? erase[rtc_linattn_gate(
							                        d->erase_width, hkv,
							                        dk, bt, h, i)] *
							                        sk[i]
							              : sk[i];
					}
					float w = v[(bt * hkv + h) * dv + m];
					for (int q0 = 0; q0 < p.parts; q0++) {
						acc[q0] = 0;
						for (int j = 0; j < RTC_LINATTN_DK; j++) {
							int64_t i = rtc_linattn_dim(&p, q0, j);
							if (i >= dk)
								continue;
							if (d->gated)
								s[q0][j] *= sg[i];
							acc[q0] +=
							        s[q0][j] * (d->delta ? se[i] : 0);
						}
					}
					if (d->delta)
						w = beta[bt * d->beta_width +
						         (d->beta_width == 1 ? 0 : h)] *
						    (w - parts_sum_host(acc, p.parts));
					for (int q0 = 0; q0 < p.parts; q0++)
						for (int j = 0; j < RTC_LINATTN_DK; j++) {
							int64_t i = rtc_linattn_dim(&p, q0, j);
							if (i < dk)
								s[q0][j] += sk[i] * w;
						}
					for (int64_t g = 0; g < group; g++) {
						int64_t qh = h * group + g;
						for (int64_t i = 0; i < dk; i++)
							sq[i] = q[(bt * hq + qh) * dk + i];
						for (int q0 = 0; q0 < p.parts; q0++) {
							acc[q0] = 0;
							for (int j = 0; j < RTC_LINATTN_DK; j++) {
								int64_t i =
								        rtc_linattn_dim(&p, q0, j);
								if (i < dk)
									acc[q0] += sq[i] * s[q0][j];
							}
						}
						y[(bt * hq + qh) * dv + m] =
						        parts_sum_host(acc, p.parts) * d->scale;
					}
				}
				for (int q0 = 0; q0 < p.parts; q0++)
					for (int j = 0; j < RTC_LINATTN_DK; j++) {
						int64_t i = rtc_linattn_dim(&p, q0, j);
						if (i < dk)
							state[(it * dk + i) * dv + m] = s[q0][j];
					}
			}
	free(sk);
	free(sg);
	free(se);
	free(sq);
}

static float *rnd_f32s(int64_t n, double lo, double hi)
{
	float *x = alloc(4 * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(lo + (hi - lo) * rnd_unit());
	return x;
}

static void test_linear_attention(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 300; cs++) {
		static const char *const rules[] = { "linear", "gated", "delta", "gated_delta" };
		int rule = (int)rnd(4);
		struct rt_linattn_desc d = { RT_F32, rule & 1, rule >> 1, rnd_in(1, 2),
			                     rnd_in(0, 5) };
		d.kv_heads = rnd_in(1, 3);
		d.q_heads = d.kv_heads * rnd_in(1, 3);
		d.dk = rnd(4) ? rnd_in(1, 40) : rnd_in(60, 300);
		d.dv = rnd_in(1, 20);
		d.decay_width = d.gated ? (rnd(2) ? d.kv_heads : d.kv_heads * d.dk) : 0;
		d.beta_width = d.delta ? (rnd(2) ? d.kv_heads : 1) : 0;
		int with_erase = d.delta && rnd(2), with_past = (int)rnd(2);
		d.erase_width = with_erase ? (rnd(2) ? d.kv_heads : d.kv_heads * d.dk) : 0;
		d.scale = (float)(1 / sqrt((double)d.dk));
		int64_t bt = d.batch * d.seq, ns = d.batch * d.kv_heads * d.dk * d.dv,
		        ny = bt * d.q_heads * d.dv;
		float *q = rnd_f32s(bt * d.q_heads * d.dk, -1, 1),
		      *k = rnd_f32s(bt * d.kv_heads * d.dk, -1, 1) /* keys */,
		      *v = rnd_f32s(bt * d.kv_heads * d.dv, -1, 1),
		      *past = with_past ? rnd_f32s(ns, -1, 1) : NULL,
		      *decay = d.gated ? rnd_f32s(bt * d.decay_width, -0.5, 0) : NULL,
		      *beta = d.delta ? rnd_f32s(bt * d.beta_width, 0, 1) : NULL,
		      *erase = with_erase ? rnd_f32s(bt * d.erase_width, 0, 1) : NULL;
		float *y = alloc(4 * (size_t)(ny + 1)), *st = alloc(4 * (size_t)(ns + 1)),
		      *ey = alloc(4 * (size_t)(ny + 1)), *est = alloc(4 * (size_t)(ns + 1));
		int *seen = alloc(sizeof(int) * (size_t)(d.batch * d.kv_heads * d.dv));
		/* keys scaled like a normalized key: the delta rule stays bounded */
		for (int64_t i = 0; i < bt * d.kv_heads * d.dk; i++)
			k[i] *= d.scale;
		CHECK_EQ(rt_linear_attention(ctx, &d, q, k, v, past, decay, beta, erase, ey, est),
		         RT_OK);
		linattn_emulate(&d, q, k, v, past, decay, beta, erase, y, st, seen);
		for (int64_t i = 0; i < d.batch * d.kv_heads * d.dv; i++)
			if (seen[i] != 1)
				bad++;
		for (int64_t i = 0; i < ny; i++)
			if (!close_to(y[i], ey[i], 1e-5)) {
				if (bad < 5)
					fprintf(stderr,
					        "linattn case %d (%s) y[%lld]: %g, want %g\n", cs,
					        rules[rule], (long long)i, y[i], ey[i]);
				bad++;
			}
		for (int64_t i = 0; i < ns; i++)
			if (!close_to(st[i], est[i], 1e-5)) {
				if (bad < 5)
					fprintf(stderr,
					        "linattn case %d (%s) state[%lld]: %g, want %g\n",
					        cs, rules[rule], (long long)i, st[i], est[i]);
				bad++;
			}
		free(q), free(k), free(v), free(past), free(decay), free(beta), free(erase);
		free(y), free(st), free(ey), free(est), free(seen);
	}
	CHECK_EQ(bad, 0);
	/* the plan: parts cover dk in powers of two, columns fill the block */
	struct rt_linattn_desc d = { RT_F32, 0, 0, 2, 3, 8, 4, 64, 100 };
	struct rtc_linattn p;
	CHECK(rtc_linattn_plan(&d, &p));
	CHECK_EQ(p.parts, 2);
	CHECK_EQ(p.cols, RTC_LINATTN_THREADS / 2);
	CHECK_EQ(p.col_blocks, 1);
	CHECK_EQ(p.items, 8);
	d.dk = RTC_LINATTN_MAX_DK;
	CHECK(rtc_linattn_plan(&d, &p));
	CHECK_EQ(p.parts, 32);
	d.dk = RTC_LINATTN_MAX_DK + 1;
	CHECK(!rtc_linattn_plan(&d, &p));
}

/* ------------------------------------------------------------------------ */
/* Normalization windows                                                    */
/* ------------------------------------------------------------------------ */

static void test_lrn(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 300; cs++) {
		struct rt_lrn_desc d = { RT_F64,
			                 rnd_in(1, 2),
			                 rnd_in(1, 9),
			                 rnd_in(1, 20),
			                 rnd_in(1, 7),
			                 1e-2f,
			                 rnd(2) ? 0.75f : 0.6f,
			                 1.5f,
			                 0 };
		struct rtc_chan ch = rtc_chan_of(d.n, d.c, d.spatial);
		int64_t n = d.n * d.c * d.spatial;
		double *x = alloc(8 * (size_t)n), *y = alloc(8 * (size_t)n);
		for (int64_t i = 0; i < n; i++)
			x[i] = rnd_unit() * 4 - 2;
		CHECK_EQ(rt_lrn(ctx, &d, x, y), RT_OK);
		CHECK_EQ(ch.total, n);
		for (int64_t f = 0; f < n; f++) {
			int64_t c = rtc_channel_of(&ch, f), lo, hi;
			double sq = 0, t, v;
			CHECK_EQ(c, f / d.spatial % d.c);
			rtc_lrn_window(c, d.size, d.c, &lo, &hi);
			for (int64_t i = lo; i <= hi; i++)
				sq += x[f + (i - c) * ch.inner] * x[f + (i - c) * ch.inner];
			t = (double)d.bias + (double)d.alpha / (double)d.size * sq;
			v = x[f] / pow(t, (double)d.beta);
			if (!close_to(v, y[f], 1e-9)) {
				if (bad < 5)
					fprintf(stderr, "lrn case %d at %lld: %g, want %g\n", cs,
					        (long long)f, v, y[f]);
				bad++;
			}
		}
		free(x);
		free(y);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Copies and tile                                                          */
/* ------------------------------------------------------------------------ */

/* Runs a planned copy on the host the way the kernels do: tiles or the
 * flat loop (decoded both ways when the index space is small). */
static void xfer_emulate(const struct rtc_xfer *t, const char *x, char *y)
{
	int es = t->esize;
	if (t->tposed) {
		struct rtc_tmap mp = rtc_xfer_tmap(t);
		for (int64_t k = 0; k < mp.tiles; k++) {
			int64_t so, dof, a0, b0;
			rtc_xfer_tile(t, &mp, k, &so, &dof, &a0, &b0);
			for (int64_t a = a0; a < a0 + RTC_TILE && a < mp.na; a++)
				for (int64_t b = b0; b < b0 + RTC_TILE && b < mp.nb; b++)
					memcpy(y + (dof + b + a * mp.ds_a) * es,
					       x + (so + a + b * mp.ss_b) * es, (size_t)es);
		}
		return;
	}
	for (int64_t f = 0; f < t->total; f++) {
		int64_t so, dof, so2, dof2;
		rtc_xfer_at(t, t->small, f, &so, &dof);
		rtc_xfer_at(t, 0, f, &so2, &dof2);
		if (so != so2 || dof != dof2)
			memset(y, 0xee, 1); /* shows as a mismatch */
		memcpy(y + dof * es, x + so * es, (size_t)es);
	}
}

/* A random copy: a view (permuted, sliced, reversed, broadcast) of a source
 * tensor written densely or into a view of a larger destination. Sets the
 * element counts of both buffers. */
static void copy_case(struct rt_copy_desc *d, int64_t *nsrc, int64_t *ndst)
{
	int perm[8], rank;
	int64_t full[8], st[8], s = 1, dfull[8], dst_st[8];
	memset(d, 0, sizeof *d);
	static const int sizes[] = { 1, 2, 3, 4, 8, 16 };
	d->esize = sizes[rnd(6)];
	rank = d->rank = (int)rnd_in(0, rnd(4) ? 4 : 8);
	for (int i = 0; i < rank; i++) {
		d->dims[i] = rnd(30) == 0 ? 0 : rnd(6) == 0 ? rnd_in(16, 40) : rnd_in(1, 4);
		perm[i] = i;
	}
	if (rank > 3 && rnd(2)) /* keep big copies small */
		for (int i = 0; i < rank; i++)
			d->dims[i] = rnd_in(1, 3);
	if (rank >= 2 && rank <= 4 && rnd(3) == 0) { /* two long dims: transposes */
		for (int i = 0; i < rank; i++)
			d->dims[i] = rnd_in(1, 3);
		d->dims[rnd(rank)] = rnd_in(16, 40);
		d->dims[rnd(rank)] = rnd_in(16, 40);
	}
	for (int i = rank - 1; i > 0; i--) {
		int j = (int)rnd(i + 1), tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	/* source: dims[i] * step + slack along each axis, dense in permuted order */
	int64_t step[8], start[8];
	for (int i = 0; i < rank; i++) {
		step[i] = rnd(4) ? 1 : 2;
		start[i] = rnd(2);
		full[i] = (d->dims[i] ? (d->dims[i] - 1) * step[i] + 1 : 0) + start[i] + rnd(2);
	}
	for (int k = rank - 1; k >= 0; k--) {
		st[perm[k]] = s;
		s *= full[perm[k]] ? full[perm[k]] : 1;
	}
	*nsrc = s;
	d->offset = 0;
	for (int i = 0; i < rank; i++) {
		int kind = (int)rnd(8);
		d->offset += start[i] * st[i];
		if (kind == 0) {
			d->strides[i] = 0; /* broadcast */
		} else if (kind == 1 && d->dims[i]) {
			d->strides[i] = -step[i] * st[i]; /* reversed */
			d->offset += (d->dims[i] - 1) * step[i] * st[i];
		} else {
			d->strides[i] = step[i] * st[i];
		}
	}
	d->dst_dense = rnd(3) != 0;
	s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		dfull[i] = d->dims[i] + (d->dst_dense ? 0 : rnd(3));
		dst_st[i] = s;
		s *= dfull[i] ? dfull[i] : 1;
	}
	*ndst = s;
	d->dst_offset = 0;
	for (int i = 0; i < rank; i++) {
		d->dst_strides[i] = dst_st[i];
		if (!d->dst_dense && dfull[i] > d->dims[i])
			d->dst_offset += rnd(dfull[i] - d->dims[i] + 1) * dst_st[i];
	}
}

static int bytes_equal(const void *a, const void *b, size_t n, const char *what, int cs, int *bad)
{
	if (!memcmp(a, b, n))
		return 1;
	if (*bad < 5)
		fprintf(stderr, "%s case %d: bytes differ\n", what, cs);
	++*bad;
	return 0;
}

static void test_copy(void)
{
	int bad = 0, tposed = 0, widened = 0;
	setup();
	for (int cs = 0; cs < 6000; cs++) {
		struct rt_copy_desc d;
		struct rtc_xfer t;
		int64_t nsrc, ndst;
		copy_case(&d, &nsrc, &ndst);
		if (nsrc * d.esize > (1 << 22) || ndst * d.esize > (1 << 22))
			continue;
		size_t xb = (size_t)(nsrc * d.esize), yb = (size_t)(ndst * d.esize);
		/* shifted by one element now and then: widening must notice */
		int64_t shift = rnd(4) == 0 ? d.esize : 0;
		char *xa = alloc(xb + 32), *ya = alloc(yb + 32), *za = alloc(yb + 32);
		char *x = xa + shift, *y = ya + shift, *z = za + shift;
		rnd_bytes(x, xb);
		rnd_bytes(y, yb);
		memcpy(z, y, yb);
		CHECK_EQ(rt_copy(ctx, &d, x, y), RT_OK);
		CHECK_EQ(rtc_copy_plan(&d, (uintptr_t)x, (uintptr_t)z, &t), RT_OK);
		if (t.total) {
			CHECK(t.esize % d.esize == 0 && t.esize <= 16);
			tposed += t.tposed != 0;
			widened += t.esize != d.esize;
			xfer_emulate(&t, x, z);
		}
		bytes_equal(y, z, yb, "copy", cs, &bad);
		free(xa);
		free(ya);
		free(za);
	}
	CHECK_EQ(bad, 0);
	CHECK(tposed > 50);
	CHECK(widened > 50);
}

static void test_tile(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 2000; cs++) {
		struct rt_tile_desc d;
		struct rtc_xfer t;
		int64_t nx = 1, ny = 1;
		memset(&d, 0, sizeof d);
		d.esize = (int)(rnd(2) ? 4 : rnd_in(1, 9));
		d.rank = (int)rnd_in(0, 4);
		for (int i = 0; i < d.rank; i++) {
			d.in_dims[i] = rnd(20) == 0 ? 0 : rnd_in(1, 5);
			d.repeats[i] = rnd(20) == 0 ? 0 : rnd_in(1, 3);
			nx *= d.in_dims[i];
			ny *= d.in_dims[i] * d.repeats[i];
		}
		char *x = alloc((size_t)(nx * d.esize)), *y = alloc((size_t)(ny * d.esize));
		char *z = alloc((size_t)(ny * d.esize));
		rnd_bytes(x, (size_t)(nx * d.esize));
		CHECK_EQ(rt_tile(ctx, &d, x, y), RT_OK);
		CHECK_EQ(rtc_tile_plan(&d, (uintptr_t)x, (uintptr_t)z, &t), RT_OK);
		if (t.total)
			xfer_emulate(&t, x, z);
		bytes_equal(y, z, (size_t)(ny * d.esize), "tile", cs, &bad);
		free(x);
		free(y);
		free(z);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Gathers                                                                  */
/* ------------------------------------------------------------------------ */

/* Fills n indices into [-dim, dim), with an out-of-range one now and then. */
static void rnd_indices(void *idx, int dtype, int64_t n, int64_t dim, int bad_rate)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t k = dim ? rnd_in(-dim, dim - 1) : 0;
		if (bad_rate && rnd(bad_rate) == 0)
			k = rnd(2) ? dim + rnd(3) : -dim - 1 - rnd(3);
		if (dtype == RT_I32)
			((int32_t *)idx)[i] = (int32_t)k;
		else
			((int64_t *)idx)[i] = k;
	}
}

static int64_t index_at(const void *idx, int dtype, int64_t i)
{
	return dtype == RT_I32 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
}

static void test_gather(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 3000; cs++) {
		static const int sizes[] = { 1, 2, 3, 4, 8 };
		struct rt_gather_desc d = { sizes[rnd(5)],
			                    rnd(2) ? RT_I32 : RT_I64,
			                    rnd_in(0, 3),
			                    rnd_in(0, 5),
			                    rnd(3) ? rnd_in(1, 8) : rnd_in(0, 64),
			                    rnd_in(0, 6) };
		struct rtc_gather g;
		int err = 0, status;
		size_t xb = (size_t)(d.outer * d.axis * d.inner * d.esize);
		size_t yb = (size_t)(d.outer * d.nidx * d.inner * d.esize);
		char *x = alloc(xb), *y = alloc(yb), *z = alloc(yb);
		void *idx = alloc(8 * (size_t)d.nidx);
		rnd_bytes(x, xb);
		rnd_indices(idx, d.index_dtype, d.nidx, d.axis, rnd(3) ? 0 : 6);
		status = rt_gather(ctx, &d, x, idx, y);
		CHECK_EQ(rtc_gather_plan(&d, (uintptr_t)x, (uintptr_t)z, &g), RT_OK);
		CHECK(g.esize * g.inner == d.esize * d.inner);
		for (int64_t f = 0; f < g.total; f++) {
			int64_t j, src = rtc_gather_at(&g, f, &j);
			int64_t k = rtc_norm_index(index_at(idx, d.index_dtype, j), g.axis);
			if (k < 0)
				err = 1;
			else
				memcpy(z + f * g.esize, x + (src + k * g.inner) * g.esize,
				       (size_t)g.esize);
		}
		for (int64_t j = 0; g.total == 0 && j < d.nidx; j++)
			err |= rtc_norm_index(index_at(idx, d.index_dtype, j), d.axis) < 0;
		CHECK_EQ(status, err ? RT_ERR_INDEX : RT_OK);
		if (!err)
			bytes_equal(y, z, yb, "gather", cs, &bad);
		free(x);
		free(y);
		free(z);
		free(idx);
	}
	CHECK_EQ(bad, 0);
}

static void test_gather_elements(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 3000; cs++) {
		struct rt_gather_elements_desc d;
		struct rtc_gel g;
		int64_t nx = 1, ni = 1;
		int err = 0, status, plan;
		memset(&d, 0, sizeof d);
		d.esize = (int)(rnd(2) ? 4 : rnd_in(1, 8));
		d.index_dtype = rnd(2) ? RT_I32 : RT_I64;
		d.rank = (int)rnd_in(1, 4);
		d.axis = (int)rnd(d.rank);
		for (int k = 0; k < d.rank; k++) {
			d.data_dims[k] = rnd_in(rnd(20) ? 1 : 0, 4);
			d.index_dims[k] = k == d.axis ? rnd_in(0, 5) : rnd_in(0, d.data_dims[k]);
			if (rnd(40) == 0)
				d.index_dims[k] = d.data_dims[k] + 1; /* too big: RT_ERR_INDEX */
			nx *= d.data_dims[k];
			ni *= d.index_dims[k];
		}
		char *x = alloc((size_t)(nx * d.esize)), *y = alloc((size_t)(ni * d.esize));
		char *z = alloc((size_t)(ni * d.esize));
		void *idx = alloc(8 * (size_t)ni);
		rnd_bytes(x, (size_t)(nx * d.esize));
		rnd_indices(idx, d.index_dtype, ni, d.data_dims[d.axis], rnd(3) ? 0 : 8);
		status = rt_gather_elements(ctx, &d, x, idx, y);
		plan = rtc_gel_plan(&d, &g);
		if (plan == RT_ERR_INDEX) {
			CHECK_EQ(status, RT_ERR_INDEX);
		} else {
			CHECK_EQ(plan, RT_OK);
			for (int64_t f = 0; f < g.total; f++) {
				int64_t k =
				        rtc_norm_index(index_at(idx, d.index_dtype, f), g.axis_n);
				if (k < 0)
					err = 1;
				else
					memcpy(z + f * g.esize,
					       x + (rtc_gel_base(&g, f) + k * g.axis_stride) *
					                       g.esize,
					       (size_t)g.esize);
			}
			CHECK_EQ(status, err ? RT_ERR_INDEX : RT_OK);
			if (!err)
				bytes_equal(y, z, (size_t)(ni * d.esize), "gather_elements", cs,
				            &bad);
		}
		free(x);
		free(y);
		free(z);
		free(idx);
	}
	CHECK_EQ(bad, 0);
}

/* One update combined as the kernels do (the dtypes test_scatter_elements
 * draws: f32, i32, i64, u8). */
static void scel_combine(int dtype, int red, char *y, const char *u)
{
	if (red == RT_SCATTER_NONE) {
		memcpy(y, u, (size_t)rt_dtype_size(dtype));
	} else if (dtype == RT_F32) {
		float a, b;
		memcpy(&a, y, 4);
		memcpy(&b, u, 4);
		a = red == RT_SCATTER_ADD   ? a + b
		    : red == RT_SCATTER_MUL ? a * b
		    : red == RT_SCATTER_MAX ? (b > a || b != b ? b : a)
		                            : (b < a || b != b ? b : a);
		memcpy(y, &a, 4);
	} else {
		int es = rt_dtype_size(dtype);
		uint64_t a = 0, b = 0, r;
		int64_t sa, sb;
		memcpy(&a, y, (size_t)es); /* little-endian: the low bytes */
		memcpy(&b, u, (size_t)es);
		sa = es == 8 ? (int64_t)a : es == 4 ? (int32_t)(uint32_t)a : (int64_t)a;
		sb = es == 8 ? (int64_t)b : es == 4 ? (int32_t)(uint32_t)b : (int64_t)b;
		r = red == RT_SCATTER_ADD   ? a + b
		    : red == RT_SCATTER_MUL ? a * b
		    : red == RT_SCATTER_MAX ? (sb > sa ? b : a)
		                            : (sb < sa ? b : a);
		memcpy(y, &r, (size_t)es);
	}
}

/* ScatterElements: the GatherElements arithmetic (rtc_scel_plan) sending
 * each update, in order, to its element, against rt_scatter_elements. */
static void test_scatter_elements(void)
{
	static const int dtypes[] = { RT_F32, RT_I32, RT_I64, RT_U8 };
	int bad = 0;
	setup();
	for (int cs = 0; cs < 3000; cs++) {
		struct rt_scatter_elements_desc d;
		struct rtc_gel g;
		int64_t nx = 1, ni = 1;
		int err = 0, status, plan, es;
		memset(&d, 0, sizeof d);
		d.dtype = dtypes[rnd(4)];
		d.index_dtype = rnd(2) ? RT_I32 : RT_I64;
		d.reduction = (int)rnd(5);
		d.rank = (int)rnd_in(1, 4);
		d.axis = (int)rnd(d.rank);
		es = rt_dtype_size(d.dtype);
		for (int k = 0; k < d.rank; k++) {
			d.data_dims[k] = rnd_in(rnd(20) ? 1 : 0, 4);
			d.index_dims[k] = k == d.axis ? rnd_in(0, 6) : rnd_in(0, d.data_dims[k]);
			if (rnd(40) == 0)
				d.index_dims[k] = d.data_dims[k] + 1; /* too big: RT_ERR_INDEX */
			nx *= d.data_dims[k];
			ni *= d.index_dims[k];
		}
		char *x = alloc((size_t)(nx * es)), *y = alloc((size_t)(nx * es));
		char *z = alloc((size_t)(nx * es)), *u = alloc((size_t)(ni * es));
		void *idx = alloc(8 * (size_t)ni);
		if (d.dtype == RT_F32) {
			for (int64_t i = 0; i < nx; i++)
				((float *)x)[i] = (float)rnd_in(-50, 50) * 0.25f;
			for (int64_t i = 0; i < ni; i++)
				((float *)u)[i] = (float)rnd_in(-8, 8) * 0.5f;
		} else {
			rnd_bytes(x, (size_t)(nx * es));
			rnd_bytes(u, (size_t)(ni * es));
		}
		rnd_indices(idx, d.index_dtype, ni, d.data_dims[d.axis], rnd(3) ? 0 : 8);
		status = rt_scatter_elements(ctx, &d, x, idx, u, y);
		plan = rtc_scel_plan(&d, &g);
		if (plan == RT_ERR_INDEX) {
			CHECK_EQ(status, RT_ERR_INDEX);
		} else {
			CHECK_EQ(plan, RT_OK);
			CHECK_EQ(g.esize, es);
			memcpy(z, x, (size_t)(nx * es));
			for (int64_t f = 0; f < g.total; f++) {
				int64_t k =
				        rtc_norm_index(index_at(idx, d.index_dtype, f), g.axis_n);
				int64_t at = rtc_gel_base(&g, f) + k * g.axis_stride;
				if (k < 0)
					err = 1;
				else
					scel_combine(d.dtype, d.reduction, z + at * es, u + f * es);
			}
			CHECK_EQ(status, err ? RT_ERR_INDEX : RT_OK);
			if (!err)
				bytes_equal(y, z, (size_t)(nx * es), "scatter_elements", cs, &bad);
		}
		free(x);
		free(y);
		free(z);
		free(u);
		free(idx);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Pad, trilu                                                               */
/* ------------------------------------------------------------------------ */

static void test_pad(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 3000; cs++) {
		struct rt_pad_desc d;
		struct rtc_pad p;
		int64_t nx = 1, ny = 1;
		int ok = 1;
		memset(&d, 0, sizeof d);
		d.esize = (int)rnd_in(1, 8);
		d.mode = (int)rnd(4); /* constant, reflect, edge, wrap */
		d.rank = (int)rnd_in(0, 4);
		rnd_bytes(d.value, 8);
		for (int k = 0; k < d.rank; k++) {
			int64_t out;
			d.in_dims[k] = rnd(15) == 0 ? 0 : rnd_in(1, 5);
			d.pads[k] = rnd_in(-2, rnd(5) ? 3 : 9);
			d.pads[d.rank + k] = rnd_in(-2, rnd(5) ? 3 : 9);
			out = d.in_dims[k] + d.pads[k] + d.pads[d.rank + k];
			ok &= out >= 0;
			nx *= d.in_dims[k];
			ny *= out > 0 ? out : 0;
		}
		if (!ok)
			continue;
		char *x = alloc((size_t)(nx * d.esize)), *y = alloc((size_t)(ny * d.esize));
		char *z = alloc((size_t)(ny * d.esize));
		rnd_bytes(x, (size_t)(nx * d.esize));
		CHECK_EQ(rt_pad(ctx, &d, x, y), RT_OK);
		CHECK_EQ(rtc_pad_plan(&d, (uintptr_t)x, (uintptr_t)z, &p), RT_OK);
		CHECK_EQ(p.total, ny);
		for (int64_t f = 0; f < p.total; f++) {
			int64_t s = rtc_pad_at(&p, f);
			memcpy(z + f * d.esize, s >= 0 ? x + s * d.esize : (const char *)d.value,
			       (size_t)d.esize);
		}
		bytes_equal(y, z, (size_t)(ny * d.esize), "pad", cs, &bad);
		free(x);
		free(y);
		free(z);
	}
	CHECK_EQ(bad, 0);
}

static void test_trilu(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 2000; cs++) {
		struct rt_trilu_desc d = { (int)rnd_in(1, 8), (int)rnd(2),  rnd_in(0, 3),
			                   rnd_in(0, 7),      rnd_in(0, 7), rnd_in(-9, 9) };
		struct rtc_trilu t;
		int in_place = (int)rnd(2);
		if (rnd(10) == 0)
			d.k = rnd(2) ? INT64_MAX : INT64_MIN;
		size_t n = (size_t)(d.batch * d.rows * d.cols * d.esize);
		char *x = alloc(n), *y = alloc(n), *z = alloc(n);
		rnd_bytes(x, n);
		if (in_place)
			memcpy(y, x, n);
		CHECK_EQ(rt_trilu(ctx, &d, in_place ? y : x, y), RT_OK);
		CHECK_EQ(rtc_trilu_plan(&d, (uintptr_t)x, (uintptr_t)z, &t), RT_OK);
		for (int64_t f = 0; f < t.total; f++)
			if (rtc_trilu_keep(&t, f))
				memcpy(z + f * d.esize, x + f * d.esize, (size_t)d.esize);
		bytes_equal(y, z, n, "trilu", cs, &bad);
		free(x);
		free(y);
		free(z);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Resize                                                                   */
/* ------------------------------------------------------------------------ */

/* Output f as resize2 computes it (at most two resized dims). */
static float resize2_emulate(const struct rtc_resize *p, const float *x, int64_t f)
{
	struct rt_resize_taps tc = { 1, { 0 }, { 1 } }, tr = { 1, { 0 }, { 1 } };
	int64_t g = f, base = 0;
	int nres = 0;
	float acc = 0;
	for (int d = p->d.rank - 1; d >= 0; d--) {
		int64_t i = rtc_digit(p->small, p->dv[d], p->d.out_dims[d], &g);
		if (p->identity[d])
			base += i * p->xs[d];
		else if (nres++ == 0)
			rtc_resize_taps(p, d, i, &tc);
		else
			rtc_resize_taps(p, d, i, &tr);
	}
	if (tc.n == 0 || tr.n == 0)
		return p->d.extrapolation;
	for (int a = 0; a < tr.n; a++) {
		float v = 0;
		for (int b = 0; b < tc.n; b++)
			v += tc.w[b] * x[base + tr.off[a] + tc.off[b]];
		acc += tr.w[a] * v;
	}
	return acc;
}

/* Output f as resize_any computes it. */
static float resize_any_emulate(const struct rtc_resize *p, const float *x, int64_t f)
{
	struct rt_resize_taps t[8];
	int pick[8], nres = 0, ext = 0;
	int64_t g = f, base = 0;
	float acc = 0;
	for (int d = p->d.rank - 1; d >= 0; d--) {
		int64_t i = rtc_digit(p->small, p->dv[d], p->d.out_dims[d], &g);
		if (p->identity[d]) {
			base += i * p->xs[d];
			continue;
		}
		rtc_resize_taps(p, d, i, &t[nres]);
		ext |= t[nres].n == 0;
		pick[nres++] = 0;
	}
	if (ext)
		return p->d.extrapolation;
	if (nres == 0)
		return x[base];
	for (;;) {
		int64_t off = base;
		float w = 1, v = 0;
		int r;
		for (r = nres - 1; r >= 1; r--) {
			off += t[r].off[pick[r]];
			w *= t[r].w[pick[r]];
		}
		for (int b = 0; b < t[0].n; b++)
			v += t[0].w[b] * x[off + t[0].off[b]];
		acc += w * v;
		for (r = 1; r < nres && ++pick[r] == t[r].n; r++)
			pick[r] = 0;
		if (r == nres)
			break;
	}
	return acc;
}

static void resize_case(struct rt_resize_desc *d)
{
	static const double factors[] = { 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 1.0 / 3 };
	memset(d, 0, sizeof *d);
	d->dtype = RT_F32;
	d->mode = (int)rnd(3);
	d->coord = (int)rnd(6);
	d->nearest = (int)rnd(4);
	d->rank = (int)rnd_in(1, 4);
	d->cubic_a = rnd(2) ? -0.75f : -0.5f;
	d->exclude_outside = (int)rnd(2);
	d->extrapolation = (float)rnd_in(-3, 3);
	for (int i = 0; i < d->rank; i++) {
		int kind = (int)rnd(4);
		d->in_dims[i] = rnd(40) == 0 ? 0 : rnd_in(1, d->rank > 2 ? 4 : 7);
		if (kind == 0) { /* identity */
			d->out_dims[i] = d->in_dims[i];
			d->scales[i] = 1;
		} else if (kind == 1) { /* sizes: scale = out / in */
			d->out_dims[i] = rnd_in(1, 9);
			d->scales[i] =
			        d->in_dims[i] ? (double)d->out_dims[i] / (double)d->in_dims[i] : 1;
		} else { /* scales: out = floor(in * scale) */
			d->scales[i] = factors[rnd(10)];
			d->out_dims[i] = (int64_t)floor((double)d->in_dims[i] * d->scales[i]);
		}
		d->roi[i] = (float)(rnd_unit() * 0.6 - 0.1);
		d->roi[d->rank + i] = (float)(rnd_unit() * 0.6 + 0.5);
	}
}

static void test_resize(void)
{
	int bad = 0;
	setup();
	for (int cs = 0; cs < 4000; cs++) {
		struct rt_resize_desc d;
		struct rtc_resize p;
		int64_t nx = 1, ny = 1;
		int nres = 0;
		resize_case(&d);
		for (int i = 0; i < d.rank; i++) {
			nx *= d.in_dims[i];
			ny *= d.out_dims[i];
		}
		float *x = alloc(4 * (size_t)nx), *y = alloc(4 * (size_t)ny);
		for (int64_t i = 0; i < nx; i++)
			x[i] = (float)(rnd_unit() * 2 - 1);
		CHECK_EQ(rt_resize(ctx, &d, x, y), RT_OK);
		CHECK_EQ(rtc_resize_plan(&d, &p), RT_OK);
		CHECK_EQ(p.total, ny);
		for (int i = 0; i < d.rank; i++)
			nres += !p.identity[i];
		for (int64_t f = 0; nx && f < ny; f++) {
			float a = resize_any_emulate(&p, x, f);
			float b = nres <= 2 ? resize2_emulate(&p, x, f) : a;
			double tol = d.mode == RT_RESIZE_NEAREST ? 0 : 2e-5;
			if (!close_to(a, y[f], tol) || !close_to(b, y[f], tol)) {
				if (bad < 5)
					fprintf(stderr,
					        "resize case %d (mode %d coord %d nearest %d rank "
					        "%d) at "
					        "%lld: %g %g, want %g\n",
					        cs, d.mode, d.coord, d.nearest, d.rank,
					        (long long)f, a, b, y[f]);
				bad++;
			}
		}
		for (int64_t f = 0; !nx && f < ny; f++)
			CHECK(y[f] == 0);
		free(x);
		free(y);
	}
	CHECK_EQ(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Bad descriptors: refused where the CPU refuses them                      */
/* ------------------------------------------------------------------------ */

static void test_refusals(void)
{
	struct rt_pool_desc pd = { RT_F32, RT_POOL_AVG, 4, 1, 1 };
	struct rtc_pool_geom g;
	struct rt_copy_desc cd = { 0, 1, { 3 }, 0, { 1 }, 0, { 1 }, 1 };
	struct rt_pad_desc padd = { 4, 7, 1, { 3 }, { 0, 0 }, { 0 } };
	struct rt_resize_desc rd = { RT_F32, 9, 0, 0, 1, { 2 }, { 3 }, { 1.5 } };
	struct rtc_xfer t;
	struct rtc_pad p;
	struct rtc_resize r;
	CHECK_EQ(rtc_pool_geom_of(&pd, &g), RT_ERR_ARGUMENT);
	pd.nsp = 1;
	pd.in[0] = pd.out[0] = pd.k[0] = 1;
	pd.stride[0] = 0;
	pd.dil[0] = 1;
	CHECK_EQ(rtc_pool_geom_of(&pd, &g), RT_ERR_ARGUMENT);
	CHECK_EQ(rtc_copy_plan(&cd, 64, 64, &t), RT_ERR_ARGUMENT);
	cd.esize = 4;
	CHECK_EQ(rtc_copy_plan(&cd, 0, 64, &t), RT_ERR_ARGUMENT);
	CHECK_EQ(rtc_copy_plan(&cd, 64, 64, &t), RT_OK);
	CHECK_EQ(rtc_pad_plan(&padd, 64, 64, &p), RT_ERR_ARGUMENT);
	CHECK_EQ(rtc_resize_plan(&rd, &r), RT_ERR_ARGUMENT);
}

TESTS(T(test_div) T(test_launch) T(test_dtypes) T(test_pool) T(test_reduce) T(test_arg)
              T(test_softmax_lanes) T(test_cumsum) T(test_lrn) T(test_copy) T(test_tile)
                      T(test_gather) T(test_gather_elements) T(test_scatter_elements) T(test_pad)
                              T(test_trilu) T(test_resize) T(test_refusals) T(test_topk)
                                      T(test_linear_attention))
