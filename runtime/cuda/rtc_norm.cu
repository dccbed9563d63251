/*
 * rtc_norm.cu - softmax, log_softmax and hardmax; layer, instance and local
 * response normalization on the GPU, with rt_norm.c's semantics.
 *
 * Rows (softmax over the last axis, every norm) belong to a group of
 * threads: a warp for rows up to 1024 long, a block of RTC_ROW_BLOCK
 * threads beyond (rtc_rows_plan). Each pass over a row strides through it
 * by the group size and ends in a group reduction: softmax takes the
 * maximum (NaN ignored), sums exp(x - max), then writes; the norms take
 * the mean, then the mean squared deviation (two passes: no cancellation
 * for inputs with a large mean), then write. Softmax over a middle axis
 * (inner > 1) is a thread per lane, stepping through the axis, which keeps
 * neighbouring threads on neighbouring addresses.
 *
 * NaN behaves as on the CPU: a NaN in a softmax row makes the row NaN, a
 * row of -inf gives NaN, hardmax marks the first maximum and the first
 * element when there is none. Floats compute in FP32 (FP64 for FP64), FP16
 * and BF16 are read and written directly; ydtype converts on store.
 */
#include "rtc_kern.cuh"

struct op_min {
	template <class A> __device__ __forceinline__ A operator()(A a, A b) const
	{
		return b < a ? b : a;
	}
};

template <class A> __device__ __forceinline__ A neg_inf() { return (A)-INFINITY; }

/* ------------------------------------------------------------------------ */
/* Softmax, LogSoftmax, Hardmax                                             */
/* ------------------------------------------------------------------------ */

/* Hardmax of a row: 1 at the first maximum (the first element if none). */
template <int G, class T, class Y, class A>
__device__ __forceinline__ void hardmax_row(const T *x, Y *y, int64_t n, A m, int lane)
{
	int64_t at = n;
	for (int64_t i = lane; i < n; i += G)
		if ((A)to_acc(x[i]) == m) {
			at = i;
			break;
		}
	at = group_reduce<G>(at, op_min());
	if (m == neg_inf<A>())
		at = 0;
	for (int64_t i = lane; i < n; i += G)
		y[i] = to_store<Y>((A)(i == at ? 1 : 0));
}

template <int G, class T, class Y>
__global__ void softmax_rows(const __grid_constant__ struct rtc_rows p, int64_t rows, int64_t n,
                             int kind, const T *x, Y *y)
{
	typedef typename acc_of<T>::type A;
	const int lane = threadIdx.x % G;
	for (int64_t r = rtc_rows_first(&p, blockIdx.x, threadIdx.x); r < rows;
	     r += rtc_rows_step(&p)) {
		const T *xr = x + r * n;
		Y *yr = y + r * n;
		A m = neg_inf<A>(), s = 0;
		for (int64_t i = lane; i < n; i += G)
			m = op_fmax()(m, (A)to_acc(xr[i]));
		m = group_reduce<G>(m, op_fmax());
		if (kind == RT_HARDMAX) {
			hardmax_row<G>(xr, yr, n, m, lane);
			continue;
		}
		for (int64_t i = lane; i < n; i += G)
			s += rtc_exp((A)to_acc(xr[i]) - m);
		s = group_reduce<G>(s, op_add());
		if (kind == RT_LOG_SOFTMAX) {
			A lse = rtc_log(s);
			for (int64_t i = lane; i < n; i += G)
				yr[i] = to_store<Y>(((A)to_acc(xr[i]) - m) - lse);
		} else {
			A inv = 1 / s;
			for (int64_t i = lane; i < n; i += G)
				yr[i] = to_store<Y>(rtc_exp((A)to_acc(xr[i]) - m) * inv);
		}
	}
}

/* A lane per thread over the axis, inner apart (rt_norm.c's softmax_cols
 * and hardmax_cols, one lane each). */
template <class T, class Y>
__global__ void softmax_lanes(const __grid_constant__ struct rtc_lanes l, int kind, const T *x,
                              Y *y)
{
	typedef typename acc_of<T>::type A;
	RTC_GRID_LOOP(lane, l.lanes)
	{
		int64_t base = rtc_lane_base(&l, lane), at = 0;
		const T *xl = x + base;
		Y *yl = y + base;
		A m = neg_inf<A>(), s = 0;
		for (int64_t a = 0; a < l.axis; a++) {
			A v = (A)to_acc(xl[a * l.inner]);
			if (v > m) {
				m = v;
				at = a;
			}
		}
		if (kind == RT_HARDMAX) {
			for (int64_t a = 0; a < l.axis; a++)
				yl[a * l.inner] = to_store<Y>((A)(a == at ? 1 : 0));
			continue;
		}
		for (int64_t a = 0; a < l.axis; a++)
			s += rtc_exp((A)to_acc(xl[a * l.inner]) - m);
		s = kind == RT_SOFTMAX ? 1 / s : rtc_log(s);
		for (int64_t a = 0; a < l.axis; a++) {
			A v = (A)to_acc(xl[a * l.inner]);
			yl[a * l.inner] =
			        to_store<Y>(kind == RT_SOFTMAX ? rtc_exp(v - m) * s : (v - m) - s);
		}
	}
}

