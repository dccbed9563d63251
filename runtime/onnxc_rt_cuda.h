/*
 * onnxc_rt_cuda.h - the CUDA flavour of the runtime: what NAME.c calls for
 * `onnxc compile --target cuda` (docs/runtime.md).
 *
 * The kernel plan is the CPU target's: the same steps, the same
 * descriptors (struct rt_*_desc from onnxc_rt.h, filled at compile time),
 * the same arena offsets. What changes underneath:
 *   - every tensor lives in device memory: one device arena for the planned
 *     intermediates, the weights uploaded once, one device buffer per graph
 *     input and output (the caller's host buffers are copied through pinned
 *     staging buffers);
 *   - GEMMs go to cuBLASLt and convolutions to cuDNN through plans made at
 *     create time (algorithm choice, workspace), the other library steps to
 *     CUDA kernels in runtime/cuda/ that accumulate in FP32, the generated
 *     elementwise kernels to PTX from the same LLVM IR as the CPU's, loaded
 *     once at create time;
 *   - NAME_create runs the steps once under stream capture and keeps the
 *     CUDA Graph; NAME_run copies the inputs in, replays the graph on the
 *     instance's stream and copies the outputs out.
 *
 * Half precision: a descriptor's dtype is the type of the tensors a step
 * reads (RT_F32, RT_F16, RT_BF16); ydtype (0: the same) is the type of the
 * result it writes, so a half GEMM can write FP32 (a cast fused into it).
 * Weights, biases and residuals have the step's dtype.
 *
 * Errors: every CUDA, cuBLAS and cuDNN status becomes RT_ERR_NO_DEVICE (no
 * device or driver: cudaErrorNoDevice, cudaErrorInsufficientDriver,
 * CUBLAS_STATUS_NOT_INITIALIZED, CUDNN_STATUS_NOT_INITIALIZED at open) or
 * RT_ERR_DEVICE, with a message naming the call and the library's own
 * error string, kept in the instance (rtc_last_error) and printed to
 * standard error when ONNXC_VERBOSE=1.
 *
 * Everything hangs off the instance: two instances, of one model or two,
 * run side by side (on one device, each on its own stream).
 */
#ifndef ONNXC_RT_CUDA_H
#define ONNXC_RT_CUDA_H

#include "onnxc_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rtc_model;

/* What NAME_create passes to rtc_model_open. */
struct rtc_model_info {
	size_t arena_bytes;           /* the planned device arena */
	const char *weights_path;     /* the weights file (NULL: use embedded) */
	const void *embedded_weights; /* or linked into the library */
	uint64_t model_id;            /* checked against the weights header */
	size_t weights_bytes;
	const char *ptx; /* the generated kernels: NUL-terminated PTX */
	int ninputs, noutputs;
	const size_t *input_bytes, *output_bytes;
	int nsteps; /* for ONNXC_PROFILE=1 (per-step times) */
	const char *const *step_names;
	/* nonzero: never capture a CUDA Graph, every run is direct (a model
	 * with run-time Ifs, whose steps read their guards back: rtc_guard) */
	int direct;
};

/*
 * Opens an instance on the current CUDA device: device arena, weights
 * (read, checked as on the CPU, uploaded), PTX module, stream, cuBLASLt and
 * cuDNN handles, pinned staging buffers. RT_ERR_NO_DEVICE when there is no
 * usable device or driver. On failure *m is NULL and nothing leaks.
 */
int rtc_model_open(struct rtc_model **m, const struct rtc_model_info *info);
/* Frees everything (plans included); NULL is fine. */
void rtc_model_close(struct rtc_model *m);

/* Device pointers for the generated code: the arena, the weights, graph
 * input i and output i. */
unsigned char *rtc_arena(struct rtc_model *m);
const unsigned char *rtc_weights(struct rtc_model *m);
void *rtc_input(struct rtc_model *m, int i);
void *rtc_output(struct rtc_model *m, int i);

/* The last error's message ("" if none). */
const char *rtc_last_error(const struct rtc_model *m);

/*
 * Capture: NAME_create makes every plan, then calls rtc_capture_begin
 * (which allocates the workspace the plans asked for and, unless the run
 * is direct, begins capturing the stream), then its steps function (which
 * launches everything on the instance's stream), then rtc_capture_end
 * (which ends the capture and instantiates the CUDA Graph; nothing to do
 * when direct). With ONNXC_CUDA_GRAPH=0 (or ONNXC_PROFILE=1, which times
 * each step) runs are direct: NAME_run calls its steps function itself and
 * NAME_create does not call it at all.
 */
