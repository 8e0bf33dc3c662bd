/* rankout.c: a labelled srun step's output split into time-stamped per-rank files (rankout.h). */
#include "rankout.h"
#include "../lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void rankout_timestamp(double wall, char *out, size_t size)
{
	time_t sec = (time_t)wall;
	long ms = (long)((wall - (double)sec) * 1000.0);
	if (ms < 0)
		ms = 0;
	if (ms > 999)
		ms = 999;
	struct tm tm;
	if (!gmtime_r(&sec, &tm)) {
		snprintf(out, size, "?");
		return;
	}
	char day[24];
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%s.%03ldZ", day, ms);
}

int rankout_label(const char *line, size_t len, size_t *text_off)
{
	size_t i = 0;
	while (i < len && line[i] == ' ')
		i++;
	size_t d = i;
	uint64_t v = 0;
	while (i < len && line[i] >= '0' && line[i] <= '9' && i - d < 9)
		v = v * 10 + (uint64_t)(line[i++] - '0');
	if (i == d || i >= len || line[i] != ':')
		return -1;
	i++;
	if (i < len && line[i] == ' ')
		i++;
	*text_off = i;
	return (int)v;
}

int rankout_open(struct rankout *ro, const char *attempt_dir, unsigned world, rankout_fn fn,
		 void *arg, struct strbuf *err)
{
	memset(ro, 0, sizeof(*ro));
	ro->srun_fd = -1;
	ro->dirfd = open(attempt_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ro->dirfd < 0) {
		strbuf_addf(err, "cannot open '%s': %s", attempt_dir, strerror(errno));
		return -1;
	}
	ro->world = world;
	ro->ranks = xcalloc(world ? world : 1, sizeof(*ro->ranks));
	for (unsigned i = 0; i < world; i++)
		ro->ranks[i].fd[0] = ro->ranks[i].fd[1] = -1;
	for (int k = 0; k < 2; k++) {
		strbuf_init(&ro->s[k].head, 0);
		ro->s[k].rank = -1;
	}
	ro->fn = fn;
	ro->arg = arg;
	ro->pending_fd = -1;
	strbuf_init(&ro->pending, 0);
	return 0;
}

static void write_all(struct rankout *ro, int fd, const char *data, size_t len)
{
	while (fd >= 0 && len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ro->write_errors++;
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

/* A lazy rankout's gathered bytes, written to their file. */
static void flush_pending(struct rankout *ro)
{
	if (ro->pending.len) {
		write_all(ro, ro->pending_fd, ro->pending.buf, ro->pending.len);
		strbuf_reset(&ro->pending);
	}
	ro->pending_fd = -1;
}

static int open_append(struct rankout *ro, const char *name)
{
	int fd = openat(ro->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0644);
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
			close(fd); /* a FIFO or a hard link planted in the attempt directory */
			fd = -1;
		}
	}
	if (fd < 0)
		ro->write_errors++;
	return fd;
}

static void close_rank_files(struct rankout *ro)
{
	flush_pending(ro);
	for (unsigned i = 0; i < ro->world; i++)
		for (int k = 0; k < 2; k++)
			if (ro->ranks[i].fd[k] >= 0) {
				close(ro->ranks[i].fd[k]);
				ro->ranks[i].fd[k] = -1;
			}
	ro->nr_open = 0;
}

/* The file a line of (rank, stream) goes to; -1 when it cannot be opened. */
static int file_for(struct rankout *ro, int rank, int stream)
{
	if (rank < 0 || (unsigned)rank >= ro->world) {
		if (ro->srun_fd < 0)
			ro->srun_fd = open_append(ro, "srun.log");
		return ro->srun_fd;
	}
	int *fd = &ro->ranks[rank].fd[stream == 2];
	if (*fd >= 0)
		return *fd;
	if (ro->nr_open >= ROUT_OPEN_MAX)
		close_rank_files(ro);
	char name[64];
	snprintf(name, sizeof(name), "rank-%d.%s", rank, stream == 2 ? "err" : "out");
	*fd = open_append(ro, name);
	if (*fd >= 0)
		ro->nr_open++;
	return *fd;
}

