/* evidence_stack.c: a rank's stack text, Python or native, into the signature the judge groups
 * by (see evidence.h). Bounded: STACK_MAX bytes, MAX_FRAMES frames, MAX_THREADS threads. */
#include "evidence_int.h"
#include "../lib/json.h"

#include <math.h>
#include <stdarg.h>

/* ---- stack normalisation ---- */

struct thread {
	struct strlist frames; /* "FILE in FUNC", innermost first */
	bool current;
	long tid;
};

static void threads_free(struct thread *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strlist_release(&t[i].frames);
	free(t);
}

/* The lines of text (its first STACK_MAX bytes), each passed to fn with its length. */
static void each_line(const char *text, void (*fn)(const char *l, size_t n, void *arg), void *arg)
{
	size_t len = strnlen(text, STACK_MAX);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		fn(text + i, n, arg);
		i += n + 1;
	}
}

struct parse {
	struct thread *t;
	size_t nr, alloc;
	bool lines; /* the innermost Python frame with its line: "FILE:LINE in FUNC" */
};

static struct thread *new_thread(struct parse *p)
{
	if (p->nr >= MAX_THREADS)
		return NULL;
	ALLOC_GROW(p->t, p->nr + 1, p->alloc);
	memset(&p->t[p->nr], 0, sizeof(p->t[0]));
	p->t[p->nr].tid = -1;
	return &p->t[p->nr++];
}

static void add_frame(struct parse *p, const char *s, size_t n)
{
	if (!p->nr && !new_thread(p))
		return;
	struct thread *t = &p->t[p->nr - 1];
	if (t->frames.nr >= MAX_FRAMES)
		return;
	char *raw = xstrndup(s, n < FRAME_MAX ? n : FRAME_MAX);
	strlist_add_nodup(&t->frames, evidence_clean_dup(raw, FRAME_MAX));
	free(raw);
}

static bool line_starts(const char *l, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(l, prefix, k);
}

/* faulthandler: "Thread 0x..", "Current thread 0x.." or "Stack (most recent call first):"
 * start a thread; '  File "F", line N in FUNC' is a frame. */
static void py_line(const char *l, size_t n, void *arg)
{
	struct parse *p = arg;
	while (n && (l[n - 1] == '\r' || l[n - 1] == ' '))
		n--;
	if (line_starts(l, n, "Thread 0x") || line_starts(l, n, "Current thread 0x") ||
	    line_starts(l, n, "Stack (most recent call first)")) {
		struct thread *t = new_thread(p);
		if (t)
			t->current = line_starts(l, n, "Current thread");
		return;
	}
	while (n && *l == ' ') {
		l++;
		n--;
	}
	if (line_starts(l, n, "File \"")) {
		const char *f = l + 6, *end = l + n;
		const char *q = NULL;
		/* the last '", line ' (a file name may hold quotes) */
		for (const char *s = f; s + 8 <= end; s++)
			if (!memcmp(s, "\", line ", 8))
				q = s;
		if (!q)
			return;
		const char *in = NULL;
		for (const char *s = q + 8; s + 4 <= end; s++)
			if (!memcmp(s, " in ", 4)) {
				in = s + 4;
				break;
			}
		struct strbuf fr = STRBUF_INIT;
		strbuf_add(&fr, f, (size_t)(q - f));
		/* faulthandler lists the most recent call first: the thread's first frame is the
		 * innermost one */
		bool first = !p->nr || !p->t[p->nr - 1].frames.nr;
		if (p->lines && first) {
			const char *d = q + 8;
			size_t k = 0;
			while (d + k < end && k < 10 && d[k] >= '0' && d[k] <= '9')
				k++;
			if (k) {
				strbuf_addch(&fr, ':');
				strbuf_add(&fr, d, k);
			}
		}
		strbuf_addstr(&fr, " in ");
		if (in)
			strbuf_add(&fr, in, (size_t)(end - in));
		else
			strbuf_addstr(&fr, "??");
		add_frame(p, fr.buf, fr.len);
		strbuf_release(&fr);
	} else if (line_starts(l, n, "<no Python frame>")) {
		add_frame(p, l, n);
	}
}

/* eu-stack: "TID N:" starts a thread; "#K 0xADDR NAME[ - MODULE]" is a frame. */
static void native_line(const char *l, size_t n, void *arg)
{
	struct parse *p = arg;
	while (n && (l[n - 1] == '\r' || l[n - 1] == ' '))
		n--;
	if (line_starts(l, n, "TID ")) {
		struct thread *t = new_thread(p);
		char num[24];
		size_t k = 0;
		for (size_t i = 4; i < n && k < sizeof(num) - 1 && l[i] >= '0' && l[i] <= '9'; i++)
			num[k++] = l[i];
		num[k] = '\0';
		if (t && k)
			t->tid = strtol(num, NULL, 10);
		return;
	}
	if (!line_starts(l, n, "#"))
		return;
	size_t i = 1;
	while (i < n && l[i] >= '0' && l[i] <= '9')
		i++;
	while (i < n && l[i] == ' ')
		i++;
	while (i < n && l[i] != ' ') /* the address */
		i++;
	while (i < n && l[i] == ' ')
		i++;
	size_t s = i;
	while (i < n && l[i] != ' ' && l[i] != '@')
		i++;
	if (i > s)
		add_frame(p, l + s, i - s);
	else
		add_frame(p, "??", 2);
}

static bool bottom_is_module(const struct thread *t)
{
	return t->frames.nr && ends_with(t->frames.items[t->frames.nr - 1], " in <module>");
}

/* The main thread's frames (see evidence.h for the rule), or NULL when there are none. */
static const struct thread *main_thread(const struct parse *p, bool native, long pid)
{
	const struct thread *pick = NULL;
	if (native) {
		for (size_t i = 0; i < p->nr; i++)
			if (p->t[i].tid == pid)
				return &p->t[i];
		return p->nr ? &p->t[0] : NULL;
	}
	for (size_t i = 0; i < p->nr; i++)
		if (bottom_is_module(&p->t[i]) && (!pick || (p->t[i].current && !pick->current)))
			pick = &p->t[i];
	for (size_t i = 0; !pick && i < p->nr; i++)
		if (p->t[i].current)
			pick = &p->t[i];
	if (!pick && p->nr)
		pick = &p->t[0];
	return pick;
}

/* signature and top of a stack text; false when it holds no frame */
bool evidence_normalise(const char *text, bool native, bool innermost_line, long pid, char **sig,
			char **top)
{
	struct parse p = { NULL, 0, 0, innermost_line };
	struct strbuf s = STRBUF_INIT;
	each_line(text, native ? native_line : py_line, &p);
	const struct thread *t = main_thread(&p, native, pid);
	bool ok = t && t->frames.nr;
	if (ok) {
		for (size_t i = 0; i < t->frames.nr; i++) {
			strbuf_addstr(&s, t->frames.items[i]);
			strbuf_addch(&s, '\n');
		}
		*sig = strbuf_detach(&s, NULL);
		const char *f = t->frames.items[0];
		const char *in = strstr(f, " in ");
		struct strbuf tp = STRBUF_INIT;
		if (!native && in) {
			const char *base = memrchr(f, '/', (size_t)(in - f));
			base = base ? base + 1 : f;
			strbuf_addf(&tp, "%s (", in + 4);
			strbuf_add(&tp, base, (size_t)(in - base));
			strbuf_addch(&tp, ')');
		} else {
			strbuf_addstr(&tp, f);
		}
		*top = strbuf_detach(&tp, NULL);
	}
	threads_free(p.t, p.nr);
	strbuf_release(&s);
	return ok;
}
