/*
 * compile.c - the code generation pipeline, top to bottom (see cg.h).
 *
 * It starts where the pass pipeline's codegen stage ended
 * (passes/pipeline.c: batch normalization folded, dead code removed, mixed
 * precision): the caller ran that stage once, and no pass runs here again.
 */
#include "plan.h"
#include "target.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool cg_valid_name(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

void cg_default_name(const char *path, char *out, size_t n)
{
	const char *base = strrchr(path, '/');
	size_t k = 0;
	base = base ? base + 1 : path;
	if (!isalpha((unsigned char)*base) && *base != '_' && n > 2)
		out[k++] = 'm';
	for (; *base && *base != '.' && k + 1 < n; base++)
		out[k++] = isalnum((unsigned char)*base) ? *base : '_';
	out[k] = 0;
	if (!k)
		snprintf(out, n, "model");
}

const struct cg_target *const cg_targets[] = { &cg_cpu_target, &cg_cuda_target, NULL };

const struct cg_target *cg_find_target(const char *name)
{
	for (int i = 0; cg_targets[i]; i++)
		if (!strcmp(name ? name : "cpu", cg_targets[i]->name))
			return cg_targets[i];
	return NULL;
}

static bool make_dir(struct ir_ctx *ctx, const char *dir)
{
	if (mkdir(dir, 0777) == 0 || errno == EEXIST)
		return true;
	ir_error(ctx, "cannot create %s: %s", dir, strerror(errno));
	return false;
}

static void plan_stats(const struct cg_plan *p, struct cg_stats *st)
{
	for (int s = 0; s < p->nsteps; s++) {
		if (p->steps[s].is_kernel)
			st->kernels++;
		else
			st->lib_calls++;
	}
	st->steps = p->nsteps;
	st->arena_bytes = p->arena_bytes;
	st->naive_bytes = p->naive_bytes;
	st->weight_bytes = p->weight_bytes;
	st->cast_kernels = p->cast_kernels;
	st->casts_fused = p->casts_fused;
}

/* a + b, saturated at INT64_MAX (sizes are never negative) */
static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* Bytes of the graph inputs (or outputs) the caller allocates. */
static int64_t io_bytes(struct ir_value *const *v, int n)
{
	int64_t sum = 0;
	for (int i = 0; i < n; i++) {
		int64_t e = ir_type_elems(&v[i]->type), es = ir_dtype_size(v[i]->type.dtype);
		sum = add_sat(sum, e < 0 || e > INT64_MAX / es ? INT64_MAX : e * es);
	}
	return sum;
}

/*
 * --max-memory: everything a run of the compiled model needs - the arena
 * and the weights it allocates, and the inputs and outputs its caller
 * allocates - must fit together.
 */
static bool within_memory_limit(const struct cg_plan *p)
{
	const struct cg_options *o = p->opt;
	const struct ir_module *m = p->m;
	int64_t in = io_bytes(m->inputs, m->ninputs), out = io_bytes(m->outputs, m->noutputs);
	int64_t total = add_sat(add_sat(p->arena_bytes, p->weight_bytes), add_sat(in, out));
	if (o->max_memory <= 0 || total <= o->max_memory)
		return true;
	ir_error(m->ctx,
	         "the model needs %lld bytes of memory (arena %lld + weights %lld + inputs %lld + "
	         "outputs %lld), more than --max-memory %lld; raise --max-memory to compile it",
	         (long long)total, (long long)p->arena_bytes, (long long)p->weight_bytes,
	         (long long)in, (long long)out, (long long)o->max_memory);
	return false;
}

/* The target the options name, for the plan. */
static bool find_target(struct cg_plan *p)
{
	if ((p->target = cg_find_target(p->opt->target)))
		return true;
	ir_error(p->m->ctx, "unknown target '%s' (onnxc targets cpu, cuda)", p->opt->target);
	return false;
}

bool cg_analyze(struct ir_module *m, const struct cg_options *opt, struct cg_stats *stats)
{
	struct cg_plan p = { .m = m, .opt = opt, .arena = &m->arena };
	memset(stats, 0, sizeof *stats);
	if (!find_target(&p))
		return false;
	if (!cg_lower(&p) || !cg_plan_memory(&p) || !within_memory_limit(&p))
		return false;
	plan_stats(&p, stats);
	return true;
}

bool cg_compile(struct ir_module *m, const struct cg_options *opt, struct cg_stats *stats)
{
	struct cg_plan p = { .m = m, .opt = opt, .arena = &m->arena };
	struct ir_arena *a = &m->arena;
	const char *dir = opt->out_dir, *n = opt->name;
	const char *objs[3];
	int nobjs = 0;
	double t0 = now_ms(), t1, t2, t3;
	struct cg_stats st = { 0 };

	if (!cg_valid_name(n)) {
		ir_error(m->ctx, "'%s' is not a valid C identifier for --name", n);
		return false;
	}
	if (!find_target(&p) || !p.target->check_options(m->ctx, opt))
		return false;
	if (!cg_lower(&p) || !cg_plan_memory(&p) || !within_memory_limit(&p))
		return false;
	if (cg_check_memory(&p))
		ir_panic(__FILE__, __LINE__, "the memory plan is inconsistent");
	cg_share_kernels(&p);
	cg_model_id(&p);
	t1 = now_ms();
	if (!make_dir(m->ctx, dir))
		return false;
	if (!p.target->emit_kernels(
	            &p, opt->emit_llvm ? ir_arena_printf(a, "%s/%s_kernels.ll", dir, n) : NULL,
	            objs, &nobjs))
		return false;
	if (!cg_emit_header(&p, ir_arena_printf(a, "%s/%s.h", dir, n)) ||
	    !cg_emit_source(&p, ir_arena_printf(a, "%s/%s.c", dir, n)))
		return false;
	if (opt->embed_weights) {
		/* written as the weights file is, then assembled into the object */
		char *bin = ir_arena_printf(a, "%s/%s_weights.bin", dir, n);
		bool ok;
		objs[nobjs] = ir_arena_printf(a, "%s/%s_weights.o", dir, n);
		ok = cg_write_weights(&p, bin) &&
		     cg_embed_file(&p, objs[nobjs], ir_arena_printf(a, "%s_weights_blob", n), bin);
		remove(bin);
		if (!ok)
			return false;
		nobjs++;
	} else if (!cg_write_weights(&p, ir_arena_printf(a, "%s/%s.weights", dir, n))) {
		return false;
	}
	t2 = now_ms();
	if (!cg_build(&p, objs, nobjs))
		return false;
	t3 = now_ms();
	plan_stats(&p, &st);
	st.ms_lower = t1 - t0;
	st.ms_llvm = t2 - t1;
	st.ms_cc = t3 - t2;
	st.ms_total = t3 - t0;
	if (stats)
		*stats = st;
	return true;
}
