/*
 * parse.c - the IR text parser (format: docs/ir.md).
 *
 * A hand-written lexer and recursive-descent parser. It accepts what the
 * printer writes and reports anything else as "FILE:LINE:COL: error: ...",
 * stopping at the first error. Input is untrusted (it is fuzzed): every count
 * is bounded, every number is range-checked, names are checked for
 * uniqueness before the module would abort on a duplicate, and each node's
 * declared result types must equal what inference computes.
 */
#include "ir.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum tok { T_EOF, T_WORD, T_STRING, T_PUNCT };

struct parser {
	struct ir_ctx *ctx;
	struct ir_module *m;
	const char *src, *end, *p;
	int line;
	const char *line_start;
	/* current token */
	enum tok tok;
	const char *tstart;
	size_t tlen;
	char punct;
	char *str; /* decoded T_STRING / T_WORD text (arena) */
	int tline, tcol;
	bool failed;
};

#define MAX_LIST (1 << 24) /* attribute / data lists */

static void perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void perr(struct parser *ps, const char *fmt, ...)
{
	char where[1024], msg[1024];
	const char *saved = ps->ctx->file;
	va_list ap;
	if (ps->failed)
		return;
	ps->failed = true;
	snprintf(where, sizeof where, "%s:%d:%d", saved ? saved : "<input>", ps->tline, ps->tcol);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ps->ctx->file = where;
	ir_error(ps->ctx, "%s", msg);
	ps->ctx->file = saved;
}

static bool word_char(int c) { return ir_ident_char(c) || c == '+'; }

static void next(struct parser *ps)
{
	const char *p = ps->p;
	for (;;) {
		while (p < ps->end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
			if (*p == '\n') {
				ps->line++;
				ps->line_start = p + 1;
			}
			p++;
		}
		if (p < ps->end && *p == '#') {
			while (p < ps->end && *p != '\n')
				p++;
			continue;
		}
		break;
	}
	ps->tstart = p;
	ps->tline = ps->line;
	ps->tcol = (int)(p - ps->line_start) + 1;
	if (p >= ps->end) {
		ps->tok = T_EOF;
		ps->p = p;
		return;
	}
	if (word_char((unsigned char)*p)) {
		const char *s = p;
		while (p < ps->end && word_char((unsigned char)*p))
			p++;
		ps->tok = T_WORD;
		ps->tlen = (size_t)(p - s);
		ps->str = ir_arena_strndup(&ps->m->arena, s, ps->tlen);
		ps->p = p;
		return;
	}
	if (*p == '"') {
		/* decode into a buffer no longer than the source */
		const char *s = ++p;
		char *out;
		size_t k = 0;
		while (p < ps->end && *p != '"' && *p != '\n')
			p += (*p == '\\' && p + 1 < ps->end) ? 2 : 1;
		if (p >= ps->end || *p != '"') {
			ps->tok = T_EOF;
			perr(ps, "unterminated string");
			return;
		}
		out = ir_arena_alloc(&ps->m->arena, (size_t)(p - s) + 1);
		for (const char *q = s; q < p; q++) {
			if (*q != '\\') {
				out[k++] = *q;
				continue;
			}
			q++;
			if (*q == 'x' && q + 2 < p + 1) {
				char hex[3] = { q[1], q[2], 0 };
				char *e;
				long v = strtol(hex, &e, 16);
				if (*e || v == 0) {
					perr(ps, "bad \\x escape in string");
					break;
				}
				out[k++] = (char)v;
				q += 2;
			} else if (*q == '"' || *q == '\\') {
				out[k++] = *q;
			} else {
				perr(ps, "unknown escape '\\%c' in string", *q);
				break;
			}
		}
		out[k] = 0;
		ps->str = out;
		ps->tlen = k;
		ps->tok = T_STRING;
		ps->p = p + 1;
		return;
	}
	ps->tok = T_PUNCT;
	ps->punct = *p;
	ps->p = p + 1;
}

static bool is_punct(struct parser *ps, char c) { return ps->tok == T_PUNCT && ps->punct == c; }

static bool is_word(struct parser *ps, const char *w)
{
	return ps->tok == T_WORD && strcmp(ps->str, w) == 0;
}

