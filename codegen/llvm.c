/*
 * llvm.c - fused elementwise kernels through the LLVM C API.
 *
 * The only file that includes LLVM headers. Each struct cg_kernel becomes
 *
 *     void NAME_k<id>(void *const *args, int64_t begin, int64_t end)
 *
 * iterating outer indices [begin, end) of its (collapsed) index space and,
 * inside, the innermost dimension with a constant trip count. Every
 * argument's view has constant strides, so loads are affine with constant
 * coefficients and LLVM's O3 pipeline vectorizes the inner loop.
 *
 * Numerics: float16 and bfloat16 values are computed in f32 and rounded back
 * to their type (round to nearest even) after every op, so a fused chain
 * gives the same bits as the same ops run one by one with half storage in
 * between; f64 computes in f64; integers wrap; integer division and modulo
 * by zero give 0 instead of trapping; float to integer casts saturate (NaN
 * becomes 0). Everything a kernel computes comes from one switch on the IR
 * op (emit_op), so the CUDA target will reuse it with another loop around.
 */
#include "plan.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gen {
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef i1, i8, i16, i32, i64, f16, f32, f64, ptr, voidt;
	const struct cg_plan *p;
	const struct cg_kernel *k;
	bool gpu;           /* NVPTX: math from libdevice, one thread per element */
	LLVMValueRef *base; /* per argument: its data pointer */
	LLVMValueRef *xoff; /* per load expression: element offset of the row */
	LLVMValueRef *xv;   /* per expression: its value at the element */
	LLVMValueRef flat;  /* the element's row-major index in the index space */
};

static bool isf(enum ir_dtype t) { return ir_dtypes[t].is_float; }
static bool issigned(enum ir_dtype t) { return ir_dtypes[t].is_signed; }
/* The storage types (ir/dtype.h): minifloats compute as f32, the sub-byte
 * integers as i8 holding their sign- or zero-extended value. */
static const struct ir_minifloat *minif(enum ir_dtype t) { return ir_minifloat(t); }
static bool narrow_int(enum ir_dtype t) { return ir_dtypes[t].narrow && !minif(t); }

/* How a dtype is stored in memory. */
static LLVMTypeRef store_type(struct gen *g, enum ir_dtype t)
{
	switch (t) {
	case IR_F32: return g->f32;
	case IR_F64: return g->f64;
	case IR_F16: return g->f16;
	case IR_BF16: return g->i16;
	case IR_BOOL: return g->i8;
	default: return LLVMIntTypeInContext(g->cx, 8 * (unsigned)ir_dtype_size(t));
	}
}

/* How a dtype is computed with. */
static LLVMTypeRef comp_type(struct gen *g, enum ir_dtype t)
{
	switch (t) {
	case IR_F32:
	case IR_F16:
	case IR_BF16: return g->f32;
	case IR_F64: return g->f64;
	case IR_BOOL: return g->i1;
	default:
		if (minif(t))
			return g->f32;
		return LLVMIntTypeInContext(g->cx, 8 * (unsigned)ir_dtype_size(t));
	}
}

static LLVMValueRef i64c(struct gen *g, int64_t v)
{
	return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

static LLVMValueRef fconst(struct gen *g, LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static LLVMValueRef call_intrinsic(struct gen *g, const char *name, LLVMTypeRef *types, int ntypes,
                                   LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef fn;
	LLVMTypeRef ft;
	IR_ASSERT(id != 0);
	fn = LLVMGetIntrinsicDeclaration(g->mod, id, types, (size_t)ntypes);
	ft = LLVMIntrinsicGetType(g->cx, id, types, (size_t)ntypes);
	return LLVMBuildCall2(g->b, ft, fn, args, (unsigned)nargs, "");
}

static LLVMValueRef libm(struct gen *g, const char *name, LLVMValueRef x);
static LLVMValueRef libm2(struct gen *g, const char *name, LLVMValueRef x, LLVMValueRef y);

/* Intrinsics NVPTX has no instruction for: on the GPU they become
 * libdevice calls (llvm.exp -> __nv_expf), which the CPU has as libm. */
static const char *gpu_libm(const struct gen *g, const char *name)
{
	static const char *const names[] = { "llvm.exp", "llvm.log", "llvm.pow", "llvm.sin",
		                             "llvm.cos" };
	if (!g->gpu)
		return NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(name, names[i]))
			return name + 5;
	return NULL;
}

/* A float intrinsic overloaded on its argument type: llvm.sqrt etc. */
static LLVMValueRef fintr(struct gen *g, const char *name, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	if (gpu_libm(g, name))
		return libm(g, gpu_libm(g, name), x);
	return call_intrinsic(g, name, &t, 1, &x, 1);
}

static LLVMValueRef fintr2(struct gen *g, const char *name, LLVMValueRef x, LLVMValueRef y)
{
	if (gpu_libm(g, name))
		return libm2(g, gpu_libm(g, name), x, y);
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef a[2] = { x, y };
	return call_intrinsic(g, name, &t, 1, a, 2);
}

/* A C math library function of nargs arguments (expf or exp by the
 * argument type); on the GPU libdevice's (__nv_expf), linked in later. */
static LLVMValueRef libm_call(struct gen *g, const char *name, LLVMValueRef *args, int nargs)
{
	LLVMTypeRef t = LLVMTypeOf(args[0]), params[2] = { t, t };
	LLVMTypeRef ft = LLVMFunctionType(t, params, (unsigned)nargs, 0);
	char fname[48];
	LLVMValueRef fn;
	snprintf(fname, sizeof fname, "%s%s%s", g->gpu ? "__nv_" : "", name,
	         t == g->f32 ? "f" : "");
	fn = LLVMGetNamedFunction(g->mod, fname);
	if (!fn) {
		fn = LLVMAddFunction(g->mod, fname, ft);
		LLVMSetFunctionCallConv(fn, LLVMCCallConv);
	}
	return LLVMBuildCall2(g->b, ft, fn, args, (unsigned)nargs, "");
}

static LLVMValueRef libm(struct gen *g, const char *name, LLVMValueRef x)
{
	return libm_call(g, name, &x, 1);
}

static LLVMValueRef libm2(struct gen *g, const char *name, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef a[2] = { x, y };
	return libm_call(g, name, a, 2);
}

/* ------------------------------------------------------------------------ */
/* Half precision                                                           */
/* ------------------------------------------------------------------------ */

/* f32 -> bf16 bits, round to nearest even, NaN kept quiet. */
static LLVMValueRef f32_to_bf16_bits(struct gen *g, LLVMValueRef v)
{
	LLVMBuilderRef b = g->b;
	LLVMValueRef u = LLVMBuildBitCast(b, v, g->i32, "");
	LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, LLVMConstInt(g->i32, 16, 0), ""),
	                                LLVMConstInt(g->i32, 1, 0), "");
	LLVMValueRef r =
	        LLVMBuildAdd(b, u, LLVMBuildAdd(b, LLVMConstInt(g->i32, 0x7fff, 0), lsb, ""), "");
	LLVMValueRef hi = LLVMBuildLShr(b, r, LLVMConstInt(g->i32, 16, 0), "");
	LLVMValueRef nanv = LLVMBuildOr(b, LLVMBuildLShr(b, u, LLVMConstInt(g->i32, 16, 0), ""),
	                                LLVMConstInt(g->i32, 0x40, 0), "");
	LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
	return LLVMBuildTrunc(b, LLVMBuildSelect(b, isnan, nanv, hi, ""), g->i16, "");
}

static LLVMValueRef bf16_bits_to_f32(struct gen *g, LLVMValueRef h)
{
	LLVMValueRef u = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, h, g->i32, ""),
	                              LLVMConstInt(g->i32, 16, 0), "");
	return LLVMBuildBitCast(g->b, u, g->f32, "");
}

/* Rounds an f32 to the precision of dtype t (f16 / bf16), back in f32. */
static LLVMValueRef round_to(struct gen *g, LLVMValueRef v, enum ir_dtype t)
{
	if (t == IR_F16)
		return LLVMBuildFPExt(g->b, LLVMBuildFPTrunc(g->b, v, g->f16, ""), g->f32, "");
	if (t == IR_BF16)
		return bf16_bits_to_f32(g, f32_to_bf16_bits(g, v));
	return v;
}

/* ------------------------------------------------------------------------ */
/* Minifloats (float8, float4)                                              */
/* ------------------------------------------------------------------------ */

static LLVMValueRef sel(struct gen *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b);

static LLVMValueRef i32c(struct gen *g, int64_t v)
{
	return LLVMConstInt(g->i32, (unsigned long long)v, 1);
}

static LLVMValueRef f32_bits(struct gen *g, LLVMValueRef u)
{
	return LLVMBuildBitCast(g->b, u, g->f32, "");
}

/*
 * w (f32 or f64) rounded to the nearest value of minifloat f, ties to even
 * (f8e8m0: up to a power of two), saturated to +-max: the compute form of
 * the IR's cast to f (ir_minifloat_encode is its C twin). The rounding is
 * one rint of w scaled by a power of two, exact in w's own type, so an f64
 * w is rounded once.
 */
