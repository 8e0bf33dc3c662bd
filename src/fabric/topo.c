/*
 * topo.c: iblinkinfo and ibnetdiscover output into one fabric graph (topo.h), the described
 * fat-tree generator, and the graph written back in both tools' forms (fixtures at any scale).
 *
 * The formats are infiniband-diags' (rdma-core): iblinkinfo prints "Switch: 0xGUID NAME:" or
 * "CA: NAME:" and then a line per port, "LID PORT[ext] ==( W SPEED STATE/ PHYS)==> LID PORT[ext]
 * "PEER" ( )" (an HCA's line starts with its port GUID; -l puts "0xGUID "NAME"" in front of
 * every line and the peer's port GUID after the arrow); a Down port has no width or speed and
 * no peer ("[  ] "" ( )"). ibnetdiscover prints a block per node, "Switch N "S-guid" # "name"
 * ... lid L" or "Ca N "H-guid" # "name"", then "[P](portguid) "S-guid"[Q] # ... "peer" lid L
 * 4xNDR" per connected port. Nothing here trusts the input: lines are bounded, names capped,
 * numbers range-checked, and a line that is none of these is counted as garbage, not guessed.
 */
#include "topo.h"
#include "../lib/fileio.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 4096
#define PORT_MAX 1024 /* switch ports with splits stay far below; anything above is garbage */
#define LID_MAX 0xffff

/* ---- names ---- */

const char *ib_state_name(int s)
{
	static const char *const n[] = { "?", "Down", "Initialize", "Armed", "Active" };
	return s >= 0 && s <= IBS_ACTIVE ? n[s] : "?";
}

const char *ib_phys_name(int p)
{
	static const char *const n[] = { "?", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest" };
	return p >= 0 && p <= IBP_PHYTEST ? n[p] : "?";
}

const char *ib_speed_name(int s)
{
	static const char *const n[] = { "?", "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR",
		"NDR", "XDR" };
	return s >= 0 && s <= IBSP_XDR ? n[s] : "?";
}

const char *ib_width_name(int w)
{
	switch (w) {
	case 1: return "1X";
	case 2: return "2X";
	case 4: return "4X";
	case 8: return "8X";
	case 12: return "12X";
	}
	return "?";
}

static int state_from(const char *s, size_t n)
{
	static const struct { const char *w; int v; } t[] = {
		{ "Down", IBS_DOWN }, { "Initialize", IBS_INIT }, { "Init", IBS_INIT },
		{ "Armed", IBS_ARMED }, { "Active", IBS_ACTIVE },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].w) == n && !memcmp(t[i].w, s, n))
			return t[i].v;
	return IBS_UNKNOWN;
}

static int phys_from(const char *s, size_t n)
{
	static const struct { const char *w; int v; } t[] = {
		{ "Sleep", IBP_SLEEP }, { "Polling", IBP_POLLING }, { "Disabled", IBP_DISABLED },
		{ "PortConfigurationTraining", IBP_TRAINING }, { "LinkUp", IBP_LINKUP },
		{ "LinkErrorRecovery", IBP_ERROR_RECOVERY }, { "PhyTest", IBP_PHYTEST },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].w) == n && !memcmp(t[i].w, s, n))
			return t[i].v;
	return IBP_UNKNOWN;
}

/* ibnetdiscover's compact names ("NDR") and iblinkinfo's rates ("106.25 Gbps") */
static int speed_from_name(const char *s, size_t n)
{
	for (int i = IBSP_SDR; i <= IBSP_XDR; i++)
		if (strlen(ib_speed_name(i)) == n && !memcmp(ib_speed_name(i), s, n))
			return i;
	return IBSP_UNKNOWN;
}

static int speed_from_gbps(const char *s, size_t n)
{
	static const struct { const char *w; int v; } t[] = {
		{ "2.5", IBSP_SDR }, { "5.0", IBSP_DDR }, { "10.0", IBSP_QDR },
		{ "14.0625", IBSP_FDR }, { "25.78125", IBSP_EDR }, { "53.125", IBSP_HDR },
		{ "106.25", IBSP_NDR }, { "212.5", IBSP_XDR },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].w) == n && !memcmp(t[i].w, s, n))
			return t[i].v;
	return IBSP_UNKNOWN;
}

static const char *speed_gbps(int s)
{
	static const char *const n[] = { "?", "2.5", "5.0", "10.0", "10.0", "14.0625",
		"25.78125", "53.125", "106.25", "212.5" };
	return s >= 0 && s <= IBSP_XDR ? n[s] : "?";
}

static int width_from(const char *s, size_t n)
{
	/* "4X" (iblinkinfo) or "4x" (ibnetdiscover) */
	if (n < 2 || n > 3 || (s[n - 1] != 'X' && s[n - 1] != 'x'))
		return 0;
	int w = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return 0;
		w = w * 10 + (s[i] - '0');
	}
	return w == 1 || w == 2 || w == 4 || w == 8 || w == 12 ? w : 0;
}

/* ---- maps: open addressing, 64-bit keys; string keys by their FNV-1a hash and a compare ---- */

struct u64map {
	uint64_t *keys; /* key + 1 (0: empty) */
	int *vals;
	size_t cap, nr;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static void u64map_put(struct u64map *m, uint64_t key, int val);

static void u64map_grow(struct u64map *m)
{
	struct u64map old = *m;
	m->cap = old.cap ? old.cap * 2 : 1024;
	m->keys = xcalloc(m->cap, sizeof(*m->keys));
	m->vals = xcalloc(m->cap, sizeof(*m->vals));
	m->nr = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			u64map_put(m, old.keys[i] - 1, old.vals[i]);
	free(old.keys);
	free(old.vals);
}

/* The value at key, or -1. */
static int u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return -1;
	for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return -1;
		if (m->keys[i] == key + 1)
			return m->vals[i];
	}
}

static void u64map_put(struct u64map *m, uint64_t key, int val)
{
	if ((m->nr + 1) * 2 > m->cap)
		u64map_grow(m);
	size_t i = mix64(key) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != key + 1)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->nr++;
	m->keys[i] = key + 1;
	m->vals[i] = val;
}

