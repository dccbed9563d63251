/*
 * api_test.c - the generated C API under misuse and concurrency.
 *
 * Built by tests/api/run.sh against a model compiled with --name m, twice:
 * libm.a with a weights file, and libme.a (--name me) with embedded weights.
 *   - statuses: NULL arguments, a missing, truncated or foreign weights file,
 *     wrong buffer sizes through m_run_checked;
 *   - two instances run concurrently in two threads give the same outputs
 *     as one instance alone (no global state);
 *   - the embedded-weights library needs no file;
 *   - the output hook sees the caller's buffers after the run, its changes
 *     are what the run returns, its status is the run's, NULL removes it.
 * usage: api_test WEIGHTS OTHER_MODEL_WEIGHTS TRUNCATED_WEIGHTS
 */
#define _POSIX_C_SOURCE 200809L
#include "m.h"
#include "me.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(c)                                                                        \
	do {                                                                             \
		if (!(c)) {                                                              \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c); \
			failures++;                                                      \
		}                                                                        \
	} while (0)

static float input[M_INPUT0_ELEMS];

struct job {
	struct m *model;
	float out[M_OUTPUT0_ELEMS];
	int status;
};

/* An output hook: doubles every float it is given; fails on the third call. */
struct hook_seen {
	int calls, n;
	size_t bytes0;
	void *out0, *stream;
};

static int doubling_hook(void *ctx, void *const outputs[], const size_t bytes[], int n,
                         void *stream)
{
	struct hook_seen *s = ctx;
	if (++s->calls == 3)
		return 7;
	s->n = n;
	s->bytes0 = bytes[0];
	s->out0 = outputs[0];
	s->stream = stream;
	for (size_t i = 0; i < bytes[0] / sizeof(float); i++)
		((float *)outputs[0])[i] *= 2;
	return 0;
}

static void *run_many(void *p)
{
	struct job *j = p;
	const void *in[] = { input };
	void *out[] = { j->out };
	for (int i = 0; i < 50 && !j->status; i++)
		j->status = m_run(j->model, in, out);
	return NULL;
}

int main(int argc, char **argv)
{
	struct m *a = NULL, *b = NULL;
	struct me *e = NULL;
	float ref[M_OUTPUT0_ELEMS], out[M_OUTPUT0_ELEMS];
	const void *in[] = { input };
	void *outs[] = { out };
	size_t in_bytes[] = { M_INPUT0_BYTES }, out_bytes[] = { M_OUTPUT0_BYTES };
	size_t bad_bytes[] = { M_INPUT0_BYTES - 4 };
	if (argc != 4) {
		fprintf(stderr, "usage: api_test WEIGHTS OTHER_WEIGHTS TRUNCATED_WEIGHTS\n");
		return 2;
	}
	for (int i = 0; i < M_INPUT0_ELEMS; i++)
		input[i] = sinf((float)i * 0.37f);

	/* statuses */
	EXPECT(m_create(NULL, argv[1]) == 1);
	EXPECT(m_create(&a, "/nonexistent/m.weights") == 3 && a == NULL);
	EXPECT(m_create(&a, argv[3]) == 4 && a == NULL);
	EXPECT(m_create(&a, argv[2]) == 5 && a == NULL);
	EXPECT(m_create(&a, "/") == 3 && a == NULL);
	EXPECT(strstr(m_strerror(5), "another model") != NULL);
	EXPECT(strcmp(m_strerror(999), "unknown status") == 0);
	EXPECT(m_create(&a, argv[1]) == 0 && a != NULL);
	EXPECT(m_run(NULL, in, outs) == 1);
	EXPECT(m_run(a, NULL, outs) == 1);
	EXPECT(m_run(a, in, NULL) == 1);
	{
		const void *null_in[] = { NULL };
		EXPECT(m_run(a, null_in, outs) == 1);
	}
	EXPECT(m_run_checked(a, in, bad_bytes, outs, out_bytes) == 6);
	EXPECT(m_run_checked(a, in, in_bytes, outs, bad_bytes) == 6);
	EXPECT(m_run_checked(a, in, in_bytes, outs, out_bytes) == 0);
	memcpy(ref, out, sizeof ref);
	for (int i = 0; i < M_OUTPUT0_ELEMS; i++)
		EXPECT(isfinite(ref[i]));

	/* two instances side by side */
	EXPECT(m_create(&b, argv[1]) == 0);
	{
		struct job ja = { .model = a }, jb = { .model = b };
		pthread_t ta, tb;
		pthread_create(&ta, NULL, run_many, &ja);
		pthread_create(&tb, NULL, run_many, &jb);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		EXPECT(ja.status == 0 && jb.status == 0);
		EXPECT(memcmp(ja.out, ref, sizeof ref) == 0);
		EXPECT(memcmp(jb.out, ref, sizeof ref) == 0);
	}
	/* the output hook */
	{
		struct hook_seen s = { 0 };
		int same = 1;
		EXPECT(m_set_output_hook(NULL, doubling_hook, &s) == 1);
		EXPECT(m_set_output_hook(a, doubling_hook, &s) == 0);
		EXPECT(m_run(a, in, outs) == 0);
		EXPECT(s.calls == 1 && s.n == M_NUM_OUTPUTS && s.bytes0 == M_OUTPUT0_BYTES &&
		       s.out0 == out && s.stream == NULL);
		for (int i = 0; i < M_OUTPUT0_ELEMS; i++)
			same &= out[i] == 2 * ref[i];
		EXPECT(same);
		EXPECT(m_run(a, in, outs) == 0);
		EXPECT(m_run(a, in, outs) == 7); /* the hook's status */
		EXPECT(m_set_output_hook(a, NULL, NULL) == 0);
		EXPECT(m_run(a, in, outs) == 0 && s.calls == 3);
		EXPECT(memcmp(out, ref, sizeof ref) == 0);
	}
	m_destroy(a);
	m_destroy(b);
	m_destroy(NULL);

	/* embedded weights: no file needed, same results */
	EXPECT(me_create(&e, NULL) == 0);
	memset(out, 0, sizeof out);
	EXPECT(me_run(e, in, outs) == 0);
	EXPECT(memcmp(out, ref, sizeof ref) == 0);
	me_destroy(e);

	if (failures)
		fprintf(stderr, "%d expectation(s) failed\n", failures);
	else
		printf("api_test: all expectations met\n");
	return failures != 0;
}
