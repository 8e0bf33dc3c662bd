/*
 * infiniband.c: the 'infiniband' check. For each port under /sys/class/infiniband/<hca>/ports/<n>:
 *
 *   - state must be ACTIVE; why it is not (Polling: no light from the other end; Disabled: turned
 *     off on purpose; INIT/ARMED: the link is up but the subnet manager has not activated it)
 *     picks the status and the action;
 *   - rate against infiniband.rate, or by default against the fastest port of the host, so that
 *     one port that came up at HDR among NDR ports stands out;
 *   - error counters: absolute values mean little (they count since the last reset), rises do.
 *     The last reading is kept in STATE_DIR/infiniband.state and each run compares with it.
 *
 * Ethernet (RoCE) ports are left out unless infiniband.include-ethernet is set or infiniband.hcas
 * names them: a front-end Ethernet NIC with an unplugged spare port must not drain a host.
 */
#include "infiniband.h"
#include "../lib/fileio.h"
#include "../lib/statefile.h"
#include "../sys/fsroot.h"

#include <fnmatch.h>
#include <math.h>

const struct ib_counter_def ib_counters[IBC__COUNT] = {
	[IBC_SYMBOL_ERROR] = { "symbol_error", true, 16, ACTION_REPLACE_CABLE,
			       "bit errors on the link" },
	[IBC_LINK_DOWNED] = { "link_downed", true, 8, ACTION_REPLACE_CABLE, "the link went down" },
	[IBC_LINK_ERROR_RECOVERY] = { "link_error_recovery", true, 8, ACTION_REPLACE_CABLE,
				      "the link retrained" },
	[IBC_PORT_RCV_ERRORS] = { "port_rcv_errors", true, 16, ACTION_REPLACE_CABLE,
				  "bad packets received" },
	[IBC_LOCAL_LINK_INTEGRITY_ERRORS] = { "local_link_integrity_errors", false, 4,
					      ACTION_REPLACE_CABLE, "link integrity errors" },
	[IBC_EXCESSIVE_BUFFER_OVERRUN_ERRORS] = { "excessive_buffer_overrun_errors", false, 4,
						  ACTION_INVESTIGATE, "receive buffer overruns" },
	[IBC_PORT_RCV_REMOTE_PHYSICAL_ERRORS] = { "port_rcv_remote_physical_errors", false, 16,
						  ACTION_INVESTIGATE,
						  "packets marked bad elsewhere in the fabric" },
	[IBC_PORT_XMIT_DISCARDS] = { "port_xmit_discards", false, 16, ACTION_INVESTIGATE,
				     "packets dropped: congestion or a stuck link" },
};

int ib_parse_state(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end != ':' || v < 0 || v > 255)
		return -1;
	return (int)v;
}

bool ib_parse_rate(const char *s, double *gbps)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v > 0) || v > 1e6 || !starts_with(end, " Gb/sec"))
		return false;
	*gbps = v;
	return true;
}

/* Read one attribute of a port; a read error is kept in p->error (and "" returned). */
static int port_attr(struct ib_port *p, const char *name, char *buf, size_t n, bool required)
{
	struct strbuf path = STRBUF_INIT, v = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, IB_CLASS_DIR "/%s/ports/%u/%s", p->hca, p->port, name);
	int r = fsroot_read_attr(path.buf, &v, &err);
	buf[0] = '\0';
	if (r == READ_OK)
		strlcpy_v(buf, v.buf, n);
	else if (required && !p->error[0])
		snprintf(p->error, sizeof(p->error), "%s",
			 r == READ_MISSING ? "no state file" : err.buf);
	strbuf_release(&path);
	strbuf_release(&v);
	strbuf_release(&err);
	return r;
}

static void read_port(struct ib_port *p)
{
	struct strbuf path = STRBUF_INIT;
	port_attr(p, "state", p->state, sizeof(p->state), true);
	port_attr(p, "phys_state", p->phys_state, sizeof(p->phys_state), false);
	/* rate reads EINVAL on some kernels while the port is down: unknown, not an error */
	port_attr(p, "rate", p->rate, sizeof(p->rate), false);
	port_attr(p, "link_layer", p->link_layer, sizeof(p->link_layer), false);
	p->state_num = ib_parse_state(p->state);
	p->phys_num = ib_parse_state(p->phys_state);
	if (!ib_parse_rate(p->rate, &p->rate_gbps))
		p->rate_gbps = 0;
	for (int c = 0; c < IBC__COUNT; c++) {
		strbuf_reset(&path);
		strbuf_addf(&path, IB_CLASS_DIR "/%s/ports/%u/counters/%s", p->hca, p->port,
			    ib_counters[c].name);
		/* unsupported counters read EINVAL or are absent: left out */
		p->have[c] = fsroot_read_u64(path.buf, &p->counter[c], NULL) == 0;
	}
	strbuf_release(&path);
}

