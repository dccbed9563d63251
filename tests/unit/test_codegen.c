/*
 * test_codegen.c - the memory planner and its checker.
 *
 * For each model given: lower and plan it, and check that the plan passes
 * the checker, that reuse made the arena no larger than the sum of the
 * intermediates, and that the checker is not toothless: moving one tensor
 * onto another that is alive at the same time must be reported.
 *
 * Without models, the synthetic cases: long chains and trees built in
 * memory, whose lowering, memory plan and launch code must do work bounded
 * by the model - fused kernels no larger than CG_MAX_KERNEL_OPS, planning
 * work linear in the steps, launch code in functions of bounded length, no
 * recursion as deep as the chain (100,000 nodes, under ASan too) - and a
 * checker that catches an in-place pair moved apart. And the tables only
 * a run can check: every target has every hook (target.h), every library
 * call of libcalls.h a function and distinct tensors, and a step a target
 * cannot run is refused naming the node and the target.
 *
 * usage: test_codegen [MODEL.onnx[:dim=N,...]...]
 */
#include "codegen/emit.h"
#include "frontend/fe.h"
#include "passes/passes.h"
#include "runtime/rt_index_rnn.h"
#include "testutil.h"

#include <unistd.h>

static void check_model(const char *arg)
{
	char path[4096];
	struct fe_dim_binding dims[4];
	struct fe_options opt = { .dims = dims };
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p = { .opt = &co };
	char *colon;
	snprintf(path, sizeof path, "%s", arg);
	if ((colon = strchr(path, ':'))) {
		/* name=value pairs after the path */
		char *s = colon + 1;
		*colon = 0;
		while (s && *s && opt.ndims < 4) {
			char *eq = strchr(s, '='), *comma = strchr(s, ',');
			if (comma)
				*comma = 0;
			*eq = 0;
			dims[opt.ndims].name = s;
			dims[opt.ndims++].value = atoll(eq + 1);
			s = comma ? comma + 1 : NULL;
		}
	}
	ctx_collect(&ctx, &d);
	m = fe_import(&ctx, path, &opt);
	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "%s", d.text);
		return;
	}
	CHECK(pass_pipeline(m, PASS_STAGE_CODEGEN, NULL));
	p.m = m;
	p.arena = &m->arena;
	CHECK(cg_lower(&p));
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	CHECK(p.arena_bytes <= p.naive_bytes);
	printf("%s: %d steps, arena %lld bytes for %lld bytes of intermediates\n", arg, p.nsteps,
	       (long long)p.arena_bytes, (long long)p.naive_bytes);
	/* break it: put a tensor on top of another alive at the same time */
	{
		int broken = 0;
		for (int i = 0; i < m->nvalues && !broken; i++) {
			struct cg_val *a = &p.vals[i];
			if (a->buf.where != CG_ARENA || a->alias_of || !a->needed)
				continue;
			for (int k = i + 1; k < m->nvalues && !broken; k++) {
				struct cg_val *b = &p.vals[k];
				if (b->buf.where != CG_ARENA || b->alias_of || !b->needed ||
				    b->inplace_of == m->values[i] || a->inplace_of == m->values[k])
					continue;
				if (a->first <= b->last && b->first <= a->last &&
				    ir_type_elems(&m->values[i]->type) &&
				    ir_type_elems(&m->values[k]->type)) {
					int64_t saved = b->buf.offset;
					b->buf.offset = a->buf.offset;
					CHECK(cg_check_memory(&p) > 0);
					CHECK_STR(d.text, "are alive together but overlap");
					b->buf.offset = saved;
					broken = 1;
				}
			}
		}
	}
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Synthetic models                                                         */
/* ------------------------------------------------------------------------ */

static struct ir_value *node1(struct ir_module *m, enum ir_op op, struct ir_value *a,
                              struct ir_value *b)
{
	struct ir_value *in[2] = { a, b };
	struct ir_node *n = ir_add_node(m, op, NULL, in, b ? 2 : 1, NULL, 1);
	char err[256];
	if (op == IR_OP_SOFTMAX)
		ir_set_i(m, n, "axis", 1);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	return n->out[0];
}

static struct ir_module *new_module(struct ir_ctx *ctx, struct ir_value **x)
{
	struct ir_type t = { .dtype = IR_F32, .rank = 2, .dims = { 1, 256 } };
	struct ir_module *m = ir_module_new(ctx, "t");
	*x = ir_add_input(m, "x", &t);
	return m;
}