static void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	/* the top bits keep string keys apart from ends and LIDs in a shared map */
	return h | (1ULL << 63);
}

struct fabric_map {
	struct u64map by_key;  /* hash(key) -> node (chains through same-hash nodes below) */
	struct u64map by_name; /* hash(name) -> node, or -2 when two nodes share the name */
	struct u64map ends;    /* node << 16 | port -> ports[] */
	struct u64map links;   /* hash of both ends -> links[] (probed on: see fabric_finish) */
	int *lid;              /* LID -> node, -1 */
};

static struct fabric_map *fmap(struct fabric *f)
{
	if (!f->map) {
		f->map = xcalloc(1, sizeof(*f->map));
	}
	return f->map;
}

void fabric_init(struct fabric *f)
{
	memset(f, 0, sizeof(*f));
}

void fabric_release(struct fabric *f)
{
	for (size_t i = 0; i < f->nr_nodes; i++) {
		free(f->nodes[i].name);
		free(f->nodes[i].host);
		free(f->nodes[i].hca);
		free(f->nodes[i].key);
	}
	for (size_t i = 0; i < f->nr_ports; i++)
		free(f->ports[i].ref_name);
	free(f->nodes);
	free(f->ports);
	free(f->links);
	if (f->map) {
		u64map_free(&f->map->by_key);
		u64map_free(&f->map->by_name);
		u64map_free(&f->map->ends);
		u64map_free(&f->map->links);
		free(f->map->lid);
		free(f->map);
	}
	memset(f, 0, sizeof(*f));
}

/* Node with this key, or -1. Keys are unique; a hash collision of two keys is told apart by a
 * linear probe on the hash + i (rare enough to cost nothing). */
static int node_by_key(struct fabric *f, const char *key)
{
	uint64_t h = hash_str(key);
	for (uint64_t i = 0;; i++) {
		int n = u64map_get(&fmap(f)->by_key, h + i);
		if (n < 0)
			return -1;
		if (!strcmp(f->nodes[n].key, key))
			return n;
	}
}

static void set_name(struct fabric *f, int n, const char *name)
{
	struct fnode *nd = &f->nodes[n];
	char buf[FNODE_NAME_MAX];
	strlcpy_v(buf, name, sizeof(buf));
	free(nd->name);
	free(nd->host);
	free(nd->hca);
	nd->name = xstrdup(buf);
	if (nd->is_switch) {
		nd->host = xstrdup(buf);
		nd->hca = xstrdup("");
	} else {
		/* "node001 mlx5_0": host, then the device (a description of one word: no device) */
		const char *sp = strchr(buf, ' ');
		nd->host = sp ? xstrndup(buf, (size_t)(sp - buf)) : xstrdup(buf);
		while (sp && *sp == ' ')
			sp++;
		nd->hca = xstrdup(sp ? sp : "");
	}
	if (!buf[0])
		return;
	uint64_t h = hash_str(buf);
	int prev = u64map_get(&fmap(f)->by_name, h);
	if (prev == -1)
		u64map_put(&f->map->by_name, h, n);
	else if (prev != n)
		u64map_put(&f->map->by_name, h, -2);
}

static int new_node(struct fabric *f, const char *key, const char *name, bool is_switch)
{
	f->nodes = grow_array(f->nodes, sizeof(*f->nodes), f->nr_nodes + 1, &f->alloc_nodes);
	int n = (int)f->nr_nodes++;
	struct fnode *nd = &f->nodes[n];
	memset(nd, 0, sizeof(*nd));
	nd->is_switch = is_switch;
	nd->key = xstrdup(key);
	set_name(f, n, name);
	uint64_t h = hash_str(key);
	while (u64map_get(&fmap(f)->by_key, h) >= 0)
		h++;
	u64map_put(&f->map->by_key, h, n);
	return n;
}

static void set_lid(struct fabric *f, int n, int lid)
{
	if (lid <= 0 || lid > LID_MAX)
		return;
	struct fabric_map *m = fmap(f);
	if (!m->lid) {
		m->lid = xmalloc((LID_MAX + 1) * sizeof(int));
		for (size_t i = 0; i <= LID_MAX; i++)
			m->lid[i] = -1;
	}
	if (m->lid[lid] < 0)
		m->lid[lid] = n;
	if (!f->nodes[n].lid)
		f->nodes[n].lid = lid;
}

static struct fport *new_port(struct fabric *f, int node, int port, unsigned line)
{
	f->ports = grow_array(f->ports, sizeof(*f->ports), f->nr_ports + 1, &f->alloc_ports);
	struct fport *p = &f->ports[f->nr_ports++];
	memset(p, 0, sizeof(*p));
	p->node = node;
	p->port = port;
	p->peer = p->peer_port = -1;
	p->line = line;
	return p;
}

int fabric_add_node(struct fabric *f, const char *name, bool is_switch, uint64_t guid, int lid)
{
	char key[40];
	snprintf(key, sizeof(key), "%c-%016llx", is_switch ? 'S' : 'H', (unsigned long long)guid);
	int n = node_by_key(f, key);
	if (n < 0)
		n = new_node(f, key, name, is_switch);
	f->nodes[n].guid = guid;
	f->nodes[n].reported = true;
	set_lid(f, n, lid);
	return n;
}

void fabric_connect(struct fabric *f, int a, int a_port, int b, int b_port, int width, int speed)
{
	for (int side = 0; side < 2; side++) {
		struct fport *p = side ? new_port(f, b, b_port, 0) : new_port(f, a, a_port, 0);
		p->peer = side ? a : b;
		p->peer_port = side ? a_port : b_port;
		p->width = width;
		p->speed = speed;
		p->state = IBS_ACTIVE;
		p->phys = IBP_LINKUP;
	}
}

static bool add_chunk(void *arg, const char *data, size_t len)
{
	strbuf_add(arg, data, len);
	return true;
}

int fabric_read_file(const char *path, struct strbuf *out, struct strbuf *err)
{
	int rc = read_file_stream(path, 0, FABRIC_INPUT_MAX, add_chunk, out, err);
	return rc < 0 ? -1 : 0;
}

