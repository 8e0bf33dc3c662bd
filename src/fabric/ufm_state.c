/*
 * ufm_state.c: the tickets of 'vigil fabric ufm' kept between runs, DIR/ufm-state.json:
 *
 *   {"version": 1, "tickets": [{"id": "UFM-1a2b3c4d", "port": "SW:1/17/1", "peer": "SW2:1/4/2",
 *     "guid": "9c05...", "port_num": 33, "cable": "MT...", "cause": "flapping",
 *     "opened": "...", "last_seen_ms": N, "status": "open|closed|reenabled",
 *     "closed_at": "...", "reenabled_at": "..."}]}
 *
 * Read bounded and never through a link (a planted link is an error, not an empty state: the
 * tickets it stands for would be forgotten); replaced with write_file_atomic().
 *
 * Beside it, DIR/ufm-intents.json, the journal of the REST calls that change the fabric:
 *
 *   {"version": 1, "intents": [{"ticket": "UFM-..", "action": "disable|enable", "port": ..,
 *     "peer": .., "guid": .., "port_num": N, "cable": .., "cause": .., "at": "...",
 *     "outcome": "none|done|not_applied|unknown", "detail": "HTTP 200"}]}
 *
 * written (atomically, durably) before each call and after it, so that no call is ever made
 * that the disk does not know of; and DIR/ufm.lock, held (flock) for the whole run.
 */
#include "ufm.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAX (8u << 20)
#define STATE_TICKETS_MAX 100000

static const char *status_name(enum ufm_ticket_status s)
{
	return s == UFM_TICKET_OPEN ? "open" : s == UFM_TICKET_CLOSED ? "closed" : "reenabled";
}

static bool text_cb(void *arg, const char *data, size_t len)
{
	return strbuf_add(arg, data, len) == 0;
}

static int load_file(const char *dir, const char *name, const char *array, const char *what,
		     struct strbuf *text, struct json_value **root, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, name);
	strbuf_init(text, STATE_MAX + 1);
	int r = read_file_stream(path.buf, READ_STREAM_NOFOLLOW | READ_STREAM_MISSING_OK,
				 STATE_MAX, text_cb, text, err);
	*root = NULL;
	if (r == READ_MISSING) {
		strbuf_release(&path);
		return 1;
	}
	if (r < 0) {
		strbuf_release(&path);
		return -1;
	}
	struct strbuf why = STRBUF_INIT;
	*root = json_parse(text->buf, text->len, &why);
	if (!*root || (*root)->type != JSON_OBJECT || !json_get(*root, array) ||
	    json_get(*root, array)->type != JSON_ARRAY) {
		error_set(err, "cannot read '%s': it is not vigil's %s (%s); nothing was done "
			       "(move it aside to start afresh)",
			  path.buf, what, why.len ? why.buf : "no array of records");
		json_free(*root);
		*root = NULL;
		strbuf_release(&why);
		strbuf_release(&path);
		return -1;
	}
	strbuf_release(&why);
	strbuf_release(&path);
	return 0;
}

static char *member_dup(const struct json_value *o, const char *key)
{
	const char *s = json_get_string(o, key);
	return xstrdup(s ? s : "");
}

