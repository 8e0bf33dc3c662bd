/*
 * ufm.h: the fabric manager's event log (UFM event.log, docs/FABRIC.md) read into decisions
 * for 'vigil fabric ufm': ports to disable, one ticket per physical link, ports to re-enable
 * once their ticket is closed, and whole-fabric incidents set aside. Pure: no printing, no
 * exit; files are read through struct ufm_src (plain or gzip'd, streamed: any length in
 * bounded memory), the kept state through ufm_state_load()/ufm_state_save().
 *
 * The pipeline: ufm_parse_line() (one line, no allocation) -> ufm_feed() (events in time
 * order; a window of at most UFM_BURST_EVENTS events is held back to tell a burst from the
 * rest) -> ufm_decide() (thresholds over each link's events, the state's tickets) -> the
 * writers (text, JSON, CSV).
 *
 * Ownership: struct ufm owns everything it holds (links, incidents, decisions, the state's
 * tickets); ufm_release() frees it. Strings in events are copies into fixed arrays, cut to
 * their size: nothing points into a caller's line.
 */
#ifndef VIGIL_FABRIC_UFM_H
#define VIGIL_FABRIC_UFM_H

#include "../lib/strbuf.h"

#include <stdint.h>

#define UFM_NAME_MAX 64
#define UFM_PORT_MAX 24
#define UFM_GUID_MAX 24
#define UFM_CABLE_MAX 40
#define UFM_REASON_MAX 24
/* A burst (a UFM restart, a whole-fabric event): this many events or more within 1 s. */
#define UFM_BURST_EVENTS 50
#define UFM_BURST_SPAN_MS 1000
/* Distinct links kept; past it events are counted (links_dropped), not judged. */
#define UFM_MAX_LINKS 262144
/* The codes kept (docs/FABRIC.md), in the order of the per-code counts. */
#define UFM_NCODES 9
extern const int ufm_codes[UFM_NCODES];
/* Index of code in ufm_codes, or -1. */
int ufm_code_index(int code);
const char *ufm_code_name(int code);

/* One end of a link as a line names it; a field not named is "" (num 0). */
struct ufm_end {
	char name[UFM_NAME_MAX]; /* switch or host name */
	char port[UFM_PORT_MAX]; /* "1/17/1" (the label on the panel) */
	char guid[UFM_GUID_MAX]; /* the node GUID, hex */
	unsigned num;            /* the port number UFM's REST calls take */
};

enum ufm_kind {
	UFM_EV_LINK_DOWN,    /* 329 "Link went down: (..)guid:n - (..)guid:m, cable S/N: X" */
	UFM_EV_DOWNED,       /* 112 link downed counter: the link went down and came back */
	UFM_EV_ERRORS,       /* 110, 113, 115, 116, 917, 918: error counters over UFM's threshold */
	UFM_EV_SM_UNHEALTHY, /* 702 "Peer Port N:p is considered by SM as unhealthy due to R." */
	UFM_EV_MANUAL_OFF,   /* a port an administrator disabled (702 due to MANUAL, "disabled by") */
	UFM_EV_MANUAL_ON,    /* ... and enabled again ("enabled by user|admin") */
};

struct ufm_event {
	int64_t t_ms;  /* the stamp as written (UFM's local time), ms since 1970-01-01 */
	int code;
	enum ufm_kind kind;
	struct ufm_end self;  /* the envelope's [site / Switch: NAME / 1/cage/split] [dev_id: G] */
	struct ufm_end a, b;  /* the message's ends: 329 both, 702 a (the port the SM named) */
	char cable[UFM_CABLE_MAX];
	char reason[UFM_REASON_MAX]; /* 702: FLAPPING, MANUAL, ... */
	unsigned file;
	uint64_t line;
};

enum {
	UFM_LINE_GARBAGE = 0, /* not a UFM event line */
	UFM_LINE_OTHER = 1,   /* an event line of a code not kept (ev->code, ev->t_ms set) */
	UFM_LINE_EVENT = 2,   /* an event to judge (ev filled) */
};
/* One line (no newline; a trailing CR is ignored). */
int ufm_parse_line(const char *s, size_t len, struct ufm_event *ev);

/* A file read as lines: plain or gzip'd (told by its first bytes), in bounded memory. */
struct ufm_src {
	const char *path; /* borrowed */
	int fd;
	void *z;          /* zlib stream when gzip'd */
	char *buf, *zbuf;
	size_t pos, end, zpos, zend;
	bool eof, gz, gz_done, skipping_long, in_member;
	bool cut_last;    /* the last line had no newline (a log being written): not used */
	bool gz_truncated; /* the gzip stream ended early */
	uint64_t lines;
};
/* Open path: a regular file (a link given on the command line is followed; a FIFO, device or
 * directory is refused). 0, or -1 with *err. */
int ufm_src_open(struct ufm_src *s, const char *path, struct strbuf *err);
/* The next line: 1 (*line, *len: valid until the next call), 2 for the start of a line too long
 * to be an event (garbage; the rest of it is skipped), 0 at the end, -1 with *err. */
