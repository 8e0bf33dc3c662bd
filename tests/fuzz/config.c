/*
 * config.c: libFuzzer target for the configuration parser. For any input: no crash, leak or UB;
 * an error names the file and line; every entry it kept has a section, a key and a value, and the
 * typed getters never crash on what it kept.
 */
#include "../../src/lib/config.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "node-1");
	if (config_parse(&cfg, (const char *)data, size, "fuzz.conf", &err) < 0 &&
	    !strstr(err.buf, "fuzz.conf"))
		__builtin_trap();
	for (size_t i = 0; i < cfg.nr; i++) {
		const struct config_entry *e = &cfg.e[i];
		if (!e->section[0] || !e->key[0] || !e->value)
			__builtin_trap();
		uint64_t u;
		double d;
		bool b;
		config_get_u64(&cfg, e->section, e->key, 0, &u, &err);
		config_get_double(&cfg, e->section, e->key, 0, &d, &err);
		config_get_bool(&cfg, e->section, e->key, false, &b, &err);
		const char **all;
		size_t n = config_get_all(&cfg, e->section, e->key, &all);
		/* an entry outside any host section applies everywhere */
		if (!n && !e->subsection)
			__builtin_trap();
		free(all);
	}
	config_release(&cfg);
	strbuf_release(&err);
	return 0;
}