int rtc_capture_begin(struct rtc_model *m);
int rtc_capture_end(struct rtc_model *m);
/* Whether NAME_run must call its steps function itself (no graph). */
int rtc_direct(const struct rtc_model *m);
/* The bool at device address p (a run-time If's guard), read back to the
 * host once the steps before it on the stream are done: *value 0 or 1. */
int rtc_guard(struct rtc_model *m, const void *p, int *value);
/* rt_trap's: the host decided the branch (rtc_guard), so no device work */
int rtc_trap(struct rtc_model *m, const struct rt_trap_desc *d, void *y);

/*
 * A run: rtc_run_begin copies the inputs (host) into the device input
 * buffers; rtc_run_graph replays the graph (when there is one);
 * rtc_run_end waits for the stream and copies the outputs to the host.
 */
int rtc_run_begin(struct rtc_model *m, const void *const inputs[]);
int rtc_run_graph(struct rtc_model *m);
int rtc_run_end(struct rtc_model *m, void *const outputs[]);
/* NAME_set_output_hook: rtc_run_end calls fn (NULL: none) on the device
 * outputs and the stream, after the run's work and before the copy back. */
int rtc_set_output_hook(struct rtc_model *m, rt_output_hook_fn fn, void *ctx);

/* ONNXC_PROFILE=1: step s starts / ends (events on the stream). */
void rtc_step_begin(struct rtc_model *m, int s);
void rtc_step_end(struct rtc_model *m, int s);

/* ------------------------------------------------------------------------ */
/* Generated kernels                                                        */
/* ------------------------------------------------------------------------ */

/*
 * A generated elementwise kernel, by its PTX entry name. Its parameters are
 * the step's tensor pointers in order, then the element count (i64); each
 * thread handles elements i = blockIdx.x * blockDim.x + threadIdx.x, then
 * i += gridDim.x * blockDim.x while i < n (a grid-stride loop, so any grid
 * covers any n).
 */
struct rtc_fn;
int rtc_kernel(struct rtc_model *m, const char *name, struct rtc_fn **fn);
/* Launches fn over n elements with nargs pointer arguments. */
int rtc_launch(struct rtc_model *m, const struct rtc_fn *fn, void *const *args, int nargs,
               int64_t n);

/* The launch configuration rtc_launch uses: 256 threads per block, enough
 * blocks to fill the device (a few waves of its multiprocessors) but never
 * more than the work needs. Pure arithmetic: unit-tested without a device. */
void rtc_grid(int64_t n, int sm_count, int *blocks, int *threads);

/* ------------------------------------------------------------------------ */
/* Library steps                                                            */
/* ------------------------------------------------------------------------ */

/* GEMM on cuBLASLt: FP32, FP16 and BF16 inputs with FP32 accumulation (TF32
 * off), bias and activation epilogues where cuBLASLt has them (the rest in
 * a small kernel after), strided batches, broadcast batch dims. */
struct rtc_gemm;
int rtc_gemm_plan(struct rtc_model *m, const struct rt_gemm_desc *d, struct rtc_gemm **plan);
int rtc_gemm(struct rtc_model *m, const struct rtc_gemm *plan, const void *a, const void *b,
             const void *c, const void *residual, void *y);

/* Convolution on cuDNN (NCHW; the algorithm chosen at plan time within the
 * workspace limit ONNXC_CUDA_WORKSPACE_MB, default 256), then bias,
 * residual and activation. */
struct rtc_conv;
int rtc_conv_plan(struct rtc_model *m, const struct rt_conv_desc *d, struct rtc_conv **plan);
int rtc_conv(struct rtc_model *m, const struct rtc_conv *plan, const void *x, const void *w,
             const void *bias, const void *residual, void *y);
int rtc_conv_transpose_plan(struct rtc_model *m, const struct rt_conv_desc *d,
                            struct rtc_conv **plan);
int rtc_conv_transpose(struct rtc_model *m, const struct rtc_conv *plan, const void *x,
                       const void *w, const void *bias, void *y);

/* CUDA kernels (runtime/cuda/), the CPU functions' semantics; floats
 * accumulate in FP32 (FP64 for FP64). */
int rtc_pool(struct rtc_model *m, const struct rt_pool_desc *d, const void *x, void *y,
             int64_t *indices);
int rtc_softmax(struct rtc_model *m, const struct rt_softmax_desc *d, const void *x, void *y);
int rtc_layernorm(struct rtc_model *m, const struct rt_layernorm_desc *d, const void *x,
                  const void *scale, const void *bias, void *y, float *mean, float *inv_std);
int rtc_instnorm(struct rtc_model *m, const struct rt_instnorm_desc *d, const void *x,
                 const void *scale, const void *bias, void *y);
