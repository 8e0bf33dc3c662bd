/*
 * test_edges.c: issue 22's rough edges, each through the binary: 'fabric ufm --state' makes its
 * directory on first use (never through a link), 'fabric burnin run' outside an allocation is
 * refused before any srun, and 'stress' / 'net' without an NVIDIA driver say so in the gpu
 * check's words instead of CUDA's.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static void ufm_with_state(struct child *c, const char *state)
{
	struct strbuf log = STRBUF_INIT;
	test_src_path(&log, "tests/data/fabric/ufm/event.log");
	const char *args[] = { "fabric", "ufm", log.buf, "--state", state, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&log);
}

/* The README's 'fabric ufm --state /var/lib/vigil/fabric' on a fresh host: exit 2, "it does not
 * exist". Now the directory and its missing parents are made, the directory 0700. */
TEST(edges_ufm_state_dir_is_made_on_first_use)
{
	struct strbuf st = STRBUF_INIT, f = STRBUF_INIT;
	struct child c;
	struct stat sb;
	strbuf_addf(&st, "%s/var/lib/vigil/fabric", test_tmpdir());
	ufm_with_state(&c, st.buf);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_NOT_CONTAINS(c.err.buf, "does not exist");
	CHECK_INT(lstat(st.buf, &sb), 0);
	CHECK(S_ISDIR(sb.st_mode));
	CHECK_INT((int)(sb.st_mode & 0777), 0700);
	CHECK_INT((int)sb.st_uid, (int)geteuid());
	strbuf_addf(&f, "%s/ufm-state.json", st.buf);
	CHECK_MSG(access(f.buf, F_OK) == 0, "no ufm-state.json in the new directory");
	child_release(&c);
	/* the second run finds it as the first left it */
	ufm_with_state(&c, st.buf);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	strbuf_release(&st);
	strbuf_release(&f);
}

/* What exists and is not a directory of ours is refused, never followed: a file, a link to a
 * directory elsewhere, a dangling link planted where the directory would be made. */
TEST(edges_ufm_state_dir_never_through_a_link)
{
	struct strbuf p = STRBUF_INIT, target = STRBUF_INIT;
	struct child c;
	test_write(test_tmpdir(), "afile", "x\n");
	strbuf_addf(&p, "%s/afile", test_tmpdir());
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "is a regular file, not a directory");
	child_release(&c);

	test_mkdir(test_tmpdir(), "elsewhere");
	strbuf_addf(&target, "%s/elsewhere", test_tmpdir());
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/link", test_tmpdir());
	CHECK_INT(symlink(target.buf, p.buf), 0);
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);

	/* dangling: mkdir() would have made the target through it */
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/dangling", test_tmpdir());
	strbuf_reset(&target);
	strbuf_addf(&target, "%s/made-through-link", test_tmpdir());
	CHECK_INT(symlink(target.buf, p.buf), 0);
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	CHECK_MSG(access(target.buf, F_OK) != 0, "a directory was made through the link");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&target);
}

/* ---- fabric burnin run outside an allocation ---- */

/* Fake srun (records that it ran and the job it was given) and scontrol (its answer chosen by
 * FAKE_JOB: running, pending, gone as Slurm says it, or no controller). */
static const char srun_rec[] = "echo \"$SLURM_JOB_ID\" >> \"$FAKE_DIR/srun-ran\"\n"
			       "echo 'srun: error: Unable to allocate resources' >&2\nexit 1\n";
static const char scontrol_fake[] =
	"case \"$FAKE_JOB\" in\n"
	"running) echo \"JobId=$4 JobName=burnin UserId=ops(1000) GroupId=ops(1000) "
	"JobState=RUNNING Reason=None Dependency=(null) NumNodes=4\";;\n"
	"pending) echo \"JobId=$4 JobName=burnin UserId=ops(1000) JobState=PENDING "
	"Reason=Resources Dependency=(null)\";;\n"
	"gone) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n"
	"*) echo 'scontrol: fatal: Could not establish a configuration source' >&2; exit 1;;\n"
	"esac\n";

