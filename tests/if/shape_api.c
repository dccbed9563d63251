/*
 * shape_api.c - the generated API of a model whose output 0 has a shape
 * known only at run time (an If whose branches give it different shapes;
 * docs/api.md, Outputs of run-time shape).
 *
 * Built by check_if.py against its "shapes" and "ranks" models compiled
 * with --name s (inputs x, c; output 0 of run-time shape, output 1, where
 * there is one, of one shape). For each condition it
 * runs the model and writes PREFIX_<c>.shape (the rank and dimensions
 * s_output_shape reports) and PREFIX_<c>.bin (that many elements from the
 * start of output 0's buffer) for check_if.py to compare with numpy. It
 * checks itself what needs no reference: -1 before a run, for a bad index
 * and for NULL arguments, the fixed output's shape from the macros, the
 * capacity macros, and that a failed run leaves no stale shape.
 * usage: shape_api WEIGHTS X.bin PREFIX
 */
#include "s.h"

#include "../unit/test.h" /* CHECK */

/* output 1, where the model has one: of one shape, or of run-time shape too */
#if S_NUM_OUTPUTS > 1
#define FIXED (!S_OUTPUT1_VARIABLE)
static float z[S_OUTPUT1_ELEMS];
#else
#define FIXED 0
static float z[1];
#endif
static float x[S_INPUT0_ELEMS], y[S_OUTPUT0_ELEMS];

int main(int argc, char **argv)
{
	struct s *model;
	int64_t dims[S_OUTPUT0_RANK > 0 ? S_OUTPUT0_RANK : 1];
	FILE *f;
	if (argc != 4) {
		fprintf(stderr, "usage: shape_api WEIGHTS X.bin PREFIX\n");
		return 2;
	}
	if (!(f = fopen(argv[2], "rb")) || fread(x, sizeof x, 1, f) != 1) {
		fprintf(stderr, "cannot read %s\n", argv[2]);
		return 2;
	}
	fclose(f);
	test_current = "shape_api";
	CHECK(S_OUTPUT0_VARIABLE == 1);
	CHECK(S_OUTPUT0_BYTES == S_OUTPUT0_ELEMS * (int64_t)sizeof(float));
	if (s_create(&model, argv[1])) {
		fprintf(stderr, "s_create failed\n");
		return 1;
	}
	/* before a run: the variable output has none, the fixed one has its own */
	CHECK(s_output_shape(model, 0, dims) == -1);
#if FIXED
	{
		int64_t fixed[S_OUTPUT1_RANK], zdims[] = S_OUTPUT1_DIMS;
		CHECK(S_OUTPUT1_VARIABLE == 0);
		CHECK(s_output_shape(model, 1, fixed) == S_OUTPUT1_RANK);
		for (int d = 0; d < S_OUTPUT1_RANK; d++)
			CHECK(fixed[d] == zdims[d]);
	}
#endif
	{ /* refused before it touches the instance */
		unsigned char cond = 0;
		const void *in[] = { x, &cond };
		void *out[] = { y, z };
		CHECK(s_run(NULL, in, out) != 0);
	}
	CHECK(s_output_shape(model, S_NUM_OUTPUTS, dims) == -1);
	CHECK(s_output_shape(model, -1, dims) == -1);
	CHECK(s_output_shape(NULL, 0, dims) == -1);
	CHECK(s_output_shape(model, 0, NULL) == -1);
	for (int c = 0; c < 2; c++) {
		unsigned char cond = (unsigned char)c;
		const void *in[] = { x, &cond };
		void *out[] = { y, z }; /* z unread without output 1 */
		char path[4200];
		int r, st;
		int64_t n = 1;
		if ((st = s_run(model, in, out))) {
			fprintf(stderr, "s_run: %s\n", s_strerror(st));
			return 1;
		}
		r = s_output_shape(model, 0, dims);
		CHECK(r >= 0 && r <= S_OUTPUT0_RANK);
		if (r < 0)
			continue;
		snprintf(path, sizeof path, "%s_%d.shape", argv[3], c);
		if (!(f = fopen(path, "w")))
			return 2;
		fprintf(f, "%d", r);
		for (int d = 0; d < r; d++) {
			fprintf(f, " %lld", (long long)dims[d]);
			n *= dims[d];
		}
		fprintf(f, "\n");
		fclose(f);
		CHECK(n <= S_OUTPUT0_ELEMS);
		snprintf(path, sizeof path, "%s_%d.bin", argv[3], c);
		if (!(f = fopen(path, "wb")) || fwrite(y, sizeof *y, (size_t)n, f) != (size_t)n)
			return 2;
		fclose(f);
		/* a run that fails leaves no shape behind */
		{
			void *bad[] = { NULL, z };
			CHECK(s_run(model, in, bad) != 0);
			CHECK(s_output_shape(model, 0, dims) == -1);
		}
	}
	s_destroy(model);
	if (test_failures)
		fprintf(stderr, "%d check(s) failed\n", test_failures);
	return test_failures != 0;
}
