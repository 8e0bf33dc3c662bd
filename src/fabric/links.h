/*
 * links.h: the link survey of 'vigil fabric links': over a fabric graph (topo.h), the ports
 * stuck in Down/Polling where a peer is expected or in Initialize/Armed, the links narrower or
 * slower than the rest of the fabric (its mode, per class: HCA-to-switch and switch-to-switch
 * links apart), and links whose two ends disagree. Pure; the writers fill strbufs.
 */
#ifndef VIGIL_FABRIC_LINKS_H
#define VIGIL_FABRIC_LINKS_H

#include "topo.h"
#include "../core/finding.h"

enum lf_kind { LF_DOWN, LF_INIT, LF_NARROW, LF_SLOW, LF_ASYMMETRIC, LF__COUNT };
const char *lf_kind_name(enum lf_kind k); /* "down", "init", "narrow", "slow", "asymmetric" */

struct link_finding {
	enum lf_kind kind;
	int node, port;       /* the end it is about: the switch end where there is one */
	int peer, peer_port;  /* -1: no peer known */
	int width, speed;     /* what the link runs at (the narrower/slower end); 0: not known */
	int want_width, want_speed; /* the fabric's mode for its class (narrow, slow) */
	enum action act;
	unsigned line;        /* the input line of the report it came from (0: none) */
	char peer_name[FNODE_NAME_MAX]; /* the expected peer's name when peer is -1 (--expect) */
	char detail[320];     /* what was seen, names cleaned */
	const char *advice;   /* what to do, one sentence */
};

enum { LC_HOST, LC_SWITCH, LC__COUNT }; /* link classes for the mode */

struct link_survey {
	struct link_finding *f;
	size_t nr, alloc;
	size_t count[LF__COUNT];
	size_t switches, hcas, links, ports;
	size_t down_unjudged;  /* Down/Polling ports with no peer expected (no --expect) */
	size_t disabled;       /* Down/Disabled: turned off on purpose, not judged */
	int mode_width[LC__COUNT], mode_speed[LC__COUNT];
	bool expect_given;
};

/*
 * Survey f. expect (may be NULL) is the fabric as it should be (an ibnetdiscover of it healthy):
 * a Down port it connects is expected to have a peer; without it only a Down port some other
 * port still names as its peer is judged (as asymmetric), the rest are counted, not guessed at.
 */
void links_survey(const struct fabric *f, const struct fabric *expect, struct link_survey *s);
void links_survey_release(struct link_survey *s);

/* {"source":..., "counts":{...}, "mode":{...}, "findings":[{kind, switch, port, peer,
 * peer_port, width, speed, expected_width, expected_speed, detail, action, advice, line}]} */
void links_write_json(const struct fabric *f, const struct link_survey *s, const char *source,
		      struct strbuf *out);
void links_write_text(const struct fabric *f, const struct link_survey *s, struct strbuf *out);

#endif
