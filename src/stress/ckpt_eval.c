/*
 * ckpt_eval.c: what 'vigil stress storage' found (ckpt.h), as findings and as the
 * figures object of its JSON. Pure: a ckpt_result in, a report out, so every verdict path
 * (a mismatch, a stall, an I/O error, the deadline, a refusal) is the same code the command runs.
 *
 * Checks: storage-run (what ran and how fast; unknown when it did not run to its end),
 * storage-data (every byte read back and compared), storage-io (errors of the calls),
 * storage-stall (an operation past --stall-ms), storage-meta (the metadata burst).
 */
#include "ckpt.h"

#include <errno.h>
#include <string.h>

static enum action errno_action(int e)
{
	if (e == ENOSPC || e == EDQUOT)
		return ACTION_FREE_DISK;
	if (e == EACCES || e == EPERM || e == EROFS)
		return ACTION_FIX_CONFIG;
	return ACTION_INSPECT_HARDWARE;
}

static const char *cache_state(const struct ckpt_result *r)
{
	if (r->direct)
		return "bypassed";
	if (!r->cache_pages)
		return "unknown";
	if (!r->cache_resident)
		return "dropped";
	return r->cache_resident < r->cache_pages ? "partly dropped" : "not dropped";
}

static void how_read(const struct ckpt_result *r, struct strbuf *sb)
{
	if (r->direct) {
		strbuf_addstr(sb, "O_DIRECT");
		return;
	}
	strbuf_addf(sb, "buffered, page cache %s", cache_state(r));
	if (!strcmp(r->fs_type, "tmpfs") && r->cache_resident)
		strbuf_addstr(sb, ": tmpfs keeps files in memory");
}

static void run_findings(const struct ckpt_result *r, const struct ckpt_opts *o,
			 struct check_result *c)
{
	struct strbuf how = STRBUF_INIT;
	how_read(r, &how);
	struct finding *f;
	if (r->not_run[0]) {
		f = result_add(c, STATUS_UNKNOWN, ACTION_INVESTIGATE, "storage_not_run", r->fs_type,
			       "the storage test could not run to its end: %s", r->not_run);
	} else if (r->deadline_hit) {
		f = result_add(c, STATUS_UNKNOWN, ACTION_INVESTIGATE, "storage_deadline",
			       r->fs_type,
			       "the storage test did not finish within --duration %g s (%s%s%s "
			       "not done): what did not run is not judged",
			       o->deadline_ms / 1000.0, r->write_done ? "" : "writes, ",
			       r->read_done ? "" : "read-back, ",
			       r->meta_done || !o->meta_files ? "" : "metadata");
	} else {
		f = result_add(c, STATUS_OK, ACTION_NONE, "storage_run", r->fs_type,
			       "%.0f MiB in %u files by %u writers, %u KiB blocks (%s, %s): write "
			       "%.0f MiB/s, read %.0f MiB/s; fsync p50 %.1f ms, p99 %.1f ms, max "
			       "%.1f ms%s",
			       (double)r->bytes / 1048576, r->files, r->writers, r->block / 1024,
			       r->fs_type, how.buf, r->write_mib_s, r->read_mib_s, r->fsync_p50_ms,
			       r->fsync_p99_ms, r->fsync_max_ms,
			       o->inject == CKPT_INJECT_STALL	  ? " (--inject stall)"
			       : o->inject == CKPT_INJECT_CORRUPT ? " (--inject corrupt)"
								  : "");
	}
	finding_detail_num(f, "write_mib_s", r->write_mib_s);
	finding_detail_num(f, "read_mib_s", r->read_mib_s);
	finding_detail_num(f, "fsync_p99_ms", r->fsync_p99_ms);
	finding_detail(f, "direct", "%s", r->direct ? "yes" : "no");
	if (!r->direct && r->direct_note[0])
		finding_detail(f, "direct_note", "%s", r->direct_note);
	strbuf_release(&how);
}

