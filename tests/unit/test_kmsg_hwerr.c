/*
 * test_kmsg_hwerr.c: host hardware errors in the kernel log (issue 18): the parser on every
 * shape of EDAC, machine check, APEI GHES / BERT and PCIe AER lines (real shapes, our values;
 * sources in tests/data/realworld/kernel.md), the Xid 45 cascade tail, forged user variants of
 * each that must not count, and the kernel check's verdicts on them through the binary.
 */
#include "../harness.h"
#include "../../src/logs/kmsg.h"

#define HINT 1772366400.0

static void parse(struct kmsg_log *log, const char *text)
{
	struct kmsg_opts o = { .year_hint = HINT };
	kmsg_log_init(log, &o);
	kmsg_parse(log, text, strlen(text));
	kmsg_log_finish(log);
}

static size_t count_kind(const struct kmsg_log *log, enum kmsg_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < log->nr; i++)
		n += log->ev[i].kind == kind;
	return n;
}

TEST(kmsg_hwerr_edac_lines)
{
	struct kmsg_log log;
	parse(&log,
	      /* sb_edac / skx_edac via edac_mc.c, dmesg -T (seen in grondo/edac-utils#10) */
	      "[Tue Mar  3 08:11:02 2026] EDAC MC1: 2 CE memory read error on "
	      "CPU_SrcID#1_Ha#0_Chan#3_DIMM#1 (channel:3 slot:1 page:0x5a21c3 offset:0x240 "
	      "grain:32 syndrome:0x0 -  area:DRAM err_code:0001:0093 socket:1 ha:0 "
	      "channel_mask:8 rank:1)\n"
	      /* kern.log (openstreetmap/operations#300): "N CE error on" */
	      "Mar  3 08:12:40 gpu17 kernel: [ 8123.551207] EDAC MC0: 3 CE error on "
	      "CPU#0Channel#1_DIMM#0 (channel:1 slot:0 page:0x0 offset:0x0 grain:8 syndrome:0x0)\n"
	      /* the UE shape, kmsg record */
	      "0,912,8200000000,-;EDAC MC3: 1 UE memory read error on "
	      "CPU_SrcID#1_MC#1_Chan#0_DIMM#0 (channel:0 slot:0 page:0x7b0f12 offset:0x0 "
	      "grain:32 - err_code:0x0000:0x009f socket:1 imc:1 rank:0)\n"
	      /* edac_mc.c with an empty message: "%d UE on %s (...)" */
	      "[ 8300.000001] EDAC MC2: 1 UE on any memory ( page:0x0 offset:0x0 grain:1)\n"
	      /* not error reports: the core's banner and a chipset line */
	      "[    2.100000] EDAC MC: Ver: 3.0.0\n"
	      "[    2.200000] EDAC MC0: Giving out device to module skx_edac controller Skylake "
	      "Socket#0 IMC#0: DEV 0000:3a:0a.0 (INTERRUPT)\n");
	CHECK_INT(count_kind(&log, KMSG_EDAC), 4);
	const struct kmsg_event *ev = &log.ev[0];
	CHECK_INT(ev->fatal, 0);
	CHECK_INT(ev->num, 1);
	CHECK_INT(ev->count, 2);
	CHECK_STR(ev->name, "MC1");
	CHECK_STR(ev->text, "CPU_SrcID#1_Ha#0_Chan#3_DIMM#1");
	CHECK_STR(log.ev[1].text, "CPU#0Channel#1_DIMM#0");
	CHECK_INT(log.ev[1].count, 3);
	CHECK_INT(log.ev[2].fatal, 1);
	CHECK_STR(log.ev[2].name, "MC3");
	CHECK_STR(log.ev[3].text, "any memory");
	kmsg_log_release(&log);
}

