/*
 * rtc_blas.c - GEMM plans on cuBLASLt: struct rt_gemm_desc's semantics
 * (rt_gemm.c) on the device.
 *
 * The plan (made at create time) maps the descriptor onto cuBLASLt with
 * rtc_desc.c - row-major Y = op(A) op(B) as column-major Y^T = op(B)^T
 * op(A)^T, the batch as strided-batched calls, the epilogue split between
 * cuBLASLt's (bias, ReLU, C = beta * bias or the residual) and
 * rtc_epilogue - and picks an algorithm with cublasLtMatmulAlgoGetHeuristic
 * within the workspace limit. It picks two: one for operands aligned to 16
 * bytes (every arena tensor is 64-aligned) and one that only assumes the
 * element size, which a run falls back to when a pointer is less aligned
 * (cuBLASLt's heuristics otherwise assume 256 bytes).
 *
 * FP32 runs with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no emulation), or
 * CUBLAS_COMPUTE_32F (no TF32 either) if the pedantic mode has no
 * algorithm; FP16 and BF16 inputs accumulate in FP32 (CUBLAS_COMPUTE_32F)
 * and may write FP32; FP64 runs in FP64.
 *
 * What the plan refuses (RT_ERR_ARGUMENT with a message): integer and
 * boolean GEMMs (cuBLASLt has no wrapping integer GEMM), f64 mixed with
 * another type, and more than 2^31-1 batch positions in one strided call.
 *
 * A run enqueues everything on the instance's stream and never waits:
 * zeroing the operands of a k = 0 GEMM, converting and broadcasting C,
 * the cuBLASLt calls, rtc_epilogue, the conversion of a staged result.
 */
#include "rtc_desc.h"

#include <stdint.h>
#include <stdlib.h>

/* Operands at least this aligned use the plan's first algorithm. */
#define LT_ALIGN 16

struct rtc_gemm {
	struct rtc_gemm_geom g;
	struct rtc_gemm_lt lt;
	cublasLtMatmulAlgo_t algo[2]; /* 0: 16-byte aligned operands; 1: element-aligned */
	int have[2];
	size_t algo_ws;
	float alpha32, beta32;
	double alpha64, beta64;
};

static void gemm_free(void *arg)
{
	struct rtc_gemm *p = arg;
	rtc_gemm_lt_destroy(&p->lt);
	free(p);
}

static int lt_fail(struct rtc_model *m, cublasStatus_t s, const char *what)
{
	return rtc_fail(m, RT_ERR_DEVICE, "%s: %s (%s)", what, cublasLtGetStatusString(s),
	                cublasLtGetStatusName(s));
}

static cublasStatus_t set_pref(cublasLtMatmulPreference_t pref,
                               cublasLtMatmulPreferenceAttributes_t a, const void *v, size_t n)
{
	return cublasLtMatmulPreferenceSetAttribute(pref, a, v, n);
}

/*
 * cuBLASLt's best algorithm for operands aligned to align bytes, needing
 * at most limit bytes of workspace; *found 0 when there is none.
 */
static cublasStatus_t heuristic(struct rtc_model *m, struct rtc_gemm *p, uint32_t align,
                                uint64_t limit, int *found, cublasLtMatmulAlgo_t *algo, size_t *ws)
{
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t r;
	int count = 0;
	/* heuristics judge the bias pointer's alignment by its value only */
	const void *bias = (const void *)(uintptr_t)align;
	cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
	*found = 0;
	if (s != CUBLAS_STATUS_SUCCESS)
		return s;
	if (!(s = set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit)) &&
	    !(s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align,
	                   sizeof align)) &&
	    !(s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align,
	                   sizeof align)) &&
	    !(s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align,
	                   sizeof align)) &&
	    !(s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align,
	                   sizeof align)) &&
	    (!p->g.lt_bias ||
	     !(s = cublasLtMatmulDescSetAttribute(p->lt.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
	                                          &bias, sizeof bias))))
		s = cublasLtMatmulAlgoGetHeuristic(rtc_cublaslt(m), p->lt.op, p->lt.a, p->lt.b,
		                                   p->lt.c, p->lt.d, pref, 1, &r, &count);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s == CUBLAS_STATUS_NOT_SUPPORTED)
		return CUBLAS_STATUS_SUCCESS; /* no algorithm: *found stays 0 */
	if (s == CUBLAS_STATUS_SUCCESS && count > 0 && r.state == CUBLAS_STATUS_SUCCESS) {
		*found = 1;
		*algo = r.algo;
		*ws = r.workspaceSize;
	}
	return s;
}

/* Descriptors and the two algorithms for one compute mode; the status of
 * the first failing call, *found 0 when cuBLASLt has no algorithm. */
