/*
 * kernel.c: the 'kernel' check (see kernel.h): reads the kernel log, groups its events into one
 * finding per fault (one Xid number on one GPU is one finding, with a count and first/last time)
 * and judges each by the catalog in logs/xid.h:
 *   - sticky faults fail until a reset marker for that GPU or a reboot follows them;
 *   - the others fade: reported at the catalog's status while their last occurrence is within
 *     kernel.window of "now" (and in the current boot), ok afterwards;
 *   - an event whose age cannot be told (no timestamp, another timebase) counts as recent.
 * Configuration, gather and run() are in kernel_gather.c; host hardware errors in kernel_hw.c.
 */
#include "kernel_internal.h"
#include "../logs/xid.h"

#include <math.h>
#include <time.h>

#define MAX_GPUS 512        /* GPUs whose reset markers are followed; past it a fault stays */
#define MAX_NOISE_SHOWN 10  /* findings per noise code (hung task, link, NVRM); the rest counted */
#define MAX_SHOWN 500       /* findings in all; the rest fold into one that keeps their worst */

/* ---- evaluate ---- */



enum age event_age(const struct eval *e, const struct kmsg_event *ev, double *age)
{
	const struct kernel_input *in = e->in;
	if (ev->boot < in->log.boots)
		return AGE_OLD_BOOT;
	if (!in->have_now || ev->tb == KMSG_TB_NONE || ev->tb != in->now_tb)
		return AGE_UNKNOWN;
	*age = in->now - ev->ts;
	if (*age < 0)
		*age = 0;
	return AGE_KNOWN;
}

bool is_recent(const struct eval *e, const struct kmsg_event *ev)
{
	double age = 0;
	enum age a = event_age(e, ev, &age);
	return a == AGE_UNKNOWN || (a == AGE_KNOWN && age <= e->kc->window);
}

static struct gpu_mark *gpu_find(struct eval *e, const char *bdf, bool add)
{
	for (size_t i = 0; i < e->nr_gpus; i++)
		if (!strcmp(e->gpus[i].bdf, bdf))
			return &e->gpus[i];
	if (!add || e->nr_gpus >= MAX_GPUS)
		return NULL;
	ALLOC_GROW(e->gpus, e->nr_gpus + 1, e->alloc_gpus);
	struct gpu_mark *m = &e->gpus[e->nr_gpus++];
	m->bdf = bdf;
	m->uuid = NULL;
	m->clear_idx = -1;
	return m;
}

static bool same_group(const struct kmsg_event *a, const struct kmsg_event *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case KMSG_XID:
		return a->num == b->num && !strcmp(a->bdf, b->bdf) &&
		       (a->num < 144 || a->num > 150 || a->fatal == b->fatal) &&
		       (a->num != 154 || a->recovery == b->recovery) && a->cause == b->cause;
	case KMSG_SXID:
		return a->num == b->num && !strcmp(a->bdf, b->bdf);
	case KMSG_GPU_OFF_BUS:
		return !strcmp(a->bdf, b->bdf);
	case KMSG_PCIE_LIMITED:
		return !strcmp(a->bdf, b->bdf) && !strcmp(a->name, b->name);
	case KMSG_HUNG_TASK:
		return !strcmp(a->name, b->name);
	case KMSG_LINK_DOWN:
		return !strcmp(a->bdf, b->bdf) && !strcmp(a->name, b->name);
	case KMSG_NVRM_UNKNOWN:
		return !strcmp(a->text, b->text);
	case KMSG_EDAC:
		return a->fatal == b->fatal && !strcmp(a->name, b->name) &&
		       !strcmp(a->text, b->text);
	case KMSG_MCE:
		return a->fatal == b->fatal;
	case KMSG_GHES:
		return a->num == b->num && !strcmp(a->name, b->name);
	case KMSG_AER:
		return a->fatal == b->fatal && !strcmp(a->bdf, b->bdf);
	default:
		return true;
	}
}

static bool allowed(const struct kernel_config *kc, const char *text)
{
	for (size_t i = 0; i < kc->allow.nr; i++)
		if (strstr(text, kc->allow.items[i]))
			return true;
	return false;
}

static bool ignored_xid(const struct kernel_config *kc, int num)
{
	for (size_t i = 0; i < kc->nr_ignore_xid; i++)
		if (kc->ignore_xid[i] == num)
			return true;
	return false;
}

