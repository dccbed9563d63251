/*
 * test_rtc_sdpa.c - cuDNN's fused attention graph (runtime/cuda/rtc_sdpa.c)
 * on a machine without a GPU (CI has none).
 *
 *   - rtc_sdpa_refusal: which descriptors take cuDNN and which fall back to
 *     the kernels, with the reason; rtc_sdpa_shape's bias broadcast and
 *     causal offset;
 *   - rtc_sdpa_build for forward and backward, FP16 and BF16, causal (with
 *     and without an offset) or not, bias or not, GQA or not, head sizes 64
 *     and 128: every descriptor is finalized without a handle or a device,
 *     and read back with cudnnBackendGetAttribute: each non-virtual
 *     tensor's dims, strides, dtype, uid and flags against dims computed
 *     here; each operation's kind, pointwise mode, math precision and
 *     GEN_INDEX axis, reduction operator, and its inputs and outputs by
 *     unique id against an expected op list (cuDNN-frontend's composite
 *     SDPA graphs), so the dataflow is checked edge by edge; the operation
 *     graph finalizes and cuDNN counts engines for it;
 *   - cuDNN's heuristics (mode A) for the graphs on a described H200
 *     (sm_90) and A100 (sm_80) - device properties given as JSON, cuDNN 9.8's
 *     deviceless compilation - must offer at least one engine
 *     configuration for every graph the runtime would send there (and none
 *     for a backward with head size 256 on the A100, the control that shows
 *     the check can fail), and for a few the first configuration's
 *     execution plan is compiled (NVRTC): it may fail only when loading the
 *     compiled kernel, for want of a driver. cuDNN loads libcuda for this;
 *     where no driver is installed the toolkit's stub stands in (it is
 *     only loaded, never asked to run anything). Without either, this
 *     part is skipped with a note.
 */
#include "rtc_sdpa.h"
#include "test.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef ONNXC_CUDA_STUB_LIBCUDA
#define ONNXC_CUDA_STUB_LIBCUDA ""
#endif

/* cuDNN's engine code keeps allocations LeakSanitizer reports (in libraries
 * it loads and unloads): the sanitizer build ignores what is allocated
 * while cuDNN looks at engines, and checks the rest */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define CUDNN_ENGINES_BEGIN() __lsan_disable()
#define CUDNN_ENGINES_END()   __lsan_enable()
#else
#define CUDNN_ENGINES_BEGIN() ((void)0)
#define CUDNN_ENGINES_END()   ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* Descriptors                                                              */
/* ------------------------------------------------------------------------ */

struct tcase {
	const char *name;
	int dtype;
	int64_t b, hq, hkv, lq, lk, d;
	int causal;
	int64_t offset;
	int bias;       /* an additive mask */
	unsigned bcast; /* bit a: the bias broadcasts along dim a of [b, h, lq, lk] */
	int64_t dv;     /* the value head size (0: d, the key head size) */
	int mdtype;     /* the bias's dtype (0: dtype) */
};

static int64_t dv_of(const struct tcase *c) { return c->dv ? c->dv : c->d; }

static struct rt_attention_desc desc_of(const struct tcase *c)
{
	struct rt_attention_desc d;
	const int64_t dims[4] = { c->b, c->hq, c->lq, c->lk };
	int64_t at = 1;
	memset(&d, 0, sizeof d);
	d.dtype = c->dtype;
	d.batch = c->b;
	d.q_heads = c->hq;
	d.kv_heads = c->hkv;
	d.lq = c->lq;
	d.lk = c->lk;
	d.dk = c->d;
	d.dv = dv_of(c);
	d.scale = 1.0f / sqrtf((float)c->d);
	d.causal = c->causal;
	d.causal_offset = c->offset;
	if (c->bias) {
		d.mask = RT_ATTN_BIAS;
		d.mdtype = c->mdtype;
		for (int a = 3; a >= 0; a--) {
			d.mask_strides[a] = c->bcast >> a & 1 ? 0 : at;
			at *= c->bcast >> a & 1 ? 1 : dims[a];
		}
	}
	return d;
}

static struct rt_attention_desc plain(void)
{
	static const struct tcase c = { "plain", RT_F16, 2, 8, 8, 128, 128, 64, 0, 0, 0, 0 };
	return desc_of(&c);
}

static void test_refusal(void)
{
	struct rt_attention_desc d = plain();
	const char *why;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);
	CHECK(rtc_sdpa_refusal(&d, 0, 80, 91002) == NULL);
	CHECK(rtc_sdpa_refusal(&d, 1, 86, 91600) == NULL);
	d.dtype = RT_BF16;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	d.ydtype = RT_BF16;
	d.mdtype = RT_BF16;
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);

#define REFUSED(fwd_bwd, sm, ver, text)                       \
	do {                                                  \
		why = rtc_sdpa_refusal(&d, fwd_bwd, sm, ver); \
		CHECK_STR(why, text);                         \
	} while (0)
	d = plain();
	d.dtype = RT_F32;
	REFUSED(0, 90, 91900, "not FP16 or BF16");
	d.dtype = RT_F64;
	REFUSED(1, 90, 91900, "not FP16 or BF16");
	d = plain();
	d.ydtype = RT_F32; /* a half step writing FP32 */
	REFUSED(0, 90, 91900, "result's dtype");
	d = plain();
	d.mask = RT_ATTN_BOOL;
	d.mask_strides[3] = 1;
	REFUSED(0, 90, 91900, "boolean mask");
	d.mask = RT_ATTN_BIAS;
	d.mdtype = RT_F32; /* mixed precision keeps the bias FP32: taken */
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);
	d.mdtype = RT_BF16; /* BF16 beside FP16 inputs: not */
	REFUSED(0, 90, 91900, "bias's dtype");
	d.mdtype = RT_F16;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	d.mask_strides[3] = 0; /* broadcast along the keys */
	REFUSED(0, 90, 91900, "not contiguous along the keys");
	d.mask_strides[3] = 2;
	d.mask_strides[2] = 1; /* transposed */
	REFUSED(1, 90, 91900, "not contiguous along the keys");
	d = plain();
	d.softcap = 30;
	REFUSED(0, 90, 91900, "softcap");
	d = plain();
	d.lq = 0;
	REFUSED(0, 90, 91900, "no queries");
	d = plain();
	d.batch = 0;
	REFUSED(1, 90, 91900, "no queries");
	d = plain();
	d.lk = 0;
	REFUSED(0, 90, 91900, "no keys");
	d = plain();
	d.kv_heads = 3;
	REFUSED(0, 90, 91900, "not a multiple of its kv heads");
	d = plain();
	d.dk = d.dv = 60;
	REFUSED(0, 90, 91900, "multiple of 8");
	d.dk = d.dv = 64;
	d.dv = 36;
	REFUSED(1, 90, 91900, "multiple of 8");
	/* dk != dv: cuDNN's graph takes it (each a multiple of 8) */
	d.dv = 32;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	/* head sizes: 256 forward; backward 256 on sm_90, 128 elsewhere */
	d = plain();
	d.dk = d.dv = 256;
	CHECK(rtc_sdpa_refusal(&d, 0, 80, 91900) == NULL);
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);
	REFUSED(1, 80, 91900, "above 128");
	REFUSED(1, 100, 91900, "above 128");
	d.dk = d.dv = 264;
	REFUSED(0, 90, 91900, "above 256");
	REFUSED(1, 90, 91900, "above 128 (256 on sm_90)");
	d.dk = d.dv = 136;
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);
	REFUSED(1, 89, 91900, "above 128");
	/* causal: an offset below 0 leaves row 0 without keys */
	d = plain();
	d.causal = 1;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	d.causal_offset = 5;
	CHECK(rtc_sdpa_refusal(&d, 1, 90, 91900) == NULL);
	d.causal_offset = -1;
	REFUSED(0, 90, 91900, "see no key");
	REFUSED(1, 90, 91900, "causal_offset < 0");
	d.causal = 0; /* the offset means nothing without the flag */
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	d = plain();
	d.lq = d.lk = 1;
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91900) == NULL);
	REFUSED(1, 90, 91900, "lq = lk = 1");
	d = plain();
	d.lk = (int64_t)INT32_MAX + 1;
	REFUSED(0, 90, 91900, "2^31");
	d = plain();
	REFUSED(0, 75, 91900, "below sm_80");
	REFUSED(0, 0, 91900, "below sm_80");
	REFUSED(0, 90, 91001, "older than 9.10.2");
	REFUSED(1, 90, 91500, "older than 9.16");
	CHECK(rtc_sdpa_refusal(&d, 0, 90, 91500) == NULL);