/* Lowers m (after the code generation passes) into p. */
static bool lower(struct ir_module *m, struct cg_plan *p, const struct cg_options *co)
{
	memset(p, 0, sizeof *p);
	p->m = m;
	p->opt = co;
	p->arena = &m->arena;
	return pass_pipeline(m, PASS_STAGE_CODEGEN, NULL) && cg_lower(p);
}

/* The ops of each kernel: none above the cap, *total all of them. */
static int max_kernel_ops(const struct cg_plan *p, int *total)
{
	int most = 0;
	*total = 0;
	for (int i = 0; i < p->nkernels; i++) {
		int ops = 0;
		for (int x = 0; x < p->kernels[i]->nx; x++)
			ops += p->kernels[i]->x[x].kind == KX_OP;
		*total += ops;
		most = ops > most ? ops : most;
	}
	return most;
}

/* How many kernel functions the plan's kernels run. */
static int distinct_codes(const struct cg_plan *p)
{
	int n = 0;
	for (int i = 0; i < p->nkernels; i++)
		n += p->kernels[i]->code == p->kernels[i]->id;
	return n;
}

/* The longest function body of the C file at path, in lines. */
static int longest_function(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int longest = 0, at = -1, n = 0;
	CHECK(f != NULL);
	while (f && fgets(line, sizeof line, f)) {
		n++;
		if (line[0] == '{')
			at = n;
		else if (line[0] == '}' && at >= 0) {
			longest = n - at > longest ? n - at : longest;
			at = -1;
		}
	}
	if (f)
		fclose(f);
	return longest;
}

/* 100,000 Sigmoids in a row: kernels of the cap, in place in one block,
 * launch code in bounded functions; the walks are loops, so this neither
 * overflows the stack nor takes time growing with the square. */
static void test_long_chain(void)
{
	enum { N = 100000 };
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_value *x, *v;
	struct ir_module *m;
	char path[] = "/tmp/test_codegen_XXXXXX";
	int total, fd;
	ctx_collect(&ctx, &d);
	m = new_module(&ctx, &x);
	v = x;
	for (int i = 0; i < N; i++)
		v = node1(m, IR_OP_SIGMOID, v, NULL);
	ir_add_output(m, v);
	CHECK(lower(m, &p, &co));
	CHECK(max_kernel_ops(&p, &total) <= CG_MAX_KERNEL_OPS);
	CHECK_EQ(total, N);
	CHECK_EQ(p.nkernels, (N + CG_MAX_KERNEL_OPS - 1) / CG_MAX_KERNEL_OPS);
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	CHECK_EQ(p.arena_bytes, 256 * 4); /* every kernel in place of the last */
	/* three functions: the first kernel (reading x), the in-place ones,
	 * the last (writing y) */
	cg_share_kernels(&p);
	CHECK_EQ(distinct_codes(&p), 3);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(cg_emit_source(&p, path));
	CHECK(longest_function(path) < 2000);
	unlink(path);
	ir_module_free(m);
}

/* A balanced tree of Adds over Sigmoids of one input (2,047 ops in one
 * group): cut into kernels within the cap, each op in one kernel, and no
 * kernel but the root's below a third of the cap. */
static void test_tree(void)
{
	enum { LEAVES = 1024 };
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_value *x, *level[LEAVES];
	struct ir_module *m;
	int total;
	ctx_collect(&ctx, &d);
	m = new_module(&ctx, &x);
	for (int i = 0; i < LEAVES; i++)
		level[i] = node1(m, IR_OP_SIGMOID, x, NULL);
	for (int n = LEAVES; n > 1; n /= 2)
		for (int i = 0; i < n / 2; i++)
			level[i] = node1(m, IR_OP_ADD, level[2 * i], level[2 * i + 1]);
	ir_add_output(m, level[0]);
	CHECK(lower(m, &p, &co));
	CHECK(max_kernel_ops(&p, &total) <= CG_MAX_KERNEL_OPS);
	CHECK_EQ(total, 2 * LEAVES - 1);
	CHECK(p.nkernels <= 3 * total / CG_MAX_KERNEL_OPS + 1);
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	ir_module_free(m);
}

/*
 * x -> h = Sigmoid(x) -> 20,000 x (Softmax, Sigmoid) -> Add(h): a library
 * step's result is never in place, so blocks alternate; h lives throughout.
 * The planner looks at the blocks alive with each one (h and a neighbour),
 * not at every placed one; the arena holds h and two alternating blocks.
 * Then the checker must catch what a broken plan would do: an in-place
 * output moved half a block off its input, and a tensor moved onto h.
 */
