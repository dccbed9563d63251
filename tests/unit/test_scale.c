/*
 * test_scale.c - the work of an import grows linearly with the model.
 *
 * Nothing here is timed. Each case builds a model of size N and of size 2N
 * (a Sum of N inputs, N nodes reading one tensor, ...), imports it and
 * counts the work two ways: the bytes requested from the allocator hook, and
 * ctx->probes (hash-table probes and list steps, ir.h). A linear import does
 * about twice the work for twice the model; a quadratic one four times.
 */
#include "frontend/fe.h"
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
	size_t cap_nodes, cap_inputs, cap_outputs;
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
	memcpy(n->input, in, sizeof *in * (size_t)nin);
	n->n_output = 1;
	n->output = keep(g, malloc(sizeof *n->output));
	n->output[0] = out;
	push(g, (void ***)&g->nodes, &g->graph.n_node, &g->cap_nodes, n);
	return n;
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
	ctx_collect(&ctx, &d);
	ctx.alloc = count_alloc;
	ctx.alloc_ud = &w;
	m = fe_import(&ctx, path, NULL);
	CHECK(m != NULL);
	if (!m)
		fprintf(stderr, "%s", d.text);
	else
		CHECK_EQ(ir_verify(m), 0);
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
		nodes[i] = ir_add_node(m, IR_OP_RELU, "relu", &x, 1, &name, 1);
	}
	for (int i = 0; i < n; i++)
		ir_rename_value(m, nodes[i]->out[0], ir_arena_printf(&m->arena, "q%d", i));
	ir_replace_uses(m, x, x2);
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

int main(int argc, char **argv)
{
	static const struct test_case cases[] = { T(test_sum_inputs) T(test_export_sum) T(
		test_many_readers) T(test_wanted_inputs) T(test_ir_mutators) };
	return test_main(cases, (int)(sizeof cases / sizeof cases[0]), argc, argv);
}
