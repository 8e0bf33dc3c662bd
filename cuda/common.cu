/* common.cu: JSON lines, progress, argument parsing and GPU identity for the CUDA helpers. */
#include "common.cuh"

#include <unistd.h>

static std::mutex emit_lock;
static int progress_fd = -1;

std::string json_int_array(const std::vector<int> &v)
{
	std::string s = "[";
	for (size_t i = 0; i < v.size(); i++) {
		if (i)
			s += ',';
		s += std::to_string(v[i]);
	}
	return s + "]";
}

std::string json_str_array(const std::vector<std::string> &v)
{
	jw tmp;
	std::string s = "[";
	for (size_t i = 0; i < v.size(); i++) {
		if (i)
			s += ',';
		jw q;
		q.s.clear();
		q.str_lit(v[i].c_str());
		s += q.s;
	}
	return s + "]";
}

void emit(const std::string &line)
{
	std::lock_guard<std::mutex> g(emit_lock);
	fputs(line.c_str(), stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

void progress_set_fd(int fd)
{
	progress_fd = fd;
}

void progress(const char *fmt, ...)
{
	if (progress_fd < 0)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	std::lock_guard<std::mutex> g(emit_lock);
	if (write(progress_fd, buf, (size_t)n) < 0)
		progress_fd = -1;
}

void emit_error(const char *code, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	jw j;
	j.str("type", "error").str("code", code).str("message", buf);
	emit(j.done());
	fprintf(stderr, "%s\n", buf);
}

std::string cuda_err_str(cudaError_t e)
{
	return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

std::vector<std::string> split(const char *s, char sep)
{
	std::vector<std::string> out;
	std::string cur;
	for (const char *p = s; *p; p++) {
		if (*p == sep) {
			if (!cur.empty())
				out.push_back(cur);
			cur.clear();
		} else {
			cur += *p;
		}
	}
	if (!cur.empty())
		out.push_back(cur);
	return out;
}

bool parse_int_list(const char *s, std::vector<int> *out)
{
	out->clear();
	for (const std::string &t : split(s, ',')) {
		size_t dash = t.find('-');
		char *end;
		if (dash != std::string::npos && dash > 0) {
			long a = strtol(t.substr(0, dash).c_str(), &end, 10);
			if (*end)
				return false;
			long b = strtol(t.substr(dash + 1).c_str(), &end, 10);
			if (*end || a < 0 || b < a || b > 1023)
				return false;
			for (long v = a; v <= b; v++)
				out->push_back((int)v);
		} else {
			long v = strtol(t.c_str(), &end, 10);
			if (*end || t.empty() || v < 0 || v > 1023)
				return false;
			out->push_back((int)v);
		}
	}
	return !out->empty();
}

bool parse_size(const char *s, unsigned long long *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return false;
	double mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return false;
	*out = (unsigned long long)(v * mul);
	return true;
}

bool parse_size_range(const char *s, unsigned long long *lo, unsigned long long *hi)
{
	const char *colon = strchr(s, ':');
	if (!colon)
		return parse_size(s, lo) && (*hi = *lo, true);
	std::string a(s, (size_t)(colon - s));
	return parse_size(a.c_str(), lo) && parse_size(colon + 1, hi) && *lo <= *hi && *lo > 0;
}

bool parse_double_arg(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && std::isfinite(*out);
}

bool gpu_ident_read(int dev, gpu_ident *g, std::string *err)
{
	cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, dev);
	if (e != cudaSuccess) {
		*err = "cudaGetDeviceProperties: " + cuda_err_str(e);
		return false;
	}
	g->index = dev;
	g->name = p.name;
	g->sm_count = p.multiProcessorCount;
	g->cc_major = p.major;
	g->cc_minor = p.minor;
	g->mem_total = p.totalGlobalMem;
	char bus[32] = "";
	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) == cudaSuccess) {
		for (char *c = bus; *c; c++)
			if (*c >= 'A' && *c <= 'F')
				*c = (char)(*c - 'A' + 'a');
		g->pci = bus;
	}
	char u[64];
	const unsigned char *b = (const unsigned char *)p.uuid.bytes;
	snprintf(u, sizeof(u),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
	g->uuid = u;
	return true;
}

void gpu_ident_json(jw &j, const gpu_ident &g)
{
	char cc[16];
	snprintf(cc, sizeof(cc), "%d.%d", g.cc_major, g.cc_minor);
	j.num("index", g.index).str("name", g.name).str("pci", g.pci).str("uuid", g.uuid);
	j.num("sm_count", g.sm_count).str("compute_capability", cc);
	j.u64("mem_total_bytes", g.mem_total);
}

bool select_gpus(const std::vector<int> &want, std::vector<int> *out, std::string *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		*err = "no CUDA device: " + cuda_err_str(e);
		return false;
	}
	if (n <= 0) {
		*err = "no CUDA device";
		return false;
	}
	out->clear();
	if (want.empty()) {
		for (int i = 0; i < n; i++)
			out->push_back(i);
		return true;
	}
	for (int d : want) {
		if (d >= n) {
			*err = "GPU " + std::to_string(d) + " does not exist (this host has " +
			       std::to_string(n) + ")";
			return false;
		}
		out->push_back(d);
	}
	return true;
}
