/*
 * onnxc_rt.h - the onnxc runtime: what compiled models call.
 *
 * A compiled model is straight-line C (NAME.c, written by `onnxc compile`)
 * that calls the kernels declared here on buffers in one statically planned
 * arena, plus fused elementwise kernels generated through LLVM. Everything a
 * kernel needs to know is in a descriptor struct the compiler fills at compile
 * time and emits as a static const initializer, so the runtime makes no
 * decisions at run time and allocates nothing while running.
 *
 * No global state: all state hangs off a struct rt_ctx, one per model
 * instance (its threads). Kernels return 0 or an RT_ERR_* status; they
 * never abort on bad data. docs/runtime.md is the contract between the
 * generated code and the runtime: descriptors, memory, threads, errors.
 *
 * Dtype codes are ONNX TensorProto codes (RT_F32 = 1, ...), a stable public
 * numbering. Shapes are int64. Tensors are dense row-major unless a
 * descriptor gives strides. The workspace-size functions are shared with the
 * compiler, which plans workspaces into the arena.
 *
 * runtime/ owns what compiled models link (this CPU runtime, the training
 * runtime, runtime/cuda/): it includes only its own headers, libc, BLAS and
 * (runtime/cuda/) CUDA's; it knows nothing of the compiler.
 */
#ifndef ONNXC_RT_H
#define ONNXC_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes (docs/api.md#status-codes). Stable: never renumbered.       */
/* ------------------------------------------------------------------------ */

enum rt_status {
	RT_OK = 0,
	RT_ERR_ARGUMENT = 1,       /* NULL model, input or output pointer */
	RT_ERR_NO_MEMORY = 2,      /* the arena or the instance could not be allocated */
	RT_ERR_WEIGHTS_OPEN = 3,   /* the weights file cannot be opened or read */
	RT_ERR_WEIGHTS_FORMAT = 4, /* not a weights file, or truncated */
	RT_ERR_WEIGHTS_MODEL = 5,  /* a weights file of another model */
	RT_ERR_INPUT_SIZE = 6,     /* an input or output buffer of the wrong size */
	RT_ERR_INDEX = 7,          /* an index input (Gather, ...) out of range */
	RT_ERR_NO_DEVICE = 8,      /* no CUDA device or driver */
	RT_ERR_DEVICE = 9,         /* a CUDA, cuBLAS or cuDNN call failed */
	RT_ERR_THREADS = 10,       /* worker threads could not be started */
	RT_ERR_BRANCH = 11,        /* a run-time If took a branch the compiled shapes cannot run */
	RT_STATUS_COUNT
};

/* A message for a status code (static storage). */
const char *rt_status_message(int status);

/* ------------------------------------------------------------------------ */
/* Dtypes                                                                   */
/* ------------------------------------------------------------------------ */

enum rt_dtype {
	RT_F32 = 1,
	RT_U8 = 2,
	RT_I8 = 3,
	RT_U16 = 4,
	RT_I16 = 5,
	RT_I32 = 6,
	RT_I64 = 7,
	RT_BOOL = 9,
	RT_F16 = 10,
	RT_F64 = 11,
	RT_U32 = 12,
	RT_U64 = 13,
	RT_BF16 = 16,
};
int rt_dtype_size(int dtype);

/*
 * Converts n elements between float types (RT_F32, RT_F16, RT_BF16; one of
 * the two is RT_F32), rounding to nearest even, NaN kept NaN, overflow to
 * infinity: the conversion a half-precision store does. The CPU target uses
 * it around library kernels, which compute in FP32, when they read or write
 * half tensors. RT_ERR_ARGUMENT for any other pair.
 */
struct rt_ctx;
int rt_convert(struct rt_ctx *ctx, void *dst, int dst_dtype, const void *src, int src_dtype,
               int64_t n);

/* ------------------------------------------------------------------------ */
/* Context: threads and per-instance state                                  */
/* ------------------------------------------------------------------------ */

struct rt_ctx;

/* nthreads <= 0: one per online CPU. */
int rt_ctx_create(struct rt_ctx **ctx, int nthreads);
void rt_ctx_destroy(struct rt_ctx *ctx);
int rt_ctx_threads(const struct rt_ctx *ctx);