int ufm_src_next(struct ufm_src *s, const char **line, size_t *len, struct strbuf *err);
void ufm_src_close(struct ufm_src *s);

struct ufm_file_stats {
	char *path;
	uint64_t lines, events, skipped, garbage, blank, out_of_order;
	bool cut_last, gz, gz_truncated;
};

/* Thresholds (docs/FABRIC.md says why these). */
struct ufm_config {
	unsigned flap_downs;        /* downs within flap_window_s: flapping (3) */
	unsigned flap_window_s;     /* 86400 */
	unsigned error_events;      /* error-counter alarms within flap_window_s: disable (3) */
	unsigned episode_ms;        /* downs closer than this are one episode (5000): a 329 and a
				     * 112 of both ends for one down are not three downs */
};
void ufm_config_default(struct ufm_config *c);

struct ufm_code_count {
	uint64_t count;
	int64_t first, last;
};

struct ufm_link {
	int end[2];     /* indices into ufm.ends; end[1] -1 when the peer is not known */
	char cable[UFM_CABLE_MAX];
	struct ufm_code_count codes[UFM_NCODES];
	uint64_t events, ignored_before_close;
	int64_t first, last;
	uint64_t episodes;       /* distinct downs */
	int64_t last_episode;
	int64_t *ring;           /* the last flap_downs episode times */
	unsigned ring_n, ring_at;
	bool flapping;
	uint64_t max_downs_in_window;
	int64_t *ering;          /* the last error_events error-alarm times */
	unsigned ering_n, ering_at;
	bool errors;
	bool sm_unhealthy;
	char sm_reason[UFM_REASON_MAX];
	int sm_end;              /* the end the SM named, -1 */
	int64_t ignore_before;   /* a closed ticket's last event: older events are handled */
	int merged_into;         /* -1, or the link this one was folded into */
};

struct ufm_end_rec {
	struct ufm_end e;   /* name and port always set; guid/num when a line named them */
	int link;
	uint64_t reported;  /* events whose envelope is this end */
	bool manual;        /* disabled by hand (not yet enabled again) */
	int64_t manual_at;
	uint64_t manual_ignored; /* fault events while disabled by hand */
};

struct ufm_incident {
	int64_t start, end;
	uint64_t events;
	uint64_t codes[UFM_NCODES];
	unsigned first_file, last_file;
	uint64_t first_line, last_line;
};

enum ufm_ticket_status { UFM_TICKET_OPEN, UFM_TICKET_CLOSED, UFM_TICKET_REENABLED };

struct ufm_ticket {
	char *id;
	char *port, *peer;   /* "NAME:PORT" */
	char *guid;          /* of the port to disable, "" when unknown */
	unsigned num;
	char *cable, *cause;
	char *opened, *closed_at, *reenabled_at; /* "" when not */
	int64_t last_seen;   /* the last event of the link (log time, ms) */
	enum ufm_ticket_status status;
	bool is_new, touched;
};

/*
 * A REST call that changes the fabric (disable or enable a port), written durably to
 * DIR/ufm-intents.json before the call is made and again with its outcome after: a run that
 * dies, or cannot write its state, between the two leaves the intent on disk, and the next
 * run takes it in (the ticket is restored from it; an intent without a known outcome is asked
 * of UFM, or carried as "state unknown").
 */
enum ufm_outcome {
	UFM_OUT_NONE,    /* the call may have been made: nothing came back or was recorded */
	UFM_OUT_DONE,    /* UFM answered 2xx (or, asked later, says the port is so) */
	UFM_OUT_NOT_APPLIED, /* UFM refused it (4xx) or says the port is not so */
	UFM_OUT_UNKNOWN, /* 5xx, a deadline, curl failed mid-call: it may have been applied */
};
struct ufm_intent {
	char *ticket, *port, *peer, *guid, *cable, *cause;
	char *at;        /* when the call was about to be made, UTC */
	char *detail;    /* the outcome in words ("HTTP 200", "curl timed out ...") */
	unsigned num;
	bool enable;
	enum ufm_outcome outcome;
	bool carried;    /* from an earlier run */
	bool resolved;   /* a later call or UFM's answer settled it */
};
const char *ufm_outcome_name(enum ufm_outcome o);

struct ufm_decision {
	int link;
	int port_end, peer_end;  /* port_end: the port to disable */
	const char *cause;       /* "flapping", "sm_unhealthy", "errors" */
	int ticket;              /* index into tickets */
};

struct ufm {
	struct ufm_config cfg;
	struct ufm_file_stats *files;
	size_t nr_files, alloc_files;

	struct ufm_end_rec *ends;
	size_t nr_ends, alloc_ends;
	int *ehash;               /* open addressing over ends, -1 empty */
	size_t ehash_size;
	struct ufm_link *links;
	size_t nr_links, alloc_links;
	uint64_t links_dropped;

