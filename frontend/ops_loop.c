/*
 * ops_loop.c - Loop and Scan.
 *
 * A loop whose number of iterations is known at import becomes its
 * iterations: the body (a sub-graph) is imported in place once per
 * iteration by fe_import_graph, its inputs bound to that iteration's
 * values, reading outer values directly, its nodes named
 * "LOOP/iterN/NODE". Each iteration's ONNX names are its own (ir_map_mark /
 * ir_map_pop around the import), so the body's names can be bound again by
 * the next one. The iterations are then optimized, planned and run like any
 * other graph (and fuse across iteration boundaries). That needs:
 *  - Loop: the trip count and the condition fold to constants (a graph
 *    input can be bound with --const), and so does the condition each
 *    iteration computes when the Loop has one;
 *  - Scan: the scan axis has a static length;
 * and at most FE_UNROLL_MAX body nodes (iterations x body nodes).
 *
 * Any other loop is a run-time loop (runtime_loop; docs/ir.md, Loops): its
 * body imported once, run by the generated code while its condition holds.
 * Its scan outputs need every iteration to run (a Scan; a Loop with a
 * constant trip count whose conditions stay true), else their shape is
 * not static and they are refused.
 *
 * Loop's scan outputs are the iterations' values stacked on a new first
 * axis; Scan's are stacked on scan_output_axes in the order
 * scan_output_directions says. Scan-8 (a batch axis first, one scan per
 * batch element) runs the same per batch element, unrolled only.
 */
#include "fe.h"

#include <stdio.h>
#include <string.h>

#define FE_UNROLL_MAX 100000

/* Can iterations x g's nodes be unrolled? */
static bool fits(const Onnx__GraphProto *g, int64_t iterations)
{
	int64_t per = g->n_node > 0 ? (int64_t)g->n_node : 1;
	return iterations <= FE_UNROLL_MAX / per;
}

/* Refuses a Scan-8 that would import more than FE_UNROLL_MAX body nodes
 * (its scan per batch element runs unrolled only). */
static bool within_budget(struct fe_node *nd, const Onnx__GraphProto *g, int64_t iterations)
{
	int64_t per = g->n_node > 0 ? (int64_t)g->n_node : 1;
	if (!fits(g, iterations))
		return fe_fail(nd,
		               "runs %lld iterations of a %lld-node body (a scan per batch "
		               "element); onnxc imports at most %d body nodes for a Scan-8, "
		               "which it unrolls (Scan-9 and later run longer scans as a loop)",
		               (long long)iterations, (long long)per, FE_UNROLL_MAX);
	return true;
}

/* Does the model read one of the Loop's k scan outputs (after its n
 * carried values)? */
static bool scans_used(struct fe_node *nd, int n, int k)
{
	for (int j = 0; j < k && n + j < nd->nout; j++)
		if (nd->proto->output[n + j][0])
			return true;
	return false;
}

/* One more iteration: g imported with in[0..nin) bound to its inputs, its
 * outputs in out; the names it binds are this iteration's only. */
static bool iterate(struct fe_node *nd, const Onnx__GraphProto *g, int64_t i,
                    struct ir_value *const *in, int nin, struct ir_value **out, int nout)
{
	struct ir_map *names = &nd->fe->values;
	int mark = ir_map_mark(names);
	const char *tag = ir_arena_printf(&nd->fe->m->arena, "iter%lld", (long long)i);
	bool ok = fe_import_graph(nd, g, tag, in, nin, out, nout);
	ir_map_pop(names, mark);
	return ok;
}

/* xs[0..n) (one shape) stacked along a new axis, in reverse when asked,
 * named after output k. */
static struct ir_value *stack(struct fe_node *nd, struct ir_value **xs, int64_t n, int axis,
                              bool reverse, int k)
{
	struct ir_arena *a = &nd->fe->m->arena;
	struct ir_value **parts = ir_arena_alloc(a, sizeof *parts * (size_t)n);
	const struct ir_type *t = &xs[0]->type;
	int64_t dims[IR_MAX_RANK];
	if (t->rank + 1 > IR_MAX_RANK || axis < 0 || axis > t->rank)
		return fe_fail(nd, "a scan output of rank %d cannot be stacked on axis %d", t->rank,
		               axis),
		       NULL;
	for (int d = 0, s = 0; d <= t->rank; d++)
		dims[d] = d == axis ? 1 : t->dims[s++];
	for (int64_t i = 0; i < n; i++) {
		struct ir_value *x = xs[reverse ? n - 1 - i : i];
		if (!ir_type_eq(&x->type, t)) {
			char want[128], got[128];
			ir_type_str(t, want, sizeof want);
			ir_type_str(&x->type, got, sizeof got);
			return fe_fail(nd,
			               "the body's scan output is %s in one iteration and %s in "
			               "another; the iterations are stacked, so they must agree",
			               want, got),
			       NULL;
		}
		parts[i] = fe_reshape(nd, x, dims, t->rank + 1, n == 1 ? k : -1);
	}
	return n == 1 ? parts[0] : fe_concat(nd, parts, (int)n, axis, k);
}

