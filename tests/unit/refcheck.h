/*
 * refcheck.h - runtime kernel tests against the reference interpreter.
 *
 * ref_eval() runs one IR op on constant inputs through ir/fold.c's
 * evaluators (double precision, written for clarity) and returns the
 * results; the runtime kernel under test must agree within a tolerance.
 * rand_fill() makes reproducible test data.
 */
#ifndef ONNXC_REFCHECK_H
#define ONNXC_REFCHECK_H

#include "testutil.h"

#include <math.h>

struct ref_tensor {
	struct ir_type type;
	void *data; /* malloc'd by ref_eval for outputs; caller's for inputs */
};

typedef void (*ref_attrs_fn)(struct ir_module *m, struct ir_node *n, void *ud);

/* Evaluates op over in[0..nin) with attributes set by set(); fills out[]
 * (types and malloc'd data). Returns false with a message on stderr. */
static inline bool ref_eval(enum ir_op op, ref_attrs_fn set, void *ud, const struct ref_tensor *in,
                            int nin, struct ref_tensor *out, int nout)
{
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_value *v[16];
	struct ir_node *n;
	char err[512];
	bool ok = false;
	ir_ctx_init(&ctx);
	m = ir_module_new(&ctx, "ref");
	for (int i = 0; i < nin; i++) {
		char name[16];
		snprintf(name, sizeof name, "in%d", i);
		v[i] = in[i].data ? ir_add_const(m, name, &in[i].type, in[i].data) : NULL;
	}
	n = ir_add_node(m, op, "ref", v, nin, NULL, nout);
	if (set)
		set(m, n, ud);
	if (!ir_infer_node(m, n, err, sizeof err)) {
		fprintf(stderr, "ref_eval: inference failed: %s\n", err);
		goto out;
	}
	for (int i = 0; i < nout; i++)
		out[i].type = n->out[i]->type;
	{
		struct ir_value *res[16];
		for (int i = 0; i < nout; i++)
			res[i] = n->out[i];
		if (ir_fold_all(m, err, sizeof err) != 0) {
			fprintf(stderr, "ref_eval: evaluation failed: %s\n", err);
			goto out;
		}
		for (int i = 0; i < nout; i++) {
			size_t bytes = (size_t)ir_type_elems(&res[i]->type) *
			               (size_t)ir_dtype_size(res[i]->type.dtype);
			out[i].data = malloc(bytes ? bytes : 1);
			memcpy(out[i].data, res[i]->data, bytes);
		}
	}
	ok = true;
out:
	ir_module_free(m);
	return ok;
}

/* Uniform values in [lo, hi) of dtype t from a xorshift seed. */
static inline void rand_fill(enum ir_dtype t, void *data, int64_t n, double lo, double hi,
                             uint64_t *seed)
{
	for (int64_t i = 0; i < n; i++) {
		double u;
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		u = (double)(*seed >> 11) / 9007199254740992.0;
		if (ir_dtypes[t].is_float)
			ir_store_f64(t, data, (size_t)i, lo + (hi - lo) * u);
		else
			ir_store_i64(t, data, (size_t)i, (int64_t)floor(lo + (hi - lo) * u));
	}
}

/* Max |a - b| / (atol + rtol |b|) over n elements of dtype t (<= 1 passes);
 * NaN matches NaN. */
static inline double rel_err(enum ir_dtype t, const void *a, const void *b, int64_t n, double rtol,
                             double atol)
{
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
		double x = ir_load_f64(t, a, (size_t)i), y = ir_load_f64(t, b, (size_t)i), e;
		if (x != x || y != y) {
			if ((x != x) != (y != y))
				return INFINITY;
			continue;
		}
		if (x == y)
			continue;
		e = fabs(x - y) / (atol + rtol * fabs(y));
		if (e > worst)
			worst = e;
	}
	return worst;
}

#endif
