/*
 * target_cuda.c - the CUDA target (struct cg_target, target.h; docs/cuda.md).
 *
 * The generated kernels are PTX for --arch (llvm.c), written as
 * NAME_kernels.ptx and embedded in an object as NAME_ptx; NAME.c calls
 * libonnxc_rt_cuda: rtc_<fn>(M, &d<s>, tensors...) per library step, or
 * rtc_<fn>(M, model->p<s>, ...) where create made a plan for it (cuBLASLt,
 * cuDNN), and rtc_launch for a kernel. The libraries read and write half
 * tensors themselves: a step whose result differs in type from what it
 * reads says so in its descriptor's ydtype (lower.c, half_libraries true).
 * The arch is an option, never probed: compiling needs no GPU.
 */
#include "emit.h"
#include "onnxc_rt_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA column of libcalls.h: does libonnxc_rt_cuda have the call, the
 * plan (struct rtc_<plan>, made by rtc_<fn>_plan at create time) the call
 * takes instead of its descriptor, if any, and does it take the step's
 * workspace (planned in the arena) last? */
#define CG_CUDA_RTC               \
	{                         \
		true, NULL, false \
	}
#define CG_CUDA_RTC_PLAN(x)     \
	{                       \
		true, #x, false \
	}
#define CG_CUDA_RTC_PLAN_WS(x) \
	{                      \
		true, #x, true \
	}
#define CG_CUDA_NONE               \
	{                          \
		false, NULL, false \
	}
static const struct {
	bool runs;
	const char *plan;
	bool workspace;
} calls[CG_LIB_COUNT] = {
#define CG_LIB(id, desc, fn, args, elems, cpu, cuda) [CG_LIB_##id] = CG_CUDA_##cuda,
#include "libcalls.h"
};

static const char *const archs[] = { "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a" };

const char *cg_cuda_archs(void) { return "sm_80, sm_86, sm_89, sm_90, sm_90a"; }

bool cg_valid_arch(const char *arch)
{
	for (size_t i = 0; arch && i < sizeof archs / sizeof archs[0]; i++)
		if (!strcmp(arch, archs[i]))
			return true;
	return false;
}

bool cg_target_cuda(const struct cg_options *o)
{
	return cg_find_target(o->target) == &cg_cuda_target;
}

static bool check_options(struct ir_ctx *ctx, const struct cg_options *o)
{
	if (cg_valid_arch(o->arch))
		return true;
	ir_error(ctx, "unknown CUDA architecture '%s' (onnxc targets %s)", o->arch ? o->arch : "",
	         cg_cuda_archs());
	return false;
}

static bool supports_lib(enum cg_lib lib) { return calls[lib].runs; }

/* The kernels' limits (runtime/onnxc_rt_cuda.h). */
static const char *refuses(struct ir_arena *a, const struct cg_step *s)
{
	if (s->lib == CG_LIB_LINATTN && s->d.linattn.dk > RTC_LINATTN_MAX_DK)
		return ir_arena_printf(a,
		                       "its key head size %lld is above %d, the most the CUDA "
		                       "kernel holds",
		                       (long long)s->d.linattn.dk, RTC_LINATTN_MAX_DK);
	return NULL;
}

/* llvm.c's emit_op has every elementwise op for NVPTX too (the math from
 * libdevice). */
static bool supports_op(enum ir_op op)
{
	(void)op;
	return true;
}

static bool write_file(struct ir_ctx *ctx, const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(data, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok)
		ir_error(ctx, "cannot write %s", path);
	return ok;
}

/* The kernels as PTX: a file for tools (ptxas, cuobjdump) and an object
 * embedding it, NUL-terminated, as NAME_ptx. */
static bool emit_kernels(struct cg_plan *p, const char *ll_path, const char **objs, int *nobjs)
{
	const char *dir = p->opt->out_dir, *n = p->opt->name, *obj;
	char *ptx;
	size_t size;
	if (!cg_llvm_emit_ptx(p, p->opt->arch, &ptx, &size, ll_path) ||
	    !write_file(p->m->ctx, ir_arena_printf(p->arena, "%s/%s_kernels.ptx", dir, n), ptx,
	                size))
		return false;
	obj = objs[(*nobjs)++] = ir_arena_printf(p->arena, "%s/%s_ptx.o", dir, n);
	if (!cg_llvm_emit_blob(p, obj, ir_arena_printf(p->arena, "%s_ptx", n), ptx, size + 1))
		return false;
	p->kernel_bytes = size;
	return true;
}

