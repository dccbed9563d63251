/*
 * rtc_sdpa.h - scaled dot-product attention on cuDNN's fused attention
 * (rtc_sdpa.c), and what it shares with the portable kernels of
 * rtc_attention.cu.
 *
 * The CUDA runtime's rtc_attention and rtc_attention_grad (onnxc_rt_cuda.h)
 * take a plan, struct rtc_attention, made at create time: either a cuDNN
 * execution plan for the descriptor or "use the kernel". The pieces are
 * separate so that a machine without a GPU can check them:
 *   - rtc_sdpa_refusal says whether cuDNN computes exactly the runtime's
 *     semantics for a descriptor (and why not), as pure arithmetic;
 *   - rtc_sdpa_build makes the whole cuDNN operation graph (tensor,
 *     operation and graph descriptors, finalized), which needs no handle
 *     and no device with cuDNN 9.8 and later;
 *   - the plan (heuristics, engine configuration, execution plan) needs a
 *     handle, a device and the model, and lives in rtc_attention_plan.
 */
#ifndef ONNXC_RTC_SDPA_H
#define ONNXC_RTC_SDPA_H

#include "rtc_internal.h"

#include <cudnn.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The unique ids of the graph's tensors with data: device pointers in the
 * variant pack, or host pointers for the by-value scalars. The backward's
 * K and V are K^T and V^T views of the same memory (dims [.., d, lk]).
 * Virtual tensors are numbered from RTC_SDPA_VIRTUAL.
 */
enum rtc_sdpa_uid {
	RTC_SDPA_Q = 1,
	RTC_SDPA_K,
	RTC_SDPA_V,
	RTC_SDPA_O,     /* forward: the result; backward: the forward's y */
	RTC_SDPA_STATS, /* lse, FP32 [b, hq, lq, 1] */
	RTC_SDPA_BIAS,
	RTC_SDPA_DO, /* backward: dy */
	RTC_SDPA_DQ,
	RTC_SDPA_DK,
	RTC_SDPA_DV,
	RTC_SDPA_SOFTMAX_SUM, /* backward: rowsum(dy * y), FP32 scratch in the workspace */
	RTC_SDPA_DQ_ACCUM,    /* backward: dq in FP32, scratch in the workspace */
	RTC_SDPA_SCALE,       /* by value, FP32 */
	RTC_SDPA_NEG_INF,     /* by value, FP32 -inf: what the causal mask selects */
	RTC_SDPA_SHIFT,       /* by value, INT32: the causal offset */
	RTC_SDPA_ONE,         /* by value, FP32 1 (the backward's softmax_sum scale) */
	RTC_SDPA_VIRTUAL = 100
};

/* The graph's shape, from a descriptor rtc_sdpa_refusal accepts. */
struct rtc_sdpa_shape {
	int backward;
	int dtype;  /* RT_F16 or RT_BF16: q, k, v, y, dy, dq, dk, dv */
	int mdtype; /* a bias's: dtype, or RT_F32 (mixed precision keeps biases FP32) */
	int64_t b, hq, hkv, lq, lk, dk, dv;
	int bias;                /* an additive mask: dims 1 where it broadcasts */
	int64_t bias_dims[4];    /* over [b, hq, lq, lk] */
	int64_t bias_strides[4]; /* elements */
	int causal;              /* a causal mask that hides some key from some row */
	int32_t shift;           /* it keeps key j for row i when j <= i + shift */
	float scale;
};

/*
 * NULL when cuDNN's graph computes exactly what rt_attention (backward: 1,
 * rt_attention_grad) defines for d on a device of compute capability sm
 * (major * 10 + minor) with cuDNN version `version` (cudnnGetVersion());
 * otherwise why not, a constant string. Refused: dtypes other than FP16 and
 * BF16, a result of another dtype, a bias neither of dtype nor FP32, boolean masks, a bias that is not
 * contiguous along the keys, softcap, empty shapes, no keys, head sizes
 * that are not multiples of 8 or above cuDNN's limits, causal rows that see
 * no key (causal_offset < 0), lq = lk = 1 backward, sm below 80, old cuDNN.
 */
