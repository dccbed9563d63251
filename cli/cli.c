/*
 * cli.c - helpers shared by the onnxc subcommands (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "onnxc: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see onnxc --help)\n");
}

/*
 * Matches argv[*i] against --name / --name=value; takes the value from the
 * next argument when needed. Returns the value, "" for flags, or NULL.
 */
const char *opt_value(int argc, char **argv, int *i, const char *name, bool takes_value, bool *bad)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == 0) {
		if (!takes_value)
			return "";
		if (*i + 1 >= argc) {
			usage_error("%s needs a value", name);
			*bad = true;
			return NULL;
		}
		return argv[++*i];
	}
	if (a[n] == '=' && takes_value)
		return a + n + 1;
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Model loading shared by the subcommands                                  */
/* ------------------------------------------------------------------------ */

void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ------------------------------------------------------------------------ */
/* Precision options                                                        */
/* ------------------------------------------------------------------------ */

const char precision_help[] =
        "  --precision P        fp32 (default) or mixed: half precision where the\n"
        "                       mixed-precision pass decides (docs/precision.md)\n"
        "  --half H             fp16 (default) or bf16, with --precision mixed\n"
        "  --amp-policy P       cost (default: casts priced by the cost model) or\n"
        "                       greedy (TensorFlow's AutoMixedPrecision)\n"
        "  --gpu GPU            the cost model's GPU: v100, t4, rtx2080ti, a100,\n"
        "                       rtx4090, h100, h200 (default) or a profile file\n"
        "  --keep-fp32 N,...    keep these ONNX nodes in FP32\n"
        "  --force-half N,...   run these ONNX nodes in half precision\n"
        "  --amp-lists FILE     move ops between the allow/infer/deny/clear lists\n"
        "  --no-tc-pad          no zero padding for Tensor Cores\n"
        "  --calibrate DATA     sample inputs (a folder of test_data_set_N, or\n"
        "                       NAME=FILE): keep values out of FP16's range out of\n"
        "                       FP16 and keep the outputs within --max-rel-l2\n"
        "  --max-rel-l2 E       the accuracy budget with --calibrate (default 1e-2\n"
        "                       for fp16, 5e-2 for bf16)\n"
        "  --range-headroom H   FP16 only where |x| x H <= 65504 (default 2)\n"
        "  --range-underflow S  FP16 only where at most a share S of a tensor's L2\n"
        "                       mass lies below 2^-14 (default 0.01)\n"
        "  --precision-plan F   pin the nodes plan file F lists to its precisions\n"
        "  --write-precision-plan F   write the decisions to F\n"
        "  --max-memory SIZE    refuse a model whose planned memory (arena + weights)\n"
        "                       or a constant exceeds SIZE, e.g. 512M (default 16G)\n"
        "  --no-fuse-attention  leave decomposed attention (MatMul, scale, mask,\n"
        "                       Softmax, MatMul) as it is instead of one fused op\n";

/* Appends the comma-separated names in v to list (strdup'd). */
static int add_names(const char *opt, const char *v, const char **list, int *n)
{
	const char *s = v;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len && *n == 64) {
			usage_error("%s: at most 64 names", opt);
			return -1;
		}
		if (len)
			list[(*n)++] = strndup(s, len);
		s += len + (e != NULL);
	}
	return 1;
}

/* A number option: finite and at least min; false after a usage error. */
static bool number_opt(const char *opt, const char *v, double min, double *out)
{
	char *end;
	double x = strtod(v, &end);
	if (*end || end == v || !isfinite(x) || x < min) {
		usage_error("%s takes a number of at least %g, not '%s'", opt, min, v);
		return false;
	}
	*out = x;
	return true;
}

