/*
 * pyhook.c: the text of the Python hook (sitecustomize.py) and its installation in the run
 * directory. What the hook does and why SIGURG: pyhook.h and docs/SUPERVISOR.md, "Evidence".
 * The Python is kept here as a C string so that vigil is one file to install; the tests run it
 * under /usr/bin/python3 (tests/unit/test_stacks.c).
 */
#include "pyhook.h"
#include "../lib/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/*
 * contrib/python/vigil_train.py, the module a trainer imports to report its parameter digests
 * (docs/SUPERVISOR.md, "Replica digests"), taken into the binary whole by the assembler (the
 * build runs from the repository's root; the Makefile makes this object depend on the file),
 * so that the file in the repository is the one source, readable and installable as Python.
 */
__asm__(".section .rodata\n"
	".global pyhook_vigil_train\n"
	".type pyhook_vigil_train, @object\n"
	"pyhook_vigil_train:\n"
	".incbin \"contrib/python/vigil_train.py\"\n"
	".byte 0\n"
	".previous\n");

const char pyhook_sitecustomize[] =
	"# sitecustomize.py, written by vigil run into RUN_DIR/pyhook/ and put first on\n"
	"# the trainer's PYTHONPATH: Python stacks of a hung rank, trainer unchanged. On\n"
	"# SIGURG (ignored by default, so a process without this hook is unharmed),\n"
	"# faulthandler writes every thread's stack to\n"
	"# $VIGIL_ATTEMPT_DIR/pystack/rank-$RANK.txt; 'vigil stacks' sends the signal and\n"
	"# reads the new text. VIGIL_PYSTACKS=0 turns it off. A failure here is silent:\n"
	"# the hook never breaks the trainer. Then any other sitecustomize.py later on\n"
	"# sys.path runs, as it would without vigil. vigil's docs/SUPERVISOR.md, \"Evidence\".\n"
	"\n"
	"\n"
	"\n"
	"def _vigil_pystacks():\n"
	"    import os\n"
	"    env = os.environ\n"
	"    if env.get(\"VIGIL_PYSTACKS\", \"1\") == \"0\":\n"
	"        return None\n"
	"    adir = env.get(\"VIGIL_ATTEMPT_DIR\", \"\")\n"
	"    rank = env.get(\"RANK\", \"\")\n"
	"    if not adir or not (rank.isascii() and rank.isdigit() and len(rank) <= 9):\n"
	"        return None\n"
	"    owner = env.get(\"VIGIL_PYSTACK_PID\")\n"
	"    if owner and owner != str(os.getpid()):\n"
	"        # a process the rank started (a spawned worker): the file is its parent's\n"
	"        return None\n"
	"    import faulthandler\n"
	"    import signal\n"
	"    import stat\n"
	"    d = os.path.join(adir, \"pystack\")\n"
	"    try:\n"
	"        os.mkdir(d, 0o755)\n"
	"    except FileExistsError:\n"
	"        pass\n"
	"    # never through a link: not the directory, not the file\n"
	"    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)\n"
	"    try:\n"
	"        name = \"rank-%d.txt\" % int(rank)\n"
	"        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK\n"
	"        try:\n"
	"            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)\n"
	"        except FileExistsError:\n"
	"            fd = os.open(name, flags, dir_fd=dfd)\n"
	"            try:\n"
	"                if not stat.S_ISREG(os.fstat(fd).st_mode):\n"
	"                    raise OSError(\"not a regular file\")\n"
	"                os.ftruncate(fd, 0)\n"
	"            except BaseException:\n"
	"                os.close(fd)\n"
	"                raise\n"
	"    finally:\n"
	"        os.close(dfd)\n"
	"    f = os.fdopen(fd, \"a\")\n"
	"    faulthandler.register(signal.SIGURG, file=f, all_threads=True, chain=False)\n"
	"    env[\"VIGIL_PYSTACK_PID\"] = str(os.getpid())\n"
	"    return f\n"
	"\n"
	"\n"
	"def _vigil_chain():\n"
	"    import os\n"
	"    import sys\n"
	"    mine = os.path.abspath(__file__)\n"
	"    here = os.path.dirname(mine)\n"
	"    dirs = [os.path.abspath(p or os.curdir) for p in sys.path if isinstance(p, str)]\n"
	"    if here in dirs:\n"
	"        dirs = dirs[dirs.index(here) + 1:]\n"
	"    for d in dirs:\n"
	"        path = os.path.join(d, \"sitecustomize.py\")\n"
	"        try:\n"
	"            if not os.path.isfile(path) or os.path.samefile(path, mine):\n"
	"                continue\n"
	"        except OSError:\n"
	"            continue\n"
	"        import importlib.util\n"
	"        spec = importlib.util.spec_from_file_location(\"sitecustomize\", path)\n"
	"        mod = importlib.util.module_from_spec(spec)\n"
	"        # its errors are reported by Python as they would be without vigil\n"
	"        spec.loader.exec_module(mod)\n"
	"        return\n"
	"\n"
	"\n"
	"try:\n"
	"    _vigil_pystack_file = _vigil_pystacks()\n"
	"except Exception:\n"
	"    _vigil_pystack_file = None\n"
	"_vigil_chain()\n";

int pyhook_install(const char *run_dir, struct strbuf *dir_out, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	int ret = -1, rfd, dfd;

	strbuf_reset(dir_out);
	rfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return error_set(err, "cannot open '%s': %s", run_dir, strerror(errno));
	/* made or opened beneath the run directory, never through a link planted there */
	struct strbuf why = STRBUF_INIT;
	dfd = open_dir_beneath(rfd, "pyhook", 0755, &why);
	close(rfd);
	if (dfd < 0) {
		error_set(err, "cannot make the Python hook's directory in '%s': %s", run_dir,
			  why.buf);
		strbuf_release(&why);
		return -1;
	}
	strbuf_release(&why);
	close(dfd);
	strbuf_addf(&path, "%s/pyhook/sitecustomize.py", run_dir);
	if (write_file_atomic(path.buf, pyhook_sitecustomize, strlen(pyhook_sitecustomize), 0644,
			      err) < 0)
		goto out;
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/pyhook/vigil_train.py", run_dir);
	if (write_file_atomic(path.buf, pyhook_vigil_train, strlen(pyhook_vigil_train), 0644,
			      err) < 0)
		goto out;
	strbuf_addf(dir_out, "%s/pyhook", run_dir);
	ret = 0;
out:
	strbuf_release(&path);
	return ret;
}

void pyhook_pythonpath(const char *hook_dir, const char *old, struct strbuf *out)
{
	strbuf_reset(out);
	strbuf_addstr(out, hook_dir);
	if (old && *old) {
		strbuf_addch(out, ':');
		strbuf_addstr(out, old);
	}
}
