/*
 * rtc_desc.c - the mapping of GEMM and convolution descriptors onto
 * cuBLASLt and cuDNN, kept apart from the plans because it needs no handle
 * and no device (the libraries' descriptor calls are host-only), so it is
 * unit-tested where there is no GPU.
 *
 * GEMM (struct rtc_gemm_geom): the dtypes cuBLASLt reads and writes, the
 * batch split into strided-batched calls, and which part of the epilogue
 * cuBLASLt does (its BIAS and RELU epilogues, its C matrix for beta * C
 * or the residual) and which rtc_epilogue does after it. The rules:
 *   - cuBLASLt's bias epilogue adds a vector along D's rows, which are
 *     Y's columns: RT_BIAS_ROW with beta 1, when the bias has D's type;
 *   - other biases with beta 1 (COL, SCALAR) go to rtc_epilogue, which
 *     takes the bias in its own dtype;
 *   - FULL, or any beta other than 0 and 1, uses C = the bias (broadcast
 *     to [m, n] in the workspace with rtc_copy unless FULL, converted first
 *     when D's type differs) scaled by beta, looping over the batch one
 *     position at a time (a batch stride of 0 for C is not relied on);
 *   - the residual is C (beta 1) when C is free and of D's type, else
 *     rtc_epilogue's;
 *   - RELU is cuBLASLt's when nothing is left for rtc_epilogue to add
 *     before it; every other activation is rtc_epilogue's.
 * Convolution (struct rtc_conv_geom): see rtc_desc.h and rtc_dnn.c.
 */
#include "rtc_desc.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Workspace sub-buffers start on this boundary. */
#define WS_ALIGN 256

static size_t ws_align(size_t x) { return (x + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && n)
		vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return RT_ERR_ARGUMENT;
}

const char *rtc_dtype_name(int dtype)
{
	switch (dtype) {
	case RT_F32: return "f32";
	case RT_F16: return "f16";
	case RT_BF16: return "bf16";
	case RT_F64: return "f64";
	case RT_I8: return "i8";
	case RT_U8: return "u8";
	case RT_I16: return "i16";
	case RT_U16: return "u16";
	case RT_I32: return "i32";
	case RT_U32: return "u32";
	case RT_I64: return "i64";
	case RT_U64: return "u64";
	case RT_BOOL: return "bool";
	default: return "an unknown dtype";
	}
}

int rtc_cuda_type(int dtype)
{
	switch (dtype) {
	case RT_F32: return CUDA_R_32F;
	case RT_F16: return CUDA_R_16F;
	case RT_BF16: return CUDA_R_16BF;
	case RT_F64: return CUDA_R_64F;
	default: return -1;
	}
}

static int is_half(int t) { return t == RT_F16 || t == RT_BF16; }

static int mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* ------------------------------------------------------------------------ */
/* GEMM                                                                     */
/* ------------------------------------------------------------------------ */

/* The descriptor is one cuBLASLt runs; *nbatch its batch positions. */
static int gemm_check(const struct rt_gemm_desc *d, int64_t *nbatch, char *why, size_t n)
{
	int dt = d->dtype, yt = d->ydtype ? d->ydtype : d->dtype;
	int64_t total;
	if (rtc_cuda_type(dt) < 0)
		return refuse(why, n,
		              "GEMM of %s: the CUDA target runs f32, f16, bf16 and f64 GEMMs "
		              "(cuBLASLt) only",
		              rtc_dtype_name(dt));
	if (rtc_cuda_type(yt) < 0)
		return refuse(why, n, "GEMM writing %s: results are f32, f16, bf16 or f64 only",
		              rtc_dtype_name(yt));
	if ((dt == RT_F64) != (yt == RT_F64))
		return refuse(why, n, "GEMM of %s writing %s: f64 GEMMs read and write f64 only",
		              rtc_dtype_name(dt), rtc_dtype_name(yt));
	if (d->m < 0 || d->n < 0 || d->k < 0 || d->batch_rank < 0 || d->batch_rank > 6 ||
	    d->bias < RT_BIAS_NONE || d->bias > RT_BIAS_FULL)
		return refuse(why, n, "GEMM: invalid descriptor");
	*nbatch = 1;
	for (int i = 0; i < d->batch_rank; i++)
		if (d->batch_dims[i] < 0 || !mul_ok(*nbatch, d->batch_dims[i], nbatch))
			return refuse(why, n, "GEMM: invalid batch dims");
	if (!mul_ok(*nbatch, d->m, &total) || !mul_ok(total, d->n, &total))
		return refuse(why, n, "GEMM: the result is too large");
	return RT_OK;
}

