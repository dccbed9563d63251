/*
 * test_rtc.c - the CUDA runtime's host side, on any machine (CI has no
 * GPU): what can be checked without running a kernel.
 *
 *   - rtc_grid's launch arithmetic;
 *   - rtc_model_open: argument and weights errors (checked on the host
 *     before the device is touched), and then RT_ERR_NO_DEVICE with a
 *     message naming the failed call where there is no device or driver
 *     (or a working instance where there is one); the ASan build shows
 *     that no path leaks;
 *   - the GEMM mapping (rtc_desc.c): cuBLASLt's layouts and operation
 *     attributes read back from the real descriptors, the refusals, and
 *     the whole plan - the strided-batched calls, the C matrix, the bias
 *     and ReLU epilogues, rtc_epilogue's part - executed by an emulation
 *     of cublasLtMatmul driven only by what the descriptors say, against
 *     the CPU's rt_gemm;
 *   - the convolution mapping: cuDNN's tensor, filter and convolution
 *     descriptors read back, cuDNN's output-dimension check against the
 *     descriptor's out, and the explicit pad (forward) or crop
 *     (transposed) around a symmetric-pad convolution checked to compute
 *     what the asymmetric one does, with the CPU's rt_conv, rt_pad and
 *     rt_conv_transpose standing in for cuDNN and rtc_pad.
 */
#include "onnxc_rt_cuda.h"
#include "rtc_desc.h"
#include "test.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Launch geometry                                                          */
/* ------------------------------------------------------------------------ */

static void test_grid(void)
{
	int blocks = -1, threads = -1;
	rtc_grid(0, 132, &blocks, &threads);
	CHECK_EQ(blocks, 0);
	CHECK_EQ(threads, 256);
	rtc_grid(-5, 132, &blocks, &threads);
	CHECK_EQ(blocks, 0);
	rtc_grid(1, 132, &blocks, &threads);
	CHECK_EQ(blocks, 1);
	rtc_grid(256, 132, &blocks, &threads);
	CHECK_EQ(blocks, 1);
	rtc_grid(257, 132, &blocks, &threads);
	CHECK_EQ(blocks, 2);
	/* never more than 4 waves of 8 resident 256-thread blocks per multiprocessor */
	rtc_grid(256LL * 4224, 132, &blocks, &threads);
	CHECK_EQ(blocks, 4224);
	rtc_grid(256LL * 4224 + 1, 132, &blocks, &threads);
	CHECK_EQ(blocks, 4224);
	rtc_grid(INT64_C(1) << 40, 132, &blocks, &threads);
	CHECK_EQ(blocks, 132 * 32);
	/* an unknown multiprocessor count counts as one */
	rtc_grid(INT64_C(1) << 40, 0, &blocks, &threads);
	CHECK_EQ(blocks, 32);
	rtc_grid(1000, 0, &blocks, &threads);
	CHECK_EQ(blocks, 4);
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                  */
/* ------------------------------------------------------------------------ */

#define MODEL_ID 0x1234abcdULL

/* A weights file of data_bytes (claiming claimed bytes) for model id. */
static void write_weights(const char *path, uint64_t id, uint64_t claimed, size_t data_bytes)
{
	unsigned char h[RT_WEIGHTS_HEADER] = { 0 };
	uint64_t v = 1;
	FILE *f = fopen(path, "wb");
	memcpy(h, RT_WEIGHTS_MAGIC, 8);
	memcpy(h + 8, &v, 8);
	memcpy(h + 16, &id, 8);
	memcpy(h + 24, &claimed, 8);
	CHECK(f != NULL);
	if (!f)
		return;
	fwrite(h, 1, sizeof h, f);
	for (size_t i = 0; i < data_bytes; i++)
		fputc((int)(i & 0xff), f);
	fclose(f);
}

/* Runs rtc_model_open with stderr going to a file; returns the status and
 * what was printed (in text[n]). */
static int open_logged(const struct rtc_model_info *info, struct rtc_model **m, char *text,
                       size_t n)
{
	char path[] = "/tmp/test_rtc_stderr_XXXXXX";
	int fd = mkstemp(path), saved, status;
	FILE *f;
	size_t len;
	text[0] = 0;
	CHECK(fd >= 0);
	if (fd < 0)
		return -1;
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	close(fd);
	status = rtc_model_open(m, info);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if ((f = fopen(path, "r"))) {
		len = fread(text, 1, n - 1, f);
		text[len] = 0;
		fclose(f);
	}
	unlink(path);
	return status;
}

/* Is there a device this process can use (then opening must work)? */
static int have_device(void)
{
	int count = 0;
	int ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
	(void)cudaGetLastError();
	return ok;
}

static void test_open_arguments(void)
{
	struct rtc_model *m = (struct rtc_model *)(uintptr_t)1;
	struct rtc_model_info info = { 0 };
	size_t sizes[1] = { 16 };
	CHECK_EQ(rtc_model_open(NULL, &info), RT_ERR_ARGUMENT);
	CHECK_EQ(rtc_model_open(&m, NULL), RT_ERR_ARGUMENT);
	CHECK(m == NULL);
	info.ninputs = 1; /* but no input sizes */
	m = (struct rtc_model *)(uintptr_t)1;
	CHECK_EQ(rtc_model_open(&m, &info), RT_ERR_ARGUMENT);
	CHECK(m == NULL);
	info.input_bytes = sizes;
	info.noutputs = -1;
	CHECK_EQ(rtc_model_open(&m, &info), RT_ERR_ARGUMENT);
	/* closing nothing is fine; NULL has no message */
	rtc_model_close(NULL);
	CHECK_STR(rtc_last_error(NULL), "");
	CHECK_EQ(strlen(rtc_last_error(NULL)), 0);
}

static void test_open_weights(void)
{
	char path[] = "/tmp/test_rtc_weights_XXXXXX", text[4096];
	int fd = mkstemp(path);
	struct rtc_model *m = NULL;
	struct rtc_model_info info = { .weights_path = path,
		                       .model_id = MODEL_ID,
		                       .weights_bytes = 100 };
	CHECK(fd >= 0);
	close(fd);
	setenv("ONNXC_VERBOSE", "1", 1);
	/* another model's file */
	write_weights(path, MODEL_ID + 1, 100, 100);
	CHECK_EQ(open_logged(&info, &m, text, sizeof text), RT_ERR_WEIGHTS_MODEL);
	CHECK(m == NULL);
	CHECK_STR(text, path);
	CHECK_STR(text, "another model");
	/* truncated */
	write_weights(path, MODEL_ID, 100, 60);
	CHECK_EQ(open_logged(&info, &m, text, sizeof text), RT_ERR_WEIGHTS_FORMAT);
	CHECK(m == NULL);
	/* no file */
	unlink(path);
	CHECK_EQ(open_logged(&info, &m, text, sizeof text), RT_ERR_WEIGHTS_OPEN);
	CHECK(m == NULL);
	CHECK_STR(text, "cannot be opened");
	/* no weights at all while the model has some */
	info.weights_path = NULL;
	CHECK_EQ(open_logged(&info, &m, text, sizeof text), RT_ERR_WEIGHTS_OPEN);
	unsetenv("ONNXC_VERBOSE");
}

static void check_opened(struct rtc_model *m, int status, const char *text)
{
	if (have_device()) {
		/* a GPU machine: everything must have worked */
		CHECK_EQ(status, RT_OK);
		CHECK(m != NULL);
		if (m) {
			CHECK(rtc_arena(m) != NULL);
			CHECK(rtc_weights(m) != NULL);
			CHECK(rtc_input(m, 0) != NULL);
			CHECK(rtc_output(m, 0) != NULL);
			CHECK(rtc_input(m, 1) == NULL);
			CHECK_EQ(strlen(rtc_last_error(m)), 0);
		}
		rtc_model_close(m);
		return;
	}
	/* no device or driver (this machine, CI): a clear error, nothing left */
	CHECK_EQ(status, RT_ERR_NO_DEVICE);
	CHECK(m == NULL);
	CHECK_STR(text, "onnxc cuda: cudaGetDeviceCount: ");
	CHECK_STR(rt_status_message(status), "no CUDA device or driver");
}

static void test_open_no_device(void)
{
	char path[] = "/tmp/test_rtc_weights_XXXXXX", text[4096];
	int fd = mkstemp(path);
	size_t in[2] = { 12, 4096 }, out[1] = { 40 };
	const char *names[2] = { "step 0", "step 1" };
	struct rtc_model *m = (struct rtc_model *)(uintptr_t)1;
	struct rtc_model_info info = { .arena_bytes = 1 << 20,
		                       .weights_path = path,
		                       .model_id = MODEL_ID,
		                       .weights_bytes = 100,
		                       .ptx = "",
		                       .ninputs = 2,
		                       .noutputs = 1,
		                       .input_bytes = in,
		                       .output_bytes = out,
		                       .nsteps = 2,
		                       .step_names = names };
	unsigned char blob[RT_WEIGHTS_HEADER + 100];
	uint64_t v;
	CHECK(fd >= 0);
	close(fd);
	write_weights(path, MODEL_ID, 100, 100);
	setenv("ONNXC_VERBOSE", "1", 1);
	setenv("ONNXC_PROFILE", "1", 1);
	check_opened(m, open_logged(&info, &m, text, sizeof text), text);
	unsetenv("ONNXC_PROFILE");
	/* embedded weights, graphs off */
	memset(blob, 0, sizeof blob);
	memcpy(blob, RT_WEIGHTS_MAGIC, 8);
	v = 1;
	memcpy(blob + 8, &v, 8);
	v = MODEL_ID;
	memcpy(blob + 16, &v, 8);
	v = 100;
	memcpy(blob + 24, &v, 8);
	info.weights_path = NULL;
	info.embedded_weights = blob;
	setenv("ONNXC_CUDA_GRAPH", "0", 1);
	m = (struct rtc_model *)(uintptr_t)1;
	check_opened(m, open_logged(&info, &m, text, sizeof text), text);
	unsetenv("ONNXC_CUDA_GRAPH");
	unsetenv("ONNXC_VERBOSE");
	/* quietly without ONNXC_VERBOSE */
	m = (struct rtc_model *)(uintptr_t)1;
	if (!have_device()) {
		CHECK_EQ(open_logged(&info, &m, text, sizeof text), RT_ERR_NO_DEVICE);
		CHECK_EQ(strlen(text), 0);
	}
	unlink(path);
}

/* ------------------------------------------------------------------------ */
/* GEMM: the cuBLASLt descriptors                                           */
/* ------------------------------------------------------------------------ */

struct layout {
	int64_t type, rows, cols, ld, count, stride;
};

static struct layout read_layout(cublasLtMatrixLayout_t l)
{
	struct layout r = { -1, -1, -1, -1, -1, -1 };
	uint32_t type = 0;
	uint64_t rows = 0, cols = 0;
	int64_t ld = 0, stride = 0;
	int32_t count = 0;
	size_t w;
	CHECK(l != NULL);
	if (!l)
		return r;
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type,
	                                        &w));
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows,
	                                        &w));
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols,
	                                        &w));
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &w));
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
	                                        sizeof count, &w));
	CHECK(!cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
	                                        &stride, sizeof stride, &w));
	return (struct layout){ type, (int64_t)rows, (int64_t)cols, ld, count, stride };
}

