/*
 * test_rt_train.c - the training runtime (runtime/rt_train*.c) on a
 * hand-written step model (tests/train/fake_model.h: softmax regression).
 *
 * - SGD, momentum and AdamW trajectories against torch.optim on the same
 *   data order (tests/train/torch_ref.py), 1e-5 relative; loss scaling with
 *   a power-of-two scale gives the unscaled trajectory bit for bit
 * - the loss-scale state machine: skip and back off on inf, grow after the
 *   interval; non-finite gradients with scaling off are an error, and so is
 *   a back-off below 2^-24 (NaN data), the trainer left valid to resume
 * - checkpoints: a run stopped (at several points, with loss scaling and
 *   its growth) and resumed gives the losses, weights and counters of an
 *   uninterrupted one bit for bit, and every corruption (truncation at
 *   several points, a flipped byte, wrong magic, a foreign model, other
 *   shapes) is refused with its message, the trainer left as it was
 * - the .npy reader on valid and hostile files, data sets, name mapping
 * - class labels out of range refused (file, sample, value), ignore_index
 * - the shuffle: a permutation, deterministic per seed
 * - export: decoded and checked by Python's onnx (tests/train/check_export.py)
 * - rt_train_main in process: usage errors, a run with a log, resume
 * - data parallelism's bookkeeping (tests/train/check.py --ranks runs the
 *   real thing under mpirun): epochs in global batches, a checkpoint of
 *   one rank count resumed by another at the same sample (or refused where
 *   that sample is not at a global batch's start), communicator errors
 * - the threads follow the process's CPU affinity (mpirun binds each of two
 *   ranks to a core: two threads on it halved their throughput)
 *
 * Python parts are skipped (with a note) when python3, torch or onnx are
 * missing. Scratch files go to a fresh folder under $TMPDIR.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include "../train/fake_model.h"
#include "onnxc_rt.h"
#include "rt_train_internal.h"
#include "test.h"

#include <sched.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSAMP 20

static char tmp[256];

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static const char *path_in(const char *name)
{
	static char buf[8][512];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
	return buf[k];
}

static const char *script_dir(void)
{
	static char dir[1024];
	snprintf(dir, sizeof dir, "%s", __FILE__);
	char *s = strstr(dir, "unit/test_rt_train.c");
	if (s)
		strcpy(s, "train");
	else
		snprintf(dir, sizeof dir, "tests/train");
	return dir;
}

static const char *python(void)
{
	const char *p = getenv("ONNXC_PYTHON");
	return p && *p ? p : "/usr/bin/python3";
}

/* Runs a shell command; returns its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* Writes a .npy (format version 1, 2 or 3) with a raw header dict. */
static void write_npy_raw(const char *path, int version, const char *dict, const void *data,
                          size_t bytes)
{
	char header[512];
	size_t pre = version == 1 ? 10 : 12;
	size_t n = (size_t)snprintf(header, sizeof header, "%s", dict);
	while ((pre + n + 1) % 64)
		header[n++] = ' ';
	header[n++] = '\n';
	FILE *f = fopen(path, "wb");
	unsigned char p[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)version, 0 };
	if (version == 1) {
		p[8] = (unsigned char)n;
		p[9] = (unsigned char)(n >> 8);
	} else {
		rt_train_put_u32(p + 8, (uint32_t)n);
	}
	fwrite(p, 1, pre, f);
	fwrite(header, 1, n, f);
	if (bytes)
		fwrite(data, 1, bytes, f);
	fclose(f);
}

static void write_npy(const char *path, const char *descr, int rank, const int64_t *dims,
                      const void *data, size_t itemsize)
{
	char dict[256], shape[128] = "";
	size_t k = 0, elems = 1;
	for (int i = 0; i < rank; i++) {
		k += (size_t)snprintf(shape + k, sizeof shape - k, "%lld,", (long long)dims[i]);
		elems *= (size_t)dims[i];
	}
	snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
	         descr, shape);
	write_npy_raw(path, 1, dict, data, elems * itemsize);
}

static uint64_t lcg;
static float frand(void)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(lcg >> 11) / 9007199254740992.0 * 2 - 1);
}

static float x_all[NSAMP * FAKE_D];
static int64_t y_all[NSAMP];
static float w0[FAKE_D * FAKE_C], b0[FAKE_C];

/* The data set (x linearly separable-ish) into DIR, the initial weights. */
static void make_data(const char *dir)
{
	lcg = 42;
	for (int n = 0; n < NSAMP; n++) {
		double s[FAKE_C] = { 0 };
		for (int d = 0; d < FAKE_D; d++) {
			x_all[n * FAKE_D + d] = frand();
			for (int c = 0; c < FAKE_C; c++)
				s[c] += x_all[n * FAKE_D + d] * ((d + c) % 3 - 1);
		}
		int best = 0;
		for (int c = 1; c < FAKE_C; c++)
			best = s[c] > s[best] ? c : best;
		y_all[n] = (frand() > 0.8f) ? (best + 1) % FAKE_C : best;
	}
	for (int i = 0; i < FAKE_D * FAKE_C; i++)
		w0[i] = 0.3f * frand();
	for (int i = 0; i < FAKE_C; i++)
		b0[i] = 0.1f * frand();
	mkdir(dir, 0755);
	char p[512];
	int64_t xd[2] = { NSAMP, FAKE_D }, yd[1] = { NSAMP };
	snprintf(p, sizeof p, "%s/input_x_0.npy", dir);
	write_npy(p, "<f4", 2, xd, x_all, 4);
	snprintf(p, sizeof p, "%s/label.npy", dir);
	write_npy(p, "<i8", 1, yd, y_all, 8);
}

static struct rt_train_config config(int kind)
{
	struct rt_train_config c;
	rt_train_config_default(&c);
	c.optimizer = kind;
	c.lr = kind == RT_TRAIN_SGD ? 0.1 : kind == RT_TRAIN_MOMENTUM ? 0.05 : 0.01;
	c.weight_decay = 0.01;
	c.seed = 7;
	return c;
}

static struct rt_trainer *trainer(const struct rt_train_config *c, const char *weights)
{
	struct rt_trainer *t;
	int rc = rt_train_create(&t, &fake_train_model, c, weights, weights);
	CHECK_EQ(rc, RT_TRAIN_OK);
	if (rc) {
		fprintf(stderr, "%s\n", rt_train_error(t));
		rt_train_destroy(t);
		return NULL;
	}
	memcpy(rt_train_param(t, 0), w0, sizeof w0);
	memcpy(rt_train_param(t, 1), b0, sizeof b0);
	return t;
}

static int close_rel(double a, double b, double rtol)
{
	return fabs(a - b) <= rtol * fabs(b) + 1e-7;
}

