/*
 * kernel_gather.c: the kernel check's configuration, its gather (reading the log whole, see
 * kernel.h) and its run(), which also reads the EDAC counters (edac.h). The judgement of the
 * events is in kernel.c and kernel_hw.c.
 */
#include "kernel_internal.h"
#include "edac.h"
#include "../sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration ---- */

static int add_ignore_list(struct kernel_config *kc, const char *value, const char *origin,
			   struct strbuf *err)
{
	struct strlist parts = STRLIST_INIT;
	int ret = 0;
	strlist_split(&parts, value, ", \t");
	for (size_t i = 0; i < parts.nr; i++) {
		uint64_t v;
		if (!parse_u64(parts.items[i], &v) || v > 1000000) {
			ret = error_set(err, "%s: 'kernel.ignore-xid' wants Xid numbers, not '%s'",
					origin ? origin : "configuration", parts.items[i]);
			break;
		}
		ALLOC_GROW(kc->ignore_xid, kc->nr_ignore_xid + 1, kc->alloc_ignore_xid);
		kc->ignore_xid[kc->nr_ignore_xid++] = (int)v;
	}
	strlist_release(&parts);
	return ret;
}

int kernel_config_load(const struct config *cfg, struct kernel_config *kc, struct strbuf *err)
{
	const char **vals = NULL;
	size_t n;
	memset(kc, 0, sizeof(*kc));
	if (config_get_double(cfg, "kernel", "window", 3600, &kc->window, err) < 0 ||
	    config_get_bool(cfg, "kernel", "strict", false, &kc->strict, err) < 0 ||
	    config_get_u64(cfg, "kernel", "link-flaps", 3, &kc->link_flaps, err) < 0 ||
	    config_get_u64(cfg, "kernel", "ce-rate", KERNEL_CE_RATE, &kc->ce_rate, err) < 0)
		return -1;
	if (!(kc->window > 0) || !isfinite(kc->window))
		return error_set(err, "%s: 'kernel.window' must be a positive number of seconds",
				 cfg ? config_origin(cfg, "kernel", "window") : "configuration");
	if (!kc->ce_rate)
		return error_set(err, "%s: 'kernel.ce-rate' must be at least 1 (errors an hour)",
				 cfg ? config_origin(cfg, "kernel", "ce-rate") : "configuration");
	if (!kc->link_flaps)
		return error_set(err, "%s: 'kernel.link-flaps' must be at least 1",
				 cfg ? config_origin(cfg, "kernel", "link-flaps") : "configuration");
	n = config_get_all(cfg, "kernel", "allow", &vals);
	for (size_t i = 0; i < n; i++)
		if (vals[i][0])
			strlist_add(&kc->allow, vals[i]);
	free(vals);
	n = config_get_all(cfg, "kernel", "ignore-xid", &vals);
	const char *origin = cfg ? config_origin(cfg, "kernel", "ignore-xid") : NULL;
	for (size_t i = 0; i < n; i++) {
		if (add_ignore_list(kc, vals[i], origin, err) < 0) {
			free(vals);
			return -1;
		}
	}
	free(vals);
	return 0;
}

void kernel_config_release(struct kernel_config *kc)
{
	strlist_release(&kc->allow);
	free(kc->ignore_xid);
	memset(kc, 0, sizeof(*kc));
}

/* ---- gather ---- */

/* A file name or other outside text in a message: control bytes escaped. */
void add_name(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '\'');
	strbuf_add_clean(sb, s);
	strbuf_addch(sb, '\'');
}

/*
 * Bytes that say nothing about this host must not read as "clean": nothing at all (a 'dmesg'
 * without root writes an empty file), only zero bytes (a file preallocated and never written),
 * or text or data without one time stamp or kernel message (a wrong file). A real log with a
 * crash's zero-filled block still has its stamped lines and is read as usual. An empty dev/kmsg
 * in a fixture root is no evidence either ('vigil gather' without root copies nothing), nor
 * is a fixture without one (kernel_evaluate: unknown); fixtures for other checks use --only.
 * 0 when the log is evidence, else -1 with *err naming the file.
 */
