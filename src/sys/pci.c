/* pci.c: the one PCI bus walk and attribute parsing, through fsroot (see pci.h). */
#include "pci.h"
#include "fsroot.h"
#include "sysattr.h"

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

/* Add "NAME COUNT" to the list; when it is full, end it with "...": never drop names unsaid. */
static void append_name(char *buf, size_t n, const char *name, size_t name_len, uint64_t count)
{
	size_t len = strlen(buf);
	if (len >= 3 && !strcmp(buf + len - 3, "..."))
		return;
	int w = snprintf(buf + len, n - len, "%s%.*s %llu", len ? ", " : "", (int)name_len, name,
			 (unsigned long long)count);
	if (w < 0 || (size_t)w >= n - len) {
		buf[len] = '\0';
		snprintf(buf + len, n - len, "%s...", len ? ", " : "");
	}
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

int pci_list(const struct fsroot *root, struct strlist *bdfs, struct strbuf *err)
{
	return fsroot_list(root, PCI_DEVICES_DIR, bdfs, err);
}

static void dev_path(struct strbuf *p, const char *bdf, const char *attr)
{
	strbuf_reset(p);
	strbuf_addf(p, PCI_DEVICES_DIR "/%s/%s", bdf, attr);
}

static int read_hex(const struct fsroot *root, const char *bdf, const char *attr, uint32_t *out,
		    struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	uint64_t v = 0;
	dev_path(&p, bdf, attr);
	int r = sysattr_read_u64(root, p.buf, &v, err);
	if (r == 0 && v > UINT32_MAX)
		r = error_set(err, "'%s' holds 0x%llx, more than 32 bits", p.buf,
			      (unsigned long long)v);
	strbuf_release(&p);
	if (r == 0)
		*out = (uint32_t)v;
	return r;
}

int pci_read_id(const struct fsroot *root, const char *bdf, uint32_t *vendor, uint32_t *class_code,
		struct strbuf *err)
{
	int r = read_hex(root, bdf, "vendor", vendor, err);
	if (r)
		return r;
	r = read_hex(root, bdf, "class", class_code, err);
	/* a device with a vendor file and no class file is broken, not gone */
	return r == READ_MISSING ? -1 : r;
}

static void keep_error(char *buf, size_t n, const struct strbuf *err)
{
	if (!buf[0])
		strlcpy_v(buf, err->len ? err->buf : "unreadable", n);
}

/*
 * One link attribute into buf: true when it exists (and then it was readable, else link_error
 * says why and the link is not judged).
 */
static bool read_link_attr(const struct fsroot *root, struct pci_dev *d, const char *attr,
			   char *buf, size_t n)
{
	struct strbuf p = STRBUF_INIT, v = STRBUF_INIT, err = STRBUF_INIT;
	dev_path(&p, d->bdf, attr);
	int r = sysattr_read(root, p.buf, &v, &err);
	buf[0] = '\0';
	if (r == READ_OK)
		strlcpy_v(buf, v.buf, n);
	else if (r < 0)
		keep_error(d->link_error, sizeof(d->link_error), &err);
	strbuf_release(&p);
	strbuf_release(&v);
	strbuf_release(&err);
	return r != READ_MISSING;
}

/* A speed as sysfs writes it: "N GT/s ..." or, when the kernel cannot tell, "Unknown" (0). */
static void parse_link_speed(struct pci_dev *d, const char *attr, const char *s, double *gts)
{
	*gts = 0;
	if (!s[0] || pci_parse_speed(s, gts) || starts_with(s, "Unknown"))
		return;
	struct strbuf q = STRBUF_INIT;
	strbuf_add_excerpt(&q, s, SYSATTR_EXCERPT);
	if (!d->link_error[0])
		snprintf(d->link_error, sizeof(d->link_error),
			 "'" PCI_DEVICES_DIR "/%s/%s' holds '%s', not a link speed", d->bdf, attr,
			 q.buf);
	strbuf_release(&q);
}

static void parse_link_width(struct pci_dev *d, const char *attr, const char *s, unsigned *lanes)
{
	*lanes = 0;
	if (!s[0] || pci_parse_width(s, lanes))
		return;
	struct strbuf q = STRBUF_INIT;
	strbuf_add_excerpt(&q, s, SYSATTR_EXCERPT);
	if (!d->link_error[0])
		snprintf(d->link_error, sizeof(d->link_error),
			 "'" PCI_DEVICES_DIR "/%s/%s' holds '%s', not a lane count", d->bdf, attr,
			 q.buf);
	strbuf_release(&q);
}

static void read_link(const struct fsroot *root, struct pci_dev *d)
{
	char cw[32], mw[32];
	bool have[4] = {
		read_link_attr(root, d, "current_link_speed", d->cur_speed, sizeof(d->cur_speed)),
		read_link_attr(root, d, "max_link_speed", d->max_speed, sizeof(d->max_speed)),
		read_link_attr(root, d, "current_link_width", cw, sizeof(cw)),
		read_link_attr(root, d, "max_link_width", mw, sizeof(mw)),
	};
	size_t n = have[0] + have[1] + have[2] + have[3];
	d->has_link = n > 0;
	if (n && n < 4 && !d->link_error[0]) {
		/* the kernel makes all four visible together: some missing is a broken tree */
		static const char *const names[] = { "current_link_speed", "max_link_speed",
						     "current_link_width", "max_link_width" };
		for (size_t i = 0; i < 4; i++)
			if (!have[i]) {
				snprintf(d->link_error, sizeof(d->link_error),
					 "'" PCI_DEVICES_DIR "/%s/%s' is missing", d->bdf,
					 names[i]);
				break;
			}
	}
	parse_link_speed(d, "current_link_speed", d->cur_speed, &d->cur_gts);
	parse_link_speed(d, "max_link_speed", d->max_speed, &d->max_gts);
	parse_link_width(d, "current_link_width", cw, &d->cur_width);
	parse_link_width(d, "max_link_width", mw, &d->max_width);
}

static void read_aer(const struct fsroot *root, const char *bdf, const char *attr,
		     struct pci_aer *out)
{
	struct strbuf p = STRBUF_INIT, v = STRBUF_INIT, err = STRBUF_INIT;
	dev_path(&p, bdf, attr);
	int r = sysattr_read_file(root, p.buf, &v, 16384, &err);
	memset(out, 0, sizeof(*out));
	if (r == READ_OK && !pci_parse_aer(v.buf, out)) {
		struct strbuf q = STRBUF_INIT;
		strbuf_trim(&v);
		strbuf_add_excerpt(&q, v.buf, SYSATTR_EXCERPT);
		error_set(&err, "'%s' holds no error counters ('%s')", p.buf, q.buf);
		strbuf_release(&q);
		r = -1;
	}
	if (r < 0)
		keep_error(out->error, sizeof(out->error), &err);
	strbuf_release(&p);
	strbuf_release(&v);
	strbuf_release(&err);
}

int pci_read(const struct fsroot *root, const char *bdf, struct pci_dev *d)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	int r = 0;
	memset(d, 0, sizeof(*d));
	strlcpy_v(d->bdf, bdf, sizeof(d->bdf));
	int ir = pci_read_id(root, bdf, &d->vendor, &d->class_code, &err);
	if (ir == READ_MISSING) {
		r = READ_MISSING;
		goto out;
	}
	if (ir < 0)
		keep_error(d->id_error, sizeof(d->id_error), &err);
	d->device_read = read_hex(root, bdf, "device", &d->device, NULL) == 0;
	dev_path(&p, bdf, "physfn");
	d->is_vf = fsroot_exists(root, p.buf);
	read_link(root, d);
	read_aer(root, bdf, "aer_dev_fatal", &d->aer_fatal);
	read_aer(root, bdf, "aer_dev_nonfatal", &d->aer_nonfatal);
	read_aer(root, bdf, "aer_dev_correctable", &d->aer_correctable);
out:
	strbuf_release(&p);
	strbuf_release(&err);
	return r;
}

