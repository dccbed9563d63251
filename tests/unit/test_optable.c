/*
 * test_optable.c - every op's row against every layer's table.
 *
 * Each layer expands ir/ops.h into its own table, so a row without a hook
 * for some layer does not compile. What the build cannot see is whether the
 * entry a row names is consistent with the rest of the row and with what the
 * layer does with it; this test walks every op and checks that, naming the
 * op when it fails:
 *   - fold: every op has an evaluator (the reference interpreter is the
 *     oracle), the elementwise driver exactly for the elementwise ops and
 *     copy, and the driver computes every elementwise op on every element
 *     type its inference accepts;
 *   - export: a writer, or a refusal that says why;
 *   - mixed precision: a reason, and a refinement only by a string attribute
 *     of the op's schema, giving another class than the row's;
 *   - gradients: a rule exactly where the row names one;
 *   - lowering: fused exactly for the elementwise ops (code generation fuses
 *     by kind), and the other named non-dispatching entries only for the ops
 *     whose steps are made elsewhere.
 */
#include "frontend/fe.h"
#include "passes/amp.h"
#include "passes/autodiff.h"
#include "testutil.h"

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
		CHECK_OP(op, ir_can_fold((enum ir_op)op));
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
		CHECK_OP(op, is(lo, "view") == (op == IR_OP_RESHAPE));
		CHECK_OP(op, is(lo, "direct") == (op == IR_OP_COPY));
		/* pass_batchnorm rewrites batch_norm, and nothing else */
		CHECK_OP(op, is(lo, "rewritten") == (op == IR_OP_BATCH_NORM));
	}
}

/* Sets every attribute of n's schema to a value valid for the elementwise
 * ops (0.5 for floats, 1 for ints, f32 for dtypes). */
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
		default: CHECK_OP(n->op, !"an elementwise attribute of another kind");
		}
		s = colon + 2;
		while (*s == ' ')
			s++;
	}
}

/* Folds one node of op whose inputs are the constants 2 of dtypes dt[]: 1 if
 * it folded, 0 if inference refuses the types, -1 if evaluation failed. */
static int fold_one(enum ir_op op, const enum ir_dtype *dt)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_value *in[3];
	struct ir_node *n;
	char err[256];
	int r = 0;
	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	for (int i = 0; i < ir_ops[op].min_in; i++) {
		struct ir_type t = { .dtype = dt[i], .rank = 1, .dims = { 2 } };
		void *data = ir_arena_alloc(&m->arena, 16);
		char name[8];
		if (op == IR_OP_DROPOUT && i == 1)
			t.rank = 0; /* the seed */
		for (int k = 0; k < 2; k++)
			ir_store_f64(dt[i], data, (size_t)k, 2);
		snprintf(name, sizeof name, "c%d", i);
		in[i] = ir_add_const(m, name, &t, data);
	}
	n = ir_add_node(m, op, "n", in, ir_ops[op].min_in, (const char *[]){ "y" }, 1);
	set_attrs(m, n);
	if (ir_infer_node(m, n, err, sizeof err))
		r = ir_fold_node(m, n, INT64_MAX, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "op %s: %s\n", ir_ops[op].name, err);
	ir_module_free(m);
	return r;
}

/* The elementwise driver's per-op switches cover every elementwise op on
 * every element type inference lets through. */
static void test_fold_eltwise(void)
{
	static const enum ir_dtype kinds[] = { IR_F32, IR_F64, IR_I64, IR_I32, IR_U8, IR_BOOL };
	for (int op = 0; op < IR_OP_COUNT; op++) {
		int folded = 0;
		if (ir_ops[op].kind != IR_KIND_ELTWISE)
			continue;
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			enum ir_dtype dt[3] = { kinds[k], kinds[k], kinds[k] };
			int r;
			if (op == IR_OP_WHERE)
				dt[0] = IR_BOOL;
			if (op == IR_OP_DROPOUT)
				dt[1] = IR_I64;
			r = fold_one((enum ir_op)op, dt);
			CHECK_OP(op, r >= 0);
			folded += r > 0;
		}
		CHECK_OP(op, folded > 0);
	}
}

TESTS(T(test_fold_table) T(test_export_table) T(test_amp_table) T(test_grad_table)
              T(test_lower_table) T(test_fold_eltwise))
