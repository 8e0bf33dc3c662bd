/*
 * test_statefile.c: the counter readings kept between runs (statefile.h) and the two checks that
 * keep them. A file that is not a counter file (junk, NUL bytes, another kind, too large, a FIFO,
 * a link) is "no previous reading", said so as a warning, replaced by a good one, and never
 * hangs, crashes or feeds made-up readings to the check.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/statefile.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TEST(statefile_round_trip_and_old_files)
{
	const char *tmp = test_tmpdir();
	struct counter_set s = COUNTER_SET_INIT, back = COUNTER_SET_INIT;
	struct strbuf p = STRBUF_INIT, why = STRBUF_INIT;
	uint64_t v;
	CHECK(counter_set_add(&s, "mlx5_0 1 symbol_error", 12));
	CHECK(counter_set_add(&s, "mlx5_0 1 link_downed", 18446744073709551615ull));
	CHECK(!counter_set_add(&s, "bad\nname", 1));
	CHECK(!counter_set_add(&s, "", 1));
	CHECK(!counter_set_add(&s, " padded", 1));
	strbuf_addf(&p, "%s/infiniband.state", tmp);
	CHECK_INT(statefile_load(p.buf, "infiniband", &back, NULL, &why), STATEFILE_NONE);
	CHECK_INT(statefile_save(p.buf, "infiniband", &s, &why), 0);
	double mtime = 0;
	CHECK_INT(statefile_load(p.buf, "infiniband", &back, &mtime, &why), STATEFILE_LOADED);
	CHECK(mtime > 0);
	CHECK_INT(back.nr, 2);
	CHECK(counter_set_get(&back, "mlx5_0 1 link_downed", &v) && v == 18446744073709551615ull);
	CHECK(counter_set_get(&back, "mlx5_0 1 symbol_error", &v) && v == 12);
	CHECK(!counter_set_get(&back, "mlx5_0 1", &v));
	counter_set_release(&back);
	/* what vigil wrote before this module (no header; the old InfiniBand header) still loads */
	CHECK_INT(statefile_parse("gpu-nvlink", "GPU-1 2 replay 7\n", 17, &back, &why), 0);
	CHECK(counter_set_get(&back, "GPU-1 2 replay", &v) && v == 7);
	counter_set_release(&back);
	const char *old_ib = "# vigil infiniband: error counters at the last run (HCA PORT COUNTER "
			     "VALUE)\nmlx5_1 1 symbol_error 4012\n";
	CHECK_INT(statefile_parse("infiniband", old_ib, strlen(old_ib), &back, &why), 0);
	CHECK(counter_set_get(&back, "mlx5_1 1 symbol_error", &v) && v == 4012);
	counter_set_release(&back);
	/* pcie-aer.state as src/checks/pcie.c wrote it with its own parser */
	const char *old_pcie = "# vigil pcie: non-fatal AER totals at the last run (BDF COUNT)\n"
			       "0000:1b:00.0 5\n";
	CHECK_INT(statefile_parse("pcie", old_pcie, strlen(old_pcie), &back, &why), 0);
	CHECK(counter_set_get(&back, "0000:1b:00.0", &v) && v == 5);
	counter_set_release(&back);
	counter_set_release(&s);
	strbuf_release(&p);
	strbuf_release(&why);
}

