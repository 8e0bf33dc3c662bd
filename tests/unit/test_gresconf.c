/*
 * test_gresconf.c: the slurm.conf / gres.conf parser (src/logs/gresconf.c) on the line shapes of
 * tests/data/realworld/gres.md, and the gpu check's use of its answer (evaluate on built readings).
 */
#include "../harness.h"
#include "../../src/logs/gresconf.h"
#include "../../src/checks/gpu.h"

static int node_gpus(const char *text, const char *node, uint64_t *gpus, struct strbuf *err)
{
	struct gresconf_answer a;
	gresconf_answer_init(&a);
	int r = slurmconf_node_gpus(text, strlen(text), node, &a, err);
	*gpus = a.found == GRESCONF_NODE_FOUND ? a.gpus : 999;
	gresconf_answer_release(&a);
	return r;
}

TEST(gresconf_hostlist_match)
{
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(hostlist_match("gpu[001-512]", "gpu017", &err), 1);
	CHECK_INT(hostlist_match("gpu[001-512]", "gpu17", &err), 0);   /* padded to 3 */
	CHECK_INT(hostlist_match("gpu[001-512]", "gpu513", &err), 0);
	CHECK_INT(hostlist_match("n[1-12]", "n12", &err), 1);
	CHECK_INT(hostlist_match("n[1-12]", "n012", &err), 0);
	CHECK_INT(hostlist_match("a[01-04,07],b[1-12]", "a07", &err), 1);
	CHECK_INT(hostlist_match("a[01-04,07],b[1-12]", "a05", &err), 0);
	CHECK_INT(hostlist_match("a[01-04,07],b[1-12]", "b9", &err), 1);
	CHECK_INT(hostlist_match("r[1-2]n[01-16]", "r2n16", &err), 1);
	CHECK_INT(hostlist_match("r[1-2]n[01-16]", "r3n16", &err), 0);
	CHECK_INT(hostlist_match("login1", "LOGIN1", &err), 1);
	CHECK_INT(hostlist_match("gpu[001-064", "gpu001", &err), -1);
	CHECK_CONTAINS(err.buf, "unbalanced '['");
	CHECK_INT(hostlist_match("gpu[9-1]", "gpu5", &err), -1);
	CHECK_INT(hostlist_match("gpu[a-b]", "gpu5", &err), -1);
	CHECK_INT(hostlist_match("a,,b", "a", &err), -1);
	/* a hostile expression ends in bounded time, one way or the other */
	CHECK(hostlist_match("[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]", "1111111111111111111",
			     &err) <= 0);
	strbuf_release(&err);
}

TEST(gresconf_gres_values)
{
	struct strbuf err = STRBUF_INIT;
	uint64_t n;
	CHECK_INT(gres_value_gpus("gpu:8", &n, &err), 0);
	CHECK_INT((int)n, 8);
	CHECK_INT(gres_value_gpus("gpu:h100:8", &n, &err), 0);
	CHECK_INT((int)n, 8);
	CHECK_INT(gres_value_gpus("gpu:a100:2,gpu:v100:2,nvme:1", &n, &err), 0);
	CHECK_INT((int)n, 4);
	CHECK_INT(gres_value_gpus("gpu:8(S:0-1)", &n, &err), 0); /* scontrol show node */
	CHECK_INT((int)n, 8);
	CHECK_INT(gres_value_gpus("gpu:h200:4(S:0),gpu:h200:4(S:1)", &n, &err), 0);
	CHECK_INT((int)n, 8);
	CHECK_INT(gres_value_gpus("gpu", &n, &err), 0);
	CHECK_INT((int)n, 1);
	CHECK_INT(gres_value_gpus("gpu:tesla", &n, &err), 0);
	CHECK_INT((int)n, 1);
	CHECK_INT(gres_value_gpus("mps:400,shard:64", &n, &err), 0);
	CHECK_INT((int)n, 0);
	CHECK_INT(gres_value_gpus("(null)", &n, &err), 0);
	CHECK_INT((int)n, 0);
	CHECK_INT(gres_value_gpus("gpu:8x", &n, &err), -1);
	CHECK_INT(gres_value_gpus("gpu:8,", &n, &err), -1);
	CHECK_INT(gres_value_gpus("gpu:", &n, &err), -1);
	CHECK_INT(gres_value_gpus("gpu:8(S:0", &n, &err), -1);
	CHECK_INT(gres_value_gpus(":8", &n, &err), -1);
	CHECK_INT(gres_value_gpus("gpu:99999999", &n, &err), -1);
	strbuf_release(&err);
}