int ufm_state_load(struct ufm *u, const char *dir, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	struct json_value *root;
	int r = load_file(dir, UFM_STATE_FILE, "tickets", "ufm state", &text, &root, err);
	strbuf_release(&text);
	if (r < 0)
		return -1;
	u->have_state = true;
	if (r == 1)
		return 0;
	const struct json_value *arr = json_get(root, "tickets");
	for (size_t i = 0; i < arr->nr && u->nr_tickets < STATE_TICKETS_MAX; i++) {
		const struct json_value *o = arr->items[i];
		const char *id = o->type == JSON_OBJECT ? json_get_string(o, "id") : NULL;
		const char *port = id ? json_get_string(o, "port") : NULL;
		const char *st = id ? json_get_string(o, "status") : NULL;
		if (!id || !*id || !port || !st)
			continue;
		double v;
		ALLOC_GROW(u->tickets, u->nr_tickets + 1, u->alloc_tickets);
		struct ufm_ticket *t = &u->tickets[u->nr_tickets++];
		memset(t, 0, sizeof(*t));
		t->id = xstrdup(id);
		t->port = xstrdup(port);
		t->peer = member_dup(o, "peer");
		t->guid = member_dup(o, "guid");
		t->num = json_get_number(o, "port_num", &v) && v >= 0 && v < 100000 ? (unsigned)v : 0;
		t->cable = member_dup(o, "cable");
		t->cause = member_dup(o, "cause");
		t->opened = member_dup(o, "opened");
		t->closed_at = member_dup(o, "closed_at");
		t->reenabled_at = member_dup(o, "reenabled_at");
		t->last_seen = json_get_number(o, "last_seen_ms", &v) ? (int64_t)v : 0;
		t->status = !strcmp(st, "closed")      ? UFM_TICKET_CLOSED
			    : !strcmp(st, "reenabled") ? UFM_TICKET_REENABLED
						       : UFM_TICKET_OPEN;
	}
	json_free(root);
	return 0;
}

static void write_tickets(struct json_writer *w, const struct ufm_ticket *t, size_t nr)
{
	json_key(w, "tickets");
	json_open_array(w);
	for (size_t i = 0; i < nr; i++) {
		json_open_object(w);
		json_key(w, "id");
		json_string(w, t[i].id);
		json_key(w, "port");
		json_string(w, t[i].port);
		json_key(w, "peer");
		json_string(w, t[i].peer);
		json_key(w, "guid");
		json_string(w, t[i].guid);
		json_key(w, "port_num");
		json_uint(w, t[i].num);
		json_key(w, "cable");
		json_string(w, t[i].cable);
		json_key(w, "cause");
		json_string(w, t[i].cause);
		json_key(w, "opened");
		json_string(w, t[i].opened);
		json_key(w, "last_seen_ms");
		json_int(w, t[i].last_seen);
		json_key(w, "status");
		json_string(w, status_name(t[i].status));
		json_key(w, "closed_at");
		json_string(w, t[i].closed_at);
		json_key(w, "reenabled_at");
		json_string(w, t[i].reenabled_at);
		json_close_object(w);
	}
	json_close_array(w);
}

static int save(const struct ufm_ticket *t, size_t nr, const char *dir, struct strbuf *err)
{
	struct strbuf out = STRBUF_INIT, path = STRBUF_INIT;
	struct json_writer w;
	json_writer_init(&w, &out, true);
	json_open_object(&w);
	json_key(&w, "version");
	json_int(&w, 1);
	write_tickets(&w, t, nr);
	json_close_object(&w);
	strbuf_addch(&out, '\n');
	int r = json_writer_finish(&w, err);
	if (!r) {
		strbuf_addf(&path, "%s/%s", dir, UFM_STATE_FILE);
		r = write_file_atomic(path.buf, out.buf, out.len, 0600, err);
	}
	strbuf_release(&out);
	strbuf_release(&path);
	return r;
}

int ufm_state_save(const struct ufm *u, const char *dir, struct strbuf *err)
{
	return save(u->tickets, u->nr_tickets, dir, err);
}

int ufm_state_close(const char *dir, const char *id, const char *now, struct strbuf *err)
{
	struct ufm u;
	ufm_init(&u, NULL);
	int r = ufm_state_load(&u, dir, err);
	/* a ticket only the journal still knows (a run that could not save its state) can be
	 * closed too */
	if (r >= 0)
		r = ufm_intents_load(&u, dir, err);
	if (r < 0)
		goto out;
	r = -1;
	for (size_t i = 0; i < u.nr_tickets; i++) {
		struct ufm_ticket *t = &u.tickets[i];
		if (strcmp(t->id, id))
			continue;
		if (t->status != UFM_TICKET_OPEN) {
			r = 1;
			goto out;
		}
		t->status = UFM_TICKET_CLOSED;
		free(t->closed_at);
		t->closed_at = xstrdup(now);
		r = save(u.tickets, u.nr_tickets, dir, err);
		/* a person closing the ticket has seen to its port: a disable of unknown outcome
		 * is settled (the port is to be re-enabled now, whatever it is) */
		bool settled = false;
		for (size_t k = 0; k < u.nr_intents; k++)
			if (!u.intents[k].enable && !strcmp(u.intents[k].ticket, id) &&
			    ufm_intent_unknown(&u.intents[k])) {
				u.intents[k].resolved = true;
				settled = true;
			}
		if (!r && (settled || u.nr_intents))
			r = ufm_intents_save(&u, dir, false, err);
		goto out;
	}
	error_set(err, "no ticket '%s' in '%s/%s' (%zu tickets there)", id, dir, UFM_STATE_FILE,
		  u.nr_tickets);
	r = -2; /* the state was read: the ticket named is wrong, not the input */
out:
	ufm_release(&u);
	return r;
}