static void data_findings(const struct ckpt_result *r, struct check_result *c)
{
	struct finding *f;
	for (size_t i = 0; i < r->nr_mismatch; i++) {
		char name[48];
		snprintf(name, sizeof(name), "shard-%05u", r->mismatch[i].file);
		f = result_add(c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_mismatch", name,
			       "%s read back other data than was written, from byte %llu: the "
			       "storage lost or corrupted a write that fsync said was safe",
			       name, (unsigned long long)r->mismatch[i].offset);
		finding_detail_num(f, "offset", (double)r->mismatch[i].offset);
		finding_detail_num(f, "bad_sectors_all_files", (double)r->mismatched_sectors);
	}
	if (r->nr_mismatch)
		return;
	if (r->mismatched_sectors) { /* cannot be without a first one; kept honest anyway */
		result_add(c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_mismatch", "",
			   "data read back wrong in %llu sectors",
			   (unsigned long long)r->mismatched_sectors);
		return;
	}
	if (r->verify == CKPT_VERIFY_NONE && r->read_done) {
		result_add(c, STATUS_UNKNOWN, ACTION_NONE, "storage_unverified", "",
			   "%.0f MiB read back and not checked (--verify none): the bandwidth is "
			   "measured, the data is not judged",
			   (double)r->read / 1048576);
		return;
	}
	if (!r->read_done || r->verified < r->bytes) {
		f = result_add(
			c, STATUS_UNKNOWN, ACTION_INVESTIGATE, "storage_unverified", "",
			"only %.0f of %.0f MiB read back and verified: the rest is not judged",
			(double)r->verified / 1048576, (double)r->bytes / 1048576);
		finding_detail_num(f, "verified_bytes", (double)r->verified);
		return;
	}
	f = result_add(c, STATUS_OK, ACTION_NONE, "storage_verified", "",
		       "%.0f MiB read back (%s%s) and every byte as written",
		       (double)r->verified / 1048576,
		       r->direct ? "O_DIRECT" : "buffered, page cache ",
		       r->direct ? "" : cache_state(r));
	finding_detail_num(f, "verified_bytes", (double)r->verified);
}

static void io_findings(const struct ckpt_result *r, struct check_result *c)
{
	for (size_t i = 0; i < r->nr_errors; i++) {
		const struct ckpt_error *e = &r->errors[i];
		struct finding *f = result_add(c, STATUS_FAIL, errno_action(e->err_no),
					       "storage_io_error", e->name, "%s of %s failed: %s",
					       e->op, e->name, strerror(e->err_no));
		finding_detail(f, "op", "%s", e->op);
		finding_detail_num(f, "errno", e->err_no);
	}
	if (!r->nr_errors)
		result_add(c, STATUS_OK, ACTION_NONE, "storage_no_errors", "",
			   "no call failed (create, write, fsync, rename, read, stat, unlink)");
	else if (r->errors_total > r->nr_errors)
		result_add(c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_io_error", "",
			   "%llu more failed calls not listed",
			   (unsigned long long)(r->errors_total - r->nr_errors));
}

static void stall_findings(const struct ckpt_result *r, const struct ckpt_opts *o,
			   struct check_result *c)
{
	for (size_t i = 0; i < r->nr_stalls; i++) {
		const struct ckpt_stall *s = &r->stalls[i];
		struct finding *f;
		if (s->unfinished)
			f = result_add(
				c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_stall", s->name,
				"%s of %s (writer %u) had not returned after %.1f s when the "
				"test ended: the storage hangs",
				s->op, s->name, s->worker, s->ms / 1000);
		else
			f = result_add(
				c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_stall", s->name,
				"%s of %s (writer %u) stalled for %.1f s, past the bound of "
				"%.1f s (--stall-ms)",
				s->op, s->name, s->worker, s->ms / 1000, o->stall_ms / 1000.0);
		finding_detail(f, "op", "%s", s->op);
		finding_detail_num(f, "ms", s->ms);
		finding_detail_num(f, "stall_ms", o->stall_ms);
	}
	if (!r->stalls_total)
		result_add(c, STATUS_OK, ACTION_NONE, "storage_no_stall", "",
			   "no operation took longer than %.1f s (slowest fsync %.1f ms, directory "
			   "sync %.1f ms)",
			   o->stall_ms / 1000.0, r->fsync_max_ms, r->dirsync_max_ms);
	else if (r->stalls_total > r->nr_stalls)
		result_add(c, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "storage_stall", "",
			   "%llu more stalled operations not listed",
			   (unsigned long long)(r->stalls_total - r->nr_stalls));
}

static void meta_findings(const struct ckpt_result *r, const struct ckpt_opts *o,
			  struct check_result *c)
{
	if (!o->meta_files) {
		result_add(c, STATUS_SKIPPED, ACTION_NONE, "storage_meta_skipped", "",
			   "--meta-files 0: no metadata burst");
		return;
	}
	if (!r->meta_done) {
		result_add(c, STATUS_UNKNOWN, ACTION_INVESTIGATE, "storage_meta_not_run", "",
			   "the metadata burst did not run to its end: not judged");
		return;
	}
	struct finding *f = result_add(c, STATUS_OK, ACTION_NONE, "storage_meta", "",
				       "metadata burst: %u small files created, stat'ed, renamed "
				       "and unlinked, %.0f operations/s",
				       o->meta_files, r->meta_ops_s);
	finding_detail_num(f, "meta_ops_s", r->meta_ops_s);
}

