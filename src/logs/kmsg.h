/*
 * kmsg.h: the kernel log parser. It reads every text form a kernel log comes in, detected line by
 * line so that mixed or garbled input works:
 *
 *   /dev/kmsg records      6,1234,5140900,-;NVRM: Xid ...   (continuation lines " KEY=value")
 *   dmesg                  [ 1843.308145] NVRM: Xid ...
 *   dmesg -T               [Mon Nov 30 10:00:00 2026] NVRM: Xid ...
 *   dmesg --time-format iso  2025-01-25T10:34:54,859532+00:00 NVRM: Xid ...
 *   dmesg -x               kern  :err   : <any of the above stamps> msg
 *   dmesg -r               <4>[ 1843.308145] msg
 *   journalctl -k, syslog  Feb 14 05:03:41 host kernel: msg   (no year: see kmsg_opts)
 *   rsyslog ISO            2025-01-25T10:34:54.859532+00:00 host kernel: msg
 *   no timestamp at all    NVRM: Xid ...
 *
 * and extracts the events the 'kernel' check judges (struct kmsg_event): GPU faults (Xid, SXid,
 * off the bus), host hardware errors (EDAC, machine checks, APEI GHES, PCIe AER: kmsg_hwerr.c),
 * OOM kills, PCIe width, hung tasks, mlx5 links, boots. Each event has a
 * timestamp in seconds and a timebase: monotonic (seconds since boot, dmesg and kmsg) or wall
 * clock (the digits the log printed, read as UTC: every wall-clock form in one log then shares
 * one base, whatever the zone of the host that wrote it; ISO offsets are not applied).
 *
 * Speed: most lines of a kernel log are irrelevant. kmsg_parse() scans the buffer for a few rare
 * trigger strings ("NVRM", "SXid", "oom-killer", ...) with a 4-byte hash filter and only splits,
 * timestamps and parses the lines that hold one, plus the last lines (the log's "now").
 *
 * Bounds: a line is judged by its first KMSG_LINE_MAX bytes (a trigger further on is not seen);
 * NUL bytes and invalid UTF-8 are plain bytes; event strings are cut to their fields' sizes and
 * hold printable ASCII only. Memory stays bounded however long or noisy the log, and a fault is
 * never given up for noise: when KMSG_EVENTS_MAX events are held, repeats of one event (same
 * kind, device, number) are folded into its first and last occurrence (count says how many);
 * if that is not enough, the oldest events of the noise kinds (kmsg_kind_is_noise(): OOM, hung
 * tasks, links, unknown NVRM lines) are dropped (dropped says how many). Faults and the markers
 * that clear them (boots, GPU re-initialisations) are never dropped for noise; only past
 * KMSG_EVENTS_HARD_MAX distinct ones (tens of thousands of different faults: a forged or
 * corrupt log) are the oldest given up, and lost says how many, so that the caller can say it
 * could not judge them.
 *
 * Ownership: struct kmsg_log owns its event array and its partial-line buffer;
 * kmsg_log_release() frees them. Events hold their strings inline, so they can be copied by value.
 */
#ifndef VIGIL_KMSG_H
#define VIGIL_KMSG_H

#include "../lib/strbuf.h"

#define KMSG_LINE_MAX 4096
#define KMSG_EVENTS_MAX 16384      /* fold repeats when this many events are held */
#define KMSG_EVENTS_HARD_MAX 65536 /* about 22 MiB of events: past it even faults are lost */
#define KMSG_READ_CHUNK (1u << 20) /* bytes per read() of a saved log */

/* GHES "event severity:" words (drivers/firmware/efi/cper.c, cper_severity_str()). */
enum kmsg_ghes_sev {
	KMSG_GHES_RECOVERABLE = 0,
	KMSG_GHES_FATAL = 1,
	KMSG_GHES_CORRECTED = 2,
	KMSG_GHES_INFO = 3,
};

enum kmsg_timebase {
	KMSG_TB_NONE, /* the line had no timestamp */
	KMSG_TB_MONO, /* seconds since boot (dmesg, /dev/kmsg) */
	KMSG_TB_WALL, /* seconds since the epoch, as printed (dmesg -T, iso, syslog) */
};

