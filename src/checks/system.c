/*
 * system.c: the 'system' check: what around the GPUs makes a host train slowly or not at all.
 *
 *   - GPUDirect RDMA: without nvidia_peermem NCCL stages every transfer through host memory (a
 *     flat ~30 % MFU); system.peermem = required makes its absence a failure;
 *   - NVSwitch hosts (HGX): without nvidia-fabricmanager the GPUs cannot use NVLink at all;
 *   - CPU frequency governor other than performance: data loaders and NCCL proxy threads slow;
 *     a low current frequency at idle is normal and only reported;
 *   - swap on (a host that swaps stalls its job), and little available memory.
 *
 * Files that a VM or a fixture lacks (cpufreq, /proc/swaps, /proc/meminfo) are left unjudged and
 * said so in the summary; they are always there on a real host.
 */
#include "system.h"
#include "../sys/fsroot.h"
#include "../sys/pci.h"
#include "../sys/sysattr.h"

#include <ctype.h>
#include <math.h>

#define CPU_DIR "/sys/devices/system/cpu"

/* ---- gather ---- */

static void keep(char *buf, size_t n, const struct strbuf *err)
{
	if (!buf[0])
		strlcpy_v(buf, err->len ? err->buf : "unreadable", n);
}

static void count_nvswitches(const struct fsroot *root, struct system_readings *r)
{
	struct pci_dev *devs = NULL;
	size_t nr = 0, alloc = 0, unknown = 0;
	struct strbuf err = STRBUF_INIT;
	if (pci_find(root, PCI_MASK(PCI_KIND_NVSWITCH), false, &devs, &nr, &alloc, &err) < 0)
		keep(r->nvswitch_error, sizeof(r->nvswitch_error), &err);
	for (size_t i = 0; i < nr; i++) {
		if (devs[i].id_error[0]) {
			if (!unknown++)
				strlcpy_v(r->nvswitch_error, devs[i].id_error,
					  sizeof(r->nvswitch_error));
		} else {
			r->nvswitches++;
		}
	}
	free(devs);
	strbuf_release(&err);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Is a process whose comm starts with SYSTEM_FM_COMM running? */
static void find_fabricmanager(const struct fsroot *root, struct system_readings *r)
{
	struct strlist pids = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT, comm = STRBUF_INIT;
	if (fsroot_list(root, "/proc", &pids, NULL) != 0)
		goto out;
	r->proc_listed = true;
	for (size_t i = 0; i < pids.nr && !r->fabricmanager; i++) {
		if (!all_digits(pids.items[i]))
			continue;
		strbuf_reset(&path);
		strbuf_addf(&path, "/proc/%s/comm", pids.items[i]);
		/* a process that ended since the listing reads as missing: skip it */
		int cr = sysattr_read(root, path.buf, &comm, NULL);
		if (cr == READ_OK && starts_with(comm.buf, SYSTEM_FM_COMM))
			r->fabricmanager = true;
		else if (cr < 0)
			r->proc_unreadable++;
	}
out:
	strlist_release(&pids);
	strbuf_release(&path);
	strbuf_release(&comm);
}

static void add_governor(struct system_readings *r, const char *name)
{
	for (size_t i = 0; i < r->nr_governors; i++) {
		if (!strcmp(r->governors[i].name, name)) {
			r->governors[i].cpus++;
			return;
		}
	}
	/* grows: a fixed table would drop the CPUs of every governor past its end unsaid */
	ALLOC_GROW(r->governors, r->nr_governors + 1, r->alloc_governors);
	struct system_governor *g = &r->governors[r->nr_governors++];
	strlcpy_v(g->name, name, sizeof(g->name));
	g->cpus = 1;
}

/* One CPU's scaling_cur_freq / cpuinfo_max_freq; a missing file leaves the CPU out. */
static void read_freq(const struct fsroot *root, struct system_readings *r, const char *cpu)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	uint64_t cur = 0, max = 0;
	int fr;
	strbuf_addf(&path, CPU_DIR "/%s/cpufreq/scaling_cur_freq", cpu);
	fr = sysattr_read_u64(root, path.buf, &cur, &err);
	if (fr == READ_OK) {
		strbuf_reset(&path);
		strbuf_addf(&path, CPU_DIR "/%s/cpufreq/cpuinfo_max_freq", cpu);
		fr = sysattr_read_u64(root, path.buf, &max, &err);
		if (fr == READ_OK && !max)
			fr = error_set(&err, "'%s' holds 0", path.buf);
	}
	if (fr == READ_OK) {
		ALLOC_GROW(r->freq_ratio, r->nr_freq + 1, r->alloc_freq);
		r->freq_ratio[r->nr_freq++] = (double)cur / (double)max;
	} else if (fr < 0) {
		if (!r->freq_unreadable++)
			keep(r->freq_error, sizeof(r->freq_error), &err);
	}
	strbuf_release(&path);
	strbuf_release(&err);
}

