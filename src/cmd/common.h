/*
 * common.h: set-up shared by the commands that look at a host: the root, the host name, the
 * configuration and the state directory.
 */
#ifndef VIGIL_CMD_COMMON_H
#define VIGIL_CMD_COMMON_H

#include "../lib/config.h"
#include "../lib/strbuf.h"
#include "../sys/fsroot.h"

struct host_env {
	const char *root;       /* --root or VIGIL_ROOT, NULL for this host */
	struct fsroot fs;       /* that root, opened by host_env_setup(): pass &fs down (check_ctx) */
	const char *config_path; /* --config or VIGIL_CONFIG, NULL for /etc/vigil/vigil.conf */
	const char *state_dir;  /* --state-dir or VIGIL_STATE_DIR */
	const char *host;       /* --host, else the root's /etc/hostname, else gethostname() */
	struct config cfg;
	char *host_buf;
	char *state_buf;
	/* why no state directory is used when none was chosen and the defaults failed (a
	 * read-only system, no home); NULL otherwise. A warning, never an error. */
	char *state_problem;
};

/* Open the root (he->fs), find the host name, load the configuration, choose the state directory.
 * Returns 0, or -1 with *err (usage-level problems: missing root, bad config, a --host that is
 * not a host name). */
int host_env_setup(struct host_env *he, const char *const *sets, size_t nr_sets,
		   struct strbuf *err);
void host_env_release(struct host_env *he);

/*
 * Is name fit to name this host in reports, Prometheus labels and Slurm calls (1 to 255 bytes,
 * printable, valid UTF-8)? NULL when it is, else why not ("control or invalid bytes"). A name
 * given on the command line that is not is a usage error (host_env_setup() says so for --host).
 */
const char *host_name_invalid(const char *name);
/* A short, sanitised excerpt of a host name for a message (never the raw bytes). */
void host_name_excerpt(struct strbuf *out, const char *name);

#endif
