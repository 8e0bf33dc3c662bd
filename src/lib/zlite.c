/*
 * zlite.c: zlib's inflate, loaded with dlopen (see zlite.h).
 */
#include "zlite.h"

#include <dlfcn.h>
#include <stdlib.h>

static struct {
	int state; /* 0 not tried, 1 loaded, -1 failed */
	const char *(*version)(void);
	int (*init2)(z_stream *, int, const char *, int);
	int (*inflate)(z_stream *, int);
	int (*reset)(z_stream *);
	int (*end)(z_stream *);
	char why[256];
} Z;

int zlite_load(struct strbuf *err)
{
	if (!Z.state) {
		const char *lib = getenv("VIGIL_ZLIB_LIBRARY");
		if (!lib || !*lib)
			lib = "libz.so.1";
		void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (dl) {
			*(void **)&Z.version = dlsym(dl, "zlibVersion");
			*(void **)&Z.init2 = dlsym(dl, "inflateInit2_");
			*(void **)&Z.inflate = dlsym(dl, "inflate");
			*(void **)&Z.reset = dlsym(dl, "inflateReset");
			*(void **)&Z.end = dlsym(dl, "inflateEnd");
		}
		if (dl && Z.version && Z.init2 && Z.inflate && Z.reset && Z.end) {
			Z.state = 1;
		} else {
			snprintf(Z.why, sizeof(Z.why), "zlib (%s, Debian's zlib1g) could not be loaded",
				 lib);
			Z.state = -1;
		}
	}
	if (Z.state < 0)
		return error_set(err, "%s", Z.why);
	return 0;
}

int zlite_inflate_init2(z_stream *z, int window_bits)
{
	/* what zlib.h's inflateInit2 macro passes: the library's version and our struct's size,
	 * which zlib checks against its own */
	return Z.init2(z, window_bits, Z.version(), (int)sizeof(z_stream));
}

int zlite_inflate(z_stream *z, int flush)
{
	return Z.inflate(z, flush);
}

int zlite_inflate_reset(z_stream *z)
{
	return Z.reset(z);
}

int zlite_inflate_end(z_stream *z)
{
	return Z.end(z);
}