/* ---- small scanners over a NUL-terminated line ---- */

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A decimal of at most 9 digits at *s; advances. */
static bool scan_int(const char **s, long *out)
{
	const char *p = *s;
	long v = 0;
	int nd = 0;
	while (isdigit((unsigned char)*p) && nd < 10) {
		v = v * 10 + (*p++ - '0');
		nd++;
	}
	if (!nd || nd > 9)
		return false;
	*s = p;
	*out = v;
	return true;
}

/* Hex digits (an optional 0x before them) at *s, at most 16; advances. */
static bool scan_hex(const char **s, uint64_t *out, bool want_0x)
{
	const char *p = *s;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	else if (want_0x)
		return false;
	uint64_t v = 0;
	int nd = 0;
	while (isxdigit((unsigned char)*p) && nd < 17) {
		int c = (unsigned char)*p++;
		v = v * 16 + (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
		nd++;
	}
	if (!nd || nd > 16)
		return false;
	*s = p;
	*out = v;
	return true;
}

/* "PORT[ext]" at *s (ext: anything up to ']'); advances past ']'. */
static bool scan_port_bracket(const char **s, long *port)
{
	const char *p = *s;
	if (!scan_int(&p, port) || *p != '[')
		return false;
	const char *close = strchr(p, ']');
	if (!close || close - p > 8)
		return false;
	*s = close + 1;
	return *port >= 0 && *port <= PORT_MAX;
}

/* A "..." string at *s into out (capped); advances past the closing quote. */
static bool scan_quoted(const char **s, char *out, size_t outsz)
{
	const char *p = *s;
	if (*p != '"')
		return false;
	const char *end = strchr(p + 1, '"');
	if (!end)
		return false;
	size_t n = (size_t)(end - p - 1);
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, p + 1, n);
	out[n] = '\0';
	*s = end + 1;
	return true;
}