int rtc_lrn(struct rtc_model *m, const struct rt_lrn_desc *d, const void *x, void *y);
int rtc_reduce(struct rtc_model *m, const struct rt_reduce_desc *d, const void *x, void *y);
int rtc_arg(struct rtc_model *m, const struct rt_arg_desc *d, const void *x, int64_t *y);
int rtc_cumsum(struct rtc_model *m, const struct rt_cumsum_desc *d, const void *x, void *y);
int rtc_topk(struct rtc_model *m, const struct rt_topk_desc *d, const void *x, void *values,
             int64_t *indices);
/* the largest key head size (dk) rtc_linear_attention takes */
#define RTC_LINATTN_MAX_DK 1024
int rtc_linear_attention(struct rtc_model *m, const struct rt_linattn_desc *d, const void *q,
                         const void *k, const void *v, const void *past, const void *decay,
                         const void *beta, const void *erase, void *y, void *state);
/*
 * LSTM, GRU and RNN (rt_rnn's semantics) through a plan made at create
 * time: the input projection of every step as one cuBLASLt GEMM, then per
 * step one GEMM H R^T (two for a GRU without linear_before_reset) and a
 * kernel for the gates, the state and y (runtime/cuda/rtc_rnn.cu). FP32
 * state and arithmetic; the tensors in FP32, FP16 or BF16 (y, yh, yc in
 * ydtype). ws: the step's workspace, rt_rnn_workspace(d) bytes. A sequence
 * length out of [0, seq] sets the index error flag (RT_ERR_INDEX).
 */
struct rtc_rnn;
int rtc_rnn_plan(struct rtc_model *m, const struct rt_rnn_desc *d, struct rtc_rnn **plan);
int rtc_rnn(struct rtc_model *m, const struct rtc_rnn *plan, const void *x, const void *w,
            const void *r, const void *b, const void *seq_lens, const void *h0, const void *c0,
            const void *p, void *y, void *yh, void *yc, void *ws);
/*
 * Scaled dot-product attention, fused (nothing lq x lk in memory), through a
 * plan made at create time: cuDNN's fused flash attention where it computes
 * exactly rt_attention's semantics (FP16/BF16 in and out, head sizes that
 * are multiples of 8 up to 256, an additive bias of the same dtype or none,
 * no softcap, causal_offset >= 0, sm_80+; runtime/cuda/rtc_sdpa.c), else
 * (or with ONNXC_CUDA_NO_CUDNN_ATTENTION=1) the portable kernels: q, k, v and
 * a bias in FP32, FP16 or BF16, any head sizes, boolean masks, softcap. The
 * plan copies the descriptor; rtc_attention_grad_plan makes the backward's
 * (rt_attention_grad's semantics): dq, dk, dv in dtype, y and dy in ydtype,
 * lse FP32. The kernel backward is deterministic; cuDNN's need not be.
 */
struct rtc_attention;
int rtc_attention_plan(struct rtc_model *m, const struct rt_attention_desc *d,
                       struct rtc_attention **plan);
int rtc_attention(struct rtc_model *m, const struct rtc_attention *plan, const void *q,
                  const void *k, const void *v, const void *mask, void *y, void *lse);
int rtc_attention_grad_plan(struct rtc_model *m, const struct rt_attention_desc *d,
                            struct rtc_attention **plan);
int rtc_attention_grad(struct rtc_model *m, const struct rtc_attention *plan, const void *q,
                       const void *k, const void *v, const void *y, const void *lse, const void *dy,
                       const void *mask, void *dq, void *dk, void *dv);
int rtc_copy(struct rtc_model *m, const struct rt_copy_desc *d, const void *x, void *y);
int rtc_gather(struct rtc_model *m, const struct rt_gather_desc *d, const void *x,
               const void *indices, void *y);
int rtc_gather_elements(struct rtc_model *m, const struct rt_gather_elements_desc *d, const void *x,
                        const void *indices, void *y);
int rtc_scatter_elements(struct rtc_model *m, const struct rt_scatter_elements_desc *d,
                         const void *x, const void *indices, const void *updates, void *y);
int rtc_pad(struct rtc_model *m, const struct rt_pad_desc *d, const void *x, void *y);
int rtc_tile(struct rtc_model *m, const struct rt_tile_desc *d, const void *x, void *y);
int rtc_trilu(struct rtc_model *m, const struct rt_trilu_desc *d, const void *x, void *y);
int rtc_resize(struct rtc_model *m, const struct rt_resize_desc *d, const void *x, void *y);
int rtc_convert(struct rtc_model *m, void *dst, int dst_dtype, const void *src, int src_dtype,
                int64_t n);

#ifdef __cplusplus
}
#endif

#endif
