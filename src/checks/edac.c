/*
 * edac.c: the EDAC memory error counters in sysfs (see edac.h): read through the root, kept
 * between runs in the state directory like the InfiniBand counters, and judged for the kernel
 * check: an uncorrected error fails, corrected ones rising fast warn.
 */
#include "edac.h"
#include "../lib/statefile.h"
#include "../sys/fsroot.h"
#include "../sys/sysattr.h"

#include <math.h>

#define EDAC_STATE_KIND "edac"
#define EDAC_STATE_FILE "edac.state"

/* "mc12" / "dimm3" / "rank3": prefix then digits only */
static bool numbered(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(s, prefix, n) || !s[n] || strlen(s) > 10)
		return false;
	for (s += n; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int read_count(const struct fsroot *root, const char *dir, const char *file, uint64_t *v,
		      char *why, size_t wn)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, file);
	int r = sysattr_read_u64(root, path.buf, v, &err);
	if (r != READ_OK && why && !why[0])
		strlcpy_v(why, err.len ? err.buf : "unreadable", wn);
	strbuf_release(&path);
	strbuf_release(&err);
	return r;
}

static void read_text(const struct fsroot *root, const char *dir, const char *file, char *out,
		      size_t n)
{
	struct strbuf path = STRBUF_INIT, v = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, file);
	out[0] = '\0';
	if (sysattr_read(root, path.buf, &v, NULL) == READ_OK) {
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_excerpt(&clean, v.buf, n - 8);
		strlcpy_v(out, clean.buf, n);
		strbuf_release(&clean);
	}
	strbuf_release(&path);
	strbuf_release(&v);
}

static void read_dimms(const struct fsroot *root, const char *mcdir, struct edac_mc *m)
{
	struct strlist names = STRLIST_INIT;
	struct strbuf dir = STRBUF_INIT;
	if (fsroot_list(root, mcdir, &names, NULL) != 0)
		goto out;
	for (size_t i = 0; i < names.nr && m->nr_dimms < EDAC_MAX_DIMMS; i++) {
		const char *n = names.items[i];
		if (!numbered(n, "dimm") && !numbered(n, "rank"))
			continue;
		strbuf_reset(&dir);
		strbuf_addf(&dir, "%s/%s", mcdir, n);
		struct edac_dimm d;
		memset(&d, 0, sizeof(d));
		strlcpy_v(d.dir, n, sizeof(d.dir));
		d.have = read_count(root, dir.buf, "dimm_ce_count", &d.ce, NULL, 0) == READ_OK &&
			 read_count(root, dir.buf, "dimm_ue_count", &d.ue, NULL, 0) == READ_OK;
		read_text(root, dir.buf, "dimm_label", d.label, sizeof(d.label));
		m->dimms = xrealloc(m->dimms, (m->nr_dimms + 1) * sizeof(*m->dimms));
		m->dimms[m->nr_dimms++] = d;
	}
out:
	strlist_release(&names);
	strbuf_release(&dir);
}

static void state_path(const struct check_ctx *ctx, struct strbuf *out)
{
	strbuf_addf(out, "%s/%s", ctx->state_dir, EDAC_STATE_FILE);
}

static void apply_set(struct edac_readings *r, const struct counter_set *set)
{
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++) {
		struct edac_mc *m = &r->mc[i];
		strbuf_reset(&name);
		strbuf_addf(&name, "%s ce_count", m->name);
		m->have_prev_ce = counter_set_get(set, name.buf, &m->prev_ce);
		strbuf_reset(&name);
		strbuf_addf(&name, "%s seconds_since_reset", m->name);
		m->have_prev_since = counter_set_get(set, name.buf, &m->prev_since);
	}
	strbuf_release(&name);
}

/*
 * The kept reading stays the baseline until it is an hour old (by seconds_since_reset, in the
 * same boot): the agent runs the check every minute or so, and a storm of 59 errors an hour is
 * one error a minute, which a comparison with the last minute alone would never see. The bound
 * is the one every kept counter uses (STATEFILE_BASELINE_S, src/lib/statefile.h).
 */

