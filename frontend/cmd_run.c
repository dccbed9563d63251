/*
 * cmd_run.c - `onnxc run` and `onnxc check`: compile, load, run, compare.
 *
 * Both compile the model exactly as `onnxc compile` does, additionally link
 * a shared object (NAME.so, the runtime linked in) and load it with dlopen,
 * so what runs is the same generated code a user links - not a separate
 * interpreter. run keeps its builds in a cache keyed by the model's bytes and
 * the options; check builds in a temporary folder.
 *
 * Symbolic dimensions are bound from the shapes of the inputs given. A test
 * case whose graph input feeds a shape operand (a Reshape's shape given as a
 * graph input, say) cannot be compiled with that input unknown: check notes
 * which inputs the import needed as constants, freezes them with the test's
 * data, and compiles again (docs/cli.md).
 */
#include "cli.h"
#include "codegen/cg.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_IO 64

/* ------------------------------------------------------------------------ */
/* A compiled model loaded from its shared object                          */
/* ------------------------------------------------------------------------ */

struct loaded {
	void *so;
	int (*create)(void **, const char *);
	int (*run)(void *, const void *const *, void *const *);
	void (*destroy)(void *);
	const char *(*strerror)(int);
	void *inst;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void unload(struct loaded *l)
{
	if (l->inst)
		l->destroy(l->inst);
	if (l->so)
		dlclose(l->so);
	memset(l, 0, sizeof *l);
}

static bool load(struct ir_ctx *ctx, const char *dir, const char *name, struct loaded *l)
{
	char path[4200], sym[256];
	int st;
	snprintf(path, sizeof path, "%s/%s.so", dir, name);
	if (!(l->so = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		ir_error(ctx, "cannot load the compiled model: %s", dlerror());
		return false;
	}
#define SYM(field, suffix)                                         \
	snprintf(sym, sizeof sym, "%s_" suffix, name);             \
	*(void **)&l->field = dlsym(l->so, sym);                   \
	if (!l->field) {                                           \
		ir_error(ctx, "the compiled model lacks %s", sym); \
		unload(l);                                         \
		return false;                                      \
	}
	SYM(create, "create")
	SYM(run, "run")
	SYM(destroy, "destroy")
	SYM(strerror, "strerror")
#undef SYM
	snprintf(path, sizeof path, "%s/%s.weights", dir, name);
	if ((st = l->create(&l->inst, path))) {
		ir_error(ctx, "creating the model instance failed: %s", l->strerror(st));
		l->inst = NULL;
		unload(l);
		return false;
	}
	return true;
}

/* Where run and check compile for: --target, --cpu, --arch. */
struct target {
	const char *name, *cpu, *arch;
};

/* 1 if argv[*i] was a target option, 0 if not, -1 after a usage error. */
static int parse_target(int argc, char **argv, int *i, struct target *t)
{
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "--target", true, &bad))) {
		if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
			usage_error("--target takes cpu or cuda, not '%s'", v);
			return -1;
		}
		t->name = v;
	} else if ((v = opt_value(argc, argv, i, "--arch", true, &bad))) {
		if (!cg_valid_arch(v)) {
			usage_error("--arch takes %s, not '%s'", cg_cuda_archs(), v);
			return -1;
		}
		t->arch = v;
	} else if ((v = opt_value(argc, argv, i, "--cpu", true, &bad))) {
		t->cpu = v;
	} else {
		return bad ? -1 : 0;
	}
	return 1;
}

static bool compile_shared(struct ir_module *m, const char *dir, const struct target *t,
                           const char *source, int64_t max_memory, struct cg_stats *stats)
{
	struct cg_options co = { .name = "model",
		                 .out_dir = dir,
		                 .target = t->name,
		                 .cpu = t->cpu,
		                 .arch = t->arch,
		                 .source = source,
		                 .shared = true,
		                 .quiet = true,
		                 .max_memory = max_memory };
	return cg_compile(m, &co, stats);
}

/* Output buffers for m's outputs (malloc'd). */
static void **alloc_outputs(const struct ir_module *m)
{
	void **out = calloc((size_t)(m->noutputs + 1), sizeof *out);
	for (int i = 0; out && i < m->noutputs; i++) {
		size_t bytes = (size_t)ir_type_elems(&m->outputs[i]->type) *
		               (size_t)ir_dtype_size(m->outputs[i]->type.dtype);
		out[i] = calloc(1, bytes ? bytes : 1);
	}
	return out;
}

