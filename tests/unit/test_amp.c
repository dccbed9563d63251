/*
 * test_amp.c - the cost model and the mixed-precision pass: least squares on
 * synthetic data, GPU profiles and their file format, --amp-lists, and the
 * pass's pins, range checks and cast bookkeeping on small IR modules (the
 * traversals themselves are covered by golden tests, tests/golden/amp_*).
 */
#include "passes/amp.h"
#include "testutil.h"

#include <math.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Least squares                                                            */
/* ------------------------------------------------------------------------ */

/* A deterministic pseudo-random value in [-1, 1) (Knuth's multiplicative
 * hash: uncorrelated with the features below). */
static double noise(int i)
{
	uint32_t h = (uint32_t)i * 2654435761u;
	return (h >> 8) / 8388608.0 - 1;
}

static void test_fit_exact(void)
{
	enum { N = 50, K = 3 };
	double x[N * K], y[N], w[K], err;
	for (int i = 0; i < N; i++) {
		x[i * K] = 1;
		x[i * K + 1] = i;
		x[i * K + 2] = noise(i) * 10;
		y[i] = 3 + 2 * x[i * K + 1] + 0.5 * x[i * K + 2];
	}
	CHECK(cost_fit(x, y, N, K, w, &err));
	CHECK(fabs(w[0] - 3) < 1e-6 && fabs(w[1] - 2) < 1e-6 && fabs(w[2] - 0.5) < 1e-6);
	CHECK(err < 1e-9);
}

/* Campo's half-time model T16 = c0 + c1 F/P + c2 B/BW + sigma T32, fitted
 * from "measurements" with 2% multiplicative noise. */
static void test_fit_campo_model(void)
{
	enum { N = 200, K = 4 };
	double x[N * K], y[N], w[K], err;
	const double c[K] = { 4.0, 1.3, 0.9, 0.15 };
	for (int i = 0; i < N; i++) {
		double f = 1 + (i % 17) * 3.5, b = 2 + (i % 11) * 7.25, t32 = 5 + (i % 23) * 2.1;
		x[i * K] = 1;
		x[i * K + 1] = f;
		x[i * K + 2] = b;
		x[i * K + 3] = t32;
		y[i] = (c[0] + c[1] * f + c[2] * b + c[3] * t32) * (1 + 0.02 * noise(i));
	}
	CHECK(cost_fit(x, y, N, K, w, &err));
	/* the slopes to within 3%; the intercept carries the noise (about 2
	 * us on times near 100 us) */
	for (int k = 1; k < K; k++)
		CHECK(fabs(w[k] - c[k]) < 0.03 * c[k]);
	CHECK(fabs(w[0] - c[0]) < 1.0);
	CHECK(err < 0.02);
}

static void test_fit_degenerate(void)
{
	double x[4] = { 1, 2, 3, 4 }, y[2] = { 1, 2 }, w[2];
	CHECK(!cost_fit(x, y, 1, 2, w, NULL)); /* fewer samples than unknowns */
	CHECK(!cost_fit(x, y, 2, 0, w, NULL));
	CHECK(!cost_fit(x, y, 2, 17, w, NULL));
	{
		double z[4] = { 0 }, yz[2] = { 0 };
		CHECK(!cost_fit(z, yz, 2, 2, w, NULL)); /* no information at all */
	}
}

/* ------------------------------------------------------------------------ */
/* Profiles                                                                 */
/* ------------------------------------------------------------------------ */

