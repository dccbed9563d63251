/*
 * model_inputs.c - the graph inputs a model declares, and data files checked
 * against them (onnxc run --input, onnxc check's input_K.pb).
 *
 * run and check bind symbolic dimensions from the data's shapes by handing
 * the import shape bindings, as --shape would. The import's own messages
 * then speak of --shape the user never gave, and say nothing of the file. So
 * the data is compared with the declared inputs first: a mismatch names the
 * data file, the input and what differs (element type, rank, which
 * dimension), and mentions --shape or --dim only where the user gave them.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

void input_decls_free(struct input_decls *d)
{
	if (d->v)
		ir_arena_free(&d->arena);
	memset(d, 0, sizeof *d);
}

static void decls_init(struct input_decls *d, struct ir_ctx *ctx, size_t cap)
{
	memset(d, 0, sizeof *d);
	ir_arena_init(&d->arena, ctx);
	d->v = ir_arena_alloc(&d->arena, sizeof *d->v * (cap ? cap : 1));
}

static void decl_from_onnx(struct input_decls *d, const Onnx__ValueInfoProto *vi)
{
	struct input_decl *x = &d->v[d->n++];
	const Onnx__TypeProto *tp = vi->type;
	x->name = ir_arena_strdup(&d->arena, vi->name);
	x->rank = -1;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return; /* not a tensor: the import says so */
	x->dtype =
	        ir_dtype_from_onnx(tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0);
	if (!tp->tensor_type->shape || tp->tensor_type->shape->n_dim > IR_MAX_RANK)
		return;
	x->rank = (int)tp->tensor_type->shape->n_dim;
	for (int i = 0; i < x->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *dim = tp->tensor_type->shape->dim[i];
		x->dims[i] = -1;
		if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			x->dims[i] = dim->dim_value;
		else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		         dim->dim_param[0])
			x->params[i] = ir_arena_strdup(&d->arena, dim->dim_param);
	}
}

/* fe_proto_fn: the graph inputs that are not initializers, into d. */
static bool onnx_decls(struct fe *fe, Onnx__ModelProto *mp, void *ud)
{
	struct input_decls *d = ud;
	Onnx__GraphProto *g = mp->graph;
	struct ir_map inits;
	decls_init(d, fe->ctx, g->n_input);
	ir_map_init(&inits, &d->arena);
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name)
			ir_map_put(&inits, g->initializer[i]->name, g->initializer[i]);
	for (size_t i = 0; i < g->n_input; i++)
		if (g->input[i]->name && g->input[i]->name[0] &&
		    !ir_map_get(&inits, g->input[i]->name))
			decl_from_onnx(d, g->input[i]);
	return true;
}

bool input_decls_load(struct ir_ctx *ctx, const char *path, const struct model_opts *mo,
                      struct input_decls *d)
{
	memset(d, 0, sizeof *d);
	if (is_ir_text(path)) {
		struct model_opts none = { .passes = mo->passes };
		struct ir_module *m = load_model(ctx, path, &none);
		if (!m)
			return false;
		decls_init(d, ctx, (size_t)m->ninputs);
		for (int i = 0; i < m->ninputs; i++) {
			struct input_decl *x = &d->v[d->n++];
			x->name = ir_arena_strdup(&d->arena, m->inputs[i]->name);
			x->dtype = m->inputs[i]->type.dtype;
			x->rank = m->inputs[i]->type.rank;
			memcpy(x->dims, m->inputs[i]->type.dims, sizeof x->dims);
		}
		ir_module_free(m);
		return true;
	}
	if (fe_with_proto(ctx, path, onnx_decls, d))
		return true;
	input_decls_free(d);
	return false;
}

const struct input_decl *input_decl_find(const struct input_decls *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].name, name))
			return &d->v[i];
	return NULL;
}

/* "f32[batch,3,224,224]": symbolic dimensions by name, unnamed ones '?'. */
static const char *decl_str(const struct input_decl *x, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s", x->dtype ? ir_dtype_name(x->dtype) : "?");
	if (x->rank < 0) {
		snprintf(buf + at, n - at, " (no shape declared)");
		return buf;
	}
	at += (size_t)snprintf(buf + at, n - at, "[");
	for (int i = 0; i < x->rank && at < n; i++) {
		if (x->dims[i] >= 0)
			at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "",
			                       (long long)x->dims[i]);
		else
			at += (size_t)snprintf(buf + at, n - at, "%s%.40s", i ? "," : "",
			                       x->params[i] ? x->params[i] : "?");
	}
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

static const struct fe_shape_binding *given_shape(const struct model_opts *mo, const char *input)
{
	for (int i = 0; i < mo->fe.nshapes; i++)
		if (!strcmp(mo->shapes[i].input, input))
			return &mo->shapes[i];
	return NULL;
}

static const struct fe_dim_binding *given_dim(const struct model_opts *mo, const char *name)
{
	for (int i = 0; i < mo->fe.ndims; i++)
		if (!strcmp(mo->dims[i].name, name))
			return &mo->dims[i];
	return NULL;
}

/* The data for x (from file) against a --shape the user gave for it. */
static void check_given_shape(struct ir_ctx *ctx, const char *file, const struct input_decl *x,
                              const struct fe_shape_binding *sb, const struct ir_type *t)
{
	char dims[IR_MAX_RANK * 21 + 1] = "", have[IR_TYPE_STR_MAX];
	size_t at = 0;
	bool same = sb->rank == t->rank;
	for (int d = 0; d < sb->rank; d++) {
		at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%lld", d ? "x" : "",
		                       (long long)sb->dims[d]);
		same = same && sb->dims[d] == t->dims[d];
	}
	if (!same)
		ir_error(ctx,
		         "%s: --shape %s=%s fixes the shape of input '%s', but the file holds %s",
		         file, x->name, dims, x->name, ir_type_str(t, have, sizeof have));
}

