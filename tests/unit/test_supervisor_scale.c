/*
 * test_supervisor_scale.c: what `vigil run`'s supervisor does to stay cheap at scale
 * (docs/PERFORMANCE.md, vigil sim): a world that names the hosts a periodic watch asks about
 * (sup_world.watch_hosts) gets the same run as one whose watch asks every host; a world with
 * no step file and a lazy journal (vigil sim's) still journals every step; a check round past
 * 64 hosts counts its healthy hosts instead of naming each. In virtual time (src/sim/world.h).
 */
#include "../harness.h"
#include "../../src/sim/world.h"
#include "../../src/lib/fileio.h"

#include <stdio.h>
#include <string.h>

struct run {
	struct fakeworld fw;
	struct sup_options o;
	char dir[700];
	int rc;
	struct strbuf err, journal;
};

static void run_init(struct run *r, const char *name, size_t hosts, unsigned spares)
{
	memset(r, 0, sizeof(*r));
	fw_init(&r->fw, hosts, 2);
	snprintf(r->dir, sizeof(r->dir), "%s/run-scale-%s", test_memory_tmpdir(), name);
	fw_options(&r->fw, &r->o, r->dir, spares);
	strbuf_init(&r->err, 0);
	strbuf_init(&r->journal, 0);
}

static void run_go(struct run *r)
{
	char p[800];
	r->rc = supervise_in(&r->o, &r->fw.w, &r->err);
	snprintf(p, sizeof(p), "%s/journal.jsonl", r->dir);
	(void)read_file_bounded(p, &r->journal, 64u << 20, NULL);
}

static void run_release(struct run *r)
{
	fw_release(&r->fw);
	strbuf_release(&r->err);
	strbuf_release(&r->journal);
}

/* The user's lines with the run's directory as DIR (two runs need two directories). */
static void said(const struct run *r, struct strbuf *out)
{
	size_t dl = strlen(r->dir);
	strbuf_reset(out);
	for (const char *p = r->fw.out.buf; *p;) {
		if (!strncmp(p, r->dir, dl)) {
			strbuf_addstr(out, "DIR");
			p += dl;
		} else {
			strbuf_addch(out, *p++);
		}
	}
}