#define KMSG_KIND_LIST(X)                                                                      \
	X(XID, "xid")                   /* NVRM: Xid (PCI:...): N, ...                     */  \
	X(SXID, "sxid")                 /* nvidia-nvswitchN: SXid (PCI:...): N, ...        */  \
	X(GPU_OFF_BUS, "gpu_off_bus")   /* "fallen off the bus" without an Xid             */  \
	X(GPU_INIT, "gpu_init")         /* NVRM: GPU at PCI:...: GPU-<uuid>: (re)init      */  \
	X(BOOT, "boot")                 /* Linux version N.N... as a boot's first record   */  \
	X(OOM_INVOKED, "oom_invoked")   /* NAME invoked oom-killer                         */  \
	X(OOM_KILL, "oom_kill")         /* Out of memory: Killed process N (name)          */  \
	X(OOM_CGROUP, "oom_cgroup")     /* Memory cgroup out of memory: Killed process ... */  \
	X(PCIE_LIMITED, "pcie_limited") /* ... available PCIe bandwidth, limited by ...    */  \
	X(HUNG_TASK, "hung_task")       /* INFO: task NAME:PID blocked for more than N s   */  \
	X(LINK_DOWN, "link_down")       /* mlx5 port/netdev link down                      */  \
	X(LINK_UP, "link_up")           /* mlx5 port/netdev link up / active               */  \
	X(NVRM_UNKNOWN, "nvrm_unknown") /* an NVRM line that is neither a fault nor benign  */ \
	X(EDAC, "edac")                 /* EDAC MC3: 1 UE memory read error on LABEL (...) */  \
	X(MCE, "mce")                   /* mce: [Hardware Error]: Machine check ...        */  \
	X(GHES, "ghes")                 /* {1}[Hardware Error]: event severity: fatal      */  \
	X(AER, "aer")                   /* DRV BDF: AER: Uncorrected (Fatal) error ...     */

#define X(a, b) KMSG_##a,
enum kmsg_kind { KMSG_KIND_LIST(X) KMSG_KIND__COUNT };
#undef X

struct kmsg_event {
	enum kmsg_kind kind;
	enum kmsg_timebase tb;
	double ts;          /* seconds in tb; 0 when tb is NONE */
	bool year_guessed;  /* wall-clock time from a yearless stamp (journalctl) */
	uint64_t line;      /* 1-based line number in the input */
	uint32_t boot;      /* boot markers seen before this event (0 in a log without any) */
	uint32_t count;     /* occurrences this event stands for (1 unless folded; an EDAC line
			     * stands for the errors it counts) */
	int num;            /* XID/SXID: the number; HUNG_TASK: seconds; PCIE_LIMITED: link width;
			     * EDAC: the memory controller; MCE: the bank (-1 none); GHES: enum
			     * kmsg_ghes_sev */
	int fatal;          /* XID/SXID: 1 the text says Fatal, 0 Non-fatal/Nonfatal, -1 neither;
			     * EDAC: 1 UE, 0 CE; MCE: 1 uncorrected, 0 corrected, -1 not told (the
			     * "events logged" notice); GHES: 1 fatal or recoverable, 0 otherwise;
			     * AER: 1 Fatal, 0 Non-Fatal */
	int cause;          /* XID 45: the Xid its tail names ("caused by previous Xid 149"), else
			     * 0 (no Xid 0 exists) */
	int recovery;       /* XID 154: new recovery action code (0x1, 0x2, 0x4...), else -1 */
	int gi, ci;         /* XID: MIG GPU instance / compute instance, -1 when not MIG */
	long long pid;      /* process id (XID, OOM, HUNG_TASK), -1 unknown */
	char bdf[20];       /* "0000:9b:00.0": lowercase, function 0 when the line has none; "" */
	char name[48];      /* process or task; NVSwitch device; driver; NIC interface */
	char uuid[48];      /* GPU_INIT: "GPU-..." */
	char text[160];     /* the rest of the message (Xid text, unknown NVRM line, ...) */
};

struct kmsg_opts {
	/*
	 * Any wall-clock time in the year the log ends (the check passes its start time): yearless
	 * syslog stamps are placed so that the last one is not later than this (plus a day), and
	 * earlier ones so that time does not run backwards (a month going back means a new year).
	 * 0 means the current time.
	 */
	double year_hint;
};

struct kmsg_log {
	struct kmsg_event *ev;
	size_t nr, alloc;
	uint64_t lines;     /* lines seen */
	uint64_t bytes;     /* bytes seen */
	uint64_t cut_lines; /* lines longer than KMSG_LINE_MAX */
	uint64_t nvrm_benign; /* known-harmless NVRM lines */
	uint64_t dropped;   /* noise events dropped past KMSG_EVENTS_MAX (oldest first) */
	uint64_t lost;      /* fault and marker events dropped past KMSG_EVENTS_HARD_MAX */
	size_t limit;       /* events held before the next folding (grows up to the hard max) */
	uint32_t boots;     /* boot markers seen */
	uint64_t not_kernel;    /* lines with driver or boot text that userspace wrote (ignored) */
	uint64_t boots_unproven; /* "Linux version" banners without the stream restarting */
	/* The newest timestamp: the last line that carries one ("now" for a saved log). */
	bool has_last;
	enum kmsg_timebase last_tb;
	double last_ts;

