/*
 * rtc_sdpa.c - fused scaled dot-product attention (FlashAttention) on cuDNN
 * 9's backend graph API, from C: the plans of rtc_attention and
 * rtc_attention_grad (onnxc_rt_cuda.h), and the portable kernels of
 * rtc_attention.cu where cuDNN does not compute exactly the runtime's
 * semantics (struct rt_attention_desc, onnxc_rt.h).
 *
 * cuDNN 9.19 has no single-operation attention node with masks (the SDPA
 * operation descriptors are newer), so the attention is spelled out as the
 * composite graph cuDNN's pattern matcher fuses into one flash-attention
 * kernel - the graph cuDNN-frontend's CompositeSDPANode and
 * CompositeSDPABackwardNode expand into for cuDNN < 9.21, op for op and in
 * their order (the matcher looks at the ops, their modes and the dataflow).
 * Tensors are [batch, heads, rows, cols]; q, k, v, y, dy, dq, dk, dv are the
 * runtime's dense [b, h, l, d] (FP16 or BF16), k and v read transposed by
 * strides where a matmul wants K^T or V^T; every virtual tensor is FP32
 * except where the half matmuls read (P, dS^T, the GQA full-head partials);
 * lse is the FP32 Stats [b, hq, lq, 1].
 *
 * Forward (10 ops, +1 with a bias, +4 or +5 causal):
 *   S = MATMUL(Q, K^T)  (K^T: dims [b, hkv, dk, lk], strides [.., .., 1, dk];
 *                        hkv < hq is GQA: cuDNN broadcasts the kv head)
 *   S = MUL(S, scale)                    (scale: an FP32 scalar by value)
 *   S = ADD(S, bias)                     (bias: dims 1 where it broadcasts)
 *   causal: row = GEN_INDEX(S, axis 2), col = GEN_INDEX(S, axis 3) (INT32),
 *           row = ADD(row, shift) when shift != 0 (INT32 by value),
 *           keep = CMP_GE(row, col) (BOOLEAN),
 *           S = BINARY_SELECT(S, -inf, keep)   (keep ? S : -inf)
 *   M = REDUCTION MAX(S) [b, hq, lq, 1]; E = EXP(SUB(S, M));
 *   L = REDUCTION ADD(E); Stats = ADD(M, LOG(L))   (= lse, written out)
 *   P = DIV(E, L)  (half)
 *   O = MATMUL(P, V)
 * The causal mask is the runtime's "j <= i + causal_offset" as cuDNN's
 * top-left diagonal band with right bound causal_offset (frontend:
 * diagonal_band_right_bound, TOP_LEFT); a causal flag that hides nothing
 * (causal_offset >= lk - 1) is dropped.
 *
 * Backward (18 ops, +2 with GQA, +1 bias, +4 or +5 causal), from Q, K^T,
 * V^T, O (= y), dO (= dy) and Stats:
 *   softmax_sum = MUL(REDUCTION ADD(MUL(dO, O)), 1)   (FP32, workspace)
 *   S = MATMUL(Q, K^T); S = MUL(S, scale); [ADD bias]; S = SUB(S, Stats);
 *   [causal, as above]; P = EXP(S)
 *   dV = MATMUL(RESHAPE(P) as P^T (half), dO)  (GQA: into [b, hq, lk, dv],
 *        then REDUCTION ADD over each group into dV)
 *   dP = MATMUL(dO, V^T); dS = MUL(MUL(SUB(dP, softmax_sum), P), scale)
 *   dK = MATMUL(RESHAPE(dS) as dS^T (half), Q)  (GQA: as dV)
 *   dQ_accum = MATMUL(dS, RESHAPE(K^T) as K) (FP32, workspace); dQ = IDENTITY
 *
 * When cuDNN takes a descriptor (rtc_sdpa_refusal): FP16 or BF16 in and
 * out, a bias of that dtype or FP32 (mixed precision keeps biases FP32;
 * cuDNN's heuristics offer the fused engines for it too, test_rtc_sdpa
 * checks), no softcap, no boolean mask, head sizes multiples of 8 up
 * to 256 (the backward: 128, 256 on sm_90), sm_80 or later, cuDNN 9.10.2 or
 * later (9.16 for the backward: older versions need the frontend's padding
 * workaround for lk % 128 != 0), and no row that is fully masked by
 * construction: no keys, or causal_offset < 0 (row 0 sees nothing), go to
 * the kernel. A bias can still hide a whole row at run time (-inf on every
 * visible key); cuDNN then computes -inf - -inf. So with a bias the forward
 * is followed by rtc_sdpa_fix_rows (a row whose lse is not finite and whose
 * bias is -inf on every visible key gets y = 0, lse = -inf, as the runtime
 * says), and the backward reads lse with -inf turned into +inf
 * (rtc_sdpa_grad_lse), so that e^(s - lse) is 0 on such rows instead of
 * NaN: their dq is 0 and they add nothing to dk and dv, as in the
 * kernels. Without a bias no row can be fully masked.
 *
 * The plan (create time): the graph (rtc_sdpa_build; no handle needed),
 * cuDNN's heuristics (mode A), the first engine configuration whose
 * execution plan finalizes with a workspace within ONNXC_CUDA_WORKSPACE_MB,
 * and the model's shared workspace asked for: the engine's, then the
 * backward's softmax_sum and dQ_accum, then room for lse when the caller
 * passes none (forward) or the +inf copy (backward with a bias). If cuDNN
 * refuses - the descriptor, or every engine - the plan uses the kernel
 * silently (ONNXC_VERBOSE=1 says which path each step takes and why), as
 * it does with ONNXC_CUDA_NO_CUDNN_ATTENTION=1. A run builds the variant
 * pack (device pointers, the by-value scalars' host addresses, the
 * workspace) and calls cudnnBackendExecute on the handle, whose stream is
 * the model's (set once at open), so the call is captured into the model's
 * CUDA Graph like any launch. Operands less aligned than the plan's 16
 * bytes run on the kernel. A failed execution is RT_ERR_DEVICE with
 * cuDNN's message.
 */
