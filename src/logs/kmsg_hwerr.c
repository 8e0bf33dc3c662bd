/*
 * kmsg_hwerr.c: host hardware errors in the kernel log (see kmsg.h): memory errors the EDAC
 * drivers count, machine checks, firmware-first (APEI GHES / BERT) error blocks and PCIe AER
 * errors. A GPU host with a failing DIMM or a PCIe link taking fatal errors is not fit to train,
 * whatever its GPUs say.
 *
 * The kernel's own formats, and only where the kernel puts them (the rules of kmsg_event.c): each
 * head is at the start of the message and longer than a process name (TASK_COMM_LEN 16: at most
 * 15 bytes) or, for the one head a name could cover ("EDAC MC0: 1 UE " is 15 bytes), checked for
 * what the kernel writes right after a name: never a letter, while the EDAC message starts with
 * one.
 *
 *   EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 ...)
 *       drivers/edac/edac_mc.c, edac_ce_error()/edac_ue_error(): "%d CE %s%son %s (%s %s)" after
 *       edac_mc_printk()'s "EDAC MC%d: "
 *   mce: [Hardware Error]: Machine check events logged           (notice: records wait in mcelog)
 *   mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400
 *   mce: [Hardware Error]: Machine check: Processor context corrupt   (mce_panic())
 *       arch/x86/kernel/cpu/mce/core.c; HW_ERR is "[Hardware Error]: ", pr_fmt "mce: "
 *   {7}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 3
 *   {7}[Hardware Error]: event severity: fatal
 *   {7}[Hardware Error]:   section_type: memory error
 *       drivers/acpi/apei/ghes.c and drivers/firmware/efi/cper.c (BERT prints the same block
 *       without "{N}" at boot: records of the previous boot)
 *   pcieport 0000:00:03.0: AER: Uncorrectable (Fatal) error message received from 0000:18:00.0
 *   pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:18:00.0   (older)
 *   nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, ...
 *       drivers/pci/pcie/aer.c; the severity words changed from "Uncorrected" to
 *       "Uncorrectable" in 6.x; corrected AER lines are not read (no fault alone)
 */
#include "kmsg_internal.h"

#include <ctype.h>

static const char hw_err[] = "[Hardware Error]: ";
#define HW_ERR_LEN (sizeof(hw_err) - 1)

/* ---- EDAC ---- */

static bool parse_edac(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
		       uint64_t line)
{
	long long mc, n;
	const char *p = msg + 7; /* after "EDAC MC" */
	int d = digits_upto(p, 4, &mc);
	if (!d || strncmp(p + d, ": ", 2))
		return false;
	p += d + 2;
	d = digits_upto(p, 6, &n);
	if (!d || p[d] != ' ')
		return false;
	p += d + 1;
	bool ue = !strncmp(p, "UE ", 3);
	if (!ue && strncmp(p, "CE ", 3))
		return false;
	p += 3;
	/*
	 * A process name covers at most 15 bytes, and the kernel's text right after it is never a
	 * letter ("NAME[PID]: segfault", "NAME: page allocation failure", "NAME (PID): ..."); the
	 * EDAC message always starts with one ("memory read error", "error", or "on" when empty).
	 */
	if (!isalpha((unsigned char)*p))
		return false;
	const char *on = !strncmp(p, "on ", 3) ? p : strstr(p, " on ");
	if (!on)
		return false;
	const char *label = on + (*on == ' ' ? 4 : 3);
	const char *end = strstr(label, " (");
	struct kmsg_event *ev = kmsg_new_event(log, KMSG_EDAC, px, line);
	ev->num = (int)mc;
	ev->fatal = ue;
	/* the line stands for the errors it counts (a u16 in the kernel) */
	ev->count = n < 1 ? 1 : n > 65535 ? 65535 : (uint32_t)n;
	snprintf(ev->name, sizeof(ev->name), "MC%d", (int)mc);
	kmsg_copy_field(ev->text, sizeof(ev->text), label,
			end ? (size_t)(end - label) : strlen(label));
	return true;
}

/* ---- machine checks ---- */