static bool keep_baseline(const struct edac_mc *m)
{
	return m->have_prev_ce && m->have_prev_since && m->have_since && m->have_ce &&
	       m->since >= m->prev_since && m->ce >= m->prev_ce &&
	       (double)(m->since - m->prev_since) < STATEFILE_BASELINE_S;
}

static void readings_set(const struct edac_readings *r, struct counter_set *set)
{
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++) {
		const struct edac_mc *m = &r->mc[i];
		bool keep = keep_baseline(m);
		if (m->have_ce) {
			strbuf_reset(&name);
			strbuf_addf(&name, "%s ce_count", m->name);
			counter_set_add(set, name.buf, keep ? m->prev_ce : m->ce);
		}
		if (m->have_ue) {
			strbuf_reset(&name);
			strbuf_addf(&name, "%s ue_count", m->name);
			counter_set_add(set, name.buf, m->ue);
		}
		if (m->have_since) {
			strbuf_reset(&name);
			strbuf_addf(&name, "%s seconds_since_reset", m->name);
			counter_set_add(set, name.buf, keep ? m->prev_since : m->since);
		}
	}
	strbuf_release(&name);
}

void edac_state_format(const struct edac_readings *r, struct strbuf *out)
{
	struct counter_set set = COUNTER_SET_INIT;
	readings_set(r, &set);
	statefile_format(EDAC_STATE_KIND, &set, out);
	counter_set_release(&set);
}

void edac_state_apply(struct edac_readings *r, const char *text)
{
	struct counter_set set = COUNTER_SET_INIT;
	if (statefile_parse(EDAC_STATE_KIND, text, strlen(text), &set, NULL) == 0) {
		r->have_state = true;
		apply_set(r, &set);
	}
	counter_set_release(&set);
}

void edac_gather(const struct check_ctx *ctx, struct edac_readings *r)
{
	struct strlist names = STRLIST_INIT;
	struct strbuf dir = STRBUF_INIT, err = STRBUF_INIT;
	memset(r, 0, sizeof(*r));
	r->state_age = -1;
	if (!ctx->root)
		return; /* a context built by hand (tests of the log alone) */
	int lr = fsroot_list(ctx->root, EDAC_MC_DIR, &names, &err);
	if (lr == READ_MISSING)
		goto out;
	r->present = true;
	if (lr < 0) {
		strlcpy_v(r->list_error, err.len ? err.buf : "cannot list it", sizeof(r->list_error));
		goto out;
	}
	for (size_t i = 0; i < names.nr && r->nr < EDAC_MAX_MCS; i++) {
		if (!numbered(names.items[i], "mc"))
			continue;
		ALLOC_GROW(r->mc, r->nr + 1, r->alloc);
		struct edac_mc *m = &r->mc[r->nr++];
		memset(m, 0, sizeof(*m));
		strlcpy_v(m->name, names.items[i], sizeof(m->name));
		strbuf_reset(&dir);
		strbuf_addf(&dir, EDAC_MC_DIR "/%s", m->name);
		m->have_ce = read_count(ctx->root, dir.buf, "ce_count", &m->ce, m->error,
					sizeof(m->error)) == READ_OK;
		m->have_ue = read_count(ctx->root, dir.buf, "ue_count", &m->ue, m->error,
					sizeof(m->error)) == READ_OK;
		m->have_since = read_count(ctx->root, dir.buf, "seconds_since_reset", &m->since, NULL,
					   0) == READ_OK;
		read_text(ctx->root, dir.buf, "mc_name", m->mc_name, sizeof(m->mc_name));
		read_dimms(ctx->root, dir.buf, m);
	}
	if (ctx->state_dir) {
		struct counter_set set = COUNTER_SET_INIT;
		struct strbuf why = STRBUF_INIT, path = STRBUF_INIT;
		double mtime = 0;
		r->state_dir = true;
		state_path(ctx, &path);
		int sr = statefile_load(path.buf, EDAC_STATE_KIND, &set, &mtime, &why);
		if (sr == STATEFILE_LOADED) {
			r->have_state = true;
			apply_set(r, &set);
			if (ctx->now > 0 && mtime > 0)
				r->state_age = ctx->now >= mtime ? ctx->now - mtime : 0;
		} else if (sr == STATEFILE_UNUSABLE) {
			strlcpy_v(r->state_error, why.buf, sizeof(r->state_error));
		}
		counter_set_release(&set);
		strbuf_release(&why);
		strbuf_release(&path);
	}
out:
	strlist_release(&names);
	strbuf_release(&dir);
	strbuf_release(&err);
}

