/*
 * cli.c - helpers shared by the onnxc subcommands (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

/* Parses --shape / --dim; returns 1 if argv[*i] was one, 0 if not, -1 on error. */
int parse_model_opt(int argc, char **argv, int *i, struct model_opts *mo)
{
	bool bad = false;
	const char *v;
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

void free_model_opts(struct model_opts *mo)
{
	for (int i = 0; i < mo->fe.nshapes; i++)
		free((char *)mo->shapes[i].input);
	for (int i = 0; i < mo->fe.ndims; i++)
		free((char *)mo->dims[i].name);
	for (int i = 0; i < mo->fe.nconsts; i++)
		free((char *)mo->consts[i].name);
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

/* Imports an ONNX model or parses IR text, then runs the import pipeline. */
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
	if (!pass_run(m, pass_import_pipeline, pass_import_pipeline_len, &mo->passes)) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

/* ------------------------------------------------------------------------ */
/* onnxc ir                                                                 */