/* Loads a float32 or float64 .npy into doubles. */
static int64_t load_doubles(const char *path, double *out, int64_t max)
{
	struct rt_train_npy a;
	char err[512];
	if (rt_train_npy_read(path, &a, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	int64_t n = a.elems < max ? a.elems : max;
	for (int64_t i = 0; i < n; i++)
		out[i] = a.dtype == 11 ? ((double *)a.data)[i] : ((float *)a.data)[i];
	free(a.data);
	return n;
}

/* ------------------------------------------------------------------------ */
/* Optimizers against torch.optim                                           */
/* ------------------------------------------------------------------------ */

#define STEPS 30

static void test_optimizers_vs_torch(void)
{
	char data[512];
	snprintf(data, sizeof data, "%s", path_in("data"));
	make_data(data);
	/* the order the trainer draws: one RNG stream, a shuffle per epoch */
	int64_t order[STEPS][FAKE_B], perm[NSAMP];
	uint64_t s[4];
	rt_train_rng_seed(s, 7);
	for (int step = 0; step < STEPS; step++) {
		int pos = step % (NSAMP / FAKE_B);
		if (pos == 0)
			rt_train_shuffle(s, perm, NSAMP);
		memcpy(order[step], perm + pos * FAKE_B, sizeof order[step]);
	}
	int64_t od[2] = { STEPS, FAKE_B }, wd[2] = { FAKE_D, FAKE_C }, bd[1] = { FAKE_C };
	int64_t xd[2] = { NSAMP, FAKE_D }, yd[1] = { NSAMP };
	write_npy(path_in("order.npy"), "<i8", 2, od, order, 8);
	write_npy(path_in("W0.npy"), "<f4", 2, wd, w0, 4);
	write_npy(path_in("b0.npy"), "<f4", 1, bd, b0, 4);
	write_npy(path_in("x.npy"), "<f4", 2, xd, x_all, 4);
	write_npy(path_in("label.npy"), "<i8", 1, yd, y_all, 8);

	for (int kind = RT_TRAIN_SGD; kind <= RT_TRAIN_ADAMW; kind++) {
		struct rt_train_config c = config(kind);
		struct rt_trainer *t = trainer(&c, NULL), *ts;
		c.loss_scaling = 1; /* 2^16: exact, so the same trajectory bit for bit */
		ts = trainer(&c, NULL);
		struct rt_train_data *d;
		if (!t || !ts || rt_train_data_open(t, data, &d)) {
			CHECK(!"trainer or data");
			rt_train_destroy(t);
			rt_train_destroy(ts);
			return;
		}
		double losses[STEPS];
		for (int step = 0; step < STEPS; step++) {
			struct rt_train_result r, rs;
			CHECK_EQ(rt_train_step_data(t, d, &r), RT_TRAIN_OK);
			CHECK_EQ(rt_train_step_data(ts, d, &rs), RT_TRAIN_OK);
			CHECK(r.loss == rs.loss && !rs.skipped && rs.loss_scale == 65536);
			losses[step] = r.loss;
		}
		CHECK(!memcmp(rt_train_param(t, 0), rt_train_param(ts, 0), sizeof w0));
		struct rt_train_progress p;
		rt_train_get_progress(t, &p);
		CHECK_EQ(p.step, STEPS);
		CHECK_EQ(p.epoch, STEPS / 2 - 1);
		CHECK_EQ(p.epoch_pos, 2);
		/* the running mean: the state is taken every step */
		CHECK(rt_train_state(t, 0)[0] != 0);

		int prc = run("%s %s/torch_ref.py %s %s %.17g %.17g %.17g %.17g %.17g %.17g",
		              python(), script_dir(), tmp, rt_train_optimizer_name(kind), c.lr,
		              c.momentum, c.weight_decay, c.beta1, c.beta2, c.eps);
		if (prc == 77) {
			fprintf(stderr, "note: torch missing, optimizer reference skipped\n");
		} else {
			CHECK_EQ(prc, 0);
			double ref[STEPS], rw[FAKE_D * FAKE_C], rb[FAKE_C];
			CHECK_EQ(load_doubles(path_in("ref_losses.npy"), ref, STEPS), STEPS);
			CHECK_EQ(load_doubles(path_in("ref_W.npy"), rw, FAKE_D * FAKE_C),
			         FAKE_D * FAKE_C);
			CHECK_EQ(load_doubles(path_in("ref_b.npy"), rb, FAKE_C), FAKE_C);
			int bad = 0;
			for (int i = 0; i < STEPS; i++)
				if (!close_rel(losses[i], ref[i], 1e-5) && bad++ < 3)
					fprintf(stderr, "%s step %d: loss %.9g, torch %.9g\n",
					        rt_train_optimizer_name(kind), i + 1, losses[i],
					        ref[i]);
			for (int i = 0; i < FAKE_D * FAKE_C; i++)
				if (!close_rel(rt_train_param(t, 0)[i], rw[i], 1e-5) && bad++ < 6)
					fprintf(stderr, "%s W[%d]: %.9g, torch %.9g\n",
					        rt_train_optimizer_name(kind), i,
					        rt_train_param(t, 0)[i], rw[i]);
			for (int i = 0; i < FAKE_C; i++)
				if (!close_rel(rt_train_param(t, 1)[i], rb[i], 1e-5))
					bad++;
			CHECK_EQ(bad, 0);
			double worst = 0;
			for (int i = 0; i < STEPS; i++)
				worst = fmax(worst, fabs(losses[i] - ref[i]) / fabs(ref[i]));
			for (int i = 0; i < FAKE_D * FAKE_C; i++)
				worst = fmax(worst, fabs(rt_train_param(t, 0)[i] - rw[i]) /
				                            (fabs(rw[i]) + 1e-7));
			printf("%s vs torch.optim: %d steps, largest relative difference %.2g\n",
			       rt_train_optimizer_name(kind), STEPS, worst);
		}
		rt_train_data_close(d);
		rt_train_destroy(t);
		rt_train_destroy(ts);
	}
}

/* ------------------------------------------------------------------------ */
/* Loss scaling                                                             */
/* ------------------------------------------------------------------------ */

static void test_loss_scale(void)
{
	struct rt_train_config c = config(RT_TRAIN_SGD);
	c.loss_scaling = 1;
	c.init_scale = 1024;
	c.growth_interval = 3;
	struct rt_trainer *t = trainer(&c, "inject");
	if (!t)
		return;
	/* inf injected on calls 2, 3 and 7 */
	static const double scales[8] = { 1024, 1024, 512, 256, 256, 256, 512, 256 };
	static const int skipped[8] = { 0, 1, 1, 0, 0, 0, 1, 0 };
	const void *batch[2] = { x_all, y_all };
	float before[FAKE_D * FAKE_C];
	for (int i = 0; i < 8; i++) {
		struct rt_train_result r;
		memcpy(before, rt_train_param(t, 0), sizeof before);
		CHECK_EQ(rt_train_step(t, batch, &r), RT_TRAIN_OK);
		CHECK(r.loss_scale == scales[i]);
		CHECK_EQ(r.skipped, skipped[i]);
		CHECK_EQ(!memcmp(before, rt_train_param(t, 0), sizeof before), skipped[i]);
	}
	struct rt_train_progress p;
	rt_train_get_progress(t, &p);
	CHECK_EQ(p.step, 8);
	CHECK_EQ(p.opt_step, 5);
	CHECK_EQ(p.skipped, 3);
	CHECK(p.loss_scale == 256);
	CHECK_EQ(p.good_steps, 1);
	rt_train_destroy(t);

	/* off: the scale stays 1 and an inf is an error naming the tensor */
	c.loss_scaling = 0;
	t = trainer(&c, "inject");
	if (!t)
		return;
	struct rt_train_result r;
	CHECK_EQ(rt_train_step(t, batch, &r), RT_TRAIN_OK);
	CHECK(r.loss_scale == 1);
	memcpy(before, rt_train_param(t, 0), sizeof before);
	CHECK_EQ(rt_train_step(t, batch, &r), RT_TRAIN_ERR_NONFINITE);
	CHECK_STR(rt_train_error(t), "gradient of 'W' is not finite");
	CHECK(!memcmp(before, rt_train_param(t, 0), sizeof before));
	rt_train_destroy(t);
}

/* NaN data with loss scaling: every step skips and backs off; where the
 * next back-off would take the scale below 2^-24 the step is an error
 * instead (it used to halve on to 0 after ~1100 steps, exit 0, and leave a
 * checkpoint --resume refused as "inconsistent counters"). The trainer
 * stays valid: saved at the stop or on the way there, it resumes exactly. */
static void test_loss_scale_floor(void)
{
	struct rt_train_config c = config(RT_TRAIN_MOMENTUM);
	c.loss_scaling = 1; /* 2^16: 40 back-offs to 2^-24 */
	float x_nan[FAKE_B * FAKE_D];
	for (int i = 0; i < FAKE_B * FAKE_D; i++)
		x_nan[i] = NAN;
	const void *bad[2] = { x_nan, y_all }, *good[2] = { x_all, y_all };
	const char *ck = path_in("floor.ckpt"), *mid = path_in("floor_mid.ckpt");
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	struct rt_train_result r;
	int rc = RT_TRAIN_OK, steps = 0;
	while (rc == RT_TRAIN_OK && steps < 100) {
		rc = rt_train_step(t, bad, &r);
		steps++;
		CHECK(r.skipped);
		if (steps == 10)
			CHECK_EQ(rt_train_save(t, mid), RT_TRAIN_OK);
	}
	CHECK_EQ(rc, RT_TRAIN_ERR_NONFINITE);
	CHECK_EQ(steps, 41);
	CHECK_STR(rt_train_error(t),
	          "step 41: the gradient of 'W' is not finite at any loss scale");
	CHECK_STR(rt_train_error(t), "below its floor 2^-24; 41 of 41 steps skipped");
	struct rt_train_progress stop;
	rt_train_get_progress(t, &stop);
	CHECK_EQ(stop.step, 41);
	CHECK_EQ(stop.skipped, 41);
	CHECK_EQ(stop.opt_step, 0);
	CHECK(stop.loss_scale == RT_TRAIN_MIN_LOSS_SCALE);
	CHECK_EQ(rt_train_save(t, ck), RT_TRAIN_OK);
	rt_train_destroy(t);

	/* the checkpoint at the stop resumes: the same state, the same stop */
	struct rt_train_config other = config(RT_TRAIN_SGD);
	struct rt_train_progress p;
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &other, NULL, NULL), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_OK);
	rt_train_get_progress(t, &p);
	CHECK(!memcmp(&p, &stop, sizeof p));
	CHECK_EQ(rt_train_step(t, bad, &r), RT_TRAIN_ERR_NONFINITE);
	CHECK(r.loss_scale == RT_TRAIN_MIN_LOSS_SCALE);
	/* and with data that is finite again, training goes on from the floor */
	CHECK_EQ(rt_train_step(t, good, &r), RT_TRAIN_OK);
	CHECK(!r.skipped && isfinite(r.loss) && r.loss_scale == RT_TRAIN_MIN_LOSS_SCALE);
	rt_train_destroy(t);

	/* the one saved on the way resumes to the same stop */
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &other, NULL, NULL), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, mid), RT_TRAIN_OK);
	for (steps = 10, rc = RT_TRAIN_OK; rc == RT_TRAIN_OK && steps < 100; steps++)
		rc = rt_train_step(t, bad, &r);
	CHECK_EQ(rc, RT_TRAIN_ERR_NONFINITE);
	rt_train_get_progress(t, &p);
	CHECK(!memcmp(&p, &stop, sizeof p));
	rt_train_destroy(t);

	/* the floor bounds the configuration too; a back-off of 1 never falls */
	c.init_scale = RT_TRAIN_MIN_LOSS_SCALE / 2;
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &c, NULL, NULL), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "[2^-24, 3e38]");
	rt_train_destroy(t);
	c.init_scale = 65536;
	c.backoff = 1;
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &c, NULL, NULL), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "backoff factor must be in (0, 1)");
	rt_train_destroy(t);

	/* a checkpoint whose scale or counters no trainer can reach is refused,
	 * saying which */
	struct rt_train_ckpt_tensor ps[2] = { { "W", 2, fake_w_dims, FAKE_D * FAKE_C, w0 },
		                              { "b", 1, fake_b_dims, FAKE_C, b0 } };
	float rm[FAKE_D] = { 0 }, zero[FAKE_D * FAKE_C] = { 0 };
	const float *mom[2] = { zero, zero };
	struct rt_train_ckpt_tensor ss[1] = { { "running_mean", 1, fake_rm_dims, FAKE_D, rm } };
	struct rt_train_ckpt k = { .model_id = fake_train_model.model_id,
		                   .num_params = 2,
		                   .params = ps,
		                   .num_state = 1,
		                   .state = ss,
		                   .mom1 = mom };
	char err[512];
	k.meta.cfg = config(RT_TRAIN_MOMENTUM);
	k.meta.batch = FAKE_B;
	rt_train_rng_seed(k.meta.rng, 1);
	k.meta.step = 5;
	k.meta.opt_step = 4;
	k.meta.skipped = 1;
	k.meta.loss_scale = 0;
	CHECK_EQ(rt_train_ckpt_write(ck, &k, err, sizeof err), RT_TRAIN_OK);
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &other, NULL, NULL), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_ERR_CHECKPOINT);
	CHECK_STR(rt_train_error(t), "the loss scale 0 is outside [2^-24, 3e38]");
	k.meta.loss_scale = 1;
	k.meta.skipped = 2;
	CHECK_EQ(rt_train_ckpt_write(ck, &k, err, sizeof err), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_ERR_CHECKPOINT);
	CHECK_STR(rt_train_error(t), "inconsistent counters: step 5, 4 updates, 2 skipped");
	k.meta.skipped = 1;
	CHECK_EQ(rt_train_ckpt_write(ck, &k, err, sizeof err), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_OK);
	rt_train_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Configuration and creation errors                                        */