#include "rtc_sdpa.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The alignment the plan assumes of every operand (cuDNN-frontend's). */
#define SDPA_ALIGN 16
/* Workspace regions start on this boundary. */
#define WS_ALIGN 256

/* ------------------------------------------------------------------------ */
/* What cuDNN takes                                                         */
/* ------------------------------------------------------------------------ */

const char *rtc_sdpa_refusal(const struct rt_attention_desc *d, int backward, int sm, int version)
{
	int64_t limit;
	if (d->dtype != RT_F16 && d->dtype != RT_BF16)
		return "its dtype is not FP16 or BF16";
	if (d->ydtype && d->ydtype != d->dtype)
		return "its result's dtype differs from its inputs'";
	if (d->mask == RT_ATTN_BOOL)
		return "a boolean mask";
	if (d->mask != RT_ATTN_NONE && d->mask != RT_ATTN_BIAS)
		return "an unknown mask kind";
	if (d->mask == RT_ATTN_BIAS && d->mdtype && d->mdtype != d->dtype && d->mdtype != RT_F32)
		return "its bias's dtype is neither its inputs' nor FP32";
	if (d->mask == RT_ATTN_BIAS && d->lk > 1 && d->mask_strides[3] != 1)
		return "its bias is not contiguous along the keys";
	if (d->softcap != 0)
		return "softcap";
	if (d->batch <= 0 || d->q_heads <= 0 || d->lq <= 0)
		return "no queries";
	if (d->lk <= 0)
		return "no keys (every row is masked)";
	if (d->kv_heads <= 0 || d->q_heads % d->kv_heads != 0)
		return "its query heads are not a multiple of its kv heads";
	if (d->dk <= 0 || d->dv <= 0 || d->dk % 8 != 0 || d->dv % 8 != 0)
		return "a head size that is not a multiple of 8";
	/* cuDNN-frontend's support surface for cuDNN 9.10+: the forward takes
	 * 256 everywhere; the backward 256 on Hopper, 128 elsewhere */
	limit = backward && sm / 10 != 9 ? 128 : 256;
	if (d->dk > limit || d->dv > limit)
		return backward ? "a head size above 128 (256 on sm_90) for the backward"
		                : "a head size above 256";
	if (d->causal && d->causal_offset < 0)
		return "causal rows that see no key (causal_offset < 0)";
	if (d->lq > INT32_MAX || d->lk > INT32_MAX)
		return "a sequence longer than 2^31 - 1 (cuDNN's indices are INT32)";
	if (backward && d->lq == 1 && d->lk == 1)
		return "lq = lk = 1 (cuDNN's backward refuses it)";
	if (sm < 80)
		return "a device below sm_80";
	if (version < (backward ? 91600 : 91002))
		return backward ? "cuDNN older than 9.16 (the backward)"
		                : "cuDNN older than 9.10.2";
	return NULL;
}

void rtc_sdpa_shape(const struct rt_attention_desc *d, int backward, struct rtc_sdpa_shape *s)
{
	const int64_t full[4] = { d->batch, d->q_heads, d->lq, d->lk };
	memset(s, 0, sizeof *s);
	s->backward = backward;
	s->dtype = d->dtype;
	s->b = d->batch;
	s->hq = d->q_heads;
	s->hkv = d->kv_heads;
	s->lq = d->lq;
	s->lk = d->lk;
	s->dk = d->dk;
	s->dv = d->dv;
	s->scale = d->scale;
	s->bias = d->mask == RT_ATTN_BIAS;
	s->mdtype = d->mdtype ? d->mdtype : d->dtype;
	if (s->bias)
		/* cuDNN broadcasts dims of extent 1 (stride 0 is not a broadcast
		 * there); a broadcast dim gets the stride a packed layout would
		 * give it */
		for (int a = 3; a >= 0; a--) {
			int bcast = d->mask_strides[a] == 0 || full[a] == 1;
			s->bias_dims[a] = bcast ? 1 : full[a];
			s->bias_strides[a] =
			        bcast ? (a == 3 ? 1 : s->bias_dims[a + 1] * s->bias_strides[a + 1])
			              : d->mask_strides[a];
		}
	/* the top row (i = 0) sees keys 0..offset: nothing is hidden once
	 * offset reaches the last key */
	s->causal = d->causal && d->causal_offset < d->lk - 1;
	s->shift = s->causal ? (int32_t)d->causal_offset : 0;
}

/* ------------------------------------------------------------------------ */
/* The graph                                                                */
/* ------------------------------------------------------------------------ */

/* A graph under construction: after the first failure every call is a
 * no-op returning NULL, and the failure is in why. */
struct builder {
	struct rtc_sdpa_graph *g;
	int failed;
	char *why;
	size_t n;
};

static int dnn_type(int dtype)
{
	return dtype == RT_BF16  ? CUDNN_DATA_BFLOAT16
	       : dtype == RT_F32 ? CUDNN_DATA_FLOAT
	                         : CUDNN_DATA_HALF;
}

static void record(struct builder *b, cudnnStatus_t st, const char *what)
{
	char detail[256] = "";
	if (b->failed)
		return;
	b->failed = 1;
	cudnnGetLastErrorString(detail, sizeof detail);
	snprintf(b->why, b->n, "cuDNN attention graph: %s: %s%s%s", what, cudnnGetErrorString(st),
	         *detail ? ": " : "", detail);
}