/* The one value of constant input i as an integer (i64 or bool). */
static bool const_scalar(struct fe_node *nd, int i, const char *what, int64_t *v)
{
	struct ir_value *x = fe_in(nd, i);
	if (!fe_need_const_value(nd, i, what))
		return false;
	if (ir_type_elems(&x->type) != 1)
		return fe_fail(nd, "%s has %lld elements, not one", what,
		               (long long)ir_type_elems(&x->type));
	*v = (int64_t)ir_load_f64(x->type.dtype, x->data, 0);
	return true;
}

/* x (one element) as a scalar. */
static struct ir_value *scalar_of(struct fe_node *nd, struct ir_value *x)
{
	return x && x->type.rank ? fe_reshape(nd, x, (const int64_t[]){ 0 }, 0, -1) : x;
}

static bool is_true(const struct ir_value *v)
{
	return v->kind == IR_VAL_CONST && v->data && ir_load_f64(IR_BOOL, v->data, 0);
}

/* a and b, where either may be the constant true (then the other). */
static struct ir_value *and_of(struct fe_node *nd, struct ir_value *a, struct ir_value *b)
{
	if (!a || !b)
		return NULL;
	if (is_true(a) || is_true(b))
		return is_true(b) ? a : b;
	return fe_binary(nd, IR_OP_AND, a, b, -1);
}

/* A Loop's or Scan's attributes and operands, once read: for a run-time
 * loop (runtime_loop), its scan inputs and outputs. */
struct scan {
	const Onnx__GraphProto *g;
	bool scan_body; /* Scan's body: (states, scan inputs) -> (states, scan outputs) */
	int n, m, k;    /* states, scan inputs, scan outputs */
	int64_t len;    /* iterations */
	struct ir_value *const *xs; /* the scan inputs */
	int64_t in_axes[IR_MAX_RANK * 4], in_dirs[IR_MAX_RANK * 4];
	int64_t out_axes[IR_MAX_RANK * 4], out_dirs[IR_MAX_RANK * 4];
};

/* Does the body's condition cn already stop the loop within the constant
 * trip count, counted from iteration first (ir_loop_bound: a loop onnxc
 * wrote, its trip count folded into its condition)? */
static bool bounded(const struct ir_value *cn, const struct ir_value *trip, int64_t first,
                    struct ir_value *const *carried, struct ir_value *const *next, int n)
{
	int64_t b = ir_loop_bound(cn, carried, next, n);
	return b >= 0 && trip->kind == IR_VAL_CONST && trip->data &&
	       b <= ir_load_i64(trip->type.dtype, trip->data, 0) - first;
}

/*
 * Scan output j of a run-time loop that runs all sc->len iterations
 * (runtime_loop): the body's value x, stacked on sc->out_axes[j], as a
 * carried value *acc (zeros before the loop, whose token is tok) and its
 * next value *next, x scattered at the iteration number i (rev: len - 1 -
 * i, for a reversed scan output). The carried value is named name.
 */
static bool scan_output(struct fe_node *nd, const struct scan *sc, int j, struct ir_value *x,
                        struct ir_value *tok, struct ir_value *i, struct ir_value *rev,
                        const char *name, struct ir_value **acc, struct ir_value **next)
{
	struct fe *fe = nd->fe;
	const struct ir_type *t = &x->type;
	int64_t dims[IR_MAX_RANK], one[IR_MAX_RANK], udims[IR_MAX_RANK], ax;
	struct ir_value *z, *idx;
	struct ir_node *c;
	if (t->rank + 1 > IR_MAX_RANK)
		return fe_fail(nd, "a scan output of rank %d cannot be stacked", t->rank);
	if ((ax = fe_axis(nd, sc->out_axes[j], t->rank + 1, "scan_output_axes")) < 0)
		return false;
	for (int d = 0, s = 0; d <= t->rank; d++) {
		one[d] = 1;
		udims[d] = d == ax ? 1 : t->dims[s];
		dims[d] = d == ax ? sc->len : t->dims[s++];
	}
	/* the zeros are computed before the loop: not under its token */
	fe->guard = tok->def->guard;
	z = fe_zeros(nd, t->dtype, dims, t->rank + 1);
	fe->guard = tok;
	if (!z)
		return false;
	if (z->kind == IR_VAL_NODE)
		ir_move_before(fe->m, z->def, tok->def);
	c = fe_emit(nd, IR_OP_CARRY, &z, 1, &name, 1);
	if (!fe_finish(nd, c))
		return false;
	*acc = c->out[0];
	ir_move_before(fe->m, c, i->def);
	idx = fe_expand(nd, fe_reshape(nd, sc->out_dirs[j] ? rev : i, one, t->rank + 1, -1), udims,
	                t->rank + 1, -1);
	*next = fe_scatter(nd, *acc, idx, fe_reshape(nd, x, udims, t->rank + 1, -1), ax, "none",
	                   -1);
	return *next != NULL;
}