void edac_readings_release(struct edac_readings *r)
{
	for (size_t i = 0; i < r->nr; i++)
		free(r->mc[i].dimms);
	free(r->mc);
	memset(r, 0, sizeof(*r));
}

/* ---- evaluate ---- */

static void mc_device(const struct edac_mc *m, struct strbuf *dev)
{
	strbuf_addf(dev, "memory controller %s", m->name);
	if (m->mc_name[0])
		strbuf_addf(dev, " (%s)", m->mc_name);
}

/* The DIMMs whose count (ue or ce) is above 0, as "LABEL: N, ...", for a message. */
static void dimm_list(const struct edac_mc *m, bool ue, struct strbuf *out)
{
	size_t shown = 0;
	for (size_t i = 0; i < m->nr_dimms; i++) {
		const struct edac_dimm *d = &m->dimms[i];
		uint64_t v = ue ? d->ue : d->ce;
		if (!d->have || !v)
			continue;
		if (shown++ == 4) {
			strbuf_addstr(out, ", ...");
			break;
		}
		strbuf_addf(out, "%s%s: %llu", shown > 1 ? ", " : "", d->label[0] ? d->label : d->dir,
			    (unsigned long long)v);
	}
}

/*
 * The rise of the corrected count that is judged, and over how many seconds (-1: unknown), and
 * from what. The last run's reading if it is of this boot; else (first run, or the counters went
 * back: a reboot or a reset) what the counters hold since they were reset.
 */
static uint64_t ce_rise(const struct edac_readings *r, const struct edac_mc *m, double *secs,
			const char **basis)
{
	bool went_back = (m->have_prev_ce && m->ce < m->prev_ce) ||
			 (m->have_prev_since && m->have_since && m->since < m->prev_since);
	if (m->have_prev_ce && !went_back) {
		*basis = "since the last run";
		if (m->have_prev_since && m->have_since)
			*secs = (double)(m->since - m->prev_since);
		else
			*secs = r->state_age;
		return m->ce - m->prev_ce;
	}
	*basis = went_back ? "since the counters were reset (a reboot or a reset since the last "
			     "run)"
			   : "since the counters were reset";
	*secs = m->have_since ? (double)m->since : -1;
	return m->ce;
}

