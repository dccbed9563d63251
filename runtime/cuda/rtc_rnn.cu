/*
 * rtc_rnn.cu - ONNX LSTM, GRU and RNN on the device: rt_rnn's semantics
 * (runtime/rt_rnn.c) in FP32.
 *
 * The plan (made at create time) holds two or three GEMM plans on cuBLASLt
 * (rtc_blas.c, FP32 without TF32):
 *   proj  P[d] = X W[d]^T        every step and batch row of both
 *                                directions at once ([seq * batch, G*H]
 *                                per direction, x broadcast over them)
 *   rec   Q[d] = H[d] R[d]^T     one step of both directions
 *   rec_h Qh[d] = (r . H)[d] Rh[d]^T  GRU without linear_before_reset
 * A run enqueues, on the instance's stream: the initial state, the
 * projection, then per step the rec GEMM and one launch of rnn_units over
 * every (direction, batch row, hidden unit), whose per-thread body is
 * rt_rnn_unit (runtime/rt_index_rnn.h: biases, peepholes, clip,
 * activations, the state update and y's element, sequence_lens' masking);
 * GRU without linear_before_reset launches it twice around rec_h. The
 * final state is copied into y_h and y_c last. Nothing waits and nothing
 * is allocated: the whole sequence is captured into the CUDA Graph (two or
 * three nodes per step), the scratch is the step's workspace in the arena
 * (rt_rnn_workspace bytes; the layout is rt_rnn_layout's) and cuBLASLt's
 * the instance's shared workspace.
 *
 * Every step runs for every row: whether a row's sequence is still going
 * is the kernel's test (its length is on the device, so the host never
 * reads it). A length out of [0, seq] sets the index error flag (the run
 * returns RT_ERR_INDEX, as rt_rnn does) and is taken as clamped.
 *
 * Half tensors (dtype or ydtype FP16/BF16: a model stored in half; mixed
 * precision keeps these ops FP32): the projection reads x and w as they
 * are and writes FP32; r, the biases, the peepholes and the initial state
 * are converted into FP32 copies in the workspace, y is written in FP32
 * there and converted at the end. State and arithmetic are FP32 always.
 */
#include "rt_index_rnn.h"
#include "rtc_kern.cuh"

#include <stdlib.h>

struct rtc_rnn {
	struct rt_rnn_desc d;
	struct rt_rnn_layout l;
	int ydtype; /* y's, y_h's and y_c's */
	struct rtc_gemm *proj, *rec, *rec_h;
};

static bool rnn_float(int dt) { return dt == RT_F32 || dt == RT_F16 || dt == RT_BF16; }

static bool rnn_valid(const struct rt_rnn_desc *d)
{
	int y = rtc_out_dtype(d->dtype, d->ydtype);
	if (!rnn_float(d->dtype) || !rnn_float(y) || d->seq < 0 || d->batch < 0 || d->input < 0 ||
	    d->hidden <= 0 || (d->dirs != 1 && d->dirs != 2) || (d->reverse && d->dirs != 1) ||
	    !(d->clip >= 0) ||
	    (d->cell != RT_RNN_LSTM && d->cell != RT_RNN_GRU && d->cell != RT_RNN_RNN))
		return false;
	for (int i = 0; i < d->dirs; i++)
		for (int k = 0; k < 3; k++)
			if (d->act[i][k] < 0 || d->act[i][k] >= RT_RNN_ACT_COUNT)
				return false;
	return true;
}

/* Y[dir] = A[dir] B[dir]^T: m x n from k, batched over the directions with
 * the given batch strides (a_stride 0: A broadcast), Y dense. */
static int rnn_gemm_plan(struct rtc_model *m, int dtype, int ydtype, int64_t dirs, int64_t rows,
                         int64_t n, int64_t k, int64_t a_stride, int64_t b_stride,
                         struct rtc_gemm **plan)
{
	struct rt_gemm_desc g;
	memset(&g, 0, sizeof g);
	g.dtype = dtype;
	g.ydtype = ydtype;
	g.m = rows;
	g.n = n;
	g.k = k;
	g.trans_b = 1;
	g.batch_rank = 1;
	g.batch_dims[0] = dirs;
	g.a_strides[0] = a_stride;
	g.b_strides[0] = b_stride;
	g.alpha = 1;
	g.bias = RT_BIAS_NONE;
	g.ep.act = RT_ACT_NONE;
	return rtc_gemm_plan(m, &g, plan);
}

int rtc_rnn_plan(struct rtc_model *m, const struct rt_rnn_desc *d, struct rtc_rnn **plan)
{
	struct rtc_rnn *p;
	int st, y;
	int64_t H, GH, D, B, T;
	*plan = NULL;
	if (!rnn_valid(d))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_rnn: unsupported descriptor");
	if (!(p = (struct rtc_rnn *)calloc(1, sizeof *p)))
		return RT_ERR_NO_MEMORY;
	if ((st = rtc_on_close(m, free, p)))
		return st;
	p->d = *d;
	y = rtc_out_dtype(d->dtype, d->ydtype);
	p->ydtype = y;
	if (!rt_rnn_layout(d, &p->l) ||
	    (d->seq && rt_rnn_workspace(d) < p->l.total * sizeof(float)))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_rnn: sizes overflow");
	H = d->hidden, GH = rt_rnn_gates(d->cell) * H, D = d->dirs, B = d->batch, T = d->seq;
	if ((st = rnn_gemm_plan(m, d->dtype, d->dtype == RT_F32 ? 0 : RT_F32, D, T * B, GH,
	                        d->input, 0, GH * d->input, &p->proj)) ||
	    (st = rnn_gemm_plan(m, RT_F32, 0, D, B, GH, H, B * H, GH * H, &p->rec)))
		return st;
	if (rt_rnn_phases(d) == 2 &&
	    (st = rnn_gemm_plan(m, RT_F32, 0, D, B, H, H, B * H, GH * H, &p->rec_h)))
		return st;
	*plan = p;
	return RT_OK;
}