/*
 * The Loop from iteration `first` on as a loop run at run time (docs/ir.md,
 * Loops), its body imported once under the loop's token: go (NULL: true)
 * says whether iteration `first` runs, trip is the trip count (NULL: none),
 * v[0..n) the carried values entering it and has_cond whether the Loop takes
 * a condition (else the body's is ignored). The iteration number is one more
 * carried value, counted by the body; with a trip count, the condition each
 * iteration computes is and-ed with iteration + 1 < trip. The carried values
 * must keep their types (a buffer each).
 *
 * sc (NULL: none) is given for a loop that runs all of its sc->len
 * iterations (a Scan; a Loop with a constant trip count and a condition
 * that stays constant true), which may then have scan inputs and outputs:
 *  - scan input j (a Scan's): iteration i reads its slice i along its axis
 *    (len - 1 - i reversed), a gather at the iteration number;
 *  - scan output j: one more carried value, of the stacked shape, zeros
 *    before the first iteration, into which iteration i scatters its value
 *    at position i along its axis (len - 1 - i reversed). Code generation
 *    writes that slice in place (lower_scatter_elements), so an iteration
 *    costs its slice, not the whole.
 * Without sc, scan outputs (stacked from a number of iterations known only
 * at run time) have no static shape, and are refused.
 */
