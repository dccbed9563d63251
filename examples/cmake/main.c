/*
 * main.c - runs the example classifier (examples/classifier.onnx, compiled
 * by onnxc at build time) on a drawn "7" and compares its logits with the
 * reference below (to 1e-4). Exit status 0 when they match.
 *
 *   classify [WEIGHTS]   (default: where the build put them)
 *
 * The Makefile example (examples/make) builds this file too.
 */
#include "classifier.h"

#include <math.h>
#include <stdio.h>

#ifndef CLASSIFIER_WEIGHTS_FILE
#define CLASSIFIER_WEIGHTS_FILE NULL /* EMBED_WEIGHTS */
#endif

/* the model evaluated in float64 by NumPy from its weights */
static const float reference[10] = { 0.007729f, 0.021319f,  0.018100f, -0.038008f, -0.002923f,
	                             0.019770f, -0.091870f, 0.022040f, -0.034978f, 0.154506f };

int main(int argc, char **argv)
{
	static float image[CLASSIFIER_INPUT0_ELEMS], logits[CLASSIFIER_OUTPUT0_ELEMS];
	const void *inputs[] = { image };
	void *outputs[] = { logits };
	struct classifier *model;
	int st, bad = 0;

	/* a 7: a bar across the top and a diagonal down to the left */
	for (int x = 6; x < 22; x++)
		image[5 * 28 + x] = image[6 * 28 + x] = 1.0f;
	for (int y = 7; y < 24; y++)
		image[y * 28 + 21 - (y - 7) * 10 / 17] = 1.0f;

	if ((st = classifier_create(&model, argc > 1 ? argv[1] : CLASSIFIER_WEIGHTS_FILE))) {
		fprintf(stderr, "classifier_create: %s\n", classifier_strerror(st));
		return 1;
	}
	if ((st = classifier_run(model, inputs, outputs))) {
		fprintf(stderr, "classifier_run: %s\n", classifier_strerror(st));
		classifier_destroy(model);
		return 1;
	}
	classifier_destroy(model);
	printf("logits:");
	for (int i = 0; i < CLASSIFIER_OUTPUT0_ELEMS; i++) {
		printf(" %.4f", logits[i]);
		if (!(fabsf(logits[i] - reference[i]) <= 1e-4f + 1e-4f * fabsf(reference[i])))
			bad++;
	}
	printf("\n%s\n", bad ? "MISMATCH with the reference" : "matches the reference");
	return bad ? 1 : 0;
}
