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

#include <ctype.h>
#include <math.h>

#define CPU_DIR "/sys/devices/system/cpu"

/* ---- gather ---- */

static size_t count_nvswitches(struct strbuf *err)
{
	struct strlist bdfs = STRLIST_INIT;
	size_t n = 0;
	if (pci_list(&bdfs, err) == 0) {
		for (size_t i = 0; i < bdfs.nr; i++) {
			uint32_t vendor, cls;
			if (pci_read_id(bdfs.items[i], &vendor, &cls, NULL) == 0 &&
			    pci_classify(vendor, cls) == PCI_KIND_NVSWITCH)
				n++;
		}
	}
	strlist_release(&bdfs);
	return n;
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
static void find_fabricmanager(struct system_readings *r)
{
	struct strlist pids = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT, comm = STRBUF_INIT;
	if (fsroot_list("/proc", &pids, NULL) != 0)
		goto out;
	r->proc_listed = true;
	for (size_t i = 0; i < pids.nr && !r->fabricmanager; i++) {
		if (!all_digits(pids.items[i]))
			continue;
		strbuf_reset(&path);
		strbuf_addf(&path, "/proc/%s/comm", pids.items[i]);
		/* a process that ended since the listing reads as missing: skip it */
		if (fsroot_read_attr(path.buf, &comm, NULL) == READ_OK &&
		    starts_with(comm.buf, SYSTEM_FM_COMM))
			r->fabricmanager = true;
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
	if (r->nr_governors < ARRAY_SIZE(r->governors)) {
		struct system_governor *g = &r->governors[r->nr_governors++];
		strlcpy_v(g->name, name, sizeof(g->name));
		g->cpus = 1;
	}
}

static void read_cpus(struct system_readings *r)
{
	struct strlist names = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT, v = STRBUF_INIT;
	if (fsroot_list(CPU_DIR, &names, NULL) != 0)
		goto out;
	for (size_t i = 0; i < names.nr; i++) {
		const char *rest;
		if (!skip_prefix(names.items[i], "cpu", &rest) || !all_digits(rest))
			continue;
		r->cpus++;
		strbuf_reset(&path);
		strbuf_addf(&path, CPU_DIR "/%s/cpufreq/scaling_governor", names.items[i]);
		if (fsroot_read_attr(path.buf, &v, NULL) != READ_OK)
			continue;
		r->cpufreq++;
		add_governor(r, v.buf);
		uint64_t cur, max;
		strbuf_reset(&path);
		strbuf_addf(&path, CPU_DIR "/%s/cpufreq/scaling_cur_freq", names.items[i]);
		if (fsroot_read_u64(path.buf, &cur, NULL) != 0)
			continue;
		strbuf_reset(&path);
		strbuf_addf(&path, CPU_DIR "/%s/cpufreq/cpuinfo_max_freq", names.items[i]);
		if (fsroot_read_u64(path.buf, &max, NULL) != 0 || !max)
			continue;
		ALLOC_GROW(r->freq_ratio, r->nr_freq + 1, r->alloc_freq);
		r->freq_ratio[r->nr_freq++] = (double)cur / (double)max;
	}
out:
	strlist_release(&names);
	strbuf_release(&path);
	strbuf_release(&v);
}

void system_parse_meminfo(struct system_readings *r, const char *text)
{
	const char *p;
	unsigned long long v;
	if ((p = strstr(text, "MemTotal:")) && sscanf(p + 9, "%llu", &v) == 1)
		r->mem_total_kb = v;
	if ((p = strstr(text, "MemAvailable:")) && sscanf(p + 13, "%llu", &v) == 1)
		r->mem_avail_kb = v;
	r->meminfo_read = r->mem_total_kb > 0;
}

void system_parse_swaps(struct system_readings *r, const char *text)
{
	struct strlist lines = STRLIST_INIT;
	strlist_split(&lines, text, "\n");
	r->swaps_read = true;
	/* "Filename Type Size Used Priority" header, then one line per swap area (size in KiB) */
	for (size_t i = 1; i < lines.nr; i++) {
		char name[128];
		unsigned long long size;
		if (sscanf(lines.items[i], "%127s %*s %llu", name, &size) != 2)
			continue;
		if (!r->swap_devices++)
			strlcpy_v(r->swap_first, name, sizeof(r->swap_first));
		r->swap_kb += size;
	}
	strlist_release(&lines);
}

int system_gather(struct system_readings *r, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	static const char *const modules[] = { "nvidia_peermem", "nv_peer_mem" };
	UNUSED(err);
	for (size_t i = 0; i < ARRAY_SIZE(modules) && !r->peermem; i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "/sys/module/%s", modules[i]);
		if (fsroot_exists(p.buf)) {
			r->peermem = true;
			strlcpy_v(r->peermem_module, modules[i], sizeof(r->peermem_module));
		}
		strbuf_release(&p);
	}
	r->nvswitches = count_nvswitches(NULL);
	if (r->nvswitches)
		find_fabricmanager(r);
	read_cpus(r);
	if (fsroot_read("/proc/swaps", &text, 1 << 20, NULL) == READ_OK)
		system_parse_swaps(r, text.buf);
	strbuf_reset(&text);
	if (fsroot_read("/proc/meminfo", &text, 1 << 20, NULL) == READ_OK)
		system_parse_meminfo(r, text.buf);
	strbuf_release(&text);
	return 0;
}

void system_readings_release(struct system_readings *r)
{
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

static void eval_cpus(const struct system_readings *r, const struct system_options *opt,
		      struct check_result *res, struct strbuf *ok, struct strbuf *notes)
{
	struct finding *f;
	if (!r->cpufreq) {
		part(ok, "no cpufreq (VM?)");
		return;
	}
	size_t off = 0;
	const struct system_governor *worst = NULL;
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
			       r->cpufreq, worst->name, opt->governor);
		finding_detail_num(f, "cpus", (double)off);
		finding_detail(f, "expected", "%s", opt->governor);
	} else if (r->nr_governors == 1) {
		part(ok, "%zu CPUs on the %s governor", r->cpufreq, r->governors[0].name);
	} else {
		part(ok, "%zu CPUs with cpufreq", r->cpufreq);
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

void system_evaluate(const struct system_readings *r, const struct system_options *opt,
		     struct check_result *res)
{
	struct strbuf ok = STRBUF_INIT, median = STRBUF_INIT, missing = STRBUF_INIT;
	struct finding *f;
	if (r->peermem)
		part(&ok, "%s loaded", r->peermem_module);
	else if (opt->peermem_required)
		finding_detail(result_add(res, STATUS_FAIL, ACTION_LOAD_MODULE, "peermem",
					  "nvidia_peermem",
					  "nvidia_peermem not loaded: GPUDirect RDMA is off"),
			       "fix", "modprobe nvidia_peermem");
	else
		part(&ok, "nvidia_peermem not loaded (optional)");

	if (r->nvswitches && !r->proc_listed) {
		result_add(res, STATUS_UNKNOWN, ACTION_NONE, "fabricmanager", "nvidia-fabricmanager",
			   "cannot list /proc to look for nvidia-fabricmanager (%zu NVSwitches)",
			   r->nvswitches);
	} else if (r->nvswitches && !r->fabricmanager) {
		f = result_add(res, STATUS_FAIL, ACTION_START_SERVICE, "fabricmanager",
			       "nvidia-fabricmanager",
			       "nvidia-fabricmanager not running (%zu NVSwitch%s): GPUs get no "
			       "NVLink",
			       r->nvswitches, r->nvswitches == 1 ? "" : "es");
		finding_detail_num(f, "nvswitches", (double)r->nvswitches);
	} else if (r->nvswitches) {
		part(&ok, "fabric manager running for %zu NVSwitch%s", r->nvswitches,
		     r->nvswitches == 1 ? "" : "es");
	}

	eval_cpus(r, opt, res, &ok, &median);

	if (!r->swaps_read) {
		part(&missing, "/proc/swaps");
	} else if (!r->swap_devices) {
		part(&ok, "no swap");
	} else if (opt->swap == SWAP_ALLOWED) {
		part(&ok, "swap on (allowed)");
	} else {
		f = result_add(res, opt->swap == SWAP_FAIL ? STATUS_FAIL : STATUS_WARN,
			       ACTION_FIX_CONFIG, "swap", "swap",
			       "swap is on (%s%s, %.1f GiB): a host that swaps stalls its job",
			       r->swap_first, r->swap_devices > 1 ? " and more" : "",
			       (double)r->swap_kb / (1024.0 * 1024.0));
		finding_detail_num(f, "swap_devices", (double)r->swap_devices);
		finding_detail_num(f, "swap_kib", (double)r->swap_kb);
		finding_detail(f, "fix", "swapoff -a, and remove it from /etc/fstab");
	}

	if (!r->meminfo_read) {
		part(&missing, "/proc/meminfo");
	} else {
		double pct = 100.0 * (double)r->mem_avail_kb / (double)r->mem_total_kb;
		double gib = 1024.0 * 1024.0;
		if (opt->min_available > 0 && pct < opt->min_available) {
			f = result_add(res, pct < opt->min_available / 2 ? STATUS_FAIL : STATUS_WARN,
				       ACTION_INVESTIGATE, "memory", "memory",
				       "only %.1f %% of memory available (%.1f of %.0f GiB)", pct,
				       (double)r->mem_avail_kb / gib, (double)r->mem_total_kb / gib);
			finding_detail_num(f, "available_percent", floor(pct * 10) / 10);
			finding_detail_num(f, "min_available_percent", opt->min_available);
		} else {
			part(&ok, "%.0f %% of %.0f GiB memory available", pct,
			     (double)r->mem_total_kb / gib);
		}
	}

	f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "", "%s",
		       ok.len ? ok.buf : "nothing else to report");
	finding_detail_num(f, "nvswitches", (double)r->nvswitches);
	finding_detail_num(f, "cpus", (double)r->cpus);
	if (median.len)
		finding_detail(f, "median_cpu_freq_ratio", "%s", median.buf);
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
	if (system_gather(&r, err) < 0)
		goto out;
	system_evaluate(&r, &opt, res);
	ret = 0;
out:
	system_readings_release(&r);
	return ret;
}