#define IB_STATE_KIND "infiniband"

static void counter_name(struct strbuf *out, const struct ib_port *p, int c)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s %u %s", p->hca, p->port, ib_counters[c].name);
}

static void apply_set(struct ib_readings *r, const struct counter_set *set)
{
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++)
		for (int c = 0; c < IBC__COUNT; c++) {
			counter_name(&name, &r->ports[i], c);
			r->ports[i].have_prev[c] =
				counter_set_get(set, name.buf, &r->ports[i].prev[c]);
		}
	strbuf_release(&name);
}

static void readings_set(const struct ib_readings *r, struct counter_set *set)
{
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++)
		for (int c = 0; c < IBC__COUNT; c++)
			if (r->ports[i].have[c]) {
				counter_name(&name, &r->ports[i], c);
				counter_set_add(set, name.buf, r->ports[i].counter[c]);
			}
	strbuf_release(&name);
}

void ib_state_apply(struct ib_readings *r, const char *text)
{
	struct counter_set set = COUNTER_SET_INIT;
	if (statefile_parse(IB_STATE_KIND, text, strlen(text), &set, NULL) == 0)
		apply_set(r, &set);
	counter_set_release(&set);
}

void ib_state_format(const struct ib_readings *r, struct strbuf *out)
{
	struct counter_set set = COUNTER_SET_INIT;
	readings_set(r, &set);
	statefile_format(IB_STATE_KIND, &set, out);
	counter_set_release(&set);
}

static void state_path(const struct check_ctx *ctx, struct strbuf *out)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", ctx->state_dir, IB_STATE_FILE);
}

int ib_gather(const struct check_ctx *ctx, struct ib_readings *r, struct strbuf *err)
{
	struct strlist hcas = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT;
	int ret = -1;
	int lr = fsroot_list(IB_CLASS_DIR, &hcas, err);
	if (lr < 0)
		goto out;
	for (size_t i = 0; i < hcas.nr; i++) {
		struct strlist ports = STRLIST_INIT;
		strbuf_reset(&path);
		strbuf_addf(&path, IB_CLASS_DIR "/%s/ports", hcas.items[i]);
		if (fsroot_list(path.buf, &ports, err) < 0) {
			strlist_release(&ports);
			goto out;
		}
		/* numeric order: port 2 before port 10 */
		uint64_t nums[64];
		size_t nn = 0;
		for (size_t k = 0; k < ports.nr && nn < ARRAY_SIZE(nums); k++)
			if (parse_u64(ports.items[k], &nums[nn]) && nums[nn] < 1000)
				nn++;
		strlist_release(&ports);
		for (size_t a = 1; a < nn; a++)
			for (size_t b = a; b > 0 && nums[b - 1] > nums[b]; b--) {
				uint64_t t = nums[b];
				nums[b] = nums[b - 1];
				nums[b - 1] = t;
			}
		for (size_t k = 0; k < nn; k++) {
			ALLOC_GROW(r->ports, r->nr + 1, r->alloc);
			struct ib_port *p = &r->ports[r->nr++];
			memset(p, 0, sizeof(*p));
			strlcpy_v(p->hca, hcas.items[i], sizeof(p->hca));
			p->port = (unsigned)nums[k];
			read_port(p);
		}
	}
	if (ctx->state_dir) {
		struct counter_set set = COUNTER_SET_INIT;
		struct strbuf why = STRBUF_INIT;
		r->state_dir = true;
		state_path(ctx, &path);
		int sr = statefile_load(path.buf, IB_STATE_KIND, &set, NULL, &why);
		if (sr == STATEFILE_LOADED) {
			r->have_state = true;
			apply_set(r, &set);
		} else if (sr == STATEFILE_UNUSABLE) {
			strlcpy_v(r->state_error, why.buf, sizeof(r->state_error));
		}
		counter_set_release(&set);
		strbuf_release(&why);
	}
	ret = 0;
out:
	strlist_release(&hcas);
	strbuf_release(&path);
	return ret;
}

