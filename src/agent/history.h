/*
 * history.h: findings remembered across reboots, so that a fault that comes back after every
 * reboot stops being answered with another reboot.
 *
 * A finding counts when it fails with action REBOOT or RESET_GPU. Its key is check, code, device
 * and, when the finding has one, its "xid"/"sxid" detail: the same Xid on the same GPU. For each
 * key the history keeps the boot ids it was seen in (from /proc/sys/kernel/random/boot_id). Seen
 * in more than N boots (N reboots did not cure it: agent.escalate-after, default 2) the finding's
 * action becomes INSPECT_HARDWARE and its message says in how many boots it was seen.
 *
 * The file (STATE_DIR/history.json) is bounded: at most HISTORY_MAX_ENTRIES keys, the least
 * recently seen dropped first, at most HISTORY_MAX_BOOTS boot ids a key.
 *
 * Ownership: struct history owns its entries; history_release() frees them.
 */
#ifndef VIGIL_AGENT_HISTORY_H
#define VIGIL_AGENT_HISTORY_H

#include "../core/report.h"

#define HISTORY_FILE "history.json"
#define HISTORY_MAX_ENTRIES 512
#define HISTORY_MAX_BOOTS 16

struct history_entry {
	char *key;
	char *boots[HISTORY_MAX_BOOTS]; /* oldest first */
	size_t nr_boots;
	double first_seen, last_seen;
};

struct history {
	struct history_entry *e;
	size_t nr, alloc;
};

void history_release(struct history *h);
/* Parse history.json text; 0, or -1 with *err (h keeps what parsed). */
int history_parse(struct history *h, const char *text, size_t len, struct strbuf *err);
void history_serialize(const struct history *h, struct strbuf *out);
/* Record rep's qualifying findings as seen in boot_id at now. */
void history_note(struct history *h, const struct report *rep, const char *boot_id, double now);
/* Escalate rep's qualifying findings seen in more than after_reboots boots; recompute the
 * verdict's reason. Returns how many were escalated. after_reboots 0 escalates nothing. */
unsigned history_escalate(const struct history *h, struct report *rep, unsigned after_reboots);
/* The key of a finding, or false when it does not qualify. */
bool history_key(const struct check_result *c, const struct finding *f, struct strbuf *key);

#endif
