/*
 * pcie.c: the 'pcie' check. Looks at the PCIe links of NVIDIA GPUs, NVSwitches and NICs
 * (Mellanox or NVIDIA network controllers) in sysfs:
 *
 *   - a link trained to fewer lanes than it has (x8 of x16) halves host-device bandwidth for the
 *     life of the boot: fail, reseat or replace;
 *   - a link below its top speed is normal for an idle GPU (they drop to 2.5 GT/s to save power),
 *     so for GPUs it is only a detail; a NIC below its top speed caps the job's cross-node
 *     bandwidth: fail; an NVSwitch below it: warn;
 *   - AER: any fatal error since boot fails; non-fatal errors rising since the last run warn.
 *   - what cannot be read (a device's vendor or class, a link attribute that is unreadable, empty
 *     or junk, a link the kernel reports as "Unknown" or x63, an AER file without counters) is
 *     unknown for that device, never a width of 0 or "no errors".
 *
 * The last non-fatal AER totals are kept in STATE_DIR/pcie-aer.state, a counter file of
 * src/lib/statefile.h (kind "pcie", "BDF COUNT" lines); one that is not usable is no previous
 * reading, said in a "state" warning, and replaced.
 */
#include "pcie.h"
#include "../sys/fsroot.h"

int pcie_state_parse(struct pcie_readings *r, const char *text, struct strbuf *why)
{
	counter_set_release(&r->prev);
	return statefile_parse(PCIE_STATE_KIND, text, strlen(text), &r->prev, why);
}

/* Only the devices that have a non-fatal AER total: the others have nothing to compare. */
static void readings_set(const struct pcie_readings *r, struct counter_set *set)
{
	for (size_t i = 0; i < r->nr; i++)
		if (r->devs[i].aer_nonfatal.present)
			counter_set_add(set, r->devs[i].bdf, r->devs[i].aer_nonfatal.total);
	/* any rise warns, so each run's reading is the next baseline (none kept for an hour) */
	if (set->nr)
		statefile_stamp(set, r->now, r->boot);
}

void pcie_state_format(const struct pcie_readings *r, struct strbuf *out)
{
	struct counter_set set = COUNTER_SET_INIT;
	readings_set(r, &set);
	statefile_format(PCIE_STATE_KIND, &set, out);
	counter_set_release(&set);
}

static void state_path(const struct check_ctx *ctx, struct strbuf *out)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", ctx->state_dir, PCIE_STATE_FILE);
}

int pcie_gather(const struct check_ctx *ctx, struct pcie_readings *r, struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	int ret = -1;
	unsigned kinds =
		PCI_MASK(PCI_KIND_GPU) | PCI_MASK(PCI_KIND_NVSWITCH) | PCI_MASK(PCI_KIND_NIC);
	if (pci_find(ctx->root, kinds, true, &r->devs, &r->nr, &r->alloc, err) < 0)
		goto out;
	r->now = ctx->now;
	r->boot = -1;
	r->age = -1;
	r->base = BASE_FIRST;
	strbuf_reset(&sb);
	if (fsroot_read(ctx->root, "/proc/stat", &sb, 1 << 16, err) == READ_OK)
		statefile_parse_btime(sb.buf, &r->boot);
	strbuf_reset(err); /* no boot time: boots are told apart by totals that went back */
	if (ctx->state_dir) {
		struct strbuf why = STRBUF_INIT;
		double mtime = -1;
		r->state_dir = true;
		state_path(ctx, &sb);
		counter_set_release(&r->prev);
		int sr = statefile_load(sb.buf, PCIE_STATE_KIND, &r->prev, &mtime, &why);
		r->base = statefile_base(&r->prev, sr == STATEFILE_LOADED, mtime, r->now, r->boot,
					 &r->age);
		r->have_prev = r->base == BASE_OK;
		if (sr == STATEFILE_UNUSABLE)
			strlcpy_v(r->state_error, why.buf, sizeof(r->state_error));
		strbuf_release(&why);
	}
	ret = 0;
out:
	strbuf_release(&sb);
	return ret;
}

