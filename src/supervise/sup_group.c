/* sup_group.c: see sup_int.h */
#include "sup_int.h"

/* ---- group testing ---- */

/*
 * One test run on a group of hosts, as a step of its own: the smoke test (the trainer, or
 * --smoke, with VIGIL_SMOKE=1; sdc false) or the determinism test of a host whose replica
 * diverged (run.sdc-test, default `vigil stress gpu --determinism`; sdc true). TEST_FAILED
 * when it failed: a smoke test that did not pass, a determinism test that exited 1
 * (unhealthy); TEST_UNKNOWN when a determinism test could not tell (exit 3: no reference
 * digest for a lone GPU, no driver; a usage error, a deadline, a signal); TEST_REFUSED when
 * srun could not create the test's step (srun's reason into *refused): no task ran, so the
 * test says nothing of its hosts (unknown), and the run ends (the allocation is the fault).
 */
enum { TEST_PASSED, TEST_FAILED, TEST_UNKNOWN, TEST_REFUSED };

static int test_run(struct sup *s, const char *const *hosts, size_t n, unsigned round,
		    size_t index, bool sdc, struct strbuf *detail, struct strbuf *refused)
{
	const struct sup_options *o = s->o;
	struct strbuf dir = STRBUF_INIT, e = STRBUF_INIT, sf = STRBUF_INIT;
	strbuf_addf(&dir, "%s/smoke", o->run_dir);
	int result = TEST_FAILED;
	const char *sdc_default[] = { o->vigil_remote ? o->vigil_remote : "vigil", "stress", "gpu",
				      "--determinism", NULL };
	if (sup_make_dir(dir.buf, &e) < 0)
		goto out;
	strbuf_addf(&dir, "/attempt-%u-%s-%u-group-%zu", s->m.attempt, sdc ? "sdc" : "round",
		    round, index);
	if (sup_make_dir(dir.buf, &e) < 0)
		goto out;
	strbuf_addf(&sf, "%s/steps.jsonl", dir.buf);
	struct strlist env = STRLIST_INIT;
	sup_task_env(s, &env, true);
	struct step_spec spec = {
		.hosts = hosts,
		.nr_hosts = n,
		.tasks_per_node = o->tasks_per_node,
		.master_addr = sup_addr_of(s, hosts[0]),
		.master_port = o->master_port + 1000 + (round * 16 + (unsigned)index) % 1000,
		.attempt = s->m.attempt,
		.run_dir = o->run_dir,
		.attempt_dir = dir.buf,
		.step_file = sf.buf,
		.label = sdc ? "vigil-sdc-test" : "vigil-smoke",
		.env = (const char *const *)env.items,
		.cmd = sdc ? (o->sdc_test ? o->sdc_test : sdc_default) : o->smoke ? o->smoke : o->cmd,
	};
	/*
	 * The run's hang limit (its step times, else the floor) holds for a smoke run too: one
	 * that printed and then went quiet that long is hung. Waiting for run.smoke-timeout
	 * instead (300 s by default) cost every suspect of a hang minutes, twice.
	 */
	double quiet = s->at.det.have_step ? detect_hang_limit(&o->detect, &s->at.det)
					   : o->detect.hang_floor_s;
	if (sdc)
		quiet = 0; /* a stress test prints little until its end */
	int rc = s->W->smoke(s->W->ctx, s, &spec, o->smoke_timeout_s, quiet, &e);
	result = rc == 0		   ? TEST_PASSED
		 : rc == SUP_SMOKE_REFUSED ? TEST_REFUSED
		 : !sdc || rc == 1	   ? TEST_FAILED
					   : TEST_UNKNOWN;
	if (result == TEST_REFUSED) {
		strbuf_add(refused, e.buf, e.len);
		strbuf_reset(&e);
		strbuf_addstr(&e, "srun refused to create its step: ");
		strbuf_add(&e, refused->buf, refused->len);
	}
	strlist_release(&env);
out:
	strbuf_addf(detail, "%s[", detail->len ? "; " : "");
	for (size_t i = 0; i < n; i++)
		strbuf_addf(detail, "%s%s", i ? " " : "", hosts[i]);
	strbuf_addf(detail, "] %s%s", sdc ? "determinism test " : "",
		    result == TEST_PASSED ? "passed" : result == TEST_FAILED ? "failed"
									: "could not tell");
	if (result != TEST_PASSED && e.len) {
		strbuf_addstr(detail, " (");
		strbuf_add_clean(detail, e.buf);
		strbuf_addch(detail, ')');
	}
	strbuf_release(&dir);
	strbuf_release(&e);
	strbuf_release(&sf);
	return result;
}

/*
 * Find the hosts that make the run fail when no check explains it: rounds of smoke runs on
 * groups (grouptest.h), the groups of a round one after the other here (a group's step takes
 * its hosts whole, and the groups of a round are disjoint, so they could run at once; run
 * one by one they cannot disturb each other's timing). confirm: each suspect alone.
 */
