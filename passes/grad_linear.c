/*
 * grad_linear.c - gradient rules of matmul and gemm (ir/eval_linear.c).
 *
 * Both differentiate into products of the gradient with the other operand
 * transposed, summed back over broadcast batch dimensions.
 */
#include "grad.h"

#include <string.h>

/*
 * x @ w with numpy batch broadcasting; a 1-D operand is a row (x) or a
 * column (w) vector whose unit dimension the result drops. dx = dy @ w^T and
 * dw = x^T @ dy, each summed over the batch dimensions it was broadcast
 * along.
 */
bool grad_matmul(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	struct ir_type xt = x->type, wt = w->type, dt = d->type;
	bool x1 = xt.rank == 1, w1 = wt.rank == 1;
	if (x1) { /* [K] as [1,K]: put back the M axis the result dropped */
		int pos = w1 ? dt.rank : dt.rank - 1;
		memmove(dt.dims + pos + 1, dt.dims + pos,
		        sizeof(int64_t) * (size_t)(dt.rank - pos));
		dt.dims[pos] = 1;
		dt.rank++;
		xt = (struct ir_type){ .dtype = xt.dtype, .rank = 2, .dims = { 1, xt.dims[0] } };
	}
	if (w1) { /* [K] as [K,1]: the N axis */
		dt.dims[dt.rank++] = 1;
		wt = (struct ir_type){ .dtype = wt.dtype, .rank = 2, .dims = { wt.dims[0], 1 } };
	}
	d = ad_reshape_to(a, d, &dt);
	if (ad_wants(a, n, 0)) {
		struct ir_value *g =
		        ad_op2(a, IR_OP_MATMUL, d, ad_transpose_last(a, ad_reshape_to(a, w, &wt)));
		ad_contrib(a, n, 0, ad_reshape_to(a, ad_unbroadcast(a, g, &xt), &x->type));
	}
	if (ad_wants(a, n, 1)) {
		struct ir_value *g =
		        ad_op2(a, IR_OP_MATMUL, ad_transpose_last(a, ad_reshape_to(a, x, &xt)), d);
		ad_contrib(a, n, 1, ad_reshape_to(a, ad_unbroadcast(a, g, &wt), &w->type));
	}
	return true;
}

static struct ir_value *gemm(struct ad *a, struct ir_value *x, struct ir_value *y, bool ta, bool tb,
                             float alpha)
{
	struct ir_value *in[2] = { x, y };
	struct ir_node *n = ad_node(a, IR_OP_GEMM, in, 2, 1);
	ir_set_f(a->m, n, "alpha", alpha);
	ir_set_f(a->m, n, "beta", 0);
	ir_set_i(a->m, n, "trans_a", ta);
	ir_set_i(a->m, n, "trans_b", tb);
	return ad_fin(a, n);
}

/* y = alpha * op(A) op(B) + beta * C. */
bool grad_gemm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *A = n->in[0], *B = n->in[1], *d = dy[0];
	bool ta = ir_attr_i(n, "trans_a") != 0, tb = ir_attr_i(n, "trans_b") != 0;
	float alpha = ir_attr_f(n, "alpha"), beta = ir_attr_f(n, "beta");
	if (ad_wants(a, n, 0)) /* dA = alpha dY op(B)^T, or its transpose */
		ad_contrib(a, n, 0,
		           ta ? gemm(a, B, d, tb, true, alpha) : gemm(a, d, B, false, !tb, alpha));
	if (ad_wants(a, n, 1)) /* dB = alpha op(A)^T dY, or its transpose */
		ad_contrib(a, n, 1,
		           tb ? gemm(a, d, A, true, ta, alpha) : gemm(a, A, d, !ta, false, alpha));
	if (n->nin > 2 && ad_wants(a, n, 2)) {
		struct ir_value *g = ad_unbroadcast(a, d, &n->in[2]->type);
		if (beta != 1)
			g = ad_op2(a, IR_OP_MUL, g, ad_sc(a, g, beta));
		ad_contrib(a, n, 2, g);
	}
	return true;
}

/*
 * attention: one attention_grad (FlashAttention-2's backward: the scores
 * recomputed from the forward's log-sum-exp, never stored) from the
 * forward's y and lse and dy. A forward node without its lse result is
 * replaced by one that has it, so the forward computes it once for both.
 * q, k and v get gradients (GQA: k's and v's summed over each group of query
 * heads inside the kernel); a bias that wants one is refused: its gradient
 * would be the L x L tensor the fused op exists not to store.
 */
bool grad_attention(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	static const char *const attrs[4] = { "scale", "causal", "causal_offset", "softcap" };
	struct ir_value *in[7], *lse;
	struct ir_node *g;
	if (!ad_no_grad_through(a, n, dy, 1))
		return false;
	if (!dy[0])
		return true;
	if (n->nin == 4 && ad_wants(a, n, 3)) {
		ir_node_error(
		        a->m->ctx, n->name, ir_ops[n->op].name,
		        "no gradient for the attention bias '%s' (it would be the full "
		        "[B, H, Lq, Lk] scores' gradient); make it a constant or a graph input "
		        "that is not trained",
		        n->in[3]->name);
		return false;
	}
	if (n->nout == 2) {
		lse = n->out[1];
	} else { /* the forward again, with its log-sum-exp */
		const char *names[2] = {
			ir_unique_name(a->m,
			               ir_arena_printf(&a->m->arena, "%s.y", n->out[0]->name)),
			ir_unique_name(a->m,
			               ir_arena_printf(&a->m->arena, "%s.lse", n->out[0]->name))
		};
		struct ir_node *f =
		        ir_add_node(a->m, IR_OP_ATTENTION, n->name, n->in, n->nin, names, 2);
		ir_set_f(a->m, f, attrs[0], ir_attr_f(n, attrs[0]));
		ir_set_i(a->m, f, attrs[1], ir_attr_i(n, attrs[1]));
		ir_set_i(a->m, f, attrs[2], ir_attr_i(n, attrs[2]));
		ir_set_f(a->m, f, attrs[3], ir_attr_f(n, attrs[3]));
		ad_fin(a, f);
		ir_move_before(a->m, f, n);
		ir_replace_value(a->m, n->out[0], f->out[0]);
		lse = f->out[1];
		n = f;
	}
	in[0] = n->in[0], in[1] = n->in[1], in[2] = n->in[2], in[3] = n->out[0], in[4] = lse;
	in[5] = dy[0];
	if (n->nin == 4)
		in[6] = n->in[3];
	g = ad_node(a, IR_OP_ATTENTION_GRAD, in, n->nin == 4 ? 7 : 6, 3);
	ir_set_f(a->m, g, attrs[0], ir_attr_f(n, attrs[0]));
	ir_set_i(a->m, g, attrs[1], ir_attr_i(n, attrs[1]));
	ir_set_i(a->m, g, attrs[2], ir_attr_i(n, attrs[2]));
	ir_set_f(a->m, g, attrs[3], ir_attr_f(n, attrs[3]));
	ad_fin(a, g);
	for (int i = 0; i < 3; i++)
		if (ad_wants(a, n, i))
			ad_contrib(a, n, i, g->out[i]);
	return true;
}