static const char *write_temp(const char *text)
{
	static char path[64];
	FILE *f;
	snprintf(path, sizeof path, "/tmp/onnxc_test_amp_%d.txt", (int)getpid());
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_builtin_profiles(void)
{
	const char *names[] = { "v100", "t4", "rtx2080ti", "a100", "rtx4090", "h100", "h200" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct gpu_profile *p = cost_builtin(names[i]);
		CHECK(p && p->source && p->fp32_tflops > 0 && p->tc_fp16_tflops > p->fp32_tflops &&
		      p->mem_gbs > 0 && p->launch_us > 0);
		CHECK_STR(cost_builtin_names(), names[i]);
	}
	CHECK(!cost_builtin("h300"));
	/* a cast costs its launch plus 6 bytes an element at full bandwidth */
	CHECK(fabs(cost_cast(cost_builtin("h200"), 4800000) - (2.0 + 6.0)) < 1e-9);
}

static void test_profile_file(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct gpu_profile p;
	const char *path = write_temp("# measured\nname = lab-gpu\nfp32_tflops = 10\n"
	                              "fp16_tflops = 20\ntc_fp16_tflops = 80\nmem_gbs = 500\n"
	                              "launch_us = 3.5\nmodel.matmul = 1 2 3 0.25\n"
	                              "model.tensor_core = 0.5 1 1 0\n");
	ctx_collect(&ctx, &d);
	CHECK(cost_load_profile(&ctx, path, &p));
	CHECK(!strcmp(p.name, "lab-gpu") && p.fp32_tflops == 10 && p.launch_us == 3.5);
	CHECK(p.ops[IR_OP_MATMUL].fitted && p.ops[IR_OP_MATMUL].sigma == 0.25);
	CHECK(p.tensor_core.fitted && p.tensor_core.c0 == 0.5);
	CHECK(p.cast_c_us == 3.5 && p.cast_r_ns > 0); /* defaults from launch and bandwidth */
	CHECK(cost_load_profile(&ctx, "a100", &p) && !strcmp(p.name, "a100"));

	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "fp32_tflops = 1\nwarp = 3\n", ":2: unknown key 'warp'" },
		{ "fp32_tflops = fast\n", "is not a non-negative number" },
		{ "fp32_tflops = -1\n", "is not a non-negative number" },
		{ "fp32_tflops\n", ":1: expected KEY = VALUE" },
		{ "model.conv = 1 2\n", "needs an op name and four coefficients" },
		{ "model.nosuchop = 1 2 3 4\n", "needs an op name" },
		{ "fp32_tflops = 1\n", "are required and must be positive" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ctx_collect(&ctx, &d);
		CHECK(!cost_load_profile(&ctx, write_temp(bad[i].text), &p));
		CHECK_STR(d.text, bad[i].msg);
	}
	ctx_collect(&ctx, &d);
	CHECK(!cost_load_profile(&ctx, "/nonexistent/gpu.txt", &p));
	CHECK_STR(d.text, "neither a built-in profile");
	unlink(path);
}

static void test_every_op_has_a_reason(void)
{
	for (int i = 0; i < IR_OP_COUNT; i++)
		if (!amp_class_reason((enum ir_op)i) || !*amp_class_reason((enum ir_op)i)) {
			fprintf(stderr, "op %s has no mixed-precision reason\n", ir_ops[i].name);
			CHECK(0);
		}
}

static void test_amp_lists(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct amp_options o = { 0 };
	const char *path =
	        write_temp("# move ops\nallow: Softmax, exp\n\ndeny: Relu # keep it\nclear:\n");
	ctx_collect(&ctx, &d);
	CHECK(amp_read_lists(&ctx, path, &o));
	CHECK(o.override[IR_OP_SOFTMAX] && o.override_class[IR_OP_SOFTMAX] == IR_AMP_ALLOW);
	CHECK(o.override[IR_OP_EXP] && o.override_class[IR_OP_EXP] == IR_AMP_ALLOW);
	CHECK(o.override[IR_OP_RELU] && o.override_class[IR_OP_RELU] == IR_AMP_DENY);
	CHECK(!o.override[IR_OP_MATMUL]);
	ctx_collect(&ctx, &d);
	CHECK(!amp_read_lists(&ctx, write_temp("maybe: Relu\nallow: Frobnicate\nRelu\n"), &o));
	CHECK_STR(d.text, ":1: unknown class 'maybe'");
	CHECK_STR(d.text, ":2: unknown op 'Frobnicate'");
	CHECK_STR(d.text, ":3: expected CLASS: OP");
	unlink(path);
}

/* ------------------------------------------------------------------------ */
/* The pass on small modules                                                */
/* ------------------------------------------------------------------------ */

static struct ir_module *parse(struct ir_ctx *ctx, const char *text)
{
	struct ir_module *m = ir_parse(ctx, text, strlen(text));
	CHECK(m != NULL);
	return m;
}

static const char text_mm[] = "onnxc-ir 1\n"
                              "module \"g\"\n"
                              "input %x : f32[256,256]\n"
                              "input %w : f32[256,256]\n"
                              "const %c : f32[] = [100000]\n"
                              "const %h : f32[] = [3]\n"
                              "%a : f32[256,256] = matmul(%x, %w) @mm1\n"
                              "%r : f32[256,256] = relu(%a) @relu\n"
                              "%b : f32[256,256] = matmul(%r, %w) @mm2\n"
                              "%s : f32[256,256] = mul(%b, %c) @scale\n"
                              "%t : f32[256,256] = mul(%b, %h) @scale2\n"
                              "output %s\n"
                              "output %t\n";