static bool matches(const struct strlist *pats, const struct ib_port *p)
{
	char full[96];
	snprintf(full, sizeof(full), "%s:%u", p->hca, p->port);
	for (size_t i = 0; i < pats->nr; i++)
		if (!fnmatch(pats->items[i], p->hca, 0) || !fnmatch(pats->items[i], full, 0))
			return true;
	return false;
}

/* 4: ACTIVE, or 5: ACTIVE_DEFER (active, briefly deferring traps) */
static bool port_active(const struct ib_port *p)
{
	return p->state_num == 4 || p->state_num == 5;
}

static bool is_ib(const struct ib_port *p)
{
	return !p->link_layer[0] || !strcmp(p->link_layer, "InfiniBand");
}

enum pick { PICK_CHECK, PICK_IGNORED, PICK_ETHERNET, PICK_NOT_NAMED };

static enum pick pick(const struct ib_options *opt, const struct ib_port *p)
{
	if (matches(&opt->ignore, p))
		return PICK_IGNORED;
	if (opt->hcas.nr)
		return matches(&opt->hcas, p) ? PICK_CHECK : PICK_NOT_NAMED;
	if (!is_ib(p) && !opt->include_ethernet)
		return PICK_ETHERNET;
	return PICK_CHECK;
}

static const char *state_word(const char *s)
{
	const char *c = strchr(s, ':');
	if (!c)
		return s[0] ? s : "?";
	c++;
	while (*c == ' ')
		c++;
	return c;
}

/* Why an inactive port is not active. */
static void eval_state(const struct ib_port *p, const char *dev, struct check_result *res)
{
	struct finding *f;
	const char *st = state_word(p->state), *ph = state_word(p->phys_state);
	if (p->phys_num == 3) {
		f = result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "port_disabled", dev,
			       "%s is disabled (phys_state Disabled): turned off on purpose?", dev);
	} else if (p->phys_num == 2) {
		f = result_add(res, STATUS_FAIL, ACTION_REPLACE_CABLE, "port_down", dev,
			       "%s is down (Polling: no link to the switch): check cable and "
			       "switch port", dev);
	} else if ((p->state_num == 2 || p->state_num == 3) && p->phys_num == 5) {
		f = result_add(res, STATUS_FAIL, ACTION_INVESTIGATE, "port_not_active", dev,
			       "%s is %s: link up but not activated by the subnet manager", dev,
			       st);
	} else if (p->phys_num == 6) {
		f = result_add(res, STATUS_FAIL, ACTION_REPLACE_CABLE, "port_down", dev,
			       "%s is %s in link error recovery: check the cable", dev, st);
	} else {
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_down", dev,
			       "%s is %s (phys_state %s)", dev, st, ph);
	}
	finding_detail(f, "state", "%s", p->state);
	finding_detail(f, "phys_state", "%s", p->phys_state);
	finding_detail(f, "link_layer", "%s", p->link_layer);
}

/* Counter rises since the last run. Returns true when something was reported. */
static bool eval_counters(const struct ib_port *p, const char *dev, const struct ib_options *opt,
			  struct check_result *res, size_t *resets)
{
	bool bad = false;
	struct strbuf sat = STRBUF_INIT;
	for (int c = 0; c < IBC__COUNT; c++) {
		const struct ib_counter_def *d = &ib_counters[c];
		if (!p->have[c])
			continue;
		if (d->bits < 64 && p->counter[c] == (1ull << d->bits) - 1) {
			if (sat.len)
				strbuf_addstr(&sat, ", ");
			strbuf_addf(&sat, "%s %llu", d->name, (unsigned long long)p->counter[c]);
		}
		if (!p->have_prev[c])
			continue;
		if (p->counter[c] < p->prev[c]) {
			(*resets)++; /* cleared or rebooted: this reading is the new baseline */
			continue;
		}
		uint64_t rise = p->counter[c] - p->prev[c];
		uint64_t limit = c == IBC_LINK_DOWNED ? opt->link_downed_threshold : opt->threshold;
		if (!rise || rise < limit)
			continue;
		struct finding *f = result_add(res, d->fails ? STATUS_FAIL : STATUS_WARN, d->action,
					       d->name, dev, "%s: %s +%llu since the last run (%s)",
					       dev, d->name, (unsigned long long)rise, d->meaning);
		finding_detail_num(f, "rise", (double)rise);
		finding_detail_num(f, "value", (double)p->counter[c]);
		finding_detail_num(f, "previous", (double)p->prev[c]);
		finding_detail_num(f, "threshold", (double)limit);
		bad = true;
	}
	if (sat.len) {
		struct finding *f = result_add(res, STATUS_WARN, ACTION_INVESTIGATE,
					       "counter_saturated", dev,
					       "%s: counters stuck at their maximum (%s), rises cannot "
					       "be seen: clear them (perfquery -R)",
					       dev, sat.buf);
		finding_detail(f, "saturated", "%s", sat.buf);
		bad = true;
	}
	strbuf_release(&sat);
	return bad;
}