__global__ void rnn_units(const struct rt_rnn_desc d, const struct rt_rnn_step st, int64_t n,
                          int *flag)
{
	RTC_GRID_LOOP(u, n)
	{
		if (!rt_rnn_unit(&d, &st, u))
			*flag = 1;
	}
}

/* n elements from src (sdt) to dst (ddt), FP32 on one side at least */
static int rnn_put(struct rtc_model *m, void *dst, int ddt, const void *src, int sdt, int64_t n)
{
	if (ddt != sdt)
		return rtc_convert(m, dst, ddt, src, sdt, n);
	return n ? rtc_check(m,
	                     cudaMemcpyAsync(dst, src, (size_t)n * (size_t)rtc_dtype_size(ddt),
	                                     cudaMemcpyDeviceToDevice, rtc_stream(m)),
	                     "rtc_rnn")
	         : RT_OK;
}

int rtc_rnn(struct rtc_model *m, const struct rtc_rnn *plan, const void *x, const void *w,
            const void *r, const void *b, const void *seq_lens, const void *h0, const void *c0,
            const void *p, void *y, void *yh, void *yc, void *ws)
{
	const struct rt_rnn_desc *d = &plan->d;
	const struct rt_rnn_layout *l = &plan->l;
	const int dt = d->dtype, yt = plan->ydtype;
	const bool lstm = d->cell == RT_RNN_LSTM, half = dt != RT_F32 || yt != RT_F32;
	const int64_t H = d->hidden, GH = rt_rnn_gates(d->cell) * H, D = d->dirs, B = d->batch,
	              T = d->seq, state = D * B * H;
	float *f = (float *)ws;
	const float *r32 = (const float *)r, *b32 = (const float *)b, *p32 = (const float *)p;
	float *y32 = (float *)y;
	struct rt_rnn_step st;
	int s_, blocks;
	if (!x || !w || !r || !b || !seq_lens || !h0 || !y || !yh || (lstm && (!c0 || !p || !yc)) ||
	    (T && !ws))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_rnn: missing tensors");
	if (T == 0) { /* no steps: the final states are the initial ones */
		if ((s_ = rnn_put(m, yh, yt, h0, dt, state)))
			return s_;
		return lstm ? rnn_put(m, yc, yt, c0, dt, state) : RT_OK;
	}
	if (B == 0)
		return RT_OK;
	if (half) {
		float *rw = f + l->r, *bw = f + l->b, *pw = f + l->p;
		if ((s_ = rnn_put(m, rw, RT_F32, r, dt, D * GH * H)) ||
		    (s_ = rnn_put(m, bw, RT_F32, b, dt, D * 2 * GH)) ||
		    (lstm && (s_ = rnn_put(m, pw, RT_F32, p, dt, D * 3 * H))))
			return s_;
		r32 = rw, b32 = bw, p32 = pw;
		if (yt != RT_F32)
			y32 = f + l->y;
	}
	if ((s_ = rnn_put(m, f + l->h, RT_F32, h0, dt, state)) ||
	    (lstm && (s_ = rnn_put(m, f + l->c, RT_F32, c0, dt, state))) ||
	    (s_ = rtc_gemm(m, plan->proj, x, w, NULL, NULL, f + l->proj)))
		return s_;
	st.proj = f + l->proj;
	st.b = b32;
	st.p = p32;
	st.lens = (const int32_t *)seq_lens;
	st.h = f + l->h;
	st.c = f + l->c;
	st.rh = f + l->rh;
	st.q = f + l->q;
	st.y = y32;
	blocks = rtc_blocks(state, RTC_THREADS, rtc_sm_count(m));
	for (int64_t s = 0; s < T; s++) {
		st.s = s;
		st.phase = 0;
		if ((s_ = rtc_gemm(m, plan->rec, st.h, r32, NULL, NULL, st.q)))
			return s_;
		rnn_units<<<blocks, RTC_THREADS, 0, rtc_stream(m)>>>(*d, st, state,
		                                                     rtc_index_error(m));
		if ((s_ = rtc_launched(m, "rtc_rnn")))
			return s_;
		if (plan->rec_h) { /* (r . H) Rh^T into c, then the units' second half */
			st.phase = 1;
			if ((s_ = rtc_gemm(m, plan->rec_h, st.rh, r32 + 2 * H * H, NULL, NULL,
			                   st.c)))
				return s_;
			rnn_units<<<blocks, RTC_THREADS, 0, rtc_stream(m)>>>(*d, st, state,
			                                                     rtc_index_error(m));
			if ((s_ = rtc_launched(m, "rtc_rnn")))
				return s_;
		}
	}
	if (y32 != y && (s_ = rtc_convert(m, y, yt, y32, RT_F32, T * state)))
		return s_;
	if ((s_ = rnn_put(m, yh, yt, st.h, RT_F32, state)))
		return s_;
	return lstm ? rnn_put(m, yc, yt, st.c, RT_F32, state) : RT_OK;
}