#undef REFUSED
}

static void test_shape(void)
{
	static const struct tcase c = { "bias", RT_BF16, 3, 4, 2, 10, 20, 64, 1, 3, 1, 0 };
	struct rt_attention_desc d = desc_of(&c);
	struct rtc_sdpa_shape s;
	rtc_sdpa_shape(&d, 1, &s);
	CHECK_EQ(s.backward, 1);
	CHECK_EQ(s.dtype, RT_BF16);
	CHECK_EQ(s.b, 3);
	CHECK_EQ(s.hq, 4);
	CHECK_EQ(s.hkv, 2);
	CHECK_EQ(s.lq, 10);
	CHECK_EQ(s.lk, 20);
	CHECK(s.bias);
	CHECK_EQ(s.bias_dims[0], 3);
	CHECK_EQ(s.bias_dims[1], 4);
	CHECK_EQ(s.bias_dims[2], 10);
	CHECK_EQ(s.bias_dims[3], 20);
	CHECK_EQ(s.bias_strides[0], 800);
	CHECK_EQ(s.bias_strides[1], 200);
	CHECK_EQ(s.bias_strides[2], 20);
	CHECK_EQ(s.bias_strides[3], 1);
	CHECK(s.causal);
	CHECK_EQ(s.shift, 3);
	CHECK(fabsf(s.scale - 0.125f) < 1e-7f);
	/* a bias [b, 1, 1, lk] (a key padding mask): broadcast dims become
	 * extent 1 with a packed stride (cuDNN broadcasts extents of 1) */
	d.mask_strides[0] = 20;
	d.mask_strides[1] = 0;
	d.mask_strides[2] = 0;
	d.mask_strides[3] = 1;
	rtc_sdpa_shape(&d, 0, &s);
	CHECK_EQ(s.bias_dims[0], 3);
	CHECK_EQ(s.bias_dims[1], 1);
	CHECK_EQ(s.bias_dims[2], 1);
	CHECK_EQ(s.bias_dims[3], 20);
	CHECK_EQ(s.bias_strides[0], 20);
	CHECK_EQ(s.bias_strides[1], 20);
	CHECK_EQ(s.bias_strides[2], 20);
	CHECK_EQ(s.bias_strides[3], 1);
	/* a causal offset that reaches the last key hides nothing: no mask */
	d.causal_offset = 19;
	rtc_sdpa_shape(&d, 0, &s);
	CHECK(!s.causal);
	CHECK_EQ(s.shift, 0);
	d.causal_offset = 18;
	rtc_sdpa_shape(&d, 0, &s);
	CHECK(s.causal);
	CHECK_EQ(s.shift, 18);
	d.causal_offset = 0;
	rtc_sdpa_shape(&d, 0, &s);
	CHECK(s.causal);
	CHECK_EQ(s.shift, 0);
}

/* ------------------------------------------------------------------------ */
/* Reading descriptors back                                                 */
/* ------------------------------------------------------------------------ */

static cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type)
{
	cudnnBackendDescriptor_t d = NULL;
	CHECK_EQ(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
	return d;
}

static int64_t get_i64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a)
{
	int64_t v = -12345, n = 0;
	CHECK_EQ(cudnnBackendGetAttribute(d, a, CUDNN_TYPE_INT64, 1, &n, &v), CUDNN_STATUS_SUCCESS);
	return v;
}

static int get_dtype(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a)
{
	cudnnDataType_t v = (cudnnDataType_t)-1;
	int64_t n = 0;
	CHECK_EQ(cudnnBackendGetAttribute(d, a, CUDNN_TYPE_DATA_TYPE, 1, &n, &v),
	         CUDNN_STATUS_SUCCESS);
	return (int)v;
}

static bool get_bool(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a)
{
	bool v = false;
	int64_t n = 0;
	CHECK_EQ(cudnnBackendGetAttribute(d, a, CUDNN_TYPE_BOOLEAN, 1, &n, &v),
	         CUDNN_STATUS_SUCCESS);
	return v;
}

/* What a tensor descriptor says about itself. */
struct tinfo {
	int64_t uid, dims[4], strides[4], ndims;
	int dtype;
	bool virt, by_value;
};

