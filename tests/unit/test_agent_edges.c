/*
 * test_agent_edges.c: what an operator meets around the agent, through the binary: its lines in
 * the journal (sd-daemon priority prefixes when stderr is the journal's stream, the native
 * protocol's fields on a datagram socket the test binds), SIGHUP reloading the configuration
 * (and keeping it when the new one is wrong), and the small words ("1 cycle", 'check --cached'
 * saying why once).
 */
#include "../harness.h"
#include "../../src/cmd/agent_log.h"
#include "../../src/lib/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* An Xid 79 in the shape of the kernel's kmsg record (values ours). */
static const char edge_xid_kmsg[] =
	"3,200,2000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=pt_main_thread, GPU has "
	"fallen off the bus.\n";

static char *slurp(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	read_file_bounded(path, &sb, 1 << 20, NULL);
	return strbuf_detach(&sb, NULL);
}

/*
 * Start 'vigil ARGS' with stderr on the file errpath; with journal, JOURNAL_STREAM names that
 * file's device:inode as systemd names its stream's; sock (may be NULL) is VIGIL_JOURNAL_SOCKET.
 */
static pid_t spawn_agent(const char *const *args, const char *errpath, bool journal,
			 const char *sock)
{
	int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	char js[64];
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	const char *argv[32];
	size_t n = 0;
	argv[n++] = test_vigil_bin();
	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 2);
		int devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 1);
		if (journal)
			setenv("JOURNAL_STREAM", js, 1);
		else
			unsetenv("JOURNAL_STREAM");
		if (sock)
			setenv("VIGIL_JOURNAL_SOCKET", sock, 1);
		else
			unsetenv("VIGIL_JOURNAL_SOCKET");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Under systemd (JOURNAL_STREAM is stderr) every line says its priority: err for unhealthy,
 * warning for unknown, info for the routine; anywhere else the lines are plain. */
TEST(agent_journal_stream_lines_carry_their_priority)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, errf = STRBUF_INIT,
		      none = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&errf, "%s/stderr", dir);
	/* no journal socket there: the prefixed stderr line is the way */
	strbuf_addf(&none, "%s/no-journal.sock", dir);
	test_mkdir(dir, "root/sys");
	const char *args[] = { "agent", "--once", "--only", "kernel", "--root", root.buf,
			       "--state-dir", state.buf, "--listen", "off", NULL };

	test_write(dir, "root/dev/kmsg", edge_xid_kmsg);
	CHECK_INT(wait_exit(spawn_agent(args, errf.buf, true, none.buf)), 1);
	char *log = slurp(errf.buf);
	CHECK_CONTAINS(log, "<3>vigil agent: unhealthy: kernel: Xid 79 on GPU 0000:3b:00.0");
	CHECK_CONTAINS(log, "<6>vigil agent: unknown-host: checks every 60 s");
	CHECK_CONTAINS(log, "<6>vigil agent: stopping after 1 cycle: kernel: Xid 79");
	free(log);

	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	CHECK_INT(wait_exit(spawn_agent(args, errf.buf, true, none.buf)), 0);
	log = slurp(errf.buf);
	CHECK_CONTAINS(log, "<6>vigil agent: healthy");
	free(log);

	test_write(dir, "root/dev/kmsg", ""); /* a log with nothing in it: could not tell */
	CHECK_INT(wait_exit(spawn_agent(args, errf.buf, true, none.buf)), 3);
	log = slurp(errf.buf);
	CHECK_CONTAINS(log, "<4>vigil agent: unknown: kernel: ");
	free(log);

	/* not the journal: no JOURNAL_STREAM, or one naming another file (inherited by a child
	 * whose stderr went elsewhere) */
	test_write(dir, "root/dev/kmsg", edge_xid_kmsg);
	for (int other = 0; other <= 1; other++) {
		if (other) {
			struct stat st;
			CHECK(stat(dir, &st) == 0);
			char js[64];
			snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
			setenv("JOURNAL_STREAM", js, 1);
		}
		pid_t pid = other ? fork() : spawn_agent(args, errf.buf, false, none.buf);
		if (other && pid == 0) {
			/* the spawn with the inherited, foreign JOURNAL_STREAM kept */
			int fd = open(errf.buf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(fd, 2);
			const char *argv[] = { test_vigil_bin(), "agent", "--once", "--only",
					       "kernel", "--root", root.buf, "--state-dir",
					       state.buf, "--listen", "off", NULL };
			execv(argv[0], (char *const *)argv);
			_exit(127);
		}
		if (other)
			unsetenv("JOURNAL_STREAM");
		CHECK_INT(wait_exit(pid), 1);
		log = slurp(errf.buf);
		CHECK_MSG(!strchr(log, '<'), "a prefix off the journal: %s", log);
		CHECK_CONTAINS(log, "vigil agent: unhealthy: kernel: Xid 79");
		CHECK_CONTAINS(log, "vigil agent: stopping after 1 cycle: ");
		free(log);
	}
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&errf);
	strbuf_release(&none);
}

