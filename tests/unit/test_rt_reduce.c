/*
 * test_rt_reduce.c - rt_reduce, rt_arg, rt_topk and rt_cumsum (CumSum, CumProd)
 * against the reference.
 *
 * Every case runs the kernel on a context of 1 thread and one of 3 and
 * demands bit-identical results (the work split never changes the order of
 * accumulation), then compares with the reference op. Reductions cover
 * every kind and dtype, both keepdims settings (the output layout is the
 * same), every axis subset of small 3-D and 4-D shapes (row, column, middle
 * and scattered layouts), size-1 and size-0 dimensions, and long rows and
 * columns that exercise the pairwise sums and the split into pieces. Float
 * sums are checked against a bound that grows with the reduced length;
 * max/min and everything on integers must be exact. ArgMax/ArgMin use data
 * with many ties and with NaNs, for select_last_index either way, and an
 * empty axis; TopK the same data, rows and strided lanes, k from 0 to the
 * whole axis, both orders, bit for bit; CumSum and CumProd every
 * exclusive/reverse combination, and in place.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

struct ctxs {
	struct rt_ctx *one, *three;
};

static struct ctxs open_ctxs(void)
{
	struct ctxs c;
	CHECK_EQ(rt_ctx_create(&c.one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&c.three, 3), RT_OK);
	return c;
}

static void close_ctxs(struct ctxs c)
{
	rt_ctx_destroy(c.one);
	rt_ctx_destroy(c.three);
}

static int rt_code(enum ir_dtype t) { return ir_dtypes[t].onnx; }
static bool isfloat(enum ir_dtype t) { return ir_dtypes[t].is_float; }

static int64_t count(int rank, const int64_t *dims)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	return n;
}

/* A random tensor; integral values when whole (ties for arg tests). */
static struct ref_tensor tensor(enum ir_dtype t, int rank, const int64_t *dims, double lo,
                                double hi, bool whole, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = t, .rank = rank } };
	int64_t n = count(rank, dims);
	memcpy(r.type.dims, dims, sizeof(int64_t) * (size_t)rank);
	r.data = malloc((size_t)n * (size_t)ir_dtype_size(t) + 1);
	rand_fill(t, r.data, n, lo, hi, seed);
	for (int64_t i = 0; whole && isfloat(t) && i < n; i++)
		ir_store_f64(t, r.data, (size_t)i, floor(ir_load_f64(t, r.data, (size_t)i)));
	return r;
}

/* y1 (1 thread) and y3 (3 threads) must agree bit for bit. */
static void same_bits(const void *y1, const void *y3, size_t bytes, const char *what)
{
	if (memcmp(y1, y3, bytes)) {
		fprintf(stderr, "%s: 1 and 3 threads differ\n", what);
		CHECK(!"thread-count independent");
	}
}

/* Compares the n results y (dtype t) with the reference op on x. */
static void match_ref(enum ir_op op, ref_attrs_fn set, void *ud, const struct ref_tensor *x,
                      enum ir_dtype t, const void *y, int64_t n, double rtol, double atol,
                      const char *what)
{
	struct ref_tensor out;
	double err;
	if (!ref_eval(op, set, ud, x, 1, &out, 1)) {
		CHECK(!"reference evaluation");
		return;
	}
	CHECK_EQ(ir_type_elems(&out.type), n);
	err = rel_err(t, y, out.data, n, rtol, atol);
	if (!(err <= 1)) {
		fprintf(stderr, "%s: error %g\n", what, err);
		CHECK(err <= 1);
	}
	free(out.data);
}

/* ------------------------------------------------------------------------ */
/* rt_reduce                                                                */
/* ------------------------------------------------------------------------ */

