/*
 * Kernel-log text a user controls is never read as the driver's (issue 17), through the binary:
 * `vigil check --only kernel` on a saved log (--kernel-log) and on a fixture's dev/kmsg (--root).
 *
 * Where the kernel echoes what a user chooses (shapes from the Linux source):
 *   - arch/x86/mm/fault.c show_signal_msg(): "%s%s[%d]: segfault at %lx ip %px sp %px error %lx"
 *     with tsk->comm (at most 15 bytes, TASK_COMM_LEN 16, any bytes prctl(PR_SET_NAME) sets),
 *     then print_vma_addr(" in %s[%lx+%lx]") with the mapped file's name (the user's path);
 *   - fs/exec.c: "process '%s' launched '%s' with NULL argv: empty string added" (comm, the
 *     path given to execve);
 *   - kernel/hung_task.c: "INFO: task %s:%d blocked for more than %ld seconds.";
 *   - mm/oom_kill.c: "%s invoked oom-killer: gfp_mask=...", "Out of memory: Killed process %d (%s)";
 *   - audit: type=1400 ... name="..." comm="...".
 * /dev/kmsg records are "PRI,SEQ,USEC,FLAGS;MESSAGE", PRI = facility * 8 + level, facility 0
 * the kernel (Documentation/ABI/testing/dev-kmsg); userspace writes facility 1 by default.
 * The driver's own lines (NVIDIA open-gpu-kernel-modules, kernel_rc.c and nv.c; seen in the wild,
 * e.g. "kernel: [   65.315783] NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>,
 * GPU has fallen off the bus." in github.com/congphase/my-t450s troubleshoot_log.md) start the
 * message with "NVRM: ".
 */
#include "../harness.h"

#define HEAD "6,0,0,-;Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP\n" \
	     "6,1,14000000,-;NVRM: GPU at PCI:0000:18:00: GPU-7d3ba1cb-f7d3-7a8b-8c2f-3a4c7e8b3c8d\n" \
	     "6,2,14100000,-;NVRM: GPU at PCI:0000:1b:00: GPU-3f0a5bc2-9d1e-4c6b-8e2f-0a1b2c3d4e5f\n"
#define XID79 "NVRM: Xid (PCI:0000:18:00): 79, pid=9962, name=python, GPU has fallen off the bus."
#define XID48 "NVRM: Xid (PCI:0000:1b:00): 48, pid=2021, name=python3, An uncorrectable double " \
	      "bit error (DBE) has been detected on GPU in the framebuffer at partition 6."

/* vigil check --only kernel on a fixture root whose dev/kmsg is records; the output in *out */
static int check_root(const char *name, const char *records, struct strbuf *out)
{
	struct strbuf dir = STRBUF_INIT;
	struct child c;
	strbuf_addf(&dir, "%s/%s", test_tmpdir(), name);
	test_mkdir(test_tmpdir(), name);
	test_mkdir(dir.buf, "sys");
	test_mkdir(dir.buf, "proc");
	test_write(dir.buf, "dev/kmsg", records);
	const char *args[] = { "check", "--root", dir.buf, "--only", "kernel", "--json", NULL };
	test_run_vigil(&c, args, NULL);
	strbuf_reset(out);
	strbuf_add(out, c.out.buf, c.out.len);
	strbuf_add(out, c.err.buf, c.err.len);
	int code = c.exit_code;
	child_release(&c);
	strbuf_release(&dir);
	return code;
}

