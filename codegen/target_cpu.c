/*
 * target_cpu.c - the CPU target (struct cg_target, target.h).
 *
 * The generated kernels are one native object for the host (or --cpu),
 * NAME_kernels.o (llvm.c); NAME.c calls libonnxc_rt: rt_<fn>(ctx, &d<s>,
 * tensors...) per library step, the step's workspace last where the
 * runtime takes one, and rt_launch for a kernel, which splits its outer
 * iterations over the context's threads. The library kernels compute in
 * FP32 (and FP64, integers): half tensors are staged through FP32 copies
 * around them (lower.c, half_libraries false).
 */
#include "emit.h"

#include <stdio.h>

/* The CPU column of libcalls.h: does libonnxc_rt have the call, and does it
 * take the step's workspace after the tensors? */
#define CG_CPU_RT           \
	{                   \
		true, false \
	}
#define CG_CPU_RT_WS       \
	{                  \
		true, true \
	}
#define CG_CPU_NONE          \
	{                    \
		false, false \
	}
static const struct {
	bool runs, workspace;
} calls[CG_LIB_COUNT] = {
#define CG_LIB(id, desc, fn, args, elems, cpu, cuda) [CG_LIB_##id] = CG_CPU_##cpu,
#include "libcalls.h"
};

/* --cpu is checked by LLVM, which knows the CPU names, when it makes the
 * target machine (llvm.c). */
static bool check_options(struct ir_ctx *ctx, const struct cg_options *o)
{
	(void)ctx;
	(void)o;
	return true;
}

static bool supports_lib(enum cg_lib lib) { return calls[lib].runs; }

/* The CPU runtime takes every size a plan can hold. */
static const char *refuses(struct ir_arena *a, const struct cg_step *s)
{
	(void)a;
	(void)s;
	return NULL;
}

/* llvm.c's emit_op has every elementwise op for the host. */
static bool supports_op(enum ir_op op)
{
	(void)op;
	return true;
}

static bool emit_kernels(struct cg_plan *p, const char *ll_path, const char **objs, int *nobjs)
{
	const char *obj =
	        ir_arena_printf(p->arena, "%s/%s_kernels.o", p->opt->out_dir, p->opt->name);
	objs[(*nobjs)++] = obj;
	return cg_llvm_emit(p, obj, ll_path);
}

static void emit_lib_args(FILE *f, const struct cg_plan *p, const struct cg_step *s, int index)
{
	fprintf(f, "&d%d", index);
	cg_c_tensor_args(f, p, s);
	if (calls[s->lib].workspace)
		fprintf(f, ", A(%lld)", (long long)s->ws_offset);
}

static void emit_launch(FILE *f, const struct cg_plan *p, const struct cg_step *s)
{
	fprintf(f, " };\n\t\trt_launch(ctx, %s_k%d, a, %lld, %lld);\n\t}\n", p->opt->name,
	        s->k->code, (long long)s->outer, (long long)s->inner);
}

/* NAME.c: the instance is an rt_model (the arena, the weights, the thread
 * context); NAME_run hands the context to the parts. */