static void read_cpus(const struct fsroot *root, struct system_readings *r)
{
	struct strlist names = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT, v = STRBUF_INIT, err = STRBUF_INIT;
	if (fsroot_list(root, CPU_DIR, &names, &err) < 0) {
		keep(r->cpu_error, sizeof(r->cpu_error), &err);
		goto out;
	}
	for (size_t i = 0; i < names.nr; i++) {
		const char *rest;
		if (!skip_prefix(names.items[i], "cpu", &rest) || !all_digits(rest))
			continue;
		r->cpus++;
		strbuf_reset(&path);
		strbuf_addf(&path, CPU_DIR "/%s/cpufreq/scaling_governor", names.items[i]);
		int gr = sysattr_read(root, path.buf, &v, &err);
		if (gr == READ_MISSING)
			continue; /* no cpufreq for this CPU (a VM, an offline CPU) */
		if (gr < 0) {
			if (!r->governor_unreadable++)
				keep(r->governor_error, sizeof(r->governor_error), &err);
			continue;
		}
		r->cpufreq++;
		add_governor(r, v.buf);
		read_freq(root, r, names.items[i]);
	}
out:
	strlist_release(&names);
	strbuf_release(&path);
	strbuf_release(&v);
	strbuf_release(&err);
}

/* A "Key:   1234 kB" line's number; false when the key is absent or its value is junk. */
static bool meminfo_value(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len > klen && !strncmp(line, key, klen) && line[klen] == ':') {
			char buf[64];
			const char *v = line + klen + 1;
			size_t vlen = len - klen - 1;
			while (vlen && *v == ' ') {
				v++;
				vlen--;
			}
			if (vlen >= 3 && !strncmp(v + vlen - 3, " kB", 3))
				vlen -= 3;
			if (!vlen || vlen >= sizeof(buf))
				return false;
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			return parse_u64(buf, out) && buf[0] >= '0' && buf[0] <= '9';
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

void system_parse_meminfo(struct system_readings *r, const char *text)
{
	uint64_t total = 0, avail = 0;
	r->meminfo_read = false;
	if (!meminfo_value(text, "MemTotal", &total) || !total)
		snprintf(r->meminfo_error, sizeof(r->meminfo_error),
			 "'/proc/meminfo' has no MemTotal line with a size");
	else if (!meminfo_value(text, "MemAvailable", &avail) || avail > total)
		/* before Linux 3.14 there is none; MemFree alone would call page cache used */
		snprintf(r->meminfo_error, sizeof(r->meminfo_error),
			 "'/proc/meminfo' has no MemAvailable line with a size up to MemTotal");
	else {
		r->mem_total_kb = total;
		r->mem_avail_kb = avail;
		r->meminfo_read = true;
		r->meminfo_error[0] = '\0';
	}
}

void system_parse_swaps(struct system_readings *r, const char *text)
{
	struct strlist lines = STRLIST_INIT;
	struct strbuf q = STRBUF_INIT;
	strlist_split(&lines, text, "\n");
	r->swaps_read = false;
	r->swap_devices = 0;
	r->swap_kb = 0;
	r->swap_first[0] = '\0';
	/* "Filename Type Size Used Priority" header, then one line per swap area (size in KiB) */
	if (!lines.nr || !starts_with(lines.items[0], "Filename")) {
		strbuf_add_excerpt(&q, lines.nr ? lines.items[0] : "", SYSATTR_EXCERPT);
		snprintf(r->swaps_error, sizeof(r->swaps_error),
			 "'/proc/swaps' does not start with its header line ('%s')", q.buf);
		goto out;
	}
	for (size_t i = 1; i < lines.nr; i++) {
		char name[4096], type[32], tail;
		unsigned long long size, used;
		int prio;
		if (!lines.items[i][0])
			continue;
		if (sscanf(lines.items[i], "%4095s %31s %llu %llu %d %c", name, type, &size, &used,
			   &prio, &tail) != 5) {
			strbuf_add_excerpt(&q, lines.items[i], SYSATTR_EXCERPT);
			snprintf(r->swaps_error, sizeof(r->swaps_error),
				 "'/proc/swaps' line %zu is not a swap area ('%s')", i + 1, q.buf);
			r->swap_devices = 0;
			r->swap_kb = 0;
			goto out;
		}
		if (!r->swap_devices++)
			strlcpy_v(r->swap_first, name, sizeof(r->swap_first));
		r->swap_kb += size;
	}
	r->swaps_read = true;
	r->swaps_error[0] = '\0';
out:
	strlist_release(&lines);
	strbuf_release(&q);
}

/* A whole /proc file: its text, or "" with *error_out saying why (left "" when it is missing). */
static bool read_proc(const struct fsroot *root, const char *path, struct strbuf *text,
		      char *error_out, size_t n)
{
	struct strbuf err = STRBUF_INIT;
	int r = sysattr_read_file(root, path, text, 1 << 20, &err);
	if (r < 0)
		keep(error_out, n, &err);
	strbuf_release(&err);
	return r == READ_OK;
}

int system_gather(const struct fsroot *root, struct system_readings *r, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, eerr = STRBUF_INIT;
	static const char *const modules[] = { "nvidia_peermem", "nv_peer_mem" };
	UNUSED(err);
	for (size_t i = 0; i < ARRAY_SIZE(modules) && !r->peermem; i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "/sys/module/%s", modules[i]);
		int er = sysattr_dir_exists(root, p.buf, &eerr);
		if (er > 0) {
			r->peermem = true;
			strlcpy_v(r->peermem_module, modules[i], sizeof(r->peermem_module));
		} else if (er < 0) {
			keep(r->peermem_error, sizeof(r->peermem_error), &eerr);
		}
		strbuf_release(&p);
	}
	if (r->peermem)
		r->peermem_error[0] = '\0';
	count_nvswitches(root, r);
	/* an unsure count looks for the fabric manager too: found, it settles the question */
	if (r->nvswitches || r->nvswitch_error[0])
		find_fabricmanager(root, r);
	read_cpus(root, r);
	if (read_proc(root, "/proc/swaps", &text, r->swaps_error, sizeof(r->swaps_error)))
		system_parse_swaps(r, text.buf);
	if (read_proc(root, "/proc/meminfo", &text, r->meminfo_error, sizeof(r->meminfo_error)))
		system_parse_meminfo(r, text.buf);
	strbuf_release(&text);
	strbuf_release(&eerr);
	return 0;
}

