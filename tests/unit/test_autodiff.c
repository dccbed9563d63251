/*
 * test_autodiff.c - the autodiff pass (passes/autodiff.c) checked against
 * central finite differences, rule by rule.
 *
 * Each case is a small module in IR text. The harness appends the loss
 * sum(output * W) over every float output (W fixed pseudo-random, so every
 * output element matters), differentiates it with respect to every float
 * graph input, checks the verifier, and evaluates the gradients with the
 * reference interpreter (ir_input_to_const + ir_fold_all). Each element's
 * gradient is compared with (L(x + h) - L(x - h)) / 2h, every evaluation on
 * a module parsed afresh. Inputs whose name starts with 'p' take positive
 * values (variances, logarithms); the input named 'seed' is the loss scale
 * (bound to 3). Cases are f64 where the op accepts it, so the differences
 * are accurate to about 1e-9.
 */
#include "passes/autodiff.h"
#include "passes/passes.h"
#include "testutil.h"

#include <math.h>

enum { MAX_IN = 8, TRAIN = 1 };

/* A deterministic pseudo-random value in [-1, 1) for (stream, i). */
static double noise(uint32_t stream, int64_t i)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ stream * 0x9e3779b9u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return (h >> 8) / 8388608.0 - 1;
}

struct gcase {
	const char *name;
	const char *text; /* the module body: inputs, constants, nodes, outputs */
	int flags;        /* TRAIN: ad_train_mode first */
	struct ir_ctx ctx;
	struct diag_buf diag;
	int nin;
	char *in_name[MAX_IN];
	struct ir_type in_type[MAX_IN];
	double *in_data[MAX_IN];
};

static struct ir_module *parse_case(struct gcase *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct ir_module *m;
	fprintf(f, "onnxc-ir 1\nmodule \"%s\"\n%s", c->name, c->text);
	fclose(f);
	m = ir_parse(&c->ctx, text, len);
	free(text);
	if (!m)
		fprintf(stderr, "%s: parse failed:\n%s\n", c->name, c->diag.text);
	return m;
}

static struct ir_value *typed(struct ir_module *m, struct ir_node *n)
{
	char err[256];
	if (!ir_infer_node(m, n, err, sizeof err)) {
		fprintf(stderr, "loss: %s\n", err);
		abort();
	}
	return n->out[0];
}

/* sum(output * W) over every float output, in the outputs' dtypes, cast to
 * f64 and added. */
static struct ir_value *add_loss(struct ir_module *m)
{
	struct ir_value *total = NULL;
	int nout = m->noutputs;
	for (int i = 0; i < nout; i++) {
		struct ir_value *o = m->outputs[i], *w, *in[2];
		int64_t n = ir_type_elems(&o->type), axes[IR_MAX_RANK];
		void *data;
		struct ir_node *p;
		if (!ir_dtypes[o->type.dtype].is_float)
			continue;
		data = calloc((size_t)(n ? n : 1), 8);
		for (int64_t k = 0; k < n; k++)
			ir_store_f64(o->type.dtype, data, (size_t)k, noise(1000 + (uint32_t)i, k));
		w = ir_add_const(m, ir_unique_name(m, "loss.w"), &o->type, data);
		free(data);
		in[0] = o;
		in[1] = w;
		o = typed(m, ir_add_node(m, IR_OP_MUL, "loss", in, 2, NULL, 1));
		if (o->type.rank) {
			for (int d = 0; d < o->type.rank; d++)
				axes[d] = d;
			p = ir_add_node(m, IR_OP_REDUCE_SUM, "loss", &o, 1, NULL, 1);
			ir_set_ints(m, p, "axes", axes, o->type.rank);
			ir_set_i(m, p, "keepdims", 0);
			o = typed(m, p);
		}
		if (o->type.dtype != IR_F64) {
			p = ir_add_node(m, IR_OP_CAST, "loss", &o, 1, NULL, 1);
			ir_set_t(m, p, "to", IR_F64);
			o = typed(m, p);
		}
		if (total) {
			in[0] = total;
			in[1] = o;
			o = typed(m, ir_add_node(m, IR_OP_ADD, "loss", in, 2, NULL, 1));
		}
		total = o;
	}
	return total;
}

/* Parses the case and appends the loss (after ad_train_mode with TRAIN). */
static struct ir_module *build(struct gcase *c, struct ir_value **loss)
{
	struct ir_module *m = parse_case(c);
	if (!m)
		return NULL;
	if (c->flags & TRAIN)
		CHECK(ad_train_mode(m, 0.1f, NULL, 0, NULL));
	*loss = add_loss(m);
	return m;
}

/* Binds every input; element `elem` of input `which` moves by delta. */
static void bind(struct gcase *c, struct ir_module *m, int which, int64_t elem, double delta)
{
	for (int i = 0; i < c->nin; i++) {
		struct ir_value *v = ir_find_value(m, c->in_name[i]);
		int64_t n = ir_type_elems(&c->in_type[i]);
		void *data = calloc((size_t)(n ? n : 1), 8);
		for (int64_t k = 0; k < n; k++)
			ir_store_f64(c->in_type[i].dtype, data, (size_t)k,
			             c->in_data[i][k] + (i == which && k == elem ? delta : 0));
		CHECK(v && ir_input_to_const(m, v, data));
		free(data);
	}
}

/* Is a node under guard g in a branch not taken: some guard up the chain
 * folded to false? */
static bool not_taken(const struct ir_value *g)
{
	for (; g; g = g->kind == IR_VAL_NODE ? g->def->guard : NULL)
		if (g->kind == IR_VAL_CONST && g->data && !*(const uint8_t *)g->data)
			return true;
	return false;
}

/* Evaluates m; what may stay unfolded is a branch not taken. */
static bool fold(struct gcase *c, struct ir_module *m)
{
	char err[512];
	int left = ir_fold_all(m, err, sizeof err);
	IR_FOR_EACH_NODE(m, n)
	left -= left > 0 && not_taken(n->guard);
	if (left != 0) {
		fprintf(stderr, "%s: evaluation left %d nodes: %s\n", c->name, left,
		        left < 0 ? err : "");
		test_failures++;
		return false;
	}
	return true;
}

static double loss_at(struct gcase *c, int which, int64_t elem, double delta)
{
	struct ir_value *loss;
	struct ir_module *m = build(c, &loss);
	double l = NAN;
	if (!m)
		return NAN;
	bind(c, m, which, elem, delta);
	if (fold(c, m))
		l = ir_load_f64(loss->type.dtype, loss->data, 0);
	ir_module_free(m);
	return l;
}

static bool is_seed(const struct gcase *c, int i) { return !strcmp(c->in_name[i], "seed"); }

/* The whole check of one case; returns the number of gradient mismatches. */
static int check_case(const char *name, const char *text, int flags)
{
	struct gcase c = { .name = name, .text = text, .flags = flags };
	struct ir_module *m;
	struct ir_value *loss, *seed = NULL, *wrt[MAX_IN], *grads[MAX_IN];
	int nwrt = 0, wrt_in[MAX_IN], bad = 0, compared = 0;
	double scale = 1;
	ctx_collect(&c.ctx, &c.diag);
	m = build(&c, &loss);
	CHECK(m != NULL);
	if (!m)
		return 1;
	c.nin = m->ninputs;
	IR_ASSERT(c.nin <= MAX_IN);
	for (int i = 0; i < c.nin; i++) {
		struct ir_value *v = m->inputs[i];
		int64_t n = ir_type_elems(&v->type);
		c.in_name[i] = strdup(v->name);
		c.in_type[i] = v->type;
		c.in_data[i] = calloc((size_t)(n ? n : 1), sizeof(double));
		for (int64_t k = 0; k < n; k++) {
			double r = noise((uint32_t)i + 1, k);
			/* inputs named p... are positive, h... within [-0.5, 0.5], q...
			 * above 1.5 (for the ops defined only there) */
			c.in_data[i][k] = v->name[0] == 'p'   ? 1 + 0.5 * r
			                  : v->name[0] == 'h' ? 0.5 * r
			                  : v->name[0] == 'q' ? 2 + 0.5 * r
			                                      : r;
		}
		if (is_seed(&c, i)) {
			seed = v;
			c.in_data[i][0] = scale = 3;
		} else if (ir_dtypes[v->type.dtype].is_float) {
			wrt_in[nwrt] = i;
			wrt[nwrt++] = v;
		}
	}
	CHECK(ad_gradients(m, loss, seed, wrt, nwrt, grads));
	if (c.diag.len)
		fprintf(stderr, "%s: %s", name, c.diag.text);
	CHECK_EQ(ir_verify(m), 0);
	/* the backward nodes carry the guards they need: the pipeline's
	 * pass_guards finds nothing to strengthen */
	{
		int nguards = 0, changed = 0;
		struct ir_value **had = calloc((size_t)m->nnodes + 1, sizeof *had);
		IR_FOR_EACH_NODE(m, n)
		had[nguards++] = n->guard;
		pass_guards(m);
		nguards = 0;
		IR_FOR_EACH_NODE(m, n)
		changed += had[nguards++] != n->guard;
		CHECK_EQ(changed, 0);
		free(had);
	}
	for (int i = 0; i < nwrt; i++) {
		char want[256];
		snprintf(want, sizeof want, "grad/%s", wrt[i]->name);
		CHECK(grads[i] && grads[i]->kind == IR_VAL_NODE);
		CHECK(grads[i] && ir_type_eq(&grads[i]->type, &wrt[i]->type));
		CHECK(grads[i] && !strcmp(grads[i]->name, want));
		if (grads[i])
			ir_add_output(m, grads[i]);
	}
	CHECK_EQ(ir_verify(m), 0);
	if (getenv("AD_PRINT") && !strcmp(getenv("AD_PRINT"), name))
		ir_print(m, stderr);
	bind(&c, m, -1, 0, 0);
	if (fold(&c, m)) {
		for (int w = 0; w < nwrt; w++) {
			int i = wrt_in[w];
			bool f32 = c.in_type[i].dtype != IR_F64;
			double h = f32 ? 1.0 / 1024 : 1e-5, atol = f32 ? 2e-3 : 1e-6,
			       rtol = f32 ? 1e-2 : 1e-5;
			for (int64_t k = 0; k < ir_type_elems(&c.in_type[i]); k++) {
				double fd =
				        (loss_at(&c, i, k, h) - loss_at(&c, i, k, -h)) / (2 * h);
				double ad = ir_load_f64(grads[w]->type.dtype, grads[w]->data,
				                        (size_t)k);
				fd *= scale;
				compared++;
				if (!(fabs(ad - fd) <= atol + rtol * fabs(fd))) {
					if (bad < 5)
						fprintf(stderr,
						        "%s: d loss / d %s[%lld]: autodiff %.9g, "
						        "finite differences %.9g\n",
						        name, c.in_name[i], (long long)k, ad, fd);
					bad++;
				}
			}
		}
	}
	CHECK(compared > 0);
	if (bad)
		fprintf(stderr, "%s: %d gradient element(s) differ\n", name, bad);
	if (getenv("AD_VERBOSE"))
		fprintf(stderr, "%s: %d elements compared\n", name, compared);
	test_failures += bad;
	ir_module_free(m);
	for (int i = 0; i < c.nin; i++) {
		free(c.in_name[i]);
		free(c.in_data[i]);
	}
	return bad;
}

