/*
 * rt_train_main.c - the `train` program every `onnxc train` output links:
 * options, initial weights or resuming, the loop, the log, the progress
 * line, checkpoints, eval and export (docs/training.md#the-train-program).
 *
 * The hyper-parameters default to what `onnxc train` was given (the model
 * description's defaults); options override them, also over a resumed
 * checkpoint's (except the optimizer kind, whose state would not fit).
 * Every failure prints one message and gives exit status 1; a bad command
 * line gives 2.
 */
#include "rt_train_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct options {
	const char *data, *eval_data, *log, *checkpoint, *export_onnx, *init, *weights,
	        *eval_weights;
	int64_t steps, epochs, batch, checkpoint_every;
	int resume, help;
	/* the overrides given, and their values */
	int has_lr, has_seed, has_opt, has_mom, has_betas, has_eps, has_wd, has_ls, has_gi;
	int has_shuffle;
	struct rt_train_config cfg;
};

static void usage(FILE *f, const struct rt_train_model *m, const struct rt_train_comm *c,
                  const char *prog)
{
	fprintf(f,
	        "usage: %s --data DIR (--steps N | --epochs E) [options]\n"
	        "\n"
	        "Trains %s (batch %lld). DIR holds one NAME.npy per data input:\n",
	        prog, m->name, (long long)m->batch);
	for (int i = 0; i < m->num_data; i++) {
		char f_name[512];
		rt_train_data_file_name(m->data[i].name, f_name, sizeof f_name);
		fprintf(f, "  %s  (input '%s')\n", f_name, m->data[i].name);
	}
	fprintf(f,
	        "\n"
	        "  --data DIR              training data (first axis: samples)\n"
	        "  --steps N               train until step N\n"
	        "  --epochs E              train for E passes over the data\n"
	        "  --batch B               must be the compiled batch size (%lld)\n"
	        "  --lr LR                 learning rate (default %g)\n"
	        "  --optimizer K           sgd, momentum or adamw (default %s)\n"
	        "  --momentum M            momentum (default %g)\n"
	        "  --betas B1,B2           AdamW's betas (default %g,%g)\n"
	        "  --eps E                 AdamW's eps (default %g)\n"
	        "  --weight-decay W        weight decay (default %g)\n"
	        "  --loss-scale on|off|S   dynamic loss scaling, S its initial scale (default %s)\n"
	        "  --growth-interval N     good steps before the loss scale grows (default %lld)\n"
	        "  --seed S                seeds the data order and Dropout (default %llu)\n"
	        "  --shuffle on|off        shuffle each epoch (default on); off: the files' order\n"
	        "  --log FILE              CSV: step,epoch,loss,loss_scale,skipped,samples_per_s\n"
	        "  --checkpoint DIR        write DIR/ckpt every K steps and at the end\n"
	        "  --checkpoint-every K    (default: only at the end)\n"
	        "  --resume                continue from DIR/ckpt exactly\n"
	        "  --eval-data DIR         the eval model's mean loss on DIR after training\n"
	        "  --export-onnx FILE      write the trained model as ONNX\n"
	        "  --init FILE             initial weights (default: %s.init next to the program,\n"
	        "                          else in the current folder)\n"
	        "  --weights FILE          the step model's weights file (default: its own)\n"
	        "  --eval-weights FILE     the eval model's weights file (default: its own)\n"
	        "  --help                  this text\n",
	        (long long)m->batch, m->defaults.lr, rt_train_optimizer_name(m->defaults.optimizer),
	        m->defaults.momentum, m->defaults.beta1, m->defaults.beta2, m->defaults.eps,
	        m->defaults.weight_decay, m->defaults.loss_scaling ? "on" : "off",
	        (long long)m->defaults.growth_interval, (unsigned long long)m->defaults.seed,
	        m->name);
	if (c && c->name)
		fprintf(f,
		        "\nData parallel over %s: `mpirun -np N %s ...` (or srun) trains on N\n"
		        "processes, each on its share of a global batch of N x %lld samples.\n",
		        c->name, prog, (long long)m->batch);
	else
		fprintf(f, "\nOne process: this program was built without MPI (onnxc train "
		           "--no-mpi,\nor an onnxc built where CMake found no MPI).\n");
}

