/*
 * harness.h: vigil's test harness. Each test runs in its own forked process under an alarm()
 * deadline; the runner prints "ok N - name" / "not ok N - name" lines and ends with exactly one
 * line "N passed, N failed, N skipped".
 *
 *   TEST(json_roundtrip) { CHECK(x == 1); CHECK_STR(a, "b"); }
 *   TEST_TIMEOUT(slow_one, 120) { ... }
 *   SKIP("why");   -- the test is counted as skipped
 *
 * Tests register themselves through a linker section so that each test file stands alone.
 * Helpers for running the vigil binary (VIGIL_BIN) and making temporary trees are below.
 */
#ifndef VIGIL_HARNESS_H
#define VIGIL_HARNESS_H

#include "../src/lib/strbuf.h"
#include "../src/lib/run.h"
#include "../src/lib/json.h"

struct test_def {
	const char *name;
	void (*fn)(void);
	unsigned timeout_s;
	const char *file;
};

#define TEST_TIMEOUT(tname, secs)                                                              \
	static void test_fn_##tname(void);                                                     \
	static const struct test_def test_def_##tname                                         \
		__attribute__((used, section("vigil_tests"), aligned(sizeof(void *)))) = {     \
			#tname, test_fn_##tname, secs, __FILE__                                \
		};                                                                             \
	static void test_fn_##tname(void)
#define TEST(tname) TEST_TIMEOUT(tname, 60)

void test_fail_(const char *file, int line, const char *fmt, ...) PRINTF_LIKE(3, 4)
	__attribute__((noreturn));
void test_skip(const char *why) __attribute__((noreturn));
#define SKIP(why) test_skip(why)

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond))                                                                   \
			test_fail_(__FILE__, __LINE__, "check failed: %s", #cond);             \
	} while (0)
#define CHECK_MSG(cond, ...)                                                                   \
	do {                                                                                   \
		if (!(cond))                                                                   \
			test_fail_(__FILE__, __LINE__, __VA_ARGS__);                           \
	} while (0)
#define CHECK_INT(a, b)                                                                        \
	do {                                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);                            \
		if (a_ != b_)                                                                  \
			test_fail_(__FILE__, __LINE__, "%s == %lld, expected %lld", #a, a_, b_);  \
	} while (0)
#define CHECK_STR(a, b)                                                                        \
	do {                                                                                   \
		const char *a_ = (a), *b_ = (b);                                               \
		if (!a_ || !b_ || strcmp(a_, b_))                                              \
			test_fail_(__FILE__, __LINE__, "%s is '%s', expected '%s'", #a,           \
				   a_ ? a_ : "(null)", b_ ? b_ : "(null)");                     \
	} while (0)
#define CHECK_CONTAINS(hay, needle)                                                            \
	do {                                                                                   \
		const char *h_ = (hay), *n_ = (needle);                                        \
		if (!h_ || !strstr(h_, n_))                                                    \
			test_fail_(__FILE__, __LINE__, "%s does not contain '%s':\n%s", #hay, n_, \
				   h_ ? h_ : "(null)");                                         \
	} while (0)