static bool expect(struct parser *ps, char c)
{
	if (!is_punct(ps, c)) {
		perr(ps, "expected '%c'", c);
		return false;
	}
	next(ps);
	return true;
}

static bool expect_word(struct parser *ps, const char *w)
{
	if (!is_word(ps, w)) {
		perr(ps, "expected '%s'", w);
		return false;
	}
	next(ps);
	return true;
}

static bool parse_int(struct parser *ps, int64_t *v)
{
	char *e;
	long long x;
	if (ps->tok != T_WORD) {
		perr(ps, "expected an integer");
		return false;
	}
	errno = 0;
	x = strtoll(ps->str, &e, 10);
	if (*e || errno || e == ps->str) {
		perr(ps, "'%s' is not a 64-bit integer", ps->str);
		return false;
	}
	*v = x;
	next(ps);
	return true;
}

static bool parse_double(struct parser *ps, double *v)
{
	char *e;
	if (ps->tok != T_WORD) {
		perr(ps, "expected a number");
		return false;
	}
	*v = strtod(ps->str, &e);
	if (*e || e == ps->str) {
		perr(ps, "'%s' is not a number", ps->str);
		return false;
	}
	next(ps);
	return true;
}

static bool parse_float(struct parser *ps, float *v)
{
	char *e;
	if (ps->tok != T_WORD) {
		perr(ps, "expected a number");
		return false;
	}
	*v = strtof(ps->str, &e);
	if (*e || e == ps->str) {
		perr(ps, "'%s' is not a number", ps->str);
		return false;
	}
	next(ps);
	return true;
}

/* A name: a bare word or a quoted string. */
static const char *parse_name(struct parser *ps)
{
	const char *s;
	if (ps->tok != T_WORD && ps->tok != T_STRING) {
		perr(ps, "expected a name");
		return NULL;
	}
	if (ps->tok == T_STRING && (ps->tlen == 0 || strlen(ps->str) != ps->tlen)) {
		perr(ps, "names must be non-empty and contain no NUL");
		return NULL;
	}
	s = ps->str;
	next(ps);
	return s;
}

static const char *parse_ref_name(struct parser *ps)
{
	if (!expect(ps, '%'))
		return NULL;
	return parse_name(ps);
}

static struct ir_value *parse_ref(struct parser *ps)
{
	int line = ps->tline, col = ps->tcol;
	const char *name = parse_ref_name(ps);
	struct ir_value *v;
	if (!name)
		return NULL;
	v = ir_find_value(ps->m, name);
	if (!v || v->kind == IR_VAL_DEAD) {
		ps->tline = line;
		ps->tcol = col;
		perr(ps, "undefined value '%%%s'", name);
		return NULL;
	}
	return v;
}

static bool parse_type(struct parser *ps, struct ir_type *t)
{
	memset(t, 0, sizeof *t);
	if (ps->tok != T_WORD || (t->dtype = ir_dtype_from_name(ps->str, ps->tlen)) == IR_DT_NONE) {
		perr(ps, "expected a dtype (f32, f16, bf16, f64, i8..i64, u8..u64, bool)");
		return false;
	}
	next(ps);
	if (!expect(ps, '['))
		return false;
	while (!is_punct(ps, ']')) {
		int64_t d;
		if (t->rank && !expect(ps, ','))
			return false;
		if (t->rank == IR_MAX_RANK) {
			perr(ps, "rank exceeds %d", IR_MAX_RANK);
			return false;
		}
		int line = ps->tline, col = ps->tcol;
		if (!parse_int(ps, &d))
			return false;
		if (d < 0) {
			ps->tline = line;
			ps->tcol = col;
			perr(ps, "negative dimension %lld", (long long)d);
			return false;
		}
		t->dims[t->rank++] = d;
	}
	next(ps);
	if (ir_type_bytes(t) < 0) {
		perr(ps, "the size in bytes overflows 64 bits");
		return false;
	}
	return true;
}

static bool fresh_name(struct parser *ps, const char *name)
{
	if (ir_find_value(ps->m, name)) {
		perr(ps, "value '%%%s' is defined twice", name);
		return false;
	}
	return true;
}