	/* Parser state (private). */
	struct kmsg_opts opts;
	double hint_ts;              /* the year hint (opts or now) */
	int hint_year, year, last_mon; /* yearless stamps: the year assumed, last month seen */
	bool last_yearless;          /* ylast_* hold the last yearless stamp seen */
	bool last_guessed;           /* last_ts came from a yearless stamp */
	int ylast_year;
	double ylast_ts;
	char pending_bdf[20];        /* "NVRM: The NVIDIA GPU <bdf>": waits for "fallen off" */
	uint64_t pending_line;
	uint64_t boot_sep_line;      /* journalctl's "-- Boot ID --" line: a new boot id */
	long ghes_seq;               /* "{N}[Hardware Error]: Hardware error from APEI ...": N */
	int ghes_source;             /* ... "Error Source: S": S, -1 none */
	uint64_t ghes_line;          /* the line it was on */
	struct strbuf carry;         /* kmsg_feed(): the start of a line not yet ended */
	bool carry_skip;             /* kmsg_feed(): inside a long line already judged */
	bool prev_nul;               /* the last byte parsed was a NUL (a run of them ends one line) */
};

void kmsg_log_init(struct kmsg_log *log, const struct kmsg_opts *opts);
void kmsg_log_release(struct kmsg_log *log);

/*
 * Parse buf (need not be NUL-terminated). Can be called again with more: each call's buffer is
 * taken as whole lines (a last line without '\n' is parsed as far as it goes).
 */
void kmsg_parse(struct kmsg_log *log, const char *buf, size_t len);
/*
 * Parse buf, which may end or start in the middle of a line (a chunk of a file): the start of an
 * unfinished line is kept (at most KMSG_LINE_MAX + 64 bytes of it) until its end arrives. Gives
 * the same events and line numbers as one kmsg_parse() of the whole text.
 */
void kmsg_feed(struct kmsg_log *log, const char *buf, size_t len);
/*
 * Call once after the last kmsg_parse()/kmsg_feed(): parses a last line without newline that
 * kmsg_feed() held back, and places yearless stamps in their years.
 */
void kmsg_log_finish(struct kmsg_log *log);

/* Kinds that may be dropped under a flood, oldest first; the others never make room for them. */
bool kmsg_kind_is_noise(enum kmsg_kind k);

/*
 * The timestamp of one line, without parsing its message: true with *ts and *tb set, false
 * when the line has none. Yearless stamps get the year of log's state (tests, tools).
 */
bool kmsg_line_time(struct kmsg_log *log, const char *line, size_t len, double *ts,
		    enum kmsg_timebase *tb);

const char *kmsg_kind_name(enum kmsg_kind k);
const char *kmsg_timebase_name(enum kmsg_timebase tb);

/*
 * Readers: they stream the log through kmsg_feed() into log, so a log of any size is read whole in
 * bounded memory (the parser runs at about 2 GB/s); what they saw is left in struct kmsg_read.
 *
 * kmsg_read_file() reads a saved log (regular file, FIFO) chunk bytes at a time; given a
 * character device (a link to /dev/kmsg, --kernel-log /dev/kmsg), it reads it as
 * kmsg_read_device() does. kmsg_read_device() reads a /dev/kmsg device: one read() per record,
 * non-blocking, until no record is left (EAGAIN); records overwritten while reading (EPIPE) are
 * skipped. Both stop early, with complete false, once mono_ms() passes deadline_ms (checked after
 * each chunk or each 256 records, so something is always read). They return 0, or -1 with *err
 * set ("cannot read '/dev/kmsg': Permission denied"); events parsed before an error stay in log.
 *
 * kmsg_read_fd() reads a log already open on fd (a device as kmsg_read_device() does, anything
 * else as kmsg_read_file() does), so that what is read is what was opened: the kernel check
 * opens a root's dev/kmsg once, resolved inside the root (fsroot_open()), and reads that. fd is
 * borrowed (the caller closes it) and made non-blocking; open it with O_NONBLOCK, since opening
 * a FIFO without a writer otherwise hangs. name is only for messages. kmsg_read_file() and
 * kmsg_read_device() open path (a user's --kernel-log FILE, this host's /dev/kmsg) and read it so.
 */
struct kmsg_read {
	/* in */
	size_t chunk;         /* bytes per read(); 0 means KMSG_READ_CHUNK */
	uint64_t deadline_ms; /* stop when mono_ms() reaches this; 0 means no deadline */
	/* out */
	bool device;          /* it was a kmsg device */
	bool pipe;            /* it was a FIFO or a pipe (nothing read: its writer wrote nothing) */
	bool complete;        /* read to its end */
	uint64_t size;        /* a regular file's size when opened, else 0 */
	uint64_t done;        /* bytes read */
	bool all_zero;        /* every byte read was 0 (true when nothing was read) */
	uint64_t sample, sample_ctl; /* the first MiB (or less), and its control bytes */
	char head[128];       /* the start of the first line, raw (quote it with strbuf_add_excerpt) */
};

int kmsg_read_file(const char *path, struct kmsg_log *log, struct kmsg_read *rd,
		   struct strbuf *err);
int kmsg_read_device(const char *path, struct kmsg_log *log, struct kmsg_read *rd,
		     struct strbuf *err);
int kmsg_read_fd(int fd, const char *name, struct kmsg_log *log, struct kmsg_read *rd,
		 struct strbuf *err);

#endif
