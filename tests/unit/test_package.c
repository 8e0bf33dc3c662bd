/*
 * test_package.c: what the package installs, checked from the source tree: the systemd unit
 * passes 'systemd-analyze verify' and scores at most 4.0 in 'systemd-analyze security' (skipped,
 * saying so, where systemd-analyze is absent), and contrib/vigil.conf, the package's conffile,
 * lists every key of the schema (src/cmd/config_keys.c) commented out at its default, so that
 * it cannot drift from the keys the binary reads. To write it again after a key changed:
 *   VIGIL_WRITE_CONF=contrib/vigil.conf build/san/test-runner vigil_conf
 */
#include "../harness.h"
#include "../../src/cmd/config_keys.h"
#include "../../src/lib/fileio.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char unit_rel[] = "contrib/systemd/vigil-agent.service";

/* The program on PATH, or NULL. */
static char *on_path(const char *prog)
{
	const char *path = getenv("PATH");
	struct strbuf p = STRBUF_INIT;
	for (const char *s = path ? path : "/usr/bin:/bin"; *s;) {
		const char *e = strchrnul(s, ':');
		strbuf_reset(&p);
		strbuf_add(&p, s, (size_t)(e - s));
		strbuf_addf(&p, "/%s", prog);
		if (access(p.buf, X_OK) == 0)
			return strbuf_detach(&p, NULL);
		s = *e ? e + 1 : e;
	}
	strbuf_release(&p);
	return NULL;
}

static void run_prog(struct child *c, const char *const *argv)
{
	child_init(c);
	c->argv = argv;
	c->timeout_ms = 30000;
	c->merge_stderr = true;
	CHECK(child_run(c, NULL) == 0);
	CHECK_MSG(c->exited, "%s did not finish: %s", argv[0], c->out.buf);
}

/* The unit with ExecStart's /usr/bin/vigil as the binary under test (verify wants it
 * executable), in this test's directory. */
static void unit_copy(struct strbuf *path)
{
	struct strbuf src = STRBUF_INIT, text = STRBUF_INIT, out = STRBUF_INIT;
	test_src_path(&src, unit_rel);
	CHECK(read_file_bounded(src.buf, &text, 1 << 20, NULL) == READ_OK);
	const char *at = strstr(text.buf, "ExecStart=/usr/bin/vigil ");
	CHECK_MSG(at, "%s has no 'ExecStart=/usr/bin/vigil ': the package installs vigil there",
		  unit_rel);
	strbuf_add(&out, text.buf, (size_t)(at - text.buf));
	strbuf_addf(&out, "ExecStart=%s %s", test_vigil_bin(),
		    at + strlen("ExecStart=/usr/bin/vigil "));
	strbuf_addf(path, "%s/vigil-agent.service", test_tmpdir());
	test_write(test_tmpdir(), "vigil-agent.service", out.buf);
	strbuf_release(&src);
	strbuf_release(&text);
	strbuf_release(&out);
}

TEST(systemd_unit_verifies_and_is_hardened)
{
	char *sa = on_path("systemd-analyze");
	if (!sa)
		SKIP("no systemd-analyze here (Debian systemd): the unit is not checked");
	struct strbuf unit = STRBUF_INIT, src = STRBUF_INIT, text = STRBUF_INIT;
	unit_copy(&unit);
	struct child c;
	/* --man=no: the pages are checked apart (the package installs them; docs/ has them) */
	const char *verify[] = { sa, "verify", "--man=no", unit.buf, NULL };
	run_prog(&c, verify);
	CHECK_MSG(c.exit_code == 0 && !c.out.len, "systemd-analyze verify: exit %d:\n%s",
		  c.exit_code, c.out.buf);
	child_release(&c);

	const char *security[] = { sa, "security", "--offline=true", "--no-pager", unit.buf, NULL };
	run_prog(&c, security);
	const char *lvl = strstr(c.out.buf, "Overall exposure level for vigil-agent.service: ");
	CHECK_MSG(lvl, "no exposure level in:\n%s", c.out.buf);
	double score = strtod(lvl + strlen("Overall exposure level for vigil-agent.service: "),
			      NULL);
	CHECK_MSG(score <= 4.0, "exposure %.1f > 4.0:\n%s", score, c.out.buf);
	child_release(&c);

	/* Type=notify with a watchdog, and the man page it names exists */
	test_src_path(&src, unit_rel);
	CHECK(read_file_bounded(src.buf, &text, 1 << 20, NULL) == READ_OK);
	CHECK_CONTAINS(text.buf, "\nType=notify\n");
	CHECK_CONTAINS(text.buf, "\nWatchdogSec=");
	CHECK_CONTAINS(text.buf, "\nDocumentation=man:vigil-agent(1)");
	strbuf_reset(&src);
	test_src_path(&src, "docs/vigil-agent.1");
	CHECK(access(src.buf, R_OK) == 0);
	free(sa);
	strbuf_release(&unit);
	strbuf_release(&src);
	strbuf_release(&text);
}

/* The default written in a key's help ("... (default 60)"): one word, else none (prose such as
 * "default: as many as the PCI bus shows"). */
