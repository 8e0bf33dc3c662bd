/*
 * test_snapshot_parse.c: nvml_snapshot_parse() (src/gpu/snapshot_parse.c), how `vigil check`
 * reads the agent's gpu reading: the inverse of the writer on real snapshots (the lent H200s'),
 * and strict on what it does not know.
 */
#include "../harness.h"
#include "../../src/gpu/snapshot.h"
#include "../../src/lib/fileio.h"

/* The snapshot of scenario name (its root directory's nvml.snapshot). */
static void roundtrip(const char *name)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, once = STRBUF_INIT,
		      twice = STRBUF_INIT, err = STRBUF_INIT;
	struct nvml_host h;
	struct strbuf rel = STRBUF_INIT;
	strbuf_addf(&rel, "tests/scenarios/%s/%s/nvml.snapshot", name, "root");
	test_src_path(&path, rel.buf);
	strbuf_release(&rel);
	CHECK(read_file_bounded(path.buf, &text, 1 << 20, NULL) == READ_OK);
	nvml_host_init(&h);
	CHECK_MSG(nvml_snapshot_parse(text.buf, text.len, &h, &err) == 0, "%s", err.buf);
	CHECK(h.nr > 0);
	CHECK(h.gpus[0].bdf[0]); /* derived from pci_bus_id, as the reader does */
	nvml_snapshot_format(&h, &once);
	nvml_host_release(&h);
	nvml_host_init(&h);
	CHECK_MSG(nvml_snapshot_parse(once.buf, once.len, &h, &err) == 0, "%s", err.buf);
	nvml_snapshot_format(&h, &twice);
	CHECK_STR(twice.buf, once.buf);
	nvml_host_release(&h);
	strbuf_release(&path);
	strbuf_release(&text);
	strbuf_release(&once);
	strbuf_release(&twice);
	strbuf_release(&err);
}

TEST(snapshot_parse_roundtrip_real)
{
	roundtrip("gpu-real-h200-vm");
	roundtrip("gpu-real-h200x2-vm");
	roundtrip("gpu-lost");
}

static void refused(const char *text, const char *want)
{
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT;
	nvml_host_init(&h);
	CHECK_INT(nvml_snapshot_parse(text, strlen(text), &h, &err), -1);
	CHECK_CONTAINS(err.buf, want);
	CHECK_INT((int)h.nr, 0); /* a half-read host is never judged */
	strbuf_release(&err);
}

TEST(snapshot_parse_refuses)
{
	refused("", "empty NVML snapshot");
	refused("vigil-nvml-snapshot 2\n", "not an NVML snapshot");
	refused("vigil-nvml-snapshot 1\ndevice_count 1\n[gpu 0]\ntemprature_gpu 3\n",
		"line 4: bad or unknown 'temprature_gpu'");
	refused("vigil-nvml-snapshot 1\n[gpu 0]\ntemperature_gpu 3x\n", "line 3");
	refused("vigil-nvml-snapshot 1\n[gpu 0]\n[gpu 0]\n", "[gpu 0] twice");
	refused("vigil-nvml-snapshot 1\n[gpu 999]\n", "bad section");
	refused("vigil-nvml-snapshot 1\n[gpu 0]\nnvlink 99 active=1\n", "line 3");
	/* "init !9": the driver not loaded, as the agent's worker saw it */
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT;
	nvml_host_init(&h);
	const char *t = "vigil-nvml-snapshot 1\ninit !9\n";
	CHECK_INT(nvml_snapshot_parse(t, strlen(t), &h, &err), 0);
	CHECK_INT(h.avail, NVML_INIT_FAILED);
	CHECK_INT(h.init_rc, 9);
	nvml_host_release(&h);
	strbuf_release(&err);
}
