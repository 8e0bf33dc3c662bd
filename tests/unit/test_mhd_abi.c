/*
 * test_mhd_abi.c: src/agent/mhd.h declares libmicrohttpd's API by hand (so vigil builds without
 * libmicrohttpd-dev). Where the real <microhttpd.h> is installed, this test checks mhd.h itself
 * against it, not numbers retyped here: it copies mhd.h with every MHD_ name renamed VIGIL_MHD_,
 * writes one _Static_assert(MHD_X == VIGIL_MHD_X) for every constant mhd.h declares (macros and
 * enum members), one for the size of every enum and for the offset and size of every field of
 * its unions, and compiles that beside the real header with cc. A wrong number in mhd.h fails
 * to compile, and the compiler's message names it.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"

#include <ctype.h>

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* The identifier at p (p[0] must start one), into out. */
static const char *ident(const char *p, struct strbuf *out)
{
	strbuf_reset(out);
	while (ident_char(*p))
		strbuf_addch(out, *p++);
	return p;
}

static bool is_mhd_at(const char *text, const char *p)
{
	return !strncmp(p, "MHD_", 4) && (p == text || !ident_char(p[-1]));
}

/* mhd.h with every identifier that starts with MHD_ renamed VIGIL_MHD_. */
static void rename_all(const char *text, struct strbuf *out)
{
	for (const char *p = text; *p; p++) {
		if (is_mhd_at(text, p))
			strbuf_addstr(out, "VIGIL_");
		strbuf_addch(out, *p);
	}
}

/* The closing brace of the block opening at or after p. */
static const char *block_end(const char *p)
{
	const char *close = strchr(p, '}');
	return close ? close : p + strlen(p);
}

/*
 * What mhd.h declares: constants (each "#define MHD_X" and each member of an "enum MHD_T"), enum
 * types, and union fields as "UNION.FIELD".
 */
static void collect(const char *text, struct strlist *consts, struct strlist *enums,
		    struct strlist *fields)
{
	struct strbuf id = STRBUF_INIT, tag = STRBUF_INIT;
	for (const char *p = text; *p; p++) {
		if (!strncmp(p, "#define ", 8) && is_mhd_at(text, p + 8)) {
			p = ident(p + 8, &id) - 1;
			strlist_add(consts, id.buf);
		} else if ((!strncmp(p, "enum ", 5) || !strncmp(p, "union ", 6)) &&
			   (p == text || !ident_char(p[-1]))) {
			bool is_enum = p[0] == 'e';
			const char *q = p + (is_enum ? 5 : 6);
			if (!is_mhd_at(text, q))
				continue;
			q = ident(q, &tag);
			while (*q == ' ')
				q++;
			if (*q != '{') /* a use of the type, not its definition */
				continue;
			const char *end = block_end(q);
			if (is_enum) {
				strlist_add(enums, tag.buf);
				for (const char *r = q; r < end; r++)
					if (is_mhd_at(text, r)) {
						r = ident(r, &id) - 1;
						strlist_add(consts, id.buf);
					}
			} else {
				/* each "type name;": the identifier before the ';' */
				for (const char *r = q; r < end; r++) {
					if (*r != ';')
						continue;
					const char *s = r;
					while (s > q && !ident_char(s[-1]))
						s--;
					while (s > q && ident_char(s[-1]))
						s--;
					ident(s, &id);
					struct strbuf f = STRBUF_INIT;
					strbuf_addf(&f, "%s.%s", tag.buf, id.buf);
					strlist_add_nodup(fields, strbuf_detach(&f, NULL));
				}
			}
			p = end;
		}
	}
	strbuf_release(&id);
	strbuf_release(&tag);
}

static void assertions(const struct strlist *consts, const struct strlist *enums,
		       const struct strlist *fields, struct strbuf *c)
{
	strbuf_addstr(c, "#include <stddef.h>\n#include <microhttpd.h>\n#include \"vigil_mhd.h\"\n");
	for (size_t i = 0; i < consts->nr; i++) {
		const char *n = consts->items[i];
		strbuf_addf(c,
			    "_Static_assert((long long)(%s) == (long long)(VIGIL_%s), "
			    "\"src/agent/mhd.h: %s differs from microhttpd.h\");\n",
			    n, n, n);
	}
	for (size_t i = 0; i < enums->nr; i++) {
		const char *n = enums->items[i];
		strbuf_addf(c,
			    "_Static_assert(sizeof(enum %s) == sizeof(enum VIGIL_%s), "
			    "\"src/agent/mhd.h: enum %s has another size\");\n",
			    n, n, n);
	}
	for (size_t i = 0; i < fields->nr; i++) {
		char u[128];
		const char *dot = strchr(fields->items[i], '.');
		snprintf(u, sizeof(u), "%.*s", (int)(dot - fields->items[i]), fields->items[i]);
		const char *f = dot + 1;
		strbuf_addf(c,
			    "_Static_assert(offsetof(union %s, %s) == offsetof(union VIGIL_%s, %s) "
			    "&& sizeof(((union %s *)0)->%s) == sizeof(((union VIGIL_%s *)0)->%s), "
			    "\"src/agent/mhd.h: union %s field %s has another place or size\");\n",
			    u, f, u, f, u, f, u, f, u, f);
	}
}

