/*
 * rtc_index_attention.h - the plans of the attention kernels
 * (rtc_attention.cu): linear attention (rt_attention.c's semantics) and
 * scaled dot-product attention (rt_flash.c's).
 *
 * The state S [dk, dv] of a (batch, kv head) item evolves column by
 * column: every step's update of column m (decay, the delta rule's
 * correction, key (x) value) and its reads (q^T S) involve column m alone.
 * So the kernel gives each column a group of `parts` adjacent threads of a
 * warp (a power of two, at most 32) that hold the column in registers,
 * RTC_LINATTN_DK key dimensions each - part p holds dims p, p + parts,
 * p + 2 parts, ... (interleaved, so the block's reads of the staged key
 * and query vectors are consecutive) - and sum their partial dot products
 * with xor shuffles. A block holds RTC_LINATTN_THREADS / parts columns of
 * one item; the grid is items x column blocks, every step staged through
 * shared memory once per block.
 *
 * Plain C for the host unit test (tests/unit/test_rtc_index.c emulates the
 * kernels with these functions against rt_linear_attention, rt_attention
 * and rt_attention_grad) and RT_HD for nvcc.
 */
#ifndef ONNXC_RTC_INDEX_ATTENTION_H
#define ONNXC_RTC_INDEX_ATTENTION_H

#include "onnxc_rt_cuda.h"
#include "rtc_index.h"

#define RTC_LINATTN_DK      32  /* key dims a thread holds */
#define RTC_LINATTN_THREADS 256 /* threads per block */
/* RTC_LINATTN_MAX_DK (onnxc_rt_cuda.h): 32 parts of RTC_LINATTN_DK */
#if RTC_LINATTN_MAX_DK != RTC_LINATTN_DK * 32
#error "a column's parts must fill at most a warp"
#endif

struct rtc_linattn {
	int parts;      /* threads per column */
	int cols;       /* columns per block */
	int col_blocks; /* blocks per item */
	int64_t items;  /* batch * kv_heads */
};

/* Fills p; 0 when dk is above RTC_LINATTN_MAX_DK or a size is not valid. */
RT_HOST int rtc_linattn_plan(const struct rt_linattn_desc *d, struct rtc_linattn *p)
{
	memset(p, 0, sizeof *p);
	if (d->dk <= 0 || d->dk > RTC_LINATTN_MAX_DK || d->dv <= 0 || d->batch < 0 ||
	    d->kv_heads <= 0)
		return 0;
	p->parts = 1;
	while ((int64_t)p->parts * RTC_LINATTN_DK < d->dk)
		p->parts *= 2;
	p->cols = RTC_LINATTN_THREADS / p->parts;
	p->col_blocks = (int)rt_ceil_div(d->dv, p->cols);
	p->items = d->batch * d->kv_heads;
	return 1;
}

/* Thread tid of column block cb: its column (may be past dv: then it only
 * helps stage and shuffle) and its part. */
RT_HD void rtc_linattn_thread(const struct rtc_linattn *p, int cb, int tid, int64_t *col, int *part)
{
	*part = tid % p->parts;
	*col = (int64_t)cb * p->cols + tid / p->parts;
}

/* The key dim of a part's register j. */
RT_HD int64_t rtc_linattn_dim(const struct rtc_linattn *p, int part, int j)
{
	return part + (int64_t)p->parts * j;
}

/* Where the decay (or erase gate) of step bt, kv head h and key dim i is:
 * one value per head when width is kv_heads, else one per key dim. */
RT_HD int64_t rtc_linattn_gate(int64_t width, int64_t kv_heads, int64_t dk, int64_t bt, int64_t h,
                               int64_t i)
{
	return bt * width + (width == kv_heads ? h : h * dk + i);
}

/* ------------------------------------------------------------------------ */
/* Scaled dot-product attention                                             */
/* ------------------------------------------------------------------------ */

/*
 * The online softmax (FlashAttention-2's loop order) with a warp per query
 * row, rows handed out as in the row kernels (rtc_rows_group with a warp
 * per row; a grid-stride loop). Row r = (b q_heads + h) lq + i is q's row,
 * y's row and lse's element alike. The warp walks its kv head's keys up to
 * the causal limit (rtc_attn_kend) in chunks of RTC_ATTN_KC = 32, lane l
 * scoring key j0 + l: the chunk's keys and the query are staged in shared
 * memory RTC_ATTN_DC key dims at a time (zeros past dk), and lane l sums
 * q[c] k_j[c] over c in order. The chunk's max and sum of e^(s - m') are
 * xor-shuffle reductions; a chunk whose running max is still -inf adds
 * nothing. Lane l owns the value columns rtc_attn_col(pass, l, t), t <
 * RTC_ATTN_NV, in registers: the keys' probabilities are broadcast one by
 * one and each lane adds p_j v_j[col]. A value head wider than a pass
 * (RTC_ATTN_NV * 32 columns) takes several passes over the keys, each
 * recomputing the same scores, so any dk and dv work. Pass 0 writes lse.
 *
 * Statistics and accumulators are FP32 whatever the storage type.
 */
