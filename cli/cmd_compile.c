/*
 * cmd_compile.c - `onnxc compile`: a model into a linkable C library.
 */
#include "cli.h"
#include "codegen/cg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char compile_help[] =
        "usage: onnxc compile MODEL.onnx -o OUTDIR [options]\n"
        "\n"
        "Compiles a model into OUTDIR: NAME.h (the API), NAME.c (the launch code),\n"
        "NAME_kernels.o (generated kernels), NAME.weights and libNAME.a. Link\n"
        "libNAME.a with the onnxc runtime (libonnxc_rt.a, -lopenblas -lpthread -lm).\n"
        "For --target cuda the kernels are PTX (NAME_kernels.ptx, embedded in\n"
        "libNAME.a); link also libonnxc_rt_cuda.a, -lcudnn -lcublasLt -lcudart\n"
        "-lstdc++. The header and API are the same for both targets.\n"
        "\n"
        "options:\n"
        "  -o OUTDIR            where the files go (created if missing)\n"
        "  --name NAME          C identifier prefix and file names (default: the model\n"
        "                       file's name)\n"
        "  --target T           cpu (default) or cuda\n"
        "  --arch ARCH          the GPU for --target cuda: sm_80, sm_86, sm_89,\n"
        "                       sm_90 (default) or sm_90a\n"
        "  --cpu CPU            LLVM CPU name for the kernels, e.g. x86-64-v3\n"
        "                       (default: native, the CPU onnxc runs on)\n"
        "  --embed-weights      link the weights into the library instead of NAME.weights\n"
        "  --emit-llvm          also write the kernels' LLVM IR (NAME_kernels.ll)\n"
        "  --depfile FILE       also write a Make-syntax depfile: the outputs depend on\n"
        "                       the model and every file it read (external data, ...)\n"
        "  --shape INPUT=DIMS   bind the shape of a graph input, e.g. input=8x3x224x224\n"
        "  --dim NAME=N         bind a symbolic dimension, e.g. batch=8\n"
        "  --const INPUT=FILE   make a graph input a constant (.npy or .pb)\n"
        "  --verify             run the IR verifier after every pass\n"
        "  --dump-after=PASS    print the IR after PASS (or 'all') to standard error\n"
        "  -q, --quiet          print nothing on success\n";

static void print_stats(const char *name, const char *dir, const struct cg_options *o,
                        const struct cg_stats *s)
{
	printf("compiled %s for %s: %d steps (%d library calls, %d generated kernels)\n", name,
	       o->target, s->steps, s->lib_calls, s->kernels);
	printf("  arena %.2f MB (the intermediates take %.2f MB without reuse), weights %.2f MB\n",
	       s->arena_bytes / 1e6, s->naive_bytes / 1e6, s->weight_bytes / 1e6);
	printf("  %s/%s.h, %s/lib%s.a", dir, name, dir, name);
	if (o->embed_weights)
		printf(" (weights embedded)\n");
	else
		printf(", %s/%s.weights\n", dir, name);
	printf("  %.0f ms (planning %.0f, LLVM and weights %.0f, cc %.0f)\n", s->ms_total,
	       s->ms_lower, s->ms_llvm, s->ms_cc);
}

/* NAME.h, NAME.c, libNAME.a, the weights and the PTX, as the build uses them. */
static bool write_compile_depfile(const char *path, const struct cg_options *co,
                                  const struct deps *d)
{
	static const char *const outs[] = { "%s/%s.h", "%s/%s.c", "%s/lib%s.a", "%s/%s.weights",
		                            "%s/%s_kernels.ptx" };
	char bufs[5][4200];
	const char *files[5];
	int n = 0;
	for (int i = 0; i < 5; i++) {
		if ((i == 3 && co->embed_weights) || (i == 4 && !cg_target_cuda(co)))
			continue;
		snprintf(bufs[n], sizeof bufs[n], outs[i], co->out_dir, co->name);
		files[n] = bufs[n];
		n++;
	}
	return write_depfile(path, files, n, d);
}

static void print_amp(const struct model_opts *mo, const struct cg_stats *s)
{
	const struct amp_result *r = &mo->amp_result;
	printf("  mixed precision (%s, %s policy): %d half and %d FP32 nodes, %d cast kernels "
	       "(%d casts fused, %d folded into weights), %d padded for Tensor Cores\n",
	       mo->amp.half == IR_BF16 ? "bf16" : "fp16",
	       mo->amp.policy == AMP_GREEDY ? "greedy" : "cost", r->half_nodes, r->fp32_nodes,
	       s->cast_kernels, s->casts_fused, r->casts_folded, r->padded_ops);
	printf("  predicted on %s: %.3f ms mixed, %.3f ms FP32 (onnxc report explains)\n",
	       mo->amp.gpu ? mo->amp.gpu->name : "h200", r->predicted_us_mixed / 1e3,
	       r->predicted_us_fp32 / 1e3);
	if (r->ranges)
		printf("  calibrated on %d samples: %d nodes BF16 and %d FP32 by range; max rel-L2 "
		       "%.3g (budget %g), %d nodes moved back to FP32\n",
		       r->calib_samples, r->range_bf16, r->range_fp32, r->err_final, r->budget,
		       r->budget_moved);
}