static int64_t op_attr(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t a)
{
	int32_t v = -1;
	size_t w;
	CHECK(!cublasLtMatmulDescGetAttribute(op, a, &v, sizeof v, &w));
	return v;
}

#define CHECK_LAYOUT(l, t, r, c, ld_, n, s) \
	do {                                \
		struct layout l_ = (l);     \
		CHECK_EQ(l_.type, (t));     \
		CHECK_EQ(l_.rows, (r));     \
		CHECK_EQ(l_.cols, (c));     \
		CHECK_EQ(l_.ld, (ld_));     \
		CHECK_EQ(l_.count, (n));    \
		CHECK_EQ(l_.stride, (s));   \
	} while (0)

static struct rt_gemm_desc gemm(int dtype, int64_t m, int64_t n, int64_t k, int ta, int tb)
{
	return (struct rt_gemm_desc){ .dtype = dtype,
		                      .m = m,
		                      .n = n,
		                      .k = k,
		                      .trans_a = ta,
		                      .trans_b = tb,
		                      .alpha = 1,
		                      .beta = 1 };
}

/* Geometry and descriptors of d, which must be accepted. */
static int build(const struct rt_gemm_desc *d, struct rtc_gemm_geom *g, struct rtc_gemm_lt *lt,
                 int pedantic)
{
	char why[256] = "";
	int status = rtc_gemm_geom(d, g, why, sizeof why);
	CHECK_EQ(status, RT_OK);
	if (status) {
		fprintf(stderr, "  %s\n", why);
		return 0;
	}
	CHECK_EQ(rtc_gemm_lt_build(g, pedantic, lt), CUBLAS_STATUS_SUCCESS);
	return lt->op != NULL;
}

