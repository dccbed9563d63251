/*
 * test_optable.c - every op's row against every layer's table.
 *
 * Each layer expands ir/ops.h into its own table, so a row without a hook
 * for some layer does not compile. What the build cannot see is whether the
 * entry a row names is consistent with the rest of the row and with what the
 * layer does with it; this test walks every op and checks that, naming the
 * op when it fails:
 *   - fold: every op has an evaluator (the reference interpreter is the
 *     oracle; a run-time loop's ops are run whole by ir_fold_all), the elementwise driver exactly for the elementwise ops and
 *     copy, and the driver computes every elementwise op on every element
 *     type its inference accepts;
 *   - export: a writer, or a refusal that says why;
 *   - mixed precision: a reason, and a refinement only by a string attribute
 *     of the op's schema, giving another class than the row's;
 *   - gradients: a rule exactly where the row names one;
 *   - lowering: fused exactly for the elementwise ops (code generation fuses
 *     by kind), and the other named non-dispatching entries only for the ops
 *     whose steps are made elsewhere; the LLVM generator emits every fused
 *     op on every element type its inference accepts;
 *   - gradients again: the family rules built on one switch (unary, binary,
 *     reduce) differentiate every op whose row names them.
 * The per-op switches run in a child process, so a panic is a failure that
 * names the op.
 */
#include "codegen/plan.h"
#include "frontend/fe.h"
#include "passes/amp.h"
#include "passes/autodiff.h"
#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

/* The hook columns of every row, as the tokens it names. */
struct row {
	const char *why, *fold, *ex, *grad, *lo;
};

static const struct row rows[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = { #why, #fold, #ex, #grad, #lo },
#include "ir/ops.h"
#undef IR_OP
};

#define CHECK_OP(op, c)                                                                   \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "%s:%d: %s: op %s: CHECK failed: %s\n", __FILE__, \
			        __LINE__, test_current, ir_ops[op].name, #c);             \
			test_failures++;                                                  \
		}                                                                         \
	} while (0)

static bool is(const char *token, const char *s) { return !strcmp(token, s); }

static void test_fold_table(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		bool elt = ir_ops[op].kind == IR_KIND_ELTWISE || op == IR_OP_COPY;
		/* a run-time loop's ops: ir_fold_all runs the loop whole */
		CHECK_OP(op, ir_can_fold((enum ir_op)op) || is(rows[op].fold, "loop"));
		CHECK_OP(op, is(rows[op].fold, "eltwise") == elt);
	}
}

static void test_export_table(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		const char *refusal = "unset";
		bool writes = fe_export_writes((enum ir_op)op, &refusal);
		bool refused = !strncmp(rows[op].ex, "refuse_", 7);
		CHECK_OP(op, writes != refused);
		CHECK_OP(op, writes ? refusal == NULL : refusal && *refusal);
	}
}

static void test_amp_table(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		const char *reason = amp_class_reason((enum ir_op)op);
		enum ir_amp cls;
		const char *attr = amp_class_attr((enum ir_op)op, &cls);
		CHECK_OP(op, reason && *reason);
		if (attr) {
			char want[64];
			snprintf(want, sizeof want, "%s:s", attr);
			CHECK_OP(op, strstr(ir_ops[op].schema, want) != NULL);
			CHECK_OP(op, cls != ir_ops[op].amp);
		}
	}
}

static void test_grad_table(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++)
		CHECK_OP(op, ad_has_rule((enum ir_op)op) == !is(rows[op].grad, "none"));
}

static void test_lower_table(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		const char *lo = rows[op].lo;
		CHECK_OP(op, is(lo, "fused") == (ir_ops[op].kind == IR_KIND_ELTWISE));
		CHECK_OP(op, is(lo, "view") == (op == IR_OP_RESHAPE || op == IR_OP_BITCAST));
		CHECK_OP(op, is(lo, "view") == cg_is_view((enum ir_op)op));
		CHECK_OP(op, is(lo, "direct") == (op == IR_OP_COPY));
		/* pass_batchnorm rewrites batch_norm, and nothing else */
		CHECK_OP(op, is(lo, "rewritten") == (op == IR_OP_BATCH_NORM));
	}
}

