/*
 * robust.c - the generated API under failing allocations and non-finite
 * inputs (docs/api.md#robustness). Built by tests/api/robust.sh against the
 * MLP compiled as m (FP32) and mm (--precision mixed).
 *
 *   robust fail WEIGHTS    create, run and destroy m once; under
 *                          ONNXC_FAIL_ALLOC=N the N-th allocation fails.
 *                          Exit 0: ran clean with nothing failed; 3: an
 *                          allocation failed and create returned
 *                          RT_ERR_NO_MEMORY with *out NULL; 1: anything else.
 *                          Leaks show under LeakSanitizer (the ASan build).
 *   robust nonfinite W MW  NaN, +-Inf and values beyond the half range as
 *                          inputs of m and mm: RT_OK, never a crash, and a
 *                          NaN input gives a NaN output in FP32.
 */
#define _POSIX_C_SOURCE 200809L
#include "m.h"
#include "mm.h"
#include "onnxc_rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail_mode(const char *weights)
{
	static float in[M_INPUT0_ELEMS], out[M_OUTPUT0_ELEMS];
	const void *ins[] = { in };
	void *outs[] = { out };
	struct m *model = (struct m *)1;
	int st = m_create(&model, weights);
	if (st == RT_ERR_NO_MEMORY)
		return model == NULL ? 3 : 1;
	if (st != RT_OK) {
		fprintf(stderr, "m_create: %s\n", m_strerror(st));
		return 1;
	}
	st = m_run(model, ins, outs);
	m_destroy(model);
	if (st != RT_OK) {
		fprintf(stderr, "m_run: %s\n", m_strerror(st));
		return 1;
	}
	return 0;
}

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "robust: %s\n", what);
		failures++;
	}
}

static int nonfinite_mode(const char *weights, const char *mixed_weights)
{
	static float in[M_INPUT0_ELEMS], out[M_OUTPUT0_ELEMS], outm[MM_OUTPUT0_ELEMS];
	const float fill[] = { NAN, INFINITY, -INFINITY, 1e30f, -7e4f, 1e-45f };
	const void *ins[] = { in };
	void *outs[] = { out }, *outsm[] = { outm };
	struct m *a = NULL;
	struct mm *b = NULL;
	check(M_INPUT0_ELEMS == MM_INPUT0_ELEMS, "m and mm differ");
	check(m_create(&a, weights) == RT_OK, "m_create");
	check(mm_create(&b, mixed_weights) == RT_OK, "mm_create");
	if (failures)
		return 1;
	for (size_t f = 0; f < sizeof fill / sizeof fill[0]; f++) {
		/* every element, then one element among ordinary values */
		for (int one = 0; one < 2; one++) {
			for (int i = 0; i < M_INPUT0_ELEMS; i++)
				in[i] = one && i ? (float)(i % 7) * 0.25f : fill[f];
			check(m_run(a, ins, outs) == RT_OK, "m_run with non-finite input");
			check(mm_run(b, ins, outsm) == RT_OK, "mm_run with non-finite input");
			if (isnan(fill[f]) && !one) {
				int nans = 0;
				for (int i = 0; i < M_OUTPUT0_ELEMS; i++)
					nans += isnan(out[i]) != 0;
				check(nans > 0, "an all-NaN input gave no NaN output (FP32)");
			}
		}
	}
	m_destroy(a);
	mm_destroy(b);
	return failures != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "fail"))
		return fail_mode(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "nonfinite"))
		return nonfinite_mode(argv[2], argv[3]);
	fprintf(stderr, "usage: robust fail WEIGHTS | robust nonfinite WEIGHTS MIXED_WEIGHTS\n");
	return 2;
}