static LLVMValueRef round_minifloat(struct gen *g, LLVMValueRef w, const struct ir_minifloat *f)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef ft = LLVMTypeOf(w);
	bool d = ft == g->f64;
	LLVMTypeRef it = d ? g->i64 : g->i32;
	int fm = d ? 52 : 23, fb = d ? 1023 : 127;
	LLVMValueRef u = LLVMBuildBitCast(b, w, it, "");
	LLVMValueRef au =
	        LLVMBuildAnd(b, u, LLVMConstInt(it, d ? ~(1ull << 63) : 0x7fffffffu, 0), "");
	LLVMValueRef a = LLVMBuildBitCast(b, au, ft, ""), r, e, maxv = LLVMConstReal(ft, f->max);
	LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, w, w, "");
	e = LLVMBuildSub(b, LLVMBuildLShr(b, au, LLVMConstInt(it, (unsigned)fm, 0), ""),
	                 LLVMConstInt(it, (unsigned)fb, 0), "");
	if (f->kind == IR_MF_E8M0) {
		LLVMValueRef pow2 = LLVMBuildICmp(
		        b, LLVMIntEQ,
		        LLVMBuildAnd(b, au, LLVMConstInt(it, (1ull << fm) - 1, 0), ""),
		        LLVMConstInt(it, 0, 0), "");
		LLVMValueRef up = LLVMBuildShl(
		        b, LLVMBuildAdd(b, e, LLVMConstInt(it, (unsigned)fb + 1, 0), ""),
		        LLVMConstInt(it, (unsigned)fm, 0), "");
		LLVMValueRef tiny = LLVMConstReal(ft, 0x1p-127);
		r = sel(g, pow2, a, LLVMBuildBitCast(b, up, ft, ""));
		r = sel(g, LLVMBuildFCmp(b, LLVMRealOLE, a, tiny, ""), tiny, r);
		r = sel(g, LLVMBuildFCmp(b, LLVMRealOGT, r, maxv, ""), maxv, r);
		isnan = LLVMBuildOr(b, isnan,
		                    LLVMBuildFCmp(b, LLVMRealOLT, w, LLVMConstNull(ft), ""), "");
	} else {
		LLVMValueRef emin = LLVMConstInt(it, (unsigned long long)(1 - f->bias), 1);
		LLVMValueRef ecap = LLVMConstInt(it, 64, 0); /* far above max: saturates */
		LLVMValueRef ec = sel(g, LLVMBuildICmp(b, LLVMIntSGT, e, ecap, ""), ecap, e);
		LLVMValueRef k = LLVMBuildSub(
		        b, sel(g, LLVMBuildICmp(b, LLVMIntSGT, ec, emin, ""), ec, emin),
		        LLVMConstInt(it, (unsigned)f->mbits, 0), "");
		LLVMValueRef q = LLVMBuildBitCast(
		        b,
		        LLVMBuildShl(b, LLVMBuildAdd(b, k, LLVMConstInt(it, (unsigned)fb, 0), ""),
		                     LLVMConstInt(it, (unsigned)fm, 0), ""),
		        ft, "");
		LLVMValueRef iq = LLVMBuildBitCast(
		        b,
		        LLVMBuildShl(b, LLVMBuildSub(b, LLVMConstInt(it, (unsigned)fb, 0), k, ""),
		                     LLVMConstInt(it, (unsigned)fm, 0), ""),
		        ft, "");
		r = LLVMBuildFMul(b, fintr(g, "llvm.rint", LLVMBuildFMul(b, a, iq, "")), q, "");
		r = sel(g, LLVMBuildFCmp(b, LLVMRealOGT, r, maxv, ""), maxv, r); /* inf too */
		{
			LLVMTypeRef t = ft;
			LLVMValueRef cs[2] = { r, w };
			r = call_intrinsic(g, "llvm.copysign", &t, 1, cs, 2);
		}
	}
	if (d)
		r = LLVMBuildFPTrunc(b, r, g->f32, ""); /* exact: r is a minifloat value */
	return sel(g, isnan, LLVMConstReal(g->f32, f->kind == IR_MF_NONE ? -0.0 : NAN), r);
}

/* The f32 value of minifloat code c (i8). */
static LLVMValueRef decode_minifloat(struct gen *g, LLVMValueRef c, const struct ir_minifloat *f)
{
	LLVMBuilderRef b = g->b;
	LLVMValueRef u = LLVMBuildZExt(b, c, g->i32, ""), ef, mf, sig, ex, mag, isnan;
	int m = f->mbits, emask = (1 << f->ebits) - 1;
	if (f->kind == IR_MF_E8M0) {
		LLVMValueRef v = sel(g, LLVMBuildICmp(b, LLVMIntEQ, u, i32c(g, 0), ""),
		                     LLVMConstReal(g->f32, 0x1p-127),
		                     f32_bits(g, LLVMBuildShl(b, u, i32c(g, 23), "")));
		return sel(g, LLVMBuildICmp(b, LLVMIntEQ, u, i32c(g, 0xff), ""),
		           LLVMConstReal(g->f32, NAN), v);
	}
	ef = LLVMBuildAnd(b, LLVMBuildLShr(b, u, i32c(g, m), ""), i32c(g, emask), "");
	mf = LLVMBuildAnd(b, u, i32c(g, (1 << m) - 1), "");
	{
		LLVMValueRef normal = LLVMBuildICmp(b, LLVMIntNE, ef, i32c(g, 0), "");
		sig = sel(g, normal, LLVMBuildOr(b, mf, i32c(g, 1 << m), ""), mf);
		ex = sel(g, normal, ef, i32c(g, 1));
	}
	ex = LLVMBuildAdd(b, ex, i32c(g, 127 - f->bias - m), "");
	mag = LLVMBuildFMul(b, LLVMBuildUIToFP(b, sig, g->f32, ""),
	                    f32_bits(g, LLVMBuildShl(b, ex, i32c(g, 23), "")), "");
	switch (f->kind) {
	case IR_MF_FN:
		isnan = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, u, i32c(g, 0x7f), ""),
		                      i32c(g, 0x7f), "");
		break;
	case IR_MF_FNUZ: isnan = LLVMBuildICmp(b, LLVMIntEQ, u, i32c(g, 0x80), ""); break;
	case IR_MF_IEEE: {
		LLVMValueRef top = LLVMBuildICmp(b, LLVMIntEQ, ef, i32c(g, emask), "");
		LLVMValueRef zm = LLVMBuildICmp(b, LLVMIntEQ, mf, i32c(g, 0), "");
		mag = sel(g, LLVMBuildAnd(b, top, zm, ""), LLVMConstReal(g->f32, INFINITY), mag);
		isnan = LLVMBuildAnd(b, top, LLVMBuildNot(b, zm, ""), "");
		break;
	}
	default: isnan = LLVMConstInt(g->i1, 0, 0); break;
	}
	mag = sel(g, isnan, LLVMConstReal(g->f32, NAN), mag);
	return sel(g,
	           LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, u, i32c(g, 1 << (f->ebits + m)), ""),
	                         i32c(g, 0), ""),
	           LLVMBuildFNeg(b, mag, ""), mag);
}

/* The code (i8) of v, an f32 that is a value of minifloat f (or NaN). */
static LLVMValueRef encode_minifloat(struct gen *g, LLVMValueRef v, const struct ir_minifloat *f)
{
	LLVMBuilderRef b = g->b;
	LLVMValueRef u = LLVMBuildBitCast(b, v, g->i32, "");
	LLVMValueRef au = LLVMBuildAnd(b, u, i32c(g, 0x7fffffff), ""), a = f32_bits(g, au);
	LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, u, i32c(g, 0), "");
	LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
	LLVMValueRef fe, sub, code, nan;
	int m = f->mbits, emin = 1 - f->bias;
	if (f->kind == IR_MF_E8M0) {
		code = LLVMBuildLShr(b, au, i32c(g, 23), ""); /* 2^-127 is f32's 0x00400000 */
		return LLVMBuildTrunc(b, sel(g, isnan, i32c(g, 0xff), code), g->i8, "");
	}
	fe = LLVMBuildSub(b, LLVMBuildLShr(b, au, i32c(g, 23), ""), i32c(g, 127), "");
	sub = LLVMBuildICmp(b, LLVMIntSLT, fe, i32c(g, emin), "");
	code = sel(g, sub,
	           LLVMBuildFPToUI(
	                   b, LLVMBuildFMul(b, a, LLVMConstReal(g->f32, ldexp(1, m - emin)), ""),
	                   g->i32, ""),
	           LLVMBuildOr(b,
	                       LLVMBuildShl(b, LLVMBuildAdd(b, fe, i32c(g, f->bias), ""),
	                                    i32c(g, m), ""),
	                       LLVMBuildAnd(b, LLVMBuildLShr(b, au, i32c(g, 23 - m), ""),
	                                    i32c(g, (1 << m) - 1), ""),
	                       ""));
	if (f->kind == IR_MF_IEEE)
		code = sel(g, LLVMBuildFCmp(b, LLVMRealOEQ, a, LLVMConstReal(g->f32, INFINITY), ""),
		           i32c(g, ((1 << f->ebits) - 1) << m), code);
	if (f->kind == IR_MF_FNUZ) /* no negative zero */
		neg = LLVMBuildAnd(b, neg, LLVMBuildICmp(b, LLVMIntNE, au, i32c(g, 0), ""), "");
	code = sel(g, neg, LLVMBuildOr(b, code, i32c(g, 1 << (f->ebits + m)), ""), code);
	switch (f->kind) {
	case IR_MF_FN: nan = sel(g, neg, i32c(g, 0xff), i32c(g, 0x7f)); break;
	case IR_MF_FNUZ: nan = i32c(g, 0x80); break;
	case IR_MF_IEEE: nan = sel(g, neg, i32c(g, 0xfe), i32c(g, 0x7e)); break;
	default: nan = i32c(g, 0x8); break;
	}
	return LLVMBuildTrunc(b, sel(g, isnan, nan, code), g->i8, "");
}