#define CASE(text)       check_case(__func__, text, 0)
#define CASE_NAMED(n, t) check_case(n, t, 0)

/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */
/* ------------------------------------------------------------------------ */

static void test_unary(void)
{
	static const struct {
		const char *op, *attrs, *in;
	} ops[] = {
		{ "neg", "", "x" },
		{ "abs", "", "x" },
		{ "relu", "", "x" },
		{ "sqrt", "", "px" },
		{ "reciprocal", "", "px" },
		{ "exp", "", "x" },
		{ "log", "", "px" },
		{ "erf", "", "x" },
		{ "tanh", "", "x" },
		{ "sigmoid", "", "x" },
		{ "sin", "", "x" },
		{ "cos", "", "x" },
		{ "tan", "", "x" },
		{ "asin", "", "hx" },
		{ "acos", "", "hx" },
		{ "atan", "", "x" },
		{ "sinh", "", "x" },
		{ "cosh", "", "x" },
		{ "asinh", "", "x" },
		{ "atanh", "", "hx" },
		{ "acosh", "", "qx" },
		{ "mish", "", "x" },
		{ "shrink", " {bias=0.2, lambd=0.3}", "x" },
		{ "softplus", "", "x" },
		{ "softsign", "", "x" },
		{ "leaky_relu", " {alpha=0.1}", "x" },
		{ "elu", " {alpha=0.7}", "x" },
		{ "celu", " {alpha=0.7}", "x" },
		{ "selu", " {alpha=1.6732632, gamma=1.050701}", "x" },
		{ "thresholded_relu", " {alpha=0.2}", "x" },
		{ "hard_sigmoid", " {alpha=0.3, beta=0.5}", "x" },
		{ "clip", " {min=-0.5, max=0.4}", "x" },
		{ "floor", "", "x" },
		{ "sign", "", "x" },
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		char text[512];
		snprintf(text, sizeof text,
		         "input %%%s : f64[2,3]\n"
		         "%%y : f64[2,3] = %s(%%%s)%s @n\n"
		         "output %%y\n",
		         ops[i].in, ops[i].op, ops[i].in, ops[i].attrs);
		CASE_NAMED(ops[i].op, text);
	}
}

/* hard_swish and hard_sigmoid across their kinks: inputs scaled to [-4, 4] */
static void test_hard_ops(void)
{
	CASE("input %x : f64[3,4]\n"
	     "const %s : f64[] = [4]\n"
	     "%xs : f64[3,4] = mul(%x, %s) @s\n"
	     "%y : f64[3,4] = hard_swish(%xs) @hs\n"
	     "%z : f64[3,4] = hard_sigmoid(%xs) {alpha=0.2, beta=0.5} @hsig\n"
	     "output %y\noutput %z\n");
}

static void test_cast_copy(void)
{
	CASE("input %x : f32[2,3]\n"
	     "%y : f64[2,3] = cast(%x) {to=f64} @c\n"
	     "%z : f64[2,3] = copy(%y) @cp\n"
	     "output %z\n");
}

static void test_binary_broadcast(void)
{
	static const char *const ops[] = { "add", "sub", "mul", "div", "min", "max" };
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		char text[512];
		snprintf(text, sizeof text,
		         "input %%px : f64[2,3,4]\n"
		         "input %%py : f64[3,1]\n"
		         "%%y : f64[2,3,4] = %s(%%px, %%py) @n\n"
		         "%%z : f64[2,3,4] = %s(%%py, %%px) @m\n"
		         "output %%y\noutput %%z\n",
		         ops[i], ops[i]);
		CASE_NAMED(ops[i], text);
	}
}

static void test_pow(void)
{
	CASE("input %px : f64[2,3]\n" /* general: both operands */
	     "input %py : f64[3]\n"
	     "%y : f64[2,3] = pow(%px, %py) @p\n"
	     "output %y\n");
	CASE("input %x : f64[2,3]\n" /* constant exponents, float and integer */
	     "const %e : f64[] = [3]\n"
	     "const %k : i64[3] = [2, 1, 3]\n"
	     "%y : f64[2,3] = pow(%x, %e) @p\n"
	     "%z : f64[2,3] = pow(%x, %k) @q\n"
	     "output %y\noutput %z\n");
}

static void test_prelu_where_mask(void)
{
	CASE("input %x : f64[2,3,4]\n"
	     "input %s : f64[3,1]\n"
	     "%y : f64[2,3,4] = prelu(%x, %s) @p\n"
	     "output %y\n");
	CASE("input %x : f64[2,1,4]\n"
	     "input %y : f64[3,1]\n"
	     "const %c : bool[3,4] = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0]\n"
	     "%z : f64[2,3,4] = where(%c, %x, %y) @w\n"
	     "output %z\n");
	/* dropout in training: a multiply by a scaled mask */
	CASE("input %x : f64[2,3]\n"
	     "const %mask : f64[2,3] = [2, 0, 2, 2, 0, 0]\n"
	     "%y : f64[2,3] = mul(%x, %mask) @drop\n"
	     "output %y\n");
	/* resize: one matmul by the interpolation weights per resized
	 * dimension (last, second to last, and an inner one via transposes) */
	CASE("input %x : f64[1,2,3,4]\n"
	     "%y : f64[1,2,6,8] = resize(%x) {mode=\"nearest\", coord=\"asymmetric\", "
	     "nearest=\"floor\", cubic_a=-0.75, exclude_outside=0, extrapolation=0, "
	     "scales=[1,1,2,2], sizes=[1,2,6,8], roi=[]} @up\n"
	     "output %y\n");
	CASE("input %x : f64[1,1,3,5]\n"
	     "%y : f64[1,1,5,7] = resize(%x) {mode=\"linear\", coord=\"half_pixel\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.75, exclude_outside=0, "
	     "extrapolation=0, scales=[], sizes=[1,1,5,7], roi=[]} @lin\n"
	     "output %y\n");
	CASE("input %x : f64[2,4,6]\n"
	     "%y : f64[2,3,4] = resize(%x) {mode=\"cubic\", coord=\"align_corners\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.5, exclude_outside=1, "
	     "extrapolation=0, scales=[], sizes=[2,3,4], roi=[]} @cubic\n"
	     "output %y\n");
	CASE("input %x : f64[2,5]\n"
	     "%y : f64[2,4] = resize(%x) {mode=\"linear\", coord=\"tf_crop_and_resize\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.75, exclude_outside=0, "
	     "extrapolation=3, scales=[], sizes=[2,4], roi=[0,-0.2,1,1.1]} @crop\n"
	     "output %y\n");
	CASE("input %x : f64[2,3,4,2,2]\n"
	     "%y : f64[2,5,3,2,2] = resize(%x) {mode=\"linear\", coord=\"pytorch_half_pixel\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.75, exclude_outside=0, "
	     "extrapolation=0, scales=[], sizes=[2,5,3,2,2], roi=[]} @inner\n"
	     "output %y\n");
	/* upsampling by 10: each input feeds 10 outputs per dimension, past
	 * the sparse path's 8, so every dimension goes the dense way */
	CASE("input %x : f64[2,2,3]\n"
	     "%y : f64[20,20,30] = resize(%x) {mode=\"linear\", coord=\"half_pixel\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.75, exclude_outside=0, "
	     "extrapolation=0, scales=[10,10,10], sizes=[20,20,30], roi=[]} @x10\n"
	     "output %y\n");
	/* a crop whose every output extrapolates along one dimension */
	CASE("input %x : f64[2,5]\n"
	     "%y : f64[2,3] = resize(%x) {mode=\"linear\", coord=\"tf_crop_and_resize\", "
	     "nearest=\"round_prefer_floor\", cubic_a=-0.75, exclude_outside=0, "
	     "extrapolation=3, scales=[], sizes=[2,3], roi=[0,1.5,1,2]} @out\n"
	     "output %y\n");
	/* the dropout op: the same mask drawn again for the gradient */
	CASE("input %x : f64[4,8]\n"
	     "const %dseed : i64[] = [7]\n"
	     "%y : f64[4,8] = dropout(%x, %dseed) {ratio=0.375, salt=2} @drop\n"
	     "output %y\n");
}

/* a value with several uses sums its gradients; an input the loss does not
 * read gets zeros; the loss scale multiplies everything */
static void test_accumulate_seed(void)
{
	CASE("input %x : f64[2,3]\n"
	     "input %unused : f64[4,5]\n"
	     "input %seed : f32[]\n"
	     "%a : f64[2,3] = mul(%x, %x) @sq\n"
	     "%b : f64[2,3] = add(%a, %x) @plus\n"
	     "%c : f64[2,3] = tanh(%b) @t\n"
	     "%d : f64[2,3] = mul(%c, %x) @again\n"
	     "output %d\n");
}

/* ------------------------------------------------------------------------ */
/* Linear algebra, convolution                                              */
/* ------------------------------------------------------------------------ */