static bool parse_input(struct parser *ps)
{
	struct ir_type t;
	const char *name = parse_ref_name(ps);
	if (!name || !fresh_name(ps, name) || !expect(ps, ':') || !parse_type(ps, &t))
		return false;
	ir_add_input(ps->m, name, &t);
	return true;
}

static bool parse_const(struct parser *ps)
{
	struct ir_type t;
	const char *name = parse_ref_name(ps);
	int64_t n;
	if (!name || !fresh_name(ps, name) || !expect(ps, ':') || !parse_type(ps, &t) ||
	    !expect(ps, '='))
		return false;
	n = ir_type_elems(&t);
	if (is_word(ps, "weight")) {
		char *e;
		unsigned long long sum;
		next(ps);
		if (ps->tok != T_WORD || strncmp(ps->str, "0x", 2) != 0 || ps->tlen != 18) {
			perr(ps, "expected a checksum 0x followed by 16 hex digits");
			return false;
		}
		sum = strtoull(ps->str + 2, &e, 16);
		if (*e) {
			perr(ps, "bad checksum '%s'", ps->str);
			return false;
		}
		next(ps);
		ir_add_const_ref(ps->m, name, &t, sum);
		return true;
	}
	if (!expect(ps, '['))
		return false;
	if (n > MAX_LIST) {
		perr(ps, "inline constant too large");
		return false;
	}
	{
		size_t es = (size_t)ir_dtype_size(t.dtype);
		void *data = ir_arena_alloc(&ps->m->arena, (size_t)n * es + 1);
		int64_t k = 0;
		while (!is_punct(ps, ']')) {
			if (k && !expect(ps, ','))
				return false;
			if (k == n) {
				perr(ps, "more than %lld values for %s constant", (long long)n,
				     ir_dtype_name(t.dtype));
				return false;
			}
			if (t.dtype == IR_F64) {
				if (!parse_double(ps, &((double *)data)[k]))
					return false;
			} else if (ir_dtype_float_valued(t.dtype)) {
				float f;
				if (!parse_float(ps, &f))
					return false;
				ir_store_f64(t.dtype, data, (size_t)k, f);
			} else if (t.dtype == IR_U64) {
				char *e;
				if (ps->tok != T_WORD || ps->str[0] == '-') {
					perr(ps, "expected an unsigned integer");
					return false;
				}
				errno = 0;
				((uint64_t *)data)[k] = strtoull(ps->str, &e, 10);
				if (*e || errno) {
					perr(ps, "'%s' is not a 64-bit unsigned integer", ps->str);
					return false;
				}
				next(ps);
			} else {
				int64_t v;
				if (!parse_int(ps, &v))
					return false;
				ir_store_i64(t.dtype, data, (size_t)k, v);
				if (ir_load_i64(t.dtype, data, (size_t)k) != v) {
					perr(ps, "%lld does not fit %s", (long long)v,
					     ir_dtype_name(t.dtype));
					return false;
				}
			}
			k++;
		}
		next(ps);
		if (k != n) {
			perr(ps, "%lld values for a constant of %lld elements", (long long)k,
			     (long long)n);
			return false;
		}
		ir_add_const(ps->m, name, &t, data);
	}
	return true;
}

static bool parse_list_start(struct parser *ps) { return expect(ps, '['); }

