/*
 * fleet_gen.c: write a fleet's history with planted lemons (tests/fleetgen.c) for
 * bench/fleet-lemons.sh: fleet_gen DIR NODES DAYS RATE LEMON_SHARE LEMON_FACTOR SEED.
 * Prints the planted lemons' names, one a line, on stdout.
 */
#include "../tests/fleetgen.c"

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: fleet_gen DIR NODES DAYS RATE LEMON_SHARE LEMON_FACTOR SEED\n");
		return 2;
	}
	struct fleetgen g = { .nodes = (unsigned)strtoul(argv[2], NULL, 10),
			      .days = strtod(argv[3], NULL),
			      .rate_node_day = strtod(argv[4], NULL),
			      .soft_rate_node_day = 0.002,
			      .lemon_share = strtod(argv[5], NULL),
			      .lemon_factor = strtod(argv[6], NULL),
			      .seed = strtoull(argv[7], NULL, 10),
			      .start = 1767225600.0 };
	if (!g.nodes || g.nodes > 100000 || !(g.days > 0))
		return 2;
	bool *lemon = xcalloc(g.nodes, sizeof(*lemon));
	long n = fleetgen_write(&g, argv[1], lemon);
	char name[32];
	for (unsigned i = 0; n >= 0 && i < g.nodes; i++)
		if (lemon[i]) {
			fleetgen_node_name(i, name);
			printf("%s\n", name);
		}
	free(lemon);
	return n < 0;
}