static void test_plan(void)
{
	enum { N = 20000 };
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_value *x, *h, *v;
	struct ir_module *m;
	int pair = -1, other = -1;
	ctx_collect(&ctx, &d);
	m = new_module(&ctx, &x);
	h = v = node1(m, IR_OP_SIGMOID, x, NULL);
	for (int i = 0; i < N; i++)
		v = node1(m, IR_OP_SIGMOID, node1(m, IR_OP_SOFTMAX, v, NULL), NULL);
	ir_add_output(m, node1(m, IR_OP_ADD, v, h));
	CHECK(lower(m, &p, &co));
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	CHECK_EQ(p.arena_bytes, 3 * 1024);
	CHECK(p.plan_work <= 3 * (int64_t)p.nsteps);
	for (int i = 0; i < m->nvalues; i++) {
		const struct cg_val *cv = &p.vals[i];
		if (cv->buf.where != CG_ARENA || cv->alias_of || !cv->needed)
			continue;
		if (cv->inplace_of && pair < 0)
			pair = i;
		else if (!cv->inplace_of && m->values[i] != h && other < 0)
			other = i;
	}
	CHECK(pair >= 0 && other >= 0);
	if (pair >= 0) {
		/* the old checker let an in-place pair overlap anyhow */
		p.vals[pair].buf.offset += 512;
		CHECK(cg_check_memory(&p) > 0);
		CHECK_STR(d.text, "are alive together but overlap");
		p.vals[pair].buf.offset -= 512;
	}
	if (other >= 0) {
		int64_t saved = p.vals[other].buf.offset;
		d.len = 0;
		d.text[0] = 0;
		p.vals[other].buf.offset = p.vals[h->id].buf.offset;
		CHECK(cg_check_memory(&p) > 0);
		CHECK_STR(d.text, "are alive together but overlap");
		p.vals[other].buf.offset = saved;
	}
	CHECK_EQ(cg_check_memory(&p), 0);
	ir_module_free(m);
}

/* Kernels differing in a constant or an op run functions of their own;
 * the same kernel on other tensors runs the same function. */
static void test_share(void)
{
	static const float consts[4] = { 1, 2, 1, 2 };
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_type scalar = { .dtype = IR_F32, .rank = 0 };
	struct ir_value *x, *v;
	struct ir_module *m;
	ctx_collect(&ctx, &d);
	m = new_module(&ctx, &x);
	v = x;
	for (int i = 0; i < 6; i++) {
		char name[16];
		struct ir_value *c;
		snprintf(name, sizeof name, "c%d", i);
		c = ir_add_const(m, name, &scalar, &consts[i % 4]);
		/* Softmax between them: each Add (or Sub) is a kernel of its own */
		v = node1(m, IR_OP_SOFTMAX, node1(m, i < 4 ? IR_OP_ADD : IR_OP_SUB, v, c), NULL);
	}
	ir_add_output(m, v);
	CHECK(lower(m, &p, &co));
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(p.nkernels, 6);
	cg_share_kernels(&p);
	/* x + 1 reads the input; then + 2, + 1 (shared), + 2 (shared), - 1 and
	 * - 2 (a new op, and a new constant) */
	CHECK_EQ(distinct_codes(&p), 5);
	CHECK_EQ(p.kernels[3]->code, p.kernels[1]->code);
	CHECK(p.kernels[4]->code != p.kernels[2]->code);
	ir_module_free(m);
}

static struct ir_value *reshape(struct ir_module *m, struct ir_value *v, int64_t d0, int64_t d1)
{
	struct ir_node *n = ir_add_node(m, IR_OP_RESHAPE, NULL, &v, 1, NULL, 1);
	char err[256];
	ir_set_ints(m, n, "shape", (int64_t[]){ d0, d1 }, 2);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	return n->out[0];
}

/*
 * Outputs r = Relu(x) and r1 = Reshape(r), and Softmax(Reshape(r1)): r1
 * must get a copy of its own (it aliases another output), written after
 * the steps; the Softmax reads r's storage through both reshapes, not the
 * copy (which it once read before the copy was made).
 */