/* Sets every attribute of n's schema to a value valid for the elementwise
 * ops and the reductions (0.5 for floats, 1 for ints, f32 for dtypes, {0}
 * for int lists). */
static void set_attrs(struct ir_module *m, struct ir_node *n)
{
	const char *s = ir_ops[n->op].schema;
	while (*s) {
		const char *colon = strchr(s, ':');
		char name[32];
		size_t len = (size_t)(colon - s);
		memcpy(name, s, len);
		name[len] = 0;
		switch (colon[1]) {
		case 'f': ir_set_f(m, n, name, 0.5f); break;
		case 'i': ir_set_i(m, n, name, 1); break;
		case 't': ir_set_t(m, n, name, IR_F32); break;
		case 'I': ir_set_ints(m, n, name, (const int64_t[]){ 0 }, 1); break;
		default: CHECK_OP(n->op, !"an attribute of another kind");
		}
		s = colon + 2;
		while (*s == ' ')
			s++;
	}
}

/* A module with one node of op reading rank-1 values of two elements of
 * dtypes dt[] (the seed of dropout a scalar): constants 2 when consts,
 * graph inputs otherwise. NULL when inference refuses the types. */
static struct ir_node *one_node(struct ir_module *m, enum ir_op op, const enum ir_dtype *dt,
                                bool consts)
{
	struct ir_value *in[3];
	struct ir_node *n;
	char err[256];
	if (ir_ops[op].min_in > 3) {
		fprintf(stderr, "op %s: one_node builds at most 3 inputs\n", ir_ops[op].name);
		exit(1);
	}
	for (int i = 0; i < ir_ops[op].min_in; i++) {
		struct ir_type t = { .dtype = dt[i], .rank = 1, .dims = { 2 } };
		char name[16];
		if ((op == IR_OP_DROPOUT && i == 1) || (op == IR_OP_PHI && i == 0))
			t.rank = 0; /* the seed; phi's condition */
		snprintf(name, sizeof name, "x%d", i);
		if (consts) {
			void *data = ir_arena_alloc(&m->arena, 16);
			for (int k = 0; k < 2; k++)
				ir_store_f64(dt[i], data, (size_t)k, 2);
			in[i] = ir_add_const(m, name, &t, data);
		} else {
			in[i] = ir_add_input(m, name, &t);
		}
	}
	n = ir_add_node(m, op, "n", in, ir_ops[op].min_in, (const char *[]){ "y" }, 1);
	set_attrs(m, n);
	return ir_infer_node(m, n, err, sizeof err) ? n : NULL;
}

/* The input dtypes for trying op on element type t. */
static void input_types(enum ir_op op, enum ir_dtype t, enum ir_dtype *dt)
{
	dt[0] = dt[1] = dt[2] = t;
	if (op == IR_OP_WHERE || op == IR_OP_PHI)
		dt[0] = IR_BOOL;
	if (op == IR_OP_DROPOUT)
		dt[1] = IR_I64;
}

static const enum ir_dtype kinds[] = { IR_F32, IR_F16, IR_F64, IR_I64, IR_I32,
	                               IR_I8,  IR_U8,  IR_U64, IR_BOOL };
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* Folds one node of op on constants of dtypes dt: 1 if it folded, 0 if
 * inference refuses the types, -1 if evaluation failed. */
static int fold_one(enum ir_op op, const enum ir_dtype *dt)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_node *n;
	char err[256];
	int r = 0;
	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	if ((n = one_node(m, op, dt, true)))
		r = ir_fold_node(m, n, INT64_MAX, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "op %s on %s: %s\n", ir_ops[op].name, ir_dtype_name(dt[0]), err);
	ir_module_free(m);
	return r;
}

/* Runs fn(op, t) in a child process, so that a panic in a per-op switch is a
 * failure naming the op, not the end of the test. 1 if it returned true, 0
 * if false, -1 if it died. */
static int in_child(bool (*fn)(enum ir_op, enum ir_dtype), enum ir_op op, enum ir_dtype t)
{
	int status;
	pid_t pid;
	fflush(NULL);
	if ((pid = fork()) == 0)
		_exit(fn(op, t) ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		fprintf(stderr, "op %s on %s: the child died\n", ir_ops[op].name, ir_dtype_name(t));
		return -1;
	}
	return WEXITSTATUS(status) == 0;
}

