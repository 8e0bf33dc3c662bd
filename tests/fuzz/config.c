/*
 * config.c: libFuzzer target for the configuration parser. For any input: no crash, leak or UB;
 * an error names the file and line; every entry it kept has a section, a key and a value, and the
 * typed getters never crash on what it kept. The schema validator then judges what was kept: it
 * accepts or refuses without crashing, and a refusal names where the entry came from.
 */
#include "../../src/lib/config.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A schema with every type, a pattern and an enum (the real one lives in src/cmd/, which the
 * fuzz targets do not link). */
static const char *const modes[] = { "nothing", "drain", NULL };
static const struct config_key keys[] = {
	{ "gpu.count", CONFIG_COUNT, 0, 1024, 0, NULL, "check", "" },
	{ "gpu.enabled", CONFIG_BOOL, 0, 0, 0, NULL, "check", "" },
	{ "check.timeout", CONFIG_SECONDS, 1, 3600, CONFIG_WHOLE, NULL, "check", "" },
	{ "check.skip", CONFIG_NAMES, 0, 0, CONFIG_LIST, modes, "check", "" },
	{ "kernel.window", CONFIG_SECONDS, 0, 86400, CONFIG_MIN_EXCL, NULL, "check", "" },
	{ "slurm.on-unknown", CONFIG_ENUM, 0, 0, 0, modes, "check", "" },
	{ "stress.floor-*", CONFIG_NUMBER, 0, 1e6, CONFIG_MAX_EXCL, NULL, "stress", "" },
	{ "storage.usage", CONFIG_PERCENT, 5, 100, CONFIG_MIN_EXCL, NULL, "check", "" },
	{ "storage.mount", CONFIG_PATH, 0, 0, CONFIG_LIST, NULL, "check", "" },
	{ "storage.size", CONFIG_SIZE, 1, 1 << 26, 0, NULL, "check", "" },
	{ "agent.listen", CONFIG_STRING, 0, 0, 0, NULL, "agent", "" },
};

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
	strbuf_reset(&err);
	if (config_validate(&cfg, keys, sizeof(keys) / sizeof(keys[0]), &err) < 0) {
		/* every refusal says where: "FILE:LINE: ..." */
		if (strncmp(err.buf, "fuzz.conf:", 10))
			__builtin_trap();
	} else {
		/* accepted: every entry is a known key whose value passes its own check */
		for (size_t i = 0; i < cfg.nr; i++) {
			const struct config_key *k =
				config_key_find(keys, sizeof(keys) / sizeof(keys[0]),
						cfg.e[i].section, cfg.e[i].key);
			if (!k || config_key_check(k, NULL, cfg.e[i].value, NULL) < 0)
				__builtin_trap();
		}
	}
	config_release(&cfg);
	strbuf_release(&err);
	return 0;
}