static void test_alias_chain(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_value *x, *r, *r1, *r2;
	struct ir_module *m;
	ctx_collect(&ctx, &d);
	m = new_module(&ctx, &x);
	r = node1(m, IR_OP_RELU, x, NULL);
	r1 = reshape(m, r, 16, 16);
	r2 = reshape(m, r1, 256, 1);
	ir_add_output(m, r);
	ir_add_output(m, r1);
	ir_add_output(m, node1(m, IR_OP_SOFTMAX, r2, NULL));
	CHECK(lower(m, &p, &co));
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	CHECK(cg_root(&p, r2) == r);
	CHECK(cg_root(&p, r1) == r1);
	ir_module_free(m);
}

/*
 * w = Where(t, 0, 1) over a bool t that dies there: w's f32 elements are
 * wider than t's bytes, so w must not take t's block (writing w[0] would
 * overwrite t[1..3] before they are read), though both round up to one
 * 64-byte block.
 */
static void test_wider_not_in_place(void)
{
	struct ir_ctx ctx;
	struct diag_buf d;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p;
	struct ir_type six = { .dtype = IR_F32, .rank = 2, .dims = { 1, 6 } };
	struct ir_type scalar = { .dtype = IR_F32, .rank = 0 };
	static const float zero = 0, one = 1;
	struct ir_value *x, *t, *w, *c0, *c1;
	struct ir_module *m;
	struct ir_node *n, *where;
	char err[256];
	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	x = ir_add_input(m, "x", &six);
	c0 = ir_add_const(m, "zero", &scalar, &zero);
	c1 = ir_add_const(m, "one", &scalar, &one);
	n = ir_add_node(m, IR_OP_TRANSPOSE, NULL,
	                (struct ir_value *[]){ node1(m, IR_OP_GREATER, x, c0) }, 1, NULL, 1);
	ir_set_ints(m, n, "perm", (int64_t[]){ 1, 0 }, 2);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	t = n->out[0];
	where = ir_add_node(m, IR_OP_WHERE, NULL, (struct ir_value *[]){ t, c0, c1 }, 3, NULL, 1);
	CHECK(ir_infer_node(m, where, err, sizeof err));
	w = where->out[0];
	ir_add_output(m, node1(m, IR_OP_SOFTMAX, w, NULL));
	CHECK(lower(m, &p, &co));
	CHECK(cg_plan_memory(&p));
	CHECK_EQ(cg_check_memory(&p), 0);
	CHECK(p.vals[w->id].buf.where == CG_ARENA && !p.vals[w->id].inplace_of);
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Targets and library calls                                                */
/* ------------------------------------------------------------------------ */

static void test_targets(void)
{
	int n = 0;
	for (const struct cg_target *const *t = cg_targets; *t; t++, n++) {
		const struct cg_target *g = *t;
		test_current = g->name;
		CHECK(g->name && g->rt_prefix && g->rt_ctx);
		CHECK(g->check_options && g->supports_lib && g->supports_op && g->refuses &&
		      g->emit_kernels);
		CHECK(g->emit_lib_args && g->emit_launch && g->emit_source);
		CHECK(g->check_runtime && g->link_runtime);
		CHECK(cg_find_target(g->name) == g);
		/* every call and op runs on every target today */
		for (int l = 0; l < CG_LIB_COUNT; l++)
			CHECK(g->supports_lib((enum cg_lib)l));
		for (int o = 0; o < IR_OP_COUNT; o++)
			CHECK(g->supports_op((enum ir_op)o));
	}
	test_current = "targets";
	CHECK_EQ(n, 2);
	CHECK(cg_find_target(NULL) == &cg_cpu_target);
	CHECK(cg_find_target("tpu") == NULL);
}

static void test_lib_calls(void)
{
	for (int l = 0; l < CG_LIB_COUNT; l++) {
		const struct cg_lib_call *c = &cg_lib_calls[l];
		unsigned seen = 0;
		CHECK(c->fn && *c->fn && c->args && c->nargs > 0);
		for (int i = 0; i < c->nargs; i++) {
			CHECK(c->args[i] >= 0 && c->args[i] < 16 && !(seen >> c->args[i] & 1));
			seen |= 1u << c->args[i];
		}
	}
}

static bool never_lib(enum cg_lib lib)
{
	(void)lib;
	return false;
}

static bool never_op(enum ir_op op)
{
	(void)op;
	return false;
}

/* Lowers x -> softmax (a library call) -> sigmoid (a kernel) for t; the
 * diagnostics it gives, in d. */
static bool lower_for(const struct cg_target *t, struct diag_buf *d)
{
	struct ir_ctx ctx;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p = { .opt = &co, .target = t };
	struct ir_value *x;
	struct ir_module *m;
	bool ok;
	ctx_collect(&ctx, d);
	m = new_module(&ctx, &x);
	ir_add_output(m, node1(m, IR_OP_SIGMOID, node1(m, IR_OP_SOFTMAX, x, NULL), NULL));
	p.m = m;
	p.arena = &m->arena;
	ok = pass_pipeline(m, PASS_STAGE_CODEGEN, NULL) && cg_lower(&p);
	ir_module_free(m);
	return ok;
}

/* A step the target cannot run is an error naming the node and the target. */
static void test_unsupported(void)
{
	struct cg_target t = cg_cpu_target;
	struct diag_buf d;
	t.name = "test";
	CHECK(lower_for(&t, &d));
	CHECK_EQ((int)d.len, 0);
	t.supports_lib = never_lib;
	CHECK(!lower_for(&t, &d));
	CHECK(strstr(d.text, "error: node '") &&
	      strstr(d.text, "(softmax): the test target has no library call for it"));
	t = cg_cpu_target;
	t.name = "test";
	t.supports_op = never_op;
	CHECK(!lower_for(&t, &d));
	CHECK(strstr(d.text, "(sigmoid): the test target cannot compute it in a generated kernel"));
	CHECK(!strstr(d.text, "softmax"));
}

/* Lowers IR text for the CPU or for CUDA, the diagnostics in d; check()
 * inspects the plan when it lowers. */
static bool lower_text(const char *text, size_t len, bool cuda, struct diag_buf *d,
                       void (*check)(const struct cg_plan *p, bool cuda))
{
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = cuda ? "cuda" : "cpu" };
	struct ir_ctx ctx;
	struct cg_plan p;
	struct ir_module *m;
	bool ok;
	ctx_collect(&ctx, d);
	m = ir_parse(&ctx, text, len);
	CHECK(m != NULL);
	if (!m)
		return false;
	ok = lower(m, &p, &co);
	if (ok && check)
		check(&p, cuda);
	ir_module_free(m);
	return ok;
}