static void emit_source(FILE *f, const struct cg_plan *p)
{
	const char *n = p->opt->name;
	char N[128], what[256];
	struct ir_module *m = p->m;
	cg_c_upper(N, n, sizeof N);
	snprintf(what, sizeof what,
	         "One runtime call per step over a %lld-byte arena; the fused elementwise\n"
	         " * kernels %s_k<i> are in %s_kernels.o.",
	         (long long)p->arena_bytes, n, n);
	cg_c_banner(f, p, n, what);
	fprintf(f,
	        "#include \"%s.h\"\n\n#include <math.h>\n#include <onnxc_rt.h>\n#include "
	        "<stdlib.h>\n\n",
	        n);
	fprintf(f, "struct %s {\n\tstruct rt_model m;\n", n);
	cg_c_shape_field(f, p);
	fprintf(f, "};\n\n");
	if (p->opt->embed_weights)
		fprintf(f, "extern const unsigned char %s_weights_blob[];\n", n);
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i]->code == p->kernels[i]->id)
			fprintf(f, "void %s_k%d(void *const *args, int64_t begin, int64_t end);\n",
			        n, p->kernels[i]->id);
	fprintf(f, "\n#define IN(i) ((void *)inputs[i])\n#define OUT(i) (outputs[i])\n"
	           "#define W(off) ((void *)(model->m.weights + (off)))\n"
	           "#define A(off) ((void *)(model->m.arena + (off)))\n"
	           "#define CALL(x) do { int st_ = (x); if (st_) return st_; } while (0)\n"
	           "#define BEGIN(s) (t0 = rt_step_begin(&model->m))\n"
	           "#define END(s) rt_step_end(&model->m, (s), t0)\n"
	           "/* a run-time If's guard: g stays true while the bool at p is */\n"
	           "#define GUARD(g, p) ((g) = (g) && *(const unsigned char *)(p) != 0)\n\n");
	cg_c_descriptors(f, p);
	cg_c_step_names(f, p);
	{
		char params[256];
		snprintf(params, sizeof params,
		         "struct %s *model, struct rt_ctx *ctx, const void *const inputs[], "
		         "void *const outputs[]",
		         n);
		cg_c_parts(f, p, n, params, "\tdouble t0;\n\t(void)inputs;\n\t(void)outputs;\n");
	}
	fprintf(f,
	        "\nint %s_run(struct %s *model, const void *const inputs[], void *const "
	        "outputs[])\n{\n",
	        n, n);
	fprintf(f, "\tstruct rt_ctx *ctx;\n");
	cg_c_shape_begin(f, p);
	cg_c_arg_checks(f, m);
	fprintf(f, "\tctx = model->m.ctx;\n\trt_model_begin_run(&model->m);\n");
	cg_c_call_parts(f, p, n, "model, ctx, inputs, outputs");
	if (!cg_c_nparts(p))
		fprintf(f, "\t(void)ctx;\n");
	cg_c_shape_end(f, p);
	fprintf(f, "\tif (!model->m.hook)\n\t\treturn RT_OK;\n");
	cg_c_sizes(f, "\t", "output_sizes", N, "OUTPUT", m->noutputs);
	cg_c_shape_return(f, p,
	                  ir_arena_printf(p->arena,
	                                  "model->m.hook(model->m.hook_ctx, outputs, %s, %d, NULL)",
	                                  m->noutputs ? "output_sizes" : "NULL", m->noutputs));
	fprintf(f,
	        "}\n\n"
	        "int %s_set_output_hook(struct %s *model, rt_output_hook_fn fn, void *ctx)\n{\n"
	        "\tif (!model)\n\t\treturn RT_ERR_ARGUMENT;\n"
	        "\tmodel->m.hook = fn;\n\tmodel->m.hook_ctx = ctx;\n\treturn RT_OK;\n}\n\n",
	        n, n);
	cg_c_common_api(f, p, n, N);

	fprintf(f,
	        "\nint %s_create(struct %s **out, const char *weights_path)\n{\n"
	        "\tstruct %s *model;\n\tint st;\n\tchar path[4096];\n"
	        "\tif (!out)\n\t\treturn RT_ERR_ARGUMENT;\n\t*out = NULL;\n"
	        "\tif (!(model = rt_calloc(1, sizeof *model)))\n\t\treturn RT_ERR_NO_MEMORY;\n",
	        n, n, n);
	if (p->opt->embed_weights)
		fprintf(f,
		        "\tst = rt_model_open(&model->m, %s_ARENA_BYTES, weights_path, "
		        "%s_weights_blob,\n"
		        "\t                   %s_MODEL_ID, %s_WEIGHT_BYTES);\n",
		        N, n, N, N);
	else
		fprintf(f,
		        "\tif (!weights_path && %s_WEIGHT_BYTES)\n"
		        "\t\tweights_path = rt_default_weights(\"%s.weights\", path, sizeof "
		        "path);\n"
		        "\tst = rt_model_open(&model->m, %s_ARENA_BYTES, weights_path, NULL, "
		        "%s_MODEL_ID,\n"
		        "\t                   %s_WEIGHT_BYTES);\n",
		        N, n, N, N, N);
	fprintf(f,
	        "\t(void)path;\n\tif (st) {\n\t\tfree(model);\n\t\treturn st;\n\t}\n"
	        "\trt_model_steps(&model->m, %d, step_names);\n",
	        p->nsteps);
	fprintf(f, "\t*out = model;\n\treturn RT_OK;\n}\n\n");
	fprintf(f,
	        "void %s_destroy(struct %s *model)\n{\n\tif (!model)\n\t\treturn;\n"
	        "\trt_model_close(&model->m);\n\tfree(model);\n}\n",
	        n, n);
}

/* libonnxc_rt is the CPU runtime itself: found, or cg_runtime_paths failed. */
static bool check_runtime(struct ir_ctx *ctx, struct ir_arena *a, const char *rtlib, bool trainer)
{
	(void)ctx;
	(void)a;
	(void)rtlib;
	(void)trainer;
	return true;
}

static int link_runtime(struct ir_arena *a, const char *rtlib, char **argv, int k, int nargs)
{
	(void)a;
	(void)nargs;
	argv[k++] = (char *)rtlib;
	return k;
}

const struct cg_target cg_cpu_target = {
	.name = "cpu",
	.check_options = check_options,
	.supports_lib = supports_lib,
	.supports_op = supports_op,
	.refuses = refuses,
	.half_libraries = false,
	.emit_kernels = emit_kernels,
	.rt_prefix = "rt_",
	.rt_ctx = "ctx",
	.emit_lib_args = emit_lib_args,
	.emit_launch = emit_launch,
	.emit_source = emit_source,
	.check_runtime = check_runtime,
	.link_runtime = link_runtime,
};