static bool runtime_loop(struct fe_node *nd, const Onnx__GraphProto *g, int64_t first,
                         struct ir_value *go, struct ir_value *trip, struct ir_value *const *v,
                         int n, int k, bool has_cond, const struct scan *sc)
{
	struct fe *fe = nd->fe;
	struct ir_arena *a = &fe->m->arena;
	int m = sc ? sc->m : 0, ns = 0, nc, c;
	struct ir_value *outer = fe->guard, *tok, *one, *next, *cn, *rev = NULL;
	/* the body's inputs: the iteration number, the condition, the carried
	 * values, the scan inputs' slices */
	struct ir_value **in = ir_arena_alloc(a, sizeof *in * (size_t)(n + m + 2));
	struct ir_value **out = ir_arena_alloc(a, sizeof *out * (size_t)(n + k + 1));
	/* scan output accj[s]'s carried value and its next value */
	struct ir_value **acc = ir_arena_alloc(a, sizeof *acc * (size_t)(2 * k + 1));
	struct ir_value **accn = acc + k;
	int *accj = ir_arena_alloc(a, sizeof *accj * (size_t)(k + 1));
	const char **accname = ir_arena_alloc(a, sizeof *accname * (size_t)(k + 1));
	struct ir_value **ends = ir_arena_alloc(a, sizeof *ends * (size_t)(2 * (n + k) + 4));
	const char **names = ir_arena_alloc(a, sizeof *names * (size_t)(n + k + 1));
	struct ir_node *end;
	int mark;
	bool ok;
	if (!sc && scans_used(nd, n, k))
		return fe_fail(nd, "its iterations are known only at run time, so its scan outputs "
		                   "(the iterations' values stacked) have no static shape; onnxc "
		                   "compiles static shapes");
	if (!(go = go ? scalar_of(nd, go) : fe_scalar(nd, IR_BOOL, 1)))
		return false;
	if (go->type.dtype != IR_BOOL)
		return fe_fail(nd, "the condition is %s, not bool", ir_dtype_name(go->type.dtype));
	if (trip) {
		if (!(trip = scalar_of(nd, trip)))
			return false;
		if (trip->type.dtype != IR_I64)
			return fe_fail(nd, "the trip count is %s, not int64",
			               ir_dtype_name(trip->type.dtype));
		go = and_of(
		        nd, go,
		        fe_binary(nd, IR_OP_LESS, fe_scalar(nd, IR_I64, (double)first), trip, -1));
	}
	if (!go || !(tok = fe_simple(nd, IR_OP_LOOP, &go, 1, -1)))
		return false;
	fe->guard = tok;
	/* the Loop's carried values first, the iteration number last: written
	 * back (export) and read again, the loop's values get the same names */
	for (int j = 0; j < n; j++)
		in[2 + j] = fe_simple(nd, IR_OP_CARRY, (struct ir_value *const *)&v[j], 1, -1);
	/* the scan outputs' carried values come next, made after the body's
	 * import (their types are its): their names are drawn here */
	for (int j = 0; j < k; j++)
		if (sc && n + j < nd->nout && nd->proto->output[n + j][0])
			accname[j] = fe_tmp_name(nd, "carry");
	in[0] = fe_simple(nd, IR_OP_CARRY,
	                  (struct ir_value *[]){ fe_scalar(nd, IR_I64, (double)first) }, 1, -1);
	in[1] = fe_scalar(nd, IR_BOOL, 1);
	if (sc && in[0])
		rev = fe_binary(nd, IR_OP_SUB, fe_scalar(nd, IR_I64, (double)(sc->len - 1)), in[0],
		                -1);
	for (int j = 0; j < m; j++)
		in[2 + n + j] =
		        fe_gather(nd, sc->xs[j], sc->in_dirs[j] ? rev : in[0], sc->in_axes[j], -1);
	for (int j = 0; j < n + m + 2; j++)
		if (!in[j])
			return fe->guard = outer, false;
	mark = ir_map_mark(&fe->values);
	if (sc && sc->scan_body) { /* (states, slices) -> (states, scan outputs) */
		out[0] = NULL;
		ok = fe_import_graph(nd, g, "body", in + 2, n + m, out + 1, n + k);
	} else {
		ok = fe_import_graph(nd, g, "body", in, n + 2, out, n + k + 1);
	}
	ir_map_pop(&fe->values, mark);
	one = fe_scalar(nd, IR_I64, 1);
	next = ok ? fe_binary(nd, IR_OP_ADD, in[0], one, -1) : NULL;
	cn = ok && has_cond ? scalar_of(nd, out[0]) : fe_scalar(nd, IR_BOOL, 1);
	if (sc && cn && !is_true(cn))
		return fe->guard = outer,
		       fe_fail(nd,
		               "the condition its body computes is not constant true, so how many "
		               "of its %lld iterations run is known only at run time, and its "
		               "scan outputs (the iterations' values stacked) would have no "
		               "static shape; onnxc compiles static shapes",
		               (long long)sc->len);
	if (next && cn && trip && !bounded(cn, trip, first, in + 2, out + 1, n))
		cn = and_of(nd, cn, fe_binary(nd, IR_OP_LESS, next, trip, -1));
	for (int j = 0; ok && j < k; j++)
		if (accname[j]) { /* a scan output the model reads */
			if (!scan_output(nd, sc, j, out[1 + n + j], tok, in[0], rev, accname[j],
			                 &acc[ns], &accn[ns]))
				return fe->guard = outer, false;
			accj[ns++] = j;
		}
	fe->guard = outer;
	if (!next || !cn)
		return false;
	if (rev && !rev->nuses)
		ir_remove_node(fe->m, rev->def);
	if (cn->type.dtype != IR_BOOL || ir_type_elems(&cn->type) != 1)
		return fe_fail(nd,
		               "the condition its body computes is %s, not a bool of one element",
		               ir_dtype_name(cn->type.dtype));
	if (!trip && is_true(cn))
		return fe_fail(nd, "has no trip count and its body's condition is always true: it "
		                   "never ends");
	for (int j = 0; j < n; j++)
		if (!ir_type_eq(&out[1 + j]->type, &v[j]->type)) {
			char want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
			return fe_fail(
			        nd,
			        "loop-carried value %d enters an iteration as %s and leaves "
			        "it as %s; a loop whose iterations are known only at run time "
			        "keeps each carried value in one buffer, so its type must "
			        "not change",
			        j, ir_type_str(&v[j]->type, want, sizeof want),
			        ir_type_str(&out[1 + j]->type, got, sizeof got));
		}
	/* the iteration number is carried only where something reads it: the
	 * trip count, the body or the scans (not only its own increment), or
	 * where it is the only carried value (a loop whose results nothing
	 * reads: DCE removes it whole) */
	c = in[0]->nuses > 1 || next->nuses || !(n + ns) ? 1 : 0;
	if (!c) {
		ir_remove_node(fe->m, next->def);
		ir_remove_node(fe->m, in[0]->def);
	}
	nc = n + ns + c;
	ends[0] = tok;
	ends[1] = cn;
	for (int j = 0; j < n; j++) {
		ends[2 + j] = in[2 + j];
		ends[2 + nc + j] = out[1 + j];
		names[j] = j < nd->nout ? fe_out_name(nd, j) : fe_tmp_name(nd, "carried");
	}
	for (int s = 0; s < ns; s++) {
		ends[2 + n + s] = acc[s];
		ends[2 + nc + n + s] = accn[s];
		names[n + s] = fe_out_name(nd, n + accj[s]);
	}
	if (c) {
		ends[2 + n + ns] = in[0];
		ends[2 + nc + n + ns] = next;
		names[n + ns] = fe_tmp_name(nd, "iterations");
	}
	end = fe_emit(nd, IR_OP_LOOP_END, ends, 2 * nc + 2, names, nc);
	if (!fe_finish(nd, end))
		return false;
	for (int j = 0; j < n && j < nd->nout; j++)
		fe_bind(nd, j, end->out[j]);
	for (int s = 0; s < ns; s++)
		fe_bind(nd, n + accj[s], end->out[n + s]);
	return true;
}