/* v (i32) wrapped to sub-byte integer type t, as its i8 compute form. */
static LLVMValueRef wrap_narrow(struct gen *g, LLVMValueRef v, enum ir_dtype t)
{
	int bits = ir_dtypes[t].bits;
	LLVMValueRef x = LLVMBuildTrunc(g->b, v, g->i8, "");
	LLVMValueRef sh = LLVMConstInt(g->i8, (unsigned)(8 - bits), 0);
	if (issigned(t))
		return LLVMBuildAShr(g->b, LLVMBuildShl(g->b, x, sh, ""), sh, "");
	return LLVMBuildAnd(g->b, x, LLVMConstInt(g->i8, (1u << bits) - 1, 0), "");
}

/* ------------------------------------------------------------------------ */
/* Conversions                                                              */
/* ------------------------------------------------------------------------ */

/* Converts v (computed as dtype from) to the compute form of dtype to. */
static LLVMValueRef convert(struct gen *g, LLVMValueRef v, enum ir_dtype from, enum ir_dtype to)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef tt, ft;
	/* the storage types: through the wide type their compute form is in */
	if (minif(from))
		from = IR_F32;
	else if (narrow_int(from))
		from = issigned(from) ? IR_I8 : IR_U8;
	if (minif(to)) /* integers through f64, exactly */
		return round_minifloat(g, convert(g, v, from, from == IR_F32 ? IR_F32 : IR_F64),
		                       minif(to));
	if (narrow_int(to))
		return wrap_narrow(g, convert(g, v, from, IR_I32), to);
	tt = comp_type(g, to), ft = comp_type(g, from);
	if (to == IR_BOOL) {
		if (from == IR_BOOL)
			return v;
		if (isf(from))
			return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstNull(ft), "");
		return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(ft), "");
	}
	if (from == IR_BOOL)
		return isf(to) ? LLVMBuildUIToFP(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
	if (isf(from) && isf(to)) {
		LLVMValueRef r = v;
		if (ft != tt)
			r = LLVMGetTypeKind(tt) == LLVMDoubleTypeKind
			            ? LLVMBuildFPExt(b, v, tt, "")
			            : LLVMBuildFPTrunc(b, v, tt, "");
		return round_to(g, r, to);
	}
	if (isf(from)) { /* float -> integer: saturating, NaN -> 0 */
		LLVMTypeRef ty[2] = { tt, ft };
		return call_intrinsic(g, issigned(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", ty,
		                      2, &v, 1);
	}
	if (isf(to)) {
		LLVMValueRef r = issigned(from) ? LLVMBuildSIToFP(b, v, tt, "")
		                                : LLVMBuildUIToFP(b, v, tt, "");
		return round_to(g, r, to);
	}
	/* integer -> integer */
	{
		unsigned fw = LLVMGetIntTypeWidth(ft), tw = LLVMGetIntTypeWidth(tt);
		if (tw < fw)
			return LLVMBuildTrunc(b, v, tt, "");
		if (tw > fw)
			return issigned(from) ? LLVMBuildSExt(b, v, tt, "")
			                      : LLVMBuildZExt(b, v, tt, "");
		return v;
	}
}

static LLVMValueRef load_elem(struct gen *g, enum ir_dtype t, LLVMValueRef ptr)
{
	LLVMValueRef v = LLVMBuildLoad2(g->b, store_type(g, t), ptr, "");
	switch (t) {
	case IR_F16: return LLVMBuildFPExt(g->b, v, g->f32, "");
	case IR_BF16: return bf16_bits_to_f32(g, v);
	case IR_BOOL: return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), "");
	default: return minif(t) ? decode_minifloat(g, v, minif(t)) : v;
	}
}

static void store_elem(struct gen *g, enum ir_dtype t, LLVMValueRef v, LLVMValueRef ptr)
{
	switch (t) {
	case IR_F16: v = LLVMBuildFPTrunc(g->b, v, g->f16, ""); break;
	case IR_BF16: v = f32_to_bf16_bits(g, v); break;
	case IR_BOOL: v = LLVMBuildZExt(g->b, v, g->i8, ""); break;
	default:
		if (minif(t))
			v = encode_minifloat(g, v, minif(t));
		break;
	}
	LLVMBuildStore(g->b, v, ptr);
}

/* ------------------------------------------------------------------------ */
/* Ops                                                                      */
/* ------------------------------------------------------------------------ */

static LLVMValueRef sel(struct gen *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(g->b, c, a, b, "");
}

static LLVMValueRef fcmp(struct gen *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildFCmp(g->b, p, a, b, "");
}

/* x >= 0 ? x : f(x), the shape of ELU-like activations. */
static LLVMValueRef neg_branch(struct gen *g, LLVMValueRef x, LLVMValueRef fneg)
{
	LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(x));
	return sel(g, fcmp(g, LLVMRealOLT, x, zero), fneg, x);
}

/* ------------------------------------------------------------------------ */
/* Vectorizable math                                                        */
/* ------------------------------------------------------------------------ */

/*
 * exp, tanh and erf for f32 as straight-line IR (no calls), so the loop
 * vectorizer turns them into AVX-512 / AVX2 code: a libm call per element
 * cost ~20 ns and kept GELU's loop scalar. The approximations are the
 * classic ones (Cephes expf and tanhf, Eigen's rational erf), within a few
 * ulp over the whole range; NaN propagates. f64 keeps the C library.
 */
static LLVMValueRef fc(struct gen *g, double v) { return LLVMConstReal(g->f32, v); }

static LLVMValueRef fmadd(struct gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMTypeRef t = LLVMTypeOf(a);
	LLVMValueRef args[3] = { a, b, c };
	return call_intrinsic(g, "llvm.fma", &t, 1, args, 3);
}

/* p(x) = c[0] + c[1] x + ... by Horner's rule with fused multiply-adds. */
static LLVMValueRef horner(struct gen *g, LLVMValueRef x, const double *c, int n)
{
	LLVMValueRef r = fc(g, c[n - 1]);
	for (int i = n - 2; i >= 0; i--)
		r = fmadd(g, r, x, fc(g, c[i]));
	return r;
}

static LLVMValueRef vexp_f32(struct gen *g, LLVMValueRef x)
{
	static const double poly[] = { 5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
		                       8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4 };
	LLVMBuilderRef b = g->b;
	/* clamp: beyond these exp is inf or 0 in f32 (the clamp keeps the
	 * exponent arithmetic in range); NaN is restored at the end */
	LLVMValueRef c = fintr2(g, "llvm.minnum", fintr2(g, "llvm.maxnum", x, fc(g, -87.3365f)),
	                        fc(g, 88.3762626647949f));
	LLVMValueRef n = fintr(g, "llvm.rint", LLVMBuildFMul(b, c, fc(g, 1.44269504088896341), ""));
	/* r = c - n ln2, in two parts for accuracy */
	LLVMValueRef r = fmadd(g, n, fc(g, -0.693359375), c);
	LLVMValueRef r2, p, scale, e;
	r = fmadd(g, n, fc(g, 2.12194440e-4), r);
	r2 = LLVMBuildFMul(b, r, r, "");
	p = fmadd(g, horner(g, r, poly, 6), r2, LLVMBuildFAdd(b, r, fc(g, 1), ""));
	/* 2^n from the exponent bits */
	scale = LLVMBuildFPToSI(b, n, g->i32, "");
	scale = LLVMBuildShl(b, LLVMBuildAdd(b, scale, LLVMConstInt(g->i32, 127, 0), ""),
	                     LLVMConstInt(g->i32, 23, 0), "");
	e = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, scale, g->f32, ""), "");
	e = sel(g, fcmp(g, LLVMRealOGT, x, fc(g, 88.72283935546875)), fc(g, INFINITY), e);
	e = sel(g, fcmp(g, LLVMRealOLT, x, fc(g, -103.972076416015625)), fc(g, 0), e);
	return sel(g, fcmp(g, LLVMRealUNO, x, x), x, e);
}

static LLVMValueRef vtanh_f32(struct gen *g, LLVMValueRef x)
{
	static const double poly[] = { -3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2,
		                       2.06390887954e-2, -5.70498872745e-3 };
	LLVMBuilderRef b = g->b;
	LLVMValueRef ax = fintr(g, "llvm.fabs", x), z = LLVMBuildFMul(b, x, x, "");
	/* small |x|: x + x^3 P(x^2) */
	LLVMValueRef small = fmadd(g, LLVMBuildFMul(b, horner(g, z, poly, 5), z, ""), x, x);
	/* large |x|: 1 - 2 / (exp(2|x|) + 1), with x's sign */
	LLVMValueRef e = vexp_f32(g, LLVMBuildFAdd(b, ax, ax, ""));
	LLVMValueRef large = LLVMBuildFSub(
	        b, fc(g, 1), LLVMBuildFDiv(b, fc(g, 2), LLVMBuildFAdd(b, e, fc(g, 1), ""), ""), "");
	LLVMTypeRef t = g->f32;
	LLVMValueRef args[2] = { large, x };
	large = call_intrinsic(g, "llvm.copysign", &t, 1, args, 2);
	return sel(g, fcmp(g, LLVMRealOLT, ax, fc(g, 0.625)), small, large);
}

