/*
 * notify.h: the agent's side of systemd's service notification (Type=notify, WatchdogSec=).
 *
 * libsystemd's sd_notify() is loaded with dlopen("libsystemd.so.0") when the agent starts under a
 * unit that asks for notification (NOTIFY_SOCKET set), not linked: building vigil needs no
 * libsystemd-dev, and a vigil started by hand, by Slurm or in a test loads nothing. With no
 * NOTIFY_SOCKET every call here does nothing.
 *
 * What the agent says (cmd/agent.c): READY=1 once its first cycle is done (the cached result
 * exists, so 'vigil check --cached' right after 'systemctl start' has one), STATUS= with the
 * verdict and reason after each cycle, RELOADING=1 and READY=1 around a SIGHUP reload,
 * STOPPING=1 when it stops, and WATCHDOG=1 from the loop's own thread (agent_loop(), through
 * agent.alive) between cycles and every half watchdog period while it sleeps, never from another
 * thread: a cycle that hangs stops the pings, and systemd kills and restarts the agent after
 * WatchdogSec=. A cycle is bounded by agent.timeout, so WatchdogSec= must exceed it
 * (notify_watchdog_ms() and the agent's start line say when it does not).
 *
 * State is the process's (one agent per process); call from the loop's thread only.
 */
#ifndef VIGIL_AGENT_NOTIFY_H
#define VIGIL_AGENT_NOTIFY_H

#include "../lib/strbuf.h"

#include <stdint.h>

#define NOTIFY_LIBRARY "libsystemd.so.0"

/*
 * Load sd_notify when NOTIFY_SOCKET is set: 1 when notifying, 0 when not asked to (no
 * NOTIFY_SOCKET), -1 with *err when asked to but libsystemd cannot be loaded (the agent goes on
 * without: systemd then never hears READY=1 and fails the start at TimeoutStartSec=).
 */
int notify_open(struct strbuf *err);
/* The watchdog period systemd set for this process (WATCHDOG_USEC, WATCHDOG_PID), in ms; 0: none. */
uint64_t notify_watchdog_ms(void);
/* Send state ("READY=1\nSTATUS=..."), as sd_notify(); nothing when not notifying. */
void notify_send(const char *state);
/* WATCHDOG=1 (an agent.alive callback; arg unused). */
void notify_alive(void *arg);

#endif
