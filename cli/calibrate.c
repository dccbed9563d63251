/*
 * calibrate.c - the samples --calibrate DATA names (docs/precision.md#calibration).
 *
 * DATA is one of:
 *   - a folder of ONNX backend-test data sets: DIR/test_data_set_N/input_K.pb,
 *     one sample per set (what `onnxc check` reads);
 *   - one data set: DIR/input_K.pb;
 *   - NAME=FILE (.npy or .pb), as `onnxc run --input` takes them: the
 *     files given in a row form one sample, and a name given again starts
 *     the next.
 * A .pb that names its tensor binds the input of that name, else the K-th
 * graph input. Every sample must give every graph input of the model, in
 * its type and shape: a mismatch names the file, the input and both types.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The files DATA stands for, in order, each with the input it binds (NULL:
 * by position or the name in the .pb) and the sample it belongs to; fn is
 * called for each. false after reporting. */
typedef bool (*calib_file_fn)(void *ud, const char *path, const char *input, int sample, int k);

static bool data_set(const char *dir, int sample, calib_file_fn fn, void *ud)
{
	for (int k = 0;; k++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
		if (!is_file(path))
			return true;
		if (!fn(ud, path, NULL, sample, k))
			return false;
	}
}

/* Walks every --calibrate argument: nsamples counts the samples. */
static bool walk(struct ir_ctx *ctx, const char *const *args, int nargs, calib_file_fn fn, void *ud,
                 int *nsamples)
{
	int sample = -1;
	/* the names the current NAME=FILE sample has so far */
	const char *names[64];
	int nnames = 0, k = 0;
	bool fresh = true; /* the next NAME=FILE starts a sample */
	for (int a = 0; a < nargs; a++) {
		const char *arg = args[a], *eq = strchr(arg, '=');
		char path[4200];
		if (is_dir(arg)) {
			int sets = 0;
			fresh = true;
			for (;; sets++) {
				snprintf(path, sizeof path, "%s/test_data_set_%d", arg, sets);
				if (!is_dir(path))
					break;
				if (!data_set(path, ++sample, fn, ud))
					return false;
			}
			snprintf(path, sizeof path, "%s/input_0.pb", arg);
			if (!sets && is_file(path)) {
				if (!data_set(arg, ++sample, fn, ud))
					return false;
			} else if (!sets) {
				ir_error(ctx,
				         "--calibrate %s: the folder has neither test_data_set_N "
				         "folders nor input_K.pb files",
				         arg);
				return false;
			}
			continue;
		}
		if (!eq || eq == arg) {
			ir_error(
			        ctx,
			        "--calibrate %s: not a folder of data sets, nor NAME=FILE (.npy or "
			        ".pb)",
			        arg);
			return false;
		}
		{
			size_t len = (size_t)(eq - arg);
			bool again = fresh;
			for (int i = 0; i < nnames && !again; i++)
				again = strlen(names[i]) == len && !strncmp(names[i], arg, len);
			if (again) {
				sample++;
				nnames = 0;
				k = 0;
				fresh = false;
			}
			if (nnames == 64) {
				ir_error(ctx, "--calibrate: at most 64 inputs per sample");
				return false;
			}
			names[nnames++] = arg;
			snprintf(path, sizeof path, "%.*s", (int)len, arg);
			if (!fn(ud, eq + 1, path, sample, k++))
				return false;
		}
	}
	*nsamples = sample + 1;
	return true;
}

/* Loading: each file into the data module, checked against m's inputs. */
struct loader {
	struct ir_ctx *ctx;
	const struct ir_module *m;
	struct calib_data *cd;
	int cap;
};