/*
 * Runs fn(arg, begin, end) over [0, n) split into chunks of at least grain
 * iterations across the context's threads (the caller's thread takes part).
 * Returns when every chunk is done. fn must not call rt_parallel itself.
 */
typedef void (*rt_range_fn)(void *arg, int64_t begin, int64_t end);
void rt_parallel(struct rt_ctx *ctx, int64_t n, int64_t grain, rt_range_fn fn, void *arg);

/* A generated elementwise kernel: iterates outer indices [begin, end). */
typedef void (*rt_kernel_fn)(void *const *args, int64_t begin, int64_t end);
/* Runs a generated kernel over outer iterations [0, outer); inner is the
 * work per outer iteration, used to pick the chunk size. */
void rt_launch(struct rt_ctx *ctx, rt_kernel_fn fn, void *const *args, int64_t outer,
               int64_t inner);

/*
 * Descriptors (struct rt_*_desc below) are filled by the compiler and
 * shared by the CPU and CUDA targets (onnxc_rt_cuda.h). dtype is the type
 * of the tensors a step reads; ydtype, where present, the type of the
 * result it writes (0: dtype). The CPU kernels compute on one dtype: the
 * CPU target converts half tensors around them (rt_convert) and always
 * leaves ydtype 0; the CUDA libraries read and write half directly.
 */

/* ------------------------------------------------------------------------ */
/* Epilogues: what GEMM and convolution apply to their results in place     */
/* ------------------------------------------------------------------------ */

enum rt_act {
	RT_ACT_NONE,
	RT_ACT_RELU,
	RT_ACT_LEAKY_RELU,
	RT_ACT_CLIP,
	RT_ACT_SIGMOID,
	RT_ACT_TANH,
	RT_ACT_HARD_SIGMOID,
	RT_ACT_HARD_SWISH,
};

/* y = act(y + residual), residual a tensor of y's shape (or NULL);
 * alpha/beta: LeakyRelu alpha; Clip min/max; HardSigmoid alpha/beta. */
struct rt_epilogue {
	int act;
	float alpha, beta;
	int has_residual;
};

/* ------------------------------------------------------------------------ */
/* GEMM                                                                     */
/* ------------------------------------------------------------------------ */

/* Where the addend C of a GEMM comes from (ONNX Gemm broadcasting). */
enum rt_bias { RT_BIAS_NONE, RT_BIAS_SCALAR, RT_BIAS_ROW, RT_BIAS_COL, RT_BIAS_FULL };

/*
 * Y[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + beta * C)
 * over batch positions b of a broadcast batch shape batch_dims[batch_rank];
 * a_strides / b_strides give each operand's element stride per batch dim
 * (0 where broadcast). op() transposes when trans_a / trans_b. Y is dense
 * [batch..., m, n]. C broadcasts over the batch: RT_BIAS_ROW is [n],
 * RT_BIAS_COL is [m] (per row), RT_BIAS_FULL is [m, n]. Supported dtypes:
 * f32, f64, i32, i64 (integer products wrap like ONNX's).
 */