/* cudnnBackendSetAttribute, recorded */
static void set(struct builder *b, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, int64_t count, const void *v, const char *what)
{
	cudnnStatus_t st;
	if (b->failed)
		return;
	if ((st = cudnnBackendSetAttribute(d, name, type, count, v)) != CUDNN_STATUS_SUCCESS)
		record(b, st, what);
}

static void finalize(struct builder *b, cudnnBackendDescriptor_t d, const char *what)
{
	cudnnStatus_t st;
	if (!b->failed && (st = cudnnBackendFinalize(d)) != CUDNN_STATUS_SUCCESS)
		record(b, st, what);
}

static cudnnBackendDescriptor_t create(struct builder *b, cudnnBackendDescriptorType_t type,
                                       const char *what)
{
	cudnnBackendDescriptor_t d = NULL;
	cudnnStatus_t st;
	if (b->failed)
		return NULL;
	if ((st = cudnnBackendCreateDescriptor(type, &d)) != CUDNN_STATUS_SUCCESS) {
		record(b, st, what);
		return NULL;
	}
	return d;
}

static void dense(const int64_t dims[4], int64_t strides[4])
{
	strides[3] = 1;
	for (int a = 2; a >= 0; a--)
		strides[a] = strides[a + 1] * dims[a + 1];
}

