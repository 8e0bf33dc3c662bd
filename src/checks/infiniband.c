/*
 * infiniband.c: the 'infiniband' check. For each port under /sys/class/infiniband/<hca>/ports/<n>:
 *
 *   - state must be ACTIVE; why it is not (Polling: no light from the other end; Disabled: turned
 *     off on purpose; INIT/ARMED: the link is up but the subnet manager has not activated it)
 *     picks the status and the action;
 *   - rate against infiniband.rate, or by default against the fastest port of the host, so that
 *     one port that came up at HDR among NDR ports stands out;
 *   - error counters: absolute values mean little (they count since the last reset), rises do,
 *     and a rise means nothing without the time it took. A reading and its time are kept in
 *     STATE_DIR/infiniband.state (kept as the baseline for up to an hour, statefile.h); each run
 *     says a rise as "+4000 in 5 min (48,000/h)" and judges it as a rate.
 *
 * Ethernet (RoCE) ports are left out unless infiniband.include-ethernet is set or infiniband.hcas
 * names them: a front-end Ethernet NIC with an unplugged spare port must not drain a host.
 */
#include "infiniband.h"
#include "../lib/fileio.h"
#include "../lib/statefile.h"
#include "../sys/fsroot.h"
#include "../sys/sysattr.h"

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

/*
 * The names the kernel writes beside the numbers (drivers/infiniband/core/sysfs.c: state_show's
 * state_name[] and phys_state_to_str(), "%d: %s"): a number and a name that disagree ("1:
 * ACTIVE") are no state either can be trusted for. A number past the table is written with
 * "<unknown>".
 */
static const char *const ib_state_names[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE",
					      "ACTIVE_DEFER" };
static const char *const ib_phys_names[] = { "<unknown>", "Sleep", "Polling", "Disabled",
					     "PortConfigurationTraining", "LinkUp",
					     "LinkErrorRecovery", "Phy Test" };

const char *ib_port_state_name(int num, bool phys)
{
	if (num < 0)
		return NULL;
	if (phys)
		return (size_t)num < ARRAY_SIZE(ib_phys_names) ? ib_phys_names[num] : "<unknown>";
	return (size_t)num < ARRAY_SIZE(ib_state_names) ? ib_state_names[num] : "<unknown>";
}

bool ib_state_agrees(const char *s, int num, bool phys)
{
	const char *want = ib_port_state_name(num, phys), *c = strchr(s, ':');
	if (!want || !c)
		return false;
	c++;
	while (*c == ' ')
		c++;
	size_t n = strlen(c);
	while (n && (c[n - 1] == '\n' || c[n - 1] == ' '))
		n--;
	return n == strlen(want) && !memcmp(c, want, n);
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

/* One attribute of a port into buf; when it cannot be read, why (naming the file) into why[wn]. */
static int port_attr(const struct fsroot *root, const struct ib_port *p, const char *name,
		     char *buf, size_t n, char *why, size_t wn)
{
	struct strbuf path = STRBUF_INIT, v = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, IB_CLASS_DIR "/%s/ports/%u/%s", p->hca, p->port, name);
	int r = sysattr_read(root, path.buf, &v, &err);
	buf[0] = '\0';
	if (r == READ_OK)
		strlcpy_v(buf, v.buf, n);
	else if (!why[0])
		strlcpy_v(why, err.len ? err.buf : "unreadable", wn);
	strbuf_release(&path);
	strbuf_release(&v);
	strbuf_release(&err);
	return r;
}

/* A state whose number and name disagree: the port is unknown, both quoted. */
static void disagree(struct ib_port *p, const char *attr, const char *text, int num, bool phys)
{
	if (num < 0 || ib_state_agrees(text, num, phys) || p->error[0])
		return;
	struct strbuf q = STRBUF_INIT;
	strbuf_add_excerpt(&q, text, 40);
	snprintf(p->error, sizeof(p->error),
		 "'" IB_CLASS_DIR "/%s/ports/%u/%s' holds '%s': the number %d is %s, the name is "
		 "not",
		 p->hca, p->port, attr, q.buf, num, ib_port_state_name(num, phys));
	strbuf_release(&q);
}

