/*
 * rt_flash.c - fused scaled dot-product attention on the CPU, tiled with
 * the online softmax (FlashAttention-2's loop order).
 *
 * One item is a block of RT_FLASH_BR query rows of one (batch, query head).
 * The item streams its kv head's keys and values in blocks of RT_FLASH_BC:
 *   S = scale * Q_blk K_blk^T             (a GEMM into the item's scratch)
 *   S = softcap * tanh(S / softcap), + bias / -inf where masked or causal
 *   m' = max(m, rowmax S), P = e^(S - m'), l = e^(m - m') l + rowsum P
 *   O = e^(m - m') O + P V_blk            (a GEMM accumulating into O)
 * and ends with y = O / l, lse = m + log l. So the scores never exist
 * beyond one Br x Bc tile per thread: memory is O(Br (Bc + dv)) per thread
 * whatever the sequence length. Under a causal mask the key blocks wholly
 * after a query block's last row are never visited, and only the blocks
 * that straddle the diagonal test each element.
 *
 * Query heads of one group read their kv head's K and V in place (GQA
 * without copies). Items are independent and each row's arithmetic is the
 * same whatever the thread count, so results do not depend on it.
 *
 * The GEMMs are the runtime's own sgemm on the calling thread (rt_sgemm.h)
 * or, on a CPU without AVX2, OpenBLAS. Arithmetic is FP32 throughout. The
 * forward packs every key block's K^T and V into sgemm panels once per
 * call (O(L d) memory, as big as K and V), so the query blocks that read a
 * block do not each pack it again (8% at 1k tokens), and with AVX-512 the
 * exponentials and their row sum are one pass (another 8%).
 */
#include "onnxc_rt.h"
#include "rt_sgemm.h"

#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RT_FLASH_BR 128 /* query rows per item */
#define RT_FLASH_BC 128 /* keys per block */

struct flash_job {
	const struct rt_attention_desc *d;
	const float *q, *k, *v, *bias;
	const float *y, *lse, *dy; /* the backward's */
	float *dq, *dk, *dv;
	const unsigned char *keep;
	float *yo, *lo; /* the forward's results */
	int isa;
	int64_t qblocks;
	/* the forward's keys (as K^T) and values packed once per key block for
	 * rt_sgemm (kp, vp: NULL when not), block i of kv head kvh at
	 * (kvh * kblocks + i) * ksz and ... * vsz */
	float *kp, *vp;
	int64_t kblocks, ksz, vsz;
	atomic_int failed;
};

/* C (m x n, ldc) = alpha A B (+ C when beta), A(i, p) = a[i a_rs + p a_cs],
 * B(p, j) = b[p b_rs + j b_cs]; one stride of each is 1. packed: B packed
 * by pack_items already (or NULL). */
static void tile_gemm(int isa, int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                      int64_t a_cs, const float *b, int64_t b_rs, int64_t b_cs, float *c,
                      int64_t ldc, float alpha, int beta, const float *packed)
{
	if (isa != RT_SGEMM_BLAS) {
		struct rt_sgemm g = { .isa = isa,
			              .m = m,
			              .n = n,
			              .k = k,
			              .a = a,
			              .a_rs = a_rs,
			              .a_cs = a_cs,
			              .b = packed ? NULL : b,
			              .b_rs = b_rs,
			              .b_cs = b_cs,
			              .b_packed = packed,
			              .c = c,
			              .ldc = ldc,
			              .alpha = alpha,
			              .beta = beta };
		rt_sgemm_serial(&g);
		return;
	}
	cblas_sgemm(CblasRowMajor, a_cs == 1 ? CblasNoTrans : CblasTrans,
	            b_cs == 1 ? CblasNoTrans : CblasTrans, (int)m, (int)n, (int)k, alpha, a,
	            (int)(a_cs == 1 ? a_rs : a_cs), b, (int)(b_cs == 1 ? b_rs : b_cs),
	            beta ? 1.0f : 0.0f, c, (int)ldc);
}