static bool load_file(void *ud, const char *path, const char *input, int sample, int k)
{
	struct loader *l = ud;
	struct calib_data *cd = l->cd;
	const struct ir_module *m = l->m;
	const struct ir_value *in = NULL;
	struct ir_value *t;
	char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
	const char *name = input;
	if (!(t = fe_load_tensor(l->ctx, cd->data, path, "calib")))
		return false;
	if (!name) { /* the name the .pb gives, else the K-th input */
		unsigned char *bytes;
		const char *err, *pn;
		size_t len, n;
		if ((bytes = ir_read_file(l->ctx, path, &len, &err)) &&
		    pb_tensor_name(bytes, len, &pn, &n) && pn && n)
			name = ir_arena_strndup(&cd->data->arena, pn, n);
		ir_free(l->ctx, bytes);
		if (name && !ir_find_value(m, name))
			name = NULL;
		if (!name && k < m->ninputs)
			name = m->inputs[k]->name;
	}
	if (name)
		in = ir_find_value(m, name);
	if (!in || in->kind != IR_VAL_INPUT) {
		ir_error(l->ctx, "--calibrate %s: the model has no graph input %s%s%s", path,
		         name ? "'" : "", name ? name : "for it (more files than inputs)",
		         name ? "'" : "");
		return false;
	}
	if (!ir_type_eq(&t->type, &in->type)) {
		ir_error(l->ctx, "--calibrate %s: input '%s' is %s, the file holds %s", path,
		         in->name, ir_type_str(&in->type, a, sizeof a),
		         ir_type_str(&t->type, b, sizeof b));
		return false;
	}
	while (sample >= l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		struct amp_sample *s = ir_arena_alloc(&cd->data->arena, sizeof *s * (size_t)cap);
		if (l->cap)
			memcpy(s, cd->samples, sizeof *s * (size_t)l->cap);
		for (int i = l->cap; i < cap; i++) {
			s[i].names = ir_arena_alloc(&cd->data->arena,
			                            sizeof(char *) * (size_t)(m->ninputs + 1));
			s[i].data = ir_arena_alloc(&cd->data->arena,
			                           sizeof(void *) * (size_t)(m->ninputs + 1));
		}
		cd->samples = s;
		l->cap = cap;
	}
	{
		struct amp_sample *s = &cd->samples[sample];
		const char **names = (const char **)s->names;
		const void **data = (const void **)s->data;
		for (int i = 0; i < s->n; i++)
			if (!strcmp(names[i], in->name)) {
				ir_error(l->ctx, "--calibrate %s: sample %d gives input '%s' twice",
				         path, sample + 1, in->name);
				return false;
			}
		if (s->n == m->ninputs) {
			ir_error(l->ctx, "--calibrate %s: sample %d has more tensors than inputs",
			         path, sample + 1);
			return false;
		}
		names[s->n] = in->name;
		data[s->n] = t->data;
		s->n++;
	}
	return true;
}

bool calib_load(struct ir_ctx *ctx, const struct ir_module *m, const char *const *args, int nargs,
                struct calib_data *cd)
{
	struct loader l = { .ctx = ctx, .m = m, .cd = cd };
	int n = 0;
	memset(cd, 0, sizeof *cd);
	cd->data = ir_module_new(ctx, "calibration");
	if (!walk(ctx, args, nargs, load_file, &l, &n))
		return false;
	for (int k = 0; k < n; k++)
		if (cd->samples[k].n != m->ninputs) {
			for (int i = 0; i < m->ninputs; i++) {
				bool has = false;
				for (int j = 0; j < cd->samples[k].n; j++)
					has |= !strcmp(cd->samples[k].names[j], m->inputs[i]->name);
				if (!has) {
					ir_error(ctx,
					         "--calibrate: sample %d has no tensor for input "
					         "'%s'",
					         k + 1, m->inputs[i]->name);
					break;
				}
			}
			return false;
		}
	if (!n) {
		ir_error(ctx, "--calibrate: no samples");
		return false;
	}
	cd->calib.samples = cd->samples;
	cd->calib.nsamples = n;
	cd->calib.source = nargs == 1 ? args[0] : "(the samples given)";
	return true;
}

void calib_free(struct calib_data *cd)
{
	ir_module_free(cd->data);
	memset(cd, 0, sizeof *cd);
}

/* The key and depfile walks: every file, nothing loaded. */
struct lister {
	void (*fn)(void *ud, const char *input, const char *path);
	void *ud;
};

static bool list_file(void *ud, const char *path, const char *input, int sample, int k)
{
	struct lister *l = ud;
	(void)sample, (void)k;
	l->fn(l->ud, input, path);
	return true;
}

static void quiet(void *ud, const char *line) { (void)ud, (void)line; }

bool calib_files(const char *const *args, int nargs,
                 void (*fn)(void *ud, const char *input, const char *path), void *ud)
{
	struct ir_ctx ctx;
	struct lister l = { fn, ud };
	int n;
	ir_ctx_init(&ctx);
	ctx.diag = quiet; /* loading the samples reports what is wrong */
	return walk(&ctx, args, nargs, list_file, &l, &n);
}
