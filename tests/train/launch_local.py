#!/usr/bin/python3
"""launch_local.py: start WORLD_SIZE ranks of a training command on this machine (vigil tests).

    launch_local.py [--nproc N] -- CMD [ARGS...]

Each rank gets MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port, or $MASTER_PORT), WORLD_SIZE,
RANK and LOCAL_RANK; everything else of the environment (VIGIL_*) is passed through. Like
torchrun, the first rank that fails makes the launcher kill the others (SIGKILL) and exit with
that rank's status; a signal to the launcher (SIGTERM, SIGINT) is passed on to the ranks. The
ranks share the launcher's process group, so killing that group kills them all. Prints
`launch_local: rank R pid P` on stderr for each rank.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=int(os.environ.get("WORLD_SIZE", "2")))
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd or a.nproc < 1:
        p.error("usage: launch_local.py [--nproc N] -- CMD [ARGS...]")
    port = os.environ.get("MASTER_PORT") or str(free_port())
    procs = []

    def kill_all(sig):
        for pr in procs:
            if pr.poll() is None:
                try:
                    pr.send_signal(sig)
                except ProcessLookupError:
                    pass

    def on_signal(sig, _frame):
        kill_all(sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for r in range(a.nproc):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   WORLD_SIZE=str(a.nproc), RANK=str(r), LOCAL_RANK=str(r))
        # The ranks stay in the launcher's process group: whoever kills that group (vigil's
        # child layer does) kills every rank with it.
        procs.append(subprocess.Popen(cmd, env=env))
        print("launch_local: rank %d pid %d" % (r, procs[-1].pid), file=sys.stderr, flush=True)
    status = 0
    try:
        while any(pr.poll() is None for pr in procs):
            for pr in procs:
                rc = pr.poll()
                if rc is not None and rc != 0 and status == 0:
                    status = rc if rc > 0 else 128 - rc
                    kill_all(signal.SIGKILL)
            time.sleep(0.05)
    finally:
        kill_all(signal.SIGKILL)
    for pr in procs:
        rc = pr.wait()
        if rc != 0 and status == 0:
            status = rc if rc > 0 else 128 - rc
    return status


if __name__ == "__main__":
    sys.exit(main())
