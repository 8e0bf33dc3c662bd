/* test_kmsg.c: unit tests for the kernel log parser (src/logs/kmsg*.c): every format, every event,
 * floods of noise beside faults, text fed in chunks, and the file readers. */
#include "../harness.h"
#include "../../src/logs/kmsg.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 2026-03-01 12:00:00 UTC: the year hint of these tests */
#define HINT 1772366400.0

static void parse(struct kmsg_log *log, const char *text)
{
	struct kmsg_opts o = { .year_hint = HINT };
	kmsg_log_init(log, &o);
	kmsg_parse(log, text, strlen(text));
	kmsg_log_finish(log);
}

static double utc(int y, int mon, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d,
			 .tm_hour = h, .tm_min = mi, .tm_sec = s };
	return (double)timegm(&tm);
}

static bool near(double a, double b)
{
	return a - b < 1e-6 && b - a < 1e-6;
}

static const struct kmsg_event *only(const struct kmsg_log *log, enum kmsg_kind kind)
{
	const struct kmsg_event *found = NULL;
	for (size_t i = 0; i < log->nr; i++) {
		if (log->ev[i].kind != kind)
			continue;
		CHECK_MSG(!found, "more than one %s event", kmsg_kind_name(kind));
		found = &log->ev[i];
	}
	CHECK_MSG(found, "no %s event (%zu events)", kmsg_kind_name(kind), log->nr);
	return found;
}

#define XID79 "NVRM: Xid (PCI:0000:02:00): 79, pid=9962, name=python, GPU has fallen off the bus."

TEST(kmsg_format_dev_kmsg_records)
{
	struct kmsg_log log;
	parse(&log, "6,1,0,-;Linux version 6.8.0-45-generic (buildd@lcy02)\n"
		    "3,1234,5140900,-;" XID79 "\n"
		    " SUBSYSTEM=pci\n"
		    " DEVICE=+pci:0000:02:00.0\n"
		    "4,1235,6000001,-,caller=T42;NVRM: Xid (PCI:0000:03:00): 48, pid=1, name=a, DBE\n");
	CHECK_INT(log.nr, 3);
	CHECK_INT(log.ev[0].kind, KMSG_BOOT);
	const struct kmsg_event *ev = &log.ev[1];
	CHECK_INT(ev->kind, KMSG_XID);
	CHECK_INT(ev->tb, KMSG_TB_MONO);
	CHECK(near(ev->ts, 5.1409));
	CHECK_INT(ev->num, 79);
	CHECK_STR(ev->bdf, "0000:02:00.0");
	CHECK_INT(ev->pid, 9962);
	CHECK_STR(ev->name, "python");
	CHECK_STR(ev->text, "GPU has fallen off the bus.");
	CHECK_INT(ev->line, 2);
	CHECK_INT(ev->boot, 1);
	CHECK_INT(log.ev[2].num, 48);
	CHECK(near(log.ev[2].ts, 6.000001));
	CHECK_INT(log.ev[2].line, 5);
	CHECK_INT(log.lines, 5);
	CHECK(log.has_last && log.last_tb == KMSG_TB_MONO && near(log.last_ts, 6.000001));
	kmsg_log_release(&log);
}