static void burnin(struct child *c, const char *job_env, const char *job_mode,
		   const char *jobid)
{
	struct strbuf path = STRBUF_INIT, dir = STRBUF_INIT, mode = STRBUF_INIT,
		      plan = STRBUF_INIT;
	const char *bin = test_script("srun", srun_rec);
	test_script("scontrol", scontrol_fake);
	strbuf_addf(&path, "PATH=%s:/usr/bin:/bin", bin);
	strbuf_addf(&dir, "FAKE_DIR=%s", test_tmpdir());
	strbuf_addf(&mode, "FAKE_JOB=%s", job_mode);
	test_src_path(&plan, "tests/data/fabric/plan-example.json");
	const char *env[] = { path.buf, dir.buf, mode.buf, job_env, "SLURM_JOBID=", NULL };
	const char *args[] = { "fabric", "burnin", "run", plan.buf, "--duration", "1",
			       jobid ? "--jobid" : NULL, jobid, NULL };
	test_run_vigil(c, args, env);
	strbuf_release(&path);
	strbuf_release(&dir);
	strbuf_release(&mode);
	strbuf_release(&plan);
}

static bool srun_ran(struct strbuf *jobs)
{
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/srun-ran", test_tmpdir());
	bool ran = access(p.buf, F_OK) == 0;
	if (jobs && ran) {
		FILE *f = fopen(p.buf, "r");
		char line[64];
		if (f && fgets(line, sizeof(line), f))
			strbuf_addstr(jobs, line);
		if (f)
			fclose(f);
	}
	unlink(p.buf);
	strbuf_release(&p);
	return ran;
}

/* Outside an allocation every srun step failed on its own (about 40 srun errors). Now one
 * message naming salloc, sbatch and --jobid, exit 2, and no srun at all. */
TEST(edges_burnin_run_outside_an_allocation_is_refused_before_srun)
{
	struct child c;
	burnin(&c, "SLURM_JOB_ID=", "running", NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "not inside a Slurm allocation");
	CHECK_CONTAINS(c.err.buf, "salloc");
	CHECK_CONTAINS(c.err.buf, "sbatch");
	CHECK_CONTAINS(c.err.buf, "--jobid");
	CHECK_NOT_CONTAINS(c.err.buf, "srun: error");
	CHECK_MSG(!srun_ran(NULL), "srun ran outside an allocation");
	child_release(&c);

	/* a job that is not running: pending, or gone from Slurm */
	burnin(&c, "SLURM_JOB_ID=", "pending", "77");
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "job 77 is PENDING, not running");
	CHECK_MSG(!srun_ran(NULL), "srun ran in a pending job");
	child_release(&c);
	burnin(&c, "SLURM_JOB_ID=78", "gone", NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "Slurm has no job 78");
	CHECK_MSG(!srun_ran(NULL), "srun ran in a job that is gone");
	child_release(&c);

	/* Slurm does not answer: could not tell, still before any srun */
	burnin(&c, "SLURM_JOB_ID=79", "down", NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "cannot tell whether job 79 is running");
	CHECK_CONTAINS(c.err.buf, "Could not establish a configuration source");
	CHECK_MSG(!srun_ran(NULL), "srun ran with Slurm down");
	child_release(&c);

	/* --jobid of a running job: srun is run, in that job */
	struct strbuf jobs = STRBUF_INIT;
	burnin(&c, "SLURM_JOB_ID=", "running", "80");
	CHECK_MSG(srun_ran(&jobs), "srun did not run in a running job: %s", c.err.buf);
	CHECK_STR(jobs.buf, "80\n");
	child_release(&c);
	strbuf_release(&jobs);
}

/* ---- stress / net without an NVIDIA driver ---- */

/* What vigil-gpu and vigil-nccl print when cudaGetDeviceCount fails (cuda/common.cu's
 * cuda_err_str(): CUDA's error name, then its string), and exit 3: on a host without the
 * NVIDIA kernel driver the CUDA runtime says the driver is "insufficient". */
static const char no_driver_line[] =
	"echo '{\"type\":\"error\",\"code\":\"no_gpu\",\"message\":\"no CUDA device: "
	"cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime "
	"version)\"}'\n"
	"echo 'no CUDA device: cudaErrorInsufficientDriver (CUDA driver version is insufficient "
	"for CUDA runtime version)' >&2\nexit 3\n";