static int parse_precision_opt(int argc, char **argv, int *i, struct model_opts *mo)
{
	bool bad = false;
	const char *v, *arg = argv[*i];
	int r = 1;
	if ((v = opt_value(argc, argv, i, "--precision", true, &bad))) {
		if (strcmp(v, "fp32") && strcmp(v, "mixed")) {
			usage_error("--precision takes fp32 or mixed, not '%s'", v);
			return -1;
		}
		mo->mixed = !strcmp(v, "mixed");
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--half", true, &bad))) {
		if (strcmp(v, "fp16") && strcmp(v, "bf16")) {
			usage_error("--half takes fp16 or bf16, not '%s'", v);
			return -1;
		}
		mo->amp.half = !strcmp(v, "fp16") ? IR_F16 : IR_BF16;
	} else if ((v = opt_value(argc, argv, i, "--amp-policy", true, &bad))) {
		if (strcmp(v, "cost") && strcmp(v, "greedy")) {
			usage_error("--amp-policy takes cost or greedy, not '%s'", v);
			return -1;
		}
		mo->amp.policy = !strcmp(v, "cost") ? AMP_COST : AMP_GREEDY;
	} else if ((v = opt_value(argc, argv, i, "--gpu", true, &bad))) {
		mo->gpu_arg = v;
	} else if ((v = opt_value(argc, argv, i, "--amp-lists", true, &bad))) {
		mo->lists_arg = v;
	} else if ((v = opt_value(argc, argv, i, "--keep-fp32", true, &bad))) {
		r = add_names("--keep-fp32", v, mo->keep, &mo->amp.nkeep);
	} else if ((v = opt_value(argc, argv, i, "--force-half", true, &bad))) {
		r = add_names("--force-half", v, mo->force, &mo->amp.nforce);
	} else if (opt_value(argc, argv, i, "--no-tc-pad", false, &bad)) {
		mo->amp.no_pad = true;
	} else if ((v = opt_value(argc, argv, i, "--calibrate", true, &bad))) {
		if (mo->ncalib == 64) {
			usage_error("--calibrate: at most 64 arguments");
			return -1;
		}
		mo->calib_args[mo->ncalib++] = v;
	} else if ((v = opt_value(argc, argv, i, "--precision-plan", true, &bad))) {
		mo->plan_in = v;
	} else if ((v = opt_value(argc, argv, i, "--write-precision-plan", true, &bad))) {
		mo->plan_out = v;
	} else if ((v = opt_value(argc, argv, i, "--range-headroom", true, &bad))) {
		if (!number_opt("--range-headroom", v, 1, &mo->amp.headroom))
			return -1;
	} else if ((v = opt_value(argc, argv, i, "--range-underflow", true, &bad))) {
		if (!number_opt("--range-underflow", v, 0, &mo->amp.underflow))
			return -1;
		if (mo->amp.underflow == 0)
			mo->amp.underflow = 1e-300; /* 0 means the default */
	} else if ((v = opt_value(argc, argv, i, "--max-rel-l2", true, &bad))) {
		if (!number_opt("--max-rel-l2", v, 0, &mo->amp.max_rel_l2))
			return -1;
		if (mo->amp.max_rel_l2 == 0)
			mo->amp.max_rel_l2 = 1e-300; /* exact; 0 means the default */
		mo->max_l2_given = true;
		return 1; /* also onnxc check's bound, without --precision mixed */
	} else {
		return bad ? -1 : 0;
	}
	if (!mo->amp_flag)
		mo->amp_flag = arg;
	return r;
}

/* The pipeline's codegen stage, with mixed precision when asked (the amp
 * pass then resolves the pins, the --gpu profile and the lists). */
bool prepare_model(struct ir_module *m, struct model_opts *mo)
{
	struct pass_mixed mixed = { .amp = &mo->amp,
		                    .gpu = mo->gpu_arg,
		                    .profile = &mo->gpu,
		                    .lists = mo->lists_arg,
		                    .result = &mo->amp_result };
	struct pass_options po = mo->passes;
	if (mo->amp_flag && !mo->mixed) {
		ir_error(m->ctx, "%s applies to --precision mixed only", mo->amp_flag);
		return false;
	}
	mo->amp.keep_fp32 = mo->keep;
	mo->amp.force_half = mo->force;
	po.mixed = mo->mixed ? &mixed : NULL;
	po.stats = &mo->stats;
	if (mo->mixed && mo->plan_in &&
	    !amp_read_plan(m->ctx, &m->arena, mo->plan_in, (struct amp_pin **)&mo->amp.plan,
	                   &mo->amp.nplan))
		return false;
	mixed.plan_out = mo->plan_out;
	if (mo->mixed && mo->ncalib) {
		struct calib_data cd;
		bool ok;
		if (!calib_load(m->ctx, m, mo->calib_args, mo->ncalib, &cd)) {
			calib_free(&cd);
			return false;
		}
		mo->amp.calib = &cd.calib;
		ok = pass_pipeline(m, PASS_STAGE_CODEGEN, &po);
		mo->amp.calib = NULL;
		calib_free(&cd);
		return ok;
	}
	return pass_pipeline(m, PASS_STAGE_CODEGEN, &po);
}

/* FNV-1a of a file's bytes (0 if unreadable). */
static unsigned long long file_hash(const char *path)
{
	struct ir_ctx ctx;
	const char *err;
	size_t len;
	unsigned char *b;
	ir_ctx_init(&ctx);
	if (!(b = ir_read_file(&ctx, path, &len, &err)))
		return 0;
	{
		unsigned long long h = ir_checksum(b, len);
		ir_free(&ctx, b);
		return h;
	}
}

