/*
 * classify.c - the bundled example: a program using a model compiled by
 * onnxc (scripts/demo builds it).
 *
 *   onnxc compile examples/classifier.onnx --dim batch=1 -o OUT --name classifier
 *   cc classify.c -IOUT -Iruntime OUT/libclassifier.a build/runtime/libonnxc_rt.a \
 *      -lopenblas -lpthread -lm
 *
 * It draws a "7" into a 28x28 image, runs the classifier on it, and prints
 * the ten logits and the median time of 100 runs.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include "classifier.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static float image[CLASSIFIER_INPUT0_ELEMS], logits[CLASSIFIER_OUTPUT0_ELEMS];
	const void *inputs[] = { image };
	void *outputs[] = { logits };
	struct classifier *model;
	double t[100];
	int st;

	/* a 7: a bar across the top and a diagonal down to the left */
	for (int x = 6; x < 22; x++)
		image[5 * 28 + x] = image[6 * 28 + x] = 1.0f;
	for (int y = 7; y < 24; y++)
		image[y * 28 + 21 - (y - 7) * 10 / 17] = 1.0f;

	if ((st = classifier_create(&model, argc > 1 ? argv[1] : NULL))) {
		fprintf(stderr, "classifier_create: %s\n", classifier_strerror(st));
		return 1;
	}
	for (int i = 0; i < 100; i++) {
		double t0 = now_ms();
		if ((st = classifier_run(model, inputs, outputs))) {
			fprintf(stderr, "classifier_run: %s\n", classifier_strerror(st));
			classifier_destroy(model);
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	qsort(t, 100, sizeof t[0], cmp);
	printf("logits:");
	for (int i = 0; i < CLASSIFIER_OUTPUT0_ELEMS; i++)
		printf(" %.4f", logits[i]);
	printf("\nmedian run time %.3f ms (100 runs, %d-byte arena)\n", t[50], CLASSIFIER_ARENA_BYTES);
	classifier_destroy(model);
	return 0;
}
