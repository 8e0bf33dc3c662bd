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
#include "../lib/run.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
	"  --state DIR          keep tickets in DIR/ufm-state.json between runs\n"
	"  --json, --csv        the decisions as JSON or CSV\n"
	"  --flap-downs N       downs of one link within the window that make it flapping (3)\n"
	"  --flap-window SECS   that window (86400)\n"
	"  --error-events N     error-counter alarms of one link within the window (3)\n"
	"  --apply URL          make the REST calls on UFM at URL (https://ufm.example)\n"
	"  --credentials FILE   USER:PASSWORD for --apply (the first line of FILE)\n"
	"\n"
	"Without --apply the REST calls are printed, not made.\n"
	"Exit: 0 nothing to act on, 1 ports to disable or re-enable, 2 usage error or a file\n"
	"that cannot be read, 3 could not tell (no line of the logs was a UFM event).\n";

#define CURL_TIMEOUT_MS 30000

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
	int r = ufm_state_close(state, id, now, &err);
	if (r < 0) {
		struct strbuf m = STRBUF_INIT;
		strbuf_add_clean(&m, err.buf);
		fprintf(stderr, "vigil fabric ufm close: %s\n", m.buf);
		strbuf_release(&m);
		strbuf_release(&err);
		return EXIT_USAGE;
	}
	printf(r == 1 ? "ticket %s was closed already\n"
		      : "ticket %s closed: its port is to be re-enabled (the next 'vigil fabric ufm "
			"--state' run says so, and --apply does it)\n",
	       id);
	strbuf_release(&err);
	return EXIT_HEALTHY;
}

static bool cred_cb(void *arg, const char *data, size_t len)
{
	return strbuf_add(arg, data, len) == 0;
}

/* The credentials as a curl config line (user = "U:P"), or -1 with *err. */
static int read_credentials(const char *path, struct strbuf *conf, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	strbuf_init(&text, 4097);
	int r = read_file_stream(path, 0, 4096, cred_cb, &text, err);
	if (r != READ_OK) {
		if (r == READ_MISSING)
			error_set(err, "cannot read '%s': no such file", path);
		strbuf_release(&text);
		return -1;
	}
	char *nl = memchr(text.buf, '\n', text.len);
	size_t n = nl ? (size_t)(nl - text.buf) : text.len;
	if (n && text.buf[n - 1] == '\r')
		n--;
	if (!n || !memchr(text.buf, ':', n)) {
		strbuf_release(&text);
		return error_set(err, "'%s' holds no USER:PASSWORD line", path);
	}
	strbuf_addstr(conf, "user = \"");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)text.buf[i];
		if (ch < ' ' || ch == 0x7f) {
			strbuf_release(&text);
			return error_set(err, "'%s': the credentials hold control bytes", path);
		}
		if (ch == '"' || ch == '\\')
			strbuf_addch(conf, '\\');
		strbuf_addch(conf, (char)ch);
	}
	strbuf_addstr(conf, "\"\n");
	strbuf_release(&text);
	return 0;
}

