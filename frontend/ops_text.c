/*
 * ops_text.c - TfIdfVectorizer over integer tokens, as ONNX's reference
 * (onnx/reference/ops/op_tfidf_vectorizer.py) counts: every n-gram of the
 * pool, of a length from min_gram_length to max_gram_length, found in each
 * row of X with its tokens skip_distance apart (1 to max_skip_count + 1;
 * unigrams once), counted into its output column (ngram_indexes) and
 * weighted by mode: TF the count, TFIDF weight * count, IDF the weight
 * where counted (without weights, 1 where the column counted anything).
 *
 * The pool is a constant, so each (length n, skip s) is a comparison of the
 * n strided windows of X against the pool's n-grams of that length: a bool
 * [B, L, P] that every token agrees, summed over the L positions, and the
 * counts [B, P] mapped to the output columns by a MatMul with a matrix
 * holding each n-gram's weight (1 for TF) in its column. Counts are
 * f64 (exact, and out of mixed precision's reach). The comparisons take
 * B * L * P elements per (n, s), which is bounded below; a pool of many
 * thousand n-grams over long rows would want a kernel (a hash of the pool),
 * which nobody has needed yet. pool_strings is refused: onnxc has no string
 * tensors.
 */
#include "fe.h"

#include <string.h>

/* The largest comparison (B * L * P elements) of one length and skip. */
#define MAX_COMPARE ((int64_t)1 << 26)

/* One n-gram of the pool: its tokens, output column and weight. */
struct gram {
	const int64_t *tok;
	int n;
	int64_t col;
	double w;
};

/* X's windows for length n and skip s compared with the pool's grams of that
 * length (g[0..ng)): the count of each in each row, f64 [B, ng]; NULL when
 * the row is too short for one (*none set) or after reporting. */
static struct ir_value *gram_counts(struct fe_node *nd, struct ir_value *x, const struct gram *g,
                                    int ng, int n, int64_t s, bool *none)
{
	int64_t b = x->type.dims[0], c = x->type.dims[1], l = c - (n - 1) * s;
	struct ir_value *all = NULL;
	*none = l <= 0;
	if (l <= 0)
		return NULL;
	if (b * l * ng > MAX_COMPARE) {
		fe_fail(nd, "comparing %lld positions with %d %d-grams is more than onnxc lowers",
		        (long long)(b * l), ng, n);
		return NULL;
	}
	for (int j = 0; j < n; j++) {
		struct ir_type t = { .dtype = IR_I64, .rank = 3, .dims = { 1, 1, ng } };
		int64_t *v = ir_arena_alloc(&nd->fe->m->arena, sizeof *v * (size_t)ng);
		int64_t dims[3] = { b, l, 1 };
		struct ir_value *w, *eq;
		for (int k = 0; k < ng; k++)
			v[k] = g[k].tok[j];
		w = fe_reshape(nd, fe_slice_axis(nd, x, 1, j * s, j * s + l, 1, -1), dims, 3, -1);
		eq = fe_binary(nd, IR_OP_EQUAL, w, fe_const(nd, -1, &t, v), -1);
		all = all ? fe_binary(nd, IR_OP_AND, all, eq, -1) : eq;
	}
	return fe_reduce(nd, IR_OP_REDUCE_SUM, fe_cast(nd, all, IR_F64, -1), (int64_t[]){ 1 }, 1,
	                 false, -1);
}