/* ------------------------------------------------------------------------ */

static void test_create_errors(void)
{
	struct rt_train_config c = config(RT_TRAIN_ADAMW);
	struct rt_trainer *t;
	c.beta1 = 1.5;
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &c, NULL, NULL), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "betas");
	rt_train_destroy(t);
	c = config(RT_TRAIN_SGD);
	CHECK_EQ(rt_train_create(&t, &fake_train_model, &c, "fail", NULL), RT_TRAIN_ERR_MODEL);
	CHECK_STR(rt_train_error(t), "cannot open the weights");
	rt_train_destroy(t);
	struct rt_train_model m = fake_train_model;
	m.eval_create = NULL;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_OK);
	float l;
	const void *batch[2] = { x_all, y_all };
	CHECK_EQ(rt_train_eval_step(t, batch, &l, NULL), RT_TRAIN_ERR_NO_EVAL);
	/* switching optimizers after an update is refused */
	CHECK_EQ(rt_train_step(t, batch, NULL), RT_TRAIN_OK);
	c.optimizer = RT_TRAIN_ADAMW;
	CHECK_EQ(rt_train_set_config(t, &c), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "cannot switch the optimizer");
	rt_train_destroy(t);
	CHECK(!strcmp(rt_train_strerror(RT_TRAIN_ERR_FOREIGN), "a checkpoint of another model"));
	CHECK_EQ(rt_train_optimizer_parse("adamw"), RT_TRAIN_ADAMW);
	CHECK_EQ(rt_train_optimizer_parse("adam"), 0);
}

/* ------------------------------------------------------------------------ */
/* Checkpoints                                                              */
/* ------------------------------------------------------------------------ */

static void run_steps(struct rt_trainer *t, struct rt_train_data *d, int n, float *losses)
{
	for (int i = 0; i < n; i++) {
		struct rt_train_result r;
		CHECK_EQ(rt_train_step_data(t, d, &r), RT_TRAIN_OK);
		losses[i] = r.loss;
	}
}

