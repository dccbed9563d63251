/*
 * test_rt_conv.c - rt_conv and rt_conv_transpose against the reference.
 *
 * A case is a geometry (1, 2 or 3 spatial dims, groups, strides,
 * dilations, asymmetric pads, output padding for the transposed form) run
 * through the reference's Conv / ConvTranspose; the kernel gets the
 * descriptor the compiler would build (codegen/lower.c) and exactly
 * rt_*_workspace() bytes of workspace (none at all when that is 0, so a
 * path that needs none must not touch it). The geometries cover the
 * kernel's paths: the GEMM with B packed straight from the image (implicit
 * im2col, rt_sgemm) or im2col + OpenBLAS, the 1x1 GEMM on the input, the
 * direct depthwise loop (multiplier 1 and 2), and windows that hang over
 * the input on every side, down to an input made only of padding. Every
 * case runs on each kernel set of the GEMMs (the CPU's best,
 * ONNXC_GEMM=avx2, blas).
 *
 * The epilogue's expectation is computed here in double: the activation of
 * the reference result plus the residual. Every case runs on 1 and 3
 * threads, which must agree bit for bit. Throughput of a ResNet-50-like
 * 3x3 layer, a 1x1 layer and a depthwise layer is printed at the end.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

#include <time.h>

struct conv_case {
	int transposed;
	int nsp;
	int64_t n, c, m, group;
	int64_t in[3], k[3], st[3], dil[3], pb[3], pe[3], outpad[3];
	int bias;
	struct rt_epilogue ep;
};

static void conv_attrs(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct conv_case *c = ud;
	int64_t pads[6];
	for (int i = 0; i < c->nsp; i++) {
		pads[i] = c->pb[i];
		pads[c->nsp + i] = c->pe[i];
	}
	ir_set_ints(m, n, "strides", c->st, c->nsp);
	ir_set_ints(m, n, "dilations", c->dil, c->nsp);
	ir_set_ints(m, n, "pads", pads, 2 * c->nsp);
	ir_set_i(m, n, "group", c->group);
	if (c->transposed)
		ir_set_ints(m, n, "output_padding", c->outpad, c->nsp);
}

/* The case's inputs: x, w, bias, and (once y's shape is known) the residual. */
struct conv_data {
	struct ref_tensor in[4];
	struct ref_tensor want;
};

static void random_tensor(struct ref_tensor *t, int rank, const int64_t *dims, uint64_t *seed)
{
	t->type = (struct ir_type){ .dtype = IR_F32, .rank = rank };
	memcpy(t->type.dims, dims, sizeof(int64_t) * (size_t)rank);
	t->data = malloc(sizeof(float) * (size_t)ir_type_elems(&t->type) + 1);
	rand_fill(IR_F32, t->data, ir_type_elems(&t->type), -1, 1, seed);
}

static bool conv_reference(const struct conv_case *c, struct conv_data *cd, uint64_t *seed)
{
	int64_t xd[5] = { c->n, c->c }, wd[5], bd[1] = { c->m };
	wd[0] = c->transposed ? c->c : c->m;
	wd[1] = c->transposed ? c->m / c->group : c->c / c->group;
	for (int i = 0; i < c->nsp; i++) {
		xd[2 + i] = c->in[i];
		wd[2 + i] = c->k[i];
	}
	random_tensor(&cd->in[0], 2 + c->nsp, xd, seed);
	random_tensor(&cd->in[1], 2 + c->nsp, wd, seed);
	random_tensor(&cd->in[2], 1, bd, seed);
	cd->in[3].data = NULL;
	cd->want.data = NULL;
	if (!ref_eval(c->transposed ? IR_OP_CONV_TRANSPOSE : IR_OP_CONV, conv_attrs, (void *)c,
	              cd->in, c->bias ? 3 : 2, &cd->want, 1))
		return false;
	random_tensor(&cd->in[3], cd->want.type.rank, cd->want.type.dims, seed);
	return true;
}