/*
 * Loop (M, cond, v_initial...) -> (v_final..., scan_outputs...), the body
 * (iteration_num, cond, v...) -> (cond, v..., scans...). As ONNX defines
 * it: without M the loop runs while cond holds; without cond, M times and
 * the body's condition is ignored; without either it never ends.
 */
static bool imp_loop(struct fe_node *nd)
{
	struct ir_arena *a = &nd->fe->m->arena;
	const Onnx__GraphProto *g;
	struct ir_value **in, **out, **scans;
	int64_t trip = INT64_MAX, go = 1, iters = 0, cap = 0;
	int n, k;
	if (!fe_inputs(nd, 0, -1))
		return false;
	if (nd->nin < 2)
		return fe_fail(nd,
		               "has %d inputs; Loop takes a trip count and a condition (either may "
		               "be empty) before its loop-carried values",
		               nd->nin);
	if (!(g = fe_attr_graph(nd, "body")))
		return fe_fail(nd, "attribute 'body' (a graph) is required");
	n = nd->nin - 2;
	k = (int)g->n_output - 1 - n;
	if (k < 0 || nd->nout > n + k)
		return fe_fail(nd,
		               "has %d loop-carried values and %d outputs, but its body has %zu "
		               "outputs (a condition, the loop-carried values, the scan outputs)",
		               n, nd->nout, g->n_output);
	if (!fe_in(nd, 0) && !fe_in(nd, 1))
		return fe_fail(nd, "has neither a trip count nor a condition: it never ends");
	if ((fe_in(nd, 0) && !fe_is_const(nd, 0)) || (fe_in(nd, 1) && !fe_is_const(nd, 1))) {
		if (scans_used(nd, n, k)) /* stacked: their number must be known */
			return (!fe_in(nd, 0) ||
			        fe_need_const_value(nd, 0,
			                            "the trip count, for the scan outputs")) &&
			       (!fe_in(nd, 1) ||
			        fe_need_const_value(nd, 1, "the condition, for the scan outputs"));
		return runtime_loop(nd, g, 0, fe_in(nd, 1), fe_in(nd, 0), nd->in + 2, n, k,
		                    fe_in(nd, 1) != NULL, NULL);
	}
	if (fe_in(nd, 0) && !const_scalar(nd, 0, "the trip count", &trip))
		return false;
	if (fe_in(nd, 1) && !const_scalar(nd, 1, "the condition", &go))
		return false;
	if (fe_in(nd, 0) && go && !fits(g, trip)) {
		/* every iteration runs when the body's condition folds to true */
		struct scan sc = { .g = g, .n = n, .k = k, .len = trip };
		return runtime_loop(nd, g, 0, fe_in(nd, 1), fe_in(nd, 0), nd->in + 2, n, k,
		                    fe_in(nd, 1) != NULL, scans_used(nd, n, k) ? &sc : NULL);
	}
	in = ir_arena_alloc(a, sizeof *in * (size_t)(n + 2));
	out = ir_arena_alloc(a, sizeof *out * (size_t)(n + k + 1));
	scans = NULL;
	for (int j = 0; j < n; j++)
		in[2 + j] = nd->in[2 + j];
	for (; go && iters < trip; iters++) {
		if (!fe_in(nd, 0) && !fits(g, iters + 1))
			return scans_used(nd, n, k)
			               ? fe_fail(nd,
			                         "has no trip count, and its condition still held "
			                         "after %lld iterations (%d body nodes unrolled); "
			                         "its scan outputs (the iterations' values "
			                         "stacked) need the number of iterations: give "
			                         "it a trip count",
			                         (long long)iters, FE_UNROLL_MAX)
			               : runtime_loop(nd, g, iters, NULL, NULL, in + 2, n, k, true,
			                              NULL);
		in[0] = fe_scalar(nd, IR_I64, (double)iters);
		in[1] = fe_scalar(nd, IR_BOOL, 1);
		if (!in[0] || !in[1] || !iterate(nd, g, iters, in, n + 2, out, n + k + 1))
			return false;
		for (int j = 0; j < n; j++) {
			if (out[1 + j]->type.dtype != nd->in[2 + j]->type.dtype)
				return fe_fail(
				        nd,
				        "loop-carried value %d starts as %s and the body makes it "
				        "%s",
				        j, ir_dtype_name(nd->in[2 + j]->type.dtype),
				        ir_dtype_name(out[1 + j]->type.dtype));
			in[2 + j] = out[1 + j];
		}
		if (fe_in(nd, 1)) { /* without a condition input, the body's is ignored */
			struct ir_value *c = out[0];
			if (ir_type_elems(&c->type) != 1)
				return fe_fail(nd,
				               "the condition its body computes has %lld elements, "
				               "not one",
				               (long long)ir_type_elems(&c->type));
			/* known only at run time: the rest runs as a loop */
			if (c->kind != IR_VAL_CONST || !c->data)
				return runtime_loop(nd, g, iters + 1, c, fe_in(nd, 0), in + 2, n, k,
				                    true, NULL);
			go = ir_load_f64(c->type.dtype, c->data, 0) != 0;
		}
		if (k && iters == cap) { /* room for the iterations' scan outputs */
			struct ir_value **more;
			cap = cap ? 2 * cap : (trip < 64 ? trip : 64);
			more = ir_arena_alloc(a, sizeof *more * (size_t)(cap * k));
			for (int j = 0; j < k; j++)
				if (iters)
					memcpy(more + j * cap, scans + j * (cap / 2),
					       sizeof *more * (size_t)iters);
			scans = more;
		}
		for (int j = 0; j < k; j++)
			scans[j * cap + iters] = out[1 + n + j];
	}
	for (int j = 0; j < n && j < nd->nout; j++)
		fe_bind(nd, j, in[2 + j]);
	for (int j = 0; j < k && n + j < nd->nout; j++) {
		struct ir_value *v;
		if (!nd->proto->output[n + j][0])
			continue;
		if (!iters)
			return fe_fail(nd,
			               "runs no iteration, so its scan output %d is empty; "
			               "onnxc does not compile empty scan outputs",
			               j);
		if (!(v = stack(nd, scans + j * cap, iters, 0, false, n + j)))
			return false;
		fe_bind(nd, n + j, v);
	}
	return true;
}

