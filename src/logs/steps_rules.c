/*
 * steps_rules.c: the default step rules (see steps.h): which number on a trainer's output line
 * is its step, and what else the line says about that step (loss, tokens, the step time the
 * trainer measured, MFU), plus the line's head (a launcher's rank prefix, a time stamp).
 *
 * One pass over the line's words finds the step: a word is [A-Za-z0-9_]+, so `micro_step`,
 * `max_steps`, `step_time` and Lightning's `..._weight_step=2.510` are words of their own and
 * never the step. In order of trust: `global_step` or fairseq's `num_updates` (the optimizer's own
 * count, exact: `global_step=3.2e+4` is not), then a trainer's own shape (MetricLogger's
 * `Epoch: [2]  [1480/1504]`, composer's `[batch=100/1000]`, DeepSpeed's `steps: 100 ... iter time
 * (s)`), then the first generic `step`/`iter`/`iteration` with a whole number, then a progress
 * bar's count (`Epoch 0:   6%|██   | 32040/500150 [..., 1.37it/s, ...]`). docs/SUPERVISOR.md has
 * an example line of each trainer, tests/data/realworld/steps.md where each shape was seen.
 */
#include "steps.h"

#include <ctype.h>
#include <math.h>
#include <strings.h>

/* [A-Za-z0-9_] by table: the scanners ask it of every byte of every line (isalnum() is a call
 * into the locale's tables each time) */
static const bool word_char[256] = {
	['0' ... '9'] = true, ['A' ... 'Z'] = true, ['a' ... 'z'] = true, ['_'] = true,
};

static inline bool is_word(unsigned char c)
{
	return word_char[c];
}

/* After a keyword: an optional closing quote, then separators, up to where a value starts. */
static size_t skip_separators(const char *line, size_t len, size_t i, const char *seps)
{
	if (i < len && (line[i] == '"' || line[i] == '\''))
		i++;
	size_t start = i;
	while (i < len && i - start < 16 && line[i] && strchr(seps, line[i]))
		i++;
	return i;
}

/* A whole number of at most 16 digits at line[*i], not the start of a decimal or a word. */
static bool read_count(const char *line, size_t len, size_t *i, uint64_t *out)
{
	size_t j = *i;
	uint64_t v = 0;
	while (j < len && isdigit((unsigned char)line[j]) && j - *i < 17)
		v = v * 10 + (uint64_t)(line[j++] - '0');
	if (j == *i || j - *i > 16 || v > STEP_MAX)
		return false;
	if (j < len && (is_word((unsigned char)line[j]) ||
			(line[j] == '.' && j + 1 < len && isdigit((unsigned char)line[j + 1]))))
		return false;
	*i = j;
	*out = v;
	return true;
}

/* A decimal number (2.31, 2.310E+00, -0.5, 10,050) at line[*i], finite; *i moves past it.
 * Thousands commas are read only between digit groups of three (torchtitan's `tps: 10,050`). */
static bool read_real_at(const char *line, size_t len, size_t *i, double *out, bool *unit_follows)
{
	char num[48];
	size_t n = 0, j = *i;
	while (j < len && n < sizeof(num) - 1) {
		char c = line[j];
		if (isdigit((unsigned char)c) || (c && strchr("+-.", c)) ||
		    ((c == 'e' || c == 'E') && n && j + 1 < len &&
		     (isdigit((unsigned char)line[j + 1]) || line[j + 1] == '+' || line[j + 1] == '-'))) {
			num[n++] = c;
			j++;
		} else {
			break;
		}
	}
	num[n] = '\0';
	if (!n || !isdigit((unsigned char)num[n - 1]))
		return false;
	if (unit_follows)
		*unit_follows = j < len && isalpha((unsigned char)line[j]);
	else if (j < len && isalpha((unsigned char)line[j]))
		return false;
	char *end;
	double v = strtod(num, &end);
	if (end != num + n || !isfinite(v))
		return false;
	*i = j;
	*out = v;
	return true;
}

static bool read_real(const char *line, size_t len, size_t i, double *out)
{
	return read_real_at(line, len, &i, out, NULL);
}