/* Where the journal's native socket answers, each line is one datagram with PRIORITY and the
 * finding's check, code and device as fields, and nothing is written twice to stderr. */
TEST(agent_journal_native_datagram_has_check_code_and_device)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, errf = STRBUF_INIT,
		      sock = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&errf, "%s/stderr", dir);
	strbuf_addf(&sock, "%s/journal.sock", dir);
	test_mkdir(dir, "root/sys");
	test_write(dir, "root/dev/kmsg", edge_xid_kmsg);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	CHECK(sock.len < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock.buf, sock.len + 1);
	CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	const char *args[] = { "agent", "--once", "--only", "kernel", "--root", root.buf,
			       "--state-dir", state.buf, "--listen", "off", NULL };
	CHECK_INT(wait_exit(spawn_agent(args, errf.buf, true, sock.buf)), 1);

	struct strbuf all = STRBUF_INIT;
	char buf[8192];
	ssize_t n;
	int entries = 0;
	bool found = false;
	while ((n = recv(s, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		buf[n] = '\0';
		entries++;
		strbuf_addf(&all, "%s--\n", buf);
		if (strstr(buf, "MESSAGE=vigil agent: unhealthy: kernel: Xid 79")) {
			found = true;
			CHECK_CONTAINS(buf, "\nPRIORITY=3\n");
			CHECK_CONTAINS(buf, "\nSYSLOG_IDENTIFIER=vigil\n");
			CHECK_CONTAINS(buf, "\nVIGIL_CHECK=kernel\n");
			CHECK_CONTAINS(buf, "\nVIGIL_CODE=xid\n");
			CHECK_CONTAINS(buf, "\nVIGIL_DEVICE=GPU 0000:3b:00.0\n");
			CHECK_MSG(buf[n - 1] == '\n', "the entry ends with its last field's newline");
		}
	}
	CHECK_MSG(found, "no unhealthy entry among %d: %s", entries, all.buf);
	CHECK_CONTAINS(all.buf, "MESSAGE=vigil agent: stopping after 1 cycle: ");
	CHECK_CONTAINS(all.buf, "PRIORITY=6\n");
	char *log = slurp(errf.buf);
	CHECK_NOT_CONTAINS(log, "vigil agent: unhealthy"); /* in the journal once */
	free(log);
	close(s);
	strbuf_release(&all);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&errf);
	strbuf_release(&sock);
}

/* The entry itself: a message with a newline (from a log line) stays one field. */
TEST(agent_journal_entry_is_key_value_lines)
{
	struct strbuf out = STRBUF_INIT;
	struct agent_log_fields f = { "gpu", "ecc_uncorrected", "GPU 2 (0000:5d:00.0)" };
	agent_log_entry(&out, ALOG_WARNING, &f, "two\nlines");
	CHECK_NOT_CONTAINS(out.buf, "two\nlines");
	CHECK(starts_with(out.buf, "MESSAGE=two"));
	CHECK_CONTAINS(out.buf, "\nPRIORITY=4\nSYSLOG_IDENTIFIER=vigil\nVIGIL_CHECK=gpu\n"
				"VIGIL_CODE=ecc_uncorrected\nVIGIL_DEVICE=GPU 2 (0000:5d:00.0)\n");
	strbuf_reset(&out);
	struct agent_log_fields none = { NULL, "", NULL };
	agent_log_entry(&out, ALOG_INFO, &none, "cycle");
	CHECK_STR(out.buf, "MESSAGE=cycle\nPRIORITY=6\nSYSLOG_IDENTIFIER=vigil\n");
	strbuf_release(&out);
}

static bool wait_for(const char *path, const char *needle, unsigned ms)
{
	for (unsigned t = 0; t < ms; t += 50) {
		char *s = slurp(path);
		bool ok = strstr(s, needle) != NULL;
		free(s);
		if (ok)
			return true;
		usleep(50000);
	}
	return false;
}

/*
 * SIGHUP: the agent reads its configuration file again, waking from its sleep (a minute here).
 * A check's setting (kernel.ignore-xid) turns the verdict and agent.interval the interval, both
 * seen in the textfile within seconds; a changed
 * agent.listen is said to take a restart; a broken file keeps the configuration before, with
 * FILE:LINE, and the agent goes on with it.
 */
