/*
 * rt_rnn.c - ONNX LSTM, GRU and RNN on the CPU.
 *
 * The input's part of every gate does not depend on the recurrence, so it
 * is one GEMM per direction over all steps and batch rows first:
 *   P = X W^T        ([seq * batch, gates * hidden], in the workspace)
 * threaded through rt_sgemm. Then the recurrence, step by step, in items
 * of RT_RNN_ROWS batch rows of one direction (rows and directions are
 * independent): per step one GEMM
 *   Q = H R^T        ([rows, gates * hidden], rt_sgemm_serial)
 * and one fused loop over the gates that adds P's row of the step, both
 * biases and the peepholes, clips, applies the activations and writes the
 * new state and its row of y. A GRU without linear_before_reset needs
 * (r . H) Rh^T, so its step is two GEMMs around the loop's halves. A batch
 * row whose sequence is shorter (sequence_lens) keeps its state from its
 * last step on; its y rows past the length are zeros; a reverse direction
 * walks each sequence from its own last step.
 *
 * Threads: items run side by side (rt_parallel); an item's arithmetic
 * depends on nothing but its rows (the item size is a constant, not a
 * share of the threads), so results are the same for every thread count.
 * A single sequence of one direction is one item: its recurrence runs on
 * one thread (the projection is threaded). FP32 throughout; the CPU target
 * stages half tensors.
 */
#include "onnxc_rt.h"
#include "rt_index_rnn.h"
#include "rt_sgemm.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define RT_RNN_ROWS 16 /* batch rows per item */

/* The workspace in floats: the projection, then per item h, c, r . h and Q. */
static bool ws_floats(const struct rt_rnn_desc *d, uint64_t *n)
{
	uint64_t gh, proj, items, per,
	        rows = (uint64_t)(d->batch < RT_RNN_ROWS ? d->batch : RT_RNN_ROWS);
	if (d->seq < 0 || d->batch < 0 || d->hidden < 0 || d->input < 0 || d->hidden > INT32_MAX ||
	    d->seq > INT32_MAX * 4LL)
		return false;
	gh = (uint64_t)rt_rnn_gates(d->cell) * (uint64_t)d->hidden;
	items = (uint64_t)d->dirs * (((uint64_t)d->batch + RT_RNN_ROWS - 1) / RT_RNN_ROWS);
	if ((uint64_t)d->batch > UINT64_MAX / 64 / (uint64_t)(d->seq ? d->seq : 1) / (gh ? gh : 1))
		return false;
	proj = (uint64_t)d->dirs * (uint64_t)d->seq * (uint64_t)d->batch * gh;
	per = rows * (3 * (uint64_t)d->hidden + gh);
	*n = proj + items * per;
	return *n < UINT64_MAX / 64;
}

/* What either runtime needs: this file's layout, or the CUDA runtime's
 * (rt_index_rnn.h), whichever is larger. */
size_t rt_rnn_workspace(const struct rt_rnn_desc *d)
{
	uint64_t n;
	struct rt_rnn_layout l;
	if (d->seq == 0)
		return 0;
	if (!ws_floats(d, &n) || !rt_rnn_layout(d, &l))
		return SIZE_MAX / 2;
	return (size_t)(n > l.total ? n : l.total) * sizeof(float);
}

/* C (m x n, ldc) = A B (+ C when beta), A(i, p) = a[i a_rs + p], B(p, j) = b[p + j b_cs] */
static void gemm(int isa, int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                 const float *b, int64_t b_cs, float *c, int64_t ldc, bool threaded,
                 struct rt_ctx *ctx)
{
	if (k == 0) {
		for (int64_t i = 0; i < m; i++)
			memset(c + i * ldc, 0, sizeof *c * (size_t)n);
		return;
	}
	if (isa != RT_SGEMM_BLAS) {
		struct rt_sgemm g = { .isa = isa,
			              .m = m,
			              .n = n,
			              .k = k,
			              .a = a,
			              .a_rs = a_rs,
			              .a_cs = 1,
			              .b = b,
			              .b_rs = 1,
			              .b_cs = b_cs,
			              .c = c,
			              .ldc = ldc,
			              .alpha = 1 };
		if (threaded)
			rt_sgemm(ctx, &g);
		else
			rt_sgemm_serial(&g);
		return;
	}
	if (m > 0 && n > 0)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f,
		            a, (int)a_rs, b, (int)b_cs, 0.0f, c, (int)ldc);
}

struct rnn_job {
	const struct rt_rnn_desc *d;
	const float *w, *r, *b, *h0, *c0, *p;
	const int32_t *lens;
	float *y, *yh, *yc, *proj, *scratch;
	int64_t gh, blocks, per;
	int isa;
};

