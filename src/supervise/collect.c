/* collect.c: a hang's or slowdown's evidence, gathered on every host before anything dies
 * (collect.h). */
#include "collect.h"
#include "evidence.h"
#include "pyhook.h"
#include "../lib/fileio.h"
#include "../lib/run_group.h"
#include "../lib/util.h"
#include "../slurm/fleet.h"

#include <string.h>
#include <unistd.h>

int sup_pyhook_install(const char *run_dir, char *dir, size_t size, struct strbuf *err)
{
	struct strbuf d = STRBUF_INIT;
	int rc = pyhook_install(run_dir, &d, err);
	if (rc == 0 && d.len >= size) {
		strbuf_addstr(err, "the hook's directory path is too long");
		rc = -1;
	}
	if (rc == 0)
		memcpy(dir, d.buf, d.len + 1);
	strbuf_release(&d);
	return rc;
}

/*
 * Beyond doubt, excluded at once: a rank frozen (stopped in most samples) or one busy in nearly
 * every sample while the median rank waits (a straggler the others wait for), not on a GPU (a
 * CUDA rank waiting for its GPU spins: evidence.h). The rest (stacks unlike the majority, silent
 * first, no answer) is confirmed by a smoke test alone before anything is drained.
 */
void sup_judge_evidence(const struct evidence *ev, struct strlist *suspects, struct strlist *sick,
			struct strlist *why)
{
	double med = ev->busy_median;
	for (size_t i = 0; i < ev->ranks_nr; i++) {
		const struct evidence_rank *r = &ev->ranks[i];
		if (!r->host || !r->samples)
			continue;
		struct strbuf why_r = STRBUF_INIT;
		if (r->states[EVIDENCE_T] * 2 > r->samples)
			strbuf_addf(&why_r, "rank %ld stopped (T) in %u of %u samples", r->rank,
				    r->states[EVIDENCE_T], r->samples);
		else if (!r->gpu && r->busy >= 0.8 && med <= 0.3)
			strbuf_addf(&why_r, "rank %ld busy in %.0f %% of samples while the median "
				    "rank was busy in %.0f %% (the others wait for it)", r->rank,
				    r->busy * 100, med * 100);
		/*
		 * Doubtful evidence (docs/SECURITY.md: another user's process claimed a rank there, a rank
		 * was claimed twice, the ranks were not tied to the step) never drains by itself:
		 * the host is a suspect, confirmed by a smoke test alone first.
		 */
		if (why_r.len && strlist_has(&ev->doubtful_hosts, r->host)) {
			if (!strlist_has(suspects, r->host))
				strlist_add(suspects, r->host);
		} else if (why_r.len && !strlist_has(sick, r->host)) {
			strlist_add(sick, r->host);
			strlist_add(why, why_r.buf);
		}
		strbuf_release(&why_r);
	}
}

void sup_collect_evidence(const struct sup_options *o, const char *attempt_dir,
			  const char *step_id, char *const *hosts, size_t nr_hosts,
			  const struct rankout *ro, unsigned world, bool hang, struct strbuf *summary,
			  struct strlist *suspects, struct strlist *sick, struct strlist *why)
{
	struct strlist base = STRLIST_INIT, remote = STRLIST_INIT;
	struct strbuf tmp = STRBUF_INIT;
	strlist_add(&base, o->cmds.srun ? o->cmds.srun : "srun");
	strlist_add(&base, "--nodes=1");
	strlist_add(&base, "--ntasks=1");
	strlist_add(&base, "--overlap");
	strbuf_addf(&tmp, "--jobid=%s", o->job_id);
	strlist_add(&base, tmp.buf);
	strlist_add(&base, "--job-name=vigil-stacks");
	strlist_add(&base, "--quiet");
	for (size_t i = 0; i < o->nr_srun_extra; i++)
		strlist_add(&base, o->srun_extra[i]);
	strlist_add(&remote, o->vigil_remote);
	strlist_add(&remote, "stacks");
	strlist_add(&remote, "--json");
	strlist_add(&remote, "--attempt-dir");
	strlist_add(&remote, attempt_dir);
	/*
	 * Whose ranks (docs/SECURITY.md): the job, the attempt's step ("JOB.STEP" of the step-id file)
	 * and the job's uid (vigil run runs as the job's user), so that another user's process
	 * naming the attempt is ignored there. Without the step the ranks are doubt.
	 */
	if (o->job_id && *o->job_id) {
		strlist_add(&remote, "--job");
		strlist_add(&remote, o->job_id);
	}
	const char *dot = step_id ? strchr(step_id, '.') : NULL;
	if (dot && o->job_id && (size_t)(dot - step_id) == strlen(o->job_id) &&
	    !strncmp(step_id, o->job_id, (size_t)(dot - step_id))) {
		strlist_add(&remote, "--step");
		strlist_add(&remote, dot + 1);
	}
	strbuf_reset(&tmp);
	strbuf_addf(&tmp, "%ld", (long)getuid());
	strlist_add(&remote, "--uid");
	strlist_add(&remote, tmp.buf);
	strbuf_reset(&tmp);
	struct fleet_plan plan = {
		.srun_args = (const char *const *)base.items,
		.nr_srun_args = base.nr,
		.remote = (const char *const *)remote.items,
		.nr_remote = remote.nr,
	};
	struct child *ch = xcalloc(nr_hosts ? nr_hosts : 1, sizeof(*ch));
	const char ***argv = xcalloc(nr_hosts ? nr_hosts : 1, sizeof(*argv));
	struct strbuf *nl = xcalloc(nr_hosts ? nr_hosts : 1, sizeof(*nl));
	struct run_group g;
	run_group_init(&g, 64);
	for (size_t i = 0; i < nr_hosts; i++) {
		strbuf_init(&nl[i], 0);
		argv[i] = fleet_argv(&plan, hosts[i], &nl[i]);
		child_init(&ch[i]);
		ch[i].argv = argv[i];
		ch[i].timeout_ms = (unsigned)(o->stacks_timeout_s * 1000);
		ch[i].out_cap = 8u << 20;
		run_group_add(&g, &ch[i]);
	}
	run_group_run(&g, NULL, NULL);