/* The descriptor lower.c fills. */
static struct rt_conv_desc conv_desc(const struct conv_case *c, const struct ir_type *y)
{
	struct rt_conv_desc d = { .dtype = RT_F32,
		                  .nsp = c->nsp,
		                  .n = c->n,
		                  .c = c->c,
		                  .m = c->m,
		                  .group = c->group,
		                  .ep = c->ep };
	for (int i = 0; i < c->nsp; i++) {
		d.in[i] = c->in[i];
		d.k[i] = c->k[i];
		d.out[i] = y->dims[2 + i];
		d.stride[i] = c->st[i];
		d.dil[i] = c->dil[i];
		d.pad_begin[i] = c->pb[i];
		d.pad_end[i] = c->pe[i];
	}
	return d;
}

static double act(const struct rt_epilogue *ep, double v)
{
	switch (ep->act) {
	case RT_ACT_RELU: return v < 0 ? 0 : v;
	case RT_ACT_LEAKY_RELU: return v < 0 ? ep->alpha * v : v;
	case RT_ACT_CLIP: return fmin(fmax(v, ep->alpha), ep->beta);
	case RT_ACT_SIGMOID: return 1 / (1 + exp(-v));
	case RT_ACT_TANH: return tanh(v);
	case RT_ACT_HARD_SIGMOID: return fmin(fmax(ep->alpha * v + ep->beta, 0), 1);
	case RT_ACT_HARD_SWISH: return v * fmin(fmax(v / 6 + 0.5, 0), 1);
	default: return v;
	}
}

/* One run of the kernel under test into y; returns its status. */
static int conv_run(struct rt_ctx *ctx, const struct conv_case *c, const struct rt_conv_desc *d,
                    const struct conv_data *cd, float *y)
{
	size_t ws_bytes = c->transposed ? rt_conv_transpose_workspace(d) : rt_conv_workspace(d);
	void *ws = ws_bytes ? malloc(ws_bytes) : NULL;
	const void *bias = c->bias ? cd->in[2].data : NULL;
	int status;
	if (c->transposed)
		status = rt_conv_transpose(ctx, d, cd->in[0].data, cd->in[1].data, bias, y, ws);
	else
		status = rt_conv(ctx, d, cd->in[0].data, cd->in[1].data, bias,
		                 c->ep.has_residual ? cd->in[3].data : NULL, y, ws);
	free(ws);
	return status;
}

/* Runs the kernel on 1 and 3 threads; they must agree bit for bit and match cd->want. */
static void conv_check(const struct conv_case *c, const struct conv_data *cd, const char *set)
{
	struct rt_conv_desc d = conv_desc(c, &cd->want.type);
	int64_t n = ir_type_elems(&cd->want.type);
	struct rt_ctx *one, *three;
	float *y1 = malloc(sizeof(float) * (size_t)n + 1),
	      *y3 = malloc(sizeof(float) * (size_t)n + 1);
	double scale = 1, worst = 0;
	/* NaN wherever the kernel fails to write */
	memset(y1, 0xff, sizeof(float) * (size_t)n);
	memset(y3, 0xff, sizeof(float) * (size_t)n);
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	CHECK_EQ(conv_run(one, c, &d, cd, y1), RT_OK);
	CHECK_EQ(conv_run(three, c, &d, cd, y3), RT_OK);
	CHECK(memcmp(y1, y3, sizeof(float) * (size_t)n) == 0);
	for (int64_t i = 0; i < n; i++) {
		const float *want = cd->want.data, *res = cd->in[3].data;
		double v = act(&c->ep, want[i] + (c->ep.has_residual ? res[i] : 0));
		double e = fabs(y1[i] - v);
		scale = fmax(scale, fabs(v));
		worst = fmax(worst, e != e ? INFINITY : e);
	}
	if (worst > 2e-5 * scale)
		fprintf(stderr,
		        "%s [%s] nsp=%d n=%lld c=%lld m=%lld g=%lld k0=%lld: error %g (scale %g)\n",
		        c->transposed ? "conv_transpose" : "conv", set, c->nsp, (long long)c->n,
		        (long long)c->c, (long long)c->m, (long long)c->group, (long long)c->k[0],
		        worst, scale);
	CHECK(worst <= 2e-5 * scale);
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
	free(y1);
	free(y3);
}