static void test_gemm_layouts(void)
{
	struct rtc_gemm_geom g;
	struct rtc_gemm_lt lt;
	struct rt_gemm_desc d = gemm(RT_F32, 3, 5, 7, 0, 0);
	/* row-major Y[3,5] = A[3,7] B[7,5]: cuBLASLt computes Y^T = B^T A^T */
	if (build(&d, &g, &lt, 1)) {
		CHECK_LAYOUT(read_layout(lt.a), CUDA_R_32F, 5, 7, 5, 1, 0);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_32F, 7, 3, 7, 1, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 5, 3, 5, 1, 0);
		CHECK_LAYOUT(read_layout(lt.c), CUDA_R_32F, 5, 3, 5, 1, 0);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_N);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_N);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
		         CUBLAS_COMPUTE_32F_PEDANTIC);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_32F);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_DEFAULT);
		rtc_gemm_lt_destroy(&lt);
		CHECK(lt.op == NULL && lt.a == NULL);
	}
	/* without the pedantic mode: still plain FP32, never TF32 */
	if (build(&d, &g, &lt, 0)) {
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F);
		rtc_gemm_lt_destroy(&lt);
	}
	/* both transposed: A stored [7,3], B stored [5,7] */
	d = gemm(RT_F32, 3, 5, 7, 1, 1);
	if (build(&d, &g, &lt, 1)) {
		CHECK_LAYOUT(read_layout(lt.a), CUDA_R_32F, 7, 5, 7, 1, 0);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_32F, 3, 7, 3, 1, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 5, 3, 5, 1, 0);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_T);
		rtc_gemm_lt_destroy(&lt);
	}
	/* a uniform batch of 4: one strided-batched call */
	d = gemm(RT_F32, 3, 5, 7, 0, 1);
	d.batch_rank = 1;
	d.batch_dims[0] = 4;
	d.a_strides[0] = 21;
	d.b_strides[0] = 35;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.inner, 4);
		CHECK_EQ(g.outer, 1);
		CHECK(!g.fold);
		CHECK_LAYOUT(read_layout(lt.a), CUDA_R_32F, 7, 5, 7, 4, 35);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_32F, 7, 3, 7, 4, 21);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 5, 3, 5, 4, 15);
		rtc_gemm_lt_destroy(&lt);
	}
	/* B shared, A matrices back to back: folded into one 24-row GEMM */
	d = gemm(RT_F32, 3, 5, 7, 0, 0);
	d.batch_rank = 2;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 4;
	d.a_strides[0] = 84;
	d.a_strides[1] = 21;
	if (build(&d, &g, &lt, 1)) {
		CHECK(g.fold);
		CHECK_EQ(g.rows, 24);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_32F, 7, 24, 7, 1, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 5, 24, 5, 1, 0);
		rtc_gemm_lt_destroy(&lt);
	}
	/* [2,1,3,4] x [5,4,6]: batch [2,5], A broadcast over the 5, B over the 2 */
	d = gemm(RT_F32, 3, 6, 4, 0, 0);
	d.batch_rank = 2;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 5;
	d.a_strides[0] = 12;
	d.b_strides[1] = 24;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.inner, 5);
		CHECK_EQ(g.outer, 2);
		CHECK_EQ(g.outer_rank, 1);
		CHECK_EQ(g.outer_a[0], 12);
		CHECK_EQ(g.outer_b[0], 0);
		CHECK_LAYOUT(read_layout(lt.a), CUDA_R_32F, 6, 4, 6, 5, 24);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_32F, 4, 3, 4, 5, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 6, 3, 6, 5, 18);
		rtc_gemm_lt_destroy(&lt);
	}
}

static void test_gemm_epilogues(void)
{
	struct rtc_gemm_geom g;
	struct rtc_gemm_lt lt;
	struct rt_gemm_desc d = gemm(RT_F32, 3, 5, 7, 0, 0);
	/* a row bias and ReLU: both cuBLASLt's */
	d.bias = RT_BIAS_ROW;
	d.ep.act = RT_ACT_RELU;
	if (build(&d, &g, &lt, 1)) {
		CHECK(g.lt_bias && g.lt_relu && !g.ep_run);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE),
		         CUBLASLT_EPILOGUE_RELU_BIAS);
		rtc_gemm_lt_destroy(&lt);
	}
	/* a column bias is rtc_epilogue's, and the ReLU after it too */
	d.bias = RT_BIAS_COL;
	if (build(&d, &g, &lt, 1)) {
		CHECK(!g.lt_bias && !g.lt_relu && g.ep_run && g.ep_bias);
		CHECK_EQ(g.ep.act, RT_ACT_RELU);
		CHECK_EQ(g.ep_outer, 1);
		CHECK_EQ(g.ep_channels, 3);
		CHECK_EQ(g.ep_inner, 5);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_DEFAULT);
		rtc_gemm_lt_destroy(&lt);
	}
	/* beta * scalar: C broadcast in the workspace */
	d.bias = RT_BIAS_SCALAR;
	d.beta = 2.5f;
	d.ep.act = RT_ACT_SIGMOID;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.c_use, RTC_C_BIAS);
		CHECK(g.c_expand && !g.c_convert);
		CHECK(g.beta == 2.5);
		CHECK_EQ(g.c_copy.strides[0], 0);
		CHECK_EQ(g.c_copy.strides[1], 0);
		CHECK_EQ(g.c_copy.esize, 4);
		CHECK(g.ep_run && !g.ep_bias && g.ep.act == RT_ACT_SIGMOID);
		rtc_gemm_lt_destroy(&lt);
	}
	/* the residual is C when C is free */
	d.bias = RT_BIAS_NONE;
	d.beta = 1;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_RELU, .has_residual = 1 };
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.c_use, RTC_C_RESIDUAL);
		CHECK(g.lt_relu && !g.ep_run);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_RELU);
		rtc_gemm_lt_destroy(&lt);
	}
	/* a full bias takes C: the residual and the ReLU go to rtc_epilogue */
	d.bias = RT_BIAS_FULL;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.c_use, RTC_C_BIAS);
		CHECK(!g.c_expand && g.ep_residual && !g.lt_relu && g.ep.act == RT_ACT_RELU);
		CHECK(g.ep.has_residual);
		rtc_gemm_lt_destroy(&lt);
	}
	/* beta 0 ignores the bias */
	d.beta = 0;
	d.ep.has_residual = 0;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.c_use, RTC_C_NONE);
		CHECK(g.lt_relu && !g.ep_run && g.beta == 0);
		rtc_gemm_lt_destroy(&lt);
	}
}

