/*
 * nccl_ring.c: libFuzzer target for the NCCL recorder file parser (src/diagnose/ncclring.h)
 * and the hang analysis on top of it (src/diagnose/hang.h). Random bytes almost never pass a
 * header check, so the input is laid over well-formed files instead: the input is cut at each
 * 0x1e byte into up to four rings; each piece's first bytes pick the capacity, the count
 * written and the number of communicators, and the rest overwrites the communicator table and
 * the records (half the time with `written` set to agree with the laid counters, the parser's
 * first consistency check). The raw piece is parsed as a file too. For any bytes: no crash, leak or UB; the
 * analysis's JSON parses; its text is clean of control bytes but its newline.
 */
#include "../../src/diagnose/hang.h"
#include "../../src/lib/json.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(struct hang *h, const uint8_t *p, size_t n, struct nring *r)
{
	struct strbuf err = STRBUF_INIT;
	if (nring_parse(p, n, r, &err) == 0)
		hang_add_ring(h, "raw", r);
	strbuf_release(&err);
	if (n < 4)
		return;
	uint32_t cap = 1 + p[0] % 8;
	size_t len = sizeof(struct nrec_header) + cap * sizeof(struct nrec_record);
	uint8_t *f = calloc(1, len);
	struct nrec_header hd;
	memset(&hd, 0, sizeof(hd));
	memcpy(hd.magic, NREC_MAGIC, 8);
	hd.version = NREC_VERSION;
	hd.header_size = sizeof(hd);
	hd.record_size = sizeof(struct nrec_record);
	hd.capacity = cap;
	hd.written = p[1];
	hd.ncomms = p[2] % 4;
	hd.global_rank = p[3] % 8 - 1;
	memcpy(f, &hd, sizeof(hd));
	/* the rest of the piece over the communicator table, then over the records */
	size_t rest = n - 4, room = 2 * sizeof(struct nrec_comm);
	size_t a = rest < room ? rest : room;
	memcpy(f + offsetof(struct nrec_header, comms), p + 4, a);
	size_t b = rest - a, rroom = cap * sizeof(struct nrec_record);
	memcpy(f + sizeof(hd), p + 4 + a, b < rroom ? b : rroom);
	/* half the time `written` made to agree with the laid counters (what the parser checks
	 * first), so that the records and the analysis behind that check are reached too */
	if (p[1] & 1) {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < hd.ncomms; i++) {
			struct nrec_comm c;
			memcpy(&c, f + offsetof(struct nrec_header, comms) + i * sizeof(c), sizeof(c));
			sum += c.coll_enqueued + c.p2p_enqueued;
		}
		memcpy(f + offsetof(struct nrec_header, written), &sum, sizeof(sum));
	}
	if (nring_parse(f, len, r, &err) == 0)
		hang_add_ring(h, "laid", r);
	else
		hang_add_error(h, "laid", err.buf);
	strbuf_release(&err);
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hang h;
	struct nring *r = malloc(sizeof(*r));
	hang_init(&h);
	size_t start = 0, pieces = 0;
	for (size_t i = 0; i <= size && pieces < 4; i++) {
		if (i == size || data[i] == 0x1e) {
			one(&h, data + start, i - start, r);
			pieces++;
			start = i + 1;
		}
	}
	hang_finish(&h, 1.7e9);
	struct strbuf text = STRBUF_INIT, js = STRBUF_INIT;
	hang_write_text(&h, &text);
	for (size_t i = 0; i < text.len; i++)
		if ((unsigned char)text.buf[i] < 0x20 && text.buf[i] != '\n')
			abort();
	struct json_writer w;
	json_writer_init(&w, &js, false);
	hang_write_json(&h, &w);
	if (json_writer_finish(&w, NULL) != 0)
		abort();
	struct json_value *v = json_parse(js.buf, js.len, NULL);
	if (!v)
		abort();
	json_free(v);
	strbuf_release(&text);
	strbuf_release(&js);
	hang_release(&h);
	free(r);
	return 0;
}
