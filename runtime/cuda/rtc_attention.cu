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
 *
 * And scaled dot-product attention (ONNX Attention-23) with rt_flash.c's
 * semantics: the online softmax with a warp per query row, no scores in
 * global memory (rtc_index_attention.h has the plan). The portable kernel:
 * FP32 FMAs, no tensor cores; any head sizes.
 *
 * And its backward with rt_flash.c's rt_attention_grad semantics:
 * FlashAttention-2's two passes (a warp per key for dk and dv, a warp per
 * query row for dq), the probabilities recomputed from lse, no workspace
 * and no atomics, so the results are deterministic. Same kernel style.
 *
 * These two are the portable path: rtc_attention and rtc_attention_grad
 * (rtc_sdpa.c) run cuDNN's fused attention where it computes exactly the
 * same thing and call rtc_attention_kernel / rtc_attention_grad_kernel
 * otherwise. The two small kernels at the end finish cuDNN's runs with a
 * bias: rows a bias hides entirely get the runtime's y = 0, lse = -inf.
 */
#include "rtc_index_attention.h"
#include "rtc_kern.cuh"
#include "rtc_sdpa.h"

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
			s[j] = io.past && col && i < dk
			               ? lin_load(io.past, stt, (it * dk + i) * dv + m)
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
					sg[i] = expf(lin_load(io.decay, dt,
					                      rtc_linattn_gate(d.decay_width, hkv,
					                                       dk, bt, h, i)));
				if (d.delta)
					se[i] = io.erase ? lin_load(io.erase, dt,
					                            rtc_linattn_gate(d.erase_width,
					                                             hkv, dk, bt, h,
					                                             i)) *
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
				w = lin_load(io.beta, dt,
				             bt * d.beta_width + (d.beta_width == 1 ? 0 : h)) *
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
		return rtc_fail(
		        m, RT_ERR_ARGUMENT,
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

/* ------------------------------------------------------------------------ */
/* Scaled dot-product attention                                             */
/* ------------------------------------------------------------------------ */

struct attn_io {
	const void *q, *k, *v, *mask;
	void *y;
	float *lse;
};

#define ATTN_WARPS (RTC_THREADS / 32)

/* The scores of one warp's row against keys [j0, j0 + n) (n <= 32, lane l:
 * key j0 + l), the key chunk and the query staged through sk and sq
 * RTC_ATTN_DC dims at a time; -inf for the lanes past n and masked keys. */
template <class T>
__device__ __forceinline__ float
attn_score(const struct rt_attention_desc &d, const T *q, const T *k, const struct attn_io &io,
           int64_t row, int64_t b, int64_t h, int64_t i, int64_t kv, int64_t j0, int n, int lane,
           float (*sk)[RTC_ATTN_DC + 1], float *sq)
{
	const int64_t dk = d.dk;
	float dot = 0.f;
	for (int64_t d0 = 0; d0 < dk; d0 += RTC_ATTN_DC) {
		const int64_t c = d0 + lane;
		const bool in = c < dk;
		__syncwarp(); /* the last dims' readers are done */
		sq[lane] = in ? to_acc(q[row * dk + c]) : 0.f;
#pragma unroll 4
		for (int r = 0; r < RTC_ATTN_KC; r++)
			sk[r][lane] = in && r < n ? to_acc(k[(kv + j0 + r) * dk + c]) : 0.f;
		__syncwarp();
#pragma unroll
		for (int c2 = 0; c2 < RTC_ATTN_DC; c2++)
			dot += sq[c2] * sk[lane][c2];
	}
	if (lane >= n)
		return -INFINITY;
	float s = rtc_attn_score(&d, dot);
	const int64_t j = j0 + lane;
	if (d.mask == RT_ATTN_BIAS)
		s += lin_load(io.mask, d.mdtype ? d.mdtype : d.dtype,
		              rtc_attn_mask_at(&d, b, h, i, j));
	else if (d.mask == RT_ATTN_BOOL &&
	         !((const unsigned char *)io.mask)[rtc_attn_mask_at(&d, b, h, i, j)])
		s = -INFINITY;
	return s;
}

template <class T>
__global__ void __launch_bounds__(RTC_THREADS)
        attn_rows(const __grid_constant__ struct rt_attention_desc d,
                  const __grid_constant__ struct rtc_attn p,
                  const __grid_constant__ struct attn_io io)
{
	__shared__ float sk_all[ATTN_WARPS][RTC_ATTN_KC][RTC_ATTN_DC + 1];
	__shared__ float sq_all[ATTN_WARPS][RTC_ATTN_DC];
	const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
	const int yt = rtc_out_dtype(d.dtype, d.ydtype);
	const T *q = (const T *)io.q, *k = (const T *)io.k, *v = (const T *)io.v;
	float(*sk)[RTC_ATTN_DC + 1] = sk_all[w];
	float *sq = sq_all[w];
	const int64_t dv = d.dv, step = rtc_rows_step(&p.rows);
	/* a warp's rows: the whole warp takes each (the shuffles need it) */
	for (int64_t row = rtc_rows_first(&p.rows, blockIdx.x, threadIdx.x); row < p.nrows;
	     row += step) {
		int64_t b, h, i;
		rtc_attn_row(&d, row, &b, &h, &i);
		const int64_t kend = rtc_attn_kend(&d, i), kv = rtc_attn_kv_row(&d, b, h, 0);
		for (int pass = 0; pass < p.passes; pass++) {
			float m = -INFINITY, l = 0.f, acc[RTC_ATTN_NV];
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++)
				acc[t] = 0.f;
			for (int64_t j0 = 0; j0 < kend; j0 += RTC_ATTN_KC) {
				const int n = (int)rt_min64(RTC_ATTN_KC, kend - j0);
				float s = attn_score<T>(d, q, k, io, row, b, h, i, kv, j0, n, lane,
				                        sk, sq);
				float mn = group_reduce<32>(s, op_fmax());
				mn = mn > m ? mn : m;
				if (mn == -INFINITY) /* everything so far masked */
					continue;
				float e = expf(s - mn), corr = expf(m - mn);
				float sum = group_reduce<32>(e, op_add());
				l = l * corr + sum;
				m = mn;
#pragma unroll
				for (int t = 0; t < RTC_ATTN_NV; t++)
					acc[t] *= corr;
				for (int r = 0; r < n; r++) {
					const float pr = __shfl_sync(0xffffffffu, e, r);
					const T *vr = v + (kv + j0 + r) * dv;
#pragma unroll
					for (int t = 0; t < RTC_ATTN_NV; t++) {
						const int64_t c = rtc_attn_col(pass, lane, t);
						if (c < dv)
							acc[t] += pr * to_acc(vr[c]);
					}
				}
			}
			const float inv = rtc_attn_inv(l);
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++) {
				const int64_t c = rtc_attn_col(pass, lane, t);
				if (c < dv)
					lin_store(io.y, yt, row * dv + c, acc[t] * inv);
			}
			if (pass == 0 && lane == 0 && io.lse)
				io.lse[row] = rtc_attn_lse(m, l);
		}
	}
}