static void free_outputs(const struct ir_module *m, void **out)
{
	for (int i = 0; out && i < m->noutputs; i++)
		free(out[i]);
	free(out);
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static char *temp_dir(void)
{
	const char *t = getenv("TMPDIR");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s/onnxc-XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(buf) ? strdup(buf) : NULL;
}

/*
 * NumPy has no bfloat16, so bf16 tensors arrive as uint16 bit patterns
 * (the ONNX node tests' data, and .npy files): take them as bf16 where
 * bf16 is expected.
 */
static void bf16_as_u16(struct ir_value *data, enum ir_dtype want)
{
	if (want == IR_BF16 && data->type.dtype == IR_U16)
		data->type.dtype = IR_BF16;
}

/* Matches data tensors to m's inputs by name; checks types. */
static bool gather_inputs(struct ir_ctx *ctx, const struct ir_module *m, struct ir_value **data,
                          const char (*names)[256], int ndata, const void **in)
{
	for (int i = 0; i < m->ninputs; i++) {
		const struct ir_value *v = m->inputs[i];
		char want[IR_TYPE_STR_MAX], have[IR_TYPE_STR_MAX];
		in[i] = NULL;
		for (int k = 0; k < ndata; k++) {
			if (strcmp(names[k], v->name))
				continue;
			bf16_as_u16(data[k], v->type.dtype);
			if (!ir_type_eq(&data[k]->type, &v->type)) {
				ir_error(ctx, "input '%s' is %s but the model takes %s", v->name,
				         ir_type_str(&data[k]->type, have, sizeof have),
				         ir_type_str(&v->type, want, sizeof want));
				return false;
			}
			in[i] = data[k]->data;
		}
		if (!in[i]) {
			ir_error(ctx, "no data for input '%s' (%s); give it with --input %s=FILE",
			         v->name, ir_type_str(&v->type, want, sizeof want), v->name);
			return false;
		}
	}
	return true;
}

/* Shape bindings from data tensors (for inputs the user did not bind). */
static void bind_shapes(struct model_opts *mo, struct ir_value **data, const char (*names)[256],
                        int n)
{
	for (int k = 0; k < n && mo->fe.nshapes < 64; k++) {
		struct fe_shape_binding *sb = &mo->shapes[mo->fe.nshapes];
		bool given = false;
		for (int i = 0; i < mo->fe.nshapes; i++)
			given |= !strcmp(mo->shapes[i].input, names[k]);
		if (given)
			continue;
		sb->input = strdup(names[k]);
		sb->rank = data[k]->type.rank;
		memcpy(sb->dims, data[k]->type.dims, sizeof(int64_t) * (size_t)sb->rank);
		mo->fe.shapes = mo->shapes;
		mo->fe.nshapes++;
	}
}

/* ------------------------------------------------------------------------ */
/* onnxc run                                                                */
/* ------------------------------------------------------------------------ */

static const char run_help[] =
        "usage: onnxc run MODEL.onnx|FILE.oir --input NAME=FILE... [options]\n"
        "\n"
        "Compiles the model for the CPU (cached), runs it on the inputs and prints\n"
        "the outputs' shapes and the median run time. Inputs are ONNX TensorProto\n"
        "files (.pb) or NumPy arrays (.npy); symbolic dimensions are bound from them.\n"
        "\n"
        "options:\n"
        "  --input NAME=FILE    an input by graph input name (or FILE alone, in order)\n"
        "  --output-dir DIR     write every output to DIR/NAME.npy\n"
        "  --repeat N           time N runs after a warm-up run (default 10)\n"
        "  --cache-dir DIR      where compiled models are kept (default\n"
        "                       $XDG_CACHE_HOME/onnxc or ~/.cache/onnxc)\n"
        "  --cpu CPU            LLVM CPU name for the kernels (default native)\n"
        "  --target T           cpu (default) or cuda (needs a CUDA GPU to run)\n"
        "  --arch ARCH          the GPU for --target cuda (default sm_90)\n"
        "  --shape, --dim, --const, --verify, --dump-after   as for onnxc compile\n";

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *q = p;
	for (size_t i = 0; i < n; i++) {
		h ^= q[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The cache folder for this model: keyed by the model's bytes, what decides
 * the compiled code (the shape bindings, constants, CPU - config), this
 * onnxc build and the runtime library it links, so nothing stale is reused.
 */
static char *cache_dir(struct ir_ctx *ctx, const char *base, const char *model, const char *config)
{
	static const char version[] = ONNXC_VERSION;
	const char *err, *inc, *rtlib;
	size_t len;
	unsigned char *bytes = ir_read_file(ctx, model, &len, &err);
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[4200], root[4096];
	struct stat st;
	if (!bytes) {
		ir_error(ctx, "cannot read %s: %s", model, err);
		return NULL;
	}
	h = fnv(h, bytes, len);
	ir_free(ctx, bytes);
	h = fnv(h, version, sizeof version);
	h = fnv(h, config, strlen(config));
	/* this onnxc build: its executable's size and time */
	if (stat("/proc/self/exe", &st) == 0) {
		h = fnv(h, &st.st_mtime, sizeof st.st_mtime);
		h = fnv(h, &st.st_size, sizeof st.st_size);
	}
	if (cg_runtime_paths(ctx, &inc, &rtlib) && stat(rtlib, &st) == 0) {
		h = fnv(h, &st.st_mtime, sizeof st.st_mtime);
		h = fnv(h, &st.st_size, sizeof st.st_size);
	}
	if (base) {
		snprintf(root, sizeof root, "%s", base);
	} else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME")) {
		snprintf(root, sizeof root, "%s/onnxc", getenv("XDG_CACHE_HOME"));
	} else {
		snprintf(root, sizeof root, "%s/.cache/onnxc",
		         getenv("HOME") ? getenv("HOME") : "/tmp");
		snprintf(buf, sizeof buf, "%s/.cache", getenv("HOME") ? getenv("HOME") : "/tmp");
		mkdir(buf, 0777);
	}
	mkdir(root, 0777);
	snprintf(buf, sizeof buf, "%s/%016llx", root, (unsigned long long)h);
	return strdup(buf);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int cmd_run(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct ir_ctx ctx;
	struct ir_module *m = NULL, *data = NULL;
	struct ir_value *tensors[MAX_IO];
	char(*names)[256] = calloc(MAX_IO, 256);
	char(*order)[256] = calloc(MAX_IO, 256);
	const char *model = NULL, *files[MAX_IO], *outdir = NULL, *cache = NULL;
	struct target target = { "cpu", "native", "sm_90" };
	const void *in[MAX_IO];
	void **out = NULL;
	char *dir = NULL;
	struct loaded l = { 0 };
	int nin = 0, repeat = 10, status = EXIT_INPUT, norder;
	bool bad = false;

	ir_ctx_init(&ctx);
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(run_help, stdout);
			fputs(precision_help, stdout);
			status = 0;
			goto out;
		}
		if ((r = parse_model_opt(argc, argv, &i, &mo)) != 0) {
			if (r < 0)
				goto usage;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--input", true, &bad))) {
			const char *eq = strchr(v, '=');
			if (nin == MAX_IO) {
				usage_error("run: too many inputs");
				goto usage;
			}
			if (eq && eq != v) {
				snprintf(names[nin], 256, "%.*s", (int)(eq - v), v);
				files[nin++] = eq + 1;
			} else {
				names[nin][0] = 0;
				files[nin++] = v;
			}
		} else if ((v = opt_value(argc, argv, &i, "--output-dir", true, &bad))) {
			outdir = v;
		} else if ((v = opt_value(argc, argv, &i, "--repeat", true, &bad))) {
			repeat = atoi(v);
			if (repeat < 1) {
				usage_error("run: --repeat takes a positive count");
				goto usage;
			}
		} else if ((v = opt_value(argc, argv, &i, "--cache-dir", true, &bad))) {
			cache = v;
		} else if ((r = parse_target(argc, argv, &i, &target)) != 0) {
			if (r < 0)
				goto usage;
		} else if (bad) {
			goto usage;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("run: unknown option '%s'", argv[i]);
			goto usage;
		} else if (!model) {
			model = argv[i];
		} else {
			usage_error("run: more than one model given");
			goto usage;
		}
	}
	if (!model) {
		usage_error("run: no model given");
		goto usage;
	}
	/* inputs given without a name take the graph inputs in order; IR text
	 * has its shapes fixed, so it is parsed first */
	if (is_ir_text(model)) {
		if (!(m = load_model(&ctx, model, &mo)))
			goto out;
		for (norder = 0; norder < m->ninputs && norder < MAX_IO; norder++)
			snprintf(order[norder], 256, "%s", m->inputs[norder]->name);
	} else if ((norder = fe_input_names(&ctx, model, order, MAX_IO)) < 0) {
		goto out;
	}
	for (int k = 0, pos = 0; k < nin; k++)
		if (!names[k][0]) {
			if (pos >= norder) {
				usage_error("run: more inputs than the model has");
				goto usage;
			}
			snprintf(names[k], 256, "%s", order[pos++]);
		}
	data = ir_module_new(&ctx, "inputs");
	for (int k = 0; k < nin; k++)
		if (!(tensors[k] = fe_load_tensor(&ctx, data, files[k], names[k])))
			goto out;
	if (!m)
		bind_shapes(&mo, tensors, (const char(*)[256])names, nin);
	if ((!m && !(m = load_model(&ctx, model, &mo))) || !prepare_model(m, &mo))
		goto out;
	ctx.file = model;
	if (!gather_inputs(&ctx, m, tensors, (const char(*)[256])names, nin, in))
		goto out;
	{
		/* what decides the compiled code: bindings, constants, CPU */
		char config[8192];
		size_t at = (size_t)snprintf(config, sizeof config, "target=%s cpu=%s arch=%s",
		                             target.name, target.cpu, target.arch);
		for (int i = 0; i < mo.fe.nshapes && at < sizeof config; i++) {
			at += (size_t)snprintf(config + at, sizeof config - at,
			                       ";%s=", mo.shapes[i].input);
			for (int d = 0; d < mo.shapes[i].rank && at < sizeof config; d++)
				at += (size_t)snprintf(config + at, sizeof config - at, "%lld,",
				                       (long long)mo.shapes[i].dims[d]);
		}
		if (at < sizeof config)
			precision_config(&mo, config + at, sizeof config - at);
		at += strlen(config + at);
		for (int i = 0; i < mo.fe.ndims && at < sizeof config; i++)
			at += (size_t)snprintf(config + at, sizeof config - at, ";dim %s=%lld",
			                       mo.dims[i].name, (long long)mo.dims[i].value);
		for (int i = 0; i < mo.fe.nconsts && at < sizeof config; i++) {
			/* the constant's bytes, not its file name, decide the code */
			const char *err;
			size_t len;
			unsigned char *b = ir_read_file(&ctx, mo.consts[i].path, &len, &err);
			at += (size_t)snprintf(config + at, sizeof config - at, ";const %s=%016llx",
			                       mo.consts[i].name,
			                       b ? (unsigned long long)fnv(0, b, len) : 0ull);
			ir_free(&ctx, b);
		}
		if (!(dir = cache_dir(&ctx, cache, model, config)))
			goto out;
	}
	{
		char so[4200];
		struct stat st;
		snprintf(so, sizeof so, "%s/model.so", dir);
		if (stat(so, &st) != 0) {
			struct cg_stats cs;
			if (!compile_shared(m, dir, &target, model, model_max_memory(&mo), &cs))
				goto out;
			printf("compiled in %.0f ms into %s\n", cs.ms_total, dir);
		}
	}
	if (!load(&ctx, dir, "model", &l) || !(out = alloc_outputs(m)))
		goto out;
	{
		double *t = calloc((size_t)repeat, sizeof *t);
		int st = l.run(l.inst, in, out); /* warm-up */
		for (int r = 0; r < repeat && !st && t; r++) {
			double t0 = now_ms();
			st = l.run(l.inst, in, out);
			t[r] = now_ms() - t0;
		}
		if (st) {
			ir_error(&ctx, "the run failed: %s", l.strerror(st));
			free(t);
			goto out;
		}
		qsort(t, (size_t)repeat, sizeof *t, cmp_double);
		for (int i = 0; i < m->noutputs; i++) {
			char tb[IR_TYPE_STR_MAX];
			printf("output %s : %s\n", m->outputs[i]->name,
			       ir_type_str(&m->outputs[i]->type, tb, sizeof tb));
			if (outdir) {
				char p[4200];
				snprintf(p, sizeof p, "%s/%s.npy", outdir, m->outputs[i]->name);
				for (char *c = p + strlen(outdir) + 1; *c; c++)
					if (*c == '/')
						*c = '_';
				mkdir(outdir, 0777);
				if (!fe_save_npy(p, &m->outputs[i]->type, out[i]))
					ir_error(&ctx, "cannot write %s", p);
			}
		}
		printf("median run time %.3f ms over %d runs (min %.3f, max %.3f)\n", t[repeat / 2],
		       repeat, t[0], t[repeat - 1]);
		free(t);
	}
	status = ctx.nerrors ? EXIT_INPUT : 0;
	goto out;
usage:
	status = EXIT_USAGE;
out:
	unload(&l);
	if (m)
		free_outputs(m, out);
	ir_module_free(m);
	ir_module_free(data);
	free_model_opts(&mo);
	free(dir);
	free(names);
	free(order);
	return status;
}

/* ------------------------------------------------------------------------ */
/* onnxc check                                                              */
/* ------------------------------------------------------------------------ */

static const char check_help[] =
        "usage: onnxc check DIR [options]\n"
        "\n"
        "DIR is an ONNX backend test case: model.onnx and test_data_set_N/ folders\n"
        "holding input_K.pb and output_K.pb. Compiles the model for the CPU, runs it\n"
        "on every data set and compares the outputs: passes when every element\n"
        "satisfies |y - ref| <= atol + rtol * |ref| (NaN matches NaN), or, with\n"
        "--max-rel-l2, when every float output's relative L2 error\n"
        "||y - ref|| / ||ref|| is at most that bound. With --precision mixed and\n"
        "no tolerance given, the bound is 1e-2 for fp16 and 5e-2 for bf16.\n"
        "\n"
        "options:\n"
        "  --rtol R             relative tolerance (default 1e-3)\n"
        "  --atol A             absolute tolerance (default 1e-7)\n"
        "  --max-rel-l2 E       judge float outputs by relative L2 error instead\n"
        "  --json               print one JSON object (see docs/cli.md)\n"
        "  --keep DIR           compile into DIR and keep the files\n"
        "  --cpu CPU            LLVM CPU name for the kernels (default native)\n"
        "  --target T           cpu (default) or cuda (needs a CUDA GPU to run)\n"
        "  --arch ARCH          the GPU for --target cuda (default sm_90)\n"
        "  --shape, --dim, --const, --verify, --dump-after   as for onnxc compile\n";

struct cmp {
	double max_abs, max_rel, l2_num, l2_den;
	int64_t bad; /* elements outside the tolerance */
};

static double rel_l2(const struct cmp *c)
{
	return c->l2_den > 0 ? sqrt(c->l2_num / c->l2_den) : sqrt(c->l2_num);
}

static void compare(enum ir_dtype t, const void *y, const void *ref, int64_t n, double rtol,
                    double atol, struct cmp *c)
{
	memset(c, 0, sizeof *c);
	for (int64_t i = 0; i < n; i++) {
		double a, b, d;
		if (!ir_dtypes[t].is_float) {
			int64_t x = ir_load_i64(t, y, (size_t)i),
			        r = ir_load_i64(t, ref, (size_t)i);
			a = (double)x;
			b = (double)r;
			c->bad += x != r;
		} else {
			a = ir_load_f64(t, y, (size_t)i);
			b = ir_load_f64(t, ref, (size_t)i);
			if (a != a || b != b) {
				c->bad += (a != a) != (b != b);
				continue;
			}
			if (a == b) { /* also equal infinities */
				c->l2_den += b * b;
				continue;
			}
			c->bad += !(fabs(a - b) <= atol + rtol * fabs(b));
		}
		d = fabs(a - b);
		if (d > c->max_abs || d != d)
			c->max_abs = d;
		if (b != 0 && d / fabs(b) > c->max_rel)
			c->max_rel = d / fabs(b);
		c->l2_num += d * d;
		c->l2_den += b * b;
	}
}

struct diag_lines {
	char text[8192];
	size_t len;
	bool echo;
};

static void keep_diag(void *ud, const char *line)
{
	struct diag_lines *d = ud;
	int n = snprintf(d->text + d->len, sizeof d->text - d->len, "%s\n", line);
	if (n > 0 && d->len + (size_t)n < sizeof d->text)
		d->len += (size_t)n;
	if (d->echo)
		fprintf(stderr, "%s\n", line);
}

static int data_sets(const char *dir, char (*sets)[4096], int max)
{
	int n = 0;
	for (int i = 0; i < 1000 && n < max; i++) {
		struct stat st;
		snprintf(sets[n], 4096, "%s/test_data_set_%d", dir, i);
		if (stat(sets[n], &st) == 0 && S_ISDIR(st.st_mode))
			n++;
		else if (i > 0)
			break;
	}
	return n;
}

/* Loads DIR/prefix_K.pb for K = 0, 1, ... into data; returns the count. */
static int load_set(struct ir_ctx *ctx, struct ir_module *data, const char *dir, const char *prefix,
                    struct ir_value **t, int max)
{
	int n = 0;
	for (; n < max; n++) {
		char path[4200];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
		if (stat(path, &st) != 0)
			break;
		if (!(t[n] = fe_load_tensor(ctx, data, path, prefix)))
			return -1;
	}
	return n;
}

int cmd_check(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct fe_wanted wanted = { 0 };
	struct diag_lines diag = { 0 };
	struct ir_ctx ctx;
	struct ir_module *m = NULL, *data = NULL;
	struct ir_value *ins[MAX_IO], *refs[MAX_IO];
	char(*names)[256] = calloc(MAX_IO, 256);
	char(*sets)[4096] = calloc(64, 4096);
	char model[4200];
	const char *dir = NULL, *keep = NULL;
	struct target target = { "cpu", "native", "sm_90" };
	char *work = NULL;
	double rtol = 1e-3, atol = 1e-7, max_l2 = -1, compile_ms = 0, run_ms = 0;
	bool tolerance_given = false;
	bool json = false, bad = false, passed = false;
	struct cg_stats cs = { 0 };
	struct loaded l = { 0 };
	struct cmp worst[MAX_IO];
	int status = EXIT_INPUT, nsets, nnames, nin, nout = 0;
	const char *error = NULL;

	ir_ctx_init(&ctx);
	ctx.diag = keep_diag;
	ctx.diag_ud = &diag;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(check_help, stdout);
			fputs(precision_help, stdout);
			status = 0;
			goto out;
		}
		if ((r = parse_model_opt(argc, argv, &i, &mo)) != 0) {
			if (r < 0)
				goto usage;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--rtol", true, &bad))) {
			rtol = atof(v);
			tolerance_given = true;
		} else if ((v = opt_value(argc, argv, &i, "--atol", true, &bad))) {
			atol = atof(v);
			tolerance_given = true;
		} else if ((v = opt_value(argc, argv, &i, "--max-rel-l2", true, &bad))) {
			char *e;
			max_l2 = strtod(v, &e);
			if (*e || !(max_l2 >= 0)) {
				usage_error("check: --max-rel-l2 takes a non-negative number");
				goto usage;
			}
			tolerance_given = true;
		} else if (opt_value(argc, argv, &i, "--json", false, &bad))
			json = true;
		else if ((v = opt_value(argc, argv, &i, "--keep", true, &bad)))
			keep = v;
		else if ((r = parse_target(argc, argv, &i, &target)) != 0) {
			if (r < 0)
				goto usage;
		} else if (bad)
			goto usage;
		else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("check: unknown option '%s'", argv[i]);
			goto usage;
		} else if (!dir) {
			dir = argv[i];
		} else {
			usage_error("check: more than one folder given");
			goto usage;
		}
	}
	if (!dir) {
		usage_error("check: no test folder given");
		goto usage;
	}
	if (mo.mixed && !tolerance_given)
		max_l2 = mo.amp.half == IR_BF16 ? 5e-2 : 1e-2;
	diag.echo = !json;
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	if ((nsets = data_sets(dir, sets, 64)) == 0) {
		ir_error(&ctx, "%s has no test_data_set_0 folder", dir);
		goto report;
	}
	if ((nnames = fe_input_names(&ctx, model, names, MAX_IO)) < 0)
		goto report;
	data = ir_module_new(&ctx, "data");
	if ((nin = load_set(&ctx, data, sets[0], "input", ins, MAX_IO)) < 0) {
		/* a model with inputs onnxc cannot take (sequences, say) has test
		 * data that is no tensor: the import says what is wrong */
		size_t mark = diag.len;
		int errors = ctx.nerrors;
		bool echo = diag.echo;
		diag.echo = false;
		m = load_model(&ctx, model, &mo);
		diag.echo = echo;
		if (!m) {
			memmove(diag.text, diag.text + mark, diag.len - mark + 1);
			diag.len -= mark;
			ctx.nerrors -= errors;
		} else {
			diag.len = mark;
			diag.text[mark] = 0;
			ctx.nerrors = errors;
		}
		if (echo)
			fputs(diag.text, stderr);
		goto report;
	}
	if (nin != nnames) {
		ir_error(&ctx, "%s has %d inputs but the model takes %d", sets[0], nin, nnames);
		goto report;
	}
	bind_shapes(&mo, ins, (const char(*)[256])names, nin);
	mo.fe.wanted = &wanted;
	{
		/* first attempt quietly: inputs that must be constants get frozen */
		size_t mark = diag.len;
		int errors = ctx.nerrors;
		bool echo = diag.echo;
		diag.echo = false;
		m = load_model(&ctx, model, &mo);
		/* each attempt may reveal more inputs needed as constants (an
		 * importer stops at the first missing one) */
		for (int attempt = 0; !m && attempt < 8; attempt++) {
			int frozen = mo.fe.nconsts;
			for (int w = 0; w < wanted.n && mo.fe.nconsts < 64; w++)
				for (int k = 0; k < nin; k++) {
					bool have = false;
					for (int c = 0; c < mo.fe.nconsts; c++)
						have |= !strcmp(mo.consts[c].name, names[k]);
					if (!have && !strcmp(names[k], wanted.names[w])) {
						struct fe_const_input *ci =
						        &mo.consts[mo.fe.nconsts++];
						ci->name = strdup(names[k]);
						ci->value = ins[k];
					}
				}
			if (mo.fe.nconsts == frozen)
				break;
			diag.len = mark;
			diag.text[mark] = 0;
			ctx.nerrors = errors;
			mo.fe.consts = mo.consts;
			for (int c = 0; c < mo.fe.nconsts; c++)
				mo.consts[c].used = false;
			m = load_model(&ctx, model, &mo);
		}
		diag.echo = echo;
		if (!m && diag.echo)
			fputs(diag.text + mark, stderr);
	}
	if (!m || !prepare_model(m, &mo))
		goto report;
	ctx.file = model;
	if (keep) {
		mkdir(keep, 0777);
		work = strdup(keep);
	} else if (!(work = temp_dir())) {
		ir_error(&ctx, "cannot create a temporary folder");
		goto report;
	}
	if (!compile_shared(m, work, &target, model, model_max_memory(&mo), &cs))
		goto report;
	compile_ms = cs.ms_total;
	if (!load(&ctx, work, "model", &l))
		goto report;
	nout = m->noutputs;
	memset(worst, 0, sizeof worst);
	passed = true;
	for (int s = 0; s < nsets; s++) {
		const void *in[MAX_IO];
		void **outs;
		int nref, st;
		double t0;
		if (s > 0 && load_set(&ctx, data, sets[s], "input", ins, MAX_IO) != nin)
			goto report;
		if ((nref = load_set(&ctx, data, sets[s], "output", refs, MAX_IO)) != m->noutputs) {
			ir_error(&ctx, "%s has %d reference outputs, the model %d", sets[s], nref,
			         m->noutputs);
			goto report;
		}
		for (int k = 0; k < mo.fe.nconsts; k++)
			for (int j = 0; j < nin; j++)
				if (s > 0 && !strcmp(names[j], mo.consts[k].name) &&
				    memcmp(ins[j]->data, mo.consts[k].value->data,
				           (size_t)ir_type_elems(&ins[j]->type) *
				                   (size_t)ir_dtype_size(ins[j]->type.dtype))) {
					ir_error(&ctx,
					         "input '%s' was frozen as a constant but differs "
					         "in %s",
					         names[j], sets[s]);
					goto report;
				}
		if (!gather_inputs(&ctx, m, ins, (const char(*)[256])names, nin, in))
			goto report;
		outs = alloc_outputs(m);
		t0 = now_ms();
		st = l.run(l.inst, in, outs);
		run_ms += now_ms() - t0;
		if (st) {
			ir_error(&ctx, "the run failed: %s", l.strerror(st));
			free_outputs(m, outs);
			goto report;
		}
		for (int i = 0; i < m->noutputs; i++) {
			struct cmp c;
			const struct ir_type *ot = &m->outputs[i]->type;
			char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
			bf16_as_u16(refs[i], ot->dtype);
			if (!ir_type_eq(ot, &refs[i]->type)) {
				ir_error(&ctx, "output %d '%s' is %s but the reference is %s", i,
				         m->outputs[i]->name, ir_type_str(ot, a, sizeof a),
				         ir_type_str(&refs[i]->type, b, sizeof b));
				passed = false;
				continue;
			}
			compare(ot->dtype, outs[i], refs[i]->data, ir_type_elems(ot), rtol, atol,
			        &c);
			if (max_l2 >= 0 && ir_dtypes[ot->dtype].is_float)
				c.bad = 0; /* judged on the whole run below */
			if (c.bad)
				passed = false;
			if (c.max_abs > worst[i].max_abs)
				worst[i].max_abs = c.max_abs;
			if (c.max_rel > worst[i].max_rel)
				worst[i].max_rel = c.max_rel;
			worst[i].l2_num += c.l2_num;
			worst[i].l2_den += c.l2_den;
			worst[i].bad += c.bad;
		}
		free_outputs(m, outs);
	}
	run_ms /= nsets;
	for (int i = 0; max_l2 >= 0 && i < nout; i++)
		if (ir_dtypes[m->outputs[i]->type.dtype].is_float && rel_l2(&worst[i]) > max_l2) {
			worst[i].bad = 1;
			passed = false;
		}
	status = passed ? 0 : EXIT_INPUT;