static void test_gemm_dtypes(void)
{
	struct rtc_gemm_geom g;
	struct rtc_gemm_lt lt;
	char why[256];
	struct rt_gemm_desc d = gemm(RT_F16, 64, 32, 16, 0, 0);
	/* FP16 in, FP32 out: cuBLASLt writes FP32 itself, FP32 accumulation */
	d.ydtype = RT_F32;
	d.bias = RT_BIAS_ROW;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.dd, RT_F32);
		CHECK(!g.staged);
		CHECK_LAYOUT(read_layout(lt.a), CUDA_R_16F, 32, 16, 32, 1, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 32, 64, 32, 1, 0);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F);
		/* the FP16 bias does not fit the FP32 bias epilogue: rtc_epilogue adds it */
		CHECK(!g.lt_bias && g.ep_bias);
		CHECK_EQ(g.ep_outer, 64);
		CHECK_EQ(g.ep_channels, 32);
		CHECK_EQ(g.ep_inner, 1);
		rtc_gemm_lt_destroy(&lt);
	}
	/* BF16 to BF16 with a bias epilogue of its own type */
	d.dtype = RT_BF16;
	d.ydtype = 0;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.dd, RT_BF16);
		CHECK(!g.staged && g.lt_bias);
		CHECK_LAYOUT(read_layout(lt.b), CUDA_R_16BF, 16, 64, 16, 1, 0);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_16BF, 32, 64, 32, 1, 0);
		rtc_gemm_lt_destroy(&lt);
	}
	/* a half result rtc_epilogue works on is staged in FP32 (one rounding) */
	d.dtype = RT_F16;
	d.ep.act = RT_ACT_SIGMOID;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(g.dd, RT_F32);
		CHECK(g.staged);
		CHECK(g.ws_algo >= (size_t)64 * 32 * 4);
		CHECK_LAYOUT(read_layout(lt.d), CUDA_R_32F, 32, 64, 32, 1, 0);
		rtc_gemm_lt_destroy(&lt);
	}
	/* FP32 in, FP16 out: cuBLASLt cannot, so staged */
	d = gemm(RT_F32, 8, 8, 8, 0, 0);
	d.ydtype = RT_F16;
	if (build(&d, &g, &lt, 1)) {
		CHECK(g.staged && g.dd == RT_F32 && g.yt == RT_F16);
		rtc_gemm_lt_destroy(&lt);
	}
	/* FP64 in FP64 */
	d = gemm(RT_F64, 8, 8, 8, 0, 0);
	d.bias = RT_BIAS_ROW;
	if (build(&d, &g, &lt, 1)) {
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
		         CUBLAS_COMPUTE_64F_PEDANTIC);
		CHECK_EQ(op_attr(lt.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_64F);
		CHECK(!g.lt_bias && g.ep_bias);
		rtc_gemm_lt_destroy(&lt);
	}
	/* refused: integer GEMMs, f64 mixed with other types */
	d = gemm(RT_I32, 8, 8, 8, 0, 0);
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "GEMM of i32");
	d.dtype = RT_I64;
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "GEMM of i64");
	d.dtype = RT_F64;
	d.ydtype = RT_F32;
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "f64");
	d = gemm(RT_F32, 8, 8, 8, 0, 0);
	d.ydtype = RT_I32;
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_ERR_ARGUMENT);
	d.ydtype = 0;
	d.batch_rank = 7;
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_ERR_ARGUMENT);
	/* empty results need nothing */
	d = gemm(RT_F32, 0, 8, 8, 0, 0);
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_OK);
	CHECK(g.noop);
	d = gemm(RT_F32, 4, 8, 0, 1, 1);
	CHECK_EQ(rtc_gemm_geom(&d, &g, why, sizeof why), RT_OK);
	CHECK(!g.noop && g.zero_k && g.k == 1 && !g.trans_a && g.alpha == 0);
}

/* ------------------------------------------------------------------------ */
/* GEMM: the whole mapping, run by an emulated cuBLASLt against rt_gemm     */
/* ------------------------------------------------------------------------ */

/*
 * cublasLtMatmul as documented, over FP32 column-major strided batches:
 * D = epilogue(alpha op(A) op(B) + beta C [+ bias along D's rows]), C not
 * read when beta is 0. Everything it knows comes from the descriptors;
 * the shapes must agree with each other.
 */
static void emulate_matmul(const struct rtc_gemm_lt *lt, float alpha, const float *a,
                           const float *b, float beta, const float *c, float *d, const float *bias)
{
	struct layout la = read_layout(lt->a), lb = read_layout(lt->b), lc = read_layout(lt->c),
	              ld = read_layout(lt->d);
	int ta = (int)op_attr(lt->op, CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_T;
	int tb = (int)op_attr(lt->op, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_T;
	int64_t ep = op_attr(lt->op, CUBLASLT_MATMUL_DESC_EPILOGUE);
	int64_t rows = ld.rows, cols = ld.cols, k = ta ? la.rows : la.cols;
	int relu = ep == CUBLASLT_EPILOGUE_RELU || ep == CUBLASLT_EPILOGUE_RELU_BIAS;
	int add_bias = ep == CUBLASLT_EPILOGUE_BIAS || ep == CUBLASLT_EPILOGUE_RELU_BIAS;
	CHECK_EQ(ta ? la.cols : la.rows, rows);
	CHECK_EQ(tb ? lb.rows : lb.cols, cols);
	CHECK_EQ(tb ? lb.cols : lb.rows, k);
	CHECK(lc.rows == rows && lc.cols == cols);
	CHECK(la.count == ld.count && lb.count == ld.count && lc.count == ld.count);
	CHECK(ld.ld >= rows && la.ld >= la.rows && lb.ld >= lb.rows);
	CHECK(!add_bias || bias);
	for (int64_t i = 0; i < ld.count; i++)
		for (int64_t col = 0; col < cols; col++)
			for (int64_t r = 0; r < rows; r++) {
				double acc = 0, v;
				for (int64_t q = 0; q < k; q++) {
					double x = ta ? a[i * la.stride + q + r * la.ld]
					              : a[i * la.stride + r + q * la.ld];
					double y = tb ? b[i * lb.stride + col + q * lb.ld]
					              : b[i * lb.stride + q + col * lb.ld];
					acc += x * y;
				}
				v = alpha * acc;
				if (beta != 0)
					v += beta * c[i * lc.stride + r + col * lc.ld];
				if (add_bias)
					v += bias[r];
				if (relu && v < 0)
					v = 0;
				d[i * ld.stride + r + col * ld.ld] = (float)v;
			}
}

/* rtc_epilogue as rtc_internal.h defines it, in double. */
static void emulate_epilogue(const struct rt_epilogue *ep, float *y, const float *bias,
                             const float *res, int64_t outer, int64_t ch, int64_t inner)
{
	for (int64_t i = 0; i < outer * ch * inner; i++) {
		double v = y[i];
		if (bias)
			v += bias[i / inner % ch];
		if (res)
			v += res[i];
		switch (ep->act) {
		case RT_ACT_RELU: v = v < 0 ? 0 : v; break;
		case RT_ACT_LEAKY_RELU: v = v < 0 ? ep->alpha * v : v; break;
		case RT_ACT_SIGMOID: v = 1 / (1 + exp(-v)); break;
		case RT_ACT_TANH: v = tanh(v); break;
		case RT_ACT_CLIP:
			v = v < ep->alpha ? ep->alpha : v > ep->beta ? ep->beta : v;
			break;
		default: break;
		}
		y[i] = (float)v;
	}
}

/* What rtc_gemm does for g, with the emulated library and kernels. */
static void emulate_gemm(struct rt_ctx *ctx, const struct rtc_gemm_geom *g,
                         const struct rtc_gemm_lt *lt, const float *a, const float *b,
                         const float *c, const float *res, float *y)
{
	float *zero_a = calloc((size_t)g->m, sizeof *zero_a);
	float *zero_b = calloc((size_t)g->n, sizeof *zero_b);
	float *expanded = malloc(sizeof(float) * (size_t)(g->m * g->n));
	const float *cm = c;
	CHECK(!g->staged && g->dd == RT_F32);
	if (g->zero_k) {
		a = zero_a;
		b = zero_b;
	}
	if (g->c_use == RTC_C_BIAS && g->c_expand) {
		CHECK_EQ(rt_copy(ctx, &g->c_copy, c, expanded), RT_OK);
		cm = expanded;
	}
	for (int64_t o = 0; o < g->outer; o++) {
		int64_t oa, ob, oy;
		rtc_gemm_offsets(g, o, &oa, &ob, &oy);
		/* cuBLASLt's A is our B and its B our A */
		emulate_matmul(lt, (float)g->alpha, b + ob, a + oa, (float)g->beta,
		               g->c_use == RTC_C_RESIDUAL ? res + oy
		               : g->c_use == RTC_C_BIAS   ? cm
		                                          : y + oy,
		               y + oy, g->lt_bias ? c : NULL);
	}
	if (g->ep_run)
		emulate_epilogue(&g->ep, y, g->ep_bias ? c : NULL, g->ep_residual ? res : NULL,
		                 g->ep_outer, g->ep_channels, g->ep_inner);
	free(zero_a);
	free(zero_b);
	free(expanded);
}

static uint64_t rng = 88172645463325252ULL;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / (double)(1ULL << 53) * 2 - 1);
}

