/*
 * test_scale.c - the work and memory of an import against the model's size.
 *
 * Nothing here is timed. Each work case builds a model of size N and of size
 * 2N (a Sum of N inputs, N nodes reading one tensor, ...), imports it and
 * counts the work two ways: the bytes requested from the allocator hook, and
 * ctx->probes (hash-table probes and list steps, ir.h). A linear import does
 * about twice the work for twice the model; a quadratic one four times.
 *
 * The memory cases follow the allocator hook's live bytes: importing W
 * bytes of weights holds one copy of them, not the file, protobuf's and the
 * IR's; writing the weights file adds no second copy; onnxc train's
 * template still carries the data of the initializers it keeps.
 */
#include "codegen/plan.h"
#include "frontend/fe.h"
#include "import_oom.h"
#include "passes/passes.h"
#include "testutil.h"

#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Building models with protobuf-c                                          */
/* ------------------------------------------------------------------------ */

struct gen {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset;
	Onnx__OperatorSetIdProto *opsets[1];
	Onnx__NodeProto **nodes;
	Onnx__ValueInfoProto **inputs, **outputs;
	Onnx__TensorProto **inits;
	size_t cap_nodes, cap_inputs, cap_outputs, cap_inits;
	char **strings; /* everything malloc'd, freed by gen_free */
	size_t nstrings, cap_strings;
};

static void *keep(struct gen *g, void *p)
{
	if (g->nstrings == g->cap_strings) {
		g->cap_strings = g->cap_strings ? 2 * g->cap_strings : 256;
		g->strings = realloc(g->strings, sizeof *g->strings * g->cap_strings);
	}
	g->strings[g->nstrings++] = p;
	return p;
}

static char *str(struct gen *g, const char *fmt, int i)
{
	char buf[64];
	snprintf(buf, sizeof buf, fmt, i);
	return keep(g, strdup(buf));
}

static void gen_init(struct gen *g, int64_t opset)
{
	memset(g, 0, sizeof *g);
	onnx__model_proto__init(&g->model);
	onnx__graph_proto__init(&g->graph);
	onnx__operator_set_id_proto__init(&g->opset);
	g->opset.domain = "";
	g->opset.has_version = true;
	g->opset.version = opset;
	g->opsets[0] = &g->opset;
	g->model.has_ir_version = true;
	g->model.ir_version = 8;
	g->model.n_opset_import = 1;
	g->model.opset_import = g->opsets;
	g->model.graph = &g->graph;
	g->graph.name = "scale";
}

static void push(struct gen *g, void ***arr, size_t *n, size_t *cap, void *p)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		*arr = realloc(*arr, sizeof **arr * *cap);
	}
	(*arr)[(*n)++] = p;
	(void)g;
}