/* An exact resume without injection: every loss and weight bit for bit. */
static void test_resume_bitwise(void)
{
	const char *data = path_in("data");
	make_data(data);
	const char *ck = path_in("bitwise.ckpt");
	for (int kind = RT_TRAIN_SGD; kind <= RT_TRAIN_ADAMW; kind++) {
		struct rt_train_config c = config(kind);
		c.loss_scaling = kind == RT_TRAIN_ADAMW;
		c.growth_interval = 2;
		float full[11], part[11];
		struct rt_train_data *d;
		struct rt_trainer *t = trainer(&c, NULL);
		if (!t || rt_train_data_open(t, data, &d)) {
			CHECK(!"trainer");
			rt_train_destroy(t);
			return;
		}
		run_steps(t, d, 11, full);
		float wfull[FAKE_D * FAKE_C], rmfull[FAKE_D];
		memcpy(wfull, rt_train_param(t, 0), sizeof wfull);
		memcpy(rmfull, rt_train_state(t, 0), sizeof rmfull);
		struct rt_train_progress pf;
		rt_train_get_progress(t, &pf);
		rt_train_destroy(t);
		for (int stop = 1; stop < 11; stop += 3) {
			t = trainer(&c, NULL);
			run_steps(t, d, stop, part);
			CHECK_EQ(rt_train_save(t, ck), RT_TRAIN_OK);
			rt_train_destroy(t);
			struct rt_train_config other = config(RT_TRAIN_SGD);
			CHECK_EQ(rt_train_create(&t, &fake_train_model, &other, NULL, NULL),
			         RT_TRAIN_OK);
			CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_OK);
			run_steps(t, d, 11 - stop, part + stop);
			CHECK(!memcmp(full, part, sizeof full));
			CHECK(!memcmp(wfull, rt_train_param(t, 0), sizeof wfull));
			CHECK(!memcmp(rmfull, rt_train_state(t, 0), sizeof rmfull));
			struct rt_train_progress p;
			rt_train_get_progress(t, &p);
			CHECK(!memcmp(&p, &pf, sizeof p));
			rt_train_destroy(t);
		}
		rt_train_data_close(d);
	}
}

static unsigned char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(*n + 1);
	if (b && fread(b, 1, *n, f) != *n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static void write_all(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(b, 1, n, f);
	fclose(f);
}

/* Loading path must fail with status and a message holding want; the
 * trainer's weights stay as they were. */
static void expect_load_fails(struct rt_trainer *t, const char *path, int status, const char *want)
{
	float w[FAKE_D * FAKE_C];
	memcpy(w, rt_train_param(t, 0), sizeof w);
	CHECK_EQ(rt_train_load(t, path), status);
	CHECK_STR(rt_train_error(t), want);
	CHECK_STR(rt_train_error(t), path);
	CHECK(!memcmp(w, rt_train_param(t, 0), sizeof w));
}

static void test_checkpoint_corruption(void)
{
	struct rt_train_config c = config(RT_TRAIN_ADAMW);
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	const void *batch[2] = { x_all, y_all };
	for (int i = 0; i < 3; i++)
		CHECK_EQ(rt_train_step(t, batch, NULL), RT_TRAIN_OK);
	const char *good = path_in("good.ckpt"), *bad = path_in("bad.ckpt");
	CHECK_EQ(rt_train_save(t, good), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, good), RT_TRAIN_OK);
	size_t n;
	unsigned char *b = read_all(good, &n);
	if (!b) {
		CHECK(!"read the checkpoint");
		rt_train_destroy(t);
		return;
	}
	/* no temporary file left behind */
	CHECK_EQ(run("ls %s | grep -q tmp", tmp), 1);

	size_t cuts[] = { 0, 7, 63, 64, 100, n / 2, n - 9, n - 1 };
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		write_all(bad, b, cuts[i]);
		expect_load_fails(t, bad, RT_TRAIN_ERR_CHECKPOINT, cuts[i] < 72 ? "" : "truncated");
	}
	for (size_t at = 70; at < n; at += n / 7) {
		b[at] ^= 0x10;
		write_all(bad, b, n);
		expect_load_fails(t, bad, RT_TRAIN_ERR_CHECKPOINT, "checksum mismatch");
		b[at] ^= 0x10;
	}
	b[0] = 'X';
	write_all(bad, b, n);
	expect_load_fails(t, bad, RT_TRAIN_ERR_CHECKPOINT, "wrong magic");
	b[0] = 'O';
	write_all(bad, b, n);
	CHECK_EQ(rt_train_load(t, bad), RT_TRAIN_OK);
	/* hostile files with a valid checksum: mutated sizes, counts, names and
	 * counters are refused or loaded, never read out of bounds (ASan) */
	unsigned char *m = malloc(n);
	lcg = 9;
	int refused = 0;
	for (int iter = 0; m && iter < 3000; iter++) {
		memcpy(m, b, n);
		for (int k = 0; k < 1 + iter % 3; k++) {
			size_t at = 32 + (size_t)((frand() + 1) / 2 * (double)(n - 40));
			m[at < n - 8 ? at : n - 9] ^= (unsigned char)(1u << (iter % 8));
		}
		rt_train_put_u64(m + n - 8, rt_train_fnv1a(RT_TRAIN_FNV_OFFSET, m, n - 8));
		write_all(bad, m, n);
		int rc = rt_train_load(t, bad);
		CHECK(rc == RT_TRAIN_OK || rc == RT_TRAIN_ERR_CHECKPOINT ||
		      rc == RT_TRAIN_ERR_FOREIGN);
		refused += rc != RT_TRAIN_OK;
	}
	CHECK(refused > 100);
	free(m);
	free(b);
	expect_load_fails(t, path_in("missing.ckpt"), RT_TRAIN_ERR_IO, "cannot open");

	/* a checkpoint of another model, and of another shape with this id */
	struct rt_train_ckpt ck = { 0 };
	int64_t wd[2] = { FAKE_D, FAKE_C + 1 };
	float w[FAKE_D * (FAKE_C + 1)] = { 0 }, rm[FAKE_D] = { 0 };
	struct rt_train_ckpt_tensor ps[2] = { { "W", 2, wd, FAKE_D * (FAKE_C + 1), w },
		                              { "b", 1, wd + 1, FAKE_C + 1, w } };
	struct rt_train_ckpt_tensor ss[1] = { { "running_mean", 1, wd, FAKE_D, rm } };
	ck.model_id = 99;
	ck.num_params = 2;
	ck.params = ps;
	ck.num_state = 1;
	ck.state = ss;
	char err[512];
	CHECK_EQ(rt_train_ckpt_write(bad, &ck, err, sizeof err), RT_TRAIN_OK);
	expect_load_fails(t, bad, RT_TRAIN_ERR_FOREIGN, "another model");
	ck.model_id = fake_train_model.model_id;
	CHECK_EQ(rt_train_ckpt_write(bad, &ck, err, sizeof err), RT_TRAIN_OK);
	expect_load_fails(t, bad, RT_TRAIN_ERR_CHECKPOINT,
	                  "'W' (4, 4) in the checkpoint but 'W' (4, 3)");
	/* an initial-weights file is not something to resume */
	ps[0].dims = fake_w_dims;
	ps[0].elems = FAKE_D * FAKE_C;
	ps[1].dims = fake_b_dims;
	ps[1].elems = FAKE_C;
	CHECK_EQ(rt_train_ckpt_write(bad, &ck, err, sizeof err), RT_TRAIN_OK);
	expect_load_fails(t, bad, RT_TRAIN_ERR_CHECKPOINT, "initial-weights file");
	CHECK_EQ(rt_train_load_weights(t, bad), RT_TRAIN_OK);
	CHECK(rt_train_param(t, 0)[0] == 0);
	/* writing into a folder that does not exist */
	CHECK_EQ(rt_train_save(t, path_in("no/such/dir/ckpt")), RT_TRAIN_ERR_IO);
	CHECK_STR(rt_train_error(t), "cannot create");
	rt_train_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* .npy and data sets                                                       */