static float *rand_buf(int64_t n)
{
	float *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
	for (int64_t i = 0; i < n; i++)
		p[i] = frand();
	return p;
}

/* Elements an operand spans: the largest offset any batch position reaches. */
static int64_t span(const struct rt_gemm_desc *d, const int64_t *strides, int64_t mat)
{
	int64_t s = mat;
	for (int i = 0; i < d->batch_rank; i++)
		s += (d->batch_dims[i] - 1) * strides[i];
	return s;
}

static void check_gemm_emulated(struct rt_ctx *ctx, const struct rt_gemm_desc *d)
{
	struct rtc_gemm_geom g;
	struct rtc_gemm_lt lt;
	int64_t nbatch = 1, ny, nc;
	float *a, *b, *c, *res, *want, *got;
	double worst = 0;
	for (int i = 0; i < d->batch_rank; i++)
		nbatch *= d->batch_dims[i];
	ny = nbatch * d->m * d->n;
	nc = d->bias == RT_BIAS_FULL ? d->m * d->n : d->bias == RT_BIAS_COL ? d->m : d->n;
	a = rand_buf(span(d, d->a_strides, d->m * d->k));
	b = rand_buf(span(d, d->b_strides, d->k * d->n));
	c = rand_buf(nc);
	res = rand_buf(ny);
	want = rand_buf(ny);
	got = rand_buf(ny);
	if (build(d, &g, &lt, 1)) {
		CHECK_EQ(rt_gemm(ctx, d, a, b, c, res, want), RT_OK);
		emulate_gemm(ctx, &g, &lt, a, b, c, res, got);
		for (int64_t i = 0; i < ny; i++) {
			double e = fabs((double)got[i] - want[i]) / (1 + fabs((double)want[i]));
			worst = e > worst || e != e ? e : worst;
		}
		if (!(worst < 1e-5))
			fprintf(stderr,
			        "  GEMM %lldx%lldx%lld trans %d%d batch %lld bias %d beta %g: "
			        "error %g\n",
			        (long long)d->m, (long long)d->n, (long long)d->k, d->trans_a,
			        d->trans_b, (long long)nbatch, d->bias, d->beta, worst);
		CHECK(worst < 1e-5);
		rtc_gemm_lt_destroy(&lt);
	}
	free(a);
	free(b);
	free(c);
	free(res);
	free(want);
	free(got);
}