static LLVMValueRef verf_f32(struct gen *g, LLVMValueRef x)
{
	static const double num[] = { -1.60960333262415e-02, -2.95459980854025e-03,
		                      -7.34990630326855e-04, -5.69250639462346e-05,
		                      -2.10102402082508e-06, 2.77068142495902e-08,
		                      -2.72614225801306e-10 };
	static const double den[] = { -1.42647390514189e-02, -7.37332916720468e-03,
		                      -1.68282697438203e-03, -2.13374055278905e-04,
		                      -1.45660718464996e-05 };
	LLVMBuilderRef b = g->b;
	LLVMValueRef c = fintr2(g, "llvm.minnum", fintr2(g, "llvm.maxnum", x, fc(g, -4)), fc(g, 4));
	LLVMValueRef z = LLVMBuildFMul(b, c, c, "");
	LLVMValueRef r = LLVMBuildFDiv(b, LLVMBuildFMul(b, c, horner(g, z, num, 7), ""),
	                               horner(g, z, den, 5), "");
	return sel(g, fcmp(g, LLVMRealUNO, x, x), x, r);
}

static LLVMValueRef vexp(struct gen *g, LLVMValueRef x)
{
	return LLVMTypeOf(x) == g->f32 ? vexp_f32(g, x) : fintr(g, "llvm.exp", x);
}

/* log(1 + exp(x)) computed without overflow: max(x,0) + log1p(exp(-|x|)). */
static LLVMValueRef softplus(struct gen *g, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef ax = fintr(g, "llvm.fabs", x);
	LLVMValueRef e = libm(g, "log1p", vexp(g, LLVMBuildFNeg(g->b, ax, "")));
	return LLVMBuildFAdd(g->b, fintr2(g, "llvm.maxnum", x, LLVMConstNull(t)), e, "");
}

static LLVMValueRef emit_float_unary(struct gen *g, const struct ir_node *n, LLVMValueRef x)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstNull(t), one = fconst(g, t, 1);
	switch (n->op) {
	case IR_OP_NEG: return LLVMBuildFNeg(b, x, "");
	case IR_OP_ABS: return fintr(g, "llvm.fabs", x);
	case IR_OP_SIGN:
		return sel(g, fcmp(g, LLVMRealOGT, x, zero), one,
		           sel(g, fcmp(g, LLVMRealOLT, x, zero), fconst(g, t, -1), x));
	case IR_OP_RELU: return sel(g, fcmp(g, LLVMRealOLT, x, zero), zero, x);
	case IR_OP_FLOOR: return fintr(g, "llvm.floor", x);
	case IR_OP_CEIL: return fintr(g, "llvm.ceil", x);
	case IR_OP_ROUND: return fintr(g, "llvm.roundeven", x);
	case IR_OP_SQRT: return fintr(g, "llvm.sqrt", x);
	case IR_OP_RECIPROCAL: return LLVMBuildFDiv(b, one, x, "");
	case IR_OP_EXP: return vexp(g, x);
	case IR_OP_LOG: return fintr(g, "llvm.log", x);
	case IR_OP_ERF: return t == g->f32 ? verf_f32(g, x) : libm(g, "erf", x);
	case IR_OP_TANH: return t == g->f32 ? vtanh_f32(g, x) : libm(g, "tanh", x);
	case IR_OP_SIGMOID:
		return LLVMBuildFDiv(
		        b, one, LLVMBuildFAdd(b, one, vexp(g, LLVMBuildFNeg(b, x, "")), ""), "");
	case IR_OP_SIN: return fintr(g, "llvm.sin", x);
	case IR_OP_COS: return fintr(g, "llvm.cos", x);
	case IR_OP_TAN: return libm(g, "tan", x);
	case IR_OP_ASIN: return libm(g, "asin", x);
	case IR_OP_ACOS: return libm(g, "acos", x);
	case IR_OP_ATAN: return libm(g, "atan", x);
	case IR_OP_SINH: return libm(g, "sinh", x);
	case IR_OP_COSH: return libm(g, "cosh", x);
	case IR_OP_ASINH: return libm(g, "asinh", x);
	case IR_OP_ACOSH: return libm(g, "acosh", x);
	case IR_OP_ATANH: return libm(g, "atanh", x);
	case IR_OP_SOFTPLUS: return softplus(g, x);
	case IR_OP_SOFTSIGN:
		return LLVMBuildFDiv(b, x, LLVMBuildFAdd(b, one, fintr(g, "llvm.fabs", x), ""), "");
	case IR_OP_MISH:
		return LLVMBuildFMul(b, x,
		                     t == g->f32 ? vtanh_f32(g, softplus(g, x))
		                                 : libm(g, "tanh", softplus(g, x)),
		                     "");
	case IR_OP_HARD_SWISH: {
		LLVMValueRef h = LLVMBuildFAdd(b, LLVMBuildFMul(b, x, fconst(g, t, 1.0 / 6), ""),
		                               fconst(g, t, 0.5), "");
		h = fintr2(g, "llvm.maxnum", fintr2(g, "llvm.minnum", h, one), zero);
		return LLVMBuildFMul(b, x, h, "");
	}
	case IR_OP_LEAKY_RELU:
		return neg_branch(g, x,
		                  LLVMBuildFMul(b, x, fconst(g, t, ir_attr_f(n, "alpha")), ""));
	case IR_OP_ELU:
		return neg_branch(g, x,
		                  LLVMBuildFMul(b, fconst(g, t, ir_attr_f(n, "alpha")),
		                                libm(g, "expm1", x), ""));
	case IR_OP_CELU: {
		LLVMValueRef a = fconst(g, t, ir_attr_f(n, "alpha"));
		LLVMValueRef e =
		        LLVMBuildFMul(b, a, libm(g, "expm1", LLVMBuildFDiv(b, x, a, "")), "");
		return LLVMBuildFAdd(b, fintr2(g, "llvm.maxnum", x, zero),
		                     fintr2(g, "llvm.minnum", e, zero), "");
	}
	case IR_OP_SELU: {
		LLVMValueRef a = fconst(g, t, ir_attr_f(n, "alpha")),
		             gm = fconst(g, t, ir_attr_f(n, "gamma"));
		LLVMValueRef neg = LLVMBuildFMul(b, a, libm(g, "expm1", x), "");
		return LLVMBuildFMul(b, gm, sel(g, fcmp(g, LLVMRealOGT, x, zero), x, neg), "");
	}
	case IR_OP_THRESHOLDED_RELU:
		return sel(g, fcmp(g, LLVMRealOGT, x, fconst(g, t, ir_attr_f(n, "alpha"))), x,
		           zero);
	case IR_OP_HARD_SIGMOID: {
		LLVMValueRef h = LLVMBuildFAdd(
		        b, LLVMBuildFMul(b, x, fconst(g, t, ir_attr_f(n, "alpha")), ""),
		        fconst(g, t, ir_attr_f(n, "beta")), "");
		return fintr2(g, "llvm.maxnum", fintr2(g, "llvm.minnum", h, one), zero);
	}
	case IR_OP_SHRINK: {
		LLVMValueRef bi = fconst(g, t, ir_attr_f(n, "bias")),
		             l = fconst(g, t, ir_attr_f(n, "lambd"));
		return sel(g, fcmp(g, LLVMRealOLT, x, LLVMBuildFNeg(b, l, "")),
		           LLVMBuildFAdd(b, x, bi, ""),
		           sel(g, fcmp(g, LLVMRealOGT, x, l), LLVMBuildFSub(b, x, bi, ""), zero));
	}
	case IR_OP_CLIP: {
		LLVMValueRef lo = fconst(g, t, ir_attr_f(n, "min")),
		             hi = fconst(g, t, ir_attr_f(n, "max"));
		LLVMValueRef r = sel(g, fcmp(g, LLVMRealOLT, x, lo), lo, x);
		return sel(g, fcmp(g, LLVMRealOGT, r, hi), hi, r);
	}
	case IR_OP_COPY: return x;
	default: ir_panic(__FILE__, __LINE__, "no float code for %s", ir_ops[n->op].name);
	}
}