static int parse_i64(const char *s, int64_t *v, int64_t min)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end || x < min)
		return 0;
	*v = x;
	return 1;
}

static int parse_f64(const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x))
		return 0;
	*v = x;
	return 1;
}

/* Returns 0 on success, 2 on a usage error (printed). */
static int parse_args(struct options *o, int argc, char **argv)
{
	const char *prog = argv[0] ? argv[0] : "train";
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], *val = NULL, buf[64];
		char *eq = strchr(arg, '=');
		if (!strncmp(arg, "--", 2) && eq && (size_t)(eq - arg) < sizeof buf) {
			memcpy(buf, arg, (size_t)(eq - arg));
			buf[eq - arg] = 0;
			val = eq + 1;
			arg = buf;
		}
#define FLAG(name) (!strcmp(arg, name))
#define VALUE()                     \
	(val            ? val       \
	 : i + 1 < argc ? argv[++i] \
	                : (fprintf(stderr, "%s: %s needs a value\n", prog, arg), (char *)0))
		if (FLAG("--help") || FLAG("-h")) {
			o->help = 1;
			continue;
		}
		if (FLAG("--resume")) {
			o->resume = 1;
			continue;
		}
		const char *v = VALUE();
		if (!v)
			return 2;
		double d;
		int ok = 1;
		if (FLAG("--data"))
			o->data = v;
		else if (FLAG("--eval-data"))
			o->eval_data = v;
		else if (FLAG("--log"))
			o->log = v;
		else if (FLAG("--checkpoint"))
			o->checkpoint = v;
		else if (FLAG("--export-onnx"))
			o->export_onnx = v;
		else if (FLAG("--init"))
			o->init = v;
		else if (FLAG("--weights"))
			o->weights = v;
		else if (FLAG("--eval-weights"))
			o->eval_weights = v;
		else if (FLAG("--steps"))
			ok = parse_i64(v, &o->steps, 1);
		else if (FLAG("--epochs"))
			ok = parse_i64(v, &o->epochs, 1);
		else if (FLAG("--batch"))
			ok = parse_i64(v, &o->batch, 1);
		else if (FLAG("--checkpoint-every"))
			ok = parse_i64(v, &o->checkpoint_every, 1);
		else if (FLAG("--growth-interval"))
			ok = (o->has_gi = parse_i64(v, &o->cfg.growth_interval, 1));
		else if (FLAG("--lr"))
			ok = (o->has_lr = parse_f64(v, &o->cfg.lr));
		else if (FLAG("--momentum"))
			ok = (o->has_mom = parse_f64(v, &o->cfg.momentum));
		else if (FLAG("--eps"))
			ok = (o->has_eps = parse_f64(v, &o->cfg.eps));
		else if (FLAG("--weight-decay"))
			ok = (o->has_wd = parse_f64(v, &o->cfg.weight_decay));
		else if (FLAG("--shuffle")) {
			ok = !strcmp(v, "on") || !strcmp(v, "off");
			o->has_shuffle = 1;
			o->cfg.shuffle = !strcmp(v, "on");
		} else if (FLAG("--seed")) {
			int64_t s;
			ok = (o->has_seed = parse_i64(v, &s, 0));
			o->cfg.seed = (uint64_t)s;
		} else if (FLAG("--optimizer"))
			ok = (o->has_opt = (o->cfg.optimizer = rt_train_optimizer_parse(v)) != 0);
		else if (FLAG("--betas")) {
			char *end;
			o->cfg.beta1 = strtod(v, &end);
			ok = *end == ',';
			if (ok) {
				const char *b2 = end + 1;
				o->cfg.beta2 = strtod(b2, &end);
				ok = end != b2 && !*end;
			}
			o->has_betas = ok;
		} else if (FLAG("--loss-scale")) {
			o->has_ls = 1;
			if (!strcmp(v, "on"))
				o->cfg.loss_scaling = 1;
			else if (!strcmp(v, "off"))
				o->cfg.loss_scaling = 0;
			else if ((ok = parse_f64(v, &d) && d > 0)) {
				o->cfg.loss_scaling = 1;
				o->cfg.init_scale = d;
				o->has_ls = 2;
			}
		} else {
			fprintf(stderr, "%s: unknown option '%s' (--help lists them)\n", prog, arg);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "%s: bad value '%s' for %s\n", prog, v, arg);
			return 2;
		}
