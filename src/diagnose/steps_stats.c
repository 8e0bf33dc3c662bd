/*
 * steps_stats.c: the robust statistics under 'vigil diagnose steps' (steps_int.h): selection,
 * medians and quantiles, MAD, a rolling median, binary segmentation of block medians and a
 * Theil-Sen slope. Real step times are noisy and heavy-tailed: every level is a median and every
 * scale a MAD, never a mean or a standard deviation.
 */
#include "steps_int.h"

#include <math.h>

/* ---- robust statistics ---- */

double diag_select(double *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				double t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return a[k];
}

double diag_median(double *a, size_t n)
{
	if (!n)
		return NAN;
	return diag_select(a, n, n / 2);
}

/* the q-quantile of a[0..n) through scratch (a is left as it is) */
double diag_quantile(const double *a, size_t n, double q, double *scratch)
{
	if (!n)
		return NAN;
	memcpy(scratch, a, n * sizeof(*a));
	size_t k = (size_t)(q * (double)(n - 1) + 0.5);
	return diag_select(scratch, n, k < n ? k : n - 1);
}

/* 1.4826 * MAD: the standard deviation a normal sample would have */
double diag_robust_sigma(const double *a, size_t n, double *scratch)
{
	if (!n)
		return 0;
	double med = diag_quantile(a, n, 0.5, scratch);
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(a[i] - med);
	return 1.4826 * diag_median(scratch, n);
}

/* Centred rolling median of window w (clipped at the ends), in O(n w) with a sorted window. */
void diag_rolling_median(const double *x, size_t n, size_t w, double *out)
{
	double *win = xmalloc((w + 1) * sizeof(*win));
	size_t h = w / 2, len = 0, clo = 0, chi = 0;
	for (size_t i = 0; i < n; i++) {
		size_t lo = i > h ? i - h : 0, hi = i + h + 1 < n ? i + h + 1 : n;
		for (; chi < hi; chi++) { /* insert x[chi] */
			size_t p = len;
			while (p && win[p - 1] > x[chi]) {
				win[p] = win[p - 1];
				p--;
			}
			win[p] = x[chi];
			len++;
		}
		for (; clo < lo; clo++) { /* remove x[clo] */
			size_t a = 0, b = len;
			while (a < b) {
				size_t m = (a + b) / 2;
				if (win[m] < x[clo])
					a = m + 1;
				else
					b = m;
			}
			memmove(win + a, win + a + 1, (len - a - 1) * sizeof(*win));
			len--;
		}
		out[i] = len & 1 ? win[len / 2] : (win[len / 2 - 1] + win[len / 2]) / 2;
	}
	free(win);
}

/* ---- levels: binary segmentation of block medians ---- */

struct seg {
	size_t a, b; /* blocks [a, b) */
};

/* the gain of splitting [a,b) at k under an L2 cost, with prefix sums */
static double split_gain(const double *ps, const double *ps2, size_t a, size_t k, size_t b)
{
	double n1 = (double)(k - a), n2 = (double)(b - k), s1 = ps[k] - ps[a], s2 = ps[b] - ps[k];
	double m1 = s1 / n1, m2 = s2 / n2;
	(void)ps2;
	return n1 * n2 / (n1 + n2) * (m1 - m2) * (m1 - m2);
}

/*
 * Change points of blk[0..nb) (block medians, share of expected): split the segment with the
 * largest gain while the gain beats the penalty and the shift is at least min_shift of the
 * level; segments at least min_len blocks. Sorted positions in cp[], returns how many.
 */
size_t diag_segment(const double *blk, size_t nb, double sigma, double min_shift, size_t min_len,
		    size_t *cp, size_t max_cp)
{
	double *ps = xmalloc((nb + 1) * sizeof(*ps));
	ps[0] = 0;
	for (size_t i = 0; i < nb; i++)
		ps[i + 1] = ps[i] + blk[i];
	double pen = 4.0 * sigma * sigma * log((double)nb + 1.0) + 1e-12;
	struct seg segs[2 * DIAG_MAX_CHANGES + 2];
	size_t nseg = 1, ncp = 0;
	segs[0] = (struct seg){ 0, nb };
	while (ncp < max_cp) {
		double best = 0;
		size_t bs = 0, bk = 0;
		for (size_t s = 0; s < nseg; s++) {
			size_t a = segs[s].a, b = segs[s].b;
			for (size_t k = a + min_len; k + min_len <= b; k++) {
				double g = split_gain(ps, NULL, a, k, b);
				double m1 = (ps[k] - ps[a]) / (double)(k - a),
				       m2 = (ps[b] - ps[k]) / (double)(b - k);
				double hi = m1 > m2 ? m1 : m2;
				if (g > best && fabs(m1 - m2) >= min_shift * hi) {
					best = g;
					bs = s;
					bk = k;
				}
			}
		}
		if (best <= pen)
			break;
		struct seg old = segs[bs];
		segs[bs] = (struct seg){ old.a, bk };
		segs[nseg++] = (struct seg){ bk, old.b };
		cp[ncp++] = bk;
	}
	free(ps);
	for (size_t i = 1; i < ncp; i++) /* sort (few) */
		for (size_t j = i; j && cp[j - 1] > cp[j]; j--) {
			size_t t = cp[j];
			cp[j] = cp[j - 1];
			cp[j - 1] = t;
		}
	return ncp;
}

/* Theil-Sen slope of (xs, ys): the median of pairwise slopes (all pairs up to 1000 points) */
double diag_theil_sen(const double *xs, const double *ys, size_t n)
{
	size_t m = n * (n - 1) / 2, k = 0;
	if (!m)
		return 0;
	double *sl = xmalloc(m * sizeof(*sl));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (xs[j] != xs[i])
				sl[k++] = (ys[j] - ys[i]) / (xs[j] - xs[i]);
	double s = k ? diag_median(sl, k) : 0;
	free(sl);
	return s;
}