/* A tensor value_info of elem_type (ONNX code) and dims. */
static Onnx__ValueInfoProto *tensor_info(struct gen *g, char *name, int elem_type, int rank,
                                         const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = keep(g, malloc(sizeof *vi));
	Onnx__TypeProto *tp = keep(g, malloc(sizeof *tp));
	Onnx__TypeProto__Tensor *tt = keep(g, malloc(sizeof *tt));
	Onnx__TensorShapeProto *sh = keep(g, malloc(sizeof *sh));
	Onnx__TensorShapeProto__Dimension **dv = keep(g, calloc((size_t)rank + 1, sizeof *dv));
	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	for (int d = 0; d < rank; d++) {
		dv[d] = keep(g, malloc(sizeof *dv[d]));
		onnx__tensor_shape_proto__dimension__init(dv[d]);
		dv[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		dv[d]->dim_value = dims[d];
	}
	sh->n_dim = (size_t)rank;
	sh->dim = dv;
	tt->has_elem_type = true;
	tt->elem_type = elem_type;
	tt->shape = sh;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->name = name;
	vi->type = tp;
	return vi;
}

static void input(struct gen *g, char *name, int elem_type, int rank, const int64_t *dims)
{
	push(g, (void ***)&g->inputs, &g->graph.n_input, &g->cap_inputs,
	     tensor_info(g, name, elem_type, rank, dims));
}

static void output(struct gen *g, char *name)
{
	Onnx__ValueInfoProto *vi = keep(g, malloc(sizeof *vi));
	onnx__value_info_proto__init(vi);
	vi->name = name;
	push(g, (void ***)&g->outputs, &g->graph.n_output, &g->cap_outputs, vi);
}

static Onnx__NodeProto *node(struct gen *g, const char *op, char *name, int nin, char **in,
                             char *out)
{
	Onnx__NodeProto *n = keep(g, malloc(sizeof *n));
	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = name;
	n->n_input = (size_t)nin;
	n->input = keep(g, malloc(sizeof *n->input * (size_t)(nin ? nin : 1)));
	if (nin)
		memcpy(n->input, in, sizeof *in * (size_t)nin);
	n->n_output = 1;
	n->output = keep(g, malloc(sizeof *n->output));
	n->output[0] = out;
	push(g, (void ***)&g->nodes, &g->graph.n_node, &g->cap_nodes, n);
	return n;
}

/* A float initializer of dims holding data (copied into raw_data). */
static void initializer(struct gen *g, char *name, int rank, const int64_t *dims, const float *data)
{
	Onnx__TensorProto *t = keep(g, malloc(sizeof *t));
	size_t n = 1;
	onnx__tensor_proto__init(t);
	t->name = name;
	t->has_data_type = true;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t->n_dims = (size_t)rank;
	t->dims = keep(g, malloc(sizeof *t->dims * (size_t)(rank ? rank : 1)));
	for (int d = 0; d < rank; d++)
		n *= (size_t)(t->dims[d] = dims[d]);
	t->has_raw_data = true;
	t->raw_data.len = n * 4;
	t->raw_data.data = keep(g, malloc(n * 4));
	memcpy(t->raw_data.data, data, n * 4);
	push(g, (void ***)&g->inits, &g->graph.n_initializer, &g->cap_inits, t);
}

/* Packs the model into a temporary file; returns its path (static). */
static const char *gen_write(struct gen *g)
{
	static char path[64];
	size_t len;
	unsigned char *buf;
	FILE *f;
	int fd;
	g->graph.node = g->nodes;
	g->graph.input = g->inputs;
	g->graph.output = g->outputs;
	g->graph.initializer = g->inits;
	len = onnx__model_proto__get_packed_size(&g->model);
	buf = malloc(len);
	onnx__model_proto__pack(&g->model, buf);
	snprintf(path, sizeof path, "/tmp/onnxc_scale_XXXXXX");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	CHECK(f && fwrite(buf, 1, len, f) == len);
	if (f)
		fclose(f);
	free(buf);
	return path;
}

static void gen_free(struct gen *g)
{
	for (size_t i = 0; i < g->nstrings; i++)
		free(g->strings[i]);
	free(g->strings);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g->inits);
}

/* ------------------------------------------------------------------------ */
/* Counting                                                                 */
/* ------------------------------------------------------------------------ */

struct work {
	uint64_t bytes, probes;
};

static void *count_alloc(void *ud, void *ptr, size_t nsize)
{
	struct work *w = ud;
	if (!nsize) {
		free(ptr);
		return NULL;
	}
	w->bytes += nsize;
	return realloc(ptr, nsize);
}

typedef void (*build_fn)(struct gen *g, int n);

/* Imports path with allocations through fn; NULL after a failed check. */
static struct ir_module *import_with(const char *path, const struct fe_options *opt,
                                     struct ir_ctx *ctx, struct diag_buf *d, ir_alloc_fn fn,
                                     void *ud)
{
	struct ir_module *m;
	ctx_collect(ctx, d);
	ctx->alloc = fn;
	ctx->alloc_ud = ud;
	m = fe_import(ctx, path, opt);
	CHECK(m != NULL);
	if (!m)
		fprintf(stderr, "%s", d->text);
	else
		CHECK_EQ(ir_verify(m), 0);
	return m;
}

/* Imports the model build makes for n (and exports it again if asked); the
 * work it took. */
static struct work import_work(build_fn build, int n, bool export)
{
	struct gen g;
	struct work w = { 0, 0 };
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	const char *path;
	build(&g, n);
	path = gen_write(&g);
	m = import_with(path, NULL, &ctx, &d, count_alloc, &w);
	/* the passes compile runs next count too */
	CHECK(m && pass_pipeline(m, PASS_STAGE_CODEGEN, NULL));
	if (m && export) {
		char out[128];
		snprintf(out, sizeof out, "%s.out.onnx", path);
		CHECK(fe_export_onnx(m, out, NULL));
		unlink(out);
	}
	w.probes = ctx.probes;
	ir_module_free(m);
	unlink(path);
	gen_free(&g);
	return w;
}