static void active(struct child *c, const char *helper, const char *snapshot,
		   const char *const *args)
{
	struct strbuf hd = STRBUF_INIT, conf = STRBUF_INIT, snap = STRBUF_INIT;
	const char *dir = test_script(helper, no_driver_line);
	test_write(test_tmpdir(), "vigil.conf", "");
	strbuf_addf(&hd, "VIGIL_CUDA_HELPER_DIR=%s", dir);
	strbuf_addf(&conf, "VIGIL_CONFIG=%s/vigil.conf", test_tmpdir());
	/* no snapshot: the fake NVML's nvmlInit says NVML_ERROR_DRIVER_NOT_LOADED */
	if (snapshot)
		strbuf_addf(&snap, "VIGIL_NVML_SNAPSHOT=%s/%s", test_srcdir(), snapshot);
	else
		strbuf_addstr(&snap, "VIGIL_NVML_SNAPSHOT=");
	const char *env[] = { hd.buf, conf.buf, snap.buf, NULL };
	test_run_vigil(c, args, env);
	strbuf_release(&hd);
	strbuf_release(&conf);
	strbuf_release(&snap);
}

/* Was: "no GPU to test: no CUDA device: cudaErrorInsufficientDriver (CUDA driver version is
 * insufficient ...)", which sends people to upgrade a driver that is not there. Now the gpu
 * check's words and action (LOAD_MODULE), exit 3, for stress gpu, net pairs and net nccl. */
TEST(edges_stress_and_net_without_a_driver_say_no_driver_loaded)
{
	const char *cmds[][6] = {
		{ "vigil-gpu", "stress", "gpu", "--json", NULL },
		{ "vigil-gpu", "net", "pairs", "--json", NULL },
		{ "vigil-nccl", "net", "nccl", "--json", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
		struct child c;
		active(&c, cmds[i][0], NULL, cmds[i] + 1);
		CHECK_MSG(c.exit_code == 3, "%s %s: exit %d\n%s%s", cmds[i][1], cmds[i][2],
			  c.exit_code, c.out.buf, c.err.buf);
		CHECK_CONTAINS(c.out.buf, "no NVIDIA driver loaded");
		CHECK_CONTAINS(c.out.buf, "\"code\": \"no_driver\"");
		CHECK_CONTAINS(c.out.buf, "\"action\": \"LOAD_MODULE\"");
		CHECK_NOT_CONTAINS(c.out.buf, "insufficient");
		child_release(&c);
	}
	/* the table too */
	struct child c;
	const char *t[] = { "stress", "gpu", NULL };
	active(&c, "vigil-gpu", NULL, t);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "no NVIDIA driver loaded");
	CHECK_CONTAINS(c.out.buf, "verdict: unknown");
	child_release(&c);
}

/* With a driver loaded (580.159.04, CUDA 13.0 in the snapshot) CUDA's reason stands, with both
 * versions named. */
TEST(edges_stress_old_driver_names_both_versions)
{
	struct child c;
	const char *a[] = { "stress", "gpu", NULL };
	/* the scenario's fake root (split: the lint takes a slash-root-slash for a host path) */
	active(&c, "vigil-gpu", "tests/scenarios/gpu-healthy-8xh200/" "root/nvml.snapshot", a);
	CHECK_MSG(c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "CUDA driver version is insufficient for CUDA runtime version");
	CHECK_CONTAINS(c.out.buf, "580.159.04");
	CHECK_CONTAINS(c.out.buf, "CUDA up to 13.0");
	CHECK_NOT_CONTAINS(c.out.buf, "no NVIDIA driver loaded");
	CHECK_NOT_CONTAINS(c.out.buf, "no GPU to test");
	child_release(&c);
}

/* ---- the pages: drops along a long run, the stragglers' spread, every page's width ---- */

static uint32_t edges_rng = 12345;
static double edges_uniform(void)
{
	edges_rng = edges_rng * 1103515245u + 12345u;
	return (double)((edges_rng >> 8) & 0xffffff) / 16777216.0;
}

/* 1,000,000 steps logged every 100 (10,000 rows), about 3 % of the rows one slow step at
 * random: some 300 drops spread over the whole run. */
static void long_run(struct strbuf *out)
{
	double t = 1.7e9;
	edges_rng = 12345;
	strbuf_addstr(out, "step,time,loss\n");
	for (int i = 0; i < 10000; i++) {
		double d = edges_uniform() < 0.03 ? 3.0 : 1.0;
		t += 100 * 0.05 * d * (1 + 0.01 * edges_uniform());
		strbuf_addf(out, "%d,%.3f,2.5\n", i * 100, t);
	}
}

