/*
 * fabric_ufm.c: 'vigil fabric ufm FILE...' (UFM's event log into ports to disable, tickets,
 * ports to re-enable and incidents; src/fabric/ufm.h decides) and 'vigil fabric ufm close
 * TICKET'. The REST calls that apply a decision are printed; with --apply they are made, by
 * curl as a child with a deadline, the credentials handed to it on stdin as a curl config
 * (-K -), never on its command line where ps would show them.
 */
#include "cmd.h"
#include "fabric.h"
#include "../fabric/ufm.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char ufm_usage[] =
	"usage: vigil fabric ufm FILE... [--state DIR] [--json|--csv] [options]\n"
	"       vigil fabric ufm close TICKET --state DIR\n"
	"\n"
	"UFM's event.log (rotated event.log.1 and gzip'd event.log.2.gz too, in any order: events\n"
	"are merged by time) read for the port events that matter (codes 110, 112, 113, 115,\n"
	"116, 329, 702, 917, 918). It says which ports to disable and why, one ticket per\n"
	"physical link, which ports to re-enable (their ticket was closed), and sets aside\n"
	"bursts of 50 or more events within 1 s (a whole-fabric incident such as a UFM restart).\n"
	"Ports an administrator disabled by hand are not faults.\n"
	"\n"
	"  --state DIR          keep tickets in DIR/ufm-state.json between runs (DIR is made,\n"
	"                       0700, when missing)\n"
	"  --json, --csv        the decisions as JSON or CSV\n"
	"  --flap-downs N       downs of one link within the window that make it flapping (3)\n"
	"  --flap-window SECS   that window (86400)\n"
	"  --error-events N     error-counter alarms of one link within the window (3)\n"
	"  --apply URL          make the REST calls on UFM at URL (https://ufm.example)\n"
	"  --credentials FILE   USER:PASSWORD for --apply (the first line of FILE; mode 0600 or\n"
	"                       stricter, yours or root's, not a link)\n"
	"  --rest-timeout SECS  the deadline of one REST call (30)\n"
	"\n"
	"Without --apply the REST calls are printed, not made. --apply wants --state: each call\n"
	"is written to DIR/ufm-intents.json before it is made and its outcome after, so a run\n"
	"that dies between leaves the intent on disk; the next run takes it in (it asks UFM\n"
	"the port's state with --apply, or lists the port as 'state unknown').\n"
	"Exit: 0 nothing to act on, 1 ports to disable or re-enable or of unknown state, 2 usage\n"
	"error or a state DIR or credentials refused (before any log is read), 3 could not tell\n"
	"(a log missing or unreadable, no line of the logs a UFM event, or a state that cannot\n"
	"be written after the work).\n";

/* the deadline of one REST call (--rest-timeout), curl's own --max-time a little under it */
static unsigned rest_timeout_s = 30;

static void now_text(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static bool ticket_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 40)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '-'))
			return false;
	return true;
}

static int cmd_close(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 's')
			state = optarg;
		else if (c == 'h') {
			fputs(ufm_usage, stdout);
			return EXIT_HEALTHY;
		} else
			return EXIT_USAGE;
	}
	if (optind != argc - 1 || !state) {
		usage_error("fabric ufm close", "usage: vigil fabric ufm close TICKET --state DIR");
		return EXIT_USAGE;
	}
	const char *id = argv[optind];
	if (!ticket_id_ok(id)) {
		usage_error("fabric ufm close", "a ticket is like UFM-1a2b3c4d (letters, digits, "
						"'-'; at most 40)");
		return EXIT_USAGE;
	}
	char now[64];
	now_text(now, sizeof(now));
	struct strbuf err = STRBUF_INIT;
	int lock = ufm_state_open(state, &err);
	int r = lock < 0 ? -1 : ufm_state_close(state, id, now, &err);
	if (lock >= 0)
		close(lock);
	if (r < 0) {
		struct strbuf m = STRBUF_INIT;
		strbuf_add_clean(&m, err.buf);
		fprintf(stderr, "vigil fabric ufm close: %s\n", m.buf);
		strbuf_release(&m);
		strbuf_release(&err);
		/* a ticket the state does not hold is a wrong argument; a state directory that is
		 * missing, held by another run, a link or damaged is refused set-up, as for
		 * 'vigil fabric ufm --state' (vigil-fabric(1)): 2 either way */
		return EXIT_USAGE;
	}
	printf(r == 1 ? "ticket %s was closed already\n"
		      : "ticket %s closed: its port is to be re-enabled (the next 'vigil fabric ufm "
			"--state' run says so, and --apply does it)\n",
	       id);
	strbuf_release(&err);
	return EXIT_HEALTHY;
}