TEST(kmsg_hwerr_mce_lines)
{
	struct kmsg_log log;
	parse(&log,
	      "[ 9001.100000] mce: [Hardware Error]: Machine check events logged\n"
	      /* UC (bit 61) set: uncorrected */
	      "[ 9002.100000] mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 7: "
	      "be00000000800400\n"
	      "[ 9002.100100] mce: [Hardware Error]: RIP 10:<ffffffff8a2b3c4d> {intel_idle+0x5d/0x90}\n"
	      /* UC clear: corrected */
	      "[ 9003.100000] mce: [Hardware Error]: CPU 4: Machine Check: 0 Bank 17: "
	      "8c00004000010091\n"
	      "[ 9004.100000] mce: [Hardware Error]: Machine check: Processor context corrupt\n"
	      /* older kernels: no "mce: " */
	      "[ 9005.100000] [Hardware Error]: CPU 2: Machine Check Exception: 4 Bank 4: "
	      "b200000000070f0f\n");
	CHECK_INT(count_kind(&log, KMSG_MCE), 5);
	CHECK_INT(log.ev[0].fatal, -1);
	CHECK_INT(log.ev[1].fatal, 1);
	CHECK_INT(log.ev[1].num, 7);
	CHECK_STR(log.ev[1].name, "CPU 12");
	CHECK_INT(log.ev[2].fatal, 0);
	CHECK_INT(log.ev[3].fatal, 1);
	CHECK_INT(log.ev[4].fatal, 1);
	kmsg_log_release(&log);
}

TEST(kmsg_hwerr_ghes_blocks)
{
	struct kmsg_log log;
	parse(&log,
	      /* ghes.c + cper.c (kubernetes/node-problem-detector#846) */
	      "Mar  3 09:00:01 gpu17 kernel: {12}[Hardware Error]: Hardware error from APEI "
	      "Generic Hardware Error Source: 5\n"
	      "Mar  3 09:00:01 gpu17 kernel: {12}[Hardware Error]: It has been corrected by h/w "
	      "and requires no further action\n"
	      "Mar  3 09:00:01 gpu17 kernel: {12}[Hardware Error]: event severity: corrected\n"
	      "Mar  3 09:00:01 gpu17 kernel: {12}[Hardware Error]:  Error 0, type: corrected\n"
	      "Mar  3 09:00:01 gpu17 kernel: {12}[Hardware Error]:   section_type: memory error\n"
	      "Mar  3 09:05:00 gpu17 kernel: {13}[Hardware Error]: Hardware error from APEI "
	      "Generic Hardware Error Source: 2\n"
	      "Mar  3 09:05:00 gpu17 kernel: {13}[Hardware Error]: event severity: fatal\n"
	      "Mar  3 09:05:00 gpu17 kernel: {13}[Hardware Error]:  Error 0, type: fatal\n"
	      "Mar  3 09:05:00 gpu17 kernel: {13}[Hardware Error]:   section_type: PCIe error\n"
	      /* BERT at boot: the previous boot's record, without {N} (yangxiaohua2009/custom-kernel#6) */
	      "[    2.412000] BERT: Error records from previous boot:\n"
	      "[    2.412010] [Hardware Error]: event severity: recoverable\n"
	      "[    2.412020] [Hardware Error]:  Error 0, type: recoverable\n");
	CHECK_INT(count_kind(&log, KMSG_GHES), 3);
	CHECK_INT(log.ev[0].num, KMSG_GHES_CORRECTED);
	CHECK_INT(log.ev[0].fatal, 0);
	CHECK_STR(log.ev[0].name, "error source 5");
	CHECK_STR(log.ev[0].text, "section_type: memory error");
	CHECK_INT(log.ev[1].num, KMSG_GHES_FATAL);
	CHECK_INT(log.ev[1].fatal, 1);
	CHECK_STR(log.ev[1].name, "error source 2");
	CHECK_STR(log.ev[1].text, "section_type: PCIe error");
	CHECK_INT(log.ev[2].num, KMSG_GHES_RECOVERABLE);
	CHECK_INT(log.ev[2].fatal, 1);
	CHECK_STR(log.ev[2].name, "boot error record (BERT)");
	kmsg_log_release(&log);
}