void system_readings_release(struct system_readings *r)
{
	free(r->governors);
	free(r->freq_ratio);
	memset(r, 0, sizeof(*r));
}

/* ---- evaluate ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void part(struct strbuf *sb, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void part(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	if (sb->len)
		strbuf_addstr(sb, "; ");
	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

/* Text from the host, for a message: a short clean excerpt in q. */
static const char *quote(struct strbuf *q, const char *s)
{
	strbuf_reset(q);
	strbuf_add_excerpt(q, s, 40);
	return q->buf;
}

static void eval_governors(const struct system_readings *r, const struct system_options *opt,
			   struct check_result *res, struct strbuf *ok)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f;
	size_t off = 0;
	const struct system_governor *worst = NULL;
	if (r->governor_unreadable && opt->governor[0]) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "governor", "CPU",
			       "cannot read the frequency governor of %zu CPU%s: %s",
			       r->governor_unreadable, r->governor_unreadable == 1 ? "" : "s",
			       r->governor_error);
		finding_detail_num(f, "cpus", (double)r->governor_unreadable);
	}
	if (!r->cpufreq) {
		if (!r->governor_unreadable)
			part(ok, "no cpufreq (VM?)");
		goto out;
	}
	for (size_t i = 0; i < r->nr_governors; i++) {
		const struct system_governor *g = &r->governors[i];
		if (opt->governor[0] && strcmp(g->name, opt->governor)) {
			off += g->cpus;
			if (!worst || g->cpus > worst->cpus)
				worst = g;
		}
	}
	if (off) {
		f = result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "governor", "CPU",
			       "%zu of %zu CPUs use the '%s' frequency governor, not '%s'", off,
			       r->cpufreq, quote(&q, worst->name), opt->governor);
		finding_detail_num(f, "cpus", (double)off);
		finding_detail(f, "expected", "%s", opt->governor);
	} else if (r->nr_governors == 1) {
		part(ok, "%zu CPUs on the %s governor", r->cpufreq,
		     quote(&q, r->governors[0].name));
	} else {
		part(ok, "%zu CPUs with cpufreq", r->cpufreq);
	}
