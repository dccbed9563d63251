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
#include "rt_index_rnn.h"
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

/*
 * rtc_attention.cu's attn_rows emulated: every block and warp of the plan
 * takes its rows in the grid-stride order, each lane's score summed in the
 * kernel's order over the staged dims, the chunk's max and sum in xor
 * shuffle order, the value columns per lane and pass; against
 * rt_attention (rt_flash.c).
 */
static float warp_host(const float *lanes, int max)
{
	float v[32], w[32];
	memcpy(v, lanes, sizeof v);
	for (int o = 16; o > 0; o /= 2) {
		for (int q = 0; q < 32; q++) {
			float a = v[q], b = v[q ^ o];
			w[q] = max ? (b > a || a != a ? b : a) : a + b;
		}
		memcpy(v, w, sizeof v);
	}
	return v[0];
}

static void attn_emulate(const struct rt_attention_desc *d, int sm_count, const float *q,
                         const float *k, const float *v, const void *mask, float *y, float *lse,
                         int *seen)
{
	struct rtc_attn p;
	const int64_t dk = d->dk, dv = d->dv;
	static float sk[RTC_ATTN_KC][RTC_ATTN_DC + 1], sq[RTC_ATTN_DC], acc[32][RTC_ATTN_NV];
	float dot[32], s[32], e[32];
	CHECK(rtc_attn_plan(d, sm_count, &p));
	CHECK_EQ(p.rows.group, 32);
	for (int blk = 0; blk < p.rows.blocks; blk++)
		for (int tid = 0; tid < p.rows.threads; tid += 32)
			for (int64_t row = rtc_rows_first(&p.rows, blk, tid); row < p.nrows;
			     row += rtc_rows_step(&p.rows)) {
				int64_t b, h, i, kend, kv;
				seen[row]++;
				rtc_attn_row(d, row, &b, &h, &i);
				kend = rtc_attn_kend(d, i);
				kv = rtc_attn_kv_row(d, b, h, 0);
				for (int pass = 0; pass < p.passes; pass++) {
					float m = -INFINITY, l = 0;
					memset(acc, 0, sizeof acc);
					for (int64_t j0 = 0; j0 < kend; j0 += RTC_ATTN_KC) {
						int n = (int)rt_min64(RTC_ATTN_KC, kend - j0);
						float mn, sum, corr;
						memset(dot, 0, sizeof dot);
						for (int64_t d0 = 0; d0 < dk; d0 += RTC_ATTN_DC) {
							for (int ln = 0; ln < 32; ln++) {
								int64_t c = d0 + ln;
								sq[ln] = c < dk ? q[row * dk + c]
								                : 0;
								for (int r = 0; r < RTC_ATTN_KC;
								     r++)
									sk[r][ln] =
									        c < dk && r < n
									                ? k[(kv +
									                     j0 +
									                     r) * dk +
									                    c]
									                : 0;
							}
							for (int ln = 0; ln < 32; ln++)
								for (int c2 = 0; c2 < RTC_ATTN_DC;
								     c2++)
									dot[ln] +=
									        sq[c2] * sk[ln][c2];
						}
						for (int ln = 0; ln < 32; ln++) {
							int64_t at;
							s[ln] = -INFINITY;
							if (ln >= n)
								continue;
							s[ln] = rtc_attn_score(d, dot[ln]);
							at = rtc_attn_mask_at(d, b, h, i, j0 + ln);
							if (d->mask == RT_ATTN_BIAS)
								s[ln] += ((const float *)mask)[at];
							else if (d->mask == RT_ATTN_BOOL &&
							         !((const unsigned char *)mask)[at])
								s[ln] = -INFINITY;
						}
						mn = warp_host(s, 1);
						mn = mn > m ? mn : m;
						if (mn == -INFINITY)
							continue;
						for (int ln = 0; ln < 32; ln++)
							e[ln] = expf(s[ln] - mn);
						corr = expf(m - mn);
						sum = warp_host(e, 0);
						l = l * corr + sum;
						m = mn;
						for (int ln = 0; ln < 32; ln++)
							for (int t = 0; t < RTC_ATTN_NV; t++)
								acc[ln][t] *= corr;
						for (int r = 0; r < n; r++)
							for (int ln = 0; ln < 32; ln++)
								for (int t = 0; t < RTC_ATTN_NV;
								     t++) {
									int64_t c = rtc_attn_col(
									        pass, ln, t);
									if (c < dv)
										acc[ln][t] +=
										        e[r] *
										        v[(kv + j0 +
										           r) * dv +
										          c];
								}
					}
					for (int ln = 0; ln < 32; ln++)
						for (int t = 0; t < RTC_ATTN_NV; t++) {
							int64_t c = rtc_attn_col(pass, ln, t);
							if (c < dv)
								y[row * dv + c] = acc[ln][t] *
								                  rtc_attn_inv(l);
						}
					if (pass == 0 && lse)
						lse[row] = rtc_attn_lse(m, l);
				}
			}
}