TEST(statefile_damaged_or_foreign_is_no_previous_reading)
{
	const char *tmp = test_tmpdir();
	struct counter_set back = COUNTER_SET_INIT;
	struct strbuf p = STRBUF_INIT, why = STRBUF_INIT;
	static const struct {
		const char *text;
		size_t len;
		const char *why;
	} cases[] = {
		{ "mlx5_0 1 symbol_error 12\ngarbage\n", 0, "line 2 is not NAME VALUE" },
		{ "mlx5_0 1 symbol_error -3\n", 0, "line 1 is not NAME VALUE" },
		{ "mlx5_0 1 symbol_error 99999999999999999999999\n", 0, "line 1 is not NAME VALUE" },
		{ "mlx5_0 1 symbol_error 0x10\n", 0, "line 1 is not NAME VALUE" },
		{ "# vigil gpu-nvlink counters\nGPU-1 0 replay 3\n", 0,
		  "not a vigil infiniband counter file" },
		{ "mlx5_0 1 symbol_error 1\0\n", 25, "NUL bytes" },
		{ "{\"host\": \"x\"}\n", 0, "line 1 is not NAME VALUE" },
	};
	strbuf_addf(&p, "%s/infiniband.state", tmp);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		CHECK_INT(write_file(p.buf, cases[i].text, len, true, NULL), 0);
		CHECK_INT(statefile_load(p.buf, "infiniband", &back, NULL, &why),
			  STATEFILE_UNUSABLE);
		CHECK_CONTAINS(why.buf, "infiniband.state' is not usable: ");
		CHECK_CONTAINS(why.buf, cases[i].why);
		CHECK_INT(back.nr, 0);
	}
	/* too large: bounded, not read whole */
	char *big = xmalloc(STATEFILE_MAX_BYTES + 100);
	memset(big, '1', STATEFILE_MAX_BYTES + 100);
	CHECK_INT(write_file(p.buf, big, STATEFILE_MAX_BYTES + 100, true, NULL), 0);
	free(big);
	CHECK_INT(statefile_load(p.buf, "infiniband", &back, NULL, &why), STATEFILE_UNUSABLE);
	CHECK_CONTAINS(why.buf, "too large");
	/* a FIFO (no writer: a read would hang) and a link are not files vigil wrote */
	CHECK_INT(unlink(p.buf), 0);
	CHECK_INT(mkfifo(p.buf, 0644), 0);
	CHECK_INT(statefile_load(p.buf, "infiniband", &back, NULL, &why), STATEFILE_UNUSABLE);
	CHECK_CONTAINS(why.buf, "is a FIFO, not a regular file");
	CHECK_INT(unlink(p.buf), 0);
	CHECK_INT(symlink("/etc/passwd", p.buf), 0);
	CHECK_INT(statefile_load(p.buf, "infiniband", &back, NULL, &why), STATEFILE_UNUSABLE);
	CHECK_CONTAINS(why.buf, "is a symbolic link, not a regular file");
	CHECK_NOT_CONTAINS(why.buf, "root:");
	strbuf_release(&p);
	strbuf_release(&why);
}

