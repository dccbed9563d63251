/*
 * rtc_dnn.c - convolution and transposed convolution plans on cuDNN 9's
 * legacy convolution API: struct rt_conv_desc's semantics (rt_conv.c) on
 * the device, NCHW, 1 to 3 spatial dims (1-D as 2-D with a leading 1),
 * groups, dilations, any pads.
 *
 * cuDNN pads symmetrically only. Forward, the common part of each dim's
 * pads goes to cuDNN and the rest is padded explicitly: rtc_pad copies the
 * input with zeros around it into the workspace first. Transposed
 * (cudnnConvolutionBackwardData: a transposed convolution is the gradient
 * of a convolution with respect to its input), cuDNN computes the whole
 * result with the common pad, and rtc_pad crops it to the output, or
 * extends it with zeros where output_padding reaches past it.
 *
 * FP32 runs with CUDNN_FMA_MATH (never TF32); FP16 and BF16 use Tensor
 * Core math with FP32 accumulation (the convolution descriptor's compute
 * type is FLOAT). A result of another dtype (ydtype) is computed in dtype
 * into the workspace and converted with rtc_convert; the epilogue then
 * runs in the result's type with the bias and residual in dtype.
 *
 * Bias, residual and activation: for FP32 with a bias, ReLU or no
 * activation, cudnnConvolutionBiasActivationForward does all of it in one
 * call (the residual is its z input, NaN propagates through its ReLU as
 * through ONNX's; with no activation only with the algorithm cuDNN allows
 * there); otherwise, or if cuDNN declines at run time, the convolution is
 * followed by rtc_epilogue.
 *
 * The algorithm is cuDNN's heuristic choice (cudnnGet...Algorithm_v7)
 * among those whose workspace fits ONNXC_CUDA_WORKSPACE_MB, checked with
 * the math type the plan will run with. Refused (RT_ERR_ARGUMENT with a
 * message): dtypes other than f32, f16 and bf16, f16 writing bf16 or the
 * other way round (rtc_convert goes through f32), more than 3 spatial
 * dims, an empty input or kernel, tensors over 2^31 elements, a
 * transposed convolution with a residual, and pads a transposed
 * convolution's result cannot hold.
 */
#include "rtc_desc.h"

#include <stdlib.h>

struct rtc_conv {
	struct rtc_conv_geom g;
	struct rtc_conv_dnn dnn;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd;
	size_t algo_ws;
	int fused; /* cudnnConvolutionBiasActivationForward applies (given a bias) */
};

static void conv_free(void *arg)
{
	struct rtc_conv *p = arg;
	rtc_conv_dnn_destroy(&p->dnn);
	free(p);
}

static int dnn_fail(struct rtc_model *m, cudnnStatus_t s, const char *what)
{
	return rtc_fail(m, RT_ERR_DEVICE, "%s: %s", what, cudnnGetErrorString(s));
}

/* The math type an algorithm runs with: FMA for FP32 whatever cuDNN
 * reported; for half, cuDNN's own; 0 to skip the candidate. */
static int math_for(const struct rtc_conv *p, cudnnMathType_t reported, cudnnMathType_t *mt)
{
	if (p->g.dt != RT_F32) {
		*mt = reported;
		return 1;
	}
	*mt = CUDNN_FMA_MATH;
	return reported == CUDNN_FMA_MATH || reported == CUDNN_DEFAULT_MATH;
}

static int plan_forward(struct rtc_model *m, struct rtc_conv *p)
{
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	cudnnHandle_t h = rtc_cudnn(m);
	const struct rtc_conv_dnn *d = &p->dnn;
	size_t limit = rtc_workspace_limit(m);
	int count = 0;
	cudnnStatus_t s = cudnnGetConvolutionForwardAlgorithm_v7(
	        h, d->x, d->w, d->conv, d->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf);
	if (s != CUDNN_STATUS_SUCCESS)
		return dnn_fail(m, s, "cudnnGetConvolutionForwardAlgorithm_v7");
	for (int i = 0; i < count; i++) {
		cudnnMathType_t mt;
		size_t ws = 0;
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_for(p, perf[i].mathType, &mt) ||
		    cudnnSetConvolutionMathType(d->conv, mt) != CUDNN_STATUS_SUCCESS ||
		    cudnnGetConvolutionForwardWorkspaceSize(h, d->x, d->w, d->conv, d->y,
		                                            perf[i].algo,
		                                            &ws) != CUDNN_STATUS_SUCCESS ||
		    ws > limit)
			continue;
		p->fwd = perf[i].algo;
		p->algo_ws = ws;
		p->fused = d->act && (p->g.ep.act == RT_ACT_RELU ||
		                      p->fwd == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
		return RT_OK;
	}
	return rtc_fail(m, RT_ERR_DEVICE,
	                "cuDNN has no convolution algorithm within %zu bytes of workspace "
	                "(ONNXC_CUDA_WORKSPACE_MB)",
	                limit);
}