static void read_port(const struct fsroot *root, struct ib_port *p)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	port_attr(root, p, "state", p->state, sizeof(p->state), p->error, sizeof(p->error));
	port_attr(root, p, "phys_state", p->phys_state, sizeof(p->phys_state), p->phys_error,
		  sizeof(p->phys_error));
	/* rate reads EINVAL on some kernels while the port is down: judged for active ports only */
	port_attr(root, p, "rate", p->rate, sizeof(p->rate), p->rate_error, sizeof(p->rate_error));
	port_attr(root, p, "link_layer", p->link_layer, sizeof(p->link_layer), p->layer_error,
		  sizeof(p->layer_error));
	p->state_num = ib_parse_state(p->state);
	p->phys_num = ib_parse_state(p->phys_state);
	disagree(p, "state", p->state, p->state_num, false);
	disagree(p, "phys_state", p->phys_state, p->phys_num, true);
	if (!ib_parse_rate(p->rate, &p->rate_gbps))
		p->rate_gbps = 0;
	for (int c = 0; c < IBC__COUNT; c++) {
		strbuf_reset(&path);
		strbuf_addf(&path, IB_CLASS_DIR "/%s/ports/%u/counters/%s", p->hca, p->port,
			    ib_counters[c].name);
		strbuf_reset(&err);
		/* a counter the driver does not have is absent: left out. One that is there but
		 * cannot be read is not "steady": evaluate says so */
		int cr = sysattr_read_u64(root, path.buf, &p->counter[c], &err);
		p->have[c] = cr == READ_OK;
		if (cr < 0) {
			p->unreadable[c] = true;
			if (!p->counter_error[0])
				strlcpy_v(p->counter_error, err.buf, sizeof(p->counter_error));
		}
	}
	strbuf_release(&path);
	strbuf_release(&err);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static struct ib_port *new_port(struct ib_readings *r, const char *hca, unsigned port)
{
	ALLOC_GROW(r->ports, r->nr + 1, r->alloc);
	struct ib_port *p = &r->ports[r->nr++];
	memset(p, 0, sizeof(*p));
	strlcpy_v(p->hca, hca, sizeof(p->hca));
	p->port = port;
	p->state_num = p->phys_num = -1;
	return p;
}

/*
 * The ports of one HCA, in numeric order (2 before 10), as many as it has. An HCA whose ports
 * cannot be listed, or that lists none, is one entry with port 0 and the reason: unknown by name,
 * not an HCA that vanished from the count.
 */
static void gather_hca(const struct fsroot *root, struct ib_readings *r, const char *hca)
{
	struct strlist names = STRLIST_INIT;
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	uint64_t *nums = NULL;
	size_t nn = 0, alloc = 0;
	strbuf_addf(&path, IB_CLASS_DIR "/%s/ports", hca);
	int lr = fsroot_list(root, path.buf, &names, &err);
	for (size_t k = 0; lr == 0 && k < names.nr; k++) {
		uint64_t v;
		if (parse_u64(names.items[k], &v) && v > 0 && v < 1000) {
			ALLOC_GROW(nums, nn + 1, alloc);
			nums[nn++] = v;
		}
	}
	if (nn)
		qsort(nums, nn, sizeof(*nums), cmp_u64);
	if (lr == READ_MISSING)
		error_set(&err, "'%s' is missing", path.buf);
	else if (lr == 0 && !nn)
		error_set(&err, "'%s' lists no ports", path.buf);
	if (!nn) {
		struct ib_port *p = new_port(r, hca, 0);
		strlcpy_v(p->error, err.len ? err.buf : "unreadable", sizeof(p->error));
	}
	for (size_t k = 0; k < nn; k++)
		read_port(root, new_port(r, hca, (unsigned)nums[k]));
	free(nums);
	strlist_release(&names);
	strbuf_release(&path);
	strbuf_release(&err);
}