	/* each host's answer, kept beside the evidence */
	struct evidence_host *answers = xcalloc(nr_hosts + 1, sizeof(*answers));
	for (size_t i = 0; i < nr_hosts; i++) {
		bool ok = ch[i].exited && ch[i].exit_code == 0 && ch[i].out.len;
		answers[i].host = hosts[i];
		answers[i].output = ok ? ch[i].out.buf : NULL;
		answers[i].len = ok ? ch[i].out.len : 0;
		if (ok) {
			strbuf_reset(&tmp);
			strbuf_addf(&tmp, "%s/stacks-%s.json", attempt_dir, hosts[i]);
			write_file_atomic(tmp.buf, ch[i].out.buf, ch[i].out.len, 0644, NULL);
		}
	}
	double *last = xcalloc(world ? world : 1, sizeof(*last));
	const char **rank_hosts = xcalloc(world ? world : 1, sizeof(*rank_hosts));
	for (unsigned r = 0; r < world; r++) {
		last[r] = ro && r < ro->world && ro->ranks[r].last_output > 0
				  ? ro->ranks[r].last_output : -1;
		/* rank r runs on hosts[r / G] (step.h) */
		size_t h = o->tasks_per_node ? r / o->tasks_per_node : 0;
		rank_hosts[r] = h < nr_hosts ? hosts[h] : NULL;
	}
	struct evidence ev;
	evidence_init(&ev);
	struct evidence_input in = {
		.hosts = answers,
		.hosts_nr = nr_hosts,
		.last_output = last,
		.last_output_nr = world,
		.rank_hosts = rank_hosts,
		.rank_hosts_nr = world,
		.now = wall_seconds(),
		.world_size = world,
		.hang = hang,
	};
	evidence_build(&ev, &in);
	strbuf_add_clean(summary, ev.summary.buf);
	sup_judge_evidence(&ev, suspects, sick, why);
	for (size_t i = 0; i < ev.suspect_hosts.nr; i++)
		if (!strlist_has(sick, ev.suspect_hosts.items[i]) &&
		    !strlist_has(suspects, ev.suspect_hosts.items[i]))
			strlist_add(suspects, ev.suspect_hosts.items[i]);
	strbuf_reset(&tmp);
	strbuf_addf(&tmp, "%s/evidence.json", attempt_dir);
	write_file_atomic(tmp.buf, ev.json.buf, ev.json.len, 0644, NULL);
	evidence_release(&ev);
	free(rank_hosts);
	free(last);
	free(answers);
	for (size_t i = 0; i < nr_hosts; i++) {
		child_release(&ch[i]);
		free(argv[i]);
		strbuf_release(&nl[i]);
	}
	free(ch);
	free(argv);
	free(nl);
	run_group_release(&g);
	strlist_release(&base);
	strlist_release(&remote);
	strbuf_release(&tmp);
}
