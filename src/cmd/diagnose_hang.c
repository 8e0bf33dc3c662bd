/*
 * diagnose_hang.c: 'vigil diagnose hang DIR|FILE...', the rank that stopped a hung run. Reads
 * the NCCL flight recorder files (libnccl-profiler-vigil.so's rings and dumps: *.ring in the
 * directories given, their nccl/ subdirectory, and the attempts of a vigil run directory) and
 * analyses them (src/diagnose/hang.c); reads the logs too (src/cmd/diagnose_hanglogs.c:
 * watchdog lines, NCCL errors, silent hosts), which speak alone when no recorder file exists.
 * Prints one paragraph, or JSON with --json; picks the exit code.
 */
#include "cmd.h"
#include "diagnose.h"
#include "diagnose_hanglogs.h"
#include "../diagnose/hang.h"
#include "../diagnose/hanglogs.h"
#include "../lib/fileio.h"
#include "../lib/strlist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char hang_usage[] =
	"usage: vigil diagnose hang [--json] [--all] DIR|FILE...\n"
	"\n"
	"Which rank stopped a hung run, and in which collective. Reads the NCCL flight recorder\n"
	"files (NCCL_PROFILER_PLUGIN=libnccl-profiler-vigil.so; vigil run --nccl-recorder loads\n"
	"it): *.ring in each DIR, in DIR/nccl/, in a vigil run directory's last attempt (every\n"
	"attempt with --all), and FILEs given by name; the run's logs too (watchdog timeouts, NCCL\n"
	"errors, the hosts whose output stopped first), which speak alone when no recorder file\n"
	"exists. For each communicator: the collective the others wait in, the ranks that never\n"
	"entered it or never finished it, its operation and size, how long the others waited; a\n"
	"hang above NCCL (every rank idle after the same collective) is said as such. A rank\n"
	"that vigil stacks found stopped (T) inside the collective (stacks-HOST.json, kept by\n"
	"vigil run in the attempt) is named as the culprit.\n"
	"  --json   one JSON object: recorder (communicators, culprits, files) and logs\n"
	"  --all    every attempt of a vigil run directory, not only the last\n"
	"Exit: 0 nothing inside NCCL (every rank idle at the same count), 1 ranks named,\n"
	"2 usage error, 3 could not tell (a path missing or unreadable, no recorder file and\n"
	"nothing in the logs, or ranks with no readable ring decide it: incomplete).\n";

struct ring_reader {
	struct hang *h;
	size_t unreadable;
};

/*
 * One ring file: opened without following a link (inside a directory) and without blocking
 * (a FIFO), checked to be a regular file on the descriptor itself (a name swapped after the
 * directory was listed), then parsed in bounded memory from its real size (nring_read_fd): a
 * header that claims more than the file holds is refused before anything is allocated. Every
 * refusal names the file and why; its rank is then unknown to the analysis.
 */
static void read_ring_at(struct ring_reader *rr, int dirfd, const char *name, const char *display,
			 bool follow)
{
	struct strbuf err = STRBUF_INIT, why = STRBUF_INIT;
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
					 (follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		if (errno == ELOOP && !follow)
			strbuf_addf(&err, "cannot read '%s': a symbolic link, not a regular file",
				    display);
		else
			strbuf_addf(&err, "cannot read '%s': %s", display, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) != 0) {
		strbuf_addf(&err, "cannot read '%s': %s", display, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		strbuf_addf(&err, "cannot read '%s': %s, not a regular file", display,
			    file_kind(st.st_mode));
		goto fail;
	}
	struct nring *r = xmalloc(sizeof(*r));
	if (nring_read_fd(fd, (uint64_t)st.st_size, r, &why) == 0) {
		r->file_uid = (uint32_t)st.st_uid;
		hang_add_ring(rr->h, display, r);
		free(r);
		close(fd);
		strbuf_release(&err);
		strbuf_release(&why);
		return;
	}
	free(r);
	strbuf_addf(&err, "cannot use '%s': %s", display, why.len ? why.buf : "unreadable");
fail:
	if (fd >= 0)
		close(fd);
	hang_add_error(rr->h, display, err.buf);
	rr->unreadable++;
	strbuf_release(&err);
	strbuf_release(&why);
}

/*
 * vigil stacks' answers kept in an attempt directory by vigil run (stacks-HOST.json): the ranks
 * stopped (T) in most samples, whose NCCL threads cannot move a collective on (hang.h). Only a
 * regular file, not followed, at most 8 MiB, owned by this user or by the directory's owner
 * (vigil run writes them as the job's user), and only ranks whose evidence is not in doubt;
 * a file that fails any of this is passed over: the recorder's verdict then stands alone.
 */
#define STACKS_JSON_MAX (8u << 20)

static void read_stacks_at(struct ring_reader *rr, int dirfd, const char *name)
{
	struct stat st, dst;
	int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || fstat(dirfd, &dst) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != geteuid() && st.st_uid != dst.st_uid)) {
		close(fd);
		return;
	}
	struct strbuf sb = STRBUF_INIT;
	if (read_fd_bounded(fd, name, &sb, STACKS_JSON_MAX, NULL) != READ_OK) {
		strbuf_release(&sb);
		return;
	}
	struct json_value *v = json_parse(sb.buf, sb.len, NULL);
	const struct json_value *ranks = json_get(v, "ranks");
	for (size_t i = 0; ranks && ranks->type == JSON_ARRAY && i < ranks->nr; i++) {
		const struct json_value *k = ranks->items[i];
		const struct json_value *doubt = json_get(k, "doubt");
		double rank, pid, t, samples;
		if ((doubt && doubt->type != JSON_NULL) || !json_get_number(k, "rank", &rank) ||
		    !json_get_number(k, "pid", &pid) || !json_get_number(k, "samples", &samples) ||
		    !json_get_number(json_get(k, "states"), "T", &t))
			continue;
		if (rank < 0 || rank > HANG_RANKS_MAX || pid < 1 || pid > (1 << 30) || t < 0 ||
		    samples < 1 || samples > 1e6 || t > samples)
			continue;
		hang_add_stopped(rr->h, (int32_t)rank, (int32_t)pid, (unsigned)t, (unsigned)samples);
	}
	json_free(v);
	strbuf_release(&sb);
}