static double expected_rate(const struct ib_readings *r, const struct ib_options *opt,
			    bool ib_layer)
{
	if (ib_layer && opt->rate > 0)
		return opt->rate;
	double best = 0;
	for (size_t i = 0; i < r->nr; i++) {
		const struct ib_port *p = &r->ports[i];
		if (pick(opt, p) == PICK_CHECK && !p->error[0] && port_active(p) &&
		    is_ib(p) == ib_layer && p->rate_gbps > best)
			best = p->rate_gbps;
	}
	return best;
}

void ib_evaluate(const struct ib_readings *r, const struct ib_options *opt,
		 struct check_result *res)
{
	size_t checked = 0, active = 0, bad = 0, ignored = 0, ethernet = 0, resets = 0;
	size_t new_ports = 0;
	double ib_rate = expected_rate(r, opt, true), eth_rate = expected_rate(r, opt, false);
	double lo = 0, hi = 0;
	struct strbuf dev = STRBUF_INIT;
	struct finding *f;
	for (size_t i = 0; i < r->nr; i++) {
		const struct ib_port *p = &r->ports[i];
		enum pick k = pick(opt, p);
		ignored += k == PICK_IGNORED;
		ethernet += k == PICK_ETHERNET;
		if (k != PICK_CHECK)
			continue;
		checked++;
		strbuf_reset(&dev);
		strbuf_addf(&dev, "%s port %u", p->hca, p->port);
		if (p->error[0]) {
			result_add(res, STATUS_UNKNOWN, ACTION_NONE, "unreadable", dev.buf,
				   "cannot read %s: %s", dev.buf, p->error);
			bad++;
			continue;
		}
		bool port_bad = false;
		if (port_active(p)) {
			active++;
			double want = is_ib(p) ? ib_rate : eth_rate;
			if (p->rate_gbps > 0 && want > 0 && p->rate_gbps + 0.01 < want) {
				f = result_add(res, STATUS_FAIL, ACTION_REPLACE_CABLE, "rate",
					       dev.buf, "%s at %s, expected %g Gb/s", dev.buf,
					       p->rate, want);
				finding_detail_num(f, "rate_gbps", p->rate_gbps);
				finding_detail_num(f, "expected_gbps", want);
				port_bad = true;
			}
			if (p->rate_gbps > 0) {
				lo = lo == 0 || p->rate_gbps < lo ? p->rate_gbps : lo;
				hi = p->rate_gbps > hi ? p->rate_gbps : hi;
			}
		} else {
			eval_state(p, dev.buf, res);
			port_bad = true;
		}
		bool any_prev = false;
		for (int c = 0; c < IBC__COUNT; c++)
			any_prev |= p->have_prev[c];
		if (!any_prev)
			new_ports++;
		if (eval_counters(p, dev.buf, opt, res, &resets))
			port_bad = true;
		bad += port_bad;
	}
	if (opt->count_set && active < opt->count) {
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_count", "",
			       "%zu of %llu expected InfiniBand ports active", active,
			       (unsigned long long)opt->count);
		finding_detail_num(f, "active", (double)active);
		finding_detail_num(f, "expected", (double)opt->count);
	}
	if (!checked) {
		if (res->nr)
			goto out;
		if (ethernet)
			f = result_add(res, STATUS_SKIPPED, ACTION_NONE, "no_ports", "",
				       "no InfiniBand ports (%zu Ethernet port%s left out: set "
				       "infiniband.include-ethernet to check RoCE)",
				       ethernet, ethernet == 1 ? "" : "s");
		else
			f = result_add(res, STATUS_SKIPPED, ACTION_NONE, "no_ports", "",
				       r->nr ? "no InfiniBand ports chosen by the configuration"
					     : "no InfiniBand devices");
		if (ignored)
			finding_detail_num(f, "ignored", (double)ignored);
		goto out;
	}
	const char *counters = !r->state_dir ? "not compared (no state directory)"
			       : !r->have_state || new_ports == checked ? "first reading saved"
									: "steady since the last run";
	if (bad >= checked)
		goto out; /* every port has a finding of its own */
	if (bad) {
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu of %zu ports without problems", checked - bad, checked);
	} else if (lo > 0 && lo == hi) {
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu port%s ACTIVE at %g Gb/s; error counters: %s", active,
			       active == 1 ? "" : "s", hi, counters);
	} else {
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu port%s ACTIVE; error counters: %s", active,
			       active == 1 ? "" : "s", counters);
	}
	finding_detail_num(f, "ports", (double)checked);
	finding_detail_num(f, "active", (double)active);
	finding_detail(f, "counters", "%s", counters);
	if (ib_rate > 0)
		finding_detail_num(f, "expected_gbps", ib_rate);
	if (ignored)
		finding_detail_num(f, "ignored", (double)ignored);
	if (ethernet)
		finding_detail_num(f, "ethernet_left_out", (double)ethernet);
	if (resets)
		finding_detail_num(f, "counters_reset", (double)resets);