int ib_gather(const struct check_ctx *ctx, struct ib_readings *r, struct strbuf *err)
{
	struct strlist hcas = STRLIST_INIT;
	int ret = -1;
	int lr = fsroot_list(ctx->root, IB_CLASS_DIR, &hcas, err);
	if (lr < 0)
		goto out;
	for (size_t i = 0; i < hcas.nr; i++)
		gather_hca(ctx->root, r, hcas.items[i]);
	ib_state_load(ctx, r);
	ret = 0;
out:
	strlist_release(&hcas);
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

/*
 * The kernel writes "InfiniBand", "Ethernet" or, when it cannot tell, "Unknown". Anything else,
 * or nothing, is not read as either: such a port might be an InfiniBand port to check or an
 * Ethernet one to leave out, so it is unknown by name.
 */
static bool layer_known(const struct ib_port *p)
{
	return !p->layer_error[0] &&
	       (!strcmp(p->link_layer, "InfiniBand") || !strcmp(p->link_layer, "Ethernet"));
}

static bool is_ib(const struct ib_port *p)
{
	return !strcmp(p->link_layer, "InfiniBand");
}

enum pick { PICK_CHECK, PICK_IGNORED, PICK_ETHERNET, PICK_NOT_NAMED };

static enum pick pick(const struct ib_options *opt, const struct ib_port *p)
{
	if (matches(&opt->ignore, p))
		return PICK_IGNORED;
	if (opt->hcas.nr)
		return matches(&opt->hcas, p) ? PICK_CHECK : PICK_NOT_NAMED;
	if (p->error[0] || !layer_known(p))
		return PICK_CHECK; /* to say it cannot be told */
	if (!is_ib(p) && !opt->include_ethernet)
		return PICK_ETHERNET;
	return PICK_CHECK;
}

/* Text from sysfs, for a message: a short clean excerpt in q. */
static const char *quote(struct strbuf *q, const char *s)
{
	strbuf_reset(q);
	strbuf_add_excerpt(q, s, 40);
	return q->buf;
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
	struct strbuf qs = STRBUF_INIT, qp = STRBUF_INIT;
	struct finding *f;
	const char *st = quote(&qs, state_word(p->state));
	const char *ph = quote(&qp, state_word(p->phys_state));
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
	} else if (p->phys_num < 0) {
		/* not active is known from state alone; why is not */
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_down", dev,
			       "%s is %s (phys_state unreadable: %s)", dev, st,
			       p->phys_error[0] ? p->phys_error : "not a physical state");
	} else {
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_down", dev,
			       "%s is %s (phys_state %s)", dev, st, ph);
	}
	finding_detail(f, "state", "%s", quote(&qs, p->state));
	finding_detail(f, "phys_state", "%s", quote(&qs, p->phys_state));
	finding_detail(f, "link_layer", "%s", quote(&qs, p->link_layer));
	strbuf_release(&qs);
	strbuf_release(&qp);
}

/* Counters that exist but could not be read: rises there cannot be seen. */
static bool eval_unreadable_counters(const struct ib_port *p, const char *dev,
				     struct check_result *res)
{
	struct strbuf names = STRBUF_INIT;
	size_t n = 0;
	for (int c = 0; c < IBC__COUNT; c++) {
		if (!p->unreadable[c])
			continue;
		strbuf_addf(&names, "%s%s", n++ ? ", " : "", ib_counters[c].name);
	}
	if (n) {
		struct finding *f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE,
					       "counters_unreadable", dev,
					       "cannot read %zu error counter%s of %s (%s): rises "
					       "cannot be seen; %s",
					       n, n == 1 ? "" : "s", dev, names.buf,
					       p->counter_error[0] ? p->counter_error
								   : "unreadable");
		finding_detail(f, "counters", "%s", names.buf);
	}
	strbuf_release(&names);
	return n > 0;
}

/* A value the port cannot be judged without; returns true when it was reported unknown. */
static bool eval_unreadable(const struct ib_port *p, const char *dev, struct check_result *res)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f = NULL;
	if (p->error[0]) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "unreadable", dev,
			       "cannot read %s: %s", dev, p->error);
		finding_detail(f, "error", "%s", p->error);
	} else if (p->state_num < 0) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "unreadable", dev,
			       "cannot read %s: '" IB_CLASS_DIR "/%s/ports/%u/state' holds '%s', "
			       "not a port state",
			       dev, p->hca, p->port, quote(&q, p->state));
	} else if (p->layer_error[0]) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "link_layer_unreadable", dev,
			       "cannot tell whether %s is InfiniBand or Ethernet: %s", dev,
			       p->layer_error);
		finding_detail(f, "error", "%s", p->layer_error);
	} else if (!layer_known(p)) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "link_layer_unreadable", dev,
			       "cannot tell whether %s is InfiniBand or Ethernet: '" IB_CLASS_DIR
			       "/%s/ports/%u/link_layer' holds '%s'",
			       dev, p->hca, p->port, quote(&q, p->link_layer));
	}
	strbuf_release(&q);
	return f != NULL;
}