	/* the held-back window (burst detection) */
	struct ufm_event win[UFM_BURST_EVENTS];
	bool win_burst[UFM_BURST_EVENTS];
	unsigned win_start, win_n;
	int64_t last_t;
	bool have_last;
	bool in_incident;
	struct ufm_incident *incidents;
	size_t nr_incidents, alloc_incidents;
	uint64_t burst_events, judged_events, manual_ignored;

	struct ufm_ticket *tickets;
	size_t nr_tickets, alloc_tickets;
	bool have_state;

	struct ufm_decision *disable;
	size_t nr_disable, alloc_disable;
	int *reenable;            /* ticket indices */
	size_t nr_reenable, alloc_reenable;
	int *manual_ports;        /* end indices still disabled by hand */
	size_t nr_manual, alloc_manual;

	struct ufm_intent *intents; /* this run's calls and the earlier runs' unsettled ones */
	size_t nr_intents, alloc_intents;
};
/* Intents whose outcome is not known (carried from an earlier run, or this run's): the
 * ports a person must look at. */
size_t ufm_unknown_count(const struct ufm *u);
bool ufm_intent_unknown(const struct ufm_intent *in);

void ufm_init(struct ufm *u, const struct ufm_config *cfg);
void ufm_release(struct ufm *u);
/* A file's stats slot (its index is the file number events carry). */
unsigned ufm_add_file(struct ufm *u, const char *path);
/* Feed events in time order (an event older than the last is counted out_of_order and taken
 * at the last time). */
void ufm_feed(struct ufm *u, const struct ufm_event *ev);
/* The input ended: flush the held-back window (its last group is judged, never dropped). */
void ufm_finish(struct ufm *u);
/* Read files (merged by time, so rotated files in any order) and feed them, finish. 0, or -1
 * with *err (a file that cannot be opened or read: nothing was decided). */
int ufm_read_files(struct ufm *u, const char *const *paths, size_t nr, struct strbuf *err);
/* Thresholds and the state's tickets into disable, tickets and reenable. Call once. */
void ufm_decide(struct ufm *u);
/* Lines understood (events + skipped) over all files: 0 means the log told nothing. */
uint64_t ufm_understood(const struct ufm *u);

/* State (ufm-state.json in a directory): the tickets. A missing file is no tickets; a link,
 * FIFO, a file that is not such a file: -1 with *err (never read through, never guessed). */
int ufm_state_load(struct ufm *u, const char *dir, struct strbuf *err);
int ufm_state_save(const struct ufm *u, const char *dir, struct strbuf *err);
/* Close a ticket in dir's state: 0; 1 when it was closed already; -2 with *err when the state
 * has no such ticket (the command line names a wrong one); -1 with *err when the state cannot
 * be read, is not understood or cannot be written. */
int ufm_state_close(const char *dir, const char *id, const char *now, struct strbuf *err);
#define UFM_STATE_FILE "ufm-state.json"
#define UFM_INTENTS_FILE "ufm-intents.json"
#define UFM_LOCK_FILE "ufm.lock"

/* Before anything is read or called: dir exists, is a directory (not a link), is not
 * writable by others, and a file can be created, written, fsynced and removed in it; then
 * DIR/ufm.lock is taken (one run at a time). The lock's fd (the caller closes it at the end),
 * or -1 with *err. */
int ufm_state_open(const char *dir, struct strbuf *err);
/* DIR/ufm-intents.json: a missing file is none; a link, garbage, a file over 8 MiB: -1 with
 * *err (never guessed: an intent lost is a port nobody knows is off). Loaded intents are
 * carried; tickets they name that the state lacks are restored from them, a DONE enable
 * marks its ticket reenabled. */
int ufm_intents_load(struct ufm *u, const char *dir, struct strbuf *err);
/* The same from text already read (shown names it in messages): the fuzz target's door. */
int ufm_intents_parse(struct ufm *u, const char *text, size_t len, const char *shown,
		      struct strbuf *err);
/* Write the intents (all: every one; else only those not settled). 0 or -1, *err. */
int ufm_intents_save(const struct ufm *u, const char *dir, bool all, struct strbuf *err);
/* Settle intent i with outcome o (its ticket updated as the outcome says). */
void ufm_intent_settle(struct ufm *u, size_t i, enum ufm_outcome o, const char *detail);
/* A new intent for ticket t (enable or disable), outcome NONE; its index. */
size_t ufm_intent_add(struct ufm *u, const struct ufm_ticket *t, const char *guid,
		      unsigned num, bool enable, const char *at);

/* The UFM REST call that disables (enable false) or enables a port: "POST", path, JSON body.
 * false when the log named no GUID and port number for it (*why says so). */
bool ufm_rest_call(const char *guid, unsigned num, bool enable, const char *description,
		   struct strbuf *path, struct strbuf *body, struct strbuf *why);

/* Writers. */
void ufm_write_text(const struct ufm *u, struct strbuf *out);
void ufm_write_json(const struct ufm *u, struct strbuf *out);
void ufm_write_csv(const struct ufm *u, struct strbuf *out);
/* "2024-05-01 12:00:00.123" */
void ufm_format_time(int64_t t_ms, struct strbuf *out);

#endif
