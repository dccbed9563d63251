/*
 * ops_recurrent.c - ONNX's LSTM, GRU and RNN as the IR's lstm, gru and rnn
 * (one op per cell: each has its own inputs, outputs and attribute, and
 * every layer reads the cell from the op through ir_rnn_cell).
 *
 * The IR takes one form (ir/ops.h): layout 0 and every input. So the
 * importer transposes a layout-1 node's x, initial_h and initial_c in and
 * its results out, and fills absent inputs with ONNX's defaults: zero
 * biases, states and peepholes, every sequence of full length. It spells
 * the activations out: ONNX's defaults when the attribute is absent, one
 * direction's list again for the reverse direction of a bidirectional
 * node that names only one (with its alphas and betas), and each one's
 * alpha and beta as ONNX Runtime reads activation_alpha and
 * activation_beta: consumed in order by the activations that take the
 * parameter, its default once the list is used up. Values left over (the
 * other reading, one per activation, would differ) are refused, as are an
 * unknown direction or activation, a non-positive clip and a hidden_size
 * that r's shape contradicts. A node's outputs are any subset of y, y_h
 * (and y_c): the IR node always has all of them; the unused ones are dead.
 */
#include "fe.h"

#include <string.h>
#include <strings.h>

/* Which results each version of the ops has is the same; what differs:
 * output_sequence (version 1, no effect: the outputs present decide),
 * GRU's linear_before_reset (from 3) and layout (from 14). */
static const int64_t to_seq_major[3] = { 1, 0, 2 };

/* A constant of type t: zeros, or fill in every element (sequence_lens). */
static struct ir_value *filled(struct fe_node *nd, const struct ir_type *t, int32_t fill)
{
	size_t bytes;
	void *data;
	if (!fe_check_const_size(nd, t))
		return NULL;
	bytes = (size_t)ir_type_elems(t) * (size_t)ir_dtype_size(t->dtype);
	data = ir_arena_alloc_big(&nd->fe->m->arena, bytes ? bytes : 1);
	memset(data, 0, bytes);
	for (int64_t i = 0; fill && i < ir_type_elems(t); i++)
		((int32_t *)data)[i] = fill;
	return fe_const(nd, -1, t, data);
}

/* activations (count per direction nact, directions dirs) into the IR's
 * attributes; false after reporting. */
static bool activations(struct fe_node *nd, struct ir_node *n, int nact, int dirs)
{
	static const char *const defaults[] = { "Sigmoid", "Tanh", "Tanh" };
	const ProtobufCBinaryData *names = NULL;
	const float *av = NULL, *bv = NULL;
	int count = fe_strs(nd, "activations", &names), total = nact * dirs;
	int na = fe_floats(nd, "activation_alpha", &av), nb = fe_floats(nd, "activation_beta", &bv);
	int ia = 0, ib = 0;
	float alphas[6], betas[6];
	char list[6 * 24] = "";
	if (nd->failed)
		return false;
	if (count >= 0 && count != total && !(dirs == 2 && count == nact))
		return fe_fail(nd, "activations has %d names; a %s node takes %d", count,
		               dirs == 2 ? "bidirectional" : "one-directional", total);
	for (int k = 0; k < total; k++) {
		const char *name = nd->def->ir == IR_OP_RNN ? "Tanh" : defaults[k % nact];
		size_t len = strlen(name);
		int act = 0;
		if (count > 0) {
			const ProtobufCBinaryData *s = &names[count == total ? k : k % nact];
			name = (const char *)s->data;
			len = s->len;
		}
		while (act < IR_RNN_ACT_COUNT && (strlen(ir_rnn_acts[act].name) != len ||
		                                  strncasecmp(name, ir_rnn_acts[act].name, len)))
			act++;
		if (act == IR_RNN_ACT_COUNT)
			return fe_fail(nd, "activation '%.*s' is not one ONNX allows",
			               (int)(len < 64 ? len : 64), name);
		if (k == nact && count == nact) /* one direction's list, again */
			ia = ib = 0;
		alphas[k] = ir_rnn_acts[act].alpha_def;
		betas[k] = ir_rnn_acts[act].beta_def;
		if (ir_rnn_acts[act].alpha && ia < na)
			alphas[k] = av[ia++];
		if (ir_rnn_acts[act].beta && ib < nb)
			betas[k] = bv[ib++];
		if (k)
			strcat(list, ",");
		strcat(list, ir_rnn_acts[act].name);
	}
	if (ia < na || ib < nb)
		return fe_fail(nd,
		               "activation_%s has %d values but its activations take %d (one per "
		               "activation that has the parameter, as ONNX Runtime reads it)",
		               ia < na ? "alpha" : "beta", ia < na ? na : nb, ia < na ? ia : ib);
	ir_set_s(nd->fe->m, n, "activations", list);
	ir_set_floats(nd->fe->m, n, "alphas", alphas, total);
	ir_set_floats(nd->fe->m, n, "betas", betas, total);
	return true;
}