/* Items are (batch, kv head, key block): K^T and V of the block packed
 * into the job's kp and vp. */
static void pack_items(void *arg, int64_t begin, int64_t end)
{
	struct flash_job *jb = arg;
	const struct rt_attention_desc *d = jb->d;
	for (int64_t it = begin; it < end; it++) {
		int64_t kvh = it / jb->kblocks, j0 = (it % jb->kblocks) * RT_FLASH_BC;
		int64_t bc = d->lk - j0 < RT_FLASH_BC ? d->lk - j0 : RT_FLASH_BC;
		struct rt_sgemm kt = { .isa = jb->isa,
			               .k = d->dk,
			               .n = bc,
			               .b = jb->k + (kvh * d->lk + j0) * d->dk,
			               .b_rs = 1,
			               .b_cs = d->dk };
		struct rt_sgemm v = { .isa = jb->isa,
			              .k = bc,
			              .n = d->dv,
			              .b = jb->v + (kvh * d->lk + j0) * d->dv,
			              .b_rs = d->dv,
			              .b_cs = 1 };
		rt_sgemm_pack(&kt, jb->kp + it * jb->ksz);
		rt_sgemm_pack(&v, jb->vp + it * jb->vsz);
	}
}

/* The scores of rows [i0, i0 + br) against keys [j0, j0 + bc) in s (row
 * stride RT_FLASH_BC) are final: capped, biased, masked. Returns each row's
 * count of keys the causal mask leaves in the block in lim. */
static void finish_scores(const struct flash_job *jb, int64_t b, int64_t h, int64_t i0, int64_t br,
                          int64_t j0, int64_t bc, float *s, float *t, int64_t *lim)
{
	const struct rt_attention_desc *d = jb->d;
	const int64_t *ms = d->mask_strides;
	float cap = d->softcap;
	for (int64_t r = 0; r < br; r++) {
		float *row = s + r * RT_FLASH_BC;
		int64_t i = i0 + r, n = bc, base = b * ms[0] + h * ms[1] + i * ms[2];
		if (d->causal) {
			int64_t last = i + d->causal_offset - j0 + 1; /* keys j0 .. j0 + last - 1 */
			n = last < 0 ? 0 : last < bc ? last : bc;
		}
		lim[r] = n;
		if (cap > 0)
			for (int64_t c = 0; c < n; c++) {
				float th = tanhf(row[c] / cap);
				if (t) /* the backward's 1 - tanh^2 */
					t[r * RT_FLASH_BC + c] = th;
				row[c] = cap * th;
			}
		if (d->mask == RT_ATTN_BIAS)
			for (int64_t c = 0; c < n; c++)
				row[c] += jb->bias[base + (j0 + c) * ms[3]];
		else if (d->mask == RT_ATTN_BOOL)
			for (int64_t c = 0; c < n; c++)
				if (!jb->keep[base + (j0 + c) * ms[3]])
					row[c] = -INFINITY;
	}
}

/*
 * x[i] = e^(x[i] - m) for a row of scores, m their max (so every argument is
 * <= 0, -inf or NaN): Cephes' expf, whose range reduction and polynomial
 * are within 1 ulp of e^x, written as plain arithmetic on each element so
 * that the compiler vectorizes it, once per instruction set. Arguments
 * below -87.3 (e^x below FP32's normals, and -inf: masked keys) give
 * exactly 0; NaN stays NaN.
 */