static void eval_mc(const struct edac_readings *r, const struct edac_mc *m, uint64_t ce_rate,
		    struct check_result *res, size_t *bad)
{
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT, dl = STRBUF_INIT;
	struct finding *f;
	mc_device(m, &dev);
	if (!m->have_ce || !m->have_ue) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "edac_unreadable", dev.buf,
			       "cannot read the memory error counters of %s: %s", dev.buf, m->error);
		(*bad)++;
	}
	if (m->have_ue && m->ue) {
		dimm_list(m, true, &dl);
		strbuf_addf(&msg, "%s: %llu uncorrected memory error%s since the counters were reset "
			    "(EDAC ue_count)", dev.buf, (unsigned long long)m->ue,
			    m->ue == 1 ? "" : "s");
		if (dl.len)
			strbuf_addf(&msg, " on %s", dl.buf);
		strbuf_addf(&msg, "; inspect the hardware");
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "edac_ue", dev.buf, "%s",
			       msg.buf);
		finding_detail_num(f, "ue_count", (double)m->ue);
		if (m->have_since)
			finding_detail_num(f, "seconds_since_reset", (double)m->since);
		(*bad)++;
	}
	if (m->have_ce) {
		double secs = -1;
		const char *basis;
		uint64_t rise = ce_rise(r, m, &secs, &basis);
		/* a rise of ce_rate within an hour, or that rate over a longer span */
		if (rate_alarms(rise, secs, (double)ce_rate, 1)) {
			strbuf_reset(&msg);
			strbuf_reset(&dl);
			dimm_list(m, false, &dl);
			/* worded as IB and AER word a rise: "+N in T (R/h)", then from what */
			strbuf_addf(&msg, "%s: corrected memory errors ", dev.buf);
			if (secs >= 0) {
				rate_format(&msg, rise, secs);
				strbuf_addf(&msg, " %s", basis);
			} else {
				strbuf_addf(&msg, "+%llu %s (its time unknown)",
					    (unsigned long long)rise, basis);
			}
			if (dl.len)
				strbuf_addf(&msg, " (%s)", dl.buf);
			strbuf_addf(&msg, "; inspect the hardware");
			f = result_add(res, STATUS_WARN, ACTION_INSPECT_HARDWARE, "edac_ce_rate",
				       dev.buf, "%s", msg.buf);
			finding_detail_num(f, "rise", (double)rise);
			finding_detail_num(f, "delta", (double)rise);
			if (secs >= 0)
				finding_detail_num(f, "seconds", round(secs));
			if (secs >= 1)
				finding_detail_num(f, "rate_per_hour", rate_per_hour(rise, secs));
			finding_detail_num(f, "threshold_per_hour", (double)ce_rate);
			finding_detail_num(f, "ce_count", (double)m->ce);
			(*bad)++;
		}
	}
	strbuf_release(&dev);
	strbuf_release(&msg);
	strbuf_release(&dl);
}

void edac_evaluate(const struct edac_readings *r, uint64_t ce_rate, struct check_result *res)
{
	struct finding *f;
	if (!r->present) {
		result_add(res, STATUS_OK, ACTION_NONE, "edac", "memory",
			   "no EDAC memory controllers in sysfs (no EDAC driver loaded): memory "
			   "errors are judged from the kernel log only");
		return;
	}
	if (r->list_error[0]) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "edac_unreadable", "memory",
			   "cannot list the EDAC memory controllers: %s", r->list_error);
		return;
	}
	size_t bad = 0;
	uint64_t ce = 0;
	for (size_t i = 0; i < r->nr; i++) {
		eval_mc(r, &r->mc[i], ce_rate, res, &bad);
		ce += r->mc[i].have_ce ? r->mc[i].ce : 0;
	}
	if (r->state_error[0])
		result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "edac_state", "memory",
			   "no previous EDAC reading: %s (a new one is kept)", r->state_error);
	if (bad)
		return;
	const char *basis = !r->state_dir    ? "not compared (no state directory)"
			    : !r->have_state ? "first reading saved"
					     : "compared with the last run";
	f = result_add(res, STATUS_OK, ACTION_NONE, "edac", "memory",
		       "%zu memory controller%s: no uncorrected errors, %llu corrected since the "
		       "counters were reset (%s)", r->nr, r->nr == 1 ? "" : "s",
		       (unsigned long long)ce, basis);
	finding_detail_num(f, "controllers", (double)r->nr);
	finding_detail_num(f, "ce_count", (double)ce);
}

void edac_state_save(const struct check_ctx *ctx, const struct edac_readings *r,
		     struct check_result *res)
{
	if (!ctx->state_dir || !r->nr)
		return;
	struct counter_set set = COUNTER_SET_INIT;
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	readings_set(r, &set);
	state_path(ctx, &path);
	if (statefile_save(path.buf, EDAC_STATE_KIND, &set, &err) < 0)
		result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "edac_state", "memory",
			   "cannot keep the EDAC counter reading: %s", err.buf);
	counter_set_release(&set);
	strbuf_release(&path);
	strbuf_release(&err);
}