/* ... for both targets, which must lower it without a word. */
static void lowers_on_both(const char *text, size_t len,
                           void (*check)(const struct cg_plan *p, bool cuda))
{
	struct diag_buf d;
	for (int cuda = 0; cuda < 2; cuda++) {
		CHECK(lower_text(text, len, cuda, &d, check));
		CHECK_EQ((int)d.len, 0);
	}
}

static void topk_plan(const struct cg_plan *p, bool cuda)
{
	(void)cuda;
	CHECK_EQ(p->nsteps, 1); /* topk alone: the bitcast is a view */
	CHECK(p->steps[0].lib == CG_LIB_TOPK && p->steps[0].d.topk.k == 3);
}

/* TopK is a library call on both targets; a bitcast is a view there as
 * anywhere: no step of its own. */
static void test_topk(void)
{
	static const char text[] = "onnxc-ir 1\nmodule \"t\"\ninput %x : f32[2,5]\n"
	                           "%v : f32[2,3], %i : i64[2,3] = topk(%x) "
	                           "{axis=1, k=3, largest=1} @tk\n"
	                           "%b : i32[2,3] = bitcast(%v) {to=i32} @bc\n"
	                           "output %b\noutput %i\n";
	lowers_on_both(text, sizeof text - 1, topk_plan);
}

/*
 * A scan output of a run-time loop (frontend/ops_loop.c): a carried value
 * each iteration scatters one slice into. The scatter writes in place -
 * its result is the carried value's storage - and the loop_end copies
 * nothing into it; only the token and the counter are copied back. With a
 * second reader of the carried value in the body (the reduce_sum below),
 * writing in place could change what that reader sees, so the scatter has
 * storage of its own and the loop_end copies it back.
 */