/* Twice the model, at most about twice the work. */
static void check_linear(const char *what, build_fn build, int n, bool export)
{
	struct work a = import_work(build, n, export), b = import_work(build, 2 * n, export);
	double rb = (double)b.bytes / (double)(a.bytes ? a.bytes : 1),
	       rp = (double)b.probes / (double)(a.probes ? a.probes : 1);
	printf("%s: N=%d: %llu bytes, %llu probes; 2N: %.2fx bytes, %.2fx probes\n", what, n,
	       (unsigned long long)a.bytes, (unsigned long long)a.probes, rb, rp);
	CHECK(rb <= 2.2);
	CHECK(rp <= 2.2);
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                    */
/* ------------------------------------------------------------------------ */

static const int64_t four[1] = { 4 };

/* Sum of n inputs: a chain of n - 1 adds, each named by fe_tmp_name. */
static void build_sum(struct gen *g, int n)
{
	char **in = malloc(sizeof *in * (size_t)n);
	gen_init(g, 13);
	for (int i = 0; i < n; i++) {
		in[i] = str(g, "x%d", i);
		input(g, in[i], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, four);
	}
	node(g, "Sum", "sum", n, in, "y");
	output(g, "y");
	free(in);
}

static void test_sum_inputs(void) { check_linear("Sum of N inputs", build_sum, 10000, false); }

/* Its N - 1 adds all carry the node's name, which ONNX Runtime wants
 * unique: the exporter names them "sum", "sum.1", ... */
static void test_export_sum(void)
{
	check_linear("Sum of N inputs, exported", build_sum, 10000, true);
}

/* n Shape nodes of one input, each folded at import (a use of x dropped
 * each time, out of a use list n long) and each a graph output. */
static void build_shapes(struct gen *g, int n)
{
	static const int64_t dims[2] = { 2, 3 };
	char *x;
	gen_init(g, 13);
	x = str(g, "x", 0);
	input(g, x, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, dims);
	for (int i = 0; i < n; i++) {
		char *s = str(g, "s%d", i);
		node(g, "Shape", str(g, "shape%d", i), 1, &x, s);
		output(g, s);
	}
}

static void test_many_readers(void)
{
	check_linear("N folded readers of one tensor", build_shapes, 10000, false);
}

/* n inputs, each through a Relu to its own graph output. */
static void build_outputs(struct gen *g, int n)
{
	gen_init(g, 13);
	for (int i = 0; i < n; i++) {
		char *x = str(g, "x%d", i), *y = str(g, "y%d", i);
		input(g, x, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, four);
		node(g, "Relu", str(g, "relu%d", i), 1, &x, y);
		output(g, y);
	}
}

/* dead-code elimination asked "is this a graph output?" by a scan per value */
static void test_many_outputs(void) { check_linear("N graph outputs", build_outputs, 5000, false); }

/*
 * onnxc check's retry asks which graph inputs a shape was computed from.
 * Here the shape is k doublings of x (y1 = x + x, y2 = y1 + y1, ...): a walk
 * that revisits shared operands takes 2^k steps; one that visits each value
 * once, k.
 */
static void build_doublings(struct gen *g, int k)
{
	static const int64_t one[1] = { 1 };
	char *prev, *data;
	gen_init(g, 13);
	prev = str(g, "x", 0);
	data = str(g, "data", 0);
	input(g, prev, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, one);
	input(g, data, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, one);
	for (int i = 1; i <= k; i++) {
		char *y = str(g, "y%d", i), *in[2] = { prev, prev };
		node(g, "Add", str(g, "add%d", i), 2, in, y);
		prev = y;
	}
	{
		char *in[2] = { data, prev };
		node(g, "Reshape", "reshape", 2, in, "out");
	}
	output(g, "out");
}

static void test_wanted_inputs(void)
{
	struct gen g;
	struct fe_wanted wanted = { .n = 0 };
	struct fe_options opt = { .wanted = &wanted };
	struct diag_buf d;
	struct ir_ctx ctx;
	const char *path;
	build_doublings(&g, 60);
	path = gen_write(&g);
	ctx_collect(&ctx, &d);
	CHECK(fe_import(&ctx, path, &opt) == NULL);
	CHECK_STR(d.text, "must be a constant");
	CHECK_EQ(wanted.n, 1);
	CHECK(!strcmp(wanted.names[0], "x"));
	CHECK(ctx.probes < 10000);
	unlink(path);
	gen_free(&g);
}

/*
 * The IR's mutators on a value with n uses: n nodes named alike (each
 * asking ir_unique_name), each result renamed, every use moved to another
 * value, then the nodes removed in creation order.
 */
static uint64_t mutator_work(int n)
{
	static const struct ir_type t = { IR_F32, 1, { 4 } };
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_value *x, *x2;
	struct ir_node **nodes = malloc(sizeof *nodes * (size_t)n);
	uint64_t probes;
	ir_ctx_init(&ctx);
	m = ir_module_new(&ctx, "mutators");
	x = ir_add_input(m, "x", &t);
	x2 = ir_add_input(m, "x2", &t);
	for (int i = 0; i < n; i++) {
		const char *name = ir_unique_name(m, "r");
		char err[256];
		nodes[i] = ir_add_node(m, IR_OP_RELU, "relu", &x, 1, &name, 1);
		CHECK(ir_infer_node(m, nodes[i], err, sizeof err));
	}
	for (int i = 0; i < n; i++)
		ir_rename_value(m, nodes[i]->out[0], ir_arena_printf(&m->arena, "q%d", i));
	ir_replace_uses(m, x, x2);
	CHECK_EQ(ir_verify(m), 0); /* every operand where its node says, in O(n) */
	for (int i = 0; i < n; i++)
		ir_remove_node(m, nodes[i]);
	CHECK_EQ(x->nuses + x2->nuses, 0);
	CHECK_EQ(ir_verify(m), 0);
	probes = ctx.probes;
	ir_module_free(m);
	free(nodes);
	return probes;
}

static void test_ir_mutators(void)
{
	uint64_t a = mutator_work(10000), b = mutator_work(20000);
	printf("IR mutators: N=10000: %llu probes; 2N: %.2fx\n", (unsigned long long)a,
	       (double)b / (double)a);
	CHECK((double)b / (double)a <= 2.2);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/* Live and peak bytes through the allocator hook (a size header each). */
struct peak {
	size_t live, peak;
};

static void *peak_alloc(void *ud, void *ptr, size_t nsize)
{
	struct peak *pk = ud;
	size_t *h = ptr ? (size_t *)ptr - 2 : NULL;
	if (h)
		pk->live -= h[0];
	if (!nsize) {
		free(h);
		return NULL;
	}
	h = realloc(h, nsize + 2 * sizeof *h);
	if (!h)
		return NULL;
	h[0] = nsize;
	pk->live += nsize;
	if (pk->live > pk->peak)
		pk->peak = pk->live;
	return h + 2;
}

#define WEIGHT_ROWS  1024
#define WEIGHT_COLS  2048
#define WEIGHT_BYTES ((size_t)WEIGHT_ROWS * WEIGHT_COLS * 4)

static float *weight_values(void)
{
	float *w = malloc(WEIGHT_BYTES);
	for (size_t i = 0; i < WEIGHT_BYTES / 4; i++)
		w[i] = (float)(i % 1000) / 1000.0f;
	return w;
}

/* y = x w + c: w an 8 MiB initializer, c a Constant whose 8 KiB value is
 * the node attribute's tensor (both large enough to stay in the file). */
static void build_weighted(struct gen *g, const float *w)
{
	static const int64_t xd[2] = { 1, WEIGHT_ROWS }, wd[2] = { WEIGHT_ROWS, WEIGHT_COLS },
	                     cd[1] = { WEIGHT_COLS };
	Onnx__NodeProto *c;
	Onnx__AttributeProto *value, **attrs;
	float *cv;
	char *mm[2], *add[2];
	gen_init(g, 13);
	value = keep(g, malloc(sizeof *value));
	attrs = keep(g, malloc(sizeof *attrs));
	cv = keep(g, malloc(WEIGHT_COLS * 4));
	input(g, str(g, "x", 0), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
	initializer(g, str(g, "w", 0), 2, wd, w);
	mm[0] = str(g, "x", 0);
	mm[1] = str(g, "w", 0);
	node(g, "MatMul", str(g, "matmul", 0), 2, mm, str(g, "xw", 0));
	c = node(g, "Constant", str(g, "const", 0), 0, NULL, str(g, "c", 0));
	for (int i = 0; i < WEIGHT_COLS; i++)
		cv[i] = (float)i;
	/* the attribute's tensor: made as an initializer, then taken back */
	initializer(g, str(g, "c_value", 0), 1, cd, cv);
	onnx__attribute_proto__init(value);
	value->name = "value";
	value->has_type = true;
	value->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	value->t = g->inits[--g->graph.n_initializer];
	attrs[0] = value;
	c->n_attribute = 1;
	c->attribute = attrs;
	add[0] = str(g, "xw", 0);
	add[1] = str(g, "c", 0);
	node(g, "Add", str(g, "add", 0), 2, add, str(g, "y", 0));
	output(g, str(g, "y", 0));
}

/* The weighted model in a file, and the weights it holds. */
struct weighted {
	struct gen g;
	float *w;
	const char *path;
};

static void weighted_open(struct weighted *f)
{
	f->w = weight_values();
	build_weighted(&f->g, f->w);
	f->path = gen_write(&f->g);
}

static void weighted_close(struct weighted *f)
{
	unlink(f->path);
	gen_free(&f->g);
	free(f->w);
}

/* Importing W bytes of weights holds them once: protobuf-c does not copy
 * the large raw_data (it stays in the file until the constant is read). */
static void test_import_memory(void)
{
	struct weighted f;
	struct peak pk = { 0, 0 };
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	weighted_open(&f);
	m = import_with(f.path, NULL, &ctx, &d, peak_alloc, &pk);
	printf("import of %zu bytes of weights: peak %zu bytes (%.2fx)\n", WEIGHT_BYTES, pk.peak,
	       (double)pk.peak / (double)WEIGHT_BYTES);
	CHECK(pk.peak < WEIGHT_BYTES * 5 / 4);
	if (m) {
		struct ir_value *wv = ir_find_value(m, "w"), *cv = ir_find_value(m, "c");
		CHECK(wv && wv->data && !memcmp(wv->data, f.w, WEIGHT_BYTES));
		CHECK(cv && cv->data && ((float *)cv->data)[WEIGHT_COLS - 1] == WEIGHT_COLS - 1);
	}
	ir_module_free(m);
	CHECK_EQ(pk.live, 0);
	weighted_close(&f);
}

/* onnxc train's eval step: the initializers named in no_data become
 * constants of the right type without data, and their bytes are never
 * read (the training step's import holds them). */
static void test_import_no_data(void)
{
	static const char *const no_data[1] = { "w" };
	struct fe_options opt = { .no_data = no_data, .nno_data = 1 };
	struct weighted f;
	struct peak pk = { 0, 0 };
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	weighted_open(&f);
	m = import_with(f.path, &opt, &ctx, &d, peak_alloc, &pk);
	CHECK(pk.peak < WEIGHT_BYTES / 8);
	if (m) {
		struct ir_value *v = ir_find_value(m, "w");
		CHECK(v && v->kind == IR_VAL_CONST && !v->data && v->type.dims[1] == WEIGHT_COLS);
	}
	ir_module_free(m);
	weighted_close(&f);
}

/* Every allocation failure in that import unwinds without a leak: memory,
 * the model's file descriptor and its mapping. */
static void test_import_memory_oom(void)
{
	struct weighted f;
	weighted_open(&f);
	oom_import_loop(f.path);
	weighted_close(&f);
}

/* The weights file is written from the constants: no image of it in
 * memory; its bytes are the image's. */
static void test_weights_memory(void)
{
	struct weighted f;
	struct peak pk = { 0, 0 };
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct cg_options co = { .name = "t", .out_dir = "/tmp", .target = "cpu" };
	struct cg_plan p = { .opt = &co };
	char out[128];
	weighted_open(&f);
	snprintf(out, sizeof out, "%s.weights", f.path);
	m = import_with(f.path, NULL, &ctx, &d, peak_alloc, &pk);
	if (m && pass_pipeline(m, PASS_STAGE_CODEGEN, NULL)) {
		size_t before, size = 0, got = 0;
		unsigned char *img, *file;
		FILE *fp;
		p.m = m;
		p.arena = &m->arena;
		CHECK(cg_lower(&p) && cg_plan_memory(&p));
		cg_model_id(&p);
		before = pk.peak = pk.live;
		CHECK(cg_write_weights(&p, out));
		printf("writing %lld bytes of weights: %zu bytes more at the peak\n",
		       (long long)p.weight_bytes, pk.peak - before);
		CHECK(pk.peak - before < WEIGHT_BYTES / 8);
		img = cg_weights_image(&p, &size);
		file = malloc(size + 1);
		if ((fp = fopen(out, "rb"))) {
			got = fread(file, 1, size + 1, fp);
			fclose(fp);
		}
		CHECK(img && got == size && !memcmp(img, file, size));
		free(file);
	}
	ir_module_free(m);
	unlink(out);
	weighted_close(&f);
}

/*
 * A tensor that carries the loader's private field itself (offset 0 and the
 * whole file as its "payload") keeps its own raw_data: the loader drops the
 * field, and only its own say where a payload lies.
 */
static void test_foreign_payload_field(void)
{
	static const int64_t dims[1] = { 16 };
	static const float vals[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint8_t field[17] = { 16 }; /* its length, offset 0, length 1 << 20 */
	ProtobufCMessageUnknownField u = { 536870911u, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
		                           sizeof field, field };
	struct gen g;
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	const char *path;
	char *in[2];
	field[8 + 3] = 0x10;
	gen_init(&g, 13);
	input(&g, str(&g, "x", 0), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, dims);
	initializer(&g, str(&g, "w", 0), 1, dims, vals);
	g.inits[0]->base.n_unknown_fields = 1;
	g.inits[0]->base.unknown_fields = &u;
	in[0] = str(&g, "x", 0);
	in[1] = str(&g, "w", 0);
	node(&g, "Add", str(&g, "add", 0), 2, in, str(&g, "y", 0));
	output(&g, str(&g, "y", 0));
	path = gen_write(&g);
	g.inits[0]->base.n_unknown_fields = 0;
	m = import_with(path, NULL, &ctx, &d, NULL, NULL);
	if (m) {
		struct ir_value *w = ir_find_value(m, "w");
		CHECK(w && w->data && !memcmp(w->data, vals, sizeof vals));
	}
	ir_module_free(m);
	unlink(path);
	gen_free(&g);
}

/* onnxc train's template: the model without the trained initializer (w),
 * and with the data of what it keeps - here the Constant's tensor, whose
 * raw_data the loader had left in the file. */
static void test_train_template(void)
{
	struct weighted f;
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_arena a;
	const char *drop[1] = { "w" };
	unsigned char *bytes = NULL;
	size_t len = 0;
	Onnx__ModelProto *mp;
	weighted_open(&f);
	ctx_collect(&ctx, &d);
	ir_arena_init(&a, &ctx);
	CHECK(fe_train_template(&ctx, &a, f.path, drop, 1, &bytes, &len));
	CHECK(len < WEIGHT_BYTES / 8);
	mp = bytes ? onnx__model_proto__unpack(NULL, len, bytes) : NULL;
	CHECK(mp != NULL);
	if (mp) {
		const Onnx__NodeProto *c = mp->graph->node[1];
		const Onnx__TensorProto *t = c->n_attribute ? c->attribute[0]->t : NULL;
		CHECK_EQ(mp->graph->n_initializer, 0);
		CHECK(!strcmp(c->op_type, "Constant") && t);
		CHECK(t && t->has_raw_data && t->raw_data.len == WEIGHT_COLS * 4 &&
		      ((const float *)t->raw_data.data)[7] == 7.0f && !t->base.n_unknown_fields);
		onnx__model_proto__free_unpacked(mp, NULL);
	}
	ir_arena_free(&a);
	weighted_close(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		T(test_sum_inputs) T(test_export_sum) T(test_many_readers) T(test_many_outputs)
		        T(test_wanted_inputs) T(test_ir_mutators) T(test_import_memory)
		                T(test_import_no_data) T(test_import_memory_oom)
		                        T(test_weights_memory) T(test_train_template)
		                                T(test_foreign_payload_field)
	};
	return test_main(cases, (int)(sizeof cases / sizeof cases[0]), argc, argv);
}
