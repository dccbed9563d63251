/*
 * rtc_convert.cu - conversions between FP32 and the half formats on the
 * GPU, with rt_convert's semantics (runtime/rt_convert.c): rounding to
 * nearest even (__float2half_rn, __float2bfloat16_rn), NaN kept NaN,
 * overflow to infinity, subnormals kept (the kernels are built without
 * flush-to-zero). One of the two dtypes is FP32; other pairs are
 * RT_ERR_ARGUMENT, as on the CPU.
 *
 * A grid-stride loop moves four elements per thread with one vector load
 * and store when both buffers are aligned to that, the rest one by one.
 */
#include "rtc_kern.cuh"

/* Four elements, aligned as one vector load. */
template <class E> struct alignas(4 * sizeof(E)) vec4 {
	E v[4];
};

template <class S, class D>
__global__ void convert_kernel(const S *src, D *dst, int64_t n, bool vec)
{
	int64_t done = 0;
	if (vec) {
		const vec4<S> *s4 = (const vec4<S> *)src;
		vec4<D> *d4 = (vec4<D> *)dst;
		done = n / 4 * 4;
		RTC_GRID_LOOP(i, n / 4)
		{
			vec4<S> a = s4[i];
			vec4<D> b;
#pragma unroll
			for (int k = 0; k < 4; k++)
				b.v[k] = to_store<D>(to_acc(a.v[k]));
			d4[i] = b;
		}
	}
	RTC_GRID_LOOP(i, n - done) { dst[done + i] = to_store<D>(to_acc(src[done + i])); }
}

template <class S, class D>
static void convert_launch(struct rtc_model *m, void *dst, const void *src, int64_t n)
{
	bool vec = (uintptr_t)src % sizeof(vec4<S>) == 0 && (uintptr_t)dst % sizeof(vec4<D>) == 0;
	int blocks = rtc_blocks(vec ? rt_ceil_div(n, 4) : n, RTC_THREADS, rtc_sm_count(m));
	convert_kernel<S, D>
	        <<<blocks, RTC_THREADS, 0, rtc_stream(m)>>>((const S *)src, (D *)dst, n, vec);
}

int rtc_convert(struct rtc_model *m, void *dst, int dst_dtype, const void *src, int src_dtype,
                int64_t n)
{
	bool to_half = src_dtype == RT_F32 && rtc_is_half(dst_dtype);
	bool from_half = dst_dtype == RT_F32 && rtc_is_half(src_dtype);
	if (n < 0 || (n && (!dst || !src)))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_convert: bad arguments");
	if (!to_half && !from_half)
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "rtc_convert: no conversion from dtype %d to %d", src_dtype,
		                dst_dtype);
	if (n == 0)
		return RT_OK;
	if (dst_dtype == RT_F16)
		convert_launch<float, f16>(m, dst, src, n);
	else if (dst_dtype == RT_BF16)
		convert_launch<float, bf16>(m, dst, src, n);
	else if (src_dtype == RT_F16)
		convert_launch<f16, float>(m, dst, src, n);
	else
		convert_launch<bf16, float>(m, dst, src, n);
	return rtc_launched(m, "rtc_convert");
}