static void emit_lib_args(FILE *f, const struct cg_plan *p, const struct cg_step *s, int index)
{
	fprintf(f, calls[s->lib].plan ? "model->p%d" : "&d%d", index);
	cg_c_tensor_args(f, p, s);
	if (calls[s->lib].workspace)
		fprintf(f, ", A(%lld)", (long long)s->ws_offset);
}

static void emit_launch(FILE *f, const struct cg_plan *p, const struct cg_step *s)
{
	(void)p;
	fprintf(f, " };\n\t\tCALL(rtc_launch(M, model->k%d, a, %d, %lld));\n\t}\n", s->k->id,
	        s->nargs, (long long)(s->outer * s->inner));
}

/* What create prepares for step s: its kernel or plan, if any; false if
 * none. */
static bool prepare_step(FILE *f, const struct cg_plan *p, const char *n, int s)
{
	const struct cg_step *st = &p->steps[s];
	if (st->is_kernel)
		fprintf(f, "\tCALL(rtc_kernel(M, \"%s_k%d\", &model->k%d));\n", n, st->k->code,
		        st->k->id);
	else if (calls[st->lib].plan)
		fprintf(f, "\tCALL(rtc_%s_plan(M, &d%d, &model->p%d));\n", cg_lib_calls[st->lib].fn,
		        s, s);
	else
		return false;
	return true;
}

/* Does a step run under a guard (a run-time If)? Then every run reads the
 * guards back to the host, which a CUDA Graph cannot replay: the instance
 * runs its steps directly (docs/cuda.md). */
static bool guarded(const struct cg_plan *p)
{
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].guard)
			return true;
	return false;
}

/*
 * The CUDA flavour: the same steps as a function NAME_steps over device
 * pointers, run once under capture at create time (a CUDA Graph replayed by
 * every run) or directly at each run when there is no graph; GEMM and
 * convolution steps use plans made at create time, generated kernels are
 * looked up in the embedded PTX once.
 */