static void test_gemm_emulated(void)
{
	struct rt_ctx *ctx;
	struct rt_gemm_desc d;
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	/* plain, and every transpose */
	for (int t = 0; t < 4; t++) {
		d = gemm(RT_F32, 5, 7, 3, t & 1, t >> 1);
		check_gemm_emulated(ctx, &d);
		/* a row bias and ReLU in cuBLASLt's epilogue */
		d.bias = RT_BIAS_ROW;
		d.ep.act = RT_ACT_RELU;
		check_gemm_emulated(ctx, &d);
	}
	/* a column bias and a sigmoid: rtc_epilogue */
	d = gemm(RT_F32, 6, 4, 9, 1, 0);
	d.bias = RT_BIAS_COL;
	d.ep.act = RT_ACT_SIGMOID;
	check_gemm_emulated(ctx, &d);
	/* beta * scalar, alpha, LeakyRelu: C broadcast in the workspace */
	d = gemm(RT_F32, 4, 6, 5, 0, 1);
	d.bias = RT_BIAS_SCALAR;
	d.alpha = 0.75f;
	d.beta = 2.5f;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_LEAKY_RELU, .alpha = 0.1f };
	check_gemm_emulated(ctx, &d);
	/* beta * row (ONNX Gemm's beta), and a column bias with beta */
	d.bias = RT_BIAS_ROW;
	d.beta = 0.35f;
	check_gemm_emulated(ctx, &d);
	d.bias = RT_BIAS_COL;
	check_gemm_emulated(ctx, &d);
	/* a full bias, a residual, tanh */
	d = gemm(RT_F32, 4, 6, 5, 1, 1);
	d.bias = RT_BIAS_FULL;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_TANH, .has_residual = 1 };
	check_gemm_emulated(ctx, &d);
	/* the residual as C, ReLU */
	d.bias = RT_BIAS_NONE;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_RELU, .has_residual = 1 };
	check_gemm_emulated(ctx, &d);
	/* a uniform batch, B transposed */
	d = gemm(RT_F32, 3, 5, 4, 0, 1);
	d.batch_rank = 1;
	d.batch_dims[0] = 3;
	d.a_strides[0] = 12;
	d.b_strides[0] = 20;
	d.bias = RT_BIAS_ROW;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_CLIP, .alpha = -0.5f, .beta = 0.5f };
	check_gemm_emulated(ctx, &d);
	/* folded: B shared, with the residual as C */
	d = gemm(RT_F32, 3, 5, 4, 0, 0);
	d.batch_rank = 2;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 3;
	d.a_strides[0] = 36;
	d.a_strides[1] = 12;
	d.ep.has_residual = 1;
	check_gemm_emulated(ctx, &d);
	/* broadcast batch [2,1,3,4] x [5,4,6], a row bias */
	d = gemm(RT_F32, 3, 6, 4, 0, 0);
	d.batch_rank = 2;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 5;
	d.a_strides[0] = 12;
	d.b_strides[1] = 24;
	d.bias = RT_BIAS_ROW;
	check_gemm_emulated(ctx, &d);
	/* A's positions uniform over [2,3], B's only over the 3 */
	d = gemm(RT_F32, 3, 4, 2, 0, 0);
	d.batch_rank = 2;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 3;
	d.a_strides[0] = 18;
	d.a_strides[1] = 6;
	d.b_strides[1] = 8;
	check_gemm_emulated(ctx, &d);
	/* non-uniform strides in both dims, a column bias, A transposed */
	d = gemm(RT_F32, 3, 2, 4, 1, 0);
	d.batch_rank = 3;
	d.batch_dims[0] = 2;
	d.batch_dims[1] = 1;
	d.batch_dims[2] = 3;
	d.a_strides[0] = 50;
	d.a_strides[2] = 13;
	d.b_strides[0] = 8;
	d.b_strides[2] = 17;
	d.bias = RT_BIAS_COL;
	d.ep.has_residual = 1;
	check_gemm_emulated(ctx, &d);
	/* a batch with beta * full bias: one position per call */
	d.bias = RT_BIAS_FULL;
	d.beta = 0.3f;
	check_gemm_emulated(ctx, &d);
	/* k = 0: zeros plus the epilogue */
	d = gemm(RT_F32, 3, 4, 0, 1, 0);
	d.bias = RT_BIAS_FULL;
	d.beta = 0.5f;
	d.ep = (struct rt_epilogue){ .act = RT_ACT_RELU, .has_residual = 1 };
	check_gemm_emulated(ctx, &d);
	rt_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Convolution: cuDNN's descriptors                                         */
/* ------------------------------------------------------------------------ */

static struct rt_conv_desc conv2d(int64_t n, int64_t c, int64_t m, int64_t group)
{
	return (struct rt_conv_desc){ .dtype = RT_F32,
		                      .nsp = 2,
		                      .n = n,
		                      .c = c,
		                      .m = m,
		                      .group = group,
		                      .stride = { 1, 1, 1 },
		                      .dil = { 1, 1, 1 } };
}

/* out of a convolution dim, by the ONNX formula */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pe)
{
	return (in + pb + pe - dil * (k - 1) - 1) / s + 1;
}

static void fill_out(struct rt_conv_desc *d, int transposed, const int64_t *outpad)
{
	for (int i = 0; i < d->nsp; i++)
		d->out[i] = transposed ? d->stride[i] * (d->in[i] - 1) + d->dil[i] * (d->k[i] - 1) +
		                                 1 - d->pad_begin[i] - d->pad_end[i] + outpad[i]
		                       : conv_out(d->in[i], d->k[i], d->stride[i], d->dil[i],
		                                  d->pad_begin[i], d->pad_end[i]);
}

static void read_tensor(cudnnTensorDescriptor_t t, int nb, int *dims, int *type)
{
	int got = 0, strides[8];
	cudnnDataType_t dt;
	CHECK(!cudnnGetTensorNdDescriptor(t, 8, &dt, &got, dims, strides));
	CHECK_EQ(got, nb);
	/* packed */
	for (int i = nb - 2; i >= 0; i--)
		CHECK_EQ(strides[i], strides[i + 1] * dims[i + 1]);
	CHECK_EQ(strides[nb - 1], 1);
	*type = (int)dt;
}

static void check_dims(const int *got, const int *want, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(got[i], want[i]);
}

/* Builds d's descriptors and compares what cuDNN holds with the expectation. */
static void check_conv_descs(const struct rt_conv_desc *d, int transposed, const int *x,
                             const int *w, const int *y, const int *pad, int nd)
{
	struct rtc_conv_geom g;
	struct rtc_conv_dnn dnn;
	char why[256] = "";
	int nb = nd + 2, dims[8], type, got, p[3], s[3], dl[3], group = 0;
	cudnnConvolutionMode_t mode;
	cudnnDataType_t ct, ft;
	cudnnTensorFormat_t fmt;
	cudnnMathType_t math;
	int status = rtc_conv_geom(d, transposed, &g, why, sizeof why);
	CHECK_EQ(status, RT_OK);
	if (status)
		return;
	CHECK_EQ(g.nd, nd);
	status = rtc_conv_dnn_build(&g, &dnn, why, sizeof why);
	CHECK_EQ(status, RT_OK);
	if (status) {
		fprintf(stderr, "  %s\n", why);
		return;
	}
	read_tensor(dnn.x, nb, dims, &type);
	check_dims(dims, x, nb);
	CHECK_EQ(type, d->dtype == RT_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT);
	read_tensor(dnn.y, nb, dims, &type);
	check_dims(dims, y, nb);
	CHECK(!cudnnGetFilterNdDescriptor(dnn.w, 8, &ft, &fmt, &got, dims));
	CHECK_EQ(got, nb);
	CHECK_EQ(fmt, CUDNN_TENSOR_NCHW);
	check_dims(dims, w, nb);
	CHECK(!cudnnGetConvolutionNdDescriptor(dnn.conv, 3, &got, p, s, dl, &mode, &ct));
	CHECK_EQ(got, nd);
	CHECK_EQ(mode, CUDNN_CROSS_CORRELATION);
	CHECK_EQ(ct, CUDNN_DATA_FLOAT);
	check_dims(p, pad, nd);
	for (int i = 0; i < nd; i++) {
		int j = i - (nd - d->nsp);
		CHECK_EQ(s[i], j < 0 ? 1 : d->stride[j]);
		CHECK_EQ(dl[i], j < 0 ? 1 : d->dil[j]);
	}
	CHECK(!cudnnGetConvolutionGroupCount(dnn.conv, &group));
	CHECK_EQ(group, d->group);
	CHECK(!cudnnGetConvolutionMathType(dnn.conv, &math));
	CHECK_EQ(math, d->dtype == RT_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH);
	read_tensor(dnn.bias, nb, dims, &type);
	CHECK_EQ(dims[1], d->m);
	rtc_conv_dnn_destroy(&dnn);
	CHECK(dnn.x == NULL && dnn.conv == NULL);
}

