/*
 * ops_nn.c - importers for linear algebra, convolution, normalization,
 * softmax, pooling and reductions.
 *
 * Normalizations done here so the IR is canonical: auto_pad is resolved into
 * explicit pads, kernel_shape is checked against the weight, defaults are
 * filled, reduction axes become a sorted non-negative list (or an alias when
 * there is nothing to reduce), and opset < 13 Softmax, which flattens to 2-D
 * from its axis on, is rewritten as reshape -> softmax -> reshape.
 */
#include "fe.h"

#include <string.h>

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

static bool finish1(struct fe_node *nd, struct ir_node *n)
{
	return fe_finish(nd, n) && bind1(nd, n->out[0]);
}

/* ------------------------------------------------------------------------ */
/* MatMul, Gemm                                                             */
/* ------------------------------------------------------------------------ */

static bool imp_matmul(struct fe_node *nd)
{
	const char *name;
	if (!fe_inputs(nd, 2, 2))
		return false;
	name = fe_out_name(nd, 0);
	return finish1(nd, fe_emit(nd, IR_OP_MATMUL, nd->in, 2, &name, 1));
}

static bool imp_gemm(struct fe_node *nd)
{
	float alpha = fe_float(nd, "alpha", 1.0f), beta = fe_float(nd, "beta", 1.0f);
	int64_t ta = fe_int(nd, "transA", 0), tb = fe_int(nd, "transB", 0);
	const char *name;
	struct ir_node *n;
	if (nd->opset < 9)
		fe_ignore(nd, "broadcast");
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_GEMM, nd->in, nd->nin, &name, 1);
	ir_set_f(nd->fe->m, n, "alpha", alpha);
	ir_set_f(nd->fe->m, n, "beta", fe_in(nd, 2) ? beta : 1.0f);
	ir_set_i(nd->fe->m, n, "trans_a", ta != 0);
	ir_set_i(nd->fe->m, n, "trans_b", tb != 0);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Einsum                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Einsum (12) lowered to reduce_sum, where (diagonals), expand, transpose,
 * reshape and batched matmul: each operand first loses its repeated labels
 * (diagonals) and the labels no other term uses; then operands are
 * contracted left to right, each pair as one [batch, M, K] x [batch, K, N]
 * matmul; the result is transposed to the output's order.
 *
 * Labels: 0-51 the letters in ASCII order (the implicit output sorts
 * them), 52 + j the j-th axis of the ellipsis, counted so that ellipses
 * of different ranks align on the right and broadcast.
 */
#define EIN_ELL    52
#define EIN_LABELS (EIN_ELL + IR_MAX_RANK)

struct ein_term {
	struct ir_value *x;
	int rank;
	int label[IR_MAX_RANK];
};

/* One term as written: its letters, and where the ellipsis stands (-1:
 * none). */
struct ein_spec {
	int letter[IR_MAX_RANK + 1];
	int nletters, ell;
};

static int ein_letter(char c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1;
}

static bool ein_parse(struct fe_node *nd, const char *s, size_t len, struct ein_spec *t)
{
	t->nletters = 0;
	t->ell = -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.' && i + 2 < len && s[i + 1] == '.' && s[i + 2] == '.' &&
		    t->ell < 0) {
			t->ell = t->nletters;
			i += 2;
		} else if (ein_letter(s[i]) < 0 || t->nletters == IR_MAX_RANK) {
			return fe_fail(nd,
			               "equation term '%.*s' is not letters and at most one "
			               "'...' (of at most %d axes)",
			               (int)len, s, IR_MAX_RANK);
		} else {
			t->letter[t->nletters++] = ein_letter(s[i]);
		}
	}
	return true;
}

/* The labels of a term with ell ellipsis axes, of an ellipsis of ell_max. */
static bool ein_labels(struct fe_node *nd, const struct ein_spec *t, int ell, int ell_max,
                       int *label, int *rank)
{
	int n = 0;
	if (t->nletters + ell > IR_MAX_RANK)
		return fe_fail(nd, "an equation term has more than %d axes", IR_MAX_RANK);
	for (int i = 0; i <= t->nletters; i++) {
		if (i == t->ell)
			for (int j = 0; j < ell; j++)
				label[n++] = EIN_ELL + ell_max - ell + j;
		if (i < t->nletters)
			label[n++] = t->letter[i];
	}
	*rank = n;
	return true;
}

/* t transposed so that its axes are the labels order[0..n) (a subset of
 * its labels, in any order: the others must be gone). */
static bool ein_permute(struct fe_node *nd, struct ein_term *t, const int *order, int n)
{
	int64_t perm[IR_MAX_RANK];
	bool id = true;
	IR_ASSERT(n == t->rank);
	for (int i = 0; i < n; i++) {
		for (perm[i] = 0; t->label[perm[i]] != order[i]; perm[i]++)
			IR_ASSERT(perm[i] < t->rank - 1);
		id &= perm[i] == i;
	}
	if (!id)
		t->x = fe_transpose(nd, t->x, perm, -1);
	memcpy(t->label, order, sizeof *order * (size_t)n);
	return t->x != NULL;
}

/* Sums out t's axes whose labels keep[] does not hold. */
static bool ein_sum_out(struct fe_node *nd, struct ein_term *t, const bool *keep)
{
	int64_t axes[IR_MAX_RANK];
	int n = 0, r = 0;
	for (int i = 0; i < t->rank; i++) {
		if (keep[t->label[i]])
			t->label[r++] = t->label[i];
		else
			axes[n++] = i;
	}
	if (n) {
		t->x = fe_reduce(nd, IR_OP_REDUCE_SUM, t->x, axes, n, false, -1);
		t->rank = r;
	}
	return t->x != NULL;
}

/* Replaces each label repeated in t by its diagonal. */
static bool ein_diagonal(struct fe_node *nd, struct ein_term *t)
{
	for (int a = 0; a < t->rank; a++)
		for (int b = a + 1; b < t->rank; b++) {
			struct ir_type mt = { .dtype = IR_BOOL, .rank = t->rank };
			int64_t d = t->x->type.dims[a];
			struct ir_value *in[3];
			unsigned char *mask;
			if (t->label[a] != t->label[b])
				continue;
			if (t->x->type.dims[b] != d)
				return fe_fail(nd, "a repeated label has sizes %lld and %lld",
				               (long long)d, (long long)t->x->type.dims[b]);
			for (int i = 0; i < t->rank; i++)
				mt.dims[i] = i == a || i == b ? d : 1;
			mask = ir_arena_alloc(&nd->fe->m->arena, (size_t)(d * d));
			for (int64_t i = 0; i < d * d; i++)
				mask[i] = i / d == i % d;
			in[0] = fe_const(nd, -1, &mt, mask);
			in[1] = t->x;
			in[2] = fe_scalar(nd, t->x->type.dtype, 0);
			t->x = fe_reduce(nd, IR_OP_REDUCE_SUM,
			                 fe_simple(nd, IR_OP_WHERE, in, 3, -1), (int64_t[]){ b }, 1,
			                 false, -1);
			if (!t->x)
				return false;
			memmove(t->label + b, t->label + b + 1,
			        sizeof(int) * (size_t)(t->rank - b - 1));
			t->rank--;
			b--;
		}
	return true;
}

