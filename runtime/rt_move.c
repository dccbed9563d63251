/*
 * rt_move.c - data movement: strided copies (transpose, slice, expand, the
 * pieces of concat and split, tile), gathers, pad and trilu.
 *
 * Everything here moves elements without looking at them, so the kernels are
 * dtype-agnostic: an element is esize bytes, and the loops are instantiated
 * once per element size (1, 2, 4, 8 bytes, through may_alias integer types)
 * with a byte-wise fallback for any other size.
 *
 * rt_copy is the most frequently called kernel of a compiled model, and most
 * of what it is asked to do is simpler than its descriptor: a transpose of
 * [N, C, H, W] to [N, H, W, C] is a 3-D copy once H and W are merged, a
 * slice of the last dim is a 2-D copy, an expand is a copy with zero strides.
 * So a copy is first simplified (rt_xfer_simplify, rt_index_move.h):
 * size-1 dims are dropped and neighbours that are contiguous with each
 * other on both sides are merged.
 * Because a copy may visit its index space in any order, the dims can also
 * be reordered. What remains is executed as a grid of 2-D blocks over the
 * last two dims, the other dims ("outer") enumerated by an odometer:
 *  - normally a block is many rows of the innermost run, and a run that is
 *    contiguous on both sides is one memcpy, a run with source stride 0 is a
 *    fill, anything else a typed strided loop;
 *  - when the innermost run is contiguous on one side only and another dim
 *    is contiguous on the other side (a transpose), that dim becomes the
 *    row dim and the blocks are tiles of about TILE x TILE elements, so that
 *    both the reads and the writes of a tile stay in cache; inside a tile,
 *    4-byte elements go through 4x4 SSE2 register transposes and the other
 *    sizes through fixed 8x8 sub-tiles the compiler unrolls.
 * Blocks are the unit of parallel work: rt_parallel hands out ranges of
 * them, so a copy with one huge run is split into pieces of the run, and one
 * with many tiny rows packs many rows into a block. rt_tile is the same
 * engine on a view of twice the rank: output dim d is [repeats, in] with
 * source strides [0, stride].
 *
 * Gathers first validate every index (so an out-of-range index returns
 * RT_ERR_INDEX before anything is written), then copy blocks of up to
 * IDX_BLOCK elements through a small stack table of normalized source
 * offsets. ScatterElements, the one kernel here that looks at elements
 * (its reductions), copies the data, validates every index and then
 * applies the updates the same way, each work item owning the elements it
 * writes. Pad and trilu work row by row: each output row is a middle part
 * copied with memcpy and borders that are filled or mapped back into the
 * input (edge, reflect).
 *
 * Element pointers are assumed aligned to their size (the arena and the
 * weights are 64-byte aligned and the compiler places tensors at multiples
 * of their element size).
 */
#include "onnxc_rt.h"
#include "rt_index_move.h"

#include <stdbool.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAXR        16    /* the engine's rank: tile views rank 8 as 16 dims */
#define TILE        32    /* transpose tile edge, in elements */
#define ITEM_BYTES  65536 /* the most one work item moves */
#define GRAIN_BYTES 32768 /* less work than this per chunk is not worth a thread */
#define IDX_BLOCK   256   /* gather elements per work item (a stack table) */

typedef uint8_t u8a;
typedef uint16_t __attribute__((may_alias)) u16a;
typedef uint32_t __attribute__((may_alias)) u32a;
typedef uint64_t __attribute__((may_alias)) u64a;

/* Chunks of at least GRAIN_BYTES for work items of item_bytes each. */
static int64_t grain_for(int64_t item_bytes)
{
	return item_bytes >= GRAIN_BYTES ? 1 : rt_ceil_div(GRAIN_BYTES, rt_max64(item_bytes, 1));
}

/* ------------------------------------------------------------------------ */
/* Typed element loops                                                      */
/* ------------------------------------------------------------------------ */

/*
 * block_T copies a [rows, cols] block d[r*dr + c*dc] = s[r*sr + c*sc]; the
 * caller has already turned rows contiguous on both sides into memcpy. The
 * column loop is specialized for the cases that vectorize: a contiguous
 * destination with a broadcast (fill) or strided source.
 * gather_T copies d[i] = s[off[i]]; fill_T stores one value n times.
 */
#define DEFINE_TYPED(T)                                                                            \
	static void block_##T(char *dst, int64_t dr, int64_t dc, const char *src, int64_t sr,      \
	                      int64_t sc, int64_t rows, int64_t cols)                              \
	{                                                                                          \
		for (int64_t r = 0; r < rows; r++) {                                               \
			T *restrict d = (T *)dst + r * dr;                                         \
			const T *restrict s = (const T *)src + r * sr;                             \
			if (dc == 1 && sc == 0) {                                                  \
				T v = s[0];                                                        \
				for (int64_t c = 0; c < cols; c++)                                 \
					d[c] = v;                                                  \
			} else if (dc == 1) {                                                      \
				for (int64_t c = 0; c < cols; c++)                                 \
					d[c] = s[c * sc];                                          \
			} else {                                                                   \
				for (int64_t c = 0; c < cols; c++)                                 \
					d[c * dc] = s[c * sc];                                     \
			}                                                                          \
		}                                                                                  \
	}                                                                                          \
	static void gather_##T(char *dst, const char *src, const int64_t *restrict off, int64_t n) \
	{                                                                                          \
		T *restrict d = (T *)dst;                                                          \
		const T *restrict s = (const T *)src;                                              \
		for (int64_t i = 0; i < n; i++)                                                    \
			d[i] = s[off[i]];                                                          \
	}                                                                                          \
	static void fill_##T(char *dst, const void *value, int64_t n)                              \
	{                                                                                          \
		T *restrict d = (T *)dst, v;                                                       \
		memcpy(&v, value, sizeof v);                                                       \
		for (int64_t i = 0; i < n; i++)                                                    \
			d[i] = v;                                                                  \
	}