void precision_config(const struct model_opts *mo, char *buf, size_t n)
{
	size_t at;
	if (!mo->mixed) {
		snprintf(buf, n, "%s", "");
		return;
	}
	at = (size_t)snprintf(
	        buf, n, ";mixed half=%d policy=%d pad=%d gpu=%s:%016llx lists=%016llx",
	        (int)mo->amp.half, (int)mo->amp.policy, !mo->amp.no_pad,
	        mo->gpu_arg ? mo->gpu_arg : "", mo->gpu_arg ? file_hash(mo->gpu_arg) : 0,
	        mo->lists_arg ? file_hash(mo->lists_arg) : 0);
	for (int i = 0; i < mo->amp.nkeep && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, " keep=%s", mo->keep[i]);
	for (int i = 0; i < mo->amp.nforce && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, " force=%s", mo->force[i]);
	if (at < n && (mo->ncalib || mo->plan_in))
		at += (size_t)snprintf(buf + at, n - at,
		                       " headroom=%.17g underflow=%.17g l2=%.17g plan=%016llx",
		                       mo->amp.headroom, mo->amp.underflow, mo->amp.max_rel_l2,
		                       mo->plan_in ? file_hash(mo->plan_in) : 0);
}

/* ------------------------------------------------------------------------ */
/* Model loading shared by the subcommands                                  */
/* ------------------------------------------------------------------------ */

/* Parses --shape / --dim; returns 1 if argv[*i] was one, 0 if not, -1 on error. */
bool parse_size(const char *s, int64_t *out)
{
	char *end;
	double v, unit = 1;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v > 0))
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		unit = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		unit = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		unit = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		unit = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default: break;
	}
	if (*end == 'i' && unit > 1)
		end++; /* 8GiB */
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v * unit >= 9.2e18 || v * unit < 1)
		return false;
	*out = (int64_t)(v * unit);
	return true;
}

/* The model options: 1 if argv[*i] was one, 0 if not, -1 after a usage
 * error. */
static int parse_model_opt(int argc, char **argv, int *i, struct model_opts *mo)
{
	bool bad = false;
	const char *v;
	int r;
	if ((r = parse_precision_opt(argc, argv, i, mo)) != 0)
		return r;
	if ((v = opt_value(argc, argv, i, "--max-memory", true, &bad))) {
		if (!parse_size(v, &mo->max_memory)) {
			usage_error("--max-memory takes a size, e.g. 512M or 8G (not '%s')", v);
			return -1;
		}
		mo->fe.max_const_bytes = mo->max_memory; /* no constant above it either */
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--shape", true, &bad))) {
		const char *eq = strrchr(v, '=');
		struct fe_shape_binding *sb = &mo->shapes[mo->fe.nshapes];
		if (mo->fe.nshapes == 64 || !eq || eq == v) {
			usage_error("--shape takes INPUT=DIMS, e.g. --shape input=8x3x224x224");
			return -1;
		}
		if (!fe_parse_dims(eq + 1, &sb->rank, sb->dims)) {
			usage_error("--shape %s: '%s' is not a list of dimensions like 8x3x224x224",
			            v, eq + 1);
			return -1;
		}
		sb->input = strndup(v, (size_t)(eq - v));
		mo->fe.shapes = mo->shapes;
		mo->fe.nshapes++;
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--dim", true, &bad))) {
		const char *eq = strrchr(v, '=');
		char *e;
		long long x;
		struct fe_dim_binding *db = &mo->dims[mo->fe.ndims];
		if (mo->fe.ndims == 64 || !eq || eq == v) {
			usage_error("--dim takes NAME=N, e.g. --dim batch=8");
			return -1;
		}
		x = strtoll(eq + 1, &e, 10);
		if (*e || e == eq + 1 || x < 0) {
			usage_error("--dim %s: '%s' is not a non-negative integer", v, eq + 1);
			return -1;
		}
		db->name = strndup(v, (size_t)(eq - v));
		db->value = x;
		mo->fe.dims = mo->dims;
		mo->fe.ndims++;
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--const", true, &bad))) {
		const char *eq = strchr(v, '=');
		struct fe_const_input *ci = &mo->consts[mo->fe.nconsts];
		if (mo->fe.nconsts == 64 || !eq || eq == v) {
			usage_error("--const takes INPUT=FILE (.npy or .pb), e.g. --const "
			            "shape=shape.npy");
			return -1;
		}
		ci->name = strndup(v, (size_t)(eq - v));
		ci->path = eq + 1;
		mo->fe.consts = mo->consts;
		mo->fe.nconsts++;
		return 1;
	}
	if (opt_value(argc, argv, i, "--no-fuse-attention", false, &bad)) {
		mo->passes.no_fuse_attention = true;
		return 1;
	}
	if (opt_value(argc, argv, i, "--verify", false, &bad)) {
		mo->passes.verify = true;
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--dump-after", true, &bad))) {
		if (strcmp(v, "all") && !pass_find(v)) {
			usage_error("--dump-after: no pass named '%s'", v);
			return -1;
		}
		mo->passes.dump_after = v;
		return 1;
	}
	return bad ? -1 : 0;
}