/* Could a device of this vendor be of any kind in mask? */
static bool vendor_may_match(uint32_t vendor, unsigned mask)
{
	static const uint32_t classes[] = { 0x030000, 0x030200, 0x068000, 0x020000, 0x020700 };
	for (size_t i = 0; i < ARRAY_SIZE(classes); i++)
		if (mask & PCI_MASK(pci_classify(vendor, classes[i])))
			return true;
	return false;
}

int pci_find(const struct fsroot *root, unsigned mask, bool full, struct pci_dev **devs, size_t *nr,
	     size_t *alloc, struct strbuf *err)
{
	struct strlist bdfs = STRLIST_INIT;
	struct strbuf ierr = STRBUF_INIT;
	mask &= ~PCI_MASK(PCI_KIND_OTHER);
	int r = pci_list(root, &bdfs, err);
	for (size_t i = 0; r == 0 && i < bdfs.nr; i++) {
		const char *bdf = bdfs.items[i];
		struct pci_dev d;
		memset(&d, 0, sizeof(d));
		strlcpy_v(d.bdf, bdf, sizeof(d.bdf));
		strbuf_reset(&ierr);
		int ir = read_hex(root, bdf, "vendor", &d.vendor, &ierr);
		if (ir == READ_MISSING)
			continue; /* gone since the listing, or not a device directory */
		if (ir == 0 && !vendor_may_match(d.vendor, mask))
			continue;
		if (ir == 0) {
			ir = read_hex(root, bdf, "class", &d.class_code, &ierr);
			if (ir == 0 && !(mask & PCI_MASK(pci_classify(d.vendor, d.class_code))))
				continue;
		}
		if (ir != 0) {
			keep_error(d.id_error, sizeof(d.id_error), &ierr);
		} else if (full && pci_read(root, bdf, &d) == READ_MISSING) {
			continue;
		}
		ALLOC_GROW(*devs, *nr + 1, *alloc);
		(*devs)[(*nr)++] = d;
	}
	strlist_release(&bdfs);
	strbuf_release(&ierr);
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