static const enum ir_op reduce_ops[] = {
	[RT_REDUCE_SUM] = IR_OP_REDUCE_SUM,
	[RT_REDUCE_MEAN] = IR_OP_REDUCE_MEAN,
	[RT_REDUCE_MAX] = IR_OP_REDUCE_MAX,
	[RT_REDUCE_MIN] = IR_OP_REDUCE_MIN,
	[RT_REDUCE_PROD] = IR_OP_REDUCE_PROD,
	[RT_REDUCE_L1] = IR_OP_REDUCE_L1,
	[RT_REDUCE_L2] = IR_OP_REDUCE_L2,
	[RT_REDUCE_SUM_SQUARE] = IR_OP_REDUCE_SUM_SQUARE,
	[RT_REDUCE_LOG_SUM] = IR_OP_REDUCE_LOG_SUM,
	[RT_REDUCE_LOG_SUM_EXP] = IR_OP_REDUCE_LOG_SUM_EXP,
};

struct red_attrs {
	int64_t axes[8];
	int naxes;
	int keep;
};

static void set_reduce(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct red_attrs *a = ud;
	ir_set_ints(m, n, "axes", a->axes, a->naxes);
	ir_set_i(m, n, "keepdims", a->keep);
}

/* Data ranges that keep each kind meaningful (products near 1, logs of
 * positive sums, integers far from overflow). */
static void data_range(enum ir_dtype t, int kind, double *lo, double *hi)
{
	bool f = isfloat(t);
	*lo = f ? -1 : -100;
	*hi = f ? 1 : 100;
	if (kind == RT_REDUCE_PROD) {
		*lo = f ? 0.7 : -2;
		*hi = f ? 1.4 : 3;
	}
	if (kind == RT_REDUCE_LOG_SUM)
		*lo = 0;
	if (t == IR_U8 || t == IR_I8) {
		*lo = t == IR_U8 ? 0 : -128;
		*hi = t == IR_U8 ? 256 : 128;
	}
}

/* The allowed error: pairwise f32 sums drift like log2(n) ulps of the sum
 * of magnitudes; max/min and integers are exact. */
static void tolerance(enum ir_dtype t, int kind, int64_t nred, double *rtol, double *atol)
{
	double eps = t == IR_F32 ? 6e-8 : 1.2e-16, logn = log2((double)nred + 2);
	*rtol = *atol = 0;
	if (!isfloat(t) || kind == RT_REDUCE_MAX || kind == RT_REDUCE_MIN)
		return;
	*rtol = 8 * eps * logn;
	*atol = 8 * eps * logn * (kind == RT_REDUCE_MEAN ? 1 : (double)nred);
	if (kind == RT_REDUCE_PROD)
		*rtol = 4 * eps * (double)nred;
}

static void check_reduce(struct ctxs c, enum ir_dtype t, int kind, int rank, const int64_t *dims,
                         unsigned mask, int keep, uint64_t *seed)
{
	struct rt_reduce_desc d = { rt_code(t), kind, rank, { 0 }, mask };
	struct red_attrs a = { .keep = keep };
	struct ref_tensor x;
	double lo, hi, rtol, atol;
	char what[80];
	int64_t nout = 1, nred = 1;
	size_t es = (size_t)ir_dtype_size(t);
	void *y1, *y3;
	for (int i = 0; i < rank; i++) {
		d.dims[i] = dims[i];
		if (mask >> i & 1) {
			a.axes[a.naxes++] = i;
			nred *= dims[i];
		} else {
			nout *= dims[i];
		}
	}
	data_range(t, kind, &lo, &hi);
	x = tensor(t, rank, dims, lo, hi, false, seed);
	y1 = calloc((size_t)nout + 1, es);
	y3 = calloc((size_t)nout + 1, es);
	CHECK_EQ(rt_reduce(c.one, &d, x.data, y1), RT_OK);
	CHECK_EQ(rt_reduce(c.three, &d, x.data, y3), RT_OK);
	same_bits(y1, y3, (size_t)nout * es, "rt_reduce");
	tolerance(t, kind, nred, &rtol, &atol);
	snprintf(what, sizeof what, "reduce kind %d %s rank %d mask %#x", kind, ir_dtype_name(t),
	         rank, mask);
	match_ref(reduce_ops[kind], set_reduce, &a, &x, t, y1, nout, rtol, atol, what);
	free(x.data);
	free(y1);
	free(y3);
}

