/*
 * rtc_resize.cu - ONNX Resize (opset 11-13) on the GPU with rt_resize.c's
 * semantics: every coordinate transformation mode, nearest with each
 * rounding rule, linear and cubic (exclude_outside, cubic_a), and
 * tf_crop_and_resize's extrapolation value.
 *
 * A thread computes one output element: the output index is split into
 * coordinates, identity dims (same size, every coordinate mapping to itself
 * with weight 1, found once on the host) address the input directly, and
 * each resized dim's taps (one, two or four input indices and weights) come
 * from rtc_resize_taps, the CPU's coordinate arithmetic in double, so that
 * nearest modes pick the same element where rounding decides. The output
 * is the weighted sum over every combination of taps, accumulated in FP32
 * as on the CPU: the innermost resized dim first, then the others. Images
 * (at most two resized dims) keep their taps in registers; more resized
 * dims take a general odometer.
 *
 * FP32, FP16 and BF16 storage; ydtype converts on store.
 */
#include "rtc_kern.cuh"

/* The taps of dim d, or one tap of weight 1 when d is an identity. */
__device__ __forceinline__ void unit_taps(struct rt_resize_taps *t)
{
	t->n = 1;
	t->off[0] = 0;
	t->w[0] = 1;
}

/* At most two resized dims: tc is the innermost one (the CPU's column
 * dim), tr the other. */
template <class T, class Y>
__global__ void resize2(const __grid_constant__ struct rtc_resize p, const T *x, Y *y)
{
	RTC_GRID_LOOP(f, p.total)
	{
		struct rt_resize_taps tc, tr;
		int64_t g = f, base = 0;
		int nres = 0;
		unit_taps(&tc);
		unit_taps(&tr);
		for (int d = p.d.rank - 1; d >= 0; d--) {
			int64_t i = rtc_digit(p.small, p.dv[d], p.d.out_dims[d], &g);
			if (p.identity[d])
				base += i * p.xs[d];
			else if (nres++ == 0)
				rtc_resize_taps(&p, d, i, &tc);
			else
				rtc_resize_taps(&p, d, i, &tr);
		}
		if (tc.n == 0 || tr.n == 0) {
			y[f] = to_store<Y>(p.d.extrapolation);
			continue;
		}
		float acc = 0;
#pragma unroll
		for (int a = 0; a < 4; a++) {
			float v = 0;
			if (a >= tr.n)
				break;
#pragma unroll
			for (int b = 0; b < 4; b++)
				if (b < tc.n)
					v += tc.w[b] * to_acc(x[base + tr.off[a] + tc.off[b]]);
			acc += tr.w[a] * v;
		}
		y[f] = to_store<Y>(acc);
	}
}

/* Any number of resized dims: an odometer over their taps, the innermost
 * resized dim interpolated first. */
template <class T, class Y>
__global__ void resize_any(const __grid_constant__ struct rtc_resize p, const T *x, Y *y)
{
	RTC_GRID_LOOP(f, p.total)
	{
		struct rt_resize_taps t[8]; /* t[0]: the innermost resized dim */
		int pick[8];
		int64_t g = f, base = 0;
		int nres = 0;
		bool ext = false;
		for (int d = p.d.rank - 1; d >= 0; d--) {
			int64_t i = rtc_digit(p.small, p.dv[d], p.d.out_dims[d], &g);
			if (p.identity[d]) {
				base += i * p.xs[d];
				continue;
			}
			rtc_resize_taps(&p, d, i, &t[nres]);
			ext |= t[nres].n == 0;
			pick[nres++] = 0;
		}
		if (ext) {
			y[f] = to_store<Y>(p.d.extrapolation);
			continue;
		}
		if (nres == 0) {
			y[f] = to_store<Y>((float)to_acc(x[base]));
			continue;
		}
		float acc = 0;
		for (;;) {
			int64_t off = base;
			float w = 1, v = 0;
			int r;
			for (r = nres - 1; r >= 1; r--) { /* outermost first, as the CPU */
				off += t[r].off[pick[r]];
				w *= t[r].w[pick[r]];
			}
			for (int b = 0; b < t[0].n; b++)
				v += t[0].w[b] * to_acc(x[off + t[0].off[b]]);
			acc += w * v;
			for (r = 1; r < nres && ++pick[r] == t[r].n; r++)
				pick[r] = 0;
			if (r == nres)
				break;
		}
		y[f] = to_store<Y>(acc);
	}
}

int rtc_resize(struct rtc_model *m, const struct rt_resize_desc *d, const void *x, void *y)
{
	struct rtc_resize p;
	int64_t nx = 1, nres = 0;
	int ydt = rtc_out_dtype(d->dtype, d->ydtype);
	if (!rtc_is_f32ish(d->dtype) || !ydt || rtc_resize_plan(d, &p) != RT_OK)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_resize: unsupported descriptor");
	if (p.total == 0)
		return RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_resize: NULL tensor");
	for (int i = 0; i < p.d.rank; i++) {
		nx *= p.d.in_dims[i];
		nres += !p.identity[i];
	}
	if (nx == 0) /* nothing to interpolate from: zeros */
		return rtc_check(
		        m,
		        cudaMemsetAsync(y, 0, (size_t)p.total * rtc_dtype_size(ydt), rtc_stream(m)),
		        "rtc_resize");
	int blocks = rtc_blocks(p.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	with_float(d->dtype, d->ydtype, [&](auto t, auto u) {
		typedef decltype(t) T;
		typedef decltype(u) Y;
		if constexpr (!std::is_same<T, double>::value) {
			if (nres <= 2)
				resize2<T, Y>
				        <<<blocks, RTC_THREADS, 0, s>>>(p, (const T *)x, (Y *)y);
			else
				resize_any<T, Y>
				        <<<blocks, RTC_THREADS, 0, s>>>(p, (const T *)x, (Y *)y);
		}
	});
	return rtc_launched(m, "rtc_resize");
}