TEST(kmsg_hwerr_aer_lines)
{
	struct kmsg_log log;
	parse(&log,
	      /* 6.x words (minisforum-docs/MS-02-Ultra#10) */
	      "[ 700.1] pcieport 0000:15:01.0: AER: Uncorrectable (Fatal) error message received "
	      "from 0000:18:00.0\n"
	      "[ 700.2] nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), "
	      "type=Transaction Layer, (Receiver ID)\n"
	      /* older words (geerlingguy/raspberry-pi-pcie-devices#116) */
	      "[ 701.1] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: "
	      "0000:00:01.0\n"
	      "[ 701.2] pcieport 0000:00:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
	      "type=Transaction Layer, (Requester ID)\n"
	      "[ 702.1] pcieport 0000:5d:00.0: AER: Multiple Uncorrected (Fatal) error received: "
	      "id=5d00\n"
	      /* corrected: not read */
	      "[ 703.1] pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5\n"
	      "[ 703.2] pcieport 0000:00:1c.5: PCIe Bus Error: severity=Corrected, type=Physical "
	      "Layer, (Receiver ID)\n");
	CHECK_INT(count_kind(&log, KMSG_AER), 5);
	CHECK_INT(log.ev[0].fatal, 1);
	CHECK_STR(log.ev[0].bdf, "0000:18:00.0"); /* the source, not the port */
	CHECK_STR(log.ev[1].bdf, "0000:18:00.0");
	CHECK_STR(log.ev[1].name, "nvidia");
	CHECK_INT(log.ev[2].fatal, 0);
	CHECK_INT(log.ev[3].fatal, 0);
	CHECK_INT(log.ev[4].fatal, 1);
	CHECK_STR(log.ev[4].bdf, "0000:5d:00.0");
	kmsg_log_release(&log);
}

TEST(kmsg_hwerr_xid45_cause_tail)
{
	struct kmsg_log log;
	parse(&log,
	      "[ 50.1] NVRM: Xid (PCI:0000:dc:00): 45, pid=41877, name=pt_main_thread, Ch 00000009 "
	      "caused by previous Xid 149\n"
	      "[ 50.2] NVRM: Xid (PCI:0000:dc:00): 45, pid=41877, name=pt_main_thread, Ch 0000000a\n"
	      /* no pid/name form */
	      "[ 50.3] NVRM: Xid (PCI:0000:de:00): 45, Ch 00000002 caused by previous Xid 79\n"
	      /* the tail not at the end: not the driver's */
	      "[ 50.4] NVRM: Xid (PCI:0000:de:00): 45, pid=1, name=x caused by previous Xid 79, "
	      "Ch 00000003\n"
	      /* only Xid 45 carries it */
	      "[ 50.5] NVRM: Xid (PCI:0000:de:00): 13, pid=1, name=x, Graphics Exception caused "
	      "by previous Xid 79\n");
	CHECK_INT(log.nr, 5);
	CHECK_INT(log.ev[0].cause, 149);
	CHECK_INT(log.ev[1].cause, 0);
	CHECK_INT(log.ev[2].cause, 79);
	CHECK_INT(log.ev[3].cause, 0);
	CHECK_INT(log.ev[4].cause, 0);
	kmsg_log_release(&log);
}

/*
 * Userspace cannot make these count: records of a user facility, lines whose head is not at the
 * start of the kernel's message, and the one head a process name could cover ("EDAC MC0: 1 UE "
 * is 15 bytes) followed by the "[PID]" the kernel writes after a name.
 */
