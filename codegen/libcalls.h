/* clang-format off */
/*
 * libcalls.h - the runtime library calls a step can make, one row each.
 * Internal to codegen/. Everything that differs from call to call is
 * generated from these rows (plan.h): enum cg_lib, union cg_desc's members,
 * the call table cg_libs[] (function names, argument orders, per-target
 * columns), the descriptor printers NAME.c is written with (emit_desc.c)
 * and the dtype fields mixed precision sets (lower.c). A row names its
 * printer desc_<member>, so a row without one does not build.
 *
 * Columns:
 *   id     enum suffix (CG_LIB_<id>)
 *   desc   D(m): the descriptor is struct rt_<m>_desc, union cg_desc's member
 *          m, printed by desc_<m>; AS(m): the same member as another row's D(m)
 *   fn     the runtime function: rt_<fn> (CPU), rtc_<fn> (CUDA)
 *   args   the call's tensors after its descriptor, as indices into the
 *          step's args (outputs first there, in the runtime's order here)
 *   elems  YDTYPE: computes on its elements, the descriptor has dtype and
 *          ydtype; DTYPE: computes but writes int64 (dtype only); BYTES:
 *          moves elements of any type (no dtype)
 *   cpu    the CPU runtime: RT: rt_<fn>(ctx, &desc, tensors...); RT_WS: the
 *          same with the step's workspace last (rt_<fn>_workspace(&desc)
 *          bytes); NONE: the CPU target cannot run it
 *   cuda   the CUDA runtime: RTC: rtc_<fn>(M, &desc, tensors...);
 *          RTC_PLAN(p): create makes a struct rtc_<p> with rtc_<fn>_plan,
 *          which the call takes instead of the descriptor; RTC_PLAN_WS(p):
 *          the same with the step's workspace last (sized by the cpu
 *          column's rt_<fn>_workspace, which covers both runtimes); NONE:
 *          the CUDA target cannot run it
 */

/*     id                desc                 fn                 args                 elems   cpu    cuda */
CG_LIB(GEMM,             D(gemm),             gemm,              (1, 2, 3, 4, 0),     YDTYPE, RT,    RTC_PLAN(gemm))
CG_LIB(CONV,             D(conv),             conv,              (1, 2, 3, 4, 0),     YDTYPE, RT_WS, RTC_PLAN(conv))
CG_LIB(CONV_TRANSPOSE,   AS(conv),            conv_transpose,    (1, 2, 3, 0),        YDTYPE, RT_WS, RTC_PLAN(conv))
CG_LIB(POOL,             D(pool),             pool,              (2, 0, 1),           YDTYPE, RT,    RTC)
CG_LIB(SOFTMAX,          D(softmax),          softmax,           (1, 0),              YDTYPE, RT,    RTC)
CG_LIB(LAYERNORM,        D(layernorm),        layernorm,         (3, 4, 5, 0, 1, 2),  YDTYPE, RT,    RTC)
CG_LIB(INSTNORM,         D(instnorm),         instnorm,          (1, 2, 3, 0),        YDTYPE, RT,    RTC)
CG_LIB(LRN,              D(lrn),              lrn,               (1, 0),              YDTYPE, RT,    RTC)
CG_LIB(REDUCE,           D(reduce),           reduce,            (1, 0),              YDTYPE, RT,    RTC)
CG_LIB(ARG,              D(arg),              arg,               (1, 0),              DTYPE,  RT,    RTC)
CG_LIB(TOPK,             D(topk),             topk,              (2, 0, 1),           DTYPE,  RT,    RTC)
CG_LIB(CUMSUM,           D(cumsum),           cumsum,            (1, 0),              YDTYPE, RT,    RTC)
CG_LIB(COPY,             D(copy),             copy,              (1, 0),              BYTES,  RT,    RTC)
CG_LIB(TRAP,             D(trap),             trap,              (0),                 BYTES,  RT,    RTC)
CG_LIB(GATHER,           D(gather),           gather,            (1, 2, 0),           BYTES,  RT,    RTC)
CG_LIB(GATHER_ELEMENTS,  D(gather_elements),  gather_elements,   (1, 2, 0),           BYTES,  RT,    RTC)
CG_LIB(SCATTER_ELEMENTS, D(scatter_elements), scatter_elements,  (1, 2, 3, 0),        BYTES,  RT,    RTC)
CG_LIB(PAD,              D(pad),              pad,               (1, 0),              BYTES,  RT,    RTC)
CG_LIB(TILE,             D(tile),             tile,              (1, 0),              BYTES,  RT,    RTC)
CG_LIB(TRILU,            D(trilu),            trilu,             (1, 0),              BYTES,  RT,    RTC)
CG_LIB(LINATTN,          D(linattn),          linear_attention,  (2, 3, 4, 5, 6, 7, 8, 0, 1), YDTYPE, RT, RTC)
CG_LIB(RNN,              D(rnn),              rnn,               (3, 4, 5, 6, 7, 8, 9, 10, 0, 1, 2), YDTYPE, RT_WS, RTC_PLAN_WS(rnn))
CG_LIB(ATTENTION,        D(attention),        attention,         (2, 3, 4, 5, 0, 1),  YDTYPE, RT,    RTC_PLAN(attention))
CG_LIB(ATTENTION_GRAD,   AS(attention),       attention_grad,    (3, 4, 5, 6, 7, 8, 9, 0, 1, 2), YDTYPE, RT, RTC_PLAN(attention))
CG_LIB(RESIZE,           D(resize),           resize,            (1, 0),              YDTYPE, RT,    RTC)

#undef CG_LIB