void ckpt_evaluate(const struct ckpt_result *r, const struct ckpt_opts *o, struct report *rep)
{
	struct check_result c;
	check_result_init(&c, "storage-run");
	run_findings(r, o, &c);
	report_move_result(rep, &c);
	check_result_init(&c, "storage-data");
	data_findings(r, &c);
	report_move_result(rep, &c);
	check_result_init(&c, "storage-io");
	io_findings(r, &c);
	report_move_result(rep, &c);
	check_result_init(&c, "storage-stall");
	stall_findings(r, o, &c);
	report_move_result(rep, &c);
	check_result_init(&c, "storage-meta");
	meta_findings(r, o, &c);
	report_move_result(rep, &c);
}

void ckpt_refused(enum ckpt_refusal why, const char *msg, struct report *rep)
{
	struct check_result c;
	check_result_init(&c, "storage-run");
	if (why == CKPT_NO_SPACE)
		result_add(&c, STATUS_UNKNOWN, ACTION_FREE_DISK, "storage_no_space", "",
			   "too little free space: %s", msg);
	else
		result_add(&c, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "storage_refused", "",
			   "the test directory was refused: %s", msg);
	report_move_result(rep, &c);
}

static void num_or_null(struct json_writer *w, const char *key, double v, bool have)
{
	json_key(w, key);
	if (have)
		json_fixed(w, v, 3);
	else
		json_null(w);
}

void ckpt_figures_json(const struct ckpt_result *r, struct json_writer *w)
{
	bool wr = r->written > 0, rd = r->read > 0;
	num_or_null(w, "write_mib_s", r->write_mib_s, wr);
	num_or_null(w, "read_mib_s", r->read_mib_s, rd);
	num_or_null(w, "fsync_p50_ms", r->fsync_p50_ms, r->fsyncs_kept > 0);
	num_or_null(w, "fsync_p99_ms", r->fsync_p99_ms, r->fsyncs_kept > 0);
	num_or_null(w, "fsync_max_ms", r->fsync_max_ms, r->fsyncs_kept > 0);
	num_or_null(w, "meta_ops_s", r->meta_ops_s, r->meta_done);
	json_key(w, "fsync_quantiles_ms");
	json_open_array(w);
	for (size_t i = 0; r->fsyncs_kept && i < CKPT_FSYNC_QS; i++) {
		json_open_array(w);
		json_fixed(w, ckpt_fsync_q[i], 3);
		json_fixed(w, r->fsync_q_ms[i], 3);
		json_close_array(w);
	}
	json_close_array(w);
	json_key(w, "fs_type");
	json_string(w, r->fs_type);
	json_key(w, "direct");
	json_bool(w, r->direct);
	if (!r->direct) {
		json_key(w, "direct_note");
		json_string(w, r->direct_note);
	}
	json_key(w, "verify");
	json_string(w, ckpt_verify_name(r->verify));
	json_key(w, "page_cache");
	json_string(w, cache_state(r));
	if (r->cache_pages) {
		json_key(w, "cache_resident_fraction");
		json_fixed(w, (double)r->cache_resident / (double)r->cache_pages, 4);
	}
	json_key(w, "bytes");
	json_uint(w, r->bytes);
	json_key(w, "file_size");
	json_uint(w, r->file_size);
	json_key(w, "files");
	json_uint(w, r->files);
	json_key(w, "writers");
	json_uint(w, r->writers);
	json_key(w, "block");
	json_uint(w, r->block);
	json_key(w, "written_bytes");
	json_uint(w, r->written);
	json_key(w, "verified_bytes");
	json_uint(w, r->verified);
	json_key(w, "write_s");
	json_fixed(w, r->write_s, 4);
	json_key(w, "read_s");
	json_fixed(w, r->read_s, 4);
	json_key(w, "fsyncs");
	json_uint(w, r->fsyncs);
	json_key(w, "fsync_latencies_capped");
	json_bool(w, r->fsyncs_kept < r->fsyncs);
	json_key(w, "dirsync_max_ms");
	json_fixed(w, r->dirsync_max_ms, 3);
	json_key(w, "meta_ops");
	json_uint(w, r->meta_ops);
	json_key(w, "mismatched_sectors");
	json_uint(w, r->mismatched_sectors);
	json_key(w, "stalls");
	json_uint(w, r->stalls_total);
	json_key(w, "io_errors");
	json_uint(w, r->errors_total);
	json_key(w, "per_writer");
	json_open_array(w);
	for (unsigned i = 0; r->per_writer && i < r->writers; i++) {
		json_open_object(w);
		json_key(w, "writer");
		json_uint(w, i);
		json_key(w, "bytes");
		json_uint(w, r->per_writer[i].bytes);
		num_or_null(w, "write_mib_s", r->per_writer[i].write_mib_s, wr);
		num_or_null(w, "read_mib_s", r->per_writer[i].read_mib_s, rd);
		json_close_object(w);
	}
	json_close_array(w);
}