static int plan_backward(struct rtc_model *m, struct rtc_conv *p)
{
	cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	cudnnHandle_t h = rtc_cudnn(m);
	const struct rtc_conv_dnn *d = &p->dnn;
	size_t limit = rtc_workspace_limit(m);
	int count = 0;
	/* cuDNN's dy is our x (dnn.x), its dx our full result (dnn.y) */
	cudnnStatus_t s = cudnnGetConvolutionBackwardDataAlgorithm_v7(
	        h, d->w, d->x, d->conv, d->y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf);
	if (s != CUDNN_STATUS_SUCCESS)
		return dnn_fail(m, s, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
	for (int i = 0; i < count; i++) {
		cudnnMathType_t mt;
		size_t ws = 0;
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_for(p, perf[i].mathType, &mt) ||
		    cudnnSetConvolutionMathType(d->conv, mt) != CUDNN_STATUS_SUCCESS ||
		    cudnnGetConvolutionBackwardDataWorkspaceSize(h, d->w, d->x, d->conv, d->y,
		                                                 perf[i].algo,
		                                                 &ws) != CUDNN_STATUS_SUCCESS ||
		    ws > limit)
			continue;
		p->bwd = perf[i].algo;
		p->algo_ws = ws;
		return RT_OK;
	}
	return rtc_fail(m, RT_ERR_DEVICE,
	                "cuDNN has no transposed-convolution algorithm within %zu bytes of "
	                "workspace (ONNXC_CUDA_WORKSPACE_MB)",
	                limit);
}

static int plan(struct rtc_model *m, const struct rt_conv_desc *d, int transposed,
                struct rtc_conv **out)
{
	struct rtc_conv *p;
	char why[256];
	int status;
	if (!m || !d || !out)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_conv_plan: NULL argument")
		         : RT_ERR_ARGUMENT;
	*out = NULL;
	if (!(p = calloc(1, sizeof *p)))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for a convolution plan");
	/* from here on the instance frees the plan, whatever happens */
	if ((status = rtc_on_close(m, conv_free, p)))
		return status;
	if ((status = rtc_conv_geom(d, transposed, &p->g, why, sizeof why)))
		return rtc_fail(m, status, "%s", why);
	if (!p->g.noop) {
		if ((status = rtc_conv_dnn_build(&p->g, &p->dnn, why, sizeof why)))
			return rtc_fail(m, status, "%s", why);
		if ((status = transposed ? plan_backward(m, p) : plan_forward(m, p)))
			return status;
		rtc_need_workspace(m, p->g.ws_algo + p->algo_ws);
	}
	*out = p;
	return RT_OK;
}

int rtc_conv_plan(struct rtc_model *m, const struct rt_conv_desc *d, struct rtc_conv **p)
{
	return plan(m, d, 0, p);
}

int rtc_conv_transpose_plan(struct rtc_model *m, const struct rt_conv_desc *d, struct rtc_conv **p)
{
	return plan(m, d, 1, p);
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

static int run_ok(struct rtc_model *m, const struct rtc_conv *p, const void *x, const void *w,
                  const void *residual, const void *y, const void *ws)
{
	if (!x || !w || !y || (p->g.ep.has_residual && !residual))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_conv: a NULL operand");
	if ((p->g.ws_algo || p->algo_ws) && !ws)
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "rtc_conv: no workspace (rtc_capture_begin allocates it)");
	return RT_OK;
}