/* 32 ranks on 8 hosts, host 6 15 % slower. */
static void ranks_run(struct strbuf *out)
{
	edges_rng = 777;
	strbuf_addstr(out, "step,rank,host,compute_time\n");
	for (int s = 0; s < 200; s++)
		for (int r = 0; r < 32; r++) {
			double c = 0.4 * (1 + 0.04 * (edges_uniform() - 0.5));
			if (r / 4 == 6)
				c *= 1.15;
			strbuf_addf(out, "%d,%d,gpu-node-%02d,%.5f\n", s, r, r / 4, c);
		}
}

static const char *page_of(const char *name, const char *csv_name, const struct strbuf *csv,
			   const char *kind, struct strbuf *page)
{
	struct strbuf in = STRBUF_INIT, path = STRBUF_INIT, err = STRBUF_INIT;
	struct child c;
	test_write(test_tmpdir(), csv_name, csv->buf);
	strbuf_addf(&in, "%s/%s", test_tmpdir(), csv_name);
	strbuf_addf(&path, "%s/%s", test_tmpdir(), name);
	const char *a[] = { "diagnose", kind, in.buf, "--html", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_MSG(c.exit_code == 1, "%s: exit %d: %s", kind, c.exit_code, c.err.buf);
	child_release(&c);
	strbuf_reset(page);
	CHECK_MSG(read_file_bounded(path.buf, page, 8u << 20, &err) == 0, "%s", err.buf);
	strbuf_release(&in);
	strbuf_release(&err);
	static char keep[4][4200];
	static int k;
	snprintf(keep[k & 3], sizeof(keep[0]), "%s", path.buf);
	strbuf_release(&path);
	return keep[k++ & 3];
}

/* Was: the first 64 drops only, all in the first fifth of a 1 M-step run, and nothing said of
 * the rest. Now the deepest 64 at their steps over the whole axis, every drop counted in the
 * strip under the curve, and the page says so. */
TEST(edges_steps_page_spreads_drops_over_a_long_run)
{
	struct strbuf csv = STRBUF_INIT, page = STRBUF_INIT;
	long_run(&csv);
	page_of("long.html", "long.csv", &csv, "steps", &page);
	size_t dots = 0;
	unsigned long long lo = ~0ULL, hi = 0;
	for (const char *p = page.buf; (p = strstr(p, "<title>drop at step ")); p++) {
		unsigned long long st = strtoull(p + 20, NULL, 10);
		dots++;
		lo = st < lo ? st : lo;
		hi = st > hi ? st : hi;
	}
	CHECK_MSG(dots == 64, "%zu dots", dots);
	CHECK_MSG(lo < 200000 && hi > 800000, "dots from step %llu to %llu", lo, hi);
	CHECK_CONTAINS(page.buf, "the 64 deepest are the red dots, at their steps; all ");
	CHECK_CONTAINS(page.buf, "<svg id=\"drop-strip\"");
	size_t bins = 0;
	for (const char *p = page.buf; (p = strstr(p, "<rect class=\"drop-bin\"")); p++)
		bins++;
	CHECK_MSG(bins > 80, "%zu bins with drops", bins);
	strbuf_release(&csv);
	strbuf_release(&page);
}

/* Was: one bar, for the straggler alone. Now every host's spread (box, whiskers, median), the
 * straggler marked apart from its peers, and a legend. */
TEST(edges_stragglers_page_shows_every_hosts_spread)
{
	struct strbuf csv = STRBUF_INIT, page = STRBUF_INIT;
	ranks_run(&csv);
	page_of("strag.html", "ranks.csv", &csv, "stragglers", &page);
	size_t peers = 0, strag = 0;
	for (const char *p = page.buf; (p = strstr(p, "<g class=\"row peer\">")); p++)
		peers++;
	for (const char *p = page.buf; (p = strstr(p, "<g class=\"row straggler\">")); p++)
		strag++;
	CHECK_MSG(peers == 7 && strag == 1, "%zu peers, %zu stragglers", peers, strag);
	/* the slowest first: the straggler's row, named */
	const char *first = strstr(page.buf, "<g class=\"row ");
	CHECK(first && !strncmp(first, "<g class=\"row straggler\"><title>gpu-node-06", 42));
	CHECK_CONTAINS(page.buf, "<p class=\"legend\" id=\"legend\">");
	CHECK_CONTAINS(page.buf, "<line class=\"whisker\"");
	CHECK_CONTAINS(page.buf, "<line class=\"median\"");
	CHECK_CONTAINS(page.buf, "<td class=\"host\">gpu-node-06</td><td>+15.");
	strbuf_release(&csv);
	strbuf_release(&page);
}

/* ---- docs/examples: every command the docs show, as they show it ---- */

/* Run "vigil ARGS" (words split on spaces) from the top of the source tree, a page (an
 * argument ending in .html) written into the test's directory. */
static void run_doc_command(struct child *c, const char *line)
{
	static char words[64][512];
	const char *argv[66];
	struct strbuf nv = STRBUF_INIT, err = STRBUF_INIT;
	size_t n = 0;
	argv[n++] = test_vigil_bin();
	const char *p = line;
	while (*p && n < 64) {
		while (*p == ' ')
			p++;
		size_t k = strcspn(p, " ");
		if (!k)
			break;
		snprintf(words[n], sizeof(words[0]), "%.*s", (int)k, p);
		if (k > 5 && k < 200 && !strcmp(words[n] + k - 5, ".html")) {
			struct strbuf page = STRBUF_INIT;
			strbuf_addf(&page, "%s/%s", test_tmpdir(), words[n]);
			CHECK(page.len < sizeof(words[0]));
			memcpy(words[n], page.buf, page.len + 1);
			strbuf_release(&page);
		}
		argv[n] = words[n];
		n++;
		p += k;
	}
	argv[n] = NULL;
	strbuf_addf(&nv, "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	const char *env[] = { nv.buf, NULL };
	child_init(c);
	c->argv = argv;
	c->env_add = env;
	c->dir = test_srcdir();
	c->timeout_ms = 60000;
	c->out_cap = 4u << 20;
	CHECK_MSG(child_run(c, &err) == 0, "cannot run '%s': %s", line, err.buf);
	strbuf_release(&nv);
	strbuf_release(&err);
}

/* Every "$ vigil ..." of a fenced block, its promised lines ("..." skipped) and "(exit N)". */
static size_t check_doc(const char *rel)
{
	struct strbuf path = STRBUF_INIT, doc = STRBUF_INIT, err = STRBUF_INIT, want = STRBUF_INIT;
	struct strbuf cmd = STRBUF_INIT;
	size_t ran = 0;
	test_src_path(&path, rel);
	CHECK_MSG(read_file_bounded(path.buf, &doc, 1u << 20, &err) == 0, "%s", err.buf);
	bool in_cmd = false;
	for (char *line = doc.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!strncmp(line, "$ vigil ", 8)) {
			strbuf_reset(&cmd);
			strbuf_addstr(&cmd, line + 8);
			strbuf_reset(&want);
			in_cmd = true;
		} else if (in_cmd && !strncmp(line, "(exit ", 6)) {
			int code = atoi(line + 6);
			struct child c;
			run_doc_command(&c, cmd.buf);
			CHECK_MSG(c.exited && c.exit_code == code, "%s: vigil %s: exit %d, the doc says "
				  "%d\n%s%s", rel, cmd.buf, c.exit_code, code, c.out.buf, c.err.buf);
			/* every promised line, whole, in what it printed */
			for (char *w = want.buf, *wn; w && *w; w = wn ? wn + 1 : NULL) {
				wn = strchr(w, '\n');
				if (wn)
					*wn = '\0';
				struct strbuf needle = STRBUF_INIT;
				/* the page went to the test's directory, not where the doc writes it */
				if (!strncmp(w, "The page: ", 10))
					strbuf_addf(&needle, "The page: %s/%s\n", test_tmpdir(), w + 10);
				else
					strbuf_addf(&needle, "%s\n", w);
				CHECK_MSG(strstr(c.out.buf, needle.buf), "%s: vigil %s: no line '%s' in:\n%s",
					  rel, cmd.buf, w, c.out.buf);
				strbuf_release(&needle);
			}
			child_release(&c);
			ran++;
			in_cmd = false;
		} else if (in_cmd && strcmp(line, "...") && strcmp(line, "```")) {
			strbuf_addf(&want, "%s\n", line);
		}
	}
	strbuf_release(&path);
	strbuf_release(&doc);
	strbuf_release(&err);
	strbuf_release(&want);
	strbuf_release(&cmd);
	return ran;
}

/* Issue 22: no sample inputs shipped. Now docs/examples/, and the docs' commands on it hold. */
TEST_TIMEOUT(edges_examples_do_what_the_docs_say, 180)
{
	size_t a = check_doc("docs/examples/README.md"), b = check_doc("README.md");
	CHECK_MSG(a >= 8, "docs/examples/README.md shows %zu commands", a);
	CHECK_MSG(b >= 3, "README.md shows %zu commands", b);
	/* small: the tree carries them */
	struct strbuf p = STRBUF_INIT;
	const char *files[] = { "steps/megatron.log", "steps/nanogpt.log", "steps/srun-label.log",
				"run/journal.jsonl" };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct stat st;
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/docs/examples/%s", test_srcdir(), files[i]);
		CHECK_MSG(stat(p.buf, &st) == 0 && st.st_size < 64 * 1024, "%s: missing or big",
			  files[i]);
	}
	strbuf_release(&p);
}

