/*
 * card.h: what reads a finished 'vigil qualify' scorecard (the --json file; its shape is the
 * sample tests/data/qualify/card-a.json, described in docs/QUALIFY.md): the self-contained HTML
 * page (--html) and the side-by-side comparison of two cards (--compare).
 *
 * Pure: JSON trees in, text appended to a strbuf out; the caller reads and writes the files and
 * prints. The cards stay the caller's. A card is read defensively: a field that is missing, null
 * or of another type shows as "-" (the page) or null (the comparison), never as a crash and never
 * as a good value. Every string from a card is escaped for where it goes (HTML, or
 * strbuf_add_clean for a terminal).
 */
#ifndef VIGIL_QUALIFY_CARD_H
#define VIGIL_QUALIFY_CARD_H

#include "../lib/json.h"

/* The scorecard shape this build reads (the card's "schema_version"). */
#define QUALIFY_CARD_SCHEMA 1

/*
 * 0 when card is a JSON object with "kind": "qualify" and "schema_version": QUALIFY_CARD_SCHEMA;
 * otherwise -1 with *err saying what is wrong with it ("is not a qualify scorecard: its kind is
 * \"check\""), without the file's name: the caller puts that first.
 */
int qualify_card_check(const struct json_value *card, struct strbuf *err);

/*
 * The scorecard as one self-contained HTML page appended to out: no script, no external
 * resource; inline CSS and two inline SVG plots (busbw against node count, the fsync latency
 * CDF). With old_card (NULL: none), a section comparing the card with it (--compare). 0, or -1
 * with *err when qualify_card_check() refuses the card (nothing is appended then); an old card
 * it refuses is said in the section instead.
 */
int qualify_html(const struct json_value *card, const struct json_value *old_card,
		 struct strbuf *out, struct strbuf *err);

/*
 * Two cards side by side, figure by figure (docs/QUALIFY.md, "Comparing"): an aligned text table
 * or, with json, one object (docs/schema/qualify-compare.json) appended to out. 0, or -1 with
 * *err naming the card ("the old card ...", "the new card ...") that qualify_card_check()
 * refuses (nothing is appended then).
 */
int qualify_compare(const struct json_value *old_card, const struct json_value *new_card,
		    bool json, struct strbuf *out, struct strbuf *err);

/* For the two readers: a finite number at key of obj (false when absent, null, of another type
 * or not finite), and v written for a person ("-" when not finite) into buf. */
bool card_num(const struct json_value *obj, const char *key, double *v);
const char *card_fmt(char buf[32], double v);

#endif