/* One item's view: direction d's weights and activations. */
struct rnn_dir {
	const struct rnn_job *jb;
	int d;
	const float *wb, *rb, *p;
};

static inline float dact(const struct rnn_dir *v, int k, float x)
{
	return rt_rnn_dact(v->jb->d, v->d, k, x);
}

/* gate k, unit j of one row: x's part, h's part (q) and both biases */
static inline float pre(const struct rnn_dir *v, const float *px, const float *q, int64_t k,
                        int64_t j)
{
	int64_t at = k * v->jb->d->hidden + j;
	return px[at] + v->wb[at] + q[at] + v->rb[at];
}

/* LSTM's loop for one row: h and c in place from P's row px and Q's q. */
static void lstm_row(const struct rnn_dir *v, const float *px, const float *q, float *h, float *c)
{
	int64_t H = v->jb->d->hidden;
	for (int64_t j = 0; j < H; j++) {
		float g[4];
		for (int k = 0; k < 4; k++)
			g[k] = pre(v, px, q, k, j);
		h[j] = rt_rnn_lstm(v->jb->d, v->d, g, v->p[j], v->p[H + j], v->p[2 * H + j], &c[j]);
	}
}

/* GRU's z and r for one row (z into q's z columns); r . h into rh when not
 * linear_before_reset, else the whole step. */
static void gru_gates(const struct rnn_dir *v, const float *px, float *q, float *h, float *rh)
{
	int64_t H = v->jb->d->hidden;
	bool lbr = v->jb->d->linear_before_reset != 0;
	for (int64_t j = 0; j < H; j++) {
		if (lbr) {
			int64_t at = 2 * H + j;
			h[j] = rt_rnn_gru_lbr(v->jb->d, v->d, pre(v, px, q, 0, j),
			                      pre(v, px, q, 1, j), px[at] + v->wb[at],
			                      q[at] + v->rb[at], h[j]);
		} else {
			float z = dact(v, 0, pre(v, px, q, 0, j)),
			      r = dact(v, 0, pre(v, px, q, 1, j));
			q[j] = z;
			rh[j] = r * h[j];
		}
	}
}

/* GRU's new h once q's h columns hold (r . h) Rh^T */
static void gru_finish(const struct rnn_dir *v, const float *px, const float *q, float *h)
{
	int64_t H = v->jb->d->hidden;
	for (int64_t j = 0; j < H; j++)
		h[j] = rt_rnn_gru_finish(v->jb->d, v->d, q[j], pre(v, px, q, 2, j), h[j]);
}

static void rnn_item(const struct rnn_job *jb, int64_t it)
{
	const struct rt_rnn_desc *d = jb->d;
	int64_t H = d->hidden, GH = jb->gh, B = d->batch, T = d->seq;
	int dir = (int)(it / jb->blocks);
	int64_t b0 = (it % jb->blocks) * RT_RNN_ROWS;
	int64_t nr = B - b0 < RT_RNN_ROWS ? B - b0 : RT_RNN_ROWS, maxlen = 0;
	float *h = jb->scratch + it * jb->per, *c = h + nr * H, *rh = c + nr * H, *q = rh + nr * H;
	const float *rw = jb->r + dir * GH * H, *px0 = jb->proj + dir * T * B * GH;
	struct rnn_dir v = { jb, dir, jb->b + dir * 2 * GH, jb->b + dir * 2 * GH + GH,
		             jb->p ? jb->p + dir * 3 * H : NULL };
	bool back = dir == 1 || d->reverse, lbr = d->linear_before_reset != 0;
	int64_t n1 = d->cell == RT_RNN_GRU && !lbr ? 2 * H : GH;
	memcpy(h, jb->h0 + (dir * B + b0) * H, sizeof *h * (size_t)(nr * H));
	if (d->cell == RT_RNN_LSTM)
		memcpy(c, jb->c0 + (dir * B + b0) * H, sizeof *c * (size_t)(nr * H));
	memset(rh, 0, sizeof *rh * (size_t)(nr * H));
	for (int64_t i = 0; i < nr; i++) {
		int64_t len = jb->lens[b0 + i];
		maxlen = len > maxlen ? len : maxlen;
		for (int64_t t = len; t < T; t++)
			memset(jb->y + ((t * d->dirs + dir) * B + b0 + i) * H, 0,
			       sizeof(float) * (size_t)H);
	}
	for (int64_t s = 0; s < maxlen; s++) {
		gemm(jb->isa, nr, n1, H, h, H, rw, H, q, GH, false, NULL);
		for (int64_t i = 0; i < nr; i++) {
			int64_t len = jb->lens[b0 + i], t = back ? len - 1 - s : s;
			const float *px = px0 + (t * B + b0 + i) * GH;
			if (s >= len)
				continue;
			if (d->cell == RT_RNN_LSTM)
				lstm_row(&v, px, q + i * GH, h + i * H, c + i * H);
			else if (d->cell == RT_RNN_GRU)
				gru_gates(&v, px, q + i * GH, h + i * H, rh + i * H);
			else
				for (int64_t j = 0; j < H; j++)
					h[i * H + j] = dact(&v, 0, pre(&v, px, q + i * GH, 0, j));
		}
		if (d->cell == RT_RNN_GRU && !lbr) {
			gemm(jb->isa, nr, H, H, rh, H, rw + 2 * H * H, H, q + 2 * H, GH, false,
			     NULL);
			for (int64_t i = 0; i < nr; i++) {
				int64_t len = jb->lens[b0 + i], t = back ? len - 1 - s : s;
				if (s < len)
					gru_finish(&v, px0 + (t * B + b0 + i) * GH, q + i * GH,
					           h + i * H);
			}
		}
		for (int64_t i = 0; i < nr; i++) {
			int64_t len = jb->lens[b0 + i], t = back ? len - 1 - s : s;
			if (s < len)
				memcpy(jb->y + ((t * d->dirs + dir) * B + b0 + i) * H, h + i * H,
				       sizeof *h * (size_t)H);
		}
	}
	memcpy(jb->yh + (dir * B + b0) * H, h, sizeof *h * (size_t)(nr * H));
	if (d->cell == RT_RNN_LSTM)
		memcpy(jb->yc + (dir * B + b0) * H, c, sizeof *c * (size_t)(nr * H));
}

