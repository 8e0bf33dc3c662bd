/*
 * test_diagnose_logs.c: 'vigil diagnose logs' (src/diagnose/logs.h, logcat.c and
 * src/cmd/diagnose_logs.c): real-shaped lines of several PyTorch and NCCL versions, kernel Xid
 * lines through the Xid catalog, host and rank from the line and the file name, the root chosen
 * as the first error in time when the cascade comes later in other files, files without times,
 * any chunking, megabyte lines; then the command on an attempt directory written the way
 * vigil run writes it (rankout), its JSON parsed back, its exit codes, and bad input: FIFOs,
 * planted links, NUL garbage, a sparse gigabyte file, thousands of rank files under a low
 * descriptor limit.
 */
#include "../harness.h"
#include "../../src/diagnose/logs.h"
#include "../../src/supervise/rankout.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *code_of(const char *line)
{
	static struct dlog_match m;
	return dlog_classify(line, strlen(line), &m) ? m.code : NULL;
}

TEST(diag_logs_known_lines_map_to_causes)
{
	static const struct {
		const char *line, *code;
	} cases[] = {
		/* CUDA out of memory: torch 1.x, 2.x, NCCL's own */
		{ "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.15 GiB "
		  "total capacity; 75.02 GiB already allocated)", "cuda_oom" },
		{ "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB. "
		  "GPU 3 has a total capacity of 79.11 GiB", "cuda_oom" },
		{ "torch.cuda.OutOfMemoryError: CUDA out of memory.", "cuda_oom" },
		{ "n3:4242:4301 [3] NCCL WARN Cuda failure 'out of memory'", "cuda_oom" },
		/* host OOM killer: dmesg, syslog, slurmstepd, srun */
		{ "[12345.678901] Out of memory: Killed process 4242 (python) total-vm:123kB",
		  "host_oom" },
		{ "Dec  1 02:50:59 n3 kernel: python invoked oom-killer: gfp_mask=0x100cca", "host_oom" },
		{ "[  99.1] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task=python",
		  "host_oom" },
		{ "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of your "
		  "processes may have been killed by the cgroup out-of-memory handler.", "host_oom" },
		{ "srun: error: n3: task 5: Out Of Memory", "host_oom" },
		/* NCCL timeouts, PyTorch 1.13, 2.1, 2.4 */
		{ "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation "
		  "timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
		  "1800456 milliseconds before timing out.", "nccl_timeout" },
		{ "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to "
		  "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
		  "corrupted/incomplete data.", "nccl_timeout" },
		{ "[rank0]:[E1201 02:55:01.123456 140 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
		  "caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, "
		  "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600345 milliseconds before "
		  "timing out.", "nccl_timeout" },
		{ "[rank2]:[E1201 02:55:01.2 77 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
		  "0(default_pg) Rank 2] Exception (either an error or timeout) detected by watchdog "
		  "at work: 1234, last enqueued NCCL work: 1235", "nccl_timeout" },
		{ "[rank1]:[E1201 02:55:09 ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor "
		  "timed out! Process will be terminated after dumping debug info.", "nccl_timeout" },
		/* NCCL errors */
		{ "n4:1234:1290 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<5353> with "
		  "error 12, opcode 0, len 0, vendor err 129 (Recv)", "nccl_network" },
		{ "n1:9:9 [1] NCCL WARN Error : ring 0 does not loop back to start", "nccl_error" },
		{ "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
		  "or device error.", "nccl_error" },
		{ "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1"
		  "251, internal error, NCCL version 2.14.3 ncclInternalError: Internal check failed.",
		  "nccl_error" },
		{ "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
		  "remote process exited or there was a network error, NCCL version 2.20.5",
		  "nccl_peer_lost" },
		{ "RuntimeError: NCCL communicator was aborted on rank 3.", "nccl_peer_lost" },
		/* kernel Xid/SXid through the catalog */
		{ "[ 1843.308145] NVRM: Xid (PCI:0000:9b:00): 79, pid=1234, GPU has fallen off the bus.",
		  "xid" },
		{ "Dec  1 02:50:00 n2 kernel: NVRM: Xid (PCI:0000:1b:00): 48, pid=77, DBE (0x1)",
		  "xid" },
		{ "[  77.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 45",
		  "sxid" },
		{ "[  77.1] NVRM: GPU 0000:9b:00.0: GPU has fallen off the bus.", "gpu_off_bus" },
		/* CUDA faults */
		{ "RuntimeError: CUDA error: an illegal memory access was encountered", 
		  "illegal_memory_access" },
		{ "n1:2:3 [0] NCCL WARN Cuda failure 'an illegal memory access was encountered'",
		  "illegal_memory_access" },
		{ "../aten/src/ATen/native/cuda/Indexing.cu:1237: indexSelectLargeIndex: block: "
		  "[0,0,0] Assertion `srcIndex < srcSelectDimSize` failed. RuntimeError: CUDA error: "
		  "device-side assert triggered", "cuda_assert" },
		{ "RuntimeError: CUDA error: uncorrectable ECC error encountered", "cuda_ecc" },
		{ "RuntimeError: CUDA error: unspecified launch failure", "cuda_launch_failure" },
		{ "RuntimeError: CUDA error: no kernel image is available for execution on the device",
		  "cuda_error" },
		/* segfaults */
		{ "Fatal Python error: Segmentation fault", "segfault" },
		{ "/var/spool/slurmd/job12/slurm_script: line 9: 4242 Segmentation fault (core "
		  "dumped) python train.py", "segfault" },
		{ "[ 500.5] python[4242]: segfault at 0 ip 00007f error 4 in libc.so.6", "segfault" },
		{ "torch.distributed.elastic.multiprocessing.api: Signal 11 (SIGSEGV) received by PID "
		  "4242", "segfault" },
		{ "worker exited on signal 11", "segfault" },
		{ "ERROR: Unexpected bus error encountered in worker. This might be caused by "
		  "insufficient shared memory (shm).", "bus_error" },
		/* FSDP */
		{ "[rank1]: Forward order differs from that of the first iteration on rank 1. "
		  "Collectives are unchecked and may give incorrect results or hang.",
		  "forward_order_differs" },
		/* storage and checkpoints */
		{ "OSError: [Errno 5] Input/output error: '/data/shard-00042.bin'", "storage_io_error" },
		{ "OSError: [Errno 116] Stale file handle", "stale_file_handle" },
		{ "OSError: [Errno 28] No space left on device", "disk_full" },
		{ "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 2304 vs "
		  "2200", "checkpoint_write" },
		{ "RuntimeError: PytorchStreamWriter failed writing file data/12: file write failed",
		  "checkpoint_write" },
		{ "ERROR: failed to save checkpoint to /ckpt/step-1200", "checkpoint_write" },
		{ "RuntimeError: [enforce fail at inline_container.cc:222] . PytorchStreamReader "
		  "failed reading zip archive: failed finding central directory",
		  "checkpoint_read" },
		{ "[2026-12-01 02:51:00] Failed to save checkpoint at step 1200", "checkpoint_write" },
		/* cascades and generic errors */
		{ "srun: error: n3: task 5: Killed", "rank_exit" },
		{ "slurmstepd: error: *** STEP 12.0 ON n3 CANCELLED AT 2026-12-01T02:56:00 ***",
		  "rank_exit" },
		{ "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "rank_exit" },
		{ "srun: error: Node failure on n7", "node_failure" },
		{ "ValueError: too many values to unpack (expected 2)", "python_exception" },
		{ "[rank5]: KeyError: 'input_ids'", "python_exception" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *got = code_of(cases[i].line);
		CHECK_MSG(got && !strcmp(got, cases[i].code), "'%s' gave %s, expected %s",
			  cases[i].line, got ? got : "nothing", cases[i].code);
	}
	/* lines every healthy run prints, and words that only look like errors */
	static const char *const no[] = {
		"n1:9:9 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
		"n1:9:9 [0] NCCL WARN NET/Plugin : Plugin load (libnccl-net.so) returned 2 : "
		"libnccl-net.so: cannot open shared object file",
		"step 1200 loss 2.31 lr 3e-4 tokens/s 1.2e6",
		"[rank0]:[W1201 02:50:00 ProcessGroupNCCL.cpp:4115] Warning: TORCH_NCCL_AVOID_RECORD",
		"error_rate 0.0",
		"ValueErrors are fine in prose: not at the start",
		"  the signal 110 handler",
		"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
		"",
		"\x01\x02\xff\xfe",
	};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		CHECK_MSG(!code_of(no[i]), "'%s' gave %s", no[i], code_of(no[i]));
}

TEST(diag_logs_xid_uses_the_catalog)
{
	struct dlog_match m;
	const char *l = "[ 1843.3] NVRM: Xid (PCI:0000:9b:00): 79, pid=1234, GPU has fallen off";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_INT(m.num, 79);
	CHECK_STR(m.cause, "GPU has fallen off the bus");
	CHECK_INT(m.act, ACTION_REBOOT);
	CHECK_INT(m.tier, DLOG_TIER_SPECIFIC);
	/* Xid 45 is the driver cleaning up after another error: a cascade, never the root */
	l = "[ 1843.3] NVRM: Xid (PCI:0000:9b:00): 45, pid=1234, Ch 00000010";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_INT(m.num, 45);
	CHECK_INT(m.tier, DLOG_TIER_CASCADE);
}

TEST(diag_logs_host_and_rank_from_the_line)
{
	struct dlog_match m;
	const char *l = "2026-12-01T02:51:00.703Z [rank3]: torch.OutOfMemoryError: CUDA out of memory";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_INT(m.rank, 3);
	CHECK_STR(m.host, "");
	l = "gpu-node-17:4242:4301 [6] NCCL WARN Cuda failure 'out of memory'";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_STR(m.host, "gpu-node-17");
	CHECK_INT(m.rank, -1); /* [6] is NCCL's CUDA device, not a rank */
	l = "[E ProcessGroupNCCL.cpp:475] [Rank 12] Watchdog caught collective operation timeout";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_INT(m.rank, 12);
	l = "2026-12-01T02:56:00.001Z srun: error: n3: task 5: Killed";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_STR(m.host, "n3");
	CHECK_INT(m.rank, 5);
	l = " 7: RuntimeError: CUDA error: an illegal memory access was encountered";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_INT(m.rank, 7);
	l = "Dec  1 02:50:00 gpu-b kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=77, off the bus";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_STR(m.host, "gpu-b");
	/* a host name with a shell escape in it is not taken */
	l = "\x1b[31mevil:1:2 [0] NCCL WARN Error : x";
	CHECK(dlog_classify(l, strlen(l), &m));
	CHECK_STR(m.host, "");
}

TEST(diag_logs_host_and_rank_from_the_file_name)
{
	char host[DLOG_HOST_MAX];
	long rank;
	dlog_name_origin("run/attempt-2/rank-13.err", host, &rank);
	CHECK_INT(rank, 13);
	CHECK_STR(host, "");
	dlog_name_origin("logs/gpu-node-7.log", host, &rank);
	CHECK_STR(host, "gpu-node-7");
	CHECK_INT(rank, -1);
	static const char *const generic[] = { "srun.log", "kern.log", "train.log", "x/dmesg.log",
					       "slurm-1234.log", "notes.txt", ".log" };
	for (size_t i = 0; i < ARRAY_SIZE(generic); i++) {
		dlog_name_origin(generic[i], host, &rank);
		CHECK_MSG(!host[0] && rank == -1, "'%s' gave host '%s' rank %ld", generic[i], host,
			  rank);
	}
	dlog_name_origin("rank-12x.out", host, &rank);
	CHECK_INT(rank, -1);
}

struct file_in {
	const char *name, *text;
};

static void run_files(struct dlog *d, const struct file_in *f, size_t nr, size_t chunk)
{
	dlog_init(d);
	for (size_t i = 0; i < nr; i++) {
		char host[DLOG_HOST_MAX];
		long rank;
		dlog_name_origin(f[i].name, host, &rank);
		dlog_file_begin(d, f[i].name, host, rank);
		size_t n = strlen(f[i].text);
		for (size_t off = 0; off < n; off += chunk)
			dlog_feed(d, f[i].text + off, n - off < chunk ? n - off : chunk);
		dlog_file_end(d, NULL);
	}
	dlog_finish(d);
}

static const struct dlog_finding *by_code(const struct dlog *d, const char *code)
{
	for (size_t i = 0; i < d->nr; i++)
		if (!strcmp(d->f[i].code, code))
			return &d->f[i];
	return NULL;
}

/* A rank's CUDA OOM, then every other rank's NCCL timeout ten minutes later; the victims'
 * files come first. */
static const struct file_in oom_cascade[] = {
	{ "attempt-1/rank-0.err",
	  "2026-12-01T02:50:00.000Z step 1200 loss 2.31\n"
	  "2026-12-01T03:01:00.120Z [rank0]:[E1201 03:01:00.1 1 ProcessGroupNCCL.cpp:616] [Rank 0] "
	  "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran "
	  "for 600345 milliseconds before timing out.\n"
	  "2026-12-01T03:01:00.500Z [rank0]: torch.distributed.DistBackendError: NCCL "
	  "communicator was aborted on rank 0.\n" },
	{ "attempt-1/rank-1.err",
	  "2026-12-01T03:01:00.130Z [rank1]:[E1201 03:01:00.1 1 ProcessGroupNCCL.cpp:616] [Rank 1] "
	  "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran "
	  "for 600345 milliseconds before timing out.\n" },
	{ "attempt-1/rank-3.err",
	  "2026-12-01T02:50:59.900Z Traceback (most recent call last):\n"
	  "2026-12-01T02:50:59.901Z   File \"train.py\", line 88, in <module>\n"
	  "2026-12-01T02:51:00.703Z [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
	  "allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB\n" },
	{ "attempt-1/srun.log", "2026-12-01T03:01:05.000Z srun: error: n2: task 3: Exited with "
				"exit code 1\n" },
};

TEST(diag_logs_root_is_the_first_error_not_the_cascade)
{
	struct dlog d;
	run_files(&d, oom_cascade, ARRAY_SIZE(oom_cascade), 1u << 20);
	CHECK(d.root == 0);
	CHECK_STR(d.f[0].code, "cuda_oom");
	CHECK_INT(d.f[0].first.rank, 3);
	CHECK_STR(d.files[d.f[0].first.file].name, "attempt-1/rank-3.err");
	CHECK_INT(d.f[0].first.line, 3);
	/* rank 3's host, learned from srun's "n2: task 3" line */
	CHECK_STR(d.f[0].first.host, "n2");
	CHECK(d.f[0].nr_hosts == 1 && !strcmp(d.f[0].hosts[0], "n2"));
	CHECK(!d.unknown_times);
	const struct dlog_finding *t = by_code(&d, "nccl_timeout");
	CHECK(t && t->count == 2 && t->nr_ranks == 2 && t->ranks[0] == 0 && t->ranks[1] == 1);
	const struct dlog_finding *x = by_code(&d, "rank_exit");
	CHECK(x && x->nr_hosts == 1 && !strcmp(x->hosts[0], "n2") && x->ranks[0] == 3);
	/* the others follow in time order */
	CHECK_STR(d.f[1].code, "nccl_timeout");
	CHECK_STR(d.f[2].code, "nccl_peer_lost");
	CHECK_STR(d.f[3].code, "rank_exit");

	struct strbuf out = STRBUF_INIT;
	dlog_write_text(&d, &out);
	CHECK_CONTAINS(out.buf, "likely root: a GPU ran out of memory");
	CHECK_CONTAINS(out.buf, "host n2, rank 3, at 2026-12-01T02:51:00.703Z");
	/* milliseconds as written (03:01:00.120 is 1796094060.11999... in a double) */
	CHECK_CONTAINS(out.buf, "first 2026-12-01T03:01:00.120Z attempt-1/rank-0.err:2");
	CHECK_CONTAINS(out.buf, "attempt-1/rank-3.err:3");
	CHECK_CONTAINS(out.buf, "(cascade)");
	dlog_release(&d);

	/* the same bytes a byte at a time give the same answer */
	run_files(&d, oom_cascade, ARRAY_SIZE(oom_cascade), 1);
	CHECK_STR(d.f[0].code, "cuda_oom");
	CHECK_INT(d.f[0].first.line, 3);
	CHECK_INT(by_code(&d, "nccl_timeout")->count, 2);
	dlog_release(&d);
	strbuf_release(&out);
}

TEST(diag_logs_specific_error_wins_within_seconds_of_a_generic_one)
{
	/* a peer's NCCL WARN printed half a second before the rank's own OOM reached its file */
	static const struct file_in f[] = {
		{ "a/rank-0.err", "2026-12-01T02:51:00.200Z n1:1:2 [0] NCCL WARN Error : peer hung up\n" },
		{ "a/rank-1.err", "2026-12-01T02:51:00.700Z CUDA out of memory\n" },
	};
	struct dlog d;
	run_files(&d, f, 2, 4096);
	CHECK_STR(d.f[0].code, "cuda_oom");
	CHECK_CONTAINS(d.root_why, "within seconds");
	dlog_release(&d);
	/* ... but a generic error minutes earlier is the root */
	static const struct file_in g[] = {
		{ "a/rank-0.err", "2026-12-01T02:41:00.200Z ValueError: bad shard\n" },
		{ "a/rank-1.err", "2026-12-01T02:51:00.700Z CUDA out of memory\n" },
	};
	run_files(&d, g, 2, 4096);
	CHECK_STR(d.f[0].code, "python_exception");
	CHECK_STR(d.root_why, "the earliest error in time");
	dlog_release(&d);
}

TEST(diag_logs_files_without_times_are_ordered_within_themselves)
{
	/* a kernel log saved without stamps, given after the ranks' stamped timeouts */
	static const struct file_in f[] = {
		{ "rank-0.err", "2026-12-01T03:01:00.120Z [Rank 0] Watchdog caught collective "
				"operation timeout\n" },
		{ "gpu-b.log", "some line\nNVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off "
			       "the bus.\nNVRM: Xid (PCI:0000:9b:00): 45, pid=1, Ch 0\n" },
	};
	struct dlog d;
	run_files(&d, f, 2, 7);
	CHECK(d.unknown_times);
	CHECK_STR(d.f[0].code, "xid");
	CHECK_INT(d.f[0].num, 79);
	CHECK_STR(d.f[0].first.host, "gpu-b");
	CHECK_INT(d.f[0].first.line, 2);
	CHECK_CONTAINS(d.root_why, "cannot be compared");
	struct strbuf out = STRBUF_INIT;
	dlog_write_text(&d, &out);
	CHECK_CONTAINS(out.buf, "Xid 79: GPU has fallen off the bus");
	CHECK_CONTAINS(out.buf, "note: gpu-b.log: no time stamps, ordered within the file only");
	dlog_release(&d);
	strbuf_release(&out);

	/* no times anywhere: the most specific error first in the order given */
	static const struct file_in g[] = {
		{ "x.txt", "[Rank 0] Watchdog caught collective operation timeout\n" },
		{ "y.txt", "hello\nRuntimeError: CUDA error: an illegal memory access was "
			   "encountered\n" },
	};
	run_files(&d, g, 2, 3);
	CHECK_STR(d.f[0].code, "illegal_memory_access");
	CHECK_CONTAINS(d.root_why, "no comparable time stamps");
	dlog_release(&d);
}

TEST(diag_logs_vigil_stamps_read_fast_agree_with_the_kernel_log_reader)
{
	/* the day kept from one line serves the next; a new day goes through the general reader */
	static const struct file_in f[] = {
		{ "rank-0.err", "2026-12-31T23:59:58.001Z step 1\n"
				"2026-12-31T23:59:59.999Z Segmentation fault\n"
				"2027-01-01T00:00:00.250Z CUDA out of memory\n"
				"2027-01-01T00:00:01.5Z Bus error\n" },
	};
	struct dlog d;
	char t[48];
	run_files(&d, f, 1, 4096);
	CHECK_INT(d.nr, 3);
	dlog_time_str(d.f[0].first.tb, d.f[0].first.ts, t, sizeof(t));
	CHECK_STR(t, "2026-12-31T23:59:59.999Z");
	dlog_time_str(d.f[1].first.tb, d.f[1].first.ts, t, sizeof(t));
	CHECK_STR(t, "2027-01-01T00:00:00.250Z");
	dlog_time_str(d.f[2].first.tb, d.f[2].first.ts, t, sizeof(t));
	CHECK_STR(t, "2027-01-01T00:00:01.500Z");
	dlog_release(&d);
}

TEST(diag_logs_interleaved_ranks_of_one_srun_label_file)
{
	/* srun --label output as Slurm keeps it (slurm-JOB.out): no stamps, ranks interleaved */
	static const struct file_in f[] = {
		{ "slurm-812.out",
		  " 0: step 10 loss 2.0\n"
		  " 2: step 10 loss 2.1\n"
		  " 2: Traceback (most recent call last):\n"
		  " 1: step 11 loss 2.0\n"
		  " 2:   File \"train.py\", line 88, in <module>\n"
		  " 2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
		  " 3: [E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: "
		  "WorkNCCL(SeqNum=9, OpType=ALLREDUCE)\n"
		  " 0: [E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout\n"
		  "10: [E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout\n"
		  "srun: error: gpu-a: task 2: Exited with exit code 1\n" },
	};
	struct dlog d;
	run_files(&d, f, 1, 5);
	CHECK(d.unknown_times);
	CHECK_STR(d.f[0].code, "cuda_oom");
	CHECK_INT(d.f[0].first.rank, 2);
	CHECK_INT(d.f[0].first.line, 6);
	/* not from srun's line about task 2: in an unlabelled file any rank can print that line
	 * (issue 17); a host comes from where the file is */
	CHECK_STR(d.f[0].first.host, "");
	const struct dlog_finding *t = by_code(&d, "nccl_timeout");
	CHECK(t && t->count == 3 && t->nr_ranks == 3);
	CHECK(t->ranks[0] == 0 && t->ranks[1] == 3 && t->ranks[2] == 10);
	struct strbuf out = STRBUF_INIT;
	dlog_write_text(&d, &out);
	CHECK_CONTAINS(out.buf, "ranks 0,3,10");
	CHECK_CONTAINS(out.buf, "note: slurm-812.out: no time stamps");
	strbuf_release(&out);
	dlog_release(&d);
}

TEST(diag_logs_megabyte_lines_and_truncated_files)
{
	struct dlog d;
	size_t big = 3u << 20;
	char *line = xmalloc(big);
	memset(line, 'x', big);
	memcpy(line, "CUDA out of memory ", 19);
	dlog_init(&d);
	dlog_file_begin(&d, "rank-2.err", "", 2);
	for (size_t off = 0; off < big; off += 65536)
		dlog_feed(&d, line + off, 65536);
	/* an error past the judged head of a long line is not seen (the documented bound) */
	dlog_feed(&d, "Segmentation fault\n", 19);
	/* the next line is judged, its number right; the file ends mid-line (truncated) */
	const char *tail = "ok\nRuntimeError: CUDA error: an illegal memory access was enc";
	dlog_feed(&d, tail, strlen(tail));
	dlog_file_end(&d, NULL);
	dlog_finish(&d);
	free(line);
	CHECK_INT(d.nr, 2);
	CHECK_STR(d.f[0].code, "cuda_oom");
	CHECK_INT(d.f[0].first.line, 1);
	CHECK(strlen(d.f[0].first.example) <= DLOG_EXAMPLE_MAX);
	CHECK_STR(d.f[1].code, "illegal_memory_access");
	CHECK_INT(d.f[1].first.line, 3);
	CHECK_INT(d.files[0].cut_lines, 1);
	CHECK_INT(d.files[0].lines, 3);
	CHECK(!by_code(&d, "segfault"));
	dlog_release(&d);
}

TEST(diag_logs_output_quotes_outside_text_safely)
{
	static const struct file_in f[] = {
		{ "rank-0.err", "CUDA out of memory \x1b]0;pwned\x07 \xff\xfe\r\n" },
	};
	struct dlog d;
	struct strbuf out = STRBUF_INIT;
	run_files(&d, f, 1, 64);
	dlog_write_text(&d, &out);
	CHECK_NOT_CONTAINS(out.buf, "\x1b");
	CHECK_NOT_CONTAINS(out.buf, "\x07");
	CHECK_CONTAINS(out.buf, "\\x1b");
	CHECK_NOT_CONTAINS(out.buf, "\\x0d"); /* CRLF line ends are no part of the quote */
	strbuf_reset(&out);
	dlog_write_json(&d, &out);
	struct strbuf err = STRBUF_INIT;
	struct json_value *v = json_parse(out.buf, out.len, &err);
	CHECK_MSG(v, "JSON does not parse: %s", err.buf);
	CHECK_CONTAINS(json_get_string(json_get(v, "root"), "example"), "CUDA out of memory");
	json_free(v);
	dlog_release(&d);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* ---- the command ---- */

static int run_logs(struct child *c, const char *const *args)
{
	const char *argv[16] = { "diagnose", "logs" };
	size_t n = 2;
	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	test_run_vigil(c, argv, NULL);
	CHECK_MSG(c->exited, "vigil diagnose logs did not exit: %s", c->err.buf);
	return c->exit_code;
}

/* RUN/attempt-K written through vigil run's own rank output splitter. */
static void write_attempt(const char *run, unsigned k, const char *const *chunks, double t0)
{
	struct strbuf dir = STRBUF_INIT, err = STRBUF_INIT;
	struct rankout ro;
	strbuf_addf(&dir, "attempt-%u", k);
	test_mkdir(run, dir.buf);
	strbuf_reset(&dir);
	strbuf_addf(&dir, "%s/attempt-%u", run, k);
	CHECK_MSG(rankout_open(&ro, dir.buf, 8, NULL, NULL, &err) == 0, "%s", err.buf);
	for (size_t i = 0; chunks[i]; i++)
		rankout_feed(&ro, 2, chunks[i], strlen(chunks[i]), t0 + (double)i, (double)i);
	rankout_finish(&ro);
	rankout_close(&ro);
	strbuf_release(&dir);
	strbuf_release(&err);
}

TEST(diag_logs_cli_reads_a_vigil_run_directory)
{
	struct strbuf run = STRBUF_INIT;
	struct child c;
	strbuf_addf(&run, "%s/run", test_tmpdir());
	test_mkdir(test_tmpdir(), "run");
	/* attempt 1: a segfault on rank 1; attempt 2: rank 3's OOM, then the others time out */
	const char *a1[] = { "1: Fatal Python error: Segmentation fault\n", NULL };
	const char *a2[] = {
		"0: step 10 loss 2.0\n3: step 10 loss 2.1\n",
		" 3: Traceback (most recent call last):\n 3: torch.OutOfMemoryError: CUDA out of memo",
		"ry. Tried to allocate 2.00 GiB\n",
		"0: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)\n"
		"1: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)\n",
		"srun: error: n2: task 3: Exited with exit code 1\n",
		NULL,
	};
	write_attempt(run.buf, 1, a1, 1796090000.0);
	write_attempt(run.buf, 2, a2, 1796093600.0);

	const char *args[] = { "--json", run.buf, NULL };
	CHECK_INT(run_logs(&c, args), 1);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *root = json_get(v, "root");
	CHECK_STR(json_get_string(root, "code"), "cuda_oom");
	double rank;
	CHECK(json_get_number(root, "rank", &rank) && rank == 3);
	CHECK(ends_with(json_get_string(root, "file"), "/attempt-2/rank-3.err"));
	CHECK_STR(json_get_string(root, "action_code"), "FIX_CONFIG");
	CHECK(json_get_string(root, "time") != NULL);
	const struct json_value *fs = json_get(v, "findings");
	CHECK(fs && fs->type == JSON_ARRAY && fs->nr == 3);
	CHECK_STR(json_get_string(fs->items[1], "code"), "nccl_timeout");
	CHECK(json_path(fs->items[1], "cascade")->boolean);
	CHECK(json_get_number(fs->items[1], "count", &rank) && rank == 2);
	CHECK_INT(json_get(fs->items[1], "ranks")->nr, 2);
	CHECK_STR(json_get_string(json_get(fs->items[2], "first"), "host"), "n2");
	/* the last attempt only: no segfault from attempt 1 */
	CHECK_NOT_CONTAINS(c.out.buf, "segfault");
	CHECK(json_get(v, "unknown_times")->type == JSON_BOOL && !json_get(v, "unknown_times")->boolean);
	const struct json_value *files = json_get(v, "files");
	CHECK(files && files->nr == 4); /* rank-0.err, rank-1.err, rank-3.err, srun.log */
	json_free(v);
	child_release(&c);

	/* --all: every attempt */
	const char *all[] = { "--all", run.buf, NULL };
	CHECK_INT(run_logs(&c, all), 1);
	CHECK_CONTAINS(c.out.buf, "segfault");
	CHECK_CONTAINS(c.out.buf, "likely root: a process crashed with a segmentation fault");
	child_release(&c);

	/* an attempt directory directly, text for a person */
	strbuf_addstr(&run, "/attempt-2");
	const char *one[] = { run.buf, NULL };
	CHECK_INT(run_logs(&c, one), 1);
	CHECK_CONTAINS(c.out.buf, "likely root: a GPU ran out of memory (CUDA out of memory)");
	CHECK_CONTAINS(c.out.buf, "rank 3");
	CHECK_CONTAINS(c.out.buf, "action: lower the micro-batch");
	child_release(&c);
	strbuf_release(&run);
}

TEST(diag_logs_cli_exit_codes_and_bad_input)
{
	const char *dir = test_tmpdir();
	char clean[512], junk_p[512], missing[512], fifo[512], n9[512], empty[512];
	struct child c;
	snprintf(clean, sizeof(clean), "%s/clean.log", dir);
	snprintf(junk_p, sizeof(junk_p), "%s/junk.bin", dir);
	snprintf(missing, sizeof(missing), "%s/nope.log", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(n9, sizeof(n9), "%s/n9.log", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	/* nothing known: 0 */
	test_write(dir, "clean.log", "step 1 loss 2.0\nstep 2 loss 1.9\n");
	const char *a_clean[] = { clean, NULL };
	CHECK_INT(run_logs(&c, a_clean), 0);
	CHECK_CONTAINS(c.out.buf, "no known error lines in 1 file");
	child_release(&c);
	/* NUL-filled and binary garbage: not text, so "could not tell" by name, never "no known
	 * error lines" (issue 23; test_diagnose_logs_binary.c has the rest) */
	static char junk[70000];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i % 7 ? 0 : (i * 131) & 0xff);
	test_write_bytes(dir, "junk.bin", junk, sizeof(junk));
	const char *a_junk[] = { junk_p, NULL };
	CHECK_INT(run_logs(&c, a_junk), 3);
	CHECK_CONTAINS(c.out.buf, "junk.bin' is not text");
	child_release(&c);
	/* a missing file: unknown, named */
	const char *a_missing[] = { missing, NULL };
	CHECK_INT(run_logs(&c, a_missing), 3);
	CHECK_CONTAINS(c.out.buf, "nope.log: unknown: cannot read");
	child_release(&c);
	/* a FIFO: refused at once, never waited on */
	CHECK(mkfifo(fifo, 0600) == 0);
	const char *a_fifo[] = { "--json", fifo, NULL };
	CHECK_INT(run_logs(&c, a_fifo), 3);
	CHECK_CONTAINS(c.out.buf, "a FIFO, not a regular file");
	child_release(&c);
	/* errors found in one file and another unreadable: 1, the other named */
	test_write(dir, "n9.log", "Out of memory: Killed process 4242 (python)\n");
	const char *a_mixed[] = { n9, fifo, NULL };
	CHECK_INT(run_logs(&c, a_mixed), 1);
	CHECK_CONTAINS(c.out.buf, "host n9");
	CHECK_CONTAINS(c.out.buf, "fifo: unknown");
	child_release(&c);
	/* usage */
	const char *none[] = { NULL };
	CHECK_INT(run_logs(&c, none), 2);
	child_release(&c);
	const char *bad[] = { "--bogus", n9, NULL };
	CHECK_INT(run_logs(&c, bad), 2);
	child_release(&c);
	const char *help[] = { "--help", NULL };
	CHECK_INT(run_logs(&c, help), 0);
	CHECK_CONTAINS(c.out.buf, "Exit status");
	child_release(&c);
	/* a directory that is no run: unknown */
	test_mkdir(dir, "empty");
	const char *a_empty[] = { empty, NULL };
	CHECK_INT(run_logs(&c, a_empty), 3);
	CHECK_CONTAINS(c.out.buf, "neither a vigil run attempt");
	child_release(&c);
}

TEST(diag_logs_cli_does_not_follow_links_planted_in_a_run)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT, t = STRBUF_INIT;
	struct child c;
	test_write(dir, "secret", "CUDA out of memory: the secret file\n");
	test_write(dir, "a/rank-0.err", "2026-12-01T02:50:00.000Z step 1\n");
	strbuf_addf(&p, "%s/a/rank-1.err", dir);
	strbuf_addf(&t, "%s/secret", dir);
	CHECK(symlink(t.buf, p.buf) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/a", dir);
	const char *args[] = { p.buf, NULL };
	CHECK_INT(run_logs(&c, args), 3);
	CHECK_NOT_CONTAINS(c.out.buf, "secret file");
	CHECK_CONTAINS(c.out.buf, "rank-1.err: unknown: cannot read");
	CHECK_CONTAINS(c.out.buf, "symbolic link");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&t);
}

TEST_TIMEOUT(diag_logs_cli_streams_a_gigabyte_in_bounded_memory, 240)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	struct child c;
	struct rusage ru;
	strbuf_addf(&p, "%s/big.log", dir);
	/* a sparse 1 GiB of NULs with an error at its very end */
	int fd = open(p.buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	const char tail[] = "\n2026-12-01T02:51:00.703Z CUDA out of memory at the end\n";
	CHECK(pwrite(fd, tail, sizeof(tail) - 1, (1ll << 30) - (off_t)sizeof(tail)) > 0);
	close(fd);
	const char *args[] = { "--json", p.buf, NULL };
	CHECK_INT(run_logs(&c, args), 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_get(v, "root"), "code"), "cuda_oom");
	CHECK_STR(json_get_string(json_get(v, "root"), "time"), "2026-12-01T02:51:00.703Z");
	double line;
	CHECK(json_get_number(json_get(v, "root"), "line", &line) && line == 2);
	json_free(v);
	child_release(&c);
	/* the largest child so far: far below the file's size */
	CHECK(getrusage(RUSAGE_CHILDREN, &ru) == 0);
	CHECK_MSG(ru.ru_maxrss < 256 * 1024, "max RSS %ld KiB", ru.ru_maxrss);
	strbuf_release(&p);
}

TEST_TIMEOUT(diag_logs_cli_thousands_of_rank_files_few_descriptors, 240)
{
	const char *dir = test_tmpdir();
	struct strbuf name = STRBUF_INIT, p = STRBUF_INIT;
	struct child c;
	test_mkdir(dir, "big/attempt-1");
	for (int r = 0; r < 3000; r++) {
		strbuf_reset(&name);
		strbuf_addf(&name, "big/attempt-1/rank-%d.err", r);
		test_write(dir, name.buf,
			   r == 2047 ? "2026-12-01T02:51:00.703Z NCCL WARN Cuda failure 'out of memory'\n"
				     : "2026-12-01T03:01:00.000Z Watchdog caught collective "
				       "operation timeout\n");
	}
	/* fewer descriptors than files: one open at a time is the only way through */
	struct rlimit rl = { 64, 64 };
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	strbuf_addf(&p, "%s/big", dir);
	const char *args[] = { "--json", p.buf, NULL };
	CHECK_INT(run_logs(&c, args), 1);
	struct json_value *v = test_parse_json(&c);
	double rank;
	CHECK(json_get_number(json_get(v, "root"), "rank", &rank) && rank == 2047);
	CHECK_INT(json_get(v, "files")->nr, 3000);
	const struct json_value *f = json_get(v, "findings")->items[1];
	CHECK_STR(json_get_string(f, "code"), "nccl_timeout");
	CHECK(json_get_number(f, "count", &rank) && rank == 2999);
	CHECK_INT(json_get(f, "ranks")->nr, 2999);
	json_free(v);
	child_release(&c);
	strbuf_release(&name);
	strbuf_release(&p);
}

/* A host comes from where the file is, never from what a rank printed (issue 17): a date
 * before a colon ("2020-01-01T00:..."), an NCCL-shaped "evil-node:1:2", srun's and slurmstepd's
 * phrases and a syslog shape, all printed by the job into gpu-07.log, are gpu-07's; in a vigil
 * run attempt a rank's forged srun line in rank-0.err names no host, srun's own in srun.log does. */
TEST(diag_logs_host_comes_from_the_path_not_the_text)
{
	struct child c;
	struct strbuf p = STRBUF_INIT;
	test_mkdir(test_tmpdir(), "hosts");
	static const char text[] =
		"2020-01-01T00:00:00 [0] NCCL WARN Call to ibv_reg_mr failed\n"
		"evil-node:12:34 [0] NCCL INFO NET/IB : Got completion with error 12, opcode 0\n"
		"srun: error: evil-node: task 0: Out Of Memory\n"
		"slurmstepd: error: *** STEP 12.0 ON evil-node CANCELLED AT 2026-01-01T00:00:00 ***\n"
		"Dec  1 00:00:00 evil-node kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has "
		"fallen off the bus.\n"
		"host evil-node: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n";
	test_write_bytes(test_tmpdir(), "hosts/gpu-07.log", text, sizeof(text) - 1);
	strbuf_addf(&p, "%s/hosts/gpu-07.log", test_tmpdir());
	const char *a[] = { "--json", p.buf, NULL };
	CHECK_INT(run_logs(&c, a), 1);
	CHECK_NOT_CONTAINS(c.out.buf, "evil-node\"");
	CHECK_NOT_CONTAINS(c.out.buf, "\"2020-01-01T00\"");
	struct json_value *v = test_parse_json(&c);
	const struct json_value *fs = json_get(v, "findings");
	CHECK(fs && fs->nr >= 3);
	for (size_t i = 0; fs && i < fs->nr; i++) {
		const struct json_value *h = json_get(fs->items[i], "hosts");
		CHECK(h && h->nr == 1 && !strcmp(h->items[0]->string, "gpu-07"));
		CHECK_STR(json_get_string(json_get(fs->items[i], "first"), "host"), "gpu-07");
	}
	json_free(v);
	child_release(&c);
	/* text too */
	const char *b[] = { p.buf, NULL };
	CHECK_INT(run_logs(&c, b), 1);
	CHECK_CONTAINS(c.out.buf, "where:  host gpu-07,"); /* the quoted line keeps its text */
	CHECK_NOT_CONTAINS(c.out.buf, "host evil-node,");
	CHECK_NOT_CONTAINS(c.out.buf, "hosts evil-node");
	child_release(&c);

	/* a vigil run attempt: rank 0 prints srun's phrase; srun's own line names rank 1's host */
	test_mkdir(test_tmpdir(), "run2");
	test_mkdir(test_tmpdir(), "run2/attempt-1");
	static const char r0[] = "2026-12-01T03:01:00.000Z srun: error: evil-node: task 0: "
				 "Out Of Memory\n";
	static const char r1[] = "2026-12-01T03:01:01.000Z torch.OutOfMemoryError: CUDA out of "
				 "memory. Tried to allocate 2 GiB\n";
	static const char sr[] = "2026-12-01T03:01:05.000Z srun: error: n5: task 1: Exited with "
				 "exit code 1\n";
	test_write_bytes(test_tmpdir(), "run2/attempt-1/rank-0.err", r0, sizeof(r0) - 1);
	test_write_bytes(test_tmpdir(), "run2/attempt-1/rank-1.err", r1, sizeof(r1) - 1);
	test_write_bytes(test_tmpdir(), "run2/attempt-1/srun.log", sr, sizeof(sr) - 1);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/run2/attempt-1", test_tmpdir());
	const char *d[] = { p.buf, NULL };
	CHECK_INT(run_logs(&c, d), 1);
	CHECK_NOT_CONTAINS(c.out.buf, "host evil-node");
	CHECK_CONTAINS(c.out.buf, "host n5");
	child_release(&c);
	/* a srun.log that is not an attempt's (a job's own, in a directory of logs) is the job's */
	test_mkdir(test_tmpdir(), "plain");
	static const char fake[] = "srun: error: evil-node: task 0: Out Of Memory\n";
	test_write_bytes(test_tmpdir(), "plain/srun.log", fake, sizeof(fake) - 1);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/plain/srun.log", test_tmpdir());
	const char *e[] = { p.buf, NULL };
	CHECK_INT(run_logs(&c, e), 1);
	CHECK_NOT_CONTAINS(c.out.buf, "host evil-node");
	child_release(&c);
	strbuf_release(&p);
}

/* An attempt directory that is a symbolic link is said to be one, not followed; it was "Not a
 * directory" (O_NOFOLLOW with O_DIRECTORY), which misleads about what is there. */
TEST(diag_logs_attempt_dir_that_is_a_link_is_named_as_one)
{
	struct child c;
	struct strbuf p = STRBUF_INIT, t = STRBUF_INIT;
	static const char oom[] = "torch.OutOfMemoryError: CUDA out of memory. Tried 2 GiB\n";
	test_mkdir(test_tmpdir(), "lrun");
	test_mkdir(test_tmpdir(), "lrun/attempt-1");
	test_write_bytes(test_tmpdir(), "lrun/attempt-1/rank-0.err", oom, sizeof(oom) - 1);
	strbuf_addf(&t, "%s/lrun/attempt-1", test_tmpdir());
	strbuf_addf(&p, "%s/lrun/attempt-2", test_tmpdir());
	CHECK(symlink(t.buf, p.buf) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/lrun", test_tmpdir());
	const char *a[] = { p.buf, NULL };
	CHECK_INT(run_logs(&c, a), 3);
	CHECK_CONTAINS(c.out.buf, "attempt-2': it is a symbolic link (not followed inside a run "
				  "directory)");
	CHECK_NOT_CONTAINS(c.out.buf, "Not a directory");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&t);
}