#define RTC_ATTN_KC 32 /* keys per chunk: a lane each */
#define RTC_ATTN_DC 32 /* key dims staged at a time */
#define RTC_ATTN_NV 8  /* value columns a lane holds per pass */

struct rtc_attn {
	struct rtc_rows rows; /* a warp per row */
	int64_t nrows;        /* batch * q_heads * lq */
	int passes;           /* over the value columns */
};

/* Fills p; 0 when d is not a valid descriptor. */
RT_HOST int rtc_attn_plan(const struct rt_attention_desc *d, int sm_count, struct rtc_attn *p)
{
	memset(p, 0, sizeof *p);
	if (d->batch < 0 || d->lq < 0 || d->lk < 0 || d->dk <= 0 || d->dv <= 0 || d->q_heads <= 0 ||
	    d->kv_heads <= 0 || d->q_heads % d->kv_heads != 0 || d->mask < RT_ATTN_NONE ||
	    d->mask > RT_ATTN_BOOL)
		return 0;
	p->nrows = d->batch * d->q_heads * d->lq;
	p->rows = rtc_rows_group(p->nrows, 32, sm_count);
	p->passes = (int)rt_ceil_div(d->dv, RTC_ATTN_NV * 32);
	return 1;
}

/* Row r's batch, query head and query position. */
RT_HD void rtc_attn_row(const struct rt_attention_desc *d, int64_t r, int64_t *b, int64_t *h,
                        int64_t *i)
{
	int64_t bh = r / d->lq;
	*i = r - bh * d->lq;
	*b = bh / d->q_heads;
	*h = bh - *b * d->q_heads;
}

/* The row of key (and value) j of query head h's kv head in batch b. */
RT_HD int64_t rtc_attn_kv_row(const struct rt_attention_desc *d, int64_t b, int64_t h, int64_t j)
{
	return (b * d->kv_heads + h / (d->q_heads / d->kv_heads)) * d->lk + j;
}

/* The keys query row i sees: [0, kend) (the causal limit, else all). */
RT_HD int64_t rtc_attn_kend(const struct rt_attention_desc *d, int64_t i)
{
	int64_t last;
	if (!d->causal || d->causal_offset >= d->lk)
		return d->lk;
	last = i + d->causal_offset + 1; /* keys j <= i + causal_offset */
	return last < 0 ? 0 : last < d->lk ? last : d->lk;
}

/* The mask element of (b, h, i, j), through the broadcast strides. */
RT_HD int64_t rtc_attn_mask_at(const struct rt_attention_desc *d, int64_t b, int64_t h, int64_t i,
                               int64_t j)
{
	const int64_t *ms = d->mask_strides;
	return b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
}

/* A score from its dot product: scaled, then capped (before the mask). */
RT_HD float rtc_attn_score(const struct rt_attention_desc *d, float dot)
{
	float s = d->scale * dot;
	return d->softcap > 0 ? d->softcap * tanhf(s / d->softcap) : s;
}

/* The value column of lane `lane`'s register t in pass `pass`. */
RT_HD int64_t rtc_attn_col(int pass, int lane, int t)
{
	return ((int64_t)pass * RTC_ATTN_NV + t) * 32 + lane;
}

/* The end of a row: y = o / l (0 when nothing was seen), lse = m + log l. */
RT_HD float rtc_attn_inv(float l) { return l > 0 ? 1 / l : 0.0f; }
RT_HD float rtc_attn_lse(float m, float l) { return l > 0 ? m + logf(l) : -INFINITY; }

/* ------------------------------------------------------------------------ */
/* Its backward                                                             */
/* ------------------------------------------------------------------------ */

/*
 * FlashAttention-2's two passes, with rt_flash.c's semantics, recomputing
 * the probabilities from the forward's lse: nothing lq x lk in memory, no
 * workspace, no atomics (every result is one warp's sum in a fixed order).
 *
 * Pass 1 (dk, dv): a warp per key, item r = (b kv_heads + kvh) lk + j (k's,
 * v's, dk's and dv's row), handed out as the forward's rows with
 * RTC_ATTN_GRAD_WARPS warps a block. The warp walks every query head of
 * the kv head's group and the query rows that see key j (from
 * rtc_attn_qbegin) in chunks of 32, lane l taking row i0 + l: s (the
 * chunk's query rows and k_j staged RTC_ATTN_DC dims at a time, as the
 * forward stages keys), p = e^(s - lse) (rtc_attn_prob), dp = dy_i . v_j
 * and D_i = dy_i . y_i (dy's and y's rows and v_j staged the same way;
 * D summed over c in order, as rt_flash.c's rows_d) and ds
 * (rtc_attn_dscore). Lane l owns the columns rtc_attn_col(pass, l, t) of
 * both dk_j and dv_j; the rows' p and ds are broadcast one by one and each
 * lane adds ds_i q_i[col] and p_i dy_i[col]. Key and value heads wider
 * than a pass take several passes, each recomputing the same scores.
 *
 * Pass 2 (dq): a warp per query row, as the forward (rtc_attn_plan's
 * rows): D_i first (every lane, over c in order), then the keys up to the
 * causal limit in chunks of 32, lane l taking key j0 + l: s as the
 * forward, dp = dy_i . v_j (v's rows staged), p and ds; lane l owns dq's
 * columns rtc_attn_col(pass, l, t) and adds ds_j k_j[col].
 *
 * dq, dk and dv are scale times the sums, in the dtype of q, k and v.
 */