static void test_matmul(void)
{
	CASE("input %x : f64[2,3,4]\ninput %w : f64[4,5]\n"
	     "%y : f64[2,3,5] = matmul(%x, %w) @mm\noutput %y\n");
	CASE("input %x : f64[3,4]\ninput %w : f64[2,4,5]\n"
	     "%y : f64[2,3,5] = matmul(%x, %w) @mm\noutput %y\n");
	CASE("input %x : f64[2,1,3,4]\ninput %w : f64[3,4,2]\n" /* batch broadcasting both ways */
	     "%y : f64[2,3,3,2] = matmul(%x, %w) @mm\noutput %y\n");
	CASE("input %x : f64[4]\ninput %w : f64[2,4,5]\n"
	     "%y : f64[2,5] = matmul(%x, %w) @mm\noutput %y\n");
	CASE("input %x : f64[2,3,4]\ninput %w : f64[4]\n"
	     "%y : f64[2,3] = matmul(%x, %w) @mm\noutput %y\n");
	CASE("input %x : f64[4]\ninput %w : f64[4]\n"
	     "%y : f64[] = matmul(%x, %w) @mm\noutput %y\n");
}

static void test_gemm(void)
{
	CASE("input %a : f64[3,4]\ninput %b : f64[5,4]\ninput %c : f64[5]\n"
	     "%y : f64[3,5] = gemm(%a, %b, %c) {alpha=0.5, beta=2, trans_a=0, trans_b=1} @g\n"
	     "output %y\n");
	CASE("input %a : f64[4,3]\ninput %b : f64[4,5]\ninput %c : f64[3,1]\n"
	     "%y : f64[3,5] = gemm(%a, %b, %c) {alpha=1.5, beta=1, trans_a=1, trans_b=0} @g\n"
	     "output %y\n");
	CASE("input %a : f64[4,3]\ninput %b : f64[5,4]\n"
	     "%y : f64[3,5] = gemm(%a, %b) {alpha=1, beta=1, trans_a=1, trans_b=1} @g\n"
	     "output %y\n");
}

static void test_conv(void)
{
	CASE("input %x : f64[1,2,5,5]\ninput %w : f64[3,2,3,3]\ninput %b : f64[3]\n"
	     "%y : f64[1,3,5,5] = conv(%x, %w, %b) {strides=[1,1], pads=[1,1,1,1], "
	     "dilations=[1,1], group=1} @c\noutput %y\n");
	/* stride 2, asymmetric pads, dilation, two groups */
	CASE("input %x : f64[2,4,6,5]\ninput %w : f64[6,2,3,2]\ninput %b : f64[6]\n"
	     "%y : f64[2,6,3,4] = conv(%x, %w, %b) {strides=[2,1], pads=[1,0,0,1], "
	     "dilations=[1,2], group=2} @c\noutput %y\n");
	/* depthwise, strided and dilated */
	CASE("input %x : f64[2,3,5,5]\ninput %w : f64[3,1,3,3]\n"
	     "%y : f64[2,3,2,2] = conv(%x, %w) {strides=[2,2], pads=[1,1,1,1], "
	     "dilations=[2,2], group=3} @c\noutput %y\n");
	/* f32, as training compiles it */
	CASE("input %x : f32[2,2,5,4]\ninput %w : f32[4,1,2,3]\ninput %b : f32[4]\n"
	     "%y : f32[2,4,2,2] = conv(%x, %w, %b) {strides=[2,2], pads=[0,1,0,0], "
	     "dilations=[2,1], group=2} @c\noutput %y\n");
	/* 1-D, a stride that skips the last input positions */
	CASE("input %x : f64[2,2,7]\ninput %w : f64[4,2,3]\n"
	     "%y : f64[2,4,3] = conv(%x, %w) {strides=[3], pads=[0,2], dilations=[1], "
	     "group=1} @c\noutput %y\n");
}

static void test_conv_transpose(void)
{
	CASE("input %x : f64[2,4,3,3]\ninput %w : f64[4,3,3,3]\ninput %b : f64[6]\n"
	     "%y : f64[2,6,6,6] = conv_transpose(%x, %w, %b) {strides=[2,2], pads=[1,0,1,1], "
	     "dilations=[1,1], group=2, output_padding=[1,0]} @ct\noutput %y\n");
	CASE("input %x : f64[1,2,4]\ninput %w : f64[2,2,2]\n"
	     "%y : f64[1,2,5] = conv_transpose(%x, %w) {strides=[1], pads=[1,0], "
	     "dilations=[2], group=1, output_padding=[0]} @ct\noutput %y\n");
}

/* ------------------------------------------------------------------------ */
/* Normalization, softmax                                                   */
/* ------------------------------------------------------------------------ */

static void test_norms(void)
{
	/* lrn: odd and even windows (the even one is lopsided), two spatial
	 * dimensions and one */
	CASE("input %x : f64[2,5,3,2]\n"
	     "%y : f64[2,5,3,2] = lrn(%x) {size=3, alpha=0.3, beta=0.75, bias=1.5} @lrn\n"
	     "output %y\n");
	CASE("input %x : f64[3,6,2]\n"
	     "%y : f64[3,6,2] = lrn(%x) {size=4, alpha=0.5, beta=0.6, bias=2} @lrn\n"
	     "output %y\n");
	CASE("input %x : f64[2,3,2,2]\ninput %s : f64[3]\ninput %b : f64[3]\n"
	     "input %m : f64[3]\ninput %pv : f64[3]\n"
	     "%y : f64[2,3,2,2] = batch_norm(%x, %s, %b, %m, %pv) {epsilon=1e-05} @bn\n"
	     "output %y\n");
	CASE("input %x : f64[2,3,4]\ninput %s : f64[3,4]\ninput %b : f64[4]\n"
	     "%y : f64[2,3,4] = layer_norm(%x, %s, %b) {axis=1, epsilon=1e-05} @ln\n"
	     "output %y\n");
	/* f32 with the saved statistics */
	CASE("input %x : f32[2,3,4]\ninput %s : f32[4]\ninput %b : f32[4]\n"
	     "%y : f32[2,3,4], %mu : f32[2,3,1], %inv : f32[2,3,1] = layer_norm(%x, %s, %b) "
	     "{axis=2, epsilon=1e-05} @ln\n"
	     "output %y\n");
	CASE("input %x : f64[2,3,2,3]\ninput %s : f64[3]\ninput %b : f64[3]\n"
	     "%y : f64[2,3,2,3] = instance_norm(%x, %s, %b) {epsilon=1e-05} @in\n"
	     "output %y\n");
}

static void test_softmax(void)
{
	CASE("input %x : f64[2,3,4]\n"
	     "%y : f64[2,3,4] = softmax(%x) {axis=1} @sm\n"
	     "%z : f64[2,3,4] = log_softmax(%x) {axis=2} @lsm\n"
	     "output %y\noutput %z\n");
}

/* Fused attention: its backward (attention_grad, evaluated by the
 * reference in double) against finite differences of the forward. GQA with
 * a causal offset, a softcap and a constant bias with a -inf entry; a
 * boolean mask with a fully masked row; a node that already has its lse
 * result (a loss on both); MQA without a mask. */
static void test_attention(void)
{
	CASE("input %q : f32[1,4,3,4]\ninput %k : f32[1,2,5,4]\ninput %v : f32[1,2,5,3]\n"
	     "const %b : f32[3,5] = [0.1, -0.2, 0.3, 0, 0.5, -inf, 0.2, 0.1, 0, -0.4, 0.3, 0.3, "
	     "-0.1, 0.2, 0]\n"
	     "%y : f32[1,4,3,3] = attention(%q, %k, %v, %b) {scale=0.6, causal=1, causal_offset=2, "
	     "softcap=1.5} @att\n"
	     "output %y\n");
	CASE_NAMED("attention_mask",
	           "input %q : f32[2,2,4,3]\ninput %k : f32[2,2,4,3]\ninput %v : f32[2,2,4,2]\n"
	           "const %m : bool[4,4] = [1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1]\n"
	           "%y : f32[2,2,4,2] = attention(%q, %k, %v, %m) {scale=0.5, causal=0, "
	           "causal_offset=0, softcap=0} @att\n"
	           "output %y\n");
	CASE_NAMED("attention_lse",
	           "input %q : f32[1,3,2,4]\ninput %k : f32[1,1,6,4]\ninput %v : f32[1,1,6,4]\n"
	           "%y : f32[1,3,2,4], %l : f32[1,3,2] = attention(%q, %k, %v) {scale=0.5, "
	           "causal=0, causal_offset=0, softcap=0} @att\n"
	           "%s : f32[1,3,2] = reduce_sum(%y) {axes=[3], keepdims=0} @rs\n"
	           "output %s\n");
}

static struct ir_module *parse_text(struct ir_ctx *ctx, const char *body);

/* A trained attention bias has no gradient rule: refused, naming the node. */
static void test_attention_bias_refused(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *x[2], *g[2];
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %q : f32[1,1,2,2]\ninput %b : f32[2,2]\n"
	                     "%y : f32[1,1,2,2] = attention(%q, %q, %q, %b) {scale=1, causal=0, "
	                     "causal_offset=0, softcap=0} @att\n"
	                     "%s : f32[] = reduce_sum(%y) {axes=[0,1,2,3], keepdims=0} @sum\n"
	                     "output %s\n");
	CHECK(m != NULL);
	if (!m)
		return;
	x[0] = ir_find_value(m, "q");
	x[1] = ir_find_value(m, "b");
	CHECK(!ad_gradients(m, ir_find_value(m, "s"), NULL, x, 2, g));
	CHECK_STR(d.text, "node 'att' (attention): no gradient for the attention bias 'b'");
	ir_module_free(m);
}

/* Batch statistics: the gradient flows through the mean and variance. */
static void test_batch_norm_train(void)
{
	check_case("bn_train",
	           "input %x : f64[3,2,2,2]\ninput %s : f64[2]\ninput %b : f64[2]\n"
	           "const %m : f64[2] = [0.5, -0.5]\nconst %v : f64[2] = [2, 0.5]\n"
	           "%y : f64[3,2,2,2] = batch_norm(%x, %s, %b, %m, %v) {epsilon=1e-05} @bn\n"
	           "output %y\n",
	           TRAIN);
}