/* A tensor: uid 0 takes the next virtual id. */
static cudnnBackendDescriptor_t tensor(struct builder *b, int64_t uid, int dt,
                                       const int64_t dims[4], const int64_t strides[4], bool virt,
                                       bool by_value)
{
	struct rtc_sdpa_graph *g = b->g;
	const int64_t align = SDPA_ALIGN;
	cudnnDataType_t type = (cudnnDataType_t)dt;
	cudnnBackendDescriptor_t t;
	if (b->failed)
		return NULL;
	if (g->ntensors == RTC_SDPA_MAX_TENSORS) {
		snprintf(b->why, b->n, "cuDNN attention graph: more than %d tensors",
		         RTC_SDPA_MAX_TENSORS);
		b->failed = 1;
		return NULL;
	}
	if (!uid)
		uid = g->next_virtual++;
	if (!(t = create(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "a tensor descriptor")))
		return NULL;
	g->tensor[g->ntensors] = t;
	g->uid[g->ntensors++] = uid;
	set(b, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor dtype");
	set(b, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dims");
	set(b, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
	set(b, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
	set(b, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align,
	    "tensor alignment");
	set(b, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual");
	set(b, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value,
	    "tensor by value");
	finalize(b, t, "cudnnBackendFinalize (a tensor)");
	return b->failed ? NULL : t;
}

/* A virtual tensor, dense unless strides are given. */
static cudnnBackendDescriptor_t virt(struct builder *b, int dt, const int64_t dims[4],
                                     const int64_t *strides)
{
	int64_t st[4];
	if (!strides) {
		dense(dims, st);
		strides = st;
	}
	return tensor(b, 0, dt, dims, strides, true, false);
}

/* A non-virtual tensor (device memory), dense unless strides are given. */
static cudnnBackendDescriptor_t real(struct builder *b, int64_t uid, int dt, const int64_t dims[4],
                                     const int64_t *strides)
{
	int64_t st[4];
	if (!strides) {
		dense(dims, st);
		strides = st;
	}
	return tensor(b, uid, dt, dims, strides, false, false);
}

/* A scalar passed by value (the variant pack points at its host copy). */
static cudnnBackendDescriptor_t scalar(struct builder *b, int64_t uid, int dt)
{
	static const int64_t one[4] = { 1, 1, 1, 1 };
	return tensor(b, uid, dt, one, one, false, true);
}

/* Makes room for operation i (and its descriptor). */
static int next_op(struct builder *b)
{
	if (b->failed)
		return -1;
	if (b->g->nops == RTC_SDPA_MAX_OPS) {
		snprintf(b->why, b->n, "cuDNN attention graph: more than %d operations",
		         RTC_SDPA_MAX_OPS);
		b->failed = 1;
		return -1;
	}
	return b->g->nops++;
}

/* y = mode(x[, b[, t]]) computed in prec; axis for GEN_INDEX (else < 0). */
static void pointwise(struct builder *b, cudnnPointwiseMode_t mode, int prec, int64_t axis,
                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bb,
                      cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y)
{
	struct rtc_sdpa_graph *g = b->g;
	cudnnDataType_t p = (cudnnDataType_t)prec;
	cudnnBackendDescriptor_t pw, op;
	int i = next_op(b);
	if (i < 0 || !x || !y)
		return;
	g->op_type[i] = CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR;
	if (!(pw = g->op_desc[i] = create(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise")))
		return;
	set(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode,
	    "pointwise mode");
	set(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &p, "pointwise prec");
	if (axis >= 0)
		set(b, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
	finalize(b, pw, "cudnnBackendFinalize (a pointwise descriptor)");
	if (!(op = g->op[i] = create(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
	                             "a pointwise operation")))
		return;
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	    &pw, "pointwise descriptor");
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	    "pointwise x");
	if (bb)
		set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		    &bb, "pointwise b");
	if (t)
		set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		    &t, "pointwise t");
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	    "pointwise y");
	finalize(b, op, "cudnnBackendFinalize (a pointwise operation)");
}

/* c = a b over the last two dims, batched over the first two, FP32. */
static void matmul(struct builder *b, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t bb,
                   cudnnBackendDescriptor_t c)
{
	struct rtc_sdpa_graph *g = b->g;
	const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t mm, op;
	int i = next_op(b);
	if (i < 0 || !a || !bb || !c)
		return;
	g->op_type[i] = CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR;
	if (!(mm = g->op_desc[i] = create(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul")))
		return;
	set(b, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul type");
	finalize(b, mm, "cudnnBackendFinalize (a matmul descriptor)");
	if (!(op = g->op[i] =
	              create(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "a matmul operation")))
		return;
	set(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a,
	    "matmul a");
	set(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bb,
	    "matmul b");
	set(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c,
	    "matmul c");
	set(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm,
	    "matmul descriptor");
	finalize(b, op, "cudnnBackendFinalize (a matmul operation)");
}

/* y = reduce(x) over the dims where y has extent 1 and x not, FP32. */
static void reduction(struct builder *b, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x,
                      cudnnBackendDescriptor_t y)
{
	struct rtc_sdpa_graph *g = b->g;
	const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t rd, op;
	int i = next_op(b);
	if (i < 0 || !x || !y)
		return;
	g->op_type[i] = CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR;
	if (!(rd = g->op_desc[i] = create(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction")))
		return;
	set(b, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp,
	    "reduction type");
	set(b, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how,
	    "reduction operator");
	finalize(b, rd, "cudnnBackendFinalize (a reduction descriptor)");
	if (!(op = g->op[i] = create(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
	                             "a reduction operation")))
		return;
	set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd,
	    "reduction descriptor");
	set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	    "reduction x");
	set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	    "reduction y");
	finalize(b, op, "cudnnBackendFinalize (a reduction operation)");
}

/* y = x viewed through y's dims and strides (a transpose by strides). */
static void reshape(struct builder *b, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	struct rtc_sdpa_graph *g = b->g;
	cudnnBackendDescriptor_t op;
	int i = next_op(b);
	if (i < 0 || !x || !y)
		return;
	g->op_type[i] = CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR;
	if (!(op = g->op[i] =
	              create(b, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "a reshape operation")))
		return;
	set(b, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	    "reshape x");
	set(b, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	    "reshape y");
	finalize(b, op, "cudnnBackendFinalize (a reshape operation)");
}

/* The scores' dims [b, hq, lq, lk], and the row statistics' [b, hq, lq, 1]. */
static void score_dims(const struct rtc_sdpa_shape *s, int64_t dims[4])
{
	dims[0] = s->b;
	dims[1] = s->hq;
	dims[2] = s->lq;
	dims[3] = s->lk;
}

static void stat_dims(const struct rtc_sdpa_shape *s, int64_t dims[4], int64_t strides[4])
{
	dims[0] = s->b;
	dims[1] = s->hq;
	dims[2] = s->lq;
	dims[3] = 1;
	strides[0] = s->hq * s->lq;
	strides[1] = s->lq;
	strides[2] = 1;
	strides[3] = 1;
}

/* A transposed view of [b, h, l, d] memory: dims [b, h, d, l]. */
static cudnnBackendDescriptor_t transposed(struct builder *b, int64_t uid, int dt, int64_t bb,
                                           int64_t h, int64_t l, int64_t d)
{
	const int64_t dims[4] = { bb, h, d, l }, strides[4] = { h * l * d, l * d, 1, d };
	return real(b, uid, dt, dims, strides);
}

/* The causal mask on scores x: keep (i + shift >= j) ? x : -inf. */
static cudnnBackendDescriptor_t causal(struct builder *b, cudnnBackendDescriptor_t x)
{
	const struct rtc_sdpa_shape *s = &b->g->s;
	int64_t sd[4];
	cudnnBackendDescriptor_t row, col, keep, y, neg_inf;
	score_dims(s, sd);
	row = virt(b, CUDNN_DATA_INT32, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2, x, NULL, NULL, row);
	col = virt(b, CUDNN_DATA_INT32, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3, x, NULL, NULL, col);
	if (s->shift) {
		cudnnBackendDescriptor_t shift = scalar(b, RTC_SDPA_SHIFT, CUDNN_DATA_INT32),
		                         shifted = virt(b, CUDNN_DATA_INT32, sd, NULL);
		pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, -1, row, shift, NULL, shifted);
		row = shifted;
	}
	keep = virt(b, CUDNN_DATA_BOOLEAN, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL, keep);
	neg_inf = scalar(b, RTC_SDPA_NEG_INF, CUDNN_DATA_FLOAT);
	y = virt(b, CUDNN_DATA_FLOAT, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, x, neg_inf, keep, y);
	return y;
}

/* The scores: MATMUL(Q, K^T), scaled, plus the bias. */
static cudnnBackendDescriptor_t scores(struct builder *b, cudnnBackendDescriptor_t q,
                                       cudnnBackendDescriptor_t kt, cudnnBackendDescriptor_t scale)
{
	const struct rtc_sdpa_shape *s = &b->g->s;
	int64_t sd[4];
	cudnnBackendDescriptor_t x, y;
	score_dims(s, sd);
	x = virt(b, CUDNN_DATA_FLOAT, sd, NULL);
	matmul(b, q, kt, x);
	y = virt(b, CUDNN_DATA_FLOAT, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, -1, x, scale, NULL, y);
	if (s->bias) {
		cudnnBackendDescriptor_t bias =
		        real(b, RTC_SDPA_BIAS, dnn_type(s->mdtype), s->bias_dims, s->bias_strides);
		x = y;
		y = virt(b, CUDNN_DATA_FLOAT, sd, NULL);
		pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, -1, x, bias, NULL, y);
	}
	return y;
}

static void build_forward(struct builder *b)
{
	const struct rtc_sdpa_shape *s = &b->g->s;
	const int dt = dnn_type(s->dtype), F = CUDNN_DATA_FLOAT;
	const int64_t qd[4] = { s->b, s->hq, s->lq, s->dk }, vd[4] = { s->b, s->hkv, s->lk, s->dv },
	              od[4] = { s->b, s->hq, s->lq, s->dv };
	int64_t sd[4], rd[4], rs[4];
	cudnnBackendDescriptor_t q, kt, v, o, stats, scale, x, m, e, l, t, p;
	score_dims(s, sd);
	stat_dims(s, rd, rs);
	q = real(b, RTC_SDPA_Q, dt, qd, NULL);
	kt = transposed(b, RTC_SDPA_K, dt, s->b, s->hkv, s->lk, s->dk);
	v = real(b, RTC_SDPA_V, dt, vd, NULL);
	o = real(b, RTC_SDPA_O, dt, od, NULL);
	stats = real(b, RTC_SDPA_STATS, F, rd, rs);
	scale = scalar(b, RTC_SDPA_SCALE, F);
	x = scores(b, q, kt, scale);
	if (s->causal)
		x = causal(b, x);
	/* the softmax, cuDNN-frontend's composite form with Stats */
	m = virt(b, F, rd, rs);
	reduction(b, CUDNN_REDUCE_TENSOR_MAX, x, m);
	t = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, x, m, NULL, t);
	e = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_EXP, F, -1, t, NULL, NULL, e);
	l = virt(b, F, rd, rs);
	reduction(b, CUDNN_REDUCE_TENSOR_ADD, e, l);
	t = virt(b, F, rd, rs);
	pointwise(b, CUDNN_POINTWISE_LOG, F, -1, l, NULL, NULL, t);
	pointwise(b, CUDNN_POINTWISE_ADD, F, -1, m, t, NULL, stats);
	p = virt(b, dt, sd, NULL); /* the P.V matmul reads P in half */
	pointwise(b, CUDNN_POINTWISE_DIV, F, -1, e, l, NULL, p);
	matmul(b, p, v, o);
}

/* dW = MATMUL(xT, y) into out; with GQA through full heads and a sum over
 * each group. */
static void grad_matmul(struct builder *b, cudnnBackendDescriptor_t xt, cudnnBackendDescriptor_t y,
                        cudnnBackendDescriptor_t out, int64_t width)
{
	const struct rtc_sdpa_shape *s = &b->g->s;
	const int64_t fd[4] = { s->b, s->hq, s->lk, width };
	cudnnBackendDescriptor_t full;
	if (s->hq == s->hkv) {
		matmul(b, xt, y, out);
		return;
	}
	full = virt(b, dnn_type(s->dtype), fd, NULL);
	matmul(b, xt, y, full);
	reduction(b, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

static void build_backward(struct builder *b)
{
	const struct rtc_sdpa_shape *s = &b->g->s;
	const int dt = dnn_type(s->dtype), F = CUDNN_DATA_FLOAT;
	const int64_t qd[4] = { s->b, s->hq, s->lq, s->dk }, od[4] = { s->b, s->hq, s->lq, s->dv },
	              kd[4] = { s->b, s->hkv, s->lk, s->dk },
	              vd[4] = { s->b, s->hkv, s->lk, s->dv }, td[4] = { s->b, s->hq, s->lk, s->lq },
	              ts[4] = { s->hq * s->lq * s->lk, s->lq * s->lk, 1, s->lk },
	              ks[4] = { s->hkv * s->lk * s->dk, s->lk * s->dk, s->dk, 1 };
	int64_t sd[4], rd[4], rs[4];
	cudnnBackendDescriptor_t q, kt, vt, o, dO, stats, dq, dk, dv, ssum, accum, scale, one;
	cudnnBackendDescriptor_t x, y, p, pt, dp, ds, dst, kk, r;
	score_dims(s, sd);
	stat_dims(s, rd, rs);
	q = real(b, RTC_SDPA_Q, dt, qd, NULL);
	kt = transposed(b, RTC_SDPA_K, dt, s->b, s->hkv, s->lk, s->dk);
	vt = transposed(b, RTC_SDPA_V, dt, s->b, s->hkv, s->lk, s->dv);
	o = real(b, RTC_SDPA_O, dt, od, NULL);
	dO = real(b, RTC_SDPA_DO, dt, od, NULL);
	stats = real(b, RTC_SDPA_STATS, F, rd, rs);
	dq = real(b, RTC_SDPA_DQ, dt, qd, NULL);
	dk = real(b, RTC_SDPA_DK, dt, kd, NULL);
	dv = real(b, RTC_SDPA_DV, dt, vd, NULL);
	ssum = real(b, RTC_SDPA_SOFTMAX_SUM, F, rd, rs);
	accum = real(b, RTC_SDPA_DQ_ACCUM, F, qd, NULL);
	scale = scalar(b, RTC_SDPA_SCALE, F);
	one = scalar(b, RTC_SDPA_ONE, F);
	/* softmax_sum = rowsum(dO * O) (FlashAttention-2's D) */
	x = virt(b, F, od, NULL);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, dO, o, NULL, x);
	r = virt(b, F, rd, rs);
	reduction(b, CUDNN_REDUCE_TENSOR_ADD, x, r);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, r, one, NULL, ssum);
	/* P = e^(S - lse), masked */
	x = scores(b, q, kt, scale);
	y = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, x, stats, NULL, y);
	if (s->causal)
		y = causal(b, y);
	p = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_EXP, F, -1, y, NULL, NULL, p);
	/* dV = P^T dO */
	pt = virt(b, dt, td, ts);
	reshape(b, p, pt);
	grad_matmul(b, pt, dO, dv, s->dv);
	/* dS = P (dO V^T - D) scale */
	dp = virt(b, F, sd, NULL);
	matmul(b, dO, vt, dp);
	x = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, dp, ssum, NULL, x);
	y = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, x, p, NULL, y);
	ds = virt(b, F, sd, NULL);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, y, scale, NULL, ds);
	/* dK = dS^T Q */
	dst = virt(b, dt, td, ts);
	reshape(b, ds, dst);
	grad_matmul(b, dst, q, dk, s->dk);
	/* dQ = dS K, accumulated in FP32 */
	kk = virt(b, dt, kd, ks);
	reshape(b, kt, kk);
	matmul(b, ds, kk, accum);
	pointwise(b, CUDNN_POINTWISE_IDENTITY, F, -1, accum, NULL, NULL, dq);
}