/* Text from sysfs, for a message: a short clean excerpt in q. */
static const char *quote(struct strbuf *q, const char *s)
{
	strbuf_reset(q);
	strbuf_add_excerpt(q, s, 40);
	return q->buf;
}

static void link_details(struct finding *f, const struct pci_dev *d)
{
	struct strbuf q = STRBUF_INIT;
	finding_detail(f, "bdf", "%s", d->bdf);
	finding_detail(f, "vendor", "0x%04x", d->vendor);
	if (d->device_read)
		finding_detail(f, "device_id", "0x%04x", d->device);
	finding_detail_num(f, "current_width", d->cur_width);
	finding_detail_num(f, "max_width", d->max_width);
	finding_detail(f, "current_speed", "%s", quote(&q, d->cur_speed));
	finding_detail(f, "max_speed", "%s", quote(&q, d->max_speed));
	strbuf_release(&q);
}

struct pcie_tally {
	size_t kinds[4];    /* links compared, by kind */
	size_t links;       /* links compared */
	size_t bad;         /* devices with a finding worse than ok */
	size_t idle_gpus;   /* GPUs below top speed (normal at idle) */
	size_t no_link, vfs, ignored, aer;
	struct strbuf idle; /* "0000:1b:00.0 2.5/32.0 GT/s, ..." */
};

/*
 * The kernel writes what config space says: a device that answers all-ones (off the bus, or its
 * link down hard) reads as width 63 and speed "Unknown". Widths above x32 do not exist.
 */
static bool link_nonsense(const struct pci_dev *d)
{
	return d->cur_width > 32 || d->max_width > 32 || d->cur_width > d->max_width;
}

static void link_unreadable(const struct pci_dev *d, const char *dev, const char *what,
			    struct check_result *res)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f = result_add(res, STATUS_UNKNOWN, ACTION_INSPECT_HARDWARE,
				       "link_unreadable", dev,
				       "%s PCIe link status unreadable (speed '%s', width x%u of "
				       "x%u): %s",
				       dev, quote(&q, d->cur_speed[0] ? d->cur_speed : "?"),
				       d->cur_width, d->max_width, what);
	link_details(f, d);
	strbuf_release(&q);
}