template <class T, class Y>
static void softmax_launch(struct rtc_model *m, const struct rt_softmax_desc *d, const void *x,
                           void *y)
{
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m);
	if (d->inner == 1) {
		struct rtc_rows p = rtc_rows_plan(d->outer, d->axis, sm);
		if (p.group == 32)
			softmax_rows<32, T, Y><<<p.blocks, p.threads, 0, s>>>(
			        p, d->outer, d->axis, d->kind, (const T *)x, (Y *)y);
		else
			softmax_rows<RTC_ROW_BLOCK, T, Y><<<p.blocks, p.threads, 0, s>>>(
			        p, d->outer, d->axis, d->kind, (const T *)x, (Y *)y);
		return;
	}
	struct rtc_lanes l = rtc_lanes_of(d->outer, d->axis, d->inner);
	softmax_lanes<T, Y><<<rtc_blocks(l.lanes, RTC_THREADS, sm), RTC_THREADS, 0, s>>>(
	        l, d->kind, (const T *)x, (Y *)y);
}

int rtc_softmax(struct rtc_model *m, const struct rt_softmax_desc *d, const void *x, void *y)
{
	if (!rtc_out_dtype(d->dtype, d->ydtype) || !rtc_is_float(d->dtype) ||
	    d->kind < RT_SOFTMAX || d->kind > RT_HARDMAX || d->outer < 0 || d->axis < 0 ||
	    d->inner < 0)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_softmax: unsupported descriptor");
	if (d->outer == 0 || d->axis == 0 || d->inner == 0)
		return RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_softmax: NULL tensor");
	with_float(d->dtype, d->ydtype,
	           [&](auto t, auto u) { softmax_launch<decltype(t), decltype(u)>(m, d, x, y); });
	return rtc_launched(m, "rtc_softmax");
}

/* ------------------------------------------------------------------------ */
/* LayerNormalization, InstanceNormalization                                */
/* ------------------------------------------------------------------------ */

/* What a norm row needs besides its data. */
struct norm_args {
	int64_t rows, n;
	int64_t channels; /* instance norm: scale and bias per row % channels; 0: layer norm */
	float eps;
	float *mean, *inv_std;
};

template <int G, class T, class Y>
__global__ void norm_rows(const __grid_constant__ struct rtc_rows p,
                          const __grid_constant__ struct norm_args a, const T *x, const T *scale,
                          const T *bias, Y *y)
{
	typedef typename acc_of<T>::type A;
	const int lane = threadIdx.x % G;
	const int64_t n = a.n;
	for (int64_t r = rtc_rows_first(&p, blockIdx.x, threadIdx.x); r < a.rows;
	     r += rtc_rows_step(&p)) {
		const T *xr = x + r * n;
		Y *yr = y + r * n;
		A s = 0, q = 0, mu, inv;
		for (int64_t i = lane; i < n; i += G)
			s += (A)to_acc(xr[i]);
		s = group_reduce<G>(s, op_add());
		mu = n ? s / (A)n : 0;
		for (int64_t i = lane; i < n; i += G) {
			A dv = (A)to_acc(xr[i]) - mu;
			q += dv * dv;
		}
		q = group_reduce<G>(q, op_add());
		inv = (A)(1 / sqrt((double)(n ? q / (A)n : 0) + (double)a.eps));
		if (lane == 0 && a.mean)
			a.mean[r] = (float)mu;
		if (lane == 0 && a.inv_std)
			a.inv_std[r] = (float)inv;
		if (a.channels) {
			int64_t c = r % a.channels;
			A sc = inv * (A)to_acc(scale[c]), bi = (A)to_acc(bias[c]);
			for (int64_t i = lane; i < n; i += G)
				yr[i] = to_store<Y>(((A)to_acc(xr[i]) - mu) * sc + bi);
		} else {
			for (int64_t i = lane; i < n; i += G) {
				A v = ((A)to_acc(xr[i]) - mu) * inv * (A)to_acc(scale[i]);
				yr[i] = to_store<Y>(bias ? v + (A)to_acc(bias[i]) : v);
			}
		}
	}
}