/* Every kind valid for dtype t over shape dims, for the given masks. */
static void reduce_kinds(struct ctxs c, enum ir_dtype t, int rank, const int64_t *dims,
                         const unsigned *masks, int nmasks, uint64_t *seed)
{
	for (int kind = RT_REDUCE_SUM; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
		bool minmax = kind == RT_REDUCE_MAX || kind == RT_REDUCE_MIN;
		if ((t == IR_U8 || t == IR_I8) && !minmax)
			continue;
		for (int m = 0; m < nmasks; m++)
			check_reduce(c, t, kind, rank, dims, masks[m], (m + kind) & 1, seed);
	}
}

static const enum ir_dtype reduce_dtypes[] = { IR_F32, IR_F64, IR_I32, IR_I64, IR_U8, IR_I8 };

static void test_reduce_small(void)
{
	static const int64_t s3[] = { 3, 4, 5 }, s4[] = { 2, 3, 4, 5 }, ones[] = { 1, 6, 1, 4 };
	static const int64_t s1[] = { 7 }, one[] = { 1 }, tall[] = { 37, 2 };
	static const unsigned all3[] = { 1, 2, 3, 4, 5, 6, 7 };
	static const unsigned some4[] = { 1, 2, 4, 8, 3, 6, 12, 5, 10, 9, 14, 15 };
	static const unsigned ones_m[] = { 1, 4, 5, 2, 6, 10, 15 };
	static const unsigned m1[] = { 1 }, m2[] = { 1, 2, 3 };
	struct ctxs c = open_ctxs();
	uint64_t seed = 42;
	for (size_t i = 0; i < sizeof reduce_dtypes / sizeof reduce_dtypes[0]; i++) {
		enum ir_dtype t = reduce_dtypes[i];
		reduce_kinds(c, t, 3, s3, all3, 7, &seed);
		reduce_kinds(c, t, 4, s4, some4, 12, &seed);
		reduce_kinds(c, t, 4, ones, ones_m, 7, &seed);
		reduce_kinds(c, t, 1, s1, m1, 1, &seed);
		reduce_kinds(c, t, 1, one, m1, 1, &seed);
		reduce_kinds(c, t, 2, tall, m2, 3, &seed);
	}
	close_ctxs(c);
}

/* Long rows and columns: pairwise sums, the split into pieces, segments. */
static void test_reduce_large(void)
{
	static const int64_t row[] = { 1, 300001 }, rows4[] = { 4, 70001 }, col[] = { 70001, 3 };
	static const int64_t mid[] = { 3, 1000, 130 }, scat[] = { 200, 2, 300 };
	static const unsigned m_row[] = { 2, 3 }, m_col[] = { 1 }, m_mid[] = { 2, 5 };
	static const enum ir_dtype types[] = { IR_F32, IR_F64, IR_I32, IR_I64 };
	struct ctxs c = open_ctxs();
	uint64_t seed = 7;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		enum ir_dtype t = types[i];
		for (int kind = RT_REDUCE_SUM; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
			if (kind == RT_REDUCE_PROD)
				continue;
			check_reduce(c, t, kind, 2, row, m_row[kind & 1], 0, &seed);
			check_reduce(c, t, kind, 2, rows4, 2, 1, &seed);
			check_reduce(c, t, kind, 2, col, m_col[0], 0, &seed);
			check_reduce(c, t, kind, 3, mid, m_mid[kind & 1], 1, &seed);
			check_reduce(c, t, kind, 3, scat, 5, 0, &seed);
		}
	}
	close_ctxs(c);
}