/* t with its size-1 axes broadcast to size[] where that is larger. */
static bool ein_broadcast(struct fe_node *nd, struct ein_term *t, const int64_t *size,
                          const bool *shared)
{
	int64_t dims[IR_MAX_RANK];
	bool any = false;
	for (int i = 0; i < t->rank; i++) {
		dims[i] = t->x->type.dims[i];
		if (shared[t->label[i]] && dims[i] != size[t->label[i]]) {
			if (dims[i] != 1)
				return fe_fail(nd, "label sizes %lld and %lld do not broadcast",
				               (long long)dims[i], (long long)size[t->label[i]]);
			dims[i] = size[t->label[i]];
			any = true;
		}
	}
	if (any) {
		struct ir_node *n = fe_emit(nd, IR_OP_EXPAND, &t->x, 1, NULL, 1);
		ir_set_ints(nd->fe->m, n, "shape", dims, t->rank);
		t->x = fe_finish(nd, n) ? n->out[0] : NULL;
	}
	return t->x != NULL;
}

static int64_t ein_size(const struct ein_term *t, const int *labels, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < t->rank; k++)
			if (t->label[k] == labels[i])
				p *= t->x->type.dims[k];
	return p;
}

/* a := the contraction of a and b over their shared labels that later[]
 * does not hold (the output's and the remaining operands' labels). */
static bool ein_contract(struct fe_node *nd, struct ein_term *a, struct ein_term *b,
                         const bool *later)
{
	bool in_a[EIN_LABELS] = { 0 }, in_b[EIN_LABELS] = { 0 }, keep[EIN_LABELS],
	     shared[EIN_LABELS];
	int64_t size[EIN_LABELS] = { 0 }, d3[3], out[IR_MAX_RANK];
	int batch[IR_MAX_RANK], aonly[IR_MAX_RANK], contr[IR_MAX_RANK], bonly[IR_MAX_RANK],
	        order[IR_MAX_RANK], nb = 0, na = 0, nc = 0, nbo = 0, n;
	for (int i = 0; i < a->rank; i++)
		in_a[a->label[i]] = true;
	for (int i = 0; i < b->rank; i++)
		in_b[b->label[i]] = true;
	for (int l = 0; l < EIN_LABELS; l++)
		keep[l] = later[l] || (in_a[l] && in_b[l]);
	if (!ein_sum_out(nd, a, keep) || !ein_sum_out(nd, b, keep))
		return false;
	for (int l = 0; l < EIN_LABELS; l++)
		shared[l] = in_a[l] && in_b[l];
	for (int i = 0; i < a->rank; i++)
		size[a->label[i]] = a->x->type.dims[i];
	for (int i = 0; i < b->rank; i++)
		if (b->x->type.dims[i] > size[b->label[i]])
			size[b->label[i]] = b->x->type.dims[i];
	if (!ein_broadcast(nd, a, size, shared) || !ein_broadcast(nd, b, size, shared))
		return false;
	for (int i = 0; i < a->rank; i++) {
		int l = a->label[i];
		if (!shared[l])
			aonly[na++] = l;
		else if (later[l])
			batch[nb++] = l;
		else
			contr[nc++] = l;
	}
	for (int i = 0; i < b->rank; i++)
		if (!shared[b->label[i]])
			bonly[nbo++] = b->label[i];
	if (nb + na + nbo > IR_MAX_RANK)
		return fe_fail(nd, "an intermediate result has more than %d axes", IR_MAX_RANK);
	/* a as [batch, M, K], b as [batch, K, N] */
	memcpy(order, batch, sizeof(int) * (size_t)nb);
	memcpy(order + nb, aonly, sizeof(int) * (size_t)na);
	memcpy(order + nb + na, contr, sizeof(int) * (size_t)nc);
	if (!ein_permute(nd, a, order, a->rank))
		return false;
	memcpy(order + nb, contr, sizeof(int) * (size_t)nc);
	memcpy(order + nb + nc, bonly, sizeof(int) * (size_t)nbo);
	if (!ein_permute(nd, b, order, b->rank))
		return false;
	d3[0] = ein_size(a, batch, nb), d3[1] = ein_size(a, aonly, na),
	d3[2] = ein_size(a, contr, nc);
	a->x = fe_reshape(nd, a->x, d3, 3, -1);
	d3[1] = d3[2], d3[2] = ein_size(b, bonly, nbo);
	b->x = fe_reshape(nd, b->x, d3, 3, -1);
	/* the product as [batch..., aonly..., bonly...] */
	n = 0;
	for (int i = 0; i < nb; i++)
		out[n] = size[batch[i]], order[n++] = batch[i];
	for (int i = 0; i < na; i++)
		out[n] = size[aonly[i]], order[n++] = aonly[i];
	for (int i = 0; i < nbo; i++)
		out[n] = size[bonly[i]], order[n++] = bonly[i];
	a->x = fe_reshape(nd, fe_binary(nd, IR_OP_MATMUL, a->x, b->x, -1), out, n, -1);
	a->rank = n;
	memcpy(a->label, order, sizeof(int) * (size_t)n);
	return a->x != NULL;
}

