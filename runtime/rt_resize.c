/*
 * rt_resize.c - ONNX Resize (opset 11-13 semantics) for f32.
 *
 * Resize is separable: along each dimension an output coordinate maps to a
 * source coordinate and from there to a few input indices with weights -
 * one tap for nearest, two for linear, four for cubic. That arithmetic,
 * the ONNX reference's step by step in double, is rt_index_resize.h's,
 * shared with the CUDA kernels. An output element is the sum, over every
 * combination of one tap per dimension, of the product of the taps'
 * weights times the input element they select.
 *
 * Execution. A dimension whose taps map every output coordinate to the same
 * input coordinate with weight 1 is an identity (the batch and channel dims
 * of an image resize, or any dim with scale 1 and a symmetric transform):
 * consecutive identity dims merge, and the identity dims after the last
 * resized dim form a contiguous "inner" vector that every tap moves as a
 * whole. The last resized dim is the "column" dim, the dims before it are
 * "rows". The output is produced row by row over blocks of COL_BLOCK
 * columns: the taps of a block of columns are computed once into a stack
 * table and reused by every row of a work item, the taps of a row's
 * dimensions (few per row) are computed on the fly. Each combination of row
 * taps (one per row dim) adds its weighted, column-interpolated source row
 * into the output row, so the inner loops are short fixed-count tap sums
 * (K = 1, 2 or 4) or, with an inner vector, contiguous axpys. Upsampling
 * reuses source rows, which is exploited twice: linear and cubic keep the
 * last few column-interpolated source rows (so each is interpolated once
 * per block, not once per output row that uses it), and nearest copies the
 * previous output row when it has the same source row. Work items (column
 * block, row) are what rt_parallel distributes; items are ordered
 * block-major so that consecutive items share the column table. The result
 * does not depend on how the items are split. Nothing is allocated: the
 * tables are small fixed-size stack arrays.
 *
 * The descriptor's scales are doubles (the model's float scales, or out/in
 * when the model gave sizes), used as given.
 */
#include "onnxc_rt.h"
#include "rt_index_resize.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define COL_BLOCK 128   /* output columns per tap table */
#define GRAIN     16384 /* output elements a chunk should at least produce */

/* A dimension of the execution plan: resized (dim >= 0) or merged identity. */
struct pdim {
	int dim;     /* the descriptor's dim, -1 for merged identity dims */
	int64_t out; /* output size (= input size for an identity) */
	int64_t xs;  /* input stride in elements */
};

struct plan {
	const struct rt_resize_desc *d;
	int k; /* taps per resized dim: 1, 2 or 4 */
	int nrow;
	struct pdim row[8], col;
	int64_t rows, inner, nblk;
	const float *x;
	float *y;
};

/* The taps of output coordinate x along dimension i (input stride xs),
 * every slot written: the column tables copy and read all four. */
static void dim_taps(const struct rt_resize_desc *d, int i, int64_t xs, int64_t x,
                     struct rt_resize_taps *t)
{
	memset(t, 0, sizeof *t);
	rt_resize_dim_taps(d, i, xs, x, t);
}

/*
 * Splits the dims into rows, the column dim (the last resized one) and the
 * inner vector; merges consecutive identity dims. Returns false when no dim
 * is resized (the resize is a copy).
 */
static bool make_plan(struct plan *p)
{
	const struct rt_resize_desc *d = p->d;
	int64_t xs = 1;
	struct pdim dims[8]; /* innermost first; dims[0] is the column dim */
	int n = 0;
	p->inner = 1;
	for (int i = d->rank - 1; i >= 0; i--) {
		bool id = rt_resize_identity(d, i);
		if (id && n == 0)
			p->inner *= d->in_dims[i]; /* identities after the last resized dim */
		else if (id && dims[n - 1].dim < 0)
			dims[n - 1].out *= d->in_dims[i]; /* merged, keeps the inner stride */
		else if (!id || d->in_dims[i] != 1)
			dims[n++] = (struct pdim){ id ? -1 : i, d->out_dims[i], xs };
		xs *= d->in_dims[i];
	}
	if (n == 0)
		return false;
	p->col = dims[0];
	p->nrow = n - 1;
	p->rows = 1;
	for (int r = 0; r < p->nrow; r++) {
		p->row[r] = dims[n - 1 - r];
		p->rows *= p->row[r].out;
	}
	p->nblk = (p->col.out + COL_BLOCK - 1) / COL_BLOCK;
	p->k = d->mode == RT_RESIZE_NEAREST ? 1 : d->mode == RT_RESIZE_LINEAR ? 2 : 4;
	return true;
}