/* w[0..n) is kw (lowercase), ASCII case-insensitively; inline: it runs for many words a line */
static inline bool same_word(const char *w, const char *kw, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)w[k];
		if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)kw[k])
			return false;
	}
	return true;
}

static inline bool word_is(const char *w, size_t n, const char *kw)
{
	return strlen(kw) == n && same_word(w, kw, n);
}

/* `global_step=794.0` (Lightning prints its logged values as floats): a whole number written
 * with a zero fraction is still exact; `3.2e+4` is not. */
static bool read_exact(const char *line, size_t len, size_t *i, uint64_t *out)
{
	size_t j = *i;
	if (j < len && (line[j] == '"' || line[j] == '\''))
		j++;
	size_t start = j;
	uint64_t v;
	if (read_count(line, len, &j, &v)) {
		*i = j;
		*out = v;
		return true;
	}
	j = start;
	v = 0;
	while (j < len && isdigit((unsigned char)line[j]) && j - start < 17)
		v = v * 10 + (uint64_t)(line[j++] - '0');
	if (j == start || j - start > 16 || v > STEP_MAX || j >= len || line[j] != '.')
		return false;
	j++;
	size_t z = j;
	while (j < len && line[j] == '0')
		j++;
	if (j == z || (j < len && (is_word((unsigned char)line[j]) || line[j] == '.')))
		return false;
	*i = j;
	*out = v;
	return true;
}

/* `120/5000`, `120 / 5000`, `120 of 5000` after a step at line[j] */
static void read_total(const char *line, size_t len, size_t t, struct step_reading *out)
{
	uint64_t total;
	while (t < len && line[t] == ' ')
		t++;
	if (t < len && line[t] == '/')
		t++;
	else if (t + 2 < len && !strncmp(line + t, "of ", 3))
		t += 3;
	else
		return;
	while (t < len && line[t] == ' ')
		t++;
	if (read_count(line, len, &t, &total) && total >= out->step) {
		out->has_total = true;
		out->total = total;
	}
}

/* MetricLogger (torchvision's references, DETR and kin): `Epoch: [2]  [1480/1504]`, the step
 * counted over the epochs, `[i/N]` being the epoch's i-th of N iterations. */
static bool metric_logger(const char *line, size_t len, size_t j, struct step_reading *out)
{
	uint64_t epoch, i, n;
	if (j >= len || line[j] != ':')
		return false;
	j++;
	while (j < len && line[j] == ' ')
		j++;
	if (j >= len || line[j++] != '[' || !read_count(line, len, &j, &epoch) || j >= len ||
	    line[j++] != ']')
		return false;
	while (j < len && line[j] == ' ')
		j++;
	if (j >= len || line[j++] != '[')
		return false;
	while (j < len && line[j] == ' ')
		j++;
	if (!read_count(line, len, &j, &i) || j >= len || line[j++] != '/' ||
	    !read_count(line, len, &j, &n) || j >= len || line[j] != ']' || !n || i > n ||
	    epoch > STEP_MAX / (n + 1))
		return false;
	out->step = epoch * n + i;
	return true;
}