static bool imp_einsum(struct fe_node *nd)
{
	const char *eq = fe_str(nd, "equation", NULL), *arrow, *p;
	struct ein_spec spec[IR_MAX_RANK + 1], out_spec;
	struct ein_term *t;
	int ell_max = 0, count[EIN_LABELS] = { 0 }, out_label[IR_MAX_RANK], out_rank, nterms = 0;
	bool out_has[EIN_LABELS] = { 0 };
	if (!fe_inputs(nd, 1, -1) || nd->failed)
		return false;
	if (!eq)
		return fe_fail(nd, "attribute 'equation' is required");
	if (nd->nin > IR_MAX_RANK)
		return fe_fail(nd, "more than %d operands are not supported", IR_MAX_RANK);
	arrow = strstr(eq, "->");
	/* the input terms */
	for (p = eq;; p++) {
		const char *end = p + strcspn(p, ",-");
		if (nterms == nd->nin)
			return fe_fail(nd, "equation '%s' has more terms than the %d inputs", eq,
			               nd->nin);
		if (!ein_parse(nd, p, (size_t)(end - p), &spec[nterms]))
			return false;
		nterms++;
		p = end;
		if (*p != ',')
			break;
	}
	if (nterms != nd->nin || (*p && p != arrow))
		return fe_fail(nd, "equation '%s' does not have one term per input (%d)", eq,
		               nd->nin);
	t = ir_arena_alloc(&nd->fe->m->arena, sizeof *t * (size_t)nterms);
	for (int i = 0; i < nterms; i++) {
		int ell = nd->in[i]->type.rank - spec[i].nletters;
		if (ell < 0 || (spec[i].ell < 0 && ell))
			return fe_fail(nd, "equation term %d has %d labels for an input of rank %d",
			               i, spec[i].nletters, nd->in[i]->type.rank);
		if (ell > ell_max)
			ell_max = ell;
	}
	for (int i = 0; i < nterms; i++) {
		t[i].x = nd->in[i];
		if (!ein_labels(nd, &spec[i], nd->in[i]->type.rank - spec[i].nletters, ell_max,
		                t[i].label, &t[i].rank))
			return false;
		for (int k = 0; k < t[i].rank; k++)
			count[t[i].label[k]]++;
	}
	/* the output's labels: as written, or the ellipsis and then the letters
	 * used once, in order */
	if (arrow) {
		/* an ellipsis the output does not name is summed */
		if (!ein_parse(nd, arrow + 2, strlen(arrow + 2), &out_spec))
			return false;
		if (!ein_labels(nd, &out_spec, out_spec.ell < 0 ? 0 : ell_max, ell_max, out_label,
		                &out_rank))
			return false;
	} else {
		out_rank = 0;
		for (int j = 0; j < ell_max; j++)
			out_label[out_rank++] = EIN_ELL + j;
		for (int l = 0; l < EIN_ELL; l++)
			if (count[l] == 1) {
				if (out_rank == IR_MAX_RANK)
					return fe_fail(nd, "the output has more than %d axes",
					               IR_MAX_RANK);
				out_label[out_rank++] = l;
			}
	}
	for (int i = 0; i < out_rank; i++) {
		if (!count[out_label[i]] || out_has[out_label[i]])
			return fe_fail(nd,
			               "equation '%s': an output label is repeated or in no input",
			               eq);
		out_has[out_label[i]] = true;
	}
	/* each operand without its diagonals and its labels no one else needs */
	for (int i = 0; i < nterms; i++) {
		bool keep[EIN_LABELS];
		for (int l = 0; l < EIN_LABELS; l++)
			keep[l] = out_has[l];
		for (int j = 0; j < nterms; j++)
			for (int k = 0; k < t[j].rank && j != i; k++)
				keep[t[j].label[k]] = true;
		if (!ein_diagonal(nd, &t[i]) || !ein_sum_out(nd, &t[i], keep))
			return false;
	}
	for (int i = 1; i < nterms; i++) {
		bool later[EIN_LABELS];
		for (int l = 0; l < EIN_LABELS; l++)
			later[l] = out_has[l];
		for (int j = i + 1; j < nterms; j++)
			for (int k = 0; k < t[j].rank; k++)
				later[t[j].label[k]] = true;
		if (!ein_contract(nd, &t[0], &t[i], later))
			return false;
	}
	if (!ein_sum_out(nd, &t[0], out_has) || !ein_permute(nd, &t[0], out_label, out_rank))
		return false;
	fe_bind(nd, 0, t[0].x);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Convolution and pooling geometry                                         */
/* ------------------------------------------------------------------------ */

/*
 * Reads strides, dilations, pads and auto_pad for a window op over input x.
 * kernel must already be set. SAME_UPPER / SAME_LOWER give ceil(in/stride)
 * outputs with the odd padding at the end / at the start.
 */
static bool read_window(struct fe_node *nd, const struct ir_type *x, struct fe_window *w,
                        bool has_dilations)
{
	const char *auto_pad = fe_str(nd, "auto_pad", "NOTSET");
	int nsp = w->nsp;
	if (!fe_ints_len(nd, "strides", nsp, 1, w->strides))
		return false;
	if (has_dilations && !fe_ints_len(nd, "dilations", nsp, 1, w->dilations))
		return false;
	if (!has_dilations)
		for (int i = 0; i < nsp; i++)
			w->dilations[i] = 1;
	for (int i = 0; i < nsp; i++)
		if (w->strides[i] < 1 || w->dilations[i] < 1 || w->kernel[i] < 1)
			return fe_fail(nd, "kernel, strides and dilations must be positive");
	if (!strcmp(auto_pad, "NOTSET")) {
		if (!fe_ints_len(nd, "pads", 2 * nsp, 0, w->pads))
			return false;
		for (int i = 0; i < 2 * nsp; i++)
			if (w->pads[i] < 0)
				return fe_fail(nd, "pads must not be negative");
	} else if (!strcmp(auto_pad, "VALID")) {
		fe_ignore(nd, "pads");
		memset(w->pads, 0, sizeof w->pads);
	} else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
		fe_ignore(nd, "pads");
		for (int i = 0; i < nsp; i++) {
			int64_t in = x->dims[2 + i], s = w->strides[i];
			int64_t out = in / s + (in % s != 0), ext, total;
			/* total = (out - 1) * s + dil * (k - 1) + 1 - in */
			if (__builtin_mul_overflow(w->kernel[i] - 1, w->dilations[i], &ext) ||
			    __builtin_mul_overflow(out > 0 ? out - 1 : 0, s, &total) ||
			    __builtin_add_overflow(total, ext + 1 - in, &total))
				return fe_fail(nd, "SAME padding overflows in spatial dim %d", i);
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			bool upper = auto_pad[5] == 'U';
			w->pads[i] = upper ? small : big;
			w->pads[nsp + i] = upper ? big : small;
		}
	} else {
		return fe_fail(nd,
		               "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER",
		               auto_pad);
	}
	return !nd->failed;
}

static void set_window(struct fe_node *nd, struct ir_node *n, const struct fe_window *w,
                       bool kernel, bool dilations)
{
	struct ir_module *m = nd->fe->m;
	if (kernel)
		ir_set_ints(m, n, "kernel", w->kernel, w->nsp);
	ir_set_ints(m, n, "strides", w->strides, w->nsp);
	ir_set_ints(m, n, "pads", w->pads, 2 * w->nsp);
	if (dilations)
		ir_set_ints(m, n, "dilations", w->dilations, w->nsp);
}

/* Kernel from the weight, checked against kernel_shape if given. */
static bool conv_kernel(struct fe_node *nd, const struct ir_type *x, const struct ir_type *wt,
                        struct fe_window *w)
{
	const int64_t *ks;
	int c;
	if (x->rank < 3 || wt->rank != x->rank)
		return fe_fail(nd,
		               "input and weight must be [N,C,spatial...] of equal rank (rank %d "
		               "and %d)",
		               x->rank, wt->rank);
	w->nsp = x->rank - 2;
	for (int i = 0; i < w->nsp; i++)
		w->kernel[i] = wt->dims[2 + i];
	c = fe_ints(nd, "kernel_shape", &ks);
	if (c >= 0) {
		if (c != w->nsp)
			return fe_fail(nd, "kernel_shape has %d values for %d spatial dims", c,
			               w->nsp);
		for (int i = 0; i < c; i++)
			if (ks[i] != w->kernel[i])
				return fe_fail(nd,
				               "kernel_shape[%d] = %lld but the weight has %lld", i,
				               (long long)ks[i], (long long)w->kernel[i]);
	}
	return !nd->failed;
}

bool fe_conv_window(struct fe_node *nd, const struct ir_type *x, const struct ir_type *wt,
                    struct fe_window *w)
{
	return conv_kernel(nd, x, wt, w) && read_window(nd, x, w, true);
}