DEFINE_TYPED(u8a)
DEFINE_TYPED(u16a)
DEFINE_TYPED(u32a)
DEFINE_TYPED(u64a)

/*
 * transpose_T: d[a*ds + b] = s[a + b*ss] over [na, nb], in MICRO x MICRO
 * sub-tiles with constant trip counts, which the compiler unrolls into
 * register shuffles; edges take the plain loop.
 */
#define MICRO 8
#define DEFINE_TRANSPOSE(T)                                                                       \
	static void transpose_##T(char *dst, int64_t ds, const char *src, int64_t ss, int64_t na, \
	                          int64_t nb)                                                     \
	{                                                                                         \
		T *restrict d = (T *)dst;                                                         \
		const T *restrict s = (const T *)src;                                             \
		int64_t a0 = 0, b0;                                                               \
		for (; a0 + MICRO <= na; a0 += MICRO) {                                           \
			for (b0 = 0; b0 + MICRO <= nb; b0 += MICRO)                               \
				for (int a = 0; a < MICRO; a++)                                   \
					for (int b = 0; b < MICRO; b++)                           \
						d[(a0 + a) * ds + b0 + b] =                       \
						        s[a0 + a + (b0 + b) * ss];                \
			for (int a = 0; a < MICRO; a++)                                           \
				for (int64_t b = b0; b < nb; b++)                                 \
					d[(a0 + a) * ds + b] = s[a0 + a + b * ss];                \
		}                                                                                 \
		for (; a0 < na; a0++)                                                             \
			for (int64_t b = 0; b < nb; b++)                                          \
				d[a0 * ds + b] = s[a0 + b * ss];                                  \
	}

DEFINE_TRANSPOSE(u8a)
DEFINE_TRANSPOSE(u16a)
DEFINE_TRANSPOSE(u64a)

#ifdef __SSE2__
/* 4-byte elements, the common case, in 4x4 register transposes. */
static void transpose4_sse(uint32_t *d, int64_t ds, const uint32_t *s, int64_t ss)
{
	__m128i r0 = _mm_loadu_si128((const __m128i *)s);
	__m128i r1 = _mm_loadu_si128((const __m128i *)(s + ss));
	__m128i r2 = _mm_loadu_si128((const __m128i *)(s + 2 * ss));
	__m128i r3 = _mm_loadu_si128((const __m128i *)(s + 3 * ss));
	__m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
	__m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
	_mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t2));
	_mm_storeu_si128((__m128i *)(d + ds), _mm_unpackhi_epi64(t0, t2));
	_mm_storeu_si128((__m128i *)(d + 2 * ds), _mm_unpacklo_epi64(t1, t3));
	_mm_storeu_si128((__m128i *)(d + 3 * ds), _mm_unpackhi_epi64(t1, t3));
}

static void transpose_u32a(char *dst, int64_t ds, const char *src, int64_t ss, int64_t na,
                           int64_t nb)
{
	uint32_t *d = (uint32_t *)dst;
	const uint32_t *s = (const uint32_t *)src;
	int64_t a0 = 0, b0;
	for (; a0 + 4 <= na; a0 += 4) {
		for (b0 = 0; b0 + 4 <= nb; b0 += 4)
			transpose4_sse(d + a0 * ds + b0, ds, s + a0 + b0 * ss, ss);
		for (int a = 0; a < 4; a++)
			for (int64_t b = b0; b < nb; b++)
				d[(a0 + a) * ds + b] = s[a0 + a + b * ss];
	}
	for (; a0 < na; a0++)
		for (int64_t b = 0; b < nb; b++)
			d[a0 * ds + b] = s[a0 + b * ss];
}
#else
DEFINE_TRANSPOSE(u32a)
#endif

/* The byte-wise versions for element sizes without an integer type. */
static void block_bytes(int es, char *dst, int64_t dr, int64_t dc, const char *src, int64_t sr,
                        int64_t sc, int64_t rows, int64_t cols)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			memcpy(dst + (r * dr + c * dc) * es, src + (r * sr + c * sc) * es,
			       (size_t)es);
}

static void gather_bytes(int es, char *dst, const char *src, const int64_t *off, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		memcpy(dst + i * es, src + off[i] * es, (size_t)es);
}

static void fill_bytes(int es, char *dst, const void *value, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		memcpy(dst + i * es, value, (size_t)es);
}

/* Strides are in elements; dst and src point at element [0, 0]. */
/* d[a*ds + b] = s[a + b*ss] over [na, nb]: false for odd element sizes. */
static bool transpose_block(int es, char *dst, int64_t ds, const char *src, int64_t ss, int64_t na,
                            int64_t nb)
{
	switch (es) {
	case 1: transpose_u8a(dst, ds, src, ss, na, nb); return true;
	case 2: transpose_u16a(dst, ds, src, ss, na, nb); return true;
	case 4: transpose_u32a(dst, ds, src, ss, na, nb); return true;
	case 8: transpose_u64a(dst, ds, src, ss, na, nb); return true;
	default: return false;
	}
}

