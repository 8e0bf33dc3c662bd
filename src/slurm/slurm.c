/*
 * slurm.c: scontrol and sinfo from an argv with a deadline, and the parser of their output (see
 * slurm.h). Nothing here goes through a shell: a reason is one argv element "Reason=...", which
 * scontrol takes as it is.
 */
#include "slurm.h"
#include "../lib/run.h"

#include <ctype.h>

static const struct {
	const char *name;
	unsigned flag;
} state_words[] = {
	{ "IDLE", NODE_IDLE },
	{ "ALLOCATED", NODE_ALLOCATED },
	{ "ALLOC", NODE_ALLOCATED },
	{ "MIXED", NODE_MIXED },
	{ "DOWN", NODE_DOWN },
	{ "DRAIN", NODE_DRAIN },
	{ "DRAINED", NODE_DRAIN },
	{ "DRAINING", NODE_DRAIN },
	{ "NOT_RESPONDING", NODE_NOT_RESPONDING },
	{ "MAINTENANCE", NODE_MAINT },
	{ "MAINT", NODE_MAINT },
	{ "REBOOT_REQUESTED", NODE_REBOOT },
	{ "REBOOT_ISSUED", NODE_REBOOT },
	{ "REBOOT", NODE_REBOOT },
	{ "POWERED_DOWN", NODE_POWER },
	{ "POWERING_DOWN", NODE_POWER },
	{ "POWER_DOWN", NODE_POWER },
	{ "POWERING_UP", NODE_POWER },
	{ "POWER_UP", NODE_POWER },
	{ "FUTURE", NODE_FUTURE },
	{ "FAIL", NODE_FAIL },
	{ "FAILING", NODE_FAIL },
	{ "UNKNOWN", NODE_UNKNOWN },
	{ "COMPLETING", NODE_COMPLETING },
	/* Flags that change nothing for vigil. */
	{ "RESERVED", 0 },
	{ "CLOUD", 0 },
	{ "PLANNED", 0 },
	{ "DYNAMIC_FUTURE", NODE_FUTURE },
	{ "DYNAMIC_NORM", 0 },
	{ "INVALID_REG", NODE_UNKNOWN },
	{ "RESUME", 0 },
	{ "UNDRAIN", 0 },
};

unsigned slurm_state_flags(const char *state)
{
	unsigned flags = 0;
	const char *p = state;
	while (p && *p) {
		size_t len = strcspn(p, "+");
		char word[32];
		if (len >= sizeof(word)) {
			flags |= NODE_OTHER;
		} else {
			memcpy(word, p, len);
			word[len] = '\0';
			size_t wl = len;
			/* sinfo-style suffixes: '*' not responding, '~' powered off, '#' '%' '!'
			 * powering, '@' reboot pending, '$' maintenance */
			while (wl && strchr("*~#%!@^$-", word[wl - 1])) {
				switch (word[wl - 1]) {
				case '*': flags |= NODE_NOT_RESPONDING; break;
				case '~': case '#': case '%': case '!': flags |= NODE_POWER; break;
				case '@': case '^': flags |= NODE_REBOOT; break;
				case '$': flags |= NODE_MAINT; break;
				default: break;
				}
				word[--wl] = '\0';
			}
			bool known = false;
			for (size_t i = 0; i < ARRAY_SIZE(state_words); i++) {
				if (!strcasecmp(word, state_words[i].name)) {
					flags |= state_words[i].flag;
					known = true;
					break;
				}
			}
			if (!known && wl)
				flags |= NODE_OTHER;
		}
		p += len;
		if (*p == '+')
			p++;
	}
	return flags;
}

