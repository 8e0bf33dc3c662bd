/*
 * kernel_hw.c: the kernel check's judgement of host hardware errors from the log (see
 * logs/kmsg_hwerr.c for the lines): a GPU host with a failing DIMM, a CPU raising uncorrected
 * machine checks or a PCIe link taking fatal errors is not fit to train.
 *
 *   EDAC UE, uncorrected machine check, GHES fatal or recoverable, AER fatal:
 *       fail, INSPECT_HARDWARE, until the next boot (a reboot clears kernel-log findings; the
 *       EDAC counters in sysfs, edac.c, keep a UE for as long as the boot lasts)
 *   EDAC CE within kernel.window at kernel.ce-rate an hour or more: warn, INSPECT_HARDWARE
 *   "Machine check events logged" within the window: warn, INSPECT_HARDWARE (the records wait
 *       in mcelog or rasdaemon; the notice alone does not say whether they were corrected)
 *   AER non-fatal within the window: warn, INSPECT_HARDWARE
 *   corrected ones below the rate (EDAC CE, GHES corrected or info, corrected machine checks):
 *       ok, with their count: a corrected error alone is no failure
 */
#include "kernel_internal.h"

#include <math.h>

/* The status of a fault that lasts until the next boot; NULL while it stands. */
static const char *until_boot(const struct eval *e, const struct group *g)
{
	if (e->last_boot_idx > (long)g->last_idx || g->last->boot < e->in->log.boots)
		return "cleared by a reboot";
	return NULL;
}

/* The device a group of events is about, as a person names it. */
static void hw_device(struct eval *e, const struct kmsg_event *ev, struct strbuf *dev)
{
	switch (ev->kind) {
	case KMSG_EDAC:
		strbuf_addf(dev, "memory controller %s", ev->name);
		if (ev->text[0]) {
			strbuf_addstr(dev, " (");
			strbuf_add_excerpt(dev, ev->text, 64);
			strbuf_addch(dev, ')');
		}
		break;
	case KMSG_MCE:
		strbuf_addstr(dev, "CPU (machine check)");
		break;
	case KMSG_GHES:
		strbuf_addf(dev, "APEI %s", ev->name[0] ? ev->name : "error source");
		break;
	case KMSG_AER:
		if (!strcmp(ev->name, "nvidia"))
			gpu_device(dev, e, ev->bdf);
		else
			strbuf_addf(dev, "PCI device %s", ev->bdf[0] ? ev->bdf : "(address not logged)");
		break;
	default:
		break;
	}
}

/* Corrected errors within the window, per hour (the window is the span they are counted in). */
static double per_hour(const struct eval *e, uint64_t n)
{
	return (double)n * 3600.0 / e->kc->window;
}

static void add_finding(struct eval *e, struct group *g, enum status st, enum action act,
			const char *state, const char *what)
{
	const struct kmsg_event *ev = g->last;
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT;
	hw_device(e, ev, &dev);
	strbuf_addf(&msg, "%s: %s", dev.buf, what);
	message_tail(&msg, ev->kind == KMSG_EDAC ? 0 : g->count, state, act, st);
	struct finding *f = result_add(e->res, st, st >= STATUS_WARN ? act : ACTION_NONE,
				       kmsg_kind_name(ev->kind), dev.buf, "%s", msg.buf);
	group_details(e, f, g, state);
	if (ev->kind == KMSG_EDAC)
		finding_detail(f, "errors", "%llu", (unsigned long long)g->count);
	if (ev->text[0])
		finding_detail(f, "text", "%s", ev->text);
	if (ev->kind == KMSG_AER && ev->name[0])
		finding_detail(f, "driver", "%s", ev->name);
	strbuf_release(&dev);
	strbuf_release(&msg);
}