TEST_TIMEOUT(agent_sighup_reloads_the_configuration_and_keeps_it_when_wrong, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, errf = STRBUF_INIT,
		      conf = STRBUF_INIT, prom = STRBUF_INIT, want = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&errf, "%s/stderr", dir);
	strbuf_addf(&conf, "%s/vigil.conf", dir);
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	test_mkdir(dir, "root/sys");
	test_write(dir, "root/dev/kmsg", edge_xid_kmsg);
	/* a minute between cycles: the HUP must end the sleep, or nothing changes in time */
	test_write(dir, "vigil.conf", "[agent]\ninterval = 60\njitter = 0\nlisten = off\n");
	const char *args[] = { "agent", "--only", "kernel", "--root", root.buf, "--state-dir",
			       state.buf, "--config", conf.buf, "--prom", prom.buf, "--socket",
			       "off", NULL };
	pid_t pid = spawn_agent(args, errf.buf, false, NULL);
	CHECK_MSG(wait_for(prom.buf, "vigil_healthy 0\n", 10000), "no first cycle");
	CHECK(wait_for(prom.buf, "vigil_agent_interval_seconds 60\n", 100));
	usleep(300000); /* into the sleep */

	test_write(dir, "vigil.conf", "[agent]\ninterval = 2\njitter = 0\nlisten = 127.0.0.1:1\n"
				      "[kernel]\nignore-xid = 79\n");
	kill(pid, SIGHUP);
	CHECK_MSG(wait_for(prom.buf, "vigil_healthy 1\n", 5000), "the reload did not turn it");
	CHECK(wait_for(prom.buf, "vigil_agent_interval_seconds 2\n", 100));
	CHECK(wait_for(errf.buf, "vigil agent: SIGHUP: configuration reloaded: checks every 2 s",
		       2000));
	CHECK(wait_for(errf.buf, "vigil agent: SIGHUP: agent.listen changed, which takes a "
				 "restart", 100));
	CHECK(wait_for(errf.buf, "vigil agent: healthy", 100));

	/* broken: an unknown key on line 3; the verdict stays as the old configuration has it */
	test_write(dir, "vigil.conf", "[kernel]\nignore-xid = 79\nignore-xdi = 13\n");
	kill(pid, SIGHUP);
	strbuf_addf(&want, "vigil agent: SIGHUP: configuration not reloaded: %s:3: unknown key "
			   "'kernel.ignore-xdi'", conf.buf);
	CHECK_MSG(wait_for(errf.buf, want.buf, 5000), "no message naming the line");
	CHECK(wait_for(errf.buf, "; keeping the one loaded before", 100));
	CHECK(wait_for(prom.buf, "vigil_agent_interval_seconds 2\n", 100));
	/* two more cycles under the kept configuration: still healthy */
	char *p = slurp(prom.buf);
	const char *c = strstr(p, "\nvigil_agent_cycles_total ");
	unsigned long cycles = c ? strtoul(c + strlen("\nvigil_agent_cycles_total "), NULL, 10) : 0;
	CHECK(cycles >= 2);
	free(p);
	strbuf_reset(&want);
	strbuf_addf(&want, "vigil_agent_cycles_total %lu\n", cycles + 1);
	CHECK_MSG(wait_for(prom.buf, want.buf, 5000), "no cycle after the failed reload");
	CHECK(wait_for(prom.buf, "vigil_healthy 1\n", 100));
	kill(pid, SIGTERM);
	CHECK_INT(wait_exit(pid), 0);
	char *log = slurp(errf.buf);
	CHECK_INT(count(log, "vigil agent: healthy"), 1); /* said once, when it turned */
	free(log);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&errf);
	strbuf_release(&conf);
	strbuf_release(&prom);
	strbuf_release(&want);
}

/* 'vigil check --cached' with no agent result says why once in its table (the check's row),
 * and once in the verdict line. */
TEST(check_cached_without_a_result_says_why_once)
{
	const char *dir = test_tmpdir();
	test_mkdir(dir, "state");
	struct strbuf state = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", dir);
	chmod(state.buf, 0755);
	const char *args[] = { "check", "--cached", "--state-dir", state.buf, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_INT(count(c.out.buf, "no cached result (is 'vigil agent' running?)"), 2);
	CHECK_CONTAINS(c.out.buf, "  -> INVESTIGATE\n");
	child_release(&c);
	const char *js[] = { "check", "--cached", "--state-dir", state.buf, "--json", NULL };
	test_run_vigil(&c, js, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "\"code\": \"cache\"");
	child_release(&c);
	strbuf_release(&state);
}

/* Under nohup (HUP ignored by the caller) a HUP is no reload and no exit: the agent runs on. */
TEST_TIMEOUT(agent_started_with_hup_ignored_keeps_ignoring_it, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, root = STRBUF_INIT, log = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&state, "%s/nohup-state", dir);
	strbuf_addf(&log, "%s/nohup.log", dir);
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGHUP, SIG_IGN);
		int fd = open(log.buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(test_vigil_bin(), "vigil", "agent", "--only", "pcie", "--root", root.buf,
		      "--state-dir", state.buf, "--listen", "off", "--socket", "off", "--interval",
		      "1", "--jitter", "0", "--cycles", "3", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(500000);
	kill(pid, SIGHUP);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent under nohup ended with %d", st);
	read_file_bounded(log.buf, &text, 1 << 20, NULL);
	CHECK_MSG(!strstr(text.buf, "SIGHUP"), "a HUP under nohup was taken: %s", text.buf);
	CHECK_CONTAINS(text.buf, "stopping after 3 cycles");
	strbuf_release(&state);
	strbuf_release(&root);
	strbuf_release(&log);
	strbuf_release(&text);
}