/*
 * The credentials as a curl config line (user = "U:P"), or -1 with *err. The file holds the
 * password of the fabric manager: as ssh does with a private key, one that others can read
 * or write, that belongs to someone else, or that is a link, FIFO or device is refused.
 */
static int read_credentials(const char *path, struct strbuf *conf, struct strbuf *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ELOOP)
			return error_set(err, "credentials '%s': it is a symbolic link (give the file "
					      "itself)",
					 path);
		return error_set(err, "cannot read credentials '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return error_set(err, "cannot read credentials '%s': %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error_set(err, "credentials '%s': it is %s, not a regular file", path,
				 file_kind(st.st_mode));
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		return error_set(err, "credentials '%s': it belongs to uid %u, not to you or root",
				 path, (unsigned)st.st_uid);
	}
	if (st.st_mode & 077) {
		close(fd);
		return error_set(err, "permissions %04o for '%s' are too open: others can read or "
				      "change the UFM password (chmod 600 '%s')",
				 (unsigned)(st.st_mode & 07777), path, path);
	}
	struct strbuf text = STRBUF_INIT;
	int r = read_fd_bounded(fd, path, &text, 4096, err);
	if (r != READ_OK) {
		if (r == READ_TRUNCATED)
			error_set(err, "credentials '%s': it is longer than 4 KiB (one USER:PASSWORD "
				       "line is wanted)",
				  path);
		strbuf_release(&text);
		return -1;
	}
	char *nl = memchr(text.buf, '\n', text.len);
	size_t n = nl ? (size_t)(nl - text.buf) : text.len;
	if (n && text.buf[n - 1] == '\r')
		n--;
	if (!n || !memchr(text.buf, ':', n)) {
		memset(text.buf, 0, text.len);
		strbuf_release(&text);
		return error_set(err, "'%s' holds no USER:PASSWORD line", path);
	}
	strbuf_addstr(conf, "user = \"");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)text.buf[i];
		if (ch < ' ' || ch == 0x7f) {
			memset(text.buf, 0, text.len);
			strbuf_release(&text);
			return error_set(err, "'%s': the credentials hold control bytes", path);
		}
		if (ch == '"' || ch == '\\')
			strbuf_addch(conf, '\\');
		strbuf_addch(conf, (char)ch);
	}
	strbuf_addstr(conf, "\"\n");
	memset(text.buf, 0, text.len);
	strbuf_release(&text);
	return 0;
}

/*
 * curl's exit codes (curl(1), EXIT CODES) after which the request never reached UFM: the URL
 * was malformed (3), the host not resolved (6), not connected to (7), TLS not set up (35,
 * 51, 58, 60, 77, 83). After any other failure (28 a deadline, 52 no answer, 56 the
 * connection broke...) it may have been sent and acted on.
 */
static bool curl_never_sent(int code)
{
	static const int codes[] = { 1, 2, 3, 5, 6, 7, 35, 51, 53, 54, 58, 59, 60, 66, 77, 83 };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (code == codes[i])
			return true;
	return false;
}

/*
 * One REST call through curl, with a deadline; the credentials on its stdin (-K -). body NULL
 * is a GET whose answer goes to *answer. The outcome: DONE (2xx), NOT_APPLIED (UFM answered
 * 4xx, or the request never left), UNKNOWN (5xx, a deadline, a broken connection: the call
 * may have been acted on); *detail says which.
 */