/* A case against the reference, on each kernel set of the GEMMs (ONNXC_GEMM). */
static void conv_case(const struct conv_case *c, uint64_t *seed)
{
	static const char *const sets[] = { "default", "avx2", "blas" };
	struct conv_data cd;
	if (conv_reference(c, &cd, seed)) {
		for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
			if (i > 0)
				setenv("ONNXC_GEMM", sets[i], 1);
			conv_check(c, &cd, sets[i]);
		}
		unsetenv("ONNXC_GEMM");
	} else {
		CHECK(0);
	}
	for (int i = 0; i < 4; i++)
		free(cd.in[i].data);
	free(cd.want.data);
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                    */
/* ------------------------------------------------------------------------ */

#define ONES            \
	{               \
		1, 1, 1 \
	}
#define ZEROS           \
	{               \
		0, 0, 0 \
	}

/* Geometries for both directions (the transposed ones swap c and m's roles). */
static const struct conv_case geometries[] = {
	/* 1-D: strides, dilations, asymmetric pads */
	{ 0, 1, 2, 3, 4, 1, { 10 }, { 3 }, ONES, ONES, { 1 }, { 0 } },
	{ 0, 1, 2, 3, 4, 1, { 11 }, { 3 }, { 2 }, { 2 }, { 0 }, { 2 } },
	{ 0, 1, 1, 4, 6, 2, { 9 }, { 4 }, { 3 }, ONES, { 2 }, { 1 } },
	/* 2-D */
	{ 0, 2, 2, 4, 6, 1, { 7, 9 }, { 3, 2 }, { 2, 1 }, { 1, 2 }, { 1, 0 }, { 2, 1 } },
	{ 0, 2, 2, 4, 6, 2, { 7, 9 }, { 3, 3 }, ONES, ONES, { 1, 1 }, { 1, 1 } },
	{ 0, 2, 1, 6, 6, 3, { 8, 8 }, { 2, 3 }, { 2, 2 }, ONES, { 0, 1 }, { 1, 0 } },
	{ 0, 2, 1, 3, 5, 1, { 5, 6 }, { 1, 1 }, { 2, 2 }, ONES, ZEROS, ZEROS },   /* 1x1 strided */
	{ 0, 2, 1, 3, 5, 1, { 5, 6 }, { 1, 1 }, ONES, ONES, { 1, 0 }, { 0, 1 } }, /* 1x1 padded */
	{ 0, 2, 1, 2, 3, 1, { 2, 2 }, { 5, 5 }, ONES, ONES, { 2, 2 }, { 2, 2 } }, /* k > in */
	{ 0, 2, 1, 2, 3, 1, { 9, 9 }, { 3, 3 }, ONES, { 4, 4 }, ZEROS, ZEROS },   /* one output */
	{ 0, 2, 1, 1, 4, 1, { 6, 5 }, { 3, 3 }, ONES, ONES, { 1, 1 }, { 1, 1 } }, /* c = 1 */
	/* 3-D */
	{ 0,
	  3,
	  1,
	  2,
	  3,
	  1,
	  { 4, 5, 6 },
	  { 2, 3, 2 },
	  { 1, 2, 1 },
	  { 2, 1, 1 },
	  { 1, 0, 1 },
	  { 0, 1, 1 } },
	{ 0, 3, 2, 4, 4, 2, { 3, 4, 5 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES },
};

/* Geometries only the forward convolution takes: its fast paths and edges. */
static const struct conv_case conv_only[] = {
	/* 1x1, stride 1, no pads: GEMM on the input */
	{ 0, 2, 2, 8, 5, 1, { 6, 7 }, ONES, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 2, 8, 6, 2, { 6, 7 }, ONES, ONES, ONES, ZEROS, ZEROS },
	{ 0, 1, 3, 5, 7, 1, { 13 }, ONES, ONES, ONES, ZEROS, ZEROS },
	{ 0, 3, 1, 4, 3, 1, { 2, 3, 4 }, ONES, ONES, ONES, ZEROS, ZEROS },
	/* depthwise, multiplier 1 and 2 */
	{ 0, 2, 2, 6, 6, 6, { 9, 10 }, { 3, 3 }, ONES, ONES, { 1, 1 }, { 1, 1 } },
	/* few outputs under a big kernel (a filter gradient's shape): turned
	 * around into dot products; padded, strided, dilated, grouped */
	{ 0, 2, 3, 16, 8, 1, { 12, 10 }, { 11, 8 }, ONES, ONES, { 1, 0 }, { 1, 2 } },
	{ 0, 2, 2, 8, 6, 2, { 13, 11 }, { 5, 4 }, { 2, 3 }, { 2, 1 }, { 1, 1 }, { 0, 2 } },
	{ 0, 1, 2, 5, 4, 1, { 40 }, { 33 }, ONES, ONES, { 2 }, { 1 } },
	{ 0, 3, 1, 3, 2, 1, { 6, 5, 7 }, { 5, 4, 6 }, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 1, 6, 6, 6, { 9, 10 }, { 3, 3 }, { 2, 2 }, ONES, { 1, 1 }, { 0, 1 } },
	{ 0, 2, 1, 4, 8, 4, { 7, 7 }, { 5, 3 }, { 1, 2 }, { 2, 1 }, { 2, 0 }, { 1, 2 } },
	{ 0, 1, 2, 3, 3, 3, { 12 }, { 5 }, ONES, { 3 }, { 4 }, { 4 } },
	{ 0, 3, 1, 2, 2, 2, { 3, 4, 5 }, { 2, 2, 2 }, ONES, ONES, ONES, ZEROS },
	{ 0, 2, 1, 3, 3, 3, { 2, 2 }, { 5, 5 }, ONES, ONES, { 2, 2 }, { 2, 2 } },
	/* empty: no images, no output channels, no input channels, all padding */
	{ 0, 2, 0, 2, 3, 1, { 4, 4 }, { 3, 3 }, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 1, 2, 0, 1, { 4, 4 }, { 3, 3 }, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 1, 0, 3, 1, { 4, 4 }, { 3, 3 }, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 1, 2, 3, 1, { 0, 4 }, { 3, 3 }, ONES, ONES, { 2, 1 }, { 2, 1 } },
	{ 0, 2, 1, 3, 3, 3, { 0, 4 }, { 3, 3 }, ONES, ONES, { 2, 1 }, { 2, 1 } },
	/* an empty kernel: the bias alone */
	{ 0, 2, 1, 2, 3, 1, { 4, 4 }, { 3, 0 }, ONES, ONES, ZEROS, ZEROS },
	{ 0, 2, 1, 3, 3, 3, { 4, 4 }, { 0, 3 }, ONES, ONES, ZEROS, ZEROS },
};

/* Both directions over the shared geometries, with and without bias. */
static void test_conv_geometries(void)
{
	uint64_t seed = 0x1234567;
	for (size_t i = 0; i < sizeof geometries / sizeof geometries[0]; i++)
		for (int t = 0; t < 2; t++)
			for (int bias = 0; bias < 2; bias++) {
				struct conv_case c = geometries[i];
				c.transposed = t;
				c.bias = bias;
				/* output padding where the stride allows it */
				for (int j = 0; t && j < c.nsp; j++)
					c.outpad[j] = c.st[j] > 1;
				conv_case(&c, &seed);
			}
}

/* Each of n cases with and without bias. */
static void run_cases(const struct conv_case *cases, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		for (int bias = 0; bias < 2; bias++) {
			struct conv_case c = cases[i];
			c.bias = bias;
			conv_case(&c, &seed);
		}
}

static void test_conv_paths(void)
{
	run_cases(conv_only, sizeof conv_only / sizeof conv_only[0], 77);
}

/* Transposed geometries the shared list lacks: 1x1 (a GEMM) and output padding. */
static void test_conv_transpose_paths(void)
{
	static const struct conv_case cases[] = {
		{ 1, 2, 2, 6, 4, 1, { 5, 6 }, ONES, ONES, ONES, ZEROS, ZEROS },
		{ 1, 2, 2, 6, 4, 2, { 5, 6 }, ONES, ONES, ONES, ZEROS, ZEROS },
		{ 1, 2, 1, 3, 2, 1, { 4, 5 }, { 3, 3 }, { 3, 2 }, ONES, ZEROS, ZEROS, { 2, 1 } },
		{ 1,
		  2,
		  1,
		  4,
		  4,
		  4,
		  { 5, 5 },
		  { 3, 3 },
		  { 2, 2 },
		  ONES,
		  { 1, 1 },
		  { 1, 1 },
		  { 1, 1 } },
		{ 1, 1, 2, 2, 3, 1, { 6 }, { 4 }, { 2 }, { 3 }, { 3 }, { 2 }, { 1 } },
		{ 1, 2, 1, 2, 2, 1, { 3, 3 }, { 2, 2 }, { 4, 4 }, ONES, ZEROS, ZEROS, ZEROS },
		{ 1, 2, 0, 2, 2, 1, { 3, 3 }, { 2, 2 }, ONES, ONES, ZEROS, ZEROS, ZEROS },
		{ 1, 2, 1, 0, 2, 1, { 3, 3 }, { 2, 2 }, ONES, ONES, ZEROS, ZEROS, ZEROS },
		{ 1, 2, 1, 2, 2, 1, { 3, 3 }, { 0, 2 }, ONES, ONES, ZEROS, ZEROS, ZEROS },
	};
	run_cases(cases, sizeof cases / sizeof cases[0], 31);
}

/* Every activation, with and without a residual, on each path. */
static void test_conv_epilogues(void)
{
	static const struct rt_epilogue eps[] = {
		{ RT_ACT_RELU, 0, 0, 0 },         { RT_ACT_LEAKY_RELU, 0.1f, 0, 0 },
		{ RT_ACT_CLIP, -0.5f, 0.75f, 0 }, { RT_ACT_SIGMOID, 0, 0, 0 },
		{ RT_ACT_TANH, 0, 0, 0 },         { RT_ACT_HARD_SIGMOID, 0.2f, 0.5f, 0 },
		{ RT_ACT_HARD_SWISH, 0, 0, 0 },   { RT_ACT_NONE, 0, 0, 0 },
	};
	const struct conv_case *paths[] = { &geometries[4], &conv_only[0], &conv_only[4],
		                            &geometries[3] };
	uint64_t seed = 2024;
	for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++)
		for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
			for (int res = 0; res < 2; res++) {
				struct conv_case c = *paths[p];
				c.bias = 1;
				c.ep = eps[e];
				c.ep.has_residual = res;
				/* transposed: no residual argument; the last path tests it */
				c.transposed = p == 3;
				if (c.transposed && res)
					continue;
				conv_case(&c, &seed);
			}
}