#define SCAN_LOOP(READER, UPDATE)                                                                \
	"onnxc-ir 1\nmodule \"t\"\ninput %x : f32[4]\n"                                          \
	"const %z : f32[6,4] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, " \
	"0, 0, 0]\nconst %i0 : i64[] = [0]\nconst %one : i64[] = [1]\n"                          \
	"const %n : i64[] = [6]\nconst %go : bool[] = [1]\n"                                     \
	"%t : bool[] = loop(%go) @L\n%acc : f32[6,4] = carry(%z) if %t @L\n"                     \
	"%i : i64[] = carry(%i0) if %t @L\n"                                                     \
	"%r : i64[1,1] = reshape(%i) {shape=[1,1]} if %t @L\n"                                   \
	"%idx : i64[1,4] = expand(%r) {shape=[1,4]} if %t @L\n"                                  \
	"%u : f32[1,4] = reshape(%x) {shape=[1,4]} if %t @L\n" READER                            \
	"%s : f32[6,4] = scatter_elements(%acc, %idx, " UPDATE ") "                              \
	"{axis=0, reduction=\"none\"} if %t @L\n%in : i64[] = add(%i, %one) if %t @L\n"          \
	"%c : bool[] = less(%in, %n) if %t @L\n"                                                 \
	"%y : f32[6,4], %k : i64[] = loop_end(%t, %c, %acc, %i, %s, %in) @L\n"                   \
	"output %y\n"

/* The steps inside the loop that copy a tensor of the accumulator's size. */
static int acc_copies(const struct cg_plan *p)
{
	int n = 0;
	for (int s = p->loops[0].open; s < p->loops[0].close; s++)
		n += p->steps[s].lib == CG_LIB_COPY &&
		     ir_type_elems(&p->steps[s].args[0]->type) == 24;
	return n;
}

static const struct cg_step *scatter_step(const struct cg_plan *p)
{
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].lib == CG_LIB_SCATTER_ELEMENTS)
			return &p->steps[s];
	return NULL;
}

static void scan_in_place_plan(const struct cg_plan *p, bool cuda)
{
	const struct cg_step *s = scatter_step(p);
	(void)cuda;
	CHECK(p->nloops == 1 && s != NULL);
	if (!s)
		return;
	CHECK(cg_root(p, s->args[0]) == cg_root(p, s->args[1])); /* result, data */
	CHECK_EQ(acc_copies(p), 0);
}

static void scan_copied_plan(const struct cg_plan *p, bool cuda)
{
	const struct cg_step *s = scatter_step(p);
	(void)cuda;
	CHECK(p->nloops == 1 && s != NULL);
	if (!s)
		return;
	CHECK(cg_root(p, s->args[0]) != cg_root(p, s->args[1]));
	CHECK_EQ(acc_copies(p), 1);
}

static void test_scan_in_place(void)
{
	static const char in_place[] = SCAN_LOOP("", "%u");
	static const char read_too[] =
	        SCAN_LOOP("%m : f32[] = reduce_sum(%acc) {axes=[0,1], keepdims=0} if %t @L\n"
	                  "%u2 : f32[1,4] = add(%u, %m) if %t @L\n",
	                  "%u2");
	lowers_on_both(in_place, sizeof in_place - 1, scan_in_place_plan);
	lowers_on_both(read_too, sizeof read_too - 1, scan_copied_plan);
}

/* one step, the absent inputs (erase_gate) NULL; FP16 inputs with an FP32
 * state: the CPU stages the halves and computes in FP32, the CUDA runtime
 * reads them as they are and is told the state's type */
static void linear_attention_plan(const struct cg_plan *p, bool cuda)
{
	const struct rt_linattn_desc *d = &p->steps[0].d.linattn;
	CHECK_EQ(p->nsteps, 1);
	CHECK(p->steps[0].lib == CG_LIB_LINATTN && p->steps[0].nargs == 9);
	CHECK(p->steps[0].args[5] != NULL && p->steps[0].args[8] == NULL);
	CHECK_EQ(d->dk, 4);
	CHECK_EQ(d->dv, 6);
	CHECK_EQ(d->dtype, cuda ? RT_F16 : RT_F32);
	CHECK_EQ(d->sdtype, cuda ? RT_F32 : 0);
	CHECK_EQ(p->steps[0].nstages, cuda ? 0 : 6); /* q, k, v, decay, beta, y */
}

static void test_linear_attention(void)
{
	static const char text[] =
	        "onnxc-ir 1\nmodule \"t\"\ninput %q : f16[1,3,8]\ninput %k : f16[1,3,4]\n"
	        "input %v : f16[1,3,6]\ninput %p : f32[1,1,4,6]\ninput %g : f16[1,3,1]\n"
	        "input %b : f16[1,3,1]\n"
	        "%y : f16[1,3,12], %s : f32[1,1,4,6] = linear_attention(%q, %k, %v, %p, %g, %b) "
	        "{q_num_heads=2, kv_num_heads=1, scale=0.5, update_rule=\"gated_delta\", past=1, "
	        "erase=0} @la\noutput %y\noutput %s\n";
	lowers_on_both(text, sizeof text - 1, linear_attention_plan);
}