static void help_default(const char *help, struct strbuf *out)
{
	strbuf_reset(out);
	const char *d = strstr(help, "(default ");
	if (!d)
		return;
	d += strlen("(default ");
	size_t n = strcspn(d, ");, ");
	/* "default 0: off" */
	if (d[n] == ' ' && n > 1 && d[n - 1] == ':')
		n--;
	else if (d[n] == ' ' || (d[n] == ',' && d[n + 1] != ' '))
		return;
	strbuf_add(out, d, n);
}

static void expected_conf(struct strbuf *out)
{
	size_t nr;
	const struct config_key *keys = config_schema(&nr);
	struct strbuf sec = STRBUF_INIT, def = STRBUF_INIT, scratch = STRBUF_INIT;
	bool *done = xcalloc(nr, sizeof(*done));
	strbuf_addstr(out,
		      "# /etc/vigil/vigil.conf: vigil's configuration (git-config style: [section],\n"
		      "# then 'key = value' lines; see vigil(1), CONFIGURATION, and the page of each\n"
		      "# command). Every key vigil reads is here, commented out, at its default where\n"
		      "# it has one value; a key with no value shown is unset by default (the line\n"
		      "# above it says what that means). Per-host sections: [host \"NAME\"].\n"
		      "#\n"
		      "# Generated from the schema (src/cmd/config_keys.c); tests/unit/test_package.c\n"
		      "# fails when the two differ.\n");
	for (size_t i = 0; i < nr; i++) {
		if (done[i])
			continue;
		const char *dot = strchr(keys[i].name, '.');
		strbuf_reset(&sec);
		strbuf_add(&sec, keys[i].name, (size_t)(dot - keys[i].name));
		strbuf_addf(out, "\n# [%s]\n", sec.buf);
		for (size_t j = i; j < nr; j++) {
			const char *k = keys[j].name;
			if (done[j] || strncmp(k, sec.buf, sec.len) || k[sec.len] != '.')
				continue;
			done[j] = true;
			help_default(keys[j].help, &def);
			/* every check runs unless told not to (the per-check row's help says
			 * only what false does) */
			if (!def.len && keys[j].type == CONFIG_BOOL && !strcmp(k + sec.len, ".enabled"))
				strbuf_addstr(&def, "true");
			/* "interval/10", "STATE/agent.sock": words, not a value the key takes */
			if (def.len && config_key_check(&keys[j], NULL, def.buf, &scratch) < 0)
				strbuf_reset(&def);
			strbuf_addf(out, "# %s\n#\t%s =%s%s\n", keys[j].help, k + sec.len + 1,
				    def.len ? " " : "", def.buf);
		}
	}
	free(done);
	strbuf_release(&sec);
	strbuf_release(&def);
	strbuf_release(&scratch);
}

TEST(vigil_conf_lists_every_key_commented_at_its_default)
{
	struct strbuf want = STRBUF_INIT, have = STRBUF_INIT, path = STRBUF_INIT;
	expected_conf(&want);
	const char *w = getenv("VIGIL_WRITE_CONF");
	if (w && *w) {
		CHECK(write_file(w, want.buf, want.len, false, NULL) == 0);
		SKIP("wrote VIGIL_WRITE_CONF");
	}
	test_src_path(&path, "contrib/vigil.conf");
	CHECK(read_file_bounded(path.buf, &have, 1 << 20, NULL) == READ_OK);
	if (strcmp(have.buf, want.buf)) {
		size_t at = 0, line = 1;
		while (have.buf[at] && have.buf[at] == want.buf[at])
			line += have.buf[at++] == '\n';
		test_write(test_tmpdir(), "vigil.conf", want.buf);
		CHECK_MSG(false, "contrib/vigil.conf differs from the schema at line %zu; the expected "
			  "file is %s/vigil.conf (VIGIL_WRITE_CONF=contrib/vigil.conf "
			  "test-runner vigil_conf writes it)", line, test_tmpdir());
	}
	/* uncommented, every key shown with a value is one vigil accepts */
	struct strbuf un = STRBUF_INIT, err = STRBUF_INIT;
	struct config cfg;
	size_t values = 0;
	for (const char *l = have.buf; *l;) {
		const char *e = strchrnul(l, '\n');
		if (starts_with(l, "# [")) {
			strbuf_add(&un, l + 2, (size_t)(e - l - 2));
			strbuf_addch(&un, '\n');
		} else if (starts_with(l, "#\t") && e[-1] != '=') {
			strbuf_add(&un, l + 1, (size_t)(e - l - 1));
			strbuf_addch(&un, '\n');
			values++;
		}
		l = *e ? e + 1 : e;
	}
	config_init(&cfg, NULL);
	CHECK_MSG(config_parse(&cfg, un.buf, un.len, "vigil.conf", &err) == 0 &&
		  config_keys_validate(&cfg, &err) == 0, "%s\n%s", err.buf, un.buf);
	CHECK_MSG(values > 60, "only %zu keys with their default", values);
	config_release(&cfg);
	strbuf_release(&un);
	strbuf_release(&err);
	strbuf_release(&want);
	strbuf_release(&have);
	strbuf_release(&path);
}