static LLVMValueRef emit_int_unary(struct gen *g, const struct ir_node *n, LLVMValueRef x,
                                   enum ir_dtype t)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstNull(ty);
	bool s = issigned(t);
	switch (n->op) {
	case IR_OP_NEG: return LLVMBuildNeg(b, x, "");
	case IR_OP_ABS:
		return s ? sel(g, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), LLVMBuildNeg(b, x, ""),
		               x)
		         : x;
	case IR_OP_SIGN: {
		LLVMValueRef gt = LLVMBuildZExt(
		        b, LLVMBuildICmp(b, s ? LLVMIntSGT : LLVMIntUGT, x, zero, ""), ty, "");
		LLVMValueRef lt =
		        s ? LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), ty, "")
		          : zero;
		return LLVMBuildSub(b, gt, lt, "");
	}
	case IR_OP_RELU: return s ? sel(g, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), zero, x) : x;
	case IR_OP_BIT_NOT: return LLVMBuildNot(b, x, "");
	case IR_OP_CLIP:
	case IR_OP_SHRINK: {
		/* compute through f64, exactly enough for the attribute values */
		LLVMValueRef f =
		        s ? LLVMBuildSIToFP(b, x, g->f64, "") : LLVMBuildUIToFP(b, x, g->f64, "");
		LLVMTypeRef tys[2] = { ty, g->f64 };
		LLVMValueRef r;
		if (n->op == IR_OP_CLIP) {
			LLVMValueRef lo = fconst(g, g->f64, ir_attr_f(n, "min")),
			             hi = fconst(g, g->f64, ir_attr_f(n, "max"));
			r = sel(g, fcmp(g, LLVMRealOLT, f, lo), lo, f);
			r = sel(g, fcmp(g, LLVMRealOGT, r, hi), hi, r);
		} else {
			LLVMValueRef bi = fconst(g, g->f64, ir_attr_f(n, "bias")),
			             l = fconst(g, g->f64, ir_attr_f(n, "lambd"));
			r = sel(g, fcmp(g, LLVMRealOLT, f, LLVMBuildFNeg(b, l, "")),
			        LLVMBuildFAdd(b, f, bi, ""),
			        sel(g, fcmp(g, LLVMRealOGT, f, l), LLVMBuildFSub(b, f, bi, ""),
			            LLVMConstNull(g->f64)));
		}
		return call_intrinsic(g, s ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tys, 2, &r, 1);
	}
	case IR_OP_COPY: return x;
	default: ir_panic(__FILE__, __LINE__, "no integer code for %s", ir_ops[n->op].name);
	}
}

/* a / b and a % b without traps: b == 0 gives 0, INT_MIN / -1 wraps. */
static LLVMValueRef int_divmod(struct gen *g, bool div, bool s, LLVMValueRef a, LLVMValueRef bv)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef bz = LLVMBuildICmp(b, LLVMIntEQ, bv, zero, "");
	LLVMValueRef safe = sel(g, bz, one, bv), r;
	if (s) {
		LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, bv, LLVMConstAllOnes(ty), "");
		safe = sel(g, m1, one, safe);
		r = div ? LLVMBuildSDiv(b, a, safe, "") : LLVMBuildSRem(b, a, safe, "");
		r = sel(g, m1, div ? LLVMBuildNeg(b, a, "") : zero, r);
	} else {
		r = div ? LLVMBuildUDiv(b, a, safe, "") : LLVMBuildURem(b, a, safe, "");
	}
	return sel(g, bz, zero, r);
}

static LLVMValueRef emit_binary(struct gen *g, const struct ir_node *n, LLVMValueRef a,
                                LLVMValueRef bv, enum ir_dtype t, enum ir_dtype tb)
{
	LLVMBuilderRef b = g->b;
	bool f = isf(t), s = issigned(t);
	switch (n->op) {
	case IR_OP_ADD: return f ? LLVMBuildFAdd(b, a, bv, "") : LLVMBuildAdd(b, a, bv, "");
	case IR_OP_SUB: return f ? LLVMBuildFSub(b, a, bv, "") : LLVMBuildSub(b, a, bv, "");
	case IR_OP_MUL: return f ? LLVMBuildFMul(b, a, bv, "") : LLVMBuildMul(b, a, bv, "");
	case IR_OP_DIV: return f ? LLVMBuildFDiv(b, a, bv, "") : int_divmod(g, true, s, a, bv);
	case IR_OP_MIN:
		return f ? fintr2(g, "llvm.minimum", a, bv)
		         : sel(g, LLVMBuildICmp(b, s ? LLVMIntSLT : LLVMIntULT, a, bv, ""), a, bv);
	case IR_OP_MAX:
		return f ? fintr2(g, "llvm.maximum", a, bv)
		         : sel(g, LLVMBuildICmp(b, s ? LLVMIntSGT : LLVMIntUGT, a, bv, ""), a, bv);
	case IR_OP_MOD:
		if (f)
			return LLVMBuildFRem(b, a, bv, "");
		{
			LLVMValueRef r = int_divmod(g, false, s, a, bv);
			if (s && !ir_attr_i(n, "fmod")) {
				/* Python semantics: the result takes the divisor's sign */
				LLVMTypeRef ty = LLVMTypeOf(a);
				LLVMValueRef zero = LLVMConstNull(ty);
				LLVMValueRef fix = LLVMBuildAnd(
				        b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
				        LLVMBuildXor(b, LLVMBuildICmp(b, LLVMIntSLT, r, zero, ""),
				                     LLVMBuildICmp(b, LLVMIntSLT, bv, zero, ""),
				                     ""),
				        "");
				r = sel(g, fix, LLVMBuildAdd(b, r, bv, ""), r);
			}
			return r;
		}
	case IR_OP_PRELU:
		if (f)
			return sel(g, fcmp(g, LLVMRealOLT, a, LLVMConstNull(LLVMTypeOf(a))),
			           LLVMBuildFMul(b, a, bv, ""), a);
		return sel(g, LLVMBuildICmp(b, LLVMIntSLT, a, LLVMConstNull(LLVMTypeOf(a)), ""),
		           LLVMBuildMul(b, a, bv, ""), a);
	case IR_OP_BIT_AND: return LLVMBuildAnd(b, a, bv, "");
	case IR_OP_BIT_OR: return LLVMBuildOr(b, a, bv, "");
	case IR_OP_BIT_XOR: return LLVMBuildXor(b, a, bv, "");
	case IR_OP_BIT_SHIFT: {
		/* LLVM's shifts by the width or more are poison; ONNX's give 0 */
		LLVMTypeRef ty = LLVMTypeOf(a);
		LLVMValueRef zero = LLVMConstNull(ty);
		LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, bv,
		                                 LLVMConstInt(ty, LLVMGetIntTypeWidth(ty), 0), "");
		LLVMValueRef amt = sel(g, big, zero, bv);
		LLVMValueRef r = ir_attr_i(n, "left") ? LLVMBuildShl(b, a, amt, "")
		                                      : LLVMBuildLShr(b, a, amt, "");
		return sel(g, big, zero, r);
	}
	case IR_OP_POW: {
		/* the exponent may have another type: compute in the base's float
		 * type (f64 for integer bases, exact for exact results) */
		LLVMTypeRef ct = f ? LLVMTypeOf(a) : g->f64;
		LLVMValueRef fa = f ? a : convert(g, a, t, IR_F64);
		LLVMValueRef fb = convert(g, bv, tb, ct == g->f64 ? IR_F64 : IR_F32);
		LLVMValueRef r = fintr2(g, "llvm.pow", fa, fb);
		return f ? r : convert(g, r, IR_F64, t);
	}
	default: ir_panic(__FILE__, __LINE__, "no binary code for %s", ir_ops[n->op].name);
	}
}

static LLVMValueRef emit_compare(struct gen *g, enum ir_op op, LLVMValueRef a, LLVMValueRef bv,
                                 enum ir_dtype t)
{
	static const LLVMRealPredicate fp[] = { LLVMRealOEQ, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT,
		                                LLVMRealOGE };
	static const LLVMIntPredicate sp[] = { LLVMIntEQ, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT,
		                               LLVMIntSGE };
	static const LLVMIntPredicate up[] = { LLVMIntEQ, LLVMIntULT, LLVMIntULE, LLVMIntUGT,
		                               LLVMIntUGE };
	int k = op == IR_OP_EQUAL        ? 0
	        : op == IR_OP_LESS       ? 1
	        : op == IR_OP_LESS_EQUAL ? 2
	        : op == IR_OP_GREATER    ? 3
	                                 : 4;
	if (isf(t))
		return fcmp(g, fp[k], a, bv);
	return LLVMBuildICmp(g->b, issigned(t) ? sp[k] : up[k], a, bv, "");
}

/* a^e for the exponents models use, exactly as pow would give them; NULL
 * for any other exponent. */
static LLVMValueRef small_pow(struct gen *g, LLVMValueRef a, double e)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef t = LLVMTypeOf(a);
	if (e == 1)
		return a;
	if (e == 2)
		return LLVMBuildFMul(b, a, a, "");
	if (e == 3)
		return LLVMBuildFMul(b, LLVMBuildFMul(b, a, a, ""), a, "");
	if (e == 4) {
		LLVMValueRef sq = LLVMBuildFMul(b, a, a, "");
		return LLVMBuildFMul(b, sq, sq, "");
	}
	if (e == 0.5)
		return fintr(g, "llvm.sqrt", a);
	if (e == -1)
		return LLVMBuildFDiv(b, LLVMConstReal(t, 1), a, "");
	return NULL;
}

/* SplitMix64's finalizer (ir_mix64). */
static LLVMValueRef mix64(struct gen *g, LLVMValueRef z)
{
	static const unsigned long long mul[2] = { 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull };
	static const int shift[3] = { 30, 27, 31 };
	for (int r = 0; r < 3; r++) {
		z = LLVMBuildXor(g->b, z, LLVMBuildLShr(g->b, z, i64c(g, shift[r]), ""), "");
		if (r < 2)
			z = LLVMBuildMul(g->b, z, LLVMConstInt(g->i64, mul[r], 0), "");
	}
	return z;
}

