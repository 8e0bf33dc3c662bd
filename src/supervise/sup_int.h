/*
 * sup_int.h: the supervisor's parts, shared by its files (nothing outside src/supervise includes
 * it). struct sup is the run: the attempt that runs, the periodic watch, and the events and
 * actions waiting their turn. Each file is one section of the loop:
 *   supervisor.c    the loop, the dispatcher (events in, actions out), setup and the end
 *   sup_checks.c    vigil check on hosts: the fleet fan-out, preflight, checks after a stop
 *   sup_step.c      the attempt's step: launch, output, progress, stop
 *   sup_watch.c     the periodic watch (Slurm's view of the nodes, periodic checks)
 *   sup_evidence.c  diagnosis of the run's own files and the evidence of a hang
 *   sup_group.c     smoke runs and group testing
 */
#ifndef VIGIL_SUP_INT_H
#define VIGIL_SUP_INT_H

#include "supervisor.h"
#include "grouptest.h"
#include "journal.h"
#include "machine.h"
#include "rankout.h"
#include "replicas.h"
#include "collect.h"
#include "world.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/run.h"
#include "../lib/run_group.h"
#include "../lib/strlist.h"
#include "../lib/strindex.h"
#include "../lib/util.h"
#include "../logs/steps.h"
#include "../slurm/fleet.h"
#include "../slurm/srunmsg.h"
#include "../slurm/step.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* supervisor.c: the loop of `vigil run`: events from the world, actions into it (supervisor.h). */


/* Step records are fsync'd at most this often. */
#define STEP_JOURNAL_EVERY_S 1.0
/* vigil's exit code for a usage error (src/cmd/cmd.h's EXIT_USAGE). */
#define EXIT_CODE_USAGE 2
/* Unreachable in this many periodic checks in a row: the node is lost. */
#define UNREACHABLE_LOST 2

/* An event waiting its turn (sup_post): its own copy of the strings. */
struct queued_event {
	enum sup_event_kind kind;
	char *host, *text;
	int code;
	uint64_t step;
	bool startup;
	struct strlist hosts, sick;
	char **sick_reasons; /* parallel to sick, entries may be NULL */
	double happened, detected;
};

/* What the periodic watch found about one host. */
struct watch_host {
	char *name;
	unsigned unreachable; /* in a row */
	double first_unreachable; /* wall clock of the first of them */
};

/* The attempt that runs: its step, its output and what the output said. */
struct sup_attempt {
	struct step step; /* the real world's srun (world_real.c) */
	bool step_live;
	char attempt_dir[4096];
	struct rankout ro;
	bool ro_open;
	struct step_parser out_p, json_p;
	bool parsers;
	int step_file_fd;
	char step_file[4200];
	bool json_steps; /* the step file spoke: output lines are no longer the source */
	struct detect_state det;
	bool has_step;
	uint64_t last_step;
	double last_step_journaled; /* wall */
	double last_loss;
	bool has_loss;
	double launch_wall;
	bool launched_said;
	bool pending_said;       /* srun's "step creation ... retrying" journaled once */
	char pyhook_dir[4200];
	struct strlist hosts;    /* the attempt's hosts, rank order: rank r runs on r / G */
	struct replicas rep;     /* the ranks' parameter digests (replicas.h) */
	bool rep_on;
	uint64_t rep_bad_lines;  /* "vigil-digest" lines that were not whole */
};

/* The periodic watch: a forked child asking Slurm and vigil check about the run's nodes. */
struct sup_watch {
	struct child watch; /* the real world's forked watcher (world_real.c) */
	bool watch_live;
	double watch_started; /* wall clock */
	double next_check, next_poll;
	struct watch_host *wh;
	size_t nr_wh, alloc_wh;
	struct strindex wh_index; /* wh by name */
	struct strlist no_agent; /* hosts whose agent keeps no fresh result: asked afresh */
};

