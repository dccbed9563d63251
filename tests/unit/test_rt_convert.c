/*
 * test_rt_convert.c - rt_convert against the IR's conversions (ir/dtype.c,
 * written separately): every FP16 and BF16 value to FP32, and FP32 to both
 * over every special value and a dense sweep of bit patterns (normals,
 * subnormals, ties, overflow, NaN). Run once with the F16C path and once
 * with ONNXC_NO_F16C=1 (tests/CMakeLists.txt).
 */
#include "ir/ir.h"
#include "runtime/onnxc_rt.h"
#include "test.h"

#include <stdint.h>
#include <string.h>

static float bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* Equal as results of a conversion: NaN matches any NaN. */
static bool same16(uint16_t a, uint16_t b, bool bf16)
{
	uint16_t exp = bf16 ? 0x7f80 : 0x7c00, man = bf16 ? 0x7f : 0x3ff;
	bool na = (a & exp) == exp && (a & man), nb = (b & exp) == exp && (b & man);
	return na || nb ? na && nb : a == b;
}

static void test_half_to_f32(void)
{
	static uint16_t h[65536];
	static float f[65536];
	for (int i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	for (int bf = 0; bf < 2; bf++) {
		int bad = 0;
		CHECK_EQ(rt_convert(NULL, f, RT_F32, h, bf ? RT_BF16 : RT_F16, 65536), RT_OK);
		for (int i = 0; i < 65536; i++) {
			float want = bf ? ir_bf16_to_f32(h[i]) : ir_f16_to_f32(h[i]);
			bad += !(memcmp(&want, &f[i], 4) == 0 || (want != want && f[i] != f[i]));
		}
		CHECK_EQ(bad, 0);
	}
}

static void test_f32_to_half(void)
{
	enum { N = 1 << 20 };
	static float f[N];
	static uint16_t h[N];
	static const uint32_t special[] = {
		0x00000000, 0x80000000, 0x7f800000,
		0xff800000, 0x7fc00000, 0x7f800001,
		0xffc12345, 0x477fe000, /* 65504 */ 0x477ff000, /* 65520: a tie, rounds to inf */
		0x477fefff, 0x33000000, /* 2^-25: a tie below the smallest subnormal */
		0x33000001, 0x33800000, 0x387fc000,
		0x38800000, 0x3f801000, /* 1 + half ulp */
		0x3f803000, 0x3f800001, 0x00000001,
		0x7f7fffff,
	};
	int n = 0;
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		f[n++] = bits(special[i]);
	/* a dense sweep: every bit pattern in steps of 4099 (a prime) */
	for (uint64_t u = 0; n < N; u += 4099)
		f[n++] = bits((uint32_t)(u * 1048573u));
	for (int bf = 0; bf < 2; bf++) {
		int bad = 0;
		CHECK_EQ(rt_convert(NULL, h, bf ? RT_BF16 : RT_F16, f, RT_F32, N), RT_OK);
		for (int i = 0; i < N; i++) {
			uint16_t want = bf ? ir_f32_to_bf16(f[i]) : ir_f32_to_f16(f[i]);
			uint32_t u;
			memcpy(&u, &f[i], 4);
			if (!same16(want, h[i], bf) && bad++ < 5)
				fprintf(stderr, "%s(0x%08x) = 0x%04x, the IR says 0x%04x\n",
				        bf ? "bf16" : "f16", u, h[i], want);
		}
		CHECK_EQ(bad, 0);
	}
}

static void test_threads_and_errors(void)
{
	struct rt_ctx *ctx;
	enum { N = 300001 };
	static float f[N], g[N];
	static uint16_t h[N];
	CHECK_EQ(rt_ctx_create(&ctx, 2), RT_OK);
	for (int i = 0; i < N; i++)
		f[i] = (float)i * 0.37f - 5000.0f;
	CHECK_EQ(rt_convert(ctx, h, RT_F16, f, RT_F32, N), RT_OK);
	CHECK_EQ(rt_convert(ctx, g, RT_F32, h, RT_F16, N), RT_OK);
	for (int i = 0; i < N; i += 1013)
		CHECK(g[i] == ir_f16_to_f32(ir_f32_to_f16(f[i])));
	CHECK_EQ(rt_convert(ctx, h, RT_F16, h, RT_BF16, 4), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_convert(ctx, h, RT_I32, f, RT_F32, 4), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_convert(ctx, NULL, RT_F16, f, RT_F32, 4), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_convert(ctx, NULL, RT_F16, NULL, RT_F32, 0), RT_OK);
	rt_ctx_destroy(ctx);
}

TESTS(T(test_half_to_f32) T(test_f32_to_half) T(test_threads_and_errors))
