/*
 * kmsg_internal.h: what the kernel log parser's files share (not an API: see kmsg.h). kmsg.c scans
 * for trigger lines and keeps the events, kmsg_time.c reads the timestamp prefixes, kmsg_event.c
 * turns a message into events, kmsg_read.c reads /dev/kmsg and saved logs.
 */
#ifndef VIGIL_KMSG_INTERNAL_H
#define VIGIL_KMSG_INTERNAL_H

#include "kmsg.h"

#include <limits.h>

/* What kmsg_parse_prefix() found before the message. */
struct kmsg_prefix {
	enum kmsg_timebase tb;
	double ts;
	bool yearless;
	bool continuation; /* " KEY=value", or an indented line without a stamp: not a message */
	/*
	 * Not the kernel's own message: a /dev/kmsg record, "<N>" priority or dmesg -x facility
	 * other than kern (0), or a syslog line whose ident is not "kernel". Userspace writes such
	 * records (logger, systemd); none of them is the driver or a boot.
	 */
	bool user;
	bool has_seq;      /* a /dev/kmsg record: seq is its sequence number */
	uint64_t seq;
	bool has_mono;     /* seconds since boot, from the stamp or one kept inside (kern.log) */
	double mono;
	bool bare;         /* no prefix at all: msg is the line, from its first byte */
	const char *msg;
};

/*
 * Small scanners over a NUL-terminated line, used by the prefix and the message parsers. Inline:
 * they run on every byte of a parsed line.
 */
static inline bool dig(char c)
{
	return c >= '0' && c <= '9';
}

/* Up to max digits; returns how many were read. */
static inline int digits_upto(const char *s, int max, long long *out)
{
	long long v = 0;
	int i = 0;
	while (i < max && dig(s[i])) {
		int d = s[i++] - '0';
		v = v > (LLONG_MAX - 9) / 10 ? LLONG_MAX : v * 10 + d; /* saturate */
	}
	*out = v;
	return i;
}

static inline const char *skip_spaces(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* kmsg_time.c */

/* Split the timestamp prefix of line s (NUL-terminated, no NUL inside) from its message. */
void kmsg_parse_prefix(struct kmsg_log *log, const char *s, struct kmsg_prefix *px);
/* kmsg_line_time(), and whether the stamp had no year; notes a yearless stamp in log. */
bool kmsg_line_stamp(struct kmsg_log *log, const char *line, size_t len, double *ts,
		     enum kmsg_timebase *tb, bool *yearless);
/* The calendar year of a wall-clock time (seconds since the epoch, UTC). */
int kmsg_year_of(double ts);

/* kmsg_event.c */

/* Turn the message after a prefix into events (or nothing: most triggers are false alarms). */
void kmsg_parse_message(struct kmsg_log *log, const struct kmsg_prefix *px, uint64_t line);

/* Shared field readers (kmsg_event.c). */
/* Copy at most n bytes of src into dst[size] as printable ASCII, trimmed. */
void kmsg_copy_field(char *dst, size_t size, const char *src, size_t n);
/* A PCI address at s into out ("dddd:bb:dd.f"); returns its end or NULL. */
const char *kmsg_parse_bdf(const char *s, char out[20]);
/* "DRIVER DDDD:BB:DD.F" at the start of msg (dev_printk()'s prefix): what follows, or NULL. */
const char *kmsg_dev_prefix(const char *msg);

/* kmsg_hwerr.c */

/*
 * Host hardware errors: EDAC, machine checks, APEI GHES blocks, PCIe AER. true when msg was one
 * of their lines (an event made, or a line of a block noted), false to let other parsers try.
 */
bool kmsg_parse_hwerr(struct kmsg_log *log, const struct kmsg_prefix *px, uint64_t line);

/* kmsg.c */

/* kmsg_log_finish(): parse what kmsg_feed() still holds. */
void kmsg_feed_end(struct kmsg_log *log);
/* A new event at the end of log, stamped from px, its other fields "unknown" (-1 or ""). */
struct kmsg_event *kmsg_new_event(struct kmsg_log *log, enum kmsg_kind kind,
				  const struct kmsg_prefix *px, uint64_t line);

#endif