int rtc_attention_kernel(struct rtc_model *m, const struct rt_attention_desc *d, const void *q,
                         const void *k, const void *v, const void *mask, void *y, void *lse)
{
	struct rtc_attn p;
	bool ok = lin_float(d->dtype) && rtc_out_dtype(d->dtype, d->ydtype) &&
	          (!d->mdtype || lin_float(d->mdtype)) && q && k && v && y &&
	          (d->mask != RT_ATTN_NONE) == !!mask;
	if (!ok || !rtc_attn_plan(d, rtc_sm_count(m), &p))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_attention: unsupported descriptor");
	if (p.nrows == 0)
		return RT_OK;
	struct attn_io io = { q, k, v, mask, y, (float *)lse };
	cudaStream_t st = rtc_stream(m);
	switch (d->dtype) {
	case RT_F16: attn_rows<f16><<<p.rows.blocks, p.rows.threads, 0, st>>>(*d, p, io); break;
	case RT_BF16: attn_rows<bf16><<<p.rows.blocks, p.rows.threads, 0, st>>>(*d, p, io); break;
	default: attn_rows<float><<<p.rows.blocks, p.rows.threads, 0, st>>>(*d, p, io);
	}
	return rtc_launched(m, "rtc_attention");
}

/* ------------------------------------------------------------------------ */
/* Its backward                                                             */
/* ------------------------------------------------------------------------ */