static bool imp_conv(struct fe_node *nd)
{
	struct fe_window w = { 0 };
	int64_t group = fe_int(nd, "group", 1);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 3) || !fe_conv_window(nd, &nd->in[0]->type, &nd->in[1]->type, &w))
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CONV, nd->in, nd->nin, &name, 1);
	set_window(nd, n, &w, false, true);
	ir_set_i(nd->fe->m, n, "group", group);
	return finish1(nd, n);
}

static bool imp_conv_transpose(struct fe_node *nd)
{
	struct fe_window w = { 0 };
	int64_t group = fe_int(nd, "group", 1), outpad[IR_MAX_RANK], oshape_buf[IR_MAX_RANK];
	const char *auto_pad = fe_str(nd, "auto_pad", "NOTSET");
	const int64_t *oshape;
	int noshape;
	const char *name;
	struct ir_node *n;
	const struct ir_type *x;
	if (!fe_inputs(nd, 2, 3) || !conv_kernel(nd, &nd->in[0]->type, &nd->in[1]->type, &w))
		return false;
	x = &nd->in[0]->type;
	if (!fe_ints_len(nd, "strides", w.nsp, 1, w.strides) ||
	    !fe_ints_len(nd, "dilations", w.nsp, 1, w.dilations) ||
	    !fe_ints_len(nd, "output_padding", w.nsp, 0, outpad) ||
	    !fe_ints_len(nd, "pads", 2 * w.nsp, 0, w.pads))
		return false;
	noshape = fe_ints(nd, "output_shape", &oshape);
	if (noshape >= 0 && noshape != w.nsp && noshape != w.nsp + 2)
		return fe_fail(nd, "output_shape has %d values", noshape);
	if (noshape > w.nsp)
		oshape += 2;
	if (noshape >= 0 || strncmp(auto_pad, "SAME", 4) == 0) {
		bool upper = strcmp(auto_pad, "SAME_LOWER") != 0;
		for (int i = 0; i < w.nsp; i++) {
			/* total = st * (in - 1) + output_padding + dil * (k - 1) + 1 - out */
			int64_t ext, out, total;
			if (__builtin_mul_overflow(w.kernel[i] - 1, w.dilations[i], &ext) ||
			    (noshape < 0 && __builtin_mul_overflow(x->dims[2 + i], w.strides[i],
			                                           &oshape_buf[i])) ||
			    __builtin_mul_overflow(w.strides[i], x->dims[2 + i] - 1, &total) ||
			    __builtin_add_overflow(total, outpad[i], &total) ||
			    __builtin_add_overflow(total, ext, &total) ||
			    __builtin_add_overflow(total, 1, &total))
				return fe_fail(nd, "output size overflows in spatial dim %d", i);
			out = noshape >= 0 ? oshape[i] : oshape_buf[i];
			if (out < 0 || __builtin_sub_overflow(total, out, &total))
				return fe_fail(nd, "invalid output_shape %lld", (long long)out);
			if (total < 0) {
				/* a larger output than the natural one: no padding, and
				 * the rest appended, as ONNX Runtime does */
				outpad[i] -= total;
				total = 0;
			}
			w.pads[i] = upper ? total / 2 : total - total / 2;
			w.pads[w.nsp + i] = total - w.pads[i];
		}
	} else if (!strcmp(auto_pad, "VALID")) {
		memset(w.pads, 0, sizeof w.pads);
	} else if (strcmp(auto_pad, "NOTSET")) {
		return fe_fail(nd, "auto_pad '%s' is not supported", auto_pad);
	}
	if (nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_CONV_TRANSPOSE, nd->in, nd->nin, &name, 1);
	set_window(nd, n, &w, false, true);
	ir_set_i(nd->fe->m, n, "group", group);
	ir_set_ints(nd->fe->m, n, "output_padding", outpad, w.nsp);
	return finish1(nd, n);
}

/* MaxPool, AveragePool, LpPool. */
static bool imp_pool(struct fe_node *nd)
{
	enum ir_op op = nd->def->ir;
	struct fe_window w = { 0 };
	const struct ir_type *x;
	int64_t ceil_mode = 0, p = 2;
	const char *names[2];
	struct ir_node *n;
	int nout = 1;
	if (!fe_inputs(nd, 1, 1))
		return false;
	x = &nd->in[0]->type;
	if (x->rank < 3)
		return fe_fail(nd, "input must be [N,C,spatial...], not rank %d", x->rank);
	w.nsp = x->rank - 2;
	{
		const int64_t *ks;
		int c = fe_ints(nd, "kernel_shape", &ks);
		if (c != w.nsp)
			return nd->failed ? false
			                  : fe_fail(nd, "kernel_shape must have %d values", w.nsp);
		memcpy(w.kernel, ks, sizeof *ks * (size_t)c);
	}
	/* ceil_mode: MaxPool and AveragePool from 10, LpPool from 18; dilations:
	 * MaxPool from 10, LpPool from 18, AveragePool from 19 */
	if (nd->version >= (op == IR_OP_LP_POOL ? 18 : 10))
		ceil_mode = fe_int(nd, "ceil_mode", 0);
	if (op == IR_OP_LP_POOL)
		p = fe_int(nd, "p", 2);
	if (!read_window(nd, x, &w,
	                 nd->version >= (op == IR_OP_MAX_POOL  ? 10
	                                 : op == IR_OP_LP_POOL ? 18
	                                                       : 19)))
		return false;
	names[0] = fe_out_name(nd, 0);
	if (op == IR_OP_MAX_POOL && nd->nout > 1 && nd->proto->output[1][0]) {
		names[1] = fe_out_name(nd, 1);
		nout = 2;
	}
	n = fe_emit(nd, op, nd->in, 1, names, nout);
	set_window(nd, n, &w, true, true);
	ir_set_i(nd->fe->m, n, "ceil_mode", ceil_mode != 0);
	if (op == IR_OP_MAX_POOL)
		ir_set_i(nd->fe->m, n, "storage_order", fe_int(nd, "storage_order", 0) != 0);
	else if (op == IR_OP_AVG_POOL)
		ir_set_i(nd->fe->m, n, "count_include_pad",
		         fe_int(nd, "count_include_pad", 0) != 0);
	else
		ir_set_i(nd->fe->m, n, "p", p);
	if (nd->failed || !fe_finish(nd, n))
		return false;
	fe_bind(nd, 0, n->out[0]);
	if (nout > 1)
		fe_bind(nd, 1, n->out[1]);
	return true;
}