static bool parse_attr_value(struct parser *ps, struct ir_node *n, struct ir_attr *a)
{
	struct ir_module *m = ps->m;
	switch (a->kind) {
	case IR_ATTR_INT: return parse_int(ps, &a->i);
	case IR_ATTR_FLOAT: return parse_float(ps, &a->f);
	case IR_ATTR_STRING:
		if (ps->tok != T_STRING) {
			perr(ps, "attribute %s takes a string", a->name);
			return false;
		}
		ir_set_s(m, n, a->name, ps->str);
		next(ps);
		return true;
	case IR_ATTR_DTYPE:
		if (ps->tok != T_WORD ||
		    (a->t = ir_dtype_from_name(ps->str, ps->tlen)) == IR_DT_NONE) {
			perr(ps, "attribute %s takes a dtype", a->name);
			return false;
		}
		next(ps);
		return true;
	case IR_ATTR_INTS:
	case IR_ATTR_FLOATS: {
		int cap = 8, cnt = 0;
		bool ints = a->kind == IR_ATTR_INTS;
		void *buf = ir_arena_alloc(&m->arena, (size_t)cap * 8);
		if (!parse_list_start(ps))
			return false;
		while (!is_punct(ps, ']')) {
			if (cnt && !expect(ps, ','))
				return false;
			if (cnt == MAX_LIST) {
				perr(ps, "list too long");
				return false;
			}
			if (cnt == cap) {
				void *nb = ir_arena_alloc(&m->arena, (size_t)cap * 2 * 8);
				memcpy(nb, buf, (size_t)cap * 8);
				buf = nb;
				cap *= 2;
			}
			if (ints ? !parse_int(ps, &((int64_t *)buf)[cnt])
			         : !parse_float(ps, &((float *)buf)[cnt]))
				return false;
			cnt++;
		}
		next(ps);
		if (ints)
			ir_set_ints(m, n, a->name, buf, cnt);
		else
			ir_set_floats(m, n, a->name, buf, cnt);
		return true;
	}
	}
	return false;
}

static bool parse_node(struct parser *ps)
{
	struct ir_module *m = ps->m;
	const char *names[256];
	struct ir_type types[256];
	struct ir_value *in[256];
	bool seen[IR_MAX_ATTRS] = { 0 };
	int nout = 0, nin = 0, line, col;
	enum ir_op op;
	struct ir_node *n;
	char err[512];

	for (;;) {
		const char *name = parse_ref_name(ps);
		if (!name || !fresh_name(ps, name))
			return false;
		for (int i = 0; i < nout; i++)
			if (!strcmp(names[i], name)) {
				perr(ps, "value '%%%s' is defined twice", name);
				return false;
			}
		if (nout == 256) {
			perr(ps, "too many results");
			return false;
		}
		names[nout] = name;
		if (!expect(ps, ':') || !parse_type(ps, &types[nout]))
			return false;
		nout++;
		if (!is_punct(ps, ','))
			break;
		next(ps);
	}
	if (!expect(ps, '='))
		return false;
	line = ps->tline;
	col = ps->tcol;
	if (ps->tok != T_WORD || (op = ir_op_from_name(ps->str, ps->tlen)) == IR_OP_COUNT) {
		perr(ps, "unknown op '%s'", ps->tok == T_WORD ? ps->str : "");
		return false;
	}
	next(ps);
	if (!expect(ps, '('))
		return false;
	while (!is_punct(ps, ')')) {
		if (nin && !expect(ps, ','))
			return false;
		if (nin == 256) {
			perr(ps, "too many operands");
			return false;
		}
		if (!(in[nin++] = parse_ref(ps)))
			return false;
	}
	next(ps);
	{
		const struct ir_op_info *oi = &ir_ops[op];
		ps->tline = line;
		ps->tcol = col;
		if (nin < oi->min_in || (oi->max_in >= 0 && nin > oi->max_in)) {
			perr(ps, "%s takes %d to %d operands, not %d", oi->name, oi->min_in,
			     oi->max_in, nin);
			return false;
		}
		if (nout < oi->min_out || (oi->max_out >= 0 && nout > oi->max_out)) {
			perr(ps, "%s has %d to %d results, not %d", oi->name, oi->min_out,
			     oi->max_out, nout);
			return false;
		}
	}
	n = ir_add_node(m, op, NULL, in, nin, names, nout);
	if (is_punct(ps, '{')) {
		next(ps);
		while (!is_punct(ps, '}')) {
			struct ir_attr *a;
			if (ps->tok != T_WORD) {
				perr(ps, "expected an attribute name");
				return false;
			}
			a = ir_attr_get(n, ps->str);
			if (!a) {
				perr(ps, "%s has no attribute '%s'", ir_ops[op].name, ps->str);
				return false;
			}
			if (seen[a - n->attrs]) {
				perr(ps, "attribute '%s' given twice", ps->str);
				return false;
			}
			seen[a - n->attrs] = true;
			next(ps);
			if (!expect(ps, '=') || !parse_attr_value(ps, n, a))
				return false;
			if (!is_punct(ps, '}') && !expect(ps, ','))
				return false;
		}
		next(ps);
	}
	for (int i = 0; i < n->nattrs; i++)
		if (!seen[i]) {
			perr(ps, "%s needs attribute '%s'", ir_ops[op].name, n->attrs[i].name);
			return false;
		}
	if (is_word(ps, "if")) { /* its guard (docs/ir.md, Guards) */
		struct ir_value *g;
		next(ps);
		if (!(g = parse_ref(ps)))
			return false;
		ir_set_guard(m, n, g);
	}
	if (!expect(ps, '@'))
		return false;
	{
		const char *nm = parse_name(ps);
		if (!nm)
			return false;
		n->name = nm;
	}
	ps->tline = line;
	ps->tcol = col;
	if (!ir_infer_node(m, n, err, sizeof err)) {
		perr(ps, "%s: %s", ir_ops[op].name, err);
		return false;
	}
	for (int i = 0; i < nout; i++) {
		char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
		if (!ir_type_eq(&types[i], &n->out[i]->type)) {
			perr(ps, "result '%%%s' is declared %s but %s gives %s", names[i],
			     ir_type_str(&types[i], a, sizeof a), ir_ops[op].name,
			     ir_type_str(&n->out[i]->type, b, sizeof b));
			return false;
		}
	}
	return true;
}

