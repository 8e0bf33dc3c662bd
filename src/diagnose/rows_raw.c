/*
 * rows_raw.c: 'vigil diagnose steps LOG' on a run vigil did not supervise (docs/DIAGNOSE.md). The
 * trainer's raw output goes through the step parser of 'vigil run' (src/logs/steps.h: the same
 * default rules, or --step-pattern), streaming: each step line becomes a row with what the line
 * says (the step time the trainer measured, MFU, tokens) and when it was written (its time
 * stamp, from which the analysis derives step times when the trainer reports none).
 *
 * Several ranks' lines in one file (torchrun's [rank3]:, srun --label's "3: ", or all ranks
 * printing the same line unprefixed): a step reported by several ranks is one step. For 'steps'
 * the rows are the first reporter's (its prefix, or none) and the other ranks' step lines are
 * counted, not read; for 'stragglers' (per_rank) each rank keeps its rows, its step time derived
 * from its own stamps when it prints none. Further lines about the step just read (nanoGPT's eval
 * line before its iteration line, DeepSpeed's step= and timer lines beside Megatron's) are merged
 * into its row: the fields it lacked, and the later stamp.
 */
#include "rows.h"
#include "../logs/steps.h"

#include <math.h>

#define RAW_NO_RANK UINT32_MAX

struct diag_raw {
	struct step_parser p;
	bool forced;       /* --step-pattern: the file is a log, whatever its first line */
	size_t line_base;  /* lines of the input before the log's first line */
	bool have_source;  /* steps: the reporter read */
	uint32_t source;
	uint32_t *last;    /* per slot (rank + 1; 0: no prefix): 1 + index of its last row */
	size_t last_n;
	uint8_t *seen;     /* per slot: a step line seen (to count the ranks) */
};

static struct diag_raw *raw_new(struct diag_rows *r)
{
	if (!r->raw) {
		r->raw = xcalloc(1, sizeof(*r->raw));
		/* the default rules never fail to compile */
		step_parser_init_output(&r->raw->p, NULL, NULL);
		r->raw->p.want_meta = true;
	}
	return r->raw;
}

int diag_rows_log(struct diag_rows *r, const char *pattern, bool per_rank, struct strbuf *err)
{
	r->per_rank = per_rank;
	if (!pattern)
		return 0;
	struct diag_raw *x = raw_new(r);
	step_parser_release(&x->p);
	if (step_parser_init_output(&x->p, pattern, err) < 0) {
		/* an empty default parser, so that release stays simple */
		step_parser_init_output(&x->p, NULL, NULL);
		return -1;
	}
	x->p.want_meta = true;
	x->forced = true;
	return 0;
}

bool diag_raw_forced(const struct diag_rows *r)
{
	return r->raw && r->raw->forced;
}

void diag_raw_free(struct diag_rows *r)
{
	if (!r->raw)
		return;
	step_parser_release(&r->raw->p);
	free(r->raw->last);
	free(r->raw->seen);
	free(r->raw);
	r->raw = NULL;
}

/* the slot of a rank's last row, grown on demand; NULL past DIAG_RAW_RANKS_MAX */
static uint32_t *slot_of(struct diag_raw *x, size_t slot)
{
	if (slot > DIAG_RAW_RANKS_MAX)
		return NULL;
	if (slot >= x->last_n) {
		size_t n = x->last_n ? x->last_n : 16;
		while (n <= slot)
			n *= 2;
		if (n > DIAG_RAW_RANKS_MAX + 1)
			n = DIAG_RAW_RANKS_MAX + 1;
		x->last = xrealloc(x->last, n * sizeof(*x->last));
		x->seen = xrealloc(x->seen, n);
		memset(x->last + x->last_n, 0, (n - x->last_n) * sizeof(*x->last));
		memset(x->seen + x->last_n, 0, n - x->last_n);
		x->last_n = n;
	}
	return &x->last[slot];
}

/* the fields of row that last lacks; the later stamp */
static void merge(struct diag_row *last, const struct diag_row *row)
{
	if ((row->has & DROW_STEP_TIME) && !(last->has & DROW_STEP_TIME))
		last->step_time = row->step_time;
	if ((row->has & DROW_MFU) && !(last->has & DROW_MFU))
		last->mfu = row->mfu;
	if ((row->has & DROW_TOKENS) && !(last->has & DROW_TOKENS))
		last->tokens = row->tokens;
	if (row->has & DROW_TIME)
		last->time = row->time;
	last->has |= row->has;
}

