/* steps.c: a trainer's progress from its output lines or its step file (see steps.h): line
 * splitting, the JSON step file, a user's pattern and the classification of each step; the
 * default rules for output lines are steps_rules.c. */
#include "steps.h"
#include "../lib/json.h"

#include <ctype.h>
#include <math.h>

static bool json_count(const struct json_value *v, uint64_t *out)
{
	if (!v || v->type != JSON_NUMBER || !(v->number >= 0) || v->number > (double)STEP_MAX ||
	    v->number != floor(v->number))
		return false;
	*out = (uint64_t)v->number;
	return true;
}

bool steps_parse_json(const char *line, size_t len, struct step_reading *out)
{
	memset(out, 0, sizeof(*out));
	while (len && isspace((unsigned char)*line))
		line++, len--;
	if (!len || *line != '{')
		return false;
	struct json_value *v = json_parse(line, len, NULL);
	bool ok = v && v->type == JSON_OBJECT && json_count(json_get(v, "step"), &out->step);
	if (ok) {
		const struct json_value *loss = json_get(v, "loss");
		if (loss && loss->type == JSON_NUMBER && isfinite(loss->number)) {
			out->has_loss = true;
			out->loss = loss->number;
		}
		out->has_tokens = json_count(json_get(v, "tokens"), &out->tokens);
		out->has_total = json_count(json_get(v, "total"), &out->total) &&
				 out->total >= out->step;
	}
	json_free(v);
	return ok;
}

static void parser_init(struct step_parser *p, enum step_source source)
{
	memset(p, 0, sizeof(*p));
	p->source = source;
	strbuf_init(&p->line, STEP_LINE_MAX);
}

int step_parser_init_output(struct step_parser *p, const char *pattern, struct strbuf *err)
{
	parser_init(p, STEP_SOURCE_OUTPUT);
	if (!pattern || !*pattern)
		return 0;
	int rc = regcomp(&p->re, pattern, REG_EXTENDED);
	if (rc) {
		char why[256];
		regerror(rc, &p->re, why, sizeof(why));
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, pattern, 200);
		error_set(err, "invalid --step-pattern '%s': %s", q.buf, why);
		strbuf_release(&q);
		step_parser_release(p);
		return -1;
	}
	p->have_re = true;
	if (p->re.re_nsub < 1) {
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, pattern, 200);
		error_set(err, "invalid --step-pattern '%s': it has no capture group for the step",
			  q.buf);
		strbuf_release(&q);
		step_parser_release(p);
		return -1;
	}
	return 0;
}

void step_parser_init_json(struct step_parser *p)
{
	parser_init(p, STEP_SOURCE_JSON);
}

void step_parser_release(struct step_parser *p)
{
	if (p->have_re)
		regfree(&p->re);
	p->have_re = false;
	strbuf_release(&p->line);
}

/* The user's pattern: its first group must hold a whole step number and nothing else. */
static bool match_user(struct step_parser *p, const char *line, size_t len,
		       struct step_reading *out)
{
	regmatch_t m[2];
	memset(out, 0, sizeof(*out));
	if (regexec(&p->re, line, 2, m, 0) || m[1].rm_so < 0 || m[1].rm_eo <= m[1].rm_so)
		return false;
	size_t i = (size_t)m[1].rm_so, end = (size_t)m[1].rm_eo;
	uint64_t v = 0;
	for (; i < end; i++) {
		if (!isdigit((unsigned char)line[i]) || v > STEP_MAX / 10)
			return false;
		v = v * 10 + (uint64_t)(line[i] - '0');
	}
	if (v > STEP_MAX)
		return false;
	out->step = v;
	steps_read_values(line, len, out);
	return true;
}

static enum step_change classify(struct step_parser *p, uint64_t step, uint64_t *prev)
{
	enum step_change c;
	*prev = p->have_last ? p->last : 0;
	if (!p->have_last) {
		c = STEP_FIRST;
	} else if (step == p->last) {
		c = STEP_SAME;
	} else if (step < p->last) {
		c = STEP_BACKWARDS;
	} else {
		uint64_t delta = step - p->last;
		if (p->stride && delta > STEP_JUMP_FACTOR * p->stride) {
			c = STEP_JUMP;
		} else {
			c = STEP_NEXT;
			if (!p->stride || delta < p->stride)
				p->stride = delta;
		}
	}
	p->have_last = true;
	p->last = step;
	return c;
}

