"""Damaged bags: `rths analyze` recovers the complete chunks of a bag cut short, emptied or overwritten, whether its
metadata.yaml is there or not, says what it recovered, never claims more than survived (status incomplete, exit
3, 0 with --partial), never prints a traceback, and leaves no metrics.json or report.md of an earlier analysis
that would claim to describe the damaged bag.

The bag is a real one: a 3 s lockstep contact_1d run through the node graph (its recorder flushes a chunk every
0.25 s, so the file has several chunks).  The property test cuts it at 12 random offsets (hypothesis) and checks each
outcome against the recovered bag itself, read back message by message.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rths_ros import cli
from rths_ros.bag import bag_damage, read_bag

LOOP = {"/rths/interface_command": 0, "/rths/interface_state": 0, "/rths/interface_force": 0,
        "/rths/leg_command": 1, "/rths/leg_state": 0, "/rths/raw_wrench": 0}
LAST = 4000             # the last step of `rths run contact_1d` (4 s at 1 kHz)


@pytest.fixture(scope="module")
def recorded():
    """A finished run directory with its bag, metrics.json and report.md (`rths run contact_1d`, shared with the other
    tests of the session that read it: test/shared_runs.py; each test here changes a copy)."""
    from shared_runs import shared_run
    out = shared_run("contact_1d").out
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "completed" and m["steps_recorded"] == LAST + 1
    return out


def _copy(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    return dest


def _mcap(run: Path) -> Path:
    (f,) = sorted((run / "bag").glob("*.mcap"))
    return f


def _cut(path: Path, fraction: float | None = None, size: int | None = None) -> bytes:
    data = path.read_bytes()
    keep = data[: int(len(data) * fraction) if size is None else size]
    path.write_bytes(keep)
    return keep


def _analyze(run: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = cli.main(["analyze", str(run), *extra])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def _complete(run: Path) -> bool:
    """Oracle: every loop topic of the (recovered) bag holds every step 0..LAST (leg command: 1..LAST)."""
    topics = read_bag(run / "bag")
    for topic, first in LOOP.items():
        steps = {int(m.step) for _, m in topics.get(topic, [])}
        if not set(range(first, LAST + 1)) <= steps:
            return False
    return True


def test_a_bag_cut_to_60_percent_with_its_metadata_present_is_recovered(recorded, tmp_path, capsys):
    run = _copy(recorded, tmp_path / "run")
    assert bag_damage(run / "bag") is None
    cut = _cut(_mcap(run), 0.6)
    assert "cut off" in bag_damage(run / "bag")
    code, out, err = _analyze(run, capsys)
    assert code == 3, (out, err)
    assert "is damaged (bag.mcap: cut off (no end magic" in out and "complete chunks" in out, out
    m = json.loads((run / "metrics.json").read_text())
    assert m["status"] == "incomplete" and 0 < m["steps_recorded"] < LAST + 1 and m["stable"] is None
    assert "complete chunks of a damaged bag (bag.mcap: cut off" in m["bag_recovered"]
    report = (run / "report.md").read_text()
    assert "INCOMPLETE" in report and "bag recovered" in report
    assert not list(run.glob("*.stale"))                       # the new results replaced the old ones
    # nothing is lost: the damaged file and its metadata are kept beside the recovered bag
    assert (run / "bag" / "bag.mcap.partial").read_bytes() == cut
    assert (run / "bag" / "metadata.yaml.partial").exists()
    # the recovered bag reads as it is now, and --partial accepts the partial result
    assert bag_damage(run / "bag") is None
    code, out, _ = _analyze(run, capsys, "--partial")
    assert code == 0 and "is damaged" not in out and "INCOMPLETE" in out


def test_a_bag_cut_before_its_first_loop_chunk_writes_no_metrics_and_marks_the_old_ones_stale(recorded, tmp_path,
                                                                                                capsys):
    run = _copy(recorded, tmp_path / "run")
    _cut(_mcap(run), size=1000)             # the header and the first records: no complete chunk of loop data
    (run / "bag" / "metadata.yaml").unlink()
    code, out, err = _analyze(run, capsys)
    assert code == 3, (out, err)
    assert "is damaged (no metadata.yaml" in out
    assert "no loop data" in err and "in what was recovered of the damaged bag" in err, err
    assert "the run ended before its first step" not in err
    assert not (run / "metrics.json").exists() and not (run / "report.md").exists()
    assert (run / "metrics.json.stale").exists() and (run / "report.md.stale").exists()
    assert "kept as metrics.json.stale, report.md.stale" in err


@pytest.mark.parametrize("content", ["zero bytes", "garbage"])
def test_an_empty_or_overwritten_bag_gives_a_message_not_a_traceback(recorded, tmp_path, capsys, content):
    run = _copy(recorded, tmp_path / "run")
    _mcap(run).write_bytes(b"" if content == "zero bytes" else os.urandom(50_000))
    code, out, err = _analyze(run, capsys)
    assert code == 3, (out, err)
    assert ("zero bytes" if content == "zero bytes" else "no MCAP header") in out
    assert "recovered 0 messages from 0 complete chunks" in out
    # the run's scenario.yaml stood in for the lost scenario message, so the error can name what is missing
    assert "no loop data" in err and "in what was recovered of the damaged bag" in err, err
    assert not (run / "metrics.json").exists()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0.0, 1.0), metadata=st.booleans())
def test_a_bag_cut_anywhere_is_recovered_and_never_claims_more_than_survived(recorded, tmp_path_factory, capsys,
                                                                            fraction, metadata):
    run = _copy(recorded, tmp_path_factory.mktemp("cut") / "run")
    full = _mcap(run).stat().st_size
    cut = _cut(_mcap(run), size=int(full * fraction))
    if not metadata:
        (run / "bag" / "metadata.yaml").unlink()
    code, out, err = _analyze(run, capsys, "--no-plots")    # the figures of a damaged bag: the 60 % test above
    if len(cut) == full and metadata:        # not damaged at all
        assert code == 0 and "is damaged" not in out
        return
    assert "is damaged" in out, out
    assert (run / "bag" / "bag.mcap.partial").read_bytes() == cut       # the damaged file is kept as it was
    if not (run / "metrics.json").exists():
        # nothing of the loop survived: no metrics, the old ones set aside, exit 3
        assert code == 3 and "no loop data" in err and (run / "metrics.json.stale").exists()
        return
    m = json.loads((run / "metrics.json").read_text())
    forces = {int(msg.step) for _, msg in read_bag(run / "bag").get("/rths/interface_force", [])}
    assert m["steps_recorded"] == min(max(forces), LAST) + 1
    complete = _complete(run)
    assert (m["status"] == "completed") == complete, (m["status"], m["run_status"])
    assert code == (0 if complete else 3)
    assert m["bag_recovered"] and yaml.safe_load((run / "bag" / "metadata.yaml").read_text())
    if not complete:
        assert m["stable"] is None or m["stable"] is False