struct attn_grad_io {
	const void *q, *k, *v, *y, *dy, *mask;
	const float *lse;
	void *dq, *dk, *dv;
};

/*
 * Lane l's dot product of `many`'s row many_row + l (l < n; 0 past n) with
 * `one`'s row one_row over width dims, both staged through tile and vec
 * RTC_ATTN_DC dims at a time (attn_score's order); with pair, *pd = the
 * lane's row of pair . its row of many, summed over the dims in order.
 */
template <class A, class B, class C>
__device__ __forceinline__ float grad_dot(const A *one, int64_t one_row, const B *many,
                                          int64_t many_row, int n, const C *pair, float *pd,
                                          int64_t width, int lane, float (*tile)[RTC_ATTN_DC + 1],
                                          float (*tile2)[RTC_ATTN_DC + 1], float *vec)
{
	float dot = 0.f, dd = 0.f;
	for (int64_t d0 = 0; d0 < width; d0 += RTC_ATTN_DC) {
		const int64_t c = d0 + lane;
		const bool in = c < width;
		__syncwarp(); /* the last dims' readers are done */
		vec[lane] = in ? to_acc(one[one_row * width + c]) : 0.f;
#pragma unroll 2
		for (int r = 0; r < 32; r++) {
			tile[r][lane] =
			        in && r < n ? to_acc(many[(many_row + r) * width + c]) : 0.f;
			if (pair)
				tile2[r][lane] = in && r < n
				                         ? to_acc(pair[(many_row + r) * width + c])
				                         : 0.f;
		}
		__syncwarp();
#pragma unroll
		for (int c2 = 0; c2 < RTC_ATTN_DC; c2++) {
			dot += tile[lane][c2] * vec[c2];
			if (pair)
				dd += tile2[lane][c2] * tile[lane][c2];
		}
	}
	if (pair)
		*pd = dd;
	return dot;
}

/* A capped score of (b, h, i, j) with the mask applied, as attn_score. */
__device__ __forceinline__ float grad_masked(const struct rt_attention_desc &d, const void *mask,
                                             float s, int64_t b, int64_t h, int64_t i, int64_t j)
{
	if (d.mask == RT_ATTN_BIAS)
		s += lin_load(mask, d.mdtype ? d.mdtype : d.dtype,
		              rtc_attn_mask_at(&d, b, h, i, j));
	else if (d.mask == RT_ATTN_BOOL &&
	         !((const unsigned char *)mask)[rtc_attn_mask_at(&d, b, h, i, j)])
		s = -INFINITY;
	return s;
}