/* Judge one finished line, buf[0..len) (the kept line, or the caller's bytes themselves). */
static void end_line(struct step_parser *p, const char *buf, size_t len, step_fn fn, void *arg)
{
	struct step_update u;
	bool found;
	memset(&u, 0, sizeof(u));
	p->lines++;
	u.line_no = p->newlines + 1;
	u.truncated_line = p->overlong;
	if (p->overlong)
		p->overlong_lines++;
	if (p->source == STEP_SOURCE_JSON)
		found = steps_parse_json(buf, len, &u.r);
	else if (p->have_re)
		found = match_user(p, buf, len, &u.r);
	else
		found = steps_match_default(buf, len, &u.r);
	if (found && u.r.bar_total) {
		/* the training loop's bar is the first with a step; an eval bar between its
		 * redraws counts something else (HF Trainer's eval bar has no description) */
		if (!p->bar_total) {
			p->bar_total = u.r.bar_total;
		} else if (u.r.bar_total != p->bar_total) {
			p->other_bars++;
			found = false;
		}
	}
	if (found && p->want_meta)
		steps_line_meta(buf, len, &u.meta);
	if (!found && p->source == STEP_SOURCE_JSON) {
		for (size_t i = 0; i < len; i++)
			if (!isspace((unsigned char)buf[i])) {
				p->bad_lines++;
				break;
			}
	}
	strbuf_reset(&p->line);
	p->line.truncated = false;
	p->overlong = false;
	if (!found)
		return;
	p->steps++;
	u.change = classify(p, u.r.step, &u.prev);
	if (u.change == STEP_BACKWARDS)
		p->backwards++;
	else if (u.change == STEP_JUMP)
		p->jumps++;
	if (fn)
		fn(arg, &u);
}

void step_parser_feed(struct step_parser *p, const char *data, size_t len, step_fn fn, void *arg)
{
	/* the next '\n' is looked up once per call, not once per '\r' of a bar's redraws */
	const char *nl = memchr(data, '\n', len);
	while (len) {
		if (nl && nl < data)
			nl = memchr(data, '\n', len);
		size_t lim = nl ? (size_t)(nl - data) : len;
		const char *cr = memchr(data, '\r', lim);
		size_t n = cr ? (size_t)(cr - data) : lim;
		if (n < len && !p->line.len && !p->overlong && n <= STEP_LINE_MAX && !p->have_re &&
		    !memchr(data, '\0', n)) {
			/* the whole line is here and plain: judged in place, no copy (regexec
			 * wants a terminated string: a user's pattern takes the copy below) */
			if (n)
				end_line(p, data, n, fn, arg);
		} else {
			size_t room = STEP_LINE_MAX - p->line.len;
			size_t keep = n < room ? n : room;
			if (n > room)
				p->overlong = true;
			if (keep) {
				size_t at = p->line.len;
				strbuf_add(&p->line, data, keep);
				/* regexec and the scanners see NUL bytes as ordinary text */
				for (char *z = memchr(p->line.buf + at, '\0', keep); z;
				     z = memchr(z, '\0', (size_t)(p->line.buf + p->line.len - z)))
					*z = ' ';
			}
			if (n == len) {
				if (n)
					p->mid_line = true;
				return; /* the line goes on in the next chunk */
			}
			if (p->line.len || p->overlong)
				end_line(p, p->line.buf, p->line.len, fn, arg);
		}
		if (data[n] == '\n') {
			p->newlines++;
			p->mid_line = false;
		} else {
			p->mid_line = true;
		}
		data += n + 1;
		len -= n + 1;
	}
}

void step_parser_finish(struct step_parser *p, step_fn fn, void *arg)
{
	if (p->line.len || p->overlong)
		end_line(p, p->line.buf, p->line.len, fn, arg);
}

const char *step_change_name(enum step_change c)
{
	switch (c) {
	case STEP_FIRST:
		return "first";
	case STEP_NEXT:
		return "next";
	case STEP_SAME:
		return "same";
	case STEP_BACKWARDS:
		return "backwards";
	case STEP_JUMP:
		return "jump";
	}
	return "?";
}