static void on_step(void *arg, const struct step_update *u)
{
	struct diag_rows *r = arg;
	struct diag_raw *x = r->raw;
	uint32_t rank = u->meta.has_rank ? u->meta.rank : RAW_NO_RANK;
	size_t slot = rank == RAW_NO_RANK ? 0 : (size_t)rank + 1;
	struct diag_row row;

	r->lines = x->line_base + u->line_no;
	r->log_step_lines++;
	if (r->truncated)
		return;
	uint32_t *last = slot_of(x, slot);
	if (!last) {
		diag_rows_garbage(r, "a rank prefix above 65535");
		return;
	}
	if (!x->seen[slot]) {
		x->seen[slot] = 1;
		r->log_ranks += rank != RAW_NO_RANK;
	}
	if (!r->per_rank) {
		if (!x->have_source) {
			x->have_source = true;
			x->source = rank;
			r->log_has_rank = rank != RAW_NO_RANK;
			r->log_rank = rank == RAW_NO_RANK ? 0 : rank;
		} else if (rank != x->source) {
			r->log_other_ranks++;
			return;
		}
	}
	memset(&row, 0, sizeof(row));
	row.step = u->r.step;
	if ((double)row.step > DIAG_STEP_MAX) {
		diag_rows_garbage(r, "a step above 10^15");
		return;
	}
	if (u->meta.has_time && u->meta.time >= 0 && u->meta.time <= 1e11) {
		row.time = u->meta.time;
		row.has |= DROW_TIME;
	}
	if (u->r.has_step_time && u->r.step_time > 0 && u->r.step_time <= 1e7) {
		row.step_time = u->r.step_time;
		row.has |= DROW_STEP_TIME;
	}
	if (u->r.has_mfu && u->r.mfu >= 0 && u->r.mfu <= 1) {
		row.mfu = u->r.mfu;
		row.has |= DROW_MFU;
	}
	if (u->r.has_tokens && (double)u->r.tokens <= 1e18) {
		row.tokens = (double)u->r.tokens;
		row.has |= DROW_TOKENS;
	}
	if (r->per_rank && rank != RAW_NO_RANK) {
		row.rank = rank;
		row.has |= DROW_RANK;
	}
	struct diag_row *prev = *last ? &r->v[*last - 1] : NULL;
	if (prev && prev->step == row.step) {
		merge(prev, &row);
		r->log_repeats++;
		r->columns |= prev->has;
		return;
	}
	/* stragglers: a rank's step time from its own stamps when it prints none */
	if (r->per_rank && prev && !(row.has & DROW_STEP_TIME) && (row.has & DROW_TIME) &&
	    (prev->has & DROW_TIME) && row.step > prev->step && row.time > prev->time) {
		double st = (row.time - prev->time) / (double)(row.step - prev->step);
		if (st <= 1e7) {
			row.step_time = st;
			row.has |= DROW_STEP_TIME;
		}
	}
	size_t before = r->nr;
	diag_rows_keep(r, &row);
	if (r->nr > before)
		*last = (uint32_t)r->nr;
}

static void sync_lines(struct diag_rows *r)
{
	size_t lines = r->raw->line_base + r->raw->p.newlines + (r->raw->p.mid_line ? 1 : 0);
	if (lines > r->lines)
		r->lines = lines;
	r->log_other_bars = r->raw->p.other_bars;
}

void diag_raw_start(struct diag_rows *r, const char *s, size_t len, bool counted)
{
	struct diag_raw *x = raw_new(r);
	r->format = DIAG_FMT_LOG;
	x->line_base = r->lines - (counted ? 1 : 0);
	step_parser_feed(&x->p, s, len, on_step, r);
	if (counted)
		step_parser_feed(&x->p, "\n", 1, on_step, r);
	sync_lines(r);
}

void diag_raw_feed(struct diag_rows *r, const char *data, size_t len)
{
	step_parser_feed(&r->raw->p, data, len, on_step, r);
	sync_lines(r);
}

void diag_raw_finish(struct diag_rows *r)
{
	step_parser_finish(&r->raw->p, on_step, r);
	sync_lines(r);
}