/*
 * Splits the batch: the longest run of innermost dims (size-1 dims
 * dropped) whose A and B offsets are one stride apart per position is
 * one strided-batched call; the dims outside it are looped over. With
 * one_by_one, every position is its own call.
 */
static void gemm_batch(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g, int one_by_one)
{
	int64_t dims[6], as[6], bs[6];
	int r = 0, from;
	for (int i = 0; i < d->batch_rank; i++) {
		if (d->batch_dims[i] == 1)
			continue;
		dims[r] = d->batch_dims[i];
		as[r] = g->zero_k ? 0 : d->a_strides[i];
		bs[r] = g->zero_k ? 0 : d->b_strides[i];
		r++;
	}
	g->inner = 1;
	g->sa = g->sb = 0;
	from = r;
	if (r > 0 && !one_by_one) {
		from = r - 1;
		g->inner = dims[from];
		g->sa = as[from];
		g->sb = bs[from];
		while (from > 0 && as[from - 1] == g->inner * g->sa &&
		       bs[from - 1] == g->inner * g->sb) {
			from--;
			g->inner *= dims[from];
		}
	}
	g->outer_rank = from;
	for (int i = 0; i < from; i++) {
		g->outer_dims[i] = dims[i];
		g->outer_a[i] = as[i];
		g->outer_b[i] = bs[i];
	}
	g->outer = g->nbatch / g->inner;
	g->rows = g->m;
	g->fold = 0;
}

/* B shared and the A matrices back to back: one tall GEMM. */
static void gemm_fold(struct rtc_gemm_geom *g)
{
	if (g->trans_a || g->zero_k || g->c_use == RTC_C_BIAS || g->nbatch < 2 ||
	    g->inner != g->nbatch || g->sb != 0 || g->sa != g->m * g->k)
		return;
	g->fold = 1;
	g->rows = g->m * g->nbatch;
	g->inner = g->outer = 1;
	g->sa = 0;
}

/* Who does which part of the epilogue when cuBLASLt writes dd (see above). */
static void gemm_split(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g, int dd)
{
	int use_bias = d->bias != RT_BIAS_NONE && d->beta != 0;
	g->dd = dd;
	g->lt_bias = g->lt_relu = g->c_convert = g->c_expand = 0;
	g->ep_bias = g->ep_residual = 0;
	g->c_use = RTC_C_NONE;
	g->beta = 0;
	if (use_bias) {
		if (d->bias == RT_BIAS_ROW && d->beta == 1 && dd == g->dt && dd != RT_F64) {
			g->lt_bias = 1;
		} else if (d->beta == 1 && d->bias != RT_BIAS_FULL) {
			g->ep_bias = 1;
		} else {
			g->c_use = RTC_C_BIAS;
			g->beta = d->beta;
			g->c_convert = g->dt != dd;
			g->c_expand = d->bias != RT_BIAS_FULL;
		}
	}
	if (d->ep.has_residual) {
		if (g->c_use == RTC_C_NONE && dd == g->dt) {
			g->c_use = RTC_C_RESIDUAL;
			g->beta = 1;
		} else {
			g->ep_residual = 1;
		}
	}
	g->ep = d->ep;
	g->ep.has_residual = g->ep_residual;
	if (d->ep.act == RT_ACT_RELU && !g->ep_bias && !g->ep_residual && dd != RT_F64) {
		g->lt_relu = 1;
		g->ep.act = RT_ACT_NONE;
	}
	g->ep_run = g->ep_bias || g->ep_residual || g->ep.act != RT_ACT_NONE;
}

