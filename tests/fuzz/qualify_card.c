/*
 * qualify_card.c: libFuzzer target for what reads a qualify scorecard (src/qualify/card.h). For
 * any bytes that parse as JSON: qualify_html (alone and with an old card to compare with) and
 * qualify_compare (the card against itself and against a fixed small card, both ways) never crash, leak or hit UB; a card they accept gives
 * a whole page with no script, no tag from the input and no coordinate that is not a number;
 * the text has no raw control byte but newlines; the JSON parses and its summary adds up.
 */
#include "../../src/qualify/card.h"
#include "../../src/lib/json.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed[] =
	"{\"schema_version\":1,\"kind\":\"qualify\",\"complete\":true,\"figures\":[{\"name\":"
	"\"gemm_bf16_tflops\",\"better\":\"higher\",\"median\":600,\"p5\":590,\"worst\":580}],"
	"\"nodes\":[{\"node\":\"n1\",\"figures\":{\"gemm_bf16_tflops\":600}}],\"nccl\":[{\"op\":"
	"\"all_reduce\",\"nodes\":2,\"busbw_gbps\":300}],\"storage\":{\"write_mib_s\":100,"
	"\"fsync_ms\":{\"p99\":10}},\"train\":{\"mfu\":0.4},\"stages\":[{\"name\":\"node\","
	"\"status\":\"passed\",\"wall_s\":10}]}";

static void check_compare(const struct json_value *a, const struct json_value *b)
{
	struct strbuf out = STRBUF_INIT;
	if (qualify_compare(a, b, false, &out, NULL) == 0)
		for (size_t i = 0; i < out.len; i++)
			if (out.buf[i] != '\n' &&
			    ((unsigned char)out.buf[i] < 0x20 || out.buf[i] == 0x7f))
				__builtin_trap();
	strbuf_reset(&out);
	if (qualify_compare(a, b, true, &out, NULL) == 0) {
		struct json_value *v = json_parse(out.buf, out.len, NULL);
		const struct json_value *rows = json_get(v, "rows"), *sum = json_get(v, "summary");
		double n[4] = { 0 };
		if (!v || !rows || !json_get_number(sum, "better_in", &n[0]) ||
		    !json_get_number(sum, "worse_in", &n[1]) ||
		    !json_get_number(sum, "same", &n[2]) ||
		    !json_get_number(sum, "unknown", &n[3]) ||
		    n[0] + n[1] + n[2] + n[3] != (double)rows->nr)
			__builtin_trap();
		json_free(v);
	}
	strbuf_release(&out);
}

/* Every coordinate attribute the page writes holds numbers only (a nan or inf there is an
 * error in the browser); text from the card, escaped, may hold anything. */
static bool numbers_only(const char *html)
{
	static const char *const attrs[] = { " x=\"",  " y=\"",	 " x1=\"", " x2=\"", " y1=\"",
					     " y2=\"", " cx=\"", " cy=\"", " r=\"",  " points=\"" };
	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++)
		for (const char *p = html; (p = strstr(p, attrs[i]));) {
			p += strlen(attrs[i]);
			size_t n = strspn(p, "0123456789.,- ");
			if (p[n] != '"')
				return false;
		}
	return true;
}

/* The page of card (with old: its comparison section): whole, no script, numbers only. */
static void check_html(const struct json_value *card, const struct json_value *old)
{
	struct strbuf out = STRBUF_INIT;
	if (qualify_html(card, old, &out, NULL) == 0) {
		static const char *const bad[] = { "<script", "<img", "<iframe" };
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
			if (strstr(out.buf, bad[i]))
				__builtin_trap();
		if (!numbers_only(out.buf))
			__builtin_trap();
		if (out.len < 8 || strcmp(out.buf + out.len - 8, "</html>\n"))
			__builtin_trap();
	} else if (out.len) {
		__builtin_trap();
	}
	strbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *card = json_parse((const char *)data, size, NULL);
	struct json_value *other = json_parse(fixed, sizeof(fixed) - 1, NULL);
	if (!card || !other)
		goto out;
	check_html(card, NULL);
	check_html(card, other); /* --html with --compare: the comparison section */
	check_html(other, card);
	check_html(card, card);
	check_compare(card, card);
	check_compare(card, other);
	check_compare(other, card);
out:
	json_free(card);
	json_free(other);
	return 0;
}
