/*
 * cost.h - the cost model behind precision assignment (docs/precision.md).
 *
 * Following Campo (He et al., ATC'22), three quantities decide whether a
 * node runs in half precision:
 *   - T32(n): the node's time in FP32;
 *   - T16(n): its time in FP16/BF16: per op type a linear model
 *       T16 = c0 + c1 * F / P16 + c2 * B16 / BW + sigma * T32,
 *     with F the node's FLOPs, B16 the bytes it moves in half precision,
 *     P16 the half-precision peak (Tensor Core peak when the op can use
 *     them at its shapes), BW the memory bandwidth; a separate model for
 *     Tensor Core execution;
 *   - a cast: C + r * elements.
 * A GPU profile holds the device's figures and the coefficients. Built-in
 * profiles are analytical (from published specs): with no fitted model the
 * times come from a roofline, launch + max(F / peak, B / BW). A profile file
 * (docs/precision.md) may carry coefficients fitted by least squares from
 * measurements (cost_fit), which then replace the roofline for that op.
 */
#ifndef ONNXC_COST_H
#define ONNXC_COST_H

#include "ir/ir.h"

/* T16 = c0 + c1 * F / P16 + c2 * B16 / BW + sigma * T32 (microseconds). */
struct cost_linear {
	double c0, c1, c2, sigma;
	bool fitted;
};

struct gpu_profile {
	char name[48];
	const char *source;          /* where the figures come from */
	double fp32_tflops;          /* CUDA cores */
	double fp16_tflops;          /* CUDA cores, half2 */
	double tc_fp16_tflops;       /* dense Tensor Core FP16 with FP32 accumulate */
	double tc_bf16_tflops;       /* 0: no BF16 Tensor Cores */
	double mem_gbs;              /* DRAM bandwidth */
	double launch_us;            /* per kernel */
	double cast_c_us, cast_r_ns; /* cast = cast_c_us + cast_r_ns * elements / 1000 */
	struct cost_linear ops[IR_OP_COUNT];
	struct cost_linear tensor_core;
};

/* The built-in profiles: v100 t4 rtx2080ti a100 rtx4090 h100 h200. */
const struct gpu_profile *cost_builtin(const char *name);
const char *cost_builtin_names(void); /* "v100, t4, ..." for messages */

/* A profile by built-in name or from a file (docs/precision.md). false after
 * reporting through ctx. */
bool cost_load_profile(struct ir_ctx *ctx, const char *name_or_path, struct gpu_profile *out);

/* Work of a node as it is typed now. */
struct cost_work {
	double flops;
	double bytes32;   /* every float tensor in FP32 */
	double bytes16;   /* every float tensor in half precision */
	bool tensor_core; /* a GEMM/conv whose shapes suit Tensor Cores in half */
	bool matmul_like;
};
void cost_work(const struct ir_node *n, struct cost_work *w);

/* Microseconds. half: FP16 (false) or BF16 (true) for the half time. */
double cost_time32(const struct gpu_profile *p, const struct ir_node *n);
double cost_time16(const struct gpu_profile *p, const struct ir_node *n, bool bf16);
double cost_cast(const struct gpu_profile *p, int64_t elements);

/*
 * Tensor Core padding of a GEMM (MatMul or Gemm with a constant B) or a
 * convolution (group 1, constant weights): the sizes that decide Tensor
 * Core use, rounded up to multiples of 8. GEMM: m rows, n columns, k depth;
 * convolution: k input and n output channels (m is not padded). Returns
 * false when n is not eligible or nothing misses the rule.
 */
struct cost_pad {
	int64_t m, n, k;
	int64_t m8, n8, k8;
	double t16;    /* predicted half time padded, pads and slices included */
	double pad_us; /* of which the activation pads and the output slice */
};
bool cost_pad_plan(const struct gpu_profile *p, const struct ir_node *n, bool bf16,
                   struct cost_pad *pp);

/*
 * Least squares: finds w[0..k) minimizing sum_i (x_i . w - y_i)^2 over n
 * samples (x row-major n x k). Returns false if the system is singular.
 * *rel_err gets the mean relative error of the fit (may be NULL).
 */
bool cost_fit(const double *x, const double *y, int n, int k, double *w, double *rel_err);

#endif
