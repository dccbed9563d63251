/*
 * emit.h - the pieces of NAME.c every target's file is made of. Internal to
 * codegen/.
 *
 * emit_c.c writes what is the same for every target (the steps' calls and
 * comments, the step names, argument checks, NAME_run_checked and
 * NAME_strerror) and emit_desc.c the descriptors; a target's emit_source
 * (target_*.c) puts them in its frame: includes, the instance struct and
 * the macros the calls use (IN, OUT, W, A, CALL, BEGIN, END), create, run
 * and destroy.
 */
#ifndef ONNXC_EMIT_H
#define ONNXC_EMIT_H

#include "target.h"

#include <stdio.h>

/* Steps per generated function: short enough for cc's optimiser, long
 * enough that a model of a few hundred layers reads as a few functions. */
#define CG_STEPS_PER_FUNCTION 128

/* A library call's runtime function (rt_<fn>, rtc_<fn>) and its tensors:
 * args[0..nargs) index the step's args in the order the function takes
 * them. By row of libcalls.h. */
struct cg_lib_call {
	const char *fn;
	const int *args;
	int nargs;
};
extern const struct cg_lib_call cg_lib_calls[CG_LIB_COUNT];

/* ", t0, t1, ...": library step s's tensors in its function's order (an
 * FP32 copy where a half tensor is staged). */
void cg_c_tensor_args(FILE *f, const struct cg_plan *p, const struct cg_step *s);

/* emit_desc.c: the descriptors, one static const per library step (d<step>) */
void cg_c_descriptors(FILE *f, const struct cg_plan *p);
/* "{1, 2, 3}" ("{0}" when n is 0: C11 has no empty initializer) */
void cg_c_i64s(FILE *f, const int64_t *v, int n);

/* The opening comment of NAME.c (n: the name), what saying what it holds. */
void cg_c_banner(FILE *f, const struct cg_plan *p, const char *n, const char *what);
/* step_names[], for ONNXC_PROFILE=1. */
void cg_c_step_names(FILE *f, const struct cg_plan *p);
/* The NULL checks at the top of NAME_run. */
void cg_c_arg_checks(FILE *f, const struct ir_module *m);
/* `INDENTstatic const size_t ARRAY[] = { N_KIND0_BYTES, ... };` for n > 0
 * inputs or outputs (KIND INPUT or OUTPUT); nothing for none. */
void cg_c_sizes(FILE *f, const char *indent, const char *array, const char *N, const char *kind,
                int n);
/* NAME_run_checked, NAME_strerror and NAME_output_shape (N: the name in
 * capitals). */
void cg_c_common_api(FILE *f, const struct cg_plan *p, const char *n, const char *N);
/* Outputs of run-time shape (ir.h, struct ir_out_shape): the instance's
 * field recording which shape the last run gave each (none without such
 * outputs), its reset at the start of a run and its setting at the end,
 * which reads each output's condition through the target's GUARD. */
void cg_c_shape_field(FILE *f, const struct cg_plan *p);
void cg_c_shape_begin(FILE *f, const struct cg_plan *p);
void cg_c_shape_end(FILE *f, const struct cg_plan *p);
/* `return STATUS;` at the end of NAME_run, which also forgets the shapes
 * cg_c_shape_end recorded when STATUS is a failure. */
void cg_c_shape_return(FILE *f, const struct cg_plan *p, const char *status);

/* The steps in parts of CG_STEPS_PER_FUNCTION: how many, the static
 * functions NAME_steps_<i>(params) starting with the lines intro, and the
 * calls of them in order (each returning its failure), passing args. */
int cg_c_nparts(const struct cg_plan *p);
/* Where the part starting at step from ends: CG_STEPS_PER_FUNCTION steps
 * on, or further where that would cut a run-time loop (a loop runs in one
 * function). */
int cg_c_part_end(const struct cg_plan *p, int from);
void cg_c_parts(FILE *f, const struct cg_plan *p, const char *n, const char *params,
                const char *intro);
void cg_c_call_parts(FILE *f, const struct cg_plan *p, const char *n, const char *args);

/* src in capitals into dst (n bytes). */
void cg_c_upper(char *dst, const char *src, size_t n);

#endif