/* A key head size past the CUDA kernel's registers: CUDA refuses the node
 * at lowering, naming the limit; the CPU runs it. */
static void test_linear_attention_limit(void)
{
	static const char text[] =
	        "onnxc-ir 1\nmodule \"t\"\ninput %q : f32[1,2,1025]\ninput %k : f32[1,2,1025]\n"
	        "input %v : f32[1,2,3]\n"
	        "%y : f32[1,2,3], %s : f32[1,1,1025,3] = linear_attention(%q, %k, %v) "
	        "{q_num_heads=1, kv_num_heads=1, scale=0.5, update_rule=\"linear\", past=0, "
	        "erase=0} @la\noutput %y\noutput %s\n";
	struct diag_buf d;
	CHECK(lower_text(text, sizeof text - 1, false, &d, NULL));
	CHECK(!lower_text(text, sizeof text - 1, true, &d, NULL));
	CHECK_STR(d.text, "node 'la' (linear_attention): the cuda target cannot run it: its key "
	                  "head size 1025 is above 1024");
}

static void rnn_plan(const struct cg_plan *p, bool cuda)
{
	const struct cg_step *s = &p->steps[p->nsteps - 1];
	struct rt_rnn_layout l;
	CHECK(s->lib == CG_LIB_RNN && s->d.rnn.cell == RT_RNN_GRU && s->d.rnn.hidden == 5);
	CHECK(rt_rnn_layout(&s->d.rnn, &l));
	/* the workspace holds the CUDA runtime's layout too */
	CHECK(s->ws_bytes >= (int64_t)(l.total * sizeof(float)) && l.total > 0);
	/* half tensors: staged through FP32 on the CPU, read as they are on
	 * CUDA (FP32 copies of r, b and y in the workspace) */
	CHECK_EQ(s->d.rnn.dtype, cuda && s->args[0]->type.dtype == IR_F16 ? RT_F16 : RT_F32);
	CHECK(!cuda || s->d.rnn.dtype == RT_F32 || l.r > 0);
}

/* LSTM, GRU and RNN: one library call with its workspace on both targets
 * (CUDA: a plan, rtc_rnn_plan), in FP32 and FP16. */
static void test_rnn(void)
{
	static const char *const types[] = { "f32", "f16" };
	for (int i = 0; i < 2; i++) {
		const char *t = types[i];
		char text[1024];
		int n = snprintf(
		        text, sizeof text,
		        "onnxc-ir 1\nmodule \"t\"\ninput %%x : %s[3,2,4]\ninput %%l : i32[2]\n"
		        "input %%h : %s[1,2,5]\ninput %%w : %s[1,15,4]\ninput %%r : %s[1,15,5]\n"
		        "input %%b : %s[1,30]\n"
		        "%%y : %s[3,1,2,5], %%yh : %s[1,2,5] = gru(%%x, %%w, %%r, %%b, %%l, %%h) "
		        "{direction=\"forward\", activations=\"Sigmoid,Tanh\", alphas=[0,0], "
		        "betas=[0,0], clip=0, linear_before_reset=0} @g\noutput %%y\noutput "
		        "%%yh\n",
		        t, t, t, t, t, t, t);
		CHECK(n > 0 && n < (int)sizeof text);
		lowers_on_both(text, (size_t)n, rnn_plan);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		test_current = "long chain";
		test_long_chain();
		test_current = "tree";
		test_tree();
		test_current = "plan";
		test_plan();
		test_current = "share";
		test_share();
		test_current = "alias chain";
		test_alias_chain();
		test_current = "wider not in place";
		test_wider_not_in_place();
		test_targets();
		test_current = "library calls";
		test_lib_calls();
		test_current = "unsupported";
		test_unsupported();
		test_current = "topk";
		test_topk();
		test_current = "linear attention";
		test_linear_attention();
		test_current = "linear attention limit";
		test_linear_attention_limit();
		test_current = "rnn";
		test_rnn();
		test_current = "scan in place";
		test_scan_in_place();
	}
	test_current = "memory plan";
	for (int i = 1; i < argc; i++)
		check_model(argv[i]);
	return test_failures != 0;
}
