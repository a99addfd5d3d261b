"""Gait measures of a VPP walking record (Insam 2022 §15.1 and ch. 17).

Input: a record dict as returned by :func:`rths_ros.core.models.gait.vpp.simulate` (arrays ``t``, ``y``, ``vx``,
``contact_l``/``contact_r``, ``grf_x_*``/``grf_y_*``, ``tau_*`` plus ``bw_n`` and ``l0_m``).

Measures (means over the complete strides of the record; a stride is touch-down to touch-down of the
same leg):

* ``stride_s`` - stride (gait-cycle) duration, right leg touch-downs (left if the right has < 2);
* ``stance_fraction_l`` / ``_r`` - stance duration / stride duration per leg;
* ``double_support_fraction`` - time with both feet down / total time of the complete strides;
* ``com_peak_to_peak_m`` and ``com_amplitude_m`` (= half the peak-to-peak) of the CoM height per stride;
* ``grf_y_peak1_bw`` / ``grf_y_peak2_bw`` - maxima of the vertical GRF in the first and second half of
  each stance, ``grf_y_min_bw`` - the minimum between them, ``grf_x_max_bw`` - max |GRF_x|, all / BW;
* ``hip_torque_max_bw_l0`` / ``_min_`` - extreme hip torques / (BW l0);
* ``speed_m_per_s`` - mean forward speed, ``speed_step_change_max`` - largest step-to-step relative
  change of the mid-stance speed.
"""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.models.gait.vpp_ic import step_speeds


def _edges(flag: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = flag > 0.5
    up = np.nonzero(~f[:-1] & f[1:])[0] + 1
    down = np.nonzero(f[:-1] & ~f[1:])[0] + 1
    return t[up], t[down]


def stance_intervals(rec: dict, leg: str) -> list[tuple[int, int]]:
    """Index ranges [i0, i1) of complete stance phases (touch-down and take-off inside the record)."""
    f = rec[f"contact_{leg}"] > 0.5
    up = np.nonzero(~f[:-1] & f[1:])[0] + 1
    down = np.nonzero(f[:-1] & ~f[1:])[0] + 1
    out = []
    for i0 in up:
        later = down[down > i0]
        if later.size:
            out.append((int(i0), int(later[0])))
    return out


def gait_measures(rec: dict) -> dict:
    """Compute the measures listed in the module doc; NaN where the record is too short."""
    t, y = rec["t"], rec["y"]
    bw, l0 = rec["bw_n"], rec["l0_m"]
    res: dict = {}
    td = {leg: _edges(rec[f"contact_{leg}"], t)[0] for leg in ("l", "r")}
    ref = "r" if len(td["r"]) >= 2 else "l"
    strides = np.diff(td[ref])
    res["stride_s"] = float(strides.mean()) if strides.size else math.nan
    for leg in ("l", "r"):
        iv = stance_intervals(rec, leg)
        dur = np.array([t[b] - t[a] for a, b in iv])
        res[f"stance_s_{leg}"] = float(dur.mean()) if dur.size else math.nan
        res[f"stance_fraction_{leg}"] = res[f"stance_s_{leg}"] / res["stride_s"] if strides.size else math.nan
    if len(td[ref]) >= 2:
        a, b = np.searchsorted(t, td[ref][0]), np.searchsorted(t, td[ref][-1])
        both = (rec["contact_l"][a:b] > 0.5) & (rec["contact_r"][a:b] > 0.5)
        res["double_support_fraction"] = float(both.mean())
        p2p = []
        for k in range(len(td[ref]) - 1):
            i0, i1 = np.searchsorted(t, td[ref][k]), np.searchsorted(t, td[ref][k + 1])
            p2p.append(y[i0:i1].max() - y[i0:i1].min())
        res["com_peak_to_peak_m"] = float(np.mean(p2p))
        res["com_amplitude_m"] = 0.5 * res["com_peak_to_peak_m"]
    else:
        res["double_support_fraction"] = res["com_peak_to_peak_m"] = res["com_amplitude_m"] = math.nan
    pk1, pk2, mn, gx, tmax, tmin = [], [], [], [], [], []
    for leg in ("l", "r"):
        for a, b in stance_intervals(rec, leg):
            gy = rec[f"grf_y_{leg}"][a:b] / bw
            if gy.size < 4:
                continue
            h = gy.size // 2
            i1, i2 = int(np.argmax(gy[:h])), h + int(np.argmax(gy[h:]))
            pk1.append(gy[i1])
            pk2.append(gy[i2])
            mn.append(gy[i1:i2 + 1].min())
            gx.append(np.abs(rec[f"grf_x_{leg}"][a:b]).max() / bw)
            tau = rec[f"tau_{leg}"][a:b] / (bw * l0)
            tmax.append(tau.max())
            tmin.append(tau.min())

    def _m(v):
        return float(np.mean(v)) if v else math.nan

    res.update(grf_y_peak1_bw=_m(pk1), grf_y_peak2_bw=_m(pk2), grf_y_min_bw=_m(mn), grf_x_max_bw=_m(gx),
               hip_torque_max_bw_l0=_m(tmax), hip_torque_min_bw_l0=_m(tmin))
    res["speed_m_per_s"] = float((rec["x"][-1] - rec["x"][0]) / (t[-1] - t[0])) if t.size > 1 else math.nan
    v = step_speeds(rec)
    res["speed_step_change_max"] = float((np.abs(np.diff(v)) / np.abs(v[:-1])).max()) if len(v) > 1 else math.nan
    return res