/* The rewrite's values and running statistics, against PyTorch's formulas. */
static void test_batch_norm_train_values(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *run[3], *upd[3];
	char err[256];
	double x[12], mean[2] = { 0 }, var[2] = { 0 };
	const char *text = "onnxc-ir 1\nmodule \"bn\"\n"
	                   "input %x : f64[3,2,2]\n"
	                   "const %s : f64[2] = [1.5, 0.5]\nconst %b : f64[2] = [0.25, -1]\n"
	                   "const %m : f64[2] = [0.5, -0.5]\nconst %v : f64[2] = [2, 0.5]\n"
	                   "const %other : f64[2] = [1, 2]\n"
	                   "%y : f64[3,2,2] = batch_norm(%x, %s, %b, %m, %v) {epsilon=0.001} @bn\n"
	                   "output %y\n";
	ctx_collect(&ctx, &d);
	m = ir_parse(&ctx, text, strlen(text));
	CHECK(m != NULL);
	if (!m)
		return;
	run[0] = ir_find_value(m, "v");
	run[1] = ir_find_value(m, "m");
	run[2] = ir_find_value(m, "other");
	CHECK(ad_train_mode(m, 0.1f, run, 3, upd));
	CHECK_EQ(ir_verify(m), 0);
	CHECK(!strcmp(upd[0]->name, "v/updated") && !strcmp(upd[1]->name, "m/updated"));
	CHECK(upd[2]->def && upd[2]->def->op == IR_OP_COPY && upd[2]->def->in[0] == run[2]);
	IR_FOR_EACH_NODE(m, n)
	CHECK(n->op != IR_OP_BATCH_NORM);
	CHECK(!strcmp(m->outputs[0]->name, "y"));
	for (int i = 0; i < 12; i++) {
		x[i] = noise(7, i) * 2 + 0.3;
		mean[i / 2 % 2] += x[i] / 6;
	}
	for (int i = 0; i < 12; i++)
		var[i / 2 % 2] += (x[i] - mean[i / 2 % 2]) * (x[i] - mean[i / 2 % 2]) / 6;
	ir_add_output(m, upd[0]);
	ir_add_output(m, upd[1]);
	ir_add_output(m, upd[2]);
	CHECK(ir_input_to_const(m, ir_find_value(m, "x"), x));
	CHECK_EQ(ir_fold_all(m, err, sizeof err), 0);
	const double *y = m->outputs[0]->data, *rm = upd[1]->data, *rv = upd[0]->data;
	const double s[2] = { 1.5, 0.5 }, b[2] = { 0.25, -1 }, m0[2] = { 0.5, -0.5 },
	             v0[2] = { 2, 0.5 };
	for (int i = 0; i < 12; i++) {
		int c = i / 2 % 2;
		double want = (x[i] - mean[c]) / sqrt(var[c] + 0.001) * s[c] + b[c];
		CHECK(fabs(y[i] - want) < 1e-6);
	}
	for (int c = 0; c < 2; c++) {
		CHECK(fabs(rm[c] - (0.9 * m0[c] + 0.1 * mean[c])) < 1e-6);
		CHECK(fabs(rv[c] - (0.9 * v0[c] + 0.1 * var[c] * 6 / 5)) < 1e-6);
	}
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Pooling, reductions                                                      */
/* ------------------------------------------------------------------------ */

static void test_pool(void)
{
	CASE("input %x : f64[1,2,5,5]\n"
	     "%y : f64[1,2,3,3] = max_pool(%x) {kernel=[3,3], strides=[2,2], pads=[1,1,1,1], "
	     "dilations=[1,1], ceil_mode=0, storage_order=0} @mp\noutput %y\n");
	CASE("input %x : f64[1,1,5,5]\n" /* ceil mode, the indices result present */
	     "%y : f64[1,1,3,3], %i : i64[1,1,3,3] = max_pool(%x) {kernel=[2,2], strides=[2,2], "
	     "pads=[0,0,0,0], dilations=[1,1], ceil_mode=1, storage_order=0} @mp\n"
	     "output %y\noutput %i\n");
	CASE("input %x : f64[1,2,6,6]\n" /* dilation; column-major indices kept */
	     "%y : f64[1,2,2,2], %i : i64[1,2,2,2] = max_pool(%x) {kernel=[2,2], strides=[3,3], "
	     "pads=[0,0,0,0], dilations=[2,2], ceil_mode=0, storage_order=1} @mp\n"
	     "output %y\noutput %i\n");
	CASE("input %x : f64[1,2,5,5]\n"
	     "%y : f64[1,2,3,3] = avg_pool(%x) {kernel=[3,3], strides=[2,2], pads=[1,1,1,1], "
	     "dilations=[1,1], ceil_mode=0, count_include_pad=0} @ap\n"
	     "%z : f64[1,2,3,3] = avg_pool(%x) {kernel=[3,3], strides=[2,2], pads=[1,1,1,1], "
	     "dilations=[1,1], ceil_mode=0, count_include_pad=1} @ap1\n"
	     "output %y\noutput %z\n");
	CASE("input %x : f64[1,1,6,6]\n"
	     "%y : f64[1,1,3,3] = avg_pool(%x) {kernel=[3,3], strides=[2,2], pads=[0,0,0,0], "
	     "dilations=[1,1], ceil_mode=1, count_include_pad=0} @ap\noutput %y\n");
	CASE("input %x : f64[1,2,7,7]\n" /* dilated windows (AveragePool-19) */
	     "%y : f64[1,2,7,3] = avg_pool(%x) {kernel=[2,3], strides=[1,2], pads=[1,1,1,0], "
	     "dilations=[2,2], ceil_mode=1, count_include_pad=0} @ap\n"
	     "%z : f64[1,2,7,3] = avg_pool(%x) {kernel=[2,3], strides=[1,2], pads=[1,1,1,0], "
	     "dilations=[2,2], ceil_mode=1, count_include_pad=1} @ap1\n"
	     "output %y\noutput %z\n");
	CASE("input %x : f64[2,2,7]\n"
	     "%y : f64[2,2,4] = avg_pool(%x) {kernel=[3], strides=[2], pads=[1,2], "
	     "dilations=[1], ceil_mode=0, count_include_pad=1} @ap\noutput %y\n");
	CASE("input %x : f64[2,3,2,2]\n"
	     "%y : f64[2,3,1,1] = global_avg_pool(%x) @gap\n"
	     "%z : f64[2,3,1,1] = global_max_pool(%x) @gmp\n"
	     "output %y\noutput %z\n");
}

static void test_reduce(void)
{
	CASE("input %x : f64[2,3,4]\n"
	     "%a : f64[3] = reduce_sum(%x) {axes=[0,2], keepdims=0} @rs\n"
	     "%b : f64[2,1,4] = reduce_mean(%x) {axes=[1], keepdims=1} @rm\n"
	     "%c : f64[2,3] = reduce_max(%x) {axes=[2], keepdims=0} @rx\n"
	     "%d : f64[1,3,1] = reduce_min(%x) {axes=[0,2], keepdims=1} @rn\n"
	     "%e : f64[2] = reduce_sum_square(%x) {axes=[1,2], keepdims=0} @rq\n"
	     "output %a\noutput %b\noutput %c\noutput %d\noutput %e\n");
	CASE("input %x : f64[2,3,4]\ninput %px : f64[2,3,4]\n"
	     "%a : f64[2,4] = reduce_l1(%x) {axes=[1], keepdims=0} @l1\n"
	     "%b : f64[2,1,1] = reduce_l2(%x) {axes=[1,2], keepdims=1} @l2\n"
	     "%c : f64[3] = reduce_log_sum(%px) {axes=[0,2], keepdims=0} @ls\n"
	     "%d : f64[2,3,1] = reduce_log_sum_exp(%x) {axes=[2], keepdims=1} @lse\n"
	     "output %a\noutput %b\noutput %c\noutput %d\n");
	/* trilu keeps the same triangle of the gradient; hardmax has none */
	CASE("input %x : f64[2,3,4]\n"
	     "%a : f64[2,3,4] = trilu(%x) {upper=1, k=1} @tu\n"
	     "%b : f64[2,3,4] = trilu(%x) {upper=0, k=-1} @tl\n"
	     "%h : f64[2,3,4] = hardmax(%x) {axis=2} @hm\n"
	     "%c : f64[2,3,4] = add(%b, %h) @sum\n"
	     "output %a\noutput %c\n");
	/* topk: dy back where the values came from, along rows and columns */
	CASE("input %x : f64[3,4]\n"
	     "%v : f64[3,2], %i : i64[3,2] = topk(%x) {axis=1, k=2, largest=1} @tk\n"
	     "%w : f64[2,4], %j : i64[2,4] = topk(%x) {axis=0, k=2, largest=0} @tk1\n"
	     "output %v\noutput %w\n");
	CASE("input %x : f64[2,4]\n"
	     "%a : f64[2,4] = cumsum(%x) {axis=1, exclusive=0, reverse=0} @cs\n"
	     "%b : f64[2,4] = cumsum(%x) {axis=1, exclusive=1, reverse=1} @cs1\n"
	     "output %a\noutput %b\n");
	/* cumprod every way; lanes through exact zeros (the columns of %z) */
	CASE("input %x : f64[2,4]\n"
	     "%a : f64[2,4] = cumprod(%x) {axis=1, exclusive=0, reverse=0} @cp\n"
	     "%b : f64[2,4] = cumprod(%x) {axis=1, exclusive=1, reverse=0} @cp1\n"
	     "%c : f64[2,4] = cumprod(%x) {axis=0, exclusive=0, reverse=1} @cp2\n"
	     "%d : f64[2,4] = cumprod(%x) {axis=1, exclusive=1, reverse=1} @cp3\n"
	     "output %a\noutput %b\noutput %c\noutput %d\n");
	CASE("input %x : f64[2,3]\n"
	     "const %z : f64[2,1] = [0, 0]\n"
	     "%w : f64[2,7] = concat(%x, %z, %x) {axis=1} @cat\n"
	     "%a : f64[2,7] = cumprod(%w) {axis=1, exclusive=0, reverse=0} @cp\n"
	     "%b : f64[2,7] = cumprod(%w) {axis=1, exclusive=1, reverse=1} @cp1\n"
	     "output %a\noutput %b\n");
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

static void test_move(void)
{
	CASE("input %x : f64[2,3,4]\n"
	     "%a : f64[6,4] = reshape(%x) {shape=[6,4]} @r\n"
	     "%b : f64[4,2,3] = transpose(%x) {perm=[2,0,1]} @t\n"
	     "output %a\noutput %b\n");
	CASE("input %a : f64[2,3]\ninput %b : f64[2,2]\n"
	     "%c : f64[2,5] = concat(%a, %b) {axis=1} @cat\n"
	     "%d : f64[4,3] = concat(%a, %a) {axis=0} @cat2\n"
	     "output %c\noutput %d\n");
	CASE("input %x : f64[2,5]\n" /* one result unused: its gradient is zeros */
	     "%a : f64[2,2], %b : f64[2,3] = split(%x) {axis=1, split=[2,3]} @sp\n"
	     "%c : f64[1,5], %d : f64[1,5] = split(%x) {axis=0, split=[1,1]} @sp2\n"
	     "output %a\noutput %d\n");
	CASE("input %x : f64[3,1]\n"
	     "%a : f64[2,3,4] = expand(%x) {shape=[2,3,4]} @e\n"
	     "%b : f64[6,2] = tile(%x) {repeats=[2,2]} @t\n"
	     "output %a\noutput %b\n");
	CASE("input %x : f64[2,1,3]\n"
	     "%a : f64[2,2,6] = tile(%x) {repeats=[1,2,2]} @t\noutput %a\n");
	CASE("input %x : f64[2,3]\n"
	     "%a : f64[3,5] = pad(%x) {pads=[1,0,0,2], mode=\"constant\", value=0} @p\n"
	     "%b : f64[3,2] = pad(%x) {pads=[0,-1,1,0], mode=\"constant\", value=0.5} @q\n"
	     "output %a\noutput %b\n");
	/* depth_to_space (both modes) and space_to_depth move dy back */
	CASE("input %x : f64[2,8,2,3]\n"
	     "%a : f64[2,2,4,6] = depth_to_space(%x) {blocksize=2, mode=\"DCR\"} @d\n"
	     "%b : f64[2,2,4,6] = depth_to_space(%x) {blocksize=2, mode=\"CRD\"} @c\n"
	     "%s : f64[2,8,2,3] = space_to_depth(%b) {blocksize=2} @s\n"
	     "output %a\noutput %s\n");
	/* reflect and edge: a matmul by the copy pattern per padded dimension */
	CASE("input %x : f64[2,3]\n"
	     "%c : f64[4,7] = pad(%x) {pads=[1,2,1,2], mode=\"reflect\", value=0} @r\n"
	     "%d : f64[5,6] = pad(%x) {pads=[2,1,1,2], mode=\"edge\", value=0} @e\n"
	     "output %c\noutput %d\n");
	CASE("input %x : f64[2,2,3,4]\n"
	     "%c : f64[2,2,6,7] = pad(%x) {pads=[0,0,1,2,0,0,2,1], mode=\"reflect\", value=0} @r\n"
	     "%d : f64[2,4,3,4] = pad(%x) {pads=[0,1,0,0,0,1,0,0], mode=\"edge\", value=0} @e\n"
	     "output %c\noutput %d\n");
}

static void test_slice(void)
{
	CASE("input %x : f64[4,6]\n"
	     "%a : f64[2,6] = slice(%x) {starts=[1,0], ends=[4,6], steps=[2,1]} @s\n"
	     "%b : f64[4,3] = slice(%x) {starts=[3,5], ends=[-1,0], steps=[-1,-2]} @s1\n"
	     "%c : f64[1,2] = slice(%x) {starts=[2,1], ends=[3,3], steps=[1,1]} @s2\n"
	     "output %a\noutput %b\noutput %c\n");
	CASE("input %x : f64[3,8]\n"
	     "%a : f64[3,3] = slice(%x) {starts=[0,1], ends=[3,8], steps=[1,3]} @s\n"
	     "%b : f64[1,2] = slice(%x) {starts=[2,6], ends=[0,-1], steps=[-5,-4]} @s1\n"
	     "output %a\noutput %b\n");
	/* the extreme steps ONNX allows: one element each way, no overflow */
	CASE("input %x : f64[4,6]\n"
	     "%e : f64[1,1] = slice(%x) {starts=[0,5], ends=[4,-1], "
	     "steps=[9223372036854775807,-9223372036854775808]} @s\n"
	     "output %e\n");
}

static void test_gather(void)
{
	CASE("input %t : f64[5,3]\n" /* an embedding lookup, repeated and negative indices */
	     "const %i : i64[4] = [0, 2, 2, -1]\n"
	     "%y : f64[4,3] = gather(%t, %i) {axis=0} @g\noutput %y\n");
	CASE("input %t : f64[2,5,3]\n"
	     "const %i : i32[2,2] = [4, 0, 1, 4]\n"
	     "%y : f64[2,2,2,3] = gather(%t, %i) {axis=1} @g\noutput %y\n");
	CASE("input %x : f64[3,4]\n"
	     "const %i : i64[2,4] = [0, 2, 1, 2, 2, 2, 0, 1]\n"
	     "%y : f64[2,4] = gather_elements(%x, %i) {axis=0} @ge\noutput %y\n");
	CASE("input %x : f64[3,4]\ninput %u : f64[2,3]\n"
	     "const %i : i64[2,3] = [3, 0, 1, 2, 0, 3]\n"
	     "%y : f64[3,4] = scatter_elements(%x, %i, %u) {axis=1, reduction=\"none\"} @s\n"
	     "%z : f64[3,4] = scatter_elements(%x, %i, %u) {axis=1, reduction=\"add\"} @sa\n"
	     "output %y\noutput %z\n");
}

/* A small network: conv, training batch norm, relu, max pool, a linear
 * layer and log_softmax picked at labels. */
static void test_network(void)
{
	check_case("network",
	           "input %x : f64[2,1,4,4]\ninput %w : f64[2,1,3,3]\n"
	           "input %s : f64[2]\ninput %b : f64[2]\ninput %fw : f64[3,2]\n"
	           "input %fb : f64[3]\n"
	           "const %m : f64[2] = [0, 0]\nconst %v : f64[2] = [1, 1]\n"
	           "const %lab : i64[2,1] = [2, 0]\n"
	           "%c : f64[2,2,4,4] = conv(%x, %w) {strides=[1,1], pads=[1,1,1,1], "
	           "dilations=[1,1], group=1} @conv\n"
	           "%n : f64[2,2,4,4] = batch_norm(%c, %s, %b, %m, %v) {epsilon=1e-05} @bn\n"
	           "%r : f64[2,2,4,4] = relu(%n) @relu\n"
	           "%p : f64[2,2,2,2] = max_pool(%r) {kernel=[2,2], strides=[2,2], "
	           "pads=[0,0,0,0], dilations=[1,1], ceil_mode=0, storage_order=0} @pool\n"
	           "%g : f64[2,2,1,1] = global_avg_pool(%p) @gap\n"
	           "%f : f64[2,2] = reshape(%g) {shape=[2,2]} @flat\n"
	           "%l : f64[2,3] = gemm(%f, %fw, %fb) {alpha=1, beta=1, trans_a=0, "
	           "trans_b=1} @fc\n"
	           "%ls : f64[2,3] = log_softmax(%l) {axis=1} @lsm\n"
	           "%pick : f64[2,1] = gather_elements(%ls, %lab) {axis=1} @nll\n"
	           "output %pick\n",
	           TRAIN);
}

/*
 * The loss ops as the importer lowers them (frontend/ops_loss.c; the IR of
 * tests/golden/loss_sce.oir in f64): SoftmaxCrossEntropyLoss with class
 * weights (positive, so their sum stays away from 0; differentiated too,
 * as onnxc train does for a weight it is not told to freeze), an
 * ignore_index two targets take, the mean over the applied weights and the
 * log_prob output; NegativeLogLikelihoodLoss with an ignore_index and no
 * weights (the applied weights are a where of 0 and 1), and plain means.
 */
static void test_loss(void)
{
	check_case("sce_weight_ignore",
	           "input %x : f64[2,3,4]\ninput %pw : f64[3]\n"
	           "const %t : i64[2,4] = [0, 2, -1, 1, 1, -1, 0, 2]\n"
	           "const %ii : i64[] = [-1]\nconst %zi : i64[] = [0]\n"
	           "const %z : f64[] = [0]\n"
	           "%lp : f64[2,3,4] = log_softmax(%x) {axis=1} @sce\n"
	           "%ign : bool[2,4] = equal(%t, %ii) @sce\n"
	           "%safe : i64[2,4] = where(%ign, %zi, %t) @sce\n"
	           "%idx : i64[2,1,4] = reshape(%safe) {shape=[2,1,4]} @sce\n"
	           "%pick : f64[2,1,4] = gather_elements(%lp, %idx) {axis=1} @sce\n"
	           "%p2 : f64[2,4] = reshape(%pick) {shape=[2,4]} @sce\n"
	           "%neg : f64[2,4] = neg(%p2) @sce\n"
	           "%wt : f64[2,4] = gather(%pw, %safe) {axis=0} @sce\n"
	           "%l : f64[2,4] = mul(%neg, %wt) @sce\n"
	           "%wa : f64[2,4] = where(%ign, %z, %wt) @sce\n"
	           "%l0 : f64[2,4] = where(%ign, %z, %l) @sce\n"
	           "%s : f64[] = reduce_sum(%l0) {axes=[0,1], keepdims=0} @sce\n"
	           "%ws : f64[] = reduce_sum(%wa) {axes=[0,1], keepdims=0} @sce\n"
	           "%y : f64[] = div(%s, %ws) @sce\n"
	           "output %y\noutput %lp\n",
	           0);
	check_case("nll_ignore",
	           "input %x : f64[3,5]\n"
	           "const %t : i64[3] = [4, 7, 1]\n"
	           "const %ii : i64[] = [7]\nconst %zi : i64[] = [0]\n"
	           "const %z : f64[] = [0]\nconst %one : f64[] = [1]\n"
	           "%ign : bool[3] = equal(%t, %ii) @nll\n"
	           "%safe : i64[3] = where(%ign, %zi, %t) @nll\n"
	           "%idx : i64[3,1] = reshape(%safe) {shape=[3,1]} @nll\n"
	           "%pick : f64[3,1] = gather_elements(%x, %idx) {axis=1} @nll\n"
	           "%p2 : f64[3] = reshape(%pick) {shape=[3]} @nll\n"
	           "%neg : f64[3] = neg(%p2) @nll\n"
	           "%wa : f64[3] = where(%ign, %z, %one) @nll\n"
	           "%l0 : f64[3] = where(%ign, %z, %neg) @nll\n"
	           "%s : f64[] = reduce_sum(%l0) {axes=[0], keepdims=0} @nll\n"
	           "%ws : f64[] = reduce_sum(%wa) {axes=[0], keepdims=0} @nll\n"
	           "%y : f64[] = div(%s, %ws) @nll\n"
	           "%m : f64[] = reduce_mean(%neg) {axes=[0], keepdims=0} @nll\n"
	           "output %y\noutput %m\n",
	           0);
}

/* ------------------------------------------------------------------------ */
/* Diagnostics and the pass's contract                                      */
/* ------------------------------------------------------------------------ */

static struct ir_module *parse_text(struct ir_ctx *ctx, const char *body)
{
	char text[2048];
	snprintf(text, sizeof text, "onnxc-ir 1\nmodule \"t\"\n%s", body);
	return ir_parse(ctx, text, strlen(text));
}

static void test_no_rule(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *x, *g[1];
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %x : f32[1,3,2,2]\n"
	                     "%y : f32[1,3,2,2] = mod(%x, %x) {fmod=1} @norm1\n"
	                     "%z : f32[1,3,2] = reduce_prod(%y) {axes=[3], keepdims=0} @act\n"
	                     "%s : f32[] = reduce_sum(%z) {axes=[0,1,2], keepdims=0} @sum\n"
	                     "output %s\n");
	CHECK(m != NULL);
	if (!m)
		return;
	x = ir_find_value(m, "x");
	CHECK(!ad_gradients(m, ir_find_value(m, "s"), NULL, &x, 1, g));
	CHECK_STR(d.text, "node 'norm1' (mod): no gradient for mod");
	CHECK_STR(d.text, "node 'act' (reduce_prod): no gradient for reduce_prod");
	CHECK_EQ(ir_verify(m), 0);
	CHECK(!ad_has_rule(IR_OP_MOD));
	CHECK(ad_has_rule(IR_OP_CONV));
	ir_module_free(m);
}

static void test_bad_arguments(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *x, *g[1];
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %x : f32[2]\n%y : f32[2] = relu(%x) @r\noutput %y\n");
	CHECK(m != NULL);
	if (!m)
		return;
	x = ir_find_value(m, "x");
	CHECK(!ad_gradients(m, ir_find_value(m, "y"), NULL, &x, 1, g));
	CHECK_STR(d.text, "must be a float value with one element");
	ir_module_free(m);
}

/* A graph input not on any path gets an expanded scalar, not a big constant;
 * the same gradient for two values becomes two distinct results. */
static void test_contract(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *wrt[3], *g[3];
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %a : f32[]\ninput %b : f32[]\ninput %big : f32[1000,1000]\n"
	                     "%s : f32[] = add(%a, %b) @add\noutput %s\n");
	CHECK(m != NULL);
	if (!m)
		return;
	wrt[0] = ir_find_value(m, "a");
	wrt[1] = ir_find_value(m, "b");
	wrt[2] = ir_find_value(m, "big");
	CHECK(ad_gradients(m, ir_find_value(m, "s"), NULL, wrt, 3, g));
	CHECK(g[0] != g[1] && g[0]->kind == IR_VAL_NODE && g[1]->kind == IR_VAL_NODE);
	CHECK(g[2]->def && g[2]->def->op == IR_OP_EXPAND);
	CHECK(!strcmp(g[2]->name, "grad/big"));
	for (int i = 0; i < m->nvalues; i++)
		CHECK(m->values[i]->kind != IR_VAL_CONST ||
		      ir_type_elems(&m->values[i]->type) < 10);
	for (int i = 0; i < 3; i++)
		ir_add_output(m, g[i]);
	CHECK_EQ(ir_verify(m), 0);
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Recurrent networks: unrolled (rnn_expand.c), then differentiated         */
/* ------------------------------------------------------------------------ */

/* One recurrent node's case. */
struct rnn_spec {
	const char *op, *direction; /* lstm, gru, rnn; forward, reverse, bidirectional */
	int T, B, I, H;
	const char *acts;           /* every activation, ONNX's spelling */
	const char *alphas, *betas; /* NULL: zeros */
	double clip;
	const char *extra; /* input_forget=, linear_before_reset= or NULL */
	const char *lens;  /* sequence_lens, B values */
	bool peep;         /* lstm: p an input (else a constant of zeros) */
};

/* The case in IR text (the caller frees it). Every float operand is an
 * input; the states' names start with h (values within [-0.5, 0.5]). */
static char *rnn_text(const struct rnn_spec *s)
{
	bool lstm = !strcmp(s->op, "lstm");
	int G = lstm ? 4 : !strcmp(s->op, "gru") ? 3 : 1;
	int D = strcmp(s->direction, "bidirectional") ? 1 : 2;
	int nact = D * (lstm ? 3 : G == 3 ? 2 : 1), T = s->T, B = s->B, I = s->I, H = s->H;
	char *text = NULL, zeros[64] = "[";
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	for (int i = 0; i < nact; i++)
		strcat(zeros, i ? ", 0" : "0");
	strcat(zeros, "]");
	fprintf(f, "input %%x : f32[%d,%d,%d]\ninput %%w : f32[%d,%d,%d]\n", T, B, I, D, G * H, I);
	fprintf(f, "input %%r : f32[%d,%d,%d]\ninput %%b : f32[%d,%d]\n", D, G * H, H, D,
	        2 * G * H);
	fprintf(f, "const %%sl : i32[%d] = [%s]\ninput %%h0 : f32[%d,%d,%d]\n", B, s->lens, D, B,
	        H);
	if (lstm) {
		fprintf(f, "input %%hc : f32[%d,%d,%d]\n", D, B, H);
		if (s->peep) {
			fprintf(f, "input %%wp : f32[%d,%d]\n", D, 3 * H);
		} else {
			fprintf(f, "const %%wp : f32[%d,%d] = [", D, 3 * H);
			for (int i = 0; i < D * 3 * H; i++)
				fprintf(f, "%s0", i ? ", " : "");
			fprintf(f, "]\n");
		}
	}
	fprintf(f, "%%y : f32[%d,%d,%d,%d], %%yh : f32[%d,%d,%d]", T, D, B, H, D, B, H);
	if (lstm)
		fprintf(f, ", %%yc : f32[%d,%d,%d]", D, B, H);
	fprintf(f, " = %s(%%x, %%w, %%r, %%b, %%sl, %%h0%s) {direction=\"%s\", ", s->op,
	        lstm ? ", %hc, %wp" : "", s->direction);
	fprintf(f, "activations=\"%s\", alphas=%s, betas=%s, clip=%g%s%s} @cell\n", s->acts,
	        s->alphas ? s->alphas : zeros, s->betas ? s->betas : zeros, s->clip,
	        s->extra ? ", " : "", s->extra ? s->extra : "");
	fprintf(f, "output %%y\noutput %%yh\n%s", lstm ? "output %yc\n" : "");
	fclose(f);
	return text;
}

/* The unrolled node computes what the fused one does: both modules
 * evaluated by the reference evaluator on the same inputs (ir/eval_rnn.c
 * in double, the unrolled ops each rounded to f32). */
static void rnn_same_forward(const char *name, const struct rnn_spec *s)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	char *body = rnn_text(s), err[512];
	struct ir_module *m[2];
	double worst = 0;
	ctx_collect(&ctx, &d);
	for (int k = 0; k < 2; k++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		fprintf(f, "onnxc-ir 1\nmodule \"%s\"\n%s", name, body);
		fclose(f);
		m[k] = ir_parse(&ctx, text, len);
		free(text);
	}
	free(body);
	CHECK(m[0] && m[1]);
	if (!m[0] || !m[1]) {
		fprintf(stderr, "%s: %s\n", name, d.text);
		return;
	}
	{
		struct ir_node *n = ir_find_value(m[1], "y")->def;
		struct ir_value *res[3];
		CHECK(ad_expand_recurrent(m[1], n, res));
		CHECK_EQ(ir_verify(m[1]), 0);
		IR_FOR_EACH_NODE(m[1], q)
		CHECK(q->op != IR_OP_LSTM && q->op != IR_OP_GRU && q->op != IR_OP_RNN);
	}
	for (int k = 0; k < 2; k++) {
		while (m[k]->ninputs) {
			struct ir_value *v = m[k]->inputs[0];
			int64_t n = ir_type_elems(&v->type);
			float *data = calloc((size_t)(n ? n : 1), sizeof *data);
			uint32_t stream = 0;
			for (const char *c = v->name; *c; c++)
				stream = stream * 31 + (uint32_t)*c;
			for (int64_t i = 0; i < n; i++)
				data[i] = (float)(v->name[0] == 'h' ? 0.5 : 1) *
				          (float)noise(stream, i);
			CHECK(ir_input_to_const(m[k], v, data));
			free(data);
		}
		CHECK_EQ(ir_fold_all(m[k], err, sizeof err), 0);
	}
	for (int o = 0; o < m[0]->noutputs; o++) {
		struct ir_value *a = m[0]->outputs[o], *b = m[1]->outputs[o];
		CHECK(!strcmp(a->name, b->name) && ir_type_eq(&a->type, &b->type));
		for (int64_t i = 0; a->data && b->data && i < ir_type_elems(&a->type); i++) {
			double x = ir_load_f64(a->type.dtype, a->data, (size_t)i);
			double y = ir_load_f64(b->type.dtype, b->data, (size_t)i);
			worst = fmax(worst, fabs(x - y) / (1 + fabs(x)));
		}
	}
	if (!(worst <= 1e-6)) {
		fprintf(stderr, "%s: the unrolled node differs from the fused one by %g\n", name,
		        worst);
		test_failures++;
	}
	if (getenv("AD_VERBOSE"))
		fprintf(stderr, "%s: forward within %.3g\n", name, worst);
	ir_module_free(m[0]);
	ir_module_free(m[1]);
}