#undef FLAG
#undef VALUE
	}
	return 0;
}

/* Applies the options given over cfg. */
static void apply_overrides(const struct options *o, struct rt_train_config *c)
{
	if (o->has_lr)
		c->lr = o->cfg.lr;
	if (o->has_seed)
		c->seed = o->cfg.seed;
	if (o->has_shuffle)
		c->shuffle = o->cfg.shuffle;
	if (o->has_opt)
		c->optimizer = o->cfg.optimizer;
	if (o->has_mom)
		c->momentum = o->cfg.momentum;
	if (o->has_betas) {
		c->beta1 = o->cfg.beta1;
		c->beta2 = o->cfg.beta2;
	}
	if (o->has_eps)
		c->eps = o->cfg.eps;
	if (o->has_wd)
		c->weight_decay = o->cfg.weight_decay;
	if (o->has_ls)
		c->loss_scaling = o->cfg.loss_scaling;
	if (o->has_ls == 2)
		c->init_scale = o->cfg.init_scale;
	if (o->has_gi)
		c->growth_interval = o->cfg.growth_interval;
}

/* Something is there (what it is, the reader checks and says). */
static int path_exists(const char *p)
{
	struct stat st;
	return !stat(p, &st);
}

/* NAME.init next to the running program, else in the current folder. */
static int find_init(const struct rt_train_model *m, char *buf, size_t size)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(buf, size, "%s/%s.init", exe, m->name) < size &&
			    path_exists(buf))
				return 1;
		}
	}
	snprintf(buf, size, "%s.init", m->name);
	return path_exists(buf);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_eta(char *buf, size_t n, double s)
{
	if (!(s >= 0) || s > 1e7)
		snprintf(buf, n, "?");
	else if (s >= 3600)
		snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
	else
		snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

/* The configuration as numbers, for rt_train_agree (a struct's padding is
 * not part of it). */
static uint64_t config_hash(const struct rt_train_config *c, int64_t total, int64_t samples)
{
	double d[] = { c->lr,           c->momentum,   c->beta1,  c->beta2,  c->eps,
		       c->weight_decay, c->init_scale, c->growth, c->backoff };
	int64_t i[] = { c->optimizer,     c->loss_scaling, c->growth_interval,
		        (int64_t)c->seed, c->shuffle,      total,
		        samples };
	return rt_train_fnv1a(rt_train_fnv1a(RT_TRAIN_FNV_OFFSET, d, sizeof d), i, sizeof i);
}

int rt_train_main(const struct rt_train_model *m, int argc, char **argv)
{
	return rt_train_main_comm(m, NULL, argc, argv);
}

int rt_train_main_comm(const struct rt_train_model *m, const struct rt_train_comm *c, int argc,
                       char **argv)
{
	const char *prog = argc > 0 && argv[0] ? argv[0] : "train";
	int ranks = c ? c->size : 1, rank0 = !c || c->rank == 0;
	char who[600]; /* the messages' prefix: the program, and the rank of several */
	if (ranks > 1)
		snprintf(who, sizeof who, "%s (rank %d of %d)", prog, c->rank, ranks);
	else
		snprintf(who, sizeof who, "%s", prog);
	struct options o = { 0 };
	struct rt_train_config cfg;
	if (m->defaults.optimizer)
		cfg = m->defaults;
	else
		rt_train_config_default(&cfg);
	o.cfg = cfg;
	int rc = parse_args(&o, argc, argv);
	if (rc)
		return rc;
	if (o.help) {
		if (rank0)
			usage(stdout, m, c, prog);
		return 0;
	}
	const char *usage_err = NULL;
	if (!o.data)
		usage_err = "--data DIR is required";
	else if (!o.steps == !o.epochs)
		usage_err = "give one of --steps N and --epochs E";
	else if (o.resume && !o.checkpoint)
		usage_err = "--resume needs --checkpoint DIR";
	else if (o.checkpoint_every && !o.checkpoint)
		usage_err = "--checkpoint-every needs --checkpoint DIR";
	if (usage_err) {
		fprintf(stderr, "%s: %s (--help for the options)\n", who, usage_err);
		return 2;
	}
	if (o.batch && o.batch != m->batch) {
		fprintf(stderr,
		        "%s: --batch %lld, but %s was compiled for batch %lld (shapes are static: "
		        "recompile with onnxc train --shape to change it)\n",
		        who, (long long)o.batch, m->name, (long long)m->batch);
		return 2;
	}
	if (o.eval_data && !m->eval_create) {
		fprintf(stderr, "%s: --eval-data: %s was compiled without an eval model\n", who,
		        m->name);
		return 2;
	}
	if (o.export_onnx && !m->onnx_template_bytes) {
		fprintf(stderr, "%s: --export-onnx: %s carries no ONNX template\n", who, m->name);
		return 2;
	}
	apply_overrides(&o, &cfg);

	struct rt_trainer *t = NULL;
	struct rt_train_data *data = NULL, *eval = NULL;
	FILE *log = NULL;
	char *ckpt = NULL;
	char init[4096];
	int status = 1;
	if ((rc = rt_train_create(&t, m, &cfg, o.weights, o.eval_weights)) ||
	    (rc = rt_train_set_comm(t, c))) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	if (o.checkpoint) {
		size_t n = strlen(o.checkpoint) + 8;
		if (!(ckpt = malloc(n))) {
			fprintf(stderr, "%s: out of memory\n", who);
			goto out;
		}
		snprintf(ckpt, n, "%s/ckpt", o.checkpoint);
		if (rank0 && mkdir(o.checkpoint, 0755) && errno != EEXIST) {
			fprintf(stderr, "%s: cannot create %s: %s\n", who, o.checkpoint,
			        strerror(errno));
			goto out;
		}
	}
	if (o.resume) {
		if (!path_exists(ckpt)) {
			fprintf(stderr, "%s: --resume: no checkpoint %s\n", who, ckpt);
			goto out;
		}
		if ((rc = rt_train_load(t, ckpt))) {
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
		struct rt_train_config now;
		rt_train_get_config(t, &now);
		apply_overrides(&o, &now);
		if ((rc = rt_train_set_config(t, &now))) {
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
	} else {
		if (o.init)
			snprintf(init, sizeof init, "%s", o.init);
		else if (!find_init(m, init, sizeof init)) {
			fprintf(stderr,
			        "%s: no initial weights: %s.init is neither next to the program "
			        "nor "
			        "in the current folder (--init FILE)\n",
			        who, m->name);
			goto out;
		}
		if ((rc = rt_train_load_weights(t, init))) {
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
	}
	if ((rc = rt_train_data_open(t, o.data, &data)) ||
	    (o.eval_data && (rc = rt_train_data_open(t, o.eval_data, &eval)))) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	int64_t nb = rt_train_data_batches(t, data);
	int64_t total = o.steps ? o.steps : o.epochs * nb;
	if (o.epochs && total / nb != o.epochs) {
		fprintf(stderr, "%s: --epochs %lld is too many\n", who, (long long)o.epochs);
		goto out;
	}
	/* the ranks train in step only if they agree on everything that decides
	 * a step: the same program, options, data and starting point */
	rt_train_get_config(t, &cfg);
	if (ranks > 1 &&
	    ((rc = rt_train_agree(t, "the model (its id)", m->model_id)) ||
	     (rc = rt_train_agree(t, "the configuration (options, steps, data set size)",
	                          config_hash(&cfg, total, rt_train_data_samples(data)))) ||
	     (rc = rt_train_agree(t,
	                          "the starting weights, optimizer state and counters (each "
	                          "rank reads the same --init or checkpoint file)",
	                          rt_train_hash(t))))) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	if (o.log && rank0) {
		/* resuming appends to the log (a header first if it is empty) */
		char why[600];
		int64_t size = 0;
		if (!(log = rt_train_fopen_regular(
		              o.log, O_WRONLY | O_CREAT | (o.resume ? O_APPEND : O_TRUNC), &size,
		              NULL, why, sizeof why))) {
			fprintf(stderr, "%s: cannot write the log: %s\n", who, why);
			goto out;
		}
		if (size == 0)
			fprintf(log, "step,epoch,loss,loss_scale,skipped,samples_per_s\n");
	}

	struct rt_train_progress p;
	rt_train_get_progress(t, &p);
	int64_t first = p.step;
	int tty = isatty(STDERR_FILENO);
	double start = now_s(), last_print = 0, prev = start;
	float loss = NAN;
	/* non-finite gradients (loss scaling off, or at every scale): the step
	 * is counted and logged, the checkpoint written, then the run stops */
	int stopped = 0;
	char why[1024];
	while (p.step < total && !stopped) {
		struct rt_train_result r;
		rc = rt_train_step_data(t, data, &r);
		if (rc == RT_TRAIN_ERR_NONFINITE) {
			snprintf(why, sizeof why, "%s", rt_train_error(t));
			stopped = 1;
		} else if (rc) {
			if (tty)
				fputc('\n', stderr);
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
		rt_train_get_progress(t, &p);
		double now = now_s(), dt = now - prev;
		prev = now;
		loss = r.loss;
		if (log)
			fprintf(log, "%lld,%lld,%.9g,%.9g,%d,%.1f\n", (long long)p.step,
			        (long long)p.epoch, (double)r.loss, r.loss_scale, r.skipped,
			        dt > 0 ? (double)(m->batch * ranks) / dt : 0.0);
		if (rank0 && tty && (now - last_print > 0.1 || p.step == total)) {
			double rate = (double)(p.step - first) / (now - start);
			char eta[32];
			fmt_eta(eta, sizeof eta, (double)(total - p.step) / rate);
			fprintf(stderr,
			        "\rstep %lld/%lld  loss %.5g  %.0f samples/s  scale %g  ETA %s   ",
			        (long long)p.step, (long long)total, (double)r.loss,
			        rate * (double)(m->batch * ranks), r.loss_scale, eta);
			last_print = now;
		}
		if (ckpt && rank0 && o.checkpoint_every && p.step % o.checkpoint_every == 0 &&
		    p.step < total && !stopped && (rc = rt_train_save(t, ckpt))) {
			if (tty)
				fputc('\n', stderr);
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
	}
	if (rank0 && tty && p.step > first)
		fputc('\n', stderr);
	/* the same update on the same weights: every rank ends where rank 0 does */
	if (ranks > 1 &&
	    (rc = rt_train_agree(t, "the trained weights and training state", rt_train_hash(t)))) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	if (!rank0) { /* rank 0 alone reports, checkpoints, evaluates and exports */
		status = stopped;
		goto wait;
	}
	if (log && fflush(log)) {
		fprintf(stderr, "%s: cannot write %s: %s\n", who, o.log, strerror(errno));
		goto out;
	}
	if (ckpt && (rc = rt_train_save(t, ckpt))) {
		if (stopped)
			fprintf(stderr, "%s: %s\n", who, why);
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	if (stopped) {
		fprintf(stderr, "%s: %s%s%s%s\n", who, why, ckpt ? "; checkpoint written to " : "",
		        ckpt ? ckpt : "", ckpt ? " (--resume continues from it)" : "");
		goto wait;
	}
	printf("%s: step %lld, epoch %lld, loss %.6g, loss scale %g, %lld skipped\n", m->name,
	       (long long)p.step, (long long)p.epoch, (double)loss, p.loss_scale,
	       (long long)p.skipped);
	if (ranks > 1)
		printf("%s: %d ranks of batch %lld over %s, weights identical on every rank "
		       "(hash %016llx)\n",
		       m->name, ranks, (long long)m->batch, c->name,
		       (unsigned long long)rt_train_hash(t));
	if (eval) {
		double mean;
		if ((rc = rt_train_eval_data(t, eval, &mean))) {
			fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
			goto out;
		}
		printf("%s: eval loss %.6g (%lld samples)\n", m->name, mean,
		       (long long)(rt_train_data_batches(t, eval) * m->batch));
	}
	if (o.export_onnx && (rc = rt_train_export_onnx(t, o.export_onnx))) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		goto out;
	}
	status = 0;
wait:
	/* the other ranks wait for rank 0's files; a rank that fails before
	 * this point never comes here, and its failure ends every rank */
	if (ranks > 1 && rt_train_agree(t, "the end of the run", 0)) {
		fprintf(stderr, "%s: %s\n", who, rt_train_error(t));
		status = 1;
	}
out:
	if (log && fclose(log) && !status) {
		fprintf(stderr, "%s: cannot write %s\n", who, o.log);
		status = 1;
	}
	fflush(stdout);
	rt_train_data_close(data);
	rt_train_data_close(eval);
	free(ckpt);
	rt_train_destroy(t);
	return status;
}