/* What compile's own options set. */
struct compile_args {
	struct cg_options *co;
	const char *depfile;
};

static int compile_opt(int argc, char **argv, int *i, void *ud)
{
	struct compile_args *c = ud;
	struct cg_options *co = c->co;
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "-o", true, &bad)))
		co->out_dir = v;
	else if ((v = opt_value(argc, argv, i, "--name", true, &bad)))
		co->name = v;
	else if ((v = opt_value(argc, argv, i, "--target", true, &bad)))
		co->target = v;
	else if ((v = opt_value(argc, argv, i, "--arch", true, &bad)))
		co->arch = v;
	else if ((v = opt_value(argc, argv, i, "--cpu", true, &bad)))
		co->cpu = v;
	else if ((v = opt_value(argc, argv, i, "--depfile", true, &bad)))
		c->depfile = v;
	else if (opt_value(argc, argv, i, "--embed-weights", false, &bad))
		co->embed_weights = true;
	else if (opt_value(argc, argv, i, "--emit-llvm", false, &bad))
		co->emit_llvm = true;
	else if (opt_value(argc, argv, i, "--quiet", false, &bad) ||
	         opt_value(argc, argv, i, "-q", false, &bad))
		co->quiet = true;
	else
		return bad ? -1 : 0;
	return 1;
}

int cmd_compile(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct cg_options co = { .target = "cpu", .cpu = "native", .arch = "sm_90" };
	struct compile_args ca = { .co = &co };
	struct cg_stats stats;
	struct ir_ctx ctx;
	struct ir_module *m;
	const char *input = NULL, *depfile;
	struct cmd_args args = { "compile", compile_help, &mo, compile_opt, &ca, &input };
	struct deps deps = { .paths = NULL };
	char name[128];
	int status = 0, r = parse_args(argc, argv, &args);

	if (r == 2) {
		free_model_opts(&mo);
		return 0;
	}
	if (r < 0)
		goto usage;
	depfile = ca.depfile;
	if (!input || !co.out_dir) {
		usage_error("compile: %s",
		            !input ? "no model given" : "no output folder given (-o OUTDIR)");
		goto usage;
	}
	if (strcmp(co.target, "cpu") && strcmp(co.target, "cuda")) {
		usage_error("compile: unknown target '%s' (cpu or cuda)", co.target);
		goto usage;
	}
	if (!cg_valid_arch(co.arch)) {
		usage_error("compile: unknown --arch '%s' (%s)", co.arch, cg_cuda_archs());
		goto usage;
	}
	if (!co.name) {
		cg_default_name(input, name, sizeof name);
		co.name = name;
	} else if (!cg_valid_name(co.name)) {
		usage_error("compile: --name %s is not a valid C identifier", co.name);
		goto usage;
	}
	if (!model_opts_fit("compile", input, &mo))
		goto usage;
	co.source = input;
	if (depfile) {
		dep_add(&deps, input);
		mo.fe.on_read = dep_read;
		mo.fe.on_read_ud = &deps;
	}
	ir_ctx_init(&ctx);
	m = load_model(&ctx, input, &mo);
	if (!m) {
		deps_free(&deps);
		free_model_opts(&mo);
		return EXIT_INPUT;
	}
	ctx.file = input;
	co.max_memory = model_max_memory(&mo);
	if (!make_dirs(co.out_dir)) {
		ir_error(&ctx, "cannot create the output folder %s: %s", co.out_dir,
		         strerror(errno));
		status = EXIT_INPUT;
	} else if (!prepare_model(m, &mo) || !cg_compile(m, &co, &stats)) {
		status = EXIT_INPUT;
	} else {
		deps_add_options(&deps, &mo);
		if (depfile && (deps.failed || !write_compile_depfile(depfile, &co, &deps))) {
			fprintf(stderr, "onnxc: error: cannot write the depfile %s: %s\n", depfile,
			        depfile_why(&deps));
			status = EXIT_INPUT;
		} else if (!co.quiet) {
			print_stats(co.name, co.out_dir, &co, &stats);
			if (mo.stats.attention_fused || mo.stats.attention_refused)
				printf("  attention: %d fused from MatMul-Softmax-MatMul, %d left "
				       "as "
				       "they are (onnxc report says why)\n",
				       mo.stats.attention_fused, mo.stats.attention_refused);
			if (mo.mixed)
				print_amp(&mo, &stats);
		}
	}
	ir_module_free(m);
	deps_free(&deps);
	free_model_opts(&mo);
	return status;
usage:
	free_model_opts(&mo);
	return EXIT_USAGE;
}
