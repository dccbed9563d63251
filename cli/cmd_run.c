/*
 * cmd_run.c - `onnxc run` and `onnxc check`: compile, load, run, compare.
 *
 * Both compile the model exactly as `onnxc compile` does, additionally link
 * a shared object (NAME.so) and load it with dlopen, so what runs is the
 * same generated code a user links - not a separate interpreter. On the CPU
 * the shared object is linked without the runtime (cg_options.host_runtime):
 * onnxc carries the whole runtime and exports its rt_ functions, and dlopen
 * binds the model's calls to them (the link took a third of a small model's
 * build). A CUDA model links its runtime in. run keeps its builds in a cache (run_cache.c) keyed by every
 * byte the compile reads and the options, and a hit loads the build without
 * importing the model; check builds in a temporary folder.
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

/* ------------------------------------------------------------------------ */
/* A compiled model loaded from its shared object                          */
/* ------------------------------------------------------------------------ */

struct loaded {
	void *so;
	int (*create)(void **, const char *);
	/* checked: the buffers' sizes come from the manifest (or the module),
	 * and a cache folder is no place to trust blindly */
	int (*run)(void *, const void *const *, const size_t *, void *const *, const size_t *);
	void (*destroy)(void *);
	const char *(*strerror)(int);
	int (*output_shape)(void *, int, int64_t *);
	void *inst;
};

/* Output i's type after the last successful run, as the model reports
 * it: an If whose branches give different shapes picks it at run time
 * (the signature's type is then the buffer's capacity, flat). */
static struct ir_type run_type(const struct loaded *l, const struct run_sig *sig, int i)
{
	struct ir_type t = sig->out[i].type;
	int64_t dims[IR_MAX_RANK];
	int r = l->output_shape(l->inst, i, dims);
	IR_ASSERT(r >= 0 && r <= IR_MAX_RANK);
	t.rank = r;
	memcpy(t.dims, dims, sizeof *dims * (size_t)r);
	IR_ASSERT(ir_type_elems(&t) <= ir_type_elems(&sig->out[i].type));
	return t;
}

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
	SYM(run, "run_checked")
	SYM(destroy, "destroy")
	SYM(strerror, "strerror")
	SYM(output_shape, "output_shape")
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
		                 .host_runtime = !strcmp(t->name, "cpu"),
		                 .quiet = true,
		                 .max_memory = max_memory };
	return cg_compile(m, &co, stats);
}

static size_t tensor_bytes(const struct ir_type *t)
{
	return (size_t)ir_type_elems(t) * (size_t)ir_dtype_size(t->dtype);
}

/* Buffers for s's outputs and their sizes (malloc'd; NULL when out of
 * memory). */
static void **alloc_outputs(const struct run_sig *s, size_t **bytes)
{
	void **out = calloc((size_t)s->nout + 1, sizeof *out);
	bool ok = out && (*bytes = calloc((size_t)s->nout + 1, sizeof **bytes));
	for (int i = 0; ok && i < s->nout; i++) {
		(*bytes)[i] = tensor_bytes(&s->out[i].type);
		ok = (out[i] = calloc(1, (*bytes)[i] ? (*bytes)[i] : 1)) != NULL;
	}
	if (!ok && out) {
		for (int i = 0; i < s->nout; i++)
			free(out[i]);
		free(out);
		return NULL;
	}
	return out;
}