/* close_to, and infinities (a fully masked row's lse) only as themselves */
static int attn_close(double a, double b)
{
	return isinf(a) || isinf(b) ? a == b : close_to(a, b, 2e-5);
}

static void test_attention(void)
{
	int bad = 0, masked_rows = 0, multipass = 0, ragged = 0, capped = 0;
	setup();
	for (int cs = 0; cs < 400; cs++) {
		struct rt_attention_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = RT_F32;
		d.batch = rnd_in(1, 2);
		d.kv_heads = rnd_in(1, 3);
		d.q_heads = d.kv_heads * rnd_in(1, 3);
		d.lq = rnd(4) ? rnd_in(1, 70) : 1;
		d.lk = rnd(12) ? rnd_in(1, 100) : rnd_in(0, 3);
		d.dk = rnd(3) ? rnd_in(1, 40) : rnd_in(41, 100);
		d.dv = rnd(8) ? rnd_in(1, 80) : rnd_in(RTC_ATTN_NV * 32 - 5, RTC_ATTN_NV * 32 + 40);
		d.causal = (int)rnd(2);
		d.causal_offset = rnd(3) ? rnd_in(-d.lq - 2, d.lk + 2) : rnd(2) ? 0 : d.lk - d.lq;
		d.mask = (int)rnd(3);
		d.scale = rnd(2) ? (float)(1 / sqrt((double)d.dk)) : (float)(0.1 + 2 * rnd_unit());
		d.softcap = rnd(3) ? 0 : (float)rnd_in(1, 5);
		int64_t dims[4] = { d.batch, d.q_heads, d.lq, d.lk }, nm = 1;
		for (int a = 3; a >= 0; a--) {
			d.mask_strides[a] = d.mask && rnd(3) ? nm : 0; /* 0: broadcast */
			nm *= dims[a];
		}
		int with_lse = (int)rnd(3) > 0, sm = (int)rnd_in(1, 3);
		int64_t rows = d.batch * d.q_heads * d.lq, ny = rows * d.dv;
		float *q = rnd_f32s(rows * d.dk, -1, 1),
		      *k = rnd_f32s(d.batch * d.kv_heads * d.lk * d.dk, -1, 1),
		      *v = rnd_f32s(d.batch * d.kv_heads * d.lk * d.dv, -1, 1);
		float *bias = NULL;
		unsigned char *keep = NULL;
		if (d.mask == RT_ATTN_BIAS) {
			bias = rnd_f32s(nm, -3, 3);
			for (int64_t a = 0; a < nm; a++)
				if (!rnd(20))
					bias[a] = -INFINITY;
		} else if (d.mask == RT_ATTN_BOOL) {
			keep = alloc((size_t)nm);
			for (int64_t a = 0; a < nm; a++)
				keep[a] = rnd(4) != 0;
		}
		if (d.mask && d.lq && rnd(2)) { /* a fully masked row (or more: broadcast) */
			int64_t i = rnd(d.lq);
			for (int64_t b = 0; b < d.batch; b++)
				for (int64_t h = 0; h < d.q_heads; h++)
					for (int64_t j = 0; j < d.lk; j++) {
						int64_t at = rtc_attn_mask_at(&d, b, h, i, j);
						if (bias)
							bias[at] = -INFINITY;
						else
							keep[at] = 0;
					}
		}
		const void *mask = bias ? (const void *)bias : (const void *)keep;
		float *y = alloc(4 * (size_t)(ny + 1)), *ey = alloc(4 * (size_t)(ny + 1)),
		      *lse = alloc(4 * (size_t)(rows + 1)), *else_ = alloc(4 * (size_t)(rows + 1));
		int *seen = alloc(sizeof(int) * (size_t)(rows + 1));
		for (int64_t r = 0; r < rows; r++)
			lse[r] = else_[r] = 12345; /* untouched without lse */
		CHECK_EQ(rt_attention(ctx, &d, q, k, v, mask, ey, with_lse ? else_ : NULL), RT_OK);
		attn_emulate(&d, sm, q, k, v, mask, y, with_lse ? lse : NULL, seen);
		for (int64_t r = 0; r < rows; r++) {
			if (seen[r] != 1)
				bad++;
			if (with_lse && else_[r] == -INFINITY)
				masked_rows++;
		}
		for (int64_t a = 0; a < ny; a++)
			if (!attn_close(y[a], ey[a])) {
				if (bad < 5)
					fprintf(stderr, "attention case %d y[%lld]: %g, want %g\n",
					        cs, (long long)a, y[a], ey[a]);
				bad++;
			}
		for (int64_t r = 0; r < rows; r++)
			if (!attn_close(lse[r], else_[r])) {
				if (bad < 5)
					fprintf(stderr,
					        "attention case %d lse[%lld]: %g, want %g\n", cs,
					        (long long)r, lse[r], else_[r]);
				bad++;
			}
		multipass += d.dv > RTC_ATTN_NV * 32;
		ragged += d.lk % RTC_ATTN_KC != 0 && d.lk > RTC_ATTN_KC;
		capped += d.softcap > 0;
		free(q), free(k), free(v), free(bias), free(keep);
		free(y), free(ey), free(lse), free(else_), free(seen);
	}
	CHECK_EQ(bad, 0);
	CHECK(masked_rows > 0 && multipass > 0 && ragged > 0 && capped > 0);
	/* the plan and the causal limit at the extremes */
	struct rt_attention_desc d;
	struct rtc_attn p;
	memset(&d, 0, sizeof d);
	d.batch = 2, d.q_heads = 6, d.kv_heads = 3, d.lq = 5, d.lk = 7, d.dk = 3;
	d.dv = RTC_ATTN_NV * 32;
	CHECK(rtc_attn_plan(&d, 4, &p));
	CHECK_EQ(p.passes, 1);
	CHECK_EQ(p.nrows, 60);
	CHECK_EQ(p.rows.threads, RTC_THREADS);
	d.dv++;
	CHECK(rtc_attn_plan(&d, 4, &p));
	CHECK_EQ(p.passes, 2);
	CHECK_EQ(rtc_attn_kv_row(&d, 1, 5, 2), (1 * 3 + 2) * 7 + 2);
	d.causal = 1;
	d.causal_offset = INT64_MAX;
	CHECK_EQ(rtc_attn_kend(&d, 4), 7);
	d.causal_offset = INT64_MIN;
	CHECK_EQ(rtc_attn_kend(&d, 4), 0);
	d.causal_offset = -2;
	CHECK_EQ(rtc_attn_kend(&d, 1), 0);
	CHECK_EQ(rtc_attn_kend(&d, 4), 3);
	d.q_heads = 4;
	CHECK(!rtc_attn_plan(&d, 4, &p));
	d.q_heads = 6, d.dk = 0;
	CHECK(!rtc_attn_plan(&d, 4, &p));
}

