/*
 * pyhook.h: the Python hook that gives 'vigil run' the Python stacks of a hung rank without any
 * change to the trainer (docs/SUPERVISOR.md, "Evidence").
 *
 * The hook is a sitecustomize.py that vigil writes into RUN_DIR/pyhook/ and puts first on the
 * trainer's PYTHONPATH. Python imports it at start-up; when VIGIL_PYSTACKS is not "0" and
 * VIGIL_ATTEMPT_DIR and RANK are set, it opens VIGIL_ATTEMPT_DIR/pystack/rank-RANK.txt (never
 * through a link; created, or a regular file truncated) and registers faulthandler on SIGURG
 * (all threads, no chaining). SIGURG's default action is to ignore it, so a process without the
 * hook is unharmed when 'vigil stacks' sends it. Then it runs any other sitecustomize.py later on
 * sys.path (Debian ships one). Any failure of the hook itself is silent.
 */
#ifndef VIGIL_PYHOOK_H
#define VIGIL_PYHOOK_H

#include "../lib/strbuf.h"

/* The text of the hook (a Python module). */
extern const char pyhook_sitecustomize[];
/* contrib/python/vigil_train.py, NUL-terminated: written beside the hook, so `import
 * vigil_train` works in every rank under vigil run. */
extern const char pyhook_vigil_train[];

/*
 * Write RUN_DIR/pyhook/sitecustomize.py and vigil_train.py: the directory made (0755) or opened without following
 * a link (a link, a non-directory or another user's directory there is refused), the file
 * replaced with write_file_atomic(). On success *dir_out (reset first) holds RUN_DIR/pyhook,
 * the directory to put first on PYTHONPATH. 0, or -1 with *err.
 */
int pyhook_install(const char *run_dir, struct strbuf *dir_out, struct strbuf *err);

/* out = the PYTHONPATH value with hook_dir first: "HOOK" or "HOOK:OLD" (old NULL or ""
 * gives "HOOK"). out is reset first. */
void pyhook_pythonpath(const char *hook_dir, const char *old, struct strbuf *out);

#endif