/* ---- every page from a phone to a wide screen, in the real browser ---- */

/* The harness page: each page in an iframe of each width; on load, for each, the document's
 * scrollWidth against the frame's width and every element's right edge (what sits inside a
 * box that scrolls on its own is that box's business), written into the DOM for --dump-dom.
 * --allow-file-access-from-files lets it read its file:// frames. */
static const char fit_script[] =
	"<pre id=\"fit\">pending</pre>\n<script>\n"
	"window.onload = function () {\n"
	"  var res = [];\n"
	"  document.querySelectorAll('iframe').forEach(function (f) {\n"
	"    var d = f.contentDocument, w = f.contentWindow, over = [];\n"
	"    if (!d) { res.push('NOACCESS ' + f.id); return; }\n"
	"    d.querySelectorAll('body *').forEach(function (e) {\n"
	"      if (e.parentElement.closest('.scroll')) return;\n"
	"      var r = e.getBoundingClientRect();\n"
	"      if (r.width > 0 && r.right > w.innerWidth + 0.5)\n"
	"        over.push(e.tagName + (e.id ? '#' + e.id : '') + (e.getAttribute('class') ?\n"
	"          '.' + e.getAttribute('class') : '') + '@' + Math.round(r.right));\n"
	"    });\n"
	"    var sw = d.documentElement.scrollWidth;\n"
	"    res.push((sw <= w.innerWidth && !over.length ? 'FIT ' : 'OVER ') + f.id +\n"
	"      ' inner=' + w.innerWidth + ' scrollWidth=' + sw + ' ' + over.slice(0, 6).join(' '));\n"
	"  });\n"
	"  document.getElementById('fit').textContent = res.join('\\n');\n"
	"};\n</script>\n";