/*
 * rtc_attention.cu's backward emulated: pass 1 (attn_grad_keys) with every
 * block and warp of the plan taking its keys in the grid-stride order, the
 * query rows of each group head from rtc_attn_qbegin in chunks of 32, the
 * staged dot products (grad_dot) lane by lane in the kernel's order, the
 * rows' p and ds broadcast one by one into each lane's dk and dv columns;
 * pass 2 (attn_grad_rows) the same per query row into dq; against
 * rt_attention_grad (rt_flash.c).
 */
static void grad_dot_host(const float *one, int64_t one_row, const float *many, int64_t many_row,
                          int n, const float *pair, float *pd, int64_t width, float *dot)
{
	static float tile[32][RTC_ATTN_DC + 1], tile2[32][RTC_ATTN_DC + 1], vec[RTC_ATTN_DC];
	for (int ln = 0; ln < 32; ln++)
		dot[ln] = 0, pd[ln] = 0;
	for (int64_t d0 = 0; d0 < width; d0 += RTC_ATTN_DC) {
		for (int ln = 0; ln < 32; ln++) {
			int64_t c = d0 + ln;
			int in = c < width;
			vec[ln] = in ? one[one_row * width + c] : 0;
			for (int r = 0; r < 32; r++) {
				tile[r][ln] = in && r < n ? many[(many_row + r) * width + c] : 0;
				if (pair)
					tile2[r][ln] =
					        in && r < n ? pair[(many_row + r) * width + c] : 0;
			}
		}
		for (int ln = 0; ln < 32; ln++)
			for (int c2 = 0; c2 < RTC_ATTN_DC; c2++) {
				dot[ln] += tile[ln][c2] * vec[c2];
				if (pair)
					pd[ln] += tile2[ln][c2] * tile[ln][c2];
			}
	}
}

static float grad_masked_host(const struct rt_attention_desc *d, const void *mask, float s,
                              int64_t b, int64_t h, int64_t i, int64_t j)
{
	int64_t at = rtc_attn_mask_at(d, b, h, i, j);
	if (d->mask == RT_ATTN_BIAS)
		return s + ((const float *)mask)[at];
	if (d->mask == RT_ATTN_BOOL && !((const unsigned char *)mask)[at])
		return -INFINITY;
	return s;
}

/* The inputs and results of the emulation. */
struct grad_io {
	const float *q, *k, *v, *y, *lse, *dy;
	const void *mask;
	float *dq, *dk, *dv;
};