/* A bigger layer on each path, so the GEMMs are blocked and threaded. */
static void test_conv_large(void)
{
	static const struct conv_case cases[] = {
		{ 0, 2, 2, 32, 48, 1, { 40, 40 }, { 3, 3 }, ONES, ONES, ONES, ONES },
		{ 0, 2, 1, 64, 96, 1, { 30, 30 }, ONES, ONES, ONES, ZEROS, ZEROS },
		{ 0, 2, 2, 40, 40, 40, { 33, 33 }, { 3, 3 }, { 2, 2 }, ONES, ONES, ONES },
		{ 1, 2, 1, 32, 16, 1, { 20, 20 }, { 4, 4 }, { 2, 2 }, ONES, ONES, ONES },
	};
	uint64_t seed = 8;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct conv_case c = cases[i];
		c.bias = 1;
		c.ep = (struct rt_epilogue){ RT_ACT_RELU, 0, 0, !c.transposed };
		conv_case(&c, &seed);
	}
}

/*
 * Geometries for the implicit im2col of the GEMM path: strides 1, 2 and 3
 * along the rows (contiguous loads, pairs of loads, gathers), dilation,
 * outputs a few pixels wide (a 32-column panel spans many rows, which a
 * stride-1 "same" convolution reads as one run), enough channels for
 * several k blocks of 256, and a first layer (3 channels, 7x7, stride 2).
 */