static bool imp_global_pool(struct fe_node *nd)
{
	const char *name;
	struct ir_node *n;
	int64_t p = nd->def->ir == IR_OP_GLOBAL_LP_POOL ? fe_int(nd, "p", 2) : 0;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	if (nd->def->ir == IR_OP_GLOBAL_LP_POOL)
		ir_set_i(nd->fe->m, n, "p", p);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Normalization                                                            */
/* ------------------------------------------------------------------------ */

static bool training(const struct fe_node *nd) { return nd->fe->opt && nd->fe->opt->training; }

/*
 * BatchNormalization with training_mode=1 (14) in a model compiled as it is,
 * as ONNX's reference computes it: y normalized with the batch's mean and
 * (biased) variance over every axis but 1, and the running statistics
 * updated, mean * momentum + batch_mean * (1 - momentum) (the variance
 * alike), as outputs 1 and 2. (onnxc train has its own: ad_train_mode.)
 */
static bool batch_norm_training(struct fe_node *nd, float eps)
{
	double mom = fe_float(nd, "momentum", 0.9f);
	struct ir_value *x = nd->in[0], *mean, *var, *d, *in[5];
	int64_t axes[IR_MAX_RANK], c = x->type.rank > 1 ? x->type.dims[1] : 0;
	int na = 0;
	const char *name;
	struct ir_node *n;
	if (x->type.rank < 2)
		return fe_fail(nd, "X has rank %d: training mode needs [N, C, ...]", x->type.rank);
	for (int i = 0; i < x->type.rank; i++)
		if (i != 1)
			axes[na++] = i;
	mean = fe_reduce(nd, IR_OP_REDUCE_MEAN, x, axes, na, true, -1);
	d = fe_binary(nd, IR_OP_SUB, x, mean, -1);
	var = fe_reduce(nd, IR_OP_REDUCE_MEAN, fe_binary(nd, IR_OP_MUL, d, d, -1), axes, na, false,
	                -1);
	mean = fe_reshape(nd, mean, &c, 1, -1);
	if (!mean || !var)
		return false;
	in[0] = x, in[1] = nd->in[1], in[2] = nd->in[2], in[3] = mean, in[4] = var;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_BATCH_NORM, in, 5, &name, 1);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!finish1(nd, n))
		return false;
	for (int k = 1; k < nd->nout && k < 3; k++) {
		struct ir_value *run = nd->in[k + 2], *b = k == 1 ? mean : var, *u;
		if (!nd->proto->output[k][0])
			continue;
		u = fe_binary(
		        nd, IR_OP_ADD,
		        fe_binary(nd, IR_OP_MUL, run, fe_scalar(nd, run->type.dtype, mom), -1),
		        fe_binary(nd, IR_OP_MUL, b, fe_scalar(nd, b->type.dtype, 1 - mom), -1), k);
		if (!u)
			return false;
		fe_bind(nd, k, u);
	}
	return true;
}

static bool imp_batch_norm(struct fe_node *nd)
{
	float eps = fe_float(nd, "epsilon", 1e-5f);
	const char *name;
	struct ir_node *n;
	if (nd->opset < 14 || !fe_int(nd, "training_mode", 0) || training(nd))
		fe_ignore(nd, "momentum"); /* read by batch_norm_training */
	if (nd->opset < 9 && fe_int(nd, "spatial", 1) != 1)
		return fe_fail(nd, "spatial=0 (per-activation statistics) is not supported");
	if (!fe_inputs(nd, 5, 5) || nd->failed)
		return false;
	if (nd->opset >= 14 && fe_int(nd, "training_mode", 0) != 0 && !training(nd))
		return batch_norm_training(nd, eps);
	for (int k = 1; k < nd->nout; k++) {
		if (!nd->proto->output[k][0])
			continue;
		if (!training(nd))
			return fe_fail(nd, "output %d (running statistics) exists only in training",
			               k);
		/* onnxc train updates the running statistics itself
		 * (passes/autodiff.c, ad_train_mode); an exporter's copies of
		 * them (torch's training-mode export) must be unused */
		if (fe_tensor_used(nd->fe, nd->proto->output[k]))
			return fe_fail(nd,
			               "output %d (the updated running statistics) is used by the "
			               "graph: onnxc train computes those updates itself",
			               k);
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_BATCH_NORM, nd->in, 5, &name, 1);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!finish1(nd, n))
		return false;
	/* the unused statistics outputs stand for the inputs' (never read) */
	for (int k = 1; k < nd->nout && k < 3; k++)
		if (nd->proto->output[k][0])
			fe_bind(nd, k, nd->in[k + 2]);
	return true;
}

bool fe_layer_norm(struct fe_node *nd, struct ir_value *const *in, int nin, int64_t axis, float eps)
{
	const char *names[3];
	int nout = 1;
	struct ir_node *n;
	for (int k = 0; k < nd->nout && k < 3; k++)
		if (nd->proto->output[k][0])
			nout = k + 1;
	for (int k = 0; k < nout; k++)
		names[k] = fe_out_name(nd, k);
	n = fe_emit(nd, IR_OP_LAYER_NORM, in, nin, names, nout);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!fe_finish(nd, n))
		return false;
	for (int k = 0; k < nout; k++)
		fe_bind(nd, k, n->out[k]);
	return true;
}

static bool imp_layer_norm(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1);
	float eps = fe_float(nd, "epsilon", 1e-5f);
	/* statistics are always computed in FP32 (stash_type 1); doing so for
	 * stash_type 0 only adds precision */
	fe_ignore(nd, "stash_type");
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	return fe_layer_norm(nd, nd->in, nd->nin, axis, eps);
}

static bool imp_instance_norm(struct fe_node *nd)
{
	float eps = fe_float(nd, "epsilon", 1e-5f);
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_INSTANCE_NORM, nd->in, 3, &name, 1);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	return finish1(nd, n);
}

/* GroupNormalization (18, 21): x [N, C, ...] as [N, G, rest], each group
 * normalized by layer_norm over its last axis (mean and variance in FP32),
 * then the scale and bias: per group in 18 (applied in the grouped view),
 * per channel in 21. */