/* ------------------------------------------------------------------------ */

static int npy_status(const char *path, char *err, size_t n)
{
	struct rt_train_npy a;
	int rc = rt_train_npy_read(path, &a, err, n);
	free(a.data);
	return rc;
}

static void test_npy(void)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	const char *p = path_in("a.npy");
	char err[512];
	struct rt_train_npy a;
	for (int v = 1; v <= 3; v++) {
		write_npy_raw(p, v, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
		              x, sizeof x);
		CHECK_EQ(rt_train_npy_read(p, &a, err, sizeof err), RT_TRAIN_OK);
		CHECK_EQ(a.rank, 2);
		CHECK_EQ(a.dims[1], 3);
		CHECK_EQ(a.dtype, 1);
		CHECK(a.data && !memcmp(a.data, x, sizeof x));
		free(a.data);
	}
	/* keys in another order, a scalar, a 1-tuple, double quotes */
	write_npy_raw(p, 1, "{\"shape\": (6,), \"fortran_order\": False, \"descr\": \"<f4\"}", x,
	              sizeof x);
	CHECK_EQ(rt_train_npy_read(p, &a, err, sizeof err), RT_TRAIN_OK);
	free(a.data);
	write_npy_raw(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", x, 4);
	CHECK_EQ(rt_train_npy_read(p, &a, err, sizeof err), RT_TRAIN_OK);
	CHECK_EQ(a.rank, 0);
	CHECK_EQ(a.elems, 1);
	free(a.data);

	static const struct {
		const char *dict;
		size_t bytes;
		const char *want;
	} bad[] = {
		{ "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
		  "fortran_order" },
		{ "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, "big-endian" },
		{ "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48,
		  "dtype '<c8'" },
		{ "{'descr': '<f4', 'fortran_order': False, }", 24, "malformed" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24,
		  "malformed" },
		{ "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24,
		  "malformed" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "needs 24" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, "needs 24" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24, "malformed" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}",
		  24, "too large" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24, "malformed" },
		{ "{'descr': '<f4', 'fortran_order': Nope, 'shape': (2, 3)}", 24, "malformed" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9)}", 4,
		  "malformed" },
		{ "", 0, "malformed" },
	};
	float big[12] = { 0 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_npy_raw(p, 1, bad[i].dict, big, bad[i].bytes);
		CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
		CHECK_STR(err, bad[i].want);
		CHECK_STR(err, p);
	}
	/* broken prefixes */
	write_all(p, "\x93NUMPX\x01\x00\x10\x00", 10);
	CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
	CHECK_STR(err, "not a .npy file");
	write_all(p, "\x93NUMPY\x04\x00\x10\x00", 10);
	CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
	CHECK_STR(err, "version 4");
	write_all(p, "\x93NUMPY\x01\x00\xff\x7f{'descr'", 18);
	CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
	CHECK_STR(err, "truncated");
	write_all(p, "\x93NUMPY\x02\x00\x10", 9);
	CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
	write_all(p, "\x93NU", 3);
	CHECK_EQ(npy_status(p, err, sizeof err), RT_TRAIN_ERR_DATA);
	CHECK_EQ(npy_status(path_in("nothere.npy"), err, sizeof err), RT_TRAIN_ERR_DATA);
	CHECK_STR(err, "cannot open");
	/* every prefix of a valid file is refused, never read past */
	write_npy_raw(p, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", x,
	              sizeof x);
	size_t n;
	unsigned char *whole = read_all(p, &n);
	for (size_t cut = 0; whole && cut < n; cut++) {
		write_all(p, whole, cut);
		CHECK(npy_status(p, err, sizeof err) != RT_TRAIN_OK);
	}
	free(whole);
}

static void test_data_sets(void)
{
	char name[64];
	CHECK_EQ(rt_train_data_file_name("input/x:0", name, sizeof name), 13);
	CHECK(!strcmp(name, "input_x_0.npy"));
	rt_train_data_file_name(".hidden", name, sizeof name);
	CHECK(!strcmp(name, "_hidden.npy"));
	rt_train_data_file_name("a.b-c_d", name, sizeof name);
	CHECK(!strcmp(name, "a.b-c_d.npy"));

	struct rt_train_config c = config(RT_TRAIN_SGD);
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	const char *dir = path_in("conv");
	make_data(dir);
	/* float64 features and int32 labels are converted */
	double xd[NSAMP * FAKE_D];
	int32_t yd[NSAMP];
	for (int i = 0; i < NSAMP * FAKE_D; i++)
		xd[i] = x_all[i];
	for (int i = 0; i < NSAMP; i++)
		yd[i] = (int32_t)y_all[i];
	int64_t xs[2] = { NSAMP, FAKE_D }, ys[1] = { NSAMP };
	char p[512];
	snprintf(p, sizeof p, "%s/input_x_0.npy", dir);
	write_npy(p, "<f8", 2, xs, xd, 8);
	snprintf(p, sizeof p, "%s/label.npy", dir);
	write_npy(p, "<i4", 1, ys, yd, 4);
	struct rt_train_data *d;
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_OK);
	CHECK_EQ(rt_train_data_samples(d), NSAMP);
	CHECK_EQ(rt_train_data_batches(t, d), NSAMP / FAKE_B);
	double mean = 0;
	CHECK_EQ(rt_train_eval_data(t, d, &mean), RT_TRAIN_OK);
	CHECK(mean > 0.1 && mean < 5);
	rt_train_data_close(d);

	/* wrong sample count, wrong shape, wrong dtype, missing file, too few */
	ys[0] = NSAMP - 1;
	write_npy(p, "<i8", 1, ys, y_all, 8);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "19 samples, but input/x:0 has 20");
	ys[0] = NSAMP;
	write_npy(p, "<f4", 1, ys, x_all, 4);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "dtype float32, the input is int64");
	xs[1] = 2;
	int64_t y2[NSAMP * 2] = { 0 };
	write_npy(p, "<i8", 2, xs, y2, 8);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "needs (N)");
	unlink(p);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "label.npy: cannot open");
	CHECK_STR(rt_train_error(t), "data input 'label'");
	ys[0] = 5;
	write_npy(p, "<i8", 1, ys, y_all, 8);
	snprintf(p, sizeof p, "%s/input_x_0.npy", dir);
	xs[0] = 5;
	xs[1] = FAKE_D;
	write_npy(p, "<f4", 2, xs, x_all, 4);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "fewer than one batch of 8");
	rt_train_destroy(t);
}

/* Class labels outside [0, classes) are refused, naming the file, the
 * sample and the value (PyTorch's cross_entropy raises "Target 7 is out of
 * bounds"); ignore_index, where the model declares one, is let through. */