static struct tinfo read_tensor(cudnnBackendDescriptor_t t)
{
	struct tinfo r;
	int64_t n = 0;
	memset(&r, 0, sizeof r);
	r.uid = get_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID);
	r.dtype = get_dtype(t, CUDNN_ATTR_TENSOR_DATA_TYPE);
	CHECK_EQ(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
	                                  &r.ndims, r.dims),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, &n,
	                                  r.strides),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(n, r.ndims);
	r.virt = get_bool(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
	r.by_value = get_bool(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
	return r;
}

/* The uid of the tensor an operation names under attribute a; 0 when it
 * names none. */
static int64_t op_tensor(cudnnBackendDescriptor_t op, cudnnBackendAttributeName_t a,
                         struct tinfo *info)
{
	cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
	int64_t n = 0, uid = 0;
	if (cudnnBackendGetAttribute(op, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &t) ==
	            CUDNN_STATUS_SUCCESS &&
	    n == 1) {
		struct tinfo r = read_tensor(t);
		uid = r.uid;
		if (info)
			*info = r;
	}
	cudnnBackendDestroyDescriptor(t);
	return uid;
}

static void dense4(const int64_t dims[4], int64_t strides[4])
{
	strides[3] = 1;
	for (int a = 2; a >= 0; a--)
		strides[a] = strides[a + 1] * dims[a + 1];
}

/* A tensor of the graph (by uid) against what it must be. */
static void check_tensor(const struct rtc_sdpa_graph *g, const char *what, int64_t uid, int dtype,
                         const int64_t dims[4], const int64_t *strides, bool by_value)
{
	cudnnBackendDescriptor_t t = rtc_sdpa_tensor(g, uid);
	int64_t st[4];
	struct tinfo r;
	if (!t) {
		fprintf(stderr, "%s: %s (uid %lld) missing\n", test_current, what, (long long)uid);
		CHECK(t != NULL);
		return;
	}
	if (!strides) {
		dense4(dims, st);
		strides = st;
	}
	r = read_tensor(t);
	CHECK_EQ(r.uid, uid);
	CHECK_EQ(r.dtype, dtype);
	CHECK_EQ(r.ndims, 4);
	CHECK(!r.virt);
	CHECK_EQ(r.by_value, by_value);
	for (int a = 0; a < 4; a++)
		if (r.dims[a] != dims[a] || r.strides[a] != strides[a]) {
			fprintf(stderr,
			        "%s: %s axis %d: dims %lld stride %lld, want dims %lld stride "
			        "%lld\n",
			        test_current, what, a, (long long)r.dims[a],
			        (long long)r.strides[a], (long long)dims[a], (long long)strides[a]);
			CHECK(r.dims[a] == dims[a] && r.strides[a] == strides[a]);
		}
}

/* ------------------------------------------------------------------------ */
/* cuDNN's own account of the pointwise operations                          */
/* ------------------------------------------------------------------------ */

/*
 * cuDNN 9.19 implements no cudnnBackendGetAttribute for pointwise
 * descriptors and operations (CUDNN_STATUS_NOT_SUPPORTED), so their mode,
 * precision, axis and tensors are read from cuDNN's API log instead,
 * through cudnnSetCallback: cudnnBackendFinalize logs the operation it
 * finalizes with everything it holds (the pointwise descriptor's mode and
 * precision, and each tensor's uid, dtype, dims, strides, virtual flag);
 * the GEN_INDEX axis is in the log of the cudnnBackendSetAttribute call
 * that set it. A message is lines separated by NULs, ended by two.
 */
struct pw_log {
	int mode, prec;
	int64_t axis;    /* -1: none set */
	int64_t x, b, t; /* uids; -2: not in the log (cuDNN omits B for BINARY_SELECT) */
	struct tinfo y;
};

static struct {
	struct pw_log op[4 * RTC_SDPA_MAX_OPS];
	int n;
	int64_t pending_axis;
	char text[16384];
} pwlog;

/* The number in parentheses after key (enum values: "val=NAME (N)"). */
static long long paren_after(const char *s, const char *key, const char *end)
{
	const char *p = strstr(s, key);
	if (!p || (end && p > end) || !(p = strchr(p, '(')))
		return -1;
	return strtoll(p + 1, NULL, 10);
}

static long long int_after(const char *s, const char *key, const char *end)
{
	const char *p = strstr(s, key);
	if (!p || (end && p > end))
		return -2;
	return strtoll(p + strlen(key), NULL, 10);
}

/* "[a,b,c,d]" after key into v; the count. */
static int64_t list_after(const char *s, const char *key, const char *end, int64_t v[4])
{
	const char *p = strstr(s, key);
	int64_t n = 0;
	if (!p || (end && p > end) || !(p = strchr(p, '[')))
		return -1;
	while (*++p && *p != ']' && n < 4) {
		char *e;
		v[n++] = strtoll(p, &e, 10);
		p = e;
		if (*p == ']')
			break;
	}
	return n;
}

/* One tensor's section of a logged operation ("xDesc:" ...); its uid, or -2
 * when the log has no such section. */
static int64_t log_tensor(const char *msg, const char *name, struct tinfo *info)
{
	const char *p = strstr(msg, name), *end;
	if (!p)
		return -2;
	p += strlen(name);
	end = strstr(p, "Desc:");
	if (!end)
		end = strstr(p, "alpha1");
	if (info) {
		memset(info, 0, sizeof *info);
		info->dtype = (int)paren_after(p, "type: type=cudnnDataType_t", end);
		info->ndims = list_after(p, "dimA:", end, info->dims);
		list_after(p, "strideA:", end, info->strides);
		info->virt = strstr(p, "isVirtual: type=bool; val=true") &&
		             strstr(p, "isVirtual: type=bool; val=true") < end;
		info->uid = int_after(p, "uid: type=int64_t; val=", end);
	}
	return int_after(p, "uid: type=int64_t; val=", end);
}

static void on_log(cudnnSeverity_t sev, void *udata, const cudnnDebug_t *dbg, const char *msg)
{
	size_t at = 0;
	(void)sev;
	(void)udata;
	(void)dbg;
	/* the lines, joined */
	for (const char *p = msg; *p && at + 2 < sizeof pwlog.text; p += strlen(p) + 1) {
		size_t n = strlen(p);
		if (at + n + 2 >= sizeof pwlog.text)
			break;
		memcpy(pwlog.text + at, p, n);
		at += n;
		pwlog.text[at++] = '\n';
	}
	pwlog.text[at] = 0;
	if (strstr(pwlog.text, "function cudnnBackendSetAttribute() called") &&
	    strstr(pwlog.text, "val=CUDNN_ATTR_POINTWISE_AXIS"))
		pwlog.pending_axis = int_after(pwlog.text, "[0]: type=int64_t; val=", NULL);
	else if (strstr(pwlog.text, "function cudnnBackendFinalize() called") &&
	         strstr(pwlog.text,
	                "descriptor: type=CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR") &&
	         pwlog.n < (int)(sizeof pwlog.op / sizeof pwlog.op[0])) {
		struct pw_log *o = &pwlog.op[pwlog.n++];
		o->mode = (int)paren_after(pwlog.text, "mode: type=cudnnPointwiseMode_t", NULL);
		o->prec = (int)paren_after(pwlog.text, "mathPrec: type=cudnnDataType_t", NULL);
		o->axis = pwlog.pending_axis;
		pwlog.pending_axis = -1;
		o->x = log_tensor(pwlog.text, "        xDesc:", NULL);
		o->b = log_tensor(pwlog.text, "        bDesc:", NULL);
		o->t = log_tensor(pwlog.text, "        tDesc:", NULL);
		log_tensor(pwlog.text, "        yDesc:", &o->y);
	}
}

static void log_begin(void)
{
	memset(&pwlog, 0, sizeof pwlog);
	pwlog.pending_axis = -1;
	CHECK_EQ(cudnnSetCallback(CUDNN_SEV_INFO_EN, NULL, on_log), CUDNN_STATUS_SUCCESS);
}

/* (a NULL callback would bring back cuDNN's own, which prints errors) */
static void log_end(void) { cudnnSetCallback(0, NULL, on_log); }

/* ------------------------------------------------------------------------ */
/* The expected operations                                                  */
/* ------------------------------------------------------------------------ */

enum { PW = 1, MM, RED, RESHAPE };

/* One operation: its kind, pointwise mode (or reduction operator), math
 * precision (pointwise), GEN_INDEX axis, and its tensors by name: the
 * graph's real tensors by their uid names, virtual ones bound to the uid
 * of the operation that writes them, so every read must be of an earlier
 * write. ydt: the output's dtype; ydims/ystrides: its shape when given. */
struct op_spec {
	int kind, mode, prec, axis;
	const char *x, *b, *t, *y;
	int ydt;
	int64_t ydims[4], ystrides[4];
	bool shaped;
};

struct spec {
	struct op_spec op[RTC_SDPA_MAX_OPS];
	int n;
};

static struct op_spec *add(struct spec *s, int kind, int mode, int prec, int axis, const char *x,
                           const char *b, const char *t, const char *y, int ydt)
{
	struct op_spec *o = &s->op[s->n++];
	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->mode = mode;
	o->prec = prec;
	o->axis = axis;
	o->x = x;
	o->b = b;
	o->t = t;
	o->y = y;
	o->ydt = ydt;
	return o;
}

static void shape(struct op_spec *o, int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                  const int64_t *strides)
{
	const int64_t dims[4] = { d0, d1, d2, d3 };
	memcpy(o->ydims, dims, sizeof dims);
	if (strides)
		memcpy(o->ystrides, strides, sizeof o->ystrides);
	else
		dense4(dims, o->ystrides);
	o->shaped = true;
}

#define F    CUDNN_DATA_FLOAT
#define I32  CUDNN_DATA_INT32
#define BOOL CUDNN_DATA_BOOLEAN

/* Scores: QK^T, the scale, the bias; then (backward) minus Stats; then the
 * causal mask. Returns the name of the masked scores. */
static const char *spec_scores(struct spec *s, const struct tcase *c,
                               const struct rtc_sdpa_shape *sh, int backward)
{
	const char *x = "s1";
	shape(add(s, MM, 0, -1, -1, "Q", "K", NULL, "s0", F), c->b, c->hq, c->lq, c->lk, NULL);
	add(s, PW, CUDNN_POINTWISE_MUL, F, -1, "s0", "SCALE", NULL, "s1", F);
	if (c->bias) {
		add(s, PW, CUDNN_POINTWISE_ADD, F, -1, "s1", "BIAS", NULL, "s2", F);
		x = "s2";
	}
	if (backward) {
		add(s, PW, CUDNN_POINTWISE_SUB, F, -1, x, "STATS", NULL, "s3", F);
		x = "s3";
	}
	if (sh->causal) {
		const char *row = "row";
		shape(add(s, PW, CUDNN_POINTWISE_GEN_INDEX, F, 2, x, NULL, NULL, "row", I32), c->b,
		      c->hq, c->lq, c->lk, NULL);
		add(s, PW, CUDNN_POINTWISE_GEN_INDEX, F, 3, x, NULL, NULL, "col", I32);
		if (c->offset) {
			add(s, PW, CUDNN_POINTWISE_ADD, I32, -1, "row", "SHIFT", NULL, "row+", I32);
			row = "row+";
		}
		add(s, PW, CUDNN_POINTWISE_CMP_GE, BOOL, -1, row, "col", NULL, "keep", BOOL);
		add(s, PW, CUDNN_POINTWISE_BINARY_SELECT, F, -1, x, "NEG_INF", "keep", "masked", F);
		x = "masked";
	}
	return x;
}

static void spec_forward(struct spec *s, const struct tcase *c, const struct rtc_sdpa_shape *sh,
                         int dt)
{
	const char *x = spec_scores(s, c, sh, 0);
	const int64_t rs[4] = { c->hq * c->lq, c->lq, 1, 1 };
	shape(add(s, RED, CUDNN_REDUCE_TENSOR_MAX, -1, -1, x, NULL, NULL, "max", F), c->b, c->hq,
	      c->lq, 1, rs);
	add(s, PW, CUDNN_POINTWISE_SUB, F, -1, x, "max", NULL, "sub", F);
	add(s, PW, CUDNN_POINTWISE_EXP, F, -1, "sub", NULL, NULL, "exp", F);
	shape(add(s, RED, CUDNN_REDUCE_TENSOR_ADD, -1, -1, "exp", NULL, NULL, "sum", F), c->b,
	      c->hq, c->lq, 1, rs);
	add(s, PW, CUDNN_POINTWISE_LOG, F, -1, "sum", NULL, NULL, "log", F);
	add(s, PW, CUDNN_POINTWISE_ADD, F, -1, "max", "log", NULL, "STATS", F);
	shape(add(s, PW, CUDNN_POINTWISE_DIV, F, -1, "exp", "sum", NULL, "P", dt), c->b, c->hq,
	      c->lq, c->lk, NULL);
	add(s, MM, 0, -1, -1, "P", "V", NULL, "O", dt);
}

static void spec_backward(struct spec *s, const struct tcase *c, const struct rtc_sdpa_shape *sh,
                          int dt)
{
	const int64_t ts[4] = { c->hq * c->lq * c->lk, c->lq * c->lk, 1, c->lk },
	              ks[4] = { c->hkv * c->lk * c->d, c->lk * c->d, c->d, 1 };
	const bool gqa = c->hq != c->hkv;
	const char *x;
	add(s, PW, CUDNN_POINTWISE_MUL, F, -1, "DO", "O", NULL, "dO*O", F);
	add(s, RED, CUDNN_REDUCE_TENSOR_ADD, -1, -1, "dO*O", NULL, NULL, "rowsum", F);
	add(s, PW, CUDNN_POINTWISE_MUL, F, -1, "rowsum", "ONE", NULL, "SOFTMAX_SUM", F);
	x = spec_scores(s, c, sh, 1);
	add(s, PW, CUDNN_POINTWISE_EXP, F, -1, x, NULL, NULL, "P", F);
	shape(add(s, RESHAPE, 0, -1, -1, "P", NULL, NULL, "PT", dt), c->b, c->hq, c->lk, c->lq, ts);
	if (gqa) {
		shape(add(s, MM, 0, -1, -1, "PT", "DO", NULL, "dV full", dt), c->b, c->hq, c->lk,
		      dv_of(c), NULL);
		add(s, RED, CUDNN_REDUCE_TENSOR_ADD, -1, -1, "dV full", NULL, NULL, "DV", dt);
	} else
		add(s, MM, 0, -1, -1, "PT", "DO", NULL, "DV", dt);
	add(s, MM, 0, -1, -1, "DO", "V", NULL, "dP", F);
	add(s, PW, CUDNN_POINTWISE_SUB, F, -1, "dP", "SOFTMAX_SUM", NULL, "dP-D", F);
	add(s, PW, CUDNN_POINTWISE_MUL, F, -1, "dP-D", "P", NULL, "dS0", F);
	add(s, PW, CUDNN_POINTWISE_MUL, F, -1, "dS0", "SCALE", NULL, "dS", F);
	shape(add(s, RESHAPE, 0, -1, -1, "dS", NULL, NULL, "dST", dt), c->b, c->hq, c->lk, c->lq,
	      ts);
	if (gqa) {
		add(s, MM, 0, -1, -1, "dST", "Q", NULL, "dK full", dt);
		add(s, RED, CUDNN_REDUCE_TENSOR_ADD, -1, -1, "dK full", NULL, NULL, "DK", dt);
	} else
		add(s, MM, 0, -1, -1, "dST", "Q", NULL, "DK", dt);
	shape(add(s, RESHAPE, 0, -1, -1, "K", NULL, NULL, "K view", dt), c->b, c->hkv, c->lk, c->d,
	      ks);
	add(s, MM, 0, -1, -1, "dS", "K view", NULL, "DQ_ACCUM", F);
	add(s, PW, CUDNN_POINTWISE_IDENTITY, F, -1, "DQ_ACCUM", NULL, NULL, "DQ", dt);
}

/* The real tensors' names. */
static const struct {
	const char *name;
	int64_t uid;
} reals[] = { { "Q", RTC_SDPA_Q },
	      { "K", RTC_SDPA_K },
	      { "V", RTC_SDPA_V },
	      { "O", RTC_SDPA_O },
	      { "STATS", RTC_SDPA_STATS },
	      { "BIAS", RTC_SDPA_BIAS },
	      { "DO", RTC_SDPA_DO },
	      { "DQ", RTC_SDPA_DQ },
	      { "DK", RTC_SDPA_DK },
	      { "DV", RTC_SDPA_DV },
	      { "SOFTMAX_SUM", RTC_SDPA_SOFTMAX_SUM },
	      { "DQ_ACCUM", RTC_SDPA_DQ_ACCUM },
	      { "SCALE", RTC_SDPA_SCALE },
	      { "NEG_INF", RTC_SDPA_NEG_INF },
	      { "SHIFT", RTC_SDPA_SHIFT },
	      { "ONE", RTC_SDPA_ONE } };

/* Virtual names bound so far. */
struct names {
	const char *name[RTC_SDPA_MAX_OPS];
	int64_t uid[RTC_SDPA_MAX_OPS];
	int n;
};

static int64_t uid_of(const struct names *nm, const char *name)
{
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		if (!strcmp(reals[i].name, name))
			return reals[i].uid;
	for (int i = 0; i < nm->n; i++)
		if (!strcmp(nm->name[i], name))
			return nm->uid[i];
	return -1; /* not written yet */
}

/* An input of operation i: the tensor it names must be the one the spec
 * says (0: none). */
static void check_input(const struct names *nm, int i, const char *port, int64_t got,
                        const char *want)
{
	int64_t w = want ? uid_of(nm, want) : 0;
	if (got != w) {
		fprintf(stderr, "%s: op %d input %s: uid %lld, want %s (uid %lld)\n", test_current,
		        i, port, (long long)got, want ? want : "none", (long long)w);
		CHECK_EQ(got, w);
	}
}

static void check_output(struct names *nm, int i, const struct tinfo *y, const struct op_spec *o)
{
	int64_t w = uid_of(nm, o->y);
	if (w >= 0 && w < RTC_SDPA_VIRTUAL) { /* a real tensor */
		if (y->uid != w) {
			fprintf(stderr, "%s: op %d writes uid %lld, want %s\n", test_current, i,
			        (long long)y->uid, o->y);
			CHECK_EQ(y->uid, w);
		}
		CHECK(!y->virt);
	} else {
		CHECK(w < 0); /* each virtual tensor is written once */
		CHECK(y->virt);
		CHECK(y->uid >= RTC_SDPA_VIRTUAL);
		nm->name[nm->n] = o->y;
		nm->uid[nm->n++] = y->uid;
	}
	if (y->dtype != o->ydt) {
		fprintf(stderr, "%s: op %d (%s) writes dtype %d, want %d\n", test_current, i, o->y,
		        y->dtype, o->ydt);
		CHECK_EQ(y->dtype, o->ydt);
	}
	if (o->shaped)
		for (int a = 0; a < 4; a++)
			if (y->dims[a] != o->ydims[a] || y->strides[a] != o->ystrides[a]) {
				fprintf(stderr,
				        "%s: op %d (%s) axis %d: dims %lld stride %lld, want %lld "
				        "%lld\n",
				        test_current, i, o->y, a, (long long)y->dims[a],
				        (long long)y->strides[a], (long long)o->ydims[a],
				        (long long)o->ystrides[a]);
				CHECK(0);
			}
}

/* A pointwise operation, from cuDNN's log of its finalization (k: its
 * place among the graph's pointwise operations). */
static void check_pointwise(int k, const struct op_spec *o, struct names *nm, int i)
{
	const struct pw_log *l;
	if (k >= pwlog.n) {
		fprintf(stderr, "%s: op %d (%s): not in cuDNN's log\n", test_current, i, o->y);
		CHECK(k < pwlog.n);
		return;
	}
	l = &pwlog.op[k];
	if (l->mode != o->mode) {
		fprintf(stderr, "%s: op %d (%s): pointwise mode %d, want %d\n", test_current, i,
		        o->y, l->mode, o->mode);
		CHECK_EQ(l->mode, o->mode);
	}
	CHECK_EQ(l->prec, o->prec);
	CHECK_EQ(l->axis, o->axis);
	check_input(nm, i, "x", l->x, o->x);
	if (l->b != -2 || o->mode != CUDNN_POINTWISE_BINARY_SELECT)
		check_input(nm, i, "b", l->b == -2 ? 0 : l->b, o->b);
	check_input(nm, i, "t", l->t == -2 ? 0 : l->t, o->t);
	CHECK(l->y.uid > 0);
	CHECK_EQ(l->y.ndims, 4);
	check_output(nm, i, &l->y, o);
}

static void check_matmul(cudnnBackendDescriptor_t op, const struct op_spec *o, struct names *nm,
                         int i)
{
	cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
	struct tinfo c;
	int64_t n = 0;
	CHECK_EQ(cudnnBackendGetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_DESC,
	                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &mm),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(get_dtype(mm, CUDNN_ATTR_MATMUL_COMP_TYPE), CUDNN_DATA_FLOAT);
	cudnnBackendDestroyDescriptor(mm);
	check_input(nm, i, "a", op_tensor(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, NULL), o->x);
	check_input(nm, i, "b", op_tensor(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, NULL), o->b);
	CHECK(op_tensor(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, &c) > 0);
	check_output(nm, i, &c, o);
}

static void check_reduction(cudnnBackendDescriptor_t op, const struct op_spec *o, struct names *nm,
                            int i)
{
	cudnnBackendDescriptor_t rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
	cudnnReduceTensorOp_t how = (cudnnReduceTensorOp_t)-1;
	struct tinfo y;
	int64_t n = 0;
	CHECK_EQ(cudnnBackendGetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
	                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &rd),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendGetAttribute(rd, CUDNN_ATTR_REDUCTION_OPERATOR,
	                                  CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &n, &how),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(how, o->mode);
	CHECK_EQ(get_dtype(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE), CUDNN_DATA_FLOAT);
	cudnnBackendDestroyDescriptor(rd);
	check_input(nm, i, "x", op_tensor(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, NULL), o->x);
	CHECK(op_tensor(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &y) > 0);
	check_output(nm, i, &y, o);
}

static void check_reshape(cudnnBackendDescriptor_t op, const struct op_spec *o, struct names *nm,
                          int i)
{
	struct tinfo y;
	check_input(nm, i, "x", op_tensor(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, NULL), o->x);
	CHECK(op_tensor(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, &y) > 0);
	check_output(nm, i, &y, o);
}

/* ------------------------------------------------------------------------ */
/* Whole graphs                                                             */
/* ------------------------------------------------------------------------ */

static const struct tcase graph_cases[] = {
	/* name              dtype    b  hq hkv lq   lk   d    causal off bias bcast */
	{ "plain f16 64", RT_F16, 2, 4, 4, 128, 128, 64, 0, 0, 0, 0 },
	{ "plain bf16 128", RT_BF16, 1, 2, 2, 100, 77, 128, 0, 0, 0, 0 },
	{ "causal f16 64", RT_F16, 2, 4, 4, 96, 96, 64, 1, 0, 0, 0 },
	{ "causal offset bf16 128", RT_BF16, 1, 3, 3, 50, 130, 128, 1, 80, 0, 0 },
	{ "bias f16 64", RT_F16, 2, 4, 4, 64, 80, 64, 0, 0, 1, 0 },
	{ "bias broadcast bf16 64", RT_BF16, 3, 2, 2, 40, 40, 64, 0, 0, 1, 0x6 },
	{ "gqa f16 128", RT_F16, 2, 8, 2, 64, 64, 128, 0, 0, 0, 0 },
	{ "gqa causal bias bf16 64", RT_BF16, 1, 6, 3, 70, 90, 64, 1, 20, 1, 0x2 },
	{ "mqa causal f16 64", RT_F16, 1, 4, 1, 128, 128, 64, 1, 0, 0, 0 },
	{ "decode f16 128", RT_F16, 4, 8, 8, 1, 300, 128, 0, 0, 1, 0x6 },
	{ "dk 128 dv 64 gqa causal bf16", RT_BF16, 2, 4, 2, 80, 96, 128, 1, 16, 0, 0, 64 },
	/* mixed precision's FP32 bias beside half inputs */
	{ "bias f32 f16 64", RT_F16, 2, 4, 4, 64, 80, 64, 0, 0, 1, 0, 0, RT_F32 },
	{ "gqa causal bias f32 bf16 128", RT_BF16, 1, 8, 2, 70, 90, 128, 1, 20, 1, 0x3, 0, RT_F32 },
};

static void check_graph(const struct tcase *c, int backward)
{
	const struct rt_attention_desc d = desc_of(c);
	const int dt = c->dtype == RT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
	const int64_t dv = dv_of(c);
	const int64_t qd[4] = { c->b, c->hq, c->lq, c->d }, kd[4] = { c->b, c->hkv, c->lk, c->d },
	              kt[4] = { c->b, c->hkv, c->d, c->lk },
	              kts[4] = { c->hkv * c->lk * c->d, c->lk * c->d, 1, c->d },
	              od[4] = { c->b, c->hq, c->lq, dv }, vd[4] = { c->b, c->hkv, c->lk, dv },
	              vt[4] = { c->b, c->hkv, dv, c->lk },
	              vts[4] = { c->hkv * c->lk * dv, c->lk * dv, 1, dv },
	              rd[4] = { c->b, c->hq, c->lq, 1 }, rs[4] = { c->hq * c->lq, c->lq, 1, 1 },
	              one[4] = { 1, 1, 1, 1 };
	struct rtc_sdpa_graph g;
	struct spec s;
	struct names nm;
	char why[512];
	int64_t engines = -1, n = 0;
	int status, npw = 0;
	test_current = c->name;
	CHECK(rtc_sdpa_refusal(&d, backward, 90, 91900) == NULL);
	log_begin();
	status = rtc_sdpa_build(&g, &d, backward, NULL, why, sizeof why);
	log_end();
	if (status != RT_OK) {
		fprintf(stderr, "%s (%s): %s\n", c->name, backward ? "backward" : "forward", why);
		CHECK(0);
		rtc_sdpa_destroy(&g);
		return;
	}
	/* the tensors with data */
	check_tensor(&g, "Q", RTC_SDPA_Q, dt, qd, NULL, false);
	check_tensor(&g, "K^T", RTC_SDPA_K, dt, kt, kts, false);
	check_tensor(&g, "Stats", RTC_SDPA_STATS, CUDNN_DATA_FLOAT, rd, rs, false);
	check_tensor(&g, "O", RTC_SDPA_O, dt, od, NULL, false);
	check_tensor(&g, "scale", RTC_SDPA_SCALE, CUDNN_DATA_FLOAT, one, one, true);
	CHECK(g.scale == d.scale);
	if (backward) {
		check_tensor(&g, "V^T", RTC_SDPA_V, dt, vt, vts, false);
		check_tensor(&g, "dO", RTC_SDPA_DO, dt, od, NULL, false);
		check_tensor(&g, "dQ", RTC_SDPA_DQ, dt, qd, NULL, false);
		check_tensor(&g, "dK", RTC_SDPA_DK, dt, kd, NULL, false);
		check_tensor(&g, "dV", RTC_SDPA_DV, dt, vd, NULL, false);
		check_tensor(&g, "softmax_sum", RTC_SDPA_SOFTMAX_SUM, CUDNN_DATA_FLOAT, rd, rs,
		             false);
		check_tensor(&g, "dQ_accum", RTC_SDPA_DQ_ACCUM, CUDNN_DATA_FLOAT, qd, NULL, false);
		check_tensor(&g, "one", RTC_SDPA_ONE, CUDNN_DATA_FLOAT, one, one, true);
		CHECK(g.one == 1.0f);
	} else {
		check_tensor(&g, "V", RTC_SDPA_V, dt, vd, NULL, false);
		CHECK(rtc_sdpa_tensor(&g, RTC_SDPA_DO) == NULL);
	}
	if (c->bias) {
		const int64_t full[4] = { c->b, c->hq, c->lq, c->lk };
		int64_t bd[4], bs[4], at = 1;
		for (int a = 3; a >= 0; a--) {
			bd[a] = c->bcast >> a & 1 ? 1 : full[a];
			bs[a] = at;
			at *= bd[a];
		}
		check_tensor(&g, "bias", RTC_SDPA_BIAS, c->mdtype == RT_F32 ? CUDNN_DATA_FLOAT : dt,
		             bd, bs, false);
	} else
		CHECK(rtc_sdpa_tensor(&g, RTC_SDPA_BIAS) == NULL);
	if (g.s.causal) {
		check_tensor(&g, "-inf", RTC_SDPA_NEG_INF, CUDNN_DATA_FLOAT, one, one, true);
		CHECK(isinf(g.neg_inf) && g.neg_inf < 0);
	} else
		CHECK(rtc_sdpa_tensor(&g, RTC_SDPA_NEG_INF) == NULL);
	if (c->causal && c->offset) {
		check_tensor(&g, "shift", RTC_SDPA_SHIFT, CUDNN_DATA_INT32, one, one, true);
		CHECK_EQ(g.shift, c->offset);
	} else
		CHECK(rtc_sdpa_tensor(&g, RTC_SDPA_SHIFT) == NULL);
	/* the operations, edge by edge */
	memset(&s, 0, sizeof s);
	memset(&nm, 0, sizeof nm);
	if (backward)
		spec_backward(&s, c, &g.s, dt);
	else
		spec_forward(&s, c, &g.s, dt);
	if (g.nops != s.n) {
		fprintf(stderr, "%s: %d operations, want %d\n", test_current, g.nops, s.n);
		CHECK_EQ(g.nops, s.n);
	}
	for (int i = 0; i < g.nops && i < s.n; i++) {
		const struct op_spec *o = &s.op[i];
		static const cudnnBackendDescriptorType_t kinds[] = {
			0, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
			CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
			CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
			CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR
		};
		if (g.op_type[i] != kinds[o->kind]) {
			fprintf(stderr, "%s: op %d (%s): kind %d, want %d\n", test_current, i, o->y,
			        (int)g.op_type[i], (int)kinds[o->kind]);
			CHECK(0);
			break;
		}
		/* the getters below fail on an operation of another kind */
		switch (o->kind) {
		case PW: check_pointwise(npw++, o, &nm, i); break;
		case MM: check_matmul(g.op[i], o, &nm, i); break;
		case RED: check_reduction(g.op[i], o, &nm, i); break;
		default: check_reshape(g.op[i], o, &nm, i);
		}
	}
	CHECK_EQ(pwlog.n, npw); /* nothing else was finalized as a pointwise operation */
	/* the finalized graph: cuDNN knows engines for it */
	CHECK(g.graph != NULL);
	CHECK_EQ(cudnnBackendGetAttribute(g.graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
	                                  CUDNN_TYPE_INT64, 1, &n, &engines),
	         CUDNN_STATUS_SUCCESS);
	CHECK(engines > 0);
	rtc_sdpa_destroy(&g);
	CHECK(g.graph == NULL && g.nops == 0 && g.ntensors == 0);
}

static void test_graphs(void)
{
	for (size_t i = 0; i < sizeof graph_cases / sizeof graph_cases[0]; i++) {
		check_graph(&graph_cases[i], 0);
		if (graph_cases[i].lq > 1 || graph_cases[i].lk > 1)
			check_graph(&graph_cases[i], 1);
	}
	test_current = "test_graphs";
}

/* The op count the file comment gives. */
static void test_op_counts(void)
{
	static const struct {
		struct tcase c;
		int fwd, bwd;
	} counts[] = {
		{ { "10/18", RT_F16, 1, 2, 2, 8, 8, 64, 0, 0, 0, 0 }, 10, 18 },
		{ { "bias", RT_F16, 1, 2, 2, 8, 8, 64, 0, 0, 1, 0 }, 11, 19 },
		{ { "causal", RT_F16, 1, 2, 2, 8, 8, 64, 1, 0, 0, 0 }, 14, 22 },
		{ { "shifted", RT_F16, 1, 2, 2, 8, 8, 64, 1, 3, 0, 0 }, 15, 23 },
		{ { "no-op causal", RT_F16, 1, 2, 2, 8, 8, 64, 1, 7, 0, 0 }, 10, 18 },
		{ { "gqa", RT_F16, 1, 2, 1, 8, 8, 64, 0, 0, 0, 0 }, 10, 20 },
		{ { "all", RT_F16, 1, 4, 2, 8, 9, 64, 1, 3, 1, 0 }, 16, 26 },
	};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		for (int bw = 0; bw < 2; bw++) {
			struct rt_attention_desc d = desc_of(&counts[i].c);
			struct rtc_sdpa_graph g;
			char why[512];
			CHECK_EQ(rtc_sdpa_build(&g, &d, bw, NULL, why, sizeof why), RT_OK);
			if (g.nops != (bw ? counts[i].bwd : counts[i].fwd))
				fprintf(stderr, "%s %s: %d ops\n", counts[i].c.name,
				        bw ? "backward" : "forward", g.nops);
			CHECK_EQ(g.nops, bw ? counts[i].bwd : counts[i].fwd);
			rtc_sdpa_destroy(&g);
		}
}

/* ------------------------------------------------------------------------ */
/* cuDNN's engines for the graphs, on described devices                    */
/* ------------------------------------------------------------------------ */

/* cudaDeviceProp's values of an H200 SXM and an A100 SXM4 80 GB, in the
 * form cuDNN serializes device properties (CUDNN_ATTR_DEVICEPROP_JSON_-
 * REPRESENTATION; the keys are cuDNN 9.19's). */
static const char h200[] =
        "{\"maxGridSize\": [2147483647, 65535, 65535], \"maxBlockSize\": [1024, 1024, 64], "
        "\"regsPerBlock\": 65536, \"multiProcessorCount\": 132, \"warpSize\": 32, "
        "\"maxSharedMemoryPerBlock\": 49152, \"maxSharedMemoryPerBlockOptin\": 232448, "
        "\"reservedSharedMemoryPerBlock\": 1024, \"maxRegistersPerSM\": 65536, "
        "\"maxCtasPerSM\": 32, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerSM\": 2048, "
        "\"pciDeviceId\": 0, \"isTccDriver\": 0, \"supportCoopLaunch\": 1, "
        "\"totalGlobalMem\": 150754820096, \"smClockRateKHz\": 1980000, "
        "\"memClockRateKHz\": 3201000, \"l2CacheSize\": 52428800, \"cudaDeviceId\": 0, "
        "\"deviceVer\": 900, \"driverVer\": 13000, \"deviceName\": \"NVIDIA H200\"}";
static const char a100[] =
        "{\"maxGridSize\": [2147483647, 65535, 65535], \"maxBlockSize\": [1024, 1024, 64], "
        "\"regsPerBlock\": 65536, \"multiProcessorCount\": 108, \"warpSize\": 32, "
        "\"maxSharedMemoryPerBlock\": 49152, \"maxSharedMemoryPerBlockOptin\": 166912, "
        "\"reservedSharedMemoryPerBlock\": 1024, \"maxRegistersPerSM\": 65536, "
        "\"maxCtasPerSM\": 32, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerSM\": 2048, "
        "\"pciDeviceId\": 0, \"isTccDriver\": 0, \"supportCoopLaunch\": 1, "
        "\"totalGlobalMem\": 85089058816, \"smClockRateKHz\": 1410000, "
        "\"memClockRateKHz\": 1593000, \"l2CacheSize\": 41943040, \"cudaDeviceId\": 0, "
        "\"deviceVer\": 800, \"driverVer\": 13000, \"deviceName\": \"NVIDIA A100-SXM4-80GB\"}";

static cudnnBackendDescriptor_t device_props(const char *json)
{
	cudnnBackendDescriptor_t dp = make(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
	CHECK_EQ(cudnnBackendSetAttribute(dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
	                                  CUDNN_TYPE_CHAR, (int64_t)strlen(json) + 1, json),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendFinalize(dp), CUDNN_STATUS_SUCCESS);
	return dp;
}

/* libcuda, which cuDNN loads to look at engines: the driver's, else the
 * toolkit's stub. */
static bool load_libcuda(void)
{
	if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
		return true;
	/* the stub's soname is libcuda.so.1: cuDNN's own dlopen finds it */
	return *ONNXC_CUDA_STUB_LIBCUDA && dlopen(ONNXC_CUDA_STUB_LIBCUDA, RTLD_NOW | RTLD_GLOBAL);
}

/* The engine configurations cuDNN's mode-A heuristics offer for the graph
 * on device dp; with compile, the first one's execution plan is finalized
 * too (deviceless): 1 when it compiled (or loaded), 0 when cuDNN had no
 * runtime compiler here, -1 when it refused. */
static int64_t configs(const struct tcase *c, int backward, cudnnBackendDescriptor_t dp,
                       int compile, int *compiled)
{
	const struct rt_attention_desc d = desc_of(c);
	const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
	struct rtc_sdpa_graph g;
	cudnnBackendDescriptor_t heur, cfg[16];
	int64_t count = 0, got = 0;
	char why[512];
	if (rtc_sdpa_build(&g, &d, backward, NULL, why, sizeof why) != RT_OK) {
		fprintf(stderr, "%s: %s\n", c->name, why);
		CHECK(0);
		return 0;
	}
	heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
	CHECK_EQ(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
	                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g.graph),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
	                                  &mode),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
	                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &dp),
	         CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendFinalize(heur), CUDNN_STATUS_SUCCESS);
	CHECK_EQ(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
	                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
	         CUDNN_STATUS_SUCCESS);
	if (count > 16)
		count = 16;
	for (int64_t i = 0; i < count; i++)
		cfg[i] = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
	if (count > 0)
		CHECK_EQ(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
		                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfg),
		         CUDNN_STATUS_SUCCESS);
	if (compile && got > 0) {
		cudnnBackendDescriptor_t plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
		cudnnStatus_t st;
		CHECK_EQ(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
		                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[0]),
		         CUDNN_STATUS_SUCCESS);
		CHECK_EQ(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
		                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &dp),
		         CUDNN_STATUS_SUCCESS);
		st = cudnnBackendFinalize(plan);
		/* NVRTC compiled the fused kernel; loading it needs a driver */
		*compiled = st == CUDNN_STATUS_SUCCESS ||
		                            st == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER
		                    ? 1
		            : st == CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING ? 0
		                                                                            : -1;
		if (*compiled < 0) {
			char detail[256] = "";
			cudnnGetLastErrorString(detail, sizeof detail);
			fprintf(stderr, "%s (%s): execution plan: %s: %s\n", c->name,
			        backward ? "backward" : "forward", cudnnGetErrorString(st), detail);
		}
		cudnnBackendDestroyDescriptor(plan);
	}
	for (int64_t i = 0; i < count; i++)
		cudnnBackendDestroyDescriptor(cfg[i]);
	cudnnBackendDestroyDescriptor(heur);
	rtc_sdpa_destroy(&g);
	return got;
}