/* Does this event make or join a group? Reset markers and boots are noted here too. */
static bool wants_group(struct eval *e, const struct kmsg_event *ev, size_t i)
{
	struct gpu_mark *m;
	switch (ev->kind) {
	case KMSG_BOOT:
		e->last_boot_idx = (long)i;
		return false;
	case KMSG_GPU_INIT:
		if ((m = gpu_find(e, ev->bdf, true))) {
			m->uuid = ev->uuid;
			m->clear_idx = (long)i;
		}
		return false;
	case KMSG_XID:
		if (ignored_xid(e->kc, ev->num)) {
			e->ignored += ev->count;
			return false;
		}
		if (ev->num == 154 && ev->recovery == XID_RECOVERY_NONE) {
			if ((m = gpu_find(e, ev->bdf, true)))
				m->clear_idx = (long)i;
			return false;
		}
		return true;
	case KMSG_NVRM_UNKNOWN:
		if (allowed(e->kc, ev->text))
			return false;
		e->unknown_nvrm += ev->count;
		return e->kc->strict;
	case KMSG_SXID:
	case KMSG_GPU_OFF_BUS:
	case KMSG_OOM_KILL:
	case KMSG_OOM_CGROUP:
	case KMSG_PCIE_LIMITED:
	case KMSG_HUNG_TASK:
	case KMSG_LINK_DOWN:
	case KMSG_EDAC:
	case KMSG_MCE:
	case KMSG_GHES:
	case KMSG_AER:
		return true;
	default:
		return false;
	}
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	while (*s)
		h = mix(h, (unsigned char)*s++);
	return mix(h, 0);
}

/* A hash that agrees with same_group(): equal groups, equal hashes. */
static uint64_t group_hash(const struct kmsg_event *ev)
{
	uint64_t h = mix(0xcbf29ce484222325ULL, (uint64_t)ev->kind);
	switch (ev->kind) {
	case KMSG_XID:
		h = mix(mix_str(h, ev->bdf), (uint64_t)ev->num);
		if (ev->num >= 144 && ev->num <= 150)
			h = mix(h, (uint64_t)(ev->fatal + 1));
		if (ev->num == 154)
			h = mix(h, (uint64_t)(ev->recovery + 1));
		return mix(h, (uint64_t)ev->cause);
	case KMSG_SXID:
		return mix(mix_str(h, ev->bdf), (uint64_t)ev->num);
	case KMSG_GPU_OFF_BUS:
		return mix_str(h, ev->bdf);
	case KMSG_PCIE_LIMITED:
	case KMSG_LINK_DOWN:
		return mix_str(mix_str(h, ev->bdf), ev->name);
	case KMSG_HUNG_TASK:
		return mix_str(h, ev->name);
	case KMSG_NVRM_UNKNOWN:
		return mix_str(h, ev->text);
	case KMSG_EDAC:
		return mix_str(mix_str(mix(h, (uint64_t)ev->fatal), ev->name), ev->text);
	case KMSG_MCE:
		return mix(h, (uint64_t)(ev->fatal + 1));
	case KMSG_GHES:
		return mix_str(mix(h, (uint64_t)(ev->num + 1)), ev->name);
	case KMSG_AER:
		return mix_str(mix(h, (uint64_t)ev->fatal), ev->bdf);
	default:
		return h;
	}
}

/*
 * The group ev belongs to, or NULL with *slot where a new one goes. Hashed: every fault is
 * kept, so a log of thousands of distinct noisy lines must not make this quadratic.
 */
static struct group *group_find(struct eval *e, const struct kmsg_event *ev, uint32_t **slot)
{
	size_t mask = e->nr_slots - 1, i = (size_t)group_hash(ev) & mask;
	for (;; i = (i + 1) & mask) {
		uint32_t v = e->slots[i];
		if (!v) {
			*slot = &e->slots[i];
			return NULL;
		}
		if (same_group(e->g[v - 1].first, ev))
			return &e->g[v - 1];
	}
}

static void build_groups(struct eval *e)
{
	const struct kmsg_log *log = &e->in->log;
	e->nr_slots = 16;
	while (e->nr_slots < 2 * log->nr + 2)
		e->nr_slots *= 2;
	e->slots = xcalloc(e->nr_slots, sizeof(*e->slots));
	for (size_t i = 0; i < log->nr; i++) {
		const struct kmsg_event *ev = &log->ev[i];
		if (!wants_group(e, ev, i))
			continue;
		uint32_t *slot;
		struct group *g = group_find(e, ev, &slot);
		if (!g) {
			*slot = (uint32_t)e->nr_g + 1;
			ALLOC_GROW(e->g, e->nr_g + 1, e->alloc_g);
			g = &e->g[e->nr_g++];
			memset(g, 0, sizeof(*g));
			g->first = ev;
			g->merged = -1;
			g->finding = SIZE_MAX;
		}
		g->last = ev;
		g->last_idx = i;
		g->count += ev->count;
		if (is_recent(e, ev))
			g->recent += ev->count;
	}
}

