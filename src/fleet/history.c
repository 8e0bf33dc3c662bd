/*
 * history.c: the fleet's fault events (history.h): the node table, adding and merging events,
 * the time window, times as text, and the agent's history.json of every node.
 */
#include "history.h"
#include "../agent/history.h"
#include "../lib/fileio.h"
#include "../lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

static const char *node_at(const void *arr, size_t i)
{
	return ((char *const *)arr)[i];
}

void fleet_history_release(struct fleet_history *h)
{
	for (size_t i = 0; i < h->nr_nodes; i++)
		free(h->nodes[i]);
	free(h->nodes);
	strindex_release(&h->node_index);
	for (size_t i = 0; i < h->nr; i++)
		free(h->ev[i].what);
	free(h->ev);
	memset(h, 0, sizeof(*h));
}

size_t fleet_history_node(struct fleet_history *h, const char *name)
{
	size_t i = strindex_find(&h->node_index, name, h->nodes, node_at);
	if (i != (size_t)-1)
		return i;
	if (h->nr_nodes >= FLEET_NODES_MAX)
		return FLEET_NO_NODE;
	ALLOC_GROW(h->nodes, h->nr_nodes + 1, h->alloc_nodes);
	/* names reach terminals and JSON: cleaned once here */
	struct strbuf clean = STRBUF_INIT;
	strbuf_add_clean(&clean, name);
	h->nodes[h->nr_nodes] = strbuf_detach(&clean, NULL);
	strindex_add(&h->node_index, name, h->nr_nodes, h->nodes, node_at);
	return h->nr_nodes++;
}

void fleet_history_saw(struct fleet_history *h, double t)
{
	if (!(t > 0) || !isfinite(t))
		return;
	if (!h->t_min || t < h->t_min)
		h->t_min = t;
	if (t > h->t_max)
		h->t_max = t;
}

int fleet_history_add(struct fleet_history *h, size_t node, int cls, double t, double end,
		      unsigned source, const char *what)
{
	if (h->nr >= FLEET_EVENTS_MAX)
		return -1;
	ALLOC_GROW(h->ev, h->nr + 1, h->alloc);
	struct fleet_event *e = &h->ev[h->nr++];
	memset(e, 0, sizeof(*e));
	e->node = node;
	e->cls = cls;
	e->t = t;
	e->end = end > t ? end : 0;
	e->drained = e->end ? t : 0;
	e->sources = source;
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_excerpt(&sb, what ? what : "", FLEET_WHAT_MAX);
	e->what = strbuf_detach(&sb, NULL);
	fleet_history_saw(h, t);
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct fleet_event *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (int)x->sources - (int)y->sources;
}

void fleet_history_merge(struct fleet_history *h)
{
	if (!h->nr)
		return;
	qsort(h->ev, h->nr, sizeof(h->ev[0]), cmp_event);
	size_t w = 0;
	for (size_t i = 0; i < h->nr; i++) {
		struct fleet_event *e = &h->ev[i];
		struct fleet_event *k = w ? &h->ev[w - 1] : NULL;
		/* a software fault blames no node: two of them are two faults */
		if (k && e->node != FLEET_NO_NODE && k->node == e->node && k->cls == e->cls &&
		    (e->t - k->t <= FLEET_MERGE_S || (k->end && e->t <= k->end)) &&
		    !(k->sources & e->sources)) {
			k->sources |= e->sources;
			if (e->end > k->end) {
				k->end = e->end;
				k->drained = e->drained;
			}
			/* Slurm's words are the drain's reason: keep the more specific */
			if (!*k->what && *e->what) {
				free(k->what);
				k->what = e->what;
				e->what = NULL;
			}
			free(e->what);
			h->merged++;
			continue;
		}
		h->ev[w++] = *e;
	}
	h->nr = w;
	h->sorted = w;
}

void fleet_history_window(struct fleet_history *h, double since, double until)
{
	size_t w = 0, sorted = 0;
	for (size_t i = 0; i < h->nr; i++) {
		if ((since && h->ev[i].t < since) || (until && h->ev[i].t > until)) {
			free(h->ev[i].what);
			continue;
		}
		sorted += i < h->sorted;
		h->ev[w++] = h->ev[i];
	}
	h->nr = w;
	h->sorted = sorted;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil). */
static long days_from_civil(long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long)doe - 719468;
}

bool fleet_parse_time(const char *s, double *out)
{
	unsigned y, mo, d, hh = 0, mi = 0, ss = 0;
	int n = 0;
	if (sscanf(s, "%4u-%2u-%2u%n", &y, &mo, &d, &n) != 3 || n != 10)
		return false;
	const char *p = s + n;
	if (*p == 'T' || *p == ' ') {
		int m = 0;
		if (sscanf(p + 1, "%2u:%2u%n", &hh, &mi, &m) != 2 || m != 5)
			return false;
		p += 1 + m;
		if (*p == ':') {
			if (sscanf(p + 1, "%2u%n", &ss, &m) != 1 || m != 2)
				return false;
			p += 1 + m;
		}
	}
	if (*p || y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 ||
	    mi > 59 || ss > 60)
		return false;
	*out = (double)days_from_civil((long)y, mo, d) * 86400.0 + hh * 3600.0 + mi * 60.0 + ss;
	return true;
}