/* The names in dirfd, sorted: ring files, vigil stacks' answers, and (for the caller)
 * attempt-N and nccl. */
static void list_dir(int dirfd, struct strlist *rings, struct strlist *stacks, long *last_attempt,
		     struct strlist *attempts, bool *has_nccl)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (ends_with(e->d_name, ".ring")) {
			strlist_add(rings, e->d_name);
		} else if (!strncmp(e->d_name, "stacks-", 7) && ends_with(e->d_name, ".json")) {
			strlist_add(stacks, e->d_name);
		} else if (!strcmp(e->d_name, "nccl")) {
			*has_nccl = true;
		} else if (!strncmp(e->d_name, "attempt-", 8)) {
			char *end;
			long n = strtol(e->d_name + 8, &end, 10);
			if (end != e->d_name + 8 && !*end && n >= 0) {
				strlist_add(attempts, e->d_name);
				if (n > *last_attempt)
					*last_attempt = n;
			}
		}
	}
	closedir(d);
	strlist_sort(rings);
	strlist_sort(attempts);
}

/* Read the ring files of one directory; into nccl/ and attempt-N/ down to depth levels. */
static void read_dir(struct ring_reader *rr, int dirfd, const char *display, int depth, bool all)
{
	struct strlist rings = STRLIST_INIT, attempts = STRLIST_INIT, stacks = STRLIST_INIT;
	long last = -1;
	bool has_nccl = false;
	list_dir(dirfd, &rings, &stacks, &last, &attempts, &has_nccl);
	for (size_t i = 0; i < stacks.nr && i < 4096; i++)
		read_stacks_at(rr, dirfd, stacks.items[i]);
	struct strbuf path = STRBUF_INIT;
	for (size_t i = 0; i < rings.nr; i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s", display, rings.items[i]);
		read_ring_at(rr, dirfd, rings.items[i], path.buf, false);
	}
	if (depth > 0) {
		struct strlist subs = STRLIST_INIT;
		if (has_nccl)
			strlist_add(&subs, "nccl");
		for (size_t i = 0; i < attempts.nr; i++) {
			char want[32];
			snprintf(want, sizeof(want), "attempt-%ld", last);
			if (all || !strcmp(attempts.items[i], want))
				strlist_add(&subs, attempts.items[i]);
		}
		for (size_t i = 0; i < subs.nr; i++) {
			int sub = openat(dirfd, subs.items[i],
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue; /* a planted link, or gone: not ours to follow */
			strbuf_reset(&path);
			strbuf_addf(&path, "%s/%s", display, subs.items[i]);
			read_dir(rr, sub, path.buf, depth - 1, all);
			close(sub);
		}
		strlist_release(&subs);
	}
	strbuf_release(&path);
	strlist_release(&rings);
	strlist_release(&stacks);
	strlist_release(&attempts);
}

/* One argument: a directory, or a file read as a ring when it is one. */
static void read_arg(struct ring_reader *rr, const char *arg, bool all)
{
	struct stat st;
	if (stat(arg, &st) != 0)
		return; /* said by the logs reader, which reads every argument too */
	if (S_ISDIR(st.st_mode)) {
		int fd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			read_dir(rr, fd, arg, 2, all);
			close(fd);
		}
		return;
	}
	if (!S_ISREG(st.st_mode))
		return;
	/* a file: a ring only when it starts like one (else it is a log) */
	int fd = open(arg, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	char magic[8];
	ssize_t n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n == (ssize_t)sizeof(magic) && nring_looks_like(magic, sizeof(magic)))
		read_ring_at(rr, AT_FDCWD, arg, arg, true);
}