static void test_conv_descs(void)
{
	struct rtc_conv_geom g;
	struct rtc_conv_dnn dnn;
	char why[256];
	int64_t nopad[3] = { 0, 0, 0 }, outpad[3] = { 1, 0, 0 };
	/* 2-D: groups, dilation, stride, asymmetric pads (the extra padded explicitly) */
	struct rt_conv_desc d = conv2d(2, 4, 6, 2);
	d.in[0] = 9, d.in[1] = 11;
	d.k[0] = 3, d.k[1] = 3;
	d.stride[0] = 2;
	d.dil[1] = 2;
	d.pad_begin[0] = 1, d.pad_end[0] = 2;
	d.pad_begin[1] = 0, d.pad_end[1] = 2;
	fill_out(&d, 0, nopad);
	CHECK_EQ(d.out[0], 5);
	CHECK_EQ(d.out[1], 9);
	check_conv_descs(&d, 0, (const int[]){ 2, 4, 10, 13 }, (const int[]){ 6, 2, 3, 3 },
	                 (const int[]){ 2, 6, 5, 9 }, (const int[]){ 1, 0 }, 2);
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_OK);
	CHECK(g.prepad && !g.crop && !g.staged);
	CHECK_EQ(g.pad_x.rank, 4);
	CHECK_EQ(g.pad_x.pads[2], 0);
	CHECK_EQ(g.pad_x.pads[3], 0);
	CHECK_EQ(g.pad_x.pads[6], 1);
	CHECK_EQ(g.pad_x.pads[7], 2);
	CHECK(g.ws_algo >= (size_t)2 * 4 * 10 * 13 * 4);
	/* the descriptor's out must be cuDNN's */
	d.out[1] = 8;
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_OK);
	CHECK_EQ(rtc_conv_dnn_build(&g, &dnn, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "the descriptor's output is 2x6x5x8 but cuDNN's is 2x6x5x9");
	CHECK(dnn.x == NULL && dnn.conv == NULL);
	/* 1-D, as 2-D with a leading 1 */
	d = conv2d(1, 3, 5, 1);
	d.nsp = 1;
	d.in[0] = 20;
	d.k[0] = 4;
	d.stride[0] = 3;
	d.pad_begin[0] = d.pad_end[0] = 2;
	fill_out(&d, 0, nopad);
	CHECK_EQ(d.out[0], 7);
	check_conv_descs(&d, 0, (const int[]){ 1, 3, 1, 20 }, (const int[]){ 5, 3, 1, 4 },
	                 (const int[]){ 1, 5, 1, 7 }, (const int[]){ 0, 2 }, 2);
	/* 3-D in FP16 writing FP32: staged, Tensor Core math */
	d = conv2d(1, 2, 4, 1);
	d.nsp = 3;
	d.dtype = RT_F16;
	d.ydtype = RT_F32;
	for (int i = 0; i < 3; i++) {
		d.in[i] = 5 + i;
		d.k[i] = 3;
		d.stride[i] = d.dil[i] = 1;
		d.pad_begin[i] = d.pad_end[i] = 1;
	}
	fill_out(&d, 0, nopad);
	check_conv_descs(&d, 0, (const int[]){ 1, 2, 5, 6, 7 }, (const int[]){ 4, 2, 3, 3, 3 },
	                 (const int[]){ 1, 4, 5, 6, 7 }, (const int[]){ 1, 1, 1 }, 3);
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_OK);
	CHECK(g.staged && !g.prepad);
	CHECK(g.ws_algo >= (size_t)4 * 5 * 6 * 7 * 2);
	/* transposed, groups, asymmetric pads and output padding: cuDNN computes
	 * the whole 11x22 result, the crop takes rows [1, 12) and columns [0, 20) */
	d = conv2d(1, 4, 6, 2);
	d.in[0] = 5, d.in[1] = 7;
	d.k[0] = 3, d.k[1] = 4;
	d.stride[0] = 2, d.stride[1] = 3;
	d.pad_begin[0] = 1, d.pad_end[0] = 0;
	d.pad_begin[1] = 0, d.pad_end[1] = 2;
	fill_out(&d, 1, outpad);
	CHECK_EQ(d.out[0], 11);
	CHECK_EQ(d.out[1], 20);
	check_conv_descs(&d, 1, (const int[]){ 1, 4, 5, 7 }, (const int[]){ 4, 3, 3, 4 },
	                 (const int[]){ 1, 6, 11, 22 }, (const int[]){ 0, 0 }, 2);
	CHECK_EQ(rtc_conv_geom(&d, 1, &g, why, sizeof why), RT_OK);
	CHECK(g.crop && !g.prepad);
	CHECK_EQ(g.crop_y.pads[2], -1);
	CHECK_EQ(g.crop_y.pads[3], 0);
	CHECK_EQ(g.crop_y.pads[6], 1);
	CHECK_EQ(g.crop_y.pads[7], -2);
	/* symmetric transposed: no crop */
	d.pad_begin[0] = d.pad_end[0] = 1;
	d.pad_begin[1] = d.pad_end[1] = 1;
	fill_out(&d, 1, nopad);
	check_conv_descs(&d, 1, (const int[]){ 1, 4, 5, 7 }, (const int[]){ 4, 3, 3, 4 },
	                 (const int[]){ 1, 6, 9, 20 }, (const int[]){ 1, 1 }, 2);
	CHECK_EQ(rtc_conv_geom(&d, 1, &g, why, sizeof why), RT_OK);
	CHECK(!g.crop);
	/* refused */
	d.dtype = RT_I32;
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "Conv of i32");
	d.dtype = RT_F64;
	CHECK_EQ(rtc_conv_geom(&d, 1, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "ConvTranspose of f64");
	d.dtype = RT_F16;
	d.ydtype = RT_BF16;
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "Conv of f16 writing bf16");
	d.ydtype = 0;
	d.dtype = RT_F32;
	d.ep.has_residual = 1;
	CHECK_EQ(rtc_conv_geom(&d, 1, &g, why, sizeof why), RT_ERR_ARGUMENT);
	CHECK_STR(why, "residual");
	d.ep.has_residual = 0;
	d.nsp = 4;
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_ERR_ARGUMENT);
	d.nsp = 2;
	d.group = 4; /* 6 output channels */
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_ERR_ARGUMENT);
	/* empty batch: nothing to do */
	d.group = 2;
	d.n = 0;
	CHECK_EQ(rtc_conv_geom(&d, 0, &g, why, sizeof why), RT_OK);
	CHECK(g.noop);
}

/* ------------------------------------------------------------------------ */
/* Convolution: the pad and crop around cuDNN compute the asymmetric op     */
/* ------------------------------------------------------------------------ */

