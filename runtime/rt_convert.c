/*
 * rt_convert.c - conversions between FP32 and the half formats.
 *
 * Rounding is to nearest even, as a half-precision store on the GPU does;
 * NaN stays NaN (quieted), values beyond the range become infinities,
 * subnormals are kept. FP16 uses the F16C instructions when the CPU has
 * them (checked once at run time: the library is built for any x86-64;
 * ONNXC_NO_F16C=1 turns them off, for tests) and a bit-exact portable path
 * otherwise; BF16 is integer arithmetic that
 * compilers vectorize. Large conversions are split across the context's
 * threads.
 */
#include "onnxc_rt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ------------------------------------------------------------------------ */
/* Scalar conversions (the definition the vector paths must match)          */
/* ------------------------------------------------------------------------ */

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t to_f16(float f)
{
	uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000, abs = x & 0x7fffffff;
	if (abs >= 0x7f800000) /* inf or NaN */
		return (uint16_t)(sign | 0x7c00 |
		                  (abs > 0x7f800000 ? 0x200 | ((abs >> 13) & 0x3ff) : 0));
	if (abs >= 0x477ff000) /* rounds to beyond 65504 */
		return (uint16_t)(sign | 0x7c00);
	if (abs < 0x38800000) { /* a subnormal (or zero) in FP16 */
		/* add 0.5 (2^-1), whose ulp at FP32 is FP16's subnormal step:
		 * the FPU rounds to nearest even for us */
		float r = bits_f32(abs) + 0.5f;
		return (uint16_t)(sign | (f32_bits(r) - 0x3f000000));
	}
	{
		uint32_t mant_odd = (abs >> 13) & 1;
		abs += 0xc8000fff + mant_odd; /* rebias the exponent and round */
		return (uint16_t)(sign | (abs >> 13));
	}
}

static float from_f16(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0x1f)
		return bits_f32(sign | 0x7f800000 | (m << 13));
	if (e == 0) { /* zero or subnormal: m * 2^-24 */
		float v = (float)m * bits_f32(0x33800000);
		return bits_f32(sign | f32_bits(v));
	}
	return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

static uint16_t to_bf16(float f)
{
	uint32_t x = f32_bits(f);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t h) { return bits_f32((uint32_t)h << 16); }

/* ------------------------------------------------------------------------ */
/* Loops                                                                    */
/* ------------------------------------------------------------------------ */

enum kind { F32_TO_F16, F16_TO_F32, F32_TO_BF16, BF16_TO_F32 };

struct job {
	enum kind kind;
	void *dst;
	const void *src;
};

#if defined(__x86_64__)
__attribute__((target("f16c,avx"))) static void f16c_to_f16(uint16_t *d, const float *s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
		                                                     _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		d[i] = to_f16(s[i]);
}

__attribute__((target("f16c,avx"))) static void f16c_from_f16(float *d, const uint16_t *s,
                                                              int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
	for (; i < n; i++)
		d[i] = from_f16(s[i]);
}

static int has_f16c(void)
{
	static int cached = -1; /* benign race: every thread computes the same */
	if (cached < 0)
		cached = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx") &&
		         !(getenv("ONNXC_NO_F16C") && *getenv("ONNXC_NO_F16C") == '1');
	return cached;
}
#endif

static void run(void *arg, int64_t b, int64_t e)
{
	const struct job *j = arg;
	float *df = (float *)j->dst + b;
	uint16_t *dh = (uint16_t *)j->dst + b;
	const float *sf = (const float *)j->src + b;
	const uint16_t *sh = (const uint16_t *)j->src + b;
	int64_t n = e - b;
	switch (j->kind) {
	case F32_TO_F16:
#if defined(__x86_64__)
		if (has_f16c()) {
			f16c_to_f16(dh, sf, n);
			break;
		}
#endif
		for (int64_t i = 0; i < n; i++)
			dh[i] = to_f16(sf[i]);
		break;
	case F16_TO_F32:
#if defined(__x86_64__)
		if (has_f16c()) {
			f16c_from_f16(df, sh, n);
			break;
		}
#endif
		for (int64_t i = 0; i < n; i++)
			df[i] = from_f16(sh[i]);
		break;
	case F32_TO_BF16:
		for (int64_t i = 0; i < n; i++)
			dh[i] = to_bf16(sf[i]);
		break;
	case BF16_TO_F32:
		for (int64_t i = 0; i < n; i++)
			df[i] = from_bf16(sh[i]);
		break;
	}
}

int rt_convert(struct rt_ctx *ctx, void *dst, int dst_dtype, const void *src, int src_dtype,
               int64_t n)
{
	struct job j = { .dst = dst, .src = src };
	if (n < 0 || (n && (!dst || !src)))
		return RT_ERR_ARGUMENT;
	if (src_dtype == RT_F32 && dst_dtype == RT_F16)
		j.kind = F32_TO_F16;
	else if (src_dtype == RT_F16 && dst_dtype == RT_F32)
		j.kind = F16_TO_F32;
	else if (src_dtype == RT_F32 && dst_dtype == RT_BF16)
		j.kind = F32_TO_BF16;
	else if (src_dtype == RT_BF16 && dst_dtype == RT_F32)
		j.kind = BF16_TO_F32;
	else
		return RT_ERR_ARGUMENT;
	if (n >= (1 << 16) && ctx)
		rt_parallel(ctx, n, 1 << 14, run, &j);
	else
		run(&j, 0, n);
	return RT_OK;
}