/*
 * Dropout (ir.h, docs/ir.md#dropout): x times the scale or 0, as the
 * reference evaluator. Fusion joins only same-shape nodes, so the kernel's
 * flat index is the element's index in the dropout's own result.
 */
static LLVMValueRef emit_dropout(struct gen *g, const struct cg_kx *x, LLVMValueRef a,
                                 LLVMValueRef seed)
{
	const struct ir_node *n = x->node;
	float ratio = ir_attr_f(n, "ratio");
	LLVMValueRef salt1 =
	        LLVMConstInt(g->i64, ((uint64_t)ir_attr_i(n, "salt") + 1) * IR_GOLDEN64, 0);
	LLVMValueRef key = mix64(g, LLVMBuildAdd(g->b, seed, salt1, ""));
	LLVMValueRef i1 = LLVMBuildAdd(g->b, g->flat, i64c(g, 1), "");
	LLVMValueRef bits = mix64(
	        g,
	        LLVMBuildAdd(g->b, key,
	                     LLVMBuildMul(g->b, i1, LLVMConstInt(g->i64, IR_GOLDEN64, 0), ""), ""));
	LLVMValueRef keep =
	        LLVMBuildICmp(g->b, LLVMIntUGE, LLVMBuildLShr(g->b, bits, i64c(g, 40), ""),
	                      i64c(g, ir_dropout_threshold(ratio)), "");
	LLVMTypeRef t = LLVMTypeOf(a);
	LLVMValueRef m = sel(g, keep, fconst(g, t, ir_dropout_scale(ratio)), fconst(g, t, 0));
	return LLVMBuildFMul(g->b, a, m, ""); /* not a select: inf * 0 is NaN, as in ONNX */
}

/* The value of expression x, given its operands' values. */
static LLVMValueRef emit_op(struct gen *g, const struct cg_kx *x)
{
	const struct ir_node *n = x->node;
	const struct cg_kx *xs = g->k->x;
	LLVMValueRef a = x->nin > 0 ? g->xv[x->in[0]] : NULL,
	             bv = x->nin > 1 ? g->xv[x->in[1]] : NULL;
	enum ir_dtype t0 = x->nin > 0 ? xs[x->in[0]].dtype : x->dtype;
	enum ir_dtype t1 = x->nin > 1 ? xs[x->in[1]].dtype : x->dtype;
	LLVMValueRef r;
	switch (n->op) {
	case IR_OP_CAST: return convert(g, a, t0, x->dtype);
	case IR_OP_NOT: return LLVMBuildNot(g->b, a, "");
	case IR_OP_AND: return LLVMBuildAnd(g->b, a, bv, "");
	case IR_OP_OR: return LLVMBuildOr(g->b, a, bv, "");
	case IR_OP_XOR: return LLVMBuildXor(g->b, a, bv, "");
	case IR_OP_WHERE:
	case IR_OP_PHI: return sel(g, a, bv, g->xv[x->in[2]]);
	case IR_OP_DROPOUT: return round_to(g, emit_dropout(g, x, a, bv), x->dtype);
	case IR_OP_ISNAN: return fcmp(g, LLVMRealUNO, a, a);
	case IR_OP_ISINF: {
		LLVMTypeRef t = LLVMTypeOf(a);
		LLVMValueRef inf = fconst(g, t, INFINITY), ninf = fconst(g, t, -INFINITY);
		LLVMValueRef pos = fcmp(g, LLVMRealOEQ, a, inf),
		             neg = fcmp(g, LLVMRealOEQ, a, ninf);
		LLVMValueRef no = LLVMConstInt(g->i1, 0, 0);
		return LLVMBuildOr(g->b, ir_attr_i(n, "detect_positive") ? pos : no,
		                   ir_attr_i(n, "detect_negative") ? neg : no, "");
	}
	case IR_OP_EQUAL:
	case IR_OP_LESS:
	case IR_OP_LESS_EQUAL:
	case IR_OP_GREATER:
	case IR_OP_GREATER_EQUAL:
		if (t0 == IR_BOOL)
			return LLVMBuildICmp(g->b, LLVMIntEQ, a, bv, "");
		return emit_compare(g, n->op, a, bv, t0);
	case IR_OP_POW:
		/* x^2, x^3 (tanh-GELU), sqrt: multiplies, not a pow() call */
		if (isf(x->dtype) && xs[x->in[1]].kind == KX_CONST &&
		    (r = small_pow(g, a, xs[x->in[1]].f)))
			return round_to(g, r, x->dtype);
		break;
	default: break;
	}
	if (x->nin == 2)
		r = emit_binary(g, n, a, bv, x->dtype, t1);
	else if (isf(x->dtype))
		r = emit_float_unary(g, n, a);
	else
		r = emit_int_unary(g, n, a, x->dtype);
	return isf(x->dtype) ? round_to(g, r, x->dtype) : r;
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */
/* ------------------------------------------------------------------------ */

static LLVMValueRef elem_ptr(struct gen *g, int arg, enum ir_dtype t, LLVMValueRef index)
{
	return LLVMBuildGEP2(g->b, store_type(g, t), g->base[arg], &index, 1, "");
}

/* Every expression of k at one element: loads from element at[e] of their
 * argument, the outputs stored at element out. */
static void gen_element(struct gen *g, const struct cg_kernel *k, LLVMValueRef out,
                        LLVMValueRef *at)
{
	g->flat = out;
	for (int e = 0; e < k->nx; e++) {
		const struct cg_kx *x = &k->x[e];
		switch (x->kind) {
		case KX_LOAD:
			g->xv[e] = load_elem(g, x->dtype, elem_ptr(g, x->arg, x->dtype, at[e]));
			break;
		case KX_CONST:
			if (x->dtype == IR_BOOL)
				g->xv[e] = LLVMConstInt(g->i1, x->i != 0, 0);
			else if (isf(x->dtype) || minif(x->dtype))
				g->xv[e] = fconst(g, comp_type(g, x->dtype), x->f);
			else
				g->xv[e] = LLVMConstInt(comp_type(g, x->dtype),
				                        (unsigned long long)x->i, 1);
			break;
		case KX_OP: g->xv[e] = emit_op(g, x); break;
		}
	}
	for (int j = 0; j < k->nout; j++) {
		const struct cg_kx *x = &k->x[k->out_x[j]];
		store_elem(g, x->dtype, g->xv[k->out_x[j]], elem_ptr(g, j, x->dtype, out));
	}
}

/* The multi-index of flat index v over dims[0..n) (row-major), into idx;
 * v is never negative. */
static void unflatten(struct gen *g, LLVMValueRef v, const int64_t *dims, int n, LLVMValueRef *idx)
{
	int64_t span = 1;
	for (int d = n - 1; d >= 0; d--) {
		LLVMValueRef q = span > 1 ? LLVMBuildUDiv(g->b, v, i64c(g, span), "") : v;
		idx[d] = d > 0 ? LLVMBuildURem(g->b, q, i64c(g, dims[d]), "") : q;
		span *= dims[d];
	}
}

/* Where x's view puts the element at idx[0..n): its offset plus the
 * strided coordinates (broadcast dimensions, stride 0, cost nothing). */
static LLVMValueRef view_offset(struct gen *g, const struct cg_kx *x, const LLVMValueRef *idx,
                                int n)
{
	LLVMValueRef off = i64c(g, x->view.offset);
	for (int d = 0; d < n; d++)
		if (x->view.strides[d])
			off = LLVMBuildAdd(
			        g->b, off,
			        LLVMBuildMul(g->b, idx[d], i64c(g, x->view.strides[d]), ""), "");
	return off;
}

static void gen_kernel(struct gen *g, const struct cg_kernel *k)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef params[3] = { g->ptr, g->i64, g->i64 };
	LLVMTypeRef ft = LLVMFunctionType(g->voidt, params, 3, 0);
	char name[160];
	LLVMValueRef fn, args, begin, end, o, o1, i, i1, row, inner = i64c(g, k->dims[k->rank - 1]);
	LLVMBasicBlockRef entry, ocond, obody, icond, ibody, oend, exit;
	int r = k->rank;

	snprintf(name, sizeof name, "%s_k%d", g->p->opt->name, k->id);
	fn = LLVMAddFunction(g->mod, name, ft);
	args = LLVMGetParam(fn, 0);
	begin = LLVMGetParam(fn, 1);
	end = LLVMGetParam(fn, 2);
	entry = LLVMAppendBasicBlockInContext(g->cx, fn, "entry");
	ocond = LLVMAppendBasicBlockInContext(g->cx, fn, "outer");
	obody = LLVMAppendBasicBlockInContext(g->cx, fn, "row");
	icond = LLVMAppendBasicBlockInContext(g->cx, fn, "inner");
	ibody = LLVMAppendBasicBlockInContext(g->cx, fn, "elem");
	oend = LLVMAppendBasicBlockInContext(g->cx, fn, "next_row");
	exit = LLVMAppendBasicBlockInContext(g->cx, fn, "exit");

	g->k = k;
	g->base = calloc((size_t)k->nargs, sizeof *g->base);
	g->xoff = calloc((size_t)k->nx, sizeof *g->xoff);
	g->xv = calloc((size_t)k->nx, sizeof *g->xv);
	IR_ASSERT(g->base && g->xoff && g->xv);

	LLVMPositionBuilderAtEnd(b, entry);
	for (int a = 0; a < k->nargs; a++) {
		LLVMValueRef idx = i64c(g, a);
		LLVMValueRef slot = LLVMBuildGEP2(b, g->ptr, args, &idx, 1, "");
		/*
		 * An input the memory plan put in place of an output is read
		 * through the output's pointer: then LLVM sees each element read
		 * and written at one address and vectorizes; with two pointers
		 * its runtime overlap check fails and it runs the scalar loop.
		 */
		int same = a >= k->nout ? cg_inplace_output(g->p, k, a) : -1;
		g->base[a] = same >= 0 ? g->base[same] : LLVMBuildLoad2(b, g->ptr, slot, "");
	}
	LLVMBuildBr(b, ocond);

	LLVMPositionBuilderAtEnd(b, ocond);
	o = LLVMBuildPhi(b, g->i64, "o");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, o, end, ""), obody, exit);

	/* per row: the outer multi-index, and each load's row offset */
	LLVMPositionBuilderAtEnd(b, obody);
	{
		LLVMValueRef idx[IR_MAX_RANK];
		unflatten(g, o, k->dims, r - 1, idx);
		for (int e = 0; e < k->nx; e++)
			if (k->x[e].kind == KX_LOAD)
				g->xoff[e] = view_offset(g, &k->x[e], idx, r - 1);
		row = LLVMBuildMul(b, o, inner, "");
	}
	LLVMBuildBr(b, icond);

	LLVMPositionBuilderAtEnd(b, icond);
	i = LLVMBuildPhi(b, g->i64, "i");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, inner, ""), ibody, oend);

	LLVMPositionBuilderAtEnd(b, ibody);
	{
		LLVMValueRef *at = calloc((size_t)k->nx, sizeof *at),
		             out = LLVMBuildAdd(b, row, i, "");
		IR_ASSERT(at);
		for (int e = 0; e < k->nx; e++) {
			const struct cg_kx *x = &k->x[e];
			int64_t st = x->view.strides[r - 1];
			if (x->kind != KX_LOAD)
				continue;
			/*
			 * A dense load uses the store's very address expression
			 * (row + i): LLVM then sees element i read and written at
			 * one place even in place, and vectorizes without a
			 * runtime overlap check, which failed for in-place kernels.
			 */
			at[e] = cg_dense_view(k, x) ? out
			        : st                ? LLVMBuildAdd(b, g->xoff[e],
			                                           LLVMBuildMul(b, i, i64c(g, st), ""), "")
			                            : g->xoff[e];
		}
		gen_element(g, k, out, at);
		free(at);
	}
	i1 = LLVMBuildAdd(b, i, i64c(g, 1), "");
	LLVMBuildBr(b, icond);
	{
		LLVMValueRef vals[2] = { i64c(g, 0), i1 };
		LLVMBasicBlockRef from[2] = { obody, ibody };
		LLVMAddIncoming(i, vals, from, 2);
	}

	LLVMPositionBuilderAtEnd(b, oend);
	o1 = LLVMBuildAdd(b, o, i64c(g, 1), "");
	LLVMBuildBr(b, ocond);
	{
		LLVMValueRef vals[2] = { begin, o1 };
		LLVMBasicBlockRef from[2] = { entry, oend };
		LLVMAddIncoming(o, vals, from, 2);
	}
	LLVMPositionBuilderAtEnd(b, exit);
	LLVMBuildRetVoid(b);
	free(g->base);
	free(g->xoff);
	free(g->xv);
}

