/*
 * compare.c: two qualify scorecards side by side (see card.h; the rules are docs/QUALIFY.md,
 * "Comparing"): every figure's median, p5 and worst, the stages' wall times, the nodes failed,
 * drained and returned, storage, NCCL busbw at the largest node count both cards measured, and
 * the training figures. Each row says which card is better and whether the difference is beyond
 * noise; a row one card cannot fill is "unknown", never a win.
 */
#include "card.h"

#include <math.h>
#include <stdlib.h>

#define MAX_FIGS       64
#define MAX_STAGES     32
#define MAX_OPS	       16
#define MAX_NODES_READ 100000
#define NAME_BYTES     80

/* The noise floors (docs/QUALIFY.md): throughput and counts of work 3 %, a tail latency or a
 * wall time of one run 10 %. */
#define NOISE_RATE    0.03
#define NOISE_LATENCY 0.10
/* A figure's own spread: this many times its nodes' relative MAD. */
#define NOISE_MADS 2.0
/* Wall times closer than this are the same, whatever the ratio. */
#define WALL_FLOOR_S 1.0

enum winner { W_SAME, W_OLD, W_NEW, W_UNKNOWN };
static const char *const winner_name[] = { "same", "old", "new", "unknown" };

struct row {
	struct strbuf figure, stat;
	const char *unit; /* from a card, or a literal */
	int better;	  /* +1 higher, -1 lower, 0 not known */
	double old, new;
	bool has_old, has_new;
	double noise;	   /* relative */
	double floor_abs;  /* an absolute difference at or below it is noise */
	double node_share; /* > 0: node counts, beyond noise past this share of a cluster */
	size_t old_n, new_n;
	/* derived */
	double change_pct;
	bool has_change, beyond;
	enum winner winner;
};

struct cmp {
	const struct json_value *o, *n; /* the old and new cards */
	struct row *rows;
	size_t nr, alloc;
};

static struct row *add_row(struct cmp *c, const char *figure, const char *stat, const char *unit,
			   int better, double noise)
{
	ALLOC_GROW(c->rows, c->nr + 1, c->alloc);
	struct row *r = &c->rows[c->nr++];
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->figure, 0);
	strbuf_init(&r->stat, 0);
	strbuf_add_excerpt(&r->figure, figure, NAME_BYTES);
	strbuf_addstr(&r->stat, stat);
	r->unit = unit;
	r->better = better;
	r->noise = noise;
	return r;
}

static const struct json_value *array_of(const struct json_value *card, const char *key)
{
	const struct json_value *v = json_get(card, key);
	return v && v->type == JSON_ARRAY ? v : NULL;
}

/* The element of array key of card whose member field is the string name. */
static const struct json_value *find_named(const struct json_value *card, const char *key,
					   const char *field, const char *name)
{
	const struct json_value *a = array_of(card, key);
	for (size_t i = 0; a && i < a->nr; i++) {
		const char *s = json_get_string(a->items[i], field);
		if (s && !strcmp(s, name))
			return a->items[i];
	}
	return NULL;
}

