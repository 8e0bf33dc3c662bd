/*
 * test_hostname.c: host names given from outside (--host, SLURMD_NODENAME) are checked like the
 * one read from etc/hostname: control bytes, invalid UTF-8 or more than 255 bytes are a usage
 * error for --host (quoting a sanitised excerpt, never the raw bytes), and under --slurm a
 * SLURMD_NODENAME like that refuses the Slurm action (scontrol never runs) while the checks
 * still run.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static void bare_root(struct strbuf *root)
{
	strbuf_addf(root, "%s/root", test_tmpdir());
	test_write(root->buf, "proc/swaps", "Filename Type Size Used Priority\n");
	test_mkdir(root->buf, "sys");
}

TEST(host_option_with_control_bytes_or_too_long_is_a_usage_error)
{
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, longname = STRBUF_INIT;
	bare_root(&root);
	strbuf_addf(&state, "%s/state", test_tmpdir());
	for (int i = 0; i < 300; i++)
		strbuf_addch(&longname, 'a');
	const char *names[] = { "n1\x1b[2Jevil", "n1\nn2", "caf\xc3", longname.buf, "" };
	const char *whys[] = { "control or invalid bytes", "control or invalid bytes",
			       "control or invalid bytes", "longer than 255 bytes", "empty" };
	const char *cmds[] = { "check", "agent" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		for (size_t k = 0; k < ARRAY_SIZE(cmds); k++) {
			const char *args[] = { cmds[k], "--root", root.buf, "--state-dir",
					       state.buf, "--host", names[i],
					       k ? "--once" : "--only", k ? NULL : "system",
					       NULL };
			struct child c;
			test_run_vigil(&c, args, NULL);
			CHECK_MSG(c.exit_code == 2, "%s --host #%zu: exit %d\n%s", cmds[k], i,
				  c.exit_code, c.err.buf);
			CHECK_CONTAINS(c.err.buf, "is not a valid host name");
			CHECK_CONTAINS(c.err.buf, whys[i]);
			CHECK_CONTAINS(c.err.buf, "--host '");
			/* never the raw bytes, never the whole long name */
			CHECK(!memchr(c.err.buf, '\x1b', c.err.len));
			CHECK_NOT_CONTAINS(c.err.buf, "n1\nn2");
			CHECK(!strstr(c.err.buf, longname.buf));
			CHECK_STR(c.out.buf, "");
			child_release(&c);
		}
	}
	/* a plain name is taken as it is */
	const char *ok[] = { "check", "--json", "--root", root.buf, "--state-dir", state.buf,
			     "--host", "gpu-node-07.example", "--only", "system", NULL };
	struct child c;
	test_run_vigil(&c, ok, NULL);
	CHECK_MSG(c.exit_code != 2, "exit %d\n%s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "\"gpu-node-07.example\"");
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&longname);
}

TEST(slurmd_nodename_that_is_no_host_name_refuses_the_slurm_action)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, scontrol = STRBUF_INIT,
		      setting = STRBUF_INIT, log = STRBUF_INIT, longname = STRBUF_INIT;
	bare_root(&root);
	strbuf_addf(&state, "%s/state", dir);
	/* a fake scontrol that only records that it ran */
	test_write(dir, "bin/scontrol",
		   "#!/bin/sh\necho \"$@\" >>\"$(dirname \"$0\")/../scontrol.log\"\n"
		   "echo NodeName=n7 State=IDLE\n");
	strbuf_addf(&scontrol, "%s/bin/scontrol", dir);
	CHECK_INT(chmod(scontrol.buf, 0755), 0);
	strbuf_addf(&setting, "slurm.scontrol=%s", scontrol.buf);
	strbuf_addstr(&longname, "SLURMD_NODENAME=");
	for (int i = 0; i < 300; i++)
		strbuf_addch(&longname, 'b');
	const char *envs[] = { "SLURMD_NODENAME=n7\x1b]0;owned\x07", longname.buf };
	for (size_t i = 0; i < ARRAY_SIZE(envs); i++) {
		const char *args[] = { "check", "--slurm", "--json", "--root", root.buf,
				       "--state-dir", state.buf, "-c", setting.buf,
				       "--only", "system", NULL };
		const char *env[] = { envs[i], NULL };
		struct child c;
		test_run_vigil(&c, args, env);
		/* the checks ran and gave their verdict; a healthy one becomes unknown (3) */
		CHECK_MSG(c.exit_code == 1 || c.exit_code == 3, "exit %d\n%s", c.exit_code,
			  c.err.buf);
		CHECK_CONTAINS(c.out.buf, "\"verdict\"");
		CHECK_CONTAINS(c.err.buf, "refusing node name '");
		CHECK_CONTAINS(c.err.buf, "from SLURMD_NODENAME");
		CHECK_CONTAINS(c.err.buf, "nothing drained or resumed");
		CHECK_CONTAINS(c.err.buf, i ? "longer than 255 bytes" : "control or invalid bytes");
		CHECK(!memchr(c.err.buf, '\x1b', c.err.len) && !memchr(c.out.buf, '\x1b', c.out.len));
		CHECK(!strstr(c.err.buf, longname.buf + strlen("SLURMD_NODENAME=")));
		/* the report names this host, never the refused name */
		CHECK_NOT_CONTAINS(c.out.buf, "owned");
		child_release(&c);
	}
	strbuf_addf(&log, "%s/scontrol.log", dir);
	CHECK_MSG(access(log.buf, F_OK) != 0, "scontrol ran");
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&scontrol);
	strbuf_release(&setting);
	strbuf_release(&log);
	strbuf_release(&longname);
}

/* Under --root, a fixture without a usable etc/hostname is "unknown-host", never this machine's
 * name (which would pick this machine's [section "host"] configuration). */
TEST(root_without_hostname_is_unknown_host_not_this_machine)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT;
	strbuf_addf(&root, "%s/r", tmp);
	test_write(root.buf, "dev/kmsg", TEST_KMSG_CLEAN);
	test_mkdir(root.buf, "sys");
	const char *args[] = { "check", "--root", root.buf, "--only", "kernel", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "host"), "unknown-host");
	json_free(v);
	child_release(&c);
	strbuf_release(&root);
}