/* Run one check with a state directory; the findings' messages in *msgs. */
static int run_check(const char *root_rel, const char *only, const char *state, const char *extra,
		     struct strbuf *out)
{
	struct strbuf root = STRBUF_INIT;
	test_src_path(&root, root_rel);
	const char *args[] = { "check", "-v", "--root", root.buf, "--only", only, "--state-dir",
			       state, "-c", extra, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	strbuf_reset(out);
	strbuf_addf(out, "%s%s", c.out.buf, c.err.buf);
	int code = c.exit_code;
	child_release(&c);
	strbuf_release(&root);
	return code;
}

TEST(infiniband_damaged_state_is_said_and_replaced)
{
	const char *tmp = test_tmpdir();
	struct strbuf state = STRBUF_INIT, p = STRBUF_INIT, out = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", tmp);
	test_write(tmp, "state/infiniband.state", "\x7f" "ELF garbage\n");
	strbuf_addf(&p, "%s/infiniband.state", state.buf);
	int code = run_check("tests/scenarios/ib-healthy-400g/root", "infiniband", state.buf,
			     "infiniband.count=8", &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	CHECK_CONTAINS(out.buf, "no previous counter reading: '");
	CHECK_CONTAINS(out.buf, "infiniband.state' is not usable: line 1 is not NAME VALUE "
				"(a new one is kept)");
	/* replaced by a good one: the next run compares and says nothing of it */
	CHECK_INT(read_file_bounded(p.buf, &text, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(text.buf, "# vigil infiniband counters");
	code = run_check("tests/scenarios/ib-healthy-400g/root", "infiniband", state.buf,
			 "infiniband.count=8", &out);
	CHECK_INT(code, 0);
	CHECK_NOT_CONTAINS(out.buf, "no previous counter reading");
	CHECK_CONTAINS(out.buf, "steady since the last run");

	/* a FIFO there: no hang, said so twice (not read, not replaced) */
	CHECK_INT(unlink(p.buf), 0);
	CHECK_INT(mkfifo(p.buf, 0644), 0);
	code = run_check("tests/scenarios/ib-healthy-400g/root", "infiniband", state.buf,
			 "infiniband.count=8", &out);
	CHECK_INT(code, 0);
	CHECK_CONTAINS(out.buf, "infiniband.state' is a FIFO, not a regular file");
	CHECK_CONTAINS(out.buf, "cannot keep the counter reading: cannot write '");
	struct stat st;
	CHECK(lstat(p.buf, &st) == 0 && S_ISFIFO(st.st_mode));
	strbuf_release(&state);
	strbuf_release(&p);
	strbuf_release(&out);
	strbuf_release(&text);
}

TEST(gpu_damaged_nvlink_state_is_said_and_replaced)
{
	const char *tmp = test_tmpdir();
	struct strbuf state = STRBUF_INIT, out = STRBUF_INIT, p = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", tmp);
	test_write(tmp, "state/gpu-nvlink.state", "# vigil infiniband counters\nmlx5_0 1 x 1\n");
	strbuf_addf(&p, "%s/gpu-nvlink.state", state.buf);
	int code = run_check("tests/scenarios/gpu-nvlink-errors-rising/before", "gpu", state.buf,
			     "gpu.nvlink-counter-interval=0", &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	CHECK_CONTAINS(out.buf, "no previous NVLink counter reading: '");
	CHECK_CONTAINS(out.buf, "gpu-nvlink.state' is not usable: it is not a vigil gpu-nvlink "
				"counter file");
	CHECK_INT(read_file_bounded(p.buf, &text, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(text.buf, "# vigil gpu-nvlink counters");
	/* and the rise is judged against the new reading on the next run */
	code = run_check("tests/scenarios/gpu-nvlink-errors-rising/root", "gpu", state.buf,
			 "gpu.nvlink-counter-interval=0", &out);
	CHECK_INT(code, 0);
	CHECK_CONTAINS(out.buf, "link 2 crc_flit +400");
	strbuf_release(&state);
	strbuf_release(&out);
	strbuf_release(&p);
	strbuf_release(&text);
}

/* A reading someone else left under vigil's file name (a sticky shared directory) is forged,
 * never a previous reading. */
TEST(statefile_of_another_user_is_no_previous_reading)
{
	if (geteuid() != 0)
		SKIP("needs root to make a file of another user");
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, why = STRBUF_INIT;
	struct counter_set s = COUNTER_SET_INIT;
	strbuf_addf(&p, "%s/vigil-ib.state", tmp);
	test_write(tmp, "vigil-ib.state", "# vigil ib counters\nmlx5_0:1:symbol_error 0\n");
	CHECK_INT(statefile_load(p.buf, "ib", &s, NULL, &why), STATEFILE_LOADED);
	counter_set_release(&s);
	CHECK_INT(chown(p.buf, 65534, 65534), 0);
	CHECK_INT(statefile_load(p.buf, "ib", &s, NULL, &why), STATEFILE_UNUSABLE);
	CHECK_CONTAINS(why.buf, "belongs to uid 65534, not to vigil's uid 0 or root");
	CHECK_INT((int)s.nr, 0);
	counter_set_release(&s);
	strbuf_release(&p);
	strbuf_release(&why);
}

/* Rises are said with their time base: over how long and per hour (issue 23). */
TEST(statefile_rate_words_and_alarm_rule)
{
	struct strbuf sb = STRBUF_INIT;
	rate_format(&sb, 4000, 300);
	CHECK_STR(sb.buf, "+4000 in 5 min (48,000/h)");
	strbuf_reset(&sb);
	rate_format(&sb, 3, 45);
	CHECK_STR(sb.buf, "+3 in 45 s (240/h)");
	strbuf_reset(&sb);
	rate_format(&sb, 15, 3 * 3600);
	CHECK_STR(sb.buf, "+15 in 3 h (5/h)");
	strbuf_reset(&sb);
	rate_format(&sb, 7, 0.2);
	CHECK_STR(sb.buf, "+7 in under a second");
	strbuf_reset(&sb);
	rate_format(&sb, 7, -1);
	CHECK_STR(sb.buf, "+7 since the last run (its time unknown)");
	CHECK(rate_per_hour(4000, 300) == 48000);

	/* a rise of 1 in 30 s is "120/h" of nothing: within the hour the rate is a count */
	CHECK(!rate_alarms(1, 30, 10, 5));
	CHECK(!rate_alarms(9, 30, 10, 5));
	CHECK(rate_alarms(10, 30, 10, 5));
	CHECK(rate_alarms(10, 3599, 10, 5));
	/* over longer spans the rate itself: 15 in 2 h is 7.5/h, 20 is 10/h */
	CHECK(!rate_alarms(15, 7200, 10, 5));
	CHECK(rate_alarms(20, 7200, 10, 5));
	/* the minimum rise holds whatever the rate */
	CHECK(!rate_alarms(4, 7200, 0.5, 5));
	CHECK(rate_alarms(5, 7200, 0.5, 5));
	CHECK(!rate_alarms(0, 10, 0.001, 1));
	strbuf_release(&sb);
}

TEST(statefile_baseline_first_stale_other_boot)
{
	struct counter_set s = COUNTER_SET_INIT;
	struct strbuf sb = STRBUF_INIT;
	double age, boot = 0;
	CHECK_INT(statefile_base(&s, false, -1, 1e9, -1, &age), BASE_FIRST);
	statefile_base_describe(BASE_FIRST, age, &sb);
	CHECK_STR(sb.buf, "first reading; the next run compares");

	statefile_stamp(&s, 1e9 - 300, 1e9 - 86400);
	CHECK_INT(statefile_base(&s, true, -1, 1e9, 1e9 - 86400 + 1, &age), BASE_OK);
	CHECK(age == 300);
	/* another boot: the kept btime differs by more than the clock's slack */
	CHECK_INT(statefile_base(&s, true, -1, 1e9, 1e9 - 600, &age), BASE_OTHER_BOOT);
	strbuf_reset(&sb);
	statefile_base_describe(BASE_OTHER_BOOT, age, &sb);
	CHECK_STR(sb.buf, "new baseline: the last reading is from another boot");
	/* older than a day */
	CHECK_INT(statefile_base(&s, true, -1, 1e9 - 300 + 30 * 3600, -1, &age), BASE_STALE);
	strbuf_reset(&sb);
	statefile_base_describe(BASE_STALE, age, &sb);
	CHECK_STR(sb.buf, "new baseline: the last reading is 30 h old");
	/* dated after now: the clock went back */
	CHECK_INT(statefile_base(&s, true, -1, 1e9 - 3600, -1, &age), BASE_STALE);
	counter_set_release(&s);

	/* a file of vigil before rates has no "@time": its modification time dates it, and one
	 * from before this boot is of another boot */
	counter_set_add(&s, "mlx5_0 1 symbol_error", 3);
	CHECK_INT(statefile_base(&s, true, 1e9 - 60, 1e9, -1, &age), BASE_OK);
	CHECK(age == 60);
	CHECK_INT(statefile_base(&s, true, 1e9 - 7200, 1e9, 1e9 - 3600, &age), BASE_OTHER_BOOT);

	CHECK(statefile_parse_btime("cpu  1 2 3\nintr 5\nbtime 1733300000\nprocesses 9\n", &boot));
	CHECK(boot == 1733300000);
	CHECK(!statefile_parse_btime("cpu 1\nbtime x\n", &boot));
	CHECK(!statefile_parse_btime("cpu 1\nxbtime 5\n", &boot));
	counter_set_release(&s);
	strbuf_release(&sb);
}

/* Set the "@time" of the kept reading at p to now - ago (what a run that long ago wrote). */
static void backdate(const char *p, double ago)
{
	struct strbuf text = STRBUF_INIT, out = STRBUF_INIT;
	CHECK_INT(read_file_bounded(p, &text, 1 << 20, NULL), READ_OK);
	char *t = strstr(text.buf, "\n@time ");
	CHECK_MSG(t != NULL, "no @time in '%s':\n%s", p, text.buf);
	if (!t)
		goto out;
	strbuf_add(&out, text.buf, (size_t)(t - text.buf));
	strbuf_addf(&out, "\n@time %.0f\n", (double)time(NULL) - ago);
	const char *rest = strchr(t + 1, '\n');
	if (rest)
		strbuf_addstr(&out, rest + 1);
	CHECK_INT(write_file_atomic(p, out.buf, out.len, 0644, NULL), 0);
out:
	strbuf_release(&text);
	strbuf_release(&out);
}

/* Through the binary: a reading taken 5 min ago, 4000 symbol errors since. */
TEST(infiniband_rise_is_said_over_its_time_and_as_a_rate)
{
	const char *tmp = test_tmpdir();
	struct strbuf state = STRBUF_INIT, p = STRBUF_INIT, out = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", tmp);
	test_mkdir(tmp, "state");
	strbuf_addf(&p, "%s/infiniband.state", state.buf);
	const char *before = "tests/scenarios/ib-symbol-errors-rising/before";
	const char *after = "tests/scenarios/ib-symbol-errors-rising/root";
	int code = run_check(before, "infiniband", state.buf, "infiniband.count=4", &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	CHECK_CONTAINS(out.buf, "first reading; the next run compares");
	backdate(p.buf, 300);
	code = run_check(after, "infiniband", state.buf, "infiniband.count=4", &out);
	CHECK_INT(code, 1);
	/* 300 s, or 301 when the run crossed a second */
	if (!strstr(out.buf, "mlx5_1 port 1: symbol_error +4000 in 5 min (47,841/h)"))
		CHECK_CONTAINS(out.buf, "mlx5_1 port 1: symbol_error +4000 in 5 min (48,000/h)");
	/* the baseline is kept for the hour: the next run still compares with it */
	code = run_check(after, "infiniband", state.buf, "infiniband.count=4", &out);
	CHECK_INT(code, 1);
	CHECK_CONTAINS(out.buf, "symbol_error +4000 in 5 min");
	/* a rate under the threshold is no alarm: 4000 in 5 min is 48,000/h */
	code = run_check(after, "infiniband", state.buf, "infiniband.symbol-error-rate=50000",
			 &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	/* the old per-run key still works, read per hour */
	code = run_check(after, "infiniband", state.buf, "infiniband.counter-threshold=50000",
			 &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	/* a reading of yesterday is a new baseline, said so, not a rise */
	run_check(before, "infiniband", state.buf, "infiniband.count=4", &out);
	backdate(p.buf, 25 * 3600);
	code = run_check(after, "infiniband", state.buf, "infiniband.count=4", &out);
	CHECK_MSG(code == 0, "exit %d\n%s", code, out.buf);
	CHECK_CONTAINS(out.buf, "new baseline: the last reading is 25 h old");
	CHECK_NOT_CONTAINS(out.buf, "+4000");
	strbuf_release(&state);
	strbuf_release(&p);
	strbuf_release(&out);
}

/* The JSON details of a rise: delta, seconds, rate_per_hour. */
TEST(infiniband_rise_json_has_delta_seconds_rate)
{
	const char *tmp = test_tmpdir();
	struct strbuf state = STRBUF_INIT, p = STRBUF_INIT, root = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", tmp);
	test_mkdir(tmp, "state");
	strbuf_addf(&p, "%s/infiniband.state", state.buf);
	struct strbuf out = STRBUF_INIT;
	run_check("tests/scenarios/ib-symbol-errors-rising/before", "infiniband", state.buf,
		  "infiniband.count=4", &out);
	backdate(p.buf, 600);
	test_src_path(&root, "tests/scenarios/ib-symbol-errors-rising/root");
	const char *args[] = { "check", "--json", "--root", root.buf, "--only", "infiniband",
			       "--state-dir", state.buf, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 1);
	/* the details as the JSON writes them */
	CHECK_CONTAINS(c.out.buf, "\"delta\": 4000");
	CHECK_CONTAINS(c.out.buf, "\"rate_per_hour\": 2"); /* 24000 (23,960 at 601 s) */
	CHECK_CONTAINS(c.out.buf, "\"seconds\": 60");
	child_release(&c);
	strbuf_release(&state);
	strbuf_release(&p);
	strbuf_release(&root);
	strbuf_release(&out);
}

/* Through the binary: a reading from another boot (its "@boot" is not this /proc/stat btime) is
 * a new baseline, said so; the same reading of this boot is compared. */
TEST(infiniband_reading_of_another_boot_is_a_new_baseline)
{
	const char *tmp = test_tmpdir();
	const char *port = "root/sys/class/infiniband/mlx5_0/ports/1/";
	struct strbuf rel = STRBUF_INIT, state = STRBUF_INIT, root = STRBUF_INIT, text = STRBUF_INIT;
	static const char *const files[][2] = {
		{ "state", "4: ACTIVE\n" },		{ "phys_state", "5: LinkUp\n" },
		{ "rate", "400 Gb/sec (4X NDR)\n" },	{ "link_layer", "InfiniBand\n" },
		{ "counters/symbol_error", "4010\n" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		strbuf_reset(&rel);
		strbuf_addf(&rel, "%s%s", port, files[i][0]);
		test_write(tmp, rel.buf, files[i][1]);
	}
	/* the kernel's line shape (fs/proc/stat.c show_stat: "btime %llu") */
	test_write(tmp, "root/proc/stat", "cpu  8113 12 4021 990233 310 0 77 0 0 0\n"
					  "intr 51123 0 9 0\nctxt 880121\nbtime 1733200000\n"
					  "processes 4410\nprocs_running 2\nprocs_blocked 0\n");
	strbuf_addf(&root, "%s/root", tmp);
	strbuf_addf(&state, "%s/state", tmp);
	for (int same = 0; same < 2; same++) {
		strbuf_reset(&text);
		strbuf_addf(&text, "# vigil infiniband counters\nmlx5_0 1 symbol_error 10\n"
				   "@time %.0f\n@boot %s\n",
			    (double)time(NULL) - 300, same ? "1733200001" : "1733100000");
		test_write(tmp, "state/infiniband.state", text.buf);
		const char *args[] = { "check", "--root", root.buf, "--only", "infiniband",
				       "--state-dir", state.buf, NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		if (!same) {
			CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
			CHECK_CONTAINS(c.out.buf, "new baseline: the last reading is from another boot");
			CHECK_NOT_CONTAINS(c.out.buf, "+4000");
		} else {
			CHECK_INT(c.exit_code, 1);
			CHECK_CONTAINS(c.out.buf, "symbol_error +4000 in 5 min");
		}
		child_release(&c);
	}
	strbuf_release(&rel);
	strbuf_release(&state);
	strbuf_release(&root);
	strbuf_release(&text);
}