static bool imp_rnn(struct fe_node *nd)
{
	enum ir_op op = nd->def->ir;
	bool lstm = op == IR_OP_LSTM;
	int gates = lstm ? 4 : op == IR_OP_GRU ? 3 : 1, nin = lstm ? 8 : 6, nout = lstm ? 3 : 2;
	const char *dir = fe_str(nd, "direction", "forward");
	int64_t layout = nd->version >= 14 ? fe_int(nd, "layout", 0) : 0;
	int64_t hidden = fe_int(nd, "hidden_size", -1), d, t, b, h;
	float clip = fe_float(nd, "clip", 0);
	int64_t forget = lstm ? fe_int(nd, "input_forget", 0) : 0;
	int64_t lbr =
	        op == IR_OP_GRU && nd->version >= 3 ? fe_int(nd, "linear_before_reset", 0) : 0;
	struct ir_value *in[8], *x, *r;
	const char *names[3];
	struct ir_node *n;
	if (nd->version == 1)
		fe_int(nd, "output_sequence", 0);
	if (!fe_inputs(nd, 3, nin) || nd->failed)
		return false;
	if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
		return fe_fail(
		        nd, "direction '%s' is not one of forward, reverse and bidirectional", dir);
	if (layout != 0 && layout != 1)
		return fe_fail(nd, "layout %lld is not 0 or 1", (long long)layout);
	if (fe_has(nd, "clip") && !(clip > 0))
		return fe_fail(nd, "clip %g must be positive", (double)clip);
	x = fe_in(nd, 0);
	r = fe_in(nd, 2);
	if (x->type.rank != 3 || r->type.rank != 3)
		return fe_fail(nd, "X and R must be of rank 3, not %d and %d", x->type.rank,
		               r->type.rank);
	h = r->type.dims[2];
	if (hidden >= 0 && hidden != h)
		return fe_fail(nd, "hidden_size %lld does not match R's last dimension %lld",
		               (long long)hidden, (long long)h);
	d = !strcmp(dir, "bidirectional") ? 2 : 1;
	if (layout)
		x = fe_transpose(nd, x, to_seq_major, -1);
	if (!x)
		return false;
	t = x->type.dims[0], b = x->type.dims[1];
	if (t > INT32_MAX)
		return fe_fail(nd, "sequence length %lld does not fit sequence_lens (int32)",
		               (long long)t);
	in[0] = x;
	in[1] = fe_in(nd, 1);
	in[2] = r;
	for (int i = 3; i < nin; i++) {
		struct ir_value *v = fe_in(nd, i);
		struct ir_type ty = { .dtype = x->type.dtype,
			              .rank = i == 4             ? 1
			                      : i == 7 || i == 3 ? 2
			                                         : 3 };
		const int64_t state[3] = { d, b, h };
		if (v && layout && (i == 5 || i == 6))
			v = fe_transpose(nd, v, to_seq_major, -1); /* [B, D, H] -> [D, B, H] */
		if (!v) {
			if (i == 3)
				memcpy(ty.dims, (int64_t[2]){ d, 2 * gates * h },
				       sizeof(int64_t) * 2);
			else if (i == 4)
				ty.dtype = IR_I32, ty.dims[0] = b;
			else if (i == 7)
				memcpy(ty.dims, (int64_t[2]){ d, 3 * h }, sizeof(int64_t) * 2);
			else
				memcpy(ty.dims, state, sizeof state);
			if (fe_in(nd, i) || !(v = filled(nd, &ty, i == 4 ? (int32_t)t : 0)))
				return false;
		}
		in[i] = v;
	}
	for (int k = 0; k < nout; k++)
		names[k] = layout ? NULL : fe_out_name(nd, k);
	n = fe_emit(nd, op, in, nin, layout ? NULL : names, nout);
	ir_set_s(nd->fe->m, n, "direction", dir);
	ir_set_f(nd->fe->m, n, "clip", clip);
	if (lstm)
		ir_set_i(nd->fe->m, n, "input_forget", forget != 0);
	if (op == IR_OP_GRU)
		ir_set_i(nd->fe->m, n, "linear_before_reset", lbr != 0);
	if (!activations(nd, n, lstm ? 3 : op == IR_OP_GRU ? 2 : 1, (int)d) || !fe_finish(nd, n))
		return false;
	for (int k = 0; k < nout; k++) {
		static const int64_t y_perm[4] = { 2, 0, 1, 3 }; /* [T, D, B, H] -> [B, T, D, H] */
		struct ir_value *v = n->out[k];
		if (k >= nd->nout || !nd->proto->output[k][0])
			continue;
		if (layout && !(v = fe_transpose(nd, v, k ? to_seq_major : y_perm, k)))
			return false;
		fe_bind(nd, k, v);
	}
	return true;
}

const struct fe_op fe_ops_recurrent[] = {
	{ "LSTM", imp_rnn, IR_OP_LSTM, { 1, 7, 14, 22 } },
	{ "GRU", imp_rnn, IR_OP_GRU, { 1, 3, 7, 14, 22 } },
	{ "RNN", imp_rnn, IR_OP_RNN, { 1, 7, 14, 22 } },
	{ NULL, NULL, 0, { 0 } },
};