/* Size-0 dimensions: nothing to write, or the identity of an empty set. */
static void test_reduce_empty(void)
{
	static const int64_t z[] = { 3, 0, 4 };
	struct ctxs c = open_ctxs();
	uint64_t seed = 3;
	for (int kind = RT_REDUCE_SUM; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
		check_reduce(c, IR_F32, kind, 3, z, 2, 1, &seed); /* empty reductions */
		check_reduce(c, IR_F32, kind, 3, z, 1, 0, &seed); /* no outputs */
		check_reduce(c, IR_I64, kind, 3, z, 3, 0, &seed);
	}
	close_ctxs(c);
}

/*
 * Rows with NaN, infinities and a whole row of -inf, every kind, against
 * the reference (NaN must match NaN): max and min propagate NaN, and
 * LogSumExp of a row whose maximum is infinite is that infinity, not NaN.
 */
static void test_reduce_special_values(void)
{
	static const float rows[5][4] = {
		{ 1, NAN, 3, -2 },     { -INFINITY, -INFINITY, -INFINITY, -INFINITY },
		{ INFINITY, 1, 2, 3 }, { -INFINITY, 0.5f, 0.25f, 2 },
		{ 3, 1, 4, 1 },
	};
	struct ctxs c = open_ctxs();
	struct ref_tensor x = { .type = { .dtype = IR_F32, .rank = 2, .dims = { 5, 4 } } };
	struct red_attrs a = { .axes = { 1 }, .naxes = 1 };
	float y1[5], y3[5];
	x.data = (void *)rows;
	for (int kind = RT_REDUCE_SUM; kind <= RT_REDUCE_LOG_SUM_EXP; kind++) {
		struct rt_reduce_desc d = { RT_F32, kind, 2, { 5, 4 }, 2 };
		CHECK_EQ(rt_reduce(c.one, &d, rows, y1), RT_OK);
		CHECK_EQ(rt_reduce(c.three, &d, rows, y3), RT_OK);
		same_bits(y1, y3, sizeof y1, "rt_reduce");
		match_ref(reduce_ops[kind], set_reduce, &a, &x, IR_F32, y1, 5, 1e-6, 1e-6,
		          "special values");
	}
	close_ctxs(c);
}