/* The step of a line, by the trust order of the header comment; false when none. */
static bool find_step(const char *line, size_t len, struct step_reading *out, bool *unitless_time)
{
	bool have_generic = false, have_shape = false;
	uint64_t generic = 0, shape = 0;
	size_t generic_end = 0;
	for (size_t i = 0; i < len;) {
		if (!is_word((unsigned char)line[i])) {
			i++;
			continue;
		}
		size_t w = i;
		while (i < len && is_word((unsigned char)line[i]))
			i++;
		size_t n = i - w, j;
		uint64_t v;
		const char *word = line + w;
		switch (*word | 0x20) { /* the first letters of the words below */
		case 'g': case 'n': case 'e': case 'b': case 's': case 'i':
			break;
		default:
			continue;
		}
		switch (n) {
		case 11:
			if (word_is(word, n, "global_step") || word_is(word, n, "num_updates")) {
				j = skip_separators(line, len, i, " \t:=");
				if (read_exact(line, len, &j, &v)) {
					out->step = v;
					return true;
				}
			}
			break;
		case 5:
			if (!have_shape && word_is(word, n, "epoch") &&
			    metric_logger(line, len, i, out)) {
				shape = out->step;
				have_shape = *unitless_time = true;
			} else if (!have_shape && w > 0 && line[w - 1] == '[' &&
				   word_is(word, n, "batch") && i < len && line[i] == '=') {
				/* composer: [batch=100/1000]; its eval is [Eval batch=3/10] */
				j = i + 1;
				if (read_count(line, len, &j, &v)) {
					shape = v;
					have_shape = true;
				}
			} else if (!have_shape && word_is(word, n, "steps") && i < len &&
				   line[i] == ':' && memmem(line, len, "iter time (s)", 13)) {
				/* DeepSpeed's pipeline engine: steps: 100 loss: ... iter time (s): */
				j = skip_separators(line, len, i, " :");
				if (read_count(line, len, &j, &v)) {
					shape = v;
					have_shape = true;
				}
			}
			break;
		case 4:
		case 9:
			if (have_generic || !(word_is(word, n, "step") || word_is(word, n, "iter") ||
					      word_is(word, n, "iteration")))
				break;
			j = skip_separators(line, len, i, " \t:=[(#");
			if (read_count(line, len, &j, &v)) {
				generic = v;
				generic_end = j;
				have_generic = true;
			}
			break;
		}
	}
	if (have_shape) {
		out->step = shape;
		return true;
	}
	if (have_generic) {
		out->step = generic;
		read_total(line, len, generic_end, out);
		return true;
	}
	return false;
}

/* The bar's description must be the training loop's: none (HF Trainer, accelerate's loops),
 * `Epoch 3` (Lightning, NeMo), `Training`, `Train`, `Iteration`, `Steps`. Eval, data, download
 * and checkpoint-loading bars (`Map:`, `Validation DataLoader 0:`, `Loading checkpoint shards:`)
 * are not progress. *epoch is the number after Epoch, else 0. */
static bool bar_desc_ok(const char *d, size_t n, uint64_t *epoch)
{
	*epoch = 0;
	while (n && (d[n - 1] == ' ' || d[n - 1] == ':'))
		n--;
	while (n && *d == ' ')
		d++, n--;
	if (!n)
		return true;
	if (n > 6 && !strncasecmp(d, "epoch ", 6)) {
		size_t j = 6;
		while (j < n && d[j] == ' ')
			j++;
		return read_count(d, n, &j, epoch) && j == n;
	}
	static const char *const ok[] = { "training", "train", "iteration", "steps" };
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
		if (word_is(d, n, ok[i]))
			return true;
	return false;
}

/*
 * A tqdm bar: [DESC: ]NN%[|BAR|] COUNT/TOTAL [ELAPSED<LEFT, RATE, POSTFIX...]; its count is the
 * step (over the epochs when DESC is `Epoch E` and E > 0: E * TOTAL + COUNT, the bar's total
 * being one epoch's batches), its rate the step time (1.37it/s, 41.36s/it; `?it/s` is none).
 */
static bool find_bar(const char *line, size_t len, struct step_reading *out)
{
	const char *pct = memchr(line, '%', len);
	while (pct) {
		size_t p = (size_t)(pct - line), d = p, j = p + 1;
		uint64_t count, total, epoch;
		while (d > 0 && isdigit((unsigned char)line[d - 1]) && p - d < 3)
			d--;
		if (d == p)
			goto next;
		if (j < len && line[j] == '|') {
			const char *bar_end = memchr(line + j + 1, '|', len - j - 1 < 512 ? len - j - 1 : 512);
			if (!bar_end)
				goto next;
			j = (size_t)(bar_end - line) + 1;
		}
		while (j < len && line[j] == ' ')
			j++;
		if (!read_count(line, len, &j, &count) || j >= len || line[j++] != '/' ||
		    !read_count(line, len, &j, &total) || !total || count > total)
			goto next;
		while (j < len && line[j] == ' ')
			j++;
		if (j >= len || line[j] != '[')
			goto next;
		struct step_line_meta meta;
		size_t head = steps_line_meta(line, d, &meta);
		if (!bar_desc_ok(line + head, d - head, &epoch) || epoch > STEP_MAX / (total + 1))
			goto next;
		out->step = epoch * total + count;
		out->bar_total = total;
		if (!epoch) {
			out->has_total = true;
			out->total = total;
		}
		/* the rate: after the first ", " inside the brackets */
		const char *close = memchr(line + j, ']', len - j);
		const char *comma = memchr(line + j, ',', (close ? (size_t)(close - line) : len) - j);
		if (comma) {
			size_t r = (size_t)(comma - line) + 1;
			double rate;
			bool unit;
			while (r < len && line[r] == ' ')
				r++;
			if (read_real_at(line, len, &r, &rate, &unit) && unit && rate > 0) {
				if (r + 4 <= len && !memcmp(line + r, "it/s", 4)) {
					out->has_step_time = true;
					out->step_time = 1.0 / rate;
				} else if (r + 4 <= len && !memcmp(line + r, "s/it", 4)) {
					out->has_step_time = true;
					out->step_time = rate;
				}
			}
		}
		return true;
next:
		pct = p + 1 < len ? memchr(line + p + 1, '%', len - p - 1) : NULL;
	}
	return false;
}

