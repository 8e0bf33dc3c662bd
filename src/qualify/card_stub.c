/* card_stub.c: placeholders until the scorecard page and comparison land (removed then). */
#include "card.h"

int qualify_html(const struct json_value *card, struct strbuf *out, struct strbuf *err)
{
	(void)card;
	(void)out;
	return error_set(err, "the scorecard page is not built yet");
}

int qualify_compare(const struct json_value *old_card, const struct json_value *new_card,
		    bool json, struct strbuf *out, struct strbuf *err)
{
	(void)old_card;
	(void)new_card;
	(void)json;
	(void)out;
	return error_set(err, "the comparison is not built yet");
}
