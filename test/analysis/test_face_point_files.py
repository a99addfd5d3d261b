"""A FACE point's record file (rths_ros.analysis.face.outputs): every array back exactly as it was, scalars as
scalars; arrays that zlib hardly shrinks are stored as they are, the others deflated."""
from __future__ import annotations

import zipfile

import numpy as np

from rths_ros.analysis.face.outputs import _load_record, _save_record


def test_a_record_round_trips_and_noise_is_stored_while_smooth_data_is_deflated(tmp_path):
    rng = np.random.default_rng(5)
    n = 4001
    rec = {"noise": rng.normal(size=(n, 6)), "zeros": np.zeros(n), "ramp": np.arange(n, dtype=float) * 1e-3,
           "contact": np.zeros(n, dtype=bool), "k": np.arange(n), "dt": 0.001, "aborted": False,
           "abort_reason": "", "tiny": np.array([1.5, 2.5]), "skipped": np.array([object()], dtype=object)}
    path = tmp_path / "points" / "point_000.npz"
    _save_record(path, rec)
    back = _load_record(path)
    assert set(back) == set(rec) - {"skipped"}
    for k in back:
        assert np.array_equal(np.asarray(back[k]), np.asarray(rec[k])), k
    assert back["dt"] == 0.001 and back["aborted"] is False and back["abort_reason"] == ""
    kinds = {i.filename: i.compress_type for i in zipfile.ZipFile(path).infolist()}
    assert kinds["noise.npy"] == zipfile.ZIP_STORED
    assert kinds["zeros.npy"] == kinds["ramp.npy"] == kinds["k.npy"] == zipfile.ZIP_DEFLATED
    assert kinds["tiny.npy"] == zipfile.ZIP_DEFLATED           # too short to probe
    assert not list(path.parent.glob("*.part"))