template <class T, class Y>
static void norm_launch(struct rtc_model *m, const struct norm_args &a, const void *x,
                        const void *scale, const void *bias, void *y)
{
	cudaStream_t s = rtc_stream(m);
	struct rtc_rows p = rtc_rows_plan(a.rows, a.n, rtc_sm_count(m));
	const T *xs = (const T *)x, *sc = (const T *)scale, *bi = (const T *)bias;
	if (p.group == 32)
		norm_rows<32, T, Y><<<p.blocks, p.threads, 0, s>>>(p, a, xs, sc, bi, (Y *)y);
	else
		norm_rows<RTC_ROW_BLOCK, T, Y>
		        <<<p.blocks, p.threads, 0, s>>>(p, a, xs, sc, bi, (Y *)y);
}

static int norm_run(struct rtc_model *m, int dtype, int ydtype, const struct norm_args &a,
                    const void *x, const void *scale, const void *bias, void *y)
{
	with_float(dtype, ydtype, [&](auto t, auto u) {
		norm_launch<decltype(t), decltype(u)>(m, a, x, scale, bias, y);
	});
	return rtc_launched(m, a.channels ? "rtc_instnorm" : "rtc_layernorm");
}

int rtc_layernorm(struct rtc_model *m, const struct rt_layernorm_desc *d, const void *x,
                  const void *scale, const void *bias, void *y, float *mean, float *inv_std)
{
	struct norm_args a = { d->rows, d->cols, 0, d->eps, mean, inv_std };
	if (!rtc_out_dtype(d->dtype, d->ydtype) || !rtc_is_float(d->dtype) || d->rows < 0 ||
	    d->cols < 0 || (!scale && d->cols))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_layernorm: unsupported descriptor");
	if (d->rows == 0)
		return RT_OK;
	if (d->cols && (!x || !y))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_layernorm: NULL tensor");
	return norm_run(m, d->dtype, d->ydtype, a, x, scale, bias, y);
}

int rtc_instnorm(struct rtc_model *m, const struct rt_instnorm_desc *d, const void *x,
                 const void *scale, const void *bias, void *y)
{
	struct norm_args a = { d->n * d->c, d->spatial, d->c, d->eps, NULL, NULL };
	if (!rtc_out_dtype(d->dtype, d->ydtype) || !rtc_is_float(d->dtype) || d->n < 0 ||
	    d->c < 0 || d->spatial < 0)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_instnorm: unsupported descriptor");
	if (d->n == 0 || d->c == 0 || d->spatial == 0)
		return RT_OK;
	if (!scale || !bias || !x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_instnorm: NULL tensor");
	return norm_run(m, d->dtype, d->ydtype, a, x, scale, bias, y);
}

/* ------------------------------------------------------------------------ */
/* LRN                                                                      */
/* ------------------------------------------------------------------------ */

/* y = x / (bias + alpha/size * sum of x^2 over the channel window)^beta;
 * beta 0.75 as 1/sqrt(t*sqrt(t)), like the CPU. */
template <class T, class Y>
__global__ void lrn_kernel(const __grid_constant__ struct rtc_chan ch, int64_t size, float alpha,
                           float beta, float bias, const T *x, Y *y)
{
	typedef typename acc_of<T>::type A;
	const A k = (A)alpha / (A)size;
	RTC_GRID_LOOP(f, ch.total)
	{
		int64_t c = rtc_channel_of(&ch, f), lo, hi;
		A sq = 0, t, v = (A)to_acc(x[f]);
		rtc_lrn_window(c, size, ch.channels, &lo, &hi);
		for (int64_t i = lo; i <= hi; i++) {
			A xi = (A)to_acc(x[f + (i - c) * ch.inner]);
			sq += xi * xi;
		}
		t = (A)bias + k * sq;
		if (beta == 0.75f)
			y[f] = to_store<Y>(v / sqrt(t * sqrt(t)));
		else
			y[f] = to_store<Y>(v / pow(t, (A)beta));
	}
}

int rtc_lrn(struct rtc_model *m, const struct rt_lrn_desc *d, const void *x, void *y)
{
	if (!rtc_out_dtype(d->dtype, d->ydtype) || !rtc_is_float(d->dtype) || d->n < 0 ||
	    d->c < 0 || d->spatial < 0 || d->size < 1)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_lrn: unsupported descriptor");
	if (d->n == 0 || d->c == 0 || d->spatial == 0)
		return RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_lrn: NULL tensor");
	struct rtc_chan ch = rtc_chan_of(d->n, d->c, d->spatial);
	with_float(d->dtype, d->ydtype, [&](auto t, auto u) {
		typedef decltype(t) T;
		typedef decltype(u) Y;
		lrn_kernel<T, Y><<<rtc_blocks(ch.total, RTC_THREADS, rtc_sm_count(m)), RTC_THREADS,
		                   0, rtc_stream(m)>>>(ch, d->size, d->alpha, d->beta, d->bias,
		                                       (const T *)x, (Y *)y);
	});
	return rtc_launched(m, "rtc_lrn");
}