/* Input x without axis, its position i along it (a slice, then a reshape). */
static struct ir_value *take(struct fe_node *nd, struct ir_value *x, int axis, int64_t i)
{
	int64_t dims[IR_MAX_RANK];
	int r = 0;
	struct ir_value *s = fe_slice_axis(nd, x, axis, i, i + 1, 1, -1);
	if (!s)
		return NULL;
	for (int d = 0; d < x->type.rank; d++)
		if (d != axis)
			dims[r++] = x->type.dims[d];
	return fe_reshape(nd, s, dims, r, -1);
}

/*
 * One scan over states[0..n) and scan inputs xs[0..m) (sc's axes and
 * directions): the final states in states, output j's per-iteration
 * values in outs[j * len ...].
 */
static bool scan_once(struct fe_node *nd, const struct scan *sc, int64_t first,
                      struct ir_value **states, struct ir_value *const *xs, struct ir_value **outs)
{
	struct ir_arena *a = &nd->fe->m->arena;
	struct ir_value **in = ir_arena_alloc(a, sizeof *in * (size_t)(sc->n + sc->m));
	struct ir_value **out = ir_arena_alloc(a, sizeof *out * (size_t)(sc->n + sc->k));
	for (int64_t t = 0; t < sc->len; t++) {
		memcpy(in, states, sizeof *in * (size_t)sc->n);
		for (int j = 0; j < sc->m; j++)
			if (!(in[sc->n + j] = take(nd, xs[j], (int)sc->in_axes[j],
			                           sc->in_dirs[j] ? sc->len - 1 - t : t)))
				return false;
		if (!iterate(nd, sc->g, first + t, in, sc->n + sc->m, out, sc->n + sc->k))
			return false;
		for (int j = 0; j < sc->n; j++) {
			if (out[j]->type.dtype != states[j]->type.dtype)
				return fe_fail(nd, "state %d starts as %s and the body makes it %s",
				               j, ir_dtype_name(states[j]->type.dtype),
				               ir_dtype_name(out[j]->type.dtype));
			states[j] = out[j];
		}
		for (int j = 0; j < sc->k; j++)
			outs[j * sc->len + t] = out[sc->n + j];
	}
	return true;
}