const char *slurm_state_short(unsigned f)
{
	if (f & NODE_POWER)
		return "powered-off";
	if (f & NODE_REBOOT)
		return "reboot";
	if (f & NODE_MAINT)
		return "maint";
	if (f & NODE_FUTURE)
		return "future";
	if (f & NODE_FAIL)
		return "fail";
	if (f & NODE_DOWN)
		return f & NODE_NOT_RESPONDING ? "down*" : "down";
	if (f & NODE_DRAIN) {
		bool busy = f & (NODE_ALLOCATED | NODE_MIXED | NODE_COMPLETING);
		return f & NODE_NOT_RESPONDING ? "drain*" : busy ? "draining" : "drained";
	}
	if (f & NODE_NOT_RESPONDING)
		return "unresponsive";
	if (f & NODE_UNKNOWN)
		return "unknown";
	if (f & NODE_ALLOCATED)
		return "allocated";
	if (f & NODE_MIXED)
		return "mixed";
	if (f & NODE_COMPLETING)
		return "completing";
	if (f & NODE_IDLE)
		return "idle";
	return "other";
}

bool slurm_node_name_ok(const char *name)
{
	size_t n = 0;
	if (!name || !*name || *name == '-' || *name == '.')
		return false;
	for (const char *p = name; *p; p++, n++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return n <= 64;
}

void slurm_node_release(struct slurm_node *n)
{
	free(n->name);
	free(n->state);
	free(n->reason);
	free(n->partitions);
	free(n->addr);
	memset(n, 0, sizeof(*n));
}

void slurm_nodes_release(struct slurm_nodes *l)
{
	for (size_t i = 0; i < l->nr; i++)
		slurm_node_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* Value of " KEY=" within [line, end): up to the next space. NULL if absent. */
static char *field(const char *line, const char *end, const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = line; p + klen <= end; p++) {
		if ((p == line || p[-1] == ' ') && !strncmp(p, key, klen)) {
			const char *v = p + klen, *e = v;
			while (e < end && *e != ' ')
				e++;
			return xstrndup(v, (size_t)(e - v));
		}
	}
	return NULL;
}

/* Does s (at most end) start with "[user@date]"? Returns the length or 0. */
static size_t stamp_len(const char *s, const char *end)
{
	if (s >= end || *s != '[')
		return 0;
	const char *at = NULL, *p = s + 1;
	for (; p < end && *p != ']'; p++) {
		if (*p == ' ' || *p == '[')
			return 0;
		if (*p == '@')
			at = p;
	}
	if (p >= end || !at || at == s + 1 || !isdigit((unsigned char)at[1]))
		return 0;
	return (size_t)(p - s) + 1;
}

/* "Reason=text [user@time]": the text, without the stamp Slurm appends. "" when absent. */
static char *reason_field(const char *line, const char *end)
{
	static const char key[] = "Reason=";
	const char *v = NULL;
	for (const char *p = line; p + sizeof(key) - 1 <= end; p++)
		if ((p == line || p[-1] == ' ') && !strncmp(p, key, sizeof(key) - 1)) {
			v = p + sizeof(key) - 1;
			break;
		}
	if (!v)
		return xstrdup("");
	const char *e = v;
	for (; e < end; e++)
		if (*e == ' ' && stamp_len(e + 1, end))
			break;
	if (e == end && stamp_len(v, end))
		e = v; /* an empty reason with a stamp */
	char *r = xstrndup(v, (size_t)(e - v));
	if (!strcmp(r, "(null)") || !strcmp(r, "none"))
		r[0] = '\0';
	return r;
}

/*
 * scontrol's text is Slurm's, but a reason is anyone's with scontrol update rights and a name or
 * state may carry what a broken slurmctld sent: every field is cleaned once here (control bytes
 * "\xNN", bidi controls "<U+XXXX>", strbuf.h), so no consumer (check's stderr, fleet's table,
 * syslog) shows it raw. vigil's own reasons are clean already, so comparing them still works.
 */
static char *cleaned(char *s)
{
	if (!s || str_is_clean(s))
		return s;
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_clean(&sb, s);
	free(s);
	return strbuf_detach(&sb, NULL);
}

/* What went wrong, quoted: at most max bytes, cleaned, never cut inside an escape. */
static int error_quoting(struct strbuf *err, const char *fmt, const char *s, size_t len,
			 size_t max)
{
	char *copy = xstrndup(s, len);
	struct strbuf q = STRBUF_INIT;
	strbuf_add_excerpt(&q, copy, max);
	error_set(err, fmt, q.buf);
	strbuf_release(&q);
	free(copy);
	return -1;
}

int slurm_parse_nodes(const char *text, struct slurm_nodes *out, struct strbuf *err)
{
	const char *p = text;
	while (*p) {
		/* A node starts at "NodeName=" at the start of a line and ends at the next one, so a
		 * reason with a newline in it stays with its node. */
		const char *start = p;
		const char *end = p;
		for (;;) {
			const char *nl = strchr(end, '\n');
			if (!nl) {
				end += strlen(end);
				break;
			}
			if (starts_with(nl + 1, "NodeName=") || !nl[1]) {
				end = nl;
				break;
			}
			end = nl + 1;
		}
		p = *end ? end + 1 : end;
		while (start < end && isspace((unsigned char)*start))
			start++;
		if (start == end)
			continue;
		char *name = field(start, end, "NodeName=");
		if (!name)
			return error_quoting(err, "unexpected scontrol output: '%s'", start,
					     (size_t)(end - start), 60);
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		struct slurm_node *n = &out->items[out->nr++];
		memset(n, 0, sizeof(*n));
		n->name = cleaned(name);
		n->state = cleaned(field(start, end, "State="));
		if (!n->state)
			n->state = xstrdup("UNKNOWN");
		n->flags = slurm_state_flags(n->state);
		n->reason = cleaned(reason_field(start, end));
		n->partitions = cleaned(field(start, end, "Partitions="));
		n->addr = cleaned(field(start, end, "NodeAddr="));
		if (!n->partitions)
			n->partitions = xstrdup("");
		if (!n->addr)
			n->addr = xstrdup("");
	}
	return 0;
}

int slurm_cmds_from_config(const struct config *cfg, struct slurm_cmds *c, struct strbuf *err)
{
	double t;
	memset(c, 0, sizeof(*c)); /* no budget unless the caller sets one */
	c->scontrol = config_get(cfg, "slurm", "scontrol");
	c->sinfo = config_get(cfg, "slurm", "sinfo");
	c->srun = config_get(cfg, "slurm", "srun");
	if (!c->scontrol)
		c->scontrol = "scontrol";
	if (!c->sinfo)
		c->sinfo = "sinfo";
	if (!c->srun)
		c->srun = "srun";
	if (config_get_double(cfg, "slurm", "timeout", 10, &t, err) < 0)
		return -1;
	if (t <= 0 || t > 600)
		return error_set(err, "slurm.timeout wants seconds between 0 and 600, not %g", t);
	c->timeout_ms = (unsigned)(t * 1000);
	return 0;
}

/* Run a Slurm command; 0 with its stdout in *out, or -1 with why (its stderr, or the deadline). */
static int slurm_run(const struct slurm_cmds *c, const char *const *argv, struct strbuf *out,
		     struct strbuf *err)
{
	struct child ch;
	struct strbuf why = STRBUF_INIT, bound = STRBUF_INIT;
	int ret = -1;
	child_init(&ch);
	ch.argv = argv;
	ch.timeout_ms = c->timeout_ms;
	strbuf_addf(&bound, "slurm.timeout %g", c->timeout_ms / 1000.0);
	if (c->deadline_ms) {
		uint64_t now = mono_ms();
		const char *budget = c->budget_name ? c->budget_name : "the run's time limit";
		if (now >= c->deadline_ms) {
			error_set(err, "'%s %s' not run: no time left within %s", argv[0], argv[1],
				  budget);
			goto out;
		}
		if (c->deadline_ms - now < c->timeout_ms) {
			ch.timeout_ms = (unsigned)(c->deadline_ms - now);
			strbuf_reset(&bound);
			strbuf_addf(&bound, "what was left of %s", budget);
		}
	}
	ch.timeout_name = bound.buf;
	ch.out_cap = 4u << 20;
	if (child_run(&ch, &why) < 0) {
		error_set(err, "%s", why.buf);
		goto out;
	}
	if (!ch.exited || ch.exit_code) {
		strbuf_trim(&ch.err);
		/* The first line of what the command said is the cause. */
		char *nl = strchr(ch.err.buf, '\n');
		if (nl)
			strbuf_setlen(&ch.err, (size_t)(nl - ch.err.buf));
		child_describe(&ch, &why);
		/* its words are quoted, never passed raw: escape sequences, bidi controls */
		struct strbuf said = STRBUF_INIT;
		strbuf_add_excerpt(&said, ch.err.buf, 300);
		error_set(err, "'%s %s' %s%s%s", argv[0], argv[1], why.buf, said.len ? ": " : "",
			  said.buf);
		strbuf_release(&said);
		goto out;
	}
	if (out) {
		strbuf_reset(out);
		strbuf_add(out, ch.out.buf, ch.out.len);
	}
	ret = 0;
out:
	child_release(&ch);
	strbuf_release(&why);
	strbuf_release(&bound);
	return ret;
}

int slurm_nodes_list(const struct slurm_cmds *c, const char *hostlist, struct slurm_nodes *out,
		     struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	const char *argv[] = { c->scontrol, "-o", "show", "node", hostlist, NULL };
	int ret = -1;
	if (slurm_run(c, argv, &text, err) < 0)
		goto out;
	ret = slurm_parse_nodes(text.buf, out, err);
out:
	strbuf_release(&text);
	return ret;
}

int slurm_topology(const struct slurm_cmds *c, struct strbuf *out, struct strbuf *err)
{
	const char *argv[] = { c->scontrol, "show", "topology", NULL };
	return slurm_run(c, argv, out, err);
}

int slurm_node_get(const struct slurm_cmds *c, const char *name, struct slurm_node *out,
		   struct strbuf *err)
{
	struct slurm_nodes l = { 0 };
	int ret = -1;
	if (!slurm_node_name_ok(name))
		return error_quoting(err, "refusing node name '%s' (not a plain Slurm node name)",
				     name, strlen(name), 80);
	if (slurm_nodes_list(c, name, &l, err) < 0)
		goto out;
	for (size_t i = 0; i < l.nr; i++) {
		if (!strcmp(l.items[i].name, name)) {
			*out = l.items[i];
			memset(&l.items[i], 0, sizeof(l.items[i]));
			ret = 0;
			goto out;
		}
	}
	error_set(err, "scontrol does not know node '%s'", name);
out:
	slurm_nodes_release(&l);
	return ret;
}

int slurm_apply(const struct slurm_cmds *c, const char *name, const struct slurm_decision *d,
		struct strbuf *err)
{
	struct strbuf node = STRBUF_INIT, reason = STRBUF_INIT;
	int ret = 0;
	if (d->act == SLURM_ACT_NOTHING)
		return 0;
	if (!slurm_node_name_ok(name))
		return error_quoting(err, "refusing node name '%s' (not a plain Slurm node name)",
				     name, strlen(name), 80);
	strbuf_addf(&node, "NodeName=%s", name);
	if (d->act == SLURM_ACT_DRAIN) {
		strbuf_addf(&reason, "Reason=%s", d->reason);
		const char *argv[] = { c->scontrol, "update", node.buf, "State=DRAIN", reason.buf,
				       NULL };
		ret = slurm_run(c, argv, NULL, err);
	} else {
		const char *argv[] = { c->scontrol, "update", node.buf, "State=RESUME", NULL };
		ret = slurm_run(c, argv, NULL, err);
	}
	strbuf_release(&node);
	strbuf_release(&reason);
	return ret;
}