static void test_engines(void)
{
	cudnnBackendDescriptor_t dev[2];
	const int sms[2] = { 90, 80 };
	int compiled = 0, nocompiler = 0;
	if (!load_libcuda()) {
		printf("test_engines: skipped (neither libcuda.so.1 nor the toolkit's stub "
		       "loads)\n");
		return;
	}
	CUDNN_ENGINES_BEGIN();
	dev[0] = device_props(h200);
	dev[1] = device_props(a100);
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < sizeof graph_cases / sizeof graph_cases[0]; i++)
			for (int bw = 0; bw < 2; bw++) {
				const struct tcase *c = &graph_cases[i];
				const struct rt_attention_desc d = desc_of(c);
				/* a few compile: both devices, both directions, the
				 * masks and GQA */
				int compile = i == 7 || (v == 0 && (i == 3 || i == 12)), ok = -2;
				int64_t n;
				if (rtc_sdpa_refusal(&d, bw, sms[v], 91900))
					continue;
				test_current = c->name;
				n = configs(c, bw, dev[v], compile, &ok);
				if (n < 1)
					fprintf(stderr, "%s (%s, sm_%d): no engine configuration\n",
					        c->name, bw ? "backward" : "forward", sms[v]);
				CHECK(n >= 1);
				if (compile) {
					CHECK(ok >= 0);
					compiled += ok == 1;
					nocompiler += ok == 0;
				}
			}
	/* the control: the A100 has no backward for head size 256 (which is
	 * why rtc_sdpa_refusal keeps it off), an H200 none for 512 */
	{
		struct tcase c = graph_cases[0];
		int ok;
		test_current = "control";
		c.d = 256;
		CHECK_EQ(configs(&c, 1, dev[1], 0, &ok), 0);
		CHECK(configs(&c, 1, dev[0], 0, &ok) >= 1);
		c.d = 512;
		CHECK_EQ(configs(&c, 1, dev[0], 0, &ok), 0);
	}
	printf("test_engines: %d execution plans compiled deviceless%s\n", compiled,
	       nocompiler ? " (some skipped: no runtime compiler)" : "");
	cudnnBackendDestroyDescriptor(dev[0]);
	cudnnBackendDestroyDescriptor(dev[1]);
	CUDNN_ENGINES_END();
}

TESTS(T(test_refusal) T(test_shape) T(test_graphs) T(test_op_counts) T(test_engines))