/* ---- wording ---- */

void add_duration(struct strbuf *sb, double s)
{
	if (s < 120)
		strbuf_addf(sb, "%.0f s", s);
	else if (s < 3600)
		strbuf_addf(sb, "%.0f min", s / 60);
	else if (s < 172800)
		strbuf_addf(sb, "%.3g h", s / 3600);
	else
		strbuf_addf(sb, "%.3g days", s / 86400);
}

void detail_time(struct finding *f, const char *key, const struct kmsg_event *ev)
{
	if (ev->tb == KMSG_TB_MONO) {
		finding_detail(f, key, "%.3f s after boot (line %llu)", ev->ts,
			       (unsigned long long)ev->line);
	} else if (ev->tb == KMSG_TB_WALL && fabs(ev->ts) < 1e12) {
		time_t t = (time_t)floor(ev->ts);
		struct tm tm;
		char buf[64];
		if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
			finding_detail(f, key, "%s (line %llu)", buf, (unsigned long long)ev->line);
	} else {
		finding_detail(f, key, "line %llu", (unsigned long long)ev->line);
	}
}

void gpu_device(struct strbuf *sb, struct eval *e, const char *bdf)
{
	const struct gpu_mark *m = bdf[0] ? gpu_find(e, bdf, false) : NULL;
	if (!bdf[0])
		strbuf_addstr(sb, "GPU (address not logged)");
	else if (m && m->uuid && m->uuid[0])
		strbuf_addf(sb, "GPU %s (%s)", bdf, m->uuid);
	else
		strbuf_addf(sb, "GPU %s", bdf);
}

static const char *gpu_short(const char *bdf)
{
	return bdf[0] ? bdf : "(address not logged)";
}

/* The common details of a group: count, first/last time, age, state. */
void group_details(struct eval *e, struct finding *f, const struct group *g,
			  const char *state)
{
	double age = 0;
	finding_detail_num(f, "count", (double)g->count);
	detail_time(f, "first", g->first);
	detail_time(f, "last", g->last);
	if (event_age(e, g->last, &age) == AGE_KNOWN)
		finding_detail_num(f, "age_s", round(age));
	if (state)
		finding_detail(f, "state", "%s", state);
}

/*
 * The state of a sticky fault (cleared or not) or of a fading one (recent or not), as a phrase
 * for the message, or NULL when it is current.
 */
const char *fault_state(struct eval *e, const struct group *g, bool sticky,
			       struct strbuf *why)
{
	if (sticky) {
		const struct gpu_mark *m = g->last->bdf[0] ? gpu_find(e, g->last->bdf, false) : NULL;
		if (e->last_boot_idx > (long)g->last_idx)
			return "cleared by a reboot";
		if (m && m->clear_idx > (long)g->last_idx)
			return "cleared by a GPU reset or re-initialisation";
		return NULL;
	}
	if (g->recent)
		return NULL;
	double age = 0;
	if (event_age(e, g->last, &age) == AGE_OLD_BOOT)
		return "before the last boot";
	strbuf_addstr(why, "last seen ");
	add_duration(why, age);
	strbuf_addstr(why, " ago");
	return why->buf;
}

void message_tail(struct strbuf *msg, uint64_t count, const char *state,
			 enum action act, enum status st)
{
	if (count > 1)
		strbuf_addf(msg, " (%llu times)", (unsigned long long)count);
	if (state)
		strbuf_addf(msg, " (%s)", state);
	else if (st >= STATUS_WARN && xid_action_text(act)[0])
		strbuf_addf(msg, "; %s", xid_action_text(act));
}