/* The rate of an active port. Returns true when something was reported. */
static bool eval_rate(const struct ib_port *p, const char *dev, double want,
		      struct check_result *res)
{
	struct strbuf q = STRBUF_INIT;
	struct finding *f;
	bool bad = true;
	if (p->rate_error[0]) {
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "rate_unreadable", dev,
			       "cannot read the rate of %s: %s", dev, p->rate_error);
		finding_detail(f, "error", "%s", p->rate_error);
	} else if (!(p->rate_gbps > 0)) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "rate_unreadable", dev,
			   "cannot read the rate of %s: '" IB_CLASS_DIR "/%s/ports/%u/rate' holds "
			   "'%s', not a rate",
			   dev, p->hca, p->port, quote(&q, p->rate));
	} else if (want > 0 && p->rate_gbps + 0.01 < want) {
		f = result_add(res, STATUS_FAIL, ACTION_REPLACE_CABLE, "rate", dev,
			       "%s at %s, expected %g Gb/s", dev, quote(&q, p->rate), want);
		finding_detail_num(f, "rate_gbps", p->rate_gbps);
		finding_detail_num(f, "expected_gbps", want);
	} else {
		bad = false;
	}
	strbuf_release(&q);
	return bad;
}

/*
 * Counter rises since the kept reading, said with their time base. link_downed alarms on any
 * rise of link-downed-threshold (a link that went down once is news however long ago); the
 * others on a rate (statefile.h rate_alarms()). Returns true when something was reported.
 */
static bool eval_counters(const struct ib_port *p, const char *dev, double secs,
			  const struct ib_options *opt, struct check_result *res, size_t *resets)
{
	bool bad = false;
	struct strbuf sat = STRBUF_INIT, rate = STRBUF_INIT;
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
		double per_hour = c == IBC_SYMBOL_ERROR ? opt->symbol_error_rate : opt->error_rate;
		bool alarm = c == IBC_LINK_DOWNED ? rise && rise >= opt->link_downed_threshold
						  : rate_alarms(rise, secs, per_hour, opt->min_rise);
		if (!alarm)
			continue;
		strbuf_reset(&rate);
		rate_format(&rate, rise, secs);
		struct finding *f = result_add(res, d->fails ? STATUS_FAIL : STATUS_WARN, d->action,
					       d->name, dev, "%s: %s %s: %s", dev, d->name, rate.buf,
					       d->meaning);
		finding_detail_num(f, "delta", (double)rise);
		finding_detail_num(f, "rise", (double)rise);
		if (secs >= 0)
			finding_detail_num(f, "seconds", secs);
		if (secs >= 1)
			finding_detail_num(f, "rate_per_hour", rate_per_hour(rise, secs));
		finding_detail_num(f, "value", (double)p->counter[c]);
		finding_detail_num(f, "previous", (double)p->prev[c]);
		if (c == IBC_LINK_DOWNED) {
			finding_detail_num(f, "threshold", (double)opt->link_downed_threshold);
		} else {
			finding_detail_num(f, "threshold_per_hour", per_hour);
			finding_detail_num(f, "min_rise", (double)opt->min_rise);
		}
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
	strbuf_release(&rate);
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
		if (pick(opt, p) == PICK_CHECK && !p->error[0] && layer_known(p) &&
		    port_active(p) && !p->rate_error[0] && is_ib(p) == ib_layer &&
		    p->rate_gbps > best)
			best = p->rate_gbps;
	}
	return best;
}

