/*
 * test_rtc_kernels.cu - the hand-written CUDA kernels (runtime/cuda/rtc_*.cu)
 * run on a GPU and compared with the CPU runtime (runtime/rt_*.c).
 *
 * Every entry point runs on random data over shapes that take each of its
 * paths (thread, warp and block groups; rows and cols reductions; tiles and
 * widened copies; register and general resize), for every storage dtype it
 * takes: FP32, FP16, BF16 and FP64 inputs with every allowed result dtype,
 * the integers where the CPU takes them. The CPU reference runs in FP32 on
 * the same inputs rounded through the storage dtype, so the only
 * differences are summation order and the final rounding: FP32 results
 * match within 1e-5 relative, FP16 within 1e-3, BF16 within 8e-3; max,
 * indices, integers and data movement match exactly. A last test captures
 * a sequence of steps into a CUDA Graph and replays it (every launch must
 * be capturable: nothing synchronizes). Gathers and scatters with indices
 * out of range must set the index error flag.
 *
 * The kernels are linked without rtc_core.c: a stand-in below provides the
 * stream, the multiprocessor count, the error flag, the error strings, a
 * cuDNN handle on the stream, a cuBLASLt handle (rtc_rnn's GEMMs, through
 * rtc_blas.c), the shared workspace and the plans'
 * destructors (run after each test).
 *
 * Attention runs through plans (rtc_sdpa.c): the kernel tests force the
 * portable kernels with ONNXC_CUDA_NO_CUDNN_ATTENTION=1; attention_cudnn
 * and attention_grad_cudnn take cuDNN's fused attention (FP16 and BF16,
 * head sizes 64 and 128, causal with and without an offset, biases with
 * -inf entries and fully masked rows, GQA), require that the plan chose
 * cuDNN, and compare with the CPU runtime within the error FP16/BF16
 * flash attention has (P and dS rounded to half before their matmuls).
 *
 * Exit status: 0 passed, 1 failed, 77 no CUDA device (ctest: skipped).
 * `test_rtc_kernels NAME` runs the tests whose name contains NAME;
 * `test_rtc_kernels --attention-speed` times attention, `--rnn-speed` LSTM
 * (scripts/gpu-check).
 */
#include "onnxc_rt.h"
#include "rtc_internal.h"
#include "rtc_sdpa.h"

#include <algorithm>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utility>
#include <vector>

/* ------------------------------------------------------------------------ */
/* A stand-in for rtc_core.c                                                */
/* ------------------------------------------------------------------------ */

struct rtc_model {
	cudaStream_t stream;
	int sm_count;
	int *flag; /* device */
	cudnnHandle_t dnn;
	cublasLtHandle_t lt;
	void *ws; /* the workspace: ensure_workspace() allocates the largest request */
	size_t ws_size, ws_need;
	std::vector<std::pair<void (*)(void *), void *>> closers;
	char err[512];
};

cudaStream_t rtc_stream(const struct rtc_model *m) { return m->stream; }
int rtc_sm_count(const struct rtc_model *m) { return m->sm_count; }
int *rtc_index_error(const struct rtc_model *m) { return m->flag; }
int rtc_dtype_size(int dtype) { return rt_dtype_size(dtype); }
void *rtc_cudnn(const struct rtc_model *m) { return m->dnn; }
void *rtc_cublaslt(const struct rtc_model *m) { return m->lt; }
void *rtc_workspace(const struct rtc_model *m) { return m->ws; }
size_t rtc_workspace_limit(const struct rtc_model *m) { return (size_t)256 << 20; }

void rtc_need_workspace(struct rtc_model *m, size_t bytes)
{
	if (bytes > m->ws_need)
		m->ws_need = bytes;
}

int rtc_on_close(struct rtc_model *m, void (*fn)(void *), void *arg)
{
	m->closers.push_back(std::make_pair(fn, arg));
	return RT_OK;
}

int rtc_fail(struct rtc_model *m, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof m->err, fmt, ap);
	va_end(ap);
	return status;
}