static int count_op(const struct ir_module *m, enum ir_op op)
{
	int n = 0;
	IR_FOR_EACH_NODE(m, x)
	n += x->op == op;
	return n;
}

static const struct ir_node *node(const struct ir_module *m, const char *name)
{
	IR_FOR_EACH_NODE(m, x)
	if (!strcmp(x->name, name))
		return x;
	return NULL;
}

static void test_pass_greedy(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct amp_options o = { .policy = AMP_GREEDY };
	struct amp_result r;
	struct ir_module *m;
	ctx_collect(&ctx, &d);
	m = parse(&ctx, text_mm);
	CHECK(pass_amp(m, &o, &r));
	CHECK_EQ(ir_verify(m), 0);
	/* mm1, relu and mm2 in half; scale reads 1e5, beyond FP16, and scale2
	 * (infer) is not between half allow nodes: greedy keeps it FP32 */
	CHECK_EQ(r.half_nodes, 3);
	CHECK_EQ(r.fp32_nodes, 2);
	CHECK_STR(r.nodes[node(m, "scale")->id].reason, "beyond the FP16 range");
	CHECK_EQ(node(m, "mm2")->out[0]->type.dtype, IR_F16);
	CHECK_EQ(node(m, "scale2")->out[0]->type.dtype, IR_F32);
	/* casts: x and w to half (w shared by both MatMuls), b back to FP32
	 * once for both readers */
	CHECK_EQ(r.casts_inserted, 3);
	CHECK_EQ(r.casts_folded, 0);
	CHECK_EQ(count_op(m, IR_OP_CAST), 3);
	/* outputs keep their names and types */
	CHECK(!strcmp(m->outputs[1]->name, "t") && m->outputs[1]->type.dtype == IR_F32);
	ir_module_free(m);
}

static void test_pass_pins(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	const char *keep[] = { "mm2" }, *force[] = { "scale" };
	struct amp_options o = { .policy = AMP_GREEDY,
		                 .keep_fp32 = keep,
		                 .nkeep = 1,
		                 .force_half = force,
		                 .nforce = 1,
		                 .half = IR_BF16 };
	struct amp_result r;
	struct ir_module *m;
	ctx_collect(&ctx, &d);
	m = parse(&ctx, text_mm);
	CHECK(pass_amp(m, &o, &r));
	CHECK_EQ(ir_verify(m), 0);
	CHECK_EQ(node(m, "mm2")->out[0]->type.dtype, IR_F32);
	CHECK_STR(r.nodes[node(m, "mm2")->id].reason, "--keep-fp32");
	/* BF16 has FP32's range: 1e5 is no reason to stay FP32 */
	CHECK_EQ(node(m, "scale")->out[0]->type.dtype, IR_BF16);
	CHECK_EQ(node(m, "scale2")->out[0]->type.dtype, IR_F32);
	CHECK_EQ(node(m, "mm1")->out[0]->type.dtype, IR_BF16);
	/* scale2 reads the constant 3: folded into a BF16 weight */
	ir_module_free(m);
}

static void test_pass_cost_keeps_small(void)
{
	static const char small[] = "onnxc-ir 1\n"
	                            "module \"g\"\n"
	                            "input %x : f32[4,4]\n"
	                            "input %w : f32[4,4]\n"
	                            "%y : f32[4,4] = matmul(%x, %w) @mm\n"
	                            "output %y\n";
	struct ir_ctx ctx;
	struct diag_buf d;
	struct amp_options o = { 0 };
	struct amp_result r;
	struct ir_module *m;
	ctx_collect(&ctx, &d);
	m = parse(&ctx, small);
	CHECK(pass_amp(m, &o, &r));
	CHECK_EQ(r.half_nodes, 0);
	CHECK_EQ(r.casts_inserted, 0);
	CHECK(r.predicted_us_mixed <= r.predicted_us_fp32);
	CHECK_STR(r.nodes[node(m, "mm")->id].reason, "FP32 (T1)");
	ir_module_free(m);
}

TESTS(T(test_fit_exact) T(test_fit_campo_model) T(test_fit_degenerate) T(test_builtin_profiles)
              T(test_every_op_has_a_reason) T(test_profile_file) T(test_amp_lists)
                      T(test_pass_greedy) T(test_pass_pins) T(test_pass_cost_keeps_small))
