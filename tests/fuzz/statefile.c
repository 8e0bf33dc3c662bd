/*
 * statefile.c: libFuzzer target for the counter state-file parser (src/lib/statefile.h). For any
 * input: no crash, leak or UB; a refusal says why and keeps nothing; what it accepts is printable
 * names, and formatting it and parsing that again gives the same readings.
 */
#include "../../src/lib/statefile.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct counter_set s = COUNTER_SET_INIT, again = COUNTER_SET_INIT;
	struct strbuf why = STRBUF_INIT, text = STRBUF_INIT;
	if (statefile_parse("infiniband", (const char *)data, size, &s, &why) < 0) {
		if (!why.len || s.nr)
			__builtin_trap();
		goto out;
	}
	for (size_t i = 0; i < s.nr; i++) {
		const char *n = s.items[i].name;
		if (!*n || n[0] == ' ' || n[strlen(n) - 1] == ' ' || strchr(n, '\n'))
			__builtin_trap();
	}
	statefile_format("infiniband", &s, &text);
	if (statefile_parse("infiniband", text.buf, text.len, &again, &why) < 0 ||
	    again.nr != s.nr)
		__builtin_trap();
	for (size_t i = 0; i < s.nr; i++)
		if (strcmp(again.items[i].name, s.items[i].name) ||
		    again.items[i].value != s.items[i].value)
			__builtin_trap();
out:
	counter_set_release(&s);
	counter_set_release(&again);
	strbuf_release(&why);
	strbuf_release(&text);
	return 0;
}