static void free_outputs(const struct run_sig *s, void **out, size_t *bytes)
{
	for (int i = 0; out && i < s->nout; i++)
		free(out[i]);
	free(out);
	free(bytes);
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

/* The data given for s's inputs, matched by name (data[k] read from
 * files[k] for the input names[k]), into in[] and in_bytes[] (s->nin
 * each). */
static bool gather_inputs(struct ir_ctx *ctx, const struct run_sig *s, struct ir_value *const *data,
                          const char *const *names, const char *const *files, int ndata,
                          const void **in, size_t *in_bytes)
{
	for (int i = 0; i < s->nin; i++) {
		const struct run_tensor *v = &s->in[i];
		char want[IR_TYPE_STR_MAX], have[IR_TYPE_STR_MAX];
		int k;
		for (k = 0; k < ndata && strcmp(names[k], v->name); k++)
			;
		if (k == ndata) {
			ir_error(ctx, "no data for input '%s' (%s); give it with --input %s=FILE",
			         v->name, ir_type_str(&v->type, want, sizeof want), v->name);
			return false;
		}
		bf16_as_u16(data[k], v->type.dtype);
		if (!ir_type_eq(&data[k]->type, &v->type)) {
			ir_error(ctx, "%s: input '%s' takes %s, the file holds %s", files[k],
			         v->name, ir_type_str(&v->type, want, sizeof want),
			         ir_type_str(&data[k]->type, have, sizeof have));
			return false;
		}
		in[i] = data[k]->data;
		in_bytes[i] = tensor_bytes(&v->type);
	}
	return true;
}

/* Shape bindings from data tensors, for the inputs the user bound neither
 * with --shape nor --const. */
static void bind_shapes(struct model_opts *mo, struct ir_value *const *data,
                        const char *const *names, int n)
{
	for (int k = 0; k < n && mo->fe.nshapes < 64; k++) {
		struct fe_shape_binding *sb = &mo->shapes[mo->fe.nshapes];
		bool given = model_opts_const(mo, names[k]);
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
        "Compiles the model (cached), runs it on the inputs and prints the outputs'\n"
        "shapes and the median run time. Inputs are ONNX TensorProto files (.pb) or\n"
        "NumPy arrays (.npy); symbolic dimensions are bound from them.\n"
        "\n"
        "options:\n"
        "  --input NAME=FILE    an input by graph input name (or FILE alone: the graph\n"
        "                       inputs not given otherwise, in order)\n"
        "  --output-dir DIR     write every output to DIR/NAME.npy (DIR created if\n"
        "                       missing)\n"
        "  --repeat N           time N runs after a warm-up run (default 10)\n"
        "  --cache-dir DIR      where compiled models are kept (default\n"
        "                       $XDG_CACHE_HOME/onnxc or ~/.cache/onnxc; created if\n"
        "                       missing)\n"
        "  -v, --verbose        say whether the cache had the build, and what it is\n"
        "                       keyed by\n"
        "  --cpu CPU            LLVM CPU name for the kernels (default native)\n"
        "  --target T           cpu (default) or cuda (needs a CUDA GPU to run)\n"
        "  --arch ARCH          the GPU for --target cuda (default sm_90)\n"
        "  --shape, --dim, --const, --verify, --dump-after   as for onnxc compile\n"
        "                       (--verify, --dump-after and --write-precision-plan\n"
        "                       compile anew)\n";

/* What one onnxc run works with. */
struct run_job {
	struct ir_ctx ctx;
	struct model_opts mo;
	const char *model, *outdir, *cache;
	struct target target;
	/* one per --input (argc entries): the graph input it binds (NULL: by
	 * position), its file, its data */
	char **names;
	const char **files;
	struct ir_value **data;
	int n, repeat;
	bool verbose;
	struct run_key key;
	struct run_sig sig;
	char *root, *dir;
	bool temporary; /* dir is not the cache's: remove it when done */
};

/* A --calibrate file in the build key. */
static void key_calib(void *ud, const char *input, const char *path)
{
	key_file(ud, "calibrate", input ? input : "", path);
}

/* The key of this run's build (run_cache.c lists what it covers). false
 * when the model cannot be keyed without the import: then nothing is
 * cached. */
static bool run_key(struct run_job *j)
{
	struct run_key *k = &j->key;
	char buf[4096];
	bool keyed;
	key_printf(k, "onnxc run cache 1\n");
	if (!key_build(k, &j->ctx, j->target.name, j->target.cpu))
		return false;
	key_printf(k, "target %s cpu %s arch %s\n", j->target.name, j->target.cpu, j->target.arch);
	keyed = key_model(k, &j->ctx, j->model, !is_ir_text(j->model));
	for (int i = 0; i < j->mo.fe.nshapes; i++) {
		key_printf(k, "shape ");
		key_name(k, j->mo.shapes[i].input);
		for (int d = 0; d < j->mo.shapes[i].rank; d++)
			key_printf(k, " %lld", (long long)j->mo.shapes[i].dims[d]);
		key_printf(k, "\n");
	}
	for (int i = 0; i < j->mo.fe.ndims; i++) {
		key_printf(k, "dim ");
		key_name(k, j->mo.dims[i].name);
		key_printf(k, " %lld\n", (long long)j->mo.dims[i].value);
	}
	for (int i = 0; i < j->mo.fe.nconsts; i++)
		key_file(k, "const", j->mo.consts[i].name, j->mo.consts[i].path);
	precision_config(&j->mo, buf, sizeof buf);
	key_printf(k, "precision %s\nmax-memory %lld\n", buf, (long long)model_max_memory(&j->mo));
	if (j->mo.mixed)
		calib_files(j->mo.calib_args, j->mo.ncalib, key_calib, k);
	if (j->mo.passes.no_fuse_attention)
		key_printf(k, "no-fuse-attention\n");
	for (int i = 0; i < j->n; i++) {
		char tb[IR_TYPE_STR_MAX];
		key_printf(k, "input ");
		if (j->names[i])
			key_name(k, j->names[i]);
		else
			key_printf(k, "#%d", i);
		key_printf(k, " %s\n", ir_type_str(&j->data[i]->type, tb, sizeof tb));
	}
	return keyed;
}

/* Inputs given without a name take the graph inputs in order, skipping
 * those given otherwise (by name or with --const). */
static bool name_inputs(struct run_job *j, const char *const *order, int norder)
{
	for (int k = 0, pos = 0; k < j->n; k++) {
		if (j->names[k])
			continue;
		for (; pos < norder; pos++) {
			bool taken = model_opts_const(&j->mo, order[pos]);
			for (int i = 0; i < j->n && !taken; i++)
				taken = j->names[i] && !strcmp(j->names[i], order[pos]);
			if (!taken)
				break;
		}
		if (pos == norder) {
			ir_error(&j->ctx, "--input %s: the model has no more inputs to take it",
			         j->files[k]);
			return false;
		}
		if (!(j->names[k] = strdup(order[pos++]))) {
			ir_error(&j->ctx, "out of memory");
			return false;
		}
	}
	return true;
}

/* A build of this key in the cache: its manifest matches and the files
 * are there. */
static bool cache_hit(struct run_job *j)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/model.so", j->dir);
	if (stat(path, &st) != 0)
		return false;
	snprintf(path, sizeof path, "%s/model.weights", j->dir);
	if (stat(path, &st) != 0)
		return false;
	if (manifest_read(&j->ctx, j->dir, &j->key, &j->sig))
		return true;
	/* a torn or foreign manifest: start over */
	run_sig_free(&j->sig);
	run_sig_init(&j->sig, &j->ctx);
	return false;
}

/* Imports and compiles the model into a new folder; stores the build in
 * the cache when cached (else j->dir is temporary). */
static bool build(struct run_job *j, bool cached)
{
	struct input_decls d;
	struct ir_module *m = NULL;
	struct cg_stats cs;
	char tmp[4200];
	bool ok = false;
	if (j->verbose)
		printf("reading the inputs of %s\n", j->model);
	if (!input_decls_load(&j->ctx, j->model, &j->mo, &d))
		return false;
	j->sig.order = ir_arena_alloc(&j->sig.arena, sizeof *j->sig.order * (size_t)(d.n + 1));
	for (int i = 0; i < d.n; i++)
		j->sig.order[j->sig.norder++] = ir_arena_strdup(&j->sig.arena, d.v[i].name);
	if (!name_inputs(j, j->sig.order, j->sig.norder) ||
	    !check_input_data(&j->ctx, &d, &j->mo, (const char *const *)j->names, j->files, j->data,
	                      j->n))
		goto out;
	if (!is_ir_text(j->model))
		bind_shapes(&j->mo, j->data, (const char *const *)j->names, j->n);
	if (j->verbose)
		printf("importing %s\n", j->model);
	if (!(m = load_model(&j->ctx, j->model, &j->mo)) || !prepare_model(m, &j->mo))
		goto out;
	j->ctx.file = j->model;
	run_sig_from_module(&j->sig, m);
	snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", j->dir);
	if (!cached) {
		free(j->dir);
		j->dir = temp_dir();
		j->temporary = true;
	} else if (!mkdtemp(tmp)) {
		ir_error(&j->ctx, "cannot create a folder in the cache %s: %s", j->root,
		         strerror(errno));
		goto out;
	}
	if (!j->dir) {
		ir_error(&j->ctx, "cannot create a temporary folder");
		goto out;
	}
	if (!compile_shared(m, cached ? tmp : j->dir, &j->target, j->model,
	                    model_max_memory(&j->mo), &cs)) {
		if (cached)
			rm_tree(tmp);
		goto out;
	}
	if (cached) {
		/* complete before it has its name: a run that sees the folder
		 * sees all of it */
		if (!manifest_write(tmp, &j->key, &j->sig)) {
			ir_error(&j->ctx, "cannot write the manifest in %s", tmp);
			rm_tree(tmp);
			goto out;
		}
		if (rename(tmp, j->dir) != 0) {
			rm_tree(j->dir); /* a stale build of this key */
			if (rename(tmp, j->dir) != 0) {
				free(j->dir); /* taken meanwhile, or not ours to clear */
				j->dir = strdup(tmp);
				j->temporary = true;
			}
		}
	}
	printf("compiled in %.0f ms into %s\n", cs.ms_total, j->dir);
	ok = j->dir != NULL;
out:
	ir_module_free(m);
	input_decls_free(&d);
	return ok;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Runs the loaded model repeat times after a warm-up; prints the outputs'
 * types and times, writes the outputs where asked. */
static bool run_loaded(struct run_job *j, struct loaded *l, const void **in, const size_t *in_bytes)
{
	size_t *out_bytes = NULL;
	void **out = alloc_outputs(&j->sig, &out_bytes);
	double *t = calloc((size_t)j->repeat, sizeof *t);
	bool ok = false;
	int st;
	if (!out || !t) {
		ir_error(&j->ctx, "out of memory for the outputs");
		goto out;
	}
	st = l->run(l->inst, in, in_bytes, out, out_bytes); /* warm-up */
	for (int r = 0; r < j->repeat && !st; r++) {
		double t0 = now_ms();
		st = l->run(l->inst, in, in_bytes, out, out_bytes);
		t[r] = now_ms() - t0;
	}
	if (st) {
		ir_error(&j->ctx, "the run failed: %s", l->strerror(st));
		goto out;
	}
	if (j->outdir && !make_dirs(j->outdir)) {
		ir_error(&j->ctx, "cannot create the output folder %s: %s", j->outdir,
		         strerror(errno));
		goto out;
	}
	qsort(t, (size_t)j->repeat, sizeof *t, cmp_double);
	ok = true;
	for (int i = 0; i < j->sig.nout; i++) {
		const struct run_tensor *o = &j->sig.out[i];
		struct ir_type ot = run_type(l, &j->sig, i);
		char tb[IR_TYPE_STR_MAX], nb[1024];
		printf("output %s : %s\n", ir_escape(o->name, nb, sizeof nb),
		       ir_type_str(&ot, tb, sizeof tb));
		if (j->outdir) {
			char p[4200];
			snprintf(p, sizeof p, "%s/%s.npy", j->outdir, o->name);
			for (char *c = p + strlen(j->outdir) + 1; *c; c++)
				if (*c == '/')
					*c = '_';
			if (!fe_save_npy(p, &ot, out[i])) {
				ir_error(&j->ctx, "cannot write %s", p);
				ok = false;
			}
		}
	}
	printf("median run time %.3f ms over %d runs (min %.3f, max %.3f)\n", t[j->repeat / 2],
	       j->repeat, t[0], t[j->repeat - 1]);
out:
	free(t);
	free_outputs(&j->sig, out, out_bytes);
	return ok;
}

/* run's own options: 1 matched, 0 not, -1 after a usage error. */
static int run_opt(int argc, char **argv, int *i, void *ud)
{
	struct run_job *j = ud;
	bool bad = false;
	const char *v;
	int r;
	if ((v = opt_value(argc, argv, i, "--input", true, &bad))) {
		const char *eq = strchr(v, '=');
		j->names[j->n] = eq && eq != v ? strndup(v, (size_t)(eq - v)) : NULL;
		j->files[j->n++] = eq && eq != v ? eq + 1 : v;
	} else if ((v = opt_value(argc, argv, i, "--output-dir", true, &bad))) {
		j->outdir = v;
	} else if ((v = opt_value(argc, argv, i, "--repeat", true, &bad))) {
		char *e;
		long n = strtol(v, &e, 10);
		if (*e || e == v || n < 1 || n > 1000000) {
			usage_error("run: --repeat takes a count from 1 to 1000000, not '%s'", v);
			return -1;
		}
		j->repeat = (int)n;
	} else if ((v = opt_value(argc, argv, i, "--cache-dir", true, &bad))) {
		j->cache = v;
	} else if (opt_value(argc, argv, i, "--verbose", false, &bad) ||
	           opt_value(argc, argv, i, "-v", false, &bad)) {
		j->verbose = true;
	} else if ((r = parse_target(argc, argv, i, &j->target)) != 0) {
		return r;
	} else {
		return bad ? -1 : 0;
	}
	return 1;
}

int cmd_run(int argc, char **argv)
{
	struct run_job *j = calloc(1, sizeof *j);
	struct cmd_args args;
	struct ir_module *data = NULL;
	struct loaded l = { 0 };
	const void **in = NULL;
	size_t *in_bytes = NULL;
	int status = EXIT_INPUT, r;
	bool cached;

	if (!j) {
		fprintf(stderr, "onnxc: error: out of memory\n");
		return EXIT_INPUT;
	}
	ir_ctx_init(&j->ctx);
	run_sig_init(&j->sig, &j->ctx);
	j->names = calloc((size_t)argc, sizeof *j->names);
	j->files = calloc((size_t)argc, sizeof *j->files);
	j->data = calloc((size_t)argc, sizeof *j->data);
	if (!j->names || !j->files || !j->data) {
		ir_error(&j->ctx, "out of memory");
		goto out;
	}
	j->target = (struct target){ "cpu", "native", "sm_90" };
	j->repeat = 10;
	args = (struct cmd_args){ "run", run_help, &j->mo, run_opt, j, &j->model };
	if ((r = parse_args(argc, argv, &args)) == 2) {
		status = 0;
		goto out;
	}
	if (r < 0)
		goto usage;
	if (!j->model) {
		usage_error("run: no model given");
		goto usage;
	}
	if (!model_opts_fit("run", j->model, &j->mo))
		goto usage;
	data = ir_module_new(&j->ctx, "inputs");
	for (int k = 0; k < j->n; k++)
		if (!(j->data[k] = fe_load_tensor(&j->ctx, data, j->files[k],
		                                  j->names[k] ? j->names[k] : "input")))
			goto out;
	if (!(j->root = cache_root(&j->ctx, j->cache)))
		goto out;
	j->ctx.file = j->model;
	cached = run_key(j);
	if (j->ctx.nerrors)
		goto out;
	if (j->key.failed) {
		ir_error(&j->ctx, "out of memory");
		goto out;
	}
	/* --verify and --dump-after are about the compile: they get one */
	if (cached && (j->mo.passes.verify || j->mo.passes.dump_after || j->mo.plan_out)) {
		cached = false;
		j->key.why = "--verify, --dump-after and --write-precision-plan compile anew";
	}
	{
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/%016llx", j->root,
		         (unsigned long long)key_hash(&j->key));
		j->dir = strdup(dir);
	}
	if (cached && cache_hit(j)) {
		if (j->verbose)
			printf("cache: hit %s\n", j->dir);
		if (!name_inputs(j, j->sig.order, j->sig.norder))
			goto out;
	} else {
		if (j->verbose)
			printf(cached ? "cache: miss %s\n" : "cache: not used (%s)\n",
			       cached ? j->dir : j->key.why);
		if (!build(j, cached))
			goto out;
	}
	in = calloc((size_t)j->sig.nin + 1, sizeof *in);
	in_bytes = calloc((size_t)j->sig.nin + 1, sizeof *in_bytes);
	if (!in || !in_bytes) {
		ir_error(&j->ctx, "out of memory");
		goto out;
	}
	if (!gather_inputs(&j->ctx, &j->sig, j->data, (const char *const *)j->names, j->files, j->n,
	                   in, in_bytes) ||
	    !load(&j->ctx, j->dir, "model", &l) || !run_loaded(j, &l, in, in_bytes))
		goto out;
	status = j->ctx.nerrors ? EXIT_INPUT : 0;
	goto out;
usage:
	status = EXIT_USAGE;
out:
	unload(&l);
	if (j->temporary && j->dir)
		rm_tree(j->dir);
	free(in);
	free(in_bytes);
	ir_module_free(data);
	free_model_opts(&j->mo);
	key_free(&j->key);
	run_sig_free(&j->sig);
	for (int k = 0; k < j->n; k++)
		free(j->names[k]);
	free(j->names);
	free(j->files);
	free(j->data);
	free(j->root);
	free(j->dir);
	free(j);
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
        "on every data set and compares the outputs (by the names the output_K.pb\n"
        "carry, else in order): passes when every element\n"
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
        "  --keep DIR           compile into DIR (created if missing) and keep the files\n"
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
		if (!ir_dtype_float_valued(t)) {
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
			/* an infinity matches itself only (inf is within any
			 * relative tolerance of inf) */
			c->bad += isinf(a) || isinf(b) || !(fabs(a - b) <= atol + rtol * fabs(b));
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

/* How many test_data_set_N folders DIR has: N = 0, 1, ... up to the first
 * missing. */
static int data_sets(const char *dir)
{
	int n = 0;
	for (;; n++) {
		char path[4200];
		struct stat st;
		snprintf(path, sizeof path, "%s/test_data_set_%d", dir, n);
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			return n;
	}
}

/* One data set's files: DIR/prefix_K.pb for K = 0, 1, ... (arrays in the
 * data module's arena) */
struct data_set {
	struct ir_value **t;
	const char **paths;
	const char **names; /* what each TensorProto calls itself ("" if nothing) */
	int n;
};

/* Loads a data set's input or output files into data; false after
 * diagnostics. */
static bool load_set(struct ir_ctx *ctx, struct ir_module *data, const char *dir, int set,
                     const char *prefix, struct data_set *ds)
{
	int count = 0;
	for (;; count++) {
		char path[4200];
		struct stat st;
		snprintf(path, sizeof path, "%s/test_data_set_%d/%s_%d.pb", dir, set, prefix,
		         count);
		if (stat(path, &st) != 0)
			break;
	}
	ds->t = ir_arena_alloc(&data->arena, sizeof *ds->t * (size_t)(count + 1));
	ds->paths = ir_arena_alloc(&data->arena, sizeof *ds->paths * (size_t)(count + 1));
	ds->names = ir_arena_alloc(&data->arena, sizeof *ds->names * (size_t)(count + 1));
	for (ds->n = 0; ds->n < count; ds->n++) {
		char *path = ir_arena_printf(&data->arena, "%s/test_data_set_%d/%s_%d.pb", dir, set,
		                             prefix, ds->n);
		const char *err, *name;
		unsigned char *bytes;
		size_t len, n;
		ds->paths[ds->n] = path;
		if (!(ds->t[ds->n] = fe_load_tensor(ctx, data, path, prefix)))
			return false;
		/* the loader names the value; the name in the file says which
		 * output it is */
		if (!(bytes = ir_read_file(ctx, path, &len, &err)) ||
		    !pb_tensor_name(bytes, len, &name, &n))
			name = NULL, n = 0;
		ds->names[ds->n] = ir_arena_strndup(&data->arena, name ? name : "", n);
		ir_free(ctx, bytes);
	}
	return true;
}

/* Which output of s each reference in ds is: the one of the name the file
 * carries, else the one in its position. false after diagnostics. */
static bool match_outputs(struct ir_ctx *ctx, const struct run_sig *s, const struct data_set *ds,
                          int *which)
{
	bool ok = true;
	for (int r = 0; r < ds->n; r++) {
		int i = r;
		if (ds->names[r][0]) {
			for (i = 0; i < s->nout && strcmp(s->out[i].name, ds->names[r]); i++)
				;
			if (i == s->nout) {
				char list[512] = "";
				size_t at = 0;
				for (int o = 0; o < s->nout && at < sizeof list - 80; o++)
					at += (size_t)snprintf(list + at, sizeof list - at,
					                       "%s'%.60s'", o ? ", " : "",
					                       s->out[o].name);
				ir_error(ctx,
				         "%s is the reference for output '%s', which the model "
				         "does not have (its outputs: %s)",
				         ds->paths[r], ds->names[r], list);
				ok = false;
				continue;
			}
		}
		for (int q = 0; q < r; q++)
			if (which[q] == i) {
				ir_error(ctx, "%s and %s are both references for output '%s'",
				         ds->paths[q], ds->paths[r], s->out[i].name);
				ok = false;
			}
		which[r] = i;
	}
	return ok;
}

/* Inputs frozen as constants (from the first data set) must hold the same
 * value in every other: the compiled model has that value built in. */
static bool frozen_match(struct ir_ctx *ctx, const struct model_opts *mo, const char *const *names,
                         const struct data_set *ds)
{
	for (int c = 0; c < mo->fe.nconsts; c++) {
		const struct ir_value *v = mo->consts[c].value;
		if (!v) /* the user's --const: a specialization they asked for */
			continue;
		for (int k = 0; k < ds->n; k++)
			if (!strcmp(names[k], mo->consts[c].name) &&
			    (!ir_type_eq(&ds->t[k]->type, &v->type) ||
			     memcmp(ds->t[k]->data, v->data, tensor_bytes(&v->type)))) {
				char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
				ir_error(ctx,
				         "input '%s' was frozen as a constant (%s from "
				         "test_data_set_0) but %s holds another value (%s)",
				         names[k], ir_type_str(&v->type, a, sizeof a), ds->paths[k],
				         ir_type_str(&ds->t[k]->type, b, sizeof b));
				return false;
			}
	}
	return true;
}

/* What check's own options set. */
struct check_args {
	double rtol, atol, max_l2;
	bool tolerance_given, json;
	const char *keep;
	struct target target;
};

/* A tolerance option (--rtol, --atol): finite and >= 0. 1, or
 * -1 after a usage error. */
static int tolerance(struct check_args *a, const char *opt, const char *v, double *out)
{
	char *e;
	double x = strtod(v, &e);
	if (*e || e == v || !(x >= 0) || x > 1e300) {
		usage_error("check: %s takes a non-negative number, not '%s'", opt, v);
		return -1;
	}
	*out = x;
	a->tolerance_given = true;
	return 1;
}

/* check's own options: 1 matched, 0 not, -1 after a usage error. */
static int check_opt(int argc, char **argv, int *i, void *ud)
{
	struct check_args *a = ud;
	bool bad = false;
	const char *v;
	int r;
	if ((v = opt_value(argc, argv, i, "--rtol", true, &bad)))
		return tolerance(a, "--rtol", v, &a->rtol);
	if ((v = opt_value(argc, argv, i, "--atol", true, &bad)))
		return tolerance(a, "--atol", v, &a->atol);
	if (opt_value(argc, argv, i, "--json", false, &bad)) {
		a->json = true;
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--keep", true, &bad))) {
		a->keep = v;
		return 1;
	}
	if ((r = parse_target(argc, argv, i, &a->target)) != 0)
		return r;
	return bad ? -1 : 0;
}

int cmd_check(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct fe_wanted wanted = { 0 };
	struct diag_lines diag = { 0 };
	struct input_decls decls = { 0 };
	struct ir_ctx ctx;
	struct ir_module *m = NULL, *data = NULL;
	struct data_set *ins = calloc(1, sizeof *ins), *refs = calloc(1, sizeof *refs);
	struct run_sig sig;
	const char **names = NULL;
	char model[4200];
	const char *dir = NULL, *keep = NULL;
	struct check_args ca = {
		.rtol = 1e-3, .atol = 1e-7, .max_l2 = -1, .target = { "cpu", "native", "sm_90" }
	};
	struct cmd_args args = { "check", check_help, &mo, check_opt, &ca, &dir, .folder = true };
	struct target target;
	char *work = NULL;
	double rtol, atol, max_l2, compile_ms = 0, run_ms = 0;
	bool json, passed = false;
	struct cg_stats cs = { 0 };
	struct loaded l = { 0 };
	struct cmp *worst = NULL;
	const void **in = NULL;
	size_t *in_bytes = NULL;
	int status = EXIT_INPUT, nsets, nout = 0, parsed;
	const char *error = NULL;

	ir_ctx_init(&ctx);
	run_sig_init(&sig, &ctx);
	ctx.diag = keep_diag;
	ctx.diag_ud = &diag;
	if (!ins || !refs) {
		ir_error(&ctx, "out of memory");
		goto out;
	}
	if ((parsed = parse_args(argc, argv, &args)) == 2) {
		status = 0;
		goto out;
	}
	if (parsed < 0)
		goto usage;
	rtol = ca.rtol;
	atol = ca.atol;
	/* --max-rel-l2 is a model option too: the budget of --calibrate */
	max_l2 = mo.max_l2_given ? mo.amp.max_rel_l2 : ca.max_l2;
	ca.tolerance_given |= mo.max_l2_given;
	keep = ca.keep;
	target = ca.target;
	if (!dir) {
		usage_error("check: no test folder given");
		goto usage;
	}
	json = ca.json;
	if (mo.mixed && !ca.tolerance_given)
		max_l2 = mo.amp.half == IR_BF16 ? 5e-2 : 1e-2;
	diag.echo = !json;
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	if ((nsets = data_sets(dir)) == 0) {
		ir_error(&ctx, "%s has no test_data_set_0 folder", dir);
		goto report;
	}
	if (!input_decls_load(&ctx, model, &mo, &decls))
		goto report;
	data = ir_module_new(&ctx, "data");
	if (!load_set(&ctx, data, dir, 0, "input", ins)) {
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
	if (ins->n != decls.n) {
		ir_error(&ctx, "%s/test_data_set_0 has %d inputs but the model takes %d", dir,
		         ins->n, decls.n);
		goto report;
	}
	ctx.file = model;
	names = ir_arena_alloc(&data->arena, sizeof *names * (size_t)(ins->n + 1));
	{
		/* input_K.pb is the K-th graph input; those the user gave with
		 * --const are not bound from the data */
		size_t size = sizeof(void *) * (size_t)(ins->n + 1);
		const char **bnames = ir_arena_alloc(&data->arena, size),
		           **bfiles = ir_arena_alloc(&data->arena, size);
		struct ir_value **bdata = ir_arena_alloc(&data->arena, size);
		int nb = 0;
		for (int k = 0; k < ins->n; k++) {
			names[k] = decls.v[k].name;
			if (model_opts_const(&mo, names[k]))
				continue;
			bnames[nb] = names[k];
			bfiles[nb] = ins->paths[k];
			bdata[nb++] = ins->t[k];
		}
		if (!check_input_data(&ctx, &decls, &mo, bnames, bfiles, bdata, nb))
			goto report;
		bind_shapes(&mo, bdata, bnames, nb);
	}
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
				for (int k = 0; k < ins->n; k++) {
					if (!model_opts_const(&mo, names[k]) &&
					    !strcmp(names[k], wanted.names[w])) {
						struct fe_const_input *ci =
						        &mo.consts[mo.fe.nconsts++];
						ci->name = strdup(names[k]);
						ci->value = ins->t[k];
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
	if (keep && !make_dirs(keep)) {
		ir_error(&ctx, "cannot create %s: %s", keep, strerror(errno));
		goto report;
	}
	if (keep) {
		work = strdup(keep);
	} else if (!(work = temp_dir())) {
		ir_error(&ctx, "cannot create a temporary folder");
		goto report;
	}
	if (!compile_shared(m, work, &target, model, model_max_memory(&mo), &cs))
		goto report;
	compile_ms = cs.ms_total;
	run_sig_from_module(&sig, m);
	ir_module_free(m); /* its weights are in the build now */
	m = NULL;
	if (!load(&ctx, work, "model", &l))
		goto report;
	nout = sig.nout;
	worst = calloc((size_t)nout + 1, sizeof *worst);
	in = calloc((size_t)sig.nin + 1, sizeof *in);
	in_bytes = calloc((size_t)sig.nin + 1, sizeof *in_bytes);
	if (!worst || !in || !in_bytes) {
		ir_error(&ctx, "out of memory");
		goto report;
	}
	passed = true;
	for (int s = 0; s < nsets; s++) {
		int *which;
		size_t *out_bytes = NULL;
		void **outs;
		int st;
		double t0;
		if (s > 0 && !load_set(&ctx, data, dir, s, "input", ins))
			goto report;
		if (ins->n != decls.n) {
			ir_error(&ctx, "%s/test_data_set_%d has %d inputs but the model takes %d",
			         dir, s, ins->n, decls.n);
			goto report;
		}
		if (!load_set(&ctx, data, dir, s, "output", refs))
			goto report;
		which = ir_arena_alloc(&data->arena, sizeof *which * (size_t)(refs->n + 1));
		if (refs->n != sig.nout) {
			ir_error(&ctx, "%s/test_data_set_%d has %d reference outputs, the model %d",
			         dir, s, refs->n, sig.nout);
			goto report;
		}
		if (!match_outputs(&ctx, &sig, refs, which) ||
		    !frozen_match(&ctx, &mo, names, ins) ||
		    !gather_inputs(&ctx, &sig, ins->t, names, ins->paths, ins->n, in, in_bytes))
			goto report;
		if (!(outs = alloc_outputs(&sig, &out_bytes))) {
			ir_error(&ctx, "out of memory for the outputs");
			goto report;
		}
		t0 = now_ms();
		st = l.run(l.inst, in, in_bytes, outs, out_bytes);
		run_ms += now_ms() - t0;
		if (st) {
			ir_error(&ctx, "the run failed: %s", l.strerror(st));
			free_outputs(&sig, outs, out_bytes);
			goto report;
		}
		for (int r = 0; r < refs->n; r++) {
			struct cmp c;
			int i = which[r];
			struct ir_type run_t = run_type(&l, &sig, i);
			const struct ir_type *ot = &run_t;
			struct ir_value *ref = refs->t[r];
			char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
			bf16_as_u16(ref, ot->dtype);
			if (!ir_type_eq(ot, &ref->type)) {
				ir_error(&ctx, "output '%s' is %s but the reference %s is %s",
				         sig.out[i].name, ir_type_str(ot, a, sizeof a),
				         refs->paths[r], ir_type_str(&ref->type, b, sizeof b));
				passed = false;
				continue;
			}
			compare(ot->dtype, outs[i], ref->data, ir_type_elems(ot), rtol, atol, &c);
			if (max_l2 >= 0 && ir_dtype_float_valued(ot->dtype))
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
		free_outputs(&sig, outs, out_bytes);
	}
	run_ms /= nsets;
	for (int i = 0; max_l2 >= 0 && i < nout; i++)
		if (ir_dtype_float_valued(sig.out[i].type.dtype) && rel_l2(&worst[i]) > max_l2) {
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
	if (!worst)
		nout = 0;
	if (json) {
		printf("{\"passed\": %s, \"compile_ms\": %.1f, \"run_ms\": %.3f, \"outputs\": [",
		       passed ? "true" : "false", compile_ms, run_ms);
		for (int i = 0; i < nout; i++) {
			double l2 = rel_l2(&worst[i]);
			printf("%s{\"name\": ", i ? ", " : "");
			json_string(stdout, sig.out[i].name);
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
		for (int i = 0; i < nout; i++) {
			double l2 = rel_l2(&worst[i]);
			char nb[1024];
			printf("output %s: max abs err %.3g, max rel err %.3g, rel l2 err %.3g%s\n",
			       ir_escape(sig.out[i].name, nb, sizeof nb), worst[i].max_abs,
			       worst[i].max_rel, l2, worst[i].bad ? " - MISMATCH" : "");
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
	free(worst);
	free(in);
	free(in_bytes);
	free(ins);
	free(refs);
	run_sig_free(&sig);
	input_decls_free(&decls);
	free_model_opts(&mo);
	return status;
}