int rtc_sdpa_build(struct rtc_sdpa_graph *g, const struct rt_attention_desc *d, int backward,
                   cudnnHandle_t h, char *why, size_t n)
{
	struct builder b = { g, 0, why, n };
	memset(g, 0, sizeof *g);
	if (why && n)
		*why = 0;
	rtc_sdpa_shape(d, backward, &g->s);
	g->next_virtual = RTC_SDPA_VIRTUAL;
	g->scale = d->scale;
	g->neg_inf = -INFINITY;
	g->one = 1;
	g->shift = g->s.shift;
	if (backward)
		build_backward(&b);
	else
		build_forward(&b);
	g->graph = create(&b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the operation graph");
	set(&b, g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops,
	    g->op, "the graph's operations");
	if (h && !b.failed)
		/* optional (and deprecated) since cuDNN 9.8: the heuristics find the
		 * device through it where it is taken, and do without where not */
		(void)cudnnBackendSetAttribute(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
		                               CUDNN_TYPE_HANDLE, 1, &h);
	finalize(&b, g->graph, "cudnnBackendFinalize (the operation graph)");
	return b.failed ? RT_ERR_DEVICE : RT_OK;
}

void rtc_sdpa_destroy(struct rtc_sdpa_graph *g)
{
	if (g->graph)
		cudnnBackendDestroyDescriptor(g->graph);
	for (int i = 0; i < g->nops; i++) {
		if (g->op[i])
			cudnnBackendDestroyDescriptor(g->op[i]);
		if (g->op_desc[i])
			cudnnBackendDestroyDescriptor(g->op_desc[i]);
	}
	for (int i = 0; i < g->ntensors; i++)
		if (g->tensor[i])
			cudnnBackendDestroyDescriptor(g->tensor[i]);
	memset(g, 0, sizeof *g);
}

cudnnBackendDescriptor_t rtc_sdpa_tensor(const struct rtc_sdpa_graph *g, int64_t uid)
{
	for (int i = 0; i < g->ntensors; i++)
		if (g->uid[i] == uid)
			return g->tensor[i];
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Plans                                                                    */
/* ------------------------------------------------------------------------ */

struct rtc_attention {
	struct rt_attention_desc d;
	int backward;
	int cudnn;     /* the cuDNN plan runs the step (else the kernel) */
	char why[256]; /* else why not */
	struct rtc_sdpa_graph g;
	cudnnBackendDescriptor_t plan;
	/* the workspace: the engine's at 0, then (backward) softmax_sum and
	 * dQ_accum, then lse (forward without one; backward: the +inf copy) */
	size_t ws_engine, off_sum, off_accum, off_lse, ws_total;
};

static void attention_free(void *arg)
{
	struct rtc_attention *p = arg;
	if (p->plan)
		cudnnBackendDestroyDescriptor(p->plan);
	rtc_sdpa_destroy(&p->g);
	free(p);
}

static size_t ws_round(size_t x) { return (x + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

static int env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && *v != '0';
}

/* The first of cuDNN's mode-A engine configurations whose execution plan
 * finalizes within the workspace limit; 0 and why when none does. */
static int choose_engine(struct rtc_attention *p, cudnnHandle_t h, size_t limit, char *why,
                         size_t n)
{
	const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
	cudnnBackendDescriptor_t heur = NULL, *cfg = NULL;
	int64_t count = 0, got = 0;
	cudnnStatus_t st, last = CUDNN_STATUS_NOT_SUPPORTED;
	int found = 0;
	snprintf(why, n, "cuDNN's heuristics offered no engine");
	if ((st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur)) ||
	    (st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
	                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->g.graph)) ||
	    (st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
	                                   1, &mode)) ||
	    (st = cudnnBackendFinalize(heur)) ||
	    (st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
	                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL))) {
		snprintf(why, n, "cuDNN's heuristics: %s", cudnnGetErrorString(st));
		goto done;
	}
	if (count <= 0 || !(cfg = calloc((size_t)count, sizeof *cfg)))
		goto done;
	for (got = 0; got < count; got++)
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[got]))
			break;
	if (got < count ||
	    cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
	                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfg))
		goto done;
	for (int64_t i = 0; i < got && !found; i++) {
		cudnnBackendDescriptor_t plan = NULL;
		int64_t ws = 0, one = 0;
		if ((st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
		                                       &plan)) ||
		    (st = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
		                                   CUDNN_TYPE_HANDLE, 1, &h)) ||
		    (st = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
		                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i])) ||
		    (st = cudnnBackendFinalize(plan)) ||
		    (st = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
		                                   CUDNN_TYPE_INT64, 1, &one, &ws))) {
			last = st;
			if (plan)
				cudnnBackendDestroyDescriptor(plan);
			continue;
		}
		if (ws < 0 || (size_t)ws > limit) {
			last = CUDNN_STATUS_NOT_SUPPORTED;
			cudnnBackendDestroyDescriptor(plan);
			continue;
		}
		p->plan = plan;
		p->ws_engine = (size_t)ws;
		found = 1;
	}
	if (!found)
		snprintf(why, n,
		         "none of cuDNN's %lld engine configurations finalized within %zu bytes of "
		         "workspace (last: %s)",
		         (long long)count, limit, cudnnGetErrorString(last));