void ib_evaluate(const struct ib_readings *r, const struct ib_options *opt,
		 struct check_result *res)
{
	size_t checked = 0, active = 0, bad = 0, ignored = 0, ethernet = 0, resets = 0;
	size_t new_ports = 0, no_counters = 0, unsure = 0;
	bool unsure_hca = false; /* an HCA whose ports cannot be listed: any number may be up */
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
		strbuf_add_clean(&dev, p->hca);
		if (p->port)
			strbuf_addf(&dev, " port %u", p->port);
		if (eval_unreadable(p, dev.buf, res)) {
			bad++;
			unsure++;
			unsure_hca |= !p->port;
			continue;
		}
		bool port_bad = false;
		if (port_active(p)) {
			active++;
			port_bad = eval_rate(p, dev.buf, is_ib(p) ? ib_rate : eth_rate, res);
			if (p->rate_gbps > 0) {
				lo = lo == 0 || p->rate_gbps < lo ? p->rate_gbps : lo;
				hi = p->rate_gbps > hi ? p->rate_gbps : hi;
			}
		} else {
			eval_state(p, dev.buf, res);
			port_bad = true;
		}
		bool any_prev = false, any = false;
		for (int c = 0; c < IBC__COUNT; c++) {
			any_prev |= p->have_prev[c];
			any |= p->have[c] || p->unreadable[c];
		}
		if (!any_prev)
			new_ports++;
		no_counters += !any;
		if (eval_unreadable_counters(p, dev.buf, res))
			port_bad = true;
		if (eval_counters(p, dev.buf, r->age, opt, res, &resets))
			port_bad = true;
		bad += port_bad;
	}
	if (opt->count_set && active < opt->count) {
		/* A port that could not be read may be one of the missing: short of the count only
		 * if even all of them up would not reach it; otherwise the count is unknown. */
		bool short_anyway = !unsure_hca && active + unsure < opt->count;
		if (!unsure || short_anyway)
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_count", "",
				       "%zu of %llu expected InfiniBand ports active%s", active,
				       (unsigned long long)opt->count,
				       unsure ? "; short even if those that cannot be read are" : "");
		else
			f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "port_count", "",
				       "%zu of %llu expected InfiniBand ports known to be active; "
				       "%zu cannot be read", active, (unsigned long long)opt->count,
				       unsure);
		finding_detail_num(f, "active", (double)active);
		finding_detail_num(f, "expected", (double)opt->count);
		if (unsure)
			finding_detail_num(f, "unreadable", (double)unsure);
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
	struct strbuf cb = STRBUF_INIT;
	if (no_counters == checked) {
		strbuf_addstr(&cb, "none (the driver shows no counters)");
	} else if (!r->state_dir) {
		strbuf_addstr(&cb, "not compared (no state directory)");
	} else if (r->have_state && r->base != BASE_OK) {
		statefile_base_describe(r->base, r->age, &cb);
	} else if (!r->have_state || new_ports == checked) {
		statefile_base_describe(BASE_FIRST, -1, &cb);
	} else {
		strbuf_addstr(&cb, "steady since the last run");
		if (r->age >= 1) {
			strbuf_addstr(&cb, " (");
			statefile_span(&cb, r->age);
			strbuf_addstr(&cb, " ago)");
		}
	}
	const char *counters = cb.buf;
	if (bad >= checked)
		goto out_cb; /* every port has a finding of its own */
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
	if (r->state_dir && r->age >= 0 && r->base == BASE_OK)
		finding_detail_num(f, "seconds", r->age);
	if (no_counters && no_counters < checked)
		finding_detail_num(f, "ports_without_counters", (double)no_counters);
out_cb:
	strbuf_release(&cb);
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
	uint64_t old = 10;
	memset(opt, 0, sizeof(*opt));
	load_patterns(cfg, "hcas", &opt->hcas);
	load_patterns(cfg, "ignore", &opt->ignore);
	if (config_get_bool(cfg, "infiniband", "include-ethernet", false, &opt->include_ethernet,
			    err) < 0 ||
	    config_get_double(cfg, "infiniband", "rate", 0, &opt->rate, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "count", 0, &opt->count, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "counter-threshold", 10, &old, err) < 0 ||
	    config_get_double(cfg, "infiniband", "error-rate", (double)old, &opt->error_rate,
			      err) < 0 ||
	    config_get_double(cfg, "infiniband", "symbol-error-rate", opt->error_rate,
			      &opt->symbol_error_rate, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "min-rise", 5, &opt->min_rise, err) < 0 ||
	    config_get_u64(cfg, "infiniband", "link-downed-threshold", 1,
			   &opt->link_downed_threshold, err) < 0)
		return -1;
	/* counter-threshold (a rise per run, before rates) is read as the same number per hour:
	 * within the hour the baseline is kept, that is the same rise */
	if (!(opt->error_rate > 0) || !isfinite(opt->error_rate) ||
	    !(opt->symbol_error_rate > 0) || !isfinite(opt->symbol_error_rate))
		return error_set(err, "infiniband: error rates are errors per hour, above 0");
	if (opt->rate < 0 || !isfinite(opt->rate))
		return error_set(err, "infiniband.rate wants Gb/s, not '%s'",
				 config_get(cfg, "infiniband", "rate"));
	if (!old || !opt->min_rise || !opt->link_downed_threshold)
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
	ib_state_save(ctx, &r, res);
	ret = 0;
out:
	ib_options_release(&opt);
	ib_readings_release(&r);
	return ret;
}