int diag_hang_main(int argc, char **argv)
{
	bool json = false, all = false;
	struct strlist paths = STRLIST_INIT;
	for (int i = 1; i < argc; i++) {
		if (is_help_arg(argv[i])) {
			fputs(hang_usage, stdout);
			strlist_release(&paths);
			return EXIT_HEALTHY;
		}
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--all"))
			all = true;
		else if (!strcmp(argv[i], "--"))
			for (i++; i < argc; i++)
				strlist_add(&paths, argv[i]);
		else if (argv[i][0] == '-' && argv[i][1]) {
			struct strbuf o = STRBUF_INIT;
			strbuf_add_excerpt(&o, argv[i], 64);
			usage_error("diagnose hang", "unknown option '%s'", o.buf);
			strbuf_release(&o);
			strlist_release(&paths);
			return EXIT_USAGE;
		} else
			strlist_add(&paths, argv[i]);
	}
	if (!paths.nr) {
		usage_error("diagnose hang", "which run? (a vigil run directory, an attempt "
					     "directory, recorder files or log files)");
		strlist_release(&paths);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < paths.nr; i++) {
		struct stat st;
		if (stat(paths.items[i], &st) != 0) {
			struct strbuf p = STRBUF_INIT;
			strbuf_add_excerpt(&p, paths.items[i], 200);
			fprintf(stderr, "vigil diagnose hang: cannot read '%s': %s\n", p.buf,
				strerror(errno));
			strbuf_release(&p);
			strlist_release(&paths);
			return EXIT_UNKNOWN; /* input, not usage: the one exit contract (vigil(1)) */
		}
	}

	struct hang h;
	hang_init(&h);
	struct ring_reader rr = { &h, 0 };
	for (size_t i = 0; i < paths.nr; i++)
		read_arg(&rr, paths.items[i], all);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	hang_finish(&h, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);

	struct hlog hl;
	struct strbuf err = STRBUF_INIT;
	hang_logs_from_paths(paths.items, (int)paths.nr, all, &hl, &err); /* inits and finishes hl */

	struct strbuf out = STRBUF_INIT;
	bool recorder = h.rings > 0;
	bool logs_say = hl.verdict != HLOG_UNKNOWN;
	if (json) {
		/* the two halves are written by their own writers and put side by side */
		struct strbuf rec = STRBUF_INIT, para = STRBUF_INIT;
		struct json_writer w;
		json_writer_init(&w, &rec, false);
		hang_write_json(&h, &w);
		json_writer_finish(&w, NULL);
		if (recorder)
			hang_write_text(&h, &para);
		else
			hlog_summary(&hl, &para);
		strbuf_rtrim(&para);
		strbuf_addf(&out, "{\"schema_version\":%d,\"source\":", VIGIL_JSON_SCHEMA_VERSION);
		const char *src = recorder ? "recorder" : logs_say ? "logs" : "none";
		json_quote(&out, src, strlen(src));
		strbuf_addstr(&out, ",\"summary\":");
		json_quote(&out, para.buf, para.len);
		strbuf_addstr(&out, ",\"recorder\":");
		strbuf_add(&out, rec.buf, rec.len);
		strbuf_addstr(&out, ",\"logs\":");
		hlog_write_json(&hl, &out);
		strbuf_addstr(&out, "}\n");
		strbuf_release(&rec);
		strbuf_release(&para);
	} else {
		if (recorder) {
			strbuf_addstr(&out, "From the NCCL flight recorder:\n");
			hang_write_text(&h, &out);
			if (logs_say) {
				strbuf_addstr(&out, "\nFrom the logs:\n");
				hlog_write_text(&hl, &out);
			}
		} else {
			strbuf_addstr(&out, "No NCCL recorder file (load libnccl-profiler-vigil.so: "
					    "vigil run --nccl-recorder). From the logs:\n");
			hlog_write_text(&hl, &out);
		}
		for (size_t i = 0; i < h.nr_files; i++)
			if (h.files[i].error) {
				strbuf_add_clean(&out, h.files[i].error);
				strbuf_addch(&out, '\n');
			}
	}
	fwrite(out.buf, 1, out.len, stdout);

	int code;
	if (recorder && hang_found(&h))
		code = EXIT_UNHEALTHY;
	else if (recorder && h.all_idle && !rr.unreadable)
		/* idle is a verdict of health: a file refused may be the one rank that is not */
		code = logs_say ? EXIT_UNHEALTHY : EXIT_HEALTHY;
	else if (logs_say)
		code = EXIT_UNHEALTHY;
	else
		code = EXIT_UNKNOWN;
	strbuf_release(&out);
	strbuf_release(&err);
	hlog_release(&hl);
	hang_release(&h);
	strlist_release(&paths);
	return code;
}