done:
	for (int64_t i = 0; cfg && i < count; i++)
		if (cfg[i])
			cudnnBackendDestroyDescriptor(cfg[i]);
	free(cfg);
	if (heur)
		cudnnBackendDestroyDescriptor(heur);
	return found;
}

/* The device's compute capability as major * 10 + minor (0: unknown). */
static int device_sm(void)
{
	int dev = 0, major = 0, minor = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return major * 10 + minor;
}

/* Tries cuDNN for p: 1 when its plan will run the step, else 0 and why. */
static int try_cudnn(struct rtc_model *m, struct rtc_attention *p, char *why, size_t n)
{
	const char *no;
	cudnnHandle_t h = rtc_cudnn(m);
	const size_t rows = (size_t)(p->d.batch * p->d.q_heads * p->d.lq);
	size_t at;
	if (env_flag("ONNXC_CUDA_NO_CUDNN_ATTENTION")) {
		snprintf(why, n, "ONNXC_CUDA_NO_CUDNN_ATTENTION is set");
		return 0;
	}
	if ((no = rtc_sdpa_refusal(&p->d, p->backward, device_sm(), (int)cudnnGetVersion()))) {
		snprintf(why, n, "%s", no);
		return 0;
	}
	if (!h) {
		snprintf(why, n, "no cuDNN handle");
		return 0;
	}
	if (rtc_sdpa_build(&p->g, &p->d, p->backward, h, why, n) ||
	    !choose_engine(p, h, rtc_workspace_limit(m), why, n)) {
		rtc_sdpa_destroy(&p->g);
		return 0;
	}
	at = ws_round(p->ws_engine);
	if (p->backward) {
		p->off_sum = at;
		at = ws_round(at + rows * sizeof(float));
		p->off_accum = at;
		at = ws_round(at + rows * (size_t)p->d.dk * sizeof(float));
	}
	p->off_lse = at;
	if (!p->backward || p->g.s.bias)
		at = ws_round(at + rows * sizeof(float));
	p->ws_total = at;
	return 1;
}