void sup_do_group_test(struct sup *s, const struct sup_action *x)
{
	size_t n = x->hosts.nr;
	struct grouptest g;
	struct strbuf detail = STRBUF_INIT;
	struct strlist bad = STRLIST_INIT, why = STRLIST_INIT;
	bool everywhere = false;
	struct strbuf refused = STRBUF_INIT;
	/* a host whose replica diverged: its own determinism test, once (it repeats its work
	 * many times itself); a failure drains it, a pass says the step itself is not
	 * deterministic (or the replicas desynchronised), not the host */
	for (size_t i = 0; i < x->sdc_hosts.nr && !sup_sig_seen && !refused.len; i++) {
		const char *h[] = { x->sdc_hosts.items[i] };
		int r = test_run(s, h, 1, 1, i, true, &detail, &refused);
		if (r == TEST_REFUSED)
			break;
		if (r == TEST_FAILED) {
			strlist_add(&bad, x->sdc_hosts.items[i]);
			strlist_add(&why, "its replica's parameters diverged and it failed the "
					  "determinism test alone");
		} else {
			struct strbuf t = STRBUF_INIT;
			if (r == TEST_PASSED)
				strbuf_addf(&t, "%s passed the determinism test after its replica "
					    "diverged: a step that is not deterministic, or a "
					    "desynchronised replica, not this host; it stays",
					    x->sdc_hosts.items[i]);
			else
				strbuf_addf(&t, "the determinism test could not tell whether %s "
					    "computes wrong (see the group_test record); it stays, "
					    "and a divergence on it again is said again",
					    x->sdc_hosts.items[i]);
			sup_journal_event(s, "sdc_not_confirmed", x->sdc_hosts.items[i], t.buf);
			strbuf_release(&t);
		}
	}
	if (n)
		sup_say(s, "group testing %zu hosts%s", n,
			x->confirm ? " (each suspect alone)" : "");
	if (refused.len) {
		/* the allocation refused a test's step: nothing more is tested */
	} else if (x->confirm) { /* with no host (only determinism tests were asked): nothing more */
		/* a suspect named by evidence is tested alone, twice for a failure to count */
		for (size_t i = 0; i < n && !sup_sig_seen && !refused.len; i++) {
			const char *h[] = { x->hosts.items[i] };
			if (test_run(s, h, 1, 1, i, false, &detail, &refused) != TEST_PASSED &&
			    !refused.len &&
			    test_run(s, h, 1, 2, i, false, &detail, &refused) != TEST_PASSED &&
			    !refused.len) {
				strlist_add(&bad, x->hosts.items[i]);
				strlist_add(&why, "failed the smoke test alone, twice");
			}
		}
	} else {
		grouptest_init(&g, n, 2);
		unsigned round = 0;
		size_t k;
		while (!sup_sig_seen && !refused.len && (k = grouptest_next_round(&g)) > 0) {
			round++;
			for (size_t i = 0; i < k && !refused.len; i++) {
				const char **h = xcalloc(g.groups[i].nr + 1, sizeof(*h));
				for (size_t j = 0; j < g.groups[i].nr; j++)
					h[j] = x->hosts.items[g.groups[i].hosts[j]];
				int r = test_run(s, h, g.groups[i].nr, round, i, false, &detail,
						 &refused);
				if (r != TEST_REFUSED)
					grouptest_result(&g, i, r != TEST_PASSED);
				free(h);
			}
		}
		for (size_t i = 0; i < n && !refused.len; i++)
			if (grouptest_host(&g, i) == GT_BAD) {
				strlist_add(&bad, x->hosts.items[i]);
				strlist_add(&why, "group testing: made the smoke test fail, alone "
						  "and in every group it was in");
			}
		/* More than half the hosts failing alone is no fault of theirs: the command, its
		 * environment or the allocation fails anywhere. Nobody is drained for it. */
		if (n > 1 && bad.nr * 2 > n) {
			strbuf_addf(&detail, "; %zu of %zu hosts failed alone: the fault is not in a "
				    "host (the command or its environment), none excluded", bad.nr, n);
			strlist_release(&bad);
			strlist_release(&why);
			everywhere = true;
		}
		strbuf_addf(&detail, " (%u rounds, %u smoke runs)", g.rounds, g.tests);
		grouptest_release(&g);
	}
	sup_journal_event(s, "group_test", bad.nr == 1 ? bad.items[0] : NULL, detail.buf);
	sup_say(s, "group test: %s", detail.buf);
	if (refused.len) {
		/* the test is unknown, no host blamed: the machine ends the run */
		struct strbuf t = STRBUF_INIT;
		srun_refusal_describe(refused.buf, &t);
		sup_post_simple(s, SUP_EV_LAUNCH_REFUSED, NULL, t.buf);
		strbuf_release(&t);
	} else {
		struct sup_event e = { .kind = SUP_EV_SMOKE_RESULT,
				       .sick = (const char *const *)bad.items,
				       .sick_reasons = (const char *const *)why.items,
				       .nr_sick = bad.nr, .code = everywhere,
				       .text = everywhere ? detail.buf : NULL };
		sup_post(s, &e);
	}
	strbuf_release(&refused);
	strbuf_release(&detail);
	strlist_release(&bad);
	strlist_release(&why);
}
