"""Diagnostics of a process that seems stuck: ``kill -USR1`` prints the stack of every thread and the process goes
on (rths_ros.runtime.crash.stacks_on_sigusr1; the runner and every node process register it)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

PROGRAM = """
import threading, time
from rths_ros.runtime.crash import stacks_on_sigusr1
stacks_on_sigusr1()
def waiting_in_a_helper_thread():
    time.sleep(60)
threading.Thread(target=waiting_in_a_helper_thread, name="helper", daemon=True).start()
print("ready", flush=True)
for _ in range(600):
    time.sleep(0.1)
"""


def test_sigusr1_prints_every_threads_stack_and_the_process_goes_on():
    p = subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        assert p.poll() is None, "the process ended on SIGUSR1"
    finally:
        p.kill()
        _, err = p.communicate(timeout=30)
    assert "Current thread" in err or "Thread 0x" in err, err
    assert "waiting_in_a_helper_thread" in err and "<module>" in err, err
