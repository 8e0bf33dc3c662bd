/* select.c: choosing the checks of a run and running them into one report (see select.h). */
#include "select.h"

int checks_select(const struct config *cfg, const struct check_selection *sel,
		  struct run_item *items, struct report *rep, struct strbuf *err)
{
	const char **cfg_skip;
	size_t nr_cfg_skip = config_get_all(cfg, "check", "skip", &cfg_skip);
	struct strlist skip_cfg = STRLIST_INIT;
	bool have_only = sel->only_given || (sel->only && sel->only->nr);
	size_t disabled = 0;
	int n = 0;
	for (size_t i = 0; i < nr_cfg_skip; i++)
		strlist_split(&skip_cfg, cfg_skip[i], ", ");
	free(cfg_skip);
	uint64_t default_s;
	if (config_get_u64(cfg, "check", "timeout", 0, &default_s, err) < 0) {
		n = -1;
		goto out;
	}
	for (size_t i = 0; i < check_table_nr; i++) {
		const struct check_def *d = &check_table[i];
		if (have_only && !(sel->only && strlist_has(sel->only, d->name)))
			continue;
		if (sel->skip && strlist_has(sel->skip, d->name))
			continue;
		bool enabled;
		if (config_get_bool(cfg, d->name, "enabled", true, &enabled, err) < 0) {
			n = -1;
			goto out;
		}
		if (!enabled || strlist_has(&skip_cfg, d->name)) {
			disabled++;
			if (have_only)
				continue;
			struct check_result *r = report_add(rep, d->name);
			r->status = STATUS_SKIPPED;
			result_add(r, STATUS_SKIPPED, ACTION_NONE, "disabled", "",
				   "disabled by the configuration");
			continue;
		}
		uint64_t t_s;
		if (config_get_u64(cfg, d->name, "timeout", default_s, &t_s, err) < 0) {
			n = -1;
			goto out;
		}
		items[n].def = d;
		items[n].timeout_ms = t_s ? (unsigned)(t_s * 1000) : d->timeout_ms;
		n++;
	}
	if (!n) {
		error_set(err, "no check selected%s: a run that examines nothing cannot say healthy",
			  disabled ? " (the rest are disabled by the configuration)"
			  : have_only ? " (--only names none that --skip leaves)"
				      : " (--skip names them all)");
		n = -1;
	}
out:
	strlist_release(&skip_cfg);
	return n;
}

/* Results in table order, whether they ran or were skipped by configuration. */
static void sort_results(struct report *rep)
{
	struct check_result *sorted = xcalloc(rep->nr ? rep->nr : 1, sizeof(*sorted));
	size_t k = 0;
	for (size_t i = 0; i < check_table_nr; i++)
		for (size_t j = 0; j < rep->nr; j++)
			if (!strcmp(rep->results[j].name, check_table[i].name))
				sorted[k++] = rep->results[j];
	/* anything not in the table (a pseudo-check such as "root") keeps its place at the end */
	for (size_t j = 0; j < rep->nr; j++)
		if (!check_find(rep->results[j].name))
			sorted[k++] = rep->results[j];
	free(rep->results);
	rep->results = sorted;
	rep->alloc = rep->nr ? rep->nr : 1;
}

int checks_collect(struct check_ctx *ctx, const struct check_selection *sel, double timeout_s,
		   struct report *rep, struct strbuf *err)
{
	struct run_item *items = xcalloc(check_table_nr, sizeof(*items));
	report_init(rep, ctx->host, wall_seconds());
	uint64_t t0 = mono_ms();
	int n = checks_select(ctx->cfg, sel, items, rep, err);
	if (n < 0) {
		report_release(rep);
		free(items);
		return -1;
	}
	ctx->now = rep->time;
	checks_run(ctx, items, (size_t)n, (unsigned)(timeout_s * 1000), rep);
	rep->duration_ms = mono_ms() - t0;
	sort_results(rep);
	report_finish(rep);
	free(items);
	return 0;
}