/* Width and speed of one device's link. Returns true when a problem was reported. */
static bool eval_link(const struct pci_dev *d, const char *dev, struct check_result *res,
		      struct pcie_tally *t)
{
	enum pci_kind kind = pci_classify(d->vendor, d->class_code);
	struct finding *f;
	bool bad = false;
	if (d->is_vf) {
		t->vfs++;
		return false;
	}
	if (!d->has_link) {
		/* GPUs, NVSwitches and NICs are PCIe endpoints: the kernel makes the four link
		 * attributes for every PCIe function, so none at all is a tree that cannot be
		 * judged (or a conventional PCI slot of a VM), never a link left out of the count */
		t->no_link++;
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "link_unreadable", dev,
			       "%s has no PCIe link attributes in sysfs (current_link_speed, "
			       "current_link_width, max_link_*): its link cannot be judged",
			       dev);
		finding_detail(f, "bdf", "%s", d->bdf);
		return true;
	}
	if (d->link_error[0]) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "link_unreadable", dev,
			       "cannot read the PCIe link of %s: %s", dev, d->link_error);
		finding_detail(f, "bdf", "%s", d->bdf);
		finding_detail(f, "error", "%s", d->link_error);
		return true;
	}
	t->links++;
	t->kinds[kind]++;
	if (link_nonsense(d)) {
		link_unreadable(d, dev, "the device may be off the bus", res);
		return true;
	}
	if (!d->max_width) {
		/* a maximum of x0 is config space giving nothing: there is no width to count as
		 * full (x0 of x16 is a link down, the width failure below) */
		link_unreadable(d, dev, "the device reports no maximum width", res);
		return true;
	}
	if (d->cur_width < d->max_width) {
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "link_width", dev,
			       "%s PCIe link at x%u of x%u lanes: reseat or replace", dev,
			       d->cur_width, d->max_width);
		link_details(f, d);
		bad = true;
	}
	if (!d->cur_gts || !d->max_gts) {
		/* "Unknown": the kernel could not read the speed from the device */
		if (!bad)
			link_unreadable(d, dev, "the kernel cannot tell the link speed", res);
		return true;
	}
	if (d->cur_gts + 0.01 < d->max_gts) {
		if (kind == PCI_KIND_GPU) {
			t->idle_gpus++;
			if (t->idle.len)
				strbuf_addstr(&t->idle, ", ");
			strbuf_addf(&t->idle, "%s %g/%g GT/s", d->bdf, d->cur_gts, d->max_gts);
		} else if (kind == PCI_KIND_NIC) {
			/* NICs do not drop speed to save power: a slow link caps every transfer
			 * between this host's GPUs and the network for the whole job */
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "link_speed", dev,
				       "%s PCIe link at %g of %g GT/s caps cross-node bandwidth: "
				       "reseat or replace",
				       dev, d->cur_gts, d->max_gts);
			link_details(f, d);
			bad = true;
		} else {
			f = result_add(res, STATUS_WARN, ACTION_INSPECT_HARDWARE, "link_speed", dev,
				       "%s PCIe link at %g of %g GT/s", dev, d->cur_gts,
				       d->max_gts);
			link_details(f, d);
			bad = true;
		}
	}
	return bad;
}

static bool aer_unreadable(const struct pci_dev *d, const struct pci_aer *a, const char *dev,
			   const char *which, struct check_result *res)
{
	if (!a->error[0])
		return false;
	struct finding *f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "aer_unreadable", dev,
				       "cannot read the %s PCIe error counters of %s: %s", which,
				       dev, a->error);
	finding_detail(f, "bdf", "%s", d->bdf);
	finding_detail(f, "error", "%s", a->error);
	return true;
}

static bool eval_aer(const struct pcie_readings *r, const struct pci_dev *d, const char *dev,
		     struct check_result *res)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f;
	bool bad = false;
	/* correctable errors are read but not judged: links retry them without loss */
	bad |= aer_unreadable(d, &d->aer_fatal, dev, "fatal", res);
	bad |= aer_unreadable(d, &d->aer_nonfatal, dev, "non-fatal", res);
	if (d->aer_fatal.present && d->aer_fatal.total > 0) {
		quote(&q, d->aer_fatal.nonzero);
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "aer_fatal", dev,
			       "%s has had %llu fatal PCIe error%s since boot%s%s%s", dev,
			       (unsigned long long)d->aer_fatal.total,
			       d->aer_fatal.total == 1 ? "" : "s", q.len ? " (" : "", q.buf,
			       q.len ? ")" : "");
		finding_detail(f, "bdf", "%s", d->bdf);
		finding_detail_num(f, "aer_fatal", (double)d->aer_fatal.total);
		bad = true;
	}
	uint64_t before = 0;
	bool have = r->have_prev && counter_set_get(&r->prev, d->bdf, &before);
	if (d->aer_nonfatal.present && have && d->aer_nonfatal.total > before) {
		uint64_t rise = d->aer_nonfatal.total - before;
		struct strbuf rate = STRBUF_INIT;
		rate_format(&rate, rise, r->age);
		quote(&q, d->aer_nonfatal.nonzero);
		f = result_add(res, STATUS_WARN, ACTION_INSPECT_HARDWARE, "aer_nonfatal", dev,
			       "%s: non-fatal PCIe errors %s%s%s", dev, rate.buf,
			       q.len ? "; total " : "", q.buf);
		strbuf_release(&rate);
		finding_detail(f, "bdf", "%s", d->bdf);
		finding_detail_num(f, "delta", (double)rise);
		if (r->age >= 0)
			finding_detail_num(f, "seconds", r->age);
		if (r->age >= 1)
			finding_detail_num(f, "rate_per_hour", rate_per_hour(rise, r->age));
		finding_detail_num(f, "aer_nonfatal", (double)d->aer_nonfatal.total);
		finding_detail_num(f, "aer_nonfatal_before", (double)before);
		bad = true;
	}
	strbuf_release(&q);
	return bad;
}