static void copy_block(int es, char *dst, int64_t dr, int64_t dc, const char *src, int64_t sr,
                       int64_t sc, int64_t rows, int64_t cols)
{
	if (dc == 1 && sc == 1) {
		for (int64_t r = 0; r < rows; r++)
			memcpy(dst + r * dr * es, src + r * sr * es, (size_t)(cols * es));
		return;
	}
	/* a transposed block: rows contiguous on one side, columns on the other */
	if (rows > 1 && dc == 1 && sr == 1 && sc != 0 &&
	    transpose_block(es, dst, dr, src, sc, rows, cols))
		return;
	if (rows > 1 && dr == 1 && sc == 1 && dc != 0 &&
	    transpose_block(es, dst, dc, src, sr, cols, rows))
		return;
	switch (es) {
	case 1: block_u8a(dst, dr, dc, src, sr, sc, rows, cols); break;
	case 2: block_u16a(dst, dr, dc, src, sr, sc, rows, cols); break;
	case 4: block_u32a(dst, dr, dc, src, sr, sc, rows, cols); break;
	case 8: block_u64a(dst, dr, dc, src, sr, sc, rows, cols); break;
	default: block_bytes(es, dst, dr, dc, src, sr, sc, rows, cols);
	}
}

static void gather_elems(int es, char *dst, const char *src, const int64_t *off, int64_t n)
{
	switch (es) {
	case 1: gather_u8a(dst, src, off, n); break;
	case 2: gather_u16a(dst, src, off, n); break;
	case 4: gather_u32a(dst, src, off, n); break;
	case 8: gather_u64a(dst, src, off, n); break;
	default: gather_bytes(es, dst, src, off, n);
	}
}

static void fill_elems(int es, char *dst, const void *value, int64_t n)
{
	switch (es) {
	case 1: fill_u8a(dst, value, n); break;
	case 2: fill_u16a(dst, value, n); break;
	case 4: fill_u32a(dst, value, n); break;
	case 8: fill_u64a(dst, value, n); break;
	default: fill_bytes(es, dst, value, n);
	}
}

/* ------------------------------------------------------------------------ */
/* The strided copy engine                                                  */
/* ------------------------------------------------------------------------ */

/* y[sum i_d ds_d] = x[sum i_d ss_d] over i < n; strides in elements. */
struct xfer {
	int esize, rank;
	int64_t n[MAXR], ss[MAXR], ds[MAXR];
	const char *x; /* at the first source element */
	char *y;       /* at the first destination element */
};

/* A transpose (rt_xfer_transpose_dim): moves its dim next to the
 * innermost and says whether it found one. */
static bool xfer_pick_transpose(struct xfer *t)
{
	int in_x, j = rt_xfer_transpose_dim(t->rank, t->ss, t->ds, &in_x);
	if (j < 0)
		return false;
	rt_xfer_move_dim(t->rank, t->n, t->ss, t->ds, j);
	return true;
}

/* The position in the outer dims [0, k) of a copy, and its offsets. */
struct odo {
	int k;
	int64_t idx[MAXR], so, dof;
};

static void odo_seek(struct odo *o, const struct xfer *t, int k, int64_t flat)
{
	o->k = k;
	o->so = o->dof = 0;
	for (int d = k - 1; d >= 0; d--) {
		o->idx[d] = flat % t->n[d];
		flat /= t->n[d];
		o->so += o->idx[d] * t->ss[d];
		o->dof += o->idx[d] * t->ds[d];
	}
}

static void odo_next(struct odo *o, const struct xfer *t)
{
	for (int d = o->k - 1; d >= 0; d--) {
		o->so += t->ss[d];
		o->dof += t->ds[d];
		if (++o->idx[d] < t->n[d])
			return;
		o->so -= t->n[d] * t->ss[d];
		o->dof -= t->n[d] * t->ds[d];
		o->idx[d] = 0;
	}
}

/* A simplified copy cut into blocks of [rlen, clen] of its last two dims. */
struct copy_plan {
	struct xfer t;
	int outer; /* the dims before the block's two */
	int64_t rows, cols, sr, sc, dr, dc;
	int64_t rlen, clen, nrp, ncp;
};

static void copy_range(void *arg, int64_t begin, int64_t end)
{
	const struct copy_plan *p = arg;
	int64_t per_outer = p->nrp * p->ncp, rest = begin % per_outer;
	int es = p->t.esize;
	struct odo o;
	odo_seek(&o, &p->t, p->outer, begin / per_outer);
	for (int64_t it = begin; it < end; it++) {
		int64_t r0 = rest / p->ncp * p->rlen, c0 = rest % p->ncp * p->clen;
		copy_block(es, p->t.y + (o.dof + r0 * p->dr + c0 * p->dc) * es, p->dr, p->dc,
		           p->t.x + (o.so + r0 * p->sr + c0 * p->sc) * es, p->sr, p->sc,
		           rt_min64(p->rlen, p->rows - r0), rt_min64(p->clen, p->cols - c0));
		if (++rest == per_outer) {
			rest = 0;
			odo_next(&o, &p->t);
		}
	}
}