static bool imp_tfidf(struct fe_node *nd)
{
	const int64_t *counts, *index, *pool;
	const float *weights;
	const char *mode = fe_str(nd, "mode", "");
	int64_t minl = fe_int(nd, "min_gram_length", 0), maxl = fe_int(nd, "max_gram_length", 0);
	int64_t skips = fe_int(nd, "max_skip_count", 0), out = 0, id = 0;
	int ncounts = fe_ints(nd, "ngram_counts", &counts),
	    nindex = fe_ints(nd, "ngram_indexes", &index);
	int npool = fe_ints(nd, "pool_int64s", &pool), nw = fe_floats(nd, "weights", &weights);
	struct gram *g;
	int ng = 0;
	struct ir_value *x, *f = NULL;
	bool tf = !strcmp(mode, "TF"), idf = !strcmp(mode, "IDF");
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	nw = nw < 0 ? 0 : nw; /* absent */
	if (ncounts < 0 || nindex < 0)
		return fe_fail(nd, "ngram_counts and ngram_indexes are required");
	if (fe_has(nd, "pool_strings"))
		return fe_fail(
		        nd, "pool_strings: it works on strings, and onnxc has no string tensors");
	if (npool < 0)
		return fe_fail(nd, "pool_int64s is required");
	if (!tf && !idf && strcmp(mode, "TFIDF"))
		return fe_fail(nd, "mode '%s' is not one of TF, IDF, TFIDF", mode);
	if (minl < 1 || maxl < minl || skips < 0)
		return fe_fail(nd,
		               "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld: "
		               "expected 1 <= min <= max and skips >= 0",
		               (long long)minl, (long long)maxl, (long long)skips);
	for (int i = 0; i < nindex; i++)
		if (index[i] < 0 || index[i] >= (int64_t)1 << 24)
			return fe_fail(nd, "ngram_indexes has %lld", (long long)index[i]);
		else if (index[i] + 1 > out)
			out = index[i] + 1;
	/* one weight per n-gram, as the spec and ONNX Runtime read them (ONNX's
	 * reference reads weights[column]: the same where ngram_indexes is
	 * 0, 1, 2, ...) */
	if (nw && nw != nindex)
		return fe_fail(nd, "weights has %d values for %d n-grams", nw, nindex);
	x = nd->in[0];
	if (!ir_dtypes[x->type.dtype].is_int || x->type.rank < 1 || x->type.rank > 2)
		return fe_fail(nd, "X must be integers of [C] or [B, C]");
	/* the pool's n-grams, numbered across every length as the reference
	 * does; a repeated one counts into the column of its last copy */
	g = ir_arena_alloc(&nd->fe->m->arena, sizeof *g * (size_t)(npool ? npool : 1));
	for (int i = 0; i < ncounts; i++) {
		int64_t start = counts[i], end = i + 1 < ncounts ? counts[i + 1] : npool, n = i + 1;
		if (start < 0 || end > npool || start > end)
			return fe_fail(nd, "ngram_counts does not fit the %d values of the pool",
			               npool);
		for (int64_t k = start; k + n <= end; k += n, id++) {
			int dup = -1;
			if (n < minl || n > maxl)
				continue;
			if (id >= nindex)
				return fe_fail(nd, "ngram_indexes has %d values for more n-grams",
				               nindex);
			for (int m = 0; m < ng && dup < 0; m++)
				if (g[m].n == n &&
				    !memcmp(g[m].tok, pool + k, sizeof *pool * (size_t)n))
					dup = m;
			if (dup < 0)
				dup = ng++;
			g[dup] = (struct gram){ pool + k, (int)n, index[id], nw ? weights[id] : 1 };
		}
	}
	if (x->type.rank == 1)
		x = fe_reshape(nd, x, (int64_t[]){ 1, x->type.dims[0] }, 2, -1);
	x = fe_cast(nd, x, IR_I64, -1);
	for (int n = (int)minl; n <= maxl && x; n++) {
		int first = 0, cnt = 0;
		struct ir_value *c = NULL;
		while (first < ng && g[first].n != n)
			first++;
		while (first + cnt < ng && g[first + cnt].n == n)
			cnt++;
		if (!cnt)
			continue;
		for (int64_t s = 1; s <= (n == 1 ? 1 : skips + 1); s++) {
			bool none;
			struct ir_value *k = gram_counts(nd, x, g + first, cnt, n, s, &none);
			if (none)
				break;
			if (!k)
				return false;
			c = c ? fe_binary(nd, IR_OP_ADD, c, k, -1) : k;
		}
		if (c) { /* the counts (IDF: whether counted) into the output columns */
			struct ir_type t = { .dtype = IR_F64, .rank = 2, .dims = { cnt, out } };
			double *m;
			if (!fe_check_const_size(nd, &t))
				return false;
			m = ir_arena_alloc(&nd->fe->m->arena, sizeof *m * (size_t)(cnt * out));
			memset(m, 0, sizeof *m * (size_t)(cnt * out));
			for (int k = 0; k < cnt; k++)
				m[k * out + g[first + k].col] = tf ? 1 : g[first + k].w;
			if (idf && nw)
				c = fe_cast(nd,
				            fe_binary(nd, IR_OP_GREATER, c,
				                      fe_scalar(nd, IR_F64, 0), -1),
				            IR_F64, -1);
			c = fe_binary(nd, IR_OP_MATMUL, c, fe_const(nd, -1, &t, m), -1);
			f = f ? fe_binary(nd, IR_OP_ADD, f, c, -1) : c;
		}
	}
	if (!x)
		return false;
	if (!f) { /* no n-gram fits: zeros */
		struct ir_type t = { .dtype = IR_F64, .rank = 2, .dims = { x->type.dims[0], out } };
		double *z;
		if (!fe_check_const_size(nd, &t))
			return false;
		z = ir_arena_alloc(&nd->fe->m->arena, sizeof *z * (size_t)(ir_type_elems(&t) + 1));
		memset(z, 0, sizeof *z * (size_t)(ir_type_elems(&t) + 1));
		f = fe_const(nd, -1, &t, z);
	}
	if (idf && !nw) /* without weights: whether the column counted anything */
		f = fe_cast(nd, fe_binary(nd, IR_OP_GREATER, f, fe_scalar(nd, IR_F64, 0), -1),
		            IR_F64, -1);
	if (nd->in[0]->type.rank == 1)
		f = fe_reshape(nd, f, &out, 1, -1);
	f = fe_cast(nd, f, IR_F32, 0);
	if (!f)
		return false;
	fe_bind(nd, 0, f);
	return true;
}

const struct fe_op fe_ops_text[] = {
	{ "TfIdfVectorizer", imp_tfidf, IR_OP_EQUAL, { 9 } },
	{ NULL, NULL, 0, { 0 } },
};