TEST(gresconf_slurm_conf_lines)
{
	struct strbuf err = STRBUF_INIT;
	uint64_t n;
	const char *conf = "ClusterName=c\n"
			   "# NodeName=gpu[001-512] Gres=gpu:1\n"
			   "NodeName=DEFAULT CPUs=64 Gres=gpu:4\n"
			   "NodeName=gpu[001-008] RealMemory=1000 # defaults: gpu:4\r\n"
			   "NodeName=gpu[009-016] CPUs=64 \\\n"
			   "   Gres=gpu:h100:8 State=UNKNOWN\n"
			   "NodeName=DEFAULT Gres=\n"
			   "NodeName=cpu[1-4] Feature=\"a b\"\n"
			   "PartitionName=p Nodes=ALL\n";
	CHECK_INT(node_gpus(conf, "gpu003", &n, &err), 0);
	CHECK_INT((int)n, 4);
	CHECK_INT(node_gpus(conf, "gpu012", &n, &err), 0);
	CHECK_INT((int)n, 8);
	CHECK_INT(node_gpus(conf, "cpu2", &n, &err), 0);
	CHECK_INT((int)n, 0);
	CHECK_INT(node_gpus(conf, "other", &n, &err), 0);
	CHECK_INT((int)n, 999);
	/* a NodeName line that does not parse makes the whole file unknown, for every node */
	CHECK_INT(node_gpus("NodeName=a1 Gres=gpu:8\nNodeName=b[1-2 Gres=gpu:8\n", "a1", &n, &err),
		  -1);
	CHECK_STR(err.buf, "line 2: unbalanced '[' in hostlist");
	CHECK_INT(node_gpus("NodeName=a1 junk Gres=gpu:8\n", "a1", &n, &err), -1);
	CHECK_CONTAINS(err.buf, "not Key=Value");
	CHECK_INT(node_gpus("NodeName=a1 Gres=gpu:8\n\0\n", "a1", &n, &err), 0); /* strlen stops */
	struct gresconf_answer a;
	gresconf_answer_init(&a);
	CHECK_INT(slurmconf_node_gpus("NodeName=a1\0 Gres=gpu:8\n", 24, "a1", &a, &err), -1);
	CHECK_CONTAINS(err.buf, "NUL");
	gresconf_answer_release(&a);
	gresconf_answer_init(&a);
	const char *inc = "Include /etc/slurm/nodes.conf\ninclude gres-nodes.conf\n";
	CHECK_INT(slurmconf_node_gpus(inc, strlen(inc), "a1", &a, &err), 0);
	CHECK_INT((int)a.includes.nr, 2);
	CHECK_STR(a.includes.items[1], "gres-nodes.conf");
	gresconf_answer_release(&a);
	strbuf_release(&err);
}

TEST(gresconf_gres_conf_lines)
{
	struct strbuf err = STRBUF_INIT;
	struct gresconf_answer a;
	const char *conf = "AutoDetect=off\n"
			   "NodeName=n[01-04] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-31\n"
			   "NodeName=n[01-04] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=32-63\n"
			   "NodeName=n[05-08] Name=gpu Count=2\n"
			   "Name=mps Count=200\n";
	gresconf_answer_init(&a);
	CHECK_INT(gresconf_node_gpus(conf, strlen(conf), "n02", &a, &err), 0);
	CHECK_INT(a.found, GRESCONF_NODE_FOUND);
	CHECK_INT((int)a.gpus, 8);
	CHECK_INT((int)a.line, 2);
	gresconf_answer_release(&a);
	gresconf_answer_init(&a);
	CHECK_INT(gresconf_node_gpus(conf, strlen(conf), "n06", &a, &err), 0);
	CHECK_INT((int)a.gpus, 2);
	gresconf_answer_release(&a);
	gresconf_answer_init(&a);
	CHECK_INT(gresconf_node_gpus("AutoDetect=nvml\n", 16, "n06", &a, &err), 0);
	CHECK_INT(a.found, GRESCONF_AUTODETECT);
	gresconf_answer_release(&a);
	gresconf_answer_init(&a);
	CHECK_INT(gresconf_node_gpus("Name=gpu Count=eight\n", 21, "n06", &a, &err), -1);
	CHECK_STR(err.buf, "line 1: bad Count");
	gresconf_answer_release(&a);
	strbuf_release(&err);
}

/* Slurm's count in the gpu check: a CPU host in Slurm stays skipped; NVML short of Slurm's count
 * fails naming the source; gpu.count, when set, wins over Slurm. */
TEST(gpu_expect_in_evaluate)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	gpu_readings_init(&r);
	gpu_policy_init(&p);
	r.bus_rc = 0;
	r.nvml.avail = NVML_NO_LIBRARY;
	r.expect.state = GPU_EXPECT_NONE;
	strlcpy_v(r.expect.note, "Slurm gives node cpu1 no GPU", sizeof(r.expect.note));
	check_result_init(&res, "gpu");
	CHECK_INT(gpu_evaluate(&r, &p, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	check_result_release(&res);
	/* no bus GPU, no driver, and Slurm says 8: the GPUs are gone from the bus */
	r.expect.state = GPU_EXPECT_SLURM;
	r.expect.count = 8;
	strlcpy_v(r.expect.source, "Slurm Gres gpu:8 for node gpu017", sizeof(r.expect.source));
	check_result_init(&res, "gpu");
	CHECK_INT(gpu_evaluate(&r, &p, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK_INT(res.findings[0].action, ACTION_INSPECT_HARDWARE);
	CHECK_STR(res.findings[0].message,
		  "no NVIDIA GPU on the PCI bus and no driver, but Slurm Gres gpu:8 for node gpu017");
	check_result_release(&res);
	/* gpu.count = 0 says this host has none, whatever Slurm says */
	p.count_set = true;
	p.count = 0;
	check_result_init(&res, "gpu");
	CHECK_INT(gpu_evaluate(&r, &p, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	check_result_release(&res);
	gpu_readings_release(&r);
	gpu_policy_release(&p);
	strbuf_release(&err);
}