const char *rtc_sdpa_refusal(const struct rt_attention_desc *d, int backward, int sm, int version);
void rtc_sdpa_shape(const struct rt_attention_desc *d, int backward, struct rtc_sdpa_shape *s);

#define RTC_SDPA_MAX_TENSORS 64
#define RTC_SDPA_MAX_OPS     40

/*
 * A built graph: every descriptor it made, for the plan and the tests to
 * read and rtc_sdpa_destroy to free. op[i] is operation i in the order the
 * graph lists them (cuDNN-frontend's order), of type op_type[i], with its
 * pointwise, matmul or reduction descriptor in op_desc[i] (NULL for a
 * reshape). The by-value scalars live here: the variant pack points at
 * them.
 */
struct rtc_sdpa_graph {
	struct rtc_sdpa_shape s;
	int ntensors, nops;
	cudnnBackendDescriptor_t tensor[RTC_SDPA_MAX_TENSORS];
	int64_t uid[RTC_SDPA_MAX_TENSORS];
	cudnnBackendDescriptor_t op[RTC_SDPA_MAX_OPS];
	cudnnBackendDescriptorType_t op_type[RTC_SDPA_MAX_OPS];
	cudnnBackendDescriptor_t op_desc[RTC_SDPA_MAX_OPS];
	cudnnBackendDescriptor_t graph; /* CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR */
	int64_t next_virtual;
	float scale, neg_inf, one;
	int32_t shift;
};

/*
 * Builds and finalizes the graph for d (which rtc_sdpa_refusal accepted),
 * the forward or the backward; h may be NULL (cuDNN 9.8+ finalizes an
 * operation graph without a handle). RT_OK, or RT_ERR_DEVICE with the
 * failing call and cuDNN's message in why. g is always left destroyable.
 */
int rtc_sdpa_build(struct rtc_sdpa_graph *g, const struct rt_attention_desc *d, int backward,
                   cudnnHandle_t h, char *why, size_t n);
void rtc_sdpa_destroy(struct rtc_sdpa_graph *g);
/* The tensor descriptor of unique id uid, NULL if the graph has none. */
cudnnBackendDescriptor_t rtc_sdpa_tensor(const struct rtc_sdpa_graph *g, int64_t uid);

/* NULL when plan p runs cuDNN's fused attention, else why the portable
 * kernel runs the step instead (what ONNXC_VERBOSE=1 prints). */
const char *rtc_attention_fallback(const struct rtc_attention *p);

/* ------------------------------------------------------------------------ */
/* rtc_attention.cu                                                         */
/* ------------------------------------------------------------------------ */

/* The portable kernels (any dtype, head size and mask; rtc_attention's
 * semantics), called with the plan's descriptor. */
int rtc_attention_kernel(struct rtc_model *m, const struct rt_attention_desc *d, const void *q,
                         const void *k, const void *v, const void *mask, void *y, void *lse);
int rtc_attention_grad_kernel(struct rtc_model *m, const struct rt_attention_desc *d, const void *q,
                              const void *k, const void *v, const void *y, const void *lse,
                              const void *dy, const void *mask, void *dq, void *dk, void *dv);
/* Whether the kernels take d (the plan's check; pointers are checked at
 * run time). */
int rtc_attention_kernel_takes(const struct rt_attention_desc *d, int backward);

/*
 * After cuDNN's forward with a bias: a row whose statistics came out
 * non-finite and whose every visible key (under the causal limit) has a
 * bias of -inf is fully masked, and gets y = 0, lse = -inf (the runtime's
 * semantics; cuDNN's own result there is -inf - -inf arithmetic).
 */
int rtc_sdpa_fix_rows(struct rtc_model *m, const struct rt_attention_desc *d, const void *mask,
                      void *y, float *lse);
/* Before cuDNN's backward with a bias: lse with -inf (the fully masked
 * rows) turned into +inf, so that e^(s - lse) is 0 there, not NaN. */
int rtc_sdpa_grad_lse(struct rtc_model *m, int64_t rows, const float *lse, float *out);

#ifdef __cplusplus
}
#endif

#endif