/* ------------------------------------------------------------------------ */
/* The CUDA target: one thread per element                                  */
/* ------------------------------------------------------------------------ */

#define PTX_KERNEL_CC 71 /* LLVM's CallingConv::PTX_Kernel: a .entry */

/* A special register (llvm.nvvm.read.ptx.sreg.*) widened to i64. */
static LLVMValueRef sreg(struct gen *g, const char *name)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef fn;
	LLVMTypeRef ft;
	IR_ASSERT(id != 0);
	fn = LLVMGetIntrinsicDeclaration(g->mod, id, NULL, 0);
	ft = LLVMIntrinsicGetType(g->cx, id, NULL, 0);
	return LLVMBuildZExt(g->b, LLVMBuildCall2(g->b, ft, fn, NULL, 0, ""), g->i64, "");
}

/*
 * The same element computation as gen_kernel under a grid-stride loop:
 *
 *     .entry NAME_k<id>(ptr arg0, ..., ptr argN, i64 n)
 *
 * thread i handles elements i, i + gridDim*blockDim, ... below n; the
 * multi-index of an element comes from dividing its flat index by the
 * (constant) dimension sizes, and each load's offset from its view.
 */
static void gen_kernel_gpu(struct gen *g, const struct cg_kernel *k)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef *params = calloc((size_t)k->nargs + 1, sizeof *params), ft;
	LLVMValueRef fn, n, start, stride, i, i1, *at;
	LLVMBasicBlockRef entry, cond, body, exit;
	char name[160];
	int r = k->rank;

	IR_ASSERT(params);
	for (int a = 0; a < k->nargs; a++)
		params[a] = g->ptr;
	params[k->nargs] = g->i64;
	ft = LLVMFunctionType(g->voidt, params, (unsigned)k->nargs + 1, 0);
	free(params);
	snprintf(name, sizeof name, "%s_k%d", g->p->opt->name, k->id);
	fn = LLVMAddFunction(g->mod, name, ft);
	LLVMSetFunctionCallConv(fn, PTX_KERNEL_CC);
	entry = LLVMAppendBasicBlockInContext(g->cx, fn, "entry");
	cond = LLVMAppendBasicBlockInContext(g->cx, fn, "cond");
	body = LLVMAppendBasicBlockInContext(g->cx, fn, "elem");
	exit = LLVMAppendBasicBlockInContext(g->cx, fn, "exit");

	g->k = k;
	g->base = calloc((size_t)k->nargs, sizeof *g->base);
	g->xv = calloc((size_t)k->nx, sizeof *g->xv);
	at = calloc((size_t)k->nx, sizeof *at);
	IR_ASSERT(g->base && g->xv && at);
	for (int a = 0; a < k->nargs; a++)
		g->base[a] = LLVMGetParam(fn, (unsigned)a);
	n = LLVMGetParam(fn, (unsigned)k->nargs);

	LLVMPositionBuilderAtEnd(b, entry);
	start = LLVMBuildAdd(b,
	                     LLVMBuildMul(b, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"),
	                                  sreg(g, "llvm.nvvm.read.ptx.sreg.ntid.x"), ""),
	                     sreg(g, "llvm.nvvm.read.ptx.sreg.tid.x"), "");
	stride = LLVMBuildMul(b, sreg(g, "llvm.nvvm.read.ptx.sreg.nctaid.x"),
	                      sreg(g, "llvm.nvvm.read.ptx.sreg.ntid.x"), "");
	LLVMBuildBr(b, cond);

	LLVMPositionBuilderAtEnd(b, cond);
	i = LLVMBuildPhi(b, g->i64, "i");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, n, ""), body, exit);

	LLVMPositionBuilderAtEnd(b, body);
	{
		LLVMValueRef idx[IR_MAX_RANK];
		unflatten(g, i, k->dims, r, idx);
		for (int e = 0; e < k->nx; e++) {
			const struct cg_kx *x = &k->x[e];
			if (x->kind == KX_LOAD)
				at[e] = cg_dense_view(k, x) ? i : view_offset(g, x, idx, r);
		}
	}
	gen_element(g, k, i, at);
	i1 = LLVMBuildAdd(b, i, stride, "");
	LLVMBuildBr(b, cond);
	{
		LLVMValueRef vals[2] = { start, i1 };
		LLVMBasicBlockRef from[2] = { entry, LLVMGetInsertBlock(b) };
		LLVMAddIncoming(i, vals, from, 2);
	}
	LLVMPositionBuilderAtEnd(b, exit);
	LLVMBuildRetVoid(b);
	free(g->base);
	free(g->xv);
	free(at);
}

static LLVMTargetMachineRef cpu_target(struct ir_ctx *ctx, const char *cpu)
{
	char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
	char *host_cpu = NULL, *features = NULL;
	LLVMTargetRef target;
	LLVMTargetMachineRef tm = NULL;
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	if (LLVMGetTargetFromTriple(triple, &target, &err)) {
		ir_error(ctx, "LLVM has no target for %s: %s", triple, err);
		LLVMDisposeMessage(err);
		LLVMDisposeMessage(triple);
		return NULL;
	}
	if (!cpu || !strcmp(cpu, "native")) {
		host_cpu = LLVMGetHostCPUName();
		features = LLVMGetHostCPUFeatures();
	}
	tm = LLVMCreateTargetMachine(target, triple, host_cpu ? host_cpu : cpu,
	                             features ? features : "", LLVMCodeGenLevelAggressive,
	                             LLVMRelocPIC, LLVMCodeModelDefault);
	LLVMDisposeMessage(triple);
	if (host_cpu)
		LLVMDisposeMessage(host_cpu);
	if (features)
		LLVMDisposeMessage(features);
	if (!tm)
		ir_error(ctx, "LLVM cannot create a target machine for CPU '%s'",
		         cpu ? cpu : "native");
	return tm;
}