static int check_evidence(const struct kmsg_log *log, const struct kmsg_read *rd,
			  const char *name, struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	if (rd->done && (log->has_last || log->nr || log->nvrm_benign || log->lost))
		return 0;
	/* the cause first: the one-line reason is cut at 80 characters, and paths are long */
	if (!rd->done)
		strbuf_addstr(&sb, "empty kernel log: ");
	else if (rd->all_zero)
		strbuf_addstr(&sb, "only zero bytes, not a kernel log: ");
	else
		strbuf_addstr(&sb, "does not look like a kernel log: ");
	add_name(&sb, name);
	if (!rd->done && rd->pipe)
		strbuf_addstr(&sb, " (a pipe whose writer wrote nothing)");
	else if (!rd->done)
		strbuf_addstr(&sb, " (a 'dmesg' without root privileges writes nothing)");
	else if (rd->all_zero)
		strbuf_addf(&sb, " (%llu bytes)", (unsigned long long)rd->done);
	else if (rd->sample_ctl * 20 > rd->sample)
		strbuf_addstr(&sb, " (binary data, no time stamps)");
	else {
		strbuf_addstr(&sb, " (no time stamps, no kernel messages; it starts '");
		strbuf_add_excerpt(&sb, rd->head, 48);
		strbuf_addstr(&sb, "')");
	}
	error_set(err, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

int kernel_gather(const struct check_ctx *ctx, struct kernel_input *in, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	struct kmsg_opts opts = { .year_hint = ctx->now };
	/* leave a quarter of the deadline to judge what was read and to say what was not */
	struct kmsg_read rd = { .deadline_ms = ctx->timeout_ms ? mono_ms() + ctx->timeout_ms / 4 * 3 : 0 };
	int ret = 0;
	memset(in, 0, sizeof(*in));
	kmsg_log_init(&in->log, &opts);
	if (ctx->kernel_log) {
		in->source = xstrdup(ctx->kernel_log);
		strbuf_addstr(&path, ctx->kernel_log);
		ret = kmsg_read_file(path.buf, &in->log, &rd, err);
	} else {
		in->source = xstrdup("/dev/kmsg");
		fsroot_path(ctx->root, &path, "/dev/kmsg");
		if (fsroot_is_host(ctx->root)) {
			ret = kmsg_read_device(path.buf, &in->log, &rd, err);
			if (ret < 0) {
				strbuf_addstr(err, " (run as root or pass --kernel-log)");
			} else {
				/* kmsg stamps count from boot, as CLOCK_MONOTONIC does */
				struct timespec ts;
				clock_gettime(CLOCK_MONOTONIC, &ts);
				in->have_now = true;
				in->now_tb = KMSG_TB_MONO;
				in->now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
			}
		} else {
			/* Opened once, resolved inside the root, and read from that descriptor: a
			 * dev/kmsg link never reads this host's files, and neither does a fixture
			 * changed after the open (a path opened again could lead elsewhere).
			 * O_NONBLOCK: a FIFO without a writer must not hang the open. */
			int fd = fsroot_open(ctx->root, "/dev/kmsg",
					     O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
			if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
				in->missing = true;
				goto out;
			}
			if (fd < 0) {
				ret = error_set(err, "cannot read '%s': %s", path.buf,
						strerror(errno));
			} else {
				ret = kmsg_read_fd(fd, path.buf, &in->log, &rd, err);
				close(fd);
			}
		}
	}
	if (ret < 0)
		goto out;
	kmsg_log_finish(&in->log);
	in->read_bytes = rd.done;
	in->incomplete = !rd.complete;
	in->size = rd.device ? 0 : rd.complete ? rd.done : rd.size > rd.done ? rd.size : 0;
	/* a read cut short is judged as far as it went and says so (kernel_evaluate) */
	if (rd.complete && (ret = check_evidence(&in->log, &rd, path.buf, err)) < 0)
		goto out;
	if (!in->have_now && in->log.has_last) {
		/* a saved log: "now" is its last line */
		in->have_now = true;
		in->now_tb = in->log.last_tb;
		in->now = in->log.last_ts;
	}
out:
	strbuf_release(&path);
	return ret;
}

void kernel_input_release(struct kernel_input *in)
{
	kmsg_log_release(&in->log);
	free(in->source);
	in->source = NULL;
}

/*
 * The EDAC counters, judged into res. Not with --kernel-log on the host: a saved log may be
 * another host's, and this host's counters would be judged as its own (a fixture root's are the
 * fixture's). The root is NULL only in a context built by hand (tests of the log alone).
 */
static void run_edac(const struct check_ctx *ctx, const struct kernel_config *kc,
		     struct check_result *res)
{
	struct edac_readings edac;
	if (!ctx->root || (ctx->kernel_log && fsroot_is_host(ctx->root)))
		return;
	edac_gather(ctx, &edac);
	edac_evaluate(&edac, kc->ce_rate, res);
	edac_state_save(ctx, &edac, res);
	edac_readings_release(&edac);
}

int check_kernel_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct kernel_config kc;
	struct kernel_input in;
	int ret = -1;
	if (kernel_config_load(ctx->cfg, &kc, err) < 0)
		goto out_config;
	/* the EDAC counters after the log's findings (the log's faults come first), and also when
	 * the log cannot be read: an uncorrected memory error fails the host then too (the check is
	 * fail, with the log's reason as its error, not unknown alone) */
	if (kernel_gather(ctx, &in, err) < 0) {
		run_edac(ctx, &kc, res);
		goto out_input;
	}
	kernel_evaluate(&in, &kc, res);
	run_edac(ctx, &kc, res);
	ret = 0;
out_input:
	kernel_input_release(&in);
out_config:
	kernel_config_release(&kc);
	return ret;
}