static void check_same_lines(const struct run *a, const struct run *b)
{
	struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;
	said(a, &x);
	said(b, &y);
	CHECK_STR(x.buf, y.buf);
	strbuf_release(&x);
	strbuf_release(&y);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Faults the watch must see: a host turning sick while it runs, one whose checks go
 * unanswered twice with an answer between (a streak a healthy answer ends), a lost node. */
static void watch_scenario(struct run *r, const char *name, bool named)
{
	run_init(r, name, 12, 3);
	r->fw.total_steps = 400;
	r->fw.watch_changed_only = named;
	fw_fault(&r->fw, 45, FW_SILENT, "n1");
	fw_fault(&r->fw, 70, FW_HEAL, "n1");
	fw_fault(&r->fw, 105, FW_SILENT, "n1");
	fw_fault(&r->fw, 130, FW_HEAL, "n1");
	fw_fault(&r->fw, 150, FW_SICK, "n4");
	fw_fault(&r->fw, 260, FW_LOST, "n6");
	run_go(r);
}

/* The watch over the hosts the world names is the watch over every host: the same outcome,
 * faults, exclusions, drains and check rounds, with fewer hosts asked. */
TEST(supervisor_vt_watch_of_named_hosts_is_the_watch_of_all)
{
	struct run all, named;
	watch_scenario(&all, "watch-all", false);
	watch_scenario(&named, "watch-named", true);
	CHECK_INT(all.rc, 0);
	CHECK_INT(named.rc, all.rc);
	check_same_lines(&named, &all);
	CHECK_INT(named.fw.launches, all.fw.launches);
	CHECK_INT(named.fw.drains, all.fw.drains);
	CHECK_INT(named.fw.check_rounds, all.fw.check_rounds);
	CHECK_MSG(named.fw.checked_hosts < all.fw.checked_hosts,
		  "the named watch asked %u hosts, every host's %u", named.fw.checked_hosts,
		  all.fw.checked_hosts);
	static const char *const classes[] = { "\"class\":\"unreachable\"", "\"class\":\"sick\"",
					       "\"class\":\"lost\"", "\"kind\":\"host_excluded\"" };
	for (size_t i = 0; i < sizeof(classes) / sizeof(*classes); i++)
		CHECK_MSG(count(named.journal.buf, classes[i]) == count(all.journal.buf, classes[i]),
			  "%s: %zu named, %zu all", classes[i], count(named.journal.buf, classes[i]),
			  count(all.journal.buf, classes[i]));
	CHECK_INT(count(all.journal.buf, "\"class\":\"unreachable\""), 2);
	CHECK_MSG(count(all.journal.buf, "\"kind\":\"host_excluded\"") >= 2, "%s",
		  all.journal.buf);
	run_release(&all);
	run_release(&named);
}

/* vigil sim's world: no step file looked for, a private run directory (a lazy journal and
 * rank files): every step is still journaled and every line of rank 0 in its file once the
 * run ends, and the run is the same. */
TEST(supervisor_vt_lazy_journal_keeps_every_step)
{
	struct run plain, lazy;
	run_init(&plain, "journal-plain", 4, 1);
	run_init(&lazy, "journal-lazy", 4, 1);
	lazy.fw.w.no_step_file = lazy.fw.w.run_dir_private = true;
	fw_fault(&plain.fw, 40, FW_CRASH, "n2")->code = 1;
	fw_fault(&lazy.fw, 40, FW_CRASH, "n2")->code = 1;
	run_go(&plain);
	run_go(&lazy);
	CHECK_INT(plain.rc, 0);
	CHECK_INT(lazy.rc, 0);
	check_same_lines(&lazy, &plain);
	size_t steps = count(plain.journal.buf, "\"kind\":\"step\"");
	CHECK_MSG(steps >= 100, "%zu step records", steps);
	CHECK_INT(count(lazy.journal.buf, "\"kind\":\"step\""), steps);
	CHECK_INT(count(lazy.journal.buf, "\n"), count(plain.journal.buf, "\n"));
	/* and rank 0's file of each attempt, gathered and written at the attempt's end */
	for (unsigned a = 0; a < 2; a++) {
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;
		char p[800];
		snprintf(p, sizeof(p), "%s/attempt-%u/rank-0.out", plain.dir, a);
		(void)read_file_bounded(p, &x, 16u << 20, NULL);
		snprintf(p, sizeof(p), "%s/attempt-%u/rank-0.out", lazy.dir, a);
		(void)read_file_bounded(p, &y, 16u << 20, NULL);
		CHECK_MSG(count(x.buf, "\n") >= 10, "attempt %u: %zu lines", a, count(x.buf, "\n"));
		CHECK_STR(y.buf, x.buf);
		strbuf_release(&x);
		strbuf_release(&y);
	}
	run_release(&plain);
	run_release(&lazy);
}

/* Past 64 hosts the checks after a stop count the healthy hosts and name the others; a
 * smaller round names every host (test_supervisor.c: "n2 healthy"). */
TEST(supervisor_vt_big_check_round_counts_the_healthy)
{
	struct run r;
	run_init(&r, "big-round", 70, 2);
	fw_fault(&r.fw, 40, FW_CRASH, "n2")->code = 1;
	run_go(&r);
	CHECK_INT(r.rc, 0);
	CHECK_CONTAINS(r.journal.buf, "68 of 68 healthy");
	CHECK_MSG(!strstr(r.journal.buf, "n2 healthy"), "every host named:\n%.2000s",
		  r.journal.buf);
	run_release(&r);
}
