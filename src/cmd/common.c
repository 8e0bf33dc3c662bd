/* common.c: root, host name, configuration and state directory for commands (see common.h). */
#include "common.h"
#include "config_keys.h"
#include "../sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HOST_NAME_READ = 512, HOST_NAME_MAX_LEN = 255 };

/*
 * A host name read from outside names the host in reports, Prometheus labels and Slurm calls:
 * printable, at most 255 bytes. Anything else (control bytes, a NUL, a whole file's worth) becomes
 * a short sanitised excerpt, and a warning says so; the name is never echoed raw.
 */
static const char *host_name_problem(const char *s, size_t len)
{
	if (!len)
		return "empty";
	if (len > HOST_NAME_MAX_LEN)
		return "longer than 255 bytes";
	if (memchr(s, '\0', len) || !str_is_clean(s))
		return "control or invalid bytes";
	return NULL;
}

const char *host_name_invalid(const char *name)
{
	return host_name_problem(name, strlen(name));
}

void host_name_excerpt(struct strbuf *out, const char *name)
{
	strbuf_add_excerpt(out, name, 64);
}

static char *host_name_safe(const char *s, size_t len, const char *from)
{
	const char *why = host_name_problem(s, len);
	if (!why)
		return xstrdup(s);
	struct strbuf sb = STRBUF_INIT;
	host_name_excerpt(&sb, s);
	fprintf(stderr, "vigil: warning: the host name from %s is not a valid host name "
			"(%s); using '%s'\n", from, why, sb.buf);
	return strbuf_detach(&sb, NULL);
}

/* The configuration under the root: 0 (loaded, or there is none), or -1 with *err. */
static int load_root_config(struct host_env *he, const char *name, struct strbuf *err)
{
	struct stat st;
	char self[64];
	int pfd = fsroot_open(&he->fs, "/etc/vigil/vigil.conf", O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return error_set(err, "cannot read '%s': %s", name, strerror(errno));
	}
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(pfd);
		return error_set(err, "'%s' is not a regular file", name);
	}
	/* reopen the file found, not the name: /proc/self/fd/N is this very inode */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int e = errno;
	close(pfd);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", name, strerror(e));
	return config_load_fd(&he->cfg, fd, name, err);
}

/*
 * A fixture's etc/vigil/vigil.conf is the fixture's say, and vigil judges a fixture as root: it
 * may pin what the fixture's host should look like, never choose a program vigil runs or a
 * place it writes to (CONFIG_HOST_ONLY in the schema). Those settings are dropped, each with a
 * warning naming its line; --config and -c, the caller's own choice, still set them.
 */
static void drop_host_only(struct config *cfg)
{
	size_t nr;
	const struct config_key *keys = config_schema(&nr);
	for (size_t i = 0; i < cfg->nr;) {
		const struct config_entry *e = &cfg->e[i];
		const struct config_key *k = config_key_find(keys, nr, e->section, e->key);
		if (!k || !(k->flags & CONFIG_HOST_ONLY)) {
			i++;
			continue;
		}
		fprintf(stderr, "vigil: warning: %s: '%s.%s' ignored: a fixture's configuration "
				"under --root does not choose a program vigil runs or a place it "
				"writes (give it with --config or -c)\n",
			e->origin, e->section, e->key);
		config_remove_entry(cfg, i);
	}
}

/*
 * A state directory someone else controls could feed vigil old readings (hide a rising error
 * counter, or invent one) or swap the directory between runs: it must be ours or root's, and
 * writable by no one else (a sticky directory such as /tmp aside, where none can take our
 * files). Looked at through any link, as the writes go.
 */
static int state_dir_safe(const char *dir, struct strbuf *err)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return error_set(err, "cannot use state directory '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return error_set(err, "cannot use state directory '%s': it is %s, not a directory",
				 dir, file_kind(st.st_mode));
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return error_set(err, "refusing state directory '%s': it belongs to uid %u, not to "
				      "uid %u or root", dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
		return error_set(err, "refusing state directory '%s': others may write to it (mode "
				      "%03o)", dir, (unsigned)(st.st_mode & 0777));
	return 0;
}