TEST(kmsg_format_dmesg_raw)
{
	struct kmsg_log log;
	parse(&log, "[    0.000000] Linux version 6.8.0\n"
		    "[ 1843.308145] " XID79 "\n"
		    "[ 1900.5] usb 1-1: new device\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->tb, KMSG_TB_MONO);
	CHECK(near(ev->ts, 1843.308145));
	CHECK_STR(ev->bdf, "0000:02:00.0");
	CHECK(near(log.last_ts, 1900.5));
	kmsg_log_release(&log);
	/* dmesg -r keeps the priority; CONFIG_PRINTK_CALLER adds a caller id */
	parse(&log, "<4>[ 12.250000] [  T123] " XID79 "\n");
	ev = only(&log, KMSG_XID);
	CHECK(near(ev->ts, 12.25));
	CHECK_INT(ev->pid, 9962);
	kmsg_log_release(&log);
}

TEST(kmsg_format_dmesg_T)
{
	struct kmsg_log log;
	parse(&log, "[Mon Nov 30 10:00:00 2026] " XID79 "\n"
		    "[Tue Dec  1 09:05:03 2026] eth0: renamed\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->tb, KMSG_TB_WALL);
	CHECK(near(ev->ts, utc(2026, 11, 30, 10, 0, 0)));
	CHECK(!ev->year_guessed);
	CHECK(log.last_tb == KMSG_TB_WALL && near(log.last_ts, utc(2026, 12, 1, 9, 5, 3)));
	kmsg_log_release(&log);
}

TEST(kmsg_format_dmesg_iso)
{
	struct kmsg_log log;
	parse(&log, "2025-01-25T10:34:54,859532+00:00 " XID79 "\n"
		    "2025-01-25T11:00:00,000001+01:00 NVRM: Xid (PCI:0000:03:00): 13, pid=1, x\n");
	CHECK_INT(log.nr, 2);
	CHECK_INT(log.ev[0].tb, KMSG_TB_WALL);
	CHECK(near(log.ev[0].ts, utc(2025, 1, 25, 10, 34, 54) + 0.859532));
	/* the digits as printed: one base for every wall-clock form of a log */
	CHECK(near(log.ev[1].ts, utc(2025, 1, 25, 11, 0, 0) + 0.000001));
	kmsg_log_release(&log);
}

TEST(kmsg_format_dmesg_x)
{
	struct kmsg_log log;
	parse(&log, "kern  :err   : 2025-01-25T10:34:54,859532+00:00 " XID79 "\n"
		    "kern  :warn  : [  77.000001] NVRM: Xid (PCI:0000:03:00): 48, pid=1, DBE\n"
		    "user  :notice: [Mon Nov 30 10:00:00 2026] hello\n");
	CHECK_INT(log.nr, 2);
	CHECK(near(log.ev[0].ts, utc(2025, 1, 25, 10, 34, 54) + 0.859532));
	CHECK_INT(log.ev[0].num, 79);
	CHECK_INT(log.ev[1].tb, KMSG_TB_MONO);
	CHECK(near(log.ev[1].ts, 77.000001));
	CHECK(near(log.last_ts, utc(2026, 11, 30, 10, 0, 0)));
	kmsg_log_release(&log);
}

TEST(kmsg_format_journalctl)
{
	struct kmsg_log log;
	parse(&log, "Feb 14 05:03:41 gpu-node-7 kernel: " XID79 "\n"
		    "Feb 14 05:03:42 gpu-node-7 systemd[1]: Started foo.\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->tb, KMSG_TB_WALL);
	CHECK(ev->year_guessed);
	CHECK(near(ev->ts, utc(2026, 2, 14, 5, 3, 41)));
	CHECK_STR(ev->bdf, "0000:02:00.0");
	CHECK(near(log.last_ts, utc(2026, 2, 14, 5, 3, 42)));
	kmsg_log_release(&log);
}

TEST(kmsg_journalctl_year_rollover)
{
	struct kmsg_log log;
	/* hint is March 2026: the log ends in January 2026, so December was 2025 */
	parse(&log, "Dec 31 23:59:00 h kernel: " XID79 "\n"
		    "Jan  1 00:01:00 h kernel: NVRM: Xid (PCI:0000:03:00): 48, pid=1, DBE\n"
		    "Jan  2 08:00:00 h kernel: nothing\n");
	CHECK_INT(log.nr, 2);
	CHECK(near(log.ev[0].ts, utc(2025, 12, 31, 23, 59, 0)));
	CHECK(near(log.ev[1].ts, utc(2026, 1, 1, 0, 1, 0)));
	CHECK(log.ev[1].ts > log.ev[0].ts);
	CHECK(near(log.last_ts, utc(2026, 1, 2, 8, 0, 0)));
	kmsg_log_release(&log);
	/* a log that ends in December, read in March: last year, not the future */
	parse(&log, "Dec 30 10:00:00 h kernel: " XID79 "\n");
	CHECK(near(log.ev[0].ts, utc(2025, 12, 30, 10, 0, 0)));
	kmsg_log_release(&log);
}

TEST(kmsg_syslog_prefixes)
{
	struct kmsg_log log;
	/* kern.log keeps dmesg's own stamp after syslog's: the outer one counts */
	parse(&log, "Feb 14 05:03:41 gpu-node-7 kernel: [ 1843.308145] " XID79 "\n"
		    "2025-01-25T10:34:54.859532+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:03:00): "
		    "48, pid=1, DBE\n"
		    "Feb 14 05:03:41.123456 gpu-node-7 kernel[0]: NVRM: Xid (0000:04:00): 31, x\n");
	CHECK_INT(log.nr, 3);
	CHECK_INT(log.ev[0].tb, KMSG_TB_WALL);
	CHECK(near(log.ev[0].ts, utc(2026, 2, 14, 5, 3, 41)));
	CHECK_INT(log.ev[1].num, 48);
	CHECK(near(log.ev[1].ts, utc(2025, 1, 25, 10, 34, 54) + 0.859532));
	CHECK_INT(log.ev[2].num, 31);
	CHECK_STR(log.ev[2].bdf, "0000:04:00.0");
	CHECK(near(log.ev[2].ts, utc(2026, 2, 14, 5, 3, 41) + 0.123456));
	kmsg_log_release(&log);
	/* RFC 5424 */
	parse(&log, "<3>1 2025-01-25T10:34:54.859532+00:00 gpu-node-7 kernel - - - Linux version 6.8\n"
		    "<3>1 2025-01-25T10:34:55Z gpu-node-7 kernel - - [meta seq=\"1\"] " XID79 "\n");
	/* a banner with a wall-clock stamp alone is no proof that the stream restarted */
	CHECK_INT(log.boots, 0);
	CHECK_INT(log.boots_unproven, 1);
	CHECK_INT(log.nr, 1);
	CHECK_INT(log.ev[0].num, 79);
	CHECK(near(log.ev[0].ts, utc(2025, 1, 25, 10, 34, 55)));
	kmsg_log_release(&log);
}

TEST(kmsg_no_timestamp)
{
	struct kmsg_log log;
	parse(&log, XID79 "\nsome other line\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->tb, KMSG_TB_NONE);
	CHECK(!log.has_last);
	kmsg_log_release(&log);
}

TEST(kmsg_xid_mig)
{
	struct kmsg_log log;
	parse(&log, "[ 5.0] NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 31, pid=1234, "
		    "name=python3, Ch 0000000e, intr 00000000. MMU Fault\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->num, 31);
	CHECK_STR(ev->bdf, "0000:01:00.0");
	CHECK_INT(ev->gi, 5);
	CHECK_INT(ev->ci, 1);
	CHECK_STR(ev->name, "python3");
	CHECK_STR(ev->text, "Ch 0000000e, intr 00000000. MMU Fault");
	kmsg_log_release(&log);
	parse(&log, "NVRM: Xid (PCI:0000:01:00 GPU-I:07): 43, pid=1, name=x, y\n");
	ev = only(&log, KMSG_XID);
	CHECK_INT(ev->gi, 7);
	CHECK_INT(ev->ci, -1);
	kmsg_log_release(&log);
}

TEST(kmsg_xid_old_driver_and_missing_prefix)
{
	struct kmsg_log log;
	parse(&log, "[ 9.0] NVRM: Xid (0000:03:00): 13, 0001 00000000 0000a1c0 00000000\n"
		    "[ 9.1] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked "
		    "for remapping, reset gpu to activate.\n");
	CHECK_INT(log.nr, 2);
	const struct kmsg_event *ev = &log.ev[0];
	CHECK_INT(ev->num, 13);
	CHECK_STR(ev->bdf, "0000:03:00.0");
	CHECK_INT(ev->pid, -1);
	CHECK_STR(ev->name, "");
	CHECK_STR(ev->text, "0001 00000000 0000a1c0 00000000");
	ev = &log.ev[1];
	CHECK_INT(ev->num, 63);
	CHECK_STR(ev->bdf, "0000:10:1c.0");
	CHECK_INT(ev->pid, 1896);
	CHECK_STR(ev->name, "");
	CHECK_CONTAINS(ev->text, "Row Remapper: New row");
	kmsg_log_release(&log);
}

TEST(kmsg_xid_unknown_pid)
{
	struct kmsg_log log;
	parse(&log, "NVRM: Xid (PCI:0000:9B:00): 119, pid='<unknown>', name=<unknown>, Timeout "
		    "after 6s of waiting for RPC response from GPU4 GSP!\n");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->num, 119);
	CHECK_STR(ev->bdf, "0000:9b:00.0");
	CHECK_INT(ev->pid, -1);
	CHECK_STR(ev->name, "");
	CHECK_CONTAINS(ev->text, "Timeout after 6s");
	kmsg_log_release(&log);
}

TEST(kmsg_xid_154_recovery_codes)
{
	static const struct {
		const char *to;
		int code;
	} cases[] = {
		{ "0x1 (GPU Reset Required)", 1 },
		{ "0x2 (Node Reboot Required)", 2 },
		{ "0x4 (Drain P2P)", 4 },
		{ "0x0 (None)", 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strbuf sb = STRBUF_INIT;
		struct kmsg_log log;
		strbuf_addf(&sb, "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed "
				 "from 0x0 (None) to %s\n", cases[i].to);
		parse(&log, sb.buf);
		const struct kmsg_event *ev = only(&log, KMSG_XID);
		CHECK_INT(ev->num, 154);
		CHECK_INT(ev->recovery, cases[i].code);
		kmsg_log_release(&log);
		strbuf_release(&sb);
	}
}

TEST(kmsg_xid_nvlink_fatal_word)
{
	struct kmsg_log log;
	parse(&log, "NVRM: Xid (PCI:0000:01:00): 145, pid=1, name=x, NVLink: Fatal error on link 3\n"
		    "NVRM: Xid (PCI:0000:01:00): 145, pid=1, name=x, NVLink: Nonfatal error\n"
		    "NVRM: Xid (PCI:0000:01:00): 149, NETIR_LINK_EVT Non-fatal XC0 i0 Link 12\n");
	CHECK_INT(log.nr, 3);
	CHECK_INT(log.ev[0].fatal, 1);
	CHECK_INT(log.ev[1].fatal, 0);
	CHECK_INT(log.ev[2].fatal, 0);
	kmsg_log_release(&log);
}

TEST(kmsg_sxid)
{
	struct kmsg_log log;
	parse(&log, "[ 1.0] nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 28 RX "
		    "Short Error Rate\n"
		    "[ 2.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM "
		    "Fault Up\n"
		    "[ 2.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Severity 1 Engine "
		    "instance 30 Sub-engine instance 00\n"
		    "[ 2.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x00000000, "
		    "0x00000001}\n"
		    "[ 3.0] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Data {0x00000000, "
		    "0x00000001, 0x00000002}\n");
	/* the Severity and Data lines after an SXid are part of it */
	CHECK_INT(log.nr, 3);
	CHECK_INT(log.ev[0].kind, KMSG_SXID);
	CHECK_INT(log.ev[0].num, 20009);
	CHECK_STR(log.ev[0].bdf, "0000:c3:00.0");
	CHECK_STR(log.ev[0].name, "nvidia-nvswitch3");
	CHECK_INT(log.ev[0].fatal, 0);
	CHECK_CONTAINS(log.ev[0].text, "Link 28 RX Short Error Rate");
	CHECK_INT(log.ev[1].fatal, 1);
	CHECK_INT(log.ev[2].num, 12028);
	CHECK_INT(log.ev[2].fatal, -1);
	CHECK_CONTAINS(log.ev[2].text, "Data {0x00000000");
	kmsg_log_release(&log);
}

TEST(kmsg_off_the_bus_multiline)
{
	struct kmsg_log log;
	parse(&log, "[ 50.0] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
		    "[ 50.0] NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
		    "[ 50.0] NVRM: fallen off the bus and is not responding to commands.\n");
	const struct kmsg_event *ev = only(&log, KMSG_GPU_OFF_BUS);
	CHECK_STR(ev->bdf, "0000:b3:00.0");
	CHECK_INT(ev->line, 3);
	CHECK_INT(log.nvrm_benign, 2);
	CHECK_INT(log.nr, 1);
	kmsg_log_release(&log);
	/* newer drivers say it in one line */
	parse(&log, "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n");
	ev = only(&log, KMSG_GPU_OFF_BUS);
	CHECK_STR(ev->bdf, "0000:3b:00.0");
	kmsg_log_release(&log);
}

TEST(kmsg_gpu_uuid_and_nvrm_kinds)
{
	struct kmsg_log log;
	parse(&log, "[ 5.1] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\n"
		    "[ 6.0] NVRM: GPU at PCI:0000:9b:00: GPU-7d3ba1cb-f7d3-7a8b-8c2f-3a4c7e8b3c8d\n"
		    "[ 6.1] NVRM: FBHUB Interrupt detected. Clearing it.\n"
		    "[ 6.2] NVRM: Persistence mode is deprecated and will be removed.\n"
		    "[ 7.0] NVRM: GPU 0000:9b:00.0: RmInitAdapter failed! (0x22:0x56:667)\n");
	const struct kmsg_event *ev = only(&log, KMSG_GPU_INIT);
	CHECK_STR(ev->bdf, "0000:9b:00.0");
	CHECK_STR(ev->uuid, "GPU-7d3ba1cb-f7d3-7a8b-8c2f-3a4c7e8b3c8d");
	ev = only(&log, KMSG_NVRM_UNKNOWN);
	CHECK_STR(ev->bdf, "0000:9b:00.0");
	CHECK_CONTAINS(ev->text, "RmInitAdapter failed!");
	CHECK_INT(log.nvrm_benign, 3);
	kmsg_log_release(&log);
}

TEST(kmsg_oom_pcie_hung_link)
{
	struct kmsg_log log;
	parse(&log,
	      "[ 1.0] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0\n"
	      "[ 1.1] Out of memory: Killed process 4321 (python3) total-vm:1000kB, anon-rss:9kB\n"
	      "[ 1.2] Memory cgroup out of memory: Killed process 77 (pt_main_thread) total-vm:1\n"
	      "[ 2.0] mlx5_core 0000:3b:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 "
	      "GT/s PCIe x8 link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 "
	      "link)\n"
	      "[ 3.0] INFO: task kworker/u16:2:123 blocked for more than 120 seconds.\n"
	      "[ 4.0] mlx5_core 0000:0c:00.0 ibp12s0: Link down\n"
	      "[ 4.5] mlx5_core 0000:0c:00.0 ibp12s0: Link up\n"
	      "[ 5.0] igb 0000:01:00.0 eno1: Link down\n");
	CHECK_STR(only(&log, KMSG_OOM_INVOKED)->name, "python3");
	const struct kmsg_event *ev = only(&log, KMSG_OOM_KILL);
	CHECK_INT(ev->pid, 4321);
	CHECK_STR(ev->name, "python3");
	ev = only(&log, KMSG_OOM_CGROUP);
	CHECK_INT(ev->pid, 77);
	CHECK_STR(ev->name, "pt_main_thread");
	ev = only(&log, KMSG_PCIE_LIMITED);
	CHECK_STR(ev->bdf, "0000:3b:00.0");
	CHECK_STR(ev->name, "mlx5_core");
	CHECK_INT(ev->num, 8);
	CHECK_CONTAINS(ev->text, "capable of 252.048 Gb/s");
	ev = only(&log, KMSG_HUNG_TASK);
	CHECK_STR(ev->name, "kworker/u16:2");
	CHECK_INT(ev->pid, 123);
	CHECK_INT(ev->num, 120);
	ev = only(&log, KMSG_LINK_DOWN); /* igb is no mlx5 port */
	CHECK_STR(ev->bdf, "0000:0c:00.0");
	CHECK_STR(ev->name, "ibp12s0");
	CHECK_STR(only(&log, KMSG_LINK_UP)->name, "ibp12s0");
	kmsg_log_release(&log);
}

TEST(kmsg_triggers_at_every_alignment)
{
	static const char *const lines[] = {
		XID79,
		"nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 28",
		"python3 invoked oom-killer: gfp_mask=0x0",
		"Out of memory: Killed process 1 (a)",
		("mlx5_core 0000:3b:00.0: 1 Gb/s available PCIe bandwidth, limited by 8.0 GT/s "
		 "PCIe x8 link at 0000:3a:00.0 (capable of 2 Gb/s with 16.0 GT/s PCIe x16 link)"),
		"INFO: task a:1 blocked for more than 120 seconds.",
		"Linux version 6.8.0",
		"mlx5_core 0000:0c:00.0 ib0: Link down",
		"mlx5_core 0000:0c:00.0 ib0: Link DOWN",
		"mlx5_core 0000:0c:00.0 ib0: Link up",
		"mlx5_core 0000:0c:00.0 ib0: Link UP",
		"mlx5_core 0000:0c:00.0 ib0: Link ACTIVE",
	};
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
		for (int shift = 0; shift < 7; shift++) {
			struct strbuf sb = STRBUF_INIT;
			struct kmsg_log log;
			/* driver text and the boot banner must start the message (text before the
			 * stamp makes the line no kernel message): shift them with spaces */
			strbuf_addf(&sb, "x\n[ 1.0] %.*s%s\ny\n", shift, "       ", lines[i]);
			parse(&log, sb.buf);
			CHECK_MSG(log.nr >= 1, "'%s' at shift %d: no event", lines[i], shift);
			CHECK_INT(log.ev[0].line, 2);
			kmsg_log_release(&log);
			strbuf_release(&sb);
		}
	}
}

TEST(kmsg_garbage_nul_and_huge_lines)
{
	struct strbuf sb = STRBUF_INIT;
	struct kmsg_log log;
	unsigned s = 12345;
	for (int i = 0; i < 200000; i++) {
		s = s * 1103515245u + 12345u;
		strbuf_addch(&sb, (char)(s >> 16));
	}
	static const char l48[] = "\n[ 3.0] \xff\xfe\x00NVRM: Xid (PCI:0000:02:00): 48, pid=1, "
				  "name=\x01\xc3, DBE\x00tail\n";
	strbuf_add(&sb, l48, sizeof(l48) - 1);
	/* one huge line: the trigger past the cut is not seen, the one before is */
	strbuf_addstr(&sb, "[ 4.0] NVRM: Xid (PCI:0000:05:00): 79, pid=1, name=x, ");
	for (int i = 0; i < 100000; i++)
		strbuf_addch(&sb, 'A');
	strbuf_addstr(&sb, " NVRM: Xid (PCI:0000:06:00): 79, pid=1, name=x, y\n[ 5.0] end\n");
	struct kmsg_opts o = { .year_hint = HINT };
	kmsg_log_init(&log, &o);
	kmsg_parse(&log, sb.buf, sb.len);
	kmsg_log_finish(&log);
	bool saw48 = false, saw79 = false;
	for (size_t i = 0; i < log.nr; i++) {
		const struct kmsg_event *ev = &log.ev[i];
		for (const char *p = ev->text; *p; p++)
			CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
		for (const char *p = ev->name; *p; p++)
			CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
		if (ev->kind == KMSG_XID && ev->num == 48 && !strcmp(ev->bdf, "0000:02:00.0")) {
			/* a NUL ends a line (a crash's zero padding): the Xid after one is its own
			 * line, and its text stops at the next */
			CHECK_STR(ev->name, "??");
			CHECK_STR(ev->text, "DBE");
			saw48 = true;
		}
		if (ev->kind == KMSG_XID && ev->num == 79) {
			CHECK_STR(ev->bdf, "0000:05:00.0");
			CHECK(!saw79);
			saw79 = true;
		}
	}
	CHECK(saw48 && saw79);
	CHECK(log.cut_lines >= 1);
	CHECK(near(log.last_ts, 5.0));
	kmsg_log_release(&log);
	strbuf_release(&sb);
}

TEST(kmsg_truncated_last_line)
{
	struct kmsg_log log;
	parse(&log, "[ 9.0] ok\n[ 10.0] NVRM: Xid (PCI:0000:02:00): 79, pid=99");
	const struct kmsg_event *ev = only(&log, KMSG_XID);
	CHECK_INT(ev->num, 79);
	CHECK_INT(ev->pid, 99);
	CHECK_INT(ev->line, 2);
	CHECK_INT(log.lines, 2);
	CHECK(near(log.last_ts, 10.0));
	kmsg_log_release(&log);
	/* cut inside the stamp: the line before gives "now" */
	parse(&log, "[ 9.0] ok\n[ 10.0");
	CHECK(near(log.last_ts, 9.0));
	kmsg_log_release(&log);
	/* cut inside the number: no Xid */
	parse(&log, "NVRM: Xid (PCI:0000:02:00");
	CHECK(log.nr == 0 || log.ev[0].kind == KMSG_NVRM_UNKNOWN);
	kmsg_log_release(&log);
}

TEST(kmsg_last_time_skips_lines_without_stamp)
{
	struct kmsg_log log;
	parse(&log, "[ 7.0] a\n[ 8.5] b\n SUBSYSTEM=pci\ncontinued text\n\n\n");
	CHECK(log.has_last && near(log.last_ts, 8.5));
	CHECK_INT(log.lines, 6);
	kmsg_log_release(&log);
}

TEST(kmsg_boots_split_the_log)
{
	struct kmsg_log log;
	parse(&log, "[ 5.0] " XID79 "\n[ 0.0] Linux version 6.8.0\n[ 6.0] NVRM: Xid "
		    "(PCI:0000:02:00): 13, pid=1, x\n");
	CHECK_INT(log.boots, 1);
	CHECK_INT(log.nr, 3);
	CHECK_INT(log.ev[0].boot, 0);
	CHECK_INT(log.ev[1].kind, KMSG_BOOT);
	CHECK_INT(log.ev[2].boot, 1);
	kmsg_log_release(&log);
	/* only at the start of the message */
	parse(&log, "[ 1.0] foo: Linux version 6.8.0 was mentioned\n");
	CHECK_INT(log.boots, 0);
	kmsg_log_release(&log);
}

TEST(kmsg_repeats_fold_past_the_cap)
{
	struct strbuf sb = STRBUF_INIT;
	struct kmsg_log log;
	for (int i = 0; i < 40000; i++)
		strbuf_addf(&sb, "[ %d.0] NVRM: Xid (PCI:0000:02:00): 48, pid=1, name=x, DBE\n", i);
	strbuf_addstr(&sb, "[ 50000.0] NVRM: GPU at PCI:0000:02:00: GPU-aaaa\n");
	strbuf_addstr(&sb, "[ 50001.0] NVRM: Xid (PCI:0000:02:00): 13, pid=1, name=x, y\n");
	parse(&log, sb.buf);
	CHECK(log.nr <= KMSG_EVENTS_MAX);
	uint64_t n48 = 0;
	double first = -1, last = -1;
	size_t init_at = 0, last48_at = 0;
	for (size_t i = 0; i < log.nr; i++) {
		if (log.ev[i].kind == KMSG_XID && log.ev[i].num == 48) {
			n48 += log.ev[i].count;
			if (first < 0)
				first = log.ev[i].ts;
			last = log.ev[i].ts;
			last48_at = i;
		}
		if (log.ev[i].kind == KMSG_GPU_INIT)
			init_at = i;
	}
	CHECK_INT(n48, 40000);
	CHECK(near(first, 0.0) && near(last, 39999.0));
	CHECK(init_at > last48_at); /* the order of faults and resets is kept */
	CHECK_INT(log.dropped, 0);
	kmsg_log_release(&log);
	strbuf_release(&sb);
}

TEST(kmsg_parse_in_pieces)
{
	struct kmsg_log log;
	struct kmsg_opts o = { .year_hint = HINT };
	const char *a = "[ 1.0] a\n[ 2.0] " XID79 "\n", *b = "[ 3.0] b\n[ 4.0] " XID79 "\n";
	kmsg_log_init(&log, &o);
	kmsg_parse(&log, a, strlen(a));
	kmsg_parse(&log, b, strlen(b));
	kmsg_log_finish(&log);
	CHECK_INT(log.nr, 2);
	CHECK_INT(log.ev[1].line, 4);
	CHECK_INT(log.lines, 4);
	CHECK(near(log.last_ts, 4.0));
	kmsg_log_release(&log);
}

TEST(kmsg_huge_numbers_saturate)
{
	struct kmsg_log log;
	parse(&log, "6,99999999999999999999,1000000,-;NVRM: Xid (PCI:0000:07:00): 79, pid=1, x\n"
		    "6,1,999999999999999999,-;NVRM: Xid (PCI:0000:08:00): 999999999, "
		    "pid=99999999999999999999, name=x, y\n"
		    "NVRM: Xid (PCI:0000:09:00): 1234567890, pid=1, name=x, y\n"
		    "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
		    "to 0xffffffff (?)\n");
	CHECK_INT(log.nr, 4);
	CHECK_INT(log.ev[0].num, 79);
	CHECK(near(log.ev[0].ts, 1.0));
	CHECK_INT(log.ev[1].num, 999999999);
	CHECK(log.ev[1].ts > 1e11);
	CHECK_INT(log.ev[2].kind, KMSG_NVRM_UNKNOWN); /* not an Xid number */
	CHECK(log.ev[3].recovery > 0);               /* no wrap to -1, "none parsed" */
	kmsg_log_release(&log);
}

/* ---- floods, chunks and streaming: a fault is never given up for noise ---- */

static uint64_t xid_count(const struct kmsg_log *log, int num)
{
	uint64_t n = 0;
	for (size_t i = 0; i < log->nr; i++)
		if (log->ev[i].kind == KMSG_XID && log->ev[i].num == num)
			n += log->ev[i].count;
	return n;
}

TEST(kmsg_fault_survives_a_flood_of_distinct_noise)
{
	struct strbuf sb = STRBUF_INIT;
	struct kmsg_log log;
	/* an Xid 79, then 20,000 distinct NVRM lines and 20,000 distinct hung tasks: none fold */
	strbuf_addstr(&sb, "[ 1.0] " XID79 "\n");
	for (int i = 0; i < 20000; i++)
		strbuf_addf(&sb, "[ %d.5] NVRM: nvAssertFailed at line %d\n"
				 "[ %d.6] INFO: task worker%d:%d blocked for more than 120 seconds.\n",
			    i + 2, i, i + 2, i, i);
	parse(&log, sb.buf);
	CHECK_INT(xid_count(&log, 79), 1);
	CHECK_STR(only(&log, KMSG_XID)->bdf, "0000:02:00.0");
	CHECK(log.dropped > 0);  /* the oldest noise made room */
	CHECK_INT(log.lost, 0); /* no fault did */
	CHECK(log.nr <= KMSG_EVENTS_MAX);
	/* the newest noise is kept: it is what is recent */
	CHECK_STR(log.ev[log.nr - 1].name, "worker19999");
	kmsg_log_release(&log);
	strbuf_release(&sb);
}

TEST(kmsg_faults_fold_and_only_a_forged_log_loses_some)
{
	struct strbuf sb = STRBUF_INIT;
	struct kmsg_log log;
	/* 40,000 repeats of a few faults fold into first and last occurrence, in order */
	for (int i = 0; i < 40000; i++)
		strbuf_addf(&sb, "[ %d.0] NVRM: Xid (PCI:0000:%02x:00): %d, pid=%d, name=x, y\n", i,
			    i % 8, i % 2 ? 48 : 79, i);
	parse(&log, sb.buf);
	CHECK_INT(xid_count(&log, 79) + xid_count(&log, 48), 40000);
	CHECK_INT(log.dropped + log.lost, 0);
	kmsg_log_release(&log);
	/* 70,000 distinct faults (a forged log) pass the hard cap: the oldest are counted as lost */
	strbuf_reset(&sb);
	for (int i = 0; i < 70000; i++)
		strbuf_addf(&sb, "[ %d.0] NVRM: Xid (PCI:%04x:%02x:00): 48, DBE\n", i, i / 256,
			    i % 256);
	parse(&log, sb.buf);
	CHECK(log.lost > 0);
	CHECK(log.nr <= KMSG_EVENTS_HARD_MAX);
	CHECK_INT(xid_count(&log, 48) + log.lost, 70000);
	CHECK_STR(log.ev[log.nr - 1].bdf, "0111:6f:00.0"); /* the newest (69999) is kept */
	kmsg_log_release(&log);
	strbuf_release(&sb);
}

static bool same_events(const struct kmsg_log *a, const struct kmsg_log *b)
{
	if (a->nr != b->nr || a->lines != b->lines || a->bytes != b->bytes ||
	    a->cut_lines != b->cut_lines)
		return false;
	for (size_t i = 0; i < a->nr; i++) {
		const struct kmsg_event *x = &a->ev[i], *y = &b->ev[i];
		if (x->kind != y->kind || x->num != y->num || x->line != y->line ||
		    x->ts != y->ts || strcmp(x->bdf, y->bdf) || strcmp(x->text, y->text))
			return false;
	}
	return true;
}

TEST(kmsg_feed_in_any_chunks_gives_the_whole_parse)
{
	struct strbuf sb = STRBUF_INIT;
	struct kmsg_log whole, fed;
	struct kmsg_opts o = { .year_hint = HINT };
	strbuf_addstr(&sb, "[ 1.0] " XID79 "\n[ 2.0] plain\n");
	/* a long line with a trigger inside its first 4 KiB, one with a trigger only past it */
	strbuf_addstr(&sb, "[ 3.0] NVRM: Xid (PCI:0000:05:00): 48, pid=1, name=x, ");
	for (int i = 0; i < 9000; i++)
		strbuf_addch(&sb, 'a' + i % 26);
	strbuf_addstr(&sb, "\n[ 4.0] ");
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&sb, 'b');
	strbuf_addstr(&sb, " NVRM: Xid (PCI:0000:06:00): 79, pid=1, name=x, y\n");
	strbuf_addstr(&sb, "\n\r\n[ 5.0] nvidia-nvswitch1: SXid (PCI:0000:c3:00.0): 12028, Fatal, x\n");
	/* lines of the carry's size (4 KiB + 64) and one byte more, a last line without newline */
	for (size_t want = 4160; want <= 4161; want++) {
		size_t st = sb.len;
		strbuf_addstr(&sb, "[ 6.0] NVRM: Xid (PCI:0000:07:00): 13, pid=2, name=y, ");
		while (sb.len - st < want - 1)
			strbuf_addch(&sb, 'c');
		strbuf_addch(&sb, '\n');
	}
	strbuf_addstr(&sb, "[ 7.0] NVRM: Xid (PCI:0000:08:00): 79, pid=1, name=x, cut");
	kmsg_log_init(&whole, &o);
	kmsg_parse(&whole, sb.buf, sb.len);
	kmsg_log_finish(&whole);
	CHECK_INT(xid_count(&whole, 48), 1);
	CHECK_INT(xid_count(&whole, 79), 2); /* 02:00 and 08:00; 06:00 is past the cut */
	static const size_t sizes[] = { 1, 2, 3, 7, 64, 4095, 4096, 4160, 4161, 5000, 65536 };
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		kmsg_log_init(&fed, &o);
		for (size_t off = 0; off < sb.len; off += sizes[k])
			kmsg_feed(&fed, sb.buf + off,
				  sb.len - off < sizes[k] ? sb.len - off : sizes[k]);
		kmsg_log_finish(&fed);
		CHECK_MSG(same_events(&whole, &fed), "chunks of %zu: %zu events, %llu lines, %llu "
			  "cut; whole: %zu, %llu, %llu", sizes[k], fed.nr,
			  (unsigned long long)fed.lines, (unsigned long long)fed.cut_lines, whole.nr,
			  (unsigned long long)whole.lines, (unsigned long long)whole.cut_lines);
		CHECK(fed.has_last && near(fed.last_ts, 7.0));
		kmsg_log_release(&fed);
	}
	kmsg_log_release(&whole);
	strbuf_release(&sb);
}

TEST(kmsg_read_file_streams_the_whole_file)
{
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT, path = STRBUF_INIT;
	struct kmsg_log log;
	struct kmsg_opts o = { .year_hint = HINT };
	/* the fault is in the first bytes; 3 MiB of noise follow (a small stand-in for 1 GiB) */
	strbuf_addstr(&sb, "[ 1.0] " XID79 "\n");
	for (int i = 0; sb.len < (3u << 20); i++)
		strbuf_addf(&sb, "[ %d.0] usb 1-1: new high-speed USB device number %d\n", i + 2, i);
	strbuf_addf(&path, "%s/big.log", test_tmpdir());
	test_write(test_tmpdir(), "big.log", sb.buf);

	struct kmsg_read rd = { .chunk = 4096 };
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_file(path.buf, &log, &rd, &err), 0);
	kmsg_log_finish(&log);
	CHECK(rd.complete && !rd.device && !rd.all_zero);
	CHECK_INT(rd.done, sb.len);
	CHECK_INT(rd.size, sb.len);
	CHECK_INT(log.bytes, sb.len);
	CHECK_INT(xid_count(&log, 79), 1);
	CHECK_STR(rd.head, "[ 1.0] " XID79);
	kmsg_log_release(&log);

	/* a deadline already passed: one chunk is read, and the read says it is not complete */
	struct kmsg_read late = { .chunk = 4096, .deadline_ms = 1 };
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_file(path.buf, &log, &late, &err), 0);
	kmsg_log_finish(&log);
	CHECK(!late.complete);
	CHECK_INT(late.done, 4096);
	CHECK_INT(late.size, sb.len);
	CHECK_INT(xid_count(&log, 79), 1);
	kmsg_log_release(&log);

	/* errors name the file */
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_file("/nonexistent/k.log", &log, &rd, &err), -1);
	CHECK_STR(err.buf, "cannot read '/nonexistent/k.log': No such file or directory");
	CHECK_INT(kmsg_read_file(test_tmpdir(), &log, &rd, &err), -1);
	CHECK_CONTAINS(err.buf, "Is a directory");
	kmsg_log_release(&log);
	strbuf_release(&sb);
	strbuf_release(&err);
	strbuf_release(&path);
}

