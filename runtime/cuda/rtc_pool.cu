/*
 * rtc_pool.cu - max, average and Lp pooling over 1 to 3 spatial dims on
 * the GPU, with rt_pool's semantics (runtime/rt_pool.c): windows clipped
 * to the input (padding taps never contribute), average divisors with and
 * without count_include_pad, ceil_mode windows clipped to the padded
 * extent, max propagating the first NaN, indices as flat offsets in either
 * storage order.
 *
 * One output per thread walks its window's valid taps in order; windows of
 * 64 taps or more (global pooling, large kernels) take a warp per output
 * whose lanes split the taps and combine their partial sums, or their
 * (max, position) candidates by rt_pool's rule (RTC_MAX_TAKE), in a fixed
 * butterfly. Windows and offsets come from rtc_index.h. Floats accumulate
 * in FP32 (FP64 for FP64); FP16/BF16 are read and written directly, with
 * the result dtype (ydtype) converted on store.
 */
#include "rtc_kern.cuh"

/* The accumulator of a storage type (integers: max only). */
template <class T> struct pool_acc {
	typedef typename acc_of<T>::type type;
};
template <> struct pool_acc<int8_t> {
	typedef int type;
};
template <> struct pool_acc<uint8_t> {
	typedef int type;
};
template <> struct pool_acc<int32_t> {
	typedef int type;
};
template <> struct pool_acc<int64_t> {
	typedef int64_t type;
};

/* The max of an empty window. */
template <class T> __device__ __forceinline__ typename pool_acc<T>::type pool_lowest()
{
	return -INFINITY;
}
template <> __device__ __forceinline__ double pool_lowest<double>() { return -(double)INFINITY; }
template <> __device__ __forceinline__ int pool_lowest<int8_t>() { return INT8_MIN; }
template <> __device__ __forceinline__ int pool_lowest<uint8_t>() { return 0; }
template <> __device__ __forceinline__ int pool_lowest<int32_t>() { return INT32_MIN; }
template <> __device__ __forceinline__ int64_t pool_lowest<int64_t>() { return INT64_MIN; }

__device__ __forceinline__ float p_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double p_abs(double v) { return fabs(v); }
__device__ __forceinline__ float p_pow(float v, float e) { return powf(v, e); }
__device__ __forceinline__ double p_pow(double v, double e) { return pow(v, e); }
__device__ __forceinline__ float p_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double p_sqrt(double v) { return sqrt(v); }

/* One tap's share of a sum (rt_pool.c's S##_term). */
template <class A> __device__ __forceinline__ A pool_term(int mode, A v, int p)
{
	if constexpr (std::is_floating_point<A>::value) {
		switch (mode) {
		case RT_PM_ABS: return p_abs(v);
		case RT_PM_SQ: return v * v;
		case RT_PM_POW: return p_pow(p_abs(v), (A)p);
		default: return v;
		}
	}
	return v;
}

/* A window's result from its sum and divisor (S##_finish). */
template <class A> __device__ __forceinline__ A pool_finish(int mode, A acc, int64_t count, int p)
{
	if constexpr (std::is_floating_point<A>::value) {
		switch (mode) {
		case RT_PM_AVG: return acc / (A)count;
		case RT_PM_SQ: return p_sqrt(acc);
		case RT_PM_POW: return p_pow(acc, (A)1 / (A)p);
		default: return acc;
		}
	}
	return acc;
}

/* A tap into the running max (with its position) and sum. */
template <class A>
__device__ __forceinline__ void pool_add(const struct rtc_pool_geom &g, bool track, A v,
                                         int64_t off, A &best, int64_t &at, A &sum)
{
	if (track && RTC_MAX_TAKE(v, off, best, at)) {
		best = v;
		at = off;
	}
	if (g.mode != RT_PM_MAX)
		sum += pool_term(g.mode, v, g.p);
}

template <class A, class Y>
__device__ __forceinline__ void pool_store(const struct rtc_pool_geom &g, const struct rtc_win &w,
                                           int64_t f, A best, int64_t at, A sum, Y *y, int64_t *idx)
{
	y[f] = to_store<Y>(g.mode == RT_PM_MAX ? best : pool_finish(g.mode, sum, w.count, g.p));
	if (idx)
		idx[f] = at < 0 ? 0 : rtc_pool_index(&g, w.c, at);
}

