/*
 * policy.c: what vigil does to a Slurm node given its verdict (see slurm.h). Pure: no commands,
 * no clock, so every cell of the table is a unit test (tests/unit/test_slurm.c).
 *
 * The rules, as LBNL NHC keeps them (and NHC issue #134 shows why): a reason is owned by whoever
 * wrote it; vigil's start with "vigil:". vigil drains an undrained sick node, may rewrite its own
 * reason, resumes only a node it drained, and touches nothing it does not own or that is in a
 * state where a change is wrong (down, not responding, rebooting, maintenance, powered off).
 */
#include "slurm.h"

/* States in which Slurm or an administrator is in charge of the node. */
#define HANDS_OFF (NODE_DOWN | NODE_NOT_RESPONDING | NODE_MAINT | NODE_REBOOT | NODE_POWER | \
		   NODE_FUTURE | NODE_FAIL | NODE_UNKNOWN)

const char *slurm_act_name(enum slurm_act a)
{
	switch (a) {
	case SLURM_ACT_DRAIN:
		return "drain";
	case SLURM_ACT_RESUME:
		return "resume";
	default:
		return "nothing";
	}
}

int slurm_policy_from_config(const struct config *cfg, struct slurm_policy *p, struct strbuf *err)
{
	const char *v = config_get(cfg, "slurm", "on-unknown");
	p->on_unknown = SLURM_UNKNOWN_NOTHING;
	if (!v || !strcmp(v, "nothing"))
		return 0;
	if (!strcmp(v, "drain")) {
		p->on_unknown = SLURM_UNKNOWN_DRAIN;
		return 0;
	}
	return error_set(err, "%s: slurm.on-unknown wants 'nothing' or 'drain', not '%s'",
			 config_origin(cfg, "slurm", "on-unknown"), v);
}

static bool owned(const struct slurm_node *n)
{
	return n->reason && starts_with(n->reason, SLURM_REASON_PREFIX);
}

/* "vigil: " + the report's reason, one printable line. */
static void make_reason(char *out, size_t size, const char *report_reason)
{
	snprintf(out, size, "%s %s", SLURM_REASON_PREFIX,
		 report_reason && *report_reason ? report_reason : "unhealthy");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

/* The table itself; returns why, sets d->act (and d->reason for a drain). */
static const char *decide(enum verdict v, const char *report_reason, const struct slurm_node *node,
			  const struct slurm_policy *p, struct slurm_decision *d)
{
	d->act = SLURM_ACT_NOTHING;
	if (!node)
		return "the node's state could not be read: no change";
	if (node->flags & HANDS_OFF)
		return "the node is down, not responding, rebooting, in maintenance or powered off: "
		       "left to Slurm";
	bool drained = node->flags & NODE_DRAIN;
	bool want_drain = v == VERDICT_UNHEALTHY ||
			  (v == VERDICT_UNKNOWN && p->on_unknown == SLURM_UNKNOWN_DRAIN);

	if (v == VERDICT_HEALTHY) {
		if (drained && owned(node)) {
			d->act = SLURM_ACT_RESUME;
			return "healthy again: resuming the node vigil drained";
		}
		return drained ? "healthy, but drained by someone else: left drained" : "healthy";
	}
	if (!want_drain)
		return "could not tell: no change (slurm.on-unknown)";
	if (drained && !owned(node))
		return "already drained by someone else: their reason is kept";
	if (drained && v == VERDICT_UNKNOWN)
		return "already drained by vigil: reason kept";
	make_reason(d->reason, sizeof(d->reason), report_reason);
	if (drained && !strcmp(node->reason, d->reason))
		return "already drained by vigil for this reason";
	d->act = SLURM_ACT_DRAIN;
	if (v == VERDICT_UNKNOWN)
		return "could not tell: draining (slurm.on-unknown = drain)";
	return drained ? "still unhealthy: updating vigil's reason" : "unhealthy: draining";
}

void slurm_decide(enum verdict v, const char *report_reason, const struct slurm_node *node,
		  const struct slurm_policy *p, struct slurm_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->why = decide(v, report_reason, node, p, d);
	if (d->act != SLURM_ACT_DRAIN)
		d->reason[0] = '\0';
}

void slurm_decide_exclude(const char *reason, const struct slurm_node *node,
			  struct slurm_decision *d)
{
	memset(d, 0, sizeof(*d));
	const char *r = reason ? reason : "";
	skip_prefix(r, SLURM_REASON_PREFIX, &r);
	while (*r == ' ')
		r++;
	if (!node) {
		d->why = "the node's state could not be read: no change";
		return;
	}
	if (node->flags & (NODE_MAINT | NODE_REBOOT | NODE_POWER)) {
		d->why = "the node is in maintenance, rebooting or powered off: left to Slurm";
		return;
	}
	if ((node->flags & NODE_DRAIN) && !owned(node)) {
		d->why = "already drained by someone else: their reason is kept";
		return;
	}
	make_reason(d->reason, sizeof(d->reason), *r ? r : "excluded from a vigil run");
	if ((node->flags & NODE_DRAIN) && !strcmp(node->reason, d->reason)) {
		d->why = "already drained by vigil for this reason";
		d->reason[0] = '\0';
		return;
	}
	d->act = SLURM_ACT_DRAIN;
	d->why = "excluded from the run: draining";
}