/* Unsupported descriptors are refused. */
static void test_reduce_errors(void)
{
	struct ctxs c = open_ctxs();
	float x[4] = { 0 }, y[2];
	struct rt_reduce_desc d = { RT_U16, RT_REDUCE_MAX, 2, { 2, 2 }, 2 };
	CHECK_EQ(rt_reduce(c.one, &d, x, y), RT_ERR_ARGUMENT);
	d.dtype = RT_U8;
	d.kind = RT_REDUCE_SUM;
	CHECK_EQ(rt_reduce(c.one, &d, x, y), RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	d.rank = 9;
	CHECK_EQ(rt_reduce(c.one, &d, x, y), RT_ERR_ARGUMENT);
	close_ctxs(c);
}

/* ------------------------------------------------------------------------ */
/* rt_arg, rt_cumsum: ops along one axis                                    */
/* ------------------------------------------------------------------------ */

struct axis_attrs {
	int64_t axis;
	int keep, last, exclusive, reverse;
};

static void set_arg(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct axis_attrs *a = ud;
	ir_set_i(m, n, "axis", a->axis);
	ir_set_i(m, n, "keepdims", a->keep);
	ir_set_i(m, n, "select_last_index", a->last);
}

static void set_cumsum(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct axis_attrs *a = ud;
	ir_set_i(m, n, "axis", a->axis);
	ir_set_i(m, n, "exclusive", a->exclusive);
	ir_set_i(m, n, "reverse", a->reverse);
}

/* [outer, axis, inner] of a shape around an axis. */
static void split3(int rank, const int64_t *dims, int axis, int64_t *o, int64_t *a, int64_t *in)
{
	*o = count(axis, dims);
	*a = dims[axis];
	*in = count(rank - axis - 1, dims + axis + 1);
}

/* Sprinkles NaNs over a float tensor, the first element included. */
static void add_nans(struct ref_tensor *x, int64_t n)
{
	for (int64_t i = 0; i < n; i += 7)
		ir_store_f64(x->type.dtype, x->data, (size_t)i, NAN);
}

static void check_arg(struct ctxs c, enum ir_dtype t, int rank, const int64_t *dims, int axis,
                      int is_min, int last, bool nans, uint64_t *seed)
{
	struct rt_arg_desc d = { rt_code(t), is_min, last, 0, 0, 0 };
	struct axis_attrs a = { axis, (axis + last) & 1, last, 0, 0 };
	int64_t n = count(rank, dims), nout;
	struct ref_tensor x = tensor(t, rank, dims, -4, 4, true, seed);
	int64_t *y1, *y3;
	char what[80];
	if (t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64)
		rand_fill(t, x.data, n, 0, 9, seed);
	if (nans)
		add_nans(&x, n);
	split3(rank, dims, axis, &d.outer, &d.axis, &d.inner);
	nout = d.outer * d.inner;
	y1 = calloc((size_t)nout + 1, 8);
	y3 = calloc((size_t)nout + 1, 8);
	CHECK_EQ(rt_arg(c.one, &d, x.data, y1), RT_OK);
	CHECK_EQ(rt_arg(c.three, &d, x.data, y3), RT_OK);
	same_bits(y1, y3, (size_t)nout * 8, "rt_arg");
	snprintf(what, sizeof what, "arg %s min %d last %d axis %d nan %d", ir_dtype_name(t),
	         is_min, last, axis, nans);
	match_ref(is_min ? IR_OP_ARGMIN : IR_OP_ARGMAX, set_arg, &a, &x, IR_I64, y1, nout, 0, 0,
	          what);
	free(x.data);
	free(y1);
	free(y3);
}

static void test_arg(void)
{
	static const enum ir_dtype types[] = { IR_F32, IR_F64, IR_I8,  IR_U8,  IR_I16,
		                               IR_U16, IR_I32, IR_U32, IR_I64, IR_U64 };
	static const int64_t a[] = { 7, 33 }, b[] = { 3, 5, 200 }, one[] = { 2, 1, 3 };
	static const int64_t big[] = { 2, 5001 }, zero[] = { 0, 5 }, empty[] = { 3, 0, 2 };
	struct ctxs c = open_ctxs();
	uint64_t seed = 11;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		enum ir_dtype t = types[i];
		for (int f = 0; f < 4; f++) {
			int is_min = f & 1, last = f >> 1;
			check_arg(c, t, 2, a, 1, is_min, last, false, &seed);
			check_arg(c, t, 2, a, 0, is_min, last, false, &seed);
			check_arg(c, t, 3, b, 1, is_min, last, false, &seed);
			check_arg(c, t, 3, b, 2, is_min, last, false, &seed);
			check_arg(c, t, 3, one, 1, is_min, last, false, &seed);
			check_arg(c, t, 2, big, 1, is_min, last, false, &seed);
			check_arg(c, t, 2, zero, 1, is_min, last, false, &seed);
			check_arg(c, t, 3, empty, 1, is_min, last, false, &seed);
			if (isfloat(t)) {
				check_arg(c, t, 2, a, 1, is_min, last, true, &seed);
				check_arg(c, t, 3, b, 1, is_min, last, true, &seed);
			}
		}
	}
	close_ctxs(c);
}

/* ------------------------------------------------------------------------ */
/* rt_topk                                                                  */
/* ------------------------------------------------------------------------ */

struct topk_attrs {
	int64_t axis, k, largest;
};

static void set_topk(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct topk_attrs *a = ud;
	ir_set_i(m, n, "axis", a->axis);
	ir_set_i(m, n, "k", a->k);
	ir_set_i(m, n, "largest", a->largest);
}

/* TopK's values must be the reference's bit for bit (it selects), its
 * indices exactly: ties (whole values) go to the lower index, NaNs rank
 * above every number. */