static void eval_xid(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	struct xid_policy pol;
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT, why = STRBUF_INIT;
	/* a cascade that names its cause is judged as the cause: the cause's own line may have
	 * rotated out of the log, and the cleanup is then the only trace of it */
	if (ev->cause > 0)
		xid_classify_cascade(ev->cause, &pol);
	else
		xid_classify(ev->num, ev->fatal, ev->recovery, &pol);
	const char *state = fault_state(e, g, pol.sticky, &why);
	enum status st = state ? STATUS_OK : pol.status;
	if (!pol.sticky && pol.status <= STATUS_OK)
		e->app_xids += g->count;
	gpu_device(&dev, e, ev->bdf);
	if (ev->cause > 0)
		strbuf_addf(&msg, "Xid %d on GPU %s: channels removed after Xid %d (%s)", ev->num,
			    gpu_short(ev->bdf), ev->cause, pol.meaning);
	else
		strbuf_addf(&msg, "Xid %d on GPU %s: %s", ev->num, gpu_short(ev->bdf), pol.meaning);
	if (ev->num == 154 && ev->recovery >= 0)
		strbuf_addf(&msg, " (0x%x)", (unsigned)ev->recovery);
	message_tail(&msg, g->count, state, pol.action, st);
	g->finding = e->res->nr;
	/* an ok finding (app-level, faded, cleared) asks nothing of the host */
	enum action act = st >= STATUS_WARN ? pol.action : ACTION_NONE;
	struct finding *f = result_add(e->res, st, act, "xid", dev.buf, "%s", msg.buf);
	if (!state && pol.status == st)
		f->severity = pol.severity;
	if (act != pol.action && pol.action != ACTION_NONE)
		finding_detail(f, "app_action", "%s", action_name(pol.action));
	finding_detail_num(f, "xid", ev->num);
	if (ev->cause > 0)
		finding_detail_num(f, "cause_xid", ev->cause);
	group_details(e, f, g, state ? state : pol.sticky ? "sticky until GPU reset" : "recent");
	if (ev->text[0])
		finding_detail(f, "text", "%s", ev->text);
	if (ev->pid >= 0)
		finding_detail_num(f, "pid", (double)ev->pid);
	if (ev->name[0])
		finding_detail(f, "process", "%s", ev->name);
	if (ev->gi >= 0)
		finding_detail_num(f, "gpu_instance", ev->gi);
	if (ev->ci >= 0)
		finding_detail_num(f, "compute_instance", ev->ci);
	if (ev->num == 154 && ev->recovery >= 0)
		finding_detail(f, "recovery_action", "0x%x %s", (unsigned)ev->recovery,
			       xid_recovery_name(ev->recovery));
	if (!state && pol.then != ACTION_NONE)
		finding_detail(f, "then", "%s", action_name(pol.then));
	if (!state && pol.sticky && e->in->log.boots_unproven)
		finding_detail(f, "boot_banners_not_counted",
			       "%llu 'Linux version' line%s without the log restarting (no kmsg "
			       "sequence or boot time near 0, no journal boot id): not a reboot",
			       (unsigned long long)e->in->log.boots_unproven,
			       e->in->log.boots_unproven == 1 ? "" : "s");
	if (!pol.known)
		finding_detail(f, "catalog", "Xid %d is not in vigil's catalog",
			       ev->cause > 0 ? ev->cause : ev->num);
	strbuf_release(&dev);
	strbuf_release(&msg);
	strbuf_release(&why);
}

static void eval_off_bus(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	if (g->merged >= 0) {
		const struct group *x = &e->g[g->merged];
		if (x->finding != SIZE_MAX) {
			struct finding *f = &e->res->findings[x->finding];
			finding_detail_num(f, "off_bus_messages", (double)g->count);
		}
		return;
	}
	struct xid_policy pol;
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT, why = STRBUF_INIT;
	xid_classify(79, -1, -1, &pol);
	const char *state = fault_state(e, g, true, &why);
	enum status st = state ? STATUS_OK : pol.status;
	gpu_device(&dev, e, ev->bdf);
	strbuf_addf(&msg, "GPU %s has fallen off the bus (no Xid logged)", gpu_short(ev->bdf));
	message_tail(&msg, g->count, state, pol.action, st);
	struct finding *f = result_add(e->res, st, state ? ACTION_NONE : pol.action,
				       "gpu_off_bus", dev.buf, "%s", msg.buf);
	if (!state)
		f->severity = pol.severity;
	group_details(e, f, g, state ? state : "sticky until reboot");
	if (!state)
		finding_detail(f, "then", "%s", action_name(pol.then));
	strbuf_release(&dev);
	strbuf_release(&msg);
	strbuf_release(&why);
}