/* The loss and tokens: a word `loss` or `tokens`, or one ending in `_loss` / `_tokens`
 * (reduced_train_loss, lm_loss; `loss scale`, `loss_scale`, `tokens_seen` are other things), then
 * separators and the number. The first of each on the line. */
static void find_loss_tokens(const char *line, size_t len, struct step_reading *out)
{
	for (size_t i = 0; i < len && !(out->has_loss && out->has_tokens);) {
		if (!is_word((unsigned char)line[i])) {
			i++;
			continue;
		}
		size_t w = i, j;
		while (i < len && is_word((unsigned char)line[i]))
			i++;
		size_t n = i - w;
		const char *e = line + i; /* the word's end */
		if ((e[-1] | 0x20) != 's')
			continue;
		if (!out->has_loss && n >= 4 && (n == 4 || e[-5] == '_') &&
		    same_word(e - 4, "loss", 4)) {
			j = skip_separators(line, len, i, " \t:=");
			out->has_loss = read_real(line, len, j, &out->loss);
		} else if (!out->has_tokens && n >= 6 && (n == 6 || e[-7] == '_') &&
			   same_word(e - 6, "tokens", 6)) {
			j = skip_separators(line, len, i, " \t:=");
			out->has_tokens = read_count(line, len, &j, &out->tokens);
		}
	}
}

static bool set_step_time(struct step_reading *out, double v, double scale)
{
	v *= scale;
	if (!(v > 0) || v > 1e7)
		return false;
	out->has_step_time = true;
	out->step_time = v;
	return true;
}

/* Significant digits of the number at line[i] (fairseq rounds `ups` to 2 decimals: 0.04 is
 * anything from 22 to 28 s a step, no step time at all). */
static int significant(const char *line, size_t len, size_t i)
{
	int n = 0;
	bool lead = true;
	for (; i < len && (isdigit((unsigned char)line[i]) || line[i] == '.'); i++) {
		if (line[i] == '.' || (lead && line[i] == '0'))
			continue;
		lead = false;
		n++;
	}
	return n;
}

/*
 * The step time and MFU the trainer printed, by word: Megatron's `elapsed time per iteration
 * (ms): 1234.5`, NeMo's `train_step_timing in s: 0.45` / `train_step_timing=0.45`, DeepSpeed's
 * `iter time (s): 0.456`, litgpt's `iter time: 250.00 ms`, nanoGPT's `time 120.00ms`, a generic
 * `step_time=0.31`, fairseq's `ups=2.7` (updates a second), MetricLogger's unitless `time:
 * 0.4123`; `mfu: 34.29%` / `mfu 16.68%` / `mfu=0.35` (nanoGPT's `mfu -100.00%` before its fifth
 * iteration is no MFU).
 */