static bool imp_group_norm(struct fe_node *nd)
{
	float eps = fe_float(nd, "epsilon", 1e-5f);
	int64_t g, c, grouped[3], per[IR_MAX_RANK];
	const struct ir_type *t;
	struct ir_value *x, *in[2];
	struct ir_node *n;
	bool v18 = nd->version < 21;
	fe_ignore(nd, "stash_type"); /* layer_norm's statistics are FP32 */
	if (!fe_req_int(nd, "num_groups", &g) || !fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	t = &nd->in[0]->type;
	if (t->rank < 2 || !ir_dtypes[t->dtype].is_float)
		return fe_fail(nd, "input must be float [N, C, ...]");
	c = t->dims[1];
	if (g < 1 || c % g)
		return fe_fail(nd, "num_groups %lld does not divide the %lld channels",
		               (long long)g, (long long)c);
	for (int i = 1; i < 3; i++)
		if (nd->in[i]->type.rank != 1 || nd->in[i]->type.dims[0] != (v18 ? g : c))
			return fe_fail(nd, "%s must be [%lld]", i == 1 ? "scale" : "bias",
			               (long long)(v18 ? g : c));
	grouped[0] = t->dims[0], grouped[1] = g;
	grouped[2] = ir_type_elems(t) / (t->dims[0] * g);
	in[0] = fe_reshape(nd, nd->in[0], grouped, 3, -1);
	in[1] = fe_scalar(nd, t->dtype, 1.0);
	if (!in[0])
		return false;
	n = fe_emit(nd, IR_OP_LAYER_NORM, in, 2, NULL, 1);
	ir_set_i(nd->fe->m, n, "axis", 2);
	ir_set_f(nd->fe->m, n, "epsilon", eps);
	if (!fe_finish(nd, n))
		return false;
	x = n->out[0];
	/* the scale and bias as [G, 1] (18) or [C, 1, ...] (21) */
	per[0] = v18 ? g : c;
	for (int i = 1; i < (v18 ? 2 : t->rank - 1); i++)
		per[i] = 1;
	if (!v18)
		x = fe_reshape(nd, x, t->dims, t->rank, -1);
	x = fe_binary(nd, IR_OP_MUL, x, fe_reshape(nd, nd->in[1], per, v18 ? 2 : t->rank - 1, -1),
	              -1);
	x = fe_binary(nd, IR_OP_ADD, x, fe_reshape(nd, nd->in[2], per, v18 ? 2 : t->rank - 1, -1),
	              v18 ? -1 : 0);
	return bind1(nd, v18 ? fe_reshape(nd, x, t->dims, t->rank, 0) : x);
}

/* LpNormalization: x divided by its L1 or L2 norm along axis; where the
 * norm is 0 (so is x) the result is 0, as in ONNX's tests. */
static bool imp_lp_norm(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1), p = fe_int(nd, "p", 2);
	struct ir_value *norm, *in[3];
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (p != 1 && p != 2)
		return fe_fail(nd, "p must be 1 or 2, not %lld", (long long)p);
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	norm = fe_reduce(nd, p == 1 ? IR_OP_REDUCE_L1 : IR_OP_REDUCE_L2, nd->in[0], &axis, 1, true,
	                 -1);
	if (!norm)
		return false;
	in[0] = fe_binary(nd, IR_OP_EQUAL, norm, fe_scalar(nd, norm->type.dtype, 0), -1);
	in[1] = fe_scalar(nd, norm->type.dtype, 1);
	in[2] = norm;
	if (!in[0])
		return false;
	norm = fe_simple(nd, IR_OP_WHERE, in, 3, -1);
	return bind1(nd, fe_binary(nd, IR_OP_DIV, nd->in[0], norm, 0));
}

/* MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
 * over axes, as ONNX's function body computes it. */
static bool imp_mvn(struct fe_node *nd)
{
	int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
	const int64_t *a;
	int na = fe_ints(nd, "axes", &a);
	struct ir_value *x, *mean, *var, *sd;
	enum ir_dtype t;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	x = nd->in[0];
	t = x->type.dtype;
	if (na > IR_MAX_RANK)
		return fe_fail(nd, "axes has %d entries for rank %d", na, x->type.rank);
	if (na >= 0)
		memcpy(axes, a, sizeof *a * (size_t)na);
	else
		na = 3;
	if ((na = fe_norm_axes(nd, axes, na, x->type.rank)) < 0)
		return false;
	mean = fe_reduce(nd, IR_OP_REDUCE_MEAN, x, axes, na, true, -1);
	var = fe_reduce(nd, IR_OP_REDUCE_MEAN, fe_binary(nd, IR_OP_MUL, x, x, -1), axes, na, true,
	                -1);
	var = fe_binary(nd, IR_OP_SUB, var, fe_binary(nd, IR_OP_MUL, mean, mean, -1), -1);
	sd = fe_binary(nd, IR_OP_ADD, fe_unary(nd, IR_OP_SQRT, var, -1), fe_scalar(nd, t, 1e-9),
	               -1);
	return bind1(nd, fe_binary(nd, IR_OP_DIV, fe_binary(nd, IR_OP_SUB, x, mean, -1), sd, 0));
}

static bool imp_lrn(struct fe_node *nd)
{
	int64_t size;
	float alpha = fe_float(nd, "alpha", 1e-4f), beta = fe_float(nd, "beta", 0.75f),
	      bias = fe_float(nd, "bias", 1.0f);
	const char *name;
	struct ir_node *n;
	if (!fe_req_int(nd, "size", &size) || !fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (size < 1)
		return fe_fail(nd, "attribute 'size' must be positive, not %lld", (long long)size);
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_LRN, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "size", size);
	ir_set_f(nd->fe->m, n, "alpha", alpha);
	ir_set_f(nd->fe->m, n, "beta", beta);
	ir_set_f(nd->fe->m, n, "bias", bias);
	return finish1(nd, n);
}