/* Pass 1's warp on key item r: dk_r and dv_r. */
static void grad_key_emulate(const struct rt_attention_desc *d, const struct rtc_attn_grad *p,
                             const struct grad_io *io, int64_t r)
{
	const int64_t ndk = d->dk, ndv = d->dv, group = d->q_heads / d->kv_heads;
	static float ak[32][RTC_ATTN_NV], av[32][RTC_ATTN_NV];
	float dot[32], dd[32], dp[32], unused[32], s, dcap, pr[32], ds[32];
	int64_t b, kvh, j, ibegin;
	rtc_attn_key(d, r, &b, &kvh, &j);
	ibegin = rtc_attn_qbegin(d, j);
	for (int pass = 0; pass < p->kv_passes; pass++) {
		memset(ak, 0, sizeof ak);
		memset(av, 0, sizeof av);
		for (int64_t g = 0; g < group; g++) {
			int64_t h = kvh * group + g;
			for (int64_t i0 = ibegin; i0 < d->lq; i0 += 32) {
				int n = (int)rt_min64(32, d->lq - i0);
				int64_t row0 = rtc_attn_q_row(d, b, h, i0);
				grad_dot_host(io->k, r, io->q, row0, n, NULL, unused, ndk, dot);
				grad_dot_host(io->v, r, io->dy, row0, n, io->y, dd, ndv, dp);
				for (int ln = 0; ln < 32; ln++) {
					s = rtc_attn_score_dcap(d, dot[ln], &dcap);
					pr[ln] = ds[ln] = 0;
					if (ln >= n)
						continue;
					s = grad_masked_host(d, io->mask, s, b, h, i0 + ln, j);
					pr[ln] = rtc_attn_prob(s, io->lse[row0 + ln]);
					ds[ln] = rtc_attn_dscore(pr[ln], dp[ln], dd[ln], dcap);
				}
				for (int rr = 0; rr < n; rr++) {
					const float *qr = io->q + (row0 + rr) * ndk,
					            *gr = io->dy + (row0 + rr) * ndv;
					for (int ln = 0; ln < 32; ln++)
						for (int t = 0; t < RTC_ATTN_NV; t++) {
							int64_t c = rtc_attn_col(pass, ln, t);
							if (c < ndk)
								ak[ln][t] += ds[rr] * qr[c];
							if (c < ndv)
								av[ln][t] += pr[rr] * gr[c];
						}
				}
			}
		}
		for (int ln = 0; ln < 32; ln++)
			for (int t = 0; t < RTC_ATTN_NV; t++) {
				int64_t c = rtc_attn_col(pass, ln, t);
				if (c < ndk)
					io->dk[r * ndk + c] = d->scale * ak[ln][t];
				if (c < ndv)
					io->dv[r * ndv + c] = av[ln][t];
			}
	}
}

/* Pass 2's warp on query row `row`: dq_row. */
static void grad_row_emulate(const struct rt_attention_desc *d, const struct rtc_attn_grad *p,
                             const struct grad_io *io, int64_t row)
{
	const int64_t ndk = d->dk, ndv = d->dv;
	static float acc[32][RTC_ATTN_NV];
	float dot[32], dp[32], unused[32], s, dcap, ds[32], dd = 0;
	int64_t b, h, i, kend, kv;
	rtc_attn_row(d, row, &b, &h, &i);
	kend = rtc_attn_kend(d, i);
	kv = rtc_attn_kv_row(d, b, h, 0);
	for (int64_t c = 0; c < ndv; c++)
		dd += io->y[row * ndv + c] * io->dy[row * ndv + c];
	for (int pass = 0; pass < p->q_passes; pass++) {
		memset(acc, 0, sizeof acc);
		for (int64_t j0 = 0; j0 < kend; j0 += RTC_ATTN_KC) {
			int n = (int)rt_min64(RTC_ATTN_KC, kend - j0);
			grad_dot_host(io->q, row, io->k, kv + j0, n, NULL, unused, ndk, dot);
			grad_dot_host(io->dy, row, io->v, kv + j0, n, NULL, unused, ndv, dp);
			for (int ln = 0; ln < 32; ln++) {
				s = rtc_attn_score_dcap(d, dot[ln], &dcap);
				ds[ln] = 0;
				if (ln >= n)
					continue;
				s = grad_masked_host(d, io->mask, s, b, h, i, j0 + ln);
				ds[ln] = rtc_attn_dscore(rtc_attn_prob(s, io->lse[row]), dp[ln], dd,
				                         dcap);
			}
			for (int rr = 0; rr < n; rr++) {
				const float *kr = io->k + (kv + j0 + rr) * ndk;
				for (int ln = 0; ln < 32; ln++)
					for (int t = 0; t < RTC_ATTN_NV; t++) {
						int64_t c = rtc_attn_col(pass, ln, t);
						if (c < ndk)
							acc[ln][t] += ds[rr] * kr[c];
					}
			}
		}
		for (int ln = 0; ln < 32; ln++)
			for (int t = 0; t < RTC_ATTN_NV; t++) {
				int64_t c = rtc_attn_col(pass, ln, t);
				if (c < ndk)
					io->dq[row * ndk + c] = d->scale * acc[ln][t];
			}
	}
}