/* Every activation (RNN), every cell, direction, sequence_lens (shorter,
 * zero), clip, input_forget and linear_before_reset. */
static void test_rnn_forward(void)
{
	static const struct {
		const char *act, *alpha, *beta;
	} acts[] = { { "Relu", NULL, NULL },
		     { "Tanh", NULL, NULL },
		     { "Sigmoid", NULL, NULL },
		     { "Affine", "[0.7]", "[0.1]" },
		     { "LeakyRelu", "[0.05]", NULL },
		     { "ThresholdedRelu", "[0.2]", NULL },
		     { "ScaledTanh", "[0.8]", "[1.3]" },
		     { "HardSigmoid", "[0.3]", "[0.4]" },
		     { "Elu", "[0.9]", NULL },
		     { "Softsign", NULL, NULL },
		     { "Softplus", NULL, NULL } };
	static const char *const dirs[] = { "forward", "reverse", "bidirectional" };
	char name[96];
	for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
		struct rnn_spec s = {
			"rnn",         "forward",    4, 3,    2,        3, acts[i].act,
			acts[i].alpha, acts[i].beta, 0, NULL, "4, 2, 0"
		};
		snprintf(name, sizeof name, "rnn_%s", acts[i].act);
		rnn_same_forward(name, &s);
	}
	for (int d = 0; d < 3; d++)
		for (int v = 0; v < 4; v++) {
			bool bi = d == 2, lens = v & 1, clip = v & 2;
			const char *l = lens ? "4, 1, 0" : "4, 4, 4";
			struct rnn_spec r = { "rnn",
				              dirs[d],
				              4,
				              3,
				              2,
				              3,
				              bi ? "Tanh,Relu" : "Tanh",
				              NULL,
				              NULL,
				              clip ? 0.8 : 0,
				              NULL,
				              l };
			struct rnn_spec g0 = { "gru",
				               dirs[d],
				               4,
				               3,
				               2,
				               3,
				               bi ? "Sigmoid,Tanh,HardSigmoid,Softsign"
				                  : "Sigmoid,Tanh",
				               bi ? "[0, 0, 0.3, 0]" : NULL,
				               bi ? "[0, 0, 0.4, 0]" : NULL,
				               clip ? 0.8 : 0,
				               "linear_before_reset=0",
				               l };
			struct rnn_spec g1 = g0;
			struct rnn_spec l0 = { "lstm",
				               dirs[d],
				               4,
				               3,
				               2,
				               3,
				               bi ? "Sigmoid,Tanh,Tanh,HardSigmoid,Elu,Softsign"
				                  : "Sigmoid,Tanh,Tanh",
				               bi ? "[0, 0, 0, 0.3, 0.9, 0]" : NULL,
				               bi ? "[0, 0, 0, 0.4, 0, 0]" : NULL,
				               clip ? 0.8 : 0,
				               "input_forget=0",
				               l,
				               true };
			struct rnn_spec l1 = l0, l2 = l0;
			g1.extra = "linear_before_reset=1";
			l1.extra = "input_forget=1";
			l2.peep = false;
			snprintf(name, sizeof name, "rnn_%s_%d", dirs[d], v);
			rnn_same_forward(name, &r);
			snprintf(name, sizeof name, "gru_%s_%d", dirs[d], v);
			rnn_same_forward(name, &g0);
			snprintf(name, sizeof name, "gru_lbr_%s_%d", dirs[d], v);
			rnn_same_forward(name, &g1);
			snprintf(name, sizeof name, "lstm_%s_%d", dirs[d], v);
			rnn_same_forward(name, &l0);
			snprintf(name, sizeof name, "lstm_coupled_%s_%d", dirs[d], v);
			rnn_same_forward(name, &l1);
			snprintf(name, sizeof name, "lstm_nopeep_%s_%d", dirs[d], v);
			rnn_same_forward(name, &l2);
		}
}

