/* srunmsg.c: srun's lines about creating a step: refused or held off (see srunmsg.h). */
#include "srunmsg.h"
#include "../lib/util.h"

#include <string.h>

/* A job id as srun prints it: digits, or a heterogeneous job's "812+0". */
static size_t job_id_len(const char *s)
{
	size_t n = 0;
	while ((s[n] >= '0' && s[n] <= '9') || (n && s[n] == '+'))
		n++;
	return n <= 20 ? n : 0;
}

static void add_reason(struct strbuf *reason, const char *s, size_t n)
{
	if (!reason)
		return;
	while (n && (s[0] == ' ' || s[0] == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	char buf[SRUN_MSG_REASON_MAX + 1];
	if (n > SRUN_MSG_REASON_MAX)
		n = SRUN_MSG_REASON_MAX;
	memcpy(buf, s, n);
	buf[n] = '\0';
	strbuf_add_clean(reason, buf);
}

/* "Job 812 step creation temporarily disabled, retrying (REASON)", "... still disabled, ...";
 * Slurm before 20.02: "Job step creation temporarily disabled, retrying" (no reason). */
static enum srun_msg pending(const char *rest, struct strbuf *reason)
{
	const char *p = rest;
	if (skip_prefix(p, "Job ", &p)) {
		size_t n = job_id_len(p);
		if (n && p[n] == ' ')
			p += n + 1;
		if (!skip_prefix(p, "step creation ", &p))
			return SRUN_MSG_OTHER;
	} else {
		return SRUN_MSG_OTHER;
	}
	if (!skip_prefix(p, "temporarily disabled, retrying", &p) &&
	    !skip_prefix(p, "still disabled, retrying", &p))
		return SRUN_MSG_OTHER;
	if (p[0] == ' ' && p[1] == '(') {
		const char *end = strrchr(p, ')');
		if (end && end > p + 2)
			add_reason(reason, p + 2, (size_t)(end - p - 2));
	}
	return SRUN_MSG_PENDING;
}

enum srun_msg srun_msg_parse(const char *line, size_t len, struct strbuf *reason)
{
	char buf[SRUN_MSG_LINE_MAX + 1];
	size_t n = len < SRUN_MSG_LINE_MAX ? len : SRUN_MSG_LINE_MAX;
	memcpy(buf, line, n);
	buf[n] = '\0';
	/* NUL bytes end the C string early; anything after one is not srun's text */
	const char *rest, *p;
	if (!skip_prefix(buf, "srun: ", &rest))
		return SRUN_MSG_OTHER;
	if (!skip_prefix(rest, "error: ", &p))
		return pending(rest, reason);
	if (skip_prefix(p, "Unable to create step for job ", &p)) {
		size_t k = job_id_len(p);
		if (!k || p[k] != ':')
			return SRUN_MSG_OTHER;
		p += k + 1;
	} else if (!skip_prefix(p, "Unable to create job step:", &p)) {
		return SRUN_MSG_OTHER;
	}
	add_reason(reason, p, strlen(p));
	return SRUN_MSG_REFUSED;
}

static bool has(const char *s, const char *word)
{
	return strcasestr(s, word) != NULL;
}

const char *srun_refusal_action(const char *reason)
{
	if (!reason)
		reason = "";
	if (has(reason, "already completing or completed") || has(reason, "time limit") ||
	    has(reason, "expired"))
		return "the job is ending (its time limit, or it was cancelled): nothing more can "
		       "start in this allocation; submit the run again";
	if (has(reason, "node not available") || has(reason, "drained") || has(reason, "down"))
		return "a node of the allocation is not available to Slurm (see sinfo and scontrol "
		       "show job $SLURM_JOB_ID); vigil drains nobody for srun's refusal";
	if (has(reason, "processors") || has(reason, "node configuration") ||
	    has(reason, "memory") || has(reason, "gres") || has(reason, "generic resource") ||
	    has(reason, "count specification") || has(reason, "cpu") || has(reason, "gpu"))
		return "the allocation cannot hold this step: ask for more CPUs, memory or GPUs per "
		       "node (e.g. salloc --ntasks-per-node=G, --gres=gpu:G, --mem), or lower "
		       "--tasks-per-node";
	return "compare vigil run's --nodes and --tasks-per-node with the allocation (scontrol "
	       "show job $SLURM_JOB_ID)";
}

void srun_refusal_describe(const char *reason, struct strbuf *out)
{
	strbuf_addstr(out, "srun refused to create the step: ");
	strbuf_addstr(out, reason && *reason ? reason : "(no reason given)");
	strbuf_addstr(out, "; ");
	strbuf_addstr(out, srun_refusal_action(reason));
}