/* ---- the state directory, its lock ---- */

int ufm_state_open(const char *dir, struct strbuf *err)
{
	struct stat st;
	if (!*dir)
		return error_set(err, "--state wants a directory");
	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return error_set(err, "cannot use state directory '%s': it does not exist "
					      "(make it first: mkdir -m 700 '%s'); nothing was done",
					 dir, dir);
		return error_set(err, "cannot use state directory '%s': %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return error_set(err, "cannot use state directory '%s': it is %s, not a directory",
				 dir, file_kind(st.st_mode));
	/* others who can write there can plant a link, swap the state or hold the lock */
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return error_set(err, "cannot use state directory '%s': it belongs to uid %u, not to "
				      "you or root",
				 dir, (unsigned)st.st_uid);
	if (st.st_mode & 022)
		return error_set(err, "cannot use state directory '%s': permissions %04o, others can "
				      "write in it (chmod 700 '%s')",
				 dir, (unsigned)(st.st_mode & 07777), dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return error_set(err, "cannot use state directory '%s': %s", dir, strerror(errno));
	/* A probe, written and synced as the state will be: a read-only, full or unsyncable
	 * directory is found before any REST call, not after. */
	char rnd[17], name[48], block[4096];
	random_hex16(rnd);
	snprintf(name, sizeof(name), ".ufm-probe.%s", rnd);
	memset(block, 0, sizeof(block));
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int e = 0;
	if (fd < 0)
		e = errno;
	else {
		/* a short write is followed by another: its errno names the cause (ENOSPC, or
		 * EFBIG under ulimit -f), not a guess */
		size_t done = 0;
		while (done < sizeof(block)) {
			ssize_t n = write(fd, block + done, sizeof(block) - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				e = n < 0 ? errno : EIO;
				break;
			}
			done += (size_t)n;
		}
		if (e)
			;
		else if (fsync(fd) < 0)
			e = errno;
		if (close(fd) < 0 && !e)
			e = errno;
		unlinkat(dfd, name, 0);
		if (!e && fsync(dfd) < 0 && errno != EINVAL)
			e = errno;
	}
	if (e) {
		close(dfd);
		return error_set(err, "cannot use state directory '%s': a file cannot be written and "
				      "synced there (%s); nothing was done",
				 dir, strerror(e));
	}
	int lfd = openat(dfd, UFM_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
			 0600);
	e = errno;
	close(dfd);
	if (lfd < 0)
		return error_set(err, "cannot use state directory '%s': %s: %s", dir, UFM_LOCK_FILE,
				 e == ELOOP ? "it is a symbolic link" : strerror(e));
	if (fstat(lfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(lfd);
		return error_set(err, "cannot use state directory '%s': %s is not a regular file",
				 dir, UFM_LOCK_FILE);
	}
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		e = errno;
		close(lfd);
		if (e == EWOULDBLOCK)
			return error_set(err, "another 'vigil fabric ufm' is using '%s' (its %s is "
					      "held): try again when it is done",
					 dir, UFM_LOCK_FILE);
		return error_set(err, "cannot lock '%s/%s': %s", dir, UFM_LOCK_FILE, strerror(e));
	}
	return lfd;
}

/* ---- the intents ---- */

static struct ufm_ticket *ticket_by_id(struct ufm *u, const char *id)
{
	for (size_t i = 0; i < u->nr_tickets; i++)
		if (!strcmp(u->tickets[i].id, id))
			return &u->tickets[i];
	return NULL;
}

/* The ticket an intent names, restored from the intent when the state lost it (a run that
 * made the call but could not save its tickets). */
static struct ufm_ticket *intent_ticket(struct ufm *u, const struct ufm_intent *in)
{
	struct ufm_ticket *t = ticket_by_id(u, in->ticket);
	if (t)
		return t;
	ALLOC_GROW(u->tickets, u->nr_tickets + 1, u->alloc_tickets);
	t = &u->tickets[u->nr_tickets++];
	memset(t, 0, sizeof(*t));
	t->id = xstrdup(in->ticket);
	t->port = xstrdup(in->port);
	t->peer = xstrdup(in->peer);
	t->guid = xstrdup(in->guid);
	t->num = in->num;
	t->cable = xstrdup(in->cable);
	t->cause = xstrdup(in->cause);
	t->opened = xstrdup(in->at);
	/* an enable is asked only of a closed ticket */
	t->closed_at = xstrdup(in->enable ? in->at : "");
	t->reenabled_at = xstrdup("");
	t->status = in->enable ? UFM_TICKET_CLOSED : UFM_TICKET_OPEN;
	return t;
}

void ufm_intent_settle(struct ufm *u, size_t i, enum ufm_outcome o, const char *detail)
{
	struct ufm_intent *in = &u->intents[i];
	in->outcome = o;
	if (detail) {
		free(in->detail);
		in->detail = xstrdup(detail);
	}
	in->resolved = o == UFM_OUT_DONE || o == UFM_OUT_NOT_APPLIED;
	struct ufm_ticket *t = intent_ticket(u, in);
	if (o == UFM_OUT_DONE && in->enable && t->status == UFM_TICKET_CLOSED) {
		t->status = UFM_TICKET_REENABLED;
		free(t->reenabled_at);
		t->reenabled_at = xstrdup(in->at);
	}
}

size_t ufm_intent_add(struct ufm *u, const struct ufm_ticket *t, const char *guid,
		      unsigned num, bool enable, const char *at)
{
	ALLOC_GROW(u->intents, u->nr_intents + 1, u->alloc_intents);
	struct ufm_intent *in = &u->intents[u->nr_intents];
	memset(in, 0, sizeof(*in));
	in->ticket = xstrdup(t->id);
	in->port = xstrdup(t->port);
	in->peer = xstrdup(t->peer);
	in->guid = xstrdup(guid);
	in->num = num;
	in->cable = xstrdup(t->cable);
	in->cause = xstrdup(t->cause);
	in->at = xstrdup(at);
	in->detail = xstrdup("");
	in->enable = enable;
	in->outcome = UFM_OUT_NONE;
	return u->nr_intents++;
}

/* The intents of a parsed journal into u (carried), their tickets restored and recorded
 * outcomes taken in. */
static int intents_take(struct ufm *u, const struct json_value *root, const char *shown,
			struct strbuf *err)
{
	const struct json_value *arr = json_get(root, "intents");
	size_t bad = 0;
	for (size_t i = 0; i < arr->nr && u->nr_intents < STATE_TICKETS_MAX; i++) {
		const struct json_value *o = arr->items[i];
		const char *id = o->type == JSON_OBJECT ? json_get_string(o, "ticket") : NULL;
		const char *act = id ? json_get_string(o, "action") : NULL;
		const char *port = id ? json_get_string(o, "port") : NULL;
		const char *oc = id ? json_get_string(o, "outcome") : NULL;
		if (!id || !*id || !port || !act || (strcmp(act, "disable") && strcmp(act, "enable"))) {
			bad++;
			continue;
		}
		double v;
		ALLOC_GROW(u->intents, u->nr_intents + 1, u->alloc_intents);
		struct ufm_intent *in = &u->intents[u->nr_intents++];
		memset(in, 0, sizeof(*in));
		in->ticket = xstrdup(id);
		in->port = xstrdup(port);
		in->peer = member_dup(o, "peer");
		in->guid = member_dup(o, "guid");
		in->num = json_get_number(o, "port_num", &v) && v >= 0 && v < 100000 ? (unsigned)v : 0;
		in->cable = member_dup(o, "cable");
		in->cause = member_dup(o, "cause");
		in->at = member_dup(o, "at");
		in->detail = member_dup(o, "detail");
		in->enable = !strcmp(act, "enable");
		/* an outcome not understood is not known: the call may have been made */
		in->outcome = !oc			      ? UFM_OUT_NONE
			      : !strcmp(oc, "done")	      ? UFM_OUT_DONE
			      : !strcmp(oc, "not_applied") ? UFM_OUT_NOT_APPLIED
			      : !strcmp(oc, "none")	      ? UFM_OUT_NONE
							      : UFM_OUT_UNKNOWN;
		in->carried = true;
	}
	if (bad)
		return error_set(err, "cannot read '%s': %zu of its records are not intents vigil "
				      "wrote; nothing was done (look at it, then move it aside)",
				 shown, bad);
	/* outcomes recorded by a run that could not save its tickets: take them in now */
	for (size_t i = 0; i < u->nr_intents; i++)
		ufm_intent_settle(u, i, u->intents[i].outcome, NULL);
	return 0;
}

int ufm_intents_load(struct ufm *u, const char *dir, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, path = STRBUF_INIT;
	struct json_value *root;
	int r = load_file(dir, UFM_INTENTS_FILE, "intents", "ufm intents", &text, &root, err);
	strbuf_release(&text);
	if (r < 0)
		return -1;
	if (r == 1)
		return 0;
	strbuf_addf(&path, "%s/%s", dir, UFM_INTENTS_FILE);
	r = intents_take(u, root, path.buf, err);
	json_free(root);
	strbuf_release(&path);
	return r;
}

int ufm_intents_parse(struct ufm *u, const char *text, size_t len, const char *shown,
		      struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	struct json_value *root = json_parse(text, len, &why);
	int r;
	if (!root || root->type != JSON_OBJECT || !json_get(root, "intents") ||
	    json_get(root, "intents")->type != JSON_ARRAY)
		r = error_set(err, "cannot read '%s': it is not vigil's ufm intents (%s)", shown,
			      why.len ? why.buf : "no array of records");
	else
		r = intents_take(u, root, shown, err);
	json_free(root);
	strbuf_release(&why);
	return r;
}

int ufm_intents_save(const struct ufm *u, const char *dir, bool all, struct strbuf *err)
{
	struct strbuf out = STRBUF_INIT, path = STRBUF_INIT;
	struct json_writer w;
	json_writer_init(&w, &out, true);
	json_open_object(&w);
	json_key(&w, "version");
	json_int(&w, 1);
	json_key(&w, "intents");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_intents; i++) {
		const struct ufm_intent *in = &u->intents[i];
		if (!all && !ufm_intent_unknown(in))
			continue;
		json_open_object(&w);
		json_key(&w, "ticket");
		json_string(&w, in->ticket);
		json_key(&w, "action");
		json_string(&w, in->enable ? "enable" : "disable");
		json_key(&w, "port");
		json_string(&w, in->port);
		json_key(&w, "peer");
		json_string(&w, in->peer);
		json_key(&w, "guid");
		json_string(&w, in->guid);
		json_key(&w, "port_num");
		json_uint(&w, in->num);
		json_key(&w, "cable");
		json_string(&w, in->cable);
		json_key(&w, "cause");
		json_string(&w, in->cause);
		json_key(&w, "at");
		json_string(&w, in->at);
		json_key(&w, "outcome");
		json_string(&w, ufm_outcome_name(in->outcome));
		json_key(&w, "detail");
		json_string(&w, in->detail);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(&out, '\n');
	int r = json_writer_finish(&w, err);
	if (!r) {
		strbuf_addf(&path, "%s/%s", dir, UFM_INTENTS_FILE);
		r = write_file_atomic(path.buf, out.buf, out.len, 0600, err);
	}
	strbuf_release(&out);
	strbuf_release(&path);
	return r;
}