/* rtc_epilogue's view of D, and the bias's size and broadcast. */
static void gemm_bias_shapes(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g)
{
	int64_t total = g->nbatch * g->m * g->n;
	g->ep_outer = total;
	g->ep_channels = g->ep_inner = 1;
	if (g->ep_bias && d->bias == RT_BIAS_COL) {
		g->ep_outer = g->nbatch;
		g->ep_channels = g->m;
		g->ep_inner = g->n;
	} else if (g->ep_bias && d->bias == RT_BIAS_ROW) {
		g->ep_outer = g->nbatch * g->m;
		g->ep_channels = g->n;
	}
	switch (d->bias) {
	case RT_BIAS_SCALAR: g->c_count = 1; break;
	case RT_BIAS_ROW: g->c_count = g->n; break;
	case RT_BIAS_COL: g->c_count = g->m; break;
	case RT_BIAS_FULL: g->c_count = g->m * g->n; break;
	default: g->c_count = 0; break;
	}
	memset(&g->c_copy, 0, sizeof g->c_copy);
	g->c_copy.esize = rt_dtype_size(g->dd);
	g->c_copy.rank = 2;
	g->c_copy.dims[0] = g->m;
	g->c_copy.dims[1] = g->n;
	g->c_copy.strides[0] = d->bias == RT_BIAS_COL ? 1 : 0;
	g->c_copy.strides[1] = d->bias == RT_BIAS_ROW ? 1 : 0;
	g->c_copy.dst_dense = 1;
}

static void gemm_workspace(struct rtc_gemm_geom *g)
{
	size_t at = 0, es = (size_t)rt_dtype_size(g->dt), ed = (size_t)rt_dtype_size(g->dd);
	if (g->zero_k) {
		g->ws_zero_a = at;
		at += ws_align((size_t)g->m * es);
		g->ws_zero_b = at;
		at += ws_align((size_t)g->n * es);
	}
	if (g->c_convert) {
		g->ws_c1 = at;
		at += ws_align((size_t)g->c_count * ed);
	}
	if (g->c_expand) {
		g->ws_c2 = at;
		at += ws_align((size_t)(g->m * g->n) * ed);
	}
	if (g->staged) {
		g->ws_d = at;
		at += ws_align((size_t)(g->nbatch * g->m * g->n) * ed);
	}
	g->ws_algo = at;
}

int rtc_gemm_geom(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g, char *why, size_t n)
{
	int64_t nbatch = 0;
	int status;
	memset(g, 0, sizeof *g);
	if ((status = gemm_check(d, &nbatch, why, n)))
		return status;
	g->dt = d->dtype;
	g->yt = d->ydtype ? d->ydtype : d->dtype;
	g->nbatch = nbatch;
	g->m = d->m;
	g->n = d->n;
	g->k = d->k;
	g->trans_a = d->trans_a;
	g->trans_b = d->trans_b;
	if (nbatch == 0 || d->m == 0 || d->n == 0) {
		g->noop = 1;
		return RT_OK;
	}
	if (d->k == 0) {
		/* an empty sum: zeros times zeros, and the epilogue as usual */
		g->zero_k = 1;
		g->k = 1;
		g->trans_a = g->trans_b = 0;
	}
	/* cuBLASLt writes yt where it can (half inputs may write FP32) */
	gemm_split(d, g, g->dt == g->yt ? g->dt : RT_F32);
	/* a half result rtc_epilogue works on is staged in FP32: one rounding */
	if (g->ep_run && is_half(g->yt))
		gemm_split(d, g, RT_F32);
	g->staged = g->dd != g->yt;
	g->alpha = g->zero_k ? 0 : d->alpha;
	gemm_batch(d, g, g->c_use == RTC_C_BIAS);
	gemm_fold(g);
	if (g->inner > INT_MAX)
		return refuse(why, n, "GEMM: %lld batch positions in one call is too many",
		              (long long)g->inner);
	gemm_bias_shapes(d, g);
	gemm_workspace(g);
	return RT_OK;
}

void rtc_gemm_offsets(const struct rtc_gemm_geom *g, int64_t o, int64_t *oa, int64_t *ob,
                      int64_t *oy)
{
	*oy = o * g->inner * g->m * g->n;
	*oa = *ob = 0;
	for (int i = g->outer_rank - 1; i >= 0; i--) {
		int64_t q = o % g->outer_dims[i];
		o /= g->outer_dims[i];
		*oa += q * g->outer_a[i];
		*ob += q * g->outer_b[i];
	}
}

/* A column-major layout, strided-batched when count > 1. */
static cublasStatus_t lt_layout(cublasLtMatrixLayout_t *l, int dtype, int64_t rows, int64_t cols,
                                int64_t ld, int64_t count, int64_t stride)
{
	int32_t c = (int32_t)count;
	cublasStatus_t s = cublasLtMatrixLayoutCreate(l, (cudaDataType_t)rtc_cuda_type(dtype),
	                                              (uint64_t)rows, (uint64_t)cols, ld);
	if (s != CUBLAS_STATUS_SUCCESS) {
		*l = NULL;
		return s;
	}
	if (count > 1) {
		s = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c,
		                                     sizeof c);
		if (s == CUBLAS_STATUS_SUCCESS)
			s = cublasLtMatrixLayoutSetAttribute(
			        *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
			        sizeof stride);
	}
	return s;
}