#define EXP_ROW_BODY                                                                           \
	for (int64_t i = 0; i < n; i++) {                                                      \
		float t = x[i] - m, c = t < -87.3f ? -87.3f : t;                               \
		float kf = c * 1.44269504088896341f + 12582912.0f; /* round(c / ln 2) */       \
		float k = kf - 12582912.0f, r, p, e;                                           \
		int32_t ki, bits;                                                              \
		memcpy(&ki, &kf, sizeof ki);                                                   \
		ki -= 0x4B400000;                                                              \
		r = c - k * 0.693359375f + k * 2.12194440e-4f;                                 \
		p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + \
		      4.1665795894e-2f) *                                                      \
		             r +                                                               \
		     1.6666665459e-1f) *                                                       \
		            r +                                                                \
		    5.0000001201e-1f;                                                          \
		e = r * r * p + r + 1.0f;                                                      \
		memcpy(&bits, &e, sizeof bits);                                                \
		bits += ki * (1 << 23);                                                        \
		memcpy(&e, &bits, sizeof e);                                                   \
		x[i] = t < -87.3f ? 0.0f : e;                                                  \
	}

__attribute__((target("avx512f"))) static void exp_row_avx512(float *x, int64_t n, float m)
{
	EXP_ROW_BODY
}
__attribute__((target("avx2,fma"))) static void exp_row_avx2(float *x, int64_t n, float m)
{
	EXP_ROW_BODY
}
static void exp_row_plain(float *x, int64_t n, float m) { EXP_ROW_BODY }

static void exp_row(int isa, float *x, int64_t n, float m)
{
	if (isa == RT_SGEMM_AVX512)
		exp_row_avx512(x, n, m);
	else if (isa == RT_SGEMM_AVX2)
		exp_row_avx2(x, n, m);
	else
		exp_row_plain(x, n, m);
}

/*
 * exp_row and the sum of the results in one pass, for the forward's online
 * softmax (AVX-512): the same reduction and polynomial as EXP_ROW_BODY,
 * with 2^k applied by scalef (exact where e^x is a normal float; it also
 * keeps the subnormals the integer trick would garble) and the sum kept in
 * 16 lanes added in a fixed order at the end, as reduce_avx512 does.
 */
__attribute__((target("avx512f"))) static float exp_sum_avx512(float *x, int64_t n, float m)
{
	const __m512 vm = _mm512_set1_ps(m), lo = _mm512_set1_ps(-87.3f);
	__m512 acc = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 in = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, x + i), vm);
		__m512 c = _mm512_max_ps(lo, t); /* t when t is NaN */
		__m512 k =
		        _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
		                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), c);
		__m512 p, e;
		r = _mm512_fmadd_ps(k, _mm512_set1_ps(2.12194440e-4f), r);
		p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r,
		                    _mm512_set1_ps(1.3981999507e-3f));
		p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
		p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
		p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
		p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
		e = _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
		e = _mm512_maskz_scalef_ps(_mm512_mask_cmp_ps_mask(in, t, lo, _CMP_NLT_UQ), e, k);
		_mm512_mask_storeu_ps(x + i, in, e);
		acc = _mm512_add_ps(acc, e); /* lanes past n are 0 */
	}
	return _mm512_reduce_add_ps(acc);
}

/* The largest of x[0..n) (max: -inf for none) or their sum: 16 or 8 lanes,
 * then the lanes in a fixed order, so every thread count gives the same
 * sum. A NaN among them may or may not be the max; the row is NaN either
 * way. */
static float reduce_tail(const float *x, int64_t i, int64_t n, float r, int max)
{
	for (; i < n; i++)
		r = max ? (x[i] > r ? x[i] : r) : r + x[i];
	return r;
}
__attribute__((target("avx512f"))) static float reduce_avx512(const float *x, int64_t n, int max)
{
	__m512 acc = _mm512_set1_ps(max ? -INFINITY : 0.0f);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i);
		acc = max ? _mm512_max_ps(acc, v) : _mm512_add_ps(acc, v);
	}
	return reduce_tail(x, i, n, max ? _mm512_reduce_max_ps(acc) : _mm512_reduce_add_ps(acc),
	                   max);
}
__attribute__((target("avx2"))) static float reduce_avx2(const float *x, int64_t n, int max)
{
	__m256 acc = _mm256_set1_ps(max ? -INFINITY : 0.0f);
	float l[8];
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		acc = max ? _mm256_max_ps(acc, v) : _mm256_add_ps(acc, v);
	}
	_mm256_storeu_ps(l, acc);
	return reduce_tail(x, i, n, reduce_tail(l, 1, 8, l[0], max), max);
}

