/*
 * json.c: libFuzzer target for the JSON parser (it reads check results from children, the
 * agent's cache and fleet answers from other hosts). For any input: no crash, leak or UB; and
 * whatever parses must survive a write (json_value_write) and reparse with the same shape.
 */
#include "../../src/lib/json.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const struct json_value *v)
{
	size_t n = 1;
	for (size_t i = 0; i < v->nr; i++)
		n += count(v->items[i]);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct json_value *v = json_parse((const char *)data, size, &err);
	if (!v) {
		if (!err.len)
			__builtin_trap(); /* a refusal always says why */
		goto out;
	}
	struct json_writer w;
	json_writer_init(&w, &out, size & 1);
	json_value_write(&w, v);
	struct json_value *again = json_parse(out.buf, out.len, &err);
	if (!again || count(again) != count(v))
		__builtin_trap();
	json_free(again);
	json_free(v);
out:
	strbuf_release(&err);
	strbuf_release(&out);
	return 0;
}