TEST(kmsg_hwerr_forged_variants_do_not_count)
{
	struct kmsg_log log;
	parse(&log,
	      /* logger / systemd: facility 1 and 3 */
	      "11,900,9000000,-;EDAC MC3: 1 UE memory read error on DIMM_A1 (channel:0 slot:0 "
	      "page:0x1 offset:0x0 grain:32)\n"
	      "14,901,9000001,-;mce: [Hardware Error]: Machine check: Processor context corrupt\n"
	      "30,902,9000002,-;{1}[Hardware Error]: event severity: fatal\n"
	      "13,903,9000003,-;pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: "
	      "0000:18:00.0\n"
	      /* a process named "EDAC MC0: 1 UE " segfaults: "NAME[PID]: segfault at ..." and a
	       * file it mapped, named by the user */
	      "6,904,9000004,-;EDAC MC0: 1 UE [4242]: segfault at 0 ip 0000000000401136 sp "
	      "00007ffd3b2c1e70 error 4 in x on DIMM_B2 (page:0x1 grain:8)[401000+1000]\n"
	      /* warn_alloc(): "NAME: page allocation failure: ... cpuset=CGROUP" (a user's cgroup) */
	      "4,910,9000010,-;EDAC MC0: 1 UE : page allocation failure: order:0, mode:0xcc0"
	      "(GFP_KERNEL), nodemask=(null),cpuset=/x on DIMM_C3 (page:0x1 grain:8),mems_allowed=0\n"
	      /* exec of a path holding the lines */
	      "4,905,9000005,-;process 'x' launched '/tmp/mce: [Hardware Error]: Machine check: "
	      "x' with NULL argv: empty string added\n"
	      "4,906,9000006,-;process 'x' launched '/tmp/{1}[Hardware Error]: event severity: "
	      "fatal' with NULL argv: empty string added\n"
	      "4,907,9000007,-;process 'x' launched '/tmp/pcieport 0000:00:01.0: AER: "
	      "Uncorrected (Fatal) error received' with NULL argv: empty string added\n"
	      /* a comm that looks like a device prefix: the kernel's "[PID]" follows it */
	      "6,908,9000008,-;x 0000:00:01.0[77]: segfault at 0 ip 0 sp 0 error 4 in "
	      "Uncorrected (Fatal) error received[401000+1000]\n"
	      /* journalctl: another ident */
	      "Mar  3 09:00:01 gpu17 python3[77]: EDAC MC0: 4 UE memory read error on DIMM_A1 "
	      "(page:0x1 offset:0x0 grain:8)\n"
	      /* the cascade tail in a user's record */
	      "12,909,9000009,-;NVRM: Xid (PCI:0000:dc:00): 45, Ch 00000002 caused by previous "
	      "Xid 79\n");
	CHECK_INT(count_kind(&log, KMSG_EDAC), 0);
	CHECK_INT(count_kind(&log, KMSG_MCE), 0);
	CHECK_INT(count_kind(&log, KMSG_GHES), 0);
	CHECK_INT(count_kind(&log, KMSG_AER), 0);
	CHECK_INT(count_kind(&log, KMSG_XID), 0);
	CHECK(log.not_kernel >= 6);
	kmsg_log_release(&log);
}

/* Every new trigger is found at every alignment of the scan's stride. */
TEST(kmsg_hwerr_triggers_at_every_alignment)
{
	static const char *const lines[] = {
		"EDAC MC3: 1 UE memory read error on DIMM_A1 (channel:0 page:0x1 grain:32)",
		"mce: [Hardware Error]: Machine check events logged",
		"{4}[Hardware Error]: event severity: fatal",
		"pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:18:00.0",
	};
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
		for (int pad = 0; pad < 6; pad++) {
			struct strbuf sb = STRBUF_INIT;
			struct kmsg_log log;
			strbuf_addstr(&sb, "[ 1.000000] filler line\n");
			strbuf_addf(&sb, "%.*s\n", pad, "xxxxxx");
			strbuf_addf(&sb, "[ 2.000000] %s\n", lines[i]);
			parse(&log, sb.buf);
			CHECK_MSG(log.nr == 1, "'%s' at pad %d: %zu events", lines[i], pad, log.nr);
			kmsg_log_release(&log);
			strbuf_release(&sb);
		}
	}
}