static float row_reduce(int isa, const float *x, int64_t n, int max)
{
	if (isa == RT_SGEMM_AVX512)
		return reduce_avx512(x, n, max);
	if (isa == RT_SGEMM_AVX2)
		return reduce_avx2(x, n, max);
	return reduce_tail(x, 0, n, max ? -INFINITY : 0.0f, max);
}

/* One online-softmax step for rows of s: s becomes P (zeros past lim), m and
 * l are updated and the rows of o rescaled. */
static void online_softmax(int isa, float *s, const int64_t *lim, int64_t br, int64_t bc, float *m,
                           float *l, float *o, int64_t dv)
{
	for (int64_t r = 0; r < br; r++) {
		float *row = s + r * RT_FLASH_BC, mx, mn, corr, sum;
		int64_t n = lim[r];
		mx = row_reduce(isa, row, n, 1);
		mn = mx > m[r] ? mx : m[r];
		if (mn == -INFINITY) { /* everything so far masked: nothing to add */
			memset(row, 0, sizeof *row * (size_t)bc);
			continue;
		}
		if (isa == RT_SGEMM_AVX512)
			sum = exp_sum_avx512(row, n, mn);
		else {
			exp_row(isa, row, n, mn);
			sum = row_reduce(isa, row, n, 0);
		}
		if (n < bc)
			memset(row + n, 0, sizeof *row * (size_t)(bc - n));
		corr = expf(m[r] - mn); /* 0 when m was -inf */
		if (corr != 1) {
			float *orow = o + r * dv;
			for (int64_t c = 0; c < dv; c++)
				orow[c] *= corr;
		}
		l[r] = l[r] * corr + sum;
		m[r] = mn;
	}
}

/* The keys query rows [i0, i0 + br) see: all, or under a causal mask those
 * up to the last row's limit (later key blocks are never visited). */
static int64_t key_end(const struct rt_attention_desc *d, int64_t i0, int64_t br)
{
	int64_t last = i0 + br - 1 + d->causal_offset + 1;
	if (!d->causal)
		return d->lk;
	return last < 0 ? 0 : last < d->lk ? last : d->lk;
}