/*
 * Scan-8: axis 0 of every state and scan input is a batch, scanned one
 * element at a time (the scan axis is 1), and every output gets the batch
 * axis back. sequence_lens, when given, must be the full length.
 */
static bool scan8(struct fe_node *nd, struct scan *sc, struct ir_value **states,
                  struct ir_value *const *xs)
{
	struct ir_arena *a = &nd->fe->m->arena;
	int64_t batch = sc->n ? states[0]->type.dims[0] : xs[0]->type.dims[0];
	int nio = sc->n + sc->m;
	struct ir_value **st = ir_arena_alloc(a, sizeof *st * (size_t)(sc->n + 1));
	struct ir_value **xb = ir_arena_alloc(a, sizeof *xb * (size_t)(sc->m + 1));
	struct ir_value **outs = ir_arena_alloc(a, sizeof *outs * (size_t)(sc->k * sc->len + 1));
	/* per output, per batch element: the final state or the stacked scan */
	struct ir_value **res =
	        ir_arena_alloc(a, sizeof *res * (size_t)((sc->n + sc->k) * batch + 1));
	if (fe_in(nd, 0)) {
		int64_t *lens;
		int c = fe_const_ints(nd, 0, "sequence_lens", &lens);
		if (c < 0)
			return false;
		for (int i = 0; i < c; i++)
			if (lens[i] != sc->len)
				return fe_fail(
				        nd,
				        "sequence_lens[%d] is %lld, not the %lld steps of the "
				        "scan; onnxc scans whole sequences only",
				        i, (long long)lens[i], (long long)sc->len);
	}
	for (int j = 0; j < nio; j++) {
		struct ir_value *v = j < sc->n ? states[j] : xs[j - sc->n];
		if (v->type.rank < 1 || v->type.dims[0] != batch)
			return fe_fail(nd,
			               "Scan-8's operands share a batch axis of %lld; input %d "
			               "does not have it",
			               (long long)batch, 1 + j);
	}
	if (batch < 1)
		return fe_fail(nd, "has an empty batch; onnxc does not compile empty outputs");
	if (!within_budget(nd, sc->g, sc->len * batch))
		return false;
	for (int64_t b = 0; b < batch; b++) {
		for (int j = 0; j < sc->n; j++)
			if (!(st[j] = take(nd, states[j], 0, b)))
				return false;
		for (int j = 0; j < sc->m; j++)
			if (!(xb[j] = take(nd, xs[j], 0, b)))
				return false;
		if (!scan_once(nd, sc, b * sc->len, st, xb, outs))
			return false;
		for (int j = 0; j < sc->n; j++)
			res[j * batch + b] = st[j];
		for (int j = 0; j < sc->k; j++) {
			if (!sc->len)
				return fe_fail(nd,
				               "scans no step, so its scan output %d is empty; "
				               "onnxc does not compile empty scan outputs",
				               j);
			if (!(res[(sc->n + j) * batch + b] =
			              stack(nd, outs + j * sc->len, sc->len, 0, false, -1)))
				return false;
		}
	}
	for (int j = 0; j < sc->n + sc->k && j < nd->nout; j++) {
		struct ir_value *v;
		if (!nd->proto->output[j][0])
			continue;
		if (!(v = stack(nd, res + j * batch, batch, 0, false, j)))
			return false;
		fe_bind(nd, j, v);
	}
	return true;
}

/*
 * Scan: states and scan inputs in, final states and scan outputs out.
 * Scan-8 has a batch axis first (and optional sequence_lens, accepted when
 * they are the full length); Scan-9 on scans any axis, either way.
 */
