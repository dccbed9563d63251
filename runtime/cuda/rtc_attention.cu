/*
 * rtc_attention.cu - linear attention (ONNX LinearAttention-27) on the GPU,
 * with rt_attention.c's semantics and arithmetic order per column.
 *
 * A thread group per value column holds the column of the state in
 * registers (rtc_index_attention.h) and walks the sequence: each step the
 * block stages the key, the exponentiated decay, the erase-gated key and
 * the first query head in shared memory, every thread decays its part of
 * the column, the group sums the delta rule's S^T (erase * key) with xor
 * shuffles, corrects the value, adds key (x) value and sums q^T S for each
 * query head of the kv head's group. The state never leaves the registers
 * between steps; it is read from past_state (or zero) at the start and
 * written once at the end. Inputs, the output and the state may each be
 * FP32, FP16 or BF16 (d->dtype, d->ydtype, d->sdtype); arithmetic is FP32.
 * Key head sizes up to RTC_LINATTN_MAX_DK (1024).
 */
#include "rtc_index_attention.h"
#include "rtc_kern.cuh"

/* Element i of a float tensor of dtype dt, in FP32. */
__device__ __forceinline__ float lin_load(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case RT_F16: return __half2float(((const f16 *)p)[i]);
	case RT_BF16: return __bfloat162float(((const bf16 *)p)[i]);
	default: return ((const float *)p)[i];
	}
}

__device__ __forceinline__ void lin_store(void *p, int dt, int64_t i, float v)
{
	switch (dt) {
	case RT_F16: ((f16 *)p)[i] = __float2half_rn(v); break;
	case RT_BF16: ((bf16 *)p)[i] = __float2bfloat16_rn(v); break;
	default: ((float *)p)[i] = v;
	}
}