static void test_conv_implicit(void)
{
	static const struct conv_case cases[] = {
		{ 0, 2, 1, 64, 20, 1, { 7, 7 }, { 3, 3 }, ONES, ONES, { 1, 1 }, { 1, 1 } },
		{ 0, 2, 1, 40, 24, 1, { 14, 14 }, { 3, 3 }, { 2, 2 }, ONES, { 1, 1 }, { 1, 1 } },
		{ 0, 2, 1, 3, 16, 1, { 40, 38 }, { 7, 7 }, { 2, 2 }, ONES, { 3, 3 }, { 3, 2 } },
		{ 0, 2, 1, 6, 10, 1, { 23, 31 }, { 3, 4 }, { 1, 3 }, ONES, { 1, 2 }, { 0, 1 } },
		{ 0, 2, 1, 8, 9, 1, { 17, 19 }, { 3, 3 }, ONES, { 2, 2 }, { 2, 2 }, { 2, 2 } },
		{ 0, 2, 2, 30, 18, 1, { 12, 12 }, ONES, { 2, 2 }, ONES, ZEROS, ZEROS },
		{ 0, 1, 2, 300, 7, 1, { 45 }, { 3 }, ONES, ONES, { 1 }, { 1 } },
		{ 0, 3, 1, 5, 6, 1, { 5, 6, 35 }, { 2, 3, 3 }, { 1, 1, 2 }, ONES, ONES, ZEROS },
		{ 0, 2, 1, 8, 12, 4, { 11, 11 }, { 3, 3 }, { 2, 1 }, ONES, { 1, 1 }, { 1, 1 } },
	};
	run_cases(cases, sizeof cases / sizeof cases[0], 555);
}