/* Both passes, every block and warp of the plan taking its items in the
 * grid-stride order; seen_* count the visits. */
static void attn_grad_emulate(const struct rt_attention_desc *d, int sm_count,
                              const struct grad_io *io, int *seen_keys, int *seen_rows)
{
	struct rtc_attn_grad p;
	CHECK(rtc_attn_grad_plan(d, sm_count, &p));
	CHECK_EQ(p.keys.group, 32);
	CHECK_EQ(p.rows.group, 32);
	for (int blk = 0; blk < p.keys.blocks; blk++)
		for (int tid = 0; tid < p.keys.threads; tid += 32)
			for (int64_t r = rtc_rows_first(&p.keys, blk, tid); r < p.nkeys;
			     r += rtc_rows_step(&p.keys)) {
				seen_keys[r]++;
				grad_key_emulate(d, &p, io, r);
			}
	for (int blk = 0; blk < p.rows.blocks; blk++)
		for (int tid = 0; tid < p.rows.threads; tid += 32)
			for (int64_t row = rtc_rows_first(&p.rows, blk, tid); row < p.nrows;
			     row += rtc_rows_step(&p.rows)) {
				seen_rows[row]++;
				grad_row_emulate(d, &p, io, row);
			}
}

/* got against want within rounding: relative to the tensor's largest
 * value and to the size of the terms (floor), since the gradients' sums
 * cancel (p (dp - D) is 0 with a single key, up to rounding). */
static int grad_compare(const char *what, int cs, const float *got, const float *want, int64_t n,
                        double floor)
{
	double big = 0;
	int bad = 0;
	for (int64_t a = 0; a < n; a++)
		big = fabs(want[a]) > big ? fabs(want[a]) : big;
	for (int64_t a = 0; a < n; a++)
		if (!(fabs((double)got[a] - want[a]) <=
		      1e-5 * fabs(want[a]) + 1e-5 * big + 5e-7 * floor)) {
			if (bad < 3)
				fprintf(stderr, "attention grad case %d %s[%lld]: %g, want %g\n",
				        cs, what, (long long)a, got[a], want[a]);
			bad++;
		}
	return bad;
}