static void eval_sxid(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	struct xid_policy pol;
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT, why = STRBUF_INIT;
	sxid_classify(ev->num, ev->fatal, &pol);
	const char *state = NULL;
	if (pol.sticky) {
		if (e->last_boot_idx > (long)g->last_idx)
			state = "cleared by a reboot";
	} else {
		state = fault_state(e, g, false, &why);
	}
	enum status st = state ? STATUS_OK : pol.status;
	strbuf_addf(&dev, "NVSwitch %s", ev->bdf[0] ? ev->bdf : "(address not logged)");
	if (ev->name[0])
		strbuf_addf(&dev, " (%s)", ev->name);
	strbuf_addf(&msg, "SXid %d on NVSwitch %s: %s", ev->num,
		    ev->bdf[0] ? ev->bdf : "(address not logged)", pol.meaning);
	message_tail(&msg, g->count, state, pol.action, st);
	struct finding *f = result_add(e->res, st, state ? ACTION_NONE : pol.action, "sxid",
				       dev.buf, "%s", msg.buf);
	if (!state)
		f->severity = pol.severity;
	finding_detail_num(f, "sxid", ev->num);
	group_details(e, f, g, state ? state : pol.sticky ? "sticky until reboot" : "recent");
	if (ev->text[0])
		finding_detail(f, "text", "%s", ev->text);
	strbuf_release(&dev);
	strbuf_release(&msg);
	strbuf_release(&why);
}

/* "8.0 GT/s PCIe x8" after key in s */
static bool link_params(const char *s, const char *key, double *gts, int *width)
{
	const char *p = strstr(s, key);
	if (!p)
		return false;
	return sscanf(p + strlen(key), " %lf GT/s PCIe x%d", gts, width) == 2;
}

static void eval_pcie(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	if (ev->boot < e->in->log.boots)
		return; /* links train again at boot: an older boot says nothing of this one */
	double cur_gts = 0, cap_gts = 0;
	int cur_w = 0, cap_w = 0;
	bool parsed = link_params(ev->text, "limited by", &cur_gts, &cur_w) &&
		      link_params(ev->text, " with", &cap_gts, &cap_w);
	bool gpu = !strcmp(ev->name, "nvidia");
	bool nic = !strncmp(ev->name, "mlx5", 4);
	bool narrow = parsed && cur_w < cap_w;
	enum status st = STATUS_WARN;
	const char *why = "";
	if (gpu || nic) {
		st = STATUS_FAIL;
		/* an idle GPU lowers its link speed to save power; a narrower link is real */
		if (gpu && parsed && !narrow) {
			st = STATUS_WARN;
			why = " (an idle GPU may lower its link speed; the pcie check reads the "
			      "live link)";
		}
	}
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT;
	if (gpu)
		gpu_device(&dev, e, ev->bdf);
	else
		strbuf_addf(&dev, "%s %s (%s)", nic ? "NIC" : "PCI device",
			    ev->bdf[0] ? ev->bdf : "(address not logged)",
			    ev->name[0] ? ev->name : "unknown driver");
	if (parsed)
		strbuf_addf(&msg, "PCIe link of %s limited to %.1f GT/s x%d, capable of %.1f GT/s x%d",
			    ev->bdf[0] ? ev->bdf : ev->name, cur_gts, cur_w, cap_gts, cap_w);
	else
		strbuf_addf(&msg, "PCIe link of %s runs below its capability",
			    ev->bdf[0] ? ev->bdf : ev->name);
	strbuf_addf(&msg, "%s; %s", why, xid_action_text(ACTION_INSPECT_HARDWARE));
	struct finding *f = result_add(e->res, st, ACTION_INSPECT_HARDWARE, "pcie_downgrade",
				       dev.buf, "%s", msg.buf);
	group_details(e, f, g, NULL);
	finding_detail(f, "text", "%s", ev->text);
	if (ev->name[0])
		finding_detail(f, "driver", "%s", ev->name);
	strbuf_release(&dev);
	strbuf_release(&msg);
}

static void eval_oom(struct eval *e, struct group *g, bool cgroup)
{
	if (!g->recent)
		return;
	const struct kmsg_event *ev = g->last;
	struct strbuf msg = STRBUF_INIT, win = STRBUF_INIT;
	add_duration(&win, e->kc->window);
	if (cgroup)
		strbuf_addf(&msg, "a memory cgroup limit killed %llu process%s in the last %s "
			    "(not a host fault)", (unsigned long long)g->recent,
			    g->recent == 1 ? "" : "es", win.buf);
	else
		strbuf_addf(&msg, "host OOM killer killed %llu process%s in the last %s",
			    (unsigned long long)g->recent, g->recent == 1 ? "" : "es", win.buf);
	if (ev->name[0])
		strbuf_addf(&msg, " (last: %s, pid %lld)", ev->name, ev->pid);
	if (!cgroup)
		strbuf_addf(&msg, "; %s", xid_action_text(ACTION_RESTART_APP));
	struct finding *f = result_add(e->res, cgroup ? STATUS_OK : STATUS_WARN,
				       cgroup ? ACTION_NONE : ACTION_RESTART_APP,
				       cgroup ? "oom_cgroup" : "oom", "host", "%s", msg.buf);
	group_details(e, f, g, NULL);
	finding_detail_num(f, "recent", (double)g->recent);
	strbuf_release(&msg);
	strbuf_release(&win);
}

