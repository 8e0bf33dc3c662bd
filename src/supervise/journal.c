/* journal.c: the run journal, appended durably and replayed after a crash (see journal.h). */
#include "journal.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const kind_names[] = { "run_started",   "attempt_started", "attempt_ended",
					  "event",         "step",            "host_excluded",
					  "run_ended" };

const char *journal_kind_name(enum journal_kind k)
{
	return k < ARRAY_SIZE(kind_names) ? kind_names[k] : "?";
}

/* ---- writing ---- */

/* At most JOURNAL_TEXT_MAX bytes of s, cut on a character boundary and marked. */
static void add_text(struct strbuf *out, const char *key, const char *s)
{
	if (!s)
		return;
	size_t len = strlen(s);
	bool cut = len > JOURNAL_TEXT_MAX;
	if (cut) {
		len = JOURNAL_TEXT_MAX;
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	strbuf_addf(out, ",\"%s\":", key);
	if (!cut) {
		json_quote(out, s, len);
		return;
	}
	struct strbuf t = STRBUF_INIT;
	strbuf_add(&t, s, len);
	strbuf_addstr(&t, "...");
	json_quote(out, t.buf, t.len);
	strbuf_release(&t);
}

static void add_time(struct strbuf *out, const char *key, double t)
{
	if (isfinite(t))
		strbuf_addf(out, ",\"%s\":%.3f", key, t);
}

void journal_format(const struct journal_record *r, struct strbuf *out)
{
	strbuf_addch(out, '{');
	strbuf_addf(out, "\"t\":%.3f", isfinite(r->t) ? r->t : 0.0);
	strbuf_addf(out, ",\"kind\":\"%s\",\"attempt\":%u", journal_kind_name(r->kind), r->attempt);
	if (r->kind == JOURNAL_ATTEMPT_STARTED)
		strbuf_addf(out, ",\"restarts\":%u", r->restarts);
	const char *name_key = r->kind == JOURNAL_EVENT ? "class" : "outcome";
	add_text(out, name_key, r->name);
	add_text(out, "host", r->host);
	add_text(out, r->kind == JOURNAL_HOST_EXCLUDED ? "reason" : "detail", r->text);
	add_text(out, "step_id", r->step_id);
	if (r->has_code)
		strbuf_addf(out, ",\"code\":%d", r->code);
	if (r->has_step)
		strbuf_addf(out, ",\"step\":%llu", (unsigned long long)r->step);
	if (r->has_loss && isfinite(r->loss))
		strbuf_addf(out, ",\"loss\":%.9g", r->loss);
	if (r->has_tokens)
		strbuf_addf(out, ",\"tokens\":%llu", (unsigned long long)r->tokens);
	if (r->has_mfu && isfinite(r->mfu) && r->mfu >= 0 && r->mfu <= 1)
		strbuf_addf(out, ",\"mfu\":%.6g", r->mfu);
	if (r->has_latency) {
		add_time(out, "happened", r->happened);
		add_time(out, "detected", r->detected);
		if (isfinite(r->detected - r->happened))
			strbuf_addf(out, ",\"latency_s\":%.3f", r->detected - r->happened);
	}
	if (r->nr_hosts) {
		/* the list last, within what is left of the line */
		size_t i = 0;
		strbuf_addstr(out, ",\"hosts\":[");
		for (; i < r->nr_hosts && i < JOURNAL_HOSTS_MAX; i++) {
			if (out->len > JOURNAL_LINE_MAX - 2048)
				break;
			struct strbuf one = STRBUF_INIT;
			if (i)
				strbuf_addch(out, ',');
			add_text(&one, "h", r->hosts[i] ? r->hosts[i] : "");
			strbuf_addstr(out, one.buf + strlen(",\"h\":"));
			strbuf_release(&one);
		}
		strbuf_addch(out, ']');
		if (i < r->nr_hosts)
			strbuf_addf(out, ",\"hosts_omitted\":%zu", r->nr_hosts - i);
	}
	strbuf_addch(out, '}');
}

static int sync_dir_of(const char *path, struct strbuf *err)
{
	char *copy = xstrdup(path);
	const char *dir = dirname(copy);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;
	if (fd < 0 || fsync(fd) < 0)
		rc = error_set(err, "cannot sync the directory of '%s': %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int journal_open(struct journal *j, const char *path, struct strbuf *err)
{
	struct stat st;
	bool created = true;
	memset(j, 0, sizeof(*j));
	strbuf_init(&j->pending, 0);
	j->fd = -1;
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		created = false;
		/* read-write to look at the last byte; non-blocking so a FIFO cannot hang the open */
		fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	}
	if (fd < 0) {
		if (errno == ELOOP)
			return error_set(err, "cannot open '%s': it is a symbolic link", path);
		if (errno == ENXIO)
			return error_set(err, "cannot open '%s': it is a FIFO, not a regular file",
					 path);
		return error_set(err, "cannot open '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		error_set(err, "cannot open '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		error_set(err, "cannot open '%s': it is %s, not a regular file", path,
			  file_kind(st.st_mode));
		goto fail;
	}
	if (st.st_nlink > 1) {
		error_set(err, "cannot open '%s': it has %lu hard links", path,
			  (unsigned long)st.st_nlink);
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		error_set(err, "cannot open '%s': it belongs to uid %u", path, (unsigned)st.st_uid);
		goto fail;
	}
	if (fcntl(fd, F_SETFL, O_APPEND) < 0) {
		error_set(err, "cannot open '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (created) {
		if (fchmod(fd, 0644) < 0 || sync_dir_of(path, err) < 0) {
			if (!err || !err->len)
				error_set(err, "cannot open '%s': %s", path, strerror(errno));
			goto fail;
		}
	} else if (st.st_size > 0) {
		char last;
		if (pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
			j->need_newline = true; /* a torn line from a kill -9 */
	}
	j->fd = fd;
	j->path = xstrdup(path);
	return 0;
fail:
	close(fd);
	return -1;
}

int journal_append(struct journal *j, const struct journal_record *r, struct strbuf *err)
{
	return journal_append_sync(j, r, true, err);
}

/* All of line, or -1 (*need_newline: part of a line may be there). */
static int write_all(struct journal *j, const char *buf, size_t len, struct strbuf *err)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(j->fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* part of a line may be there: the next record starts on a new one */
			j->need_newline = off > 0 || j->need_newline;
			return error_set(err, "cannot write '%s': %s", j->path,
					 n < 0 ? strerror(errno) : "nothing written");
		}
		off += (size_t)n;
	}
	j->need_newline = false;
	return 0;
}

/* A lazy journal's pending records, written. */
static int flush_pending(struct journal *j, struct strbuf *err)
{
	if (!j->pending.len || j->fd < 0)
		return 0;
	int rc = write_all(j, j->pending.buf, j->pending.len, err);
	strbuf_reset(&j->pending);
	return rc;
}

int journal_sync(struct journal *j, struct strbuf *err)
{
	if (j->lazy)
		return flush_pending(j, err);
	if (j->fd >= 0 && j->unsynced && fsync(j->fd) < 0)
		return error_set(err, "cannot sync '%s': %s", j->path, strerror(errno));
	j->unsynced = false;
	return 0;
}

int journal_append_sync(struct journal *j, const struct journal_record *r, bool sync,
			struct strbuf *err)
{
	struct strbuf line = STRBUF_INIT;
	int rc = 0;
	if (j->fd < 0)
		return error_set(err, "the journal is not open");
	if (j->need_newline)
		strbuf_addch(&line, '\n');
	journal_format(r, &line);
	strbuf_addch(&line, '\n');
	if (j->lazy) {
		strbuf_add(&j->pending, line.buf, line.len);
		j->need_newline = false;
		if (j->pending.len >= 65536)
			rc = flush_pending(j, err);
		goto out;
	}
	if ((rc = write_all(j, line.buf, line.len, err)) < 0)
		goto out;
	j->unsynced = true;
	if (sync)
		rc = journal_sync(j, err);
out:
	strbuf_release(&line);
	return rc;
}

void journal_close(struct journal *j)
{
	journal_sync(j, NULL);
	strbuf_release(&j->pending);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	free(j->path);
	j->path = NULL;
}

/* ---- replay ---- */

static bool get_uint(const struct json_value *o, const char *key, uint64_t *out)
{
	const struct json_value *v = json_get(o, key);
	if (!v || v->type != JSON_NUMBER || !(v->number >= 0) || v->number > 9007199254740991.0 ||
	    v->number != floor(v->number))
		return false;
	*out = (uint64_t)v->number;
	return true;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

static const char *excluded_name(const void *arr, size_t i)
{
	return ((const struct journal_excluded *)arr)[i].host;
}

static void add_excluded(struct journal_replay *r, const char *host, const char *reason,
			 unsigned attempt)
{
	if (strindex_find(&r->excluded_index, host, r->excluded, excluded_name) != (size_t)-1)
		return;
	ALLOC_GROW(r->excluded, r->nr_excluded + 1, r->alloc_excluded);
	strindex_add(&r->excluded_index, host, r->nr_excluded, r->excluded, excluded_name);
	struct journal_excluded *x = &r->excluded[r->nr_excluded++];
	x->host = xstrdup(host);
	x->reason = reason ? xstrdup(reason) : NULL;
	x->attempt = attempt;
}

/* One record; false when the line is not one. */
static bool apply(struct journal_replay *r, const char *line, size_t len)
{
	struct json_value *v = json_parse(line, len, NULL);
	const char *kind = v && v->type == JSON_OBJECT ? json_get_string(v, "kind") : NULL;
	uint64_t attempt = 0, n;
	if (!kind) {
		json_free(v);
		return false;
	}
	r->records++;
	if (!get_uint(v, "attempt", &attempt) || attempt > 1000000)
		attempt = r->attempt;
	if (!strcmp(kind, "run_started")) {
		/* nothing to rebuild */
	} else if (!strcmp(kind, "attempt_started")) {
		r->started_any = true;
		r->attempt = (unsigned)attempt;
		r->attempt_open = true;
		r->sdc_pending = false; /* this attempt was told already */
		set_str(&r->step_id, json_get_string(v, "step_id"));
		if (get_uint(v, "restarts", &n) && n <= 1000000)
			r->restarts = (unsigned)n;
	} else if (!strcmp(kind, "attempt_ended")) {
		if (attempt == r->attempt) {
			r->attempt_open = false;
			set_str(&r->step_id, NULL);
		}
	} else if (!strcmp(kind, "step")) {
		if (get_uint(v, "step", &n)) {
			r->has_step = true;
			r->last_step = n;
			r->last_step_attempt = (unsigned)attempt;
		}
	} else if (!strcmp(kind, "host_excluded")) {
		const char *host = json_get_string(v, "host");
		if (host && *host)
			add_excluded(r, host, json_get_string(v, "reason"), (unsigned)attempt);
	} else if (!strcmp(kind, "run_ended")) {
		r->finished = true;
		set_str(&r->outcome, json_get_string(v, "outcome"));
	} else if (!strcmp(kind, "event")) {
		/* the step id is known only once the step runs: "launched" carries it */
		const char *cls = json_get_string(v, "class"), *id = json_get_string(v, "detail");
		if (cls && !strcmp(cls, "launched") && attempt == r->attempt && r->attempt_open &&
		    id && *id && strlen(id) < 64)
			set_str(&r->step_id, id);
		if (cls && !strcmp(cls, "sdc") && get_uint(v, "step", &n) &&
		    (!r->sdc_pending || n < r->sdc_step)) {
			r->sdc_pending = true;
			r->sdc_step = n;
		}
	} else {
		r->unknown_kinds++;
	}
	json_free(v);
	return true;
}

struct replay_reader {
	struct journal_replay *r;
	struct strbuf line;
	bool overlong;
};

static void reader_line(struct replay_reader *rd, bool complete)
{
	bool blank = true;
	for (size_t i = 0; i < rd->line.len; i++)
		if (rd->line.buf[i] != ' ' && rd->line.buf[i] != '\t' && rd->line.buf[i] != '\r')
			blank = false;
	if (rd->overlong || (!blank && !apply(rd->r, rd->line.buf, rd->line.len))) {
		if (complete)
			rd->r->bad_lines++;
		else
			rd->r->torn_tail = true;
	}
	strbuf_reset(&rd->line);
	rd->line.truncated = false;
	rd->overlong = false;
}

static void reader_feed(struct replay_reader *rd, const char *data, size_t len)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (rd->line.len + n > JOURNAL_LINE_MAX)
			rd->overlong = true;
		else
			strbuf_add(&rd->line, data, n);
		if (!nl)
			return;
		reader_line(rd, true);
		data += n + 1;
		len -= n + 1;
	}
}

static void reader_finish(struct replay_reader *rd)
{
	if (rd->line.len || rd->overlong)
		reader_line(rd, false);
	strbuf_release(&rd->line);
}

void journal_replay_text(const char *text, size_t len, struct journal_replay *out)
{
	struct replay_reader rd = { out, STRBUF_INIT, false };
	memset(out, 0, sizeof(*out));
	out->found = true;
	reader_feed(&rd, text, len);
	reader_finish(&rd);
}

static bool replay_chunk(void *arg, const char *data, size_t len)
{
	reader_feed(arg, data, len);
	return true;
}

int journal_replay(const char *path, struct journal_replay *out, struct strbuf *err)
{
	struct replay_reader rd = { out, STRBUF_INIT, false };
	memset(out, 0, sizeof(*out));
	int rc = read_file_stream(path, READ_STREAM_NOFOLLOW | READ_STREAM_MISSING_OK, 0,
				  replay_chunk, &rd, err);
	if (rc == READ_MISSING) {
		strbuf_release(&rd.line);
		return 0; /* a fresh run */
	}
	/* what could be read counts, even when the rest could not */
	out->found = true;
	reader_finish(&rd);
	return rc < 0 ? -1 : 0;
}

void journal_replay_release(struct journal_replay *r)
{
	for (size_t i = 0; i < r->nr_excluded; i++) {
		free(r->excluded[i].host);
		free(r->excluded[i].reason);
	}
	free(r->excluded);
	strindex_release(&r->excluded_index);
	free(r->step_id);
	free(r->outcome);
	memset(r, 0, sizeof(*r));
}
