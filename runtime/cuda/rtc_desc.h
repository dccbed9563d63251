/*
 * rtc_desc.h - how a GEMM or convolution descriptor (onnxc_rt.h) maps
 * onto cuBLASLt and cuDNN, as plain data and library descriptors, with no
 * handle and no device: rtc_blas.c and rtc_dnn.c plan with them, and
 * tests/unit/test_rtc.c checks them on machines without a GPU.
 */
#ifndef ONNXC_RTC_DESC_H
#define ONNXC_RTC_DESC_H

#include "rtc_internal.h"

#include <cublasLt.h>
#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where cuBLASLt's C matrix comes from. */
enum rtc_c_use {
	RTC_C_NONE,     /* beta 0: C is D, not read */
	RTC_C_BIAS,     /* beta * the bias, broadcast to [m, n] in the workspace if not FULL */
	RTC_C_RESIDUAL, /* the residual, beta 1 */
};

/*
 * A GEMM as cuBLASLt calls. Row-major Y = op(A) op(B) is column-major
 * Y^T = op(B)^T op(A)^T, so cuBLASLt's A is our B and its B our A, and its
 * D has n rows and m columns (ld n). The batch positions form an inner
 * block of uniformly strided positions run as one strided-batched call
 * (count inner, element strides sa, sb; D dense) and outer positions
 * looped over (dims outer_dims with strides outer_a, outer_b), or, when B
 * is shared and the A matrices are back to back, are folded into the rows
 * (rows = m * nbatch). What cuBLASLt cannot do (column or scalar bias,
 * other activations, operands of other dtypes) goes to rtc_epilogue on D,
 * and a result type cuBLASLt cannot write (or a half result that needs
 * rtc_epilogue: it rounds once, as the CPU does) is staged in FP32 and
 * converted.
 */
struct rtc_gemm_geom {
	int noop;        /* an empty batch or result: nothing to do */
	int dt, yt, dd;  /* input, result and cuBLASLt output (D and C) dtypes */
	int staged;      /* D in the workspace, then rtc_convert to y */
	int zero_k;      /* k = 0: run k = 1 on zeros (the workspace) */
	int64_t m, n, k; /* k is 1 when zero_k */
	int trans_a, trans_b;
	int64_t nbatch;       /* batch positions */
	int64_t inner, outer; /* positions per call, calls */
	int64_t sa, sb;       /* A and B element strides within a call's batch */
	int fold;             /* the batch is folded into the rows */
	int64_t rows;         /* rows of Y per matrix: m, or m * nbatch when folded */
	int outer_rank;
	int64_t outer_dims[6], outer_a[6], outer_b[6];
	/* cuBLASLt's epilogue and C */
	int lt_bias, lt_relu;       /* BIAS (RT_BIAS_ROW, beta 1) / RELU epilogues */
	int c_use;                  /* enum rtc_c_use */
	int c_convert;              /* the bias is converted to dd (into ws_c1) */
	int c_expand;               /* the bias is broadcast to [m, n] (into ws_c2) */
	int64_t c_count;            /* the bias's elements */
	struct rt_copy_desc c_copy; /* the broadcast */
	double alpha, beta;         /* cuBLASLt's alpha and beta */
	/* rtc_epilogue on D: y = act(y + bias + residual) over [outer, channels, inner] */
	int ep_run, ep_bias, ep_residual;
	struct rt_epilogue ep;
	int64_t ep_outer, ep_channels, ep_inner;
	/* workspace byte offsets; ws_algo: where the algorithm's scratch starts */
	size_t ws_zero_a, ws_zero_b, ws_c1, ws_c2, ws_d, ws_algo;
};

/* The geometry of d; RT_ERR_ARGUMENT with the reason in why[n] for what
 * the CUDA target does not run (see rtc_blas.c). */
int rtc_gemm_geom(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g, char *why, size_t n);

/* Call o of the outer loop (o < g->outer): element offsets of its A, B
 * and of its D (and residual) from the operands' starts. */
void rtc_gemm_offsets(const struct rtc_gemm_geom *g, int64_t o, int64_t *oa, int64_t *ob,
                      int64_t *oy);

/* cuBLASLt descriptors: the operation, and the layouts of its A (our B),
 * B (our A), C and D. */
struct rtc_gemm_lt {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c, d;
};
/* pedantic: FP32 (FP64) with CUBLAS_COMPUTE_32F_PEDANTIC (64F_PEDANTIC),
 * which rules out TF32 and any emulation; half inputs always use
 * CUBLAS_COMPUTE_32F. On failure nothing is held. */
cublasStatus_t rtc_gemm_lt_build(const struct rtc_gemm_geom *g, int pedantic,
                                 struct rtc_gemm_lt *lt);
void rtc_gemm_lt_destroy(struct rtc_gemm_lt *lt);

/*
 * A convolution as cuDNN sees it: 4-D tensors (a 1-D convolution has a
 * leading spatial dim of 1) or 5-D. cuDNN pads symmetrically only: the
 * common part of the pads goes to cuDNN; forward, the rest is padded into
 * the workspace with rtc_pad (pad_x); transposed, the result is computed
 * over the whole "full" extent and rtc_pad crops it, or extends it with
 * zeros for output_padding (crop_y). staged: the result is written in dt
 * to the workspace and converted to yt.
 */
struct rtc_conv_geom {
	int transposed, noop;
	int dt, yt;
	int nd;                           /* spatial dims cuDNN sees: 2 or 3 */
	int xdims[5], wdims[5], ydims[5]; /* cuDNN's x, w, y (transposed: dy, w, dx) */
	int pad[3], stride[3], dil[3];
	int group;
	int prepad, crop, staged;
	struct rt_pad_desc pad_x, crop_y;
	struct rt_epilogue ep; /* the descriptor's */
	int64_t n, m, out_sp;  /* y is [n, m, out_sp] */
	size_t ws_x, ws_full, ws_stage, ws_algo;
};
int rtc_conv_geom(const struct rt_conv_desc *d, int transposed, struct rtc_conv_geom *g, char *why,
                  size_t n);

struct rtc_conv_dnn {
	cudnnTensorDescriptor_t x, y, bias;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnActivationDescriptor_t act; /* for the fused FP32 path, else NULL */
};
/*
 * cuDNN's descriptors for g, and the check that cuDNN's output dimensions
 * are the descriptor's (forward: y from x; transposed: dy, our x, from
 * the full dx). RT_ERR_ARGUMENT for a mismatch, RT_ERR_DEVICE for a cuDNN
 * failure, with why[n]; on failure nothing is held.
 */
int rtc_conv_dnn_build(const struct rtc_conv_geom *g, struct rtc_conv_dnn *dnn, char *why,
                       size_t n);
void rtc_conv_dnn_destroy(struct rtc_conv_dnn *dnn);

/* "f32", "f16", ... for messages. */
const char *rtc_dtype_name(int dtype);
/* RT_F32 -> CUDA_R_32F, ...; -1 for dtypes the libraries do not take. */
int rtc_cuda_type(int dtype);

#ifdef __cplusplus
}
#endif

#endif
