/*
 * test_rt_move.c - the data movement kernels (runtime/rt_move.c) against the
 * reference interpreter.
 *
 * Every case builds the descriptor the way the compiler does for an IR op
 * (transpose, slice, expand, concat and split pieces, depth/space
 * rearrangements as one 6-D copy, gather, gather_elements, pad, tile, trilu,
 * and scatter_elements with its reductions),
 * runs the kernel with a 1-thread and a 3-thread context into an exactly
 * sized buffer (so ASan sees any stray write) and compares the bytes with the
 * reference's result: data movement is exact. Shapes are random over many
 * ranks and dtypes (element sizes 1, 2, 4 and 8) with a fixed seed, with
 * size-0 and size-1 dims, negative strides and broadcasts, plus a few large
 * shapes that take the parallel and tiled paths.
 */
#include "refcheck.h"

#include "onnxc_rt.h"

static struct rt_ctx *ctxs[2]; /* 1 and 3 threads */
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static void setup(void)
{
	if (!ctxs[0]) {
		CHECK_EQ(rt_ctx_create(&ctxs[0], 1), RT_OK);
		CHECK_EQ(rt_ctx_create(&ctxs[1], 3), RT_OK);
	}
}

static int64_t rnd(int64_t n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (int64_t)((seed >> 11) % (uint64_t)n);
}

static const enum ir_dtype dtypes[] = { IR_F32, IR_U8,  IR_I16, IR_F64, IR_BOOL,
	                                IR_F16, IR_I32, IR_I64, IR_I8,  IR_U16 };

static enum ir_dtype rnd_dtype(void) { return dtypes[rnd(sizeof dtypes / sizeof *dtypes)]; }

static int es_of(enum ir_dtype t) { return ir_dtype_size(t); }

static size_t bytes_of(const struct ir_type *t)
{
	return (size_t)ir_type_elems(t) * es_of(t->dtype);
}

/* A tensor of random values of t (the caller frees data). */
static struct ref_tensor make(enum ir_dtype dt, int rank, const int64_t *dims)
{
	struct ref_tensor r = { .type = { .dtype = dt, .rank = rank } };
	bool sgn = ir_dtypes[dt].is_signed || ir_dtypes[dt].is_float;
	memcpy(r.type.dims, dims, sizeof *dims * (size_t)rank);
	r.data = malloc(bytes_of(&r.type) + 1);
	rand_fill(dt, r.data, ir_type_elems(&r.type),
	          dt == IR_BOOL ? 0
	          : sgn         ? -100
	                        : 0,
	          dt == IR_BOOL ? 2 : 200, &seed);
	return r;
}

static void rand_dims(int64_t *dims, int rank, int64_t max)
{
	for (int i = 0; i < rank; i++)
		dims[i] = rnd(16) == 0 ? 0 : 1 + rnd(max);
}

static void strides_of(const struct ir_type *t, int64_t *s)
{
	int64_t k = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		s[i] = k;
		k *= t->dims[i];
	}
}

/* ------------------------------------------------------------------------ */
/* Attributes and the harness                                               */
/* ------------------------------------------------------------------------ */

struct attr {
	char kind; /* 'I' ints, 'i' int, 'f' float, 's' string */
	const char *name;
	const int64_t *ints;
	int count;
	int64_t i;
	float f;
	const char *s;
};

struct attrs {
	int n;
	struct attr a[6];
};

static void set_attrs(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct attrs *at = ud;
	for (int i = 0; i < at->n; i++) {
		switch (at->a[i].kind) {
		case 'I': ir_set_ints(m, n, at->a[i].name, at->a[i].ints, at->a[i].count); break;
		case 'i': ir_set_i(m, n, at->a[i].name, at->a[i].i); break;
		case 'f': ir_set_f(m, n, at->a[i].name, at->a[i].f); break;
		default: ir_set_s(m, n, at->a[i].name, at->a[i].s);
		}
	}
}

#define ATTR(at, k, nm, field, ...) \
	((at)->a[(at)->n++] = (struct attr){ .kind = k, .name = nm, .field = __VA_ARGS__ })

/* Runs a kernel invocation (possibly several calls) into y. */
typedef int (*run_fn)(struct rt_ctx *ctx, const void *ud, void *y);

/*
 * Runs fn with each context into an exactly sized buffer pre-filled with a
 * pattern and compares the result with want byte for byte (want NULL: the
 * kernel must not write, the output is empty).
 */
static void expect_bytes(run_fn fn, const void *ud, const void *want, size_t bytes,
                         const char *what)
{
	for (int c = 0; c < 2; c++) {
		unsigned char *y = malloc(bytes + 1);
		int status;
		memset(y, 0xcd, bytes + 1);
		status = fn(ctxs[c], ud, y);
		CHECK_EQ(status, RT_OK);
		if (status == RT_OK && want && memcmp(y, want, bytes)) {
			fprintf(stderr, "%s: %s differs from the reference (%d threads)\n",
			        test_current, what, c ? 3 : 1);
			test_failures++;
		}
		free(y);
	}
}

/* The reference result of op on nin inputs; false (and a failed check)
 * when the reference refuses. */