/* Softmax, LogSoftmax, Hardmax. */
static bool imp_softmax(struct fe_node *nd)
{
	bool v13 = nd->opset >= 13;
	int64_t axis = fe_int(nd, "axis", v13 ? -1 : 1);
	struct ir_value *x;
	struct ir_node *n;
	const char *name;
	int rank;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	x = nd->in[0];
	rank = x->type.rank;
	if (rank == 0)
		return fe_fail(nd, "input must have rank >= 1");
	if ((axis = fe_axis(nd, axis, rank, "axis")) < 0)
		return false;
	if (!v13 && axis != rank - 1) {
		/* before opset 13 the op works on the 2-D view [prod(:axis), prod(axis:)] */
		int64_t d2[2] = { 1, 1 };
		for (int i = 0; i < rank; i++)
			d2[i >= axis] *= x->type.dims[i];
		if (!(x = fe_reshape(nd, x, d2, 2, -1)))
			return false;
		name = fe_tmp_name(nd, ir_ops[nd->def->ir].name);
		n = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
		ir_set_i(nd->fe->m, n, "axis", 1);
		if (!fe_finish(nd, n))
			return false;
		return bind1(nd, fe_reshape(nd, n->out[0], nd->in[0]->type.dims, rank, 0));
	}
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                               */
/* ------------------------------------------------------------------------ */

/* ReduceMax and ReduceMin of bool (20): any and all, as the max and min of
 * the values as uint8. */
static bool reduce_bool(struct fe_node *nd, const int64_t *axes, int n, bool keep)
{
	struct ir_value *x = fe_cast(nd, nd->in[0], IR_U8, -1);
	const char *name = fe_tmp_name(nd, ir_ops[nd->def->ir].name);
	struct ir_node *r;
	if (!x)
		return false;
	r = fe_emit(nd, nd->def->ir, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, r, "axes", axes, n);
	ir_set_i(nd->fe->m, r, "keepdims", keep);
	if (!fe_finish(nd, r) || !(x = fe_cast(nd, r->out[0], IR_BOOL, 0)))
		return false;
	fe_bind(nd, 0, x);
	return true;
}

static bool imp_reduce(struct fe_node *nd)
{
	/* axes became an input in ReduceSum-13 and the other Reduce*-18 */
	bool axes_input = nd->version >= (!strcmp(nd->op, "ReduceSum") ? 13 : 18);
	int64_t keep = fe_int(nd, "keepdims", 1), noop = 0, axes[IR_MAX_RANK];
	int rank, n = -1;
	const char *name;
	struct ir_node *node;
	if (axes_input)
		noop = fe_int(nd, "noop_with_empty_axes", 0);
	if (!fe_inputs(nd, 1, axes_input ? 2 : 1) || nd->failed)
		return false;
	rank = nd->in[0]->type.rank;
	if (axes_input && fe_in(nd, 1)) {
		int64_t *v;
		n = fe_const_ints(nd, 1, "axes", &v);
		if (n < 0)
			return false;
		if (n > rank)
			return fe_fail(nd, "%d axes for rank %d", n, rank);
		memcpy(axes, v, sizeof *v * (size_t)n);
	} else if (!axes_input) {
		const int64_t *v;
		n = fe_ints(nd, "axes", &v);
		if (n > rank)
			return fe_fail(nd, "%d axes for rank %d", n, rank);
		if (n > 0)
			memcpy(axes, v, sizeof *v * (size_t)n);
	}
	if (nd->failed)
		return false;
	if (n <= 0) {
		if (noop) {
			fe_bind(nd, 0, nd->in[0]);
			return true;
		}
		n = rank;
		for (int i = 0; i < rank; i++)
			axes[i] = i;
	}
	if ((n = fe_norm_axes(nd, axes, n, rank)) < 0)
		return false;
	if (n == 0) { /* a scalar: nothing to reduce */
		fe_bind(nd, 0, nd->in[0]);
		return true;
	}
	if (nd->in[0]->type.dtype == IR_BOOL && nd->version >= 20 &&
	    (nd->def->ir == IR_OP_REDUCE_MAX || nd->def->ir == IR_OP_REDUCE_MIN))
		return reduce_bool(nd, axes, n, keep != 0);
	name = fe_out_name(nd, 0);
	node = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_ints(nd->fe->m, node, "axes", axes, n);
	ir_set_i(nd->fe->m, node, "keepdims", keep != 0);
	return finish1(nd, node);
}

static bool imp_arg(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", 0), keep = fe_int(nd, "keepdims", 1), last = 0;
	const char *name;
	struct ir_node *n;
	if (nd->opset >= 12)
		last = fe_int(nd, "select_last_index", 0);
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_i(nd->fe->m, n, "keepdims", keep != 0);
	ir_set_i(nd->fe->m, n, "select_last_index", last != 0);
	return finish1(nd, n);
}

/* TopK: k an attribute (1) or a one-element input (10), which must be a
 * constant (it decides the results' shape); largest and sorted from 11.
 * The IR's results are always sorted, which sorted 0 (any order) allows. */
static bool imp_topk(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1), largest = 1, k, *kv;
	const char *names[2];
	struct ir_node *n;
	if (nd->version >= 11) {
		largest = fe_int(nd, "largest", 1);
		fe_int(nd, "sorted", 1);
	}
	if (nd->version == 1) {
		if (!fe_req_int(nd, "k", &k) || !fe_inputs(nd, 1, 1) || nd->failed)
			return false;
	} else {
		int c;
		if (!fe_inputs(nd, 2, 2) || nd->failed || (c = fe_const_ints(nd, 1, "k", &kv)) < 0)
			return false;
		if (c != 1)
			return fe_fail(nd, "k must hold one value, not %d", c);
		k = kv[0];
	}
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	names[0] = fe_out_name(nd, 0);
	names[1] = fe_out_name(nd, 1);
	n = fe_emit(nd, IR_OP_TOPK, nd->in, 1, names, 2);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_i(nd->fe->m, n, "k", k);
	ir_set_i(nd->fe->m, n, "largest", largest != 0);
	if (!fe_finish(nd, n))
		return false;
	fe_bind(nd, 0, n->out[0]);
	if (nd->nout > 1)
		fe_bind(nd, 1, n->out[1]);
	return true;
}

/* CumSum, CumProd */
static bool imp_cumsum(struct fe_node *nd)
{
	int64_t excl = fe_int(nd, "exclusive", 0), rev = fe_int(nd, "reverse", 0), *axis;
	const char *name;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (fe_const_ints(nd, 1, "axis", &axis) != 1)
		return nd->failed ? false : fe_fail(nd, "axis must be a scalar");
	if ((axis[0] = fe_axis(nd, axis[0], nd->in[0]->type.rank, "axis")) < 0)
		return false;
	name = fe_out_name(nd, 0);
	n = fe_emit(nd, nd->def->ir, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis[0]);
	ir_set_i(nd->fe->m, n, "exclusive", excl != 0);
	ir_set_i(nd->fe->m, n, "reverse", rev != 0);
	return finish1(nd, n);
}

/* ------------------------------------------------------------------------ */
/* Det                                                                      */
/* ------------------------------------------------------------------------ */

/* Past this order the unrolled elimination below is more nodes than a Det
 * is worth; a kernel would be the way (none has been needed). */
#define DET_MAX_N 16

/* A bool [n, 1] constant: row i is true where keep(i, k). */
static struct ir_value *row_mask(struct fe_node *nd, int64_t n, int64_t k, int cmp)
{
	struct ir_type t = { .dtype = IR_BOOL, .rank = 2, .dims = { n, 1 } };
	uint8_t *v = ir_arena_alloc(&nd->fe->m->arena, (size_t)n);
	for (int64_t i = 0; i < n; i++)
		v[i] = cmp < 0 ? i == k : cmp == 0 ? i >= k : i > k;
	return fe_const(nd, -1, &t, v);
}

/*
 * Det (11): the determinant of each [n, n] matrix of X [..., n, n], by
 * Gaussian elimination with partial pivoting (LAPACK's getrf, which
 * numpy.linalg.det uses: the first row of largest |pivot|), unrolled over
 * the n columns, in f64. Step k: p, the row at or below k with the largest
 * |A[p, k]|; rows k and p swapped (a masked sum picks row p; where puts
 * it); the determinant times A[p, k], its sign flipped if p != k; the rows
 * below k lose their multiple of row k (none when the pivot is 0: the
 * determinant is then 0).
 */