static void trim_copy(char *out, size_t outsz, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* ---- iblinkinfo ---- */

struct lparse {
	struct fabric *f;
	int cur;          /* the node of the header above, -1 */
	bool cur_is_ca;
	unsigned cur_lines;
};

/* "( 4X     106.25 Gbps Active/  LinkUp)" contents (without the parentheses' outer pair) */
static bool parse_link_mid(const char *s, size_t n, struct fport *p)
{
	const char *slash = NULL;
	for (size_t i = n; i-- > 0;)
		if (s[i] == '/') {
			slash = s + i;
			break;
		}
	if (!slash)
		return false;
	char phys[48], left[96];
	trim_copy(phys, sizeof(phys), slash + 1, (size_t)(s + n - slash - 1));
	trim_copy(left, sizeof(left), s, (size_t)(slash - s));
	p->phys = phys_from(phys, strlen(phys));
	/* the state is the last word before the slash */
	char *sp = strrchr(left, ' ');
	const char *state = sp ? sp + 1 : left;
	p->state = state_from(state, strlen(state));
	if (p->state == IBS_UNKNOWN || p->phys == IBP_UNKNOWN)
		return false;
	if (!sp)
		return true; /* "Down/ Polling": no width or speed on a down port */
	*sp = '\0';
	const char *w = skip_ws(left);
	const char *we = w;
	while (*we && *we != ' ')
		we++;
	p->width = width_from(w, (size_t)(we - w));
	const char *sd = skip_ws(we);
	const char *se = sd;
	while (*se && *se != ' ')
		se++;
	p->speed = speed_from_gbps(sd, (size_t)(se - sd));
	if (strstr(se, "FDR10"))
		p->speed = IBSP_FDR10;
	return true;
}

static bool iblinkinfo_port_line(struct lparse *lp, char *line, unsigned lineno)
{
	struct fabric *f = lp->f;
	char *open = strstr(line, "==(");
	char *arrow = open ? strstr(open, "==>") : NULL;
	if (!open || !arrow)
		return false;
	/* the link part ends at the last ')' before the arrow that is not -p's "(HOQ:...)" */
	char *hoq = strstr(open, ") (HOQ:");
	char *close = hoq && hoq < arrow ? hoq : arrow - 1;
	if (close <= open + 3 || *close != ')')
		return false;

	/* left: [0xGUID "NAME"] | [0xGUID] then LID PORT[ext] */
	*open = '\0';
	const char *s = skip_ws(line);
	if ((s[0] == '<' || s[0] == '>') && s[1] == ' ')
		s = skip_ws(s + 2); /* --diff output's markers */
	uint64_t guid = 0;
	bool has_guid = scan_hex(&s, &guid, true);
	char name[FNODE_NAME_MAX] = "";
	bool line_mode = false;
	s = skip_ws(s);
	if (has_guid && *s == '"') {
		char raw[FNODE_NAME_MAX];
		if (!scan_quoted(&s, raw, sizeof(raw)))
			return false;
		trim_copy(name, sizeof(name), raw, strlen(raw)); /* "%30s" pads on the left */
		line_mode = true;
	}
	long lid, port;
	s = skip_ws(s);
	if (!scan_int(&s, &lid) || lid > LID_MAX)
		return false;
	s = skip_ws(s);
	if (!scan_port_bracket(&s, &port) || *skip_ws(s))
		return false;

	int node;
	if (line_mode) {
		char key[40];
		snprintf(key, sizeof(key), "G-%016llx", (unsigned long long)guid);
		node = node_by_key(f, key);
		if (node < 0)
			node = new_node(f, key, name, false);
		f->nodes[node].guid = guid;
		f->nodes[node].reported = true;
	} else {
		if (lp->cur < 0)
			return false;
		node = lp->cur;
		if (lp->cur_is_ca && has_guid && !f->nodes[node].guid)
			f->nodes[node].guid = guid;
	}

	struct fport tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (!parse_link_mid(open + 3, (size_t)(close - open - 3), &tmp))
		return false;

	/* right: [0xGUID ]LID PORT[ext] "PEER" (...) | [  ] "" ( ) | "Port not available" */
	const char *r = skip_ws(arrow + 3);
	long rlid = 0, rport = -1;
	uint64_t rguid = 0;
	char rname[FNODE_NAME_MAX] = "";
	if (*r == '[' || *r == '"') {
		/* no peer */
	} else {
		scan_hex(&r, &rguid, true);
		r = skip_ws(r);
		if (!scan_int(&r, &rlid) || rlid > LID_MAX)
			return false;
		r = skip_ws(r);
		if (!scan_port_bracket(&r, &rport))
			return false;
		r = skip_ws(r);
		if (!scan_quoted(&r, rname, sizeof(rname)))
			return false;
	}

	struct fport *p = new_port(f, node, (int)port, lineno);
	p->width = tmp.width;
	p->speed = tmp.speed;
	p->state = tmp.state;
	p->phys = tmp.phys;
	if (rport >= 0) {
		p->ref_lid = (int)rlid;
		p->ref_port = (int)rport;
		p->ref_guid = rguid;
		p->ref_name = xstrdup(rname);
	}
	if (line_mode || lp->cur_is_ca || !f->nodes[node].lid)
		set_lid(f, node, (int)lid);
	lp->cur_lines++;
	return true;
}

static bool iblinkinfo_header(struct lparse *lp, const char *line, unsigned lineno)
{
	struct fabric *f = lp->f;
	const char *s = skip_ws(line);
	bool sw;
	if (skip_prefix(s, "Switch: ", &s) || skip_prefix(s, "Switch:\t", &s))
		sw = true;
	else if (skip_prefix(s, "CA: ", &s) || skip_prefix(s, "Router: ", &s))
		sw = false;
	else
		return false;
	uint64_t guid = 0;
	s = skip_ws(s);
	if (sw && !scan_hex(&s, &guid, true))
		return false;
	const char *colon = strrchr(s, ':');
	if (!colon)
		return false;
	char name[FNODE_NAME_MAX];
	trim_copy(name, sizeof(name), s, (size_t)(colon - s));
	char key[48];
	if (sw)
		snprintf(key, sizeof(key), "S-%016llx", (unsigned long long)guid);
	else
		snprintf(key, sizeof(key), "CA-%u", lineno); /* a CA's header has no GUID */
	int n = node_by_key(f, key);
	if (n < 0)
		n = new_node(f, key, name, sw);
	f->nodes[n].guid = guid;
	f->nodes[n].reported = true;
	lp->cur = n;
	lp->cur_is_ca = !sw;
	return true;
}

/* ---- ibnetdiscover ---- */

static bool ibnd_decoration(const char *s)
{
	static const char *const pre[] = { "vendid=", "devid=", "sysimgguid=", "switchguid=",
		"caguid=", "rtguid=", "Chassis ", "Non-Chassis Nodes", "Hostname:" };
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (starts_with(s, pre[i]))
			return true;
	return false;
}

/* "S-0002c903..." -> node (a placeholder until its own block comes) */
static int ibnd_node_ref(struct fabric *f, const char *key, const char *name)
{
	if ((key[0] != 'S' && key[0] != 'H' && key[0] != 'R') || key[1] != '-')
		return -1;
	const char *h = key + 2;
	uint64_t guid;
	if (!scan_hex(&h, &guid, false) || *h)
		return -1;
	int n = node_by_key(f, key);
	if (n < 0) {
		n = new_node(f, key, name, key[0] == 'S');
		f->nodes[n].guid = guid;
	}
	return n;
}

static bool ibnd_node_line(struct lparse *lp, const char *line)
{
	struct fabric *f = lp->f;
	const char *s = line;
	bool sw;
	if (skip_prefix(s, "Switch", &s))
		sw = true;
	else if (skip_prefix(s, "Ca", &s) || skip_prefix(s, "Rt", &s))
		sw = false;
	else
		return false;
	if (*s != ' ' && *s != '\t')
		return false;
	long nports;
	s = skip_ws(s);
	if (!scan_int(&s, &nports) || nports > PORT_MAX)
		return false;
	s = skip_ws(s);
	char key[40], name[FNODE_NAME_MAX] = "";
	if (!scan_quoted(&s, key, sizeof(key)) || (key[0] == 'S') != sw)
		return false;
	const char *hash = strchr(s, '#');
	long lid = 0;
	if (hash) {
		const char *q = skip_ws(hash + 1);
		if (*q == '"')
			scan_quoted(&q, name, sizeof(name));
		const char *l = strstr(q, " lid ");
		if (l) {
			l += 5;
			if (!scan_int(&l, &lid) || lid > LID_MAX)
				lid = 0;
		}
	}
	int n = ibnd_node_ref(f, key, name);
	if (n < 0)
		return false;
	if (name[0])
		set_name(f, n, name);
	f->nodes[n].reported = true;
	set_lid(f, n, (int)lid);
	lp->cur = n;
	lp->cur_is_ca = !sw;
	return true;
}

/* "[P][ext N](pguid) \t"S-guid"[Q][ext M] (pguid) \t\t# [lid L lmc M ]"peer" lid L 4xNDR" */
static bool ibnd_port_line(struct lparse *lp, const char *line, unsigned lineno)
{
	struct fabric *f = lp->f;
	if (lp->cur < 0)
		return false;
	const char *s = line + 1;
	long port, rport;
	if (!scan_int(&s, &port) || *s != ']' || port > PORT_MAX)
		return false;
	s++;
	if (starts_with(s, "[ext ")) {
		const char *c = strchr(s, ']');
		if (!c)
			return false;
		s = c + 1;
	}
	uint64_t pguid = 0;
	if (*s == '(') {
		s++;
		if (!scan_hex(&s, &pguid, false) || *s != ')')
			return false;
		s++;
	}
	s = skip_ws(s);
	char key[40];
	if (!scan_quoted(&s, key, sizeof(key)) || *s != '[')
		return false;
	s++;
	if (!scan_int(&s, &rport) || *s != ']' || rport > PORT_MAX)
		return false;
	s++;
	const char *hash = strchr(s, '#');
	if (!hash)
		return false;
	char rname[FNODE_NAME_MAX] = "";
	const char *q = skip_ws(hash + 1);
	long mylid = 0;
	if (skip_prefix(q, "lid ", &q)) {
		/* an HCA's own "lid L lmc M" comes before the peer's name */
		if (!scan_int(&q, &mylid) || mylid > LID_MAX)
			return false;
		q = skip_ws(q);
		if (skip_prefix(q, "lmc ", &q)) {
			long lmc;
			if (!scan_int(&q, &lmc))
				return false;
		}
		q = skip_ws(q);
	}
	if (!scan_quoted(&q, rname, sizeof(rname)))
		return false;
	q = skip_ws(q);
	long rlid = 0;
	if (skip_prefix(q, "lid ", &q)) {
		if (!scan_int(&q, &rlid) || rlid > LID_MAX)
			return false;
		q = skip_ws(q);
	}
	/* "4xNDR" */
	const char *x = q;
	while (isdigit((unsigned char)*x))
		x++;
	if (*x != 'x')
		return false;
	int width = width_from(q, (size_t)(x - q + 1));
	const char *se = x + 1;
	while (isalnum((unsigned char)*se))
		se++;
	int speed = speed_from_name(x + 1, (size_t)(se - x - 1));
	if (!width)
		return false;

	int peer = ibnd_node_ref(f, key, rname);
	if (peer < 0)
		return false;
	if (!f->nodes[peer].reported && rname[0] && strcmp(f->nodes[peer].name, rname))
		set_name(f, peer, rname);
	if (rlid && !f->nodes[peer].is_switch)
		set_lid(f, peer, (int)rlid);
	else if (rlid && f->nodes[peer].is_switch && !f->nodes[peer].lid)
		set_lid(f, peer, (int)rlid);
	if (mylid)
		set_lid(f, lp->cur, (int)mylid);
	if (pguid && !f->nodes[lp->cur].is_switch && !f->nodes[lp->cur].guid)
		f->nodes[lp->cur].guid = pguid;
	struct fport *p = new_port(f, lp->cur, (int)port, lineno);
	p->peer = peer;
	p->peer_port = (int)rport;
	p->width = width;
	p->speed = speed;
	return true;
}

/* ---- the whole input ---- */

static enum fabric_format line_format(const char *s)
{
	if (strstr(s, "==(") && strstr(s, "==>"))
		return FABRIC_FMT_IBLINKINFO;
	if (starts_with(s, "Switch: ") || starts_with(s, "CA: "))
		return FABRIC_FMT_IBLINKINFO;
	if ((starts_with(s, "Switch\t") || starts_with(s, "Ca\t") || starts_with(s, "Rt\t")) &&
	    (strstr(s, "\"S-") || strstr(s, "\"H-") || strstr(s, "\"R-")))
		return FABRIC_FMT_IBNETDISCOVER;
	if (s[0] == '[' && (strstr(s, "\"S-") || strstr(s, "\"H-")) && strchr(s, '#'))
		return FABRIC_FMT_IBNETDISCOVER;
	if (ibnd_decoration(s) && !starts_with(s, "Hostname:"))
		return FABRIC_FMT_IBNETDISCOVER;
	return FABRIC_FMT_NONE;
}

static bool parse_line(struct lparse *lp, char *line, unsigned lineno)
{
	struct fabric *f = lp->f;
	const char *s = skip_ws(line);
	if (!*s)
		return true;
	if (f->format == FABRIC_FMT_NONE) {
		/* both tools' outputs may open with '#' comments (ibnetdiscover's "# Topology
		 * file: ..."): neutral until a line tells the format */
		if (*s == '#')
			return true;
		f->format = line_format(s);
	}
	if (f->format == FABRIC_FMT_IBNETDISCOVER) {
		if (*s == '#' || ibnd_decoration(s))
			return true;
		if (*s == '[')
			return ibnd_port_line(lp, s, lineno);
		return ibnd_node_line(lp, s);
	}
	if (f->format == FABRIC_FMT_IBLINKINFO) {
		if (iblinkinfo_header(lp, s, lineno))
			return true;
		return iblinkinfo_port_line(lp, line, lineno);
	}
	return false;
}

int fabric_parse(struct fabric *f, const char *text, size_t len, struct strbuf *err)
{
	struct lparse lp = { .f = f, .cur = -1 };
	char *line = xmalloc(LINE_MAX_BYTES + 1);
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t n = end - pos;
		f->lines++;
		unsigned lineno = f->lines > 0xffffffffu ? 0xffffffffu : (unsigned)f->lines;
		if (n && text[pos + n - 1] == '\r')
			n--;
		bool ok = false;
		if (n <= LINE_MAX_BYTES && !memchr(text + pos, '\0', n)) {
			memcpy(line, text + pos, n);
			line[n] = '\0';
			ok = parse_line(&lp, line, lineno);
			if (ok && *skip_ws(line))
				f->understood++;
		}
		if (!ok) {
			f->garbage++;
			if (!f->first_garbage)
				f->first_garbage = lineno;
		}
		pos = end + 1;
	}
	free(line);
	if (!f->nr_ports) {
		f->format = f->format == FABRIC_FMT_NONE ? FABRIC_FMT_NONE : f->format;
		return error_set(err, "no iblinkinfo or ibnetdiscover port line in %zu line%s",
				 f->lines, f->lines == 1 ? "" : "s");
	}
	fabric_finish(f);
	return 0;
}

