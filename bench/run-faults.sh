#!/bin/sh
# bench/run-faults.sh: the fault benchmark of `vigil run` (issue 9, section "Benchmark"), figures
# in docs/PERFORMANCE.md. One training job (tests/train/tiny_ddp.py: real PyTorch DDP, gloo, CPU,
# 4 ranks) is run twice with the same fault schedule: under `vigil run` on a private local Slurm
# (tests/e2e/slurm-cluster, one slurmd per "host", all on this machine) and under
# `torchrun --max_restarts`. Faults cycle crash (SIGKILL a rank), hang (SIGSTOP a rank), sick
# (Xid 79 in the host's fixture kernel log; the rank is killed 20 s later if still running, as
# a GPU that fell off the bus does), slow (the rank stopped 75 % of the time) and lost (the
# host's slurmd stopped and its rank killed). Printed: per fault class, the time from the
# injection to detection, to a running step again, and the steps redone; each run's ETTR.
#
#   bench/run-faults.sh [--duration S] [--interval S] [--only vigil|torchrun] [--keep DIR]
#   env: DURATION (600), INTERVAL (120), VIGIL_BIN (build/bench/vigil, else build/vigil),
#        BASEPORT (49000: the tests use ports below that), STEP_SLEEP (0.2), CKPT_EVERY (10)
#
# Faults come at INTERVAL/2, then every INTERVAL, while at least min(INTERVAL/2, 30) s remain:
# a 600/120 run has all five classes once. The Slurm side has 4 hosts plus one spare for every
# fault that can exclude a host (everything but crash): each of those drains a host for good.
# Needs root, Slurm (slurm-wlm, munge) and /usr/bin/python3 with torch; exits 77 saying so.
# No network: everything listens on 127.0.0.1. Runs a long time; one bench at a time per machine.
set -u
cd "$(dirname "$0")/.." || exit 2
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "run-faults: needs root (slurmd runs the job)" >&2; exit 77; }
[ -x "$PY" ] && "$PY" -c 'import torch, torch.distributed.run' 2>/dev/null ||
	{ echo "run-faults: no torch for $PY (Debian: python3-torch)" >&2; exit 77; }
for c in munged slurmctld slurmd salloc srun scontrol sinfo; do
	PATH="$PATH:/usr/sbin:/sbin" command -v $c >/dev/null 2>&1 ||
		{ echo "run-faults: '$c' is not installed (Debian: slurm-wlm munge)" >&2; exit 77; }
done
export PATH="$PATH:/usr/sbin:/sbin"
VIGIL_BIN=${VIGIL_BIN:-}
if [ -z "$VIGIL_BIN" ]; then
	for b in build/bench/vigil build/vigil; do [ -x "$b" ] && VIGIL_BIN=$PWD/$b && break; done
fi
[ -n "$VIGIL_BIN" ] && [ -x "$VIGIL_BIN" ] ||
	{ echo "run-faults: no vigil binary (make BUILD=build/bench build/bench/vigil, or VIGIL_BIN)" >&2; exit 2; }
export VIGIL_BIN
exec "$PY" - "$@" <<'PYEOF'
# The driver: sets up, injects, measures. Times are epoch seconds from time.time(), the clock
# vigil's journal uses too (same machine).
import argparse, datetime, json, os, re, shutil, signal, statistics, subprocess, sys
import tempfile, threading, time

SRC = os.getcwd()
PY = "/usr/bin/python3"
TRAINER = os.path.join(SRC, "tests/train/tiny_ddp.py")
CLUSTER = os.path.join(SRC, "tests/e2e/slurm-cluster")
VIGIL = os.environ["VIGIL_BIN"]
CLASSES = ["crash", "hang", "sick", "slow", "lost"]
KMSG_CLEAN = "6,1,1000000,-;Linux version 6.1.0 (a fixture's clean kernel log)\n"
XID79 = "3,200,12000000,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1234, GPU has fallen off the bus.\n"
WORLD = 4