report:
	if (ctx.nerrors) {
		passed = false;
		status = EXIT_INPUT;
		error = diag.len ? diag.text : "error";
	}
	if (json) {
		printf("{\"passed\": %s, \"compile_ms\": %.1f, \"run_ms\": %.3f, \"outputs\": [",
		       passed ? "true" : "false", compile_ms, run_ms);
		for (int i = 0; m && i < nout; i++) {
			double l2 = rel_l2(&worst[i]);
			printf("%s{\"name\": ", i ? ", " : "");
			json_string(stdout, m->outputs[i]->name);
			printf(", \"max_abs_err\": %.6g, \"max_rel_err\": %.6g, \"rel_l2_err\": "
			       "%.6g, "
			       "\"mismatches\": %lld}",
			       worst[i].max_abs, worst[i].max_rel, l2, (long long)worst[i].bad);
		}
		printf("], \"frozen_inputs\": %d", mo.fe.nconsts);
		if (error) {
			printf(", \"error\": ");
			json_string(stdout, error);
		}
		printf("}\n");
	} else if (!ctx.nerrors) {
		for (int i = 0; m && i < nout; i++) {
			double l2 = rel_l2(&worst[i]);
			printf("output %s: max abs err %.3g, max rel err %.3g, rel l2 err %.3g%s\n",
			       m->outputs[i]->name, worst[i].max_abs, worst[i].max_rel, l2,
			       worst[i].bad ? " - MISMATCH" : "");
		}
		printf("%s (compile %.0f ms, run %.3f ms)\n", passed ? "passed" : "FAILED",
		       compile_ms, run_ms);
	}
	goto out;
usage:
	status = EXIT_USAGE;
out:
	unload(&l);
	ir_module_free(m);
	ir_module_free(data);
	if (work && !keep)
		rm_tree(work);
	free(work);
	free_model_opts(&mo);
	free(names);
	free(sets);
	return status;
}
