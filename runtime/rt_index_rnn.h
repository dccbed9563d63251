/*
 * rt_index_rnn.h - LSTM, GRU and RNN's cell arithmetic (rt_rnn.c,
 * cuda/rtc_rnn.cu): the activations with their alpha and beta, the clip
 * on every activation's input, the cells' formulas for one hidden unit,
 * and the CUDA runtime's workspace layout and per-unit step.
 *
 * Both runtimes compute a step as: Q = H R^T (a GEMM), then per unit the
 * gates' pre-activations px + wb + q + rb (px: the step's row of the input
 * projection X W^T), the activations and the new state. The formulas below
 * are the one copy of the second half; the expressions keep rt_rnn.c's
 * order, so the CPU and the GPU compute the same floats from the same Q.
 *
 * The CUDA runtime's step (rt_rnn_unit) is written here too, as plain C over
 * FP32 buffers, so that the unit test (tests/unit/test_rtc_index.c) runs it
 * on the host, with its GEMMs done naively, against rt_rnn.
 */
#ifndef ONNXC_RT_INDEX_RNN_H
#define ONNXC_RT_INDEX_RNN_H

#include "rt_index.h"

#include <math.h>

RT_HD int rt_rnn_gates(int cell) { return cell == RT_RNN_LSTM ? 4 : cell == RT_RNN_GRU ? 3 : 1; }

/* ONNX's activation a (enum rt_rnn_act) of x */
RT_HD float rt_rnn_act(int a, float x, float al, float be)
{
	switch (a) {
	case RT_RNN_RELU: return x > 0 ? x : 0;
	case RT_RNN_TANH: return tanhf(x);
	case RT_RNN_SIGMOID: return 1 / (1 + expf(-x));
	case RT_RNN_AFFINE: return al * x + be;
	case RT_RNN_LEAKY_RELU: return x >= 0 ? x : al * x;
	case RT_RNN_THRESHOLDED_RELU: return x > al ? x : 0;
	case RT_RNN_SCALED_TANH: return al * tanhf(be * x);
	case RT_RNN_HARD_SIGMOID: return fminf(fmaxf(al * x + be, 0), 1);
	case RT_RNN_ELU: return x >= 0 ? x : al * expm1f(x);
	case RT_RNN_SOFTSIGN: return x / (1 + fabsf(x));
	default: return log1pf(expf(-fabsf(x))) + fmaxf(x, 0); /* RT_RNN_SOFTPLUS */
	}
}

/* Direction dir's activation k (f, g, h) of x, clipped first (clip > 0). */
RT_HD float rt_rnn_dact(const struct rt_rnn_desc *d, int dir, int k, float x)
{
	if (d->clip > 0)
		x = fminf(fmaxf(x, -d->clip), d->clip);
	return rt_rnn_act(d->act[dir][k], x, d->alpha[dir][k], d->beta[dir][k]);
}

/* LSTM's unit: pre[0..3] the pre-activations of gates i, o, f, c (px + wb
 * + q + rb), pi, po, pf its peepholes; *c in and out; returns the new h. */
RT_HD float rt_rnn_lstm(const struct rt_rnn_desc *d, int dir, const float *pre, float pi, float po,
                        float pf, float *c)
{
	float i = rt_rnn_dact(d, dir, 0, pre[0] + pi * *c);
	float f = d->input_forget ? 1 - i : rt_rnn_dact(d, dir, 0, pre[2] + pf * *c);
	float cn = f * *c + i * rt_rnn_dact(d, dir, 1, pre[3]);
	float o = rt_rnn_dact(d, dir, 0, pre[1] + po * cn);
	*c = cn;
	return o * rt_rnn_dact(d, dir, 2, cn);
}

/* GRU's unit with linear_before_reset: z and r from their pre-activations,
 * xh = px + wb of gate h, qh = q + rb of gate h; returns the new h. */
RT_HD float rt_rnn_gru_lbr(const struct rt_rnn_desc *d, int dir, float zpre, float rpre, float xh,
                           float qh, float h)
{
	float z = rt_rnn_dact(d, dir, 0, zpre), r = rt_rnn_dact(d, dir, 0, rpre);
	float hh = rt_rnn_dact(d, dir, 1, xh + r * qh);
	return (1 - z) * hh + z * h;
}

/* GRU's unit without: its new h from z and gate h's pre-activation (its q
 * part being (r . H) Rh^T). */
RT_HD float rt_rnn_gru_finish(const struct rt_rnn_desc *d, int dir, float z, float hpre, float h)
{
	float hh = rt_rnn_dact(d, dir, 1, hpre);
	return (1 - z) * hh + z * h;
}

/* ------------------------------------------------------------------------ */
/* The CUDA runtime's recurrence                                            */
/* ------------------------------------------------------------------------ */

/*
 * Its workspace, in floats, every part starting on 16 floats (64 bytes,
 * for cuBLASLt's aligned algorithms):
 *   proj [dirs, seq, batch, G*H]  X W^T of every step (FP32)
 *   h, c [dirs, batch, H]         the state (c: LSTM's cell; GRU's qh)
 *   rh   [dirs, batch, H]         GRU's r . h
 *   q    [dirs, batch, G*H]       H R^T of the step
 * and where the tensors are half (dtype or ydtype not f32) their FP32
 * copies: r [dirs, G*H, H], b [dirs, 2*G*H], p [dirs, 3*H], y [seq, dirs,
 * batch, H]. false when the sizes overflow.
 */
struct rt_rnn_layout {
	uint64_t proj, h, c, rh, q, r, b, p, y, total;
};