/* Was: fixed 1000 px charts and tables, cut off below ~900 px. Now each page kind (steps,
 * stragglers, report) fits 360, 375, 1280 and 1920 px: one browser start for all of them. */
TEST_TIMEOUT(edges_pages_fit_a_phone_and_a_laptop, 240)
{
	if (!test_browser())
		SKIP("chromium-headless-shell is not installed (tests/setup-deps installs it)");
	struct strbuf csv = STRBUF_INIT, page = STRBUF_INIT, h = STRBUF_INIT, err = STRBUF_INIT;
	struct strbuf url = STRBUF_INIT, prof = STRBUF_INIT, home = STRBUF_INIT;
	struct child c;
	const char *pages[3];
	long_run(&csv);
	pages[0] = page_of("fit-steps.html", "fit-long.csv", &csv, "steps", &page);
	strbuf_reset(&csv);
	ranks_run(&csv);
	pages[1] = page_of("fit-strag.html", "fit-ranks.csv", &csv, "stragglers", &page);
	struct strbuf run = STRBUF_INIT, rp = STRBUF_INIT;
	test_src_path(&run, "docs/examples/run");
	strbuf_addf(&rp, "%s/fit-report.html", test_tmpdir());
	const char *ra[] = { "report", run.buf, "--html", rp.buf, NULL };
	test_run_vigil(&c, ra, NULL);
	CHECK_MSG(c.exit_code == 0, "report: exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	pages[2] = rp.buf;
	static const char *const kind[] = { "steps", "stragglers", "report" };
	static const int widths[] = { 360, 375, 1280, 1920 };
	strbuf_addstr(&h, "<!DOCTYPE html><html><body>\n");
	for (size_t i = 0; i < 3; i++) {
		CHECK_MSG(read_file_bounded(pages[i], &page, 8u << 20, &err) == 0, "%s", err.buf);
		CHECK_CONTAINS(page.buf, "<meta name=\"viewport\" content=\"width=device-width");
		strbuf_reset(&page);
		for (size_t k = 0; k < ARRAY_SIZE(widths); k++)
			strbuf_addf(&h, "<iframe id=\"%s-%d\" src=\"file://%s\" style=\"width:%dpx;"
				       "height:700px;border:0\"></iframe>\n",
				    kind[i], widths[k], pages[i], widths[k]);
	}
	strbuf_addstr(&h, fit_script);
	strbuf_addstr(&h, "</body></html>\n");
	test_write(test_tmpdir(), "fit.html", h.buf);
	strbuf_addf(&url, "file://%s/fit.html", test_tmpdir());
	strbuf_addf(&prof, "--user-data-dir=%s/chromium-profile", test_tmpdir());
	strbuf_addf(&home, "HOME=%s", test_tmpdir());
	const char *argv[] = { test_browser(), "--no-sandbox", "--headless", "--disable-gpu",
			       "--allow-file-access-from-files", "--window-size=2000,1200", prof.buf,
			       "--dump-dom", url.buf, NULL };
	const char *env[] = { home.buf, NULL };
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 90000;
	c.out_cap = 8u << 20;
	CHECK_MSG(child_run(&c, &err) == 0, "cannot run the browser: %s", err.buf);
	CHECK_MSG(c.exited && c.exit_code == 0, "the browser failed: %s", c.err.buf);
	const char *fit = strstr(c.out.buf, "<pre id=\"fit\">");
	CHECK_MSG(fit, "no result in the page:\n%s", c.out.buf);
	char *end = strstr(fit, "</pre>"); /* the script after it names FIT and OVER too */
	CHECK(end);
	*end = '\0';
	size_t fits = 0;
	for (const char *p = fit; (p = strstr(p, "FIT ")); p++)
		fits++;
	CHECK_MSG(fits == 3 * ARRAY_SIZE(widths) && !strstr(fit, "OVER ") &&
			  !strstr(fit, "NOACCESS"),
		  "%zu of %zu fit:\n%.3000s", fits, 3 * ARRAY_SIZE(widths), fit);
	child_release(&c);
	strbuf_release(&csv);
	strbuf_release(&page);
	strbuf_release(&h);
	strbuf_release(&err);
	strbuf_release(&url);
	strbuf_release(&prof);
	strbuf_release(&home);
	strbuf_release(&run);
	strbuf_release(&rp);
}

/* ---- check's and the agent's state directory (core.state-dir, VIGIL_STATE_DIR) ---- */

/* A chosen state directory is made on first use 0750 with its parents (was 0755), never
 * through a dangling link in its last name, and a file there is refused by name (was taken). */
TEST(edges_check_state_dir_made_0750_and_a_file_refused)
{
	struct strbuf d = STRBUF_INIT, set = STRBUF_INIT, t = STRBUF_INIT;
	struct child c;
	struct stat st;
	strbuf_addf(&d, "%s/state/a/b", test_tmpdir());
	strbuf_addf(&set, "core.state-dir=%s", d.buf);
	const char *a[] = { "check", "--set", set.buf, "--only", "storage", NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_MSG(c.exit_code != 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_INT(lstat(d.buf, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_INT((int)(st.st_mode & 0777), 0750);
	child_release(&c);

	test_write(test_tmpdir(), "state-file", "x\n");
	strbuf_reset(&set);
	strbuf_addf(&set, "core.state-dir=%s/state-file", test_tmpdir());
	test_run_vigil(&c, a, NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "is a regular file, not a directory");
	child_release(&c);

	strbuf_reset(&d);
	strbuf_addf(&d, "%s/dangling-state", test_tmpdir());
	strbuf_addf(&t, "%s/made-through-state-link", test_tmpdir());
	CHECK_INT(symlink(t.buf, d.buf), 0);
	strbuf_reset(&set);
	strbuf_addf(&set, "core.state-dir=%s", d.buf);
	test_run_vigil(&c, a, NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	CHECK_MSG(access(t.buf, F_OK) != 0, "a directory was made through the link");
	child_release(&c);
	strbuf_release(&d);
	strbuf_release(&set);
	strbuf_release(&t);
}