/* Pass 1: dk and dv, a warp per key (rtc_index_attention.h). */
template <class T, class Y>
__global__ void __launch_bounds__(32 * RTC_ATTN_GRAD_WARPS)
        attn_grad_keys(const __grid_constant__ struct rt_attention_desc d,
                       const __grid_constant__ struct rtc_attn_grad p,
                       const __grid_constant__ struct attn_grad_io io)
{
	__shared__ float ta_all[RTC_ATTN_GRAD_WARPS][32][RTC_ATTN_DC + 1];
	__shared__ float tb_all[RTC_ATTN_GRAD_WARPS][32][RTC_ATTN_DC + 1];
	__shared__ float sv_all[RTC_ATTN_GRAD_WARPS][RTC_ATTN_DC];
	const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
	const T *q = (const T *)io.q, *k = (const T *)io.k, *v = (const T *)io.v;
	const Y *y = (const Y *)io.y, *dy = (const Y *)io.dy;
	T *gk = (T *)io.dk, *gv = (T *)io.dv;
	float(*ta)[RTC_ATTN_DC + 1] = ta_all[w];
	float(*tb)[RTC_ATTN_DC + 1] = tb_all[w];
	float *sv = sv_all[w];
	const int64_t dk = d.dk, dv = d.dv, group = d.q_heads / d.kv_heads;
	const int64_t step = rtc_rows_step(&p.keys);
	/* a warp's keys: the whole warp takes each (the shuffles need it) */
	for (int64_t r = rtc_rows_first(&p.keys, blockIdx.x, threadIdx.x); r < p.nkeys; r += step) {
		int64_t b, kvh, j;
		rtc_attn_key(&d, r, &b, &kvh, &j);
		const int64_t ibegin = rtc_attn_qbegin(&d, j);
		for (int pass = 0; pass < p.kv_passes; pass++) {
			float ak[RTC_ATTN_NV], av[RTC_ATTN_NV];
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++)
				ak[t] = av[t] = 0.f;
			for (int64_t g = 0; g < group; g++) {
				const int64_t h = kvh * group + g;
				for (int64_t i0 = ibegin; i0 < d.lq; i0 += 32) {
					const int n = (int)rt_min64(32, d.lq - i0);
					const int64_t row0 = rtc_attn_q_row(&d, b, h, i0);
					float dcap, dd, pr = 0.f, ds = 0.f;
					float s = rtc_attn_score_dcap(
					        &d,
					        grad_dot(k, r, q, row0, n, (const T *)nullptr,
					                 nullptr, dk, lane, ta, tb, sv),
					        &dcap);
					float dp = grad_dot(v, r, dy, row0, n, y, &dd, dv, lane, ta,
					                    tb, sv);
					if (lane < n) {
						s = grad_masked(d, io.mask, s, b, h, i0 + lane, j);
						pr = rtc_attn_prob(s, io.lse[row0 + lane]);
						ds = rtc_attn_dscore(pr, dp, dd, dcap);
					}
					for (int rr = 0; rr < n; rr++) {
						const float pb = __shfl_sync(0xffffffffu, pr, rr);
						const float db = __shfl_sync(0xffffffffu, ds, rr);
						const T *qr = q + (row0 + rr) * dk;
						const Y *gr = dy + (row0 + rr) * dv;
#pragma unroll
						for (int t = 0; t < RTC_ATTN_NV; t++) {
							const int64_t c =
							        rtc_attn_col(pass, lane, t);
							if (c < dk)
								ak[t] += db * to_acc(qr[c]);
							if (c < dv)
								av[t] += pb * to_acc(gr[c]);
						}
					}
				}
			}
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++) {
				const int64_t c = rtc_attn_col(pass, lane, t);
				if (c < dk)
					gk[r * dk + c] = to_store<T>(d.scale * ak[t]);
				if (c < dv)
					gv[r * dv + c] = to_store<T>(av[t]);
			}
		}
	}
}

/* Pass 2: dq, a warp per query row (rtc_index_attention.h). */
template <class T, class Y>
__global__ void __launch_bounds__(RTC_THREADS)
        attn_grad_rows(const __grid_constant__ struct rt_attention_desc d,
                       const __grid_constant__ struct rtc_attn_grad p,
                       const __grid_constant__ struct attn_grad_io io)
{
	__shared__ float ta_all[ATTN_WARPS][32][RTC_ATTN_DC + 1];
	__shared__ float sv_all[ATTN_WARPS][RTC_ATTN_DC];
	const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
	const T *q = (const T *)io.q, *k = (const T *)io.k, *v = (const T *)io.v;
	const Y *y = (const Y *)io.y, *dy = (const Y *)io.dy;
	T *gq = (T *)io.dq;
	float(*ta)[RTC_ATTN_DC + 1] = ta_all[w];
	float *sv = sv_all[w];
	const int64_t dk = d.dk, dv = d.dv, step = rtc_rows_step(&p.rows);
	/* a warp's rows: the whole warp takes each (the shuffles need it) */
	for (int64_t row = rtc_rows_first(&p.rows, blockIdx.x, threadIdx.x); row < p.nrows;
	     row += step) {
		int64_t b, h, i;
		rtc_attn_row(&d, row, &b, &h, &i);
		const int64_t kend = rtc_attn_kend(&d, i), kv = rtc_attn_kv_row(&d, b, h, 0);
		const float lse = io.lse[row];
		float dd = 0.f; /* D_i, every lane, over c in order (pass 1's order) */
		for (int64_t c = 0; c < dv; c++)
			dd += to_acc(y[row * dv + c]) * to_acc(dy[row * dv + c]);
		for (int pass = 0; pass < p.q_passes; pass++) {
			float acc[RTC_ATTN_NV];
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++)
				acc[t] = 0.f;
			for (int64_t j0 = 0; j0 < kend; j0 += RTC_ATTN_KC) {
				const int n = (int)rt_min64(RTC_ATTN_KC, kend - j0);
				float dcap, ds = 0.f;
				float s = rtc_attn_score_dcap(&d,
				                              grad_dot(q, row, k, kv + j0, n,
				                                       (const T *)nullptr, nullptr,
				                                       dk, lane, ta, ta, sv),
				                              &dcap);
				float dp = grad_dot(dy, row, v, kv + j0, n, (const T *)nullptr,
				                    nullptr, dv, lane, ta, ta, sv);
				if (lane < n) {
					s = grad_masked(d, io.mask, s, b, h, i, j0 + lane);
					ds = rtc_attn_dscore(rtc_attn_prob(s, lse), dp, dd, dcap);
				}
				for (int rr = 0; rr < n; rr++) {
					const float db = __shfl_sync(0xffffffffu, ds, rr);
					const T *kr = k + (kv + j0 + rr) * dk;
#pragma unroll
					for (int t = 0; t < RTC_ATTN_NV; t++) {
						const int64_t c = rtc_attn_col(pass, lane, t);
						if (c < dk)
							acc[t] += db * to_acc(kr[c]);
					}
				}
			}
#pragma unroll
			for (int t = 0; t < RTC_ATTN_NV; t++) {
				const int64_t c = rtc_attn_col(pass, lane, t);
				if (c < dk)
					gq[row * dk + c] = to_store<T>(d.scale * acc[t]);
			}
		}
	}
}