/* iblinkinfo names peers by LID (and name): found after the whole input, so order does not
 * matter. A peer the input never reported becomes a node of its own, named as mentioned. */
static void resolve_refs(struct fabric *f)
{
	struct fabric_map *m = fmap(f);
	/* line mode: a node whose lines share one port GUID over several ports is a switch */
	if (f->format == FABRIC_FMT_IBLINKINFO) {
		int *cnt = xcalloc(f->nr_nodes ? f->nr_nodes : 1, sizeof(int));
		for (size_t i = 0; i < f->nr_ports; i++)
			cnt[f->ports[i].node]++;
		for (size_t n = 0; n < f->nr_nodes; n++)
			if (starts_with(f->nodes[n].key, "G-") && cnt[n] > 1 &&
			    !f->nodes[n].is_switch) {
				f->nodes[n].is_switch = true;
				set_name(f, (int)n, f->nodes[n].name);
			}
		free(cnt);
	}
	for (size_t i = 0; i < f->nr_ports; i++) {
		struct fport *p = &f->ports[i];
		if (p->peer >= 0 || !p->ref_name)
			continue;
		int peer = -1;
		if (p->ref_lid > 0 && m->lid)
			peer = m->lid[p->ref_lid];
		if (peer < 0 && p->ref_name[0]) {
			int byname = u64map_get(&m->by_name, hash_str(p->ref_name));
			if (byname >= 0 && f->nodes[byname].reported)
				peer = byname;
		}
		if (peer < 0) {
			char key[FNODE_NAME_MAX + 40];
			snprintf(key, sizeof(key), "N-%d-%s", p->ref_lid, p->ref_name);
			peer = node_by_key(f, key);
			if (peer < 0) {
				/* a switch port number above 2 says switch: HCAs have one or two */
				peer = new_node(f, key, p->ref_name, p->ref_port > 2);
				set_lid(f, peer, p->ref_lid);
			}
			p = &f->ports[i];
		}
		p->peer = peer;
		p->peer_port = p->ref_port;
	}
}

