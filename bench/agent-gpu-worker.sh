#!/bin/bash
# agent-gpu-worker.sh: what the agent costs on a real GPU host with its gpu worker (NVML kept
# initialised). Run on the lent 2 x H200 machine:
#   bash bench/agent-gpu-worker.sh            (device tool, kind nvidia-h200-x2)
# Two agents on the real host, --listen off, a 2 s interval and the NVLink error counters due
# every 20 s (one cycle in ten, as at the default 30 s interval and 300 s counter interval).
# All-in CPU from wait4 (the agent, its forked checks and its gpu worker, all reaped): per cycle
# it is (CPU of LONG cycles - CPU of SHORT cycles) / (LONG - SHORT), so start-up and the
# worker's one NVML start drop out; the share of one core at a 30 s interval is that over 30 s.
# References in the same call: 'vigil check --only gpu' as a fresh process (how the agent ran the
# gpu check before), with the counters not due and due, and the agent's own figure
# (vigil_agent_cpu_seconds_total / vigil_agent_cycles_total). Both pairs of agents run twice,
# agent.gpu-telemetry on and off (docs/telemetry.md), interleaved, in the same call. Last, one
# agent's metrics (its textfile, the writer /metrics uses) are saved as $OUT/h200-metrics.prom,
# and 'vigil gather' as $OUT/gather.tar (its nvml.snapshot carries the telemetry keys).
set -u
O=${OUT:-/tmp/vigil-out}
mkdir -p "$O"
export SHORT=${SHORT:-10} LONG=${LONG:-60} INTERVAL=${INTERVAL:-2} ROUNDS=${ROUNDS:-2}
export VIGIL=${VIGIL:-./vigil} CB=${CB:-build/bench/check_bench}
[ -n "${NOBUILD:-}" ] || make -j16 DEVELOPER=0 NVCC=nvcc-not-needed CFLAGS="-O2 -g" vigil \
	build/bench/check_bench >"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
nproc; nvidia-smi -L
python3 - <<'PY' | tee "$O/agent-gpu-worker.txt"
import os, resource, subprocess, shutil
interval, short, long_ = os.environ["INTERVAL"], int(os.environ["SHORT"]), int(os.environ["LONG"])

def agent(cycles, tag, tel):
    tag = tag + "-" + tel
    d = "/tmp/vs-" + tag
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([os.environ["VIGIL"], "agent", "--listen", "off", "--state-dir", d, "--prom",
                    d + "/vigil.prom", "--interval", interval, "--jitter", "0", "--cycles",
                    str(cycles), "-c", "gpu.nvlink-counter-interval=20",
                    "-c", "agent.gpu-telemetry=" + tel],
                   stderr=open(os.environ.get("OUT", "/tmp") + "/agent-%s.log" % tag, "w"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = {}
    for line in open(d + "/vigil.prom"):
        if line.startswith("vigil_agent_cpu_seconds_total ") or \
           line.startswith("vigil_agent_cycles_total ") or line.startswith("vigil_healthy "):
            k, v = line.split()
            m[k] = float(v)
    return cpu, m

res = {}
for rnd in range(int(os.environ["ROUNDS"])):
    for tel in ("true", "false"):
        c_short, m_short = agent(short, "short", tel)
        c_long, m_long = agent(long_, "long", tel)
        res.setdefault(tel, []).append((c_short, c_long, m_long))
for tel in ("true", "false"):
    for c_short, c_long, m_long in res[tel]:
        per = (c_long - c_short) / (long_ - short)
        own = m_long["vigil_agent_cpu_seconds_total"] / m_long["vigil_agent_cycles_total"]
        print("== telemetry %s" % tel)
        print("agent all-in CPU: %d cycles %.3f s, %d cycles %.3f s" % (short, c_short, long_, c_long))
        print("per cycle (all in, start-up excluded): %.2f ms" % (per * 1000))
        print("agent's own figure per cycle (first cycle included): %.2f ms" % (own * 1000))
        print("share of one core at a 30 s interval: %.4f %%" % (per / 30 * 100))
        print("vigil_healthy of the last cycle: %s" % m_long.get("vigil_healthy"))
PY
echo "== reference: vigil check --only gpu, a fresh process each run (wall p50 p10 p90, cpu p50 p10 p90 ms)"
rm -rf /tmp/vs-ref && mkdir -p /tmp/vs-ref && $VIGIL check --only gpu --state-dir /tmp/vs-ref --reason
$CB 20 -- $VIGIL check --reason --only gpu --state-dir /tmp/vs-ref | tee -a "$O/agent-gpu-worker.txt"
echo "== reference: the same with the counters read every run"
$CB 10 -- $VIGIL check --reason --only gpu -c gpu.nvlink-counter-interval=0 | tee -a "$O/agent-gpu-worker.txt"
echo "== reference: all checks but gpu, a fresh process each run"
$CB 20 -- $VIGIL check --reason --skip gpu | tee -a "$O/agent-gpu-worker.txt"
echo "== /metrics of the real host (telemetry on), and vigil gather"
# the textfile: the same writer as /metrics (agent_metrics()), and no libmicrohttpd needed
rm -rf /tmp/vs-metrics && mkdir -p /tmp/vs-metrics
$VIGIL agent --listen off --state-dir /tmp/vs-metrics --prom "$O/h200-metrics.prom" --interval 1 \
	--jitter 0 --cycles 3 2>"$O/agent-metrics.log"
grep -c '^vigil_gpu_' "$O/h200-metrics.prom"
grep '^vigil_gpu_telemetry_field_ok' "$O/h200-metrics.prom" | sed 's/{.*field=/ /'
rm -rf /tmp/vs-gather
$VIGIL gather /tmp/vs-gather >"$O/gather.log" 2>&1 || tail "$O/gather.log"
tar -C /tmp -cf "$O/gather.tar" vs-gather