#define RTC_ATTN_GRAD_WARPS 4 /* warps per block of pass 1 (two staged tiles each) */

struct rtc_attn_grad {
	struct rtc_rows keys; /* pass 1: a warp per key */
	struct rtc_rows rows; /* pass 2: a warp per query row */
	int64_t nkeys;        /* batch * kv_heads * lk */
	int64_t nrows;        /* batch * q_heads * lq */
	int kv_passes;        /* pass 1's over max(dk, dv) columns */
	int q_passes;         /* pass 2's over dk columns */
};

/* Fills p; 0 when d is not a valid descriptor. */
RT_HOST int rtc_attn_grad_plan(const struct rt_attention_desc *d, int sm_count,
                               struct rtc_attn_grad *p)
{
	struct rtc_attn fwd;
	memset(p, 0, sizeof *p);
	if (!rtc_attn_plan(d, sm_count, &fwd))
		return 0;
	p->rows = fwd.rows;
	p->nrows = fwd.nrows;
	p->nkeys = d->batch * d->kv_heads * d->lk;
	p->keys.group = 32;
	p->keys.per_block = RTC_ATTN_GRAD_WARPS;
	p->keys.threads = 32 * RTC_ATTN_GRAD_WARPS;
	p->keys.blocks = rtc_blocks(p->nkeys, RTC_ATTN_GRAD_WARPS, sm_count);
	p->kv_passes = (int)rt_ceil_div(d->dk > d->dv ? d->dk : d->dv, RTC_ATTN_NV * 32);
	p->q_passes = (int)rt_ceil_div(d->dk, RTC_ATTN_NV * 32);
	return 1;
}

/* Pass 1's item r: its batch, kv head and key. */
RT_HD void rtc_attn_key(const struct rt_attention_desc *d, int64_t r, int64_t *b, int64_t *kvh,
                        int64_t *j)
{
	int64_t bh = r / d->lk;
	*j = r - bh * d->lk;
	*b = bh / d->kv_heads;
	*kvh = bh - *b * d->kv_heads;
}

/* The row of query (and y, dy, lse, dq) i of query head h in batch b. */
RT_HD int64_t rtc_attn_q_row(const struct rt_attention_desc *d, int64_t b, int64_t h, int64_t i)
{
	return (b * d->q_heads + h) * d->lq + i;
}

/* The query rows that see key j: [qbegin, lq) (rtc_attn_kend's converse:
 * j < rtc_attn_kend(d, i) exactly when i >= rtc_attn_qbegin(d, j)). */
RT_HD int64_t rtc_attn_qbegin(const struct rt_attention_desc *d, int64_t j)
{
	int64_t first;
	if (!d->causal || d->causal_offset >= d->lk)
		return 0;
	if (d->causal_offset < -d->lq) /* j - causal_offset > lq: none */
		return d->lq;
	first = j - d->causal_offset; /* rows i >= j - causal_offset */
	return first < 0 ? 0 : first < d->lq ? first : d->lq;
}

/* A score as rtc_attn_score, and in *dcap the softcap's derivative 1 - t^2
 * (t = tanh(scale dot / softcap); 1 without a cap). */
RT_HD float rtc_attn_score_dcap(const struct rt_attention_desc *d, float dot, float *dcap)
{
	float s = d->scale * dot, t;
	if (d->softcap <= 0) {
		*dcap = 1.0f;
		return s;
	}
	t = tanhf(s / d->softcap);
	*dcap = 1 - t * t;
	return d->softcap * t;
}

/* A probability from its final score and its row's lse: 0 where masked
 * and in a fully masked row (lse -inf). */
RT_HD float rtc_attn_prob(float s, float lse)
{
	return lse == -INFINITY || s == -INFINITY ? 0.0f : expf(s - lse);
}

/* The score's gradient (before the scale): p (dp - D), through the cap. */
RT_HD float rtc_attn_dscore(float p, float dp, float dd, float dcap)
{
	return p * (dp - dd) * dcap;
}

#endif
