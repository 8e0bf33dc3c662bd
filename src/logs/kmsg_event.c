/*
 * kmsg_event.c: the message parsers of the kernel log (Xid, SXid, NVRM, OOM, PCIe width, hung
 * tasks, mlx5 links): one line's message, after its timestamp prefix, into events.
 */
#include "kmsg_internal.h"

#include <ctype.h>

/* ---- fields ---- */

/* Copy at most n bytes of src into dst[size] as printable ASCII, trimmed. */
static void copy_field(char *dst, size_t size, const char *src, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n && src[i] && k + 1 < size; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[k++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	while (k && dst[k - 1] == ' ')
		k--;
	dst[k] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_run(const char *s, int max, unsigned long *out)
{
	unsigned long v = 0;
	int i = 0;
	while (i < max && hexval(s[i]) >= 0)
		v = v * 16 + (unsigned long)hexval(s[i++]);
	*out = v;
	return i;
}

/*
 * A PCI address at s: "dddd:bb:dd.f", "dddd:bb:dd" (Xid's form) or "bb:dd.f". Writes the canonical
 * lowercase "dddd:bb:dd.f" (function 0 when absent); returns the end or NULL.
 */
static const char *parse_bdf(const char *s, char out[20])
{
	unsigned long a, b, c, f = 0;
	int na = hex_run(s, 8, &a);
	if (!na || s[na] != ':')
		return NULL;
	const char *p = s + na + 1;
	int nb = hex_run(p, 2, &b);
	if (nb != 2)
		return NULL;
	p += 2;
	if (*p == '.' && na == 2) { /* bus:dev.fn */
		if (hexval(p[1]) < 0 || hexval(p[1]) > 7)
			return NULL;
		snprintf(out, 20, "0000:%02lx:%02lx.%x", a, b, hexval(p[1]));
		return p + 2;
	}
	if (*p != ':' || hex_run(p + 1, 2, &c) != 2 || na < 4)
		return NULL;
	p += 3;
	if (*p == '.' && hexval(p[1]) >= 0 && hexval(p[1]) <= 7) {
		f = (unsigned long)hexval(p[1]);
		p += 2;
	}
	snprintf(out, 20, "%04lx:%02lx:%02lx.%lx", a, b, c, f);
	return p;
}

void kmsg_copy_field(char *dst, size_t size, const char *src, size_t n)
{
	copy_field(dst, size, src, n);
}

const char *kmsg_parse_bdf(const char *s, char out[20])
{
	return parse_bdf(s, out);
}

/* The first PCI address anywhere in s, or false. */
static bool find_bdf(const char *s, char out[20])
{
	for (const char *p = strchr(s, ':'); p; p = strchr(p + 1, ':')) {
		const char *st = p;
		while (st > s && hexval(st[-1]) >= 0 && p - st < 8)
			st--;
		if (p - st >= 2 && (st == s || !isalnum((unsigned char)st[-1])) && parse_bdf(st, out))
			return true;
	}
	return false;
}

/* 1 "Fatal", 0 "Nonfatal"/"Non-fatal", -1 neither (anywhere in s) */
static int fatal_word(const char *s)
{
	if (strcasestr(s, "nonfatal") || strcasestr(s, "non-fatal") || strcasestr(s, "non fatal"))
		return 0;
	if (strcasestr(s, "fatal"))
		return 1;
	return -1;
}

/* ---- events ---- */

/* After "Xid (...)" / "SXid (...)": ": 79, " -> 79, returning what follows (NULL if no number). */
static const char *event_number(const char *s, int *num)
{
	if (*s == ':')
		s++;
	s = skip_spaces(s);
	long long v;
	int n = digits_upto(s, 9, &v);
	if (!n || dig(s[n]))
		return NULL;
	*num = (int)v;
	s += n;
	if (*s == ',')
		s++;
	return skip_spaces(s);
}

/*
 * The root cause the driver appends to an Xid 45 (preemptive channel removal) that another
 * error set off: "... Ch 00000010 caused by previous Xid 149" (kernel_rc.c: " caused by previous
 * Xid %d" after the message, at the very end of the line). Only there: a process name (name=)
 * ends at the first ", " and the driver's message follows it, so text a user put in a name is
 * never the end of the line. Returns the Xid, or 0.
 */
static int cause_tail(const char *s)
{
	static const char tail[] = " caused by previous Xid ";
	const char *hit = NULL;
	for (const char *p = strstr(s, tail); p; p = strstr(p + 1, tail))
		hit = p;
	if (!hit)
		return 0;
	const char *d = hit + sizeof(tail) - 1;
	long long v;
	int n = digits_upto(d, 6, &v);
	if (!n || *skip_spaces(d + n))
		return 0;
	return (int)v;
}

/*
 * "Xid (PCI:0000:9b:00 GPU-I:05 GPU-CI:01): 79, pid=9962, name=python, text", the driver's
 * "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s" (kernel_rc.c; the PCI: prefix is
 * missing on old drivers). The whole head must be there, a PCI address in parentheses and
 * then the number: a process name the kernel prints at the start of its own line (a
 * segfault's "COMM[PID]: segfault at ...", TASK_COMM_LEN 16) is at most 15 bytes, too short
 * for "NVRM: Xid (PCI:0000:18:00): 79", and the kernel's text that follows it is never a PCI
 * address.
 */
static bool parse_xid(const char *s, struct kmsg_event *ev)
{
	if (*s != ' ')
		return false;
	s = skip_spaces(s);
	if (*s != '(')
		return false;
	const char *close = memchr(s, ')', strnlen(s, 96));
	if (!close)
		return false;
	const char *p = s + 1;
	if (!strncmp(p, "PCI:", 4))
		p += 4;
	const char *q = parse_bdf(p, ev->bdf);
	if (!q || q > close || q - p < 10) /* "dddd:bb:dd" at least */
		return false;
	for (p = q; p < close;) {
		long long v;
		p = skip_spaces(p);
		if (!strncmp(p, "GPU-I:", 6) && digits_upto(p + 6, 4, &v)) {
			ev->gi = (int)v;
			p += 6 + digits_upto(p + 6, 4, &v);
		} else if (!strncmp(p, "GPU-CI:", 7) && digits_upto(p + 7, 4, &v)) {
			ev->ci = (int)v;
			p += 7 + digits_upto(p + 7, 4, &v);
		} else {
			break;
		}
	}
	if (skip_spaces(p) != close || close[1] != ':')
		return false;
	s = event_number(close + 1, &ev->num);
	if (!s)
		return false;
	if (!strncmp(s, "pid=", 4)) {
		s += 4;
		const char *end = strstr(s, ", ");
		long long v;
		if (dig(*s) && digits_upto(s, 12, &v))
			ev->pid = v;
		s = end ? end + 2 : s + strlen(s);
	}
	if (!strncmp(s, "name=", 5)) {
		s += 5;
		const char *end = strstr(s, ", ");
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (strncmp(s, "<unknown>", 9))
			copy_field(ev->name, sizeof(ev->name), s, len);
		s = end ? end + 2 : s + len;
	}
	copy_field(ev->text, sizeof(ev->text), s, strlen(s));
	ev->fatal = fatal_word(s);
	if (ev->num == 45)
		ev->cause = cause_tail(s);
	if (ev->num == 154) {
		const char *to = strstr(s, "to 0x");
		unsigned long code;
		if (to && hex_run(to + 5, 7, &code))
			ev->recovery = (int)code;
	}
	return true;
}

/*
 * "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 28 RX Short Error Rate": the
 * NVSwitch driver's own device prefix "nvidia-nvswitchN: " starts the message, and "SXid (" follows
 * it at once (a process name of at most 15 bytes cannot hold "nvidia-nvswitch0: SXid").
 * Returns false for anything else.
 */
static bool parse_sxid(const char *msg, struct kmsg_event *ev)
{
	static const char dev[] = "nvidia-nvswitch";
	if (strncmp(msg, dev, sizeof(dev) - 1))
		return false;
	const char *s = msg + sizeof(dev) - 1;
	long long v;
	int n = digits_upto(s, 4, &v);
	if (!n || strncmp(s + n, ": SXid (", 8))
		return false;
	copy_field(ev->name, sizeof(ev->name), msg, (size_t)(s + n - msg));
	s = s + n + 7;
	if (*s == '(') {
		const char *close = memchr(s, ')', strnlen(s, 64));
		if (!close)
			return false;
		const char *p = s + 1;
		if (!strncmp(p, "PCI:", 4))
			p += 4;
		if (!parse_bdf(p, ev->bdf))
			ev->bdf[0] = 0;
		s = close + 1;
	}
	s = event_number(s, &ev->num);
	if (!s)
		return false;
	if (!strncasecmp(s, "non-fatal", 9) || !strncasecmp(s, "nonfatal", 8))
		ev->fatal = 0;
	else if (!strncasecmp(s, "fatal", 5))
		ev->fatal = 1;
	copy_field(ev->text, sizeof(ev->text), s, strlen(s));
	return true;
}

/* Substrings of NVRM lines that are known to be harmless. */
static const char *const nvrm_benign[] = {
	"loading NVIDIA UNIX",
	"FBHUB Interrupt detected",
	"Persistence mode is deprecated",
	"(PCI ID: ",
	"installed in this system has",
	"GPU Board Serial Number",
	"nvidia-peermem",
};

static void parse_nvrm(struct kmsg_log *log, const struct kmsg_prefix *px, const char *nv,
		       uint64_t line)
{
	const char *t = skip_spaces(nv + 5); /* after "NVRM:" */
	struct kmsg_event *ev;
	char bdf[20] = "";

	if (!strncmp(t, "Xid", 3) && !isalnum((unsigned char)t[3])) {
		struct kmsg_event tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.gi = tmp.ci = -1;
		tmp.pid = -1;
		tmp.fatal = -1;
		tmp.recovery = -1;
		if (parse_xid(t + 3, &tmp)) {
			ev = kmsg_new_event(log, KMSG_XID, px, line);
			tmp.kind = ev->kind;
			tmp.tb = ev->tb;
			tmp.ts = ev->ts;
			tmp.year_guessed = ev->year_guessed;
			tmp.line = ev->line;
			tmp.boot = ev->boot;
			tmp.count = 1;
			*ev = tmp;
			return;
		}
	} else if (!strncmp(t, "GPU at ", 7)) {
		const char *p = t + 7;
		if (!strncmp(p, "PCI:", 4))
			p += 4;
		const char *q = parse_bdf(p, bdf);
		if (q) {
			q = skip_spaces(*q == ':' ? q + 1 : q);
			if (!strncmp(q, "GPU-", 4)) {
				ev = kmsg_new_event(log, KMSG_GPU_INIT, px, line);
				memcpy(ev->bdf, bdf, sizeof(bdf));
				copy_field(ev->uuid, sizeof(ev->uuid), q, strcspn(q, " ,"));
				return;
			}
		}
	} else if (!strncmp(t, "The NVIDIA GPU ", 15)) {
		/* first line of the multi-line "fallen off the bus" message */
		if (parse_bdf(t + 15, log->pending_bdf))
			log->pending_line = line;
		if (!strstr(t, "fallen off the bus")) {
			log->nvrm_benign++;
			return;
		}
	}
	/*
	 * The driver's phrase where the driver puts it: "NVRM: fallen off the bus and is not
	 * responding to commands." (the third line after "The NVIDIA GPU <bdf>"), "NVRM: GPU
	 * <bdf>: GPU has fallen off the bus.", or one line that starts "The NVIDIA GPU <bdf>".
	 * Anywhere else in an NVRM line it is not the driver's verdict.
	 */
	const char *gq = !strncmp(t, "GPU ", 4) ? parse_bdf(t + 4, bdf) : NULL;
	if (starts_with(t, "fallen off the bus") ||
	    (gq && starts_with(gq, ": GPU has fallen off the bus")) ||
	    (!strncmp(t, "The NVIDIA GPU ", 15) && strstr(t, "fallen off the bus"))) {
		ev = kmsg_new_event(log, KMSG_GPU_OFF_BUS, px, line);
		if (!find_bdf(t, ev->bdf) && log->pending_bdf[0] && line - log->pending_line <= 4)
			memcpy(ev->bdf, log->pending_bdf, sizeof(ev->bdf));
		log->pending_bdf[0] = 0;
		copy_field(ev->text, sizeof(ev->text), t, strlen(t));
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(nvrm_benign); i++) {
		if (strstr(t, nvrm_benign[i])) {
			log->nvrm_benign++;
			return;
		}
	}
	ev = kmsg_new_event(log, KMSG_NVRM_UNKNOWN, px, line);
	if (!strncmp(t, "GPU ", 4))
		parse_bdf(t + 4, ev->bdf);
	copy_field(ev->text, sizeof(ev->text), t, strlen(t));
}

/* "Out of memory: Killed process 1234 (python3) ..." and the memory cgroup form */
static void parse_oom_kill(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
			   const char *hit, uint64_t line)
{
	bool cgroup = strstr(msg, "cgroup out of memory") != NULL;
	const char *p = strstr(hit, "process ");
	struct kmsg_event *ev = kmsg_new_event(log, cgroup ? KMSG_OOM_CGROUP : KMSG_OOM_KILL, px, line);
	if (p) {
		long long v;
		p += 8;
		int n = digits_upto(p, 12, &v);
		if (n) {
			ev->pid = v;
			p = skip_spaces(p + n);
			if (*p == '(') {
				const char *close = strchr(p, ')');
				if (close)
					copy_field(ev->name, sizeof(ev->name), p + 1,
						   (size_t)(close - p - 1));
			}
		}
	}
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

/* "NAME invoked oom-killer: gfp_mask=..." */
static void parse_oom_invoked(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
			      const char *hit, uint64_t line)
{
	struct kmsg_event *ev = kmsg_new_event(log, KMSG_OOM_INVOKED, px, line);
	const char *st = hit;
	while (st > msg && st[-1] != ' ')
		st--;
	copy_field(ev->name, sizeof(ev->name), st, (size_t)(hit - st));
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

/* "DRIVER 0000:3b:00.0[ IFACE]: rest": driver into name (or iface), bdf; returns rest. */
static const char *device_prefix(const char *msg, struct kmsg_event *ev, bool want_iface)
{
	size_t dl = strcspn(msg, " :");
	if (!dl || msg[dl] != ' ')
		return msg;
	const char *q = parse_bdf(msg + dl + 1, ev->bdf);
	if (!q)
		return msg;
	copy_field(ev->name, sizeof(ev->name), msg, dl);
	if (*q == ' ' && want_iface) {
		size_t il = strcspn(q + 1, " :");
		if (il && q[1 + il] == ':') {
			copy_field(ev->name, sizeof(ev->name), q + 1, il);
			q += 1 + il;
		}
	}
	if (*q == ':')
		q++;
	return skip_spaces(q);
}

/*
 * "mlx5_core 0000:3b:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8
 * link at 0000:3a:00.0 (capable of ...)": pci_info()'s "DRIVER DDDD:BB:DD.F: " and then
 * __pcie_print_link_status()'s "%u.%03u Gb/s available PCIe bandwidth, limited by" at once
 * (drivers/pci/pci.c). A device name is a full PCI address: a process name at the start of a
 * line is too short to hold one after a driver name.
 */
static bool full_bdf(const char *s)
{
	static const char shape[] = "xxxx:xx:xx.";
	for (int i = 0; shape[i]; i++)
		if (shape[i] == 'x' ? hexval(s[i]) < 0 : s[i] != shape[i])
			return false;
	return s[11] >= '0' && s[11] <= '7';
}

/* "DRIVER DDDD:BB:DD.F": the start of dev_printk()'s prefix, or NULL */
static const char *dev_prefix_ok(const char *msg)
{
	size_t dl = strcspn(msg, " :");
	if (!dl || msg[dl] != ' ' || !full_bdf(msg + dl + 1))
		return NULL;
	return msg + dl + 13;
}

const char *kmsg_dev_prefix(const char *msg)
{
	return dev_prefix_ok(msg);
}

static void parse_pcie(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
		       uint64_t line)
{
	const char *after = dev_prefix_ok(msg);
	if (!after || after[0] != ':' || after[1] != ' ')
		return;
	const char *g = after + 2;
	while (dig(*g) || *g == '.')
		g++;
	if (g == after + 2 || !starts_with(g, " Gb/s available PCIe bandwidth, limited by"))
		return;
	struct kmsg_event *ev = kmsg_new_event(log, KMSG_PCIE_LIMITED, px, line);
	const char *rest = device_prefix(msg, ev, false);
	const char *w = strstr(rest, "limited by");
	w = w ? strstr(w, " x") : NULL;
	long long v;
	if (w && digits_upto(w + 2, 3, &v))
		ev->num = (int)v;
	copy_field(ev->text, sizeof(ev->text), rest, strlen(rest));
}

/*
 * "INFO: task kworker/u16:2:123 blocked for more than 120 seconds." (kernel/hung_task.c: "INFO:
 * task %s:%d blocked for more than %ld seconds."): the message starts so and ends so; the
 * name between is the task's own. Its last " blocked for more than " is the kernel's.
 */
static void parse_hung(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
		       uint64_t line)
{
	static const char tail[] = " blocked for more than ";
	if (!starts_with(msg, "INFO: task "))
		return;
	const char *t = msg + 11, *hit = NULL;
	for (const char *p = strstr(t, tail); p; p = strstr(p + 1, tail))
		hit = p;
	if (!hit)
		return;
	const char *sec = hit + sizeof(tail) - 1;
	while (dig(*sec))
		sec++;
	if (sec == hit + sizeof(tail) - 1 || strcmp(sec, " seconds."))
		return;
	hit++; /* at "blocked" */
	const char *end = hit;
	while (end > t && end[-1] == ' ')
		end--;
	const char *colon = NULL;
	for (const char *p = t; p < end; p++)
		if (*p == ':')
			colon = p;
	struct kmsg_event *ev = kmsg_new_event(log, KMSG_HUNG_TASK, px, line);
	long long v;
	if (colon && digits_upto(colon + 1, 12, &v) == end - colon - 1) {
		ev->pid = v;
		copy_field(ev->name, sizeof(ev->name), t, (size_t)(colon - t));
	} else {
		copy_field(ev->name, sizeof(ev->name), t, (size_t)(end - t));
	}
	const char *secs = skip_spaces(hit + strlen("blocked for more than"));
	if (digits_upto(secs, 9, &v))
		ev->num = (int)v;
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

/* "mlx5_core 0000:0c:00.0 ibp12s0: Link up": an mlx5 driver's own device prefix first */
static void parse_link(struct kmsg_log *log, const struct kmsg_prefix *px, const char *msg,
		       const char *hit, uint64_t line)
{
	if (!starts_with(msg, "mlx5") || !dev_prefix_ok(msg))
		return;
	const char *w = hit + 5; /* after "Link " */
	bool down = !strncasecmp(w, "down", 4);
	struct kmsg_event *ev = kmsg_new_event(log, down ? KMSG_LINK_DOWN : KMSG_LINK_UP, px, line);
	const char *rest = device_prefix(msg, ev, true);
	copy_field(ev->text, sizeof(ev->text), rest, strlen(rest));
}

/*
 * The kernel's boot banner, "Linux version 6.8.0-45-generic (buildd@...) ...": "Linux version "
 * and a version that starts "N.N". A process named "Linux version 6" that segfaults makes the
 * kernel print "Linux version 6[4321]: segfault at ...": 15 bytes of name, then the kernel's
 * "[": never "N.N".
 */
static bool boot_banner(const char *msg)
{
	if (strncmp(msg, "Linux version ", 14))
		return false;
	const char *v = msg + 14;
	long long x;
	int n = digits_upto(v, 4, &x);
	if (!n || v[n] != '.' || !dig(v[n + 1]))
		return false;
	for (v += n + 1; *v && *v != ' '; v++)
		if (!isalnum((unsigned char)*v) && !strchr(".-+_~", *v))
			return false;
	return true;
}

/*
 * Evidence that the record stream restarted at this line, which no process can give: the kernel
 * numbers its records and stamps them from boot, so a boot's banner is among its first records
 * (kmsg sequence below 64) and seconds after it (below 5 s, by the record's own stamp or the
 * dmesg stamp a kern.log line keeps); or journalctl printed its separator of boots ("-- Boot
 * ID --", a new boot id) just before. A wall-clock stamp alone (dmesg -T, iso) tells nothing.
 */
#define BOOT_SEQ_MAX 64
#define BOOT_MONO_MAX 5.0
#define BOOT_SEP_LINES 8

static bool stream_restarts(const struct kmsg_log *log, const struct kmsg_prefix *px,
			    uint64_t line)
{
	if (px->has_seq)
		return px->seq < BOOT_SEQ_MAX && px->mono < BOOT_MONO_MAX;
	if (px->has_mono)
		return px->mono >= 0 && px->mono < BOOT_MONO_MAX;
	return log->boot_sep_line && line > log->boot_sep_line &&
	       line - log->boot_sep_line <= BOOT_SEP_LINES;
}

/* journalctl's own line between boots: "-- Boot 0123...(32 hex) --", before v250 "-- Reboot --" */
static bool journal_boot_separator(const struct kmsg_prefix *px)
{
	const char *m = px->msg;
	if (!px->bare)
		return false;
	if (!strcmp(m, "-- Reboot --"))
		return true;
	if (strncmp(m, "-- Boot ", 8))
		return false;
	for (int i = 0; i < 32; i++)
		if (hexval(m[8 + i]) < 0)
			return false;
	return !strcmp(m + 40, " --");
}

/*
 * Driver text counts only where the driver puts it: "NVRM: " at the start of a kernel message,
 * "nvidia-nvswitchN: SXid (" likewise, a device prefix "DRIVER DDDD:BB:DD.F" for PCI and mlx5
 * lines. The kernel echoes what users choose elsewhere in its lines (a process name in
 * "COMM[PID]: segfault at ... in FILE[...]", a path in "process 'COMM' launched 'PATH' with
 * NULL argv", audit's name="..." and comm="..."): none of it is ever read as a driver line.
 */
void kmsg_parse_message(struct kmsg_log *log, const struct kmsg_prefix *px, uint64_t line)
{
	const char *msg = px->msg, *hit;
	if (px->user) {
		/* userspace wrote it (logger, systemd, a job): never the driver, never a boot */
		log->not_kernel++;
		return;
	}
	if (journal_boot_separator(px)) {
		log->boot_sep_line = line;
		return;
	}
	if (!strncmp(msg, "nvidia-nvswitch", 15)) {
		struct kmsg_event tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.fatal = -1;
		if (parse_sxid(msg, &tmp)) {
			/* "Severity N ..." and "Data {...}" lines continue the SXid just logged */
			const struct kmsg_event *prev = log->nr ? &log->ev[log->nr - 1] : NULL;
			if (prev && prev->kind == KMSG_SXID && prev->num == tmp.num &&
			    !strcmp(prev->bdf, tmp.bdf) && line - prev->line <= 3 &&
			    (starts_with(tmp.text, "Severity") || starts_with(tmp.text, "Data {")))
				return;
			struct kmsg_event *ev = kmsg_new_event(log, KMSG_SXID, px, line);
			ev->num = tmp.num;
			ev->fatal = tmp.fatal;
			memcpy(ev->bdf, tmp.bdf, sizeof(ev->bdf));
			memcpy(ev->name, tmp.name, sizeof(ev->name));
			memcpy(ev->text, tmp.text, sizeof(ev->text));
		}
		return;
	}
	if (!strncmp(msg, "NVRM: ", 6)) {
		parse_nvrm(log, px, msg, line);
		return;
	}
	if (kmsg_parse_hwerr(log, px, line))
		return;
	if (starts_with(msg, "Out of memory: Kill") ||
	    starts_with(msg, "Memory cgroup out of memory: Kill")) {
		parse_oom_kill(log, px, msg, strstr(msg, "of memory: Kill"), line);
		return;
	}
	if ((hit = strstr(msg, " invoked oom-killer: gfp_mask="))) {
		parse_oom_invoked(log, px, msg, hit, line);
		return;
	}
	if (strstr(msg, "PCIe bandwidth")) {
		parse_pcie(log, px, msg, line);
		return;
	}
	if (starts_with(msg, "INFO: task ")) {
		parse_hung(log, px, msg, line);
		return;
	}
	if (boot_banner(msg)) {
		if (!stream_restarts(log, px, line)) {
			/* the banner text without the stream restarting: not a boot (a log
			 * pasted together, a line the kernel echoed); it clears nothing */
			log->boots_unproven++;
			return;
		}
		log->boots++;
		struct kmsg_event *ev = kmsg_new_event(log, KMSG_BOOT, px, line);
		copy_field(ev->text, sizeof(ev->text), msg + 14, strlen(msg + 14));
		return;
	}
	if ((hit = strstr(msg, "Link ")) &&
	    (!strncasecmp(hit + 5, "down", 4) || !strncasecmp(hit + 5, "up", 2) ||
	     !strncmp(hit + 5, "ACTIVE", 6))) {
		parse_link(log, px, msg, hit, line);
		return;
	}
}