/* Block sizes: tiles for a transpose, otherwise whole rows up to ITEM_BYTES. */
static void plan_blocks(struct copy_plan *p, bool transpose)
{
	int64_t es = p->t.esize, row_bytes = p->cols * es;
	if (transpose) {
		/* about TILE*TILE elements, longer along a dim when the other is short */
		p->clen = rt_min64(p->cols, TILE);
		p->rlen = rt_min64(p->rows, TILE * TILE / p->clen);
		p->clen = rt_min64(p->cols, TILE * TILE / p->rlen);
	} else if (row_bytes >= ITEM_BYTES) {
		p->rlen = 1;
		p->clen = rt_max64(1, ITEM_BYTES / es);
	} else {
		p->rlen = ITEM_BYTES / row_bytes;
		p->clen = p->cols;
	}
	p->rlen = rt_min64(p->rlen, p->rows);
	p->clen = rt_min64(p->clen, p->cols);
	p->nrp = rt_ceil_div(p->rows, p->rlen);
	p->ncp = rt_ceil_div(p->cols, p->clen);
}

static void xfer_run(struct rt_ctx *ctx, const struct xfer *t0)
{
	struct copy_plan p = { .t = *t0 };
	struct xfer *t = &p.t;
	int64_t blocks = 1;
	bool transpose;
	t->rank = rt_xfer_simplify(t->rank, t->n, t->ss, t->ds);
	transpose = xfer_pick_transpose(t);
	p.cols = t->n[t->rank - 1];
	p.sc = t->ss[t->rank - 1];
	p.dc = t->ds[t->rank - 1];
	p.rows = t->rank > 1 ? t->n[t->rank - 2] : 1;
	p.sr = t->rank > 1 ? t->ss[t->rank - 2] : 0;
	p.dr = t->rank > 1 ? t->ds[t->rank - 2] : 0;
	p.outer = t->rank > 1 ? t->rank - 2 : 0;
	plan_blocks(&p, transpose);
	for (int d = 0; d < p.outer; d++)
		blocks *= t->n[d];
	blocks *= p.nrp * p.ncp;
	rt_parallel(ctx, blocks, grain_for(p.rlen * p.clen * t->esize), copy_range, &p);
}

int rt_copy(struct rt_ctx *ctx, const struct rt_copy_desc *d, const void *x, void *y)
{
	struct xfer t = { .esize = d->esize, .rank = d->rank };
	int64_t total;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8)
		return RT_ERR_ARGUMENT;
	total = rt_count(d->dims, d->rank);
	if (total < 0)
		return RT_ERR_ARGUMENT;
	if (total == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	memcpy(t.n, d->dims, sizeof *t.n * (size_t)d->rank);
	memcpy(t.ss, d->strides, sizeof *t.ss * (size_t)d->rank);
	if (d->dst_dense)
		rt_dense_strides(d->dims, d->rank, t.ds);
	else
		memcpy(t.ds, d->dst_strides, sizeof *t.ds * (size_t)d->rank);
	t.x = (const char *)x + d->offset * d->esize;
	t.y = (char *)y + d->dst_offset * d->esize;
	xfer_run(ctx, &t);
	return RT_OK;
}