static bool imp_det(struct fe_node *nd)
{
	struct ir_value *x, *a, *det = NULL, *sign = NULL, *zero, *in[2];
	int r, n;
	int64_t axis;
	if (!fe_inputs(nd, 1, 1))
		return false;
	x = nd->in[0], r = x->type.rank;
	if (!ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "X is %s: Det takes a float type", ir_dtype_name(x->type.dtype));
	if (r < 2 || x->type.dims[r - 1] != x->type.dims[r - 2])
		return fe_fail(nd, "X must be [..., n, n]");
	if (x->type.dims[r - 1] > DET_MAX_N)
		return fe_fail(nd, "matrices of order %lld: onnxc computes Det up to order %d",
		               (long long)x->type.dims[r - 1], DET_MAX_N);
	n = (int)x->type.dims[r - 1], axis = r - 2;
	a = fe_cast(nd, x, IR_F64, -1);
	zero = fe_scalar(nd, IR_F64, 0);
	det = fe_scalar(nd, IR_F64, 1), sign = det;
	for (int k = 0; k < n; k++) {
		struct ir_value *col = fe_slice_axis(nd, a, r - 1, k, k + 1, 1, -1), *p, *ip, *rowp,
		                *rowk, *piv, *f;
		const char *name = fe_tmp_name(nd, "pivot");
		struct ir_node *am;
		/* the first row at or below k of largest |A[., k]| */
		col = fe_where(nd, row_mask(nd, n, k, 0), fe_unary(nd, IR_OP_ABS, col, -1),
		               fe_scalar(nd, IR_F64, -1), -1);
		if (!col)
			return false;
		am = fe_emit(nd, IR_OP_ARGMAX, &col, 1, &name, 1);
		ir_set_i(nd->fe->m, am, "axis", axis);
		ir_set_i(nd->fe->m, am, "keepdims", 1);
		ir_set_i(nd->fe->m, am, "select_last_index", 0);
		if (!fe_finish(nd, am))
			return false;
		p = am->out[0]; /* [..., 1, 1] */
		{
			struct ir_type it = { .dtype = IR_I64, .rank = 2, .dims = { n, 1 } };
			int64_t *iota = ir_arena_alloc(&nd->fe->m->arena, sizeof *iota * (size_t)n);
			for (int i = 0; i < n; i++)
				iota[i] = i;
			ip = fe_binary(nd, IR_OP_EQUAL, fe_const(nd, -1, &it, iota), p, -1);
		}
		rowp = fe_reduce(nd, IR_OP_REDUCE_SUM, fe_where(nd, ip, a, zero, -1), &axis, 1,
		                 true, -1);
		rowk = fe_slice_axis(nd, a, (int)axis, k, k + 1, 1, -1);
		a = fe_where(nd, row_mask(nd, n, k, -1), rowp, fe_where(nd, ip, rowk, a, -1), -1);
		in[0] = fe_binary(nd, IR_OP_EQUAL, p, fe_scalar(nd, IR_I64, k), -1);
		sign = fe_binary(nd, IR_OP_MUL, sign,
		                 fe_where(nd, in[0], fe_scalar(nd, IR_F64, 1),
		                          fe_scalar(nd, IR_F64, -1), -1),
		                 -1);
		piv = fe_slice_axis(nd, rowp, r - 1, k, k + 1, 1, -1);
		det = fe_binary(nd, IR_OP_MUL, det, piv, -1);
		if (k + 1 == n)
			break;
		f = fe_binary(nd, IR_OP_DIV, fe_slice_axis(nd, a, r - 1, k, k + 1, 1, -1), piv, -1);
		in[1] = fe_binary(
		        nd, IR_OP_AND, row_mask(nd, n, k, 1),
		        fe_unary(nd, IR_OP_NOT, fe_binary(nd, IR_OP_EQUAL, piv, zero, -1), -1), -1);
		f = fe_where(nd, in[1], f, zero, -1);
		a = fe_binary(nd, IR_OP_SUB, a, fe_binary(nd, IR_OP_MUL, f, rowp, -1), -1);
	}
	det = fe_binary(nd, IR_OP_MUL, det, sign, -1);
	det = fe_reshape(nd, det, x->type.dims, r - 2, -1);
	return bind1(nd, fe_cast(nd, det, x->type.dtype, 0));
}

const struct fe_op fe_ops_nn[] = {
	{ "MatMul", imp_matmul, IR_OP_MATMUL, { 1, 9, 13 } },
	{ "Gemm", imp_gemm, IR_OP_GEMM, { 7, 9, 11, 13 } },
	{ "Einsum", imp_einsum, IR_OP_MATMUL, { 12 } },
	{ "Det", imp_det, IR_OP_DIV, { 11, 22 } },
	{ "Conv", imp_conv, IR_OP_CONV, { 1, 11, 22 } },
	{ "ConvTranspose", imp_conv_transpose, IR_OP_CONV_TRANSPOSE, { 1, 11, 22 } },
	{ "MaxPool", imp_pool, IR_OP_MAX_POOL, { 1, 8, 10, 11, 12, 22 } },
	{ "AveragePool", imp_pool, IR_OP_AVG_POOL, { 7, 10, 11, 19, 22 } },
	{ "LpPool", imp_pool, IR_OP_LP_POOL, { 2, 11, 18, 22 } },
	{ "GlobalAveragePool", imp_global_pool, IR_OP_GLOBAL_AVG_POOL, { 1, 22 } },
	{ "GlobalMaxPool", imp_global_pool, IR_OP_GLOBAL_MAX_POOL, { 1, 22 } },
	{ "GlobalLpPool", imp_global_pool, IR_OP_GLOBAL_LP_POOL, { 2, 22 } },
	{ "BatchNormalization", imp_batch_norm, IR_OP_BATCH_NORM, { 7, 9, 14, 15 } },
	{ "LayerNormalization", imp_layer_norm, IR_OP_LAYER_NORM, { 17 } },
	{ "InstanceNormalization", imp_instance_norm, IR_OP_INSTANCE_NORM, { 6, 22 } },
	{ "GroupNormalization", imp_group_norm, IR_OP_LAYER_NORM, { 18, 21 } },
	{ "LpNormalization", imp_lp_norm, IR_OP_REDUCE_L2, { 1, 22 } },
	{ "MeanVarianceNormalization", imp_mvn, IR_OP_REDUCE_MEAN, { 9, 13 } },
	{ "LRN", imp_lrn, IR_OP_LRN, { 1, 13 } },
	{ "Softmax", imp_softmax, IR_OP_SOFTMAX, { 1, 11, 13 } },
	{ "LogSoftmax", imp_softmax, IR_OP_LOG_SOFTMAX, { 1, 11, 13 } },
	{ "Hardmax", imp_softmax, IR_OP_HARDMAX, { 1, 11, 13 } },
	{ "ReduceSum", imp_reduce, IR_OP_REDUCE_SUM, { 1, 11, 13 } },
	{ "ReduceMean", imp_reduce, IR_OP_REDUCE_MEAN, { 1, 11, 13, 18 } },
	{ "ReduceMax", imp_reduce, IR_OP_REDUCE_MAX, { 1, 11, 12, 13, 18, 20 } },
	{ "ReduceMin", imp_reduce, IR_OP_REDUCE_MIN, { 1, 11, 12, 13, 18, 20 } },
	{ "ReduceProd", imp_reduce, IR_OP_REDUCE_PROD, { 1, 11, 13, 18 } },
	{ "ReduceL1", imp_reduce, IR_OP_REDUCE_L1, { 1, 11, 13, 18 } },
	{ "ReduceL2", imp_reduce, IR_OP_REDUCE_L2, { 1, 11, 13, 18 } },
	{ "ReduceSumSquare", imp_reduce, IR_OP_REDUCE_SUM_SQUARE, { 1, 11, 13, 18 } },
	{ "ReduceLogSum", imp_reduce, IR_OP_REDUCE_LOG_SUM, { 1, 11, 13, 18 } },
	{ "ReduceLogSumExp", imp_reduce, IR_OP_REDUCE_LOG_SUM_EXP, { 1, 11, 13, 18 } },
	{ "ArgMax", imp_arg, IR_OP_ARGMAX, { 1, 11, 12, 13 } },
	{ "ArgMin", imp_arg, IR_OP_ARGMIN, { 1, 11, 12, 13 } },
	{ "TopK", imp_topk, IR_OP_TOPK, { 1, 10, 11, 24 } },
	{ "CumSum", imp_cumsum, IR_OP_CUMSUM, { 11, 14 } },
	{ "CumProd", imp_cumsum, IR_OP_CUMPROD, { 26 } },
	{ NULL, NULL, 0, { 0 } },
};