/* 1 if argv[*i] was --help (printed: then 2) or a model option, 0 if not,
 * -1 after a usage error. */
static int common_opt(int argc, char **argv, int *i, struct model_opts *mo, const char *help)
{
	if (!strcmp(argv[*i], "--help") || !strcmp(argv[*i], "-h")) {
		fputs(help, stdout);
		fputs(precision_help, stdout);
		return 2;
	}
	return parse_model_opt(argc, argv, i, mo);
}

/* arg is an unknown option or the command's operand: false after a usage
 * error. */
static bool operand_arg(const struct cmd_args *a, const char *arg)
{
	if (arg[0] == '-' && arg[1]) {
		usage_error("%s: unknown option '%s'", a->cmd, arg);
		return false;
	}
	if (*a->operand && a->folder) {
		usage_error("%s: more than one folder given", a->cmd);
		return false;
	}
	if (*a->operand) {
		usage_error("%s: more than one model given ('%s' and '%s')", a->cmd, *a->operand,
		            arg);
		return false;
	}
	*a->operand = arg;
	return true;
}

int parse_args(int argc, char **argv, const struct cmd_args *a)
{
	for (int i = 1; i < argc; i++) {
		int r = common_opt(argc, argv, &i, a->mo, a->help);
		if (!r && a->own)
			r = a->own(argc, argv, &i, a->ud);
		if (r < 0 || r == 2)
			return r;
		if (!r && !operand_arg(a, argv[i]))
			return -1;
	}
	return 0;
}

void free_model_opts(struct model_opts *mo)
{
	for (int i = 0; i < mo->fe.nshapes; i++)
		free((char *)mo->shapes[i].input);
	for (int i = 0; i < mo->fe.ndims; i++)
		free((char *)mo->dims[i].name);
	for (int i = 0; i < mo->fe.nconsts; i++)
		free((char *)mo->consts[i].name);
	for (int i = 0; i < mo->amp.nkeep; i++)
		free((char *)mo->keep[i]);
	for (int i = 0; i < mo->amp.nforce; i++)
		free((char *)mo->force[i]);
}

bool is_ir_text(const char *path)
{
	char head[8];
	const char *err;
	size_t n = strlen(path);
	int fd;
	bool text;
	if (n > 4 && !strcmp(path + n - 4, ".oir"))
		return true;
	if ((fd = ir_open_regular(path, &err, NULL)) < 0)
		return false;
	text = ir_read_at(fd, head, 8, 0) && !memcmp(head, "onnxc-ir", 8);
	close(fd);
	return text;
}

static struct ir_module *load_ir_text(struct ir_ctx *ctx, const char *path)
{
	const char *err;
	size_t len;
	char *buf;
	struct ir_module *m;
	ctx->file = path;
	if (!(buf = ir_read_file(ctx, path, &len, &err))) {
		ir_error(ctx, "cannot read the file: %s", err);
		return NULL;
	}
	m = ir_parse(ctx, buf, len);
	ir_free(ctx, buf);
	return m;
}

bool model_opts_const(const struct model_opts *mo, const char *input)
{
	for (int i = 0; i < mo->fe.nconsts; i++)
		if (!strcmp(mo->consts[i].name, input))
			return true;
	return false;
}

bool model_opts_fit(const char *cmd, const char *path, const struct model_opts *mo)
{
	if ((mo->fe.ndims || mo->fe.nshapes || mo->fe.nconsts) && is_ir_text(path)) {
		usage_error("%s: --shape, --dim and --const apply to ONNX models, not IR text (%s)",
		            cmd, path);
		return false;
	}
	return true;
}