struct rt_gemm_desc {
	int dtype;
	int64_t m, n, k;
	int trans_a, trans_b;
	int batch_rank;
	int64_t batch_dims[6], a_strides[6], b_strides[6];
	float alpha, beta;
	int bias;
	struct rt_epilogue ep;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_gemm(struct rt_ctx *ctx, const struct rt_gemm_desc *d, const void *a, const void *b,
            const void *c, const void *residual, void *y);

/* ------------------------------------------------------------------------ */
/* Convolution                                                              */
/* ------------------------------------------------------------------------ */

/*
 * N-D convolution (nsp = 1, 2 or 3 spatial dims), NCHW layout:
 * x [n, c, in...], w [m, c/group, k...], bias [m] or NULL, y [n, m, out...].
 * pad_begin/pad_end are the explicit pads. f32 only (half precision through
 * FP32 copies: see ydtype above). ws is workspace of rt_conv_workspace(d)
 * bytes, planned into the arena by the compiler: the im2col buffer of the
 * OpenBLAS fallback (onnxc's own kernels pack straight from the image).
 */
struct rt_conv_desc {
	int dtype;
	int nsp;
	int64_t n, c, m, group;
	int64_t in[3], k[3], out[3];
	int64_t stride[3], dil[3], pad_begin[3], pad_end[3];
	struct rt_epilogue ep;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
size_t rt_conv_workspace(const struct rt_conv_desc *d);
int rt_conv(struct rt_ctx *ctx, const struct rt_conv_desc *d, const void *x, const void *w,
            const void *bias, const void *residual, void *y, void *ws);

/*
 * Transposed convolution: x [n, c, in...], w [c, m/group, k...], bias [m]
 * or NULL, y [n, m, out...] with out = stride*(in-1) + dil*(k-1) + 1
 * - pad_begin - pad_end + output_padding (the descriptor holds out).
 */
size_t rt_conv_transpose_workspace(const struct rt_conv_desc *d);
int rt_conv_transpose(struct rt_ctx *ctx, const struct rt_conv_desc *d, const void *x,
                      const void *w, const void *bias, void *y, void *ws);

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */
/* ------------------------------------------------------------------------ */

enum rt_pool_kind { RT_POOL_MAX, RT_POOL_AVG, RT_POOL_LP };

/*
 * N-D pooling over x [n, c, in...] into y [n, c, out...]. Windows that fall
 * partly in padding: max ignores the padding; avg divides by the window's
 * in-bounds size unless count_include_pad (then by the size clipped to the
 * padded extent, as ONNX defines). indices (max only, may be NULL) receive
 * int64 flat offsets into x, row-major unless storage_order (column-major
 * over the spatial dims within a channel, ONNX's storage_order=1). Dtypes:
 * f32 and f64 for all kinds; max also i8, u8, i32, i64.
 */
struct rt_pool_desc {
	int dtype;
	int kind;
	int nsp;
	int64_t n, c;
	int64_t in[3], k[3], out[3];
	int64_t stride[3], dil[3], pad_begin[3], pad_end[3];
	int count_include_pad;
	int p;
	int storage_order;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_pool(struct rt_ctx *ctx, const struct rt_pool_desc *d, const void *x, void *y,
            int64_t *indices);

/* ------------------------------------------------------------------------ */
/* Softmax, normalization                                                   */
/* ------------------------------------------------------------------------ */

enum rt_softmax_kind { RT_SOFTMAX, RT_LOG_SOFTMAX, RT_HARDMAX };

/* Over the middle axis of x viewed as [outer, axis, inner]. f32, f64. */
struct rt_softmax_desc {
	int dtype;
	int kind;
	int64_t outer, axis, inner;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_softmax(struct rt_ctx *ctx, const struct rt_softmax_desc *d, const void *x, void *y);

/*
 * LayerNormalization over x viewed as [rows, cols]: y = (x - mean) /
 * sqrt(var + eps) * scale + bias with scale, bias [cols] (bias may be NULL).
 * mean and inv_std ([rows], f32, may be NULL) receive the statistics.
 * Statistics are computed in f32 (f64 for f64 input). f32, f64.
 */
struct rt_layernorm_desc {
	int dtype;
	int64_t rows, cols;
	float eps;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_layernorm(struct rt_ctx *ctx, const struct rt_layernorm_desc *d, const void *x,
                 const void *scale, const void *bias, void *y, float *mean, float *inv_std);

/* InstanceNormalization: x [n, c, spatial] with scale, bias [c]. f32, f64. */
struct rt_instnorm_desc {
	int dtype;
	int64_t n, c, spatial;
	float eps;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_instnorm(struct rt_ctx *ctx, const struct rt_instnorm_desc *d, const void *x,
                const void *scale, const void *bias, void *y);

/* LRN across channels of x [n, c, spatial]. f32, f64. */
struct rt_lrn_desc {
	int dtype;
	int64_t n, c, spatial, size;
	float alpha, beta, bias;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_lrn(struct rt_ctx *ctx, const struct rt_lrn_desc *d, const void *x, void *y);

/*
 * Linear attention (ONNX LinearAttention-27): per batch and kv head a state
 * S [dk, dv] (past [batch, kv_heads, dk, dv], zeros when NULL), updated
 * step by step over seq: S *= exp(decay) (gated), the value replaced by
 * beta * (value - S^T (erase * key)) (delta), S += key (x) value; then
 * y = scale * q^T S for each of the q_heads / kv_heads query heads that
 * share the kv head. query [batch, seq, q_heads * dk], key
 * [batch, seq, kv_heads * dk], value [batch, seq, kv_heads * dv]; decay,
 * beta, erase [batch, seq, *_width] (decay: kv_heads or kv_heads * dk;
 * beta: kv_heads or 1; erase: kv_heads * dk or kv_heads; 0: absent). y
 * [batch, seq, q_heads * dv]; state, the final S, may be past itself. f32
 * (the CPU stages half tensors; the CUDA runtime reads and writes f32, f16
 * and bf16, and computes in f32).
 */
struct rt_linattn_desc {
	int dtype;
	int gated, delta;
	int64_t batch, seq, q_heads, kv_heads, dk, dv;
	int64_t decay_width, beta_width, erase_width;
	float scale;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
	int sdtype; /* past_state's and the state's dtype, 0: dtype (CUDA target) */
};
int rt_linear_attention(struct rt_ctx *ctx, const struct rt_linattn_desc *d, const void *q,
                        const void *k, const void *v, const void *past, const void *decay,
                        const void *beta, const void *erase, void *y, void *state);

/*
 * Recurrent networks (ONNX LSTM, GRU and RNN, layout 0): cell RT_RNN_LSTM
 * (gates i o f c, peepholes p [dirs, 3 * hidden], c0 and yc), RT_RNN_GRU
 * (gates z r h; linear_before_reset) or RT_RNN_RNN (one gate). x [seq,
 * batch, input], w [dirs, gates * hidden, input], r [dirs, gates * hidden,
 * hidden], b [dirs, 2 * gates * hidden] (w's biases, then r's), seq_lens
 * int32 [batch] (each in [0, seq], RT_ERR_INDEX otherwise), h0 and c0
 * [dirs, batch, hidden]; y [seq, dirs, batch, hidden] (zeros past a
 * sequence's length), yh and yc [dirs, batch, hidden]. dirs 2 runs the
 * second direction backwards; reverse runs the only one backwards. act[d]
 * are direction d's activations (f, g, h; enum rt_rnn_act) with their alpha
 * and beta; clip 0: none. f32; ws of rt_rnn_workspace(d) bytes.
 */
enum rt_rnn_cell { RT_RNN_LSTM = 1, RT_RNN_GRU = 2, RT_RNN_RNN = 3 };
enum rt_rnn_act {
	RT_RNN_RELU,
	RT_RNN_TANH,
	RT_RNN_SIGMOID,
	RT_RNN_AFFINE,
	RT_RNN_LEAKY_RELU,
	RT_RNN_THRESHOLDED_RELU,
	RT_RNN_SCALED_TANH,
	RT_RNN_HARD_SIGMOID,
	RT_RNN_ELU,
	RT_RNN_SOFTSIGN,
	RT_RNN_SOFTPLUS,
	RT_RNN_ACT_COUNT
};
struct rt_rnn_desc {
	int dtype;
	int cell;
	int dirs, reverse;
	int64_t seq, batch, input, hidden;
	int act[2][3];
	float alpha[2][3], beta[2][3];
	float clip;
	int input_forget, linear_before_reset;
	int ydtype; /* the result's dtype, 0: dtype (the CPU stages) */
};
size_t rt_rnn_workspace(const struct rt_rnn_desc *d);
int rt_rnn(struct rt_ctx *ctx, const struct rt_rnn_desc *d, const void *x, const void *w,
           const void *r, const void *b, const void *seq_lens, const void *h0, const void *c0,
           const void *p, void *y, void *yh, void *yc, void *ws);

/*
 * Scaled dot-product attention (ONNX Attention-23's semantics, fused):
 * for batch b, query head h (reading kv head h / (q_heads / kv_heads)),
 * query row i and key j,
 *   s(i, j) = scale * q_i . k_j, then softcap * tanh(s / softcap) when
 *             softcap > 0, then + bias(b, h, i, j) (mask 1) or -inf where
 *             mask(b, h, i, j) is false (mask 2), and -inf where
 *             j > i + causal_offset (causal);
 *   y_i     = sum_j softmax_j(s(i, .)) v_j, and lse_i = log sum_j e^s(i, j).
 * A row whose every score is -inf has y_i = 0 and lse_i = -inf (ONNX's
 * errata: a fully masked row is a zero row, not NaN). q [batch, q_heads,
 * lq, dk], k [batch, kv_heads, lk, dk], v [batch, kv_heads, lk, dv], y
 * [batch, q_heads, lq, dv], all dense; the mask is read through
 * mask_strides (elements, over [batch, q_heads, lq, lk]; 0 where it
 * broadcasts): of dtype for a bias, one byte (0 or 1) per element for a
 * boolean mask. lse [batch, q_heads, lq] is f32 and may be NULL. f32 (the
 * CPU stages half tensors; the CUDA runtime also reads f16 and bf16);
 * statistics and accumulators are f32 in every case.
 */
enum rt_attention_mask { RT_ATTN_NONE, RT_ATTN_BIAS, RT_ATTN_BOOL };
struct rt_attention_desc {
	int dtype;
	int mask; /* enum rt_attention_mask */
	int causal;
	int64_t causal_offset;
	int64_t batch, q_heads, kv_heads, lq, lk, dk, dv;
	int64_t mask_strides[4];
	float scale, softcap;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
	int mdtype; /* a bias's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_attention(struct rt_ctx *ctx, const struct rt_attention_desc *d, const void *q,
                 const void *k, const void *v, const void *mask, void *y, void *lse);
/*
 * Its backward: dq, dk, dv (the shapes of q, k, v; dk and dv summed over each
 * group of query heads) from the forward's y and lse (f32, required) and
 * dy, the gradient of y. The scores and probabilities are recomputed from
 * lse, tile by tile (FlashAttention-2's two passes: dk and dv per key
 * block, then dq per query block), so nothing L x L is stored and the
 * results do not depend on the thread count. The mask is not
 * differentiated. f32 (the CPU stages half tensors).
 */
int rt_attention_grad(struct rt_ctx *ctx, const struct rt_attention_desc *d, const void *q,
                      const void *k, const void *v, const void *y, const void *lse, const void *dy,
                      const void *mask, void *dq, void *dk, void *dv);

/* ------------------------------------------------------------------------ */
/* Reductions                                                               */
/* ------------------------------------------------------------------------ */

enum rt_reduce_kind {
	RT_REDUCE_SUM,
	RT_REDUCE_MEAN,
	RT_REDUCE_MAX,
	RT_REDUCE_MIN,
	RT_REDUCE_PROD,
	RT_REDUCE_L1,
	RT_REDUCE_L2,
	RT_REDUCE_SUM_SQUARE,
	RT_REDUCE_LOG_SUM,
	RT_REDUCE_LOG_SUM_EXP,
};

/*
 * Reduces the axes set in axes_mask (bit i: dim i) of x [dims[0..rank)];
 * y is dense over the kept dims in order. Floats accumulate in f64 for
 * f64 input, f32 otherwise (with pairwise/blocked summation); integers in
 * int64. Dtypes: f32, f64, i32, i64 (and u8/i8 for max/min).
 */
struct rt_reduce_desc {
	int dtype;
	int kind;
	int rank;
	int64_t dims[8];
	unsigned axes_mask;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_reduce(struct rt_ctx *ctx, const struct rt_reduce_desc *d, const void *x, void *y);

/* ArgMax/ArgMin over the middle axis of [outer, axis, inner]; y int64. */
struct rt_arg_desc {
	int dtype;
	int is_min;
	int select_last;
	int64_t outer, axis, inner;
};
int rt_arg(struct rt_ctx *ctx, const struct rt_arg_desc *d, const void *x, int64_t *y);

/* TopK over the middle axis of [outer, axis, inner]: the k largest (or
 * smallest) of each lane, best first; ties to the lower index, a NaN above
 * every number. values [outer, k, inner] of dtype, indices int64. */
struct rt_topk_desc {
	int dtype;
	int smallest;
	int64_t outer, axis, inner, k;
};
int rt_topk(struct rt_ctx *ctx, const struct rt_topk_desc *d, const void *x, void *values,
            int64_t *indices);

/* CumSum (or CumProd) over the middle axis of [outer, axis, inner]. f32,
 * f64, i32, i64. */
struct rt_cumsum_desc {
	int dtype;
	int exclusive, reverse;
	int64_t outer, axis, inner;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
	int prod;   /* 1: the running product (CumProd), 0: the running sum */
};
int rt_cumsum(struct rt_ctx *ctx, const struct rt_cumsum_desc *d, const void *x, void *y);

/* ------------------------------------------------------------------------ */
/* Data movement (dtype-agnostic: esize is the element size in bytes)       */
/* ------------------------------------------------------------------------ */

/*
 * y[i] = x[offset + sum_d i_d * strides[d]] for i over dims[0..rank), y dense.
 * strides are in elements and may be 0 (broadcast) or negative (reversed
 * slice). Covers transpose, slice, expand and the pieces of concat/split.
 * dst_strides (NULL: dense) lets a copy write a strided view of y, such as
 * one input's region of a concat.
 */
/*
 * A branch of a run-time If that cannot run with the shapes the model was
 * compiled for (docs/ir.md, trap): the step runs only when the If takes
 * that branch, and fails the run with RT_ERR_BRANCH. bytes: its result's
 * size (the result is never written).
 */
struct rt_trap_desc {
	int64_t bytes;
};
int rt_trap(struct rt_ctx *ctx, const struct rt_trap_desc *d, void *y);

struct rt_copy_desc {
	int esize;
	int rank;
	int64_t dims[8];
	int64_t offset;
	int64_t strides[8];
	int64_t dst_offset;
	int64_t dst_strides[8];
	int dst_dense;
};
int rt_copy(struct rt_ctx *ctx, const struct rt_copy_desc *d, const void *x, void *y);

/*
 * Gather along the middle axis of data [outer, axis, inner] with indices
 * (int32 or int64, nidx of them, negative counts from the end):
 * y [outer, nidx, inner]. An index out of range returns RT_ERR_INDEX.
 */
struct rt_gather_desc {
	int esize;
	int index_dtype;
	int64_t outer, axis, inner, nidx;
};
int rt_gather(struct rt_ctx *ctx, const struct rt_gather_desc *d, const void *x,
              const void *indices, void *y);

/* GatherElements: y has the shape of indices (rank dims); index along axis. */
struct rt_gather_elements_desc {
	int esize;
	int index_dtype;
	int rank, axis;
	int64_t data_dims[8], index_dims[8];
};
int rt_gather_elements(struct rt_ctx *ctx, const struct rt_gather_elements_desc *d, const void *x,
                       const void *indices, void *y);

/*
 * ScatterElements: y = x (data_dims), then each element of updates (shaped
 * index_dims, as indices) goes to its own position in y with the axis
 * coordinate replaced by its index, stored (RT_SCATTER_NONE: the last
 * update wins) or combined with what is there, in order, in the element
 * type: floats rounded after each update (FP16/BF16 through FP32),
 * integers wrapping; max and min let NaN through. x may be y. An index out
 * of range, or indices larger than the data outside the axis, return
 * RT_ERR_INDEX.
 */
enum rt_scatter_reduction {
	RT_SCATTER_NONE,
	RT_SCATTER_ADD,
	RT_SCATTER_MUL,
	RT_SCATTER_MAX,
	RT_SCATTER_MIN
};
struct rt_scatter_elements_desc {
	int dtype; /* of x, updates and y (any dtype; reductions not on bool) */
	int index_dtype;
	int reduction;
	int rank, axis;
	int64_t data_dims[8], index_dims[8];
};
int rt_scatter_elements(struct rt_ctx *ctx, const struct rt_scatter_elements_desc *d, const void *x,
                        const void *indices, const void *updates, void *y);

enum rt_pad_mode { RT_PAD_CONSTANT, RT_PAD_REFLECT, RT_PAD_EDGE, RT_PAD_WRAP };

/* Pad x [in_dims] by pads (rank begins then rank ends; negative crops) with
 * value (bytes of one element, esize long) in constant mode. */
struct rt_pad_desc {
	int esize;
	int mode;
	int rank;
	int64_t in_dims[8], pads[16];
	unsigned char value[8];
};
int rt_pad(struct rt_ctx *ctx, const struct rt_pad_desc *d, const void *x, void *y);

/* Tile x [in_dims] by repeats. */
struct rt_tile_desc {
	int esize;
	int rank;
	int64_t in_dims[8], repeats[8];
};
int rt_tile(struct rt_ctx *ctx, const struct rt_tile_desc *d, const void *x, void *y);

/* Trilu over [batch, rows, cols]: keeps col - row <= k (lower) or >= k (upper). */
struct rt_trilu_desc {
	int esize;
	int upper;
	int64_t batch, rows, cols, k;
};
int rt_trilu(struct rt_ctx *ctx, const struct rt_trilu_desc *d, const void *x, void *y);

/* ------------------------------------------------------------------------ */
/* Resize                                                                   */
/* ------------------------------------------------------------------------ */

enum rt_resize_mode { RT_RESIZE_NEAREST, RT_RESIZE_LINEAR, RT_RESIZE_CUBIC };
enum rt_resize_coord {
	RT_COORD_HALF_PIXEL,
	RT_COORD_HALF_PIXEL_SYMMETRIC,
	RT_COORD_PYTORCH_HALF_PIXEL,
	RT_COORD_ALIGN_CORNERS,
	RT_COORD_ASYMMETRIC,
	RT_COORD_TF_CROP_AND_RESIZE,
};
enum rt_resize_nearest {
	RT_NEAREST_ROUND_PREFER_FLOOR,
	RT_NEAREST_ROUND_PREFER_CEIL,
	RT_NEAREST_FLOOR,
	RT_NEAREST_CEIL,
};

/*
 * ONNX Resize (opset 11-13 semantics) of x [in_dims] to y [out_dims], every
 * dimension independently (linear/cubic interpolate over each dim whose
 * size changes). scales are the factors the coordinate transform uses, as
 * the ONNX reference computes them: the model's scales, or out/in in double
 * when the model gave sizes. roi (2*rank values) only for tf_crop_and_resize.
 * f32 only.
 */
struct rt_resize_desc {
	int dtype;
	int mode, coord, nearest;
	int rank;
	int64_t in_dims[8], out_dims[8];
	double scales[8];
	float roi[16];
	float cubic_a;
	int exclude_outside;
	float extrapolation;
	int ydtype; /* the result's dtype, 0: dtype (CUDA target; the CPU stages) */
};
int rt_resize(struct rt_ctx *ctx, const struct rt_resize_desc *d, const void *x, void *y);

/* ------------------------------------------------------------------------ */
/* Model instances (used by the generated NAME.c)                           */
/* ------------------------------------------------------------------------ */

/*
 * The weights file (docs/api.md#the-weights-file): a 64-byte header - magic "ONNXCWT1",
 * u64 format version 1, u64 model id, u64 data size, then zeros - followed
 * by the data. The model id is a hash over the weights and the plan, so a
 * weights file of another model (or another compile of a changed model) is
 * refused with RT_ERR_WEIGHTS_MODEL.
 */
#define RT_WEIGHTS_MAGIC  "ONNXCWT1"
#define RT_WEIGHTS_HEADER 64

/*
 * An output hook (NAME_set_output_hook, docs/api.md): every run calls it
 * once its outputs are computed, before NAME_run returns - on the CUDA
 * target with the outputs in device memory, before they are copied back,
 * and the run's cudaStream_t to enqueue work on; on the CPU with the
 * caller's output buffers and stream NULL. n outputs of bytes[i] bytes
 * each; what the hook leaves in them is what the run returns (data-parallel
 * training sums the gradients over its ranks here: NCCL on CUDA). Returns
 * 0 or a status, which the run returns.
 */
typedef int (*rt_output_hook_fn)(void *ctx, void *const outputs[], const size_t bytes[], int n,
                                 void *stream);

struct rt_model {
	struct rt_ctx *ctx;
	rt_output_hook_fn hook; /* NAME_set_output_hook's (NULL: none) */
	void *hook_ctx;
	unsigned char *arena; /* the planned intermediates */
	size_t arena_bytes;
	const unsigned char *weights;
	size_t weights_bytes;
	void *map; /* the weights mapping (munmap on destroy) */
	size_t map_bytes;
	void *heap_weights; /* or the weights read into memory */
	int poison_arena;   /* fill the arena with NaN before each run (tests) */
	/* ONNXC_PROFILE=1: time per step, reported on close */
	int profile;
	int nsteps;
	const char *const *step_names;
	double *step_ms;
	int64_t runs;
};

/*
 * Opens an instance: allocates the arena, loads the weights from path (or
 * uses embedded, when path is NULL and embedded is not NULL), checks them
 * against model_id and weights_bytes, and starts the threads. The
 * environment variable ONNXC_THREADS overrides the thread count and
 * ONNXC_POISON_ARENA=1 fills the arena with NaNs before every run.
 */
int rt_model_open(struct rt_model *m, size_t arena_bytes, const char *path, const void *embedded,
                  uint64_t model_id, size_t weights_bytes);
/* The steps' names (the generated code's comments), for ONNXC_PROFILE=1:
 * the time of each step is accumulated and printed to stderr on close,
 * largest first. */
void rt_model_steps(struct rt_model *m, int nsteps, const char *const *names);
double rt_now_ms(void);
/* Adds the time since t0 (rt_now_ms) to step s. */
void rt_profile_step(struct rt_model *m, int s, double t0);
/* The generated code's BEGIN and END of every step: when profiling, the
 * time now, and its difference added to step s; nothing otherwise. One call
 * each rather than a test of the profile flag around a call: the code is
 * half the size, and cc's time on NAME.c with it. */
double rt_step_begin(const struct rt_model *m);
void rt_step_end(struct rt_model *m, int s, double t0);
void rt_model_close(struct rt_model *m);
/*
 * Every allocation of the runtime and of NAME_create goes through these (so
 * tests can fail each in turn). In a build without NDEBUG,
 * ONNXC_FAIL_ALLOC=N makes the N-th of the process fail (NULL);
 * rt_fail_alloc_supported() says whether this build honours it.
 */
void *rt_calloc(size_t n, size_t size);
void *rt_alloc_aligned(size_t align, size_t size); /* free() it */
int rt_fail_alloc_supported(void);
/* The default weights file: file next to the running executable if it is
 * there, otherwise file in the current directory. Returns buf. */
const char *rt_default_weights(const char *file, char *buf, size_t n);
/* Called at the start of every run (arena poisoning for tests). */
void rt_model_begin_run(struct rt_model *m);

/*
 * The weights file on its own, shared by rt_model_open and the CUDA
 * runtime (which uploads the data and closes it): read from path (mapped)
 * or embedded, checked against model_id and weights_bytes exactly as
 * rt_model_open checks them. data is the weights_bytes of data after the
 * header. On failure w is zeroed and nothing is held.
 */
struct rt_weights {
	const unsigned char *data;
	size_t bytes;
	void *map; /* the mapping (munmap on close), or NULL */
	size_t map_bytes;
};
int rt_weights_open(struct rt_weights *w, const char *path, const void *embedded, uint64_t model_id,
                    size_t weights_bytes);
void rt_weights_close(struct rt_weights *w);
/* The ONNXC_PROFILE=1 report on stderr: step_ms[nsteps] accumulated over
 * runs, largest first (rt_model_close prints it; so does the CUDA runtime). */
void rt_profile_print(int64_t runs, int nsteps, const char *const *names, const double *step_ms);

#ifdef __cplusplus
}
#endif

#endif