static void test_attention_grad(void)
{
	int bad = 0, masked_rows = 0, kv_multipass = 0, q_multipass = 0, ragged = 0, capped = 0;
	int gqa = 0, negative = 0, single = 0, zero_strides = 0;
	setup();
	for (int cs = 0; cs < 300; cs++) {
		struct rt_attention_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = RT_F32;
		d.batch = rnd_in(1, 2);
		d.kv_heads = rnd_in(1, 3);
		d.q_heads = d.kv_heads * rnd_in(1, 3);
		d.lq = rnd(4) ? rnd_in(1, 70) : 1;
		d.lk = rnd(12) ? rnd_in(1, 90) : rnd_in(0, 3);
		d.dk = rnd(3) ? rnd_in(1, 40) : rnd(3) ? rnd_in(41, 100) : rnd_in(250, 300);
		d.dv = rnd(6) ? rnd_in(1, 80) : rnd_in(RTC_ATTN_NV * 32 - 5, RTC_ATTN_NV * 32 + 40);
		d.causal = (int)rnd(2);
		d.causal_offset = rnd(3) ? rnd_in(-d.lq - 2, d.lk + 2) : rnd(2) ? 0 : d.lk - d.lq;
		d.mask = (int)rnd(3);
		d.scale = rnd(2) ? (float)(1 / sqrt((double)d.dk)) : (float)(0.1 + 2 * rnd_unit());
		d.softcap = rnd(3) ? 0 : (float)rnd_in(1, 5);
		int64_t dims[4] = { d.batch, d.q_heads, d.lq, d.lk }, nm = 1;
		for (int a = 3; a >= 0; a--) {
			d.mask_strides[a] = d.mask && rnd(3) ? nm : 0; /* 0: broadcast */
			zero_strides += d.mask && !d.mask_strides[a] && dims[a] > 1;
			nm *= dims[a];
		}
		int sm = (int)rnd_in(1, 3);
		int64_t rows = d.batch * d.q_heads * d.lq, keys = d.batch * d.kv_heads * d.lk;
		float *q = rnd_f32s(rows * d.dk, -1, 1), *k = rnd_f32s(keys * d.dk, -1, 1),
		      *v = rnd_f32s(keys * d.dv, -1, 1), *dy = rnd_f32s(rows * d.dv, -1, 1);
		float *bias = NULL;
		unsigned char *keep = NULL;
		if (d.mask == RT_ATTN_BIAS) {
			bias = rnd_f32s(nm, -3, 3);
			for (int64_t a = 0; a < nm; a++)
				if (!rnd(20))
					bias[a] = -INFINITY;
		} else if (d.mask == RT_ATTN_BOOL) {
			keep = alloc((size_t)nm);
			for (int64_t a = 0; a < nm; a++)
				keep[a] = rnd(4) != 0;
		}
		if (d.mask && d.lq && rnd(2)) { /* a fully masked row (or more: broadcast) */
			int64_t i = rnd(d.lq);
			for (int64_t b = 0; b < d.batch; b++)
				for (int64_t h = 0; h < d.q_heads; h++)
					for (int64_t j = 0; j < d.lk; j++) {
						int64_t at = rtc_attn_mask_at(&d, b, h, i, j);
						if (bias)
							bias[at] = -INFINITY;
						else
							keep[at] = 0;
					}
		}
		const void *mask = bias ? (const void *)bias : (const void *)keep;
		float *y = alloc(4 * (size_t)(rows * d.dv + 1)),
		      *lse = alloc(4 * (size_t)(rows + 1));
		float *dq = alloc(4 * (size_t)(rows * d.dk + 1)),
		      *edq = alloc(4 * (size_t)(rows * d.dk + 1));
		float *dk = alloc(4 * (size_t)(keys * d.dk + 1)),
		      *edk = alloc(4 * (size_t)(keys * d.dk + 1));
		float *dv = alloc(4 * (size_t)(keys * d.dv + 1)),
		      *edv = alloc(4 * (size_t)(keys * d.dv + 1));
		int *seen_keys = alloc(sizeof(int) * (size_t)(keys + 1)),
		    *seen_rows = alloc(sizeof(int) * (size_t)(rows + 1));
		for (int64_t a = 0; a < rows * d.dk; a++)
			dq[a] = NAN; /* every result written */
		for (int64_t a = 0; a < keys * d.dk; a++)
			dk[a] = NAN;
		for (int64_t a = 0; a < keys * d.dv; a++)
			dv[a] = NAN;
		CHECK_EQ(rt_attention(ctx, &d, q, k, v, mask, y, lse), RT_OK);
		CHECK_EQ(rt_attention_grad(ctx, &d, q, k, v, y, lse, dy, mask, edq, edk, edv),
		         RT_OK);
		struct grad_io io = { q, k, v, y, lse, dy, mask, dq, dk, dv };
		attn_grad_emulate(&d, sm, &io, seen_keys, seen_rows);
		for (int64_t r = 0; r < keys; r++)
			bad += seen_keys[r] != 1;
		for (int64_t r = 0; r < rows; r++) {
			bad += seen_rows[r] != 1;
			masked_rows += lse[r] == -INFINITY;
		}
		double terms =
		        d.scale * (double)d.dv * sqrt((double)(d.lq * d.q_heads / d.kv_heads));
		bad += grad_compare("dq", cs, dq, edq, rows * d.dk, terms);
		bad += grad_compare("dk", cs, dk, edk, keys * d.dk, terms);
		bad += grad_compare("dv", cs, dv, edv, keys * d.dv, terms);
		kv_multipass += d.dv > RTC_ATTN_NV * 32;
		q_multipass += d.dk > RTC_ATTN_NV * 32;
		ragged += d.lq % 32 != 0 && d.lq > 32 && d.lk % RTC_ATTN_KC != 0 && d.lk > 32;
		capped += d.softcap > 0;
		gqa += d.q_heads > d.kv_heads;
		negative += d.causal && d.causal_offset < 0;
		single += d.lq == 1;
		free(q), free(k), free(v), free(dy), free(bias), free(keep), free(y), free(lse);
		free(dq), free(edq), free(dk), free(edk), free(dv), free(edv);
		free(seen_keys), free(seen_rows);
	}
	CHECK_EQ(bad, 0);
	CHECK(masked_rows > 0 && kv_multipass > 0 && q_multipass > 0 && ragged > 0 && capped > 0);
	CHECK(gqa > 0 && negative > 0 && single > 0 && zero_strides > 0);
	/* the plan and the causal limit at the extremes */
	struct rt_attention_desc d;
	struct rtc_attn_grad p;
	int64_t b, kvh, j;
	memset(&d, 0, sizeof d);
	d.batch = 2, d.q_heads = 6, d.kv_heads = 3, d.lq = 5, d.lk = 7, d.dk = 3;
	d.dv = RTC_ATTN_NV * 32;
	CHECK(rtc_attn_grad_plan(&d, 4, &p));
	CHECK_EQ(p.kv_passes, 1);
	CHECK_EQ(p.q_passes, 1);
	CHECK_EQ(p.nkeys, 42);
	CHECK_EQ(p.nrows, 60);
	CHECK_EQ(p.keys.threads, 32 * RTC_ATTN_GRAD_WARPS);
	CHECK_EQ(p.keys.blocks, 42 / RTC_ATTN_GRAD_WARPS + 1);
	d.dv++;
	CHECK(rtc_attn_grad_plan(&d, 4, &p));
	CHECK_EQ(p.kv_passes, 2);
	CHECK_EQ(p.q_passes, 1);
	d.dk = 3 * RTC_ATTN_NV * 32;
	CHECK(rtc_attn_grad_plan(&d, 4, &p));
	CHECK_EQ(p.kv_passes, 3);
	CHECK_EQ(p.q_passes, 3);
	rtc_attn_key(&d, (1 * 3 + 2) * 7 + 4, &b, &kvh, &j);
	CHECK(b == 1 && kvh == 2 && j == 4);
	CHECK_EQ(rtc_attn_q_row(&d, 1, 5, 2), (1 * 6 + 5) * 5 + 2);
	CHECK_EQ(rtc_attn_qbegin(&d, 6), 0);
	d.causal = 1;
	d.causal_offset = INT64_MAX;
	CHECK_EQ(rtc_attn_qbegin(&d, 6), 0);
	d.causal_offset = INT64_MIN;
	CHECK_EQ(rtc_attn_qbegin(&d, 0), 5);
	d.causal_offset = -2;
	CHECK_EQ(rtc_attn_qbegin(&d, 0), 2);
	CHECK_EQ(rtc_attn_qbegin(&d, 2), 4);
	CHECK_EQ(rtc_attn_qbegin(&d, 3), 5);
	d.causal_offset = 3;
	CHECK_EQ(rtc_attn_qbegin(&d, 3), 0);
	CHECK_EQ(rtc_attn_qbegin(&d, 6), 3);
	for (d.causal_offset = -8; d.causal_offset <= 9; d.causal_offset++) /* the converse */
		for (int64_t i = 0; i < d.lq; i++)
			for (j = 0; j < d.lk; j++)
				CHECK_EQ(j < rtc_attn_kend(&d, i), i >= rtc_attn_qbegin(&d, j));
	d.q_heads = 4;
	CHECK(!rtc_attn_grad_plan(&d, 4, &p));
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
/* LSTM, GRU, RNN: rtc_rnn.cu's sequence of GEMMs and rt_rnn_unit passes    */
/* ------------------------------------------------------------------------ */

/* y[dir] = a[dir] b[dir]^T (m x n from k), a's and b's directions a_st and
 * b_st apart, y dense; the GEMMs rtc_rnn makes cuBLASLt do. */
static void rnn_gemm(int64_t dirs, int64_t m, int64_t n, int64_t k, const float *a, int64_t a_st,
                     const float *b, int64_t b_st, float *y)
{
	for (int64_t d = 0; d < dirs; d++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				float acc = 0;
				for (int64_t p = 0; p < k; p++)
					acc += a[d * a_st + i * k + p] * b[d * b_st + j * k + p];
				y[(d * m + i) * n + j] = acc;
			}
}

/* rtc_rnn's run on the host through the workspace layout rt_rnn_layout
 * gives (FP32), against rt_rnn: y, y_h and y_c within rounding (the GEMMs
 * sum in another order). lens: the batch rows' lengths, one out of range
 * when bad (the unit reports it). */
static void rnn_emulated(struct rt_rnn_desc d, const int32_t *lens, bool bad)
{
	int64_t G = rt_rnn_gates(d.cell), H = d.hidden, GH = G * H, D = d.dirs, B = d.batch,
	        T = d.seq, I = d.input, ns = D * B * H, ny = T * ns;
	bool lstm = d.cell == RT_RNN_LSTM;
	struct rt_rnn_layout l;
	float *x = alloc(sizeof(float) * (size_t)(T * B * I)),
	      *w = alloc(sizeof(float) * (size_t)(D * GH * I)),
	      *r = alloc(sizeof(float) * (size_t)(D * GH * H)),
	      *b = alloc(sizeof(float) * (size_t)(D * 2 * GH)),
	      *h0 = alloc(sizeof(float) * (size_t)ns), *c0 = alloc(sizeof(float) * (size_t)ns),
	      *p = alloc(sizeof(float) * (size_t)(D * 3 * H)),
	      *wy = alloc(sizeof(float) * (size_t)ny), *wh = alloc(sizeof(float) * (size_t)ns),
	      *wc = alloc(sizeof(float) * (size_t)ns), *y = alloc(sizeof(float) * (size_t)ny);
	void *ws = alloc(rt_rnn_workspace(&d)), *cws = alloc(rt_rnn_workspace(&d));
	float *f = cws;
	int bad_units = 0, wrong = 0;
	float *arrays[] = { x, w, r, b, h0, c0, p };
	int64_t sizes[] = { T * B * I, D * GH * I, D * GH * H, D * 2 * GH, ns, ns, D * 3 * H };
	for (int i = 0; i < 7; i++)
		for (int64_t k = 0; k < sizes[i]; k++)
			arrays[i][k] = (float)(rnd_unit() - 0.5) * (i == 1 || i == 2 ? 0.8f : 2.0f);
	CHECK(rt_rnn_layout(&d, &l));
	CHECK(rt_rnn_workspace(&d) >= l.total * sizeof(float));
	if (!bad)
		CHECK_EQ(rt_rnn(ctx, &d, x, w, r, b, lens, h0, c0, p, wy, wh, wc, ws), RT_OK);
	else
		CHECK_EQ(rt_rnn(ctx, &d, x, w, r, b, lens, h0, c0, p, wy, wh, wc, ws),
		         RT_ERR_INDEX);
	/* rtc_rnn: state, projection, then per step the GEMM(s) and the units */
	memcpy(f + l.h, h0, sizeof(float) * (size_t)ns);
	if (lstm)
		memcpy(f + l.c, c0, sizeof(float) * (size_t)ns);
	rnn_gemm(D, T * B, GH, I, x, 0, w, GH * I, f + l.proj);
	for (int64_t s = 0; s < T; s++) {
		struct rt_rnn_step st = { f + l.proj, b,       p, lens, f + l.h, f + l.c,
			                  f + l.rh,   f + l.q, y, s,    0 };
		rnn_gemm(D, B, GH, H, f + l.h, B * H, r, GH * H, f + l.q);
		for (int64_t u = 0; u < ns; u++)
			bad_units += !rt_rnn_unit(&d, &st, u);
		if (rt_rnn_phases(&d) == 2) {
			st.phase = 1;
			/* Rh: r's rows 2H..3H of each direction, GH * H apart */
			rnn_gemm(D, B, H, H, f + l.rh, B * H, r + 2 * H * H, GH * H, f + l.c);
			for (int64_t u = 0; u < ns; u++)
				bad_units += !rt_rnn_unit(&d, &st, u);
		}
	}
	if (bad) {
		CHECK(bad_units > 0);
	} else {
		CHECK_EQ(bad_units, 0);
		for (int64_t i = 0; i < ny; i++)
			wrong += !close_to(y[i], wy[i], 2e-5);
		for (int64_t i = 0; i < ns; i++)
			wrong += !close_to(f[l.h + i], wh[i], 2e-5) +
			         (lstm && !close_to(f[l.c + i], wc[i], 2e-5));
		CHECK_EQ(wrong, 0);
	}
	for (int i = 0; i < 7; i++)
		free(arrays[i]);
	free(wy), free(wh), free(wc), free(y), free(ws), free(cws);
}

static void test_rnn(void)
{
	static const int acts[][3] = {
		{ RT_RNN_SIGMOID, RT_RNN_TANH, RT_RNN_TANH },
		{ RT_RNN_HARD_SIGMOID, RT_RNN_LEAKY_RELU, RT_RNN_SOFTSIGN },
		{ RT_RNN_AFFINE, RT_RNN_SCALED_TANH, RT_RNN_ELU },
		{ RT_RNN_SIGMOID, RT_RNN_SOFTPLUS, RT_RNN_THRESHOLDED_RELU },
		{ RT_RNN_SIGMOID, RT_RNN_RELU, RT_RNN_TANH },
	};
	int32_t lens[5] = { 6, 0, 3, 6, 1 }, full[5] = { 6, 6, 6, 6, 6 },
	        over[5] = { 6, 7, 0, 1, 2 };
	setup();
	for (int cell = RT_RNN_LSTM; cell <= RT_RNN_RNN; cell++)
		for (int dirs = 1; dirs <= 2; dirs++)
			for (int rev = 0; rev <= (dirs == 1); rev++)
				for (int opt = 0; opt < 2; opt++)
					for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
						struct rt_rnn_desc d = { RT_F32, cell, dirs, rev,
							                 6,      5,    4,    7 };
						for (int i = 0; i < 2; i++)
							for (int k = 0; k < 3; k++) {
								d.act[i][k] =
								        acts[(a + (size_t)i) %
								             (sizeof acts /
								              sizeof acts[0])][k];
								d.alpha[i][k] =
								        0.5f + 0.25f * (float)k;
								d.beta[i][k] =
								        0.1f * (float)(i + 1);
							}
						d.clip = a == 1 ? 0.75f : 0;
						d.input_forget = cell == RT_RNN_LSTM && opt;
						d.linear_before_reset = cell == RT_RNN_GRU && opt;
						rnn_emulated(d, a % 2 ? lens : full, false);
					}
	{
		struct rt_rnn_desc d = { RT_F32, RT_RNN_GRU, 2, 0, 6, 5, 4, 7 };
		rnn_emulated(d, over, true);
		d.input = 0; /* no input: a k = 0 projection */
		rnn_emulated(d, lens, false);
	}
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
                                      T(test_linear_attention) T(test_attention)
                                              T(test_attention_grad) T(test_rnn))