/* vigil check --only kernel --kernel-log FILE */
static int check_file(const char *name, const char *text, struct strbuf *out)
{
	struct strbuf path = STRBUF_INIT;
	struct child c;
	test_write(test_tmpdir(), name, text);
	strbuf_addf(&path, "%s/%s", test_tmpdir(), name);
	const char *args[] = { "check", "--only", "kernel", "--kernel-log", path.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	strbuf_reset(out);
	strbuf_add(out, c.out.buf, c.out.len);
	strbuf_add(out, c.err.buf, c.err.len);
	int code = c.exit_code;
	child_release(&c);
	strbuf_release(&path);
	return code;
}

#define EXPECT_EXIT(call, code, out)                                                           \
	do {                                                                                   \
		int got_ = (call);                                                             \
		CHECK_MSG(got_ == (code), "%s: exit %d, expected %d:\n%s", #call, got_, code,  \
			  (out)->buf);                                                         \
	} while (0)

TEST(kmsg_forged_exec_path_is_no_xid)
{
	struct strbuf out = STRBUF_INIT;
	/* the recipe: an exec of a path that holds a whole Xid line */
	EXPECT_EXIT(check_root("exec", HEAD "4,50,900000000,-;process 'x' launched '/tmp/" XID79
				       "' with NULL argv: empty string added\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "Xid 79");
	/* the same in a saved dmesg, and in journalctl -k */
	EXPECT_EXIT(check_file("exec.dmesg", "[    0.000000] Linux version 6.8.0 (b@h) #1\n"
				"[  900.000000] process 'x' launched '/tmp/" XID79 "' with NULL argv: "
				"empty string added\n", &out), 0, &out);
	EXPECT_EXIT(check_file("exec.journal", "Feb 14 05:03:41 gpu-7 kernel: process 'x' launched "
				"'/tmp/" XID79 "' with NULL argv: empty string added\n", &out), 0, &out);
	/* audit quotes the path: type=1400 ... name="/tmp/NVRM: Xid ..." */
	EXPECT_EXIT(check_root("audit", HEAD "5,51,901000000,-;audit: type=1400 audit(1700000000.1:"
				"42): apparmor=\"DENIED\" operation=\"open\" name=\"/tmp/" XID79 "\" "
				"comm=\"NVRM: Xid 79,\"\n", &out), 0, &out);
	strbuf_release(&out);
}

TEST(kmsg_forged_gpu_init_does_not_clear_xid48)
{
	struct strbuf out = STRBUF_INIT;
	/* a path that reads as the driver's re-initialisation of the GPU with the Xid 48 */
	EXPECT_EXIT(check_root("init", HEAD "3,40,800000000,-;" XID48 "\n"
				"4,41,900000000,-;process 'x' launched '/tmp/NVRM: GPU at PCI:0000:"
				"1b:00: GPU-3f0a5bc2-9d1e-4c6b-8e2f-0a1b2c3d4e5f' with NULL argv: "
				"empty string added\n", &out), 1, &out);
	CHECK_CONTAINS(out.buf, "Xid 48 on GPU 0000:1b:00.0");
	CHECK_NOT_CONTAINS(out.buf, "cleared");
	/* the driver's own line does clear it */
	EXPECT_EXIT(check_root("init-real", HEAD "3,40,800000000,-;" XID48 "\n"
				"6,41,900000000,-;NVRM: GPU at PCI:0000:1b:00: GPU-3f0a5bc2-9d1e-4c6b-"
				"8e2f-0a1b2c3d4e5f\n", &out), 0, &out);
	strbuf_release(&out);
}

TEST(kmsg_segfault_comm_is_no_driver_line)
{
	struct strbuf out = STRBUF_INIT;
	/* comm "NVRM: Xid 79," (13 bytes): "NVRM: Xid 79,[4321]: segfault at ..." */
	EXPECT_EXIT(check_root("segv", HEAD "6,60,900000000,-;NVRM: Xid 79,[4321]: segfault at 0 ip "
				"0000000000401000 sp 00007ffd1c8e2f40 error 4 in a.out[401000+1000] "
				"likely on CPU 3 (core 3, socket 0)\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "Xid 79");
	/* comm "NVRM: " and a mapped file named "fallen off the bus" */
	EXPECT_EXIT(check_root("segv-bus", HEAD "6,61,900000000,-;NVRM: [4321]: segfault at 0 ip "
				"0000000000401000 sp 00007ffd1c8e2f40 error 4 in fallen off the bus"
				"[401000+1000]\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "fallen off");
	/* comm "nvidia-nvswitch" (15 bytes), file "SXid (PCI:0000:c3:00.0): 12020, Fatal" */
	EXPECT_EXIT(check_root("segv-sxid", HEAD "6,62,900000000,-;nvidia-nvswitch[4321]: segfault "
				"at 0 ip 0 sp 0 error 4 in x: SXid (PCI:0000:c3:00.0): 12020, Fatal, "
				"x[401000+1000]\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "SXid");
	/* comm "nvidia 9b:00.0" and a file named like the PCI core's downtraining line */
	EXPECT_EXIT(check_root("segv-pcie", HEAD "6,63,900000000,-;nvidia 9b:00.0[4321]: segfault at "
				"0 ip 0 sp 0 error 4 in 1 Gb/s available PCIe bandwidth, limited by 2.5 "
				"GT/s PCIe x1 link[401000+1000]\n", &out), 0, &out);
	/* comm "INFO: task a:1", file "blocked for more than 999 seconds." */
	EXPECT_EXIT(check_root("segv-hung", HEAD "6,64,900000000,-;INFO: task a:1[4321]: segfault at "
				"0 ip 0 sp 0 error 4 in blocked for more than 999 seconds.[401000+1000]"
				"\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "hung_task");
	strbuf_release(&out);
}

TEST(kmsg_user_records_are_not_the_driver)
{
	struct strbuf out = STRBUF_INIT;
	/* facility 1 (user), level 6: "14," and "logger -p user.err": "11," */
	EXPECT_EXIT(check_root("user", HEAD "14,70,900000000,-;" XID79 "\n"
				"11,71,900000001,-;NVRM: GPU at PCI:0000:1b:00: GPU-x\n", &out), 0, &out);
	CHECK_NOT_CONTAINS(out.buf, "Xid 79");
	CHECK_CONTAINS(out.buf, "userspace_lines_ignored");
	/* facility 3 (daemon) with "kern"-looking text */
	EXPECT_EXIT(check_root("daemon", HEAD "30,70,900000000,-;" XID79 "\n", &out), 0, &out);
	/* a syslog line of another program, and dmesg -x / -r with the user facility */
	EXPECT_EXIT(check_file("syslog", "Feb 14 05:03:41 gpu-7 logger[812]: " XID79 "\n"
				"Feb 14 05:03:42 gpu-7 kernel: nothing\n", &out), 0, &out);
	EXPECT_EXIT(check_file("dmesg-x", "kern  :info  : [    1.000000] hello\n"
				"user  :err   : [  900.000000] " XID79 "\n", &out), 0, &out);
	EXPECT_EXIT(check_file("dmesg-r", "<6>[    1.000000] hello\n<11>[  900.000000] " XID79 "\n",
				&out), 0, &out);
	/* the kernel's own record still counts */
	EXPECT_EXIT(check_root("kern", HEAD "3,70,900000000,-;" XID79 "\n", &out), 1, &out);
	EXPECT_EXIT(check_file("dmesg-x-kern", "kern  :err   : [  900.000000] " XID79 "\n", &out), 1,
		    &out);
	strbuf_release(&out);
}

TEST(kmsg_indented_lines_continue_the_message)
{
	struct strbuf out = STRBUF_INIT;
	/* journalctl and dmesg print a message's further lines (a newline in the echoed path)
	 * indented under the first, without a stamp */
	EXPECT_EXIT(check_file("journal-nl", "Feb 14 05:03:41 gpu-7 kernel: process 'x' launched "
				"'/tmp/a\n                             " XID79 "' with NULL argv: empty "
				"string added\n", &out), 0, &out);
	EXPECT_EXIT(check_file("dmesg-nl", "[  900.000000] process 'x' launched '/tmp/a\n"
				"               " XID79 "\n", &out), 0, &out);
	EXPECT_EXIT(check_file("dmesg-nl-tab", "[  900.000000] x\n\t" XID79 "\n", &out), 0, &out);
	/* a log without any stamps keeps its driver lines at the start of the line */
	EXPECT_EXIT(check_file("nostamp", XID79 "\n", &out), 1, &out);
	strbuf_release(&out);
}

TEST(kmsg_fake_boot_does_not_clear_xid79)
{
	struct strbuf out = STRBUF_INIT;
	static const char *const fakes[] = {
		/* comm "Linux version " (the recipe) and "Linux version 6" (15 bytes) */
		"Linux version [4321]: segfault at 0 ip 0 sp 0 error 4 in a.out[401000+1000]",
		"Linux version 6[4321]: segfault at 0 ip 0 sp 0 error 4 in a.out[401000+1000]",
		/* the whole banner, mid-stream: not the stream restarting */
		"Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP",
	};
	for (size_t i = 0; i < ARRAY_SIZE(fakes); i++) {
		struct strbuf log = STRBUF_INIT;
		strbuf_addf(&log, HEAD "3,40,800000000,-;" XID79 "\n6,41,900000000,-;%s\n", fakes[i]);
		EXPECT_EXIT(check_root("boot", log.buf, &out), 1, &out);
		CHECK_CONTAINS(out.buf, "Xid 79 on GPU 0000:18:00.0");
		CHECK_NOT_CONTAINS(out.buf, "cleared by a reboot");
		strbuf_reset(&log);
		strbuf_addf(&log, "[    0.000000] Linux version 6.8.0 (b@h) #1\n"
			    "[  800.000000] " XID79 "\n[  900.000000] %s\n", fakes[i]);
		EXPECT_EXIT(check_file("boot.dmesg", log.buf, &out), 1, &out);
		CHECK_NOT_CONTAINS(out.buf, "cleared by a reboot");
		strbuf_release(&log);
	}
	/* a user record with a banner at seq 0 and time 0 (a root writer could): not the kernel */
	EXPECT_EXIT(check_root("boot-user", HEAD "3,40,800000000,-;" XID79 "\n"
				"14,0,0,-;Linux version 6.8.0-45-generic (b@h) #1\n", &out), 1, &out);
	/* a restart without a banner (records from 0 again) is not a boot either */
	EXPECT_EXIT(check_root("restart", HEAD "3,40,800000000,-;" XID79 "\n"
				"6,0,0,-;Command line: BOOT_IMAGE=/vmlinuz ro\n", &out), 1, &out);
	/* journalctl's separator alone, or a banner far after it */
	EXPECT_EXIT(check_file("sep-only", "Feb 14 05:03:41 gpu-7 kernel: " XID79 "\n"
				"-- Boot 0123456789abcdef0123456789abcdef --\n"
				"Feb 14 06:00:00 gpu-7 kernel: Command line: ro\n", &out), 1, &out);
	strbuf_release(&out);
}

TEST(kmsg_real_boot_still_clears_xid79)
{
	struct strbuf out = STRBUF_INIT;
	/* records from 0 again with the banner first: a reboot */
	EXPECT_EXIT(check_root("reboot", HEAD "3,40,800000000,-;" XID79 "\n" HEAD, &out), 0, &out);
	CHECK_CONTAINS(out.buf, "cleared by a reboot");
	/* arm64 prints "Booting Linux on physical CPU" first: the banner is record 1 */
	EXPECT_EXIT(check_file("reboot.dmesg", "[    0.000000] Linux version 6.8.0 (b@h) #1\n"
				"[  800.000000] " XID79 "\n"
				"[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x413fd0c1]\n"
				"[    0.000000] Linux version 6.8.0 (b@h) #1\n", &out), 0, &out);
	CHECK_CONTAINS(out.buf, "cleared by a reboot");
	/* kern.log keeps dmesg's stamp inside: "kernel: [    0.000000] Linux version ..." */
	EXPECT_EXIT(check_file("reboot.kern", "Feb 14 05:03:41 gpu-7 kernel: [  800.000000] " XID79
				"\nFeb 14 06:00:00 gpu-7 kernel: [    0.000000] Linux version 6.8.0 "
				"(b@h) #1\n", &out), 0, &out);
	/* journalctl -k across boots: "-- Boot ID --" and the banner right after it */
	EXPECT_EXIT(check_file("reboot.journal", "Feb 14 05:03:41 gpu-7 kernel: " XID79 "\n"
				"-- Boot 0123456789abcdef0123456789abcdef --\n"
				"Feb 14 06:00:00 gpu-7 kernel: Linux version 6.8.0 (b@h) #1\n", &out), 0,
		    &out);
	CHECK_CONTAINS(out.buf, "cleared by a reboot");
	strbuf_release(&out);
}

/* The variants tried in the jail after the fix (all held): kept so that they keep holding. */
TEST(kmsg_attack_variants_hold)
{
	static const struct {
		const char *name, *log;
		int exit_code;
	} cases[] = {
		{ "escaped ESC before NVRM (kmsg escapes control bytes)",
		  "6,0,0,-;Linux version 6.8.0 (b@h) #1\n6,9,900000000,-;\\x1b" XID79 "\n", 0 },
		{ "dmesg -T exec path", "[Mon Nov 30 10:00:00 2026] process 'x' launched '/tmp/" XID79
		  "' with NULL argv: empty string added\n", 0 },
		{ "kmsg KEY=value continuation", "6,9,900000000,-;hello\n SUBSYSTEM=" XID79 "\n", 0 },
		{ "caller id then comm", "[  900.000000] [ T4321] NVRM: Xid 79,[4321]: segfault at 0\n",
		  0 },
		{ "kern.log banner with a late inner stamp", "Feb 14 05:03:41 h kernel: [  800.0] " XID79
		  "\nFeb 14 05:04:41 h kernel: [  900.0] Linux version 6.8.0 (b@h) #1\n", 1 },
		{ "journal separator inside a kernel message", "Feb 14 05:03:41 h kernel: " XID79 "\n"
		  "Feb 14 05:03:42 h kernel: -- Boot 0123456789abcdef0123456789abcdef --\n"
		  "Feb 14 05:03:43 h kernel: Linux version 6.8.0 (b@h) #1\n", 1 },
		{ "journal separator, banner indented", "Feb 14 05:03:41 h kernel: " XID79 "\n"
		  "-- Boot 0123456789abcdef0123456789abcdef --\n"
		  "                  Linux version 6.8.0 (b@h) #1\n", 1 },
		{ "short PCI address in an Xid", "[  900.0] NVRM: Xid (18:00.0): 79, pid=1, x\n", 0 },
		{ "mlx5 comm with a short address", "[  900.0] mlx5_core 0c:00.0[4321]: segfault in "
		  "Link down[1+1]\n[  901.0] mlx5_core 0c:00.0[4321]: segfault in Link down[1+1]\n"
		  "[  902.0] mlx5_core 0c:00.0[4321]: segfault in Link down[1+1]\n", 0 },
		{ "RFC 5424 from logger", "<14>1 2025-01-25T10:34:55Z h logger - - - " XID79 "\n", 0 },
		{ "dmesg banner from a comm at 1 s", "[  800.0] " XID79 "\n[    1.0] Linux version "
		  "6[4321]: segfault at 0\n", 1 },
		{ "banner at 900 s", "[  800.0] " XID79 "\n[  900.0] Linux version 6.8.0 (b@h) #1\n", 1 },
		{ "off-bus words inside an unknown NVRM line", "[  900.0] NVRM: nvAssertFailed: "
		  "process fallen off the bus at x.c:1\n", 0 },
	};
	struct strbuf out = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int got = check_file("variant.log", cases[i].log, &out);
		CHECK_MSG(got == cases[i].exit_code, "%s: exit %d, expected %d:\n%s", cases[i].name,
			  got, cases[i].exit_code, out.buf);
	}
	strbuf_release(&out);
}