static void put(struct rankout *ro, int fd, const char *data, size_t len)
{
	if (!ro->lazy || fd < 0) {
		write_all(ro, fd, data, len);
		return;
	}
	if (ro->pending_fd != fd)
		flush_pending(ro);
	ro->pending_fd = fd;
	strbuf_add(&ro->pending, data, len);
	if (ro->pending.len >= 65536)
		flush_pending(ro);
}

/* The head of a line is complete enough to know its rank: write its stamp and text, and
 * its newline where the line ends there (nl): a line in one write, not two. */
static void start_output(struct rankout *ro, struct rankout_stream *st, int stream, bool nl)
{
	size_t off = 0;
	int rank = rankout_label(st->head.buf, st->head.len, &off);
	if (rank >= 0 && (unsigned)rank >= ro->world)
		rank = -1, off = 0; /* a number that is no rank of this step: srun's own text */
	if (rank < 0)
		off = 0, ro->unlabelled++;
	st->rank = rank;
	char ts[40];
	rankout_timestamp(ro->now_wall, ts, sizeof(ts));
	int fd = file_for(ro, rank, stream);
	struct strbuf line = STRBUF_INIT;
	strbuf_addstr(&line, ts);
	strbuf_addch(&line, ' ');
	if (rank < 0 && stream == 2)
		strbuf_addstr(&line, "E ");
	strbuf_add(&line, st->head.buf + off, st->head.len - off);
	if (nl)
		strbuf_addch(&line, '\n');
	put(ro, fd, line.buf, line.len);
	strbuf_release(&line);
	if (rank >= 0) {
		ro->ranks[rank].last_output = ro->now_wall;
		ro->ranks[rank].last_mono = ro->now_mono;
		ro->ranks[rank].lines++;
	}
}

static void end_line(struct rankout *ro, struct rankout_stream *st, int stream)
{
	if (!st->passthrough)
		start_output(ro, st, stream, true);
	else
		put(ro, file_for(ro, st->rank, stream), "\n", 1);
	ro->lines++;
	size_t off = 0;
	int rank = rankout_label(st->head.buf, st->head.len, &off);
	if (rank < 0 || (unsigned)rank >= ro->world)
		rank = -1, off = 0;
	if (ro->fn)
		ro->fn(ro->arg, rank, stream, st->head.buf + off, st->head.len - off);
	strbuf_reset(&st->head);
	st->in_line = st->passthrough = false;
}

void rankout_feed(struct rankout *ro, int stream, const char *data, size_t len, double wall,
		  double mono)
{
	struct rankout_stream *st = &ro->s[stream == 2];
	ro->now_wall = wall;
	ro->now_mono = mono;
	ro->bytes += len;
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t seg = nl ? (size_t)(nl - data) : len;
		st->in_line = true;
		if (st->passthrough) {
			put(ro, file_for(ro, st->rank, stream), data, seg);
		} else {
			size_t room = ROUT_LINE_MAX - st->head.len;
			strbuf_add(&st->head, data, seg < room ? seg : room);
			if (seg >= room) {
				/* the head is full: write it, pass the rest of the line through */
				start_output(ro, st, stream, false);
				put(ro, file_for(ro, st->rank, stream), data + room, seg - room);
				st->passthrough = true;
			}
		}
		if (!nl)
			break;
		end_line(ro, st, stream);
		data += seg + 1;
		len -= seg + 1;
	}
}

void rankout_finish(struct rankout *ro)
{
	for (int k = 0; k < 2; k++)
		if (ro->s[k].in_line)
			end_line(ro, &ro->s[k], k + 1);
	flush_pending(ro);
}

void rankout_close(struct rankout *ro)
{
	flush_pending(ro);
	if (ro->ranks)
		close_rank_files(ro);
	strbuf_release(&ro->pending);
	if (ro->srun_fd >= 0)
		close(ro->srun_fd);
	if (ro->dirfd >= 0)
		close(ro->dirfd);
	for (int k = 0; k < 2; k++)
		strbuf_release(&ro->s[k].head);
	free(ro->ranks);
	memset(ro, 0, sizeof(*ro));
	ro->dirfd = ro->srun_fd = -1;
}
