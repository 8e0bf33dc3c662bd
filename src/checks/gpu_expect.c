/*
 * gpu_expect.c: the GPU count Slurm's configuration gives this node (see gpu_expect.h). The
 * parsing is src/logs/gresconf.c; here are the files, the node's name and the words.
 */
#include "gpu_expect.h"
#include "../logs/gresconf.h"
#include "../sys/fsroot.h"

/* slurm.conf of a big cluster lists every node: generous, yet bounded. */
#define SLURMCONF_CAP (4u << 20)
#define INCLUDES_MAX 16

static const char *const slurm_conf_paths[] = {
	"/etc/slurm/slurm.conf",
	"/etc/slurm-llnl/slurm.conf",
	"/run/slurm/conf/slurm.conf",
	"/var/spool/slurmd/conf-cache/slurm.conf",
};

static void set_unknown(struct gpu_expect *e, const char *path, const char *why)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "cannot tell how many GPUs Slurm gives this node: '%s' ", path);
	strbuf_add_excerpt(&sb, why, 240);
	e->state = GPU_EXPECT_UNKNOWN;
	strlcpy_v(e->why, sb.buf, sizeof(e->why));
	strbuf_release(&sb);
}

/* Read path under root into sb: READ_OK, READ_MISSING, or -1 with *why (unreadable, too big). */
static int read_conf(const struct fsroot *root, const char *path, struct strbuf *sb,
		     struct strbuf *why)
{
	strbuf_reset(sb);
	int r = fsroot_read(root, path, sb, SLURMCONF_CAP, why);
	if (r == READ_TRUNCATED)
		return error_set(why, "is larger than %u bytes", SLURMCONF_CAP);
	return r;
}

/* Parse the Include targets of a (node not found yet), one level deep, relative to dir. */
static int follow_includes(const struct fsroot *root, const char *dir, const char *node,
			   struct gresconf_answer *a, struct gpu_expect *e)
{
	struct strlist inc = a->includes;
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT, path = STRBUF_INIT;
	int ret = 0;
	memset(&a->includes, 0, sizeof(a->includes));
	for (size_t i = 0; i < inc.nr && i < INCLUDES_MAX && a->found != GRESCONF_NODE_FOUND; i++) {
		strbuf_reset(&path);
		if (inc.items[i][0] != '/')
			strbuf_addf(&path, "%s/", dir);
		strbuf_addstr(&path, inc.items[i]);
		if (strpbrk(path.buf, "*?[")) {
			set_unknown(e, path.buf, "is an Include with wildcards, not followed");
			ret = -1;
			break;
		}
		int r = read_conf(root, path.buf, &sb, &why);
		if (r != READ_OK) {
			set_unknown(e, path.buf, r == READ_MISSING ? "(an Include) is missing" : why.buf);
			ret = -1;
			break;
		}
		if (slurmconf_node_gpus(sb.buf, sb.len, node, a, &why) < 0) {
			set_unknown(e, path.buf, why.buf);
			ret = -1;
			break;
		}
		if (a->found == GRESCONF_NODE_FOUND) {
			strbuf_reset(&sb);
			strbuf_addf(&sb, "%s line %u", path.buf, a->line);
			strlcpy_v(e->where, sb.buf, sizeof(e->where));
		}
	}
	strlist_release(&a->includes);
	strlist_release(&inc);
	strbuf_release(&sb);
	strbuf_release(&why);
	strbuf_release(&path);
	return ret;
}

static void found_slurm(struct gpu_expect *e, const char *node, const struct gresconf_answer *a,
			const char *what)
{
	struct strbuf sb = STRBUF_INIT, name = STRBUF_INIT;
	strbuf_add_excerpt(&name, node, 64); /* the root's /etc/hostname: quoted, never raw */
	if (!a->gpus) {
		e->state = GPU_EXPECT_NONE;
		strbuf_addf(&sb, "Slurm gives node %s no GPU", name.buf);
		strlcpy_v(e->note, sb.buf, sizeof(e->note));
		goto out;
	}
	e->state = GPU_EXPECT_SLURM;
	e->count = a->gpus;
	strbuf_addf(&sb, "Slurm %s for node %s", what, name.buf);
	strlcpy_v(e->source, sb.buf, sizeof(e->source));
out:
	strbuf_release(&sb);
	strbuf_release(&name);
}

/* gres.conf beside slurm.conf, for a node whose NodeName line has no Gres. */
static void from_gres_conf(const struct fsroot *root, const char *dir, const char *node,
			   struct gpu_expect *e)
{
	struct strbuf path = STRBUF_INIT, sb = STRBUF_INIT, why = STRBUF_INIT;
	struct gresconf_answer a;
	gresconf_answer_init(&a);
	strbuf_addf(&path, "%s/gres.conf", dir);
	int r = read_conf(root, path.buf, &sb, &why);
	if (r == READ_MISSING)
		goto out;
	if (r < 0 || gresconf_node_gpus(sb.buf, sb.len, node, &a, &why) < 0) {
		set_unknown(e, path.buf, why.buf);
		goto out;
	}
	if (a.found == GRESCONF_NODE_FOUND) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "gres.conf Name=gpu (%llu)", (unsigned long long)a.gpus);
		found_slurm(e, node, &a, sb.buf);
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s line %u", path.buf, a.line);
		strlcpy_v(e->where, sb.buf, sizeof(e->where));
	} else if (a.found == GRESCONF_AUTODETECT) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s leaves node %s's GPUs to AutoDetect", path.buf, node);
		strlcpy_v(e->note, sb.buf, sizeof(e->note));
	}