static cublasStatus_t try_mode(struct rtc_model *m, struct rtc_gemm *p, int pedantic, size_t *ws,
                               const char **what)
{
	const struct rtc_gemm_geom *g = &p->g;
	int es = rt_dtype_size(g->dt) < rt_dtype_size(g->dd) ? rt_dtype_size(g->dt)
	                                                     : rt_dtype_size(g->dd);
	uint64_t limit = rtc_workspace_limit(m);
	cublasStatus_t s = rtc_gemm_lt_build(g, pedantic, &p->lt);
	*what = "cuBLASLt descriptors";
	if (s != CUBLAS_STATUS_SUCCESS)
		return s;
	*what = "cublasLtMatmulAlgoGetHeuristic";
	if (!(s = heuristic(m, p, LT_ALIGN, limit, &p->have[0], &p->algo[0], &ws[0])))
		s = heuristic(m, p, (uint32_t)es, limit, &p->have[1], &p->algo[1], &ws[1]);
	if (s != CUBLAS_STATUS_SUCCESS || (!p->have[0] && !p->have[1])) {
		p->have[0] = p->have[1] = 0;
		rtc_gemm_lt_destroy(&p->lt);
	}
	return s;
}

/* The pedantic mode first (FP32, FP64), then the plain one. */
static int plan_lt(struct rtc_model *m, struct rtc_gemm *p)
{
	const struct rtc_gemm_geom *g = &p->g;
	size_t ws[2] = { 0, 0 };
	const char *what = "";
	cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
	if (g->dt == RT_F32 || g->dt == RT_F64)
		s = try_mode(m, p, 1, ws, &what);
	if (!p->have[0] && !p->have[1])
		s = try_mode(m, p, 0, ws, &what);
	if (s != CUBLAS_STATUS_SUCCESS)
		return lt_fail(m, s, what);
	if (!p->have[0] && !p->have[1])
		return rtc_fail(m, RT_ERR_DEVICE,
		                "cuBLASLt has no algorithm for the GEMM %lldx%lldx%lld (%s to %s, "
		                "batch %lld) within %zu bytes of workspace",
		                (long long)g->m, (long long)g->n, (long long)g->k,
		                rtc_dtype_name(g->dt), rtc_dtype_name(g->yt), (long long)g->nbatch,
		                rtc_workspace_limit(m));
	p->algo_ws = ws[0] > ws[1] ? ws[0] : ws[1];
	p->alpha32 = (float)g->alpha;
	p->beta32 = (float)g->beta;
	p->alpha64 = g->alpha;
	p->beta64 = g->beta;
	rtc_need_workspace(m, g->ws_algo + p->algo_ws);
	return RT_OK;
}

int rtc_gemm_plan(struct rtc_model *m, const struct rt_gemm_desc *d, struct rtc_gemm **plan)
{
	struct rtc_gemm *p;
	char why[256];
	int status;
	if (!m || !d || !plan)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gemm_plan: NULL argument")
		         : RT_ERR_ARGUMENT;
	*plan = NULL;
	if (!(p = calloc(1, sizeof *p)))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for a GEMM plan");
	/* from here on the instance frees the plan, whatever happens */
	if ((status = rtc_on_close(m, gemm_free, p)))
		return status;
	if ((status = rtc_gemm_geom(d, &p->g, why, sizeof why)))
		return rtc_fail(m, status, "%s", why);
	if (!p->g.noop && (status = plan_lt(m, p)))
		return status;
	*plan = p;
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

static int aligned(const void *ptr) { return ((uintptr_t)ptr & (LT_ALIGN - 1)) == 0; }

/* One cuBLASLt call: D = epilogue(alpha op(A) op(B) + beta C), our operands. */
static int matmul(struct rtc_model *m, const struct rtc_gemm *p, const void *a, const void *b,
                  const void *c, void *d, const void *bias, void *ws)
{
	int v = aligned(a) && aligned(b) && aligned(c) && aligned(d) && (!bias || aligned(bias))
	                ? 0
	                : 1;
	const void *alpha = p->g.dt == RT_F64 ? (const void *)&p->alpha64 : &p->alpha32;
	const void *beta = p->g.dt == RT_F64 ? (const void *)&p->beta64 : &p->beta32;
	cublasStatus_t s;
	if (!p->have[v])
		v = 1;
	if (!p->have[v])
		return rtc_fail(m, RT_ERR_DEVICE,
		                "cuBLASLt has no algorithm for this GEMM's operand alignment");
	s = cublasLtMatmul(rtc_cublaslt(m), p->lt.op, alpha, b, p->lt.a, a, p->lt.b, beta, c,
	                   p->lt.c, d, p->lt.d, &p->algo[v], ws, p->algo_ws, rtc_stream(m));
	return s == CUBLAS_STATUS_SUCCESS ? RT_OK : lt_fail(m, s, "cublasLtMatmul");
}

/* C for RTC_C_BIAS: the bias converted to D's type and broadcast as needed. */
static int prepare_c(struct rtc_model *m, const struct rtc_gemm_geom *g, const void *c,
                     unsigned char *ws, const void **out)
{
	int status;
	*out = c;
	if (g->c_convert) {
		if ((status = rtc_convert(m, ws + g->ws_c1, g->dd, *out, g->dt, g->c_count)))
			return status;
		*out = ws + g->ws_c1;
	}
	if (g->c_expand) {
		if ((status = rtc_copy(m, &g->c_copy, *out, ws + g->ws_c2)))
			return status;
		*out = ws + g->ws_c2;
	}
	return RT_OK;
}

/* The operands a run needs are there. */
static int operands_ok(struct rtc_model *m, const struct rtc_gemm *p, const void *a, const void *b,
                       const void *c, const void *residual, const void *y, const void *ws)
{
	const struct rtc_gemm_geom *g = &p->g;
	int need_c = g->lt_bias || g->ep_bias || g->c_use == RTC_C_BIAS;
	int need_res = g->ep_residual || g->c_use == RTC_C_RESIDUAL;
	if (!y || (!g->zero_k && (!a || !b)) || (need_c && !c) || (need_res && !residual))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gemm: a NULL operand");
	if ((g->ws_algo || p->algo_ws) && !ws)
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "rtc_gemm: no workspace (rtc_capture_begin allocates it)");
	return RT_OK;
}

