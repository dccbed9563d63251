/*
 * cg.h - code generation: from an IR module to a linkable C library.
 *
 * The pipeline (cg_compile):
 *   lower.c     IR -> plan: a list of steps, each a runtime library kernel
 *               (GEMM with its epilogue, convolution, pooling, ...) or a
 *               generated fused elementwise kernel; reshapes become aliases
 *   memplan.c   where every tensor lives: graph inputs and outputs in the
 *               caller's buffers, constants in the weights, intermediates in
 *               one arena planned by liveness (reusing memory after a value's
 *               last use, in place where an elementwise kernel allows)
 *   llvm.c      the fused kernels, built with the LLVM C API into one module
 *               and emitted as a native object or PTX (the only file that
 *               includes LLVM headers)
 *   emit_c.c    NAME.h (the API users program against) and NAME.c
 *               (readable straight-line calls into the runtime, one per
 *               library call of libcalls.h or kernel); emit_desc.c its
 *               descriptors
 *   weights.c   NAME.weights (or an object embedding them)
 *   build.c     cc and ar: libNAME.a, or a shared object for onnxc run/check
 *
 * A target (struct cg_target, target.h: target_cpu.c, target_cuda.c)
 * holds what differs between CPU and CUDA: option checks, the kernels'
 * form, the runtime NAME.c calls, what links; the pipeline above and the
 * kernel plan are the same for both.
 *
 * codegen/ owns everything from a verified, normalised IR module to the
 * files of a compiled model. It includes the IR (ir/), the passes it runs
 * before lowering (passes/), the runtime's public headers for the
 * descriptors it fills (runtime/onnxc_rt.h) and, in llvm.c only, LLVM; it
 * never includes frontend/ or the command line, and the runtime never
 * includes it. This header is its public face; plan.h, target.h, emit.h
 * and libcalls.h are internal.
 */
#ifndef ONNXC_CG_H
#define ONNXC_CG_H

#include "ir/ir.h"

struct cg_options {
	const char *name; /* C identifier prefix; also file names */
	const char *out_dir;
	const char *target; /* "cpu" or "cuda" */
	const char *cpu;    /* LLVM CPU name for the CPU target ("native" by default) */
	const char *arch;   /* the CUDA target's GPU architecture ("sm_80" ... "sm_90a") */
	const char *source; /* the model file, for comments */
	bool embed_weights;
	bool shared; /* also link NAME.so (onnxc run / check) */
	/* NAME.so (shared) without the runtime library: its rt_ calls resolve
	 * when onnxc, which carries the runtime and exports it, loads it (the
	 * CPU target under run / check: a third of the time a small model's
	 * build takes, in the link); no libNAME.a */
	bool host_runtime;
	bool emit_llvm; /* keep the kernels' LLVM IR as NAME_kernels.ll */
	bool quiet;
	int64_t max_memory; /* refuse a plan whose arena + weights exceed it (0: no limit) */
};

/* Does o name the CUDA target? For the command line, which names the PTX
 * in depfiles; codegen itself asks its target (target.h). */
bool cg_target_cuda(const struct cg_options *o);

/* The architectures --target cuda accepts ("sm_80, sm_86, ..."), and
 * whether arch is one of them. */
const char *cg_cuda_archs(void);
bool cg_valid_arch(const char *arch);

/* Figures from a compile, for reports. */
struct cg_stats {
	int steps, kernels, lib_calls, aliases;
	int cast_kernels;    /* generated kernels that only cast */
	int casts_fused;     /* casts inside other kernels or library calls */
	int64_t arena_bytes; /* the planned arena */
	int64_t naive_bytes; /* the sum of every intermediate it replaced */
	int64_t weight_bytes;
	double ms_lower, ms_llvm, ms_cc, ms_total;
};

/* Compiles m (which it modifies: lowering passes run on it). Returns false
 * after reporting through m->ctx. */
bool cg_compile(struct ir_module *m, const struct cg_options *opt, struct cg_stats *stats);

/* Plans m without writing anything: the lowering and memory figures of
 * cg_compile (onnxc report). */
bool cg_analyze(struct ir_module *m, const struct cg_options *opt, struct cg_stats *stats);

/* Where the runtime's header folder and static library are (installed next
 * to onnxc, or in the build tree). */
bool cg_runtime_paths(struct ir_ctx *ctx, const char **include_dir, const char **library);

/* onnxc train: compiles OUTDIR/NAME_train.c (written by the caller next to
 * the compiled NAME_step and NAME_eval libraries) into libNAME_train.a and
 * links the training program OUTDIR/train: with mpi, over MPI
 * (rt_train_main_mpi, libonnxc_rt_mpi.a and MPI's libraries), which needs
 * cg_have_mpi(). false after reporting. */
bool cg_build_trainer(struct ir_ctx *ctx, struct ir_arena *a, const struct cg_options *o,
                      const char *name, bool mpi);
/* Whether this onnxc was built with MPI (libonnxc_rt_mpi.a). */
bool cg_have_mpi(void);

/* Checks that name is a valid C identifier prefix. */
bool cg_valid_name(const char *name);

/*
 * What the user's input (names, paths) puts into generated C goes through
 * these two. cg_print_c_string writes a C string literal: '"' and '\\'
 * escaped, every byte outside printable ASCII and '?' in octal ("??/" is a
 * trigraph for a backslash under -std=c11 and would end the literal early).
 * cg_print_comment_text writes text for inside a comment: never "*" "/"
 * (the comment would end there and the rest be code), never a control
 * character.
 */
void cg_print_c_string(FILE *f, const char *s);
void cg_print_comment_text(FILE *f, const char *s);

/* A C identifier made from a file or graph name ("resnet-50.onnx" -> resnet_50). */
void cg_default_name(const char *path, char *out, size_t n);

#endif