out:
	gresconf_answer_release(&a);
	strbuf_release(&path);
	strbuf_release(&sb);
	strbuf_release(&why);
}

void gpu_expect_gather(const struct fsroot *root, const char *host, struct gpu_expect *e)
{
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT, node = STRBUF_INIT;
	struct gresconf_answer a;
	const char *path = NULL;
	int r = READ_MISSING;
	memset(e, 0, sizeof(*e));
	gresconf_answer_init(&a);
	if (!host || !*host)
		goto out;
	/* Slurm's NodeName is the short host name (slurmd -N aside). */
	strbuf_add(&node, host, strcspn(host, "."));
	for (size_t i = 0; i < ARRAY_SIZE(slurm_conf_paths) && r == READ_MISSING; i++) {
		path = slurm_conf_paths[i];
		r = read_conf(root, path, &sb, &why);
	}
	if (r == READ_MISSING)
		goto out; /* not a Slurm node, as far as this host's files say */
	if (r < 0 || slurmconf_node_gpus(sb.buf, sb.len, node.buf, &a, &why) < 0) {
		set_unknown(e, path, why.buf);
		goto out;
	}
	char dir[128];
	strlcpy_v(dir, path, sizeof(dir));
	*strrchr(dir, '/') = '\0';
	if (a.found != GRESCONF_NODE_FOUND && a.includes.nr) {
		if (follow_includes(root, dir, node.buf, &a, e) < 0)
			goto out;
	} else if (a.found == GRESCONF_NODE_FOUND) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s line %u", path, a.line);
		strlcpy_v(e->where, sb.buf, sizeof(e->where));
	}
	if (a.found == GRESCONF_NODE_FOUND && a.gres[0]) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "Gres %s", a.gres);
		found_slurm(e, node.buf, &a, sb.buf);
	} else if (a.found == GRESCONF_NODE_FOUND) {
		from_gres_conf(root, dir, node.buf, e);
	} else {
		strbuf_reset(&sb);
		strbuf_addstr(&sb, "node ");
		strbuf_add_excerpt(&sb, node.buf, 64);
		strbuf_addf(&sb, " is not in %s", path);
		strlcpy_v(e->note, sb.buf, sizeof(e->note));
	}
out:
	gresconf_answer_release(&a);
	strbuf_release(&sb);
	strbuf_release(&why);
	strbuf_release(&node);
}

void gpu_expect_files(const struct fsroot *root, struct strlist *out)
{
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT, path = STRBUF_INIT;
	struct gresconf_answer a;
	gresconf_answer_init(&a);
	for (size_t i = 0; i < ARRAY_SIZE(slurm_conf_paths); i++) {
		if (read_conf(root, slurm_conf_paths[i], &sb, &why) != READ_OK)
			continue;
		char dir[128];
		strlcpy_v(dir, slurm_conf_paths[i], sizeof(dir));
		*strrchr(dir, '/') = '\0';
		strlist_add(out, slurm_conf_paths[i]);
		/* no node matches "": the walk only collects the Includes */
		slurmconf_node_gpus(sb.buf, sb.len, "", &a, NULL);
		for (size_t k = 0; k < a.includes.nr; k++) {
			strbuf_reset(&path);
			if (a.includes.items[k][0] != '/')
				strbuf_addf(&path, "%s/", dir);
			strbuf_addstr(&path, a.includes.items[k]);
			if (!strpbrk(path.buf, "*?["))
				strlist_add(out, path.buf);
		}
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/gres.conf", dir);
		strlist_add(out, path.buf);
		break;
	}
	gresconf_answer_release(&a);
	strbuf_release(&sb);
	strbuf_release(&why);
	strbuf_release(&path);
}

bool gpu_expect_count(const struct gpu_expect *e, bool count_set, uint64_t count, uint64_t *out,
		      const char **from)
{
	if (count_set) {
		*out = count;
		*from = "gpu.count";
		return true;
	}
	if (e->state == GPU_EXPECT_SLURM) {
		*out = e->count;
		*from = e->source;
		return true;
	}
	return false;
}

void gpu_expect_report(const struct gpu_expect *e, bool count_set, size_t seen,
		       struct check_result *res)
{
	if (count_set || e->state != GPU_EXPECT_UNKNOWN)
		return;
	/* With GPUs in view their count is still judged (NVML against the bus); with none, this
	 * may be a GPU node whose GPUs are all gone: not "no GPU here". */
	struct finding *f = result_add(res, seen ? STATUS_WARN : STATUS_UNKNOWN, ACTION_INVESTIGATE,
				       "expected_count", NULL, "%s", e->why);
	finding_detail(f, "expected", "unknown");
}
