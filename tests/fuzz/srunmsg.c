/*
 * srunmsg.c: libFuzzer target for srun's step-creation lines (src/slurm/srunmsg.h). Input:
 * lines, each parsed as one of srun's own. For any bytes: no crash, leak or UB; a reason only
 * for a refusal or a retry, never longer than its bound once cleaned, never holding a control
 * byte; the action and the whole description exist for any reason.
 */
#include "../../src/slurm/srunmsg.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct strbuf r = STRBUF_INIT, t = STRBUF_INIT;
		enum srun_msg k = srun_msg_parse(p, n, &r);
		if (k != SRUN_MSG_OTHER && k != SRUN_MSG_REFUSED && k != SRUN_MSG_PENDING)
			__builtin_trap();
		if (k == SRUN_MSG_OTHER && r.len)
			__builtin_trap();
		/* each byte cleaned is at most "\xNN" or "<U+XXXX>": 8 bytes */
		if (r.len > 8 * SRUN_MSG_REASON_MAX)
			__builtin_trap();
		for (size_t i = 0; i < r.len; i++)
			if ((unsigned char)r.buf[i] < 0x20 || r.buf[i] == 0x7f)
				__builtin_trap();
		if (!srun_refusal_action(r.buf))
			__builtin_trap();
		srun_refusal_describe(r.buf, &t);
		if (!strstr(t.buf, "srun refused to create the step: "))
			__builtin_trap();
		strbuf_release(&r);
		strbuf_release(&t);
		p += n + 1;
	}
	return 0;
}