static void flash_items(void *arg, int64_t begin, int64_t end)
{
	struct flash_job *jb = arg;
	const struct rt_attention_desc *d = jb->d;
	int64_t dk = d->dk, dv = d->dv, group = d->q_heads / d->kv_heads;
	size_t floats = (size_t)RT_FLASH_BR * (RT_FLASH_BC + (size_t)dv + 2);
	float *s = malloc(sizeof *s * floats), *o, *m, *l;
	int64_t lim[RT_FLASH_BR];
	if (!s) {
		atomic_store(&jb->failed, 1);
		return;
	}
	o = s + RT_FLASH_BR * RT_FLASH_BC;
	m = o + RT_FLASH_BR * dv;
	l = m + RT_FLASH_BR;
	for (int64_t it = begin; it < end; it++) {
		int64_t bh = it / jb->qblocks, b = bh / d->q_heads, h = bh % d->q_heads;
		int64_t i0 = (it % jb->qblocks) * RT_FLASH_BR;
		int64_t br = d->lq - i0 < RT_FLASH_BR ? d->lq - i0 : RT_FLASH_BR;
		int64_t kvh = b * d->kv_heads + h / group, kend = key_end(d, i0, br);
		const float *q = jb->q + (bh * d->lq + i0) * dk;
		const float *k = jb->k + kvh * d->lk * dk, *v = jb->v + kvh * d->lk * dv;
		float *y = jb->yo + (bh * d->lq + i0) * dv;
		memset(o, 0, sizeof *o * (size_t)(br * dv));
		for (int64_t r = 0; r < br; r++)
			m[r] = -INFINITY, l[r] = 0;
		for (int64_t j0 = 0; j0 < kend; j0 += RT_FLASH_BC) {
			int64_t bc = kend - j0 < RT_FLASH_BC ? kend - j0 : RT_FLASH_BC;
			int64_t blk = kvh * jb->kblocks + j0 / RT_FLASH_BC;
			tile_gemm(jb->isa, br, bc, dk, q, dk, 1, k + j0 * dk, 1, dk, s, RT_FLASH_BC,
			          d->scale, 0, jb->kp ? jb->kp + blk * jb->ksz : NULL);
			finish_scores(jb, b, h, i0, br, j0, bc, s, NULL, lim);
			online_softmax(jb->isa, s, lim, br, bc, m, l, o, dv);
			/* V's panels were packed for the whole block: a block the causal
			 * limit cuts short multiplies V as it is */
			tile_gemm(jb->isa, br, dv, bc, s, RT_FLASH_BC, 1, v + j0 * dv, dv, 1, o, dv,
			          1, 1,
			          jb->vp && bc == (d->lk - j0 < RT_FLASH_BC ? d->lk - j0
			                                                    : RT_FLASH_BC)
			                  ? jb->vp + blk * jb->vsz
			                  : NULL);
		}
		for (int64_t r = 0; r < br; r++) {
			float inv = l[r] > 0 ? 1 / l[r] : 0;
			for (int64_t c = 0; c < dv; c++)
				y[r * dv + c] = o[r * dv + c] * inv;
			if (jb->lo)
				jb->lo[bh * d->lq + i0 + r] =
				        l[r] > 0 ? m[r] + logf(l[r]) : -INFINITY;
		}
	}
	free(s);
}

/* Can the kernels run d (f32, sizes that fit, a mask iff it says one)? */
static bool valid(const struct rt_attention_desc *d, const void *mask)
{
	return d->dtype == RT_F32 && (!d->ydtype || d->ydtype == RT_F32) &&
	       (!d->mdtype || d->mdtype == RT_F32) && d->batch >= 0 && d->lq >= 0 && d->lk >= 0 &&
	       d->dk > 0 && d->dv > 0 && d->kv_heads > 0 && d->q_heads > 0 &&
	       d->q_heads % d->kv_heads == 0 && d->mask >= RT_ATTN_NONE &&
	       d->mask <= RT_ATTN_BOOL && (d->mask != RT_ATTN_NONE) == !!mask &&
	       d->dk <= INT32_MAX && d->dv <= INT32_MAX && d->lk <= INT32_MAX && d->lq <= INT32_MAX;
}

/* The job's mask, kernels and query blocks, once q, k, v and the
 * descriptor are known valid (false: they are not). */
static bool job_init(struct flash_job *jb, const void *mask)
{
	if (!valid(jb->d, mask) || !jb->q || !jb->k || !jb->v)
		return false;
	if (jb->d->mask == RT_ATTN_BIAS)
		jb->bias = mask;
	else
		jb->keep = mask;
	jb->isa = rt_sgemm_isa();
	jb->qblocks = (jb->d->lq + RT_FLASH_BR - 1) / RT_FLASH_BR;
	atomic_init(&jb->failed, 0);
	return true;
}

