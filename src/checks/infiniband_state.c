/*
 * infiniband_state.c: the 'infiniband' check's kept counter reading and its time base
 * (statefile.h): what each run compares with, and what it keeps for the next.
 */
#include "infiniband.h"
#include "../lib/statefile.h"
#include "../sys/fsroot.h"

#define IB_STATE_KIND "infiniband"

static void counter_name(struct strbuf *out, const struct ib_port *p, int c)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s %u %s", p->hca, p->port, ib_counters[c].name);
}

/* Judge the kept set as a baseline; only a usable one fills the ports' prev values. */
static void apply_set(struct ib_readings *r, const struct counter_set *set, bool loaded,
		      double mtime)
{
	struct strbuf name = STRBUF_INIT;
	uint64_t t;
	r->base = statefile_base(set, loaded, mtime, r->now, r->boot, &r->age);
	r->base_time = counter_set_get(set, STATEFILE_TIME, &t) ? (double)t
		       : r->age >= 0				   ? r->now - r->age
								   : 0;
	for (size_t i = 0; i < r->nr; i++)
		for (int c = 0; c < IBC__COUNT; c++) {
			counter_name(&name, &r->ports[i], c);
			r->ports[i].have_prev[c] =
				r->base == BASE_OK &&
				counter_set_get(set, name.buf, &r->ports[i].prev[c]);
		}
	strbuf_release(&name);
}

/*
 * Keep the baseline (its values and time) while it is under STATEFILE_BASELINE_S old, of this
 * boot, and no counter went back: a slow rate adds up over the hour instead of being a rise of
 * 1 every 30 s. A counter new since then is kept at its value now (under the old time: its rate
 * reads low for at most that hour). Otherwise this reading, dated now, is the next baseline.
 */
static bool keep_baseline(const struct ib_readings *r)
{
	if (r->base != BASE_OK || r->age < 0 || r->age >= STATEFILE_BASELINE_S || r->base_time <= 0)
		return false;
	for (size_t i = 0; i < r->nr; i++)
		for (int c = 0; c < IBC__COUNT; c++)
			if (r->ports[i].have[c] && r->ports[i].have_prev[c] &&
			    r->ports[i].counter[c] < r->ports[i].prev[c])
				return false;
	return true;
}

static void readings_set(const struct ib_readings *r, struct counter_set *set)
{
	struct strbuf name = STRBUF_INIT;
	bool keep = keep_baseline(r);
	for (size_t i = 0; i < r->nr; i++)
		for (int c = 0; c < IBC__COUNT; c++)
			if (r->ports[i].have[c]) {
				const struct ib_port *p = &r->ports[i];
				counter_name(&name, p, c);
				counter_set_add(set, name.buf,
						keep && p->have_prev[c] ? p->prev[c] : p->counter[c]);
			}
	if (set->nr)
		statefile_stamp(set, keep ? r->base_time : r->now, r->boot);
	strbuf_release(&name);
}

void ib_state_apply(struct ib_readings *r, const char *text)
{
	struct counter_set set = COUNTER_SET_INIT;
	bool ok = statefile_parse(IB_STATE_KIND, text, strlen(text), &set, NULL) == 0;
	r->have_state = ok;
	apply_set(r, &set, ok, -1);
	counter_set_release(&set);
}

void ib_state_format(const struct ib_readings *r, struct strbuf *out)
{
	struct counter_set set = COUNTER_SET_INIT;
	readings_set(r, &set);
	statefile_format(IB_STATE_KIND, &set, out);
	counter_set_release(&set);
}

/* The host's boot time (-1 when /proc/stat cannot be read: boots are then told apart only by
 * counters that went back). */
static double read_btime(const struct fsroot *root)
{
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT;
	double boot = -1;
	if (fsroot_read(root, "/proc/stat", &sb, 1 << 16, &err) == READ_OK)
		statefile_parse_btime(sb.buf, &boot);
	strbuf_release(&sb);
	strbuf_release(&err);
	return boot;
}

static void state_path(const struct check_ctx *ctx, struct strbuf *out)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", ctx->state_dir, IB_STATE_FILE);
}

void ib_state_load(const struct check_ctx *ctx, struct ib_readings *r)
{
	r->now = ctx->now;
	r->boot = read_btime(ctx->root);
	r->age = -1;
	if (!ctx->state_dir)
		return;
	struct counter_set set = COUNTER_SET_INIT;
	struct strbuf why = STRBUF_INIT, path = STRBUF_INIT;
	double mtime = -1;
	r->state_dir = true;
	state_path(ctx, &path);
	int sr = statefile_load(path.buf, IB_STATE_KIND, &set, &mtime, &why);
	r->have_state = sr == STATEFILE_LOADED;
	apply_set(r, &set, r->have_state, mtime);
	if (sr == STATEFILE_UNUSABLE)
		strlcpy_v(r->state_error, why.buf, sizeof(r->state_error));
	counter_set_release(&set);
	strbuf_release(&why);
	strbuf_release(&path);
}

void ib_state_save(const struct check_ctx *ctx, const struct ib_readings *r,
		   struct check_result *res)
{
	if (!ctx->state_dir || !r->nr)
		return;
	struct counter_set set = COUNTER_SET_INIT;
	struct strbuf path = STRBUF_INIT, werr = STRBUF_INIT;
	readings_set(r, &set);
	state_path(ctx, &path);
	if (statefile_save(path.buf, IB_STATE_KIND, &set, &werr) < 0)
		result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "state", "",
			   "cannot keep the counter reading: %s", werr.buf);
	counter_set_release(&set);
	strbuf_release(&path);
	strbuf_release(&werr);
}