void fleet_format_time(double t, char out[32])
{
	struct tm tm;
	time_t tt = t > 0 && t < FLEET_TIME_MAX ? (time_t)t : 0;
	if (!gmtime_r(&tt, &tm)) {
		snprintf(out, 32, "?");
		return;
	}
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* The agent's history of one node: each boot a key was seen in is one fault, less those the
 * other sources already have for that node and class between its first and last sight. */
static int read_agent_file(struct fleet_history *h, const char *node, const char *path,
			   struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, perr = STRBUF_INIT;
	struct history hist = { 0 };
	int ret = -1;
	/* the agent keeps at most 512 keys of 16 boots: far below a mebibyte */
	int r = read_file_bounded(path, &text, 1u << 20, err);
	if (r < 0)
		goto out;
	if (r == READ_MISSING) {
		error_set(err, "cannot read '%s': no such file", path);
		goto out;
	}
	if (r == READ_TRUNCATED || memchr(text.buf, '\0', text.len) ||
	    history_parse(&hist, text.buf, text.len, &perr) < 0) {
		error_set(err, "'%s' is not an agent history (history.json): %s", path,
			  r == READ_TRUNCATED ? "longer than 1 MiB" : perr.len ? perr.buf : "binary data");
		goto out;
	}
	size_t n = fleet_history_node(h, node);
	if (n == FLEET_NO_NODE) {
		error_set(err, "'%s': more than %u nodes", path, (unsigned)FLEET_NODES_MAX);
		goto out;
	}
	/* the other sources' events of this node: a range of the merged, sorted ones */
	size_t lo = 0, hi = h->sorted;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->ev[mid].node < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	hi = h->sorted;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->ev[mid].node <= n)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t last = lo;
	for (size_t i = 0; i < hist.nr; i++) {
		const struct history_entry *e = &hist.e[i];
		int cls = fleet_classify_key(e->key);
		double a = e->first_seen, b = e->last_seen > a ? e->last_seen : a;
		if (!(a > 0 && b < FLEET_TIME_MAX)) {
			h->skipped_lines++; /* no time to place it in the window */
			continue;
		}
		fleet_history_saw(h, a);
		fleet_history_saw(h, b);
		if (cls == FC_UNCLASSIFIED) {
			h->unclassified += e->nr_boots;
			continue;
		}
		size_t seen = 0;
		for (size_t j = first; j < last; j++)
			if (h->ev[j].node == n && h->ev[j].cls == cls &&
			    h->ev[j].t >= a - FLEET_MERGE_S && h->ev[j].t <= b + FLEET_MERGE_S) {
				h->ev[j].sources |= FS_AGENT;
				seen++;
			}
		for (size_t k = seen; k < e->nr_boots; k++) {
			/* the history keeps when a key was first and last seen, not each boot's time */
			double t = e->nr_boots > 1 ? a + (b - a) * (double)k / (double)(e->nr_boots - 1)
						   : a;
			if (fleet_history_add(h, n, cls, t, 0, FS_AGENT, e->key) < 0) {
				error_set(err, "'%s': more than %u events", path,
					  (unsigned)FLEET_EVENTS_MAX);
				goto out;
			}
			h->ev[h->nr - 1].approx = k > 0 && k + 1 < e->nr_boots;
		}
	}
	ret = 0;
out:
	history_release(&hist);
	strbuf_release(&text);
	strbuf_release(&perr);
	return ret;
}

static const char *last_name(const char *path, char *buf, size_t size)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t s = len;
	while (s > 0 && path[s - 1] != '/')
		s--;
	snprintf(buf, size, "%.*s", (int)(len - s), path + s);
	return buf;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fleet_read_agent(struct fleet_history *h, const char *dir, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	struct stat st;
	char name[256];
	int ret = -1;
	strbuf_addf(&path, "%s/%s", dir, HISTORY_FILE);
	if (!stat(path.buf, &st)) {
		ret = read_agent_file(h, last_name(dir, name, sizeof(name)), path.buf, err);
		if (!ret)
			h->agent_dirs++;
		strbuf_release(&path);
		return ret;
	}
	DIR *d = opendir(dir);
	if (!d) {
		error_set(err, "cannot read '%s': %s", dir, strerror(errno));
		strbuf_release(&path);
		return -1;
	}
	/* sorted, so that the node order (and the output) does not depend on the file system */
	char **names = NULL;
	size_t nr = 0, alloc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		ALLOC_GROW(names, nr + 1, alloc);
		names[nr++] = xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, nr, sizeof(*names), name_cmp);
	size_t found = 0;
	ret = 0;
	for (size_t i = 0; i < nr && !ret; i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s/%s", dir, names[i], HISTORY_FILE);
		if (stat(path.buf, &st))
			continue;
		ret = read_agent_file(h, names[i], path.buf, err);
		found++;
		h->agent_dirs++;
	}
	if (!ret && !found)
		ret = error_set(err, "'%s' holds no agent history (%s, or NODE/%s for each node)",
				dir, HISTORY_FILE, HISTORY_FILE);
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	strbuf_release(&path);
	return ret;
}
