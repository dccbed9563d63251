/*
 * amp_plan.c - the precision plan file (docs/precision.md#precision-plan):
 * every decided node's precision, the rule that decided it and why, one
 * line each, written after the amp pass and read back with
 * --precision-plan FILE, which pins each node it names. A plan read back
 * reproduces the build without calibration data; a user may edit it.
 *
 *   # comment
 *   NODE<TAB>fp32|fp16|bf16[<TAB>RULE[<TAB>REASON]]
 *
 * A backslash escapes a tab (\t), a newline (\n), a carriage return (\r)
 * or itself (\\) in a node name, and a # that starts one (\#). Node names
 * need not be unique: the lines come in graph order, and the j-th line for
 * a name is the j-th node of that name.
 */
#include "amp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_escaped(FILE *f, const char *s)
{
	if (*s == '#') /* not a comment */
		fputc('\\', f);
	for (; *s; s++)
		switch (*s) {
		case '\t': fputs("\\t", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\\': fputs("\\\\", f); break;
		default: fputc(*s, f);
		}
}

static const char *prec_name(const struct amp_node *a)
{
	if (a->prec != AMP_HALF)
		return "fp32";
	return a->half == IR_BF16 ? "bf16" : "fp16";
}

bool amp_write_plan(struct ir_ctx *ctx, const struct ir_module *m, const struct amp_result *r,
                    const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		ir_error(ctx, "cannot write the precision plan %s: %s", path, strerror(errno));
		return false;
	}
	fprintf(f, "# onnxc precision plan for %s: NODE<TAB>PRECISION<TAB>RULE<TAB>REASON\n",
	        m->name);
	fprintf(f, "# read back with --precision-plan; rules: class cost range budget user "
	           "plan\n");
	for (const struct ir_node *n = m->first; n; n = n->next) {
		const struct amp_node *a = n->id < r->nids ? &r->nodes[n->id] : NULL;
		if (!a || !a->paintable)
			continue;
		put_escaped(f, n->name);
		fprintf(f, "\t%s\t%s\t", prec_name(a), amp_rule_name(a->rule));
		put_escaped(f, a->reason);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		ir_error(ctx, "cannot write the precision plan %s", path);
		return false;
	}
	return true;
}

/* Undoes put_escaped in place; false on a bad escape. */
static bool unescape(char *s)
{
	char *w = s;
	for (; *s; s++) {
		if (*s != '\\') {
			*w++ = *s;
			continue;
		}
		switch (*++s) {
		case 't': *w++ = '\t'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case '\\': *w++ = '\\'; break;
		case '#': *w++ = '#'; break;
		default: return false;
		}
	}
	*w = 0;
	return true;
}

bool amp_read_plan(struct ir_ctx *ctx, struct ir_arena *ar, const char *path, struct amp_pin **pins,
                   int *npins)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, n = 0, size = 0, errors = ctx->nerrors;
	struct amp_pin *p = NULL;
	if (!f) {
		ir_error(ctx, "cannot read --precision-plan %s: %s", path, strerror(errno));
		return false;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *name = line, *prec, *rule, *why = NULL, *end;
		enum ir_dtype dt;
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len || line[0] == '#')
			continue;
		if (!(prec = strchr(name, '\t'))) {
			ir_error(ctx, "%s:%d: expected NODE<TAB>PRECISION", path, lineno);
			continue;
		}
		*prec++ = 0;
		if ((rule = strchr(prec, '\t'))) {
			*rule++ = 0;
			if ((end = strchr(rule, '\t'))) {
				*end = 0;
				why = end + 1;
			}
		}
		if (!strcmp(prec, "fp32"))
			dt = IR_F32;
		else if (!strcmp(prec, "fp16"))
			dt = IR_F16;
		else if (!strcmp(prec, "bf16"))
			dt = IR_BF16;
		else {
			ir_error(ctx, "%s:%d: precision '%s' is not fp32, fp16 or bf16", path,
			         lineno, prec);
			continue;
		}
		if (why && !unescape(why))
			why = NULL; /* a reason is only shown */
		if (!*name || !unescape(name)) {
			ir_error(ctx,
			         "%s:%d: bad node name (an empty name, or a backslash not "
			         "followed by t, n, r, # or a backslash)",
			         path, lineno);
			continue;
		}
		if (n == size) {
			struct amp_pin *q;
			size = size ? 2 * size : 64;
			q = ir_arena_alloc(ar, sizeof *q * (size_t)size);
			if (n)
				memcpy(q, p, sizeof *q * (size_t)n);
			p = q;
		}
		p[n].node = ir_arena_strdup(ar, name);
		p[n].dtype = dt;
		p[n].why = rule ? ir_arena_printf(ar, "%s%s%.60s", rule, why ? ", " : "",
		                                  why ? why : "")
		                : NULL;
		n++;
	}
	free(line);
	fclose(f);
	*pins = p;
	*npins = n;
	return ctx->nerrors == errors;
}