template <class T, class Y>
static void grad_launch(const struct rt_attention_desc &d, const struct rtc_attn_grad &p,
                        const struct attn_grad_io &io, cudaStream_t st)
{
	if (p.nkeys > 0)
		attn_grad_keys<T, Y><<<p.keys.blocks, p.keys.threads, 0, st>>>(d, p, io);
	if (p.nrows > 0)
		attn_grad_rows<T, Y><<<p.rows.blocks, p.rows.threads, 0, st>>>(d, p, io);
}

template <class T>
static void grad_launch_y(int yt, const struct rt_attention_desc &d, const struct rtc_attn_grad &p,
                          const struct attn_grad_io &io, cudaStream_t st)
{
	switch (yt) {
	case RT_F16: grad_launch<T, f16>(d, p, io, st); break;
	case RT_BF16: grad_launch<T, bf16>(d, p, io, st); break;
	default: grad_launch<T, float>(d, p, io, st);
	}
}

int rtc_attention_grad_kernel(struct rtc_model *m, const struct rt_attention_desc *d, const void *q,
                              const void *k, const void *v, const void *y, const void *lse,
                              const void *dy, const void *mask, void *dq, void *dk, void *dv)
{
	struct rtc_attn_grad p;
	const int yt = lin_float(d->dtype) ? rtc_out_dtype(d->dtype, d->ydtype) : 0;
	bool ok = yt && (!d->mdtype || lin_float(d->mdtype)) && q && k && v && y && lse && dy &&
	          dq && dk && dv && (d->mask != RT_ATTN_NONE) == !!mask;
	if (!ok || !rtc_attn_grad_plan(d, rtc_sm_count(m), &p))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_attention_grad: unsupported descriptor");
	if (p.nkeys == 0 && p.nrows == 0)
		return RT_OK;
	struct attn_grad_io io = { q, k, v, y, dy, mask, (const float *)lse, dq, dk, dv };
	cudaStream_t st = rtc_stream(m);
	switch (d->dtype) {
	case RT_F16: grad_launch_y<f16>(yt, *d, p, io, st); break;
	case RT_BF16: grad_launch_y<bf16>(yt, *d, p, io, st); break;
	default: grad_launch_y<float>(yt, *d, p, io, st);
	}
	return rtc_launched(m, "rtc_attention_grad");
}

int rtc_attention_kernel_takes(const struct rt_attention_desc *d, int backward)
{
	struct rtc_attn p;
	struct rtc_attn_grad g;
	bool ok = lin_float(d->dtype) && rtc_out_dtype(d->dtype, d->ydtype) &&
	          (!d->mdtype || lin_float(d->mdtype));
	return ok && (backward ? rtc_attn_grad_plan(d, 1, &g) : rtc_attn_plan(d, 1, &p));
}