static uint64_t end_key(int node, int port)
{
	return (uint64_t)(uint32_t)node << 16 | (uint16_t)port;
}

void fabric_finish(struct fabric *f)
{
	struct fabric_map *m = fmap(f);
	resolve_refs(f);
	/* finishing again (ports added since) pairs everything afresh */
	u64map_free(&m->ends);
	u64map_free(&m->links);
	for (size_t i = 0; i < f->nr_ports; i++) {
		uint64_t k = end_key(f->ports[i].node, f->ports[i].port);
		if (u64map_get(&m->ends, k) < 0)
			u64map_put(&m->ends, k, (int)i);
	}
	f->nr_links = 0;
	for (size_t i = 0; i < f->nr_ports; i++) {
		const struct fport *p = &f->ports[i];
		if (p->peer < 0 || p->peer_port < 0)
			continue;
		uint64_t ea = end_key(p->node, p->port), eb = end_key(p->peer, p->peer_port);
		if (ea == eb)
			continue;
		bool swap = eb < ea;
		uint64_t lo = swap ? eb : ea, hi = swap ? ea : eb;
		/* two 48-bit ends do not fit one key: the key is their hash, and a probe past a
		 * link with other ends (a collision) goes on to the next slot */
		uint64_t lk = (mix64(lo) ^ (hi * 0x9e3779b97f4a7c15ULL)) >> 1;
		bool seen = false;
		for (;; lk++) {
			int li = u64map_get(&m->links, lk);
			if (li < 0)
				break;
			const struct flink *o = &f->links[li];
			if (end_key(o->a, o->a_port) == lo && end_key(o->b, o->b_port) == hi) {
				seen = true;
				break;
			}
		}
		if (seen)
			continue;
		f->links = grow_array(f->links, sizeof(*f->links), f->nr_links + 1, &f->alloc_links);
		struct flink *l = &f->links[f->nr_links];
		int other = u64map_get(&m->ends, eb);
		if (!swap) {
			*l = (struct flink){ p->node, p->port, p->peer, p->peer_port, (int)i, other };
		} else {
			*l = (struct flink){ p->peer, p->peer_port, p->node, p->port, other, (int)i };
		}
		u64map_put(&m->links, lk, (int)f->nr_links);
		f->nr_links++;
	}
}

/* ---- described fat trees ---- */