#define CHECK_NOT_CONTAINS(hay, needle)                                                        \
	do {                                                                                   \
		const char *h_ = (hay), *n_ = (needle);                                        \
		if (h_ && strstr(h_, n_))                                                      \
			test_fail_(__FILE__, __LINE__, "%s contains '%s':\n%s", #hay, n_, h_);    \
	} while (0)

/* A fixture's clean kernel log: one stamped record (an empty dev/kmsg is no evidence: unknown). */
#define TEST_KMSG_CLEAN "6,1,1000000,-;Linux version 6.1.0 (a fixture's clean kernel log)\n"

/* Paths handed in by the Makefile. */
const char *test_vigil_bin(void);
const char *test_fake_nvml(void);
const char *test_srcdir(void);
/* A fresh temporary directory for this test (removed when the runner exits). */
const char *test_tmpdir(void);
/* The runner's own temporary directory, shared by every test of this run (removed when it
 * exits): for what several tests may compute once, e.g. a reference run's result. */
const char *test_run_tmpdir(void);
/*
 * A fresh directory for this test in memory (/dev/shm; test_tmpdir() where there is none),
 * removed when the runner exits: for tests that fsync a lot and test nothing of the disk (the
 * supervisor's journal in virtual time: 17 s on a busy disk against 0.5 s in memory).
 */
const char *test_memory_tmpdir(void);
/* Path under the source tree / under the temp dir. */
void test_src_path(struct strbuf *out, const char *rel);

/*
 * Run vigil with args (NULL-terminated) and extra env entries ("K=V", NULL-terminated or NULL).
 * VIGIL_NVML_LIBRARY defaults to the fake library unless env sets it. 30 s deadline.
 */
void test_run_vigil(struct child *c, const char *const *args, const char *const *env);
/* Parse c->out as JSON or fail the test. Free with json_free. */
struct json_value *test_parse_json(const struct child *c);
/* Keep a JSON that is not a command's stdout (the agent's /health) for validation against
 * docs/schema/SCHEMA.json after all the tests, as test_parse_json keeps a command's. */
void test_keep_json_as(const char *schema, const char *json, size_t len);
/* Write a file under dir (creating parents). */
void test_write(const char *dir, const char *rel, const char *content);
/* The same with len bytes, NULs included. */
void test_write_bytes(const char *dir, const char *rel, const void *data, size_t len);
/* mkdir -p dir/rel */
void test_mkdir(const char *dir, const char *rel);

/* An executable shell script "#!/bin/sh\nBODY" named name in this test's temporary directory;
 * returns the directory (fake helpers, fake scontrol). */
const char *test_script(const char *name, const char *body);
/* One HTTP/1.0 request to 127.0.0.1:port; returns the status code (-1 if none), body in *body. */
int test_http(unsigned port, const char *method, const char *path, struct strbuf *body);

/*
 * The private Slurm of tests/e2e/slurm-cluster: run it with args ("start DIR N PORT ...", "stop
 * DIR") under a deadline; its exit code (-1 when it did not exit), its stderr (and "(timed out)")
 * appended to err_out when given. test_slurm_guardian() forks a process outside the test's
 * process group that waits for the test process to end, however it ends, and then stops the
 * cluster in dir.
 */
/* Run a program to its end (deadline ms), stdout and stderr into out (optional); its exit
 * code, -1 when it did not exit. */
int test_run_argv(const char *const *argv, unsigned ms, struct strbuf *out);
int test_slurm_cluster(const char *const *args, unsigned timeout_ms, struct strbuf *err_out);
void test_slurm_guardian(const char *dir);
/* A private cluster of n1..nNODES in cdir on ports from port, with its guardian, and
 * SLURM_CONF pointing at it; the test is skipped, with Slurm's words, where it cannot start. */
void test_slurm_up(const char *cdir, unsigned nodes, unsigned port);

/* The headless browser the HTML pages are checked in (Debian chromium-headless-shell), or NULL
 * when it is not installed (the test skips, saying so). */
const char *test_browser(void);
/* Run it on url with one more option (--dump-dom, --screenshot=FILE), a profile and HOME in the
 * test's directory and a deadline; its stdout appended to *out (optional). A failure fails the
 * test. */
void test_run_browser(const char *url, const char *opt, struct strbuf *out);
/* The same, with what the page wrote to the browser's console (a script's error, an SVG
 * attribute it could not parse: "Error: <polyline> attribute points: Expected number") appended
 * to *console, one line each. */
void test_run_browser_console(const char *url, const char *opt, struct strbuf *out,
			      struct strbuf *console);

/* Dynamic tests (the scenario runner registers one per directory). */
void test_register_dynamic(const char *name, void (*fn)(void *), void *arg, unsigned timeout_s);
/*
 * One dynamic test per directory of tests/scenarios, in name order: "PREFIX/NAME", running
 * fn(the scenario directory's path; a string the test may keep).
 */
void test_register_per_scenario(const char *prefix, void (*fn)(void *), unsigned timeout_s);
/* Called by the runner before listing; test files can provide hooks via this section too. */
struct test_hook {
	void (*fn)(void);
};
#define TEST_HOOK(hname)                                                                       \
	static void hook_fn_##hname(void);                                                     \
	static const struct test_hook hook_def_##hname                                        \
		__attribute__((used, section("vigil_test_hooks"), aligned(sizeof(void *)))) = {  \
			hook_fn_##hname                                                        \
		};                                                                             \
	static void hook_fn_##hname(void)

#endif