static void emit_source(FILE *f, const struct cg_plan *p)
{
	const char *n = p->opt->name;
	char N[128], what[320];
	struct ir_module *m = p->m;
	cg_c_upper(N, n, sizeof N);
	snprintf(what, sizeof what,
	         "CUDA (%s): one runtime call per step over a %lld-byte device arena,\n"
	         " * captured once into a CUDA Graph; the fused elementwise kernels %s_k<i>\n"
	         " * are PTX (%s_kernels.ptx), embedded as %s_ptx.",
	         p->opt->arch, (long long)p->arena_bytes, n, n, n);
	cg_c_banner(f, p, n, what);
	fprintf(f,
	        "#include \"%s.h\"\n\n#include <math.h>\n#include <onnxc_rt_cuda.h>\n#include "
	        "<stdlib.h>\n\n",
	        n);
	fprintf(f, "struct %s {\n\tstruct rtc_model *m;\n", n);
	for (int s = 0; s < p->nsteps; s++) {
		const struct cg_step *st = &p->steps[s];
		if (st->is_kernel)
			fprintf(f, "\tstruct rtc_fn *k%d;\n", st->k->id);
		else if (calls[st->lib].plan)
			fprintf(f, "\tstruct rtc_%s *p%d;\n", calls[st->lib].plan, s);
	}
	cg_c_shape_field(f, p);
	fprintf(f, "};\n\n");
	fprintf(f, "extern const unsigned char %s_ptx[];\n", n);
	if (p->opt->embed_weights)
		fprintf(f, "extern const unsigned char %s_weights_blob[];\n", n);
	fprintf(f,
	        "\n#define M (model->m)\n"
	        "#define IN(i) rtc_input(M, (i))\n#define OUT(i) rtc_output(M, (i))\n"
	        "#define W(off) ((void *)(rtc_weights(M) + (off)))\n"
	        "#define A(off) ((void *)(rtc_arena(M) + (off)))\n"
	        "#define CALL(x) do { int st_ = (x); if (st_) return st_; } while (0)\n"
	        "#define BEGIN(s) rtc_step_begin(M, (s))\n"
	        "#define END(s) rtc_step_end(M, (s))\n"
	        "/* a run-time If's guard, read back from the device */\n"
	        "#define GUARD(g, p) do { if (g) CALL(rtc_guard(M, (p), &(g))); } while (0)\n\n");
	cg_c_descriptors(f, p);
	cg_c_step_names(f, p);
	fputc('\n', f);
	cg_c_sizes(f, "", "input_sizes", N, "INPUT", m->ninputs);
	cg_c_sizes(f, "", "output_sizes", N, "OUTPUT", m->noutputs);

	/* the steps */
	{
		char params[160];
		snprintf(params, sizeof params, "struct %s *model", n);
		cg_c_parts(f, p, n, params, "");
	}
	fprintf(f, "\nstatic int %s_steps(struct %s *model)\n{\n", n, n);
	cg_c_call_parts(f, p, n, "model");
	fprintf(f, "%s\treturn RT_OK;\n}\n\n", cg_c_nparts(p) ? "" : "\t(void)model;\n");

	fprintf(f,
	        "int %s_run(struct %s *model, const void *const inputs[], void *const "
	        "outputs[])\n{\n",
	        n, n);
	cg_c_shape_begin(f, p);
	cg_c_arg_checks(f, m);
	fprintf(f,
	        "\tCALL(rtc_run_begin(M, inputs));\n"
	        "\tCALL(rtc_direct(M) ? %s_steps(model) : rtc_run_graph(M));\n",
	        n);
	cg_c_shape_end(f, p);
	cg_c_shape_return(f, p, "rtc_run_end(M, outputs)");
	fprintf(f,
	        "}\n\n"
	        "int %s_set_output_hook(struct %s *model, rt_output_hook_fn fn, void *ctx)\n{\n"
	        "\treturn model ? rtc_set_output_hook(M, fn, ctx) : RT_ERR_ARGUMENT;\n}\n\n",
	        n, n);
	cg_c_common_api(f, p, n, N);

	/* create: open, plans, kernels (in parts, as the steps), capture */
	for (int i = 0, from = 0, to; from < p->nsteps; i++, from = to) {
		to = cg_c_part_end(p, from);
		fprintf(f, "\n/* The plans and kernels of steps %d to %d. */\n", from, to - 1);
		fprintf(f, "static int %s_prepare_%d(struct %s *model)\n{\n", n, i, n);
		bool any = false;
		for (int s = from; s < to && s < p->nsteps; s++)
			any |= prepare_step(f, p, n, s);
		fprintf(f, "%s\treturn RT_OK;\n}\n", any ? "" : "\t(void)model;\n");
	}
	fprintf(f,
	        "\n/* Plans, kernels and the graph; a failure leaves nothing behind. */\n"
	        "static int %s_prepare(struct %s *model)\n{\n",
	        n, n);
	for (int i = 0; i < cg_c_nparts(p); i++)
		fprintf(f, "\tCALL(%s_prepare_%d(model));\n", n, i);
	fprintf(f,
	        "\tCALL(rtc_capture_begin(M));\n"
	        "\tif (!rtc_direct(M)) {\n"
	        "\t\tint st = %s_steps(model), st2 = rtc_capture_end(M);\n"
	        "\t\treturn st ? st : st2;\n"
	        "\t}\n"
	        "\treturn rtc_capture_end(M);\n}\n\n",
	        n);
	fprintf(f,
	        "int %s_create(struct %s **out, const char *weights_path)\n{\n"
	        "\tstruct %s *model;\n\tstruct rtc_model_info info = { 0 };\n\tint st;\n"
	        "\tchar path[4096];\n"
	        "\tif (!out)\n\t\treturn RT_ERR_ARGUMENT;\n\t*out = NULL;\n"
	        "\tif (!(model = rt_calloc(1, sizeof *model)))\n\t\treturn RT_ERR_NO_MEMORY;\n",
	        n, n, n);
	if (!p->opt->embed_weights)
		fprintf(f,
		        "\tif (!weights_path && %s_WEIGHT_BYTES)\n"
		        "\t\tweights_path = rt_default_weights(\"%s.weights\", path, sizeof "
		        "path);\n",
		        N, n);
	fprintf(f,
	        "\tinfo.arena_bytes = %s_ARENA_BYTES;\n\tinfo.weights_path = weights_path;\n"
	        "\tinfo.embedded_weights = %s;\n\tinfo.model_id = %s_MODEL_ID;\n"
	        "\tinfo.weights_bytes = %s_WEIGHT_BYTES;\n"
	        "\tinfo.ptx = (const char *)%s_ptx; /* %zu bytes */\n"
	        "\tinfo.ninputs = %d;\n\tinfo.noutputs = %d;\n"
	        "\tinfo.input_bytes = %s;\n\tinfo.output_bytes = %s;\n"
	        "\tinfo.nsteps = %d;\n\tinfo.step_names = step_names;\n"
	        "\t(void)path;\n%s",
	        N,
	        p->opt->embed_weights ? ir_arena_printf(&p->m->arena, "%s_weights_blob", n)
	                              : "NULL",
	        N, N, n, p->kernel_bytes, m->ninputs, m->noutputs,
	        m->ninputs ? "input_sizes" : "NULL", m->noutputs ? "output_sizes" : "NULL",
	        p->nsteps,
	        guarded(p) ? "\tinfo.direct = 1; /* guarded steps read guards back: no CUDA "
	                     "Graph */\n"
	                   : "");
	fprintf(f,
	        "\tif ((st = rtc_model_open(&model->m, &info)) || (st = %s_prepare(model))) {\n"
	        "\t\trtc_model_close(model->m);\n\t\tfree(model);\n\t\treturn st;\n\t}\n"
	        "\t*out = model;\n\treturn RT_OK;\n}\n\n",
	        n);
	fprintf(f,
	        "void %s_destroy(struct %s *model)\n{\n\tif (!model)\n\t\treturn;\n"
	        "\trtc_model_close(model->m);\n\tfree(model);\n}\n",
	        n, n);
}

