/*
 * test_codegen.c - the memory planner and its checker.
 *
 * For each model given: lower and plan it, and check that the plan passes
 * the checker, that reuse made the arena no larger than the sum of the
 * intermediates, and that the checker is not toothless: moving one tensor
 * onto another that is alive at the same time must be reported.
 *
 * usage: test_codegen MODEL.onnx[:dim=N,...]...
 */
#include "codegen/plan.h"
#include "frontend/fe.h"
#include "passes/passes.h"
#include "testutil.h"

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
	CHECK(pass_run(m, pass_codegen_pipeline, pass_codegen_pipeline_len, NULL));
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

int main(int argc, char **argv)
{
	test_current = "memory plan";
	for (int i = 1; i < argc; i++)
		check_model(argv[i]);
	return test_failures != 0;
}
