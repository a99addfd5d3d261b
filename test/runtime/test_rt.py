"""Real-time process set-up (rths_ros/runtime/rt.py): which SCHED_FIFO priority a node process takes, and what a
process records as applied."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rths_ros.app import scenario as scn
from rths_ros.nodes.ft_sensor import FtSensorNode
from rths_ros.nodes.live_view import LiveView
from rths_ros.nodes.recorder import Recorder
from rths_ros.nodes.sim_plant import SimPlantNode
from rths_ros.nodes.supervisor import Supervisor
from rths_ros.runtime.rt import batch_observer, fifo_priority

RT = ["realtime.priority=70", "realtime.observer_priority=20"]


@pytest.mark.parametrize("classes, expected", [
    ((SimPlantNode,), 70), ((FtSensorNode,), 70),
    ((Recorder,), 20), ((Supervisor,), 20), ((LiveView,), 20),
    ((Supervisor, Recorder), 20),
    ((Recorder, Supervisor, SimPlantNode, FtSensorNode), 70),     # a composed process steps the loop
])
def test_the_loop_takes_realtime_priority_and_observers_their_own(classes, expected):
    s = scn.load("contact_1d", RT, "realtime")
    assert fifo_priority(s, classes) == expected


def test_lockstep_runs_never_take_sched_fifo():
    s = scn.load("contact_1d", RT, "lockstep")
    assert fifo_priority(s, (SimPlantNode,)) == 0
    assert fifo_priority(s, (Recorder,)) == 0


@pytest.mark.parametrize("mode, sets, classes, expected", [
    ("lockstep", [], (Recorder,), True), ("lockstep", [], (Supervisor, Recorder), True),
    ("lockstep", [], (LiveView,), True), ("lockstep", [], (SimPlantNode,), False),
    ("lockstep", [], (Recorder, Supervisor, SimPlantNode, FtSensorNode), False),    # a composed process steps the loop
    ("lockstep", ["realtime.lockstep_observers_batch=false"], (Recorder,), False),
    ("realtime", [], (Recorder,), False),                  # realtime: realtime.observer_priority decides
])
def test_the_observers_of_a_lockstep_run_are_batch(mode, sets, classes, expected):
    assert batch_observer(scn.load("contact_1d", sets, mode), classes) is expected


# a child that starts at normal scheduling, as a node process does (`make test` runs the unit tests at SCHED_IDLE)
NORMAL = "os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))\n"


@pytest.mark.parametrize(("start", "policy", "took", "said"), [
    ("SCHED_OTHER", "SCHED_BATCH", True, "SCHED_BATCH from START"),
    # a run started with `chrt --idle` (or beside a serial test in `make test`): batch would raise its observers
    ("SCHED_IDLE", "SCHED_IDLE", False, "SCHED_IDLE kept at START (below SCHED_BATCH)"),
])
def test_an_observer_process_goes_batch_at_start_with_every_thread_and_says_so(start, policy, took, said):
    code = ("import os, threading\n"
            f"os.sched_setscheduler(0, os.{start}, os.sched_param(0))\n"
            "from rths_ros.runtime.rt import apply_realtime, applied_settings, enter_batch\n"
            "a, w = apply_realtime(gc_freeze=False, batch_from_start=True)\n"
            "apply_realtime(gc_freeze=False)\n"      # node_main's later call (the gc freeze) keeps the request
            f"before = os.sched_getscheduler(0) == os.{start}\n"
            "ev = threading.Event()\n"
            "t = threading.Thread(target=ev.wait)\n"
            "t.start()\n"
            "first, again = enter_batch(), enter_batch()\n"
            "policies = {os.sched_getscheduler(int(tid)) for tid in os.listdir('/proc/self/task')}\n"
            "ev.set(); t.join()\n"
            f"print(repr((a, w, before, first, again, policies == {{os.{policy}}}, applied_settings())))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # (a literal of the child's own making): nothing at start-up, every thread's policy at START, decided once
    assert eval(p.stdout.strip()) == ([], None, True, took, False, True, (said,))


def test_a_process_not_asked_to_stays_as_it_is_at_start():
    code = ("import os\n"
            f"{NORMAL}"
            "from rths_ros.runtime.rt import apply_realtime, enter_batch\n"
            "apply_realtime(gc_freeze=False)\n"
            "print(repr((enter_batch(), os.sched_getscheduler(0) == os.SCHED_OTHER)))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert eval(p.stdout.strip()) == (False, True)


def test_observer_priority_is_validated_naming_the_key():
    with pytest.raises(scn.ParameterError, match=r"realtime\.observer_priority.*100"):
        scn.load("contact_1d", ["realtime.observer_priority=100"], "realtime")


def test_applied_settings_record_what_the_os_granted():
    # in a child process: SCHED_FIFO must not stay on the test process
    code = ("from rths_ros.runtime.rt import apply_realtime, applied_settings\n"
            "a, w = apply_realtime(priority=3, gc_freeze=False)\n"
            "print(repr((a, w, applied_settings())))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    applied, warning, recorded = eval(p.stdout.strip())        # (a literal of the child's own making)
    assert recorded == tuple(applied)
    if warning is None:
        assert applied == ["SCHED_FIFO 3", "one BLAS thread"]
    else:                                                       # not granted: nothing claimed
        assert applied == [] and "SCHED_FIFO priority 3" in warning


def test_a_fifo_process_pinned_to_one_cpu_builds_the_plant_whose_blas_threads_hung_it():
    """With ``realtime.priority`` and ``realtime.cpu_affinity`` on one CPU, a node process forked from the warmed
    runner hung in the plant's construction (the legs' ``expm``): OpenBLAS re-creates its threads in a forked child at
    the first BLAS call, after the switch to FIFO, so they inherit the priority and the CPU, and they spin there beside
    the FIFO thread that waits for them (the run stayed at "0/5 ready", the plant at 95 % of the CPU).  apply_realtime
    now limits a FIFO process to one BLAS thread.  The same sequence here in a child (FIFO must not stay on the test
    process): BLAS used on every CPU, fork, the node's set-up, the plant built again."""
    cpu = max(os.sched_getaffinity(0))
    code = f"""
import os, signal, sys, time
from threadpoolctl import threadpool_info
from rths_ros.app import scenario as scn
from rths_ros.app.factory import build_plant
s = scn.load("contact_1d", [], "realtime")
build_plant(s)                                  # the runner: BLAS threads started on every CPU
pid = os.fork()
if pid == 0:                                    # the node process
    from rths_ros.runtime.rt import apply_realtime
    a, w = apply_realtime(priority=80, cpu_affinity=({cpu},), gc_freeze=False)
    build_plant(s)
    print(repr((a, w, sorted({{p["num_threads"] for p in threadpool_info()}}))), flush=True)
    os._exit(0)
t_end = time.monotonic() + 30
while time.monotonic() < t_end:
    if os.waitpid(pid, os.WNOHANG)[0]:
        sys.exit(0)
    time.sleep(0.05)
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
sys.exit(3)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode != 3, "the FIFO process pinned to one CPU did not build the plant within 30 s"
    assert p.returncode == 0, p.stderr
    applied, warning, threads = eval(p.stdout.strip())         # (a literal of the child's own making)
    assert warning is None, warning
    assert applied == ["SCHED_FIFO 80", "one BLAS thread", f"affinity [{cpu}]"] and threads == [1]