int host_env_setup(struct host_env *he, const char *const *sets, size_t nr_sets,
		   struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	int ret = -1;
	if (!he->root)
		he->root = getenv("VIGIL_ROOT");
	if (he->root && !*he->root)
		he->root = NULL;
	/*
	 * The root is a value passed down (struct check_ctx, the gather parts), never a process
	 * global or an exported variable: checks are forked children and inherit it; the test NVML
	 * library is told its snapshot by the NVML shim.
	 */
	if (fsroot_init(&he->fs, he->root, err) < 0)
		goto out;
	if (he->host) {
		/* given (--host): it names the host in reports and Slurm calls, so it must be one */
		const char *why = host_name_invalid(he->host);
		if (why) {
			host_name_excerpt(&sb, he->host);
			error_set(err, "--host '%s' is not a valid host name (%s)", sb.buf, why);
			goto out;
		}
	} else {
		/* fsroot_read_attr(): inside the root, 4 KiB at most, a FIFO does not block */
		int r = he->root ? fsroot_read_attr(&he->fs, "/etc/hostname", &sb, err) : -1;
		if (he->root && r == READ_OK && sb.len) {
			he->host_buf = host_name_safe(sb.buf, sb.len, "etc/hostname under the root");
		} else if (he->root) {
			/* a fixture names its own host or none: never this machine's name, which
			 * would pick this machine's [section "host"] configuration */
			if (r != READ_MISSING)
				fprintf(stderr, "vigil: warning: no host name from etc/hostname under "
						"the root (%s); using 'unknown-host'\n",
					r == READ_OK || r == READ_TRUNCATED ? "empty or too long" : err->buf);
			strbuf_reset(err);
			he->host_buf = xstrdup("unknown-host");
		} else {
			char hn[HOST_NAME_READ] = "";
			if (gethostname(hn, sizeof(hn) - 1) < 0 || !hn[0])
				strlcpy_v(hn, "localhost", sizeof(hn));
			hn[sizeof(hn) - 1] = '\0';
			he->host_buf = host_name_safe(hn, strlen(hn), "the kernel's host name");
		}
		he->host = he->host_buf;
	}
	config_init(&he->cfg, he->host);
	if (!he->config_path)
		he->config_path = getenv("VIGIL_CONFIG");
	if (he->config_path && *he->config_path) {
		if (config_load_file(&he->cfg, he->config_path, false, err) < 0)
			goto out;
	} else {
		/* found inside the root once (O_PATH: nothing is opened for reading yet, so a
		 * device planted there does not start anything), looked at, then read through
		 * that very file: neither a planted link nor one swapped in later loads this
		 * host's files */
		fsroot_path(&he->fs, &sb, "/etc/vigil/vigil.conf");
		if (load_root_config(he, sb.buf, err) < 0)
			goto out;
		if (he->root)
			drop_host_only(&he->cfg);
	}
	for (size_t i = 0; i < nr_sets; i++)
		if (config_set(&he->cfg, sets[i], err) < 0)
			goto out;
	/* once, here: every key known and every value of its type and range, or a usage error */
	if (config_keys_validate(&he->cfg, err) < 0)
		goto out;
	if (!he->state_dir)
		he->state_dir = getenv("VIGIL_STATE_DIR");
	if (!he->state_dir || !*he->state_dir)
		he->state_dir = config_get(&he->cfg, "core", "state-dir");
	if (he->state_dir && *he->state_dir) {
		/* chosen: one that cannot be used is the caller's mistake, said before any check */
		/* made on first use 0750 (docs/SECURITY.md), never through a link in its last name; one
		 * that exists is looked at through any link, as above */
		if (mkdir_state_dir(he->state_dir, 0750, err) < 0 ||
		    state_dir_safe(he->state_dir, err) < 0)
			goto out;
	} else if (!he->root) {
		/*
		 * The host's own state; a user without rights to /var/lib keeps it at home. With
		 * neither (a read-only system, no home) the checks still run, without readings
		 * kept between runs: host_env.state_problem says why, and vigil check reports it
		 * as a warning, never a usage error.
		 */
		he->state_dir = NULL;
		struct strbuf why = STRBUF_INIT;
		if (mkdir_p("/var/lib/vigil", 0755, &why) == 0 && access("/var/lib/vigil", W_OK) == 0 &&
		    state_dir_safe("/var/lib/vigil", &why) == 0) {
			he->state_dir = "/var/lib/vigil";
		} else {
			const char *home = getenv("HOME");
			struct strbuf why2 = STRBUF_INIT;
			if (!why.len)
				strbuf_addstr(&why, "'/var/lib/vigil' is not writable");
			strbuf_reset(&sb);
			if (home && *home == '/')
				strbuf_addf(&sb, "%s/.local/state/vigil", home);
			if (!sb.len)
				strbuf_addstr(&why2, "HOME is not set");
			else if (mkdir_p(sb.buf, 0700, &why2) == 0 && state_dir_safe(sb.buf, &why2) == 0)
				he->state_dir = he->state_buf = strbuf_detach(&sb, NULL);
			strbuf_addf(&why, "; %s", why2.buf);
			strbuf_release(&why2);
		}
		if (!he->state_dir)
			he->state_problem = strbuf_detach(&why, NULL);
		strbuf_release(&why);
	} else {
		he->state_dir = NULL;
	}
	ret = 0;
out:
	strbuf_release(&sb);
	return ret;
}

void host_env_release(struct host_env *he)
{
	fsroot_release(&he->fs);
	config_release(&he->cfg);
	free(he->host_buf);
	free(he->state_buf);
	free(he->state_problem);
}