/* The taps of a plan dim at output coordinate x (identity: one, weight 1). */
static void pdim_taps(const struct plan *p, const struct pdim *pd, int64_t x,
                      struct rt_resize_taps *t)
{
	if (pd->dim >= 0) {
		dim_taps(p->d, pd->dim, pd->xs, x, t);
		return;
	}
	memset(t, 0, sizeof *t);
	t->n = 1;
	t->off[0] = x * pd->xs;
	t->w[0] = 1;
}

/* A block of columns' taps; ext marks columns to extrapolate. */
struct col_table {
	int64_t c0, n;
	bool any_ext;
	int64_t off[COL_BLOCK][4];
	float w[COL_BLOCK][4];
	bool ext[COL_BLOCK];
};

static void fill_col_table(const struct plan *p, int64_t blk, struct col_table *ct)
{
	struct rt_resize_taps t;
	ct->c0 = blk * COL_BLOCK;
	ct->n = rt_min64(COL_BLOCK, p->col.out - ct->c0);
	ct->any_ext = false;
	for (int64_t c = 0; c < ct->n; c++) {
		pdim_taps(p, &p->col, ct->c0 + c, &t);
		memcpy(ct->off[c], t.off, sizeof t.off);
		memcpy(ct->w[c], t.w, sizeof t.w);
		ct->ext[c] = t.n == 0;
		ct->any_ext |= t.n == 0;
	}
}

/*
 * y[c] (=, or += when !first) wr * sum_k w[c][k] * s[off[c][k]] over the
 * block's columns. Inlined with constant K so the tap loop unrolls.
 */
static inline void columns(float *restrict y, const float *restrict s, const struct col_table *ct,
                           int K, float wr, bool first)
{
	for (int64_t c = 0; c < ct->n; c++) {
		float v = 0;
		for (int k = 0; k < K; k++)
			v += ct->w[c][k] * s[ct->off[c][k]];
		y[c] = first ? wr * v : y[c] + wr * v;
	}
}

/* The same with an inner vector of m contiguous elements per column. */
static void columns_inner(float *restrict y, const float *restrict s, const struct col_table *ct,
                          int K, float wr, bool first, int64_t m)
{
	for (int64_t c = 0; c < ct->n; c++) {
		float *restrict yc = y + c * m;
		for (int k = 0; k < K; k++) {
			const float *restrict sk = s + ct->off[c][k];
			float w = wr * ct->w[c][k];
			if (first && k == 0)
				for (int64_t i = 0; i < m; i++)
					yc[i] = w * sk[i];
			else
				for (int64_t i = 0; i < m; i++)
					yc[i] += w * sk[i];
		}
	}
}

/*
 * Source rows interpolated along the columns, for the current block: when
 * upsampling, each source row serves several output rows (as either of its
 * two linear or four cubic taps), so it is interpolated once and blended
 * many times. Keyed by the row's offset in x; replaced round-robin, which
 * keeps the most recent rows as the output rows advance.
 */
#define HROWS 8

struct scratch {
	struct col_table ct;
	int64_t key[HROWS]; /* source row offsets, -1: empty */
	int next;
	float h[HROWS][COL_BLOCK];
	/* nearest: the last output row and its source row; an output row with
	 * the same source (upsampling) is a copy of it */
	const float *last_y;
	int64_t last_off;
};

static const float *interpolated_row(const struct plan *p, struct scratch *sc, int64_t off)
{
	int i;
	for (i = 0; i < HROWS; i++)
		if (sc->key[i] == off)
			return sc->h[i];
	i = sc->next;
	sc->next = (i + 1) % HROWS;
	sc->key[i] = off;
	if (p->k == 2)
		columns(sc->h[i], p->x + off, &sc->ct, 2, 1, true);
	else
		columns(sc->h[i], p->x + off, &sc->ct, 4, 1, true);
	return sc->h[i];
}

/* Adds one combination of row taps (source row offset off, weight wr) to y. */
static void add_row(const struct plan *p, float *restrict y, int64_t off, struct scratch *sc,
                    float wr, bool first)
{
	const struct col_table *ct = &sc->ct;
	if (p->inner > 1) {
		columns_inner(y, p->x + off, ct, p->k, wr, first, p->inner);
	} else if (p->k == 1) {
		columns(y, p->x + off, ct, 1, wr, first);
	} else {
		const float *restrict h = interpolated_row(p, sc, off);
		for (int64_t c = 0; c < ct->n; c++)
			y[c] = first ? wr * h[c] : y[c] + wr * h[c];
	}
}