static void test_labels(void)
{
	struct rt_train_config c = config(RT_TRAIN_SGD);
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	const char *dir = path_in("labels");
	make_data(dir);
	char p[512], want[256];
	snprintf(p, sizeof p, "%s/label.npy", dir);
	int64_t ys[1] = { NSAMP }, y[NSAMP];
	static const struct {
		int64_t value;
		int sample;
	} bad[] = { { 7, 5 }, { -1, 0 }, { (int64_t)1 << 40, 19 }, { 3, 11 } };
	struct rt_train_data *d;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(y, y_all, sizeof y);
		y[bad[i].sample] = bad[i].value;
		write_npy(p, "<i8", 1, ys, y, 8);
		CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
		snprintf(want, sizeof want,
		         "label.npy: sample %d: class label %lld is not in [0, 3) (data input "
		         "'label')",
		         bad[i].sample, (long long)bad[i].value);
		CHECK_STR(rt_train_error(t), want);
	}
	/* int32 files too, after their conversion */
	int32_t y32[NSAMP];
	for (int i = 0; i < NSAMP; i++)
		y32[i] = (int32_t)y_all[i];
	y32[8] = -5;
	write_npy(p, "<i4", 1, ys, y32, 4);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "sample 8: class label -5 is not in [0, 3)");

	/* a batch given directly: nothing runs, nothing changes */
	int64_t yb[FAKE_B];
	memcpy(yb, y_all, sizeof yb);
	yb[2] = 3;
	const void *batch[2] = { x_all, yb };
	float before[FAKE_D * FAKE_C], loss;
	memcpy(before, rt_train_param(t, 0), sizeof before);
	CHECK_EQ(rt_train_step(t, batch, NULL), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t),
	          "step 1: data input 'label' of the batch, sample 2: class label 3 is not in "
	          "[0, 3)");
	CHECK_EQ(rt_train_eval_step(t, batch, &loss, NULL), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t), "eval step: data input 'label' of the batch, sample 2");
	struct rt_train_progress pr;
	rt_train_get_progress(t, &pr);
	CHECK_EQ(pr.step, 0);
	CHECK(!memcmp(before, rt_train_param(t, 0), sizeof before));
	rt_train_destroy(t);

	/* a loss with ignore_index -1: -1 trains (the fake skips it, as PyTorch
	 * does), any other value out of range is still refused */
	struct rt_train_model m = fake_train_model;
	struct rt_train_range r = fake_train_model.ranges[0];
	r.has_ignore = 1;
	r.ignore = -1;
	m.ranges = &r;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_OK);
	memcpy(rt_train_param(t, 0), w0, sizeof w0);
	memcpy(rt_train_param(t, 1), b0, sizeof b0);
	memcpy(y, y_all, sizeof y);
	y[3] = y[9] = -1;
	write_npy(p, "<i8", 1, ys, y, 8);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_OK);
	rt_train_data_close(d);
	yb[2] = -1;
	struct rt_train_result res;
	double expect = fake_forward(x_all, yb, w0, b0, NULL, 1, NULL, NULL);
	CHECK_EQ(rt_train_step(t, batch, &res), RT_TRAIN_OK);
	CHECK(res.loss == (float)expect && isfinite(res.loss));
	y[9] = -2;
	write_npy(p, "<i8", 1, ys, y, 8);
	CHECK_EQ(rt_train_data_open(t, dir, &d), RT_TRAIN_ERR_DATA);
	CHECK_STR(rt_train_error(t),
	          "sample 9: class label -2 is not in [0, 3) nor the ignored -1");
	rt_train_destroy(t);

	/* a range must name an int32 or int64 input and hold a value */
	r = fake_train_model.ranges[0];
	r.data = 0;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "range 0");
	rt_train_destroy(t);
	r = fake_train_model.ranges[0];
	r.hi = r.lo;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_ERR_ARGUMENT);
	rt_train_destroy(t);
}

static void test_shuffle(void)
{
	uint64_t a[4], b[4];
	int64_t p[100], q[100];
	rt_train_rng_seed(a, 5);
	rt_train_rng_seed(b, 5);
	rt_train_shuffle(a, p, 100);
	rt_train_shuffle(b, q, 100);
	CHECK(!memcmp(p, q, sizeof p));
	int seen[100] = { 0 }, moved = 0;
	for (int i = 0; i < 100; i++) {
		if (p[i] >= 0 && p[i] < 100)
			seen[p[i]]++;
		moved += p[i] != i;
	}
	for (int i = 0; i < 100; i++)
		CHECK_EQ(seen[i], 1);
	CHECK(moved > 80);
	rt_train_shuffle(a, q, 100); /* the next epoch: another order */
	CHECK(memcmp(p, q, sizeof p));
	rt_train_rng_seed(b, 6);
	rt_train_shuffle(b, q, 100);
	CHECK(memcmp(p, q, sizeof p));
	/* xoshiro256** reference value: seed state {1, 2, 3, 4} gives 11520 */
	uint64_t s[4] = { 1, 2, 3, 4 };
	CHECK_EQ(rt_train_rng_next(s), 11520);
	CHECK_EQ(rt_train_rng_next(s), 0);
	CHECK_EQ(rt_train_rng_next(s), 1509978240);
	for (int i = 0; i < 1000; i++)
		CHECK(rt_train_rng_below(s, 7) < 7);
}

/* ------------------------------------------------------------------------ */
/* Export                                                                   */
/* ------------------------------------------------------------------------ */

static void test_export(void)
{
	const char *tpl = path_in("template.onnx");
	int rc = run("%s %s/check_export.py template %s", python(), script_dir(), tpl);
	if (rc == 77) {
		fprintf(stderr, "note: onnx missing, export check skipped\n");
		return;
	}
	CHECK_EQ(rc, 0);
	size_t n;
	unsigned char *bytes = read_all(tpl, &n);
	if (!bytes) {
		CHECK(!"template");
		return;
	}
	struct rt_train_model m = fake_train_model;
	struct rt_train_config c = config(RT_TRAIN_ADAMW);
	struct rt_trainer *t;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_OK);
	CHECK_EQ(rt_train_export_onnx(t, path_in("out.onnx")), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "no ONNX template");
	rt_train_destroy(t);
	m.onnx_template = bytes;
	m.onnx_template_bytes = n;
	CHECK_EQ(rt_train_create(&t, &m, &c, NULL, NULL), RT_TRAIN_OK);
	memcpy(rt_train_param(t, 0), w0, sizeof w0);
	/* values whose varints and bytes are not trivial: a large W */
	for (int i = 0; i < FAKE_D * FAKE_C; i++)
		rt_train_param(t, 0)[i] = w0[i] * 1000 + (float)i;
	const void *batch[2] = { x_all, y_all };
	CHECK_EQ(rt_train_step(t, batch, NULL), RT_TRAIN_OK);
	CHECK_EQ(rt_train_export_onnx(t, path_in("out.onnx")), RT_TRAIN_OK);
	int64_t wd[2] = { FAKE_D, FAKE_C }, bd[1] = { FAKE_C }, rd[1] = { FAKE_D },
	        xd[2] = { FAKE_B, FAKE_D };
	write_npy(path_in("W.npy"), "<f4", 2, wd, rt_train_param(t, 0), 4);
	write_npy(path_in("b.npy"), "<f4", 1, bd, rt_train_param(t, 1), 4);
	write_npy(path_in("running_mean.npy"), "<f4", 1, rd, rt_train_state(t, 0), 4);
	write_npy(path_in("x.npy"), "<f4", 2, xd, x_all, 4);
	CHECK_EQ(run("%s %s/check_export.py check %s %s", python(), script_dir(),
	             path_in("out.onnx"), tmp),
	         0);
	rt_train_destroy(t);
	free(bytes);
}

/* ------------------------------------------------------------------------ */
/* rt_train_main                                                            */
/* ------------------------------------------------------------------------ */

static int main_with(const char *args)
{
	char buf[2048], *argv[64];
	int argc = 0;
	snprintf(buf, sizeof buf, "train %s", args);
	for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	fflush(stdout);
	return rt_train_main(&fake_train_model, argc, argv);
}