/* A module for tm's target with the types the generator uses. */
static void gen_open(struct gen *g, LLVMTargetMachineRef tm, const char *name)
{
	char *triple = LLVMGetTargetMachineTriple(tm), *layout;
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	g->cx = LLVMContextCreate();
	g->mod = LLVMModuleCreateWithNameInContext(name, g->cx);
	g->b = LLVMCreateBuilderInContext(g->cx);
	g->i1 = LLVMInt1TypeInContext(g->cx);
	g->i8 = LLVMInt8TypeInContext(g->cx);
	g->i16 = LLVMInt16TypeInContext(g->cx);
	g->i32 = LLVMInt32TypeInContext(g->cx);
	g->i64 = LLVMInt64TypeInContext(g->cx);
	g->f16 = LLVMHalfTypeInContext(g->cx);
	g->f32 = LLVMFloatTypeInContext(g->cx);
	g->f64 = LLVMDoubleTypeInContext(g->cx);
	g->ptr = LLVMPointerTypeInContext(g->cx, 0);
	g->voidt = LLVMVoidTypeInContext(g->cx);
	LLVMSetTarget(g->mod, triple);
	layout = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(g->mod, layout);
	LLVMDisposeMessage(layout);
	LLVMDisposeTargetData(td);
	LLVMDisposeMessage(triple);
}

static void gen_close(struct gen *g, LLVMTargetMachineRef tm)
{
	LLVMDisposeBuilder(g->b);
	LLVMDisposeModule(g->mod);
	LLVMContextDispose(g->cx);
	LLVMDisposeTargetMachine(tm);
}

/* Verifies, optimizes (O3) and optionally prints the module. */
static bool optimize(struct gen *g, LLVMTargetMachineRef tm, const char *ll_path)
{
	struct ir_ctx *ctx = g->p->m->ctx;
	LLVMPassBuilderOptionsRef po;
	LLVMErrorRef lerr;
	char *err = NULL;
	if (LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &err))
		ir_panic(__FILE__, __LINE__, "generated LLVM IR is invalid: %s", err);
	LLVMDisposeMessage(err);
	err = NULL;
	po = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
	LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
	lerr = LLVMRunPasses(g->mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (lerr) {
		char *msg = LLVMGetErrorMessage(lerr);
		ir_error(ctx, "LLVM optimization failed: %s", msg);
		LLVMDisposeErrorMessage(msg);
		return false;
	}
	if (ll_path && LLVMPrintModuleToFile(g->mod, ll_path, &err)) {
		ir_error(ctx, "cannot write %s: %s", ll_path, err);
		LLVMDisposeMessage(err);
		return false;
	}
	return true;
}

bool cg_llvm_emit(const struct cg_plan *p, const char *path, const char *ll_path)
{
	struct gen g = { .p = p };
	struct ir_ctx *ctx = p->m->ctx;
	LLVMTargetMachineRef tm;
	char *err = NULL;
	bool ok = false;

	if (!(tm = cpu_target(ctx, p->opt->cpu)))
		return false;
	gen_open(&g, tm, p->opt->name);
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i]->code == p->kernels[i]->id)
			gen_kernel(&g, p->kernels[i]);
	if (!optimize(&g, tm, ll_path))
		goto out;
	if (LLVMTargetMachineEmitToFile(tm, g.mod, (char *)path, LLVMObjectFile, &err)) {
		ir_error(ctx, "LLVM cannot write %s: %s", path, err);
		LLVMDisposeMessage(err);
		goto out;
	}
	ok = true;
out:
	gen_close(&g, tm);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* PTX                                                                      */
/* ------------------------------------------------------------------------ */

/* The PTX ISA version onnxc asks for: 8.0, the first with sm_90a, which
 * CUDA 12 and 13's ptxas and drivers read. */
#define PTX_FEATURES "+ptx80"

static LLVMTargetMachineRef nvptx_target(struct ir_ctx *ctx, const char *arch)
{
	static const char triple[] = "nvptx64-nvidia-cuda";
	LLVMTargetRef target;
	LLVMTargetMachineRef tm;
	char *err = NULL;
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	if (LLVMGetTargetFromTriple(triple, &target, &err)) {
		ir_error(ctx, "LLVM has no NVPTX target: %s", err);
		LLVMDisposeMessage(err);
		return NULL;
	}
	tm = LLVMCreateTargetMachine(target, triple, arch, PTX_FEATURES, LLVMCodeGenLevelAggressive,
	                             LLVMRelocDefault, LLVMCodeModelDefault);
	if (!tm)
		ir_error(ctx, "LLVM cannot create an NVPTX target machine for %s", arch);
	return tm;
}

/*
 * Links libdevice (the CUDA toolkit's math library as LLVM bitcode) into
 * the module for the __nv_* functions the kernels call, then makes
 * everything but the kernels internal so O3 keeps only what is used.
 * libdevice asks __nvvm_reflect("__CUDA_FTZ"): 0, denormals are kept.
 */
static bool link_libdevice(struct gen *g)
{
	struct ir_ctx *ctx = g->p->m->ctx;
	const char *path = getenv("ONNXC_LIBDEVICE") ? getenv("ONNXC_LIBDEVICE") : ONNXC_LIBDEVICE;
	LLVMMemoryBufferRef mb;
	LLVMModuleRef lib;
	char *err = NULL;
	if (!*path) {
		ir_error(ctx,
		         "the CUDA target needs libdevice.10.bc from the CUDA toolkit (this onnxc "
		         "was built without one; set ONNXC_LIBDEVICE)");
		return false;
	}
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &err)) {
		ir_error(ctx, "cannot read libdevice %s: %s", path, err);
		LLVMDisposeMessage(err);
		return false;
	}
	if (LLVMParseBitcodeInContext2(g->cx, mb, &lib)) {
		LLVMDisposeMemoryBuffer(mb);
		ir_error(ctx, "%s is not LLVM bitcode", path);
		return false;
	}
	LLVMDisposeMemoryBuffer(mb);
	LLVMSetTarget(lib, LLVMGetTarget(g->mod));
	LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(g->mod));
	if (LLVMLinkModules2(g->mod, lib)) {
		ir_error(ctx, "linking libdevice %s failed", path);
		return false;
	}
	for (LLVMValueRef f = LLVMGetFirstFunction(g->mod); f; f = LLVMGetNextFunction(f))
		if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != PTX_KERNEL_CC)
			LLVMSetLinkage(f, LLVMInternalLinkage);
	for (LLVMValueRef v = LLVMGetFirstGlobal(g->mod); v; v = LLVMGetNextGlobal(v))
		if (!LLVMIsDeclaration(v))
			LLVMSetLinkage(v, LLVMInternalLinkage);
	LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
	                  LLVMValueAsMetadata(LLVMConstInt(g->i32, 0, 0)));
	return true;
}

bool cg_llvm_emit_ptx(const struct cg_plan *p, const char *arch, char **ptx, size_t *size,
                      const char *ll_path)
{
	struct gen g = { .p = p, .gpu = true };
	struct ir_ctx *ctx = p->m->ctx;
	LLVMTargetMachineRef tm;
	LLVMMemoryBufferRef buf;
	char *err = NULL;
	bool ok = false;

	*ptx = NULL;
	*size = 0;
	if (!(tm = nvptx_target(ctx, arch)))
		return false;
	gen_open(&g, tm, p->opt->name);
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i]->code == p->kernels[i]->id)
			gen_kernel_gpu(&g, p->kernels[i]);
	if (!link_libdevice(&g) || !optimize(&g, tm, ll_path))
		goto out;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, g.mod, LLVMAssemblyFile, &err, &buf)) {
		ir_error(ctx, "LLVM cannot emit PTX for %s: %s", arch, err);
		LLVMDisposeMessage(err);
		goto out;
	}
	*size = LLVMGetBufferSize(buf);
	*ptx = ir_arena_alloc(&p->m->arena, *size + 1); /* NUL-terminated */
	memcpy(*ptx, LLVMGetBufferStart(buf), *size);
	LLVMDisposeMemoryBuffer(buf);
	ok = true;
out:
	gen_close(&g, tm);
	return ok;
}

bool cg_llvm_emit_blob(const struct cg_plan *p, const char *path, const char *symbol,
                       const void *data, size_t size)
{
	struct ir_ctx *ctx = p->m->ctx;
	LLVMTargetMachineRef tm = cpu_target(ctx, p->opt->cpu);
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMValueRef g, init;
	char *err = NULL, *triple;
	bool ok;
	if (!tm)
		return false;
	cx = LLVMContextCreate();
	mod = LLVMModuleCreateWithNameInContext(symbol, cx);
	triple = LLVMGetTargetMachineTriple(tm);
	LLVMSetTarget(mod, triple);
	LLVMDisposeMessage(triple);
	init = LLVMConstStringInContext(cx, data, (unsigned)size, 1);
	g = LLVMAddGlobal(mod, LLVMTypeOf(init), symbol);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetAlignment(g, 64);
	ok = !LLVMTargetMachineEmitToFile(tm, mod, (char *)path, LLVMObjectFile, &err);
	if (!ok) {
		ir_error(ctx, "LLVM cannot write %s: %s", path, err);
		LLVMDisposeMessage(err);
	}
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
	LLVMDisposeTargetMachine(tm);
	return ok;
}