static void eval_edac(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	struct strbuf what = STRBUF_INIT, win = STRBUF_INIT;
	if (ev->fatal) {
		const char *state = until_boot(e, g);
		strbuf_addf(&what, "%llu uncorrected memory error%s (EDAC UE)",
			    (unsigned long long)g->count, g->count == 1 ? "" : "s");
		add_finding(e, g, state ? STATUS_OK : STATUS_FAIL, ACTION_INSPECT_HARDWARE, state,
			    what.buf);
		goto out;
	}
	if (!g->recent)
		goto out; /* corrected errors long ago or before this boot: nothing to say */
	add_duration(&win, e->kc->window);
	double rate = per_hour(e, g->recent);
	/* kernel.ce-rate within an hour, or that rate over a longer window (a short window is
	 * not stretched: a few errors in five minutes are not a rate) */
	double span = e->kc->window > 3600 ? e->kc->window : 3600;
	bool storm = (double)g->recent * 3600.0 >= (double)e->kc->ce_rate * span;
	strbuf_addf(&what, "%llu corrected memory error%s (EDAC CE) in the last %s, %.3g an hour%s",
		    (unsigned long long)g->recent, g->recent == 1 ? "" : "s", win.buf, rate,
		    storm ? "" : " (below kernel.ce-rate)");
	add_finding(e, g, storm ? STATUS_WARN : STATUS_OK, ACTION_INSPECT_HARDWARE, NULL, what.buf);
	struct finding *f = &e->res->findings[e->res->nr - 1];
	finding_detail_num(f, "per_hour", round(rate * 10) / 10);
	finding_detail_num(f, "threshold_per_hour", (double)e->kc->ce_rate);
out:
	strbuf_release(&what);
	strbuf_release(&win);
}

static void eval_mce(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	if (ev->fatal == 1) {
		const char *state = until_boot(e, g);
		add_finding(e, g, state ? STATUS_OK : STATUS_FAIL, ACTION_INSPECT_HARDWARE, state,
			    "uncorrected machine check");
		return;
	}
	if (!g->recent)
		return;
	if (ev->fatal == 0)
		add_finding(e, g, STATUS_OK, ACTION_NONE, NULL, "corrected machine check");
	else
		add_finding(e, g, STATUS_WARN, ACTION_INSPECT_HARDWARE, NULL,
			    "machine check events logged (read them with mcelog or ras-mc-ctl: the "
			    "notice does not say whether they were corrected)");
}

static void eval_ghes(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	const char *word = ev->num == KMSG_GHES_FATAL         ? "fatal"
			   : ev->num == KMSG_GHES_RECOVERABLE ? "recoverable (uncorrected)"
			   : ev->num == KMSG_GHES_CORRECTED   ? "corrected"
			   : ev->num == KMSG_GHES_INFO        ? "informational"
							      : "of an unknown severity";
	struct strbuf what = STRBUF_INIT;
	strbuf_addf(&what, "hardware error reported by firmware, %s", word);
	if (starts_with(ev->text, "section_type: "))
		strbuf_addf(&what, " (%s)", ev->text + 14);
	if (ev->fatal) {
		const char *state = until_boot(e, g);
		add_finding(e, g, state ? STATUS_OK : STATUS_FAIL, ACTION_INSPECT_HARDWARE, state,
			    what.buf);
	} else if (g->recent) {
		add_finding(e, g, STATUS_OK, ACTION_NONE, NULL, what.buf);
	}
	strbuf_release(&what);
}

static void eval_aer(struct eval *e, struct group *g)
{
	const struct kmsg_event *ev = g->last;
	if (ev->fatal) {
		const char *state = until_boot(e, g);
		add_finding(e, g, state ? STATUS_OK : STATUS_FAIL, ACTION_INSPECT_HARDWARE, state,
			    "uncorrectable fatal PCIe error (AER)");
	} else if (g->recent) {
		add_finding(e, g, STATUS_WARN, ACTION_INSPECT_HARDWARE, NULL,
			    "uncorrectable non-fatal PCIe error (AER)");
	}
}

void kernel_eval_hw(struct eval *e, struct group *g)
{
	switch (g->first->kind) {
	case KMSG_EDAC: eval_edac(e, g); break;
	case KMSG_MCE: eval_mce(e, g); break;
	case KMSG_GHES: eval_ghes(e, g); break;
	case KMSG_AER: eval_aer(e, g); break;
	default: break;
	}
}