/* The loss column of a CSV log. */
static int log_losses(const char *path, double *out, int max)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int n = 0;
	if (!f)
		return -1;
	if (!fgets(line, sizeof line, f) ||
	    strcmp(line, "step,epoch,loss,loss_scale,skipped,samples_per_s\n")) {
		fclose(f);
		return -1;
	}
	while (n < max && fgets(line, sizeof line, f)) {
		long long step, epoch;
		if (sscanf(line, "%lld,%lld,%lf", &step, &epoch, &out[n]) != 3 || step != n + 1)
			break;
		n++;
	}
	fclose(f);
	return n;
}

static void test_train_main(void)
{
	const char *data = path_in("data");
	make_data(data);
	const char *init = path_in("fake.init");
	struct rt_train_ckpt ck = { 0 };
	struct rt_train_ckpt_tensor ps[2] = { { "W", 2, fake_w_dims, FAKE_D * FAKE_C, w0 },
		                              { "b", 1, fake_b_dims, FAKE_C, b0 } };
	float rm[FAKE_D] = { 0 };
	struct rt_train_ckpt_tensor ss[1] = { { "running_mean", 1, fake_rm_dims, FAKE_D, rm } };
	ck.model_id = fake_train_model.model_id;
	ck.num_params = 2;
	ck.params = ps;
	ck.num_state = 1;
	ck.state = ss;
	char err[512], args[1024];
	CHECK_EQ(rt_train_ckpt_write(init, &ck, err, sizeof err), RT_TRAIN_OK);

	/* usage errors: 2 */
	CHECK_EQ(main_with("--steps 3"), 2);
	snprintf(args, sizeof args, "--data %s", data);
	CHECK_EQ(main_with(args), 2);
	snprintf(args, sizeof args, "--data %s --steps 3 --epochs 2", data);
	CHECK_EQ(main_with(args), 2);
	snprintf(args, sizeof args, "--data %s --steps 3 --batch 4", data);
	CHECK_EQ(main_with(args), 2);
	snprintf(args, sizeof args, "--data %s --steps 3 --resume", data);
	CHECK_EQ(main_with(args), 2);
	snprintf(args, sizeof args, "--data %s --steps 3 --optimizer adam", data);
	CHECK_EQ(main_with(args), 2);
	snprintf(args, sizeof args, "--data %s --steps x3", data);
	CHECK_EQ(main_with(args), 2);
	CHECK_EQ(main_with("--bogus"), 2);
	CHECK_EQ(main_with("--data"), 2);
	/* errors: 1 */
	snprintf(args, sizeof args, "--data %s --steps 3 --init %s", data, path_in("none.init"));
	CHECK_EQ(main_with(args), 1);
	snprintf(args, sizeof args, "--data %s/nothing --steps 3 --init %s", data, init);
	CHECK_EQ(main_with(args), 1);
	snprintf(args, sizeof args, "--data %s --steps 3 --init %s --checkpoint %s --resume", data,
	         init, path_in("nockpt"));
	CHECK_EQ(main_with(args), 1);
	snprintf(args, sizeof args, "--data %s --steps 3 --init %s --lr -1", data, init);
	CHECK_EQ(main_with(args), 1);

	/* a whole run with a log, then stopped at 5 and resumed to 12 */
	const char *log_full = path_in("full.csv"), *log_part = path_in("part.csv");
	snprintf(args, sizeof args,
	         "--data %s --steps 12 --batch 8 --init %s --log %s --optimizer adamw --lr 0.02 "
	         "--seed 3 --eval-data %s --loss-scale 256 --growth-interval 4",
	         data, init, log_full, data);
	CHECK_EQ(main_with(args), 0);
	snprintf(args, sizeof args,
	         "--data %s --steps 5 --init %s --log %s --optimizer adamw --lr=0.02 "
	         "--seed 3 --checkpoint %s --checkpoint-every 2 --loss-scale 256 "
	         "--growth-interval 4",
	         data, init, log_part, path_in("ck"));
	CHECK_EQ(main_with(args), 0);
	/* the resumed run takes the checkpoint's settings */
	snprintf(args, sizeof args, "--data %s --steps 12 --log %s --checkpoint %s --resume", data,
	         log_part, path_in("ck"));
	CHECK_EQ(main_with(args), 0);
	double full[16], part[16];
	CHECK_EQ(log_losses(log_full, full, 16), 12);
	CHECK_EQ(log_losses(log_part, part, 16), 12);
	CHECK(!memcmp(full, part, sizeof(double) * 12));
	/* changing the optimizer on resume is refused */
	snprintf(args, sizeof args, "--data %s --steps 14 --checkpoint %s --resume --optimizer sgd",
	         data, path_in("ck"));
	CHECK_EQ(main_with(args), 1);
	/* a corrupt checkpoint is an error, never a fresh start */
	FILE *f = fopen(path_in("ck/ckpt"), "r+b");
	if (f) {
		fseek(f, 200, SEEK_SET);
		fputc(0x55, f);
		fclose(f);
	}
	snprintf(args, sizeof args, "--data %s --steps 14 --checkpoint %s --resume", data,
	         path_in("ck"));
	CHECK_EQ(main_with(args), 1);
	CHECK_EQ(main_with("--help"), 0);
}

static void setup(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmp, sizeof tmp, "%s/onnxc_train_XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		exit(1);
	}
}

static void teardown(void)
{
	if (!test_failures)
		run("rm -rf %s", tmp);
	else
		fprintf(stderr, "scratch files kept in %s\n", tmp);
}

/* A stand-in for a rank's partners: this rank of size, the others having
 * computed exactly what it did (the sum is size times its values). */
static int mirror_sum(void *ctx, float *x, int64_t n)
{
	int size = *(int *)ctx;
	for (int64_t i = 0; i < n; i++)
		x[i] *= (float)size;
	return 0;
}

static int mirror_min_max(void *ctx, uint64_t v, uint64_t *min, uint64_t *max)
{
	(void)ctx;
	*min = *max = v;
	return 0;
}

/* Rank 0 of two whose partner computed what it did. */
static int mirror_two = 2;
static const struct rt_train_comm mirror2 = { .rank = 0,
	                                      .size = 2,
	                                      .name = "mirror",
	                                      .ctx = &mirror_two,
	                                      .sum_f32 = mirror_sum,
	                                      .min_max_u64 = mirror_min_max };

/* The mirror over device memory: counts its calls; fails dev_sum on call
 * fail_at (0: never). */
struct dev_mirror {
	int size, sums, bcasts, groups, fail_at;
};

static int dev_mirror_sum(void *ctx, void *x, int64_t n, void *stream)
{
	struct dev_mirror *d = ctx;
	CHECK(stream != NULL);
	if (++d->sums == d->fail_at)
		return 1;
	for (int64_t i = 0; i < n; i++)
		((float *)x)[i] *= (float)d->size;
	return 0;
}

static int dev_mirror_bcast(void *ctx, void *x, int64_t n, int root, void *stream)
{
	struct dev_mirror *d = ctx;
	(void)x;
	CHECK(n == FAKE_D && root == 0 && stream != NULL);
	d->bcasts++;
	return 0; /* rank 0's own values */
}

static int dev_mirror_group(void *ctx, int end)
{
	struct dev_mirror *d = ctx;
	CHECK(end == d->groups % 2);
	d->groups++;
	return 0;
}

static int dev_sum_as_host(void *ctx, float *x, int64_t n)
{
	return mirror_sum(&((struct dev_mirror *)ctx)->size, x, n);
}

static int dev_min_max(void *ctx, uint64_t v, uint64_t *min, uint64_t *max)
{
	return mirror_min_max(ctx, v, min, max);
}

/* The step's outputs reduced through its output hook where the transport
 * reduces device memory: the same trajectory as the host's sums, one group
 * a step, the state broadcast from rank 0; a failed sum is the step's
 * RT_TRAIN_ERR_COMM. */