static bool reference(enum ir_op op, struct attrs *at, const struct ref_tensor *in, int nin,
                      struct ref_tensor *out, int nout)
{
	bool ok = ref_eval(op, set_attrs, at, in, nin, out, nout);
	CHECK(ok);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* rt_copy: transpose, slice, expand, depth/space                           */
/* ------------------------------------------------------------------------ */

struct copy_case {
	struct rt_copy_desc d[8];
	int n;
	const void *x;
};

static int run_copies(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct copy_case *c = ud;
	int status = RT_OK;
	for (int i = 0; i < c->n && !status; i++)
		status = rt_copy(ctx, &c->d[i], c->x, y);
	return status;
}

/* Checks one dense-destination copy of x against op's reference result;
 * frees x. */
static void check_copy(enum ir_op op, struct attrs *at, struct ref_tensor *x,
                       const struct rt_copy_desc *d)
{
	struct copy_case c = { .d = { *d }, .n = 1, .x = x->data };
	struct ref_tensor want = { 0 };
	int64_t total = 1;
	for (int i = 0; i < d->rank; i++)
		total *= d->dims[i];
	if (reference(op, at, x, 1, &want, 1)) {
		CHECK_EQ(total, ir_type_elems(&want.type));
		expect_bytes(run_copies, &c, want.data, bytes_of(&want.type), ir_ops[op].name);
	}
	free(x->data);
	free(want.data);
}

static void transpose_case(enum ir_dtype dt, int rank, const int64_t *dims, const int *perm)
{
	struct ref_tensor x = make(dt, rank, dims);
	struct rt_copy_desc d = { .esize = es_of(dt), .rank = rank, .dst_dense = 1 };
	struct attrs at = { 0 };
	int64_t s[8], p64[8];
	strides_of(&x.type, s);
	for (int i = 0; i < rank; i++) {
		p64[i] = perm[i];
		d.dims[i] = dims[perm[i]];
		d.strides[i] = s[perm[i]];
	}
	ATTR(&at, 'I', "perm", ints, p64, .count = rank);
	check_copy(IR_OP_TRANSPOSE, &at, &x, &d);
}

static void test_transpose(void)
{
	static const struct {
		int rank;
		int64_t dims[4];
		int perm[4];
	} big[] = {
		{ 2, { 300, 517 }, { 1, 0 } },            /* the plain 2-D transpose */
		{ 4, { 2, 64, 28, 28 }, { 0, 2, 3, 1 } }, /* NCHW -> NHWC */
		{ 4, { 2, 28, 28, 64 }, { 0, 3, 1, 2 } }, /* NHWC -> NCHW */
		{ 4, { 2, 12, 64, 33 }, { 0, 2, 1, 3 } }, /* attention heads */
		{ 3, { 3, 1000, 3 }, { 2, 1, 0 } },
		{ 3, { 70000, 2, 1 }, { 1, 0, 2 } },
	};
	setup();
	for (size_t i = 0; i < sizeof big / sizeof *big; i++)
		for (int k = 0; k < 4; k++)
			transpose_case((enum ir_dtype[]){ IR_F32, IR_U8, IR_F16, IR_I64 }[k],
			               big[i].rank, big[i].dims, big[i].perm);
	for (int it = 0; it < 4 * 400; it++) {
		int rank = 1 + (int)rnd(6), perm[8];
		int64_t dims[8];
		rand_dims(dims, rank, rank > 3 ? 5 : 12);
		for (int i = 0; i < rank; i++)
			perm[i] = i;
		for (int i = rank - 1; i > 0; i--) {
			int j = (int)rnd(i + 1), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		transpose_case(rnd_dtype(), rank, dims, perm);
	}
}

static void slice_case(enum ir_dtype dt, int rank, const int64_t *dims, const int64_t *starts,
                       const int64_t *ends, const int64_t *steps)
{
	struct ref_tensor x = make(dt, rank, dims);
	struct rt_copy_desc d = { .esize = es_of(dt), .rank = rank, .dst_dense = 1 };
	struct attrs at = { 0 };
	int64_t s[8];
	strides_of(&x.type, s);
	for (int i = 0; i < rank; i++) {
		int64_t diff = steps[i] > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
		int64_t step = steps[i] > 0 ? steps[i] : -steps[i];
		d.dims[i] = (diff + step - 1) / step;
		d.strides[i] = steps[i] * s[i];
		d.offset += starts[i] * s[i];
	}
	ATTR(&at, 'I', "starts", ints, starts, .count = rank);
	ATTR(&at, 'I', "ends", ints, ends, .count = rank);
	ATTR(&at, 'I', "steps", ints, steps, .count = rank);
	check_copy(IR_OP_SLICE, &at, &x, &d);
}

static void test_slice(void)
{
	setup();
	/* a large reversed slice and a large strided one: the parallel path */
	slice_case(IR_F32, 2, (int64_t[]){ 400, 300 }, (int64_t[]){ 399, 10 },
	           (int64_t[]){ -1, 290 }, (int64_t[]){ -1, 1 });
	slice_case(IR_I64, 3, (int64_t[]){ 64, 50, 40 }, (int64_t[]){ 1, 0, 39 },
	           (int64_t[]){ 64, 50, -1 }, (int64_t[]){ 2, 1, -3 });
	for (int it = 0; it < 4 * 400; it++) {
		int rank = 1 + (int)rnd(5);
		int64_t dims[8], st[8], en[8], sp[8];
		rand_dims(dims, rank, 9);
		for (int i = 0; i < rank; i++) {
			static const int64_t steps[] = { 1, 1, 2, 3, -1, -2, 100, -100 };
			sp[i] = steps[rnd(8)];
			if (sp[i] > 0) {
				st[i] = rnd(dims[i] + 1);
				en[i] = st[i] + rnd(dims[i] - st[i] + 1);
			} else {
				st[i] = dims[i] ? rnd(dims[i]) : -1;
				en[i] = st[i] - rnd(st[i] + 2);
			}
		}
		slice_case(rnd_dtype(), rank, dims, st, en, sp);
	}
}

static void expand_case(enum ir_dtype dt, int rank, const int64_t *dims, int orank,
                        const int64_t *shape)
{
	struct ref_tensor x = make(dt, rank, dims);
	struct rt_copy_desc d = { .esize = es_of(dt), .rank = orank, .dst_dense = 1 };
	struct attrs at = { 0 };
	int64_t s[8];
	strides_of(&x.type, s);
	for (int i = 0; i < orank; i++) {
		int j = i - (orank - rank);
		d.dims[i] = shape[i];
		d.strides[i] = j < 0 || dims[j] == 1 ? 0 : s[j];
	}
	ATTR(&at, 'I', "shape", ints, shape, .count = orank);
	check_copy(IR_OP_EXPAND, &at, &x, &d);
}

static void test_expand(void)
{
	setup();
	expand_case(IR_F32, 3, (int64_t[]){ 64, 1, 1 }, 4, (int64_t[]){ 2, 64, 30, 30 });
	expand_case(IR_U8, 2, (int64_t[]){ 1, 700 }, 2, (int64_t[]){ 300, 700 });
	expand_case(IR_I64, 1, (int64_t[]){ 1 }, 2, (int64_t[]){ 200, 300 });
	for (int it = 0; it < 4 * 400; it++) {
		int rank = 1 + (int)rnd(4), orank = rank + (int)rnd(3);
		int64_t dims[8], shape[8];
		rand_dims(dims, rank, 6);
		for (int i = 0; i < orank; i++) {
			int j = i - (orank - rank);
			if (j >= 0 && rnd(2))
				dims[j] = 1;
			shape[i] = j >= 0 && dims[j] != 1 ? dims[j] : rnd(10) ? 1 + rnd(6) : 0;
		}
		expand_case(rnd_dtype(), rank, dims, orank, shape);
	}
}

/* DepthToSpace (DCR, CRD) and SpaceToDepth as the compiler lowers them: one
 * copy over a 6-D view of x read in a permuted order. */
static void depth_space_case(enum ir_dtype dt, int kind, const int64_t *nchw, int64_t b)
{
	static const int orders[3][6] = {
		{ 0, 3, 4, 1, 5, 2 }, /* DCR: [N, b, b, C', H, W] */
		{ 0, 1, 4, 2, 5, 3 }, /* CRD: [N, C', b, b, H, W] */
		{ 0, 3, 5, 1, 2, 4 }, /* space_to_depth: [N, C, H', b, W', b] */
	};
	int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3],
	        view[3][6] = {
		        { n, b, b, c / (b * b), h, w },
		        { n, c / (b * b), b, b, h, w },
		        { n, c, h / b, b, w / b, b },
	        };
	struct ref_tensor x = make(dt, 4, nchw);
	struct rt_copy_desc d = { .esize = es_of(dt), .rank = 6, .dst_dense = 1 };
	struct ir_type vt = { .dtype = dt, .rank = 6 };
	struct attrs at = { 0 };
	int64_t s[6];
	memcpy(vt.dims, view[kind], sizeof view[kind]);
	strides_of(&vt, s);
	for (int i = 0; i < 6; i++) {
		d.dims[i] = vt.dims[orders[kind][i]];
		d.strides[i] = s[orders[kind][i]];
	}
	ATTR(&at, 'i', "blocksize", i, b);
	if (kind < 2)
		ATTR(&at, 's', "mode", s, kind == 1 ? "CRD" : "DCR");
	check_copy(kind == 2 ? IR_OP_SPACE_TO_DEPTH : IR_OP_DEPTH_TO_SPACE, &at, &x, &d);
}

static void test_depth_space(void)
{
	setup();
	for (int kind = 0; kind < 3; kind++)
		depth_space_case(IR_F32, kind, (int64_t[]){ 2, 64, 32, 24 }, 2);
	for (int it = 0; it < 4 * 150; it++) {
		int kind = (int)rnd(3);
		int64_t b = 1 + rnd(3),
		        nchw[4] = { 1 + rnd(2), 1 + rnd(4), 1 + rnd(5), 1 + rnd(5) };
		if (kind == 2) {
			nchw[2] *= b;
			nchw[3] *= b;
		} else {
			nchw[1] *= b * b;
		}
		depth_space_case(rnd_dtype(), kind, nchw, b);
	}
}

/* A 0-d copy, zero-sized dims (nothing written), a bad descriptor. */
static void test_copy_edges(void)
{
	struct rt_copy_desc d = { .esize = 4, .rank = 0, .dst_dense = 1 };
	float x = 3.5f, y = 0;
	setup();
	CHECK_EQ(rt_copy(ctxs[1], &d, &x, &y), RT_OK);
	CHECK(y == 3.5f);
	d = (struct rt_copy_desc){ .esize = 4, .rank = 3, .dims = { 5, 0, 7 }, .dst_dense = 1 };
	CHECK_EQ(rt_copy(ctxs[1], &d, NULL, NULL), RT_OK);
	d.rank = 9;
	CHECK_EQ(rt_copy(ctxs[1], &d, &x, &y), RT_ERR_ARGUMENT);
	/* an odd element size goes byte-wise: a reversed 3-byte copy */
	unsigned char in[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }, out[12];
	d = (struct rt_copy_desc){
		.esize = 3, .rank = 1, .dims = { 4 }, .offset = 3, .strides = { -1 }, .dst_dense = 1
	};
	CHECK_EQ(rt_copy(ctxs[0], &d, in, out), RT_OK);
	CHECK(!memcmp(out, (unsigned char[]){ 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2 }, 12));
}

/* ------------------------------------------------------------------------ */
/* rt_copy pieces: concat and split                                         */
/* ------------------------------------------------------------------------ */

/* Piece dims along axis: random sizes (some 0) summing to the total. */
static int split_sizes(int64_t total, int64_t *sizes)
{
	int n = 0;
	while (total > 0 && n < 7) {
		sizes[n] = n == 6 ? total : rnd(total + 1);
		total -= sizes[n++];
	}
	if (total > 0 || n == 0)
		sizes[n++] = total;
	return n;
}

/*
 * Builds the piece descriptors of a concat (or, mirrored, a split) of the
 * whole tensor w along axis: piece i is dense with its own dims; in the
 * whole it starts at offset (position along axis) * stride of axis.
 */
static void piece_descs(const struct ir_type *w, int axis, const int64_t *sizes, int n, bool concat,
                        struct copy_case *c)
{
	int64_t ws[8], pos = 0;
	strides_of(w, ws);
	c->n = n;
	for (int i = 0; i < n; i++) {
		struct rt_copy_desc *d = &c->d[i];
		struct ir_type pt = *w;
		int64_t ps[8];
		pt.dims[axis] = sizes[i];
		strides_of(&pt, ps);
		*d = (struct rt_copy_desc){ .esize = es_of(w->dtype), .rank = w->rank };
		memcpy(d->dims, pt.dims, sizeof pt.dims[0] * (size_t)w->rank);
		memcpy(concat ? d->strides : d->dst_strides, ps, sizeof ps[0] * (size_t)w->rank);
		memcpy(concat ? d->dst_strides : d->strides, ws, sizeof ws[0] * (size_t)w->rank);
		if (concat)
			d->dst_offset = pos * ws[axis];
		else
			d->offset = pos * ws[axis];
		d->dst_dense = !concat;
		pos += sizes[i];
	}
}

/* Concat: every piece copies its own input into the one output. */
struct concat_case {
	struct copy_case c;
	const void *in[8];
};

static int run_concat(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct concat_case *cc = ud;
	int status = RT_OK;
	for (int i = 0; i < cc->c.n && !status; i++)
		status = rt_copy(ctx, &cc->c.d[i], cc->in[i], y);
	return status;
}

static void concat_split_case(enum ir_dtype dt, int rank, const int64_t *dims, int axis)
{
	struct ref_tensor w = make(dt, rank, dims), in[8], y = { 0 }, parts[8] = { { { 0 } } };
	struct concat_case cc;
	struct attrs at = { 0 };
	int64_t sizes[8];
	int n = split_sizes(dims[axis], sizes);
	/* concat: n random inputs into one */
	for (int i = 0; i < n; i++) {
		int64_t pd[8];
		memcpy(pd, dims, sizeof *dims * (size_t)rank);
		pd[axis] = sizes[i];
		in[i] = make(dt, rank, pd);
		cc.in[i] = in[i].data;
	}
	piece_descs(&w.type, axis, sizes, n, true, &cc.c);
	ATTR(&at, 'i', "axis", i, axis);
	if (ir_type_elems(&w.type) && reference(IR_OP_CONCAT, &at, in, n, &y, 1))
		expect_bytes(run_concat, &cc, y.data, bytes_of(&w.type), "concat");
	/* split: the whole into n pieces, each checked */
	ATTR(&at, 'I', "split", ints, sizes, .count = n);
	piece_descs(&w.type, axis, sizes, n, false, &cc.c);
	if (ir_type_elems(&w.type) && reference(IR_OP_SPLIT, &at, &w, 1, parts, n))
		for (int i = 0; i < n; i++) {
			struct copy_case one = { .d = { cc.c.d[i] }, .n = 1, .x = w.data };
			expect_bytes(run_copies, &one, parts[i].data, bytes_of(&parts[i].type),
			             "split");
		}
	for (int i = 0; i < n; i++) {
		free(in[i].data);
		free(parts[i].data);
	}
	free(w.data);
	free(y.data);
}

static void test_concat_split(void)
{
	setup();
	concat_split_case(IR_F32, 4, (int64_t[]){ 2, 96, 30, 30 }, 1);
	concat_split_case(IR_U8, 2, (int64_t[]){ 300, 500 }, 1);
	for (int it = 0; it < 4 * 300; it++) {
		int rank = 1 + (int)rnd(4);
		int64_t dims[8];
		rand_dims(dims, rank, 7);
		concat_split_case(rnd_dtype(), rank, dims, (int)rnd(rank));
	}
}

/* ------------------------------------------------------------------------ */
/* Tile                                                                     */
/* ------------------------------------------------------------------------ */

struct tile_case {
	struct rt_tile_desc d;
	const void *x;
};

static int run_tile(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct tile_case *t = ud;
	return rt_tile(ctx, &t->d, t->x, y);
}

static void tile_case(enum ir_dtype dt, int rank, const int64_t *dims, const int64_t *reps)
{
	struct ref_tensor x = make(dt, rank, dims), y = { 0 };
	struct tile_case t = { { .esize = es_of(dt), .rank = rank }, x.data };
	struct attrs at = { 0 };
	memcpy(t.d.in_dims, dims, sizeof *dims * (size_t)rank);
	memcpy(t.d.repeats, reps, sizeof *reps * (size_t)rank);
	ATTR(&at, 'I', "repeats", ints, reps, .count = rank);
	if (reference(IR_OP_TILE, &at, &x, 1, &y, 1))
		expect_bytes(run_tile, &t, y.data, bytes_of(&y.type), "tile");
	free(x.data);
	free(y.data);
}

static void test_tile(void)
{
	setup();
	tile_case(IR_F32, 3, (int64_t[]){ 4, 50, 60 }, (int64_t[]){ 2, 3, 2 });
	tile_case(IR_I8, 1, (int64_t[]){ 3 }, (int64_t[]){ 50000 });
	for (int it = 0; it < 4 * 300; it++) {
		int rank = 1 + (int)rnd(4);
		int64_t dims[8], reps[8];
		rand_dims(dims, rank, 5);
		for (int i = 0; i < rank; i++)
			reps[i] = rnd(12) ? rnd(4) + 1 : 0;
		tile_case(rnd_dtype(), rank, dims, reps);
	}
}

/* ------------------------------------------------------------------------ */
/* Gather, GatherElements                                                   */
/* ------------------------------------------------------------------------ */

/* Indices of dtype it (i32 or i64) in [-dim, dim). */
static struct ref_tensor make_indices(enum ir_dtype it, int rank, const int64_t *dims, int64_t dim)
{
	struct ref_tensor r = make(it, rank, dims);
	for (int64_t i = 0; i < ir_type_elems(&r.type); i++)
		ir_store_i64(it, r.data, (size_t)i, dim ? rnd(2 * dim) - dim : 0);
	return r;
}

struct gather_case {
	struct rt_gather_desc g;
	struct rt_gather_elements_desc e;
	bool elements;
	const void *x, *idx;
};

static int run_gather(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct gather_case *c = ud;
	if (c->elements)
		return rt_gather_elements(ctx, &c->e, c->x, c->idx, y);
	return rt_gather(ctx, &c->g, c->x, c->idx, y);
}

/* Sets index k to a value out of range: the kernel must refuse and leave
 * y as it was. */
static void expect_index_error(struct gather_case *c, struct ref_tensor *idx, int64_t bad,
                               size_t ybytes)
{
	int64_t n = ir_type_elems(&idx->type);
	unsigned char *y = malloc(ybytes + 1), *want = malloc(ybytes + 1);
	if (n == 0)
		goto out;
	ir_store_i64(idx->type.dtype, idx->data, (size_t)rnd(n), bad);
	memset(y, 0x5a, ybytes + 1);
	memset(want, 0x5a, ybytes + 1);
	CHECK_EQ(run_gather(ctxs[1], c, y), RT_ERR_INDEX);
	CHECK(!memcmp(y, want, ybytes + 1));
out:
	free(y);
	free(want);
}

/* Checks c against op's reference on in (data, indices) along axis, then
 * with an index out of range; frees the inputs. */
static void check_gather(struct gather_case *c, enum ir_op op, struct ref_tensor *in, int axis)
{
	struct ref_tensor y = { 0 };
	struct attrs at = { 0 };
	int64_t dim = in[0].type.dims[axis];
	c->x = in[0].data;
	c->idx = in[1].data;
	ATTR(&at, 'i', "axis", i, axis);
	/* the reference refuses to index an empty axis; the kernel is checked
	 * on that in test_gather_elements */
	if ((dim || !ir_type_elems(&in[1].type)) && reference(op, &at, in, 2, &y, 1)) {
		expect_bytes(run_gather, c, y.data, bytes_of(&y.type), ir_ops[op].name);
		expect_index_error(c, &in[1], rnd(2) ? dim : -dim - 1, bytes_of(&y.type));
	}
	free(in[0].data);
	free(in[1].data);
	free(y.data);
}

static void gather_case(enum ir_dtype dt, enum ir_dtype it, int rank, const int64_t *dims, int axis,
                        int irank, const int64_t *idims)
{
	struct ref_tensor in[2] = { make(dt, rank, dims),
		                    make_indices(it, irank, idims, dims[axis]) };
	struct gather_case c = { .g = { .esize = es_of(dt),
		                        .index_dtype = ir_dtypes[it].onnx,
		                        .outer = 1,
		                        .axis = dims[axis],
		                        .inner = 1,
		                        .nidx = ir_type_elems(&in[1].type) } };
	for (int i = 0; i < axis; i++)
		c.g.outer *= dims[i];
	for (int i = axis + 1; i < rank; i++)
		c.g.inner *= dims[i];
	check_gather(&c, IR_OP_GATHER, in, axis);
}

static void test_gather(void)
{
	setup();
	/* an embedding lookup and a big inner-1 gather: the parallel paths */
	gather_case(IR_F32, IR_I64, 2, (int64_t[]){ 1000, 64 }, 0, 2, (int64_t[]){ 8, 100 });
	gather_case(IR_F16, IR_I32, 2, (int64_t[]){ 200, 300 }, 1, 1, (int64_t[]){ 500 });
	for (int it = 0; it < 4 * 400; it++) {
		int rank = 1 + (int)rnd(4), irank = (int)rnd(3), axis = (int)rnd(rank);
		int64_t dims[8], idims[8];
		rand_dims(dims, rank, 6);
		rand_dims(idims, irank, 5);
		gather_case(rnd_dtype(), rnd(2) ? IR_I32 : IR_I64, rank, dims, axis, irank, idims);
	}
}

static void gather_elements_case(enum ir_dtype dt, enum ir_dtype it, int rank, const int64_t *dims,
                                 int axis, const int64_t *idims)
{
	struct ref_tensor in[2] = { make(dt, rank, dims),
		                    make_indices(it, rank, idims, dims[axis]) };
	struct gather_case c = { .e = { .esize = es_of(dt),
		                        .index_dtype = ir_dtypes[it].onnx,
		                        .rank = rank,
		                        .axis = axis },
		                 .elements = true };
	memcpy(c.e.data_dims, dims, sizeof *dims * (size_t)rank);
	memcpy(c.e.index_dims, idims, sizeof *idims * (size_t)rank);
	check_gather(&c, IR_OP_GATHER_ELEMENTS, in, axis);
}

static void test_gather_elements(void)
{
	setup();
	gather_elements_case(IR_F32, IR_I64, 2, (int64_t[]){ 300, 400 }, 1,
	                     (int64_t[]){ 300, 200 });
	gather_elements_case(IR_I64, IR_I32, 3, (int64_t[]){ 40, 50, 60 }, 0,
	                     (int64_t[]){ 70, 50, 60 });
	for (int it = 0; it < 4 * 400; it++) {
		int rank = 1 + (int)rnd(4), axis = (int)rnd(rank);
		int64_t dims[8], idims[8];
		rand_dims(dims, rank, 6);
		if (dims[axis] == 0)
			dims[axis] = 3;
		for (int i = 0; i < rank; i++)
			idims[i] = i == axis ? rnd(6) : rnd(dims[i] + 1);
		gather_elements_case(rnd_dtype(), rnd(2) ? IR_I32 : IR_I64, rank, dims, axis,
		                     idims);
	}
	/* index dims beyond the data outside the axis have nothing to read */
	struct rt_gather_elements_desc d = { .esize = 4,
		                             .index_dtype = RT_I64,
		                             .rank = 2,
		                             .axis = 0,
		                             .data_dims = { 2, 2 },
		                             .index_dims = { 1, 3 } };
	int64_t idx[3] = { 0 };
	float x[4] = { 0 }, y[3];
	CHECK_EQ(rt_gather_elements(ctxs[0], &d, x, idx, y), RT_ERR_INDEX);
	/* indexing an empty axis */
	struct rt_gather_desc g = {
		.esize = 4, .index_dtype = RT_I32, .outer = 1, .axis = 0, .inner = 1, .nidx = 1
	};
	int32_t i0 = 0;
	CHECK_EQ(rt_gather(ctxs[0], &g, x, &i0, y), RT_ERR_INDEX);
}

/* ------------------------------------------------------------------------ */
/* ScatterElements                                                          */
/* ------------------------------------------------------------------------ */

struct scatter_case {
	struct rt_scatter_elements_desc d;
	const void *x, *idx, *u;
	size_t xbytes;
	bool inplace; /* y starts as a copy of x and is passed as both */
};

static int run_scatter(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct scatter_case *c = ud;
	if (c->inplace) {
		memcpy(y, c->x, c->xbytes);
		return rt_scatter_elements(ctx, &c->d, y, c->idx, c->u, y);
	}
	return rt_scatter_elements(ctx, &c->d, c->x, c->idx, c->u, y);
}

/*
 * The kernel against the reference: duplicate indices are common here
 * (few positions along the axis), so reductions combine several updates
 * per element, in the reference's order. Halves round after each update
 * in both, so even float results match bit for bit.
 */
static void scatter_case(enum ir_dtype dt, enum ir_dtype it, int rank, const int64_t *dims,
                         int axis, const int64_t *idims, int red)
{
	static const char *const names[] = { "none", "add", "mul", "max", "min" };
	struct ref_tensor in[3] = { make(dt, rank, dims), make_indices(it, rank, idims, dims[axis]),
		                    make(dt, rank, idims) };
	struct ref_tensor y = { 0 };
	struct attrs at = { 0 };
	struct scatter_case c = { .d = { .dtype = ir_dtypes[dt].onnx,
		                         .index_dtype = ir_dtypes[it].onnx,
		                         .reduction = red,
		                         .rank = rank,
		                         .axis = axis },
		                  .x = in[0].data,
		                  .idx = in[1].data,
		                  .u = in[2].data,
		                  .xbytes = bytes_of(&in[0].type),
		                  .inplace = rnd(4) == 0 };
	int64_t n = ir_type_elems(&in[1].type);
	memcpy(c.d.data_dims, dims, sizeof *dims * (size_t)rank);
	memcpy(c.d.index_dims, idims, sizeof *idims * (size_t)rank);
	if (red == RT_SCATTER_MUL) /* small factors keep products finite */
		rand_fill(dt, in[2].data, n, ir_dtypes[dt].is_signed ? -3 : 0, 4, &seed);
	ATTR(&at, 'i', "axis", i, axis);
	ATTR(&at, 's', "reduction", s, names[red]);
	if ((dims[axis] || !n) && reference(IR_OP_SCATTER_ELEMENTS, &at, in, 3, &y, 1)) {
		unsigned char *got = malloc(c.xbytes + 1), *want = malloc(c.xbytes + 1);
		expect_bytes(run_scatter, &c, y.data, bytes_of(&y.type), "scatter_elements");
		/* an index out of range: refused before anything is written */
		if (n) {
			ir_store_i64(it, in[1].data, (size_t)rnd(n),
			             rnd(2) ? dims[axis] : -dims[axis] - 1);
			memset(got, 0x5a, c.xbytes + 1);
			memset(want, 0x5a, c.xbytes + 1);
			c.inplace = false;
			CHECK_EQ(run_scatter(ctxs[1], &c, got), RT_ERR_INDEX);
			CHECK(!memcmp(got, want, c.xbytes + 1));
		}
		free(got);
		free(want);
	}
	for (int i = 0; i < 3; i++)
		free(in[i].data);
	free(y.data);
}

static void test_scatter_elements(void)
{
	static const enum ir_dtype types[] = { IR_F32, IR_F16, IR_BF16, IR_F64, IR_I8,  IR_I16,
		                               IR_I32, IR_I64, IR_U8,   IR_U16, IR_BOOL };
	setup();
	/* an embedding gradient (rows of a [1000, 64] table, many repeated) and
	 * a scatter along the last axis: the parallel paths */
	scatter_case(IR_F32, IR_I64, 2, (int64_t[]){ 1000, 64 }, 0, (int64_t[]){ 3000, 64 },
	             RT_SCATTER_ADD);
	scatter_case(IR_F16, IR_I32, 2, (int64_t[]){ 300, 400 }, 1, (int64_t[]){ 300, 700 },
	             RT_SCATTER_ADD);
	scatter_case(IR_BF16, IR_I64, 3, (int64_t[]){ 20, 30, 400 }, 1, (int64_t[]){ 20, 50, 300 },
	             RT_SCATTER_MAX);
	for (int it = 0; it < 4 * 400; it++) {
		enum ir_dtype dt = types[rnd(sizeof types / sizeof *types)];
		int rank = 1 + (int)rnd(4), axis = (int)rnd(rank);
		int red = dt == IR_BOOL ? RT_SCATTER_NONE : (int)rnd(5);
		int64_t dims[8], idims[8];
		rand_dims(dims, rank, 6);
		if (dims[axis] == 0)
			dims[axis] = 3;
		for (int i = 0; i < rank; i++)
			idims[i] = i == axis ? rnd(8) : rnd(dims[i] + 1);
		scatter_case(dt, rnd(2) ? IR_I32 : IR_I64, rank, dims, axis, idims, red);
	}
	/* index dims beyond the data outside the axis have nowhere to go */
	struct rt_scatter_elements_desc d = { .dtype = RT_F32,
		                              .index_dtype = RT_I64,
		                              .reduction = RT_SCATTER_ADD,
		                              .rank = 2,
		                              .axis = 0,
		                              .data_dims = { 2, 2 },
		                              .index_dims = { 1, 3 } };
	int64_t idx[3] = { 0 };
	float x[4] = { 0 }, u[3] = { 0 }, y[4];
	CHECK_EQ(rt_scatter_elements(ctxs[0], &d, x, idx, u, y), RT_ERR_INDEX);
	/* no reductions on bool, no unknown reductions */
	d.index_dims[1] = 2;
	d.dtype = RT_BOOL;
	CHECK_EQ(rt_scatter_elements(ctxs[0], &d, x, idx, u, y), RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	d.reduction = 7;
	CHECK_EQ(rt_scatter_elements(ctxs[0], &d, x, idx, u, y), RT_ERR_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                      */
/* ------------------------------------------------------------------------ */

struct pad_case {
	struct rt_pad_desc d;
	const void *x;
};

static int run_pad(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct pad_case *p = ud;
	return rt_pad(ctx, &p->d, p->x, y);
}

static void pad_case(enum ir_dtype dt, int mode, int rank, const int64_t *dims, const int64_t *pads)
{
	static const char *const modes[] = { "constant", "reflect", "edge", "wrap" };
	struct ref_tensor x = make(dt, rank, dims), y = { 0 };
	struct pad_case p = { { .esize = es_of(dt), .mode = mode, .rank = rank }, x.data };
	struct attrs at = { 0 };
	float value = ir_dtypes[dt].is_float ? 2.5f : 7;
	int64_t total = 1;
	memcpy(p.d.in_dims, dims, sizeof *dims * (size_t)rank);
	memcpy(p.d.pads, pads, sizeof *pads * 2 * (size_t)rank);
	if (ir_dtypes[dt].is_float)
		ir_store_f64(dt, p.d.value, 0, value);
	else
		ir_store_i64(dt, p.d.value, 0, (int64_t)value);
	ATTR(&at, 'I', "pads", ints, pads, .count = 2 * rank);
	ATTR(&at, 's', "mode", s, modes[mode]);
	ATTR(&at, 'f', "value", f, value);
	for (int i = 0; i < rank; i++)
		total *= dims[i] + pads[i] + pads[rank + i];
	if (total == 0)
		expect_bytes(run_pad, &p, NULL, 0, "pad");
	else if (reference(IR_OP_PAD, &at, &x, 1, &y, 1))
		expect_bytes(run_pad, &p, y.data, bytes_of(&y.type), modes[mode]);
	free(x.data);
	free(y.data);
}

static void test_pad(void)
{
	setup();
	for (int mode = 0; mode < 4; mode++) {
		pad_case(IR_F32, mode, 4, (int64_t[]){ 2, 32, 56, 56 },
		         (int64_t[]){ 0, 0, 3, 2, 0, 0, 1, 3 });
		pad_case(IR_U8, mode, 1, (int64_t[]){ 200000 }, (int64_t[]){ 5, 7 });
	}
	pad_case(IR_I64, RT_PAD_CONSTANT, 3, (int64_t[]){ 30, 40, 50 },
	         (int64_t[]){ -3, 2, 0, 4, -5, 0 });
	for (int it = 0; it < 4 * 600; it++) {
		int rank = 1 + (int)rnd(4), mode = (int)rnd(4);
		int64_t dims[8], pads[16];
		rand_dims(dims, rank, 6);
		for (int i = 0; i < rank; i++) {
			int64_t n = dims[i];
			if (mode == RT_PAD_CONSTANT) {
				/* begins crop up to n; ends no more than what is left */
				pads[i] = rnd(n + 4) - n;
				pads[rank + i] = rnd(4) - rnd(n + pads[i] + 1);
			} else {
				/* reflect pads stay below n; edge and wrap need n > 0
				 * to pad, and wrap takes pads past n (periodic) */
				int64_t lim = mode == RT_PAD_REFLECT ? n
				              : mode == RT_PAD_WRAP  ? 2 * n + 3
				                                     : 4;
				pads[i] = n ? rnd(lim) : 0;
				pads[rank + i] = n ? rnd(lim) : 0;
			}
		}
		pad_case(rnd_dtype(), mode, rank, dims, pads);
	}
}

/* ------------------------------------------------------------------------ */
/* Trilu                                                                    */
/* ------------------------------------------------------------------------ */

struct trilu_case {
	struct rt_trilu_desc d;
	const void *x;
	size_t bytes;
	bool in_place;
};

static int run_trilu(struct rt_ctx *ctx, const void *ud, void *y)
{
	const struct trilu_case *t = ud;
	if (t->in_place) /* y starts as a copy of x */
		memcpy(y, t->x, t->bytes);
	return rt_trilu(ctx, &t->d, t->in_place ? y : t->x, y);
}

static void trilu_case(enum ir_dtype dt, int rank, const int64_t *dims, int upper, int64_t k)
{
	struct ref_tensor x = make(dt, rank, dims), y = { 0 };
	struct trilu_case t = { { .esize = es_of(dt), .upper = upper, .batch = 1, .k = k },
		                x.data,
		                bytes_of(&x.type) };
	struct attrs at = { 0 };
	for (int i = 0; i < rank - 2; i++)
		t.d.batch *= dims[i];
	t.d.rows = dims[rank - 2];
	t.d.cols = dims[rank - 1];
	ATTR(&at, 'i', "upper", i, upper);
	ATTR(&at, 'i', "k", i, k);
	if (!ir_type_elems(&x.type)) {
		expect_bytes(run_trilu, &t, NULL, 0, "trilu");
	} else if (reference(IR_OP_TRILU, &at, &x, 1, &y, 1)) {
		expect_bytes(run_trilu, &t, y.data, t.bytes, "trilu");
		t.in_place = true;
		expect_bytes(run_trilu, &t, y.data, t.bytes, "trilu in place");
	}
	free(x.data);
	free(y.data);
}

static void test_trilu(void)
{
	setup();
	trilu_case(IR_F32, 3, (int64_t[]){ 4, 300, 200 }, 0, 0);
	trilu_case(IR_F32, 3, (int64_t[]){ 4, 300, 200 }, 1, -20);
	for (int it = 0; it < 4 * 300; it++) {
		int rank = 2 + (int)rnd(3);
		int64_t dims[8], k = rnd(19) - 9;
		rand_dims(dims, rank, 7);
		if (rnd(10) == 0)
			k = rnd(2) ? INT64_MAX : INT64_MIN;
		trilu_case(rnd_dtype(), rank, dims, (int)rnd(2), k);
	}
}

TESTS(T(test_transpose) T(test_slice) T(test_expand) T(test_depth_space) T(test_copy_edges)
              T(test_concat_split) T(test_tile) T(test_gather) T(test_gather_elements)
                      T(test_scatter_elements) T(test_pad) T(test_trilu))
