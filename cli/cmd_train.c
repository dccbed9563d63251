/*
 * cmd_train.c - `onnxc train`: a model into a training library and a
 * standalone training program (docs/training.md).
 *
 * Two compiles of the same model through the ordinary pipeline:
 *   NAME_step  the training step (passes/train.c builds it: params and
 *              state as inputs, the loss, the backward graph of
 *              passes/autodiff.c); mixed precision applies to all of it
 *   NAME_eval  the model as exported (running statistics) and its loss
 * then the files that make them a trainer:
 *   NAME.init        the initial params and state (a checkpoint at step 0)
 *   NAME_train.h/.c  the model description for the training runtime
 *                    (runtime/onnxc_train.h) and NAME_train_create
 *   libNAME_train.a  NAME_train.o and both steps
 *   train            the program (rt_train_main), linked
 */
#include "cli.h"
#include "codegen/cg.h"
#include "passes/train.h"
#include "runtime/onnxc_train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char train_help[] =
        "usage: onnxc train MODEL.onnx -o OUTDIR [options]\n"
        "\n"
        "Compiles a model into a training program: OUTDIR/train (run it with\n"
        "--data DIR --steps N; OUTDIR/train --help), the training library\n"
        "libNAME_train.a with its API NAME_train.h, and NAME.init (the initial\n"
        "weights). The loss is appended to the model's first output; the\n"
        "optimizer keeps FP32 master weights.\n"
        "\n"
        "options:\n"
        "  -o OUTDIR            where the files go (created if missing)\n"
        "  --name NAME          C identifier prefix (default: the model file's name)\n"
        "  --loss L             cross-entropy (default: classes on the last axis, an\n"
        "                       int64 label), mse (a label shaped like the output) or\n"
        "                       none (the model's first output is the loss)\n"
        "  --label NAME         the label input's name (default label)\n"
        "  --optimizer K        sgd (default), momentum or adamw\n"
        "  --lr LR              learning rate (default 0.01)\n"
        "  --momentum M         for momentum (default 0.9)\n"
        "  --betas B1,B2        for adamw (default 0.9,0.999)\n"
        "  --eps E              for adamw (default 1e-8)\n"
        "  --weight-decay W     (default 0)\n"
        "  --trainable all|N,.. which initializers train (default all float ones)\n"
        "  --frozen N,...       initializers that never train\n"
        "  --bn-momentum M      BatchNormalization's running statistics (default 0.1,\n"
        "                       PyTorch's)\n"
        "  --loss-scale on|off  dynamic loss scaling (default: on with --precision\n"
        "                       mixed, off for fp32)\n"
        "  --seed S             the data order's seed (default 0)\n"
        "  --target T           cpu (default) or cuda\n"
        "  --arch ARCH          the GPU for --target cuda (default sm_90)\n"
        "  --cpu CPU            LLVM CPU name for the kernels (default native)\n"
        "  --shape, --dim       bind the batch (and other symbolic dims)\n"
        "  --depfile FILE       also write a Make-syntax depfile (the outputs depend\n"
        "                       on the model and its external data)\n"
        "  --no-mpi             a one-process program (by default, where onnxc was\n"
        "                       built with MPI, OUTDIR/train runs data-parallel when\n"
        "                       started by mpirun -np N or srun)\n"
        "  -q, --quiet          print nothing on success\n";

struct train_cli {
	struct model_opts mo;
	struct train_options to;
	struct rt_train_config cfg;
	struct cg_options co;
	const char *input, *name, *loss_scale, *depfile;
	bool no_mpi;
	struct deps deps;
	char *trainable_arg, *frozen_arg;
	const char **trainable, **frozen;
};

/* Splits a comma-separated list into strdup'd names. */
static int split_names(const char *v, const char ***out)
{
	int n = 0, cap = 8;
	const char **list = malloc(sizeof *list * (size_t)cap);
	for (const char *s = v; list && *s;) {
		size_t len = strcspn(s, ",");
		if (len) {
			if (n == cap) {
				const char **grown =
				        realloc(list, sizeof *list * (size_t)(cap *= 2));
				if (!grown)
					break;
				list = grown;
			}
			list[n++] = strndup(s, len);
		}
		s += len + (s[len] == ',');
	}
	*out = list;
	return n;
}

static void free_names(const char **list, int n)
{
	for (int i = 0; i < n; i++)
		free((char *)list[i]);
	free(list);
}

static bool parse_double(const char *opt, const char *v, double *out, double min)
{
	char *end;
	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(*out) || *out < min) {
		usage_error("train: %s takes a number >= %g, not '%s'", opt, min, v);
		return false;
	}
	return true;
}

