/*
 * collect.h: the evidence of a hang or a slowdown for `vigil run`, gathered before anything is
 * killed: `vigil stacks` on every host of the attempt (through srun --overlap inside the
 * allocation, each with a deadline, all at once), the time of each rank's last output line
 * (rankout.h), judged by evidence.h; saved as ATTEMPT_DIR/evidence.json and stacks-HOST.json.
 * Also the Python hook that lets a trainer's Python stacks be taken (pyhook.h).
 */
#ifndef VIGIL_COLLECT_H
#define VIGIL_COLLECT_H

#include "options.h"
#include "rankout.h"
#include "../lib/strlist.h"

/*
 * hang: the evidence of a hang (not a slowdown): Python stacks compared down to the innermost
 * frame's line (evidence.h). summary: one paragraph for the journal; suspects: hosts to
 * confirm alone (stacks unlike the majority, silent first); sick/why: hosts named beyond
 * doubt (a rank stopped in every sample, busy far beyond its peers while they wait), with the
 * reason. A host whose evidence is doubtful (evidence.h: doubtful_hosts) is never sick here,
 * only a suspect. step_id: the attempt's "JOB.STEP" (NULL: not known yet), passed to vigil
 * stacks with the job and uid.
 */
void sup_collect_evidence(const struct sup_options *o, const char *attempt_dir,
			  const char *step_id, char *const *hosts, size_t nr_hosts,
			  const struct rankout *ro, unsigned world, bool hang, struct strbuf *summary,
			  struct strlist *suspects, struct strlist *sick, struct strlist *why);
/* The judgement of sup_collect_evidence() on an evidence already built: into sick/why the hosts
 * named beyond doubt (a rank frozen; a rank not on a GPU busy in 80 % of samples or more while
 * the median rank is busy in 30 % or less), into suspects those hosts where the evidence is
 * doubtful. */
struct evidence;
void sup_judge_evidence(const struct evidence *ev, struct strlist *suspects, struct strlist *sick,
			struct strlist *why);
/* Write the hook under run_dir; its directory (for PYTHONPATH) into dir. 0 or -1 with *err. */
int sup_pyhook_install(const char *run_dir, char *dir, size_t size, struct strbuf *err);

#endif