/* Events waiting to be fed to the machine, and the machine's actions waiting their turn. */
struct sup_events {
	/* the fault being handled: when it happened and when it was seen (wall clock) */
	double happened, detected;
	bool in_io;   /* the step's output is being read: events wait (sup_pump) */
	bool pumping; /* sup_pump runs: events and actions wait their turn */
	struct queued_event *q;
	size_t q_head, nr_q, alloc_q;
	struct sup_actions actions; /* of the event being handled */
	size_t actions_head;
};

struct sup {
	const struct sup_options *o;
	const struct sup_world *W; /* every touch of the outside (world.h) */
	unsigned journaled;        /* records written by this run (the world's observer) */
	struct sup_machine m;
	struct journal j;
	struct strbuf err;
	int exit_code;
	const char *outcome;
	char *outcome_text;
	struct slurm_nodes alloc; /* the allocation */
	struct sup_attempt at;
	struct sup_watch w;
	struct sup_events ev;
};

const char *sup_verdict_word(enum fleet_verdict v); /* sup_checks.c */
struct check_row *sup_fleet_check(void *ctx, const struct sup_options *o, const char *const *hosts, size_t n, const struct slurm_nodes *alloc, bool cached, struct strbuf *note); /* sup_checks.c: the real world's check */
struct check_row *sup_check_hosts(struct sup *s, const char *const *hosts, size_t n, const struct slurm_nodes *alloc, struct strlist *no_agent, struct strbuf *note); /* sup_checks.c */
void sup_do_checks(struct sup *s, const struct strlist *hosts); /* sup_checks.c */
void sup_do_preflight(struct sup *s); /* sup_checks.c */
struct json_value *sup_diagnose(struct sup *s, const char *kind, const char *arg, const char *out_path); /* sup_evidence.c */
void sup_do_evidence(struct sup *s, const struct sup_action *x); /* sup_evidence.c */
void sup_do_group_test(struct sup *s, const struct sup_action *x); /* sup_group.c */
const char *sup_addr_of(const struct sup *s, const char *host); /* sup_step.c */
int sup_make_dir(const char *path, struct strbuf *err); /* sup_step.c */
unsigned sup_world_of(const struct sup *s, size_t hosts); /* sup_step.c */
void sup_close_attempt(struct sup *s); /* sup_step.c */
void sup_do_launch(struct sup *s, const struct sup_action *x); /* sup_step.c */
void sup_do_stop(struct sup *s, const struct sup_action *x); /* sup_step.c */
void sup_flush_step(struct sup *s); /* sup_step.c */
void sup_replicas_tick(struct sup *s); /* sup_step.c */
void sup_progress(struct sup *s, const struct step_update *u, bool from_json); /* sup_step.c */
void sup_read_step_file(struct sup *s); /* sup_step.c */
void sup_task_env(struct sup *s, struct strlist *env, bool smoke); /* sup_step.c */
void sup_watch_done(struct sup *s, const char *result); /* sup_watch.c */
void sup_watch_start(struct sup *s, bool checks); /* sup_watch.c */
void sup_watch_stop(struct sup *s); /* sup_watch.c */
int sup_allocation(struct sup *s, struct strbuf *err); /* supervisor.c */
struct watch_host *sup_wh_get(struct sup *s, const char *name); /* supervisor.c */
void sup_active_list(const struct sup_machine *m, struct strlist *out); /* supervisor.c */
void sup_fault(struct sup *s, enum sup_event_kind k, const char *host, const char *text, 		  double happened); /* supervisor.c */
void sup_post(struct sup *s, const struct sup_event *e); /* supervisor.c */
void sup_pump(struct sup *s); /* supervisor.c */
void sup_post_simple(struct sup *s, enum sup_event_kind k, const char *host, const char *text); /* supervisor.c */
void sup_journal_event(struct sup *s, const char *cls, const char *host, const char *detail); /* supervisor.c */
void sup_say(struct sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* supervisor.c */
const char *sup_name_at(const void *arr, size_t i); /* supervisor.c: strindex over a char *[] */
void sup_print(struct sup *s, int fd, const char *text, size_t len); /* supervisor.c */

#endif