out:
	strbuf_release(&dev);
}

static void load_patterns(const struct config *cfg, const char *key, struct strlist *out)
{
	const char **vals;
	size_t n = config_get_all(cfg, "infiniband", key, &vals);
	for (size_t i = 0; i < n; i++)
		strlist_split(out, vals[i], ", ");
	free(vals);
	for (size_t i = 0; i < out->nr; i++)
		for (char *s = out->items[i]; *s; s++)
			if (*s == '/')
				*s = ':'; /* "mlx5_0/1" means port 1 too */
}

int ib_options_load(const struct config *cfg, struct ib_options *opt, struct strbuf *err)
{
	memset(opt, 0, sizeof(*opt));
	load_patterns(cfg, "hcas", &opt->hcas);
	load_patterns(cfg, "ignore", &opt->ignore);
	if (config_get_bool(cfg, "infiniband", "include-ethernet", false, &opt->include_ethernet,
			    err) < 0 ||
	    config_get_double(cfg, "infiniband", "rate", 0, &opt->rate, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "count", 0, &opt->count, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "counter-threshold", 10, &opt->threshold, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "link-downed-threshold", 1,
			   &opt->link_downed_threshold, err) < 0)
		return -1;
	if (opt->rate < 0 || !isfinite(opt->rate))
		return error_set(err, "infiniband.rate wants Gb/s, not '%s'",
				 config_get(cfg, "infiniband", "rate"));
	if (!opt->threshold || !opt->link_downed_threshold)
		return error_set(err, "infiniband: counter thresholds must be at least 1");
	opt->count_set = config_get(cfg, "infiniband", "count") != NULL;
	return 0;
}

void ib_options_release(struct ib_options *opt)
{
	strlist_release(&opt->hcas);
	strlist_release(&opt->ignore);
}

void ib_readings_release(struct ib_readings *r)
{
	free(r->ports);
	memset(r, 0, sizeof(*r));
}

int check_infiniband_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct ib_readings r;
	struct ib_options opt;
	struct strbuf path = STRBUF_INIT, werr = STRBUF_INIT;
	int ret = -1;
	memset(&r, 0, sizeof(r));
	if (ib_options_load(ctx->cfg, &opt, err) < 0)
		goto out;
	if (ib_gather(ctx, &r, err) < 0)
		goto out;
	ib_evaluate(&r, &opt, res);
	if (r.state_error[0])
		result_add(res, STATUS_WARN, ACTION_NONE, "state", "",
			   "no previous counter reading: %s (a new one is kept)", r.state_error);
	if (ctx->state_dir && r.nr) {
		struct counter_set set = COUNTER_SET_INIT;
		readings_set(&r, &set);
		state_path(ctx, &path);
		if (statefile_save(path.buf, IB_STATE_KIND, &set, &werr) < 0)
			result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "state", "",
				   "cannot keep the counter reading: %s", werr.buf);
		counter_set_release(&set);
	}
	ret = 0;
out:
	ib_options_release(&opt);
	ib_readings_release(&r);
	strbuf_release(&path);
	strbuf_release(&werr);
	return ret;
}
