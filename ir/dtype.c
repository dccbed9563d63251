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
#include <string.h>

const struct ir_dtype_info ir_dtypes[IR_DTYPE_COUNT] = {
	[IR_DT_NONE] = { "none", 0, 0, false, false, false },
#define X(id, nm, code, sz, fl, in, sg) [IR_##id] = { nm, code, sz, fl, in, sg },
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
	default: return (double)ir_load_i64(t, p, i);
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