int rt_tile(struct rt_ctx *ctx, const struct rt_tile_desc *d, const void *x, void *y)
{
	struct xfer t = { .esize = d->esize, .rank = 2 * d->rank, .x = x, .y = y };
	int64_t xs[8], out[16];
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || rt_count(d->in_dims, d->rank) < 0 ||
	    rt_count(d->repeats, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	rt_dense_strides(d->in_dims, d->rank, xs);
	/* output dim k is [repeats[k], in_dims[k]]; repeats read the same input */
	for (int k = 0; k < d->rank; k++) {
		out[2 * k] = t.n[2 * k] = d->repeats[k];
		out[2 * k + 1] = t.n[2 * k + 1] = d->in_dims[k];
		t.ss[2 * k] = 0;
		t.ss[2 * k + 1] = xs[k];
	}
	if (rt_count(out, t.rank) < 0)
		return RT_ERR_ARGUMENT;
	if (rt_count(out, t.rank) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	rt_dense_strides(out, t.rank, t.ds);
	xfer_run(ctx, &t);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Gathers                                                                  */
/* ------------------------------------------------------------------------ */

/* RT_ERR_INDEX unless every index is in [-dim, dim); branch-free so that
 * it vectorizes: it reads every index before anything is written. */
#define CHECK_INDICES(T, idx, n, dim)                            \
	do {                                                     \
		const T *restrict k_ = (const T *)(idx);         \
		T d_ = (T)(dim);                                 \
		int bad_ = 0;                                    \
		for (int64_t i_ = 0; i_ < (n); i_++)             \
			bad_ |= (k_[i_] < -d_) | (k_[i_] >= d_); \
		return bad_ ? RT_ERR_INDEX : RT_OK;              \
	} while (0)

static int check_indices(const void *idx, int dtype, int64_t n, int64_t dim)
{
	if (dtype == RT_I32 && dim > INT32_MAX)
		return RT_OK; /* every int32 is in range */
	if (dtype == RT_I32)
		CHECK_INDICES(int32_t, idx, n, dim);
	CHECK_INDICES(int64_t, idx, n, dim);
}

/* off[j] = (index j0 + j, validated, made non-negative) * scale for j < n:
 * the source offsets of a block of gathered elements. */
#define LOAD_OFFSETS(T)                                                                    \
	do {                                                                               \
		const T *restrict k_ = (const T *)idx + j0;                                \
		for (int64_t j = 0; j < n; j++)                                            \
			off[j] = ((int64_t)k_[j] + (dim & -(int64_t)(k_[j] < 0))) * scale; \
	} while (0)

static void load_offsets(const void *idx, int dtype, int64_t j0, int64_t n, int64_t dim,
                         int64_t scale, int64_t *restrict off)
{
	if (dtype == RT_I32)
		LOAD_OFFSETS(int32_t);
	else
		LOAD_OFFSETS(int64_t);
}

struct gather_job {
	const struct rt_gather_desc *d;
	const char *x;
	const void *idx;
	char *y;
	int64_t nblk; /* index blocks per outer position */
};

/* Work item (o, b): indices [b*IDX_BLOCK, ...) of outer position o. */
static void gather_range(void *arg, int64_t begin, int64_t end)
{
	const struct gather_job *g = arg;
	const struct rt_gather_desc *d = g->d;
	int64_t es = d->esize, row = d->inner * es, off[IDX_BLOCK];
	for (int64_t it = begin; it < end; it++) {
		int64_t o = it / g->nblk, j0 = it % g->nblk * IDX_BLOCK;
		int64_t n = rt_min64(IDX_BLOCK, d->nidx - j0);
		const char *src = g->x + o * d->axis * row;
		char *dst = g->y + (o * d->nidx + j0) * row;
		load_offsets(g->idx, d->index_dtype, j0, n, d->axis, d->inner, off);
		if (d->inner == 1) {
			gather_elems((int)es, dst, src, off, n);
			continue;
		}
		for (int64_t j = 0; j < n; j++)
			memcpy(dst + j * row, src + off[j] * es, (size_t)row);
	}
}

int rt_gather(struct rt_ctx *ctx, const struct rt_gather_desc *d, const void *x,
              const void *indices, void *y)
{
	struct gather_job g = { d, x, indices, y, 0 };
	int64_t xdims[3] = { d->outer, d->axis, d->inner },
	        ydims[3] = { d->outer, d->nidx, d->inner };
	int status;
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) ||
	    rt_count(xdims, 3) < 0 || rt_count(ydims, 3) < 0)
		return RT_ERR_ARGUMENT;
	if (d->nidx && !indices)
		return RT_ERR_ARGUMENT;
	if ((status = check_indices(indices, d->index_dtype, d->nidx, d->axis)))
		return status;
	if (d->outer * d->nidx * d->inner == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	g.nblk = rt_ceil_div(d->nidx, IDX_BLOCK);
	rt_parallel(ctx, d->outer * g.nblk,
	            grain_for(rt_min64(d->nidx, IDX_BLOCK) * d->inner * d->esize), gather_range,
	            &g);
	return RT_OK;
}

struct gather_el_job {
	const struct rt_gather_elements_desc *d;
	const char *x;
	const void *idx;
	char *y;
	int64_t xs[8];
	int64_t cols, nblk;
};

/*
 * Work item (row, b): elements [b*IDX_BLOCK, ...) of one row of the result
 * (its last dim). Each element reads the data at its own position with the
 * axis coordinate replaced by its index.
 */
static void gather_el_range(void *arg, int64_t begin, int64_t end)
{
	const struct gather_el_job *g = arg;
	const struct rt_gather_elements_desc *d = g->d;
	int last = d->rank - 1, es = d->esize;
	int64_t off[IDX_BLOCK], axis_n = d->data_dims[d->axis];
	for (int64_t it = begin; it < end; it++) {
		int64_t row = it / g->nblk, c0 = it % g->nblk * IDX_BLOCK, base = 0, r = row;
		int64_t n = rt_min64(IDX_BLOCK, g->cols - c0), first = row * g->cols + c0;
		for (int k = last - 1; k >= 0; k--) {
			if (k != d->axis)
				base += r % d->index_dims[k] * g->xs[k];
			r /= d->index_dims[k];
		}
		load_offsets(g->idx, d->index_dtype, first, n, axis_n, g->xs[d->axis], off);
		for (int64_t c = 0; d->axis != last && c < n; c++)
			off[c] += c0 + c; /* the element's own column */
		gather_elems(es, g->y + first * es, g->x + base * es, off, n);
	}
}

int rt_gather_elements(struct rt_ctx *ctx, const struct rt_gather_elements_desc *d, const void *x,
                       const void *indices, void *y)
{
	struct gather_el_job g = { d, x, indices, y, { 0 }, 0, 0 };
	int64_t total;
	int status;
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) || d->rank < 1 ||
	    d->rank > 8 || d->axis < 0 || d->axis >= d->rank ||
	    rt_count(d->data_dims, d->rank) < 0 || (total = rt_count(d->index_dims, d->rank)) < 0)
		return RT_ERR_ARGUMENT;
	/* positions beyond the data outside the axis have nothing to read */
	for (int k = 0; k < d->rank; k++)
		if (k != d->axis && d->index_dims[k] > d->data_dims[k])
			return RT_ERR_INDEX;
	if (total && !indices)
		return RT_ERR_ARGUMENT;
	if ((status = check_indices(indices, d->index_dtype, total, d->data_dims[d->axis])))
		return status;
	if (total == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	rt_dense_strides(d->data_dims, d->rank, g.xs);
	g.cols = d->index_dims[d->rank - 1];
	g.nblk = rt_ceil_div(g.cols, IDX_BLOCK);
	rt_parallel(ctx, total / g.cols * g.nblk, grain_for(rt_min64(g.cols, IDX_BLOCK) * d->esize),
	            gather_el_range, &g);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* ScatterElements                                                          */
/* ------------------------------------------------------------------------ */

/*
 * Indices and updates are viewed as [outer, na, inner] around the axis. A
 * work item is one outer position and a block of up to IDX_BLOCK inner
 * positions, over all na: every update that can land on an element of y
 * (same coordinates outside the axis) is in the same item, applied in
 * order, so reductions neither race nor depend on the thread count, and
 * the result is the sequential one bit for bit.
 */
struct scatter_job {
	const struct rt_scatter_elements_desc *d;
	const void *idx;
	const char *u;
	char *y;
	int es;
	int64_t xs[8];
	int64_t outer, na, inner, nblk;
};

#define SCATTER_COMBINE_FLOAT(red, a, b)                                   \
	((red) == RT_SCATTER_ADD   ? (a) + (b)                             \
	 : (red) == RT_SCATTER_MUL ? (a) * (b)                             \
	 : (red) == RT_SCATTER_MAX ? ((b) > (a) || (b) != (b) ? (b) : (a)) \
	 : (red) == RT_SCATTER_MIN ? ((b) < (a) || (b) != (b) ? (b) : (a)) \
	                           : (b))

/* y[dst[j]] (op)= u[j] for j < n; the n destinations are distinct. */
#define DEFINE_SCATTER_FLOAT(T)                                                                   \
	static void scatter_##T(int red, char *yb, const int64_t *dst, const char *ub, int64_t n) \
	{                                                                                         \
		T *y = (T *)yb;                                                                   \
		const T *u = (const T *)ub;                                                       \
		for (int64_t j = 0; j < n; j++)                                                   \
			y[dst[j]] = SCATTER_COMBINE_FLOAT(red, y[dst[j]], u[j]);                  \
	}

/* Integers wrap: sums and products in the unsigned type. */
#define DEFINE_SCATTER_INT(T, UT)                                                                 \
	static void scatter_##T(int red, char *yb, const int64_t *dst, const char *ub, int64_t n) \
	{                                                                                         \
		T *y = (T *)yb;                                                                   \
		const T *u = (const T *)ub;                                                       \
		for (int64_t j = 0; j < n; j++) {                                                 \
			T a = y[dst[j]], b = u[j];                                                \
			switch (red) {                                                            \
			case RT_SCATTER_ADD: a = (T)(UT)((uint64_t)(UT)a + (UT)b); break;         \
			case RT_SCATTER_MUL: a = (T)(UT)((uint64_t)(UT)a * (UT)b); break;         \
			case RT_SCATTER_MAX: a = b > a ? b : a; break;                            \
			case RT_SCATTER_MIN: a = b < a ? b : a; break;                            \
			default: a = b; break;                                                    \
			}                                                                         \
			y[dst[j]] = a;                                                            \
		}                                                                                 \
	}

DEFINE_SCATTER_FLOAT(float)
DEFINE_SCATTER_FLOAT(double)
DEFINE_SCATTER_INT(int8_t, uint8_t)
DEFINE_SCATTER_INT(int16_t, uint16_t)
DEFINE_SCATTER_INT(int32_t, uint32_t)
DEFINE_SCATTER_INT(int64_t, uint64_t)
DEFINE_SCATTER_INT(uint8_t, uint8_t)
DEFINE_SCATTER_INT(uint16_t, uint16_t)
DEFINE_SCATTER_INT(uint32_t, uint32_t)
DEFINE_SCATTER_INT(uint64_t, uint64_t)

/* FP16 and BF16 combine in FP32 and round after each update (the
 * conversions are rt_convert's: n <= IDX_BLOCK runs on this thread). */
static void scatter_half(int dtype, int red, char *yb, const int64_t *dst, const char *ub,
                         int64_t n)
{
	uint16_t *y = (uint16_t *)yb, h[IDX_BLOCK];
	float a[IDX_BLOCK], b[IDX_BLOCK];
	for (int64_t j = 0; j < n; j++)
		h[j] = y[dst[j]];
	rt_convert(NULL, a, RT_F32, h, dtype, n);
	rt_convert(NULL, b, RT_F32, ub, dtype, n);
	for (int64_t j = 0; j < n; j++)
		a[j] = SCATTER_COMBINE_FLOAT(red, a[j], b[j]);
	rt_convert(NULL, h, dtype, a, RT_F32, n);
	for (int64_t j = 0; j < n; j++)
		y[dst[j]] = h[j];
}

/* Stores (no reduction): any element type, by size. */
static void scatter_store(int es, char *y, const int64_t *dst, const char *u, int64_t n)
{
	switch (es) {
	case 1: scatter_uint8_t(RT_SCATTER_NONE, y, dst, u, n); break;
	case 2: scatter_uint16_t(RT_SCATTER_NONE, y, dst, u, n); break;
	case 4: scatter_uint32_t(RT_SCATTER_NONE, y, dst, u, n); break;
	case 8: scatter_uint64_t(RT_SCATTER_NONE, y, dst, u, n); break;
	default:
		for (int64_t j = 0; j < n; j++)
			memcpy(y + dst[j] * es, u + j * es, (size_t)es);
	}
}

static void scatter_apply(const struct rt_scatter_elements_desc *d, char *y, const int64_t *dst,
                          const char *u, int64_t n)
{
	int red = d->reduction;
	if (red == RT_SCATTER_NONE) {
		scatter_store(rt_dtype_size(d->dtype), y, dst, u, n);
		return;
	}
	switch (d->dtype) {
	case RT_F32: scatter_float(red, y, dst, u, n); break;
	case RT_F64: scatter_double(red, y, dst, u, n); break;
	case RT_F16:
	case RT_BF16: scatter_half(d->dtype, red, y, dst, u, n); break;
	case RT_I8: scatter_int8_t(red, y, dst, u, n); break;
	case RT_I16: scatter_int16_t(red, y, dst, u, n); break;
	case RT_I32: scatter_int32_t(red, y, dst, u, n); break;
	case RT_I64: scatter_int64_t(red, y, dst, u, n); break;
	case RT_U8: scatter_uint8_t(red, y, dst, u, n); break;
	case RT_U16: scatter_uint16_t(red, y, dst, u, n); break;
	case RT_U32: scatter_uint32_t(red, y, dst, u, n); break;
	case RT_U64: scatter_uint64_t(red, y, dst, u, n); break;
	default: break; /* refused by rt_scatter_elements */
	}
}

static void scatter_range(void *arg, int64_t begin, int64_t end)
{
	const struct scatter_job *g = arg;
	const struct rt_scatter_elements_desc *d = g->d;
	int axis = d->axis, rank = d->rank;
	int64_t ioff[IDX_BLOCK], off[IDX_BLOCK], dst[IDX_BLOCK];
	for (int64_t it = begin; it < end; it++) {
		int64_t o = it / g->nblk, i0 = it % g->nblk * IDX_BLOCK, base = 0, r = o;
		int64_t n = rt_min64(IDX_BLOCK, g->inner - i0), dig[8] = { 0 };
		for (int k = axis - 1; k >= 0; k--) {
			base += r % d->index_dims[k] * g->xs[k];
			r /= d->index_dims[k];
		}
		/* the inner positions' offsets in y: an odometer from i0 */
		r = i0;
		for (int k = rank - 1; k > axis; k--) {
			dig[k] = r % d->index_dims[k];
			r /= d->index_dims[k];
		}
		for (int64_t j = 0; j < n; j++) {
			int64_t v = 0;
			for (int k = axis + 1; k < rank; k++)
				v += dig[k] * g->xs[k];
			ioff[j] = v;
			for (int k = rank - 1; k > axis && ++dig[k] == d->index_dims[k]; k--)
				dig[k] = 0;
		}
		for (int64_t a = 0; a < g->na; a++) {
			int64_t first = (o * g->na + a) * g->inner + i0;
			load_offsets(g->idx, d->index_dtype, first, n, d->data_dims[axis],
			             g->xs[axis], off);
			for (int64_t j = 0; j < n; j++)
				dst[j] = base + off[j] + ioff[j];
			scatter_apply(d, g->y, dst, g->u + first * g->es, n);
		}
	}
}

int rt_scatter_elements(struct rt_ctx *ctx, const struct rt_scatter_elements_desc *d, const void *x,
                        const void *indices, const void *updates, void *y)
{
	struct scatter_job g = {
		d, indices, updates, y, rt_dtype_size(d->dtype), { 0 }, 1, 1, 1, 0
	};
	int64_t total, nx;
	int status;
	if (g.es < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) || d->rank < 1 ||
	    d->rank > 8 || d->axis < 0 || d->axis >= d->rank || d->reduction < RT_SCATTER_NONE ||
	    d->reduction > RT_SCATTER_MIN ||
	    (d->reduction != RT_SCATTER_NONE && d->dtype == RT_BOOL) ||
	    (nx = rt_count(d->data_dims, d->rank)) < 0 ||
	    (total = rt_count(d->index_dims, d->rank)) < 0)
		return RT_ERR_ARGUMENT;
	/* positions beyond the data outside the axis have nowhere to go */
	for (int k = 0; k < d->rank; k++)
		if (k != d->axis && d->index_dims[k] > d->data_dims[k])
			return RT_ERR_INDEX;
	if (total && (!indices || !updates))
		return RT_ERR_ARGUMENT;
	if ((status = check_indices(indices, d->index_dtype, total, d->data_dims[d->axis])))
		return status;
	if (nx == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	if (x != y) {
		struct rt_copy_desc c = {
			.esize = g.es, .rank = 1, .dims = { nx }, .strides = { 1 }, .dst_dense = 1
		};
		rt_copy(ctx, &c, x, y);
	}
	if (total == 0)
		return RT_OK;
	rt_dense_strides(d->data_dims, d->rank, g.xs);
	for (int k = 0; k < d->rank; k++)
		*(k < d->axis ? &g.outer : k > d->axis ? &g.inner : &g.na) *= d->index_dims[k];
	g.nblk = rt_ceil_div(g.inner, IDX_BLOCK);
	rt_parallel(ctx, g.outer * g.nblk, grain_for(rt_min64(g.inner, IDX_BLOCK) * g.na * g.es),
	            scatter_range, &g);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                      */
/* ------------------------------------------------------------------------ */

struct pad_job {
	int esize, mode, rank;
	int64_t in[8], out[8], pb[8], xs[8];
	int64_t cols, clen, ncp; /* the last dim, cut into pieces of clen */
	const char *x;
	char *y;
	const unsigned char *value;
};

/* Edge or reflect border columns [lo, hi): a few elements, mapped one by one. */
static void pad_border(const struct pad_job *p, char *dst, const char *src, int64_t lo, int64_t hi)
{
	int last = p->rank - 1, es = p->esize;
	for (int64_t c = lo; c < hi; c++)
		memcpy(dst + c * es,
		       src + rt_pad_source(p->mode, c - p->pb[last], p->in[last]) * es, (size_t)es);
}

/* Output columns [lo, hi) of one row: src is the input row, NULL when the
 * row itself lies in constant padding. */
static void pad_columns(const struct pad_job *p, char *dst, const char *src, int64_t lo, int64_t hi)
{
	int last = p->rank - 1, es = p->esize;
	int64_t n = p->in[last], pb = p->pb[last];
	int64_t m0 = rt_min64(rt_max64(pb, lo), hi), m1 = rt_max64(rt_min64(pb + n, hi), m0);
	if (!src) {
		fill_elems(es, dst + lo * es, p->value, hi - lo);
		return;
	}
	memcpy(dst + m0 * es, src + (m0 - pb) * es, (size_t)((m1 - m0) * es));
	if (p->mode == RT_PAD_CONSTANT) {
		fill_elems(es, dst + lo * es, p->value, m0 - lo);
		fill_elems(es, dst + m1 * es, p->value, hi - m1);
		return;
	}
	pad_border(p, dst, src, lo, m0);
	pad_border(p, dst, src, m1, hi);
}

/* Work item (row, piece): one piece of an output row. */
static void pad_range(void *arg, int64_t begin, int64_t end)
{
	const struct pad_job *p = arg;
	int last = p->rank - 1;
	for (int64_t it = begin; it < end; it++) {
		int64_t row = it / p->ncp, lo = it % p->ncp * p->clen, r = row, so = 0;
		bool inside = true;
		for (int k = last - 1; k >= 0; k--) {
			int64_t i = rt_pad_source(p->mode, r % p->out[k] - p->pb[k], p->in[k]);
			r /= p->out[k];
			inside = inside && i >= 0;
			so += i * p->xs[k];
		}
		pad_columns(p, p->y + row * p->cols * p->esize,
		            inside && p->in[last] ? p->x + so * p->esize : NULL, lo,
		            rt_min64(lo + p->clen, p->cols));
	}
}

int rt_pad(struct rt_ctx *ctx, const struct rt_pad_desc *d, const void *x, void *y)
{
	struct pad_job p = { .esize = d->esize,
		             .mode = d->mode,
		             .rank = d->rank,
		             .x = x,
		             .y = y,
		             .value = d->value };
	int64_t total;
	if (rt_pad_shape(d, p.in, p.out, p.pb) != RT_OK)
		return RT_ERR_ARGUMENT;
	if ((total = rt_count(p.out, d->rank)) <= 0 || rt_count(p.in, d->rank) < 0)
		return total < 0 ? RT_ERR_ARGUMENT : RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	/* edge or reflect padding of an empty input has nothing to repeat */
	if (rt_count(p.in, d->rank) == 0)
		p.mode = RT_PAD_CONSTANT;
	p.rank = rt_pad_simplify(p.rank, p.mode, p.in, p.out, p.pb);
	rt_dense_strides(p.in, p.rank, p.xs);
	p.cols = p.out[p.rank - 1];
	p.clen = rt_min64(p.cols, rt_max64(1, ITEM_BYTES / d->esize));
	p.ncp = rt_ceil_div(p.cols, p.clen);
	rt_parallel(ctx, total / p.cols * p.ncp, grain_for(p.clen * d->esize), pad_range, &p);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Trilu                                                                    */
/* ------------------------------------------------------------------------ */

struct trilu_job {
	const struct rt_trilu_desc *d;
	const char *x;
	char *y;
};

static void trilu_range(void *arg, int64_t begin, int64_t end)
{
	const struct trilu_job *j = arg;
	const struct rt_trilu_desc *d = j->d;
	int64_t es = d->esize, row = d->cols * es;
	int64_t k = rt_trilu_k(d);
	for (int64_t it = begin; it < end; it++) {
		int64_t r = it % d->rows, c0, c1; /* keep columns [c0, c1) */
		const char *x = j->x + it * row;
		char *y = j->y + it * row;
		rt_trilu_cols(d->upper, k, r, d->cols, &c0, &c1);
		memset(y, 0, (size_t)(c0 * es));
		if (x != y) /* in place, the kept part is already there */
			memcpy(y + c0 * es, x + c0 * es, (size_t)((c1 - c0) * es));
		memset(y + c1 * es, 0, (size_t)((d->cols - c1) * es));
	}
}

int rt_trilu(struct rt_ctx *ctx, const struct rt_trilu_desc *d, const void *x, void *y)
{
	struct trilu_job j = { d, x, y };
	int64_t dims[4] = { d->batch, d->rows, d->cols, d->esize };
	if (d->esize < 1 || rt_count(dims, 4) < 0)
		return RT_ERR_ARGUMENT;
	if (rt_count(dims, 3) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	rt_parallel(ctx, d->batch * d->rows, grain_for(d->cols * d->esize), trilu_range, &j);
	return RT_OK;
}
