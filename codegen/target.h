/*
 * target.h - what a code generation target is. Internal to codegen/.
 *
 * The pipeline (compile.c) and the shared files (lower.c, memplan.c,
 * emit_c.c, build.c, llvm.c) are the same for every target; what differs
 * is a const struct cg_target of hooks, one instance per target file:
 *
 *   target_cpu.c   cg_cpu_target: kernels as a native object (llvm.c), NAME.c
 *                  calling libonnxc_rt (rt_*), half tensors staged through
 *                  FP32 copies around the library calls
 *   target_cuda.c  cg_cuda_target: kernels as PTX for --arch, embedded in an
 *                  object; NAME.c calling libonnxc_rt_cuda (rtc_*) with plans
 *                  made at create time and a CUDA Graph; the libraries read
 *                  and write half tensors themselves
 *
 * A target is chosen by name (cg_options.target) and carried by the plan
 * (cg_plan.target); shared code asks it, never which target it is. Every
 * hook is required: tests/unit/test_codegen.c checks each target has all of
 * them. What a library call needs from a target is a column of libcalls.h,
 * which the target's file expands; an op or call a target cannot run is
 * refused by cg_lower through the support hooks, naming the node and the
 * target.
 */
#ifndef ONNXC_TARGET_H
#define ONNXC_TARGET_H

#include "plan.h"

#include <stdio.h>

struct cg_target {
	const char *name; /* what --target names it */

	/* Options: checks those the target reads (--arch); false after
	 * reporting. */
	bool (*check_options)(struct ir_ctx *ctx, const struct cg_options *o);

	/* Support: can the target run library call lib, and op inside a
	 * generated kernel? */
	bool (*supports_lib)(enum cg_lib lib);
	bool (*supports_op)(enum ir_op op);
	/* what of library step s, whose call the target has, its runtime
	 * cannot take (a size past its kernels' limits), allocated in a; NULL
	 * when it runs. */
	const char *(*refuses)(struct ir_arena *a, const struct cg_step *s);

	/* Lowering: do the library calls read and write half tensors
	 * themselves (the descriptor's ydtype says what they write)? If not,
	 * cg_lower stages them through FP32 copies in the step's workspace. */
	bool half_libraries;

	/* Kernels: writes the generated kernels into OUTDIR (and their LLVM
	 * IR to ll_path unless NULL), adding the objects to build to
	 * objs[*nobjs] (room for two); false after reporting. */
	bool (*emit_kernels)(struct cg_plan *p, const char *ll_path, const char **objs, int *nobjs);

	/* NAME.c: its runtime's function prefix and the context argument
	 * every call takes first ("rt_", "ctx"), */
	const char *rt_prefix, *rt_ctx;
	/* what follows "<prefix><fn>(<ctx>, " in library step s's call
	 * (descriptor d<index>): the descriptor or what stands for it, the
	 * tensors (cg_c_tensor_args), anything after them, */
	void (*emit_lib_args)(FILE *f, const struct cg_plan *p, const struct cg_step *s, int index);
	/* what follows a kernel step's "void *const a[] = { <args>": the end
	 * of the list and the launch, */
	void (*emit_launch)(FILE *f, const struct cg_plan *p, const struct cg_step *s);
	/* and the whole file around the steps (emit.h has the shared parts). */
	void (*emit_source)(FILE *f, const struct cg_plan *p);

	/* Build: checks that the runtime the target links lies beside the CPU
	 * runtime rtlib (for a shared object, trainer false, or the training
	 * program, trainer true); false after reporting. */
	bool (*check_runtime)(struct ir_ctx *ctx, struct ir_arena *a, const char *rtlib,
	                      bool trainer);
	/* appends the target's runtime libraries to argv at k (room for nargs
	 * entries in all); returns the new k. */
	int (*link_runtime)(struct ir_arena *a, const char *rtlib, char **argv, int k, int nargs);
};

extern const struct cg_target cg_cpu_target, cg_cuda_target;

/* Every target, for the tests; NULL-terminated. */
extern const struct cg_target *const cg_targets[];

/* The target name names (NULL: the CPU), or NULL if there is none. */
const struct cg_target *cg_find_target(const char *name);

#endif
