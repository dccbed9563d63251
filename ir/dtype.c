/*
 * dtype.c - data types, half-precision conversion, element access, shapes.
 *
 * Element access goes through two common representations: double for float
 * dtypes and int64 for integer dtypes. Integer shape arithmetic (Slice ends of
 * INT64_MAX, for instance) must never pass through double, so callers pick the
 * representation by dtype (ir_dtypes[t].is_float).
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dtype.c is below ir.h and its IR_ASSERT: an internal bug aborts here too. */
#define MUST(c)                                                                                \
	((c) ? (void)0                                                                         \
	     : (fprintf(stderr, "onnxc: internal error: %s:%d: %s\n", __FILE__, __LINE__, #c), \
	        abort()))

const struct ir_dtype_info ir_dtypes[IR_DTYPE_COUNT] = {
	[IR_DT_NONE] = { "none", 0, 0, false, false, false, 0, false },
#define X(id, nm, code, sz, fl, in, sg, bits) \
	[IR_##id] = { nm, code, sz, fl, in, sg, bits, !(fl) && !(in) && (code) > 16 },
	IR_DTYPES(X)
#undef X
};

enum ir_dtype ir_dtype_from_onnx(int code)
{
	for (int i = 1; i < IR_DTYPE_COUNT; i++)
		if (ir_dtypes[i].onnx == code)
			return (enum ir_dtype)i;
	return IR_DT_NONE;
}

enum ir_dtype ir_dtype_from_name(const char *s, size_t n)
{
	for (int i = 1; i < IR_DTYPE_COUNT; i++)
		if (strlen(ir_dtypes[i].name) == n && memcmp(ir_dtypes[i].name, s, n) == 0)
			return (enum ir_dtype)i;
	return IR_DT_NONE;
}

const char *ir_onnx_dtype_name(int code)
{
	static const char *const names[] = {
		"UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
		"INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
		"FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
		"COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
		"FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
		"UINT2",          "INT2",
	};
	if (code >= 0 && code < (int)(sizeof names / sizeof names[0]))
		return names[code];
	return "unknown";
}

/* ------------------------------------------------------------------------ */
/* binary16 / bfloat16                                                      */
/* ------------------------------------------------------------------------ */

static uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}
static float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t ir_f32_to_f16(float f)
{
	uint32_t x = f2u(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t exp = (x >> 23) & 0xffu;
	uint32_t man = x & 0x7fffffu;
	if (exp == 0xff) /* inf or NaN (keep a quiet NaN) */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
	int32_t e = (int32_t)exp - 127 + 15;
	if (e >= 31) /* overflow to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) { /* subnormal or zero */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
		half++; /* may carry into the exponent: correct */
	return (uint16_t)half;
}

float ir_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	if (exp == 0) {
		if (man == 0)
			return u2f(sign);
		/* subnormal: value = man * 2^-24 */
		float v = (float)man * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	if (exp == 31)
		return u2f(sign | 0x7f800000u | (man << 13));
	return u2f(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t ir_f32_to_bf16(float f)
{
	uint32_t x = f2u(f);
	if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

float ir_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

/* ------------------------------------------------------------------------ */
/* Storage types                                                            */
/* ------------------------------------------------------------------------ */

const struct ir_minifloat *ir_minifloat(enum ir_dtype t)
{
	static const struct ir_minifloat f[] = {
		[IR_F8E4M3FN] = { 4, 3, 7, IR_MF_FN, 448 },
		[IR_F8E4M3FNUZ] = { 4, 3, 8, IR_MF_FNUZ, 240 },
		[IR_F8E5M2] = { 5, 2, 15, IR_MF_IEEE, 57344 },
		[IR_F8E5M2FNUZ] = { 5, 2, 16, IR_MF_FNUZ, 57344 },
		[IR_F8E8M0] = { 8, 0, 127, IR_MF_E8M0, 0x1p127 },
		[IR_F4E2M1] = { 2, 1, 1, IR_MF_NONE, 6 },
	};
	return t > 0 && (size_t)t < sizeof f / sizeof f[0] && f[t].ebits ? &f[t] : NULL;
}

static uint8_t mf_nan(const struct ir_minifloat *f, bool neg)
{
	switch (f->kind) {
	case IR_MF_FN: return neg ? 0xff : 0x7f;
	case IR_MF_FNUZ: return 0x80;
	case IR_MF_IEEE: return neg ? 0xfe : 0x7e;
	case IR_MF_E8M0: return 0xff;
	case IR_MF_NONE: break;
	}
	return 0x8; /* f4e2m1 has no NaN: -0, as ONNX's reference gives */
}

uint8_t ir_minifloat_encode(enum ir_dtype t, double v, bool saturate)
{
	const struct ir_minifloat *f = ir_minifloat(t);
	int emin, e;
	double a = fabs(v), r;
	unsigned sign;
	MUST(f);
	emin = 1 - f->bias;
	sign = signbit(v) && f->kind != IR_MF_E8M0 ? 1u << (f->ebits + f->mbits) : 0;
	if (v != v || (f->kind == IR_MF_E8M0 && v < 0))
		return mf_nan(f, signbit(v));
	if (f->kind == IR_MF_E8M0) { /* round up to a power of two in [2^-127, 2^127] */
		if (a > f->max)
			return saturate ? 0xfe : 0xff;
		frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
		if (a == ldexp(0.5, e))
			e--;
		return (uint8_t)(a <= 0x1p-127 ? 0 : e + 127);
	}
	if (a == INFINITY) {
		r = a;
	} else {
		frexp(a, &e);
		e = e - 1 < emin ? emin : e - 1;       /* the exponent of a's quantum */
		r = nearbyint(ldexp(a, f->mbits - e)); /* exact: a power-of-two scaling */
		r = ldexp(r, e - f->mbits);
	}
	if (r > f->max) {
		if (saturate || f->kind == IR_MF_NONE)
			r = f->max;
		else if (f->kind == IR_MF_IEEE)
			return (uint8_t)(sign | ((1u << f->ebits) - 1) << f->mbits);
		else
			return mf_nan(f, signbit(v));
	}
	if (r == 0)
		return (uint8_t)(f->kind == IR_MF_FNUZ ? 0 : sign);
	frexp(r, &e);
	if (e - 1 < emin) /* subnormal */
		return (uint8_t)(sign | (unsigned)ldexp(r, f->mbits - emin));
	return (uint8_t)(sign | (unsigned)(e - 1 + f->bias) << f->mbits |
	                 ((unsigned)ldexp(r, f->mbits - (e - 1)) & ((1u << f->mbits) - 1)));
}

double ir_minifloat_decode(enum ir_dtype t, uint8_t b)
{
	const struct ir_minifloat *f = ir_minifloat(t);
	unsigned ef, mf, mmask;
	double mag;
	MUST(f);
	if (f->kind == IR_MF_E8M0)
		return b == 0xff ? NAN : ldexp(1, b - 127);
	mmask = (1u << f->mbits) - 1;
	ef = (b >> f->mbits) & ((1u << f->ebits) - 1), mf = b & mmask;
	if ((f->kind == IR_MF_FN && (b & 0x7f) == 0x7f) || (f->kind == IR_MF_FNUZ && b == 0x80))
		return NAN;
	if (f->kind == IR_MF_IEEE && ef == (1u << f->ebits) - 1)
		mag = mf ? NAN : INFINITY;
	else if (ef == 0)
		mag = ldexp(mf, 1 - f->bias - f->mbits);
	else
		mag = ldexp(mf | (mmask + 1), (int)ef - f->bias - f->mbits);
	return b >> (f->ebits + f->mbits) & 1 ? -mag : mag;
}

double ir_minifloat_overflow(enum ir_dtype t, bool *incl)
{
	const struct ir_minifloat *f = ir_minifloat(t);
	int e;
	MUST(f);
	if (f->kind == IR_MF_E8M0) { /* rounding up: anything above max */
		*incl = false;
		return f->max;
	}
	frexp(f->max, &e);
	/* max's mantissa odd: the tie max + ulp / 2 rounds to even, beyond it */
	*incl = ((unsigned)ldexp(f->max, f->mbits - (e - 1)) & 1) != 0;
	return f->max + ldexp(0.5, e - 1 - f->mbits);
}

int64_t ir_wrap_narrow_int(enum ir_dtype t, int64_t v)
{
	int bits = ir_dtypes[t].bits;
	uint64_t m = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & m;
	if (ir_dtypes[t].is_signed && (u >> (bits - 1)))
		return (int64_t)(u | ~m);
	return (int64_t)u;
}

/* ------------------------------------------------------------------------ */
/* Element access                                                           */
/* ------------------------------------------------------------------------ */

double ir_load_f64(enum ir_dtype t, const void *p, size_t i)
{
	switch (t) {
	case IR_F32: return ((const float *)p)[i];
	case IR_F16: return ir_f16_to_f32(((const uint16_t *)p)[i]);
	case IR_BF16: return ir_bf16_to_f32(((const uint16_t *)p)[i]);
	case IR_F64: return ((const double *)p)[i];
	case IR_U64: return (double)((const uint64_t *)p)[i];
	default:
		if (ir_minifloat(t))
			return ir_minifloat_decode(t, ((const uint8_t *)p)[i]);
		return (double)ir_load_i64(t, p, i);
	}
}

int64_t ir_load_i64(enum ir_dtype t, const void *p, size_t i)
{
	switch (t) {
	case IR_I8: return ((const int8_t *)p)[i];
	case IR_I16: return ((const int16_t *)p)[i];
	case IR_I32: return ((const int32_t *)p)[i];
	case IR_I64: return ((const int64_t *)p)[i];
	case IR_U8: return ((const uint8_t *)p)[i];
	case IR_U16: return ((const uint16_t *)p)[i];
	case IR_U32: return ((const uint32_t *)p)[i];
	case IR_U64: return (int64_t)((const uint64_t *)p)[i];
	case IR_BOOL: return ((const uint8_t *)p)[i] != 0;
	case IR_I4:
	case IR_I2: return ((const int8_t *)p)[i];
	case IR_U4:
	case IR_U2: return ((const uint8_t *)p)[i];
	default: {
		double d = ir_load_f64(t, p, i);
		/* float -> int as C truncation, saturated (NaN -> 0) */
		if (d != d)
			return 0;
		if (d >= 9.2233720368547758e18)
			return INT64_MAX;
		if (d <= -9.2233720368547758e18)
			return INT64_MIN;
		return (int64_t)d;
	}
	}
}

void ir_store_f64(enum ir_dtype t, void *p, size_t i, double v)
{
	switch (t) {
	case IR_F32: ((float *)p)[i] = (float)v; break;
	case IR_F16: ((uint16_t *)p)[i] = ir_f32_to_f16((float)v); break;
	case IR_BF16: ((uint16_t *)p)[i] = ir_f32_to_bf16((float)v); break;
	case IR_F64: ((double *)p)[i] = v; break;
	case IR_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: {
		int64_t x;
		if (ir_minifloat(t)) {
			((uint8_t *)p)[i] = ir_minifloat_encode(t, v, false);
			break;
		}
		if (v != v)
			x = 0;
		else if (v >= 9.2233720368547758e18)
			x = INT64_MAX;
		else if (v <= -9.2233720368547758e18)
			x = INT64_MIN;
		else
			x = (int64_t)v;
		if (t == IR_U64 && v >= 9.2233720368547758e18 && v < 1.8446744073709552e19) {
			((uint64_t *)p)[i] = (uint64_t)v;
			break;
		}
		ir_store_i64(t, p, i, x);
	}
	}
}

void ir_store_i64(enum ir_dtype t, void *p, size_t i, int64_t v)
{
	switch (t) {
	case IR_I8: ((int8_t *)p)[i] = (int8_t)v; break;
	case IR_I16: ((int16_t *)p)[i] = (int16_t)v; break;
	case IR_I32: ((int32_t *)p)[i] = (int32_t)v; break;
	case IR_I64: ((int64_t *)p)[i] = v; break;
	case IR_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case IR_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case IR_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case IR_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case IR_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case IR_I4:
	case IR_I2:
	case IR_U4:
	case IR_U2: ((uint8_t *)p)[i] = (uint8_t)ir_wrap_narrow_int(t, v); break;
	default: ir_store_f64(t, p, i, (double)v); break;
	}
}

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

int64_t ir_dims_elems(const int64_t *dims, int rank)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return -1;
		if (__builtin_mul_overflow(n, dims[i], &n))
			return -1;
	}
	return n;
}

int64_t ir_type_elems(const struct ir_type *t) { return ir_dims_elems(t->dims, t->rank); }

int64_t ir_type_bytes(const struct ir_type *t)
{
	int64_t n = ir_type_elems(t), b;
	if (n < 0 || __builtin_mul_overflow(n, (int64_t)ir_dtype_size(t->dtype), &b))
		return -1;
	return b;
}

bool ir_type_eq(const struct ir_type *a, const struct ir_type *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

char *ir_type_str(const struct ir_type *t, char *buf, size_t n)
{
	size_t off = (size_t)snprintf(buf, n, "%s[", ir_dtype_name(t->dtype));
	for (int i = 0; i < t->rank && off < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "," : "",
		                        (long long)t->dims[i]);
	if (off < n)
		snprintf(buf + off, n - off, "]");
	return buf;
}

bool ir_broadcast(const struct ir_type *a, const struct ir_type *b, struct ir_type *out)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	struct ir_type o = { .dtype = a->dtype, .rank = r };
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		if (da == db || db == 1)
			o.dims[i] = da;
		else if (da == 1)
			o.dims[i] = db;
		else
			return false;
	}
	*out = o;
	return true;
}