/* Imports an ONNX model (then the import stage runs) or parses IR text. */
struct ir_module *load_model(struct ir_ctx *ctx, const char *path, struct model_opts *mo)
{
	struct ir_module *m;
	if (is_ir_text(path)) {
		if (mo->fe.ndims || mo->fe.nshapes || mo->fe.nconsts) {
			usage_error("--shape, --dim and --const apply to ONNX models, not IR text");
			return NULL;
		}
		return load_ir_text(ctx, path);
	}
	m = fe_import(ctx, path, &mo->fe);
	if (!m)
		return NULL;
	ctx->file = path;
	if (!pass_pipeline(m, PASS_STAGE_IMPORT, &mo->passes)) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

/* ------------------------------------------------------------------------ */
/* onnxc ir                                                                 */

/* ------------------------------------------------------------------------ */
/* --depfile (compile, train)                                               */
/* ------------------------------------------------------------------------ */

void dep_add(struct deps *d, const char *path)
{
	char *c;
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->paths[i], path))
			return;
	if (d->n == d->cap) {
		int cap = d->cap ? 2 * d->cap : 16;
		char **p = realloc(d->paths, sizeof *p * (size_t)cap);
		if (!p) {
			d->failed = true;
			return;
		}
		d->paths = p;
		d->cap = cap;
	}
	if (!(c = strdup(path))) {
		d->failed = true;
		return;
	}
	d->paths[d->n++] = c;
}

void dep_read(void *ud, const char *path) { dep_add(ud, path); }

void deps_free(struct deps *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->paths[i]);
	free(d->paths);
}

/* A path in Make syntax (as GCC's -MD writes it): spaces and '#' escaped
 * with a backslash, '$' doubled. */
static void put_dep_path(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '#')
			fputc('\\', f);
		if (*s == '$')
			fputc('$', f);
		fputc(*s, f);
	}
}

bool make_dirs(const char *path)
{
	char buf[4096];
	struct stat st;
	size_t n = strlen(path);
	if (!n || n >= sizeof buf) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return false;
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		char c = *p;
		if (c && c != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return false;
		*p = c;
		if (!c)
			break;
	}
	if (stat(path, &st) != 0)
		return false;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

static bool regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void dep_calib(void *ud, const char *input, const char *path)
{
	(void)input;
	dep_add(ud, path);
}

void deps_add_options(struct deps *d, const struct model_opts *mo)
{
	for (int i = 0; i < mo->fe.nconsts; i++)
		if (mo->consts[i].path)
			dep_add(d, mo->consts[i].path);
	if (mo->gpu_arg && regular_file(mo->gpu_arg))
		dep_add(d, mo->gpu_arg);
	if (mo->lists_arg)
		dep_add(d, mo->lists_arg);
	if (mo->plan_in)
		dep_add(d, mo->plan_in);
	calib_files(mo->calib_args, mo->ncalib, dep_calib, d);
}

/*
 * One rule: every output the build uses depends on the model and every file
 * the compile read, plus an empty rule per input so that deleting one does
 * not break make. Written after the outputs, through a temporary name, so a
 * failed or interrupted compile leaves no half-written depfile.
 */
const char *depfile_why(const struct deps *d)
{
	if (d->failed)
		return "out of memory";
	if (errno == EINVAL)
		return "a path it would list holds a newline, which Make cannot express";
	return strerror(errno);
}

/* Make has no way to write a newline or CR in a target or prerequisite: a
 * path holding one would end the rule and start another (the rest of it
 * run as a recipe), so such a path is refused. */
static bool dep_path_ok(const char *s) { return !strpbrk(s, "\n\r"); }

bool write_depfile(const char *path, const char *const *outputs, int nouts, const struct deps *d)
{
	size_t len = strlen(path) + 8;
	char *tmp;
	FILE *f;
	bool ok;
	for (int i = 0; i < nouts + d->n; i++)
		if (!dep_path_ok(i < nouts ? outputs[i] : d->paths[i - nouts])) {
			errno = EINVAL;
			return false;
		}
	if (!(tmp = malloc(len)))
		return false;
	snprintf(tmp, len, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		free(tmp);
		return false;
	}
	for (int i = 0; i < nouts; i++) {
		if (i)
			fputs(" \\\n ", f);
		put_dep_path(f, outputs[i]);
	}
	fputs(":", f);
	for (int i = 0; i < d->n; i++) {
		fputs(" \\\n ", f);
		put_dep_path(f, d->paths[i]);
	}
	fputs("\n", f);
	for (int i = 0; i < d->n; i++) {
		fputs("\n", f);
		put_dep_path(f, d->paths[i]);
		fputs(":\n", f);
	}
	ok = !ferror(f);
	if (fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok)
		remove(tmp);
	free(tmp);
	return ok;
}
