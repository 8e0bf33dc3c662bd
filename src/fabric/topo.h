/*
 * topo.h: the InfiniBand fabric as one graph (switches, HCAs, links with both ends), read from
 * `iblinkinfo` (default and -l line forms) or `ibnetdiscover` output, or generated from a
 * described fat tree. `vigil fabric links` judges the links of this graph (links.h) and
 * `vigil fabric burnin plan` plans traffic over it (plan.h). Pure: no printing, no exits.
 *
 * Each port line of the input is one end's own report ("my port 3 goes to lid 11 port 1, 4X
 * NDR, Active/LinkUp"): both ends of a link usually report it, and where they disagree that is
 * a finding in itself, so the graph keeps every report (struct fport) and pairs them into
 * links (struct flink) after the whole input is read.
 */
#ifndef VIGIL_FABRIC_TOPO_H
#define VIGIL_FABRIC_TOPO_H

#include "../lib/strbuf.h"

#include <stdint.h>

enum ib_state { IBS_UNKNOWN, IBS_DOWN, IBS_INIT, IBS_ARMED, IBS_ACTIVE };
enum ib_phys {
	IBP_UNKNOWN,
	IBP_SLEEP,
	IBP_POLLING,
	IBP_DISABLED,
	IBP_TRAINING,
	IBP_LINKUP,
	IBP_ERROR_RECOVERY,
	IBP_PHYTEST,
};
/* Ordered slowest first, so a lower value is a slower link. */
enum ib_speed { IBSP_UNKNOWN, IBSP_SDR, IBSP_DDR, IBSP_QDR, IBSP_FDR10, IBSP_FDR, IBSP_EDR,
		IBSP_HDR, IBSP_NDR, IBSP_XDR };

const char *ib_state_name(int state);  /* "Down", "Initialize", ... */
const char *ib_phys_name(int phys);    /* "Polling", "LinkUp", ... */
const char *ib_speed_name(int speed);  /* "NDR", ... ; "?" when unknown */
/* "4X", "1X", ... ; "?" when 0 */
const char *ib_width_name(int width);

/* A node description (or a name iblinkinfo printed) is kept to this many bytes. */
#define FNODE_NAME_MAX 128

struct fnode {
	char *name;  /* as the input named it: "leaf01", "node001 mlx5_0" */
	char *host;  /* an HCA's host: the description's first word; a switch: its name */
	char *hca;   /* an HCA's device: the rest ("mlx5_0"), "" when the description has one word */
	char *key;   /* identity in the input: "S-<guid>", "C-<port guid>", "N-<name>" */
	uint64_t guid;
	int lid;     /* 0: not known */
	bool is_switch;
	bool reported; /* the input had this node's own block (not only others' mentions of it) */
};

struct fport {
	int node, port;
	int peer, peer_port;   /* -1: no peer reported (a Down port) or not resolved */
	int width;             /* lanes: 1, 2, 4, 8, 12; 0 not known */
	int speed;             /* enum ib_speed */
	int state, phys;       /* enum ib_state, enum ib_phys; IBS_UNKNOWN from ibnetdiscover */
	unsigned line;         /* 1-based line of the input */
	/* the peer as the line named it, resolved into peer/peer_port after the whole input */
	int ref_lid, ref_port;
	uint64_t ref_guid;
	char *ref_name;
};

struct flink {
	int a, a_port, b, b_port; /* nodes; (a, a_port) < (b, b_port) */
	int pa, pb;               /* ports[] of each end's own report, -1 when that end did not report */
};

enum fabric_format { FABRIC_FMT_NONE, FABRIC_FMT_IBLINKINFO, FABRIC_FMT_IBNETDISCOVER,
		     FABRIC_FMT_GENERATED };

struct fabric_map; /* topo.c: name and end lookups */

struct fabric {
	struct fnode *nodes;
	size_t nr_nodes, alloc_nodes;
	struct fport *ports;
	size_t nr_ports, alloc_ports;
	struct flink *links;
	size_t nr_links, alloc_links;
	enum fabric_format format;
	size_t lines;      /* lines read */
	size_t understood; /* lines that were a header, a port or known decoration */
	size_t garbage;    /* non-blank lines understood as nothing */
	unsigned first_garbage; /* its line number (0: none) */
	struct fabric_map *map;
};

void fabric_init(struct fabric *f);
void fabric_release(struct fabric *f);

/*
 * Parse len bytes of iblinkinfo or ibnetdiscover output (which one is told by the text, unless
 * the caller set f->format first: the fuzzers force each) into f
 * (fabric_init'ed), then pair the ports into links. CRLF line ends, NUL bytes, truncated last
 * lines and garbage lines are survived; garbage is counted. 0, or -1 with *err when no port
 * line was understood at all ("no iblinkinfo or ibnetdiscover port line in N lines"): the
 * caller reports that as could-not-tell.
 */
int fabric_parse(struct fabric *f, const char *text, size_t len, struct strbuf *err);

/*
 * Read a whole input file for fabric_parse() (or a fat-tree description) into out: a regular
 * file of at most FABRIC_INPUT_MAX bytes (a link given by the user is followed; a FIFO, device
 * or directory is refused, never waited on). 0, or -1 with *err ("cannot read 'P': ...").
 */
#define FABRIC_INPUT_MAX (512u << 20)
int fabric_read_file(const char *path, struct strbuf *out, struct strbuf *err);

/* Building by hand (the fat-tree generator, tests). Node index, or the port's index. */
int fabric_add_node(struct fabric *f, const char *name, bool is_switch, uint64_t guid, int lid);
/* Both ends' reports of one cable, Active/LinkUp at width and speed. */
void fabric_connect(struct fabric *f, int a, int a_port, int b, int b_port, int width,
		    int speed);
/* Pair ports into links (fabric_parse does it; hand-built graphs call it once at the end). */
void fabric_finish(struct fabric *f);

/*
 * A described fat tree (docs/FABRIC.md): "fat-tree hosts=H hcas=C radix=K tiers=T" (words
 * separated by spaces or commas; "fat-tree" optional). HCA c of every host is cabled to rail
 * c's leaves (rail-optimised); leaves have K/2 HCAs below and K/2 uplinks. tiers 0 picks the
 * fewest that fit. 0, or -1 with *err naming the bad word or the limit passed.
 */
struct fat_tree_spec {
	unsigned hosts, hcas, radix, tiers;
	int speed; /* enum ib_speed; NDR unless speed= says */
};
int fat_tree_parse(const char *text, struct fat_tree_spec *spec, struct strbuf *err);
int fabric_fat_tree(struct fabric *f, const struct fat_tree_spec *spec, struct strbuf *err);

/* The graph written back as ibnetdiscover or iblinkinfo (line_mode: -l) would print it: test
 * fixtures of any size, and the fuzzers' seeds. */
void fabric_write_ibnetdiscover(const struct fabric *f, struct strbuf *out);
void fabric_write_iblinkinfo(const struct fabric *f, bool line_mode, struct strbuf *out);

/* Is s the start of a described fat tree (its first word "fat-tree")? */
bool fat_tree_text(const char *text, size_t len);

#endif