/* One output per thread: its taps in order. */
template <class T, class Y>
__global__ void pool_thread(const __grid_constant__ struct rtc_pool_geom g, const T *x, Y *y,
                            int64_t *idx)
{
	typedef typename pool_acc<T>::type A;
	const bool track = g.mode == RT_PM_MAX || idx;
	RTC_GRID_LOOP(f, g.total)
	{
		struct rtc_win w;
		A best = pool_lowest<T>(), sum = 0;
		int64_t at = -1;
		rtc_pool_win(&g, f, &w);
		const T *xc = x + w.c * g.geom.nin;
		for (int64_t j0 = w.j0[0]; j0 < w.j1[0]; j0++)
			for (int64_t j1 = w.j0[1]; j1 < w.j1[1]; j1++)
				for (int64_t j2 = w.j0[2]; j2 < w.j1[2]; j2++) {
					int64_t off = rtc_pool_off(&g, &w, j0, j1, j2);
					pool_add<A>(g, track, (A)to_acc(xc[off]), off, best, at,
					            sum);
				}
		pool_store(g, w, f, best, at, sum, y, idx);
	}
}

/* One output per warp: lanes take every 32nd tap, then combine. */
template <class T, class Y>
__global__ void pool_warp(const __grid_constant__ struct rtc_pool_geom g, const T *x, Y *y,
                          int64_t *idx)
{
	typedef typename pool_acc<T>::type A;
	const bool track = g.mode == RT_PM_MAX || idx;
	const int lane = threadIdx.x % 32;
	const int64_t first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	for (int64_t f = first; f < g.total; f += (int64_t)gridDim.x * blockDim.x / 32) {
		struct rtc_win w;
		A best = pool_lowest<T>(), sum = 0;
		int64_t at = -1, n;
		rtc_pool_win(&g, f, &w);
		n = rtc_pool_ntaps(&w);
		const T *xc = x + w.c * g.geom.nin;
		for (int64_t t = lane; t < n; t += 32) {
			int64_t off = rtc_pool_tap(&g, &w, t);
			pool_add<A>(g, track, (A)to_acc(xc[off]), off, best, at, sum);
		}
		if (g.mode != RT_PM_MAX)
			sum = group_reduce<32>(sum, op_add());
		for (int o = 16; track && o > 0; o /= 2) {
			A ob = __shfl_xor_sync(0xffffffffu, best, o);
			int64_t oat = __shfl_xor_sync(0xffffffffu, at, o);
			if (RTC_MAX_TAKE(ob, oat, best, at)) {
				best = ob;
				at = oat;
			}
		}
		if (lane == 0)
			pool_store(g, w, f, best, at, sum, y, idx);
	}
}

template <class T, class Y>
static void pool_launch(struct rtc_model *m, const struct rtc_pool_geom &g, const void *x, void *y,
                        int64_t *idx)
{
	int sm = rtc_sm_count(m);
	cudaStream_t s = rtc_stream(m);
	if (rtc_pool_wide(&g))
		pool_warp<T, Y><<<rtc_blocks(g.total, RTC_THREADS / 32, sm), RTC_THREADS, 0, s>>>(
		        g, (const T *)x, (Y *)y, idx);
	else
		pool_thread<T, Y><<<rtc_blocks(g.total, RTC_THREADS, sm), RTC_THREADS, 0, s>>>(
		        g, (const T *)x, (Y *)y, idx);
}

/* Integer pooling (max only) writes its own type. */
template <class T>
static bool pool_int(struct rtc_model *m, const struct rtc_pool_geom &g, const void *x, void *y,
                     int64_t *idx)
{
	if (g.mode != RT_PM_MAX)
		return false;
	pool_launch<T, T>(m, g, x, y, idx);
	return true;
}

int rtc_pool(struct rtc_model *m, const struct rt_pool_desc *d, const void *x, void *y,
             int64_t *indices)
{
	struct rtc_pool_geom g;
	bool ok = rtc_pool_geom_of(d, &g) == RT_OK && rtc_out_dtype(d->dtype, d->ydtype);
	if (ok && g.total == 0)
		return RT_OK;
	if (ok && (!x || !y))
		ok = false;
	if (ok) {
		switch (d->dtype) {
		case RT_I8: ok = pool_int<int8_t>(m, g, x, y, indices); break;
		case RT_U8: ok = pool_int<uint8_t>(m, g, x, y, indices); break;
		case RT_I32: ok = pool_int<int32_t>(m, g, x, y, indices); break;
		case RT_I64: ok = pool_int<int64_t>(m, g, x, y, indices); break;
		default:
			ok = with_float(d->dtype, d->ydtype, [&](auto t, auto u) {
				pool_launch<decltype(t), decltype(u)>(m, g, x, y, indices);
			});
		}
	}
	if (!ok)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_pool: unsupported descriptor (dtype %d)",
		                d->dtype);
	return rtc_launched(m, "rtc_pool");
}