static void test_conv_refuses(void)
{
	struct rt_ctx *ctx;
	float x[64] = { 0 }, w[64] = { 0 }, y[64], ws[256];
	struct rt_conv_desc d = { .dtype = RT_F32,
		                  .nsp = 2,
		                  .n = 1,
		                  .c = 2,
		                  .m = 2,
		                  .group = 1,
		                  .in = { 4, 4 },
		                  .k = { 3, 3 },
		                  .out = { 2, 2 },
		                  .stride = { 1, 1 },
		                  .dil = { 1, 1 } };
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	CHECK(rt_conv_workspace(&d) <= sizeof ws);
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, ws), RT_OK);
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, NULL), RT_ERR_ARGUMENT);
	d.ep.has_residual = 1;
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, ws), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_conv_transpose(ctx, &d, x, w, NULL, y, ws), RT_ERR_ARGUMENT);
	d.ep.has_residual = 0;
	d.group = 3;
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, ws), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_conv_workspace(&d), 0);
	d.group = 1;
	d.stride[1] = 0;
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, ws), RT_ERR_ARGUMENT);
	d.stride[1] = 1;
	d.nsp = 4;
	CHECK_EQ(rt_conv_transpose(ctx, &d, x, w, NULL, y, ws), RT_ERR_ARGUMENT);
	d.nsp = 2;
	d.dtype = RT_F64;
	CHECK_EQ(rt_conv(ctx, &d, x, w, NULL, NULL, y, ws), RT_ERR_ARGUMENT);
	rt_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Throughput (printed, not checked)                                        */