out:
	strbuf_release(&q);
}

static void eval_cpus(const struct system_readings *r, const struct system_options *opt,
		      struct check_result *res, struct strbuf *ok, struct strbuf *notes)
{
	struct finding *f;
	if (r->cpu_error[0]) {
		if (opt->governor[0] || opt->min_freq_ratio > 0)
			result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "cpus", "CPU",
				   "cannot list the CPUs: %s", r->cpu_error);
		return;
	}
	eval_governors(r, opt, res, ok);
	if (r->freq_unreadable && opt->min_freq_ratio > 0) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "cpu_freq", "CPU",
			       "cannot read the frequency of %zu CPU%s: %s", r->freq_unreadable,
			       r->freq_unreadable == 1 ? "" : "s", r->freq_error);
		finding_detail_num(f, "cpus", (double)r->freq_unreadable);
	}
	if (!r->nr_freq)
		return;
	double *sorted = xmalloc(r->nr_freq * sizeof(*sorted));
	memcpy(sorted, r->freq_ratio, r->nr_freq * sizeof(*sorted));
	qsort(sorted, r->nr_freq, sizeof(*sorted), cmp_double);
	double median = sorted[r->nr_freq / 2];
	free(sorted);
	strbuf_addf(notes, "%.2f", median);
	if (opt->min_freq_ratio > 0) {
		size_t below = 0;
		for (size_t i = 0; i < r->nr_freq; i++)
			below += r->freq_ratio[i] < opt->min_freq_ratio;
		/* most CPUs, not a few idle ones, and only when asked: at idle they clock down */
		if (below * 2 > r->nr_freq) {
			f = result_add(res, STATUS_WARN, ACTION_INVESTIGATE, "cpu_freq", "CPU",
				       "%zu of %zu CPUs below %g of their top frequency (median %.2f)",
				       below, r->nr_freq, opt->min_freq_ratio, median);
			finding_detail_num(f, "median_ratio", median);
		}
	}
}

static void eval_peermem(const struct system_readings *r, const struct system_options *opt,
			 struct check_result *res, struct strbuf *ok)
{
	if (r->peermem) {
		part(ok, "%s loaded", r->peermem_module);
	} else if (r->peermem_error[0] && opt->peermem_required) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "peermem", "nvidia_peermem",
			   "cannot tell whether nvidia_peermem is loaded: %s", r->peermem_error);
	} else if (r->peermem_error[0]) {
		part(ok, "nvidia_peermem: cannot tell (optional)");
	} else if (opt->peermem_required) {
		finding_detail(result_add(res, STATUS_FAIL, ACTION_LOAD_MODULE, "peermem",
					  "nvidia_peermem",
					  "nvidia_peermem not loaded: GPUDirect RDMA is off"),
			       "fix", "modprobe nvidia_peermem");
	} else {
		part(ok, "nvidia_peermem not loaded (optional)");
	}
}

