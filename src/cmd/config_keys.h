/*
 * config_keys.h: the configuration schema, every key vigil reads with its type and range, and
 * the one place it is applied (config_keys_validate(), called once when a command loads its
 * configuration). It lives with the commands because it names keys of every layer below: the
 * checks', the agent's, Slurm's, the active tests' and the commands' own.
 *
 * A new config_get*() call needs a row here (tests/unit/test_cli.c finds the literal ones in
 * src/ and fails on a key the schema lacks) and a line in the man page of each command that
 * reads it (the same test reads the man pages under docs/).
 */
#ifndef VIGIL_CMD_CONFIG_KEYS_H
#define VIGIL_CMD_CONFIG_KEYS_H

#include "../lib/config.h"

/* The fixed keys, as written in the man pages. */
extern const struct config_key config_keys_fixed[];
extern const size_t config_keys_fixed_nr;
/* The keys every check has, named "<check>.KEY" in the man pages. */
extern const struct config_key config_keys_per_check[];
extern const size_t config_keys_per_check_nr;

/* The whole schema: the fixed keys and the per-check keys spelt out for every check in the
 * registry. Built on first use; never freed. */
const struct config_key *config_schema(size_t *nr);

/* Every entry and section of cfg against the schema: 0, or -1 with *err. */
int config_keys_validate(const struct config *cfg, struct strbuf *err);

#endif