static void test_data_parallel_device(void)
{
	struct dev_mirror dm = { .size = 2 };
	const struct rt_train_comm host = mirror2;
	const struct rt_train_comm dev = { .rank = 0,
		                           .size = 2,
		                           .name = "device mirror",
		                           .ctx = &dm,
		                           .sum_f32 = dev_sum_as_host,
		                           .min_max_u64 = dev_min_max,
		                           .dev_sum_f32 = dev_mirror_sum,
		                           .dev_bcast_f32 = dev_mirror_bcast,
		                           .dev_group = dev_mirror_group };
	const char *data = path_in("dpd");
	struct rt_train_config c = config(RT_TRAIN_ADAMW);
	struct rt_train_data *d;
	float lh[3], ld[3], wh[FAKE_D * FAKE_C];
	make_data(data);
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	CHECK_EQ(rt_train_set_comm(t, &host), RT_TRAIN_OK);
	CHECK_EQ(rt_train_data_open(t, data, &d), RT_TRAIN_OK);
	run_steps(t, d, 3, lh);
	memcpy(wh, rt_train_param(t, 0), sizeof wh);
	rt_train_data_close(d);
	rt_train_destroy(t);
	t = trainer(&c, NULL);
	CHECK_EQ(rt_train_set_comm(t, &dev), RT_TRAIN_OK);
	CHECK_EQ(rt_train_data_open(t, data, &d), RT_TRAIN_OK);
	run_steps(t, d, 3, ld);
	CHECK(!memcmp(lh, ld, sizeof lh));
	CHECK(!memcmp(wh, rt_train_param(t, 0), sizeof wh));
	CHECK_EQ(dm.groups, 6);
	CHECK_EQ(dm.sums, 9); /* the loss and two gradients a step */
	CHECK_EQ(dm.bcasts, 3);
	dm.fail_at = dm.sums + 2;
	struct rt_train_result r;
	CHECK_EQ(rt_train_step_data(t, d, &r), RT_TRAIN_ERR_COMM);
	CHECK_STR(rt_train_error(t),
	          "step 4: the all-reduce over device mirror on the device failed");
	/* one process again: the hook is removed */
	CHECK_EQ(rt_train_set_comm(t, NULL), RT_TRAIN_OK);
	rt_train_data_close(d);
	rt_train_destroy(t);
}

static void test_data_parallel(void)
{
	const struct rt_train_comm c2 = mirror2;
	struct rt_train_comm bad = c2;
	bad.rank = 2;
	const char *data = path_in("dp"), *ck = path_in("dp.ckpt");
	struct rt_train_config c = config(RT_TRAIN_SGD);
	struct rt_train_data *d;
	struct rt_train_progress p;
	struct rt_train_result r;
	make_data(data);
	/* 20 samples: one global batch of 2 x 8 an epoch */
	struct rt_trainer *t = trainer(&c, NULL);
	if (!t)
		return;
	CHECK_EQ(rt_train_set_comm(t, &bad), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "rank 2 of 2");
	CHECK_EQ(rt_train_set_comm(t, &c2), RT_TRAIN_OK);
	CHECK_EQ(rt_train_agree(t, "x", 5), RT_TRAIN_OK);
	CHECK_EQ(rt_train_data_open(t, data, &d), RT_TRAIN_OK);
	CHECK_EQ(rt_train_data_batches(t, d), 1);
	/* the mirror's mean over two equal ranks is the rank's own loss */
	float w[FAKE_D * FAKE_C];
	memcpy(w, rt_train_param(t, 0), sizeof w);
	CHECK_EQ(rt_train_step_data(t, d, &r), RT_TRAIN_OK);
	CHECK(isfinite(r.loss) && r.loss > 0);
	CHECK(memcmp(w, rt_train_param(t, 0), sizeof w) != 0);
	CHECK_EQ(rt_train_set_comm(t, &c2), RT_TRAIN_ERR_ARGUMENT);
	CHECK_STR(rt_train_error(t), "set after 1 steps");
	CHECK_EQ(rt_train_save(t, ck), RT_TRAIN_OK);
	rt_train_destroy(t);
	/* one process resumes it: 16 of 20 samples taken, the epoch is over (a
	 * batch of 8 from sample 16 would not fit), the next step starts the
	 * next epoch */
	t = trainer(&c, NULL);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_OK);
	rt_train_get_progress(t, &p);
	CHECK_EQ(p.step, 1);
	CHECK_EQ(p.epoch_pos, 2);
	rt_train_data_close(d);
	CHECK_EQ(rt_train_data_open(t, data, &d), RT_TRAIN_OK);
	CHECK_EQ(rt_train_step_data(t, d, &r), RT_TRAIN_OK);
	rt_train_get_progress(t, &p);
	CHECK_EQ(p.epoch, 1);
	CHECK_EQ(p.epoch_pos, 1);
	/* 8 samples into the epoch: not where a global batch of 16 starts */
	CHECK_EQ(rt_train_save(t, ck), RT_TRAIN_OK);
	rt_train_destroy(t);
	t = trainer(&c, NULL);
	CHECK_EQ(rt_train_set_comm(t, &c2), RT_TRAIN_OK);
	CHECK_EQ(rt_train_load(t, ck), RT_TRAIN_ERR_CHECKPOINT);
	CHECK_STR(rt_train_error(t),
	          "stopped 8 samples into its epoch, which is not a whole number "
	          "of this run's global batches of 16 (2 ranks of 8)");
	rt_train_data_close(d);
	rt_train_destroy(t);
}

/* A context's default thread count is the CPUs the process may run on. */
static void test_threads_follow_affinity(void)
{
	cpu_set_t all, one;
	struct rt_ctx *c;
	if (getenv("ONNXC_THREADS") || sched_getaffinity(0, sizeof all, &all)) {
		printf("note: ONNXC_THREADS set or no affinity: thread count test skipped\n");
		return;
	}
	CPU_ZERO(&one);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &all)) {
			CPU_SET(i, &one);
			break;
		}
	CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
	CHECK_EQ(rt_ctx_create(&c, 0), RT_OK);
	CHECK_EQ(rt_ctx_threads(c), 1);
	rt_ctx_destroy(c);
	CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
	CHECK_EQ(rt_ctx_create(&c, 0), RT_OK);
	CHECK_EQ(rt_ctx_threads(c), CPU_COUNT(&all) < 256 ? CPU_COUNT(&all) : 256);
	rt_ctx_destroy(c);
}

static void test_setup(void) { setup(); }
static void test_teardown(void) { teardown(); }

/* A name from the model in a runtime message never reaches the terminal as
 * a control: newline, ESC, DEL and C1 (as UTF-8) become '?'; UTF-8 stays. */
static void test_err_escapes(void)
{
	char buf[64];
	rt_train_set_err(buf, sizeof buf, "param '%s'",
	                 "w\nx: error: forged\x1b[2J\x7f\xc2\x9b\xc3\xa9");
	CHECK(strcmp(buf, "param 'w?x: error: forged?[2J???\xc3\xa9'") == 0);
}

TESTS(T(test_setup) T(test_shuffle) T(test_npy) T(test_data_sets) T(test_labels)
              T(test_create_errors) T(test_loss_scale) T(test_loss_scale_floor)
                      T(test_optimizers_vs_torch) T(test_resume_bitwise)
                              T(test_checkpoint_corruption) T(test_export) T(test_train_main)
                                      T(test_err_escapes) T(test_data_parallel)
                                              T(test_data_parallel_device)
                                                      T(test_threads_follow_affinity)
                                                              T(test_teardown))