bool fat_tree_text(const char *text, size_t len)
{
	size_t i = 0;
	for (;;) {
		while (i < len && isspace((unsigned char)text[i]))
			i++;
		if (i < len && text[i] == '#') {
			while (i < len && text[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	return len - i >= 8 && !memcmp(text + i, "fat-tree", 8);
}

int fat_tree_parse(const char *text, struct fat_tree_spec *spec, struct strbuf *err)
{
	memset(spec, 0, sizeof(*spec));
	spec->hcas = 1;
	spec->radix = 64;
	spec->speed = IBSP_NDR;
	char *buf = xstrdup(text);
	int rc = 0;
	char *save = NULL;
	bool any = false;
	for (char *w = strtok_r(buf, " \t\r\n,", &save); w; w = strtok_r(NULL, " \t\r\n,", &save)) {
		if (*w == '#') {
			/* a comment runs to the end of its line */
			char *nl = strchr(save ? save : "", '\n');
			if (!nl)
				break;
			save = nl + 1;
			continue;
		}
		if (!strcmp(w, "fat-tree"))
			continue;
		char *eq = strchr(w, '=');
		uint64_t v = 0;
		if (!eq) {
			rc = error_set(err, "'%.40s' is not a KEY=VALUE word (hosts=, hcas=, radix=, tiers=, speed=)", w);
			break;
		}
		*eq = '\0';
		const char *val = eq + 1;
		if (strcmp(w, "speed") && strcmp(w, "hosts") && strcmp(w, "hcas") &&
		    strcmp(w, "radix") && strcmp(w, "tiers")) {
			rc = error_set(err, "no fat-tree key '%.20s' (there are: hosts, hcas, radix, tiers, speed)", w);
			break;
		}
		if (!strcmp(w, "speed")) {
			spec->speed = speed_from_name(val, strlen(val));
			if (!spec->speed) {
				rc = error_set(err, "speed wants SDR, DDR, QDR, FDR, EDR, HDR, NDR or XDR, not '%.20s'", val);
				break;
			}
			continue;
		}
		if (!parse_u64(val, &v)) {
			rc = error_set(err, "%.20s wants a whole number, not '%.20s'", w, val);
			break;
		}
		/* a number that is whole but too big is told the limit, not "not a number" */
		if (v > 1000000) {
			rc = error_set(err, "%.20s=%.20s is more than the planner takes (at most "
					    "1000000)",
				       w, val);
			break;
		}
		if (!strcmp(w, "hosts"))
			spec->hosts = (unsigned)v, any = true;
		else if (!strcmp(w, "hcas"))
			spec->hcas = (unsigned)v;
		else if (!strcmp(w, "radix"))
			spec->radix = (unsigned)v;
		else if (!strcmp(w, "tiers"))
			spec->tiers = (unsigned)v;
		else {
			rc = error_set(err, "no fat-tree key '%.20s' (there are: hosts, hcas, radix, tiers, speed)", w);
			break;
		}
	}
	free(buf);
	if (rc)
		return rc;
	if (!any || !spec->hosts)
		return error_set(err, "a fat tree needs hosts=N (1 or more)");
	if (!spec->hcas || spec->hcas > 32)
		return error_set(err, "hcas wants 1 to 32 per host, not %u", spec->hcas);
	if (spec->radix < 4 || spec->radix > 256 || spec->radix % 2)
		return error_set(err, "radix wants an even switch port count from 4 to 256, not %u",
				 spec->radix);
	if (spec->tiers > 3)
		return error_set(err, "tiers wants 1, 2 or 3 (0: the fewest that fit), not %u",
				 spec->tiers);
	return 0;
}

int fabric_fat_tree(struct fabric *f, const struct fat_tree_spec *spec, struct strbuf *err)
{
	unsigned half = spec->radix / 2, k = spec->radix;
	unsigned leaves_per_rail = (spec->hosts + half - 1) / half;
	unsigned leaves = leaves_per_rail * spec->hcas;
	uint64_t hcas = (uint64_t)spec->hosts * spec->hcas;
	unsigned tiers = spec->tiers;
	if (!tiers)
		tiers = hcas <= k ? 1 : leaves <= k ? 2 : 3;
	if (tiers == 1 && hcas > k)
		return error_set(err, "%llu HCAs do not fit one switch of %u ports",
				 (unsigned long long)hcas, k);
	if (tiers == 2 && leaves > k)
		return error_set(err, "%u leaves do not fit two tiers of %u-port switches (tiers=3)",
				 leaves, k);
	unsigned pods = (leaves + half - 1) / half;
	if (tiers == 3 && pods > k)
		return error_set(err, "%u pods do not fit three tiers of %u-port switches", pods, k);
	if (hcas > 200000)
		return error_set(err, "%llu HCAs is more than this planner takes (200000)",
				 (unsigned long long)hcas);
	f->format = FABRIC_FMT_GENERATED;
	int lid = 1;
	char name[64];
	/* switches first (their LIDs low, as an SM usually gives them) */
	int *leaf = xmalloc((tiers == 1 ? 1 : leaves) * sizeof(int));
	if (tiers == 1) {
		leaf[0] = fabric_add_node(f, "switch01", true, 0xfc6a1c0300000000ULL, lid++);
	} else {
		for (unsigned i = 0; i < leaves; i++) {
			snprintf(name, sizeof(name), "leaf%03u", i + 1);
			leaf[i] = fabric_add_node(f, name, true, 0xfc6a1c0300000000ULL | (i + 1),
						  lid++);
		}
	}
	if (tiers == 2) {
		for (unsigned s = 0; s < half; s++) {
			snprintf(name, sizeof(name), "spine%03u", s + 1);
			int sp = fabric_add_node(f, name, true, 0xfc6a1c0301000000ULL | (s + 1), lid++);
			for (unsigned i = 0; i < leaves; i++)
				fabric_connect(f, leaf[i], (int)(half + s + 1), sp, (int)(i + 1), 4,
					       spec->speed);
		}
	} else if (tiers == 3) {
		int *core = xmalloc((size_t)half * half * sizeof(int));
		for (unsigned c = 0; c < half * half; c++) {
			snprintf(name, sizeof(name), "core%04u", c + 1);
			core[c] = fabric_add_node(f, name, true, 0xfc6a1c0302000000ULL | (c + 1), lid++);
		}
		for (unsigned p = 0; p < pods; p++) {
			for (unsigned a = 0; a < half; a++) {
				snprintf(name, sizeof(name), "pod%u-spine%02u", p + 1, a + 1);
				int ag = fabric_add_node(f, name, true,
					0xfc6a1c0303000000ULL | (uint64_t)(p * half + a + 1), lid++);
				for (unsigned j = 0; j < half && p * half + j < leaves; j++)
					fabric_connect(f, leaf[p * half + j], (int)(half + a + 1), ag,
						       (int)(j + 1), 4, spec->speed);
				for (unsigned c = 0; c < half; c++)
					fabric_connect(f, ag, (int)(half + c + 1), core[a * half + c],
						       (int)(p + 1), 4, spec->speed);
			}
		}
		free(core);
	}
	for (unsigned h = 0; h < spec->hosts; h++) {
		for (unsigned c = 0; c < spec->hcas; c++) {
			snprintf(name, sizeof(name), "node%04u mlx5_%u", h + 1, c);
			uint64_t guid = 0x0002c90300000000ULL | ((uint64_t)(h + 1) << 8) | c;
			int n = fabric_add_node(f, name, false, guid, lid++);
			int lf, lport;
			if (tiers == 1) {
				lf = leaf[0];
				lport = (int)(h * spec->hcas + c + 1);
			} else {
				lf = leaf[c * leaves_per_rail + h / half];
				lport = (int)(h % half + 1);
			}
			fabric_connect(f, n, 1, lf, lport, 4, spec->speed);
		}
	}
	free(leaf);
	fabric_finish(f);
	return 0;
}

/* ---- writers ---- */

/* ports[] indexes grouped by node (counting sort), for writing node by node */
static int *ports_by_node(const struct fabric *f, size_t **start_out)
{
	size_t *start = xcalloc(f->nr_nodes + 1, sizeof(size_t));
	int *idx = xmalloc((f->nr_ports ? f->nr_ports : 1) * sizeof(int));
	for (size_t i = 0; i < f->nr_ports; i++)
		start[f->ports[i].node + 1]++;
	for (size_t n = 0; n < f->nr_nodes; n++)
		start[n + 1] += start[n];
	size_t *fill = xmalloc((f->nr_nodes + 1) * sizeof(size_t));
	memcpy(fill, start, (f->nr_nodes + 1) * sizeof(size_t));
	for (size_t i = 0; i < f->nr_ports; i++)
		idx[fill[f->ports[i].node]++] = (int)i;
	free(fill);
	/* port order within a node, as the tools print them (insertion sort: a node's ports are
	 * few, and mostly in order already) */
	for (size_t n = 0; n < f->nr_nodes; n++)
		for (size_t i = start[n] + 1; i < start[n + 1]; i++) {
			int v = idx[i];
			size_t j = i;
			while (j > start[n] && f->ports[idx[j - 1]].port > f->ports[v].port) {
				idx[j] = idx[j - 1];
				j--;
			}
			idx[j] = v;
		}
	*start_out = start;
	return idx;
}

static char node_letter(const struct fnode *n)
{
	return n->is_switch ? 'S' : 'H';
}

void fabric_write_ibnetdiscover(const struct fabric *f, struct strbuf *out)
{
	size_t *start;
	int *idx = ports_by_node(f, &start);
	strbuf_addstr(out, "#\n# Topology file: generated on Tue Dec  1 04:12:09 2026\n#\n"
			   "# Initiated from node 0002c90300000100 port 0002c90300000101\n");
	for (int pass = 0; pass < 2; pass++) {
		for (size_t n = 0; n < f->nr_nodes; n++) {
			const struct fnode *nd = &f->nodes[n];
			if (nd->is_switch != (pass == 0))
				continue;
			strbuf_addf(out, "\nvendid=0x2c9\ndevid=%s\nsysimgguid=0x%llx\n",
				    nd->is_switch ? "0xd2f2" : "0x1021",
				    (unsigned long long)nd->guid);
			if (nd->is_switch)
				strbuf_addf(out, "switchguid=0x%llx(%llx)\nSwitch\t%zu \"S-%016llx\"\t\t# \"%s\" enhanced port 0 lid %d lmc 0\n",
					    (unsigned long long)nd->guid, (unsigned long long)nd->guid,
					    start[n + 1] - start[n], (unsigned long long)nd->guid,
					    nd->name, nd->lid);
			else
				strbuf_addf(out, "caguid=0x%llx\nCa\t1 \"H-%016llx\"\t\t# \"%s\"\n",
					    (unsigned long long)nd->guid, (unsigned long long)nd->guid,
					    nd->name);
			for (size_t j = start[n]; j < start[n + 1]; j++) {
				const struct fport *p = &f->ports[idx[j]];
				if (p->peer < 0)
					continue;
				const struct fnode *pn = &f->nodes[p->peer];
				if (nd->is_switch) {
					strbuf_addf(out, "[%d]\t\"%c-%016llx\"[%d]", p->port,
						    node_letter(pn), (unsigned long long)pn->guid,
						    p->peer_port);
					if (!pn->is_switch)
						strbuf_addf(out, "(%llx) ",
							    (unsigned long long)pn->guid + 1);
					strbuf_addf(out, "\t\t# \"%s\" lid %d %dx%s\n", pn->name, pn->lid,
						    p->width, ib_speed_name(p->speed));
				} else {
					strbuf_addf(out, "[%d](%llx) \t\"%c-%016llx\"[%d]\t\t# lid %d lmc 0 \"%s\" lid %d %dx%s\n",
						    p->port, (unsigned long long)nd->guid + 1,
						    node_letter(pn), (unsigned long long)pn->guid,
						    p->peer_port, nd->lid, pn->name, pn->lid, p->width,
						    ib_speed_name(p->speed));
				}
			}
		}
	}
	free(idx);
	free(start);
}

static void linkinfo_port(const struct fabric *f, const struct fnode *nd, const struct fport *p,
			  bool line_mode, struct strbuf *out)
{
	if (line_mode)
		strbuf_addf(out, "0x%016llx \"%30s\" ", (unsigned long long)(nd->guid +
			    !nd->is_switch), nd->name);
	else if (!nd->is_switch)
		strbuf_addf(out, "      0x%016llx ", (unsigned long long)nd->guid + 1);
	else
		strbuf_addstr(out, "      ");
	strbuf_addf(out, "%6d %4d[  ] ==", nd->lid, p->port);
	if (p->state == IBS_DOWN) {
		strbuf_addf(out, "(              %6s/%8s)==>  ", ib_state_name(p->state),
			    ib_phys_name(p->phys));
	} else {
		char speed[32];
		snprintf(speed, sizeof(speed), "%s Gbps%s", speed_gbps(p->speed),
			 p->speed == IBSP_FDR10 ? " (FDR10)" : "");
		strbuf_addf(out, "(%3s %18s %6s/%8s)==>  ", ib_width_name(p->width), speed,
			    ib_state_name(p->state), ib_phys_name(p->phys));
	}
	if (p->peer < 0) {
		strbuf_addstr(out, "           [  ] \"\" ( )\n");
		return;
	}
	const struct fnode *pn = &f->nodes[p->peer];
	if (line_mode)
		strbuf_addf(out, "0x%016llx ", (unsigned long long)(pn->guid + !pn->is_switch));
	strbuf_addf(out, "%6d %4d[  ] \"%s\" ( )\n", pn->lid, p->peer_port, pn->name);
}

void fabric_write_iblinkinfo(const struct fabric *f, bool line_mode, struct strbuf *out)
{
	size_t *start;
	int *idx = ports_by_node(f, &start);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t n = 0; n < f->nr_nodes; n++) {
			const struct fnode *nd = &f->nodes[n];
			if (nd->is_switch != (pass == 1) || start[n] == start[n + 1])
				continue;
			if (!line_mode) {
				if (nd->is_switch)
					strbuf_addf(out, "Switch: 0x%016llx %s:\n",
						    (unsigned long long)nd->guid, nd->name);
				else
					strbuf_addf(out, "CA: %s:\n", nd->name);
			}
			for (size_t j = start[n]; j < start[n + 1]; j++)
				linkinfo_port(f, nd, &f->ports[idx[j]], line_mode, out);
		}
	}
	free(idx);
	free(start);
}