/* The train-specific options: 1 matched, 0 not, -1 usage error. */
static int train_opt(int argc, char **argv, int *i, void *ud)
{
	struct train_cli *c = ud;
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "-o", true, &bad)))
		c->co.out_dir = v;
	else if ((v = opt_value(argc, argv, i, "--name", true, &bad)))
		c->name = v;
	else if ((v = opt_value(argc, argv, i, "--depfile", true, &bad)))
		c->depfile = v;
	else if ((v = opt_value(argc, argv, i, "--target", true, &bad)))
		c->co.target = v;
	else if ((v = opt_value(argc, argv, i, "--arch", true, &bad)))
		c->co.arch = v;
	else if ((v = opt_value(argc, argv, i, "--cpu", true, &bad)))
		c->co.cpu = v;
	else if (opt_value(argc, argv, i, "--quiet", false, &bad) ||
	         opt_value(argc, argv, i, "-q", false, &bad))
		c->co.quiet = true;
	else if ((v = opt_value(argc, argv, i, "--loss", true, &bad))) {
		if (!strcmp(v, "cross-entropy"))
			c->to.loss = TRAIN_LOSS_CROSS_ENTROPY;
		else if (!strcmp(v, "mse"))
			c->to.loss = TRAIN_LOSS_MSE;
		else if (!strcmp(v, "none"))
			c->to.loss = TRAIN_LOSS_NONE;
		else {
			usage_error("train: --loss takes cross-entropy, mse or none, not '%s'", v);
			return -1;
		}
	} else if ((v = opt_value(argc, argv, i, "--label", true, &bad)))
		c->to.label = v;
	else if ((v = opt_value(argc, argv, i, "--optimizer", true, &bad))) {
		if (!(c->cfg.optimizer = rt_train_optimizer_parse(v))) {
			usage_error("train: --optimizer takes sgd, momentum or adamw, not '%s'", v);
			return -1;
		}
	} else if ((v = opt_value(argc, argv, i, "--lr", true, &bad)))
		return parse_double("--lr", v, &c->cfg.lr, 0) ? 1 : -1;
	else if ((v = opt_value(argc, argv, i, "--momentum", true, &bad)))
		return parse_double("--momentum", v, &c->cfg.momentum, 0) ? 1 : -1;
	else if ((v = opt_value(argc, argv, i, "--eps", true, &bad)))
		return parse_double("--eps", v, &c->cfg.eps, 0) ? 1 : -1;
	else if ((v = opt_value(argc, argv, i, "--weight-decay", true, &bad)))
		return parse_double("--weight-decay", v, &c->cfg.weight_decay, 0) ? 1 : -1;
	else if ((v = opt_value(argc, argv, i, "--betas", true, &bad))) {
		char *end;
		c->cfg.beta1 = strtod(v, &end);
		if (*end != ',' || !parse_double("--betas", end + 1, &c->cfg.beta2, 0) ||
		    !(c->cfg.beta1 >= 0 && c->cfg.beta1 < 1 && c->cfg.beta2 < 1)) {
			usage_error("train: --betas takes B1,B2 in [0, 1), not '%s'", v);
			return -1;
		}
	} else if ((v = opt_value(argc, argv, i, "--bn-momentum", true, &bad))) {
		double d;
		if (!parse_double("--bn-momentum", v, &d, 0) || d > 1)
			return -1;
		c->to.bn_momentum = (float)d;
	} else if ((v = opt_value(argc, argv, i, "--seed", true, &bad))) {
		char *end;
		errno = 0;
		c->cfg.seed = strtoull(v, &end, 0);
		if (errno || end == v || *end || *v == '-') {
			usage_error("train: --seed takes a non-negative integer, not '%s'", v);
			return -1;
		}
	} else if ((v = opt_value(argc, argv, i, "--loss-scale", true, &bad))) {
		if (strcmp(v, "on") && strcmp(v, "off")) {
			usage_error("train: --loss-scale takes on or off, not '%s'", v);
			return -1;
		}
		c->loss_scale = v;
	} else if ((v = opt_value(argc, argv, i, "--trainable", true, &bad))) {
		if (strcmp(v, "all"))
			c->to.ntrainable = split_names(v, &c->trainable);
	} else if ((v = opt_value(argc, argv, i, "--frozen", true, &bad)))
		c->to.nfrozen = split_names(v, &c->frozen);
	else if (opt_value(argc, argv, i, "--no-mpi", false, &bad))
		c->no_mpi = true;
	else
		return bad ? -1 : 0;
	return 1;
}