static cublasStatus_t lt_op(const struct rtc_gemm_geom *g, int pedantic, cublasLtMatmulDesc_t *op)
{
	cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
	cudaDataType_t scale = g->dt == RT_F64 ? CUDA_R_64F : CUDA_R_32F;
	cublasOperation_t ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtEpilogue_t ep = g->lt_bias && g->lt_relu ? CUBLASLT_EPILOGUE_RELU_BIAS
	                        : g->lt_bias             ? CUBLASLT_EPILOGUE_BIAS
	                        : g->lt_relu             ? CUBLASLT_EPILOGUE_RELU
	                                                 : CUBLASLT_EPILOGUE_DEFAULT;
	cublasStatus_t s;
	if (g->dt == RT_F64)
		ct = pedantic ? CUBLAS_COMPUTE_64F_PEDANTIC : CUBLAS_COMPUTE_64F;
	else if (g->dt == RT_F32 && pedantic)
		ct = CUBLAS_COMPUTE_32F_PEDANTIC;
	if ((s = cublasLtMatmulDescCreate(op, ct, scale)) != CUBLAS_STATUS_SUCCESS) {
		*op = NULL;
		return s;
	}
	if ((s = cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
	                                        sizeof ta)) ||
	    (s = cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
		return s;
	return cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep);
}

cublasStatus_t rtc_gemm_lt_build(const struct rtc_gemm_geom *g, int pedantic,
                                 struct rtc_gemm_lt *lt)
{
	cublasStatus_t s;
	memset(lt, 0, sizeof *lt);
	/* cuBLASLt's A: our B, [k, n] row-major (n x k column-major), or [n, k] */
	if ((s = lt_op(g, pedantic, &lt->op)) ||
	    (s = g->trans_b ? lt_layout(&lt->a, g->dt, g->k, g->n, g->k, g->inner, g->sb)
	                    : lt_layout(&lt->a, g->dt, g->n, g->k, g->n, g->inner, g->sb)) ||
	    /* cuBLASLt's B: our A, [rows, k] row-major, or [k, m] */
	    (s = g->trans_a ? lt_layout(&lt->b, g->dt, g->rows, g->k, g->rows, g->inner, g->sa)
	                    : lt_layout(&lt->b, g->dt, g->k, g->rows, g->k, g->inner, g->sa)) ||
	    /* D (and C, the same): Y^T, n x rows column-major, dense batches */
	    (s = lt_layout(&lt->d, g->dd, g->n, g->rows, g->n, g->inner, g->m * g->n)) ||
	    (s = lt_layout(&lt->c, g->dd, g->n, g->rows, g->n, g->inner, g->m * g->n))) {
		rtc_gemm_lt_destroy(lt);
		return s;
	}
	return CUBLAS_STATUS_SUCCESS;
}

void rtc_gemm_lt_destroy(struct rtc_gemm_lt *lt)
{
	if (lt->op)
		cublasLtMatmulDescDestroy(lt->op);
	if (lt->a)
		cublasLtMatrixLayoutDestroy(lt->a);
	if (lt->b)
		cublasLtMatrixLayoutDestroy(lt->b);
	if (lt->c)
		cublasLtMatrixLayoutDestroy(lt->c);
	if (lt->d)
		cublasLtMatrixLayoutDestroy(lt->d);
	memset(lt, 0, sizeof *lt);
}

/* ------------------------------------------------------------------------ */
/* Convolution                                                              */
/* ------------------------------------------------------------------------ */