/* ------------------------------------------------------------------------ */
/* Finishing cuDNN's runs with a bias (rtc_sdpa.c)                          */
/* ------------------------------------------------------------------------ */

/*
 * A warp per row, as attn_rows hands them out. Only a row whose lse came
 * out non-finite reads its bias: the warp scans the visible keys 32 at a
 * time and stops at the first one that is not -inf; a row with none is
 * fully masked and becomes y = 0, lse = -inf. (A NaN bias counts as seen:
 * such a row keeps cuDNN's NaN, as the kernel's would be NaN.)
 */
template <class T, class M>
__global__ void __launch_bounds__(RTC_THREADS)
        sdpa_fix_rows(const __grid_constant__ struct rt_attention_desc d,
                      const __grid_constant__ struct rtc_rows rows, const M *mask, T *y, float *lse,
                      int64_t nrows)
{
	const int lane = threadIdx.x % 32;
	const int64_t step = rtc_rows_step(&rows);
	for (int64_t row = rtc_rows_first(&rows, blockIdx.x, threadIdx.x); row < nrows;
	     row += step) {
		int64_t b, h, i;
		bool seen = false;
		if (isfinite(lse[row])) /* the same for the whole warp */
			continue;
		rtc_attn_row(&d, row, &b, &h, &i);
		const int64_t kend = rtc_attn_kend(&d, i);
		for (int64_t j0 = 0; j0 < kend && !seen; j0 += 32) {
			const int64_t j = j0 + lane;
			const float x = j < kend ? to_acc(mask[rtc_attn_mask_at(&d, b, h, i, j)])
			                         : -INFINITY;
			seen = __any_sync(0xffffffffu, x != -INFINITY);
		}
		if (seen)
			continue;
		for (int64_t c = lane; c < d.dv; c += 32)
			y[row * d.dv + c] = to_store<T>(0.0f);
		if (lane == 0)
			lse[row] = -INFINITY;
	}
}

int rtc_sdpa_fix_rows(struct rtc_model *m, const struct rt_attention_desc *d, const void *mask,
                      void *y, float *lse)
{
	const int64_t nrows = d->batch * d->q_heads * d->lq;
	const struct rtc_rows rows = rtc_rows_group(nrows, 32, rtc_sm_count(m));
	cudaStream_t st = rtc_stream(m);
	if (nrows <= 0)
		return RT_OK;
	/* the bias is of dtype or FP32 (rtc_sdpa_refusal) */
	if (d->mdtype == RT_F32 && d->dtype == RT_BF16)
		sdpa_fix_rows<bf16, float><<<rows.blocks, rows.threads, 0, st>>>(
		        *d, rows, (const float *)mask, (bf16 *)y, lse, nrows);
	else if (d->mdtype == RT_F32)
		sdpa_fix_rows<f16, float><<<rows.blocks, rows.threads, 0, st>>>(
		        *d, rows, (const float *)mask, (f16 *)y, lse, nrows);
	else if (d->dtype == RT_BF16)
		sdpa_fix_rows<bf16, bf16><<<rows.blocks, rows.threads, 0, st>>>(
		        *d, rows, (const bf16 *)mask, (bf16 *)y, lse, nrows);
	else
		sdpa_fix_rows<f16, f16><<<rows.blocks, rows.threads, 0, st>>>(
		        *d, rows, (const f16 *)mask, (f16 *)y, lse, nrows);
	return rtc_launched(m, "rtc_attention (cuDNN's fully masked rows)");
}

__global__ void __launch_bounds__(RTC_THREADS)
        sdpa_grad_lse(const float *lse, float *out, int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		const float x = lse[i];
		out[i] = x == -INFINITY ? INFINITY : x;
	}
}

int rtc_sdpa_grad_lse(struct rtc_model *m, int64_t rows, const float *lse, float *out)
{
	if (rows <= 0)
		return RT_OK;
	sdpa_grad_lse<<<rtc_blocks(rows, RTC_THREADS, rtc_sm_count(m)), RTC_THREADS, 0,
	                rtc_stream(m)>>>(lse, out, rows);
	return rtc_launched(m, "rtc_attention_grad (cuDNN's lse)");
}