static void add_kind(struct strbuf *sb, size_t n, const char *one, const char *many)
{
	if (n)
		strbuf_addf(sb, "%s%zu %s", sb->len ? ", " : "", n, n == 1 ? one : many);
}

void pcie_evaluate(const struct pcie_readings *r, const struct pcie_options *opt,
		   struct check_result *res)
{
	struct pcie_tally t;
	struct strbuf dev = STRBUF_INIT, kinds = STRBUF_INIT;
	memset(&t, 0, sizeof(t));
	strbuf_init(&t.idle, 0); /* no cap: a cut list would drop GPUs unsaid */
	for (size_t i = 0; i < r->nr; i++) {
		const struct pci_dev *d = &r->devs[i];
		char bdf[32];
		pci_normalize_bdf(d->bdf, bdf, sizeof(bdf));
		if (opt && strlist_has(&opt->ignore, bdf)) {
			t.ignored++;
			continue;
		}
		strbuf_reset(&dev);
		if (d->id_error[0]) {
			/* it may be a GPU or a NIC: what it is cannot be told, so neither can its
			 * health */
			strbuf_addf(&dev, "PCI device %s", d->bdf);
			struct finding *f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE,
						       "unreadable", dev.buf,
						       "cannot tell what %s is: %s", dev.buf,
						       d->id_error);
			finding_detail(f, "bdf", "%s", d->bdf);
			finding_detail(f, "error", "%s", d->id_error);
			t.bad++;
			continue;
		}
		strbuf_addf(&dev, "%s %s", pci_kind_name(pci_classify(d->vendor, d->class_code)),
			    d->bdf);
		bool bad = eval_link(d, dev.buf, res, &t);
		if (d->aer_fatal.present || d->aer_nonfatal.present)
			t.aer++;
		if (eval_aer(r, d, dev.buf, res))
			bad = true;
		t.bad += bad;
	}
	if (r->nr == t.ignored) {
		struct finding *f = result_add(res, STATUS_SKIPPED, ACTION_NONE, "no_devices", "",
					       "no NVIDIA GPUs, NVSwitches or NICs on the PCI bus");
		if (t.ignored)
			finding_detail_num(f, "ignored", (double)t.ignored);
		goto out;
	}
	add_kind(&kinds, t.kinds[PCI_KIND_GPU], "GPU", "GPUs");
	add_kind(&kinds, t.kinds[PCI_KIND_NVSWITCH], "NVSwitch", "NVSwitches");
	add_kind(&kinds, t.kinds[PCI_KIND_NIC], "NIC", "NICs");
	struct finding *f;
	if (t.bad == r->nr - t.ignored)
		goto out; /* every device has a finding of its own: no summary to add */
	if (!t.links)
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu devices, none with PCIe link attributes to compare",
			       r->nr - t.ignored);
	else if (t.bad)
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu of %zu devices without PCIe problems (%s)",
			       r->nr - t.ignored - t.bad, r->nr - t.ignored, kinds.buf);
	else if (t.idle_gpus)
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu link%s at full width (%s); %zu idle GPU%s below top speed, "
			       "as GPUs do to save power",
			       t.links, t.links == 1 ? "" : "s", kinds.buf, t.idle_gpus,
			       t.idle_gpus == 1 ? "" : "s");
	else
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu link%s at full speed and width (%s)", t.links,
			       t.links == 1 ? "" : "s", kinds.buf);
	finding_detail_num(f, "links", (double)t.links);
	if (t.idle.len)
		finding_detail(f, "gpus_below_top_speed", "%s", t.idle.buf);
	if (t.vfs)
		finding_detail_num(f, "virtual_functions", (double)t.vfs);
	if (t.no_link)
		finding_detail_num(f, "without_link_attributes", (double)t.no_link);
	if (t.ignored)
		finding_detail_num(f, "ignored", (double)t.ignored);
	struct strbuf base = STRBUF_INIT;
	statefile_base_describe(r->base, r->age, &base);
	if (!t.aer)
		finding_detail(f, "aer", "no AER counters (a VM, or AER off)");
	else if (!r->state_dir)
		finding_detail(f, "aer", "fatal errors checked; no state directory, so rises in "
					 "non-fatal errors are not tracked");
	else if (!r->have_prev)
		finding_detail(f, "aer", "fatal errors checked; non-fatal: %s",
			       base.len ? base.buf : "first reading; the next run compares");
	else
		finding_detail(f, "aer", "fatal errors checked; non-fatal compared with the last "
					 "run");
	strbuf_release(&base);
