/*
 * rtc_epilogue.cu - the epilogue GEMM and convolution apply after the
 * library call where cuBLASLt or cuDNN cannot: y = act(y + bias[channel] +
 * residual) over y viewed as [outer, channels, inner], in place.
 *
 * The formulas are rt_gemm.c's epilogue: clamps keep NaN (Relu, Clip,
 * HardSigmoid, HardSwish), LeakyRelu scales negatives by alpha, Clip
 * clamps to [alpha, beta], HardSigmoid is max(0, min(1, alpha*x + beta)),
 * HardSwish x * max(0, min(1, x/6 + 1/2)). Floats compute in FP32 (FP64
 * for FP64) and round once on store, whatever mix of FP32, FP16 and BF16
 * y, the bias and the residual are stored in. Integers (integer GEMMs)
 * add with wraparound and take activations in double, saturating back as
 * the CPU does.
 *
 * bias NULL: no bias; the element count is then still outer * channels *
 * inner, with channels or inner below 1 counting as 1, so callers may pass
 * (n, 0, 0), (n, 1, 1) or the real shape. residual NULL: no residual.
 */
#include "rtc_kern.cuh"

struct ep_args {
	struct rt_epilogue ep;
	struct rtc_chan ch;
	int bias_dt, res_dt;
};

__device__ __forceinline__ float ep_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double ep_tanh(double v) { return tanh(v); }

/* The activation in the compute type CT (rt_gemm.c's act_tile). */
template <class CT> __device__ __forceinline__ CT activate(const struct rt_epilogue &ep, CT v)
{
	const CT a = (CT)ep.alpha, b = (CT)ep.beta, one = 1, zero = 0;
	CT t;
	switch (ep.act) {
	case RT_ACT_RELU: return v < zero ? zero : v;
	case RT_ACT_LEAKY_RELU: return v < zero ? a * v : v;
	case RT_ACT_CLIP: t = v < a ? a : v; return t > b ? b : t;
	case RT_ACT_SIGMOID: return one / (one + rtc_exp(-v));
	case RT_ACT_TANH: return ep_tanh(v);
	case RT_ACT_HARD_SIGMOID:
		t = b + v * a;
		t = t < zero ? zero : t;
		return t > one ? one : t;
	case RT_ACT_HARD_SWISH:
		t = (CT)0.5 + v * (CT)(1.0 / 6);
		t = t < zero ? zero : t;
		return (t > one ? one : t) * v;
	default: return v;
	}
}

/* Element i of a float tensor of dtype dt in the compute type. */
template <class CT> __device__ __forceinline__ CT load_float(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case RT_F16: return (CT)__half2float(((const f16 *)p)[i]);
	case RT_BF16: return (CT)__bfloat162float(((const bf16 *)p)[i]);
	case RT_F64: return (CT)((const double *)p)[i];
	default: return (CT)((const float *)p)[i];
	}
}

template <class Y>
__global__ void epilogue_float(const __grid_constant__ struct ep_args e, Y *y, const void *bias,
                               const void *res)
{
	typedef typename acc_of<Y>::type CT;
	RTC_GRID_LOOP(f, e.ch.total)
	{
		CT v = (CT)to_acc(y[f]);
		if (bias)
			v += load_float<CT>(bias, e.bias_dt, rtc_channel_of(&e.ch, f));
		if (res)
			v += load_float<CT>(res, e.res_dt, f);
		y[f] = to_store<Y>(activate(e.ep, v));
	}
}

/* Integers: wrapping adds, activations in double saturated to int64 and
 * truncated, as rt_gemm.c's TO_I32 / TO_I64. */
template <class Y>
__global__ void epilogue_int(const __grid_constant__ struct ep_args e, Y *y, const Y *bias,
                             const Y *res)
{
	RTC_GRID_LOOP(f, e.ch.total)
	{
		uint64_t v = (uint64_t)y[f];
		if (bias)
			v += (uint64_t)bias[rtc_channel_of(&e.ch, f)];
		if (res)
			v += (uint64_t)res[f];
		if (e.ep.act != RT_ACT_NONE)
			v = (uint64_t)rt_red_to_i64(activate(e.ep, (double)(Y)v));
		y[f] = (Y)v;
	}
}

/* Whether a bias or residual of dtype b can go with y of dtype y. */
static bool ep_compatible(int y, int b) { return rtc_is_f32ish(y) ? rtc_is_f32ish(b) : b == y; }

int rtc_epilogue(struct rtc_model *m, const struct rt_epilogue *ep, int dtype, void *y,
                 const void *bias, int bias_dtype, const void *residual, int residual_dtype,
                 int64_t outer, int64_t channels, int64_t inner)
{
	struct ep_args e;
	bool ok = ep->act >= RT_ACT_NONE && ep->act <= RT_ACT_HARD_SWISH && outer >= 0 &&
	          (rtc_is_float(dtype) || dtype == RT_I32 || dtype == RT_I64);
	e.ep = *ep;
	e.bias_dt = bias_dtype ? bias_dtype : dtype;
	e.res_dt = residual_dtype ? residual_dtype : dtype;
	if (!bias) {
		channels = channels > 0 ? channels : 1;
		inner = inner > 0 ? inner : 1;
	}
	ok = ok && channels >= 0 && inner >= 0 && (!bias || ep_compatible(dtype, e.bias_dt)) &&
	     (!residual || ep_compatible(dtype, e.res_dt));
	if (!ok)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_epilogue: unsupported arguments");
	e.ch = rtc_chan_of(outer, channels, inner);
	if (e.ch.total == 0 || (!bias && !residual && ep->act == RT_ACT_NONE))
		return RT_OK;
	if (!y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_epilogue: NULL tensor");
	int blocks = rtc_blocks(e.ch.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	switch (dtype) {
	case RT_F32:
		epilogue_float<<<blocks, RTC_THREADS, 0, s>>>(e, (float *)y, bias, residual);
		break;
	case RT_F16:
		epilogue_float<<<blocks, RTC_THREADS, 0, s>>>(e, (f16 *)y, bias, residual);
		break;
	case RT_BF16:
		epilogue_float<<<blocks, RTC_THREADS, 0, s>>>(e, (bf16 *)y, bias, residual);
		break;
	case RT_F64:
		epilogue_float<<<blocks, RTC_THREADS, 0, s>>>(e, (double *)y, bias, residual);
		break;
	case RT_I32:
		epilogue_int<<<blocks, RTC_THREADS, 0, s>>>(e, (int32_t *)y, (const int32_t *)bias,
		                                            (const int32_t *)residual);
		break;
	default:
		epilogue_int<<<blocks, RTC_THREADS, 0, s>>>(e, (int64_t *)y, (const int64_t *)bias,
		                                            (const int64_t *)residual);
	}
	return rtc_launched(m, "rtc_epilogue");
}
