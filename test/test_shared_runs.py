"""The test sessions' shared runs (test/shared_runs.py): a run that ended with a code its caller does not accept is
run once more for the next caller, never a third time; an accepted end is read back without a new run."""
from __future__ import annotations

import json

import pytest
import shared_runs


def test_a_failed_shared_run_is_run_once_more_for_the_next_caller_and_not_a_third_time(tmp_path, monkeypatch):
    monkeypatch.setenv(shared_runs.ENV, str(tmp_path))
    # an unknown scenario: `rths run` refuses it at once with exit code 2, a real end of the real command
    name = "no_such_scenario_for_the_shared_runs_test"
    for attempt in (1, 2, 2):
        with pytest.raises(AssertionError, match="exited 2"):
            shared_runs.shared_run(name, codes=(0,))
        (home,) = tmp_path.iterdir()
        result = json.loads((home / "result.json").read_text())
        assert result["attempts"] == attempt
        assert result["returncode"] == 2
    # a caller that accepts the end reads the stored run: no further attempt
    run = shared_runs.shared_run(name, codes=(2,))
    assert run.returncode == 2 and "no_such_scenario" in run.stdout + run.stderr
    assert json.loads((home / "result.json").read_text())["attempts"] == 2