/* Conversion of a staged result, then bias, residual and activation. */
static int finish(struct rtc_model *m, const struct rtc_conv *p, const void *staged,
                  const void *bias, const void *residual, void *y)
{
	const struct rtc_conv_geom *g = &p->g;
	struct rt_epilogue ep = g->ep;
	int status;
	if (g->staged &&
	    (status = rtc_convert(m, y, g->yt, staged, g->dt, g->n * g->m * g->out_sp)))
		return status;
	ep.has_residual = residual != NULL;
	if (!bias && !residual && ep.act == RT_ACT_NONE)
		return RT_OK;
	return rtc_epilogue(m, &ep, g->yt, y, bias, g->dt, residual, g->dt, g->n, g->m, g->out_sp);
}

/* The one-call form; CUDNN_STATUS_NOT_SUPPORTED when cuDNN declines. */
static cudnnStatus_t fused(struct rtc_model *m, const struct rtc_conv *p, const void *x,
                           const void *w, const void *bias, const void *residual, void *y, void *ws)
{
	const struct rtc_conv_dnn *d = &p->dnn;
	const float one = 1, alpha2 = residual ? 1.0f : 0.0f;
	/* with alpha2 = 0, z is not read (y is only named to fill the slot) */
	return cudnnConvolutionBiasActivationForward(
	        rtc_cudnn(m), &one, d->x, x, d->w, w, d->conv, p->fwd, ws, p->algo_ws, &alpha2,
	        d->y, residual ? residual : y, d->bias, bias, d->act, d->y, y);
}

int rtc_conv(struct rtc_model *m, const struct rtc_conv *p, const void *x, const void *w,
             const void *bias, const void *residual, void *y)
{
	const struct rtc_conv_geom *g;
	const struct rtc_conv_dnn *d;
	unsigned char *ws;
	void *out, *algo_ws;
	const float one = 1, zero = 0;
	cudnnStatus_t s;
	int status;
	if (!m || !p)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_conv: NULL plan") : RT_ERR_ARGUMENT;
	g = &p->g;
	d = &p->dnn;
	if (g->noop)
		return RT_OK;
	residual = g->ep.has_residual ? residual : NULL;
	ws = rtc_workspace(m);
	if ((status = run_ok(m, p, x, w, residual, y, ws)))
		return status;
	algo_ws = ws ? ws + g->ws_algo : NULL;
	if (g->prepad) {
		if ((status = rtc_pad(m, &g->pad_x, x, ws + g->ws_x)))
			return status;
		x = ws + g->ws_x;
	}
	if (p->fused && bias) {
		s = fused(m, p, x, w, bias, residual, y, algo_ws);
		if (s == CUDNN_STATUS_SUCCESS)
			return RT_OK;
		if (s != CUDNN_STATUS_NOT_SUPPORTED)
			return dnn_fail(m, s, "cudnnConvolutionBiasActivationForward");
	}
	out = g->staged ? ws + g->ws_stage : y;
	s = cudnnConvolutionForward(rtc_cudnn(m), &one, d->x, x, d->w, w, d->conv, p->fwd, algo_ws,
	                            p->algo_ws, &zero, d->y, out);
	if (s != CUDNN_STATUS_SUCCESS)
		return dnn_fail(m, s, "cudnnConvolutionForward");
	return finish(m, p, out, bias, residual, y);
}

int rtc_conv_transpose(struct rtc_model *m, const struct rtc_conv *p, const void *x, const void *w,
                       const void *bias, void *y)
{
	const struct rtc_conv_geom *g;
	const struct rtc_conv_dnn *d;
	unsigned char *ws;
	void *full, *out;
	const float one = 1, zero = 0;
	cudnnStatus_t s;
	int status;
	if (!m || !p)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_conv_transpose: NULL plan")
		         : RT_ERR_ARGUMENT;
	g = &p->g;
	d = &p->dnn;
	if (g->noop)
		return RT_OK;
	ws = rtc_workspace(m);
	if ((status = run_ok(m, p, x, w, NULL, y, ws)))
		return status;
	out = g->staged ? ws + g->ws_stage : y;
	full = g->crop ? ws + g->ws_full : out;
	s = cudnnConvolutionBackwardData(rtc_cudnn(m), &one, d->w, w, d->x, x, d->conv, p->bwd,
	                                 ws ? ws + g->ws_algo : NULL, p->algo_ws, &zero, d->y,
	                                 full);
	if (s != CUDNN_STATUS_SUCCESS)
		return dnn_fail(m, s, "cudnnConvolutionBackwardData");
	if (g->crop && (status = rtc_pad(m, &g->crop_y, full, out)))
		return status;
	return finish(m, p, out, bias, NULL, y);
}