static int conv_check(const struct rt_conv_desc *d, int transposed, char *why, size_t n)
{
	int dt = d->dtype, yt = d->ydtype ? d->ydtype : d->dtype;
	const char *op = transposed ? "ConvTranspose" : "Conv";
	if (dt != RT_F32 && !is_half(dt))
		return refuse(why, n,
		              "%s of %s: the CUDA target runs f32, f16 and bf16 "
		              "convolutions (cuDNN) only",
		              op, rtc_dtype_name(dt));
	if (yt != RT_F32 && !is_half(yt))
		return refuse(why, n, "%s writing %s: results are f32, f16 or bf16 only", op,
		              rtc_dtype_name(yt));
	if (is_half(dt) && is_half(yt) && dt != yt)
		return refuse(why, n, "%s of %s writing %s: one half type to the other is not run",
		              op, rtc_dtype_name(dt), rtc_dtype_name(yt));
	if (d->nsp < 1 || d->nsp > 3)
		return refuse(why, n, "%s with %d spatial dims: 1 to 3 only", op, d->nsp);
	if (d->n < 0 || d->c < 0 || d->m < 0 || d->group < 1 || d->c % d->group || d->m % d->group)
		return refuse(why, n, "%s: invalid batch, channels or groups", op);
	for (int i = 0; i < d->nsp; i++)
		if (d->in[i] < 0 || d->k[i] < 0 || d->out[i] < 0 || d->stride[i] < 1 ||
		    d->dil[i] < 1 || d->pad_begin[i] < 0 || d->pad_end[i] < 0)
			return refuse(why, n, "%s: invalid spatial geometry", op);
	if (transposed && d->ep.has_residual)
		return refuse(why, n, "ConvTranspose has no residual operand");
	return RT_OK;
}

/* Elements of a dims[rank] tensor, or -1 when cuDNN's int indexing cannot hold it. */
static int64_t int_elems(const int *dims, int rank)
{
	int64_t e = 1;
	for (int i = 0; i < rank; i++)
		if (!mul_ok(e, dims[i], &e) || e > INT_MAX)
			return -1;
	return e;
}

/* One spatial dim of the geometry; lead dims (a 1-D convolution's) are 1. */
struct conv_dim {
	int64_t in, k, out, st, dil, pb, pe;
};

static struct conv_dim conv_dim_at(const struct rt_conv_desc *d, int j)
{
	if (j < 0)
		return (struct conv_dim){ 1, 1, 1, 1, 1, 0, 0 };
	return (struct conv_dim){ d->in[j],  d->k[j],         d->out[j],    d->stride[j],
		                  d->dil[j], d->pad_begin[j], d->pad_end[j] };
}

/* An rt_pad_desc over [n, ch, sp...] (nsp of them) with spatial pads b, e. */
static void pad_desc(struct rt_pad_desc *p, int esize, int nsp, int64_t n, int64_t ch,
                     const int64_t *sp, const int64_t *b, const int64_t *e)
{
	memset(p, 0, sizeof *p);
	p->esize = esize;
	p->mode = RT_PAD_CONSTANT;
	p->rank = 2 + nsp;
	p->in_dims[0] = n;
	p->in_dims[1] = ch;
	for (int j = 0; j < nsp; j++) {
		p->in_dims[2 + j] = sp[j];
		p->pads[2 + j] = b[j];
		p->pads[p->rank + 2 + j] = e[j];
	}
}

/* The spatial dims, pads and the explicit pad or crop around cuDNN. */
static int conv_dims(const struct rt_conv_desc *d, struct rtc_conv_geom *g, char *why, size_t n)
{
	int lead = g->nd - d->nsp;
	int64_t sp[3], b[3], e[3];
	for (int i = 0; i < g->nd; i++) {
		struct conv_dim c = conv_dim_at(d, i - lead);
		int64_t p = c.pb < c.pe ? c.pb : c.pe, x = c.in, y = c.out;
		if (g->transposed) {
			/* the whole result cuDNN computes with the symmetric pad */
			y = c.st * (c.in - 1) + c.dil * (c.k - 1) + 1 - 2 * p;
			if (y < 1)
				return refuse(why, n, "ConvTranspose: pads larger than the result");
			g->crop |= c.pb != p || y != c.out;
		} else {
			x = c.in + (c.pb - p) + (c.pe - p);
			g->prepad |= c.pb != p || c.pe != p;
		}
		if (x > INT_MAX || y > INT_MAX || c.k > INT_MAX || c.st > INT_MAX ||
		    c.dil > INT_MAX || p > INT_MAX)
			return refuse(why, n, "convolution too large for cuDNN");
		g->xdims[2 + i] = (int)x;
		g->ydims[2 + i] = (int)y;
		g->wdims[2 + i] = (int)c.k;
		g->pad[i] = (int)p;
		g->stride[i] = (int)c.st;
		g->dil[i] = (int)c.dil;
		if (i >= lead) {
			int j = i - lead;
			sp[j] = g->transposed ? y : c.in;
			b[j] = g->transposed ? -(c.pb - p) : c.pb - p;
			e[j] = g->transposed ? c.out - y + (c.pb - p) : c.pe - p;
		}
	}
	if (g->transposed)
		pad_desc(&g->crop_y, rt_dtype_size(g->dt), d->nsp, d->n, d->m, sp, b, e);
	else
		pad_desc(&g->pad_x, rt_dtype_size(g->dt), d->nsp, d->n, d->c, sp, b, e);
	return RT_OK;
}