static void eval_fabricmanager(const struct system_readings *r, struct check_result *res,
			       struct strbuf *ok)
{
	struct finding *f;
	if (!r->nvswitches && !r->nvswitch_error[0])
		return;
	if (r->proc_listed && r->fabricmanager) {
		if (r->nvswitches)
			part(ok, "fabric manager running for %zu NVSwitch%s", r->nvswitches,
			     r->nvswitches == 1 ? "" : "es");
		else
			part(ok, "fabric manager running");
	} else if (!r->proc_listed) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "fabricmanager",
			   "nvidia-fabricmanager", "cannot list /proc to look for nvidia-fabricmanager (%zu NVSwitches)",
			   r->nvswitches);
	} else if (r->nvswitches) {
		f = result_add(res, STATUS_FAIL, ACTION_START_SERVICE, "fabricmanager",
			       "nvidia-fabricmanager",
			       "nvidia-fabricmanager not running (%zu NVSwitch%s): GPUs get no "
			       "NVLink",
			       r->nvswitches, r->nvswitches == 1 ? "" : "es");
		finding_detail_num(f, "nvswitches", (double)r->nvswitches);
		if (r->proc_unreadable)
			finding_detail_num(f, "processes_unreadable", (double)r->proc_unreadable);
	} else {
		/* no NVSwitch seen, but not every PCI device could be told: one may be there */
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "nvswitches",
			       "nvidia-fabricmanager",
			       "cannot tell whether this host has NVSwitches (and so needs "
			       "nvidia-fabricmanager): %s",
			       r->nvswitch_error);
		finding_detail(f, "error", "%s", r->nvswitch_error);
	}
}

static void eval_swap(const struct system_readings *r, const struct system_options *opt,
		      struct check_result *res, struct strbuf *ok, struct strbuf *missing)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f;
	if (!r->swaps_read && opt->swap == SWAP_ALLOWED) {
		part(ok, "swap allowed");
	} else if (!r->swaps_read && r->swaps_error[0]) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "swap", "swap",
			   "cannot tell whether swap is on: %s", r->swaps_error);
	} else if (!r->swaps_read) {
		part(missing, "/proc/swaps");
	} else if (!r->swap_devices) {
		part(ok, "no swap");
	} else if (opt->swap == SWAP_ALLOWED) {
		part(ok, "swap on (allowed)");
	} else {
		f = result_add(res, opt->swap == SWAP_FAIL ? STATUS_FAIL : STATUS_WARN,
			       ACTION_FIX_CONFIG, "swap", "swap",
			       "swap is on (%s%s, %.1f GiB): a host that swaps stalls its job",
			       quote(&q, r->swap_first), r->swap_devices > 1 ? " and more" : "",
			       (double)r->swap_kb / (1024.0 * 1024.0));
		finding_detail_num(f, "swap_devices", (double)r->swap_devices);
		finding_detail_num(f, "swap_kib", (double)r->swap_kb);
		finding_detail(f, "fix", "swapoff -a, and remove it from /etc/fstab");
	}
	strbuf_release(&q);
}

static void eval_memory(const struct system_readings *r, const struct system_options *opt,
			struct check_result *res, struct strbuf *ok, struct strbuf *missing)
{
	struct finding *f;
	double gib = 1024.0 * 1024.0;
	if (!r->meminfo_read && r->meminfo_error[0] && opt->min_available > 0) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "memory", "memory",
			   "cannot tell how much memory is available: %s", r->meminfo_error);
		return;
	}
	if (!r->meminfo_read) {
		part(missing, "/proc/meminfo");
		return;
	}
	double pct = 100.0 * (double)r->mem_avail_kb / (double)r->mem_total_kb;
	if (opt->min_available > 0 && pct < opt->min_available) {
		f = result_add(res, pct < opt->min_available / 2 ? STATUS_FAIL : STATUS_WARN,
			       ACTION_INVESTIGATE, "memory", "memory",
			       "only %.1f %% of memory available (%.1f of %.0f GiB)", pct,
			       (double)r->mem_avail_kb / gib, (double)r->mem_total_kb / gib);
		finding_detail_num(f, "available_percent", floor(pct * 10) / 10);
		finding_detail_num(f, "min_available_percent", opt->min_available);
	} else {
		part(ok, "%.0f %% of %.0f GiB memory available", pct,
		     (double)r->mem_total_kb / gib);
	}
}