/* Generates the fused kernel of one elementwise node of op on t with LLVM:
 * true when inference accepts the types and the kernel was emitted. */
static bool llvm_one(enum ir_op op, enum ir_dtype t)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_node *n;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p = { .opt = &co };
	enum ir_dtype dt[3];
	char path[] = "/tmp/test_optable_XXXXXX";
	int fd = mkstemp(path);
	bool ok;
	input_types(op, t, dt);
	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	if (fd >= 0)
		close(fd);
	if (fd < 0 || !(n = one_node(m, op, dt, false)))
		return false;
	ir_add_output(m, n->out[0]);
	p.m = m;
	p.arena = &m->arena;
	ok = cg_lower(&p) && p.nkernels == 1 && cg_plan_memory(&p) && cg_llvm_emit(&p, path, NULL);
	unlink(path);
	if (!ok)
		fprintf(stderr, "op %s on %s: %s\n", ir_ops[op].name, ir_dtype_name(t), d.text);
	return ok;
}

/* Differentiates a sum of one node of op on t with respect to its inputs:
 * true when inference accepts the types and the rule built the gradients. */
static bool grad_one(enum ir_op op, enum ir_dtype t)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_node *n, *sum;
	struct ir_value *grads[3];
	enum ir_dtype dt[3];
	char err[256];
	input_types(op, t, dt);
	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	if (!(n = one_node(m, op, dt, false)))
		return false;
	sum = ir_add_node(m, IR_OP_REDUCE_SUM, "sum", n->out, 1, (const char *[]){ "loss" }, 1);
	ir_set_ints(m, sum, "axes", (const int64_t[]){ 0 }, 1);
	ir_set_i(m, sum, "keepdims", 0);
	if (!ir_infer_node(m, sum, err, sizeof err))
		return false;
	return ad_gradients(m, sum->out[0], NULL, m->inputs, m->ninputs, grads) &&
	       ir_verify(m) == 0;
}

/* The elementwise driver's per-op switches cover every elementwise op on
 * every element type inference lets through. */
static void test_fold_eltwise(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		int folded = 0;
		if (ir_ops[op].kind != IR_KIND_ELTWISE)
			continue;
		for (int k = 0; k < NKINDS; k++) {
			enum ir_dtype dt[3];
			int r;
			input_types((enum ir_op)op, kinds[k], dt);
			r = fold_one((enum ir_op)op, dt);
			CHECK_OP(op, r >= 0);
			folded += r > 0;
		}
		CHECK_OP(op, folded > 0);
	}
}

/* The LLVM generator's per-op switches (codegen/llvm.c) cover every op the
 * row fuses, on every element type inference lets through. */
static void test_llvm_eltwise(void)
{
	for (int op = 0; op < IR_OP_COUNT; op++) {
		int built = 0;
		if (!is(rows[op].lo, "fused"))
			continue;
		for (int k = 0; k < NKINDS; k++) {
			int r = in_child(llvm_one, (enum ir_op)op, kinds[k]);
			CHECK_OP(op, r >= 0);
			built += r > 0;
		}
		CHECK_OP(op, built > 0);
	}
}

/* The switches of the family rules (grad_unary, grad_binary, grad_reduce)
 * cover every op whose row names them, on the float types. */
static void test_grad_families(void)
{
	static const enum ir_dtype floats[] = { IR_F32, IR_F64 };
	for (int op = 0; op < IR_OP_COUNT; op++) {
		const char *g = rows[op].grad;
		if (!is(g, "unary") && !is(g, "binary") && !is(g, "reduce"))
			continue;
		for (int k = 0; k < 2; k++)
			CHECK_OP(op, in_child(grad_one, (enum ir_op)op, floats[k]) > 0);
	}
}

TESTS(T(test_fold_table) T(test_export_table) T(test_amp_table) T(test_grad_table)
              T(test_lower_table) T(test_fold_eltwise) T(test_llvm_eltwise) T(test_grad_families))