/* Finite differences through time: every weight, bias, state, peephole
 * and x, bidirectional with sequences shorter than T, clip off and on. */
static void rnn_fd(const char *name, const struct rnn_spec *s)
{
	char *text = rnn_text(s);
	check_case(name, text, 0);
	free(text);
}

static void test_rnn_grad(void)
{
	struct rnn_spec l = { "lstm",
		              "bidirectional",
		              3,
		              2,
		              2,
		              2,
		              "Sigmoid,Tanh,Tanh,Sigmoid,Tanh,Tanh",
		              NULL,
		              NULL,
		              0,
		              "input_forget=0",
		              "3, 2",
		              true };
	struct rnn_spec g = { "gru",
		              "bidirectional",
		              3,
		              2,
		              2,
		              2,
		              "Sigmoid,Tanh,Sigmoid,Tanh",
		              NULL,
		              NULL,
		              0,
		              "linear_before_reset=1",
		              "3, 1",
		              false };
	struct rnn_spec r = { "rnn", "bidirectional", 3,    2, 2, 2, "Tanh,Softsign", NULL, NULL, 0,
		              NULL,  "2, 3",          false };
	rnn_fd("lstm_bi", &l);
	l.clip = 0.6;
	rnn_fd("lstm_bi_clip", &l);
	l.clip = 0;
	l.extra = "input_forget=1";
	l.direction = "reverse";
	l.acts = "Sigmoid,Tanh,Tanh";
	rnn_fd("lstm_reverse_coupled", &l);
	rnn_fd("gru_bi_lbr", &g);
	g.extra = "linear_before_reset=0";
	g.clip = 0.6;
	rnn_fd("gru_bi_clip", &g);
	rnn_fd("rnn_bi", &r);
	r.clip = 0.6;
	r.direction = "forward";
	r.acts = "Tanh";
	rnn_fd("rnn_clip", &r);
}