/* One REST call through curl: 0 when UFM answered 2xx; -1 with *err. */
static int rest_apply(const char *url, const char *conf, const char *path, const char *body,
		      struct strbuf *err)
{
	struct strbuf full = STRBUF_INIT;
	size_t ul = strlen(url);
	while (ul && url[ul - 1] == '/')
		ul--;
	strbuf_add(&full, url, ul);
	strbuf_addstr(&full, path);
	const char *argv[] = { "curl", "-sS", "-K", "-", "-X", "POST", "-H",
			       "Content-Type: application/json", "--data-binary", body, "-o",
			       "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--",
			       full.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.stdin_data = conf;
	c.stdin_len = strlen(conf);
	c.timeout_ms = CURL_TIMEOUT_MS;
	c.timeout_name = "30 s for one REST call";
	c.out_cap = 4096;
	int r = -1;
	if (child_run(&c, err) < 0)
		goto out;
	if (!c.exited || c.exit_code) {
		struct strbuf how = STRBUF_INIT;
		child_describe(&c, &how);
		strbuf_rtrim(&c.err);
		error_set(err, "curl %s: %s", how.buf, c.err.len ? c.err.buf : "no message");
		strbuf_release(&how);
		goto out;
	}
	strbuf_trim(&c.out);
	if (c.out.len != 3 || c.out.buf[0] != '2') {
		error_set(err, "UFM answered HTTP %s", c.out.len ? c.out.buf : "(nothing)");
		goto out;
	}
	r = 0;
out:
	child_release(&c);
	strbuf_release(&full);
	return r;
}

/* Make the calls; reenabled tickets are marked so. The number of failed calls. */
static int apply_all(struct ufm *u, const char *url, const char *conf)
{
	struct strbuf p = STRBUF_INIT, b = STRBUF_INIT, why = STRBUF_INIT, err = STRBUF_INIT,
		      d = STRBUF_INIT, m = STRBUF_INIT;
	int failed = 0;
	char now[64];
	now_text(now, sizeof(now));
	for (size_t i = 0; i < u->nr_disable + u->nr_reenable; i++) {
		bool enable = i >= u->nr_disable;
		struct ufm_ticket *t;
		const char *guid;
		unsigned num;
		strbuf_reset(&p);
		strbuf_reset(&b);
		strbuf_reset(&why);
		strbuf_reset(&err);
		strbuf_reset(&d);
		strbuf_reset(&m);
		if (!enable) {
			const struct ufm_decision *dc = &u->disable[i];
			const struct ufm_end *pe = &u->ends[dc->port_end].e;
			t = &u->tickets[dc->ticket];
			guid = pe->guid;
			num = pe->num;
			strbuf_addf(&d, "vigil fabric ufm: %s, ticket %s", dc->cause, t->id);
		} else {
			t = &u->tickets[u->reenable[i - u->nr_disable]];
			guid = t->guid;
			num = t->num;
			strbuf_addf(&d, "vigil fabric ufm: ticket %s closed", t->id);
		}
		strbuf_add_clean(&m, enable ? t->port : t->port);
		if (!ufm_rest_call(guid, num, enable, d.buf, &p, &b, &why)) {
			fprintf(stderr, "vigil fabric ufm: not applied to %s: %s\n", m.buf, why.buf);
			failed++;
			continue;
		}
		if (rest_apply(url, conf, p.buf, b.buf, &err) < 0) {
			struct strbuf e = STRBUF_INIT;
			strbuf_add_clean(&e, err.buf);
			fprintf(stderr, "vigil fabric ufm: %s %s failed: %s\n",
				enable ? "enable" : "disable", m.buf, e.buf);
			strbuf_release(&e);
			failed++;
			continue;
		}
		fprintf(stderr, "vigil fabric ufm: %s %s: done (ticket %s)\n",
			enable ? "enabled" : "disabled", m.buf, t->id);
		if (enable) {
			t->status = UFM_TICKET_REENABLED;
			free(t->reenabled_at);
			t->reenabled_at = xstrdup(now);
		}
	}
	strbuf_release(&p);
	strbuf_release(&b);
	strbuf_release(&why);
	strbuf_release(&err);
	strbuf_release(&d);
	strbuf_release(&m);
	return failed;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *apply = NULL, *creds = NULL;
	bool json = false, csv = false;
	struct ufm_config cfg;
	int c;
	ufm_config_default(&cfg);
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
	if (apply && !starts_with(apply, "https://") && !starts_with(apply, "http://")) {
		usage_error("fabric ufm", "--apply wants an http:// or https:// URL");
		return EXIT_USAGE;
	}
	if (argc - optind > 256) {
		usage_error("fabric ufm", "at most 256 files at once");
		return EXIT_USAGE;
	}
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, conf = STRBUF_INIT,
		      m = STRBUF_INIT;
	struct ufm u;
	int ret = EXIT_USAGE;
	ufm_init(&u, &cfg);
	if (creds && read_credentials(creds, &conf, &err) < 0)
		goto fail;
	if (state && ufm_state_load(&u, state, &err) < 0)
		goto fail;
	if (ufm_read_files(&u, (const char *const *)argv + optind, (size_t)(argc - optind),
			   &err) < 0)
		goto fail;
	ufm_decide(&u);
	if (!ufm_understood(&u)) {
		fprintf(stderr, "vigil fabric ufm: no line of the input is a UFM event (empty, "
				"or not an event.log): cannot tell\n");
		ret = EXIT_UNKNOWN;
		goto out;
	}
	int failed = 0;
	if (apply)
		failed = apply_all(&u, apply, conf.buf);
	if (json)
		ufm_write_json(&u, &out);
	else if (csv)
		ufm_write_csv(&u, &out);
	else
		ufm_write_text(&u, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (state && ufm_state_save(&u, state, &err) < 0)
		goto fail;
	if (failed)
		fprintf(stderr, "vigil fabric ufm: %d REST calls were not made or failed\n", failed);
	ret = u.nr_disable || u.nr_reenable ? EXIT_UNHEALTHY : EXIT_HEALTHY;
	goto out;
fail:
	strbuf_add_clean(&m, err.buf);
	fprintf(stderr, "vigil fabric ufm: %s\n", m.buf);
	ret = EXIT_USAGE;
out:
	fflush(stdout);
	ufm_release(&u);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&m);
	if (conf.len)
		memset(conf.buf, 0, conf.len);
	strbuf_release(&conf);
	return ret;
}