RT_HOST bool rt_rnn_layout(const struct rt_rnn_desc *d, struct rt_rnn_layout *l)
{
	uint64_t gh, rows, part[9], at = 0;
	bool half = d->dtype != RT_F32 || (d->ydtype && d->ydtype != RT_F32);
	if (d->seq < 0 || d->batch < 0 || d->hidden < 0 || d->input < 0 || d->dirs < 1 ||
	    d->dirs > 2 || d->hidden > INT32_MAX || d->batch > INT32_MAX || d->seq > INT32_MAX)
		return false;
	gh = (uint64_t)rt_rnn_gates(d->cell) * (uint64_t)d->hidden;
	rows = (uint64_t)d->dirs * (uint64_t)d->batch;
	if (rows && (uint64_t)d->seq > (UINT64_MAX >> 8) / rows / (gh ? gh : 1))
		return false;
	if (gh && (uint64_t)d->hidden > (UINT64_MAX >> 8) / (uint64_t)d->dirs / gh)
		return false;
	part[0] = rows * (uint64_t)d->seq * gh;
	part[1] = part[2] = part[3] = rows * (uint64_t)d->hidden;
	part[4] = rows * gh;
	part[5] = half ? (uint64_t)d->dirs * gh * (uint64_t)d->hidden : 0;
	part[6] = half ? (uint64_t)d->dirs * 2 * gh : 0;
	part[7] = half ? (uint64_t)d->dirs * 3 * (uint64_t)d->hidden : 0;
	part[8] = half ? (uint64_t)d->seq * rows * (uint64_t)d->hidden : 0;
	for (int i = 0; i < 9; i++) {
		uint64_t *dst[9] = { &l->proj, &l->h, &l->c, &l->rh, &l->q,
			             &l->r,    &l->b, &l->p, &l->y };
		*dst[i] = at;
		at += (part[i] + 15) / 16 * 16;
	}
	l->total = at;
	return at < (UINT64_MAX >> 8);
}

/* One step's buffers (FP32) for the unit function; lens int32 [batch]. */
struct rt_rnn_step {
	const float *proj, *b, *p;
	const int32_t *lens;
	float *h, *c, *rh, *q, *y;
	int64_t s; /* the step: 0 .. seq - 1 */
	int phase; /* GRU without linear_before_reset: 0 before (r . H) Rh^T, 1 after */
};

/* How many phases a step has (GEMM, then the units, once or twice). */
RT_HD int rt_rnn_phases(const struct rt_rnn_desc *d)
{
	return d->cell == RT_RNN_GRU && !d->linear_before_reset ? 2 : 1;
}

/*
 * Unit u of [dirs, batch, hidden] at step st->s, phase st->phase, once q
 * holds H R^T (phase 1: q's h columns hold (r . H) Rh^T, in c): a batch row
 * whose sequence has s steps or more takes the step at time s (forward) or
 * len - 1 - s (backward), updates h (and c) and writes y's element there;
 * a shorter one keeps its state and writes y's zero at time s (so every
 * element of y is written once over the steps). Returns false when the
 * row's sequence length is out of [0, seq] (then it is taken as clamped).
 */
RT_HD bool rt_rnn_unit(const struct rt_rnn_desc *d, const struct rt_rnn_step *st, int64_t u)
{
	const int64_t H = d->hidden, B = d->batch, T = d->seq;
	const int64_t G = rt_rnn_gates(d->cell), GH = G * H;
	const int64_t j = u % H, row = u / H, b = row % B;
	const int dir = (int)(row / B);
	const int64_t len0 = st->lens[b], len = len0 < 0 ? 0 : len0 > T ? T : len0;
	const bool back = dir == 1 || d->reverse, last = st->phase == rt_rnn_phases(d) - 1;
	const float *q = st->q + row * GH, *wb = st->b + dir * 2 * GH, *rb = wb + GH;
	float *h = st->h + u;
	if (st->s >= len) {
		if (last)
			st->y[((st->s * d->dirs + dir) * B + b) * H + j] = 0;
		return len == len0;
	}
	const int64_t t = back ? len - 1 - st->s : st->s;
	const float *px = st->proj + ((dir * T + t) * B + b) * GH;
	float hn;
	if (d->cell == RT_RNN_LSTM) {
		const float *p = st->p + dir * 3 * H;
		float pre[4];
		for (int k = 0; k < 4; k++)
			pre[k] = px[k * H + j] + wb[k * H + j] + q[k * H + j] + rb[k * H + j];
		hn = rt_rnn_lstm(d, dir, pre, p[j], p[H + j], p[2 * H + j], st->c + u);
	} else if (d->cell == RT_RNN_RNN) {
		hn = rt_rnn_dact(d, dir, 0, px[j] + wb[j] + q[j] + rb[j]);
	} else if (d->linear_before_reset) {
		int64_t z = j, r = H + j, at = 2 * H + j;
		hn = rt_rnn_gru_lbr(d, dir, px[z] + wb[z] + q[z] + rb[z],
		                    px[r] + wb[r] + q[r] + rb[r], px[at] + wb[at], q[at] + rb[at],
		                    *h);
	} else if (st->phase == 0) { /* z into q's z column, r . h */
		int64_t z = j, r = H + j;
		float zg = rt_rnn_dact(d, dir, 0, px[z] + wb[z] + q[z] + rb[z]);
		float rg = rt_rnn_dact(d, dir, 0, px[r] + wb[r] + q[r] + rb[r]);
		st->q[row * GH + j] = zg;
		st->rh[u] = rg * *h;
		return len == len0;
	} else {
		int64_t at = 2 * H + j;
		hn = rt_rnn_gru_finish(d, dir, q[j], px[at] + wb[at] + st->c[u] + rb[at], *h);
	}
	*h = hn;
	st->y[((t * d->dirs + dir) * B + b) * H + j] = hn;
	return len == len0;
}

#endif