/* The symbolic dimensions the data bound so far: which file set each. */
struct bound_dim {
	const char *param, *file, *input;
	int64_t value;
};

static void check_dims(struct ir_ctx *ctx, const char *file, const struct input_decl *x,
                       const struct ir_type *t, const struct model_opts *mo,
                       struct bound_dim *bound, int *nbound, int max_bound)
{
	char have[IR_TYPE_STR_MAX], want[IR_TYPE_STR_MAX];
	ir_type_str(t, have, sizeof have);
	decl_str(x, want, sizeof want);
	if (x->rank < 0)
		return; /* no shape declared: the data's shape is the shape */
	if (x->rank != t->rank) {
		ir_error(ctx, "%s: input '%s' has rank %d (%s), the file rank %d (%s)", file,
		         x->name, x->rank, want, t->rank, have);
		return;
	}
	for (int d = 0; d < x->rank; d++) {
		const struct fe_dim_binding *db;
		int b;
		if (x->dims[d] >= 0) {
			if (x->dims[d] != t->dims[d])
				ir_error(ctx,
				         "%s: input '%s' has %lld in dimension %d (%s), the file "
				         "%lld (%s)",
				         file, x->name, (long long)x->dims[d], d, want,
				         (long long)t->dims[d], have);
			continue;
		}
		if (!x->params[d])
			continue;
		if ((db = given_dim(mo, x->params[d]))) {
			if (db->value != t->dims[d])
				ir_error(ctx,
				         "%s: input '%s' has dimension %d '%s' = %lld from --dim "
				         "%s=%lld, the file %lld (%s)",
				         file, x->name, d, x->params[d], (long long)db->value,
				         x->params[d], (long long)db->value, (long long)t->dims[d],
				         have);
			continue;
		}
		for (b = 0; b < *nbound && strcmp(bound[b].param, x->params[d]); b++)
			;
		if (b < *nbound) {
			if (bound[b].value != t->dims[d])
				ir_error(ctx,
				         "%s: dimension %d of input '%s' is '%s', which %s (input "
				         "'%s') set to %lld; the file has %lld (%s)",
				         file, d, x->name, x->params[d], bound[b].file,
				         bound[b].input, (long long)bound[b].value,
				         (long long)t->dims[d], have);
		} else if (*nbound < max_bound) {
			bound[*nbound] =
			        (struct bound_dim){ x->params[d], file, x->name, t->dims[d] };
			++*nbound;
		}
	}
}

bool check_input_data(struct ir_ctx *ctx, const struct input_decls *d, const struct model_opts *mo,
                      const char *const *names, const char *const *files,
                      struct ir_value *const *data, int n)
{
	struct bound_dim bound[64];
	int nbound = 0, errors = ctx->nerrors;
	char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
	for (int k = 0; k < n; k++) {
		const struct input_decl *x = input_decl_find(d, names[k]);
		const struct fe_shape_binding *sb;
		const struct ir_type *t = &data[k]->type;
		int j;
		for (j = 0; j < k && strcmp(names[j], names[k]); j++)
			;
		if (j < k) {
			ir_error(ctx, "--input %s=%s: input '%s' is given twice (also %s)",
			         names[k], files[k], names[k], files[j]);
			continue;
		}
		if (model_opts_const(mo, names[k])) {
			ir_error(ctx, "--input %s=%s: input '%s' is also given with --const",
			         names[k], files[k], names[k]);
			continue;
		}
		if (!x) {
			size_t at = 0;
			char list[512] = "";
			for (int i = 0; i < d->n && at < sizeof list - 80; i++)
				at += (size_t)snprintf(list + at, sizeof list - at, "%s'%.60s'",
				                       i ? ", " : "", d->v[i].name);
			if (at >= sizeof list - 80)
				snprintf(list + at, sizeof list - at, ", ...");
			ir_error(ctx, "--input %s=%s: the model has no input named '%s' (%s%s)",
			         names[k], files[k], names[k],
			         d->n ? "its inputs: " : "it has none", list);
			continue;
		}
		if (!x->dtype)
			continue; /* not a tensor onnxc takes: the import says what */
		if (x->dtype != t->dtype && !(x->dtype == IR_BF16 && t->dtype == IR_U16)) {
			ir_error(ctx,
			         "%s: input '%s' takes %s elements (%s), the file holds %s (%s)",
			         files[k], x->name, ir_dtype_name(x->dtype),
			         decl_str(x, a, sizeof a), ir_dtype_name(t->dtype),
			         ir_type_str(t, b, sizeof b));
			continue;
		}
		if ((sb = given_shape(mo, x->name)))
			check_given_shape(ctx, files[k], x, sb, t);
		else
			check_dims(ctx, files[k], x, t, mo, bound, &nbound, 64);
	}
	/* an input left without data whose shape nothing fixes would fail the
	 * import as an unbound dimension: say what run needs instead */
	for (int i = 0; i < d->n; i++) {
		const struct input_decl *x = &d->v[i];
		bool given = model_opts_const(mo, x->name) || given_shape(mo, x->name),
		     open = x->rank < 0;
		for (int k = 0; k < n && !given; k++)
			given = !strcmp(names[k], x->name);
		for (int j = 0; j < x->rank && !open; j++)
			open = x->dims[j] < 0 && !(x->params[j] && given_dim(mo, x->params[j]));
		if (!given && open && x->dtype)
			ir_error(ctx, "no data for input '%s' (%s); give it with --input %s=FILE",
			         x->name, decl_str(x, a, sizeof a), x->name);
	}
	return ctx->nerrors == errors;
}