/*
 * Noise findings (hung tasks, flapping links, unknown NVRM lines) are capped per code so that a
 * flood of distinct lines cannot bury the report; what is not shown is counted in one finding.
 * Faults are never capped.
 */
struct noise {
	size_t shown;
	uint64_t more; /* groups not shown */
};

static bool noise_room(struct noise *n)
{
	if (n->shown >= MAX_NOISE_SHOWN) {
		n->more++;
		return false;
	}
	n->shown++;
	return true;
}

static void noise_more(struct eval *e, const struct noise *n, const char *code, const char *what)
{
	if (n->more)
		result_add(e->res, STATUS_WARN, ACTION_INVESTIGATE, code, "",
			   "%llu more %s not shown", (unsigned long long)n->more, what);
}

static void eval_hung(struct eval *e, struct group *g, struct noise *n)
{
	if (!g->recent || !noise_room(n))
		return;
	const struct kmsg_event *ev = g->last;
	struct strbuf dev = STRBUF_INIT;
	strbuf_addstr(&dev, "task ");
	strbuf_add_excerpt(&dev, ev->name[0] ? ev->name : "(unnamed)", 32);
	struct finding *f = result_add(e->res, STATUS_WARN, ACTION_INVESTIGATE, "hung_task",
				       dev.buf, "%s blocked for more than %d s (%llu time%s); %s",
				       dev.buf, ev->num, (unsigned long long)g->recent,
				       g->recent == 1 ? "" : "s", xid_action_text(ACTION_INVESTIGATE));
	group_details(e, f, g, NULL);
	if (ev->pid >= 0)
		finding_detail_num(f, "pid", (double)ev->pid);
	strbuf_release(&dev);
}

static void eval_link(struct eval *e, struct group *g, struct noise *n)
{
	if (g->recent < e->kc->link_flaps || !noise_room(n))
		return;
	const struct kmsg_event *ev = g->last;
	struct strbuf dev = STRBUF_INIT, win = STRBUF_INIT;
	strbuf_addf(&dev, "NIC %s", ev->bdf[0] ? ev->bdf : "(address not logged)");
	if (ev->name[0] && strncmp(ev->name, "mlx5", 4)) {
		strbuf_addch(&dev, ' ');
		strbuf_add_excerpt(&dev, ev->name, 24);
	}
	add_duration(&win, e->kc->window);
	struct finding *f = result_add(e->res, STATUS_WARN, ACTION_REPLACE_CABLE, "link_flap",
				       dev.buf, "link of %s went down %llu times in the last %s; %s",
				       dev.buf + 4, (unsigned long long)g->recent, win.buf,
				       xid_action_text(ACTION_REPLACE_CABLE));
	group_details(e, f, g, NULL);
	finding_detail_num(f, "threshold", (double)e->kc->link_flaps);
	strbuf_release(&dev);
	strbuf_release(&win);
}

static void eval_unknown(struct eval *e, struct group *g, struct noise *n)
{
	if (!g->recent || !noise_room(n))
		return;
	const struct kmsg_event *ev = g->last;
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT;
	if (ev->bdf[0])
		gpu_device(&dev, e, ev->bdf);
	strbuf_addstr(&msg, "unknown NVRM message: ");
	strbuf_add_excerpt(&msg, ev->text, 80);
	struct finding *f = result_add(e->res, STATUS_WARN, ACTION_INVESTIGATE, "unknown_nvrm",
				       dev.buf, "%s", msg.buf);
	group_details(e, f, g, NULL);
	finding_detail(f, "text", "%s", ev->text);
	strbuf_release(&dev);
	strbuf_release(&msg);
}

static void finding_free(struct finding *f)
{
	for (size_t i = 0; i < f->nr_details; i++) {
		free(f->details[i].key);
		free(f->details[i].value);
	}
	free(f->details);
	free(f->code);
	free(f->device);
	free(f->message);
}

static const struct finding *cmp_base;