/* Only a recurrent node on the path is unrolled: one the loss reads
 * through constants alone stays fused. */
static void test_rnn_off_path(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *a, *g[1];
	int fused = 0;
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %a : f32[1,1,1]\n"
	                     "const %x : f32[1,1,1] = [0.5]\nconst %w : f32[1,1,1] = [0.3]\n"
	                     "const %r : f32[1,1,1] = [0.2]\nconst %b : f32[1,2] = [0.1, 0]\n"
	                     "const %sl : i32[1] = [1]\nconst %h0 : f32[1,1,1] = [0]\n"
	                     "%y : f32[1,1,1,1], %yh : f32[1,1,1] = rnn(%x, %w, %r, %b, %sl, %h0) "
	                     "{direction=\"forward\", activations=\"Tanh\", alphas=[0], betas=[0], "
	                     "clip=0} @cell\n"
	                     "%s : f32[1,1,1] = mul(%yh, %a) @m\n"
	                     "%l : f32[] = reduce_sum(%s) {axes=[0,1,2], keepdims=0} @sum\n"
	                     "output %l\n");
	CHECK(m != NULL);
	if (!m)
		return;
	a = ir_find_value(m, "a");
	CHECK(ad_gradients(m, ir_find_value(m, "l"), NULL, &a, 1, g));
	IR_FOR_EACH_NODE(m, n)
	fused += n->op == IR_OP_RNN;
	CHECK_EQ(fused, 1);
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Run-time If (guards and phi): the branch taken                           */
/* ------------------------------------------------------------------------ */

/*
 * One If on sum(x) > th, taken both ways (th far from the sum, so the
 * finite differences keep the branch): w is read only in the then branch,
 * v only in the else branch, x in both and outside; the second output
 * passes x through the then branch and an else value out.
 */
static void test_if(void)
{
	for (int k = 0; k < 2; k++) {
		char text[2048];
		snprintf(text, sizeof text,
		         "input %%x : f64[2,3]\ninput %%w : f64[3,3]\ninput %%v : f64[3]\n"
		         "const %%th : f64[] = [%d]\n"
		         "%%s : f64[] = reduce_sum(%%x) {axes=[0,1], keepdims=0} @s\n"
		         "%%c : bool[] = greater(%%s, %%th) @c\n"
		         "%%nc : bool[] = not(%%c) @nc\n"
		         "%%t1 : f64[2,3] = matmul(%%x, %%w) if %%c @if/then/mm\n"
		         "%%t2 : f64[2,3] = tanh(%%t1) if %%c @if/then/tanh\n"
		         "%%t3 : f64[2,3] = mul(%%t2, %%x) if %%c @if/then/mul\n"
		         "%%t4 : f64[2,3] = add(%%t3, %%t1) if %%c @if/then/add\n"
		         "%%e1 : f64[2,3] = mul(%%x, %%v) if %%nc @if/else/mul\n"
		         "%%e2 : f64[2,3] = sin(%%e1) if %%nc @if/else/sin\n"
		         "%%y : f64[2,3] = phi(%%c, %%t4, %%e2) @if\n"
		         "%%z : f64[2,3] = phi(%%c, %%x, %%e1) @if\n"
		         "%%o : f64[2,3] = mul(%%y, %%x) @out\n"
		         "output %%o\noutput %%z\n",
		         k ? 100 : -100);
		check_case(k ? "if_else" : "if_then", text, 0);
	}
}

/* An If inside the then branch of another, taken every way: the inner
 * branches read values of the outer branch and of the graph, and pass
 * either through; an outer phi merges one value with itself. */