/* cc -fsyntax-only on dir/file: 0 compiled, 1 did not (message in *msg), -1 no compiler. */
static int compile(const char *dir, const char *file, struct strbuf *msg)
{
	struct strbuf inc = STRBUF_INIT, path = STRBUF_INIT;
	strbuf_addf(&inc, "-I%s", dir);
	strbuf_addf(&path, "%s/%s", dir, file);
	const char *argv[] = { "cc", "-std=gnu11", "-fsyntax-only", inc.buf, path.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 60000;
	int ret = -1;
	if (child_run(&c, NULL) == 0 && c.exited && c.exit_code != 127) {
		ret = c.exit_code ? 1 : 0;
		strbuf_addstr(msg, c.err.buf);
	}
	child_release(&c);
	strbuf_release(&inc);
	strbuf_release(&path);
	return ret;
}

/* Check the header text against the installed microhttpd.h: 0 matches, 1 differs (why in *msg);
 * skips the test when there is no compiler or no header. */
static int check_against_system(const char *mhd_text, struct strbuf *msg, size_t *nr_consts)
{
	const char *dir = test_tmpdir();
	struct strlist consts = STRLIST_INIT, enums = STRLIST_INIT, fields = STRLIST_INIT;
	struct strbuf renamed = STRBUF_INIT, c = STRBUF_INIT;
	test_write(dir, "probe.c", "#include <microhttpd.h>\n");
	int r = compile(dir, "probe.c", msg);
	if (r < 0)
		SKIP("no C compiler ('cc') to compile mhd.h beside microhttpd.h");
	if (r > 0)
		SKIP("microhttpd.h not installed (Debian libmicrohttpd-dev): nothing to compare with");
	strbuf_reset(msg);
	collect(mhd_text, &consts, &enums, &fields);
	rename_all(mhd_text, &renamed);
	assertions(&consts, &enums, &fields, &c);
	test_write(dir, "vigil_mhd.h", renamed.buf);
	test_write(dir, "abi.c", c.buf);
	*nr_consts = consts.nr;
	r = compile(dir, "abi.c", msg);
	strlist_release(&consts);
	strlist_release(&enums);
	strlist_release(&fields);
	strbuf_release(&renamed);
	strbuf_release(&c);
	return r;
}

static char *mhd_header(void)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	test_src_path(&path, "src/agent/mhd.h");
	CHECK_MSG(read_file_bounded(path.buf, &text, 1 << 20, &err) == READ_OK, "cannot read %s: %s",
		  path.buf, err.buf);
	strbuf_release(&path);
	strbuf_release(&err);
	return strbuf_detach(&text, NULL);
}

TEST(mhd_declarations_match_the_header)
{
	struct strbuf msg = STRBUF_INIT;
	size_t n = 0;
	char *text = mhd_header();
	int r = check_against_system(text, &msg, &n);
	CHECK_MSG(r == 0, "src/agent/mhd.h disagrees with microhttpd.h:\n%s", msg.buf);
	/* every constant the agent passes is among those compared */
	CHECK_MSG(n >= 20, "only %zu constants found in mhd.h: the parser lost them", n);
	free(text);
	strbuf_release(&msg);
}

/* The comparison itself can fail: one number changed in a copy of mhd.h is caught, by name. */
TEST(mhd_abi_check_catches_a_wrong_number)
{
	struct strbuf msg = STRBUF_INIT, bad = STRBUF_INIT;
	size_t n = 0;
	char *text = mhd_header();
	const char *at = strstr(text, "#define MHD_USE_EPOLL ");
	CHECK_MSG(at, "mhd.h no longer defines MHD_USE_EPOLL");
	strbuf_add(&bad, text, (size_t)(at - text));
	strbuf_addstr(&bad, "#define MHD_USE_EPOLL 256u /* wrong */\n");
	strbuf_addstr(&bad, strchr(at, '\n') + 1);
	CHECK_INT(check_against_system(bad.buf, &msg, &n), 1);
	CHECK_CONTAINS(msg.buf, "MHD_USE_EPOLL differs from microhttpd.h");
	/* and a union field moved */
	strbuf_reset(&bad);
	strbuf_reset(&msg);
	at = strstr(text, "\tuint16_t port;");
	CHECK_MSG(at, "mhd.h no longer has MHD_DaemonInfo.port as uint16_t");
	strbuf_add(&bad, text, (size_t)(at - text));
	strbuf_addstr(&bad, "\tuint32_t port;");
	strbuf_addstr(&bad, at + strlen("\tuint16_t port;"));
	CHECK_INT(check_against_system(bad.buf, &msg, &n), 1);
	CHECK_CONTAINS(msg.buf, "MHD_DaemonInfo field port");
	free(text);
	strbuf_release(&msg);
	strbuf_release(&bad);
}