static void conv_workspace(struct rtc_conv_geom *g)
{
	size_t at = 0, es = (size_t)rt_dtype_size(g->dt);
	int nb = g->nd + 2;
	if (g->prepad) {
		g->ws_x = at;
		at += ws_align((size_t)int_elems(g->xdims, nb) * es);
	}
	if (g->crop) {
		g->ws_full = at;
		at += ws_align((size_t)int_elems(g->ydims, nb) * es);
	}
	if (g->staged) {
		g->ws_stage = at;
		at += ws_align((size_t)(g->n * g->m * g->out_sp) * es);
	}
	g->ws_algo = at;
}

int rtc_conv_geom(const struct rt_conv_desc *d, int transposed, struct rtc_conv_geom *g, char *why,
                  size_t n)
{
	int status, nb;
	memset(g, 0, sizeof *g);
	if ((status = conv_check(d, transposed, why, n)))
		return status;
	g->transposed = transposed;
	g->dt = d->dtype;
	g->yt = d->ydtype ? d->ydtype : d->dtype;
	g->staged = g->yt != g->dt;
	g->ep = d->ep;
	g->n = d->n;
	g->m = d->m;
	g->out_sp = 1;
	for (int i = 0; i < d->nsp; i++)
		g->out_sp *= d->out[i];
	if (d->n == 0 || d->m == 0 || g->out_sp == 0) {
		g->noop = 1;
		return RT_OK;
	}
	for (int i = 0; i < d->nsp; i++)
		if (d->in[i] == 0 || d->k[i] == 0)
			return refuse(why, n, "convolution over an empty input or kernel");
	if (d->c == 0)
		return refuse(why, n, "convolution without input channels");
	g->nd = d->nsp == 3 ? 3 : 2;
	g->group = (int)d->group;
	if (d->n > INT_MAX || d->c > INT_MAX || d->m > INT_MAX)
		return refuse(why, n, "convolution too large for cuDNN");
	g->xdims[0] = g->ydims[0] = (int)d->n;
	g->xdims[1] = (int)d->c;
	g->ydims[1] = (int)d->m;
	g->wdims[0] = (int)(transposed ? d->c : d->m);
	g->wdims[1] = (int)(transposed ? d->m / d->group : d->c / d->group);
	if ((status = conv_dims(d, g, why, n)))
		return status;
	nb = g->nd + 2;
	if (int_elems(g->xdims, nb) < 0 || int_elems(g->ydims, nb) < 0 ||
	    int_elems(g->wdims, nb) < 0)
		return refuse(why, n, "convolution too large for cuDNN (2^31 elements)");
	conv_workspace(g);
	return RT_OK;
}

static cudnnDataType_t dnn_type(int dtype)
{
	return dtype == RT_F16    ? CUDNN_DATA_HALF
	       : dtype == RT_BF16 ? CUDNN_DATA_BFLOAT16
	                          : CUDNN_DATA_FLOAT;
}

/* A fully packed NCHW tensor descriptor. */
static cudnnStatus_t dnn_tensor(cudnnTensorDescriptor_t *t, cudnnDataType_t type, int nb,
                                const int *dims)
{
	int strides[5];
	cudnnStatus_t s = cudnnCreateTensorDescriptor(t);
	if (s != CUDNN_STATUS_SUCCESS) {
		*t = NULL;
		return s;
	}
	strides[nb - 1] = 1;
	for (int i = nb - 2; i >= 0; i--)
		strides[i] = strides[i + 1] * dims[i + 1];
	return cudnnSetTensorNdDescriptor(*t, type, nb, dims, strides);
}

static void dims_text(char *buf, size_t n, const int *dims, int nb)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < nb && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%d", i ? "x" : "", dims[i]);
}