static void test_if_nested(void)
{
	static const int th[3][2] = { { -100, 100 }, { -100, -100 }, { 100, 100 } };
	static const char *const names[3] = { "if_nested_tt", "if_nested_tf", "if_nested_f" };
	for (int k = 0; k < 3; k++) {
		char text[3072];
		snprintf(text, sizeof text,
		         "input %%x : f64[2,3]\ninput %%w : f64[3,3]\ninput %%v : f64[3]\n"
		         "const %%th1 : f64[] = [%d]\nconst %%th2 : f64[] = [%d]\n"
		         "%%s : f64[] = reduce_sum(%%x) {axes=[0,1], keepdims=0} @s\n"
		         "%%c : bool[] = greater(%%s, %%th1) @c\n"
		         "%%nc : bool[] = not(%%c) @nc\n"
		         "%%t1 : f64[2,3] = matmul(%%x, %%w) if %%c @a/then/mm\n"
		         "%%t2 : f64[2,3] = tanh(%%t1) if %%c @a/then/tanh\n"
		         "%%c2 : bool[] = less(%%s, %%th2) if %%c @a/then/c2\n"
		         "%%g2 : bool[] = and(%%c, %%c2) if %%c @a/then/g2\n"
		         "%%n2 : bool[] = not(%%c2) if %%c @a/then/n2\n"
		         "%%g3 : bool[] = and(%%c, %%n2) if %%c @a/then/g3\n"
		         "%%i1 : f64[2,3] = mul(%%t2, %%t1) if %%g2 @a/then/b/then/mul\n"
		         "%%i2 : f64[2,3] = add(%%i1, %%x) if %%g2 @a/then/b/then/add\n"
		         "%%j1 : f64[2,3] = mul(%%x, %%v) if %%g3 @a/then/b/else/mul\n"
		         "%%j2 : f64[2,3] = mul(%%j1, %%t2) if %%g3 @a/then/b/else/mul2\n"
		         "%%p2 : f64[2,3] = phi(%%c2, %%i2, %%t2) if %%c @a/then/b\n"
		         "%%p3 : f64[2,3] = phi(%%c2, %%t1, %%j2) if %%c @a/then/b\n"
		         "%%q : f64[2,3] = add(%%p2, %%p3) if %%c @a/then/add\n"
		         "%%e1 : f64[2,3] = sin(%%x) if %%nc @a/else/sin\n"
		         "%%y : f64[2,3] = phi(%%c, %%q, %%e1) @a\n"
		         "%%z : f64[2,3] = phi(%%c, %%x, %%x) @a\n"
		         "%%o : f64[2,3] = add(%%y, %%z) @out\n"
		         "output %%o\n",
		         th[k][0], th[k][1]);
		check_case(names[k], text, 0);
	}
}

/* Training-mode batch normalization inside a branch, and a max pool there
 * (which autodiff gives its indices): both rewrites keep the guard. */
static void test_if_rewrites(void)
{
	for (int k = 0; k < 2; k++) {
		char text[2048];
		snprintf(
		        text, sizeof text,
		        "input %%x : f64[3,2,2,2]\ninput %%s : f64[2]\ninput %%b : f64[2]\n"
		        "const %%m : f64[2] = [0.5, -0.5]\nconst %%v : f64[2] = [2, 0.5]\n"
		        "const %%th : f64[] = [%d]\n"
		        "%%r : f64[] = reduce_sum(%%x) {axes=[0,1,2,3], keepdims=0} @r\n"
		        "%%c : bool[] = greater(%%r, %%th) @c\n"
		        "%%nc : bool[] = not(%%c) @nc\n"
		        "%%y1 : f64[3,2,2,2] = batch_norm(%%x, %%s, %%b, %%m, %%v) {epsilon=1e-05} "
		        "if %%c @if/then/bn\n"
		        "%%y2 : f64[3,2,1,1] = max_pool(%%y1) {kernel=[2,2], strides=[2,2], "
		        "pads=[0,0,0,0], dilations=[1,1], ceil_mode=0, storage_order=0} "
		        "if %%c @if/then/mp\n"
		        "%%e1 : f64[3,2,2,2] = mul(%%x, %%x) if %%nc @if/else/sq\n"
		        "%%e2 : f64[3,2,1,1] = max_pool(%%e1) {kernel=[2,2], strides=[2,2], "
		        "pads=[0,0,0,0], dilations=[1,1], ceil_mode=0, storage_order=0} "
		        "if %%nc @if/else/mp\n"
		        "%%y : f64[3,2,1,1] = phi(%%c, %%y2, %%e2) @if\n"
		        "output %%y\n",
		        k ? 100 : -100);
		check_case(k ? "if_bn_else" : "if_bn_then", text, TRAIN);
	}
}

/* The shape of what autodiff builds for an If: the backward nodes of a
 * branch run under its guard; a weight read only in the branch gets
 * phi(c, gradient, zeros), readable by the optimizer whichever branch ran. */
static void test_if_structure(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *in[2], *g[2], *c;
	int guarded = 0;
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %x : f32[2,3]\ninput %w : f32[3,3]\ninput %c : bool[]\n"
	                     "%nc : bool[] = not(%c) @nc\n"
	                     "%t1 : f32[2,3] = matmul(%x, %w) if %c @if/then/mm\n"
	                     "%t2 : f32[2,3] = tanh(%t1) if %c @if/then/tanh\n"
	                     "%e1 : f32[2,3] = neg(%x) if %nc @if/else/neg\n"
	                     "%y : f32[2,3] = phi(%c, %t2, %e1) @if\n"
	                     "%s : f32[] = reduce_sum(%y) {axes=[0,1], keepdims=0} @sum\n"
	                     "output %s\n");
	CHECK(m != NULL);
	if (!m)
		return;
	in[0] = ir_find_value(m, "x");
	in[1] = ir_find_value(m, "w");
	c = ir_find_value(m, "c");
	CHECK(ad_gradients(m, ir_find_value(m, "s"), NULL, in, 2, g));
	CHECK_EQ(ir_verify(m), 0);
	IR_FOR_EACH_NODE(m, n)
	{
		bool backward = !strncmp(n->name, "grad/if/then/", 13);
		guarded += backward && n->guard == c;
		/* the lifting phi, its zeros and the sum are outside the branch */
		CHECK(!backward || (n->op != IR_OP_MATMUL && n->op != IR_OP_MUL) || n->guard == c);
	}
	CHECK(guarded >= 3); /* tanh's derivative and both matmuls */
	CHECK(!g[1]->def->guard && g[1]->def->op == IR_OP_PHI && g[1]->def->in[0] == c);
	/* x: an add of the lifted then contribution and the else one */
	CHECK(!g[0]->def->guard && g[0]->def->op == IR_OP_ADD);
	ir_module_free(m);
}

/* A branch that cannot be compiled is a trap, which has no inputs: no
 * gradient flows into it, and the other branch's weights get theirs. */
static void test_if_trap(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct ir_module *m;
	struct ir_value *w, *g[1];
	ctx_collect(&ctx, &d);
	m = parse_text(&ctx, "input %x : f32[2,3]\ninput %w : f32[3,3]\ninput %c : bool[]\n"
	                     "%nc : bool[] = not(%c) @nc\n"
	                     "%t1 : f32[2,3] = matmul(%x, %w) if %c @if/then/mm\n"
	                     "%e1 : f32[2,3] = trap() {dtype=f32, shape=[2,3], message=\"no\"} "
	                     "if %nc @if/else/trap\n"
	                     "%y : f32[2,3] = phi(%c, %t1, %e1) @if\n"
	                     "%s : f32[] = reduce_sum(%y) {axes=[0,1], keepdims=0} @sum\n"
	                     "output %s\n");
	CHECK(m != NULL);
	if (!m)
		return;
	w = ir_find_value(m, "w");
	CHECK(ad_gradients(m, ir_find_value(m, "s"), NULL, &w, 1, g));
	CHECK_EQ(ir_verify(m), 0);
	CHECK(!g[0]->def->guard && g[0]->def->op == IR_OP_PHI);
	ir_module_free(m);
}

/* Running statistics of a batch normalization in a branch move only when
 * the branch runs. */
static void test_if_running_stats(void)
{
	for (int k = 0; k < 2; k++) {
		struct ir_ctx ctx;
		struct diag_buf d;
		struct ir_module *m;
		struct ir_value *run[1], *upd[1];
		char err[256];
		double x[12], mean[2] = { 0 };
		const bool cv = k == 0;
		const char *text =
		        "onnxc-ir 1\nmodule \"bn\"\n"
		        "input %x : f64[3,2,2]\ninput %c : bool[]\n"
		        "const %s : f64[2] = [1.5, 0.5]\nconst %b : f64[2] = [0.25, -1]\n"
		        "const %m : f64[2] = [0.5, -0.5]\nconst %v : f64[2] = [2, 0.5]\n"
		        "%y1 : f64[3,2,2] = batch_norm(%x, %s, %b, %m, %v) "
		        "{epsilon=0.001} if %c @if/then/bn\n"
		        "%y : f64[3,2,2] = phi(%c, %y1, %x) @if\n"
		        "output %y\n";
		ctx_collect(&ctx, &d);
		m = ir_parse(&ctx, text, strlen(text));
		CHECK(m != NULL);
		if (!m)
			return;
		run[0] = ir_find_value(m, "m");
		CHECK(ad_train_mode(m, 0.1f, run, 1, upd));
		ir_add_output(m, upd[0]);
		CHECK_EQ(ir_verify(m), 0);
		CHECK(!strcmp(upd[0]->name, "m/updated") && !upd[0]->def->guard);
		for (int i = 0; i < 12; i++) {
			x[i] = noise(7, i) * 2 + 0.3;
			mean[i / 2 % 2] += x[i] / 6;
		}
		CHECK(ir_input_to_const(m, ir_find_value(m, "x"), x));
		CHECK(ir_input_to_const(m, ir_find_value(m, "c"), &cv));
		CHECK(ir_fold_all(m, err, sizeof err) >= 0);
		CHECK(upd[0]->data != NULL);
		if (upd[0]->data) {
			const double *rm = upd[0]->data, m0[2] = { 0.5, -0.5 };
			for (int c = 0; c < 2; c++)
				CHECK(fabs(rm[c] - (cv ? 0.9 * m0[c] + 0.1 * mean[c] : m0[c])) <
				      1e-6);
		}
		ir_module_free(m);
	}
}

TESTS(T(test_unary) T(test_hard_ops) T(test_cast_copy) T(test_binary_broadcast) T(test_pow) T(
        test_prelu_where_mask) T(test_accumulate_seed) T(test_matmul) T(test_gemm) T(test_conv)
              T(test_conv_transpose) T(test_norms) T(test_softmax) T(test_batch_norm_train) T(
                      test_batch_norm_train_values) T(test_pool) T(test_reduce) T(test_move)
                      T(test_slice) T(test_gather) T(test_network) T(test_loss) T(test_no_rule)
                              T(test_bad_arguments) T(test_contract) T(test_attention)
                                      T(test_attention_bias_refused) T(test_rnn_forward)
                                              T(test_rnn_grad) T(test_rnn_off_path) T(test_if)
                                                      T(test_if_nested) T(test_if_rewrites)
                                                              T(test_if_structure) T(test_if_trap)
                                                                      T(test_if_running_stats))
