/*
 * zlite.h: inflate through the zlib the system already has (libz.so.1, Debian's zlib1g, which
 * every Debian installs), loaded with dlopen, so that building vigil needs no zlib headers
 * (the README's first command is `make` on a fresh machine). The declarations are zlib's own
 * (zlib.h, 1.2 and later: the z_stream layout and the inflate calls used here have not changed);
 * the project declares NVML's and libmicrohttpd's the same way.
 *
 * VIGIL_ZLIB_LIBRARY names another library (the tests name a missing one).
 */
#ifndef VIGIL_LIB_ZLITE_H
#define VIGIL_LIB_ZLITE_H

#include "strbuf.h"

typedef unsigned char Bytef;
typedef unsigned int uInt;
typedef unsigned long uLong;

typedef struct z_stream_s {
	const Bytef *next_in;
	uInt avail_in;
	uLong total_in;
	Bytef *next_out;
	uInt avail_out;
	uLong total_out;
	const char *msg;
	struct internal_state *state;
	void *(*zalloc)(void *, uInt, uInt);
	void (*zfree)(void *, void *);
	void *opaque;
	int data_type;
	uLong adler;
	uLong reserved;
} z_stream;

enum { Z_OK = 0, Z_STREAM_END = 1, Z_NO_FLUSH = 0, Z_BUF_ERROR = -5 };

/* 0 when libz is loaded (once per process), or -1 with *err saying which library was missing. */
int zlite_load(struct strbuf *err);
/* inflateInit2(z, window_bits): Z_OK or zlib's error. zlite_load() must have succeeded. */
int zlite_inflate_init2(z_stream *z, int window_bits);
int zlite_inflate(z_stream *z, int flush);
int zlite_inflate_reset(z_stream *z);
int zlite_inflate_end(z_stream *z);

#endif