static void check_topk(struct ctxs c, enum ir_dtype t, int rank, const int64_t *dims, int axis,
                       int64_t k, int largest, bool nans, uint64_t *seed)
{
	struct rt_topk_desc d = { rt_code(t), !largest, 0, 0, 0, k };
	struct topk_attrs a = { axis, k, largest };
	int64_t n = count(rank, dims), nout;
	struct ref_tensor x = tensor(t, rank, dims, -4, 4, true, seed), out[2];
	size_t es = (size_t)ir_dtype_size(t);
	void *v1, *v3;
	int64_t *i1, *i3;
	char what[96];
	if (t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64)
		rand_fill(t, x.data, n, 0, 9, seed);
	if (nans)
		add_nans(&x, n);
	split3(rank, dims, axis, &d.outer, &d.axis, &d.inner);
	nout = d.outer * k * d.inner;
	v1 = calloc((size_t)nout + 1, es);
	v3 = calloc((size_t)nout + 1, es);
	i1 = calloc((size_t)nout + 1, 8);
	i3 = calloc((size_t)nout + 1, 8);
	CHECK_EQ(rt_topk(c.one, &d, x.data, v1, i1), RT_OK);
	CHECK_EQ(rt_topk(c.three, &d, x.data, v3, i3), RT_OK);
	same_bits(v1, v3, (size_t)nout * es, "rt_topk values");
	same_bits(i1, i3, (size_t)nout * 8, "rt_topk indices");
	snprintf(what, sizeof what, "topk %s axis %d k %lld largest %d nan %d", ir_dtype_name(t),
	         axis, (long long)k, largest, nans);
	if (!ref_eval(IR_OP_TOPK, set_topk, &a, &x, 1, out, 2)) {
		CHECK(!"reference evaluation");
	} else {
		CHECK_EQ(ir_type_elems(&out[0].type), nout);
		if (memcmp(v1, out[0].data, (size_t)nout * es) ||
		    memcmp(i1, out[1].data, (size_t)nout * 8)) {
			fprintf(stderr, "%s: differs from the reference\n", what);
			CHECK(!"topk matches the reference");
		}
		free(out[0].data);
		free(out[1].data);
	}
	free(x.data);
	free(v1);
	free(v3);
	free(i1);
	free(i3);
}

static void test_topk(void)
{
	static const enum ir_dtype types[] = { IR_F32, IR_F64, IR_I8,  IR_U8,  IR_I16,
		                               IR_U16, IR_I32, IR_U32, IR_I64, IR_U64 };
	static const int64_t a[] = { 7, 33 }, b[] = { 3, 5, 20 }, big[] = { 2, 3001 };
	static const int64_t zero[] = { 0, 5 }, one[] = { 4, 1 };
	struct ctxs c = open_ctxs();
	struct rt_topk_desc bad = { RT_F32, 0, 1, 3, 1, 4 };
	float x[3] = { 0 }, y[4];
	int64_t yi[4];
	uint64_t seed = 17;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		enum ir_dtype t = types[i];
		for (int largest = 0; largest < 2; largest++) {
			check_topk(c, t, 2, a, 1, 5, largest, false, &seed);
			check_topk(c, t, 2, a, 1, 33, largest, false, &seed);
			check_topk(c, t, 2, a, 0, 1, largest, false, &seed);
			check_topk(c, t, 2, a, 0, 6, largest, false, &seed);
			check_topk(c, t, 3, b, 1, 3, largest, false, &seed);
			check_topk(c, t, 3, b, 2, 20, largest, false, &seed);
			check_topk(c, t, 3, b, 2, 0, largest, false, &seed);
			check_topk(c, t, 2, big, 1, 100, largest, false, &seed);
			check_topk(c, t, 2, zero, 1, 2, largest, false, &seed);
			check_topk(c, t, 2, one, 1, 1, largest, false, &seed);
			if (isfloat(t)) {
				check_topk(c, t, 2, a, 1, 9, largest, true, &seed);
				check_topk(c, t, 3, b, 1, 5, largest, true, &seed);
			}
		}
	}
	/* k beyond the axis, and an element type it does not take */
	CHECK_EQ(rt_topk(c.one, &bad, x, y, yi), RT_ERR_ARGUMENT);
	bad.k = 2;
	bad.dtype = RT_F16;
	CHECK_EQ(rt_topk(c.one, &bad, x, y, yi), RT_ERR_ARGUMENT);
	close_ctxs(c);
}

