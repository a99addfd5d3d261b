"""A node process ends without deleting its DDS entities (realtime.dds_teardown = exit, the default;
rths_ros.runtime.teardown): it writes its files, has its last samples acknowledged, removes its own shared-memory
segment and ports and exits with its result code.  The record is the same as with every entity deleted
(dds_teardown = destroy), and nothing of the run is left in /dev/shm."""
from __future__ import annotations

import re

from rths_ros.app import scenario as scn
from rths_ros.runner import run_scenario
from rths_ros.runtime.teardown import EXIT_MARK, TEARDOWN_MARK
from rths_ros.stress import compare, loop_arrays

SHORT = ["loop.duration_s=0.3"]
#: the runner's message when a node ended without deleting its participant and left its segment behind
LEFT_BEHIND = "shared-memory segment(s) of DDS participants that had ended without deleting them"


def _run(tmp_path, name: str, extra: list[str]):
    out = tmp_path / name
    r = run_scenario(scn.load("contact_1d", SHORT + extra), out, progress=False, log=lambda _: None)
    assert r.code == 0 and r.failed_node is None, r.message
    assert not r.warnings, r.warnings
    return r, out


def test_nodes_exit_without_dds_teardown_leave_nothing_and_record_what_a_full_teardown_records(tmp_path):
    r_exit, out_exit = _run(tmp_path, "exit", [])
    r_destroy, out_destroy = _run(tmp_path, "destroy", ["realtime.dds_teardown=destroy"])
    assert set(r_exit.exit_codes) == set(r_destroy.exit_codes) and len(r_exit.exit_codes) >= 5
    for node in r_exit.exit_codes:
        log = (out_exit / "logs" / f"{node}.log").read_text()
        assert TEARDOWN_MARK in log
        m = re.search(rf"{node}: {EXIT_MARK} \(result code 0; its own shared-memory segment and ports removed: "
                      r"(\d+)[;)]", log)
        assert m, log[-2000:]
        # its participant's segment and the two ports it listens on (metatraffic and user data)
        assert int(m.group(1)) == 3, m.group(0)
        assert EXIT_MARK not in (out_destroy / "logs" / f"{node}.log").read_text()
    # no node left a segment for the runner to remove, in either way
    assert LEFT_BEHIND not in r_exit.message and LEFT_BEHIND not in r_destroy.message
    # the same loop data and events, step for step
    assert compare(loop_arrays(out_exit / "bag"), loop_arrays(out_destroy / "bag")) == {}
