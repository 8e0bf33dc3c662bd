/*
 * storage.h: the 'storage' check: space and inodes of the mounts that matter, mounts that must be
 * there, and a write/fsync/read probe of chosen directories in a child process under a deadline
 * (see storage.c and docs/checks-host.md).
 *
 * Filesystem numbers come from statvfs() on the host. Under a fixture root they come from the file
 * ROOT/fs.snapshot when it exists: one line per path,
 *
 *   PATH TOTAL_BYTES FREE_BYTES AVAIL_BYTES TOTAL_INODES FREE_INODES
 *
 * '#' starts a comment line; PATH escapes space, tab, newline and backslash as \040 \011 \012 \134
 * (as /proc/mounts does). storage_snapshot_write() produces that file for this host.
 */
#ifndef VIGIL_CHECK_STORAGE_H
#define VIGIL_CHECK_STORAGE_H

#include "check.h"
#include "../lib/strlist.h"

#define STORAGE_SNAPSHOT_FILE "fs.snapshot" /* under the root, beside sys/ and proc/ */

struct fs_numbers {
	bool ok;              /* the numbers below are valid */
	uint64_t total, free, avail; /* bytes */
	uint64_t itotal, ifree;      /* inodes; itotal 0: the filesystem does not count them */
	bool missing;         /* no such path */
	char error[160];      /* statvfs failed otherwise: why */
	bool timed_out;       /* statvfs did not return in time: the filesystem hangs */
	bool not_reached;     /* not looked at: an earlier path hung */
	bool not_in_snapshot; /* a fixture's fs.snapshot has no line for it */
};

struct storage_fs {
	char *path; /* the mount point (or configured path) looked at */
	struct fs_numbers n;
};

struct mount_entry {
	char *source, *target, *fstype;
};

enum probe_outcome { PROBE_OK, PROBE_TIMEOUT, PROBE_ERROR, PROBE_MISMATCH, PROBE_NOT_RUN };

struct storage_probe {
	char *path;          /* the directory as configured (a host path) */
	enum probe_outcome outcome;
	char step[16];       /* "open", "write", "fsync", "read", "unlink" on PROBE_ERROR */
	int err_no;
	char error[160];     /* anything else worth saying (a crash, a bad child reply) */
	uint64_t bytes;
	double write_ms, fsync_ms, read_ms, total_ms;
	unsigned timeout_ms;
};

struct storage_readings {
	struct mount_entry *mounts; /* /proc/mounts */
	size_t nr_mounts, alloc_mounts;
	bool mounts_read;            /* /proc/mounts was there */
	struct storage_fs *fs;
	size_t nr_fs, alloc_fs;
	struct storage_probe *probes;
	size_t nr_probes, alloc_probes;
	bool from_snapshot;          /* numbers came from ROOT/fs.snapshot */
	bool no_numbers;             /* under a root with neither /proc/mounts nor fs.snapshot */
};

struct storage_options {
	struct strlist mounts;  /* storage.mount; empty: "/" */
	struct strlist require; /* storage.require */
	struct strlist probes;  /* storage.probe */
	double threshold;       /* percent: fail at or above, warn 5 points below */
	unsigned probe_timeout_ms;
	uint64_t probe_size;
	char *probe_file;       /* test seam: a fixed file name in the probe directory */
	unsigned budget_ms;     /* time all statvfs calls and probes may take together */
};

int storage_options_load(const struct config *cfg, struct storage_options *opt,
			 struct strbuf *err);
void storage_options_release(struct storage_options *opt);

/* Unescape a /proc/mounts or fs.snapshot field (\040 and friends) in place. */
void storage_unescape(char *s);
/* Parse /proc/mounts text into r->mounts. */
void storage_parse_mounts(struct storage_readings *r, const char *text);
/* The mount point holding path (longest match in r->mounts), or path when none is known. */
const char *storage_mount_of(const struct storage_readings *r, const char *path);
/* Find path's numbers in fs.snapshot text. True when a line for it was found. */
bool storage_snapshot_lookup(const char *text, const char *path, struct fs_numbers *n);

/* Read mounts, numbers and run the probes. 0, or -1 with *err when nothing could be read. */
int storage_gather(const struct check_ctx *ctx, const struct storage_options *opt,
		   struct storage_readings *r, struct strbuf *err);
/* Pure: findings for the readings. */
void storage_evaluate(const struct storage_readings *r, const struct storage_options *opt,
		      struct check_result *res);
void storage_readings_release(struct storage_readings *r);

/*
 * The fs.snapshot text for this host (through fsroot: under a root, for the root's mounts), for
 * 'vigil gather': every mount in /proc/mounts except pseudo filesystems (proc, sysfs, cgroup,
 * autofs, ...), plus the paths the configuration names (storage.mount, .require, and the mounts
 * of storage.probe). statvfs runs in a child under storage.probe-timeout, so a hung network mount
 * cannot hang the caller. Appends to out; returns 0, or -1 with *err (out then holds the lines
 * read before the problem: a mount that hung, or no /proc/mounts).
 */
int storage_snapshot_write(const struct fsroot *root, const struct config *cfg, struct strbuf *out,
			   struct strbuf *err);

int check_storage_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