static int better_of(const char *s)
{
	return !s ? 0 : !strcmp(s, "higher") ? 1 : !strcmp(s, "lower") ? -1 : 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * A figure's spread in one card, relative: the median absolute deviation of its nodes' values
 * over their median. Robust on purpose: one sick node (card-a's n2 at 412 of 686 TFLOP/s)
 * stretches p5..median to 34 % but hardly moves the MAD. With fewer than 3 nodes, the card's
 * p5..median instead; -1 when neither is there.
 */
static double rel_spread(const struct json_value *card, const char *name)
{
	const struct json_value *nodes = array_of(card, "nodes");
	size_t n = 0, total = nodes ? nodes->nr : 0;
	double *v = xcalloc(total + 1, sizeof(double)), spread = -1, med, p5;
	for (size_t i = 0; i < total && i < MAX_NODES_READ; i++)
		if (card_num(json_get(nodes->items[i], "figures"), name, &v[n]))
			n++;
	if (n >= 3) {
		med = median_of(v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = fabs(v[i] - med);
		double mad = median_of(v, n);
		spread = med ? mad / fabs(med) : -1;
	} else {
		const struct json_value *f = find_named(card, "figures", "name", name);
		if (card_num(f, "median", &med) && card_num(f, "p5", &p5) && med)
			spread = fabs(med - p5) / fabs(med);
	}
	free(v);
	return spread;
}

static void add_figures(struct cmp *c)
{
	static const char *const stats[] = { "median", "p5", "worst" };
	const char *names[MAX_FIGS];
	size_t nn = 0;
	const struct json_value *cards[] = { c->o, c->n };
	for (size_t k = 0; k < 2; k++) {
		const struct json_value *figs = array_of(cards[k], "figures");
		for (size_t i = 0; figs && i < figs->nr && nn < MAX_FIGS; i++) {
			const char *name = json_get_string(figs->items[i], "name");
			bool seen = !name;
			for (size_t j = 0; j < nn && !seen; j++)
				seen = !strcmp(names[j], name);
			if (!seen)
				names[nn++] = name;
		}
	}
	for (size_t i = 0; i < nn; i++) {
		const struct json_value *fo = find_named(c->o, "figures", "name", names[i]);
		const struct json_value *fn = find_named(c->n, "figures", "name", names[i]);
		int better = better_of(json_get_string(fn, "better"));
		if (!better)
			better = better_of(json_get_string(fo, "better"));
		const char *unit = json_get_string(fn, "unit");
		double noise = NOISE_RATE;
		double so = rel_spread(c->o, names[i]), sn = rel_spread(c->n, names[i]);
		noise = fmax(noise, NOISE_MADS * fmax(so, sn));
		for (size_t s = 0; s < ARRAY_SIZE(stats); s++) {
			struct row *r =
				add_row(c, names[i], stats[s],
					unit ? unit : json_get_string(fo, "unit"), better, noise);
			r->has_old = card_num(fo, stats[s], &r->old);
			r->has_new = card_num(fn, stats[s], &r->new);
		}
	}
}

/* A stage's wall time, when it ran: a skipped stage's 0 s is no time to beat. */
static bool stage_wall(const struct json_value *st, double *v)
{
	const char *status = json_get_string(st, "status");
	if (!status || !strcmp(status, "skipped") || !strcmp(status, "not_run"))
		return false;
	return card_num(st, "wall_s", v);
}

/* The distinct values of key in the items of array, over both cards, first seen first. */
static size_t union_of(const struct cmp *c, const char *array, const char *key, const char **out,
		       size_t max)
{
	size_t n = 0;
	const struct json_value *cards[] = { c->o, c->n };
	for (size_t k = 0; k < 2; k++) {
		const struct json_value *a = array_of(cards[k], array);
		for (size_t i = 0; a && i < a->nr && n < max; i++) {
			const char *v = json_get_string(a->items[i], key);
			bool seen = !v;
			for (size_t j = 0; j < n && !seen; j++)
				seen = !strcmp(out[j], v);
			if (!seen)
				out[n++] = v;
		}
	}
	return n;
}

static void add_stages(struct cmp *c)
{
	const char *names[MAX_STAGES];
	size_t nn = union_of(c, "stages", "name", names, MAX_STAGES);
	for (size_t i = 0; i < nn; i++) {
		struct strbuf f = STRBUF_INIT;
		strbuf_addf(&f, "stage.%s", names[i]);
		struct row *r = add_row(c, f.buf, "wall_s", "s", -1, NOISE_LATENCY);
		r->floor_abs = WALL_FLOOR_S;
		r->has_old = stage_wall(find_named(c->o, "stages", "name", names[i]), &r->old);
		r->has_new = stage_wall(find_named(c->n, "stages", "name", names[i]), &r->new);
		strbuf_release(&f);
	}
}

/* How many nodes the card lists, how many failed a stage; false without a nodes list. */
static bool node_counts(const struct json_value *card, size_t *total, size_t *failed)
{
	const struct json_value *nodes = array_of(card, "nodes");
	*total = *failed = 0;
	if (!nodes)
		return false;
	for (size_t i = 0; i < nodes->nr; i++) {
		const struct json_value *st = json_get(nodes->items[i], "stages");
		bool f = false;
		for (size_t j = 0; st && st->type == JSON_OBJECT && j < st->nr; j++)
			f |= st->items[j]->type == JSON_STRING &&
			     !strcmp(st->items[j]->string, "failed");
		*failed += f;
	}
	*total = nodes->nr;
	return true;
}

static bool list_len(const struct json_value *card, const char *key, double *v)
{
	const struct json_value *a = array_of(card, key);
	if (a)
		*v = (double)a->nr;
	return a;
}

static void add_nodes(struct cmp *c)
{
	size_t ot, of, nt, nf;
	bool ho = node_counts(c->o, &ot, &of), hn = node_counts(c->n, &nt, &nf);
	static const char *const stats[] = { "failed", "drained", "returned" };
	for (size_t s = 0; s < ARRAY_SIZE(stats); s++) {
		struct row *r = add_row(c, "nodes", stats[s], "nodes", -1, 0);
		if (s == 0) {
			r->has_old = ho;
			r->old = (double)of;
			r->has_new = hn;
			r->new = (double)nf;
		} else {
			const char *key = s == 1 ? "to_drain" : "to_return";
			r->has_old = list_len(c->o, key, &r->old);
			r->has_new = list_len(c->n, key, &r->new);
		}
		r->old_n = ot;
		r->new_n = nt;
		/* one node of the smaller cluster: fewer nodes than that tell nothing */
		r->node_share = ho && hn && ot && nt ? 1.0 / (double)(ot < nt ? ot : nt) : 1;
	}
}

static void add_storage(struct cmp *c)
{
	static const struct {
		const char *key, *stat, *unit;
		int better;
		double noise;
	} st[] = {
		{ "write_mib_s", "write_mib_s", "MiB/s", 1, NOISE_RATE },
		{ "read_mib_s", "read_mib_s", "MiB/s", 1, NOISE_RATE },
		{ "meta_ops_s", "meta_ops_s", "ops/s", 1, NOISE_RATE },
		{ "p99", "fsync_p99_ms", "ms", -1, NOISE_LATENCY },
	};
	const struct json_value *so = json_get(c->o, "storage"), *sn = json_get(c->n, "storage");
	for (size_t i = 0; i < ARRAY_SIZE(st); i++) {
		struct row *r =
			add_row(c, "storage", st[i].stat, st[i].unit, st[i].better, st[i].noise);
		bool fsync = !strcmp(st[i].key, "p99");
		r->has_old = card_num(fsync ? json_get(so, "fsync_ms") : so, st[i].key, &r->old);
		r->has_new = card_num(fsync ? json_get(sn, "fsync_ms") : sn, st[i].key, &r->new);
	}
}

/* busbw of op at nodes in card. */
static bool busbw_at(const struct json_value *card, const char *op, double nodes, double *v)
{
	const struct json_value *a = array_of(card, "nccl");
	double x;
	for (size_t i = 0; a && i < a->nr; i++) {
		const char *s = json_get_string(a->items[i], "op");
		if (s && !strcmp(s, op) && card_num(a->items[i], "nodes", &x) && x == nodes &&
		    card_num(a->items[i], "busbw_gbps", v))
			return true;
	}
	return false;
}

/* Per op, the largest node count both cards measured: a 4-node and an 8-node cluster meet at
 * 4, and busbw falls with node count, so comparing each card's largest would be unfair. */
static void add_nccl(struct cmp *c)
{
	const char *ops[MAX_OPS];
	size_t nops = union_of(c, "nccl", "op", ops, MAX_OPS);
	for (size_t i = 0; i < nops; i++) {
		const struct json_value *a = array_of(c->o, "nccl");
		double best = 0, x, v;
		for (size_t j = 0; a && j < a->nr; j++) {
			const char *op = json_get_string(a->items[j], "op");
			if (op && !strcmp(op, ops[i]) && card_num(a->items[j], "nodes", &x) &&
			    x > best && busbw_at(c->o, ops[i], x, &v) &&
			    busbw_at(c->n, ops[i], x, &v))
				best = x;
		}
		struct strbuf f = STRBUF_INIT;
		strbuf_addf(&f, "nccl.%s", ops[i]);
		struct row *r = add_row(c, f.buf, "busbw", "GB/s", 1, NOISE_RATE);
		if (best > 0) {
			strbuf_reset(&r->stat);
			strbuf_addf(&r->stat, "busbw_at_%g_nodes", best);
			r->has_old = busbw_at(c->o, ops[i], best, &r->old);
			r->has_new = busbw_at(c->n, ops[i], best, &r->new);
		}
		strbuf_release(&f);
	}
}

static void add_train(struct cmp *c)
{
	static const struct {
		const char *key, *unit;
		int better;
	} t[] = { { "step_time_s", "s", -1 },
		  { "tokens_per_s", "tokens/s", 1 },
		  { "mfu", "fraction", 1 } };
	const struct json_value *to = json_get(c->o, "train"), *tn = json_get(c->n, "train");
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct row *r = add_row(c, "train", t[i].key, t[i].unit, t[i].better, NOISE_RATE);
		r->has_old = card_num(to, t[i].key, &r->old);
		r->has_new = card_num(tn, t[i].key, &r->new);
	}
}

/* Who wins and whether by more than noise (docs/QUALIFY.md, "Comparing"). */
static void judge(struct row *r)
{
	double d;
	r->winner = W_UNKNOWN;
	if (!r->has_old || !r->has_new)
		return;
	d = r->new - r->old;
	r->has_change = r->old != 0 || d == 0;
	r->change_pct = r->old != 0 ? d / fabs(r->old) * 100 : 0;
	if (!r->better)
		return;
	r->winner = d == 0 ? W_SAME : (d > 0) == (r->better > 0) ? W_NEW : W_OLD;
	if (r->winner == W_SAME)
		return;
	if (r->node_share > 0) {
		double so = r->old_n ? r->old / (double)r->old_n : 0;
		double sn = r->new_n ? r->new / (double)r->new_n : 0;
		r->beyond = fabs(sn - so) > r->node_share;
		return;
	}
	r->beyond = fabs(d) > r->floor_abs && (r->old == 0 || fabs(d) / fabs(r->old) > r->noise);
}

static void card_head(struct json_writer *w, const struct json_value *card)
{
	const struct json_value *nodes = array_of(card, "nodes"),
				*complete = json_get(card, "complete");
	static const char *const keys[] = { "cluster", "job_id", "time" };
	json_open_object(w);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *s = json_get_string(card, keys[i]);
		json_key(w, keys[i]);
		if (s)
			json_string(w, s);
		else
			json_null(w);
	}
	json_key(w, "nodes");
	if (nodes)
		json_uint(w, nodes->nr);
	else
		json_null(w);
	json_key(w, "complete");
	if (complete && complete->type == JSON_BOOL)
		json_bool(w, complete->boolean);
	else
		json_null(w);
	json_close_object(w);
}

static void num_or_null(struct json_writer *w, const char *key, bool has, double v)
{
	json_key(w, key);
	if (has)
		json_double(w, v);
	else
		json_null(w);
}

static void write_json(const struct cmp *c, const size_t sum[4], struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	json_key(&w, "kind");
	json_string(&w, "qualify-compare");
	json_key(&w, "old");
	card_head(&w, c->o);
	json_key(&w, "new");
	card_head(&w, c->n);
	json_key(&w, "rows");
	json_open_array(&w);
	for (size_t i = 0; i < c->nr; i++) {
		const struct row *r = &c->rows[i];
		json_open_object(&w);
		json_key(&w, "figure");
		json_string(&w, r->figure.buf);
		json_key(&w, "stat");
		json_string(&w, r->stat.buf);
		json_key(&w, "unit");
		if (r->unit)
			json_string(&w, r->unit);
		else
			json_null(&w);
		json_key(&w, "better");
		if (r->better)
			json_string(&w, r->better > 0 ? "higher" : "lower");
		else
			json_null(&w);
		num_or_null(&w, "old", r->has_old, r->old);
		num_or_null(&w, "new", r->has_new, r->new);
		json_key(&w, "change_pct");
		if (r->has_change)
			json_fixed(&w, r->change_pct, 2);
		else
			json_null(&w);
		json_key(&w, "winner");
		json_string(&w, winner_name[r->winner]);
		json_key(&w, "beyond_noise");
		json_bool(&w, r->beyond);
		num_or_null(&w, "noise_pct", r->node_share <= 0, r->noise * 100);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "summary");
	json_open_object(&w);
	json_key(&w, "better_in");
	json_uint(&w, sum[W_NEW]);
	json_key(&w, "worse_in");
	json_uint(&w, sum[W_OLD]);
	json_key(&w, "same");
	json_uint(&w, sum[W_SAME]);
	json_key(&w, "unknown");
	json_uint(&w, sum[W_UNKNOWN]);
	json_close_object(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

static void text_head(struct strbuf *out, const char *which, const struct json_value *card)
{
	const struct json_value *nodes = array_of(card, "nodes"),
				*complete = json_get(card, "complete");
	strbuf_addf(out, "  %s: ", which);
	strbuf_add_excerpt(
		out, json_get_string(card, "cluster") ? json_get_string(card, "cluster") : "-",
		NAME_BYTES);
	strbuf_addstr(out, ", job ");
	strbuf_add_excerpt(out,
			   json_get_string(card, "job_id") ? json_get_string(card, "job_id") : "-",
			   NAME_BYTES);
	strbuf_addstr(out, ", ");
	strbuf_add_excerpt(out, json_get_string(card, "time") ? json_get_string(card, "time") : "-",
			   NAME_BYTES);
	if (nodes)
		strbuf_addf(out, ", %zu nodes", nodes->nr);
	if (!complete || complete->type != JSON_BOOL || !complete->boolean)
		strbuf_addstr(out, " (partial: not every stage ran)");
	strbuf_addch(out, '\n');
}

enum { COLS = 7 };

static void write_text(const struct cmp *c, const size_t sum[4], struct strbuf *out)
{
	static const char *const head[COLS] = { "figure", "stat",   "unit",  "old",
						"new",	  "change", "better" };
	static const bool right[COLS] = { false, false, false, true, true, true, false };
	size_t nr = c->nr + 1, width[COLS] = { 0 };
	struct strbuf *cell = xcalloc(nr * COLS, sizeof(*cell));
	char b[32];
	for (size_t i = 0; i < nr * COLS; i++)
		strbuf_init(&cell[i], 0);
	for (size_t k = 0; k < COLS; k++)
		strbuf_addstr(&cell[k], head[k]);
	for (size_t i = 0; i < c->nr; i++) {
		const struct row *r = &c->rows[i];
		struct strbuf *x = &cell[(i + 1) * COLS];
		strbuf_addstr(&x[0], r->figure.buf); /* cleaned when the row was made */
		strbuf_add_clean(&x[1], r->stat.buf);
		strbuf_add_excerpt(&x[2], r->unit ? r->unit : "-", 24);
		strbuf_addstr(&x[3], r->has_old ? card_fmt(b, r->old) : "-");
		strbuf_addstr(&x[4], r->has_new ? card_fmt(b, r->new) : "-");
		if (r->has_change)
			strbuf_addf(&x[5], "%+.1f %%", r->change_pct);
		else
			strbuf_addstr(&x[5], "-");
		strbuf_addstr(&x[6], r->winner == W_UNKNOWN ? "?" : winner_name[r->winner]);
		if (r->beyond)
			strbuf_addstr(&x[6], " *");
	}
	for (size_t i = 0; i < nr * COLS; i++)
		if (cell[i].len > width[i % COLS])
			width[i % COLS] = cell[i].len;

	strbuf_addstr(out, "vigil qualify compare\n");
	text_head(out, "old", c->o);
	text_head(out, "new", c->n);
	strbuf_addch(out, '\n');
	for (size_t i = 0; i < nr; i++) {
		for (size_t k = 0; k < COLS; k++) {
			const struct strbuf *x = &cell[i * COLS + k];
			size_t pad = width[k] - x->len;
			if (right[k])
				strbuf_addf(out, "%*s", (int)pad, "");
			strbuf_addstr(out, x->buf);
			if (k + 1 < COLS && !right[k])
				strbuf_addf(out, "%*s", (int)pad, "");
			if (k + 1 < COLS)
				strbuf_addstr(out, "  ");
		}
		strbuf_rtrim(out);
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out,
		    "\n* beyond noise (docs/QUALIFY.md, \"Comparing\"); ? a card lacks the "
		    "figure\nnew is better in %zu, worse in %zu, the same within noise in %zu; "
		    "%zu not comparable\n",
		    sum[W_NEW], sum[W_OLD], sum[W_SAME], sum[W_UNKNOWN]);
	for (size_t i = 0; i < nr * COLS; i++)
		strbuf_release(&cell[i]);
	free(cell);
}

int qualify_compare(const struct json_value *old_card, const struct json_value *new_card, bool json,
		    struct strbuf *out, struct strbuf *err)
{
	struct cmp c = { .o = old_card, .n = new_card };
	size_t sum[4] = { 0 };
	struct strbuf why = STRBUF_INIT;
	if (qualify_card_check(old_card, &why) || qualify_card_check(new_card, &why)) {
		error_set(err, "the %s card %s", qualify_card_check(old_card, NULL) ? "old" : "new",
			  why.buf);
		strbuf_release(&why);
		return -1;
	}
	add_figures(&c);
	add_stages(&c);
	add_nodes(&c);
	add_storage(&c);
	add_nccl(&c);
	add_train(&c);
	for (size_t i = 0; i < c.nr; i++) {
		struct row *r = &c.rows[i];
		judge(r);
		sum[r->winner == W_UNKNOWN		? W_UNKNOWN
		    : r->winner == W_SAME || !r->beyond ? W_SAME
							: r->winner]++;
	}
	if (json)
		write_json(&c, sum, out);
	else
		write_text(&c, sum, out);
	for (size_t i = 0; i < c.nr; i++) {
		strbuf_release(&c.rows[i].figure);
		strbuf_release(&c.rows[i].stat);
	}
	free(c.rows);
	strbuf_release(&why);
	return 0;
}