/* shape(%c ? TYPE : TYPE) after the last output (struct ir_out_shape) */
static bool parse_out_shape(struct parser *ps)
{
	struct ir_out_shape sh;
	next(ps);
	if (!expect(ps, '(') || !(sh.cond = parse_ref(ps)) || !expect(ps, '?') ||
	    !parse_type(ps, &sh.then_type) || !expect(ps, ':') || !parse_type(ps, &sh.else_type) ||
	    !expect(ps, ')'))
		return false;
	ir_set_out_shape(ps->m, ps->m->noutputs - 1, &sh);
	return true;
}

static struct ir_module *parse(struct parser *ps)
{
	int64_t version;
	next(ps);
	if (!expect_word(ps, "onnxc-ir") || !parse_int(ps, &version))
		return NULL;
	if (version != 1) {
		perr(ps, "IR text version %lld is not supported (this is version 1)",
		     (long long)version);
		return NULL;
	}
	if (!expect_word(ps, "module"))
		return NULL;
	if (ps->tok != T_STRING) {
		perr(ps, "expected the module name as a string");
		return NULL;
	}
	ps->m->name = ps->str;
	next(ps);
	while (ps->tok != T_EOF && !ps->failed) {
		bool ok;
		if (is_word(ps, "input")) {
			next(ps);
			ok = parse_input(ps);
		} else if (is_word(ps, "const")) {
			next(ps);
			ok = parse_const(ps);
		} else if (is_word(ps, "output")) {
			struct ir_value *v;
			next(ps);
			ok = (v = parse_ref(ps)) != NULL;
			if (ok)
				ir_add_output(ps->m, v);
			if (ok && is_word(ps, "shape"))
				ok = parse_out_shape(ps);
		} else if (is_punct(ps, '%')) {
			ok = parse_node(ps);
		} else {
			perr(ps, "expected input, const, output or a node");
			ok = false;
		}
		if (!ok)
			break;
	}
	if (ps->failed)
		return NULL;
	return ps->m;
}

struct ir_module *ir_parse(struct ir_ctx *ctx, const char *text, size_t len)
{
	struct parser ps = {
		.ctx = ctx, .src = text, .end = text + len, .p = text, .line = 1, .line_start = text
	};
	jmp_buf jb, *saved = ctx->oom;
	struct ir_module *volatile m = NULL;
	int errors = ctx->nerrors;

	if (setjmp(jb)) {
		ctx->oom = saved;
		ir_module_free(m);
		return NULL;
	}
	ctx->oom = &jb;
	m = ir_module_new(ctx, "model");
	ps.m = m;
	if (memchr(text, 0, len)) {
		ps.tline = 1;
		ps.tcol = 1;
		perr(&ps, "input contains a NUL byte (not IR text)");
	} else if (parse(&ps) && ir_verify(m) == 0 && ctx->nerrors == errors) {
		ctx->oom = saved;
		return m;
	}
	ctx->oom = saved;
	ir_module_free(m);
	return NULL;
}
