/*
 * history.h: what a fleet recorded about its faults, read back for `vigil fleet model` and
 * `vigil fleet lemons` (docs/LEMONS.md): every node's agent history (STATE_DIR/history.json:
 * findings across boots), Slurm's drain and resume history (`sacctmgr show event -P`), and
 * vigil run journals (RUN_DIR/journal.jsonl). Each source becomes fault events, each with a
 * node, a class of vigil sim's failure model (gpu_fell_off_bus, gpu_hbm_ecc, nvlink, ib_link,
 * host_crash, hang, slowdown, storage_stall, software_bug, sdc), a time and, where Slurm
 * resumed the node, the end of its repair.
 *
 * One fault seen by several sources counts once: Slurm's and the journals' events of one node
 * and class within FLEET_MERGE_S of each other (or inside the first one's repair) are one
 * fault (fleet_history_merge()); an agent history entry seen in N boots adds only the boots that
 * no other source's event of that node and class accounts for between its first and last sight.
 *
 * Readers are streaming and bounded: lines of at most FLEET_LINE_MAX bytes, FLEET_NODES_MAX
 * nodes, FLEET_EVENTS_MAX events; a line that is not understood is counted (skipped), a file
 * that is not the format at all (binary, a line too long, no header) is an error naming the
 * file and line.
 *
 * Ownership: struct fleet_history owns its nodes, events and strings (fleet_history_release()).
 */
#ifndef VIGIL_FLEET_HISTORY_H
#define VIGIL_FLEET_HISTORY_H

#include "../lib/strbuf.h"
#include "../lib/strindex.h"

#include <stdbool.h>
#include <stddef.h>

#define FLEET_LINE_MAX 65536
#define FLEET_NODES_MAX 1000000
#define FLEET_EVENTS_MAX 10000000
#define FLEET_FILE_MAX ((size_t)1 << 30)
#define FLEET_MERGE_S (6 * 3600.0)
#define FLEET_WHAT_MAX 120
#define FLEET_TIME_MAX 253402300800.0 /* 10000-01-01: later is not a time */

/* The classes of vigil sim's default model, in its order (src/sim/model.c). */
enum fleet_class {
	FC_GPU_FELL_OFF_BUS,
	FC_GPU_HBM_ECC,
	FC_NVLINK,
	FC_IB_LINK,
	FC_HOST_CRASH,
	FC_HANG,
	FC_SLOWDOWN,
	FC_STORAGE_STALL,
	FC_SOFTWARE_BUG,
	FC_SDC,
	FC_NR,
	FC_PLANNED = -2,      /* maintenance, a reboot asked for: not a fault */
	FC_UNCLASSIFIED = -1, /* a fault vigil cannot place in a class */
};

enum fleet_source { FS_AGENT = 1, FS_SLURM = 2, FS_JOURNAL = 4 };

#define FLEET_NO_NODE ((size_t)-1)

struct fleet_event {
	size_t node;  /* index into nodes, FLEET_NO_NODE: no host blamed (a software fault) */
	int cls;      /* enum fleet_class */
	double t;     /* epoch seconds */
	double end;   /* the node's resume after the drain (repair), 0: not known */
	double drained; /* when that drain began (the repair's start), with end */
	unsigned sources; /* enum fleet_source bits */
	bool approx;  /* an agent boot between first and last sight: its time is interpolated */
	char *what;   /* the evidence, cleaned and cut to FLEET_WHAT_MAX */
};

struct fleet_history {
	char **nodes;
	size_t nr_nodes, alloc_nodes;
	struct strindex node_index;
	struct fleet_event *ev;
	size_t nr, alloc;
	double t_min, t_max;  /* the earliest and latest time any input showed (0: none) */
	size_t unclassified;  /* faults not placed in a class (by source line, not merged) */
	size_t planned;       /* drains for maintenance etc., not faults */
	size_t skipped_lines; /* lines of a known format that said nothing usable */
	size_t agent_dirs, slurm_files, journals, merged;
	size_t sorted; /* ev[0..sorted) is in fleet_history_merge()'s order */
};

/* The class's name in vigil sim's model, or "unclassified"/"planned". */
const char *fleet_class_name(int cls);
/* Place a text (a drain reason with or without "vigil: ", a finding's message, a journal
 * event's detail) in a class; FC_UNCLASSIFIED when nothing in it says which. */
int fleet_classify_text(const char *text);
/* Place an agent history key ("check|code|device[|xid=N][|sxid=N]"). */
int fleet_classify_key(const char *key);
/* A class of host faults (vigil sim's host_fault): the ones a lemon is judged by. */
bool fleet_class_host_fault(int cls);

void fleet_history_release(struct fleet_history *h);
/* The node's index, added when new (FLEET_NO_NODE when full). */
size_t fleet_history_node(struct fleet_history *h, const char *name);
/* Add an event (what copied, cleaned and cut). -1 when full. */
int fleet_history_add(struct fleet_history *h, size_t node, int cls, double t, double end,
		      unsigned source, const char *what);
/* Widen [t_min, t_max] to t. */
void fleet_history_saw(struct fleet_history *h, double t);

/* Readers: 0, or -1 with *err naming the file (and line). */
int fleet_read_sacct(struct fleet_history *h, const char *path, struct strbuf *err);
/* The same from text in memory (--from-slurm, the fuzz target); name names it in messages. */
int fleet_read_sacct_text(struct fleet_history *h, const char *name, const char *text,
			  size_t len, struct strbuf *err);
/* DIR: a run directory (DIR/journal.jsonl) or a folder of them (DIR/NAME/journal.jsonl). */
int fleet_read_journals(struct fleet_history *h, const char *dir, struct strbuf *err);
int fleet_read_journal_text(struct fleet_history *h, const char *name, const char *text,
			    size_t len, struct strbuf *err);
/* DIR: an agent state directory (DIR/history.json; the node is DIR's last name) or a folder
 * of them, one a node, named by the node (DIR/NODE/history.json). Call after the other readers
 * (the agent's boots add only what they did not see). */
int fleet_read_agent(struct fleet_history *h, const char *dir, struct strbuf *err);

/* Merge events of one fault seen twice (see above); sorts the events by node, class, time
 * (the order fleet_lemons_find() and the agent reader rely on). */
void fleet_history_merge(struct fleet_history *h);
/* Drop events outside [since, until] (0: no bound). */
void fleet_history_window(struct fleet_history *h, double since, double until);

/* "YYYY-MM-DD[THH:MM[:SS]]" (UTC) to epoch seconds; false when not that shape. */
bool fleet_parse_time(const char *s, double *out);
/* Epoch seconds as "YYYY-MM-DDTHH:MM:SS" (UTC). */
void fleet_format_time(double t, char out[32]);

#endif