#define MCI_STATUS_UC (1ULL << 61) /* uncorrected (arch/x86/include/asm/mce.h) */

/* "Machine check events logged", "CPU 3: Machine Check[ Exception]: 0 Bank 5: <status>",
 * "Machine check: <panic message>": anything else of the mce block is ignored. */
static bool parse_mce(struct kmsg_log *log, const struct kmsg_prefix *px, const char *r,
		      uint64_t line)
{
	struct kmsg_event *ev;
	if (starts_with(r, "Machine check events logged")) {
		ev = kmsg_new_event(log, KMSG_MCE, px, line);
		kmsg_copy_field(ev->text, sizeof(ev->text), r, strlen(r));
		return true;
	}
	if (starts_with(r, "Machine check: ")) {
		ev = kmsg_new_event(log, KMSG_MCE, px, line);
		ev->fatal = 1;
		kmsg_copy_field(ev->text, sizeof(ev->text), r, strlen(r));
		return true;
	}
	long long cpu, bank;
	int d;
	if (strncmp(r, "CPU ", 4) || !(d = digits_upto(r + 4, 5, &cpu)))
		return false;
	const char *p = r + 4 + d;
	if (strncmp(p, ": Machine Check", 15))
		return false;
	const char *b = strstr(p, " Bank ");
	if (!b || !(d = digits_upto(b + 6, 4, &bank)) || strncmp(b + 6 + d, ": ", 2))
		return false;
	const char *hex = b + 6 + d + 2;
	uint64_t status = 0;
	int nh = 0;
	while (nh < 16 && isxdigit((unsigned char)hex[nh])) {
		int c = tolower((unsigned char)hex[nh]);
		status = status * 16 + (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
		nh++;
	}
	if (!nh)
		return false;
	ev = kmsg_new_event(log, KMSG_MCE, px, line);
	ev->num = (int)bank;
	ev->fatal = (status & MCI_STATUS_UC) != 0;
	snprintf(ev->name, sizeof(ev->name), "CPU %d", (int)cpu);
	kmsg_copy_field(ev->text, sizeof(ev->text), r, strlen(r));
	return true;
}

/* ---- APEI GHES / BERT ---- */

static int ghes_severity(const char *w)
{
	if (starts_with(w, "fatal"))
		return KMSG_GHES_FATAL;
	if (starts_with(w, "recoverable"))
		return KMSG_GHES_RECOVERABLE;
	if (starts_with(w, "corrected"))
		return KMSG_GHES_CORRECTED;
	if (starts_with(w, "info"))
		return KMSG_GHES_INFO;
	return -1;
}

static bool parse_ghes(struct kmsg_log *log, const struct kmsg_prefix *px, long seq,
		       const char *r, uint64_t line)
{
	static const char src[] = "Hardware error from APEI Generic Hardware Error Source: ";
	long long v;
	if (starts_with(r, src)) {
		log->ghes_seq = seq;
		log->ghes_source = digits_upto(r + sizeof(src) - 1, 6, &v) ? (int)v : -1;
		log->ghes_line = line;
		return true;
	}
	if (starts_with(r, "event severity: ")) {
		int sev = ghes_severity(r + 16);
		struct kmsg_event *ev = kmsg_new_event(log, KMSG_GHES, px, line);
		ev->num = sev;
		ev->fatal = sev == KMSG_GHES_FATAL || sev == KMSG_GHES_RECOVERABLE;
		if (sev < 0) /* a word cper.c does not print: judged as not corrected */
			ev->fatal = 1;
		if (log->ghes_source >= 0 && log->ghes_seq == seq && line - log->ghes_line <= 4)
			snprintf(ev->name, sizeof(ev->name), "error source %d", log->ghes_source);
		else if (seq < 0)
			snprintf(ev->name, sizeof(ev->name), "boot error record (BERT)");
		kmsg_copy_field(ev->text, sizeof(ev->text), r, strlen(r));
		return true;
	}
	/* "  section_type: memory error": what the last severity was about */
	const char *s = skip_spaces(r);
	if (starts_with(s, "section_type: ") && log->nr) {
		struct kmsg_event *ev = &log->ev[log->nr - 1];
		if (ev->kind == KMSG_GHES && line > ev->line && line - ev->line <= 8 &&
		    !strstr(ev->text, "section_type"))
			kmsg_copy_field(ev->text, sizeof(ev->text), s, strlen(s));
		return true;
	}
	return true; /* the rest of the block */
}

/* ---- PCIe AER ---- */

/* After "Uncorrected"/"Uncorrectable": " (Fatal)" 1, " (Non-Fatal)" 0, else -1. */
static int aer_severity(const char *s)
{
	if (starts_with(s, "Uncorrectable"))
		s += 13;
	else if (starts_with(s, "Uncorrected"))
		s += 11;
	else
		return -1;
	if (starts_with(s, " (Fatal)"))
		return 1;
	if (starts_with(s, " (Non-Fatal)"))
		return 0;
	return -1;
}

static bool parse_aer(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
		      uint64_t line)
{
	const char *p = kmsg_dev_prefix(msg);
	if (!p)
		return false;
	if (starts_with(p, ":pcie")) /* old kernels: the port service's name, "BDF:pcie002" */
		for (p += 5; isalnum((unsigned char)*p);)
			p++;
	if (strncmp(p, ": ", 2))
		return false;
	p += 2;
	if (starts_with(p, "AER: "))
		p += 5;
	const char *r = p;
	int sev;
	if (starts_with(r, "PCIe Bus Error: severity=")) {
		sev = aer_severity(r + 25);
	} else {
		if (starts_with(r, "Multiple "))
			r += 9;
		sev = aer_severity(r);
		if (sev >= 0 && !strstr(r, " error received") && !strstr(r, " error message received"))
			sev = -1;
	}
	if (sev < 0)
		return false;
	struct kmsg_event *ev = kmsg_new_event(log, KMSG_AER, px, line);
	ev->fatal = sev;
	/* the device that failed: the source a port names ("from BDF", "received: BDF"), else
	 * the device that logged the line (and its driver: "nvidia" is a GPU) */
	const char *from = strstr(r, "received from ");
	const char *colon = strstr(r, "received: ");
	const char *srcp = from ? from + 14 : colon ? colon + 10 : NULL;
	char bdf[20];
	if (srcp && kmsg_parse_bdf(srcp, bdf) && strcmp(bdf, "0000:00:00.0")) {
		memcpy(ev->bdf, bdf, sizeof(bdf));
	} else {
		size_t dl = strcspn(msg, " ");
		kmsg_parse_bdf(msg + dl + 1, ev->bdf);
		kmsg_copy_field(ev->name, sizeof(ev->name), msg, dl);
	}
	kmsg_copy_field(ev->text, sizeof(ev->text), p, strlen(p));
	return true;
}

/* ---- dispatch ---- */

bool kmsg_parse_hwerr(struct kmsg_log *log, const struct kmsg_prefix *px, uint64_t line)
{
	const char *msg = px->msg;
	if (!strncmp(msg, "EDAC MC", 7))
		return parse_edac(log, px, msg, line);
	if (!strncmp(msg, "mce: ", 5) && !strncmp(msg + 5, hw_err, HW_ERR_LEN))
		return parse_mce(log, px, msg + 5 + HW_ERR_LEN, line);
	if (!strncmp(msg, hw_err, HW_ERR_LEN)) {
		/* older kernels print machine checks without "mce: "; BERT's block has no {N} */
		const char *r = msg + HW_ERR_LEN;
		return parse_mce(log, px, r, line) || parse_ghes(log, px, -1, r, line);
	}
	if (msg[0] == '{') {
		long long seq;
		int d = digits_upto(msg + 1, 9, &seq);
		if (d && msg[1 + d] == '}' && !strncmp(msg + 2 + d, hw_err, HW_ERR_LEN))
			return parse_ghes(log, px, (long)seq, msg + 2 + d + HW_ERR_LEN, line);
		return false;
	}
	if (strstr(msg, "Fatal)"))
		return parse_aer(log, px, msg, line);
	return false;
}