static int plan(struct rtc_model *m, const struct rt_attention_desc *d, int backward,
                struct rtc_attention **out)
{
	const char *fn = backward ? "rtc_attention_grad" : "rtc_attention";
	struct rtc_attention *p;
	int status;
	if (!m || !d || !out)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "%s_plan: NULL argument", fn)
		         : RT_ERR_ARGUMENT;
	*out = NULL;
	if (!rtc_attention_kernel_takes(d, backward))
		return rtc_fail(m, RT_ERR_ARGUMENT, "%s: unsupported descriptor", fn);
	if (!(p = calloc(1, sizeof *p)))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for an attention plan");
	/* from here on the instance frees the plan, whatever happens */
	if ((status = rtc_on_close(m, attention_free, p)))
		return status;
	p->d = *d;
	p->backward = backward;
	p->cudnn = try_cudnn(m, p, p->why, sizeof p->why);
	if (p->cudnn)
		rtc_need_workspace(m, p->ws_total);
	if (env_flag("ONNXC_VERBOSE")) {
		if (p->cudnn)
			fprintf(stderr,
			        "onnxc cuda: %s (b %lld, heads %lld/%lld, lq %lld, lk %lld, d "
			        "%lld/%lld): cuDNN fused attention, %zu bytes of workspace\n",
			        fn, (long long)d->batch, (long long)d->q_heads,
			        (long long)d->kv_heads, (long long)d->lq, (long long)d->lk,
			        (long long)d->dk, (long long)d->dv, p->ws_total);
		else
			fprintf(stderr, "onnxc cuda: %s: the portable kernel (cuDNN: %s)\n", fn,
			        p->why);
	}
	*out = p;
	return RT_OK;
}

int rtc_attention_plan(struct rtc_model *m, const struct rt_attention_desc *d,
                       struct rtc_attention **p)
{
	return plan(m, d, 0, p);
}

int rtc_attention_grad_plan(struct rtc_model *m, const struct rt_attention_desc *d,
                            struct rtc_attention **p)
{
	return plan(m, d, 1, p);
}

const char *rtc_attention_fallback(const struct rtc_attention *p)
{
	return !p ? "no plan" : p->cudnn ? NULL : p->why;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

static int aligned(const void *x) { return !x || (uintptr_t)x % SDPA_ALIGN == 0; }

/* The variant pack of a run and its execution on the model's stream. */
static int execute(struct rtc_model *m, const struct rtc_attention *p, const int64_t *uids,
                   void *const *ptrs, int64_t n, void *ws, const char *fn)
{
	cudnnBackendDescriptor_t vp = NULL;
	cudnnStatus_t st;
	char detail[256] = "";
	if ((st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp)) ||
	    (st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
	                                   n, uids)) ||
	    (st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
	                                   CUDNN_TYPE_VOID_PTR, n, ptrs)) ||
	    (st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
	                                   CUDNN_TYPE_VOID_PTR, 1, &ws)) ||
	    (st = cudnnBackendFinalize(vp)) ||
	    (st = cudnnBackendExecute(rtc_cudnn(m), p->plan, vp))) {
		cudnnGetLastErrorString(detail, sizeof detail);
		if (vp)
			cudnnBackendDestroyDescriptor(vp);
		return rtc_fail(m, RT_ERR_DEVICE, "cudnnBackendExecute (%s): %s%s%s", fn,
		                cudnnGetErrorString(st), *detail ? ": " : "", detail);
	}
	cudnnBackendDestroyDescriptor(vp);
	return RT_OK;
}

