/* notify.c: sd_notify() through dlopen (see notify.h). */
#include "notify.h"

#include <dlfcn.h>
#include <stdlib.h>

static struct {
	void *dl;
	int (*notify)(int unset_environment, const char *state);
	int (*watchdog_enabled)(int unset_environment, uint64_t *usec);
} sd;

int notify_open(struct strbuf *err)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	if (sd.dl)
		return 1;
	if (!sock || !*sock)
		return 0;
	void *dl = dlopen(NOTIFY_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		return error_set(err, "NOTIFY_SOCKET is set but %s cannot be loaded (%s): systemd "
				 "will not hear that the agent is ready or alive", NOTIFY_LIBRARY,
				 why ? why : "no reason given");
	}
	*(void **)&sd.notify = dlsym(dl, "sd_notify");
	*(void **)&sd.watchdog_enabled = dlsym(dl, "sd_watchdog_enabled");
	if (!sd.notify || !sd.watchdog_enabled) {
		dlclose(dl);
		sd.notify = NULL;
		sd.watchdog_enabled = NULL;
		return error_set(err, "%s has no sd_notify or sd_watchdog_enabled: systemd will not "
				 "hear that the agent is ready or alive", NOTIFY_LIBRARY);
	}
	sd.dl = dl;
	return 1;
}

uint64_t notify_watchdog_ms(void)
{
	uint64_t usec = 0;
	/* the environment is kept (unset 0): sd_notify() reads NOTIFY_SOCKET on every call, and
	 * systemd ignores what the children say (NotifyAccess=main) */
	if (!sd.dl || sd.watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec / 1000 ? usec / 1000 : 1;
}

void notify_send(const char *state)
{
	if (sd.dl)
		sd.notify(0, state);
}

void notify_alive(void *arg)
{
	UNUSED(arg);
	notify_send("WATCHDOG=1");
}