TEST(kmsg_read_file_fifo_stops_at_the_deadline)
{
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;
	struct kmsg_log log;
	struct kmsg_opts o = { .year_hint = HINT };
	strbuf_addf(&path, "%s/fifo", test_tmpdir());
	CHECK_INT(mkfifo(path.buf, 0600), 0);
	/* no writer: an empty log, read to its end */
	struct kmsg_read rd = { .deadline_ms = mono_ms() + 10000 };
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_file(path.buf, &log, &rd, &err), 0);
	CHECK(rd.complete);
	CHECK_INT(rd.done, 0);
	kmsg_log_release(&log);
	/* a writer that logs a fault and then stalls: the fault is read, the read stops at the
	 * deadline instead of waiting for the writer */
	int w = open(path.buf, O_RDWR | O_CLOEXEC);
	CHECK(w >= 0);
	static const char line[] = "[ 1.0] " XID79 "\n";
	CHECK_INT(write(w, line, sizeof(line) - 1), (ssize_t)sizeof(line) - 1);
	rd.deadline_ms = mono_ms() + 200;
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_file(path.buf, &log, &rd, &err), 0);
	kmsg_log_finish(&log);
	CHECK(!rd.complete);
	CHECK_INT(rd.done, sizeof(line) - 1);
	CHECK_INT(rd.size, 0);
	CHECK_INT(xid_count(&log, 79), 1);
	kmsg_log_release(&log);
	close(w);
	strbuf_release(&err);
	strbuf_release(&path);
}