static void find_time_mfu(const char *line, size_t len, struct step_reading *out,
			  bool unitless_time)
{
	const char *prev = NULL; /* the word before, for `iter time` / `remaining time` */
	size_t prev_n = 0;
	for (size_t i = 0; i < len;) {
		if (!is_word((unsigned char)line[i])) {
			i++;
			continue;
		}
		size_t w = i, j;
		while (i < len && is_word((unsigned char)line[i]))
			i++;
		size_t n = i - w;
		const char *word = line + w;
		double v;
		bool unit;
		/* most words are none of these: their first letter says so at once */
		switch (*word | 0x20) {
		case 'm': case 'e': case 't': case 's': case 'u':
			break;
		default:
			goto skip;
		}
		if (!out->has_mfu && word_is(word, n, "mfu")) {
			j = skip_separators(line, len, i, " \t:=");
			if (read_real_at(line, len, &j, &v, &unit) && !unit) {
				bool pct = j < len && line[j] == '%';
				if (pct || v > 1)
					v /= 100;
				if (v >= 0 && v <= 1) {
					out->has_mfu = true;
					out->mfu = v;
				}
			}
		} else if (!out->has_step_time && word_is(word, n, "elapsed") &&
			   len - i >= 31 && !memcmp(line + i, " time per iteration (ms):", 25)) {
			j = i + 25;
			j = skip_separators(line, len, j, " ");
			if (read_real(line, len, j, &v))
				set_step_time(out, v, 1e-3);
		} else if (!out->has_step_time && word_is(word, n, "train_step_timing")) {
			j = i;
			if (len - j >= 5 && !memcmp(line + j, " in s", 5))
				j += 5;
			j = skip_separators(line, len, j, " :=");
			if (read_real(line, len, j, &v))
				set_step_time(out, v, 1);
		} else if (!out->has_step_time && (word_is(word, n, "time") ||
						   word_is(word, n, "step_time"))) {
			bool iter = prev && word_is(prev, prev_n, "iter");
			if (n == 4 && prev && !iter && w >= 2 && line[w - 1] == ' ' &&
			    is_word((unsigned char)line[w - 2]))
				goto skip; /* remaining time, elapsed time, data time */
			j = i;
			double scale = 0;
			if (len - j >= 4 && !memcmp(line + j, " (s)", 4))
				j += 4, scale = 1;
			else if (len - j >= 5 && !memcmp(line + j, " (ms)", 5))
				j += 5, scale = 1e-3;
			j = skip_separators(line, len, j, " :=");
			if (!read_real_at(line, len, &j, &v, &unit))
				goto skip;
			size_t u = j;
			if (!unit && u + 1 < len && line[u] == ' ' && isalpha((unsigned char)line[u + 1]))
				u++;
			if (u + 2 <= len && !memcmp(line + u, "ms", 2) &&
			    (u + 2 == len || !is_word((unsigned char)line[u + 2])))
				scale = 1e-3;
			else if (u < len && line[u] == 's' && (u + 1 == len || !is_word((unsigned char)line[u + 1])))
				scale = 1;
			else if (unit)
				goto skip; /* 35780 days, 12 min */
			else if (!scale && (unitless_time || n == 9))
				scale = 1; /* MetricLogger's time: 0.4123; step_time=0.31 */
			if (scale)
				set_step_time(out, v, scale);
		} else if (!out->has_step_time && word_is(word, n, "ups") && i < len &&
			   (line[i] == '=' || line[i] == '"')) {
			/* ups=2.7, and in fairseq's JSON lines "ups": "2.7" */
			j = skip_separators(line, len, i, " :=");
			if (j < len && line[j] == '"')
				j++;
			if (significant(line, len, j) >= 2 && read_real_at(line, len, &j, &v, &unit) &&
			    v > 0)
				set_step_time(out, 1.0 / v, 1);
		}
skip:
		prev = word;
		prev_n = n;
	}
}

void steps_read_values(const char *line, size_t len, struct step_reading *out)
{
	find_loss_tokens(line, len, out);
	if (!out->has_step_time || !out->has_mfu)
		find_time_mfu(line, len, out, false);
}

bool steps_match_default(const char *line, size_t len, struct step_reading *out)
{
	bool unitless_time = false;
	memset(out, 0, sizeof(*out));
	if (!find_step(line, len, out, &unitless_time)) {
		memset(out, 0, sizeof(*out));
		if (!find_bar(line, len, out))
			return false;
	} else if (memchr(line, '%', len)) {
		/* a bar whose postfix has global_step=794.0: the step is that, the bar gives the
		 * step time */
		struct step_reading bar;
		memset(&bar, 0, sizeof(bar));
		if (find_bar(line, len, &bar) && bar.has_step_time) {
			out->has_step_time = true;
			out->step_time = bar.step_time;
		}
	}
	find_loss_tokens(line, len, out);
	find_time_mfu(line, len, out, unitless_time);
	return true;
}

