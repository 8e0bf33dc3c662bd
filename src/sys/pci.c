/* pci.c: PCI device enumeration and attribute parsing through fsroot (see pci.h). */
#include "pci.h"
#include "fsroot.h"

#include <ctype.h>

enum pci_kind pci_classify(uint32_t vendor, uint32_t class_code)
{
	uint32_t cls = class_code >> 8; /* base class and subclass: 0x0302 */
	if (vendor == PCI_VENDOR_NVIDIA) {
		if (cls == 0x0302 || cls == 0x0300)
			return PCI_KIND_GPU;
		if (cls == 0x0680)
			return PCI_KIND_NVSWITCH;
	}
	if ((vendor == PCI_VENDOR_NVIDIA || vendor == PCI_VENDOR_MELLANOX) &&
	    (cls == 0x0207 || cls == 0x0200))
		return PCI_KIND_NIC;
	return PCI_KIND_OTHER;
}

const char *pci_kind_name(enum pci_kind k)
{
	switch (k) {
	case PCI_KIND_GPU:
		return "GPU";
	case PCI_KIND_NVSWITCH:
		return "NVSwitch";
	case PCI_KIND_NIC:
		return "NIC";
	default:
		return "device";
	}
}

bool pci_parse_speed(const char *s, double *gts)
{
	char *end;
	while (*s == ' ')
		s++;
	if (!isdigit((unsigned char)*s))
		return false;
	double v = strtod(s, &end);
	if (end == s || !(v > 0) || v > 1000)
		return false;
	while (*end == ' ')
		end++;
	if (!starts_with(end, "GT/s"))
		return false;
	*gts = v;
	return true;
}

bool pci_parse_width(const char *s, unsigned *lanes)
{
	uint64_t v;
	while (*s == ' ')
		s++;
	if (*s == 'x' || *s == 'X')
		s++;
	if (!parse_u64(s, &v) || v > 64)
		return false;
	*lanes = (unsigned)v;
	return true;
}

static void append_name(char *buf, size_t n, const char *name, size_t name_len, uint64_t count)
{
	size_t len = strlen(buf);
	if (len + 8 >= n)
		return;
	snprintf(buf + len, n - len, "%s%.*s %llu", len ? ", " : "", (int)name_len, name,
		 (unsigned long long)count);
}

bool pci_parse_aer(const char *text, struct pci_aer *out)
{
	uint64_t sum = 0, total = 0;
	bool have_total = false, any = false;
	memset(out, 0, sizeof(*out));
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[128];
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			char *sp = strrchr(buf, ' ');
			uint64_t v;
			if (sp && sp != buf && parse_u64(sp + 1, &v)) {
				size_t name_len = (size_t)(sp - buf);
				while (name_len && buf[name_len - 1] == ' ')
					name_len--;
				any = true;
				if (starts_with(buf, "TOTAL_")) {
					have_total = true;
					total = v;
				} else {
					sum += v;
					if (v)
						append_name(out->nonzero, sizeof(out->nonzero), buf,
							    name_len, v);
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	out->present = any;
	out->total = have_total ? total : sum;
	return any;
}

int pci_list(struct strlist *bdfs, struct strbuf *err)
{
	return fsroot_list(PCI_DEVICES_DIR, bdfs, err);
}

static int read_hex(const char *bdf, const char *attr, uint32_t *out, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	uint64_t v = 0;
	strbuf_addf(&p, PCI_DEVICES_DIR "/%s/%s", bdf, attr);
	int r = fsroot_read_u64(p.buf, &v, err);
	strbuf_release(&p);
	if (r == 0)
		*out = (uint32_t)v;
	return r;
}

int pci_read_id(const char *bdf, uint32_t *vendor, uint32_t *class_code, struct strbuf *err)
{
	int r = read_hex(bdf, "vendor", vendor, err);
	if (r)
		return r;
	return read_hex(bdf, "class", class_code, err);
}

/* Read attr into buf; "" when missing. 0, or -1 on a read error. */
static int read_attr(const char *bdf, const char *attr, char *buf, size_t n, bool *present,
		     struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT, v = STRBUF_INIT;
	strbuf_addf(&p, PCI_DEVICES_DIR "/%s/%s", bdf, attr);
	int r = fsroot_read_attr(p.buf, &v, err);
	buf[0] = '\0';
	if (present)
		*present = r == READ_OK;
	if (r == READ_OK)
		strlcpy_v(buf, v.buf, n);
	strbuf_release(&p);
	strbuf_release(&v);
	return r < 0 ? -1 : 0;
}

static int read_aer(const char *bdf, const char *attr, struct pci_aer *out, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT, v = STRBUF_INIT;
	strbuf_addf(&p, PCI_DEVICES_DIR "/%s/%s", bdf, attr);
	int r = fsroot_read(p.buf, &v, 16384, err);
	memset(out, 0, sizeof(*out));
	if (r == READ_OK || r == READ_TRUNCATED)
		pci_parse_aer(v.buf, out);
	strbuf_release(&p);
	strbuf_release(&v);
	return r < 0 ? -1 : 0;
}

int pci_read(const char *bdf, struct pci_dev *d, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	char w[32];
	bool have_cur = false, have_max = false;
	int r;
	memset(d, 0, sizeof(*d));
	strlcpy_v(d->bdf, bdf, sizeof(d->bdf));
	r = pci_read_id(bdf, &d->vendor, &d->class_code, err);
	if (r)
		goto out;
	r = read_hex(bdf, "device", &d->device, err);
	if (r == READ_MISSING)
		r = 0;
	if (r)
		goto out;
	strbuf_addf(&p, PCI_DEVICES_DIR "/%s/physfn", bdf);
	d->is_vf = fsroot_exists(p.buf);
	r = -1;
	if (read_attr(bdf, "current_link_speed", d->cur_speed, sizeof(d->cur_speed), &have_cur,
		      err) ||
	    read_attr(bdf, "max_link_speed", d->max_speed, sizeof(d->max_speed), &have_max, err))
		goto out;
	d->has_link = have_cur && have_max;
	if (!pci_parse_speed(d->cur_speed, &d->cur_gts))
		d->cur_gts = 0;
	if (!pci_parse_speed(d->max_speed, &d->max_gts))
		d->max_gts = 0;
	if (read_attr(bdf, "current_link_width", w, sizeof(w), NULL, err))
		goto out;
	if (!pci_parse_width(w, &d->cur_width))
		d->cur_width = 0;
	if (read_attr(bdf, "max_link_width", w, sizeof(w), NULL, err))
		goto out;
	if (!pci_parse_width(w, &d->max_width))
		d->max_width = 0;
	if (read_aer(bdf, "aer_dev_fatal", &d->aer_fatal, err) ||
	    read_aer(bdf, "aer_dev_nonfatal", &d->aer_nonfatal, err) ||
	    read_aer(bdf, "aer_dev_correctable", &d->aer_correctable, err))
		goto out;
	r = 0;
out:
	strbuf_release(&p);
	return r;
}

void pci_normalize_bdf(const char *in, char *out, size_t n)
{
	char buf[64];
	size_t colons = 0;
	for (const char *s = in; *s; s++)
		colons += *s == ':';
	snprintf(buf, sizeof(buf), "%s%s", colons == 1 ? "0000:" : "", in);
	for (char *s = buf; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	strlcpy_v(out, buf, n);
}