/* The by-value scalars the graph has, appended to a variant pack. */
static int64_t scalars(const struct rtc_attention *p, int64_t *uids, void **ptrs, int64_t n)
{
	uids[n] = RTC_SDPA_SCALE;
	ptrs[n++] = (void *)&p->g.scale;
	if (p->g.s.causal) {
		uids[n] = RTC_SDPA_NEG_INF;
		ptrs[n++] = (void *)&p->g.neg_inf;
	}
	if (p->g.s.shift) {
		uids[n] = RTC_SDPA_SHIFT;
		ptrs[n++] = (void *)&p->g.shift;
	}
	return n;
}

int rtc_attention(struct rtc_model *m, const struct rtc_attention *p, const void *q, const void *k,
                  const void *v, const void *mask, void *y, void *lse)
{
	int64_t uids[12], n = 0;
	void *ptrs[12];
	unsigned char *ws;
	void *stats;
	int status;
	if (!m || !p)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_attention: NULL plan")
		         : RT_ERR_ARGUMENT;
	ws = rtc_workspace(m);
	/* the kernel reports a bad call; it also takes what the plan's
	 * alignment does not */
	if (!p->cudnn || !q || !k || !v || !y || (p->d.mask != RT_ATTN_NONE) != !!mask ||
	    !aligned(q) || !aligned(k) || !aligned(v) || !aligned(y) || !aligned(lse) ||
	    !aligned(mask))
		return rtc_attention_kernel(m, &p->d, q, k, v, mask, y, lse);
	if (!ws && p->ws_total)
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "rtc_attention: no workspace (rtc_capture_begin allocates it)");
	stats = lse ? lse : ws + p->off_lse;
	uids[n] = RTC_SDPA_Q, ptrs[n++] = (void *)q;
	uids[n] = RTC_SDPA_K, ptrs[n++] = (void *)k;
	uids[n] = RTC_SDPA_V, ptrs[n++] = (void *)v;
	uids[n] = RTC_SDPA_O, ptrs[n++] = y;
	uids[n] = RTC_SDPA_STATS, ptrs[n++] = stats;
	if (p->g.s.bias)
		uids[n] = RTC_SDPA_BIAS, ptrs[n++] = (void *)mask;
	n = scalars(p, uids, ptrs, n);
	if ((status = execute(m, p, uids, ptrs, n, ws, "rtc_attention")))
		return status;
	return p->g.s.bias ? rtc_sdpa_fix_rows(m, &p->d, mask, y, stats) : RT_OK;
}

int rtc_attention_grad(struct rtc_model *m, const struct rtc_attention *p, const void *q,
                       const void *k, const void *v, const void *y, const void *lse, const void *dy,
                       const void *mask, void *dq, void *dk, void *dv)
{
	int64_t uids[20], n = 0;
	void *ptrs[20];
	unsigned char *ws;
	const void *stats = lse;
	int status;
	if (!m || !p)
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_attention_grad: NULL plan")
		         : RT_ERR_ARGUMENT;
	ws = rtc_workspace(m);
	if (!p->cudnn || !q || !k || !v || !y || !lse || !dy || !dq || !dk || !dv ||
	    (p->d.mask != RT_ATTN_NONE) != !!mask || !aligned(q) || !aligned(k) || !aligned(v) ||
	    !aligned(y) || !aligned(lse) || !aligned(dy) || !aligned(mask) || !aligned(dq) ||
	    !aligned(dk) || !aligned(dv))
		return rtc_attention_grad_kernel(m, &p->d, q, k, v, y, lse, dy, mask, dq, dk, dv);
	if (!ws)
		return rtc_fail(
		        m, RT_ERR_ARGUMENT,
		        "rtc_attention_grad: no workspace (rtc_capture_begin allocates it)");
	if (p->g.s.bias) {
		float *fixed = (float *)(void *)(ws + p->off_lse);
		if ((status =
		             rtc_sdpa_grad_lse(m, p->d.batch * p->d.q_heads * p->d.lq, lse, fixed)))
			return status;
		stats = fixed;
	}
	uids[n] = RTC_SDPA_Q, ptrs[n++] = (void *)q;
	uids[n] = RTC_SDPA_K, ptrs[n++] = (void *)k;
	uids[n] = RTC_SDPA_V, ptrs[n++] = (void *)v;
	uids[n] = RTC_SDPA_O, ptrs[n++] = (void *)y;
	uids[n] = RTC_SDPA_DO, ptrs[n++] = (void *)dy;
	uids[n] = RTC_SDPA_STATS, ptrs[n++] = (void *)stats;
	uids[n] = RTC_SDPA_DQ, ptrs[n++] = dq;
	uids[n] = RTC_SDPA_DK, ptrs[n++] = dk;
	uids[n] = RTC_SDPA_DV, ptrs[n++] = dv;
	uids[n] = RTC_SDPA_SOFTMAX_SUM, ptrs[n++] = ws + p->off_sum;
	uids[n] = RTC_SDPA_DQ_ACCUM, ptrs[n++] = ws + p->off_accum;
	if (p->g.s.bias)
		uids[n] = RTC_SDPA_BIAS, ptrs[n++] = (void *)mask;
	uids[n] = RTC_SDPA_ONE, ptrs[n++] = (void *)&p->g.one;
	n = scalars(p, uids, ptrs, n);
	return execute(m, p, uids, ptrs, n, ws, "rtc_attention_grad");
}