int rtc_check(struct rtc_model *m, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return RT_OK;
	(void)cudaGetLastError();
	return rtc_fail(m, RT_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

/* ------------------------------------------------------------------------ */
/* Harness                                                                  */
/* ------------------------------------------------------------------------ */

static struct rtc_model M;
static struct rt_ctx *ctx;
static int failures;
static const char *current;

#define CUDA_OK(call)                                                                 \
	do {                                                                          \
		cudaError_t e_ = (call);                                              \
		if (e_ != cudaSuccess) {                                              \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
			        cudaGetErrorString(e_));                              \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", current);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	failures++;
}

#define EXPECT(c)                                                   \
	do {                                                        \
		if (!(c))                                           \
			fail("line %d: expected %s", __LINE__, #c); \
	} while (0)

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t rnd_u64(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static int64_t rnd(int64_t n) { return n > 0 ? (int64_t)(rnd_u64() % (uint64_t)n) : 0; }
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + rnd(hi - lo + 1); }
static double rnd_unit(void) { return (double)(rnd_u64() >> 11) * 0x1p-53; }

typedef std::vector<unsigned char> bytes;

static void rnd_fill(bytes &b)
{
	for (auto &c : b)
		c = (unsigned char)rnd_u64();
}

/* Device buffers, freed at the end of each test. */
static std::vector<void *> allocations;

static void *dev(size_t n)
{
	void *p;
	CUDA_OK(cudaMalloc(&p, n ? n : 1));
	CUDA_OK(cudaMemset(p, 0, n ? n : 1));
	allocations.push_back(p);
	return p;
}

static void *up(const bytes &h)
{
	void *d = dev(h.size());
	if (h.size())
		CUDA_OK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
	return d;
}

static bytes down(const void *d, size_t n)
{
	bytes h(n);
	CUDA_OK(cudaStreamSynchronize(M.stream));
	if (n)
		CUDA_OK(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
	return h;
}

/* A step's status, then the stream's: both must be clean. */
static bool ran(int status, const char *what)
{
	cudaError_t e;
	if (status != RT_OK) {
		fail("%s: status %d: %s", what, status, M.err);
		return false;
	}
	e = cudaStreamSynchronize(M.stream);
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s: %s (the context is lost)\n", current, what,
		        cudaGetErrorString(e));
		exit(1);
	}
	return true;
}

static int esize(int dt) { return rt_dtype_size(dt); }

/* The workspace the plans asked for, allocated outside any capture (as
 * rtc_capture_begin does). */
static void ensure_workspace(void)
{
	if (M.ws_need <= M.ws_size)
		return;
	CUDA_OK(cudaStreamSynchronize(M.stream));
	CUDA_OK(cudaFree(M.ws));
	CUDA_OK(cudaMalloc(&M.ws, M.ws_need));
	M.ws_size = M.ws_need;
}

/* The plans' destructors, last registered first (rtc_model_close's order). */
static void close_plans(void)
{
	for (size_t i = M.closers.size(); i-- > 0;)
		M.closers[i].first(M.closers[i].second);
	M.closers.clear();
}

/* Which attention the next plans may take: cuDNN where it computes the same
 * thing, or always the portable kernels. */
static void allow_cudnn(bool yes)
{
	if (yes)
		unsetenv("ONNXC_CUDA_NO_CUDNN_ATTENTION");
	else
		setenv("ONNXC_CUDA_NO_CUDNN_ATTENTION", "1", 1);
}

/* Attention and its backward through a new plan (kept until the test ends). */
static int attention(const struct rt_attention_desc &d, const void *q, const void *k, const void *v,
                     const void *mask, void *y, void *lse, struct rtc_attention **plan = NULL)
{
	struct rtc_attention *p;
	int st = rtc_attention_plan(&M, &d, &p);
	if (st)
		return st;
	ensure_workspace();
	if (plan)
		*plan = p;
	return rtc_attention(&M, p, q, k, v, mask, y, lse);
}

static int attention_grad(const struct rt_attention_desc &d, const void *q, const void *k,
                          const void *v, const void *y, const void *lse, const void *dy,
                          const void *mask, void *dq, void *dk, void *dv,
                          struct rtc_attention **plan = NULL)
{
	struct rtc_attention *p;
	int st = rtc_attention_grad_plan(&M, &d, &p);
	if (st)
		return st;
	ensure_workspace();
	if (plan)
		*plan = p;
	return rtc_attention_grad(&M, p, q, k, v, y, lse, dy, mask, dq, dk, dv);
}

/* f32 values stored as a float dtype (F32, F16, BF16, F64), rounding to
 * nearest even; and back. */
static bytes pack(const std::vector<float> &x, int dt)
{
	bytes b(x.size() * (size_t)esize(dt));
	if (dt == RT_F32)
		memcpy(b.data(), x.data(), b.size());
	else if (dt == RT_F64)
		for (size_t i = 0; i < x.size(); i++)
			((double *)b.data())[i] = x[i];
	else
		EXPECT(rt_convert(ctx, b.data(), dt, x.data(), RT_F32, (int64_t)x.size()) == RT_OK);
	return b;
}

static std::vector<float> unpack(const bytes &b, int dt)
{
	std::vector<float> x(b.size() / (size_t)esize(dt));
	if (dt == RT_F32)
		memcpy(x.data(), b.data(), b.size());
	else if (dt == RT_F64)
		for (size_t i = 0; i < x.size(); i++)
			x[i] = (float)((const double *)b.data())[i];
	else
		EXPECT(rt_convert(ctx, x.data(), RT_F32, b.data(), dt, (int64_t)x.size()) == RT_OK);
	return x;
}

static std::vector<float> rounded(const std::vector<float> &x, int dt)
{
	return unpack(pack(x, dt), dt);
}

static std::vector<float> rnd_floats(int64_t n, double lo, double hi)
{
	std::vector<float> x((size_t)n);
	for (auto &v : x)
		v = (float)(lo + (hi - lo) * rnd_unit());
	return x;
}

/*
 * got (in dtype yt) against the FP32 reference: |g - w| <= rtol |w| +
 * atol * scale; NaN matches NaN, infinities match exactly.
 */
static void compare(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                    int yt, double scale)
{
	double rtol = yt == RT_F16 ? 1e-3 : yt == RT_BF16 ? 8e-3 : 1e-5;
	double atol = 1e-6 * scale + (yt == RT_F16 ? 1e-7 : 0);
	int64_t bad = 0;
	if (got.size() != want.size()) {
		fail("%s: %zu results, want %zu", what, got.size(), want.size());
		return;
	}
	for (size_t i = 0; i < got.size(); i++) {
		double g = got[i], w = want[i];
		bool ok = isnan(w) || isnan(g)   ? isnan(w) && isnan(g)
		          : isinf(w) || isinf(g) ? g == w
		                                 : fabs(g - w) <= rtol * fabs(w) + atol;
		if (!ok && bad++ < 5)
			fprintf(stderr, "%s: %s [%zu]: %.9g, want %.9g\n", current, what, i, g, w);
	}
	if (bad)
		fail("%s: %lld of %zu results differ", what, (long long)bad, got.size());
}

static void compare_bytes(const char *what, const bytes &got, const bytes &want)
{
	if (got.size() != want.size() || memcmp(got.data(), want.data(), got.size())) {
		size_t i = 0;
		while (i < got.size() && i < want.size() && got[i] == want[i])
			i++;
		fail("%s: bytes differ (first at %zu of %zu)", what, i, want.size());
	}
}

/* The float storage combinations: FP32/FP16/BF16 to each, FP64 to FP64. */
struct io {
	int dt, yt;
};
static const io float_ios[] = { { RT_F32, RT_F32 },  { RT_F32, RT_F16 },  { RT_F32, RT_BF16 },
	                        { RT_F16, RT_F16 },  { RT_F16, RT_F32 },  { RT_BF16, RT_BF16 },
	                        { RT_BF16, RT_F32 }, { RT_F16, RT_BF16 }, { RT_F64, RT_F64 } };

#define FOR_IOS(v) for (const io &v : float_ios)

static int take_flag(void)
{
	int f = 0;
	CUDA_OK(cudaStreamSynchronize(M.stream));
	CUDA_OK(cudaMemcpy(&f, M.flag, sizeof f, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemset(M.flag, 0, sizeof f));
	return f;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */
/* ------------------------------------------------------------------------ */

static struct rt_pool_desc pool_desc(int kind, int nsp, int64_t n, int64_t c, const int64_t *in,
                                     const int64_t *k, const int64_t *s, const int64_t *dil,
                                     const int64_t *pb, const int64_t *pe, int ceil_mode)
{
	struct rt_pool_desc d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F32;
	d.kind = kind;
	d.nsp = nsp;
	d.n = n;
	d.c = c;
	d.p = 2;
	for (int i = 0; i < nsp; i++) {
		int64_t span = in[i] + pb[i] + pe[i] - ((k[i] - 1) * dil[i] + 1);
		d.in[i] = in[i];
		d.k[i] = k[i];
		d.stride[i] = s[i];
		d.dil[i] = dil[i];
		d.pad_begin[i] = pb[i];
		d.pad_end[i] = pe[i];
		d.out[i] = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
		if (ceil_mode && (d.out[i] - 1) * s[i] >= in[i] + pb[i])
			d.out[i]--;
	}
	return d;
}

static void pool_counts(const struct rt_pool_desc &d, int64_t *nx, int64_t *ny)
{
	*nx = *ny = d.n * d.c;
	for (int i = 0; i < d.nsp; i++) {
		*nx *= d.in[i];
		*ny *= d.out[i];
	}
}

static void pool_float(struct rt_pool_desc d, bool with_idx, bool nan)
{
	int64_t nx, ny;
	pool_counts(d, &nx, &ny);
	std::vector<float> x = rnd_floats(nx, -2, 2), want((size_t)ny);
	std::vector<int64_t> idx((size_t)ny), gidx((size_t)ny);
	for (auto &v : x) {
		if (d.kind == RT_POOL_MAX)
			v = (float)rnd_in(-8, 8) / 4; /* ties */
		if (nan && rnd(20) == 0)
			v = NAN;
	}
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt);
		struct rt_pool_desc g = d;
		EXPECT(rt_pool(ctx, &d, xr.data(), want.data(), with_idx ? idx.data() : NULL) ==
		       RT_OK);
		g.dtype = t.dt;
		g.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *dy = dev((size_t)ny * esize(t.yt));
		int64_t *di = with_idx ? (int64_t *)dev(8 * (size_t)ny) : NULL;
		if (!ran(rtc_pool(&M, &g, dx, dy, di), "rtc_pool"))
			continue;
		compare("pool", unpack(down(dy, (size_t)ny * esize(t.yt)), t.yt), want, t.yt, 10);
		if (with_idx) {
			bytes b = down(di, 8 * (size_t)ny);
			memcpy(gidx.data(), b.data(), b.size());
			EXPECT(gidx == idx);
		}
	}
}

static void pool_int(struct rt_pool_desc d, int dt, bool with_idx)
{
	int64_t nx, ny;
	pool_counts(d, &nx, &ny);
	bytes x((size_t)nx * esize(dt)), want((size_t)ny * esize(dt));
	std::vector<int64_t> idx((size_t)ny);
	rnd_fill(x);
	d.dtype = dt;
	EXPECT(rt_pool(ctx, &d, x.data(), want.data(), with_idx ? idx.data() : NULL) == RT_OK);
	void *dx = up(x), *dy = dev(want.size());
	int64_t *di = with_idx ? (int64_t *)dev(8 * (size_t)ny) : NULL;
	if (!ran(rtc_pool(&M, &d, dx, dy, di), "rtc_pool int"))
		return;
	compare_bytes("pool int", down(dy, want.size()), want);
	if (with_idx) {
		bytes b = down(di, 8 * (size_t)ny), w((size_t)ny * 8);
		memcpy(w.data(), idx.data(), w.size());
		compare_bytes("pool int indices", b, w);
	}
}

static void test_pool(void)
{
	static const int64_t one[3] = { 1, 1, 1 }, zero[3] = { 0, 0, 0 };
	{ /* 3x3 stride 2 pad 1, every kind */
		int64_t in[2] = { 17, 19 }, k[2] = { 3, 3 }, s[2] = { 2, 2 }, p[2] = { 1, 1 };
		for (int kind = 0; kind < 3; kind++) {
			struct rt_pool_desc d = pool_desc(kind, 2, 2, 3, in, k, s, one, p, p, 0);
			pool_float(d, kind == RT_POOL_MAX, kind == RT_POOL_MAX);
			d.count_include_pad = 1;
			d.p = 3;
			pool_float(d, false, false);
		}
	}
	{ /* dilation, asymmetric pads, ceil mode, storage order */
		int64_t in[2] = { 11, 8 }, k[2] = { 3, 2 }, s[2] = { 2, 3 }, dil[2] = { 2, 1 };
		int64_t pb[2] = { 2, 0 }, pe[2] = { 1, 1 };
		struct rt_pool_desc d = pool_desc(RT_POOL_MAX, 2, 1, 4, in, k, s, dil, pb, pe, 1);
		pool_float(d, true, true);
		d.storage_order = 1;
		pool_float(d, true, false);
	}
	{ /* a window entirely in the padding: avg 0/0, max -inf and index 0 */
		int64_t in[1] = { 2 }, k[1] = { 2 }, pb[1] = { 2 };
		pool_float(pool_desc(RT_POOL_AVG, 1, 1, 3, in, k, one, one, pb, zero, 0), false,
		           false);
		pool_float(pool_desc(RT_POOL_MAX, 1, 1, 3, in, k, one, one, pb, zero, 0), true,
		           false);
	}
	{ /* 1-D and 3-D */
		int64_t in1[1] = { 50 }, k1[1] = { 5 }, s1[1] = { 3 }, p1[1] = { 2 };
		int64_t in3[3] = { 6, 7, 8 }, k3[3] = { 2, 3, 2 }, s3[3] = { 1, 2, 2 },
		        p3[3] = { 1, 1, 0 };
		for (int kind = 0; kind < 3; kind++) {
			pool_float(pool_desc(kind, 1, 2, 4, in1, k1, s1, one, p1, p1, 0), kind == 0,
			           false);
			pool_float(pool_desc(kind, 3, 1, 2, in3, k3, s3, one, p3, zero, 1),
			           kind == 0, false);
		}
	}
	{ /* global and wide windows (a warp per output) */
		int64_t in7[2] = { 7, 7 }, in56[2] = { 56, 56 }, k9[2] = { 9, 9 }, p4[2] = { 4, 4 };
		for (int kind = 0; kind < 3; kind++) {
			pool_float(pool_desc(kind, 2, 2, 64, in7, in7, one, one, zero, zero, 0),
			           kind == 0, kind == 0);
			pool_float(pool_desc(kind, 2, 1, 8, in56, in56, one, one, zero, zero, 0),
			           false, false);
		}
		pool_float(pool_desc(RT_POOL_MAX, 2, 1, 3, in7, k9, one, one, p4, p4, 0), true,
		           true);
		pool_float(pool_desc(RT_POOL_AVG, 2, 1, 3, in56, k9, one, one, p4, p4, 0), false,
		           false);
	}
	{ /* a ResNet stem's max pool */
		int64_t in[2] = { 112, 112 }, k[2] = { 3, 3 }, s[2] = { 2, 2 }, p[2] = { 1, 1 };
		pool_float(pool_desc(RT_POOL_MAX, 2, 2, 64, in, k, s, one, p, p, 0), true, false);
	}
	{ /* integers: max only */
		int64_t in[2] = { 9, 10 }, k[2] = { 3, 3 }, s[2] = { 2, 1 }, p[2] = { 1, 1 };
		int64_t in7[2] = { 9, 9 };
		static const int dts[] = { RT_I8, RT_U8, RT_I32, RT_I64 };
		for (int dt : dts) {
			pool_int(pool_desc(RT_POOL_MAX, 2, 2, 3, in, k, s, one, p, p, 0), dt, true);
			pool_int(pool_desc(RT_POOL_MAX, 2, 1, 5, in7, in7, one, one, zero, zero, 0),
			         dt, true);
		}
	}
	{ /* refused: avg of integers, a bad stride */
		int64_t in[1] = { 4 }, k[1] = { 2 };
		struct rt_pool_desc d =
		        pool_desc(RT_POOL_AVG, 1, 1, 1, in, k, one, one, zero, zero, 0);
		d.dtype = RT_I32;
		EXPECT(rtc_pool(&M, &d, dev(16), dev(16), NULL) == RT_ERR_ARGUMENT);
		d.dtype = RT_F32;
		d.stride[0] = 0;
		EXPECT(rtc_pool(&M, &d, dev(16), dev(16), NULL) == RT_ERR_ARGUMENT);
	}
}

/* ------------------------------------------------------------------------ */
/* Softmax, norms                                                           */
/* ------------------------------------------------------------------------ */

static void softmax_case(int kind, int64_t outer, int64_t axis, int64_t inner, bool special)
{
	int64_t n = outer * axis * inner;
	std::vector<float> x = rnd_floats(n, -8, 8), want((size_t)n);
	if (special) {
		for (auto &v : x)
			if (rnd(10) == 0)
				v = -INFINITY;     /* masking */
		for (int64_t a = 0; a < axis; a++) /* a whole lane of -inf, one NaN */
			x[(size_t)(a * inner)] = -INFINITY;
		x[(size_t)(n - 1)] = NAN;
	}
	if (kind == RT_HARDMAX)
		for (auto &v : x)
			v = isfinite(v) ? (float)rnd_in(-3, 3) : v; /* ties */
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt);
		struct rt_softmax_desc d = { RT_F32, kind, outer, axis, inner, 0 };
		EXPECT(rt_softmax(ctx, &d, xr.data(), want.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *dy = dev((size_t)n * esize(t.yt));
		if (ran(rtc_softmax(&M, &d, dx, dy), "rtc_softmax"))
			compare("softmax", unpack(down(dy, (size_t)n * esize(t.yt)), t.yt), want,
			        t.yt, kind == RT_LOG_SOFTMAX ? 16 : 1);
	}
}

static void test_softmax(void)
{
	static const int64_t axes[] = { 1, 7, 1000, 1024, 1025, 5000, 70000 };
	for (int kind = 0; kind < 3; kind++) {
		for (int64_t axis : axes)
			softmax_case(kind, axis > 5000 ? 2 : 37, axis, 1, false);
		softmax_case(kind, 5, 300, 1, true);
		softmax_case(kind, 3, 2000, 1, true);
		softmax_case(kind, 2, 10, 33, false);
		softmax_case(kind, 1, 1000, 3, true);
		softmax_case(kind, 4, 1, 5, false);
		softmax_case(kind, 2, 40, 9000, false);
	}
	struct rt_softmax_desc bad = { RT_I32, RT_SOFTMAX, 1, 1, 1, 0 };
	EXPECT(rtc_softmax(&M, &bad, dev(4), dev(4)) == RT_ERR_ARGUMENT);
	bad.dtype = RT_F64;
	bad.ydtype = RT_F32;
	EXPECT(rtc_softmax(&M, &bad, dev(8), dev(8)) == RT_ERR_ARGUMENT);
}

static void layernorm_case(int64_t rows, int64_t cols, bool bias, float offset)
{
	int64_t n = rows * cols;
	std::vector<float> x = rnd_floats(n, -1, 1), sc = rnd_floats(cols, 0.5, 1.5),
	                   bi = rnd_floats(cols, -1, 1), want((size_t)n), mean((size_t)rows),
	                   inv((size_t)rows);
	for (auto &v : x)
		v += offset;
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt), sr = rounded(sc, t.dt),
		                   br = rounded(bi, t.dt);
		struct rt_layernorm_desc d = { RT_F32, rows, cols, 1e-5f, 0 };
		EXPECT(rt_layernorm(ctx, &d, xr.data(), sr.data(), bias ? br.data() : NULL,
		                    want.data(), mean.data(), inv.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *ds = up(pack(sc, t.dt)), *db = up(pack(bi, t.dt));
		void *dy = dev((size_t)n * esize(t.yt));
		float *dm = (float *)dev(4 * (size_t)rows), *di = (float *)dev(4 * (size_t)rows);
		if (!ran(rtc_layernorm(&M, &d, dx, ds, bias ? db : NULL, dy, dm, di),
		         "rtc_layernorm"))
			continue;
		compare("layernorm", unpack(down(dy, (size_t)n * esize(t.yt)), t.yt), want, t.yt,
		        10);
		compare("layernorm mean", unpack(down(dm, 4 * (size_t)rows), RT_F32), mean, RT_F32,
		        1 + fabs(offset));
		compare("layernorm inv_std", unpack(down(di, 4 * (size_t)rows), RT_F32), inv,
		        RT_F32, 1);
	}
}

static void instnorm_case(int64_t n, int64_t c, int64_t sp)
{
	int64_t total = n * c * sp;
	std::vector<float> x = rnd_floats(total, -3, 5), sc = rnd_floats(c, 0.5, 1.5),
	                   bi = rnd_floats(c, -1, 1), want((size_t)total);
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt), sr = rounded(sc, t.dt),
		                   br = rounded(bi, t.dt);
		struct rt_instnorm_desc d = { RT_F32, n, c, sp, 1e-5f, 0 };
		EXPECT(rt_instnorm(ctx, &d, xr.data(), sr.data(), br.data(), want.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *ds = up(pack(sc, t.dt)), *db = up(pack(bi, t.dt));
		void *dy = dev((size_t)total * esize(t.yt));
		if (ran(rtc_instnorm(&M, &d, dx, ds, db, dy), "rtc_instnorm"))
			compare("instnorm", unpack(down(dy, (size_t)total * esize(t.yt)), t.yt),
			        want, t.yt, 10);
	}
}

static void lrn_case(int64_t n, int64_t c, int64_t sp, int64_t size, float beta)
{
	int64_t total = n * c * sp;
	std::vector<float> x = rnd_floats(total, -2, 2), want((size_t)total);
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt);
		struct rt_lrn_desc d = { RT_F32, n, c, sp, size, 1e-3f, beta, 2.0f, 0 };
		EXPECT(rt_lrn(ctx, &d, xr.data(), want.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *dy = dev((size_t)total * esize(t.yt));
		if (ran(rtc_lrn(&M, &d, dx, dy), "rtc_lrn"))
			compare("lrn", unpack(down(dy, (size_t)total * esize(t.yt)), t.yt), want,
			        t.yt, 1);
	}
}

static void test_norms(void)
{
	layernorm_case(1, 1, true, 0);
	layernorm_case(3, 7, false, 0);
	layernorm_case(64, 768, true, 0);
	layernorm_case(8, 1024, true, 100);
	layernorm_case(4, 1025, false, 0);
	layernorm_case(2, 4096, true, 30);
	layernorm_case(2, 20000, true, 0);
	layernorm_case(5, 0, true, 0);
	instnorm_case(2, 3, 49);
	instnorm_case(1, 16, 4096);
	instnorm_case(2, 4, 1);
	lrn_case(2, 16, 49, 5, 0.75f);
	lrn_case(1, 7, 100, 3, 0.6f);
	lrn_case(1, 3, 10, 9, 0.75f);
	lrn_case(1, 4, 10, 1, 1.0f);
}

/* ------------------------------------------------------------------------ */
/* Reductions, arg, cumsum                                                  */
/* ------------------------------------------------------------------------ */

struct shape {
	int rank;
	int64_t dims[8];
};

static int64_t count(const shape &s, unsigned mask, bool kept)
{
	int64_t n = 1;
	for (int i = 0; i < s.rank; i++)
		if (!mask || ((mask >> i) & 1) != (unsigned)kept)
			n *= s.dims[i];
	return n;
}

static void reduce_float(const shape &s, unsigned mask, int kind)
{
	int64_t n = count(s, 0, false), nout = count(s, mask, true), nred = n / (nout ? nout : 1);
	std::vector<float> x = rnd_floats(n, kind == RT_REDUCE_LOG_SUM ? 0.01 : -1, 1),
	                   want((size_t)nout);
	if (kind == RT_REDUCE_PROD)
		for (auto &v : x)
			v = 1 + (v - 0.5f) / (float)(nred + 1); /* products near 1 */
	FOR_IOS(t)
	{
		std::vector<float> xr = rounded(x, t.dt);
		struct rt_reduce_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = RT_F32;
		d.kind = kind;
		d.rank = s.rank;
		memcpy(d.dims, s.dims, sizeof d.dims);
		d.axes_mask = mask;
		EXPECT(rt_reduce(ctx, &d, xr.data(), want.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *dy = dev((size_t)nout * esize(t.yt));
		bool sums = kind == RT_REDUCE_SUM || kind == RT_REDUCE_L1 ||
		            kind == RT_REDUCE_SUM_SQUARE || kind == RT_REDUCE_PROD;
		if (ran(rtc_reduce(&M, &d, dx, dy), "rtc_reduce"))
			compare("reduce", unpack(down(dy, (size_t)nout * esize(t.yt)), t.yt), want,
			        t.yt, sums ? 1 + (double)nred : 1 + sqrt((double)nred));
	}
}

static void reduce_int(const shape &s, unsigned mask, int kind, int dt)
{
	int64_t n = count(s, 0, false), nout = count(s, mask, true);
	bytes x((size_t)n * esize(dt)), want((size_t)nout * esize(dt));
	for (int64_t i = 0; i < n; i++) {
		int64_t v = kind == RT_REDUCE_LOG_SUM ? rnd_in(1, 5) : rnd_in(-5, 5);
		if (dt == RT_U8 || dt == RT_I8)
			v = (int64_t)rnd_u64();
		memcpy(&x[(size_t)(i * esize(dt))], &v, (size_t)esize(dt)); /* little-endian */
	}
	struct rt_reduce_desc d;
	memset(&d, 0, sizeof d);
	d.dtype = dt;
	d.kind = kind;
	d.rank = s.rank;
	memcpy(d.dims, s.dims, sizeof d.dims);
	d.axes_mask = mask;
	EXPECT(rt_reduce(ctx, &d, x.data(), want.data()) == RT_OK);
	void *dx = up(x), *dy = dev(want.size());
	if (!ran(rtc_reduce(&M, &d, dx, dy), "rtc_reduce int"))
		return;
	bytes got = down(dy, want.size());
	/* log and exp may differ by an ulp between libm and the device, so
	 * their truncated results by one */
	bool loose = kind == RT_REDUCE_LOG_SUM || kind == RT_REDUCE_LOG_SUM_EXP;
	for (int64_t i = 0; i < nout; i++) {
		int64_t g = 0, w = 0;
		memcpy(&g, &got[(size_t)(i * esize(dt))], (size_t)esize(dt));
		memcpy(&w, &want[(size_t)(i * esize(dt))], (size_t)esize(dt));
		if (g != w && !(loose && llabs(g - w) == 1)) {
			fail("reduce int kind %d dtype %d [%lld]: %lld, want %lld", kind, dt,
			     (long long)i, (long long)g, (long long)w);
			break;
		}
	}
}

static void test_reduce(void)
{
	const shape shapes[] = { { 1, { 1000 } },      { 2, { 64, 1000 } },
		                 { 3, { 8, 16, 32 } }, { 4, { 3, 1, 5, 7 } },
		                 { 2, { 4, 8 } },      { 0, { 0 } },
		                 { 3, { 2, 0, 3 } },   { 5, { 2, 3, 4, 5, 6 } },
		                 { 2, { 50000, 40 } }, { 2, { 100000, 3 } } };
	for (const shape &s : shapes)
		for (unsigned mask = 0; mask < (1u << s.rank); mask++)
			for (int kind = 0; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
				if (count(s, 0, false) > 1000000 && kind % 3)
					continue;
				reduce_float(s, mask, kind);
				reduce_int(s, mask, kind, kind % 2 ? RT_I32 : RT_I64);
				if (kind == RT_REDUCE_MAX || kind == RT_REDUCE_MIN) {
					reduce_int(s, mask, kind, RT_U8);
					reduce_int(s, mask, kind, RT_I8);
				}
			}
	const shape big[] = { { 1, { 1 << 22 } }, { 2, { 2, 300000 } }, { 3, { 7, 100000, 2 } } };
	for (const shape &s : big)
		for (int kind = 0; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
			reduce_float(s, s.rank == 3 ? 2u : 1u << (s.rank - 1), kind);
			reduce_int(s, 1u << (s.rank - 1), kind, RT_I64);
		}
}

static void arg_case(int dt, int64_t outer, int64_t axis, int64_t inner, bool nan)
{
	int64_t n = outer * axis * inner, nout = outer * inner;
	std::vector<float> xf((size_t)n);
	bytes x((size_t)n * esize(dt)), want((size_t)nout * 8);
	for (auto &v : xf)
		v = nan && rnd(15) == 0 ? NAN : (float)rnd_in(-3, 3);
	bool is_float = dt == RT_F32 || dt == RT_F16 || dt == RT_BF16 || dt == RT_F64;
	if (is_float) {
		x = pack(xf, dt);
	} else {
		for (int64_t i = 0; i < n; i++) {
			int64_t v = isnan(xf[(size_t)i]) ? 0 : (int64_t)xf[(size_t)i];
			memcpy(&x[(size_t)(i * esize(dt))], &v, (size_t)esize(dt));
		}
	}
	for (int flags = 0; flags < 4; flags++) {
		struct rt_arg_desc d = { dt, flags & 1, flags >> 1, outer, axis, inner };
		/* the CPU has no halves: their values are exact in FP32 */
		if (dt == RT_F16 || dt == RT_BF16) {
			d.dtype = RT_F32;
			EXPECT(rt_arg(ctx, &d, unpack(x, dt).data(), (int64_t *)want.data()) ==
			       RT_OK);
			d.dtype = dt;
		} else {
			EXPECT(rt_arg(ctx, &d, x.data(), (int64_t *)want.data()) == RT_OK);
		}
		void *dx = up(x), *dy = dev(want.size());
		if (ran(rtc_arg(&M, &d, dx, (int64_t *)dy), "rtc_arg"))
			compare_bytes("arg", down(dy, want.size()), want);
	}
}

static void test_arg(void)
{
	static const int dts[] = { RT_F32, RT_F16, RT_BF16, RT_F64, RT_I8,  RT_U8,
		                   RT_I16, RT_U16, RT_I32,  RT_U32, RT_I64, RT_U64 };
	for (int dt : dts) {
		arg_case(dt, 3, 5000, 1, true); /* groups per row */
		arg_case(dt, 2, 100000, 1, true);
		arg_case(dt, 50000, 20, 1, true); /* a thread per row */
		arg_case(dt, 3, 40, 7, true);     /* lanes */
		arg_case(dt, 4, 1, 3, false);
	}
	struct rt_arg_desc d = { RT_F32, 0, 0, 3, 0, 2 }; /* an empty axis: zeros */
	int64_t *dy = (int64_t *)dev(48);
	CUDA_OK(cudaMemset(dy, 0xff, 48));
	if (ran(rtc_arg(&M, &d, NULL, dy), "rtc_arg empty"))
		compare_bytes("arg empty", down(dy, 48), bytes(48, 0));
}

/* CumSum and CumProd (flags 4: factors near 1, so long products stay in
 * range; integer products wrap alike in any order). */
static void cumsum_case(int64_t outer, int64_t axis, int64_t inner, bool in_place)
{
	int64_t n = outer * axis * inner;
	std::vector<float> xs = rnd_floats(n, -1, 1), xp = rnd_floats(n, 0.999f, 1.001f),
	                   want((size_t)n);
	for (int flags = 0; flags < 8; flags++) {
		int excl = flags & 1, rev = (flags >> 1) & 1, prod = flags >> 2;
		const std::vector<float> &x = prod ? xp : xs;
		FOR_IOS(t)
		{
			if (in_place && t.dt != t.yt)
				continue;
			std::vector<float> xr = rounded(x, t.dt);
			struct rt_cumsum_desc d = {
				RT_F32, excl, rev, outer, axis, inner, 0, prod
			};
			EXPECT(rt_cumsum(ctx, &d, xr.data(), want.data()) == RT_OK);
			d.dtype = t.dt;
			d.ydtype = t.yt;
			void *dx = up(pack(x, t.dt)),
			     *dy = in_place ? dx : dev((size_t)n * esize(t.yt));
			if (ran(rtc_cumsum(&M, &d, dx, dy), "rtc_cumsum"))
				compare("cumsum", unpack(down(dy, (size_t)n * esize(t.yt)), t.yt),
				        want, t.yt, 1 + sqrt((double)axis));
		}
		static const int dts[] = { RT_I32, RT_I64 };
		for (int dt : dts) {
			bytes xi((size_t)n * esize(dt)), wi((size_t)n * esize(dt));
			rnd_fill(xi);
			struct rt_cumsum_desc d = { dt, excl, rev, outer, axis, inner, 0, prod };
			EXPECT(rt_cumsum(ctx, &d, xi.data(), wi.data()) == RT_OK);
			void *dx = up(xi), *dy = in_place ? dx : dev(wi.size());
			if (ran(rtc_cumsum(&M, &d, dx, dy), "rtc_cumsum int"))
				compare_bytes("cumsum int", down(dy, wi.size()), wi);
		}
	}
}

static void test_cumsum(void)
{
	cumsum_case(1, 100000, 1, false); /* a block per lane */
	cumsum_case(3, 5000, 2, true);
	cumsum_case(1000, 50, 1, false);
	cumsum_case(100000, 10, 1, true); /* a thread per lane */
	cumsum_case(4, 33, 300, false);
	cumsum_case(2, 1, 3, false);
}

/* TopK: values and indices exactly as the CPU's (halves compare as FP32,
 * exact for their values); ties, NaNs and signed zeros in the data. */
static void topk_case(int dt, int64_t outer, int64_t axis, int64_t inner, int64_t k)
{
	int64_t n = outer * axis * inner, nout = outer * k * inner;
	bool is_float = dt == RT_F32 || dt == RT_F16 || dt == RT_BF16 || dt == RT_F64;
	std::vector<float> xf((size_t)n);
	for (auto &v : xf)
		v = rnd(20) == 0 ? (rnd(2) ? NAN : -0.0f) : (float)rnd_in(-40, 40) / 4;
	bytes x((size_t)n * esize(dt));
	if (is_float)
		x = pack(xf, dt);
	else
		for (int64_t i = 0; i < n; i++) {
			int64_t v = isnan(xf[(size_t)i]) ? 0 : (int64_t)(xf[(size_t)i] * 4);
			memcpy(&x[(size_t)(i * esize(dt))], &v, (size_t)esize(dt));
		}
	for (int small = 0; small < 2; small++) {
		struct rt_topk_desc d = { dt, small, outer, axis, inner, k };
		bytes wv((size_t)nout * esize(dt)), wi((size_t)nout * 8);
		if (dt == RT_F16 || dt == RT_BF16) { /* the CPU has no halves */
			std::vector<float> wf((size_t)nout);
			d.dtype = RT_F32;
			EXPECT(rt_topk(ctx, &d, unpack(x, dt).data(), wf.data(),
			               (int64_t *)wi.data()) == RT_OK);
			d.dtype = dt;
			wv = pack(wf, dt);
		} else {
			EXPECT(rt_topk(ctx, &d, x.data(), wv.data(), (int64_t *)wi.data()) ==
			       RT_OK);
		}
		void *dx = up(x), *dv = dev(wv.size()), *di = dev(wi.size());
		if (ran(rtc_topk(&M, &d, dx, dv, (int64_t *)di), "rtc_topk")) {
			compare_bytes("topk indices", down(di, wi.size()), wi);
			compare_bytes("topk values", down(dv, wv.size()), wv);
		}
	}
}

static void test_topk(void)
{
	static const int dts[] = { RT_F32, RT_F16, RT_BF16, RT_F64, RT_I8,  RT_U8,
		                   RT_I16, RT_U16, RT_I32,  RT_U32, RT_I64, RT_U64 };
	for (int dt : dts) {
		topk_case(dt, 3, 5000, 1, 7);      /* a block per lane */
		topk_case(dt, 2, 100000, 1, 1000); /* a long sort */
		topk_case(dt, 4, 3000, 3, 3000);   /* strided lanes, k = axis */
		topk_case(dt, 50000, 20, 1, 4);    /* a thread per lane */
		topk_case(dt, 3, 40, 7, 40);
		topk_case(dt, 2, 1, 3, 1);
	}
	topk_case(RT_F32, 1, 1 << 20, 1, 50); /* a vocabulary's sampling */
}

/* LinearAttention against the CPU (FP32; the CPU reads the inputs rounded
 * through their storage type), every update rule, gates per head and per
 * key, GQA, past state, head sizes from 1 to the kernel's largest. */
static void linattn_case(int rule, int64_t b, int64_t t, int64_t hkv, int64_t group, int64_t dk,
                         int64_t dv, bool per_key, bool past, bool erase, int dt, int yt, int st)
{
	struct rt_linattn_desc d = { RT_F32, rule & 1, rule >> 1, b, t, hkv * group, hkv, dk, dv };
	d.decay_width = d.gated ? (per_key ? hkv * dk : hkv) : 0;
	d.beta_width = d.delta ? (per_key ? 1 : hkv) : 0;
	d.erase_width = d.delta && erase ? (per_key ? hkv : hkv * dk) : 0;
	d.scale = (float)(1 / sqrt((double)dk));
	int64_t bt = b * t, ns = b * hkv * dk * dv, ny = bt * hkv * group * dv;
	std::vector<float> q = rounded(rnd_floats(bt * hkv * group * dk, -1, 1), dt),
	                   k = rnd_floats(bt * hkv * dk, -1, 1),
	                   v = rounded(rnd_floats(bt * hkv * dv, -1, 1), dt),
	                   ps = rounded(rnd_floats(ns, -1, 1), st),
	                   dc = rounded(rnd_floats(bt * d.decay_width, -0.3, 0), dt),
	                   be = rounded(rnd_floats(bt * d.beta_width, 0, 1), dt),
	                   er = rounded(rnd_floats(bt * d.erase_width, 0, 1), dt), wy((size_t)ny),
	                   ws((size_t)ns);
	for (auto &x : k)
		x *= d.scale; /* a normalized key's size: the delta rule stays bounded */
	k = rounded(k, dt);
	EXPECT(rt_linear_attention(ctx, &d, q.data(), k.data(), v.data(), past ? ps.data() : NULL,
	                           d.gated ? dc.data() : NULL, d.delta ? be.data() : NULL,
	                           d.erase_width ? er.data() : NULL, wy.data(),
	                           ws.data()) == RT_OK);
	d.dtype = dt;
	d.ydtype = yt;
	d.sdtype = st;
	void *dst = dev((size_t)ns * esize(st)), *dpast = past ? up(pack(ps, st)) : NULL;
	void *dy = dev((size_t)ny * esize(yt));
	if (ran(rtc_linear_attention(&M, &d, up(pack(q, dt)), up(pack(k, dt)), up(pack(v, dt)),
	                             dpast, d.gated ? up(pack(dc, dt)) : NULL,
	                             d.delta ? up(pack(be, dt)) : NULL,
	                             d.erase_width ? up(pack(er, dt)) : NULL, dy, dst),
	        "rtc_linear_attention")) {
		compare("linattn y", unpack(down(dy, (size_t)ny * esize(yt)), yt), wy, yt,
		        10 * sqrt((double)(dk * t)));
		compare("linattn state", unpack(down(dst, (size_t)ns * esize(st)), st), ws, st,
		        10 * sqrt((double)(dk * t)));
	}
	/* in place: the state written over past_state */
	if (past) {
		void *inplace = up(pack(ps, st));
		if (ran(rtc_linear_attention(&M, &d, up(pack(q, dt)), up(pack(k, dt)),
		                             up(pack(v, dt)), inplace,
		                             d.gated ? up(pack(dc, dt)) : NULL,
		                             d.delta ? up(pack(be, dt)) : NULL,
		                             d.erase_width ? up(pack(er, dt)) : NULL, dy, inplace),
		        "rtc_linear_attention in place"))
			compare_bytes("linattn in place", down(inplace, (size_t)ns * esize(st)),
			              down(dst, (size_t)ns * esize(st)));
	}
}

static void test_linattn(void)
{
	static const int64_t dks[] = { 1, 16, 33, 64, 128, 256, 1024 };
	for (int rule = 0; rule < 4; rule++)
		for (int64_t dk : dks) {
			linattn_case(rule, 2, 17, 2, 1, dk, 64, true, true, true, RT_F32, RT_F32,
			             RT_F32);
			linattn_case(rule, 1, 9, 3, 2, dk, 5, false, false, false, RT_F32, RT_F32,
			             RT_F32);
		}
	linattn_case(3, 2, 300, 4, 1, 128, 128, true, true, true, RT_F32, RT_F32, RT_F32);
	linattn_case(1, 1, 64, 2, 4, 64, 300, true, true, false, RT_F32, RT_F32, RT_F32);
	FOR_IOS(t)
	{
		if (t.dt == RT_F64)
			continue;
		linattn_case(3, 2, 20, 2, 2, 64, 64, true, true, true, t.dt, t.yt, t.yt);
		linattn_case(1, 1, 20, 1, 1, 32, 16, false, true, false, t.dt, t.yt, RT_F32);
	}
	struct rt_linattn_desc d = { RT_F32, 0, 0, 1, 1, 1, 1, 1024 + 1, 4 };
	EXPECT(rtc_linear_attention(&M, &d, dev(64), dev(64), dev(64), NULL, NULL, NULL, NULL,
	                            dev(64), dev(64)) == RT_ERR_ARGUMENT);
}

/* v's data, or a valid pointer when v is empty (the CPU runtime takes no
 * NULL tensor, and an empty vector's data() may be NULL) */
template <class T> static T *nonnull(std::vector<T> &v)
{
	static T one[1];
	return v.empty() ? one : v.data();
}

/* ------------------------------------------------------------------------ */
/* LSTM, GRU, RNN                                                           */
/* ------------------------------------------------------------------------ */

struct rnn_spec {
	int cell, dirs, reverse;
	int64_t seq, batch, input, hidden;
	int acts[3]; /* -1: the cell's defaults (sigmoid, tanh, tanh) */
	float clip;
	int input_forget, lbr;
	bool short_lens; /* sequence lengths from 0 to seq, else all seq */
};

static struct rt_rnn_desc rnn_desc(const rnn_spec &c)
{
	struct rt_rnn_desc d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F32;
	d.cell = c.cell;
	d.dirs = c.dirs;
	d.reverse = c.reverse;
	d.seq = c.seq;
	d.batch = c.batch;
	d.input = c.input;
	d.hidden = c.hidden;
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++) {
			d.act[i][k] =
			        c.acts[0] < 0 ? (k ? RT_RNN_TANH : RT_RNN_SIGMOID) : c.acts[k];
			d.alpha[i][k] = 0.5f + 0.25f * (float)k;
			d.beta[i][k] = 0.1f * (float)(i + 1);
		}
	d.clip = c.clip;
	d.input_forget = c.input_forget;
	d.linear_before_reset = c.lbr;
	return d;
}

/* rtc_rnn against rt_rnn on the same inputs rounded through dt; the result
 * in yt; captured into a CUDA Graph and replayed when graph. */
static void rnn_case(const rnn_spec &c, int dt, int yt, bool graph)
{
	struct rt_rnn_desc d = rnn_desc(c);
	int64_t G = c.cell == RT_RNN_LSTM  ? 4
	            : c.cell == RT_RNN_GRU ? 3
	                                   : 1,
	        H = c.hidden, D = c.dirs, B = c.batch, T = c.seq, ny = T * D * B * H,
	        ns = D * B * H;
	float scale = (float)(1 / sqrt((double)(c.input + H)));
	std::vector<float> x = rounded(rnd_floats(T * B * c.input, -1, 1), dt),
	                   w = rounded(rnd_floats(D * G * H * c.input, -scale, scale), dt),
	                   r = rounded(rnd_floats(D * G * H * H, -scale, scale), dt),
	                   b = rounded(rnd_floats(D * 2 * G * H, -0.5, 0.5), dt),
	                   h0 = rounded(rnd_floats(ns, -1, 1), dt),
	                   c0 = rounded(rnd_floats(ns, -1, 1), dt),
	                   p = rounded(rnd_floats(D * 3 * H, -0.5, 0.5), dt), wy((size_t)ny),
	                   wh((size_t)ns), wc((size_t)ns);
	std::vector<int32_t> lens((size_t)B);
	for (int64_t i = 0; i < B; i++)
		lens[(size_t)i] = (int32_t)(c.short_lens ? (i * 7 + 3) % (T + 1) : T);
	bool lstm = c.cell == RT_RNN_LSTM;
	std::vector<unsigned char> ws(rt_rnn_workspace(&d) + 1);
	EXPECT(rt_rnn(ctx, &d, x.data(), w.data(), r.data(), b.data(), lens.data(), h0.data(),
	              lstm ? c0.data() : NULL, lstm ? p.data() : NULL, nonnull(wy), wh.data(),
	              lstm ? wc.data() : NULL, ws.data()) == RT_OK);
	d.dtype = dt;
	d.ydtype = yt;
	struct rtc_rnn *plan;
	if (!ran(rtc_rnn_plan(&M, &d, &plan), "rtc_rnn_plan"))
		return;
	ensure_workspace();
	bytes lb((size_t)B * 4);
	memcpy(lb.data(), lens.data(), lb.size());
	void *dx = up(pack(x, dt)), *dw = up(pack(w, dt)), *dr = up(pack(r, dt)),
	     *db = up(pack(b, dt)), *dl = up(lb), *dh0 = up(pack(h0, dt)), *dc0 = up(pack(c0, dt)),
	     *dp = up(pack(p, dt)), *dy = dev((size_t)ny * esize(yt)),
	     *dyh = dev((size_t)ns * esize(yt)), *dyc = dev((size_t)ns * esize(yt)),
	     *dws = dev(rt_rnn_workspace(&d));
	auto call = [&] {
		return rtc_rnn(&M, plan, dx, dw, dr, db, dl, dh0, lstm ? dc0 : NULL,
		               lstm ? dp : NULL, dy, dyh, lstm ? dyc : NULL, dws);
	};
	if (graph) {
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CUDA_OK(cudaStreamBeginCapture(M.stream, cudaStreamCaptureModeGlobal));
		int st = call();
		CUDA_OK(cudaStreamEndCapture(M.stream, &g));
		if (!ran(st, "rtc_rnn captured"))
			return;
		CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
		for (int i = 0; i < 2; i++)
			CUDA_OK(cudaGraphLaunch(ge, M.stream));
		CUDA_OK(cudaStreamSynchronize(M.stream));
		CUDA_OK(cudaGraphExecDestroy(ge));
		CUDA_OK(cudaGraphDestroy(g));
	} else if (!ran(call(), "rtc_rnn"))
		return;
	EXPECT(take_flag() == 0);
	/* summation order differs (cuBLASLt, the CPU's GEMM) and the
	 * recurrence carries it along: within 1e-4 of values near 1 */
	double sc = yt == RT_F32 ? 100 : 1;
	compare("rnn y", unpack(down(dy, (size_t)ny * esize(yt)), yt), wy, yt, sc);
	compare("rnn y_h", unpack(down(dyh, (size_t)ns * esize(yt)), yt), wh, yt, sc);
	if (lstm)
		compare("rnn y_c", unpack(down(dyc, (size_t)ns * esize(yt)), yt), wc, yt, sc);
}

static void test_rnn(void)
{
	static const int others[][3] = {
		{ RT_RNN_HARD_SIGMOID, RT_RNN_LEAKY_RELU, RT_RNN_SOFTSIGN },
		{ RT_RNN_AFFINE, RT_RNN_SCALED_TANH, RT_RNN_ELU },
		{ RT_RNN_SIGMOID, RT_RNN_SOFTPLUS, RT_RNN_THRESHOLDED_RELU },
		{ RT_RNN_SIGMOID, RT_RNN_RELU, RT_RNN_TANH },
	};
	for (int cell = RT_RNN_LSTM; cell <= RT_RNN_RNN; cell++)
		for (int dirs = 1; dirs <= 2; dirs++)
			for (int rev = 0; rev <= (dirs == 1); rev++)
				for (int lbr = 0; lbr <= (cell == RT_RNN_GRU); lbr++) {
					rnn_spec c = { cell, dirs,   rev, 7, 5,   6,
						       9,    { -1 }, 0,   0, lbr, true };
					rnn_case(c, RT_F32, RT_F32, false);
					c.short_lens = false;
					c.seq = 40, c.batch = 33, c.input = 70, c.hidden = 130;
					rnn_case(c, RT_F32, RT_F32, false);
				}
	for (const auto &a : others)
		for (int cell = RT_RNN_LSTM; cell <= RT_RNN_RNN; cell++) {
			rnn_spec c = {
				cell, 2, 0, 6, 4, 3, 5, { a[0], a[1], a[2] }, 0, 0, 0, true
			};
			rnn_case(c, RT_F32, RT_F32, false);
			c.clip = 0.75f; /* clip on every activation's input */
			rnn_case(c, RT_F32, RT_F32, false);
		}
	rnn_spec coupled = { RT_RNN_LSTM, 1, 0, 5, 3, 4, 6, { -1 }, 0, 1, 0, true };
	rnn_case(coupled, RT_F32, RT_F32, false);
	rnn_spec empty = { RT_RNN_LSTM, 2, 0, 0, 3, 4, 6, { -1 }, 0, 0, 0, false };
	rnn_case(empty, RT_F32, RT_F32, false); /* no steps: y_h = h0 */
	rnn_spec noin = { RT_RNN_GRU, 1, 1, 4, 3, 0, 6, { -1 }, 0, 0, 0, true };
	rnn_case(noin, RT_F32, RT_F32, false); /* input size 0: a k = 0 projection */
	/* half storage, FP32 state and arithmetic */
	for (int cell = RT_RNN_LSTM; cell <= RT_RNN_RNN; cell++) {
		rnn_spec c = { cell, 2, 0, 9, 6, 8, 16, { -1 }, 0, 0, 0, true };
		rnn_case(c, RT_F16, RT_F16, false);
		rnn_case(c, RT_BF16, RT_BF16, false);
		rnn_case(c, RT_F16, RT_F32, false);
	}
	/* captured into a CUDA Graph and replayed twice: the same results */
	rnn_spec gc = { RT_RNN_GRU, 2, 0, 12, 9, 10, 33, { -1 }, 0, 0, 0, true };
	rnn_case(gc, RT_F32, RT_F32, true);
	rnn_spec lc = { RT_RNN_LSTM, 1, 1, 12, 9, 10, 33, { -1 }, 0.5f, 0, 0, true };
	rnn_case(lc, RT_F32, RT_F32, true);
	/* a sequence length past seq: the index error flag */
	{
		rnn_spec c = { RT_RNN_RNN, 1, 0, 3, 2, 2, 4, { -1 }, 0, 0, 0, false };
		struct rt_rnn_desc d = rnn_desc(c);
		struct rtc_rnn *plan;
		int32_t bad[2] = { 2, 4 };
		bytes lb(8);
		memcpy(lb.data(), bad, 8);
		if (ran(rtc_rnn_plan(&M, &d, &plan), "rtc_rnn_plan")) {
			ensure_workspace();
			EXPECT(rtc_rnn(&M, plan, dev(64), dev(64), dev(64), dev(64), up(lb),
			               dev(64), NULL, NULL, dev(256), dev(64), NULL,
			               dev(rt_rnn_workspace(&d))) == RT_OK);
			EXPECT(take_flag() == 1);
		}
		d.dirs = 3;
		EXPECT(rtc_rnn_plan(&M, &d, &plan) == RT_ERR_ARGUMENT);
	}
}

/* One case's inputs: the CPU's descriptor (FP32), q, k, v rounded through
 * dt, the bias (rounded through mt, or dt) or boolean mask with row 1
 * fully masked (and what broadcasts with it), and their sizes. */
struct attn_in {
	struct rt_attention_desc d;
	std::vector<float> q, k, v, bias;
	bytes keep;
	int64_t rows, nkv, ny;
	int bt; /* the bias's dtype */

	/* the mask as the CPU runtime and the device take it */
	const void *host_mask()
	{
		return d.mask == RT_ATTN_BIAS ? (const void *)nonnull(bias)
		       : d.mask               ? (const void *)nonnull(keep)
		                              : NULL;
	}
	void *dev_mask()
	{
		return d.mask == RT_ATTN_BIAS ? up(pack(bias, bt)) : d.mask ? up(keep) : NULL;
	}
};

static void attn_inputs(attn_in &x, int dt, int mt, int64_t b, int64_t hkv, int64_t group,
                        int64_t lq, int64_t lk, int64_t dk, int64_t dv, int causal, int64_t off,
                        int mask, unsigned bcast, float softcap)
{
	struct rt_attention_desc &d = x.d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F32;
	d.mask = mask;
	d.causal = causal;
	d.causal_offset = off;
	d.batch = b, d.q_heads = hkv * group, d.kv_heads = hkv, d.lq = lq, d.lk = lk;
	d.dk = dk, d.dv = dv;
	d.scale = softcap > 0 ? 1.0f : (float)(1 / sqrt((double)dk));
	d.softcap = softcap;
	int64_t dims[4] = { b, hkv * group, lq, lk }, nm = 1;
	for (int a = 3; a >= 0; a--) {
		d.mask_strides[a] = mask && !(bcast >> a & 1) ? nm : 0;
		nm *= dims[a];
	}
	x.rows = b * hkv * group * lq, x.ny = x.rows * dv, x.nkv = b * hkv * lk;
	x.bt = mt ? mt : dt;
	x.q = rounded(rnd_floats(x.rows * dk, -1, 1), dt);
	x.k = rounded(rnd_floats(x.nkv * dk, -1, 1), dt);
	x.v = rounded(rnd_floats(x.nkv * dv, -1, 1), dt);
	if (mask == RT_ATTN_BIAS) {
		x.bias = rnd_floats(nm, -2, 2);
		for (auto &e : x.bias)
			if (!rnd(50))
				e = -INFINITY;
	} else if (mask == RT_ATTN_BOOL) {
		x.keep.resize((size_t)nm);
		for (auto &c : x.keep)
			c = rnd(4) != 0;
	}
	if (mask && lq > 1) /* row 1 fully masked (and what broadcasts with it) */
		for (int64_t e = 0; e < b * hkv * group * lk; e++) {
			int64_t at = (e / lk / (hkv * group)) * d.mask_strides[0] +
			             (e / lk % (hkv * group)) * d.mask_strides[1] +
			             d.mask_strides[2] + (e % lk) * d.mask_strides[3];
			if (mask == RT_ATTN_BIAS)
				x.bias[(size_t)at] = -INFINITY;
			else
				x.keep[(size_t)at] = 0;
		}
	if (mask == RT_ATTN_BIAS)
		x.bias = rounded(x.bias, x.bt);
}

/* Scaled dot-product attention against the CPU (FP32 on the inputs rounded
 * through their storage types): GQA, causal limits, bias (in its own
 * dtype) and boolean masks with broadcast dims, softcap, fully masked
 * rows, lse on and off, head sizes from 1 to several value passes,
 * sequences past a thousand. bcast: the mask dims (bit a of [batch, head,
 * lq, lk]) that broadcast. */
static void attn_case(int dt, int yt, int mt, int64_t b, int64_t hkv, int64_t group, int64_t lq,
                      int64_t lk, int64_t dk, int64_t dv, int causal, int64_t off, int mask,
                      unsigned bcast, float softcap, bool with_lse)
{
	attn_in x;
	attn_inputs(x, dt, mt, b, hkv, group, lq, lk, dk, dv, causal, off, mask, bcast, softcap);
	struct rt_attention_desc &d = x.d;
	const int64_t rows = x.rows, ny = x.ny;
	std::vector<float> wy((size_t)ny), wl((size_t)rows);
	EXPECT(rt_attention(ctx, &d, nonnull(x.q), nonnull(x.k), nonnull(x.v), x.host_mask(),
	                    nonnull(wy), nonnull(wl)) == RT_OK);
	d.dtype = dt;
	d.ydtype = yt;
	d.mdtype = mt;
	void *dy = dev((size_t)ny * esize(yt)), *dl = with_lse ? dev((size_t)rows * 4) : NULL;
	if (ran(attention(d, up(pack(x.q, dt)), up(pack(x.k, dt)), up(pack(x.v, dt)), x.dev_mask(),
	                  dy, dl),
	        "rtc_attention")) {
		compare("attention y", unpack(down(dy, (size_t)ny * esize(yt)), yt), wy, yt, 10);
		if (with_lse)
			compare("attention lse", unpack(down(dl, (size_t)rows * 4), RT_F32), wl,
			        RT_F32, 10);
	}
}

static void test_attention(void)
{
	const int F = RT_F32, NO_MASK = RT_ATTN_NONE, BIAS = RT_ATTN_BIAS, KEEP = RT_ATTN_BOOL;
	/* the portable kernels (attention_cudnn has cuDNN's) */
	allow_cudnn(false);
	for (int cs = 0; cs < 40; cs++) { /* small random ones */
		int64_t lq = rnd(4) ? rnd_in(1, 80) : 1, lk = rnd_in(0, 150);
		attn_case(F, F, 0, rnd_in(1, 2), rnd_in(1, 3), rnd_in(1, 3), lq, lk, rnd_in(1, 80),
		          rnd_in(1, 80), (int)rnd(2), rnd_in(-lq - 2, lk + 2), (int)rnd(3),
		          (unsigned)rnd(16), rnd(3) ? 0.f : 5.f, rnd(2));
	}
	attn_case(F, F, 0, 1, 4, 1, 1024, 1024, 64, 64, 1, 0, NO_MASK, 0, 0, true);
	attn_case(F, F, 0, 2, 2, 2, 1000, 1000, 128, 128, 0, 0, BIAS, 2u, 0, true);
	attn_case(F, F, 0, 2, 2, 4, 1, 1500, 64, 64, 1, 1499, KEEP, 0, 0, true); /* decode */
	attn_case(F, F, 0, 1, 2, 3, 77, 1100, 128, 128, 1, 1100 - 77, BIAS, 3u, 0, true);
	attn_case(F, F, 0, 1, 1, 1, 300, 300, 1, 1, 1, -5, NO_MASK, 0, 0, true);
	attn_case(F, F, 0, 1, 2, 2, 100, 200, 33, 300, 1, 7, KEEP, 4u, 0, true); /* 2 passes */
	attn_case(F, F, 0, 1, 1, 2, 64, 257, 256, 256, 0, 0, NO_MASK, 0, 0, false);
	attn_case(F, F, 0, 1, 2, 1, 50, 70, 100, 600, 0, 0, BIAS, 9u, 0, true);   /* 3 passes */
	attn_case(F, F, 0, 2, 2, 1, 200, 200, 64, 64, 1, 0, BIAS, 0, 30.f, true); /* softcap */
	attn_case(F, F, 0, 1, 1, 1, 5, 0, 16, 16, 0, 0, NO_MASK, 0, 0, true);     /* no keys */
	FOR_IOS(t)
	{
		if (t.dt == RT_F64)
			continue;
		attn_case(t.dt, t.yt, 0, 2, 2, 2, 300, 333, 64, 64, 1, 33, BIAS, 8u, 0, true);
		attn_case(t.dt, t.yt, 0, 1, 2, 4, 1, 1200, 128, 128, 0, 0, KEEP, 4u, 0, false);
		attn_case(t.dt, t.yt, 0, 1, 1, 1, 1030, 1030, 64, 80, 1, 0, NO_MASK, 0, 0, true);
	}
	/* a bias of another dtype than q, k and v */
	attn_case(RT_F16, RT_F16, RT_F32, 1, 2, 2, 100, 130, 64, 64, 1, 30, BIAS, 1u, 0, true);
	attn_case(RT_BF16, RT_F32, RT_F16, 1, 2, 1, 100, 130, 64, 64, 0, 0, BIAS, 0, 0, true);
	/* refused: FP64, a mask pointer that the descriptor does not say, heads */
	struct rt_attention_desc d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F64, d.batch = 1, d.q_heads = 2, d.kv_heads = 1, d.lq = 2, d.lk = 2;
	d.dk = d.dv = 2, d.scale = 1;
	EXPECT(attention(d, dev(64), dev(64), dev(64), NULL, dev(64), NULL) == RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	EXPECT(attention(d, dev(64), dev(64), dev(64), dev(64), dev(64), NULL) == RT_ERR_ARGUMENT);
	d.kv_heads = 3;
	EXPECT(attention(d, dev(64), dev(64), dev(64), NULL, dev(64), NULL) == RT_ERR_ARGUMENT);
	EXPECT(rtc_attention(&M, NULL, dev(64), dev(64), dev(64), NULL, dev(64), NULL) ==
	       RT_ERR_ARGUMENT);
}

/* Its backward against rt_attention_grad (FP32 on the inputs rounded
 * through their storage types; y is the CPU's forward rounded to ydtype,
 * lse the CPU's): GQA, causal limits (negative offsets too), bias and
 * boolean masks with broadcast dims, softcap, fully masked rows, head sizes
 * from 1 to several column passes, sequences of ~500, dq, dk, dv in the
 * dtype of q, k, v and y, dy in ydtype. Each run twice: the same bytes. */
static void grad_case(int dt, int yt, int mt, int64_t b, int64_t hkv, int64_t group, int64_t lq,
                      int64_t lk, int64_t dk, int64_t dv, int causal, int64_t off, int mask,
                      unsigned bcast, float softcap)
{
	attn_in x;
	attn_inputs(x, dt, mt, b, hkv, group, lq, lk, dk, dv, causal, off, mask, bcast, softcap);
	struct rt_attention_desc &d = x.d;
	const int64_t rows = x.rows, ny = x.ny, nkv = x.nkv;
	std::vector<float> &q = x.q, &k = x.k, &v = x.v;
	std::vector<float> gy = rounded(rnd_floats(ny, -1, 1), yt), y((size_t)ny),
	                   lse((size_t)rows), wq((size_t)(rows * dk)), wk((size_t)(nkv * dk)),
	                   wv((size_t)(nkv * dv));
	const void *hmask = x.host_mask();
	EXPECT(rt_attention(ctx, &d, nonnull(q), nonnull(k), nonnull(v), hmask, nonnull(y),
	                    nonnull(lse)) == RT_OK);
	y = rounded(y, yt);
	EXPECT(rt_attention_grad(ctx, &d, nonnull(q), nonnull(k), nonnull(v), nonnull(y),
	                         nonnull(lse), nonnull(gy), hmask, nonnull(wq), nonnull(wk),
	                         nonnull(wv)) == RT_OK);
	d.dtype = dt;
	d.ydtype = yt;
	d.mdtype = mt;
	void *dmask = x.dev_mask();
	void *dq_ = up(pack(q, dt)), *dk_ = up(pack(k, dt)), *dv_ = up(pack(v, dt)),
	     *dy_ = up(pack(y, yt)), *dl = up(pack(lse, RT_F32)), *dg = up(pack(gy, yt));
	size_t es = (size_t)esize(dt), nq = (size_t)(rows * dk) * es, nk = (size_t)(nkv * dk) * es,
	       nv = (size_t)(nkv * dv) * es;
	void *oq = dev(nq), *ok = dev(nk), *ov = dev(nv);
	/* the gradients' sums cancel (p (dp - D)): within rounding of the
	 * largest result and of the terms' size */
	auto tol = [&](const std::vector<float> &w) {
		double big = 0;
		for (float x : w)
			big = fabs(x) > big ? fabs(x) : big;
		return 10 * big + 0.5 * d.scale * (double)dv * sqrt((double)(lq * group));
	};
	if (!ran(attention_grad(d, dq_, dk_, dv_, dy_, dl, dg, dmask, oq, ok, ov),
	         "rtc_attention_grad"))
		return;
	bytes gq = down(oq, nq), gk = down(ok, nk), gv = down(ov, nv);
	compare("attention dq", unpack(gq, dt), wq, dt, tol(wq));
	compare("attention dk", unpack(gk, dt), wk, dt, tol(wk));
	compare("attention dv", unpack(gv, dt), wv, dt, tol(wv));
	CUDA_OK(cudaMemset(oq, 0xff, nq ? nq : 1));
	CUDA_OK(cudaMemset(ok, 0xff, nk ? nk : 1));
	CUDA_OK(cudaMemset(ov, 0xff, nv ? nv : 1));
	if (ran(attention_grad(d, dq_, dk_, dv_, dy_, dl, dg, dmask, oq, ok, ov),
	        "rtc_attention_grad again")) {
		compare_bytes("attention dq again", down(oq, nq), gq);
		compare_bytes("attention dk again", down(ok, nk), gk);
		compare_bytes("attention dv again", down(ov, nv), gv);
	}
}

static void test_attention_grad(void)
{
	const int F = RT_F32, NO_MASK = RT_ATTN_NONE, BIAS = RT_ATTN_BIAS, KEEP = RT_ATTN_BOOL;
	/* the portable kernels (attention_grad_cudnn has cuDNN's) */
	allow_cudnn(false);
	for (int cs = 0; cs < 30; cs++) { /* small random ones */
		int64_t lq = rnd(4) ? rnd_in(1, 80) : 1, lk = rnd_in(0, 120);
		grad_case(F, F, 0, rnd_in(1, 2), rnd_in(1, 3), rnd_in(1, 3), lq, lk, rnd_in(1, 80),
		          rnd_in(1, 80), (int)rnd(2), rnd_in(-lq - 2, lk + 2), (int)rnd(3),
		          (unsigned)rnd(16), rnd(3) ? 0.f : 5.f);
	}
	grad_case(F, F, 0, 1, 2, 2, 500, 500, 64, 64, 1, 0, NO_MASK, 0, 0);
	grad_case(F, F, 0, 2, 2, 1, 512, 480, 128, 128, 0, 0, BIAS, 2u, 0);
	grad_case(F, F, 0, 1, 2, 4, 1, 700, 64, 64, 1, 699, KEEP, 0, 0); /* decode */
	grad_case(F, F, 0, 1, 2, 3, 77, 530, 128, 128, 1, 530 - 77, BIAS, 3u, 0);
	grad_case(F, F, 0, 1, 1, 1, 300, 300, 1, 1, 1, -5, NO_MASK, 0, 0);
	grad_case(F, F, 0, 1, 2, 2, 100, 200, 33, 300, 1, 7, KEEP, 4u, 0);  /* 2 kv passes */
	grad_case(F, F, 0, 1, 2, 1, 90, 70, 300, 40, 0, 0, BIAS, 9u, 0);    /* 2 q passes */
	grad_case(F, F, 0, 2, 2, 1, 200, 200, 64, 64, 1, 0, BIAS, 0, 30.f); /* softcap */
	grad_case(F, F, 0, 1, 1, 2, 200, 150, 48, 40, 1, -60, NO_MASK, 0, 0);
	grad_case(F, F, 0, 1, 1, 1, 5, 0, 16, 16, 0, 0, NO_MASK, 0, 0); /* no keys */
	grad_case(F, F, 0, 1, 1, 1, 0, 9, 16, 16, 0, 0, NO_MASK, 0, 0); /* no queries */
	FOR_IOS(t)
	{
		if (t.dt == RT_F64)
			continue;
		grad_case(t.dt, t.yt, 0, 2, 2, 2, 300, 333, 64, 64, 1, 33, BIAS, 8u, 0);
		grad_case(t.dt, t.yt, 0, 1, 2, 4, 1, 500, 128, 128, 0, 0, KEEP, 4u, 0);
		grad_case(t.dt, t.yt, 0, 1, 1, 1, 520, 520, 64, 80, 1, 0, NO_MASK, 0, 5.f);
	}
	/* a bias of another dtype than q, k and v */
	grad_case(RT_F16, RT_F16, RT_F32, 1, 2, 2, 100, 130, 64, 64, 1, 30, BIAS, 1u, 0);
	grad_case(RT_BF16, RT_F32, RT_F16, 1, 2, 1, 100, 130, 64, 64, 0, 0, BIAS, 0, 0);
	/* refused: FP64, a mask pointer that the descriptor does not say, heads,
	 * no lse */
	struct rt_attention_desc d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F64, d.batch = 1, d.q_heads = 2, d.kv_heads = 1, d.lq = 2, d.lk = 2;
	d.dk = d.dv = 2, d.scale = 1;
	void *p = dev(64);
	EXPECT(attention_grad(d, p, p, p, p, p, p, NULL, p, p, p) == RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	EXPECT(attention_grad(d, p, p, p, p, p, p, p, p, p, p) == RT_ERR_ARGUMENT);
	EXPECT(attention_grad(d, p, p, p, p, NULL, p, NULL, p, p, p) == RT_ERR_ARGUMENT);
	d.kv_heads = 3;
	EXPECT(attention_grad(d, p, p, p, p, p, p, NULL, p, p, p) == RT_ERR_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* Attention on cuDNN (rtc_sdpa.c)                                          */
/* ------------------------------------------------------------------------ */

/* got against want as one vector: the relative L2 error over the finite
 * wants at most bound; non-finite wants must be matched exactly. */
static void compare_l2(const char *what, const std::vector<float> &got,
                       const std::vector<float> &want, double bound)
{
	double num = 0, den = 0, e;
	int64_t bad = 0;
	if (got.size() != want.size()) {
		fail("%s: %zu results, want %zu", what, got.size(), want.size());
		return;
	}
	for (size_t i = 0; i < got.size(); i++) {
		double g = got[i], w = want[i];
		if (!isfinite(w) || !isfinite(g)) {
			if (!(isnan(w) ? isnan(g) : g == w) && bad++ < 5)
				fprintf(stderr, "%s: %s [%zu]: %.9g, want %.9g\n", current, what, i,
				        g, w);
			continue;
		}
		num += (g - w) * (g - w);
		den += w * w;
	}
	e = sqrt(num / (den > 0 ? den : 1));
	if (bad || e > bound)
		fail("%s: relative L2 error %.3g (bound %.3g), %lld non-finite mismatches", what, e,
		     bound, (long long)bad);
}

/* The unit roundoff of a half type. */
static double roundoff(int dt) { return dt == RT_BF16 ? 0x1p-8 : 0x1p-11; }

struct sdpa_case {
	int dt;
	int64_t b, hkv, group, lq, lk, d;
	int causal;
	int64_t off;
	int bias;
	unsigned bcast; /* bias dims (bit a of [b, h, lq, lk]) that broadcast */
	bool full_row;  /* row 1's bias -inf everywhere (and where it broadcasts) */
	bool lse;       /* the forward writes lse (else cuDNN's goes to the workspace) */
	int64_t dv;     /* the value head size (0: d) */
	int mdtype;     /* the bias's dtype (0: dt; RT_F32 as mixed precision keeps it) */
};

/* The bias's dtype in a case. */
static int bias_dt(const sdpa_case &c) { return c.mdtype ? c.mdtype : c.dt; }

/* The inputs of a case (rounded through dt) and the CPU's forward. */
struct sdpa_data {
	struct rt_attention_desc d;
	std::vector<float> q, k, v, bias, y, lse;
	int64_t rows, nkv;
};

static void sdpa_inputs(const sdpa_case &c, sdpa_data &x)
{
	struct rt_attention_desc &d = x.d;
	memset(&d, 0, sizeof d);
	d.dtype = RT_F32;
	d.mask = c.bias ? RT_ATTN_BIAS : RT_ATTN_NONE;
	d.causal = c.causal;
	d.causal_offset = c.off;
	d.batch = c.b, d.q_heads = c.hkv * c.group, d.kv_heads = c.hkv, d.lq = c.lq, d.lk = c.lk;
	d.dk = c.d;
	d.dv = c.dv ? c.dv : c.d;
	d.scale = (float)(1 / sqrt((double)c.d));
	int64_t dims[4] = { c.b, d.q_heads, c.lq, c.lk }, nm = 1;
	for (int a = 3; a >= 0; a--) {
		d.mask_strides[a] = c.bias && !(c.bcast >> a & 1) ? nm : 0;
		nm *= c.bias && !(c.bcast >> a & 1) ? dims[a] : 1;
	}
	x.rows = c.b * d.q_heads * c.lq;
	x.nkv = c.b * c.hkv * c.lk;
	x.q = rounded(rnd_floats(x.rows * c.d, -1, 1), c.dt);
	x.k = rounded(rnd_floats(x.nkv * c.d, -1, 1), c.dt);
	x.v = rounded(rnd_floats(x.nkv * d.dv, -1, 1), c.dt);
	if (c.bias) {
		x.bias = rnd_floats(nm, -2, 2);
		for (auto &b : x.bias)
			if (!rnd(20))
				b = -INFINITY;
		if (c.full_row && c.lq > 1)
			for (int64_t bb = 0; bb < c.b; bb++)
				for (int64_t h = 0; h < d.q_heads; h++)
					for (int64_t j = 0; j < c.lk; j++)
						x.bias[(size_t)(bb * d.mask_strides[0] +
						                h * d.mask_strides[1] +
						                d.mask_strides[2] +
						                j * d.mask_strides[3])] = -INFINITY;
		x.bias = rounded(x.bias, bias_dt(c));
	}
	x.y.resize((size_t)(x.rows * d.dv));
	x.lse.resize((size_t)x.rows);
	EXPECT(rt_attention(ctx, &d, x.q.data(), x.k.data(), x.v.data(),
	                    c.bias ? x.bias.data() : NULL, x.y.data(), x.lse.data()) == RT_OK);
	d.dtype = c.dt;
	d.mdtype = c.bias ? c.mdtype : 0;
}

/* A plan that must be cuDNN's: says why not where it is not. */
static bool on_cudnn(struct rtc_attention *p, const char *what)
{
	const char *why = rtc_attention_fallback(p);
	if (why)
		fail("%s: the plan runs the kernel, not cuDNN: %s", what, why);
	return !why;
}

static void sdpa_forward(const sdpa_case &c)
{
	sdpa_data x;
	struct rtc_attention *p = NULL;
	sdpa_inputs(c, x);
	const int dt = c.dt;
	const int64_t dv = x.d.dv;
	void *dy = dev((size_t)(x.rows * dv) * esize(dt)),
	     *dl = c.lse ? dev((size_t)x.rows * 4) : NULL;
	int st = attention(x.d, up(pack(x.q, dt)), up(pack(x.k, dt)), up(pack(x.v, dt)),
	                   c.bias ? up(pack(x.bias, bias_dt(c))) : NULL, dy, dl, &p);
	if (!ran(st, "rtc_attention (cuDNN)") || !on_cudnn(p, "rtc_attention"))
		return;
	std::vector<float> y = unpack(down(dy, (size_t)(x.rows * dv) * esize(dt)), dt);
	compare_l2("cuDNN attention y", y, x.y, 5 * roundoff(dt));
	if (c.lse) {
		std::vector<float> l = unpack(down(dl, (size_t)x.rows * 4), RT_F32);
		compare_l2("cuDNN attention lse", l, x.lse, 1e-5);
		/* fully masked rows: y = 0 exactly */
		for (int64_t r = 0; r < x.rows; r++)
			if (x.lse[(size_t)r] == -INFINITY)
				for (int64_t col = 0; col < dv; col++)
					if (y[(size_t)(r * dv + col)] != 0) {
						fail("cuDNN attention: masked row %lld: y[%lld] = "
						     "%g",
						     (long long)r, (long long)col,
						     y[(size_t)(r * dv + col)]);
						return;
					}
	}
}

static void sdpa_backward(const sdpa_case &c)
{
	sdpa_data x;
	struct rtc_attention *p = NULL;
	sdpa_inputs(c, x);
	const int dt = c.dt;
	const int64_t nq = x.rows * c.d, nk = x.nkv * c.d, ny = x.rows * x.d.dv,
	              nv = x.nkv * x.d.dv;
	std::vector<float> y = rounded(x.y, dt), gy = rounded(rnd_floats(ny, -1, 1), dt),
	                   wq((size_t)nq), wk((size_t)nk), wv((size_t)nv);
	struct rt_attention_desc d32 = x.d;
	d32.dtype = RT_F32;
	EXPECT(rt_attention_grad(ctx, &d32, x.q.data(), x.k.data(), x.v.data(), y.data(),
	                         x.lse.data(), gy.data(), c.bias ? x.bias.data() : NULL, wq.data(),
	                         wk.data(), wv.data()) == RT_OK);
	size_t es = (size_t)esize(dt);
	void *oq = dev((size_t)nq * es), *ok = dev((size_t)nk * es), *ov = dev((size_t)nv * es);
	int st = attention_grad(x.d, up(pack(x.q, dt)), up(pack(x.k, dt)), up(pack(x.v, dt)),
	                        up(pack(y, dt)), up(pack(x.lse, RT_F32)), up(pack(gy, dt)),
	                        c.bias ? up(pack(x.bias, bias_dt(c))) : NULL, oq, ok, ov, &p);
	if (!ran(st, "rtc_attention_grad (cuDNN)") || !on_cudnn(p, "rtc_attention_grad"))
		return;
	const double bound = 8 * roundoff(dt);
	std::vector<float> gq = unpack(down(oq, (size_t)nq * es), dt);
	compare_l2("cuDNN attention dq", gq, wq, bound);
	compare_l2("cuDNN attention dk", unpack(down(ok, (size_t)nk * es), dt), wk, bound);
	compare_l2("cuDNN attention dv", unpack(down(ov, (size_t)nv * es), dt), wv, bound);
	for (int64_t r = 0; r < x.rows; r++) /* fully masked rows: dq = 0 exactly */
		if (x.lse[(size_t)r] == -INFINITY)
			for (int64_t col = 0; col < c.d; col++)
				if (gq[(size_t)(r * c.d + col)] != 0) {
					fail("cuDNN attention: masked row %lld: dq[%lld] = %g",
					     (long long)r, (long long)col,
					     gq[(size_t)(r * c.d + col)]);
					return;
				}
}

static const sdpa_case sdpa_cases[] = {
	/* dt      b  hkv g  lq    lk    d    causal off  bias bcast full  lse */
	{ RT_F16, 2, 2, 1, 256, 256, 64, 0, 0, 0, 0, false, true },
	{ RT_BF16, 1, 4, 1, 300, 300, 128, 0, 0, 0, 0, false, false },
	{ RT_F16, 1, 2, 1, 512, 512, 64, 1, 0, 0, 0, false, true },
	{ RT_BF16, 2, 2, 1, 200, 333, 128, 1, 133, 0, 0, false, true }, /* bottom-right */
	{ RT_F16, 1, 2, 1, 128, 128, 128, 1, 17, 0, 0, false, true },
	{ RT_F16, 2, 2, 1, 128, 160, 64, 0, 0, 1, 0, true, true },     /* a masked row */
	{ RT_BF16, 2, 2, 1, 100, 100, 64, 0, 0, 1, 6u, false, true },  /* key padding */
	{ RT_F16, 1, 2, 4, 256, 256, 128, 1, 0, 0, 0, false, true },   /* GQA */
	{ RT_BF16, 1, 1, 8, 64, 500, 64, 1, 436, 1, 2u, true, false }, /* MQA */
	{ RT_F16, 2, 4, 1, 1, 700, 128, 0, 0, 1, 0, false, true },     /* decode */
	{ RT_BF16, 1, 2, 2, 1000, 1000, 64, 1, 0, 0, 0, false, true },
	{ RT_F16, 1, 4, 2, 200, 240, 128, 1, 40, 1, 1u, false, true, 64 }, /* dk != dv */
	/* mixed precision's FP32 bias beside half inputs, with a masked row */
	{ RT_F16, 2, 2, 1, 128, 160, 64, 0, 0, 1, 0, true, true, 0, RT_F32 },
	{ RT_BF16, 1, 2, 4, 256, 300, 128, 1, 44, 1, 3u, false, true, 0, RT_F32 },
};

static void test_attention_cudnn(void)
{
	allow_cudnn(true);
	for (const sdpa_case &c : sdpa_cases)
		sdpa_forward(c);
	/* an operand less aligned than the plan's 16 bytes runs on the kernel */
	{
		sdpa_case c = sdpa_cases[0];
		sdpa_data x;
		struct rtc_attention *p = NULL;
		sdpa_inputs(c, x);
		bytes hq = pack(x.q, c.dt);
		hq.insert(hq.begin(), 2, 0);
		void *dy = dev((size_t)(x.rows * c.d) * 2);
		if (ran(attention(x.d, (char *)up(hq) + 2, up(pack(x.k, c.dt)), up(pack(x.v, c.dt)),
		                  NULL, dy, NULL, &p),
		        "rtc_attention (misaligned q)")) {
			EXPECT(rtc_attention_fallback(p) == NULL); /* the plan is cuDNN's ... */
			compare_l2("attention y (misaligned q: the kernel)", /* ... the run not */
			           unpack(down(dy, (size_t)(x.rows * c.d) * 2), c.dt), x.y,
			           2 * roundoff(c.dt));
		}
	}
	/* refused by cuDNN, run by the kernel: FP32, softcap */
	{
		struct rt_attention_desc d;
		struct rtc_attention *p;
		memset(&d, 0, sizeof d);
		d.dtype = RT_F32, d.batch = 1, d.q_heads = d.kv_heads = 1, d.lq = d.lk = 8;
		d.dk = d.dv = 64, d.scale = 0.125f;
		EXPECT(rtc_attention_plan(&M, &d, &p) == RT_OK && rtc_attention_fallback(p) &&
		       strstr(rtc_attention_fallback(p), "FP16 or BF16"));
		d.dtype = RT_F16, d.softcap = 20;
		EXPECT(rtc_attention_plan(&M, &d, &p) == RT_OK && rtc_attention_fallback(p) &&
		       strstr(rtc_attention_fallback(p), "softcap"));
		allow_cudnn(false);
		d.softcap = 0;
		EXPECT(rtc_attention_plan(&M, &d, &p) == RT_OK && rtc_attention_fallback(p) &&
		       strstr(rtc_attention_fallback(p), "ONNXC_CUDA_NO_CUDNN_ATTENTION"));
	}
}

static void test_attention_grad_cudnn(void)
{
	allow_cudnn(true);
	for (const sdpa_case &c : sdpa_cases)
		if (c.lq > 1 || c.lk > 1)
			sdpa_backward(c);
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

/* A copy described as rt_copy takes it, run both ways; x and y are sized
 * for the offsets and strides. */
static void copy_run(const struct rt_copy_desc &d, int64_t nsrc, int64_t ndst, int shift)
{
	bytes x((size_t)(nsrc * d.esize)), y((size_t)(ndst * d.esize));
	rnd_fill(x);
	rnd_fill(y);
	bytes want = y;
	EXPECT(rt_copy(ctx, &d, x.data(), want.data()) == RT_OK);
	/* shifted by one element: no alignment beyond the element's */
	char *dx = (char *)dev(x.size() + 16) + shift * d.esize;
	char *dy = (char *)dev(y.size() + 16) + shift * d.esize;
	CUDA_OK(cudaMemcpy(dx, x.data(), x.size(), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(dy, y.data(), y.size(), cudaMemcpyHostToDevice));
	if (ran(rtc_copy(&M, &d, dx, dy), "rtc_copy"))
		compare_bytes("copy", down(dy, y.size()), want);
}

/* A random view of a source tensor into a dense or strided destination
 * (the generator of tests/unit/test_rtc_index.c). */
static void copy_random(bool big)
{
	struct rt_copy_desc d;
	int perm[8];
	int64_t full[8], st[8], s = 1, dfull[8], dst_st[8], step[8], start[8];
	static const int sizes[] = { 1, 2, 3, 4, 8, 16 };
	memset(&d, 0, sizeof d);
	d.esize = sizes[rnd(6)];
	d.rank = (int)rnd_in(big ? 2 : 0, big ? 4 : 6);
	for (int i = 0; i < d.rank; i++) {
		d.dims[i] = big ? rnd_in(1, 4) : rnd(20) == 0 ? 0 : rnd_in(1, 5);
		perm[i] = i;
	}
	if (big) {
		d.dims[rnd(d.rank)] = rnd_in(16, 300);
		d.dims[rnd(d.rank)] = rnd_in(16, 300);
	}
	for (int i = d.rank - 1; i > 0; i--) {
		int j = (int)rnd(i + 1), tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (int i = 0; i < d.rank; i++) {
		step[i] = rnd(4) ? 1 : 2;
		start[i] = rnd(2);
		full[i] = (d.dims[i] ? (d.dims[i] - 1) * step[i] + 1 : 0) + start[i] + rnd(2);
	}
	for (int k = d.rank - 1; k >= 0; k--) {
		st[perm[k]] = s;
		s *= full[perm[k]] ? full[perm[k]] : 1;
	}
	int64_t nsrc = s;
	for (int i = 0; i < d.rank; i++) {
		int kind = (int)rnd(8);
		d.offset += start[i] * st[i];
		if (kind == 0) {
			d.strides[i] = 0;
		} else if (kind == 1 && d.dims[i]) {
			d.strides[i] = -step[i] * st[i];
			d.offset += (d.dims[i] - 1) * step[i] * st[i];
		} else {
			d.strides[i] = step[i] * st[i];
		}
	}
	d.dst_dense = rnd(3) != 0;
	s = 1;
	for (int i = d.rank - 1; i >= 0; i--) {
		dfull[i] = d.dims[i] + (d.dst_dense ? 0 : rnd(3));
		dst_st[i] = s;
		s *= dfull[i] ? dfull[i] : 1;
	}
	for (int i = 0; i < d.rank; i++) {
		d.dst_strides[i] = dst_st[i];
		if (!d.dst_dense && dfull[i] > d.dims[i])
			d.dst_offset += rnd(dfull[i] - d.dims[i] + 1) * dst_st[i];
	}
	copy_run(d, nsrc, s, (int)rnd(2));
}

static void test_copy(void)
{
	for (int i = 0; i < 1500; i++)
		copy_random(false);
	for (int i = 0; i < 150; i++)
		copy_random(true);
	/* a transformer's head split: [64, 128, 12, 64] -> [64, 12, 128, 64] */
	static const int es[] = { 2, 4 };
	for (int e : es) {
		struct rt_copy_desc d;
		memset(&d, 0, sizeof d);
		d.esize = e;
		d.rank = 4;
		int64_t dims[4] = { 64, 12, 128, 64 },
		        strides[4] = { 128 * 12 * 64, 64, 12 * 64, 1 };
		memcpy(d.dims, dims, sizeof dims);
		memcpy(d.strides, strides, sizeof strides);
		d.dst_dense = 1;
		copy_run(d, 64 * 128 * 12 * 64, 64 * 128 * 12 * 64, 0);
		/* and a plain [768, 3072] transpose */
		memset(&d, 0, sizeof d);
		d.esize = e;
		d.rank = 2;
		d.dims[0] = 3072;
		d.dims[1] = 768;
		d.strides[0] = 1;
		d.strides[1] = 3072;
		d.dst_dense = 1;
		copy_run(d, 768 * 3072, 768 * 3072, 0);
	}
	struct rt_copy_desc bad;
	memset(&bad, 0, sizeof bad);
	bad.rank = 1;
	bad.dims[0] = 4;
	EXPECT(rtc_copy(&M, &bad, dev(16), dev(16)) == RT_ERR_ARGUMENT);
}

static void test_tile(void)
{
	for (int cs = 0; cs < 400; cs++) {
		struct rt_tile_desc d;
		int64_t nx = 1, ny = 1;
		memset(&d, 0, sizeof d);
		d.esize = (int)(rnd(2) ? 4 : rnd_in(1, 9));
		d.rank = (int)rnd_in(0, 4);
		for (int i = 0; i < d.rank; i++) {
			d.in_dims[i] = rnd(20) == 0 ? 0 : rnd_in(1, cs < 350 ? 5 : 40);
			d.repeats[i] = rnd(20) == 0 ? 0 : rnd_in(1, 3);
			nx *= d.in_dims[i];
			ny *= d.in_dims[i] * d.repeats[i];
		}
		bytes x((size_t)(nx * d.esize)), want((size_t)(ny * d.esize));
		rnd_fill(x);
		EXPECT(rt_tile(ctx, &d, x.data(), want.data()) == RT_OK);
		void *dx = up(x), *dy = dev(want.size());
		if (ran(rtc_tile(&M, &d, dx, dy), "rtc_tile"))
			compare_bytes("tile", down(dy, want.size()), want);
	}
}

static void rnd_indices(bytes &idx, int dtype, int64_t n, int64_t dim)
{
	idx.assign((size_t)(n * esize(dtype)), 0);
	for (int64_t i = 0; i < n; i++) {
		int64_t k = dim ? rnd_in(-dim, dim - 1) : 0;
		if (dtype == RT_I32)
			((int32_t *)idx.data())[i] = (int32_t)k;
		else
			((int64_t *)idx.data())[i] = k;
	}
}

static void set_index(bytes &idx, int dtype, int64_t i, int64_t k)
{
	if (dtype == RT_I32)
		((int32_t *)idx.data())[i] = (int32_t)k;
	else
		((int64_t *)idx.data())[i] = k;
}

static void gather_case(struct rt_gather_desc d, bool bad_index)
{
	bytes x((size_t)(d.outer * d.axis * d.inner * d.esize)), idx;
	bytes want((size_t)(d.outer * d.nidx * d.inner * d.esize));
	rnd_fill(x);
	rnd_indices(idx, d.index_dtype, d.nidx, d.axis);
	if (bad_index && d.nidx)
		set_index(idx, d.index_dtype, rnd(d.nidx), rnd(2) ? d.axis : -d.axis - 1);
	int status = rt_gather(ctx, &d, x.data(), idx.data(), want.data());
	void *dx = up(x), *di = up(idx), *dy = dev(want.size());
	if (!ran(rtc_gather(&M, &d, dx, di, dy), "rtc_gather"))
		return;
	bytes got = down(dy, want.size());
	EXPECT(take_flag() == (status == RT_ERR_INDEX));
	if (status == RT_OK)
		compare_bytes("gather", got, want);
}

static void gel_case(struct rt_gather_elements_desc d, bool bad_index)
{
	int64_t nx = 1, ni = 1;
	for (int k = 0; k < d.rank; k++) {
		nx *= d.data_dims[k];
		ni *= d.index_dims[k];
	}
	bytes x((size_t)(nx * d.esize)), idx, want((size_t)(ni * d.esize));
	rnd_fill(x);
	rnd_indices(idx, d.index_dtype, ni, d.data_dims[d.axis]);
	if (bad_index && ni)
		set_index(idx, d.index_dtype, rnd(ni), d.data_dims[d.axis] + 2);
	int status = rt_gather_elements(ctx, &d, x.data(), idx.data(), want.data());
	void *dx = up(x), *di = up(idx), *dy = dev(want.size());
	if (!ran(rtc_gather_elements(&M, &d, dx, di, dy), "rtc_gather_elements"))
		return;
	bytes got = down(dy, want.size());
	EXPECT(take_flag() == (status == RT_ERR_INDEX));
	if (status == RT_OK)
		compare_bytes("gather_elements", got, want);
}

static void test_gather(void)
{
	static const int sizes[] = { 1, 2, 3, 4, 8 };
	for (int cs = 0; cs < 600; cs++) {
		struct rt_gather_desc d = { sizes[rnd(5)],
			                    rnd(2) ? RT_I32 : RT_I64,
			                    rnd_in(0, 3),
			                    rnd_in(1, 6),
			                    rnd(3) ? rnd_in(1, 8) : rnd_in(0, 64),
			                    rnd_in(0, 7) };
		gather_case(d, cs % 7 == 0);
	}
	struct rt_gather_desc emb = { 2, RT_I64, 1, 50000, 768, 512 }; /* an embedding lookup */
	gather_case(emb, false);
	emb.esize = 4;
	gather_case(emb, true);
	for (int cs = 0; cs < 600; cs++) {
		struct rt_gather_elements_desc d;
		memset(&d, 0, sizeof d);
		d.esize = (int)(rnd(2) ? 4 : rnd_in(1, 8));
		d.index_dtype = rnd(2) ? RT_I32 : RT_I64;
		d.rank = (int)rnd_in(1, 4);
		d.axis = (int)rnd(d.rank);
		for (int k = 0; k < d.rank; k++) {
			d.data_dims[k] = rnd_in(1, 6);
			d.index_dims[k] = k == d.axis ? rnd_in(0, 7) : rnd_in(0, d.data_dims[k]);
		}
		gel_case(d, cs % 7 == 0);
	}
}

/*
 * ScatterElements: values are small integers (updates for mul: -2, -1, 1,
 * 2) so that every sum and product is exact in each float type and the
 * atomics' order cannot change a bit; reduction none gets distinct
 * indices per column (the order among duplicates is undefined).
 */
static void scel_case(struct rt_scatter_elements_desc d, bool bad_index, bool inplace)
{
	int64_t nx = 1, ni = 1, na = d.index_dims[d.axis], dim = d.data_dims[d.axis];
	int es = esize(d.dtype);
	bool fl = d.dtype == RT_F32 || d.dtype == RT_F16 || d.dtype == RT_BF16 || d.dtype == RT_F64;
	for (int k = 0; k < d.rank; k++) {
		nx *= d.data_dims[k];
		ni *= d.index_dims[k];
	}
	bytes x((size_t)(nx * es)), u((size_t)(ni * es)), idx, want((size_t)(nx * es));
	if (fl) {
		std::vector<float> xv((size_t)nx), uv((size_t)ni);
		for (auto &v : xv)
			v = (float)rnd_in(-16, 16);
		for (auto &v : uv)
			v = d.reduction == RT_SCATTER_MUL
			            ? (float)(rnd(2) ? 1 : 2) * (rnd(2) ? 1 : -1)
			            : (float)rnd_in(-4, 4);
		x = pack(xv, d.dtype);
		u = pack(uv, d.dtype);
	} else {
		rnd_fill(x);
		rnd_fill(u);
	}
	rnd_indices(idx, d.index_dtype, ni, dim);
	if (d.reduction == RT_SCATTER_NONE && na <= dim) /* index a + r_column mod dim */
		for (int64_t f = 0; f < ni; f++) {
			int64_t inner = 1;
			for (int k = d.axis + 1; k < d.rank; k++)
				inner *= d.index_dims[k];
			int64_t a = f / inner % na, col = f / (inner * na) * inner + f % inner;
			set_index(idx, d.index_dtype, f, (a + col * 7) % dim - (col % 2 ? dim : 0));
		}
	if (bad_index && ni)
		set_index(idx, d.index_dtype, rnd(ni), rnd(2) ? dim : -dim - 1);
	int status = rt_scatter_elements(ctx, &d, x.data(), idx.data(), u.data(), want.data());
	void *dx = up(x), *di = up(idx), *du = up(u), *dy = inplace ? dx : dev(want.size());
	if (!ran(rtc_scatter_elements(&M, &d, dx, di, du, dy), "rtc_scatter_elements"))
		return;
	bytes got = down(dy, want.size());
	EXPECT(take_flag() == (status == RT_ERR_INDEX));
	if (status == RT_OK)
		compare_bytes("scatter_elements", got, want);
}

static void test_scatter(void)
{
	static const int dtypes[] = { RT_F32, RT_F16, RT_BF16, RT_F64, RT_I8,  RT_U8,
		                      RT_I16, RT_U16, RT_I32,  RT_U32, RT_I64, RT_U64 };
	for (int cs = 0; cs < 1200; cs++) {
		struct rt_scatter_elements_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = dtypes[rnd(12)];
		d.index_dtype = rnd(2) ? RT_I32 : RT_I64;
		d.reduction = (int)rnd(5);
		d.rank = (int)rnd_in(1, 4);
		d.axis = (int)rnd(d.rank);
		for (int k = 0; k < d.rank; k++) {
			d.data_dims[k] = rnd_in(1, 6);
			d.index_dims[k] = k == d.axis ? rnd_in(0, d.reduction ? 9 : d.data_dims[k])
			                              : rnd_in(0, d.data_dims[k]);
		}
		scel_case(d, cs % 7 == 0, cs % 5 == 0);
	}
	/* embedding gradients: 4096 rows added into a [1000, 256] table */
	static const int grads[] = { RT_F32, RT_F16, RT_BF16, RT_F64 };
	for (int dt : grads) {
		struct rt_scatter_elements_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = dt;
		d.index_dtype = RT_I64;
		d.reduction = RT_SCATTER_ADD;
		d.rank = 2;
		d.data_dims[0] = 1000;
		d.data_dims[1] = d.index_dims[1] = 256;
		d.index_dims[0] = 4096;
		scel_case(d, false, false);
	}
	struct rt_scatter_elements_desc bad = {
		RT_BOOL, RT_I64, RT_SCATTER_ADD, 1, 0, { 4 }, { 4 }
	};
	EXPECT(rtc_scatter_elements(&M, &bad, dev(4), dev(32), dev(4), dev(4)) == RT_ERR_ARGUMENT);
}

static void test_pad_trilu(void)
{
	for (int cs = 0; cs < 800; cs++) {
		struct rt_pad_desc d;
		int64_t nx = 1, ny = 1;
		bool ok = true;
		memset(&d, 0, sizeof d);
		d.esize = (int)rnd_in(1, 8);
		d.mode = (int)rnd(3);
		d.rank = (int)rnd_in(0, 4);
		for (int i = 0; i < 8; i++)
			d.value[i] = (unsigned char)rnd_u64();
		for (int k = 0; k < d.rank; k++) {
			d.in_dims[k] = rnd(15) == 0 ? 0 : rnd_in(1, cs < 700 ? 5 : 60);
			d.pads[k] = rnd_in(-2, rnd(5) ? 3 : 9);
			d.pads[d.rank + k] = rnd_in(-2, rnd(5) ? 3 : 9);
			int64_t out = d.in_dims[k] + d.pads[k] + d.pads[d.rank + k];
			ok = ok && out >= 0;
			nx *= d.in_dims[k];
			ny *= out > 0 ? out : 0;
		}
		if (!ok)
			continue;
		bytes x((size_t)(nx * d.esize)), want((size_t)(ny * d.esize));
		rnd_fill(x);
		EXPECT(rt_pad(ctx, &d, x.data(), want.data()) == RT_OK);
		void *dx = up(x), *dy = dev(want.size());
		if (ran(rtc_pad(&M, &d, dx, dy), "rtc_pad"))
			compare_bytes("pad", down(dy, want.size()), want);
	}
	for (int cs = 0; cs < 400; cs++) {
		struct rt_trilu_desc d = { (int)rnd_in(1, 8),
			                   (int)rnd(2),
			                   rnd_in(0, 3),
			                   rnd_in(0, cs < 350 ? 7 : 300),
			                   rnd_in(0, cs < 350 ? 7 : 300),
			                   rnd_in(-9, 9) };
		if (rnd(10) == 0)
			d.k = rnd(2) ? INT64_MAX : INT64_MIN;
		bool in_place = rnd(2);
		bytes x((size_t)(d.batch * d.rows * d.cols * d.esize)), want(x.size());
		rnd_fill(x);
		EXPECT(rt_trilu(ctx, &d, x.data(), want.data()) == RT_OK);
		void *dx = up(x), *dy = in_place ? dx : dev(x.size());
		if (ran(rtc_trilu(&M, &d, dx, dy), "rtc_trilu"))
			compare_bytes("trilu", down(dy, want.size()), want);
	}
}

/* ------------------------------------------------------------------------ */
/* Resize                                                                   */
/* ------------------------------------------------------------------------ */

static void resize_run(const struct rt_resize_desc &d0)
{
	int64_t nx = 1, ny = 1;
	for (int i = 0; i < d0.rank; i++) {
		nx *= d0.in_dims[i];
		ny *= d0.out_dims[i];
	}
	std::vector<float> x = rnd_floats(nx, -1, 1), want((size_t)ny);
	FOR_IOS(t)
	{
		if (t.dt == RT_F64)
			continue; /* the CPU takes FP32 only, and so do the kernels */
		std::vector<float> xr = rounded(x, t.dt);
		struct rt_resize_desc d = d0;
		EXPECT(rt_resize(ctx, &d, xr.data(), want.data()) == RT_OK);
		d.dtype = t.dt;
		d.ydtype = t.yt;
		void *dx = up(pack(x, t.dt)), *dy = dev((size_t)ny * esize(t.yt));
		if (!ran(rtc_resize(&M, &d, dx, dy), "rtc_resize"))
			continue;
		std::vector<float> got = unpack(down(dy, (size_t)ny * esize(t.yt)), t.yt);
		if (d.mode == RT_RESIZE_NEAREST && t.dt == RT_F32 && t.yt == RT_F32) {
			if (got != want)
				fail("resize nearest (coord %d, rule %d): not the same elements",
				     d.coord, d.nearest);
		} else {
			compare("resize", got, want, t.yt, 4);
		}
	}
}

static void test_resize(void)
{
	static const double factors[] = { 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 1.0 / 3 };
	for (int cs = 0; cs < 300; cs++) {
		struct rt_resize_desc d;
		memset(&d, 0, sizeof d);
		d.dtype = RT_F32;
		d.mode = (int)rnd(3);
		d.coord = (int)rnd(6);
		d.nearest = (int)rnd(4);
		d.rank = (int)rnd_in(1, 4);
		d.cubic_a = rnd(2) ? -0.75f : -0.5f;
		d.exclude_outside = (int)rnd(2);
		d.extrapolation = (float)rnd_in(-3, 3);
		for (int i = 0; i < d.rank; i++) {
			int kind = (int)rnd(4);
			d.in_dims[i] = rnd(40) == 0 ? 0 : rnd_in(1, d.rank > 2 ? 6 : 20);
			if (kind == 0) {
				d.out_dims[i] = d.in_dims[i];
				d.scales[i] = 1;
			} else if (kind == 1) {
				d.out_dims[i] = rnd_in(1, 30);
				d.scales[i] = d.in_dims[i]
				                      ? (double)d.out_dims[i] / (double)d.in_dims[i]
				                      : 1;
			} else {
				d.scales[i] = factors[rnd(10)];
				d.out_dims[i] = (int64_t)floor((double)d.in_dims[i] * d.scales[i]);
			}
			d.roi[i] = (float)(rnd_unit() * 0.6 - 0.1);
			d.roi[d.rank + i] = (float)(rnd_unit() * 0.6 + 0.5);
		}
		resize_run(d);
	}
	/* an image: 2x3x224x224 -> 448x448, every mode */
	for (int mode = 0; mode < 3; mode++) {
		struct rt_resize_desc d;
		memset(&d, 0, sizeof d);
		int64_t in[4] = { 2, 3, 224, 224 }, out[4] = { 2, 3, 448, 448 };
		d.dtype = RT_F32;
		d.mode = mode;
		d.coord = mode == RT_RESIZE_NEAREST ? RT_COORD_ASYMMETRIC : RT_COORD_HALF_PIXEL;
		d.nearest = RT_NEAREST_FLOOR;
		d.rank = 4;
		d.cubic_a = -0.75f;
		memcpy(d.in_dims, in, sizeof in);
		memcpy(d.out_dims, out, sizeof out);
		d.scales[0] = d.scales[1] = 1;
		d.scales[2] = d.scales[3] = 2;
		resize_run(d);
	}
}

/* ------------------------------------------------------------------------ */
/* Conversions, epilogue                                                    */
/* ------------------------------------------------------------------------ */

static bool same_bits(uint32_t a, uint32_t b, int dt)
{
	uint32_t exp = dt == RT_F16 ? 0x7c00 : dt == RT_BF16 ? 0x7f80 : 0x7f800000;
	uint32_t man = dt == RT_F16 ? 0x3ff : dt == RT_BF16 ? 0x7f : 0x7fffff;
	bool na = (a & exp) == exp && (a & man), nb = (b & exp) == exp && (b & man);
	return na || nb ? na && nb : a == b;
}

static void convert_check(const bytes &src, int st, int dt, int shift)
{
	int64_t n = (int64_t)(src.size() / (size_t)esize(st)) - shift;
	bytes want((size_t)(n * esize(dt)));
	EXPECT(rt_convert(ctx, want.data(), dt, src.data() + shift * esize(st), st, n) == RT_OK);
	char *ds = (char *)up(src) + shift * esize(st);
	char *dd = (char *)dev(want.size() + 16) + shift * esize(dt);
	if (!ran(rtc_convert(&M, dd, dt, ds, st, n), "rtc_convert"))
		return;
	bytes got = down(dd, want.size());
	int64_t bad = 0;
	for (int64_t i = 0; i < n; i++) {
		uint32_t g = 0, w = 0;
		memcpy(&g, &got[(size_t)(i * esize(dt))], (size_t)esize(dt));
		memcpy(&w, &want[(size_t)(i * esize(dt))], (size_t)esize(dt));
		if (!same_bits(g, w, dt) && bad++ < 5)
			fprintf(stderr, "%s: convert %d->%d [%lld]: %#x, want %#x\n", current, st,
			        dt, (long long)i, g, w);
	}
	if (bad)
		fail("convert %d -> %d: %lld differ", st, dt, (long long)bad);
}

static void test_convert(void)
{
	bytes halves(65536 * 2), floats;
	for (uint32_t i = 0; i < 65536; i++)
		memcpy(&halves[i * 2], &i, 2);
	for (int shift = 0; shift < 2; shift++) {
		convert_check(halves, RT_F16, RT_F32, shift);
		convert_check(halves, RT_BF16, RT_F32, shift);
	}
	/* every 2^16-th pattern plus neighbourhoods of the rounding boundaries */
	for (uint64_t u = 0; u < (1ull << 32); u += 65521) {
		uint32_t v = (uint32_t)u;
		floats.insert(floats.end(), (unsigned char *)&v, (unsigned char *)&v + 4);
	}
	for (uint32_t e = 0; e < 256; e++)
		for (uint32_t k = 0; k < 64; k++) {
			uint32_t v = (e << 23) | (0x1000 - 32 + k) | (k & 1 ? 0x80000000u : 0);
			uint32_t w = (e << 23) | (0x8000 - 32 + k);
			floats.insert(floats.end(), (unsigned char *)&v, (unsigned char *)&v + 4);
			floats.insert(floats.end(), (unsigned char *)&w, (unsigned char *)&w + 4);
		}
	for (int shift = 0; shift < 2; shift++) {
		convert_check(floats, RT_F32, RT_F16, shift);
		convert_check(floats, RT_F32, RT_BF16, shift);
	}
	EXPECT(rtc_convert(&M, dev(8), RT_F16, dev(8), RT_BF16, 2) == RT_ERR_ARGUMENT);
	EXPECT(rtc_convert(&M, dev(8), RT_F32, dev(8), RT_F32, 2) == RT_ERR_ARGUMENT);
	EXPECT(rtc_convert(&M, NULL, RT_F32, NULL, RT_F16, 0) == RT_OK);
}

/* rt_gemm.c's activations, in double. */
static double act_ref(const struct rt_epilogue &ep, double v)
{
	double a = ep.alpha, b = ep.beta, t;
	switch (ep.act) {
	case RT_ACT_RELU: return v < 0 ? 0 : v;
	case RT_ACT_LEAKY_RELU: return v < 0 ? a * v : v;
	case RT_ACT_CLIP: t = v < a ? a : v; return t > b ? b : t;
	case RT_ACT_SIGMOID: return 1 / (1 + exp(-v));
	case RT_ACT_TANH: return tanh(v);
	case RT_ACT_HARD_SIGMOID:
		t = b + v * a;
		t = t < 0 ? 0 : t;
		return t > 1 ? 1 : t;
	case RT_ACT_HARD_SWISH:
		t = 0.5 + v / 6;
		t = t < 0 ? 0 : t;
		return (t > 1 ? 1 : t) * v;
	default: return v;
	}
}

static void epilogue_float(int yt, int bt, int rt, int act, int64_t outer, int64_t ch,
                           int64_t inner, bool bias, bool res)
{
	struct rt_epilogue ep = { act, act == RT_ACT_CLIP ? -0.5f : 0.2f,
		                  act == RT_ACT_CLIP ? 0.7f : 0.5f, res };
	int64_t n = outer * ch * inner;
	std::vector<float> y = rnd_floats(n, -4, 4), b = rnd_floats(ch, -1, 1),
	                   r = rnd_floats(n, -1, 1), want((size_t)n);
	std::vector<float> yr = rounded(y, yt), br = rounded(b, bt), rr = rounded(r, rt);
	for (int64_t i = 0; i < n; i++) {
		double v = yr[(size_t)i];
		if (bias)
			v += br[(size_t)(i / inner % ch)];
		if (res)
			v += rr[(size_t)i];
		want[(size_t)i] = (float)act_ref(ep, v);
	}
	void *dy = up(pack(y, yt)), *db = up(pack(b, bt)), *dr = up(pack(r, rt));
	/* without a bias, channels and inner need not be given */
	int64_t c2 = bias ? ch : 0, i2 = bias ? inner : 0, o2 = bias ? outer : n;
	if (ran(rtc_epilogue(&M, &ep, yt, dy, bias ? db : NULL, bt, res ? dr : NULL, rt, o2, c2,
	                     i2),
	        "rtc_epilogue"))
		compare("epilogue", unpack(down(dy, (size_t)n * esize(yt)), yt), want, yt, 4);
}

/* Integers: wrapping adds (full-range values without an activation), an
 * activation in double saturated to int64 and truncated; sigmoid and tanh
 * may differ by one where libm and the device round their last bit apart. */
static void epilogue_int(int dt, int act, bool bias, bool res)
{
	struct rt_epilogue ep = { act, -3.0f, 5.0f, res };
	int64_t outer = 3, ch = 5, inner = 7, n = outer * ch * inner;
	bytes y((size_t)(n * esize(dt))), b((size_t)(ch * esize(dt))), r(y.size()), want(y.size());
	rnd_fill(y);
	rnd_fill(b);
	rnd_fill(r);
	for (bytes *t : { &y, &b, &r })
		for (size_t i = 0; act != RT_ACT_NONE && i < t->size(); i += (size_t)esize(dt)) {
			int64_t v = rnd_in(-20, 20);
			memcpy(&(*t)[i], &v, (size_t)esize(dt));
		}
	for (int64_t i = 0; i < n; i++) {
		int64_t v = 0, bv = 0, rv = 0;
		memcpy(&v, &y[(size_t)(i * esize(dt))], (size_t)esize(dt));
		memcpy(&bv, &b[(size_t)(i / inner % ch * esize(dt))], (size_t)esize(dt));
		memcpy(&rv, &r[(size_t)(i * esize(dt))], (size_t)esize(dt));
		uint64_t u = (uint64_t)v + (bias ? (uint64_t)bv : 0) + (res ? (uint64_t)rv : 0);
		v = dt == RT_I32 ? (int64_t)(int32_t)u : (int64_t)u;
		if (act != RT_ACT_NONE)
			v = (int64_t)act_ref(ep, (double)v); /* small: no saturation */
		memcpy(&want[(size_t)(i * esize(dt))], &v, (size_t)esize(dt));
	}
	void *dy = up(y), *db = up(b), *dr = up(r);
	if (!ran(rtc_epilogue(&M, &ep, dt, dy, bias ? db : NULL, dt, res ? dr : NULL, dt, outer, ch,
	                      inner),
	         "rtc_epilogue int"))
		return;
	bytes got = down(dy, y.size());
	bool loose = act == RT_ACT_SIGMOID || act == RT_ACT_TANH;
	for (int64_t i = 0; i < n; i++) {
		int64_t g = 0, w = 0;
		memcpy(&g, &got[(size_t)(i * esize(dt))], (size_t)esize(dt));
		memcpy(&w, &want[(size_t)(i * esize(dt))], (size_t)esize(dt));
		if (dt == RT_I32) {
			g = (int32_t)g;
			w = (int32_t)w;
		}
		if (g != w && !(loose && llabs(g - w) == 1)) {
			fail("epilogue int act %d dtype %d [%lld]: %lld, want %lld", act, dt,
			     (long long)i, (long long)g, (long long)w);
			break;
		}
	}
}

static void test_epilogue(void)
{
	static const int f32ish[] = { RT_F32, RT_F16, RT_BF16 };
	for (int act = RT_ACT_NONE; act <= RT_ACT_HARD_SWISH; act++) {
		for (int yt : f32ish)
			for (int bt : f32ish) {
				epilogue_float(yt, bt, bt, act, 3, 5, 7, true, true);
				epilogue_float(yt, bt, yt, act, 2, 64, 3000, true, false);
				epilogue_float(yt, bt, bt, act, 4, 1, 1000, false, true);
			}
		epilogue_float(RT_F64, RT_F64, RT_F64, act, 3, 5, 7, true, true);
		epilogue_int(RT_I32, act, true, true);
		epilogue_int(RT_I64, act, act % 2, true);
	}
	struct rt_epilogue ep = { RT_ACT_RELU, 0, 0, 0 };
	EXPECT(rtc_epilogue(&M, &ep, RT_F32, dev(64), dev(64), RT_F64, NULL, 0, 1, 4, 1) ==
	       RT_ERR_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* CUDA Graph capture                                                       */
/* ------------------------------------------------------------------------ */

/* The attention steps' plans, made before any capture (as NAME_create
 * does): the kernel (FP16 writing FP32, which cuDNN does not take) and
 * cuDNN's fused attention (FP16 in and out, GQA, causal with an offset, a
 * bias broadcast over heads: cudnnBackendExecute must be capturable). */
static struct rtc_attention *graph_kernel_plan, *graph_cudnn_plan;

static void graph_plans(void)
{
	struct rt_attention_desc at;
	memset(&at, 0, sizeof at);
	at.dtype = RT_F16;
	at.mask = RT_ATTN_BIAS;
	at.causal = 1;
	at.causal_offset = 10;
	at.batch = 1, at.q_heads = 4, at.kv_heads = 2, at.lq = 50, at.lk = 60, at.dk = 64;
	at.dv = 32;
	at.mask_strides[2] = 60, at.mask_strides[3] = 1;
	at.scale = 0.125f;
	at.ydtype = RT_F32;
	allow_cudnn(true);
	EXPECT(rtc_attention_plan(&M, &at, &graph_kernel_plan) == RT_OK);
	at.dv = 64;
	at.ydtype = RT_F16;
	EXPECT(rtc_attention_plan(&M, &at, &graph_cudnn_plan) == RT_OK);
	on_cudnn(graph_cudnn_plan, "the captured cuDNN attention");
	ensure_workspace();
}

/* Steps of every kind, run directly and then captured and replayed: the
 * same bytes (nothing in them may synchronize or allocate). */
static void steps(void *const *b, int *status)
{
	struct rt_softmax_desc sd = { RT_F16, RT_SOFTMAX, 64, 1000, 1, RT_F32 };
	struct rt_layernorm_desc ld = { RT_BF16, 64, 1000, 1e-5f, 0 };
	struct rt_reduce_desc rd = { RT_F32, RT_REDUCE_MEAN, 2, { 64, 1000 }, 2u, 0 };
	struct rt_reduce_desc ed = { RT_F32, RT_REDUCE_SUM, 2, { 64, 0 }, 2u, RT_F16 };
	struct rt_copy_desc cd;
	struct rt_gather_desc gd = { 4, RT_I64, 1, 1000, 64, 50 };
	struct rt_pool_desc pd;
	struct rt_arg_desc ad = { RT_F32, 0, 0, 64, 1000, 1 };
	struct rt_cumsum_desc cs = { RT_F32, 0, 1, 64, 1000, 1, 0 };
	struct rt_topk_desc tk = { RT_F32, 0, 64, 1000, 1, 8 };
	struct rt_linattn_desc la = { RT_F32, 1, 0, 2, 50, 2, 2, 64, 32, 2, 0, 0, 0.125f };
	struct rt_resize_desc rz;
	struct rt_epilogue ep = { RT_ACT_SIGMOID, 0, 0, 1 };
	memset(&cd, 0, sizeof cd);
	cd.esize = 4;
	cd.rank = 2;
	cd.dims[0] = 1000;
	cd.dims[1] = 64;
	cd.strides[0] = 1;
	cd.strides[1] = 1000;
	cd.dst_dense = 1;
	int64_t in[2] = { 250, 256 }, k[2] = { 3, 3 }, one[3] = { 1, 1, 1 }, p[2] = { 1, 1 };
	pd = pool_desc(RT_POOL_MAX, 2, 1, 1, in, k, one, one, p, p, 0);
	memset(&rz, 0, sizeof rz);
	rz.dtype = RT_F32;
	rz.mode = RT_RESIZE_LINEAR;
	rz.rank = 2;
	rz.in_dims[0] = 64;
	rz.in_dims[1] = 1000;
	rz.out_dims[0] = 128;
	rz.out_dims[1] = 500;
	rz.scales[0] = 2;
	rz.scales[1] = 0.5;
	int s = RT_OK;
	s = s ? s : rtc_softmax(&M, &sd, b[0], b[1]);
	s = s ? s : rtc_layernorm(&M, &ld, b[0], b[2], b[2], b[3], (float *)b[4], NULL);
	s = s ? s : rtc_reduce(&M, &rd, b[1], b[5]);
	s = s ? s : rtc_reduce(&M, &ed, b[1], b[5]);
	s = s ? s : rtc_copy(&M, &cd, b[1], b[6]);
	s = s ? s : rtc_gather(&M, &gd, b[6], b[7], b[8]);
	s = s ? s : rtc_pool(&M, &pd, b[6], b[9], (int64_t *)b[10]);
	s = s ? s : rtc_arg(&M, &ad, b[1], (int64_t *)b[11]);
	s = s ? s : rtc_cumsum(&M, &cs, b[1], b[12]);
	s = s ? s : rtc_topk(&M, &tk, b[1], b[15], (int64_t *)b[14]);
	s = s ? s
	      : rtc_linear_attention(&M, &la, b[1], b[2], b[3], NULL, b[12], NULL, NULL,
	                             (char *)b[15] + 4096, (char *)b[15] + 65536);
	s = s ? s
	      : rtc_attention(&M, graph_kernel_plan, b[0], b[2], b[0], b[2], (char *)b[4] + 4096,
	                      (char *)b[4] + 262144);
	s = s ? s
	      : rtc_attention(&M, graph_cudnn_plan, b[0], b[2], b[0], b[2], (char *)b[3] + 131072,
	                      (char *)b[3] + 262144);
	s = s ? s : rtc_resize(&M, &rz, b[1], b[13]);
	s = s ? s : rtc_convert(&M, b[14], RT_F16, b[13], RT_F32, 128 * 500);
	s = s ? s : rtc_epilogue(&M, &ep, RT_F32, b[13], b[2], RT_BF16, b[1], RT_F32, 128, 1, 500);
	*status = s;
}

static void test_graph(void)
{
	const size_t size = 64 * 1000 * 8;
	void *b[16];
	std::vector<bytes> direct(16);
	bytes x(size), idx(50 * 8);
	rnd_fill(x);
	for (size_t i = 0; i < x.size(); i += 2) /* finite FP16 / BF16 values */
		x[i + 1] &= 0x3f;
	for (int i = 0; i < 50; i++)
		((int64_t *)idx.data())[i] = rnd(1000);
	graph_plans();
	for (int run = 0; run < 2; run++) {
		int status;
		for (int i = 0; i < 16; i++)
			b[i] = i == 0 ? up(x) : i == 2 ? up(x) : i == 7 ? up(idx) : dev(size);
		if (run == 0) {
			steps(b, &status);
			EXPECT(ran(status, "steps"));
		} else {
			cudaGraph_t graph;
			cudaGraphExec_t exec;
			CUDA_OK(cudaStreamBeginCapture(M.stream, cudaStreamCaptureModeGlobal));
			steps(b, &status);
			CUDA_OK(cudaStreamEndCapture(M.stream, &graph));
			EXPECT(status == RT_OK);
			CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
			CUDA_OK(cudaGraphLaunch(exec, M.stream));
			CUDA_OK(cudaStreamSynchronize(M.stream));
			CUDA_OK(cudaGraphExecDestroy(exec));
			CUDA_OK(cudaGraphDestroy(graph));
		}
		for (int i = 0; i < 16; i++) {
			bytes got = down(b[i], size);
			if (run == 0)
				direct[i] = got;
			else
				compare_bytes("graph replay", got, direct[i]);
		}
	}
	EXPECT(take_flag() == 0);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

struct test {
	const char *name;
	void (*fn)(void);
};

/* --attention-speed (scripts/gpu-check section 7): attention forward and
 * backward in BF16, batch 1, 16 heads, on cuDNN's fused attention and on the
 * portable kernels side by side, one JSON object per case: the median of 5
 * timed calls (CUDA events) after one warm-up, TFLOP/s as 4 B H Lq Lk d over
 * the unmasked scores (2.5 times that for the backward, FlashAttention's
 * convention); null where a path did not run (cudnn_note says why cuDNN did
 * not). A path's longer lengths are not tried once a call at a shorter one
 * took over 2 s. Inputs are zeros: speed only. */
template <class F> static float median_ms(F call, bool *slow)
{
	std::vector<float> t;
	cudaEvent_t e0, e1;
	CUDA_OK(cudaEventCreate(&e0));
	CUDA_OK(cudaEventCreate(&e1));
	for (int r = 0; r < 6; r++) {
		float x;
		CUDA_OK(cudaEventRecord(e0, M.stream));
		int st = call();
		CUDA_OK(cudaEventRecord(e1, M.stream));
		CUDA_OK(cudaEventSynchronize(e1));
		if (st != RT_OK) {
			printf("attention speed: status %d: %s\n", st, M.err);
			t.clear();
			break;
		}
		CUDA_OK(cudaEventElapsedTime(&x, e0, e1));
		if (r)
			t.push_back(x);
		if (x > 2000)
			*slow = true;
	}
	CUDA_OK(cudaEventDestroy(e0));
	CUDA_OK(cudaEventDestroy(e1));
	if (t.empty())
		return -1;
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

static void json_ms(const char *key, float ms, double flops)
{
	if (ms > 0)
		printf(", \"%s_ms\": %.4f, \"%s_tflops\": %.3f", key, ms, key, flops / (ms * 1e9));
	else
		printf(", \"%s_ms\": null, \"%s_tflops\": null", key, key);
}

static int attention_speed(void)
{
	const int64_t lens[] = { 512, 1024, 2048, 4096, 8192, 16384 }, heads = 16;
	for (int64_t d : { 64, 128 })
		for (int causal = 0; causal < 2; causal++) {
			bool slow[2] = { false, false }; /* cuDNN, kernel */
			for (int64_t L : lens) {
				if (slow[0] && slow[1])
					break;
				struct rt_attention_desc a = {};
				size_t n = (size_t)(heads * L * d), bytes = n * 2;
				void *q, *k, *v, *y, *dy, *dq, *dk, *dv, *lse;
				float ms[2][2] = { { -1, -1 }, { -1, -1 } };
				const char *note = NULL;
				char why[256] = "";
				a.dtype = RT_BF16;
				a.causal = causal;
				a.batch = 1;
				a.q_heads = a.kv_heads = heads;
				a.lq = a.lk = L;
				a.dk = a.dv = d;
				a.scale = 1.0f / sqrtf((float)d);
				for (void **p : { &q, &k, &v, &y, &dy, &dq, &dk, &dv }) {
					CUDA_OK(cudaMalloc(p, bytes));
					CUDA_OK(cudaMemset(*p, 0, bytes));
				}
				CUDA_OK(cudaMalloc(&lse, (size_t)(heads * L) * sizeof(float)));
				for (int path = 0; path < 2; path++) {
					struct rtc_attention *fp, *bp;
					if (slow[path])
						continue;
					allow_cudnn(path == 0);
					if (rtc_attention_plan(&M, &a, &fp) ||
					    rtc_attention_grad_plan(&M, &a, &bp)) {
						printf("attention speed: plan: %s\n", M.err);
						return 1;
					}
					if (path == 0 && (note = rtc_attention_fallback(fp))) {
						snprintf(why, sizeof why, "forward: %s", note);
						continue;
					}
					if (path == 0 && (note = rtc_attention_fallback(bp)))
						snprintf(why, sizeof why, "backward: %s", note);
					ensure_workspace();
					ms[path][0] = median_ms(
					        [&] {
						        return rtc_attention(&M, fp, q, k, v, NULL,
						                             y, lse);
					        },
					        &slow[path]);
					/* (a cuDNN plan that fell back times nothing for cuDNN) */
					if (path == 1 || !rtc_attention_fallback(bp))
						ms[path][1] = median_ms(
						        [&] {
							        return rtc_attention_grad(
							                &M, bp, q, k, v, y, lse, dy,
							                NULL, dq, dk, dv);
						        },
						        &slow[path]);
				}
				close_plans();
				double scores = causal ? (double)L * (L + 1) / 2 : (double)L * L;
				double flops = 4.0 * heads * d * scores;
				printf("{\"d\": %lld, \"causal\": %d, \"L\": %lld", (long long)d,
				       causal, (long long)L);
				json_ms("cudnn_fwd", ms[0][0], flops);
				json_ms("cudnn_bwd", ms[0][1], 2.5 * flops);
				json_ms("kernel_fwd", ms[1][0], flops);
				json_ms("kernel_bwd", ms[1][1], 2.5 * flops);
				if (*why) {
					printf(", \"cudnn_note\": \"");
					for (const char *c = why; *c; c++) /* a JSON string */
						if (*c != '"' && *c != '\\' &&
						    (unsigned char)*c >= 32)
							putchar(*c);
					printf("\"");
				}
				printf("}\n");
				fflush(stdout);
				for (void *p : { q, k, v, y, dy, dq, dk, dv, lse })
					CUDA_OK(cudaFree(p));
			}
		}
	return 0;
}

/* --rnn-speed (scripts/gpu-check): an FP32 LSTM forward (one direction,
 * full lengths) at a few sizes, the whole sequence captured into a CUDA
 * Graph and replayed: the median of 5 replays after one warm-up, one JSON
 * object per size; us_per_step is the time over seq. Inputs are zeros:
 * speed only. */
static int rnn_speed(void)
{
	static const int64_t sizes[][4] = { /* seq, batch, input, hidden */
		                            { 100, 1, 128, 128 },
		                            { 100, 16, 256, 256 },
		                            { 100, 64, 512, 512 },
		                            { 50, 64, 1024, 1024 },
		                            { 200, 256, 256, 256 }
	};
	for (const auto &z : sizes) {
		rnn_spec c = { RT_RNN_LSTM, 1, 0, z[0], z[1], z[2], z[3], { -1 }, 0, 0, 0, false };
		struct rt_rnn_desc d = rnn_desc(c);
		struct rtc_rnn *plan;
		int64_t H = z[3], T = z[0], B = z[1], I = z[2];
		if (rtc_rnn_plan(&M, &d, &plan) != RT_OK) {
			printf("rnn speed: %s\n", M.err);
			return 1;
		}
		ensure_workspace();
		void *x = dev((size_t)(T * B * I) * 4), *w = dev((size_t)(4 * H * I) * 4),
		     *r = dev((size_t)(4 * H * H) * 4), *b = dev((size_t)(8 * H) * 4),
		     *l = dev((size_t)B * 4), *h0 = dev((size_t)(B * H) * 4),
		     *c0 = dev((size_t)(B * H) * 4), *p = dev((size_t)(3 * H) * 4),
		     *y = dev((size_t)(T * B * H) * 4), *yh = dev((size_t)(B * H) * 4),
		     *yc = dev((size_t)(B * H) * 4), *ws = dev(rt_rnn_workspace(&d));
		std::vector<int32_t> lens((size_t)B, (int32_t)T);
		CUDA_OK(cudaMemcpy(l, lens.data(), (size_t)B * 4, cudaMemcpyHostToDevice));
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CUDA_OK(cudaStreamBeginCapture(M.stream, cudaStreamCaptureModeGlobal));
		int st = rtc_rnn(&M, plan, x, w, r, b, l, h0, c0, p, y, yh, yc, ws);
		CUDA_OK(cudaStreamEndCapture(M.stream, &g));
		if (st != RT_OK) {
			printf("rnn speed: status %d: %s\n", st, M.err);
			return 1;
		}
		CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
		bool slow = false;
		float ms = median_ms(
		        [&] {
			        return (int)cudaGraphLaunch(ge, M.stream) == 0 ? RT_OK
			                                                       : RT_ERR_DEVICE;
		        },
		        &slow);
		double flops = 2.0 * 4 * H * (double)T * B * (I + H);
		printf("{\"seq\": %lld, \"batch\": %lld, \"input\": %lld, \"hidden\": %lld",
		       (long long)T, (long long)B, (long long)I, (long long)H);
		json_ms("lstm_fwd", ms, flops);
		printf(", \"us_per_step\": %.2f}\n", ms > 0 ? 1000.0 * ms / (double)T : -1.0);
		fflush(stdout);
		CUDA_OK(cudaGraphExecDestroy(ge));
		CUDA_OK(cudaGraphDestroy(g));
		close_plans();
		for (void *q : allocations)
			CUDA_OK(cudaFree(q));
		allocations.clear();
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const test tests[] = { { "pool", test_pool },
		                      { "softmax", test_softmax },
		                      { "norms", test_norms },
		                      { "reduce", test_reduce },
		                      { "arg", test_arg },
		                      { "cumsum", test_cumsum },
		                      { "copy", test_copy },
		                      { "tile", test_tile },
		                      { "gather", test_gather },
		                      { "pad_trilu", test_pad_trilu },
		                      { "resize", test_resize },
		                      { "convert", test_convert },
		                      { "epilogue", test_epilogue },
		                      { "graph", test_graph },
		                      { "scatter", test_scatter },
		                      { "topk", test_topk },
		                      { "linattn", test_linattn },
		                      { "rnn", test_rnn },
		                      { "attention", test_attention },
		                      { "attention_grad", test_attention_grad },
		                      { "attention_cudnn", test_attention_cudnn },
		                      { "attention_grad_cudnn", test_attention_grad_cudnn } };
	int ndev = 0;
	cudaDeviceProp prop;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	printf("%s, sm_%d%d, %d multiprocessors\n", prop.name, prop.major, prop.minor,
	       prop.multiProcessorCount);
	CUDA_OK(cudaStreamCreateWithFlags(&M.stream, cudaStreamNonBlocking));
	M.sm_count = prop.multiProcessorCount;
	CUDA_OK(cudaMalloc(&M.flag, sizeof(int)));
	CUDA_OK(cudaMemset(M.flag, 0, sizeof(int)));
	if (cudnnCreate(&M.dnn) != CUDNN_STATUS_SUCCESS ||
	    cudnnSetStream(M.dnn, M.stream) != CUDNN_STATUS_SUCCESS) {
		printf("cudnnCreate failed: attention runs on the kernels only\n");
		M.dnn = NULL;
	} else
		printf("cuDNN %zu\n", cudnnGetVersion());
	if (rt_ctx_create(&ctx, 0) != RT_OK)
		return 1;
	if (cublasLtCreate(&M.lt) != CUBLAS_STATUS_SUCCESS) {
		printf("cublasLtCreate failed\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "--attention-speed"))
		return attention_speed();
	if (argc > 1 && !strcmp(argv[1], "--rnn-speed"))
		return rnn_speed();
	for (const test &t : tests) {
		if (argc > 1 && !strstr(t.name, argv[1]))
			continue;
		int before = failures;
		current = t.name;
		t.fn();
		close_plans();
		for (void *p : allocations)
			CUDA_OK(cudaFree(p));
		allocations.clear();
		printf("%-10s %s\n", t.name, failures == before ? "ok" : "FAILED");
		fflush(stdout);
	}
	rt_ctx_destroy(ctx);
	if (M.dnn)
		cudnnDestroy(M.dnn);
	cublasLtDestroy(M.lt);
	CUDA_OK(cudaFree(M.ws));
	CUDA_OK(cudaFree(M.flag));
	CUDA_OK(cudaStreamDestroy(M.stream));
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