/* libonnxc_rt_cuda.a: beside libonnxc_rt.a (built or installed alike). */
static char *rtc_library(struct ir_arena *a, const char *rtlib)
{
	return cg_runtime_sibling(a, rtlib, "libonnxc_rt_cuda.a");
}

static bool check_runtime(struct ir_ctx *ctx, struct ir_arena *a, const char *rtlib, bool trainer)
{
	if (cg_exists(rtc_library(a, rtlib)))
		return true;
	ir_error(ctx,
	         "the CUDA runtime (libonnxc_rt_cuda.a) is not next to %s: this onnxc was built "
	         "without the CUDA toolkit%s",
	         rtlib,
	         trainer ? " and cannot link a CUDA training program"
	                 : "; it compiles for --target cuda but cannot link or run");
	return false;
}

/* The CUDA runtime, the CPU one it builds on, and the CUDA libraries where
 * the toolkit was at build time and in the folders ONNXC_CUDA_LIBDIRS names
 * (colon-separated: cuDNN from a Python wheel, say). */
static int link_runtime(struct ir_arena *a, const char *rtlib, char **argv, int k, int nargs)
{
	const char *dirs = getenv("ONNXC_CUDA_LIBDIRS");
	argv[k++] = rtc_library(a, rtlib);
	argv[k++] = (char *)rtlib;
	argv[k++] = "-L" ONNXC_CUDA_LIBDIR;
	argv[k++] = "-Wl,-rpath," ONNXC_CUDA_LIBDIR;
	for (const char *d = dirs; d && *d && k < nargs - 12;) {
		size_t len = strcspn(d, ":");
		if (len) {
			argv[k++] = ir_arena_printf(a, "-L%.*s", (int)len, d);
			argv[k++] = ir_arena_printf(a, "-Wl,-rpath,%.*s", (int)len, d);
		}
		d += len + (d[len] == ':');
	}
	argv[k++] = "-lcudnn";
	argv[k++] = "-lcublasLt";
	argv[k++] = "-lcudart";
	argv[k++] = "-lstdc++";
	return k;
}

const struct cg_target cg_cuda_target = {
	.name = "cuda",
	.check_options = check_options,
	.supports_lib = supports_lib,
	.supports_op = supports_op,
	.refuses = refuses,
	.half_libraries = true,
	.emit_kernels = emit_kernels,
	.rt_prefix = "rtc_",
	.rt_ctx = "M",
	.emit_lib_args = emit_lib_args,
	.emit_launch = emit_launch,
	.emit_source = emit_source,
	.check_runtime = check_runtime,
	.link_runtime = link_runtime,
};
