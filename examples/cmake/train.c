/*
 * train.c - a program that trains the example classifier with the library
 * onnxc_add_training() builds (docs/training.md): 30 SGD steps on one
 * synthetic batch (each class a bright row band), then a checkpoint.
 * Prints the loss before and after; exits 1 unless it went down.
 */
#include "classifier_train.h"

#include <stdint.h>
#include <stdio.h>

#define B CLASSIFIER_TRAIN_BATCH

static float image[B][1][28][28];
static int64_t label[B];

int main(void)
{
	struct rt_trainer *t = NULL;
	struct rt_train_result r;
	const void *batch[2] = { image, label };
	float first = 0, last = 0;
	int st;
	for (int i = 0; i < B; i++) {
		label[i] = i % 10;
		for (int x = 0; x < 28; x++)
			image[i][0][2 + 2 * (i % 10)][x] = 1.0f;
	}
	st = classifier_train_create(&t, NULL, CLASSIFIER_INIT_FILE);
	for (int s = 0; st == RT_TRAIN_OK && s < 30; s++) {
		st = rt_train_step(t, batch, &r);
		if (s == 0)
			first = r.loss;
		last = r.loss;
	}
	if (st == RT_TRAIN_OK)
		st = rt_train_save(t, "classifier.ckpt");
	if (st != RT_TRAIN_OK) {
		fprintf(stderr, "train: %s\n", rt_train_error(t));
		rt_train_destroy(t);
		return 1;
	}
	rt_train_destroy(t);
	printf("loss %.6f -> %.6f after 30 steps%s\n", first, last,
	       last < first ? ": training works" : "");
	return last < first ? 0 : 1;
}