static void rnn_items(void *arg, int64_t begin, int64_t end)
{
	for (int64_t it = begin; it < end; it++)
		rnn_item(arg, it);
}

static bool valid(const struct rt_rnn_desc *d)
{
	if (d->dtype != RT_F32 || (d->ydtype && d->ydtype != RT_F32) || d->seq < 0 ||
	    d->batch < 0 || d->input < 0 || d->hidden <= 0 || (d->dirs != 1 && d->dirs != 2) ||
	    (d->reverse && d->dirs != 1) || !(d->clip >= 0) ||
	    (d->cell != RT_RNN_LSTM && d->cell != RT_RNN_GRU && d->cell != RT_RNN_RNN))
		return false;
	for (int i = 0; i < d->dirs; i++)
		for (int k = 0; k < 3; k++)
			if (d->act[i][k] < 0 || d->act[i][k] >= RT_RNN_ACT_COUNT)
				return false;
	return true;
}

int rt_rnn(struct rt_ctx *ctx, const struct rt_rnn_desc *d, const void *x, const void *w,
           const void *r, const void *b, const void *seq_lens, const void *h0, const void *c0,
           const void *p, void *y, void *yh, void *yc, void *ws)
{
	struct rnn_job jb = { d, w, r, b, h0, c0, p, seq_lens, y, yh, yc, ws, NULL, 0, 0, 0, 0 };
	uint64_t n;
	bool lstm = d->cell == RT_RNN_LSTM;
	if (!valid(d) || !ws_floats(d, &n) || !x || !w || !r || !b || !seq_lens || !h0 || !y ||
	    !yh || (lstm && (!c0 || !p || !yc)) || (d->seq && !ws))
		return RT_ERR_ARGUMENT;
	for (int64_t i = 0; i < d->batch; i++)
		if (jb.lens[i] < 0 || jb.lens[i] > d->seq)
			return RT_ERR_INDEX;
	jb.gh = rt_rnn_gates(d->cell) * d->hidden;
	jb.blocks = (d->batch + RT_RNN_ROWS - 1) / RT_RNN_ROWS;
	jb.per = (d->batch < RT_RNN_ROWS ? d->batch : RT_RNN_ROWS) * (3 * d->hidden + jb.gh);
	jb.isa = rt_sgemm_isa();
	if (d->seq == 0) { /* no steps: the final states are the initial ones */
		int64_t s = (int64_t)d->dirs * d->batch * d->hidden;
		memcpy(yh, h0, sizeof(float) * (size_t)s);
		if (lstm)
			memcpy(yc, c0, sizeof(float) * (size_t)s);
		return RT_OK;
	}
	jb.scratch = jb.proj + d->dirs * d->seq * d->batch * jb.gh;
	for (int i = 0; i < d->dirs; i++)
		gemm(jb.isa, d->seq * d->batch, jb.gh, d->input, x, d->input,
		     jb.w + i * jb.gh * d->input, d->input, jb.proj + i * d->seq * d->batch * jb.gh,
		     jb.gh, true, ctx);
	rt_parallel(ctx, d->dirs * jb.blocks, 1, rnn_items, &jb);
	return RT_OK;
}