static enum ufm_outcome rest_call(const char *url, const char *conf, const char *path,
				  const char *body, struct strbuf *answer, struct strbuf *detail)
{
	struct strbuf full = STRBUF_INIT, maxt = STRBUF_INIT;
	size_t ul = strlen(url);
	while (ul && url[ul - 1] == '/')
		ul--;
	strbuf_add(&full, url, ul);
	strbuf_addstr(&full, path);
	strbuf_addf(&maxt, "%u", rest_timeout_s > 2 ? rest_timeout_s - 1 : rest_timeout_s);
	/* -q first: no ~/.curlrc, whose output=, location or write-out would change what is sent
	 * or what the answer is read as */
	const char *post[] = { "curl", "-q", "-sS", "-K", "-", "-X", "POST", "-H",
			       "Content-Type: application/json", "--data-binary", body ? body : "",
			       "-o", "/dev/null", "-w", "%{http_code}", "--max-time", maxt.buf,
			       "--", full.buf, NULL };
	const char *get[] = { "curl", "-q", "-sS", "-K", "-", "-w", "\n%{http_code}", "--max-time",
			      maxt.buf, "--", full.buf, NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	child_init(&c);
	c.argv = body ? post : get;
	c.stdin_data = conf;
	c.stdin_len = strlen(conf);
	c.timeout_ms = rest_timeout_s * 1000u;
	c.timeout_name = "--rest-timeout";
	c.out_cap = body ? 4096 : 16u << 20;
	enum ufm_outcome o = UFM_OUT_UNKNOWN;
	if (child_run(&c, &err) < 0) {
		/* curl could not be started: nothing was sent */
		strbuf_addf(detail, "curl: %s", err.buf);
		o = UFM_OUT_NOT_APPLIED;
		goto out;
	}
	if (!c.exited || c.exit_code) {
		struct strbuf how = STRBUF_INIT;
		child_describe(&c, &how);
		strbuf_rtrim(&c.err);
		strbuf_addf(detail, "curl %s: %s", how.buf, c.err.len ? c.err.buf : "no message");
		strbuf_release(&how);
		o = c.exited && curl_never_sent(c.exit_code) ? UFM_OUT_NOT_APPLIED : UFM_OUT_UNKNOWN;
		goto out;
	}
	if (c.out.truncated) {
		strbuf_addf(detail, "UFM's answer is longer than %zu MiB", c.out_cap >> 20);
		goto out;
	}
	const char *code = c.out.buf;
	size_t clen = c.out.len;
	while (clen && (code[clen - 1] == '\n' || code[clen - 1] == '\r' || code[clen - 1] == ' '))
		clen--;
	if (!body) {
		const char *nl = clen ? memrchr(code, '\n', clen) : NULL;
		if (nl) {
			if (answer)
				strbuf_add(answer, code, (size_t)(nl - code));
			clen -= (size_t)(nl + 1 - code);
			code = nl + 1;
		}
	}
	strbuf_add(&text, code, clen);
	if (text.len != 3 || text.buf[0] < '1' || text.buf[0] > '5' ||
	    !memchr("0123456789", text.buf[1], 10) || !memchr("0123456789", text.buf[2], 10)) {
		strbuf_addstr(detail, "curl gave no HTTP status");
		goto out;
	}
	strbuf_addf(detail, "HTTP %s", text.buf);
	o = text.buf[0] == '2' ? UFM_OUT_DONE : text.buf[0] == '4' ? UFM_OUT_NOT_APPLIED
								   : UFM_OUT_UNKNOWN;
out:
	child_release(&c);
	strbuf_release(&full);
	strbuf_release(&maxt);
	strbuf_release(&err);
	strbuf_release(&text);
	return o;
}

/*
 * What UFM says of a port now: 1 disabled, 0 not disabled, -1 it cannot tell us (*why).
 * GET /ufmRest/resources/ports?system=GUID&active=false&show_disabled=true (the query of
 * Mellanox/ufm_sdk_3.0 scripts/ufm_ports/load_ports.py; a port object there names itself
 * "name": "<guid>_<number>" and carries "physical_state": "Link Up"). A port is disabled
 * when its physical state is "Disabled" (the InfiniBand PortPhysicalState of an administered
 * port, as ibstat prints it); one of the other physical states of the InfiniBand spec is a
 * port that is not; a state not among those, a port not in the answer, listed twice with
 * different states, or an answer not understood, is not known.
 */
static int port_state(const char *url, const char *conf, const char *guid, unsigned num,
		      struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT, ans = STRBUF_INIT, d = STRBUF_INIT, name = STRBUF_INIT,
		      perr = STRBUF_INIT;
	int r = -1;
	for (const char *g = guid; *g; g++)
		if (!memchr("0123456789abcdefABCDEFx", *g, 23)) {
			strbuf_addstr(why, "the port's GUID is not hexadecimal");
			goto out;
		}
	if (!*guid || !num) {
		strbuf_addstr(why, "the log named no GUID and port number for it");
		goto out;
	}
	strbuf_addf(&path, "/ufmRest/resources/ports?system=%s&active=false&show_disabled=true",
		    guid);
	strbuf_addf(&name, "%s_%u", guid, num);
	if (rest_call(url, conf, path.buf, NULL, &ans, &d) != UFM_OUT_DONE) {
		strbuf_addf(why, "asking UFM: %s", d.buf);
		goto out;
	}
	struct json_value *v = json_parse(ans.buf, ans.len, &perr);
	if (!v || v->type != JSON_ARRAY) {
		strbuf_addstr(why, "UFM's answer is not a list of ports");
		json_free(v);
		goto out;
	}
	strbuf_addf(why, "UFM's answer does not list port %s", name.buf);
	/* every entry of that name must agree: one answer that says two things says nothing */
	for (size_t i = 0; i < v->nr; i++) {
		const struct json_value *p = v->items[i];
		const char *n = p->type == JSON_OBJECT ? json_get_string(p, "name") : NULL;
		if (!n || strcasecmp(n, name.buf))
			continue;
		const char *ps = json_get_string(p, "physical_state");
		if (!ps || !*ps) {
			strbuf_reset(why);
			strbuf_addstr(why, "UFM's answer gives the port no physical_state");
			r = -1;
			break;
		}
		/* the InfiniBand physical port states (IBTA PortInfo PortPhysicalState, as
		 * ibstat and UFM write them): Disabled, or one of those of an enabled port;
		 * anything else is not understood, so not known */
		static const char *const up[] = { "Link Up", "LinkUp", "Polling", "Sleep",
						  "Link Error Recovery", "LinkErrorRecovery",
						  "PhyTest", "Port Configuration Training" };
		int s = -1;
		if (!strcasecmp(ps, "Disabled"))
			s = 1;
		for (size_t k = 0; k < sizeof(up) / sizeof(up[0]); k++)
			if (!strcasecmp(ps, up[k]))
				s = 0;
		if (s < 0) {
			strbuf_reset(why);
			strbuf_addstr(why, "UFM gives a physical state vigil does not know: ");
			strbuf_add_clean(why, ps);
			r = -1;
			break;
		}
		if (r >= 0 && s != r) {
			strbuf_reset(why);
			strbuf_addstr(why, "UFM's answer lists the port twice, disabled and not");
			r = -1;
			break;
		}
		r = s;
		strbuf_reset(why);
		strbuf_addstr(why, "UFM says its physical state is ");
		strbuf_add_clean(why, ps);
	}
	json_free(v);
out:
	strbuf_release(&path);
	strbuf_release(&ans);
	strbuf_release(&d);
	strbuf_release(&name);
	strbuf_release(&perr);
	return r;
}

/* The earlier runs' intents whose outcome is not known: ask UFM where it can be asked. */
static void reconcile(struct ufm *u, const char *url, const char *conf)
{
	struct strbuf why = STRBUF_INIT, m = STRBUF_INIT;
	for (size_t i = 0; i < u->nr_intents; i++) {
		struct ufm_intent *in = &u->intents[i];
		if (!in->carried || !ufm_intent_unknown(in))
			continue;
		strbuf_reset(&why);
		strbuf_reset(&m);
		int s = port_state(url, conf, in->guid, in->num, &why);
		strbuf_add_clean(&m, in->port);
		if (s < 0) {
			struct strbuf w = STRBUF_INIT;
			strbuf_add_clean(&w, why.buf);
			fprintf(stderr, "vigil fabric ufm: ticket %s, %s: state still unknown (%s)\n",
				in->ticket, m.buf, w.buf);
			strbuf_release(&w);
			continue;
		}
		bool applied = in->enable ? s == 0 : s == 1;
		struct strbuf d = STRBUF_INIT;
		strbuf_addf(&d, "reconciled: %s", why.buf);
		ufm_intent_settle(u, i, applied ? UFM_OUT_DONE : UFM_OUT_NOT_APPLIED, d.buf);
		fprintf(stderr, "vigil fabric ufm: ticket %s, %s: the %s of %s %s (%s)\n", in->ticket,
			m.buf, in->enable ? "enable" : "disable", in->at,
			applied ? "was applied" : "was not applied", in->detail);
		strbuf_release(&d);
	}
	strbuf_release(&why);
	strbuf_release(&m);
}

/*
 * Make the calls, each written to the intents before it is made and with its outcome after.
 * Returns the calls not made or failed; *stop set when the intents could not be written (no
 * further call is made: a call the disk does not know of is the record lost).
 */
static int apply_all(struct ufm *u, const char *url, const char *conf, const char *state,
		     bool *stop)
{
	struct strbuf p = STRBUF_INIT, b = STRBUF_INIT, why = STRBUF_INIT, err = STRBUF_INIT,
		      d = STRBUF_INIT, m = STRBUF_INIT, det = STRBUF_INIT;
	int failed = 0;
	char now[64];
	for (size_t i = 0; i < u->nr_disable + u->nr_reenable && !*stop; i++) {
		bool enable = i >= u->nr_disable;
		size_t ti;
		const char *guid;
		unsigned num;
		strbuf_reset(&p);
		strbuf_reset(&b);
		strbuf_reset(&why);
		strbuf_reset(&err);
		strbuf_reset(&d);
		strbuf_reset(&m);
		strbuf_reset(&det);
		if (!enable) {
			const struct ufm_decision *dc = &u->disable[i];
			const struct ufm_end *pe = &u->ends[dc->port_end].e;
			ti = (size_t)dc->ticket;
			guid = pe->guid;
			num = pe->num;
			strbuf_addf(&d, "vigil fabric ufm: %s, ticket %s", dc->cause,
				    u->tickets[ti].id);
		} else {
			ti = (size_t)u->reenable[i - u->nr_disable];
			guid = u->tickets[ti].guid;
			num = u->tickets[ti].num;
			strbuf_addf(&d, "vigil fabric ufm: ticket %s closed", u->tickets[ti].id);
		}
		strbuf_add_clean(&m, u->tickets[ti].port);
		if (!ufm_rest_call(guid, num, enable, d.buf, &p, &b, &why)) {
			fprintf(stderr, "vigil fabric ufm: not applied to %s: %s\n", m.buf, why.buf);
			failed++;
			continue;
		}
		now_text(now, sizeof(now));
		size_t k = ufm_intent_add(u, &u->tickets[ti], guid, num, enable, now);
		if (ufm_intents_save(u, state, true, &err) < 0) {
			struct strbuf e = STRBUF_INIT;
			strbuf_add_clean(&e, err.buf);
			fprintf(stderr, "vigil fabric ufm: %s %s not made: its intent could not be "
					"recorded (%s); no further call is made\n",
				enable ? "enable of" : "disable of", m.buf, e.buf);
			strbuf_release(&e);
			/* never made: nothing to carry */
			u->intents[k].outcome = UFM_OUT_NOT_APPLIED;
			u->intents[k].resolved = true;
			*stop = true;
			failed++;
			break;
		}
		enum ufm_outcome o = rest_call(url, conf, p.buf, b.buf, NULL, &det);
		ufm_intent_settle(u, k, o, det.buf);
		if (o == UFM_OUT_DONE) {
			/* an earlier run's unsettled call of the same kind is settled by this one */
			for (size_t j = 0; j < u->nr_intents; j++)
				if (j != k && u->intents[j].carried &&
				    u->intents[j].enable == enable &&
				    !strcmp(u->intents[j].ticket, u->tickets[ti].id) &&
				    ufm_intent_unknown(&u->intents[j]))
					ufm_intent_settle(u, j, UFM_OUT_DONE, "settled by a later call");
		}
		struct strbuf e = STRBUF_INIT;
		strbuf_add_clean(&e, det.buf);
		if (o == UFM_OUT_DONE)
			fprintf(stderr, "vigil fabric ufm: %s %s: done (ticket %s)\n",
				enable ? "enabled" : "disabled", m.buf, u->tickets[ti].id);
		else if (o == UFM_OUT_NOT_APPLIED)
			fprintf(stderr, "vigil fabric ufm: %s %s failed: %s\n",
				enable ? "enable" : "disable", m.buf, e.buf);
		else
			fprintf(stderr, "vigil fabric ufm: %s %s: state unknown, it may have been "
					"applied: %s (ticket %s keeps it)\n",
				enable ? "enable of" : "disable of", m.buf, e.buf, u->tickets[ti].id);
		strbuf_release(&e);
		if (o != UFM_OUT_DONE)
			failed++;
		if (ufm_intents_save(u, state, true, &err) < 0) {
			struct strbuf e2 = STRBUF_INIT;
			strbuf_add_clean(&e2, err.buf);
			fprintf(stderr, "vigil fabric ufm: the outcome of that call could not be "
					"recorded (%s): its intent stays on disk and the next run "
					"takes it in; no further call is made\n",
				e2.buf);
			strbuf_release(&e2);
			*stop = true;
		}
	}
	strbuf_release(&p);
	strbuf_release(&b);
	strbuf_release(&why);
	strbuf_release(&err);
	strbuf_release(&d);
	strbuf_release(&m);
	strbuf_release(&det);
	return failed;
}

/* A URL curl is handed as one argument: no control bytes or spaces (a newline would end a
 * header or a config line somewhere), no user:password@ (ps would show it: --credentials). */
static bool url_ok(const char *url, const char **why)
{
	if (!starts_with(url, "https://") && !starts_with(url, "http://")) {
		*why = "--apply wants an http:// or https:// URL";
		return false;
	}
	for (const char *s = url; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f) {
			*why = "--apply: the URL holds a space or a control byte";
			return false;
		}
	/* the API path is appended: after a '?' or '#' it would be a query or a fragment, and
	 * the POST would go to the page at URL, whose 200 would read as done */
	if (strpbrk(url, "?#")) {
		*why = "--apply: the URL is UFM's base (https://ufm.example), without ? or #";
		return false;
	}
	const char *host = strstr(url, "//") + 2;
	size_t hl = strcspn(host, "/?#");
	if (memchr(host, '@', hl)) {
		*why = "--apply: no user:password@ in the URL (ps shows it): use --credentials";
		return false;
	}
	if (strlen(url) > 2048) {
		*why = "--apply: the URL is longer than 2048 bytes";
		return false;
	}
	return true;
}

static int opt_count(const char *opt, const char *arg, unsigned min, unsigned max, unsigned *out)
{
	uint64_t v;
	if (!parse_u64(arg, &v) || v < min || v > max) {
		usage_error("fabric ufm", "%s wants a whole number from %u to %u", opt, min, max);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

int cmd_fabric_ufm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, 'c' },
		{ "flap-downs", required_argument, NULL, 'F' },
		{ "flap-window", required_argument, NULL, 'W' },
		{ "error-events", required_argument, NULL, 'E' },
		{ "apply", required_argument, NULL, 'A' },
		{ "credentials", required_argument, NULL, 'C' },
		{ "rest-timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *apply = NULL, *creds = NULL;
	bool json = false, csv = false;
	struct ufm_config cfg;
	int c;
	ufm_config_default(&cfg);
	/* under ulimit -f a write past the limit must fail (EFBIG, said) rather than kill vigil
	 * between a REST call and the record of its outcome */
	signal(SIGXFSZ, SIG_IGN);
	if (argc >= 2 && !strcmp(argv[1], "close"))
		return cmd_close(argc - 1, argv + 1);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state = optarg; break;
		case 'j': json = true; break;
		case 'c': csv = true; break;
		case 'A': apply = optarg; break;
		case 'C': creds = optarg; break;
		case 'F':
			if (opt_count("--flap-downs", optarg, 2, 1000, &cfg.flap_downs) < 0)
				return EXIT_USAGE;
			break;
		case 'E':
			if (opt_count("--error-events", optarg, 1, 1000, &cfg.error_events) < 0)
				return EXIT_USAGE;
			break;
		case 'W':
			if (opt_count("--flap-window", optarg, 1, 30 * 86400, &cfg.flap_window_s) < 0)
				return EXIT_USAGE;
			break;
		case 'T':
			if (opt_count("--rest-timeout", optarg, 1, 600, &rest_timeout_s) < 0)
				return EXIT_USAGE;
			break;
		case 'h':
			fputs(ufm_usage, stdout);
			return EXIT_HEALTHY;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage_error("fabric ufm", "which event.log? (vigil fabric ufm FILE...)");
		return EXIT_USAGE;
	}
	if (json && csv) {
		usage_error("fabric ufm", "--json or --csv, not both");
		return EXIT_USAGE;
	}
	if (!apply != !creds) {
		usage_error("fabric ufm", "--apply URL wants --credentials FILE, and the other way");
		return EXIT_USAGE;
	}
	const char *uwhy;
	if (apply && !url_ok(apply, &uwhy)) {
		usage_error("fabric ufm", "%s", uwhy);
		return EXIT_USAGE;
	}
	if (apply && !state) {
		usage_error("fabric ufm", "--apply wants --state DIR: a call that changes the fabric "
					  "is recorded there before it is made");
		return EXIT_USAGE;
	}
	if (argc - optind > 256) {
		usage_error("fabric ufm", "at most 256 files at once");
		return EXIT_USAGE;
	}
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, conf = STRBUF_INIT,
		      m = STRBUF_INIT;
	struct ufm u;
	int ret = EXIT_USAGE, lock = -1;
	/* vigil(1)'s contract: the state directory and the credentials are the set-up, refused
	 * before any log is read (2, like a bad -c); from the logs on, what fails is "could not
	 * tell" (3): a log unreadable, a state or intent that cannot be written after the work */
	int fail_code = EXIT_USAGE;
	bool stop = false;
	ufm_init(&u, &cfg);
	/* everything that could stop the run is checked before the first REST call */
	/* made on first use (the README's /var/lib/vigil/fabric on a fresh host): 0700, since
	 * the tickets name the fabric's ports; what is already there is judged as it is */
	if (state && (mkdir_state_dir(state, 0700, &err) < 0 ||
		      (lock = ufm_state_open(state, &err)) < 0))
		goto fail;
	if (creds && read_credentials(creds, &conf, &err) < 0)
		goto fail;
	if (state && ufm_state_load(&u, state, &err) < 0)
		goto fail;
	if (state && ufm_intents_load(&u, state, &err) < 0)
		goto fail;
	if (apply)
		reconcile(&u, apply, conf.buf);
	fail_code = EXIT_UNKNOWN;
	if (ufm_read_files(&u, (const char *const *)argv + optind, (size_t)(argc - optind),
			   &err) < 0)
		goto fail;
	ufm_decide(&u);
	if (!ufm_understood(&u) && !ufm_unknown_count(&u)) {
		fprintf(stderr, "vigil fabric ufm: no line of the input is a UFM event (empty, "
				"or not an event.log): cannot tell\n");
		ret = EXIT_UNKNOWN;
		goto out;
	}
	int failed = 0;
	if (apply) {
		/* the tickets on disk before any call: a call never names a ticket nobody kept */
		if (ufm_state_save(&u, state, &err) < 0) {
			strbuf_addstr(&err, "; no REST call was made");
			goto fail;
		}
		failed = apply_all(&u, apply, conf.buf, state, &stop);
	}
	if (json)
		ufm_write_json(&u, &out);
	else if (csv)
		ufm_write_csv(&u, &out);
	else
		ufm_write_text(&u, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (state && ufm_state_save(&u, state, &err) < 0) {
		if (u.nr_intents)
			strbuf_addf(&err, "; the REST calls are recorded in '%s/%s': the next run "
					  "takes them in",
				    state, UFM_INTENTS_FILE);
		goto fail;
	}
	/* the tickets hold the outcomes now: keep only the intents still unsettled */
	if (state && !stop && u.nr_intents && ufm_intents_save(&u, state, false, &err) < 0) {
		struct strbuf e = STRBUF_INIT;
		strbuf_add_clean(&e, err.buf);
		fprintf(stderr, "vigil fabric ufm: %s (the settled intents stay there; the next run "
				"takes them in again, harmlessly)\n",
			e.buf);
		strbuf_release(&e);
	}
	if (failed)
		fprintf(stderr, "vigil fabric ufm: %d REST calls were not made or failed\n", failed);
	if (ufm_unknown_count(&u))
		fprintf(stderr, "vigil fabric ufm: %zu REST calls may or may not have been applied: "
				"check those ports on UFM (the next --apply run asks UFM)\n",
			ufm_unknown_count(&u));
	ret = stop ? EXIT_UNKNOWN
	      : u.nr_disable || u.nr_reenable || ufm_unknown_count(&u) ? EXIT_UNHEALTHY
								       : EXIT_HEALTHY;
	goto out;
fail:
	strbuf_add_clean(&m, err.buf);
	fprintf(stderr, "vigil fabric ufm: %s\n", m.buf);
	ret = fail_code;
out:
	fflush(stdout);
	if (lock >= 0)
		close(lock);
	ufm_release(&u);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&m);
	if (conf.len)
		memset(conf.buf, 0, conf.len);
	strbuf_release(&conf);
	return ret;
}
