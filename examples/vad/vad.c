/*
 * vad.c - streaming a recurrent model compiled by onnxc: one instance,
 * called once per chunk of audio, its state fed back without a copy.
 *
 *   examples/vad/make_vad.py DIR       (the model, audio and torch's outputs)
 *   onnxc compile DIR/vad.onnx -o OUT --name vad
 *   cc -O2 -std=c11 vad.c -IOUT -Iruntime OUT/libvad.a build/runtime/libonnxc_rt.a \
 *      -lopenblas -lpthread -lm -o OUT/vad
 *   OUT/vad DIR OUT/vad.weights [TOLERANCE [REFERENCE]]
 *
 * The model (a Silero-VAD-like network) takes a chunk of 512 samples, the
 * state its previous call returned and the sample rate, which an If tests
 * at run time to pick one of two networks. Its state output is the next
 * call's state input: two state buffers take turns, call k reading one and
 * writing the other, and the pointers swap. Nothing is copied and the
 * instance is created once. (One buffer for both would not do: outputs are
 * written while inputs may still be read; docs/api.md.)
 *
 * It streams the audio at 16 kHz and again at 8 kHz, each from a zero
 * state, and compares every probability and the final state with torch's
 * (make_vad.py wrote them; its weights are random, so the probabilities
 * mean nothing but must match). Exit 0 when they agree to TOLERANCE (1e-4; a
 * model compiled with --precision mixed needs more). REFERENCE names whose
 * outputs DIR holds in the report ("torch"; vad_ort.js writes ONNX
 * Runtime's in the same layout).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include "vad.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK  VAD_INPUT0_ELEMS
#define STATE  VAD_INPUT1_ELEMS
#define CHUNKS 24

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* n floats from DIR/name; exits on failure. */
static void read_floats(const char *dir, const char *name, float *buf, size_t n)
{
	char path[4096];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!(f = fopen(path, "rb")) || fread(buf, sizeof *buf, n, f) != n) {
		fprintf(stderr, "vad: cannot read %zu floats from %s\n", n, path);
		exit(1);
	}
	fclose(f);
}

/* Streams the audio at rate sr from a zero state; the largest difference
 * from torch's probabilities and final state. */
static double stream(struct vad *model, const float *audio, int64_t sr, const char *dir, double *ms)
{
	static float state[2][STATE], want[CHUNKS + STATE];
	float prob, *in = state[0], *out = state[1], *swap;
	double err = 0, t0;
	char name[64];
	int st;
	snprintf(name, sizeof name, "expected_%lld.f32", (long long)sr);
	read_floats(dir, name, want, CHUNKS + STATE);
	memset(state, 0, sizeof state);
	t0 = now_ms();
	for (int k = 0; k < CHUNKS; k++) {
		const void *inputs[] = { audio + k * CHUNK, in, &sr };
		void *outputs[] = { &prob, out };
		if ((st = vad_run(model, inputs, outputs))) {
			fprintf(stderr, "vad_run: %s\n", vad_strerror(st));
			exit(1);
		}
		err = fmax(err, fabs(prob - want[k]));
		printf(" %.2f", prob);
		swap = in, in = out, out = swap; /* this call's state is the next one's */
	}
	*ms = (now_ms() - t0) / CHUNKS;
	for (int i = 0; i < STATE; i++)
		err = fmax(err, fabs(in[i] - want[CHUNKS + i]));
	return err;
}

int main(int argc, char **argv)
{
	static float audio[CHUNKS * CHUNK];
	struct vad *model;
	int st, bad = 0;
	double tol = argc > 3 ? atof(argv[3]) : 1e-4;
	const char *ref = argc > 4 ? argv[4] : "torch";
	if (argc < 2) {
		fprintf(stderr, "usage: vad DIR [WEIGHTS [TOLERANCE [REFERENCE]]]\n");
		return 2;
	}
	read_floats(argv[1], "audio.f32", audio, CHUNKS * CHUNK);
	if ((st = vad_create(&model, argc > 2 ? argv[2] : NULL))) {
		fprintf(stderr, "vad_create: %s\n", vad_strerror(st));
		return 1;
	}
	for (int64_t sr = 16000; sr >= 8000; sr /= 2) {
		double ms, err;
		printf("%5lld Hz, speech probability per chunk:", (long long)sr);
		err = stream(model, audio, sr, argv[1], &ms);
		printf("\n  max |onnxc - %s| %.2g, %.3f ms a chunk\n", ref, err, ms);
		bad |= !(err <= tol);
	}
	vad_destroy(model);
	return bad;
}