/* The sum of v over the parts of a column (adjacent lanes). */
__device__ __forceinline__ float parts_sum(float v, int parts)
{
	for (int o = parts / 2; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* vec . S[:, m]: the thread's key dims, then the column's parts summed. */
__device__ __forceinline__ float column_dot(const float (&s)[RTC_LINATTN_DK], const float *vec,
                                            const struct rtc_linattn &p, int part, int64_t dk)
{
	float acc = 0.f;
#pragma unroll
	for (int j = 0; j < RTC_LINATTN_DK; j++) {
		int64_t i = rtc_linattn_dim(&p, part, j);
		if (i < dk)
			acc += s[j] * vec[i];
	}
	return parts_sum(acc, p.parts);
}

struct lin_io {
	const void *q, *k, *v, *past, *decay, *beta, *erase;
	void *y, *state;
};

__global__ void __launch_bounds__(RTC_LINATTN_THREADS)
        linattn_cols(const __grid_constant__ struct rt_linattn_desc d,
                     const __grid_constant__ struct rtc_linattn p,
                     const __grid_constant__ struct lin_io io)
{
	__shared__ float sk[RTC_LINATTN_MAX_DK], sg[RTC_LINATTN_MAX_DK], se[RTC_LINATTN_MAX_DK],
	        sq[RTC_LINATTN_MAX_DK];
	const int tid = threadIdx.x, nt = blockDim.x;
	const int64_t hkv = d.kv_heads, hq = d.q_heads, dk = d.dk, dv = d.dv, group = hq / hkv;
	const int dt = d.dtype, yt = rtc_out_dtype(d.dtype, d.ydtype),
	          stt = d.sdtype ? d.sdtype : d.dtype;
	int part;
	int64_t m;
	rtc_linattn_thread(&p, blockIdx.y, tid, &m, &part);
	const bool col = m < dv;
	for (int64_t it = blockIdx.x; it < p.items; it += gridDim.x) {
		const int64_t b = it / hkv, h = it % hkv;
		float s[RTC_LINATTN_DK];
#pragma unroll
		for (int j = 0; j < RTC_LINATTN_DK; j++) {
			int64_t i = rtc_linattn_dim(&p, part, j);
			s[j] = io.past && col && i < dk ? lin_load(io.past, stt, (it * dk + i) * dv + m)
			                                : 0.f;
		}
		for (int64_t t = 0; t < d.seq; t++) {
			const int64_t bt = b * d.seq + t;
			__syncthreads(); /* the last step's readers are done */
			for (int64_t i = tid; i < dk; i += nt) {
				float kv = lin_load(io.k, dt, (bt * hkv + h) * dk + i);
				sk[i] = kv;
				sq[i] = lin_load(io.q, dt, (bt * hq + h * group) * dk + i);
				if (d.gated)
					sg[i] = expf(lin_load(
					        io.decay, dt,
					        rtc_linattn_gate(d.decay_width, hkv, dk, bt, h, i)));
				if (d.delta)
					se[i] = io.erase ? lin_load(io.erase, dt,
					                            rtc_linattn_gate(d.erase_width, hkv,
					                                             dk, bt, h, i)) *
					                           kv
					                 : kv;
			}
			__syncthreads();
			float w = col ? lin_load(io.v, dt, (bt * hkv + h) * dv + m) : 0.f;
			if (d.gated) {
#pragma unroll
				for (int j = 0; j < RTC_LINATTN_DK; j++) {
					int64_t i = rtc_linattn_dim(&p, part, j);
					if (i < dk)
						s[j] *= sg[i];
				}
			}
			if (d.delta)
				w = lin_load(io.beta, dt, bt * d.beta_width + (d.beta_width == 1 ? 0 : h)) *
				    (w - column_dot(s, se, p, part, dk));
#pragma unroll
			for (int j = 0; j < RTC_LINATTN_DK; j++) {
				int64_t i = rtc_linattn_dim(&p, part, j);
				if (i < dk)
					s[j] += sk[i] * w;
			}
			for (int64_t g = 0; g < group; g++) {
				const int64_t qh = h * group + g;
				if (g > 0) {
					__syncthreads();
					for (int64_t i = tid; i < dk; i += nt)
						sq[i] = lin_load(io.q, dt, (bt * hq + qh) * dk + i);
					__syncthreads();
				}
				float acc = column_dot(s, sq, p, part, dk);
				if (col && part == 0)
					lin_store(io.y, yt, (bt * hq + qh) * dv + m, acc * d.scale);
			}
		}
#pragma unroll
		for (int j = 0; j < RTC_LINATTN_DK; j++) {
			int64_t i = rtc_linattn_dim(&p, part, j);
			if (col && i < dk)
				lin_store(io.state, stt, (it * dk + i) * dv + m, s[j]);
		}
	}
}

static bool lin_float(int dt) { return dt == RT_F32 || dt == RT_F16 || dt == RT_BF16; }

int rtc_linear_attention(struct rtc_model *m, const struct rt_linattn_desc *d, const void *q,
                         const void *k, const void *v, const void *past, const void *decay,
                         const void *beta, const void *erase, void *y, void *state)
{
	struct rtc_linattn p;
	int64_t hkv = d->kv_heads;
	bool ok = lin_float(d->dtype) && rtc_out_dtype(d->dtype, d->ydtype) &&
	          (!d->sdtype || lin_float(d->sdtype)) && d->batch >= 0 && d->seq >= 0 &&
	          d->q_heads > 0 && hkv > 0 && d->q_heads % hkv == 0 && q && k && v && y && state;
	if (ok && d->gated)
		ok = decay && (d->decay_width == hkv || d->decay_width == hkv * d->dk);
	if (ok && d->delta)
		ok = beta && (d->beta_width == hkv || d->beta_width == 1);
	if (ok && erase)
		ok = d->delta && (d->erase_width == hkv || d->erase_width == hkv * d->dk);
	if (!ok)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_linear_attention: unsupported descriptor");
	if (!rtc_linattn_plan(d, &p))
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "rtc_linear_attention: key head size %lld (the CUDA kernel holds at "
		                "most %d) or value head size %lld",
		                (long long)d->dk, RTC_LINATTN_MAX_DK, (long long)d->dv);
	if (p.items == 0)
		return RT_OK;
	struct lin_io io = { q, k, v, past, decay, beta, erase, y, state };
	dim3 grid((unsigned)rtc_blocks(p.items, 1, rtc_sm_count(m)), (unsigned)p.col_blocks);
	if (p.col_blocks > 65535)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_linear_attention: value head size %lld",
		                (long long)d->dv);
	linattn_cols<<<grid, RTC_LINATTN_THREADS, 0, rtc_stream(m)>>>(*d, p, io);
	return rtc_launched(m, "rtc_linear_attention");
}