out:
	strbuf_release(&t.idle);
	strbuf_release(&dev);
	strbuf_release(&kinds);
}

int pcie_options_load(const struct config *cfg, struct pcie_options *opt, struct strbuf *err)
{
	const char **vals;
	size_t n = config_get_all(cfg, "pcie", "ignore", &vals);
	struct strlist parts = STRLIST_INIT;
	int ret = 0;
	memset(opt, 0, sizeof(*opt));
	for (size_t i = 0; i < n; i++)
		strlist_split(&parts, vals[i], ", ");
	free(vals);
	for (size_t i = 0; i < parts.nr; i++) {
		char bdf[32];
		const char *s = parts.items[i];
		size_t colons = 0, dots = 0;
		for (const char *c = s; *c; c++) {
			colons += *c == ':';
			dots += *c == '.';
		}
		if (colons < 1 || colons > 2 || dots != 1 || strlen(s) >= sizeof(bdf)) {
			ret = error_set(err, "pcie.ignore: '%s' is not a PCI address like "
					     "0000:1b:00.0", s);
			break;
		}
		pci_normalize_bdf(s, bdf, sizeof(bdf));
		strlist_add(&opt->ignore, bdf);
	}
	strlist_release(&parts);
	return ret;
}

void pcie_options_release(struct pcie_options *opt)
{
	strlist_release(&opt->ignore);
}

void pcie_readings_release(struct pcie_readings *r)
{
	free(r->devs);
	counter_set_release(&r->prev);
	memset(r, 0, sizeof(*r));
}

int check_pcie_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct pcie_readings r;
	struct pcie_options opt;
	struct strbuf path = STRBUF_INIT, werr = STRBUF_INIT;
	int ret = -1;
	memset(&r, 0, sizeof(r));
	if (pcie_options_load(ctx->cfg, &opt, err) < 0)
		goto out_opt;
	if (pcie_gather(ctx, &r, err) < 0)
		goto out;
	pcie_evaluate(&r, &opt, res);
	if (r.state_error[0])
		result_add(res, STATUS_WARN, ACTION_NONE, "state", "",
			   "no previous AER reading: %s%s", r.state_error,
			   r.nr ? " (a new one is kept)" : "");
	if (ctx->state_dir && r.nr) {
		struct counter_set set = COUNTER_SET_INIT;
		readings_set(&r, &set);
		state_path(ctx, &path);
		if (statefile_save(path.buf, PCIE_STATE_KIND, &set, &werr) < 0)
			result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "state", "",
				   "cannot keep the AER reading: %s", werr.buf);
		counter_set_release(&set);
	}
	ret = 0;
out:
	pcie_readings_release(&r);
out_opt:
	pcie_options_release(&opt);
	strbuf_release(&path);
	strbuf_release(&werr);
	return ret;
}