/* ------------------------------------------------------------------------ */

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(const char *name, const struct conv_case *c, int reps)
{
	struct conv_data cd;
	struct rt_ctx *ctx;
	uint64_t seed = 3;
	int64_t xd[4] = { c->n, c->c, c->in[0], c->in[1] }, wd[4] = { c->m, c->c / c->group };
	int64_t yd[4] = { c->n, c->m }, bd[1] = { c->m };
	struct rt_conv_desc d;
	double best = 1e9, flops;
	void *ws;
	float *y;
	wd[2] = c->k[0];
	wd[3] = c->k[1];
	for (int i = 0; i < 2; i++)
		yd[2 + i] = (c->in[i] + c->pb[i] + c->pe[i] - c->k[i]) / c->st[i] + 1;
	random_tensor(&cd.in[0], 4, xd, &seed);
	random_tensor(&cd.in[1], 4, wd, &seed);
	random_tensor(&cd.in[2], 1, bd, &seed);
	random_tensor(&cd.in[3], 4, yd, &seed);
	cd.want.type = cd.in[3].type;
	d = conv_desc(c, &cd.want.type);
	ws = malloc(rt_conv_workspace(&d) + 1);
	y = malloc(sizeof(float) * (size_t)ir_type_elems(&cd.want.type));
	CHECK_EQ(rt_ctx_create(&ctx, 2), RT_OK);
	for (int i = 0; i < reps; i++) {
		double t0 = seconds();
		CHECK_EQ(rt_conv(ctx, &d, cd.in[0].data, cd.in[1].data, cd.in[2].data,
		                 cd.in[3].data, y, ws),
		         RT_OK);
		best = fmin(best, seconds() - t0);
	}
	flops = 2.0 * (double)ir_type_elems(&cd.want.type) * (double)(c->c / c->group) *
	        (double)(c->k[0] * c->k[1]);
	printf("rt_conv %s, 2 threads: %.1f GFLOP/s (%.3f ms)\n", name, flops / best * 1e-9,
	       best * 1e3);
	rt_ctx_destroy(ctx);
	free(ws);
	free(y);
	for (int i = 0; i < 4; i++)
		free(cd.in[i].data);
}

static void test_conv_throughput(void)
{
	static const struct conv_case resnet = { 0,          2,        1,
		                                 64,         64,       1,
		                                 { 56, 56 }, { 3, 3 }, ONES,
		                                 ONES,       ONES,     ONES,
		                                 ZEROS,      1,        { RT_ACT_RELU, 0, 0, 1 } };
	static const struct conv_case pw = { 0,          2,     1,
		                             256,        64,    1,
		                             { 56, 56 }, ONES,  ONES,
		                             ONES,       ZEROS, ZEROS,
		                             ZEROS,      1,     { RT_ACT_RELU, 0, 0, 0 } };
	static const struct conv_case dw = { 0,          2,        1,
		                             144,        144,      144,
		                             { 56, 56 }, { 3, 3 }, ONES,
		                             ONES,       ONES,     ONES,
		                             ZEROS,      1,        { RT_ACT_CLIP, 0, 6, 0 } };
	bench("3x3 1x64x56x56 -> 64, pad 1, +bias+residual+relu", &resnet, 20);
	bench("1x1 1x256x56x56 -> 64, +bias+relu", &pw, 20);
	bench("depthwise 3x3 1x144x56x56, pad 1, +bias+relu6", &dw, 20);
}

TESTS(T(test_conv_geometries) T(test_conv_paths) T(test_conv_transpose_paths) T(test_conv_epilogues)
              T(test_conv_large) T(test_conv_implicit) T(test_conv_refuses) T(test_conv_throughput))
