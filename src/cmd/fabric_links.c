/*
 * fabric_links.c: 'vigil fabric links FILE', the link survey of an iblinkinfo or ibnetdiscover
 * output (src/fabric/topo.h parses, src/fabric/links.h judges): ports stuck Down/Polling or in
 * Initialize, links narrower or slower than the rest of the fabric, links whose ends disagree.
 * Exit 0 nothing to act on, 1 links to act on, 2 usage or unreadable file, 3 not understood.
 */
#include "cmd.h"
#include "fabric.h"
#include "../fabric/links.h"

#include <getopt.h>
#include <stdio.h>

static const char links_usage[] =
	"usage: vigil fabric links FILE [--expect TOPOLOGY] [--json]\n"
	"\n"
	"FILE is the output of 'iblinkinfo' (default or -l form) or 'ibnetdiscover'. Reported:\n"
	"  down        a port Down/Polling where a peer is expected (--expect)\n"
	"  init        a link stuck in Initialize or Armed (trained, never activated)\n"
	"  narrow      a link at fewer lanes than the fabric's other links of its kind\n"
	"  slow        a link at a lower speed than the fabric's other links of its kind\n"
	"  asymmetric  a link whose two ends report different things\n"
	"The fabric's width and speed are its mode (what most HCA links and most switch links\n"
	"run at), not a fixed value.\n"
	"\n"
	"  --expect TOPOLOGY  ibnetdiscover (or iblinkinfo) output of the fabric as cabled: its\n"
	"                     connected ports are expected to have a peer\n"
	"  --json             one JSON object: counts, mode, findings\n"
	"\n"
	"Exit status: 0 nothing to act on, 1 links to act on, 2 usage error, 3 could not tell\n"
	"(FILE or TOPOLOGY missing, unreadable or not understood).\n";

/* Read and parse path into f: EXIT_HEALTHY or EXIT_UNKNOWN (missing, unreadable or not
 * understood: the one exit contract of vigil(1) says input is never a usage error). */
static int load(const char *path, struct fabric *f)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	int ret = EXIT_HEALTHY;
	if (fabric_read_file(path, &text, &err) < 0) {
		struct strbuf msg = STRBUF_INIT;
		strbuf_add_clean(&msg, err.buf);
		fprintf(stderr, "vigil fabric links: unknown: %s\n", msg.buf);
		strbuf_release(&msg);
		ret = EXIT_UNKNOWN;
	} else if (fabric_parse(f, text.buf, text.len, &err) < 0) {
		struct strbuf msg = STRBUF_INIT;
		strbuf_add_clean(&msg, path);
		fprintf(stderr, "vigil fabric links: unknown: '%s': %s\n", msg.buf, err.buf);
		strbuf_release(&msg);
		ret = EXIT_UNKNOWN;
	}
	strbuf_release(&text);
	strbuf_release(&err);
	return ret;
}

int cmd_fabric_links(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "expect", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	const char *expect_path = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'e': expect_path = optarg; break;
		case 'h':
			fputs(links_usage, stdout);
			return EXIT_HEALTHY;
		case ':':
			usage_error("fabric links", "'%s' wants a value", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error("fabric links", "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage_error("fabric links", optind >= argc ? "which file? name the output of "
				"iblinkinfo or ibnetdiscover" : "one FILE at a time");
		return EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct fabric f, ex;
	fabric_init(&f);
	fabric_init(&ex);
	int ret = load(path, &f);
	if (ret == EXIT_HEALTHY && expect_path)
		ret = load(expect_path, &ex); /* without the expectation, nothing can be told */
	if (ret != EXIT_HEALTHY)
		goto out;

	struct link_survey s;
	links_survey(&f, expect_path ? &ex : NULL, &s);
	struct strbuf out = STRBUF_INIT;
	if (json)
		links_write_json(&f, &s, path, &out);
	else
		links_write_text(&f, &s, &out);
	fwrite(out.buf, 1, out.len, stdout);
	strbuf_release(&out);
	ret = s.nr ? EXIT_UNHEALTHY : EXIT_HEALTHY;
	links_survey_release(&s);
out:
	fabric_release(&f);
	fabric_release(&ex);
	return ret;
}