/* Zeros for the operands of a k = 0 GEMM. */
static int zero_operands(struct rtc_model *m, const struct rtc_gemm_geom *g, unsigned char *ws)
{
	size_t es = (size_t)rt_dtype_size(g->dt);
	int status = rtc_check(
	        m, cudaMemsetAsync(ws + g->ws_zero_a, 0, (size_t)g->m * es, rtc_stream(m)),
	        "cudaMemsetAsync (k = 0 operands)");
	if (status)
		return status;
	return rtc_check(m, cudaMemsetAsync(ws + g->ws_zero_b, 0, (size_t)g->n * es, rtc_stream(m)),
	                 "cudaMemsetAsync (k = 0 operands)");
}

int rtc_gemm(struct rtc_model *m, const struct rtc_gemm *p, const void *a, const void *b,
             const void *c, const void *residual, void *y)
{
	const struct rtc_gemm_geom *g;
	unsigned char *ws;
	const unsigned char *ap = a, *bp = b;
	const void *cm = NULL;
	unsigned char *d;
	size_t es, ed;
	int status;
	if (!m || !p)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gemm: NULL plan") : RT_ERR_ARGUMENT;
	g = &p->g;
	if (g->noop)
		return RT_OK;
	ws = rtc_workspace(m);
	if ((status = operands_ok(m, p, a, b, c, residual, y, ws)))
		return status;
	es = (size_t)rt_dtype_size(g->dt);
	ed = (size_t)rt_dtype_size(g->dd);
	if (g->zero_k) {
		if ((status = zero_operands(m, g, ws)))
			return status;
		ap = ws + g->ws_zero_a;
		bp = ws + g->ws_zero_b;
	}
	if (g->c_use == RTC_C_BIAS && (status = prepare_c(m, g, c, ws, &cm)))
		return status;
	if (g->lt_bias) {
		cublasStatus_t s = cublasLtMatmulDescSetAttribute(
		        p->lt.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c, sizeof c);
		if (s != CUBLAS_STATUS_SUCCESS)
			return lt_fail(m, s, "cublasLtMatmulDescSetAttribute (bias)");
	}
	d = g->staged ? ws + g->ws_d : y;
	for (int64_t o = 0; o < g->outer; o++) {
		int64_t oa, ob, oy;
		unsigned char *dp;
		const void *cp;
		rtc_gemm_offsets(g, o, &oa, &ob, &oy);
		dp = d + (size_t)oy * ed;
		cp = g->c_use == RTC_C_RESIDUAL ? (const unsigned char *)residual + (size_t)oy * ed
		     : g->c_use == RTC_C_BIAS   ? cm
		                                : dp;
		if ((status = matmul(m, p, ap + oa * (int64_t)es, bp + ob * (int64_t)es, cp, dp,
		                     g->lt_bias ? c : NULL, ws ? ws + g->ws_algo : NULL)))
			return status;
	}
	if (g->ep_run && (status = rtc_epilogue(m, &g->ep, g->dd, d, g->ep_bias ? c : NULL, g->dt,
	                                        g->ep_residual ? residual : NULL, g->dt,
	                                        g->ep_outer, g->ep_channels, g->ep_inner)))
		return status;
	if (g->staged)
		return rtc_convert(m, y, g->yt, d, g->dd, g->nbatch * g->m * g->n);
	return RT_OK;
}