/* cuDNN's output of the forward convolution against what it must be. */
static int dnn_check_dims(const struct rtc_conv_geom *g, const struct rtc_conv_dnn *dnn, char *why,
                          size_t n)
{
	int nb = g->nd + 2, out[5];
	const int *want = g->transposed ? g->xdims : g->ydims;
	char a[96], b[96];
	cudnnStatus_t s = cudnnGetConvolutionNdForwardOutputDim(
	        dnn->conv, g->transposed ? dnn->y : dnn->x, dnn->w, nb, out);
	if (s != CUDNN_STATUS_SUCCESS) {
		snprintf(why, n, "cudnnGetConvolutionNdForwardOutputDim: %s",
		         cudnnGetErrorString(s));
		return RT_ERR_DEVICE;
	}
	if (memcmp(out, want, sizeof(int) * (size_t)nb) == 0)
		return RT_OK;
	dims_text(a, sizeof a, want, nb);
	dims_text(b, sizeof b, out, nb);
	return refuse(why, n, "%s: the descriptor's %s is %s but cuDNN's is %s",
	              g->transposed ? "ConvTranspose" : "Conv",
	              g->transposed ? "input (cuDNN's dy)" : "output", a, b);
}

int rtc_conv_dnn_build(const struct rtc_conv_geom *g, struct rtc_conv_dnn *dnn, char *why, size_t n)
{
	cudnnDataType_t t = dnn_type(g->dt);
	int nb = g->nd + 2, bias[5] = { 1, g->ydims[1], 1, 1, 1 }, status;
	cudnnStatus_t s;
	const char *what = "";
	memset(dnn, 0, sizeof *dnn);
#define TRY(call)                                           \
	do {                                                \
		if ((s = (call)) != CUDNN_STATUS_SUCCESS) { \
			what = #call;                       \
			goto fail;                          \
		}                                           \
	} while (0)
	TRY(dnn_tensor(&dnn->x, t, nb, g->xdims));
	TRY(dnn_tensor(&dnn->y, t, nb, g->ydims));
	TRY(dnn_tensor(&dnn->bias, t, nb, bias));
	TRY(cudnnCreateFilterDescriptor(&dnn->w));
	TRY(cudnnSetFilterNdDescriptor(dnn->w, t, CUDNN_TENSOR_NCHW, nb, g->wdims));
	TRY(cudnnCreateConvolutionDescriptor(&dnn->conv));
	/* FP32 accumulation for every dtype (PSEUDO_HALF / PSEUDO_BFLOAT16) */
	TRY(cudnnSetConvolutionNdDescriptor(dnn->conv, g->nd, g->pad, g->stride, g->dil,
	                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	TRY(cudnnSetConvolutionGroupCount(dnn->conv, g->group));
	/* FP32 never on TF32 Tensor Cores: FMA math only */
	TRY(cudnnSetConvolutionMathType(dnn->conv,
	                                g->dt == RT_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
	if (g->dt == RT_F32 && !g->staged && !g->transposed &&
	    (g->ep.act == RT_ACT_RELU || g->ep.act == RT_ACT_NONE)) {
		TRY(cudnnCreateActivationDescriptor(&dnn->act));
		TRY(cudnnSetActivationDescriptor(dnn->act,
		                                 g->ep.act == RT_ACT_RELU
		                                         ? CUDNN_ACTIVATION_RELU
		                                         : CUDNN_ACTIVATION_IDENTITY,
		                                 CUDNN_PROPAGATE_NAN, 0.0));
	}
#undef TRY
	if ((status = dnn_check_dims(g, dnn, why, n))) {
		rtc_conv_dnn_destroy(dnn);
		return status;
	}
	return RT_OK;
fail:
	snprintf(why, n, "%s: %s", what, cudnnGetErrorString(s));
	rtc_conv_dnn_destroy(dnn);
	return RT_ERR_DEVICE;
}

void rtc_conv_dnn_destroy(struct rtc_conv_dnn *dnn)
{
	if (dnn->x)
		cudnnDestroyTensorDescriptor(dnn->x);
	if (dnn->y)
		cudnnDestroyTensorDescriptor(dnn->y);
	if (dnn->bias)
		cudnnDestroyTensorDescriptor(dnn->bias);
	if (dnn->w)
		cudnnDestroyFilterDescriptor(dnn->w);
	if (dnn->conv)
		cudnnDestroyConvolutionDescriptor(dnn->conv);
	if (dnn->act)
		cudnnDestroyActivationDescriptor(dnn->act);
	memset(dnn, 0, sizeof *dnn);
}