/* ---- the line's head ---- */

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int num2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil) */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* YYYY-MM-DD[ T]HH:MM:SS[.,frac][Z|+HH:MM|+HHMM] at s[0..n) */
static bool read_stamp(const char *s, size_t n, double *out)
{
	if (n < 19 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
	    !digits(s + 8, 2) || (s[10] != ' ' && s[10] != 'T') || !digits(s + 11, 2) ||
	    s[13] != ':' || !digits(s + 14, 2) || s[16] != ':' || !digits(s + 17, 2))
		return false;
	int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + num2(s + 2);
	int mo = num2(s + 5), d = num2(s + 8), h = num2(s + 11), mi = num2(s + 14),
	    se = num2(s + 17);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return false;
	double t = (double)days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400.0 + h * 3600 +
		   mi * 60 + se;
	size_t i = 19;
	if (i + 1 < n && (s[i] == '.' || s[i] == ',') && isdigit((unsigned char)s[i + 1])) {
		double scale = 0.1;
		for (i++; i < n && isdigit((unsigned char)s[i]); i++, scale /= 10)
			t += (s[i] - '0') * scale;
	}
	if (i < n && (s[i] == '+' || s[i] == '-') && i + 3 <= n && digits(s + i + 1, 2)) {
		size_t m = i + 3;
		int off = num2(s + i + 1) * 3600;
		if (m < n && s[m] == ':')
			m++;
		if (m + 2 <= n && digits(s + m, 2))
			off += num2(s + m) * 60;
		t -= s[i] == '+' ? off : -off;
	}
	*out = t;
	return true;
}

/* a rank a launcher put at the head of the line: the bytes it took, 0 for none */
static size_t rank_prefix(const char *line, size_t len, uint32_t *rank)
{
	size_t i = 0, j;
	uint64_t v;
	while (i < len && i < 8 && line[i] == ' ')
		i++;
	if (i < len && line[i] == '[') {
		static const char *const tags[] = { "[rank", "[default", "[1," };
		for (size_t k = 0; k < ARRAY_SIZE(tags); k++) {
			size_t tl = strlen(tags[k]);
			if (len - i < tl || memcmp(line + i, tags[k], tl))
				continue;
			j = i + tl;
			if (!read_count(line, len, &j, &v) || v > UINT32_MAX || j >= len || line[j] != ']')
				continue;
			j++;
			if (k == 2) { /* mpirun --tag-output: [1,3]<stdout>: */
				if (len - j >= 9 && (!memcmp(line + j, "<stdout>:", 9) ||
						     !memcmp(line + j, "<stderr>:", 9)))
					j += 9;
				else
					continue;
			} else if (j < len && line[j] == ':') {
				j++;
			} else {
				continue;
			}
			*rank = (uint32_t)v;
			return j;
		}
		return 0;
	}
	/* srun --label: "3: " */
	j = i;
	if (j < len && isdigit((unsigned char)line[j]) && read_count(line, len, &j, &v) &&
	    j - i <= 6 && j + 1 < len && line[j] == ':' && line[j + 1] == ' ') {
		*rank = (uint32_t)v;
		return j + 2;
	}
	return 0;
}

size_t steps_line_meta(const char *line, size_t len, struct step_line_meta *out)
{
	memset(out, 0, sizeof(*out));
	size_t head = rank_prefix(line, len, &out->rank);
	out->has_rank = head > 0;
	/* the stamp: within the first 96 bytes after the prefix */
	size_t end = len - head < 96 ? len : head + 96;
	for (size_t i = head; i + 19 <= len && i < end; i++) {
		if (isdigit((unsigned char)line[i]) && line[i + 4] == '-' &&
		    (i == head || !isdigit((unsigned char)line[i - 1])) &&
		    read_stamp(line + i, len - i, &out->time)) {
			out->has_time = true;
			break;
		}
	}
	return head;
}