/* CumSum, or CumProd when prod (on factors near 1, or small integers that
 * wrap alike everywhere). */
static void check_cumsum(struct ctxs c, enum ir_dtype t, int rank, const int64_t *dims, int axis,
                         int excl, int rev, bool in_place, int prod, uint64_t *seed)
{
	struct rt_cumsum_desc d = { rt_code(t), excl, rev, 0, 0, 0, 0, prod };
	struct axis_attrs a = { axis, 0, 0, excl, rev };
	int64_t n = count(rank, dims);
	size_t bytes = (size_t)n * (size_t)ir_dtype_size(t);
	double lo = !prod ? -50 : isfloat(t) ? 0.5 : -3, hi = !prod ? 50 : isfloat(t) ? 1.5 : 4;
	struct ref_tensor x = tensor(t, rank, dims, lo, hi, false, seed);
	void *y1 = malloc(bytes + 1), *y3 = malloc(bytes + 1);
	char what[80];
	split3(rank, dims, axis, &d.outer, &d.axis, &d.inner);
	CHECK_EQ(rt_cumsum(c.one, &d, x.data, y1), RT_OK);
	if (in_place) {
		memcpy(y3, x.data, bytes);
		CHECK_EQ(rt_cumsum(c.three, &d, y3, y3), RT_OK);
	} else {
		CHECK_EQ(rt_cumsum(c.three, &d, x.data, y3), RT_OK);
	}
	same_bits(y1, y3, bytes, "rt_cumsum");
	snprintf(what, sizeof what, "%s %s axis %d excl %d rev %d", prod ? "cumprod" : "cumsum",
	         ir_dtype_name(t), axis, excl, rev);
	match_ref(prod ? IR_OP_CUMPROD : IR_OP_CUMSUM, set_cumsum, &a, &x, t, y1, n,
	          isfloat(t) ? 1e-6 : 0, isfloat(t) ? 1e-6 : 0, what);
	free(x.data);
	free(y1);
	free(y3);
}

static void test_cumsum(void)
{
	static const enum ir_dtype types[] = { IR_F32, IR_F64, IR_I32, IR_I64 };
	static const int64_t a[] = { 5, 37 }, b[] = { 2, 9, 150 }, big[] = { 3, 20000 };
	static const int64_t zero[] = { 4, 0, 3 };
	struct ctxs c = open_ctxs();
	uint64_t seed = 5;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		for (int f = 0; f < 8; f++) {
			int excl = f & 1, rev = (f >> 1) & 1, p = f >> 2;
			check_cumsum(c, types[i], 2, a, 1, excl, rev, false, p, &seed);
			check_cumsum(c, types[i], 2, a, 0, excl, rev, f == 3, p, &seed);
			check_cumsum(c, types[i], 3, b, 1, excl, rev, f == 5, p, &seed);
			check_cumsum(c, types[i], 3, b, 2, excl, rev, false, p, &seed);
			check_cumsum(c, types[i], 2, big, 1, excl, rev, false, p, &seed);
			check_cumsum(c, types[i], 3, zero, 1, excl, rev, false, p, &seed);
			check_cumsum(c, types[i], 3, zero, 2, excl, rev, false, p, &seed);
		}
	close_ctxs(c);
}

TESTS(T(test_reduce_small) T(test_reduce_large) T(test_reduce_empty) T(test_reduce_special_values)
              T(test_reduce_errors) T(test_arg) T(test_topk) T(test_cumsum))