ap = argparse.ArgumentParser(prog="run-faults.sh")
ap.add_argument("--duration", type=float, default=float(os.environ.get("DURATION", 600)))
ap.add_argument("--interval", type=float, default=float(os.environ.get("INTERVAL", 120)))
ap.add_argument("--only", choices=["vigil", "torchrun"])
ap.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
args = ap.parse_args()
BASEPORT = int(os.environ.get("BASEPORT", 49000))
STEP_SLEEP = os.environ.get("STEP_SLEEP", "0.2")
CKPT_EVERY = os.environ.get("CKPT_EVERY", "10")
TRAIN = ["--steps", "1000000", "--ckpt-every", CKPT_EVERY, "--step-sleep", STEP_SLEEP]

schedule = []
t = args.interval / 2
while t <= args.duration - min(args.interval / 2, 30):
    schedule.append((t, CLASSES[len(schedule) % len(CLASSES)], 1 + len(schedule) % 3))
    t += args.interval
NODES = WORLD + max(1, sum(1 for s in schedule if s[1] != "crash"))

work = args.keep or tempfile.mkdtemp(prefix="vigil-run-faults-")
os.makedirs(work, exist_ok=True)


def log(msg):
    sys.stderr.write("run-faults: %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def proc_env(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            raw = f.read()
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        return None, b""
    env = {}
    for kv in raw.split(b"\0"):
        k, _, v = kv.partition(b"=")
        env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env, cmd


def trainer_ranks(key, value, attempt_var):
    """{rank: (pid, host, attempt)} of the newest attempt's trainer processes whose
    environment has key=value (smoke tests of group testing left out)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        env, cmd = proc_env(int(d))
        if not env or env.get(key) != value or b"tiny_ddp.py" not in cmd:
            continue
        if env.get("VIGIL_SMOKE") == "1" or "RANK" not in env:
            continue
        try:
            found.append((int(env.get(attempt_var, "0") or 0), int(env["RANK"]), int(d),
                          env.get("SLURMD_NODENAME", "rank%s" % env["RANK"])))
        except ValueError:
            pass
    if not found:
        return {}, -1
    newest = max(a for a, _, _, _ in found)
    return {r: (p, h, a) for a, r, p, h in found if a == newest}, newest


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


class Faults:
    """Injects the schedule into one run; `ranks()` finds the newest attempt's processes and
    `running()` says whether that attempt has done a step."""

    def __init__(self, name, t0, ranks, running, sick, lost, done):
        self.name, self.t0, self.ranks, self.running = name, t0, ranks, running
        self.sick, self.lost, self.done = sick, lost, done
        self.injected = []  # dicts: class, rank, host, t, (skipped)
        self.threads = []

    def run(self):
        for at, cls, rank in schedule:
            while time.time() < self.t0 + at and not self.done():
                time.sleep(0.1)
            # only into a run that is training (not between attempts), up to 90 s late
            deadline = time.time() + 90
            ranks = {}
            while time.time() < deadline and not self.done():
                ranks, att = self.ranks()
                if len(ranks) == WORLD and self.running(att):
                    break
                ranks = {}
                time.sleep(0.2)
            if self.done():
                return
            if rank not in ranks:
                log("%s: %s not injected: the job was not running" % (self.name, cls))
                self.injected.append({"class": cls, "rank": rank, "host": None, "t": None})
                continue
            pid, host, attempt = ranks[rank]
            now = time.time()
            if cls == "crash":
                kill(pid, signal.SIGKILL)
            elif cls == "hang":
                kill(pid, signal.SIGSTOP)
            elif cls == "sick":
                self.sick(host)
                self.later(20, lambda p=pid: alive(p) and kill(p, signal.SIGKILL))
            elif cls == "slow":
                self.later(0, lambda p=pid: self.slow(p))
            elif cls == "lost":
                self.lost(host)
                kill(pid, signal.SIGKILL)
            log("%s: +%.1fs %s rank %d (pid %d, %s, attempt %d)"
                % (self.name, now - self.t0, cls, rank, pid, host, attempt))
            self.injected.append({"class": cls, "rank": rank, "host": host, "t": now,
                                  "attempt": attempt})

    def later(self, delay, fn):
        def go():
            end = time.time() + delay
            while time.time() < end and not self.done():
                time.sleep(0.1)
            if not self.done():
                fn()
        th = threading.Thread(target=go, daemon=True)
        th.start()
        self.threads.append(th)

    def slow(self, pid):
        # 0.6 s stopped, 0.2 s running, while the rank lives: a host that stays slow
        while alive(pid) and not self.done():
            kill(pid, signal.SIGSTOP)
            time.sleep(0.6)
            kill(pid, signal.SIGCONT)
            time.sleep(0.2)


def run_cmd(argv, timeout=120, env=None):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout.decode(errors="replace")


def steps_redone_and_productive(attempts, wall):
    """attempts: [[(t, step), ...], ...] in order. vigil report's rules (docs/SUPERVISOR.md
    "vigil report"): K(i) = min over later attempts with steps of (first step - 1); redone =
    last - max(K, first - 1); productive = t(step K) - t(first) + one median step."""
    out = []
    all_iv = []
    for a in attempts:
        for (t1, s1), (t2, s2) in zip(a, a[1:]):
            if s2 > s1:
                all_iv.append((t2 - t1) / (s2 - s1))
    run_med = statistics.median(all_iv) if all_iv else 0.0
    for i, a in enumerate(attempts):
        if not a:
            out.append((0, 0.0))
            continue
        later = [b[0][1] - 1 for b in attempts[i + 1:] if b]
        first, last = a[0][1], a[-1][1]
        if not later:
            k = last
            redone = 0
        else:
            k = min(later)
            redone = max(0, last - max(k, first - 1))
        iv = [(t2 - t1) / (s2 - s1) for (t1, s1), (t2, s2) in zip(a, a[1:]) if s2 > s1]
        med = statistics.median(iv) if len(iv) >= 1 else run_med
        kept = [t for t, s in a if s <= k]
        prod = (kept[-1] - a[0][0] + med) if kept else 0.0
        out.append((redone, min(prod, a[-1][0] - a[0][0] + med)))
    total = sum(p for _, p in out)
    return out, (min(1.0, total / wall) if wall > 0 else None)


STEP_RE = re.compile(r"\bstep (\d+) loss ")


def iso_epoch(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


# ---------------------------------------------------------------- vigil run on Slurm
def bench_vigil():
    vdir = os.path.join(work, "vigil")
    cdir = os.path.join(vdir, "slurm")
    run_dir = os.path.join(vdir, "run")
    os.makedirs(vdir, exist_ok=True)
    rc, out = run_cmd([CLUSTER, "start", cdir, str(NODES), str(BASEPORT), "", "0"], 180)
    if rc != 0:
        print("run-faults: cannot start Slurm here (exit %d): %s" % (rc, out.strip()))
        sys.exit(77 if rc == 77 else 1)
    os.environ["SLURM_CONF"] = os.path.join(cdir, "slurm.conf")
    try:
        for i in range(1, NODES + 1):
            os.makedirs(os.path.join(vdir, "fx/n%d/dev" % i), exist_ok=True)
            with open(os.path.join(vdir, "fx/n%d/dev/kmsg" % i), "w") as f:
                f.write(KMSG_CLEAN)
        wrapper = os.path.join(vdir, "remote-vigil")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\ncase "$1" in\n'
                    'check) exec %s "$@" --only kernel --root %s/fx/$SLURMD_NODENAME ;;\n'
                    '*) exec %s "$@" ;;\nesac\n' % (VIGIL, vdir, VIGIL))
        os.chmod(wrapper, 0o755)
        rc, out = run_cmd(["salloc", "--no-shell", "-N%d" % NODES, "--exclusive", "--no-kill",
                           "-J", "vigil-bench"], 60)
        m = re.search(r"Granted job allocation (\d+)", out)
        if not m:
            print("run-faults: salloc failed: %s" % out)
            sys.exit(1)
        env = dict(os.environ, SLURM_JOB_ID=m.group(1), SLURM_JOB_NODELIST="n[1-%d]" % NODES)
        argv = [VIGIL, "run", "--nodes", str(WORLD), "--spares", str(NODES - WORLD),
                "--run-dir", run_dir, "--json", "-c", "fleet.command=" + wrapper,
                "-c", "run.grace=3", "-c", "run.restart-delay=0.5", "-c", "run.node-poll=1",
                "-c", "run.slow-steps=3", "--slow-factor", "2", "--check-interval", "2",
                "--hang-floor", "4", "--startup-timeout", "90", "--max-restarts", "50",
                # not the default 29500 + attempt: the tests on this machine use those
                "-c", "run.master-port=%d" % (BASEPORT + 200),
                "--", PY, TRAINER] + TRAIN
        log("vigil: %d slurmd nodes (%d + %d spares), %d faults, %.0f s"
            % (NODES, WORLD, NODES - WORLD, len(schedule), args.duration))
        vlog = open(os.path.join(vdir, "vigil-run.log"), "w")
        t0 = time.time()
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=vlog)

        def running(att):
            try:
                with open(os.path.join(run_dir, "attempt-%d/rank-0.out" % att)) as f:
                    return STEP_RE.search(f.read()) is not None
            except OSError:
                return False

        def sick(host):
            with open(os.path.join(vdir, "fx", host, "dev/kmsg"), "a") as f:
                f.write(XID79)

        def lost(host):
            run_cmd([CLUSTER, "stop-node", cdir, host], 30)

        fl = Faults("vigil", t0, lambda: trainer_ranks("VIGIL_RUN_DIR", run_dir, "VIGIL_ATTEMPT"),
                    running, sick, lost, lambda: proc.poll() is not None or
                    time.time() >= t0 + args.duration)
        th = threading.Thread(target=fl.run, daemon=True)
        th.start()
        while proc.poll() is None and time.time() < t0 + args.duration:
            time.sleep(0.2)
        t_end = time.time()  # as for torchrun, the wall of the step lines' ETTR ends here
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the end of the measured run: a cancel
        outcome = proc.communicate(timeout=120)[0].decode(errors="replace")
        th.join(5)
        vlog.close()
        rc, rep = run_cmd([VIGIL, "report", run_dir, "--json"], 60)
        with open(os.path.join(vdir, "report.json"), "w") as f:
            f.write(rep)
        report = json.loads(rep)
        # the same ETTR computed from the ranks' time-stamped lines, as for torchrun
        atts = []
        for a in sorted(report.get("attempts", []), key=lambda a: a["attempt"]):
            steps = []
            try:
                with open(os.path.join(run_dir, "attempt-%d/rank-0.out" % a["attempt"])) as f:
                    for line in f:
                        m = STEP_RE.search(line)
                        if m:
                            steps.append((iso_epoch(line.split()[0]), int(m.group(1))))
            except (OSError, ValueError):
                pass
            atts.append(steps)
        _, ettr_lines = steps_redone_and_productive(atts, t_end - t0)
        return {"t0": t0, "end": t_end, "injected": fl.injected, "report": report,
                "journal": read_journal(os.path.join(run_dir, "journal.jsonl")),
                "outcome": outcome, "ettr_lines": ettr_lines}
    finally:
        run_cmd([CLUSTER, "stop", cdir], 120)


def read_journal(path):
    recs = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return recs


PHASES = ["stacks", "stop", "checks", "drain", "wait", "srun", "first-step"]


def breakdown(journal, detected, attempt):
    """Where the seconds from vigil's detection to the next attempt's first step go, from the
    journal's own time stamps: stacks (a hang's or slowdown's evidence, with its diagnosis),
    stop (to attempt_ended), checks (vigil check on the attempt's hosts), drain (drains and
    spares), wait (run.restart-delay, to attempt_started), srun (to the step id: srun starts
    the tasks and rank 0 writes it), first-step (rendezvous, the model, the first step)."""
    def first(pred, after):
        for r in journal:
            if r.get("t", 0) >= after - 1e-6 and pred(r):
                return r["t"]
        return None
    ev = lambda cls, att: (lambda r: r.get("kind") == "event" and r.get("class") == cls
                           and r.get("attempt") == att)
    out = dict.fromkeys(PHASES)
    t = detected
    ended = first(lambda r: r.get("kind") == "attempt_ended" and r.get("attempt") == attempt, t)
    evid = first(ev("evidence", attempt), t)
    if evid is not None and ended is not None and evid <= ended:
        out["stacks"] = evid - t
        t = evid
    if ended is None:
        return out
    out["stop"] = ended - t
    t = ended
    chk = first(ev("checks", attempt), t)
    started = first(lambda r: r.get("kind") == "attempt_started" and
                    r.get("attempt") == attempt + 1, t)
    if chk is not None and (started is None or chk <= started):
        out["checks"] = chk - t
        t = chk
    if started is None:
        return out
    last = t
    for r in journal:
        if t <= r.get("t", 0) <= started and r.get("kind") == "event" and \
                r.get("class") in ("drained", "not_drained", "replaced", "drain_failed"):
            last = r["t"]
    out["drain"] = last - t
    out["wait"] = started - last
    launched = first(ev("launched", attempt + 1), started)
    if launched is not None:
        out["srun"] = launched - started
    step = first(lambda r: r.get("kind") == "step" and r.get("attempt") == attempt + 1,
                 started)
    if step is not None and launched is not None:
        out["first-step"] = step - launched
    return out


def vigil_rows(v):
    rep = v["report"]
    faults = [f for f in rep.get("faults", []) if f["class"] not in ("cancel",
                                                                    "supervisor_restart")]
    atts = {a["attempt"]: a for a in rep.get("attempts", [])}
    inj = [i for i in v["injected"] if i["t"]]
    rows = []
    for n, i in enumerate(inj):
        nxt = inj[n + 1]["t"] if n + 1 < len(inj) else v["end"]
        mine = [f for f in faults if (f.get("detected") or f["t"]) >= i["t"] - 0.5 and
                (f.get("detected") or f["t"]) < nxt]
        row = {"class": i["class"], "host": i["host"], "seen": None, "detect": None,
               "running": None, "redone": None, "phases": dict.fromkeys(PHASES)}
        if mine:
            f = mine[0]
            row["seen"] = f["class"]
            row["detect"] = (f.get("detected") or f["t"]) - i["t"]
            if f.get("recovered"):
                row["running"] = f["recovered"] - i["t"]
            a = atts.get(f.get("attempt"))
            row["redone"] = a.get("steps_redone") if a else None
            if f.get("attempt") is not None:
                row["phases"] = breakdown(v.get("journal", []), f.get("detected") or f["t"],
                                          f["attempt"])
        rows.append(row)
    return rows


# ---------------------------------------------------------------- torchrun, same job and faults
def bench_torchrun():
    tdir = os.path.join(work, "torchrun")
    os.makedirs(tdir, exist_ok=True)
    tag = "run-faults-%d" % os.getpid()
    env = dict(os.environ, LOGLEVEL="INFO", PYTHONUNBUFFERED="1", BENCH_TAG=tag)
    for k in ("SLURM_CONF", "SLURM_JOB_ID", "SLURM_JOB_NODELIST"):
        env.pop(k, None)
    max_restarts = 50
    argv = [PY, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(WORLD),
            "--max_restarts", str(max_restarts), "--rdzv_backend", "c10d",
            "--rdzv_endpoint", "127.0.0.1:%d" % (BASEPORT + 90), "--rdzv_id", tag,
            # Debian's torch 1.13 under Python 3.11 cannot start with the default
            # --redirects 0 (Std.from_str("0") is None: 3.11 no longer iterates an IntFlag's
            # 0 member); the ranks' stdout teed through torchrun instead ("[default0]:step 1")
            "--redirects", "1", "--tee", "1",
            TRAINER] + TRAIN + ["--resume", "--ckpt-dir", os.path.join(tdir, "ckpt")]
    log("torchrun: %d faults, %.0f s" % (len(schedule), args.duration))
    lines = []  # (t, text): every line of torchrun and its workers, time-stamped as read
    lock = threading.Lock()
    t0 = time.time()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=tdir)
    logf = open(os.path.join(tdir, "torchrun.log"), "w")

    def reader():
        for raw in proc.stdout:
            t = time.time()
            s = re.sub(r"^\[default\d+\]:", "", raw.decode(errors="replace").rstrip("\n"))
            logf.write("%.3f %s\n" % (t, s))
            with lock:
                lines.append((t, s))
    rt = threading.Thread(target=reader, daemon=True)
    rt.start()

    def running(att):
        # attempt att (its restart count) has printed its "resume" line (rank 0 prints one an
        # attempt) and a step since
        with lock:
            if sum(1 for _, s in lines if re.match(r"resume(:| from)", s)) != att + 1:
                return False
            for t, s in reversed(lines):
                if STEP_RE.search(s):
                    return True
                if re.match(r"resume(:| from)", s):
                    return False
        return False

    fl = Faults("torchrun", t0, lambda: trainer_ranks("BENCH_TAG", tag,
                                                      "TORCHELASTIC_RESTART_COUNT"),
                running, lambda h: None, lambda h: None,
                lambda: proc.poll() is not None or time.time() >= t0 + args.duration)
    th = threading.Thread(target=fl.run, daemon=True)
    th.start()
    while proc.poll() is None and time.time() < t0 + args.duration:
        time.sleep(0.2)
    t_stop = time.time()  # the wall ends here: stopping a frozen rank takes torchrun 30 s
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    t_end = time.time()
    th.join(5)
    rt.join(10)
    logf.close()
    # left-over ranks (a stopped one ignores SIGTERM)
    for r, (pid, _, _) in trainer_ranks("BENCH_TAG", tag, "TORCHELASTIC_RESTART_COUNT")[0].items():
        kill(pid, signal.SIGKILL)
        kill(pid, signal.SIGCONT)
    # attempts: rank 0's "resume" line starts one; a step's first line is its time
    # detection: torchrun's first reaction, "Sending process P closing signal SIGTERM" to the
    # ranks left (it logs "will restart worker group" only after they are gone, 30 s later
    # when one of them is frozen and ignores SIGTERM)
    attempts, restarts, reactions = [], [], []
    for t, s in lines:
        if re.match(r"resume(:| from)", s):
            attempts.append([])
        elif "will restart worker group" in s or "closing signal" in s:
            reactions.append(t)
            if "will restart" in s:
                restarts.append(t)
        else:
            m = STEP_RE.search(s)
            if m and attempts:
                st = int(m.group(1))
                if not attempts[-1] or attempts[-1][-1][1] < st:
                    attempts[-1].append((t, st))
    per, ettr = steps_redone_and_productive(attempts, t_stop - t0)
    starts = [a[0][0] for a in attempts if a]
    inj = [i for i in fl.injected if i["t"]]
    rows = []
    for n, i in enumerate(inj):
        nxt = inj[n + 1]["t"] if n + 1 < len(inj) else t_end
        row = {"class": i["class"], "detect": None, "running": None, "redone": None}
        d = [t for t in reactions if i["t"] - 0.5 <= t < nxt]
        if d:
            row["detect"] = d[0] - i["t"]
            r = [t for t in starts if t > d[0]]
            if r:
                row["running"] = r[0] - i["t"]
            # the attempt that was running at the injection
            k = max([j for j, a in enumerate(attempts) if a and a[0][0] <= i["t"]] or [-1])
            if k >= 0:
                row["redone"] = per[k][0]
        rows.append(row)
    return {"t0": t0, "end": t_stop, "rows": rows, "ettr": ettr, "attempts": len(attempts),
            "restarts": len(restarts), "injected": fl.injected}


def fmt(x, nd=1):
    return "-" if x is None else ("%.*f" % (nd, x) if isinstance(x, float) else str(x))


def main():
    log("work directory %s; schedule: %s" % (work, ", ".join(
        "+%.0fs %s(rank %d)" % s for s in schedule)))
    v = bench_vigil() if args.only != "torchrun" else None
    tr = bench_torchrun() if args.only != "vigil" else None
    print("run-faults: %.0f s per run, a fault every %.0f s (first at %.0f s), step-sleep %s,"
          " checkpoint every %s steps, %d ranks" % (args.duration, args.interval,
                                                    args.interval / 2, STEP_SLEEP, CKPT_EVERY,
                                                    WORLD))
    vr = vigil_rows(v) if v else []
    trr = tr["rows"] if tr else []
    print()
    print("%-6s %-5s | %-6s %8s %11s %7s | %8s %11s %7s" % (
        "fault", "host", "vigil", "detect s", "to-running", "redone",
        "torchrun", "to-running", "redone"))
    n = max(len(vr), len(trr))
    for k in range(n):
        a = vr[k] if k < len(vr) else {}
        b = trr[k] if k < len(trr) else {}
        print("%-6s %-5s | %-6s %8s %11s %7s | %8s %11s %7s" % (
            a.get("class") or b.get("class"), a.get("host") or "-", a.get("seen") or "-",
            fmt(a.get("detect")), fmt(a.get("running")), fmt(a.get("redone")),
            fmt(b.get("detect")), fmt(b.get("running")), fmt(b.get("redone"))))
    skipped = [(x, i["class"]) for x, d in (("vigil", v), ("torchrun", tr)) if d
               for i in d["injected"] if not i["t"]]
    for who, cls in skipped:
        print("(%s: the %s fault was not injected: the job was not training)" % (who, cls))
    print("(detect: from the injection to vigil's detection / torchrun stopping the ranks;"
          " to-running: to the next attempt's first step; '-': none before the next fault)")
    if vr:
        print()
        print("where vigil's seconds go, from its detection to the next first step (journal):")
        print("%-6s " % "fault" + " ".join("%10s" % p for p in PHASES))
        for a in vr:
            print("%-6s " % a["class"] + " ".join("%10s" % fmt(a["phases"].get(p), 2)
                                                  for p in PHASES))
    print()
    if v:
        rep = v["report"]
        meds = [a["median_step_s"] for a in rep.get("attempts", []) if a.get("median_step_s")]
        med = statistics.median(meds) if meds else None
        print("vigil run:  ETTR %s (vigil report; %s from the step lines), wall %.0f s,"
              " %s restarts, %s steps redone, median step %s s, excluded %s" % (
                  fmt(rep.get("ettr"), 3), fmt(v["ettr_lines"], 3), rep.get("wall_s") or 0,
                  rep.get("restarts"), rep.get("steps_redone"), fmt(med, 3),
                  ",".join(e["host"] for e in rep.get("excluded", [])) or "none"))
        crash = [r["detect"] for r in vr if r["class"] == "crash" and r["detect"] is not None]
        hang = [r["detect"] for r in vr if r["class"] == "hang" and r["detect"] is not None]
        if med:
            print("  targets: crash seen <= 2 s: %s; hang <= 3 x %.2f + 4 = %.1f s: %s;"
                  " ETTR >= 0.90: %s" % (
                      fmt(max(crash)) if crash else "none", med, 3 * med + 4,
                      fmt(max(hang)) if hang else "none", fmt(rep.get("ettr"), 3)))
    if tr:
        print("torchrun:   ETTR %s (from the step lines), wall %.0f s, %d restarts, %d attempts"
              % (fmt(tr["ettr"], 3), tr["end"] - tr["t0"], tr["restarts"], tr["attempts"]))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


main()
PYEOF