static void fill(float *y, int64_t n, float v)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = v;
}

/* Nearest: copies the previous output row when this one has the same
 * source row; otherwise remembers this one. Says whether it copied. */
static bool nearest_repeat(const struct plan *p, struct scratch *sc, const struct rt_resize_taps *t,
                           float *y)
{
	int64_t off = 0;
	for (int r = 0; r < p->nrow; r++)
		off += t[r].off[0];
	if (sc->last_y && sc->last_off == off) {
		memcpy(y, sc->last_y, (size_t)(sc->ct.n * p->inner) * sizeof *y);
		sc->last_y = y;
		return true;
	}
	sc->last_y = y;
	sc->last_off = off;
	return false;
}

/* One output row's block of columns: every combination of its row taps. */
static void do_row(const struct plan *p, int64_t row, struct scratch *sc)
{
	const struct col_table *ct = &sc->ct;
	struct rt_resize_taps t[8];
	int pick[8] = { 0 };
	int64_t m = p->inner;
	float *y = p->y + (row * p->col.out + ct->c0) * m;
	for (int r = p->nrow - 1; r >= 0; r--) {
		pdim_taps(p, &p->row[r], row % p->row[r].out, &t[r]);
		row /= p->row[r].out;
		if (t[r].n == 0) {
			fill(y, ct->n * m, p->d->extrapolation);
			return;
		}
	}
	if (p->k == 1 && nearest_repeat(p, sc, t, y))
		return;
	for (bool first = true;; first = false) {
		int64_t off = 0;
		float w = 1;
		int r;
		for (r = 0; r < p->nrow; r++) {
			off += t[r].off[pick[r]];
			w *= t[r].w[pick[r]];
		}
		add_row(p, y, off, sc, w, first);
		/* the next combination: an odometer over the row dims' taps */
		for (r = p->nrow - 1; r >= 0 && ++pick[r] == t[r].n; r--)
			pick[r] = 0;
		if (r < 0)
			break;
	}
	for (int64_t c = 0; ct->any_ext && c < ct->n; c++)
		if (ct->ext[c])
			fill(y + c * m, m, p->d->extrapolation);
}

/* Work items are (column block, row), block-major. */
static void resize_range(void *arg, int64_t begin, int64_t end)
{
	const struct plan *p = arg;
	struct scratch sc;
	int64_t blk = -1;
	for (int64_t it = begin; it < end; it++) {
		if (it / p->rows != blk) {
			blk = it / p->rows;
			fill_col_table(p, blk, &sc.ct);
			memset(sc.key, -1, sizeof sc.key);
			sc.next = 0;
			sc.last_y = NULL;
		}
		do_row(p, it % p->rows, &sc);
	}
}

struct copy_job {
	const float *x;
	float *y;
};

static void copy_range(void *arg, int64_t begin, int64_t end)
{
	const struct copy_job *j = arg;
	memcpy(j->y + begin, j->x + begin, (size_t)(end - begin) * sizeof *j->y);
}

int rt_resize(struct rt_ctx *ctx, const struct rt_resize_desc *d, const void *x, void *y)
{
	struct plan p = { .d = d, .x = x, .y = y };
	int64_t nx = 1, ny = 1;
	if (d->dtype != RT_F32 || !rt_resize_valid(d))
		return RT_ERR_ARGUMENT;
	for (int i = 0; i < d->rank; i++) {
		nx *= d->in_dims[i];
		ny *= d->out_dims[i];
	}
	if (ny == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	if (nx == 0) { /* nothing to interpolate from */
		memset(y, 0, (size_t)ny * sizeof(float));
		return RT_OK;
	}
	if (!make_plan(&p)) {
		struct copy_job j = { x, y };
		rt_parallel(ctx, ny, 4 * GRAIN, copy_range, &j);
		return RT_OK;
	}
	rt_parallel(ctx, p.nblk * p.rows,
	            (GRAIN + rt_min64(COL_BLOCK, p.col.out) * p.inner - 1) /
	                    (rt_min64(COL_BLOCK, p.col.out) * p.inner),
	            resize_range, &p);
	return RT_OK;
}