static int64_t elems(const int *dims, int n)
{
	int64_t e = 1;
	for (int i = 0; i < n; i++)
		e *= dims[i];
	return e;
}

static double max_err(const float *a, const float *b, int64_t n)
{
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		worst = e > worst || e != e ? e : worst;
	}
	return worst;
}

/* d with cuDNN's symmetric pads and extents, for the CPU's kernels. */
static struct rt_conv_desc symmetric(const struct rt_conv_desc *d, const struct rtc_conv_geom *g)
{
	struct rt_conv_desc s = *d;
	int lead = g->nd - d->nsp;
	for (int j = 0; j < d->nsp; j++) {
		s.pad_begin[j] = s.pad_end[j] = g->pad[lead + j];
		if (g->transposed)
			s.out[j] = g->ydims[2 + lead + j];
		else
			s.in[j] = g->xdims[2 + lead + j];
	}
	return s;
}

static void check_decomposition(struct rt_ctx *ctx, const struct rt_conv_desc *d, int transposed)
{
	struct rtc_conv_geom g;
	struct rt_conv_desc s;
	char why[256];
	int nb;
	int64_t nx, nw, ny, nfull = 0, nxp;
	float *x, *w, *want, *got, *xp = NULL, *full = NULL, *ws, *ws2;
	CHECK_EQ(rtc_conv_geom(d, transposed, &g, why, sizeof why), RT_OK);
	nb = g.nd + 2;
	s = symmetric(d, &g);
	nx = elems(g.xdims, nb);
	for (int j = 0; !transposed && j < d->nsp; j++)
		nx = nx / g.xdims[2 + g.nd - d->nsp + j] * d->in[j];
	nw = elems(g.wdims, nb);
	ny = d->n * d->m * g.out_sp;
	x = rand_buf(nx);
	w = rand_buf(nw);
	want = rand_buf(ny);
	got = rand_buf(ny);
	if (!transposed) {
		ws = malloc(rt_conv_workspace(d) + 16);
		ws2 = malloc(rt_conv_workspace(&s) + 16);
		nxp = elems(g.xdims, nb);
		xp = rand_buf(nxp);
		CHECK_EQ(rt_conv(ctx, d, x, w, NULL, NULL, want, ws), RT_OK);
		CHECK_EQ(rt_pad(ctx, &g.pad_x, x, xp), RT_OK);
		CHECK_EQ(rt_conv(ctx, &s, xp, w, NULL, NULL, got, ws2), RT_OK);
	} else {
		ws = malloc(rt_conv_transpose_workspace(d) + 16);
		ws2 = malloc(rt_conv_transpose_workspace(&s) + 16);
		nfull = elems(g.ydims, nb);
		full = rand_buf(nfull);
		CHECK_EQ(rt_conv_transpose(ctx, d, x, w, NULL, want, ws), RT_OK);
		CHECK_EQ(rt_conv_transpose(ctx, &s, x, w, NULL, g.crop ? full : got, ws2), RT_OK);
		if (g.crop)
			CHECK_EQ(rt_pad(ctx, &g.crop_y, full, got), RT_OK);
	}
	if (!(max_err(want, got, ny) < 1e-4))
		fprintf(stderr, "  %s nsp %d: error %g\n", transposed ? "ConvTranspose" : "Conv",
		        d->nsp, max_err(want, got, ny));
	CHECK(max_err(want, got, ny) < 1e-4);
	free(x);
	free(w);
	free(want);
	free(got);
	free(xp);
	free(full);
	free(ws);
	free(ws2);
}

static void test_conv_decomposition(void)
{
	struct rt_ctx *ctx;
	int64_t nopad[3] = { 0, 0, 0 }, outpad[3] = { 1, 2, 0 };
	struct rt_conv_desc d = conv2d(2, 4, 6, 2);
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	/* forward, pads heavier at the end, then at the beginning */
	d.in[0] = 9, d.in[1] = 11;
	d.k[0] = 3, d.k[1] = 3;
	d.stride[0] = 2;
	d.dil[1] = 2;
	d.pad_begin[0] = 1, d.pad_end[0] = 2;
	d.pad_begin[1] = 3, d.pad_end[1] = 0;
	fill_out(&d, 0, nopad);
	check_decomposition(ctx, &d, 0);
	/* "same" with an odd total, as TF exports */
	d = conv2d(1, 3, 8, 1);
	d.in[0] = 8, d.in[1] = 8;
	d.k[0] = 2, d.k[1] = 4;
	d.pad_begin[0] = 0, d.pad_end[0] = 1;
	d.pad_begin[1] = 1, d.pad_end[1] = 2;
	fill_out(&d, 0, nopad);
	check_decomposition(ctx, &d, 0);
	/* 1-D and 3-D */
	d = conv2d(2, 2, 3, 1);
	d.nsp = 1;
	d.in[0] = 17, d.k[0] = 5, d.stride[0] = 2, d.pad_begin[0] = 0, d.pad_end[0] = 3;
	fill_out(&d, 0, nopad);
	check_decomposition(ctx, &d, 0);
	d = conv2d(1, 2, 2, 2);
	d.nsp = 3;
	for (int i = 0; i < 3; i++) {
		d.in[i] = 4 + i, d.k[i] = 2, d.stride[i] = 1, d.dil[i] = 1;
		d.pad_begin[i] = i, d.pad_end[i] = 2 - i;
	}
	fill_out(&d, 0, nopad);
	check_decomposition(ctx, &d, 0);
	/* transposed: asymmetric pads, output padding (zeros past the result) */
	d = conv2d(1, 4, 6, 2);
	d.in[0] = 5, d.in[1] = 7;
	d.k[0] = 3, d.k[1] = 4;
	d.stride[0] = 2, d.stride[1] = 3;
	d.pad_begin[0] = 1, d.pad_end[0] = 0;
	d.pad_begin[1] = 0, d.pad_end[1] = 2;
	fill_out(&d, 1, outpad);
	check_decomposition(ctx, &d, 1);
	/* transposed 1-D with dilation, symmetric pads, output padding */
	d = conv2d(2, 3, 2, 1);
	d.nsp = 1;
	d.in[0] = 6, d.k[0] = 3, d.stride[0] = 3, d.dil[0] = 2;
	d.pad_begin[0] = d.pad_end[0] = 2;
	fill_out(&d, 1, outpad);
	check_decomposition(ctx, &d, 1);
	rt_ctx_destroy(ctx);
}

TESTS(T(test_grid) T(test_open_arguments) T(test_open_weights) T(test_open_no_device)
              T(test_gemm_layouts) T(test_gemm_epilogues) T(test_gemm_dtypes) T(test_gemm_emulated)
                      T(test_conv_descs) T(test_conv_decomposition))