int rt_attention(struct rt_ctx *ctx, const struct rt_attention_desc *d, const void *q,
                 const void *k, const void *v, const void *mask, void *y, void *lse)
{
	struct flash_job jb = { .d = d, .q = q, .k = k, .v = v, .yo = y, .lo = lse };
	int64_t blocks;
	if (!y || !job_init(&jb, mask))
		return RT_ERR_ARGUMENT;
	/* K and V packed once, not once per query block (without the memory
	 * for it, or on BLAS, each GEMM packs its own) */
	jb.kblocks = (d->lk + RT_FLASH_BC - 1) / RT_FLASH_BC;
	blocks = d->batch * d->kv_heads * jb.kblocks;
	if (jb.isa != RT_SGEMM_BLAS && d->dk <= RT_SGEMM_KC && d->dv <= RT_SGEMM_NC && blocks > 0 &&
	    jb.qblocks * (d->q_heads / d->kv_heads) > 1) {
		jb.ksz = rt_sgemm_packed_floats(jb.isa, d->dk, RT_FLASH_BC);
		jb.vsz = rt_sgemm_packed_floats(jb.isa, RT_FLASH_BC, d->dv);
		/* the kernels load panels aligned; ksz and vsz are whole panels */
		jb.kp = rt_alloc_aligned(64, sizeof(float) * (size_t)(blocks * (jb.ksz + jb.vsz)));
		if (jb.kp) {
			jb.vp = jb.kp + blocks * jb.ksz;
			rt_parallel(ctx, blocks, 1, pack_items, &jb);
		}
	}
	rt_parallel(ctx, d->batch * d->q_heads * jb.qblocks, 1, flash_items, &jb);
	free(jb.kp);
	return atomic_load(&jb.failed) ? RT_ERR_NO_MEMORY : RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Backward (FlashAttention-2's two passes)                                 */
/* ------------------------------------------------------------------------ */

/*
 * The probabilities of rows [i0, i0 + br) of head h against keys [j0, j0 +
 * bc), recomputed from the forward's log-sum-exp: P = e^(S - lse) into s
 * (zeros where masked), the softcap's tanh into t.
 */
static void recompute_p(const struct flash_job *jb, int64_t b, int64_t h, int64_t i0, int64_t br,
                        int64_t j0, int64_t bc, float *s, float *t, int64_t *lim)
{
	const struct rt_attention_desc *d = jb->d;
	int64_t bh = b * d->q_heads + h, kvh = b * d->kv_heads + h / (d->q_heads / d->kv_heads);
	tile_gemm(jb->isa, br, bc, d->dk, jb->q + (bh * d->lq + i0) * d->dk, d->dk, 1,
	          jb->k + (kvh * d->lk + j0) * d->dk, 1, d->dk, s, RT_FLASH_BC, d->scale, 0, NULL);
	finish_scores(jb, b, h, i0, br, j0, bc, s, t, lim);
	for (int64_t r = 0; r < br; r++) {
		float *row = s + r * RT_FLASH_BC, l = jb->lse[bh * d->lq + i0 + r];
		if (l == -INFINITY || lim[r] == 0) {
			memset(row, 0, sizeof *row * (size_t)bc);
			continue;
		}
		exp_row(jb->isa, row, lim[r], l);
		if (lim[r] < bc)
			memset(row + lim[r], 0, sizeof *row * (size_t)(bc - lim[r]));
	}
}

/* dS = P * (dP - D) (through the softcap's 1 - tanh^2) in place of P in s,
 * with dP = dO V^T in dp and D = rowsum(dO * O) in dd. */
static void scores_grad(const struct flash_job *jb, int64_t b, int64_t h, int64_t i0, int64_t br,
                        int64_t j0, int64_t bc, float *s, const float *t, float *dp,
                        const float *dd, const int64_t *lim)
{
	const struct rt_attention_desc *d = jb->d;
	int64_t bh = b * d->q_heads + h, kvh = b * d->kv_heads + h / (d->q_heads / d->kv_heads);
	tile_gemm(jb->isa, br, bc, d->dv, jb->dy + (bh * d->lq + i0) * d->dv, d->dv, 1,
	          jb->v + (kvh * d->lk + j0) * d->dv, 1, d->dv, dp, RT_FLASH_BC, 1, 0, NULL);
	for (int64_t r = 0; r < br; r++) {
		float *row = s + r * RT_FLASH_BC, *g = dp + r * RT_FLASH_BC;
		for (int64_t c = 0; c < lim[r]; c++)
			row[c] *= g[c] - dd[r];
		if (t)
			for (int64_t c = 0; c < lim[r]; c++)
				row[c] *= 1 - t[r * RT_FLASH_BC + c] * t[r * RT_FLASH_BC + c];
	}
}

/* D = rowsum(dO * O) for rows [i0, i0 + br) of (b, h) */
static void rows_d(const struct flash_job *jb, int64_t bh, int64_t i0, int64_t br, float *dd)
{
	const struct rt_attention_desc *d = jb->d;
	for (int64_t r = 0; r < br; r++) {
		const float *o = jb->y + (bh * d->lq + i0 + r) * d->dv,
		            *g = jb->dy + (bh * d->lq + i0 + r) * d->dv;
		float acc = 0;
		for (int64_t c = 0; c < d->dv; c++)
			acc += o[c] * g[c];
		dd[r] = acc;
	}
}

/* The first query row a key block [j0, ...) is visible from (causal). */
static int64_t first_row(const struct rt_attention_desc *d, int64_t j0)
{
	int64_t i = d->causal ? j0 - d->causal_offset : 0;
	return i < 0 ? 0 : i;
}

/* Pass 1: per (batch, kv head, key block), dK and dV over every query head
 * of the group and every query row that sees the block. */
static void grad_kv_items(void *arg, int64_t begin, int64_t end)
{
	struct flash_job *jb = arg;
	const struct rt_attention_desc *d = jb->d;
	int64_t dk = d->dk, dv = d->dv, group = d->q_heads / d->kv_heads;
	int64_t kblocks = (d->lk + RT_FLASH_BC - 1) / RT_FLASH_BC;
	size_t tile = (size_t)RT_FLASH_BR * RT_FLASH_BC;
	float *s = malloc(sizeof *s *
	                  (3 * tile + (size_t)RT_FLASH_BC * (size_t)(dk + dv) + RT_FLASH_BR)),
	      *t, *dp, *gk, *gv, *dd;
	int64_t lim[RT_FLASH_BR];
	if (!s) {
		atomic_store(&jb->failed, 1);
		return;
	}
	t = s + tile, dp = t + tile, gk = dp + tile, gv = gk + RT_FLASH_BC * dk;
	dd = gv + RT_FLASH_BC * dv;
	for (int64_t it = begin; it < end; it++) {
		int64_t kvh = it / kblocks, b = kvh / d->kv_heads,
		        j0 = (it % kblocks) * RT_FLASH_BC;
		int64_t bc = d->lk - j0 < RT_FLASH_BC ? d->lk - j0 : RT_FLASH_BC;
		memset(gk, 0, sizeof *gk * (size_t)(bc * dk));
		memset(gv, 0, sizeof *gv * (size_t)(bc * dv));
		for (int64_t g = 0; g < group; g++) {
			int64_t h = (kvh % d->kv_heads) * group + g, bh = b * d->q_heads + h;
			for (int64_t i0 = first_row(d, j0); i0 < d->lq; i0 += RT_FLASH_BR) {
				int64_t br = d->lq - i0 < RT_FLASH_BR ? d->lq - i0 : RT_FLASH_BR;
				const float *dout = jb->dy + (bh * d->lq + i0) * dv;
				recompute_p(jb, b, h, i0, br, j0, bc, s, d->softcap > 0 ? t : NULL,
				            lim);
				/* dV += P^T dO */
				tile_gemm(jb->isa, bc, dv, br, s, 1, RT_FLASH_BC, dout, dv, 1, gv,
				          dv, 1, 1, NULL);
				rows_d(jb, bh, i0, br, dd);
				scores_grad(jb, b, h, i0, br, j0, bc, s, d->softcap > 0 ? t : NULL,
				            dp, dd, lim);
				/* dK += scale dS^T Q */
				tile_gemm(jb->isa, bc, dk, br, s, 1, RT_FLASH_BC,
				          jb->q + (bh * d->lq + i0) * dk, dk, 1, gk, dk, d->scale,
				          1, NULL);
			}
		}
		memcpy(jb->dk + (kvh * d->lk + j0) * dk, gk, sizeof *gk * (size_t)(bc * dk));
		memcpy(jb->dv + (kvh * d->lk + j0) * dv, gv, sizeof *gv * (size_t)(bc * dv));
	}
	free(s);
}

/* Pass 2: per (batch, query head, query block), dQ over the keys it sees. */
static void grad_q_items(void *arg, int64_t begin, int64_t end)
{
	struct flash_job *jb = arg;
	const struct rt_attention_desc *d = jb->d;
	int64_t dk = d->dk;
	size_t tile = (size_t)RT_FLASH_BR * RT_FLASH_BC;
	float *s = malloc(sizeof *s * (3 * tile + (size_t)RT_FLASH_BR * (size_t)dk + RT_FLASH_BR)),
	      *t, *dp, *gq, *dd;
	int64_t lim[RT_FLASH_BR];
	if (!s) {
		atomic_store(&jb->failed, 1);
		return;
	}
	t = s + tile, dp = t + tile, gq = dp + tile, dd = gq + RT_FLASH_BR * dk;
	for (int64_t it = begin; it < end; it++) {
		int64_t bh = it / jb->qblocks, b = bh / d->q_heads, h = bh % d->q_heads;
		int64_t i0 = (it % jb->qblocks) * RT_FLASH_BR;
		int64_t br = d->lq - i0 < RT_FLASH_BR ? d->lq - i0 : RT_FLASH_BR,
		        kend = key_end(d, i0, br);
		int64_t kvh = b * d->kv_heads + h / (d->q_heads / d->kv_heads);
		memset(gq, 0, sizeof *gq * (size_t)(br * dk));
		rows_d(jb, bh, i0, br, dd);
		for (int64_t j0 = 0; j0 < kend; j0 += RT_FLASH_BC) {
			int64_t bc = kend - j0 < RT_FLASH_BC ? kend - j0 : RT_FLASH_BC;
			recompute_p(jb, b, h, i0, br, j0, bc, s, d->softcap > 0 ? t : NULL, lim);
			scores_grad(jb, b, h, i0, br, j0, bc, s, d->softcap > 0 ? t : NULL, dp, dd,
			            lim);
			/* dQ += scale dS K */
			tile_gemm(jb->isa, br, dk, bc, s, RT_FLASH_BC, 1,
			          jb->k + (kvh * d->lk + j0) * dk, dk, 1, gq, dk, d->scale, 1,
			          NULL);
		}
		memcpy(jb->dq + (bh * d->lq + i0) * dk, gq, sizeof *gq * (size_t)(br * dk));
	}
	free(s);
}

int rt_attention_grad(struct rt_ctx *ctx, const struct rt_attention_desc *d, const void *q,
                      const void *k, const void *v, const void *y, const void *lse, const void *dy,
                      const void *mask, void *dq, void *dk, void *dv)
{
	struct flash_job jb = { .d = d,
		                .q = q,
		                .k = k,
		                .v = v,
		                .y = y,
		                .lse = lse,
		                .dy = dy,
		                .dq = dq,
		                .dk = dk,
		                .dv = dv };
	if (!y || !lse || !dy || !dq || !dk || !dv || !job_init(&jb, mask))
		return RT_ERR_ARGUMENT;
	rt_parallel(ctx, d->batch * d->kv_heads * ((d->lk + RT_FLASH_BC - 1) / RT_FLASH_BC), 1,
	            grad_kv_items, &jb);
	rt_parallel(ctx, d->batch * d->q_heads * jb.qblocks, 1, grad_q_items, &jb);
	return atomic_load(&jb.failed) ? RT_ERR_NO_MEMORY : RT_OK;
}
