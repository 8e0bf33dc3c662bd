/*
 * fabric_burnin.c: 'vigil fabric burnin plan FILE', stages of HCA pairs that together carry
 * traffic over every link of the fabric (src/fabric/plan.h plans; src/fabric/topo.h reads
 * ibnetdiscover/iblinkinfo output or builds a described fat tree). The JSON plan is what
 * 'vigil fabric burnin run' reads (docs/FABRIC.md). Exit 0 every link covered, 1 some link
 * left uncovered (down, miswired, unreachable: said by id), 2 usage or unreadable input, 3
 * input not understood.
 */
#include "cmd.h"
#include "fabric.h"
#include "../fabric/plan.h"
#include "../lib/fileio.h"
#include "../lib/strlist.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char plan_usage[] =
	"usage: vigil fabric burnin plan FILE [--hosts-per-stage N] [--hosts LIST] [--json] [-o PLAN]\n"
	"       vigil fabric burnin plan --fat-tree SPEC [...]\n"
	"\n"
	"Stages of HCA pairs (host+HCA to host+HCA, each HCA in at most one pair per stage)\n"
	"whose routes together carry traffic over every link, in close to the fewest stages;\n"
	"the lower bound is computed and printed. FILE is ibnetdiscover (or iblinkinfo) output,\n"
	"or a described fat tree, a file whose first word is 'fat-tree':\n"
	"    fat-tree hosts=512 hcas=8 radix=64 tiers=3 speed=NDR\n"
	"(HCA c of every host on rail c's leaves; leaves of RADIX/2 HCAs and RADIX/2 uplinks;\n"
	"tiers 0 or absent: the fewest that fit).\n"
	"\n"
	"  --fat-tree SPEC       the same words as a fat-tree file, comma-separated\n"
	"  --hosts-per-stage N   at most N hosts in any stage\n"
	"  --hosts LIST          only these hosts' HCAs (comma-separated names, as the\n"
	"                        topology's descriptions name them: an allocation's nodes);\n"
	"                        links they cannot reach are out of scope, not uncovered\n"
	"  --json                the plan as JSON (what 'vigil fabric burnin run' reads)\n"
	"  -o, --output PLAN     write the JSON plan to PLAN (replaced atomically)\n"
	"\n"
	"Exit status: 0 every link covered, 1 links left uncovered (down, miswired or off the\n"
	"up/down tree) or a host of --hosts not in the topology, 2 usage error (a --fat-tree SPEC not understood), 3 could not tell\n"
	"(TOPOLOGY missing, unreadable or not understood, or PLAN not written).\n";

static void say_err(const char *what, const struct strbuf *err)
{
	struct strbuf msg = STRBUF_INIT;
	strbuf_add_clean(&msg, err->buf);
	fprintf(stderr, "vigil fabric burnin plan: %s%s\n", what, msg.buf);
	strbuf_release(&msg);
}

int cmd_fabric_burnin_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "fat-tree", required_argument, NULL, 'F' },
		{ "hosts-per-stage", required_argument, NULL, 'H' },
		{ "hosts", required_argument, NULL, 'L' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	const char *spec_arg = NULL, *out_path = NULL;
	struct plan_opts po = { 0 };
	struct strlist hosts = STRLIST_INIT;
	int c, early = -1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'F': spec_arg = optarg; break;
		case 'o': out_path = optarg; break;
		case 'L':
			strlist_split(&hosts, optarg, ",");
			if (!hosts.nr) {
				usage_error("fabric burnin plan",
					    "--hosts wants comma-separated host names, not '%s'",
					    optarg);
				early = EXIT_USAGE;
			}
			break;
		case 'H': {
			uint64_t v;
			if (!parse_u64(optarg, &v) || !v || v > 1000000) {
				usage_error("fabric burnin plan",
					    "--hosts-per-stage wants a number from 1 to 1000000, not '%s'",
					    optarg);
				early = EXIT_USAGE;
				break;
			}
			po.hosts_per_stage = (unsigned)v;
			break;
		}
		case 'h':
			fputs(plan_usage, stdout);
			early = EXIT_HEALTHY;
			break;
		case ':':
			usage_error("fabric burnin plan", "'%s' wants a value", argv[optind - 1]);
			early = EXIT_USAGE;
			break;
		default:
			usage_error("fabric burnin plan", "unknown option '%s'", argv[optind - 1]);
			early = EXIT_USAGE;
			break;
		}
		if (early >= 0) {
			strlist_release(&hosts);
			return early;
		}
	}
	if ((spec_arg && optind != argc) || (!spec_arg && optind != argc - 1)) {
		usage_error("fabric burnin plan", spec_arg ? "--fat-tree or FILE, not both" :
			    optind >= argc ? "which fabric? name ibnetdiscover output, a fat-tree "
			    "file, or --fat-tree SPEC" : "one FILE at a time");
		strlist_release(&hosts);
		return EXIT_USAGE;
	}

	struct fabric f;
	struct plan p = { 0 };
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT;
	int ret = EXIT_USAGE;
	fabric_init(&f);
	if (!spec_arg && fabric_read_file(argv[optind], &text, &err) < 0) {
		say_err("unknown: ", &err);
		ret = EXIT_UNKNOWN; /* input, not usage: the one exit contract (vigil(1)) */
		goto out;
	}
	if (spec_arg || fat_tree_text(text.buf, text.len)) {
		struct fat_tree_spec spec;
		const char *words = spec_arg ? spec_arg : text.buf;
		if (fat_tree_parse(words, &spec, &err) < 0 || fabric_fat_tree(&f, &spec, &err) < 0) {
			say_err("a fat tree: ", &err);
			if (!spec_arg)
				ret = EXIT_UNKNOWN; /* a file's words; --fat-tree's are usage */
			goto out;
		}
	} else if (fabric_parse(&f, text.buf, text.len, &err) < 0) {
		say_err("unknown: ", &err);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	po.hosts = (const char *const *)hosts.items;
	po.nr_hosts = hosts.nr;
	if (plan_build(&f, &po, &p, &err) < 0) {
		say_err("unknown: ", &err);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	if (json || out_path)
		plan_write_json(&f, &p, &out);
	if (out_path) {
		if (write_file_atomic(out_path, out.buf, out.len, 0644, &err) < 0) {
			say_err("", &err);
			ret = EXIT_UNKNOWN;
			goto out;
		}
		strbuf_reset(&out);
	}
	if (!json)
		plan_write_text(&f, &p, &out);
	fwrite(out.buf, 1, out.len, stdout);
	ret = p.nr_uncovered || p.nr_missing ? EXIT_UNHEALTHY : EXIT_HEALTHY;
out:
	strlist_release(&hosts);
	plan_release(&p);
	fabric_release(&f);
	strbuf_release(&text);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}