static bool imp_scan(struct fe_node *nd)
{
	struct ir_arena *a = &nd->fe->m->arena;
	struct scan sc = { 0 };
	int64_t m;
	int off = nd->version == 8 ? 1 : 0, batch_rank = nd->version == 8 ? 1 : 0;
	struct ir_value **states, **xs, **outs;
	if (!fe_inputs(nd, 0, -1))
		return false;
	if (!(sc.g = fe_attr_graph(nd, "body")))
		return fe_fail(nd, "attribute 'body' (a graph) is required");
	if (!fe_req_int(nd, "num_scan_inputs", &m))
		return false;
	if (m < 1 || m > nd->nin - off)
		return fe_fail(nd, "num_scan_inputs is %lld with %d inputs", (long long)m,
		               nd->nin - off);
	sc.m = (int)m;
	sc.n = nd->nin - off - sc.m;
	sc.k = (int)sc.g->n_output - sc.n;
	if (sc.k < 0 || nd->nout > sc.n + sc.k || sc.m + sc.n > IR_MAX_RANK * 4 ||
	    sc.k > IR_MAX_RANK * 4)
		return fe_fail(nd, "has %d states and %d outputs, but its body has %zu outputs",
		               sc.n, nd->nout, sc.g->n_output);
	for (int j = 0; j < sc.n + sc.m; j++)
		if (!fe_in(nd, off + j))
			return fe_fail(nd, "input %d is empty", off + j);
	if (nd->version == 8) {
		if (!fe_ints_len(nd, "directions", sc.m, 0, sc.in_dirs))
			return false;
	} else if (!fe_ints_len(nd, "scan_input_axes", sc.m, 0, sc.in_axes) ||
	           !fe_ints_len(nd, "scan_input_directions", sc.m, 0, sc.in_dirs) ||
	           !fe_ints_len(nd, "scan_output_axes", sc.k, 0, sc.out_axes) ||
	           !fe_ints_len(nd, "scan_output_directions", sc.k, 0, sc.out_dirs))
		return false;
	xs = nd->in + off + sc.n;
	for (int j = 0; j < sc.m; j++) {
		int rank = xs[j]->type.rank - batch_rank;
		int64_t ax = fe_axis(nd, sc.in_axes[j], rank, "scan_input_axes");
		int64_t len;
		if (ax < 0)
			return false;
		sc.in_axes[j] = ax;
		len = xs[j]->type.dims[ax + batch_rank];
		if (j && len != sc.len)
			return fe_fail(nd, "scan input %d has %lld steps and scan input 0 has %lld",
			               j, (long long)len, (long long)sc.len);
		sc.len = len;
	}
	states = ir_arena_alloc(a, sizeof *states * (size_t)(sc.n + 1));
	for (int j = 0; j < sc.n; j++)
		states[j] = nd->in[off + j];
	if (nd->version >= 9 && !fits(sc.g, sc.len)) { /* too long to unroll: a loop */
		sc.scan_body = true;
		sc.xs = xs;
		return runtime_loop(nd, sc.g, 0, NULL, fe_scalar(nd, IR_I64, (double)sc.len),
		                    states, sc.n, sc.k, false, &sc);
	}
	if (nd->version >= 9) {
		outs = ir_arena_alloc(a, sizeof *outs * (size_t)(sc.k * sc.len + 1));
		if (!scan_once(nd, &sc, 0, states, xs, outs))
			return false;
		for (int j = 0; j < sc.n && j < nd->nout; j++)
			fe_bind(nd, j, states[j]);
		for (int j = 0; j < sc.k && sc.n + j < nd->nout; j++) {
			struct ir_value *v;
			int64_t ax;
			if (!nd->proto->output[sc.n + j][0])
				continue;
			if (!sc.len)
				return fe_fail(nd,
				               "scans no step, so its scan output %d is empty; "
				               "onnxc does not compile empty scan outputs",
				               j);
			ax = fe_axis(nd, sc.out_axes[j], outs[j * sc.len]->type.rank + 1,
			             "scan_output_axes");
			if (ax < 0 || !(v = stack(nd, outs + j * sc.len, sc.len, (int)ax,
			                          sc.out_dirs[j] != 0, sc.n + j)))
				return false;
			fe_bind(nd, sc.n + j, v);
		}
		return true;
	}
	return scan8(nd, &sc, states, xs);
}

const struct fe_op fe_ops_loop[] = {
	{ "Loop", imp_loop, IR_OP_COUNT, { 1, 11, 13, 16, 19, 21, 23, 24, 25 } },
	{ "Scan", imp_scan, IR_OP_COUNT, { 8, 9, 11, 16, 19, 21, 23, 24, 25 } },
	{ NULL, NULL, 0, { 0 } },
};