/* Loads the model and builds one of the two steps. NULL after diagnostics. */
static struct ir_module *build_step(struct ir_ctx *ctx, struct train_cli *c, bool eval,
                                    struct train_step *s)
{
	struct train_options to = c->to;
	struct pass_options po = c->mo.passes;
	struct ir_module *m = load_model(ctx, c->input, &c->mo);
	to.eval = eval;
	po.train = &to;
	po.step = s;
	if (!m)
		return NULL;
	ctx->file = c->input;
	if (!pass_pipeline(m, PASS_STAGE_TRAIN, &po)) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

/* FNV-1a over what a checkpoint must match: names, shapes, dtypes, batch. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_value(uint64_t h, const struct ir_value *v)
{
	h = hash_bytes(h, v->name, strlen(v->name) + 1);
	h = hash_bytes(h, &v->type.dtype, sizeof v->type.dtype);
	h = hash_bytes(h, &v->type.rank, sizeof v->type.rank);
	return hash_bytes(h, v->type.dims, sizeof v->type.dims[0] * (size_t)v->type.rank);
}

static uint64_t step_id(const struct train_step *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < s->nparams; i++)
		h = hash_value(h, s->params[i].input);
	h = hash_bytes(h, "|", 1);
	for (int i = 0; i < s->nstate; i++)
		h = hash_value(h, s->state[i].input);
	h = hash_bytes(h, "|", 1);
	for (int i = 0; i < s->ndata; i++)
		h = hash_value(h, s->data[i]);
	return h;
}

static void print_dims(FILE *f, const char *var, const struct ir_type *t, int from)
{
	fprintf(f, "static const int64_t %s[] = {", var);
	for (int d = from; d < t->rank; d++)
		fprintf(f, " %lld,", (long long)t->dims[d]);
	if (t->rank <= from)
		fprintf(f, " 0");
	fprintf(f, " };\n");
}

/* A table of struct rt_train_tensor; from = 1 leaves out the batch axis
 * (data inputs). Prints "NULL" as the table's name when n is 0. */
static const char *print_tensors(FILE *f, const char *table, const char *const *names,
                                 struct ir_value *const *v, int n, int from)
{
	if (!n)
		return "NULL";
	for (int i = 0; i < n; i++) {
		char var[64];
		snprintf(var, sizeof var, "%s%d_dims", table, i);
		print_dims(f, var, &v[i]->type, from);
	}
	fprintf(f, "static const struct rt_train_tensor %s[] = {\n", table);
	for (int i = 0; i < n; i++) {
		const struct ir_type *t = &v[i]->type;
		int rank = t->rank - from;
		fprintf(f, "\t{ ");
		cg_print_c_string(f, names ? names[i] : v[i]->name);
		fprintf(f, ", %d, %d, %s%d_dims, %lldLL },\n", ir_dtypes[t->dtype].onnx,
		        rank > 0 ? rank : 0, table, i,
		        (long long)ir_dims_elems(t->dims + from, rank > 0 ? rank : 0));
	}
	fprintf(f, "};\n\n");
	return table;
}

/* The four wrappers giving a compiled model's API the void * signatures
 * of struct rt_train_model. */
static void print_wrappers(FILE *f, const char *model)
{
	fprintf(f,
	        "static int %s_create_v(void **out, const char *weights_path)\n{\n"
	        "\tstruct %s *m = NULL;\n\tint st = %s_create(&m, weights_path);\n"
	        "\t*out = m;\n\treturn st;\n}\n\n"
	        "static int %s_run_v(void *m, const void *const inputs[], void *const outputs[])\n"
	        "{\n\treturn %s_run(m, inputs, outputs);\n}\n\n"
	        "static void %s_destroy_v(void *m)\n{\n\t%s_destroy(m);\n}\n\n"
	        "static const char *%s_strerror_v(int status)\n{\n\treturn "
	        "%s_strerror(status);\n}\n\n"
	        "static int %s_set_output_hook_v(void *m, rt_train_output_hook_fn fn, void *ctx)\n"
	        "{\n\treturn %s_set_output_hook(m, fn, ctx);\n}\n\n",
	        model, model, model, model, model, model, model, model, model, model, model);
}

struct generated {
	const char *name, *source;
	const struct train_step *step, *eval;
	struct ir_module *eval_m;
	uint64_t id;
	const unsigned char *tmpl;
	size_t tmpl_len;
	const struct rt_train_config *cfg;
	struct rt_train_range *ranges; /* class labels and indices */
	int nranges;
};

/* The integer scalar constant v holds, in *x. */
static bool const_scalar(const struct ir_value *v, int64_t *x)
{
	if (v->kind != IR_VAL_CONST || !v->data || ir_type_elems(&v->type) != 1 ||
	    ir_dtypes[v->type.dtype].is_float)
		return false;
	*x = ir_load_i64(v->type.dtype, v->data, 0);
	return true;
}

/*
 * Whether data input v is the target of a loss with an ignore_index as the
 * importer lowers NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (frontend/ops_loss.c): where(equal(v, IGNORE), 0, v), reshaped into the
 * indices of a gather_elements over the classes. Then its classes are
 * [0, C) (*classes) and IGNORE (*ignore) is valid too.
 */
static bool loss_target(const struct ir_value *v, int64_t *classes, int64_t *ignore)
{
	for (int k = 0; k < v->nuses; k++) {
		const struct ir_node *w = v->uses[k].node, *eq = w->in[0]->def;
		int64_t zero;
		if (w->op != IR_OP_WHERE || v->uses[k].index != 2 || !eq || eq->op != IR_OP_EQUAL ||
		    eq->in[0] != v || !const_scalar(eq->in[1], ignore) ||
		    !const_scalar(w->in[1], &zero) || zero != 0)
			continue;
		for (int j = 0; j < w->out[0]->nuses; j++) {
			const struct ir_value *r = w->out[0]->uses[j].node->out[0];
			if (w->out[0]->uses[j].node->op != IR_OP_RESHAPE)
				continue;
			for (int i = 0; i < r->nuses; i++) {
				const struct ir_node *g = r->uses[i].node;
				if (g->op == IR_OP_GATHER_ELEMENTS && r->uses[i].index == 1) {
					*classes = g->in[0]->type.dims[ir_attr_i(g, "axis")];
					return true;
				}
			}
		}
	}
	return false;
}

/*
 * The values the trainer must check before a step (rt_train_range): the
 * cross-entropy label's classes, [0, C) (the loss has no ignore_index); a
 * loss target with an ignore_index (loss_target), [0, C) or the ignored
 * value, as PyTorch checks it; and the data inputs a Gather,
 * GatherElements or ScatterElements reads as its indices directly, ONNX's
 * [-dim, dim) of the axis (the tightest if several read it). Indices
 * reached through other ops are the compiled step's own check
 * (RT_ERR_INDEX). Read from the eval step before it is compiled.
 */
static void find_ranges(struct ir_arena *a, const struct train_cli *c, const struct train_step *s,
                        const struct ir_module *em, struct generated *g)
{
	int label = c->to.loss == TRAIN_LOSS_CROSS_ENTROPY ? s->ndata - 1 : -1;
	g->ranges = ir_arena_alloc(a, sizeof *g->ranges * (size_t)(s->ndata + 1));
	g->nranges = 0;
	for (int i = 0; i < s->ndata; i++) {
		struct rt_train_range r = { .data = i };
		if (i == label) {
			const struct ir_type *y = &em->outputs[1]->type;
			r.hi = y->dims[y->rank - 1];
			r.what = "class label";
		} else if (loss_target(s->data[i], &r.hi, &r.ignore)) {
			r.has_ignore = 1;
			r.what = "class label";
		}
		for (int k = 0; i != label && k < s->data[i]->nuses; k++) {
			const struct ir_use *u = &s->data[i]->uses[k];
			enum ir_op op = u->node->op;
			int64_t dim;
			if (u->index != 1 || (op != IR_OP_GATHER && op != IR_OP_GATHER_ELEMENTS &&
			                      op != IR_OP_SCATTER_ELEMENTS))
				continue;
			dim = u->node->in[0]->type.dims[ir_attr_i(u->node, "axis")];
			if (dim > 0 && (!r.what || dim < r.hi)) {
				r.lo = -dim;
				r.hi = dim;
				r.what = ir_arena_printf(a, "node '%s': index", u->node->name);
			}
		}
		if (r.what && r.lo < r.hi)
			g->ranges[g->nranges++] = r;
	}
}

/* The ranges' table; "NULL" when there are none. */
static const char *print_ranges(FILE *f, const struct generated *g)
{
	if (!g->nranges)
		return "NULL";
	fprintf(f, "static const struct rt_train_range ranges[] = {\n");
	for (int i = 0; i < g->nranges; i++) {
		const struct rt_train_range *r = &g->ranges[i];
		/* an ignore_index of INT64_MIN has no literal of its own */
		fprintf(f, "\t{ %d, %lldLL, %lldLL, %d, %lldLL%s, ", r->data, (long long)r->lo,
		        (long long)r->hi, r->has_ignore,
		        (long long)(r->ignore == INT64_MIN ? r->ignore + 1 : r->ignore),
		        r->ignore == INT64_MIN ? " - 1" : "");
		cg_print_c_string(f, r->what);
		fprintf(f, " },\n");
	}
	fprintf(f, "};\n\n");
	return "ranges";
}

static void print_config(FILE *f, const struct rt_train_config *c)
{
	fprintf(f,
	        "\t.defaults = { .optimizer = %d, .lr = %.17g, .momentum = %.17g, .beta1 = %.17g,\n"
	        "\t              .beta2 = %.17g, .eps = %.17g, .weight_decay = %.17g,\n"
	        "\t              .loss_scaling = %d, .init_scale = %.17g, .growth = %.17g,\n"
	        "\t              .backoff = %.17g, .growth_interval = %lld, .seed = %lluULL,\n"
	        "\t              .shuffle = %d },\n",
	        c->optimizer, c->lr, c->momentum, c->beta1, c->beta2, c->eps, c->weight_decay,
	        c->loss_scaling, c->init_scale, c->growth, c->backoff,
	        (long long)c->growth_interval, (unsigned long long)c->seed, c->shuffle);
}

static bool write_header(struct ir_ctx *ctx, const char *path, const struct generated *g)
{
	FILE *f = fopen(path, "w");
	const char *n = g->name;
	char N[128];
	size_t i = 0;
	for (; n[i] && i + 1 < sizeof N; i++) /* macros in capitals, as NAME.h's */
		N[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 'a' + 'A' : n[i]);
	N[i] = 0;
	if (!f) {
		ir_error(ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	fprintf(f,
	        "/* %s_train.h - generated by onnxc train: the training library's API.\n"
	        " *\n"
	        " * The trainer is the onnxc training runtime's (onnxc_train.h): after\n"
	        " * %s_train_create, call rt_train_step / rt_train_step_data,\n"
	        " * rt_train_eval_step, rt_train_save / rt_train_load,\n"
	        " * rt_train_export_onnx and rt_train_destroy on it. Link libNAME_train.a\n"
	        " * with the onnxc runtime as for any compiled model (docs/training.md).\n"
	        " */\n"
	        "#ifndef %s_TRAIN_H\n#define %s_TRAIN_H\n\n#include \"onnxc_train.h\"\n\n"
	        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
	        "/* The step, its tensors and the defaults onnxc train was given. */\n"
	        "extern const struct rt_train_model %s_train_model;\n\n"
	        "#define %s_TRAIN_BATCH %lldLL\n#define %s_TRAIN_NUM_PARAMS %d\n"
	        "#define %s_TRAIN_NUM_DATA %d\n\n"
	        "/* A trainer with the defaults (cfg NULL) or cfg, its weights from\n"
	        " * init_path: %s.init as onnxc train wrote it, or a checkpoint. Like\n"
	        " * rt_train_create, *t is set also on failure (rt_train_error says why);\n"
	        " * destroy it either way. */\n"
	        "int %s_train_create(struct rt_trainer **t, const struct rt_train_config *cfg,\n"
	        "                    const char *init_path);\n\n"
	        "#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
	        n, n, N, N, n, N, (long long)g->step->data[0]->type.dims[0], N, g->step->nparams, N,
	        g->step->ndata, n, n);
	if (fclose(f)) {
		ir_error(ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

static bool write_source(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                         const struct generated *g)
{
	const struct train_step *s = g->step;
	const char *n = g->name, *step = ir_arena_printf(a, "%s_step", n),
	           *eval = ir_arena_printf(a, "%s_eval", n), *params, *state, *data, *outs, *ranges;
	struct ir_value **pv = ir_arena_alloc(a, sizeof *pv * (size_t)(s->nparams + s->nstate + 1));
	const char **names =
	        ir_arena_alloc(a, sizeof *names * (size_t)(s->nparams + s->nstate + 1));
	FILE *f = fopen(path, "w");
	if (!f) {
		ir_error(ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	/* the model's file name only (a path says where it was built, which a
	 * generated file should not), and escaped: it is the user's */
	const char *base = strrchr(g->source, '/');
	fprintf(f, "/* %s_train.c - generated by onnxc train from ", n);
	cg_print_comment_text(f, base ? base + 1 : g->source);
	fprintf(f,
	        ": the training step's\n"
	        " * description for the onnxc training runtime. */\n"
	        "#include \"%s_train.h\"\n#include \"%s.h\"\n#include \"%s.h\"\n\n#include "
	        "<stddef.h>\n\n",
	        n, step, eval);
	print_wrappers(f, step);
	print_wrappers(f, eval);
	for (int i = 0; i < s->nparams; i++)
		pv[i] = s->params[i].input, names[i] = s->params[i].name;
	params = print_tensors(f, "params", names, pv, s->nparams, 0);
	for (int i = 0; i < s->nstate; i++)
		pv[i] = s->state[i].input, names[i] = s->state[i].name;
	state = print_tensors(f, "state", names, pv, s->nstate, 0);
	data = print_tensors(f, "data", NULL, s->data, s->ndata, 1);
	outs = print_tensors(f, "eval_outputs", NULL, g->eval_m->outputs + 1,
	                     g->eval->nmodel_outputs, 0);
	ranges = print_ranges(f, g);
	fprintf(f, "static const unsigned char onnx_template[%zu] = {",
	        g->tmpl_len ? g->tmpl_len : 1);
	for (size_t i = 0; i < g->tmpl_len; i++)
		fprintf(f, "%s%u,", i % 24 ? "" : "\n\t", g->tmpl[i]);
	fprintf(f, "\n};\n\n");
	fprintf(f, "const struct rt_train_model %s_train_model = {\n\t.name = ", n);
	cg_print_c_string(f, n);
	fprintf(f,
	        ",\n\t.model_id = 0x%016llxULL,\n"
	        "\t.step_create = %s_create_v,\n\t.step_run = %s_run_v,\n"
	        "\t.step_destroy = %s_destroy_v,\n\t.step_strerror = %s_strerror_v,\n"
	        "\t.step_set_output_hook = %s_set_output_hook_v,\n"
	        "\t.eval_create = %s_create_v,\n\t.eval_run = %s_run_v,\n"
	        "\t.eval_destroy = %s_destroy_v,\n\t.eval_strerror = %s_strerror_v,\n"
	        "\t.num_params = %d,\n\t.params = %s,\n\t.num_state = %d,\n\t.state = %s,\n"
	        "\t.num_data = %d,\n\t.data = %s,\n\t.batch = %lldLL,\n\t.dropout = %d,\n"
	        "\t.num_eval_outputs = %d,\n\t.eval_outputs = %s,\n"
	        "\t.num_ranges = %d,\n\t.ranges = %s,\n"
	        "\t.onnx_template = onnx_template,\n\t.onnx_template_bytes = %zu,\n",
	        (unsigned long long)g->id, step, step, step, step, step, eval, eval, eval, eval,
	        s->nparams, params, s->nstate, state, s->ndata, data,
	        (long long)s->data[0]->type.dims[0], s->seed != NULL, g->eval->nmodel_outputs, outs,
	        g->nranges, ranges, g->tmpl_len);
	print_config(f, g->cfg);
	fprintf(f,
	        "};\n\n"
	        "int %s_train_create(struct rt_trainer **t, const struct rt_train_config *cfg,\n"
	        "                    const char *init_path)\n{\n"
	        "\tint st = rt_train_create(t, &%s_train_model, cfg ? cfg : "
	        "&%s_train_model.defaults, NULL, NULL);\n"
	        "\tif (st == RT_TRAIN_OK)\n\t\tst = rt_train_load_weights(*t, init_path);\n"
	        "\treturn st;\n}\n",
	        n, n, n);
	if (fclose(f)) {
		ir_error(ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

/* NAME.init: the initial params and state as a checkpoint at step 0. */
static bool write_init(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                       const struct generated *g)
{
	const struct train_step *s = g->step;
	struct rt_train_ckpt ck = { 0 };
	struct rt_train_ckpt_tensor *p =
	        ir_arena_alloc(a, sizeof *p * (size_t)(s->nparams + s->nstate + 1));
	char err[512];
	for (int i = 0; i < s->nparams + s->nstate; i++) {
		const struct train_tensor *t =
		        i < s->nparams ? &s->params[i] : &s->state[i - s->nparams];
		p[i] = (struct rt_train_ckpt_tensor){ t->name, t->input->type.rank,
			                              t->input->type.dims, t->elems, t->init };
	}
	ck.model_id = g->id;
	ck.meta.cfg = *g->cfg;
	ck.meta.cfg.optimizer = RT_TRAIN_OPT_NONE;
	ck.meta.loss_scale = g->cfg->loss_scaling ? g->cfg->init_scale : 1;
	ck.meta.batch = (uint64_t)s->data[0]->type.dims[0];
	ck.num_params = s->nparams;
	ck.params = p;
	ck.num_state = s->nstate;
	ck.state = p + s->nparams;
	if (rt_train_ckpt_write(path, &ck, err, sizeof err) != RT_TRAIN_OK) {
		ir_error(ctx, "cannot write the initial weights: %s", err);
		return false;
	}
	return true;
}

/* The step and eval interfaces must agree tensor for tensor. */
static bool same_interface(const struct train_step *a, const struct train_step *b)
{
	if (a->nparams != b->nparams || a->nstate != b->nstate || a->ndata != b->ndata)
		return false;
	for (int i = 0; i < a->nparams; i++)
		if (strcmp(a->params[i].name, b->params[i].name))
			return false;
	for (int i = 0; i < a->nstate; i++)
		if (strcmp(a->state[i].name, b->state[i].name))
			return false;
	for (int i = 0; i < a->ndata; i++)
		if (strcmp(a->data[i]->name, b->data[i]->name) ||
		    !ir_type_eq(&a->data[i]->type, &b->data[i]->type))
			return false;
	return true;
}

static bool check_batch(struct ir_ctx *ctx, const struct train_step *s)
{
	int64_t batch;
	if (!s->ndata || s->data[0]->type.rank < 1) {
		ir_error(ctx, "training needs a data input with a batch axis");
		return false;
	}
	batch = s->data[0]->type.dims[0];
	for (int i = 0; i < s->ndata; i++)
		if (s->data[i]->type.rank < 1 || s->data[i]->type.dims[0] != batch) {
			char ts[IR_TYPE_STR_MAX];
			ir_error(
			        ctx,
			        "input '%s' (%s) does not have the batch (%lld) as its first axis: "
			        "every data input and the label are batches of samples",
			        s->data[i]->name, ir_type_str(&s->data[i]->type, ts, sizeof ts),
			        (long long)batch);
			return false;
		}
	return true;
}

static bool compile_one(struct ir_module *m, struct train_cli *c, const char *name,
                        struct cg_stats *stats)
{
	struct cg_options co = c->co;
	co.name = name;
	co.embed_weights = true;
	co.quiet = true;
	co.max_memory = model_max_memory(&c->mo);
	return prepare_model(m, &c->mo) && cg_compile(m, &co, stats);
}

static int run_train(struct train_cli *c)
{
	struct ir_ctx ctx;
	struct ir_arena a;
	struct fe_train_info info;
	struct train_step step, eval;
	struct ir_module *sm = NULL, *em = NULL;
	struct cg_stats ss, es;
	struct amp_result step_amp = { 0 };
	struct generated g = { 0 };
	const char **drop;
	const char *dir = c->co.out_dir, *n = c->name;
	int status = EXIT_INPUT;
	ir_ctx_init(&ctx);
	ir_arena_init(&a, &ctx);
	if (!fe_train_info(&ctx, &a, c->input, &info))
		goto out;
	c->to.initializers = info.initializers;
	c->to.ninitializers = info.ninitializers;
	c->to.trainable = c->trainable;
	c->to.frozen = c->frozen;
	if (!(sm = build_step(&ctx, c, false, &step)) || !check_batch(&ctx, &step))
		goto out;
	drop = ir_arena_alloc(&a, sizeof *drop * (size_t)(step.nparams + step.nstate + 1));
	for (int i = 0; i < step.nparams; i++)
		drop[i] = step.params[i].name;
	for (int i = 0; i < step.nstate; i++)
		drop[step.nparams + i] = step.state[i].name;
	/* the eval step needs the params' and state's types, not their data:
	 * the training step holds it (one copy of the weights, not two) */
	c->mo.fe.no_data = drop;
	c->mo.fe.nno_data = step.nparams + step.nstate;
	em = build_step(&ctx, c, true, &eval);
	c->mo.fe.no_data = NULL;
	c->mo.fe.nno_data = 0;
	if (!em)
		goto out;
	if (!same_interface(&step, &eval))
		ir_panic(__FILE__, __LINE__, "the training and eval steps' interfaces differ");
	g.name = n;
	g.source = c->input;
	g.step = &step;
	g.eval = &eval;
	g.eval_m = em;
	g.id = step_id(&step);
	g.cfg = &c->cfg;
	find_ranges(&a, c, &eval, em, &g); /* before compiling rewrites em */
	if (!fe_train_template(&ctx, &a, c->input, drop, step.nparams + step.nstate,
	                       (unsigned char **)&g.tmpl, &g.tmpl_len))
		goto out;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		ir_error(&ctx, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	/* the initial weights first: compiling takes the params' data away */
	if (!write_init(&ctx, &a, ir_arena_printf(&a, "%s/%s.init", dir, n), &g))
		goto out;
	if (!compile_one(sm, c, ir_arena_printf(&a, "%s_step", n), &ss))
		goto out;
	step_amp = c->mo.amp_result; /* the eval step's compile overwrites it */
	if (!compile_one(em, c, ir_arena_printf(&a, "%s_eval", n), &es))
		goto out;
	if (!write_header(&ctx, ir_arena_printf(&a, "%s/%s_train.h", dir, n), &g) ||
	    !write_source(&ctx, &a, ir_arena_printf(&a, "%s/%s_train.c", dir, n), &g))
		goto out;
	if (!cg_build_trainer(&ctx, &a, &c->co, n, cg_have_mpi() && !c->no_mpi))
		goto out;
	if (c->depfile) {
		static const char *const outs[] = { "%s/train",        "%s/lib%s_train.a",
			                            "%s/%s_train.h",   "%s/%s.init",
			                            "%s/lib%s_step.a", "%s/lib%s_eval.a",
			                            "%s/%s_step.h",    "%s/%s_eval.h" };
		const char *files[8];
		for (int i = 0; i < 8; i++)
			files[i] = ir_arena_printf(&a, outs[i], dir, n);
		deps_add_options(&c->deps, &c->mo);
		if (c->deps.failed || !write_depfile(c->depfile, files, 8, &c->deps)) {
			ir_error(&ctx, "cannot write the depfile %s: %s", c->depfile,
			         depfile_why(&c->deps));
			goto out;
		}
	}
	if (!c->co.quiet) {
		int64_t pelems = 0;
		for (int i = 0; i < step.nparams; i++)
			pelems += step.params[i].elems;
		printf("compiled the training step of %s for %s: %d params (%.2f M values), %d "
		       "state tensors, batch %lld",
		       n, c->co.target, step.nparams, pelems / 1e6, step.nstate,
		       (long long)step.data[0]->type.dims[0]);
		if (step.ndropout)
			printf(", %d Dropout%s", step.ndropout, step.ndropout > 1 ? "s" : "");
		printf("\n");
		printf("  step: %d steps (%d library calls, %d generated kernels), arena %.2f MB\n",
		       ss.steps, ss.lib_calls, ss.kernels, ss.arena_bytes / 1e6);
		if (c->mo.mixed)
			printf("  mixed precision (%s policy): %d half and %d FP32 nodes, %d cast "
			       "kernels; predicted step %.3f ms mixed, %.3f ms FP32 on %s\n",
			       c->mo.amp.policy == AMP_GREEDY ? "greedy" : "cost",
			       step_amp.half_nodes, step_amp.fp32_nodes, ss.cast_kernels,
			       step_amp.predicted_us_mixed / 1e3, step_amp.predicted_us_fp32 / 1e3,
			       c->mo.amp.gpu ? c->mo.amp.gpu->name : "h200");
		printf("  %s/train, %s/lib%s_train.a, %s/%s_train.h, %s/%s.init\n", dir, dir, n,
		       dir, n, dir, n);
	}
	status = 0;
out:
	ir_module_free(sm);
	ir_module_free(em);
	ir_arena_free(&a);
	return status;
}

int cmd_train(int argc, char **argv)
{
	struct train_cli c = { 0 };
	struct cmd_args args = { "train", train_help, &c.mo, train_opt, &c, &c.input };
	char name[128];
	int status, r;
	c.co = (struct cg_options){ .target = "cpu", .cpu = "native", .arch = "sm_90" };
	c.to.bn_momentum = 0.1f;
	rt_train_config_default(&c.cfg);
	c.mo.fe.training = true;
	if ((r = parse_args(argc, argv, &args)) == 2) {
		status = 0;
		goto done;
	}
	if (r < 0)
		goto usage;
	if (!c.input || !c.co.out_dir) {
		usage_error("train: %s",
		            !c.input ? "no model given" : "no output folder given (-o OUTDIR)");
		goto usage;
	}
	if (strcmp(c.co.target, "cpu") && strcmp(c.co.target, "cuda")) {
		usage_error("train: unknown target '%s' (cpu or cuda)", c.co.target);
		goto usage;
	}
	if (!cg_valid_arch(c.co.arch)) {
		usage_error("train: unknown --arch '%s' (%s)", c.co.arch, cg_cuda_archs());
		goto usage;
	}
	if (!c.name) {
		cg_default_name(c.input, name, sizeof name);
		c.name = name;
	} else if (!cg_valid_name(c.name)) {
		usage_error("train: --name %s is not a valid C identifier", c.name);
		goto usage;
	}
	c.cfg.loss_scaling = c.loss_scale ? !strcmp(c.loss_scale, "on") : c.mo.mixed;
	if (c.depfile) {
		dep_add(&c.deps, c.input);
		c.mo.fe.on_read = dep_read;
		c.mo.fe.on_read_ud = &c.deps;
	}
	c.co.source = c.input;
	status = run_train(&c);
	goto done;
usage:
	status = EXIT_USAGE;
done:
	free_model_opts(&c.mo);
	free_names(c.trainable, c.to.ntrainable);
	free_names(c.frozen, c.to.nfrozen);
	deps_free(&c.deps);
	return status;
}