/* Worst status first, then in the order they were made. */
static int worse_first(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	enum status a = cmp_base[i].status, b = cmp_base[j].status;
	if (a != b)
		return a > b ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Past MAX_SHOWN findings (thousands of distinct faults: a forged or corrupt log), keep the
 * worst and fold the rest into one finding that keeps their worst status and action: the verdict
 * stays what the faults make it, and the result stays far below what the runner's pipe takes
 * (8 MiB; tens of thousands of findings would overflow it and turn a failing host unknown).
 */
static void cap_findings(struct eval *e, size_t start)
{
	struct check_result *r = e->res;
	size_t n = r->nr - start;
	if (n <= MAX_SHOWN)
		return;
	size_t *idx = xmalloc(n * sizeof(*idx));
	struct finding *tmp = xmalloc(n * sizeof(*tmp));
	for (size_t i = 0; i < n; i++)
		idx[i] = start + i;
	cmp_base = r->findings;
	qsort(idx, n, sizeof(*idx), worse_first);
	for (size_t i = 0; i < n; i++)
		tmp[i] = r->findings[idx[i]];
	memcpy(r->findings + start, tmp, n * sizeof(*tmp));
	const struct finding *worst = &r->findings[start + MAX_SHOWN];
	enum status st = worst->status;
	enum action act = worst->action;
	struct strbuf msg = STRBUF_INIT;
	strbuf_addf(&msg, "%zu more findings not shown; the worst: ", n - MAX_SHOWN);
	strbuf_add_excerpt(&msg, worst->message, 100);
	for (size_t i = start + MAX_SHOWN; i < r->nr; i++)
		finding_free(&r->findings[i]);
	r->nr = start + MAX_SHOWN;
	result_add(r, st, act, "more", "kernel log", "%s", msg.buf);
	strbuf_release(&msg);
	free(tmp);
	free(idx);
}

/* What the log could not tell: a read cut short, faults given up past the hard cap. */
static void eval_gaps(struct eval *e)
{
	const struct kernel_input *in = e->in;
	struct strbuf name = STRBUF_INIT;
	add_name(&name, in->source);
	if (in->incomplete) {
		struct finding *f;
		if (in->size)
			f = result_add(e->res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "incomplete", "kernel log",
				       "read %llu of %llu bytes of %s before the deadline; the rest "
				       "was not judged", (unsigned long long)in->read_bytes,
				       (unsigned long long)in->size, name.buf);
		else
			f = result_add(e->res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "incomplete", "kernel log",
				       "read %llu bytes of %s before the deadline, not to its end; "
				       "the rest was not judged", (unsigned long long)in->read_bytes,
				       name.buf);
		finding_detail(f, "hint", "raise kernel.timeout (seconds) for a log this large");
	}
	if (in->log.lost)
		result_add(e->res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "events_lost", "kernel log",
			   "%llu older GPU fault or reset events in %s were not judged: tens of "
			   "thousands of distinct ones (a corrupt or forged log?)",
			   (unsigned long long)in->log.lost, name.buf);
	strbuf_release(&name);
}

static void summary(struct eval *e)
{
	const struct kernel_input *in = e->in;
	const struct kmsg_log *log = &in->log;
	struct strbuf msg = STRBUF_INIT, name = STRBUF_INIT;
	bool problem = false;
	for (size_t i = 0; i < e->res->nr; i++)
		if (e->res->findings[i].status >= STATUS_WARN)
			problem = true;
	strbuf_add_clean(&name, in->source);
	if (problem)
		strbuf_addf(&msg, "kernel log: %llu lines read from %s", (unsigned long long)log->lines,
			    name.buf);
	else if (e->app_xids)
		strbuf_addf(&msg, "kernel log clean: %llu lines, no host GPU faults (%llu "
			    "application-level Xid event%s)", (unsigned long long)log->lines,
			    (unsigned long long)e->app_xids, e->app_xids == 1 ? "" : "s");
	else
		strbuf_addf(&msg, "kernel log clean: %llu lines, no GPU faults",
			    (unsigned long long)log->lines);
	/* noise given up for room: every fault was kept, but say what was not looked at */
	if (log->dropped)
		strbuf_addf(&msg, "; %llu older OOM, hung-task, link or NVRM message%s past the "
			    "event cap not judged", (unsigned long long)log->dropped,
			    log->dropped == 1 ? "" : "s");
	struct finding *f = result_add(e->res, STATUS_OK, ACTION_NONE, "summary", "kernel log", "%s",
				       msg.buf);
	finding_detail(f, "source", "%s", name.buf);
	finding_detail_num(f, "lines", (double)log->lines);
	finding_detail_num(f, "bytes", (double)log->bytes);
	if (in->size)
		finding_detail_num(f, "size", (double)in->size);
	if (in->incomplete)
		finding_detail(f, "incomplete", "stopped at the deadline after %llu bytes",
			       (unsigned long long)in->read_bytes);
	if (in->have_now)
		finding_detail(f, "now", "%.3f (%s)", in->now, kmsg_timebase_name(in->now_tb));
	else
		finding_detail(f, "now", "unknown (no timestamps): every event counts as recent");
	finding_detail_num(f, "window_s", e->kc->window);
	finding_detail_num(f, "boots", log->boots);
	if (log->boots_unproven)
		finding_detail_num(f, "boot_banners_not_counted", (double)log->boots_unproven);
	if (log->not_kernel)
		finding_detail_num(f, "userspace_lines_ignored", (double)log->not_kernel);
	if (e->ignored)
		finding_detail_num(f, "ignored_xid_events", (double)e->ignored);
	if (e->unknown_nvrm)
		finding_detail_num(f, "unknown_nvrm_lines", (double)e->unknown_nvrm);
	if (log->nvrm_benign)
		finding_detail_num(f, "benign_nvrm_lines", (double)log->nvrm_benign);
	if (log->cut_lines)
		finding_detail_num(f, "lines_cut", (double)log->cut_lines);
	if (log->dropped)
		finding_detail_num(f, "noise_events_not_judged", (double)log->dropped);
	if (log->lost)
		finding_detail_num(f, "fault_events_not_judged", (double)log->lost);
	strbuf_release(&msg);
	strbuf_release(&name);
}

void kernel_evaluate(const struct kernel_input *in, const struct kernel_config *kc,
		     struct check_result *res)
{
	struct eval e;
	memset(&e, 0, sizeof(e));
	e.in = in;
	e.kc = kc;
	e.res = res;
	e.last_boot_idx = -1;
	if (in->missing) {
		/* nothing read is no evidence: a fixture without a kernel log cannot be called
		 * clean (fixtures for other checks leave the kernel check out with --only) */
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_log", "kernel log",
			   "no /dev/kmsg under the root directory: the kernel log was not examined");
		return;
	}
	build_groups(&e);
	/* a GPU that fell off the bus usually also logs Xid 79: one finding, not two */
	for (size_t i = 0; i < e.nr_g; i++) {
		if (e.g[i].first->kind != KMSG_GPU_OFF_BUS)
			continue;
		struct kmsg_event key = *e.g[i].first;
		uint32_t *slot;
		key.kind = KMSG_XID;
		key.num = 79;
		const struct group *x = group_find(&e, &key, &slot);
		if (x)
			e.g[i].merged = (int)(x - e.g);
	}
	struct noise hung = { 0 }, links = { 0 }, nvrm = { 0 };
	size_t start = res->nr;
	for (size_t i = 0; i < e.nr_g; i++)
		if (e.g[i].first->kind == KMSG_XID)
			eval_xid(&e, &e.g[i]);
	for (size_t i = 0; i < e.nr_g; i++) {
		struct group *g = &e.g[i];
		switch (g->first->kind) {
		case KMSG_GPU_OFF_BUS: eval_off_bus(&e, g); break;
		case KMSG_SXID: eval_sxid(&e, g); break;
		case KMSG_PCIE_LIMITED: eval_pcie(&e, g); break;
		case KMSG_OOM_KILL: eval_oom(&e, g, false); break;
		case KMSG_OOM_CGROUP: eval_oom(&e, g, true); break;
		case KMSG_HUNG_TASK: eval_hung(&e, g, &hung); break;
		case KMSG_LINK_DOWN: eval_link(&e, g, &links); break;
		case KMSG_NVRM_UNKNOWN: eval_unknown(&e, g, &nvrm); break;
		case KMSG_EDAC:
		case KMSG_MCE:
		case KMSG_GHES:
		case KMSG_AER: kernel_eval_hw(&e, g); break;
		default: break;
		}
	}
	noise_more(&e, &hung, "hung_task", "hung tasks");
	noise_more(&e, &links, "link_flap", "flapping links");
	noise_more(&e, &nvrm, "unknown_nvrm", "unknown NVRM messages");
	cap_findings(&e, start);
	eval_gaps(&e);
	summary(&e);
	free(e.g);
	free(e.gpus);
	free(e.slots);
}