void system_evaluate(const struct system_readings *r, const struct system_options *opt,
		     struct check_result *res)
{
	struct strbuf ok = STRBUF_INIT, median = STRBUF_INIT, missing = STRBUF_INIT;
	eval_peermem(r, opt, res, &ok);
	eval_fabricmanager(r, res, &ok);
	eval_cpus(r, opt, res, &ok, &median);
	eval_swap(r, opt, res, &ok, &missing);
	eval_memory(r, opt, res, &ok, &missing);
	if (missing.len) {
		/* what was not there to read is said where a person reads, not only in details */
		struct strbuf list = STRBUF_INIT;
		for (const char *p = missing.buf; *p; p++)
			if (p[0] == ';' && p[1] == ' ')
				strbuf_addch(&list, ',');
			else
				strbuf_addch(&list, *p);
		part(&ok, "not read (absent): %s", list.buf);
		strbuf_release(&list);
	}

	struct finding *f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "", "%s",
				       ok.len ? ok.buf : "nothing else to report");
	finding_detail_num(f, "nvswitches", (double)r->nvswitches);
	finding_detail_num(f, "cpus", (double)r->cpus);
	if (median.len)
		finding_detail(f, "median_cpu_freq_ratio", "%s", median.buf);
	if (r->freq_unreadable)
		finding_detail_num(f, "cpu_freq_unreadable", (double)r->freq_unreadable);
	if (missing.len)
		finding_detail(f, "not_read", "%s", missing.buf);
	strbuf_release(&ok);
	strbuf_release(&median);
	strbuf_release(&missing);
}

/* ---- options and the check ---- */

static int get_percent(const struct config *cfg, const char *key, double def, double *out,
		       struct strbuf *err)
{
	const char *v = config_get(cfg, "system", key);
	if (!v) {
		*out = def;
		return 0;
	}
	char *s = xstrdup(v);
	size_t n = strlen(s);
	while (n && (s[n - 1] == '%' || s[n - 1] == ' '))
		s[--n] = '\0';
	bool ok = parse_double(s, out) && *out >= 0 && *out <= 100;
	free(s);
	return ok ? 0 : error_set(err, "system.%s wants a percentage, not '%s'", key, v);
}

int system_options_load(const struct config *cfg, struct system_options *opt, struct strbuf *err)
{
	memset(opt, 0, sizeof(*opt));
	const char *v = config_get(cfg, "system", "peermem");
	if (!v || !strcmp(v, "optional"))
		opt->peermem_required = false;
	else if (!strcmp(v, "required"))
		opt->peermem_required = true;
	else
		return error_set(err, "system.peermem wants required or optional, not '%s'", v);

	v = config_get(cfg, "system", "governor");
	if (!v)
		v = "performance";
	if (strlen(v) >= sizeof(opt->governor) || !*v)
		return error_set(err, "system.governor wants a governor name or 'any', not '%s'", v);
	if (strcmp(v, "any"))
		strlcpy_v(opt->governor, v, sizeof(opt->governor));

	if (config_get_double(cfg, "system", "min-freq-ratio", 0, &opt->min_freq_ratio, err) < 0)
		return -1;
	if (!(opt->min_freq_ratio >= 0 && opt->min_freq_ratio <= 1))
		return error_set(err, "system.min-freq-ratio wants a number from 0 to 1, not '%s'",
				 config_get(cfg, "system", "min-freq-ratio"));

	v = config_get(cfg, "system", "swap");
	if (!v || !strcmp(v, "warn"))
		opt->swap = SWAP_WARN;
	else if (!strcmp(v, "allowed"))
		opt->swap = SWAP_ALLOWED;
	else if (!strcmp(v, "fail"))
		opt->swap = SWAP_FAIL;
	else
		return error_set(err, "system.swap wants allowed, warn or fail, not '%s'", v);

	return get_percent(cfg, "min-available", 5, &opt->min_available, err);
}

int check_system_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct system_options opt;
	struct system_readings r;
	int ret = -1;
	memset(&r, 0, sizeof(r));
	if (system_options_load(ctx->cfg, &opt, err) < 0)
		goto out;
	if (system_gather(ctx->root, &r, err) < 0)
		goto out;
	system_evaluate(&r, &opt, res);
	ret = 0;
out:
	system_readings_release(&r);
	return ret;
}
