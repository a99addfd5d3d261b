"""FACE outputs: face.json, report.md and the plots of a result, and the point records saved as ``.npz``."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rths_ros.analysis.face.plots import plot_convergence, plot_tau_fei
from rths_ros.analysis.face.spec import SweepSpec

#: an array of which :data:`_PROBE_BYTES` from its middle compress to more than this fraction is stored as it is
#: (the probe costs about a tenth of compressing the array): zlib spends
#: most of a record's time on such channels (a 4000-step contact_1d record: the motor currents, 3.6 of 10.6 ms,
#: to save 6 % of their bytes; the commanded interface position and the measured force, 94 and 90 %)
_STORE_ABOVE = 0.85
_PROBE_BYTES = 4096


def _save_record(path: Path, rec: Mapping) -> None:
    """The record as an ``.npz`` (``np.load`` reads it): each array deflated at zlib level 1 (about three times
    faster than numpy's default 6 for a few per cent more bytes), or stored as it is where a probe of its bytes
    shows that zlib would hardly shrink it (:data:`_STORE_ABOVE`).  A 4000-step record of contact_1d: 12.4 ms
    -> 8 ms, 0.60 -> 0.64 MB."""
    import io
    import zipfile
    import zlib
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with zipfile.ZipFile(tmp, "w") as zf:
        for k, v in rec.items():
            a = np.asarray(v)
            if a.dtype == object:
                continue
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, allow_pickle=False)
            data = buf.getbuffer()
            mid = max(0, (len(data) - _PROBE_BYTES) // 2)
            probe = bytes(data[mid:mid + _PROBE_BYTES])
            stored = len(data) > 2 * _PROBE_BYTES and len(zlib.compress(probe, 1)) > _STORE_ABOVE * len(probe)
            zf.writestr(f"{k}.npy", data, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED,
                        compresslevel=None if stored else 1)
    tmp.replace(path)


def _load_record(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        out = {}
        for k in z.files:
            a = z[k]
            out[k] = a.item() if a.ndim == 0 else a
    return out



def _json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items() if not k.startswith("_")}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(float(x)) else None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def write_outputs(result: Mapping, out_dir: str | Path, spec: SweepSpec | None = None) -> dict:
    """face.json, convergence.png, report.md and, for a sweep of an added delay, tau_fei.png
    (:func:`plot_tau_fei`) in ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "face.json").write_text(json.dumps(_json_safe(dict(result)), indent=1))
    png = plot_convergence(result, out / "convergence.png")
    lines = [f"# FACE: {result['name']}", ""]
    if result.get("description"):
        lines += [result["description"], ""]
    setup = result.get("setup") or {}
    if setup.get("plant"):
        lines += [f"Runs: runner `{setup.get('runner')}`, plant `{setup['plant']}`, mode `{setup.get('mode')}`"
                  + (", composed" if setup.get("composed") else "") + ".", ""]
    v = result.get("verdict")
    if v:
        lines += [f"**Verdict: {v['text']}**", "",
                  "| check | value | threshold | passed |", "|---|---|---|---|"]
        lines += [f"| {c['name'].replace('|', chr(92) + '|')} | "
                  f"{_pct(c['value']) if c['threshold'] is not None else ('yes' if c['value'] else 'no')}"
                  f" | {_pct(c['threshold']) if c['threshold'] is not None else 'required'} | "
                  f"{'yes' if c['passed'] else 'no'} |" for c in v["checks"]]
        lines += [""]
    lines += [f"Degraded parameter `{result['parameter']}`; e = `{result['e_measure']}`, q = `{result['q_measure']}`; "
              f"h: degree {result['fit']['degree']}{' in dB' if result['fit']['db'] else ''}"
              f"{', h′(0) = 0' if result['fit']['zero_slope_at_zero'] else ''}"
              f"{', constant' if result['fit']['constant'] else ''}; {result['n_used']} points used.", "",
              "| quantity | value |", "|---|---|",
              f"| e_min | {result['e_min']:.5g} |", f"| q_min | {result['q_min']:.5g} |",
              f"| q_pred = h(0) | {result['q_pred']:.5g} |",
              f"| error estimate \\|q_min − q_pred\\| / q_pred | {_pct(result['error_estimate'])} |"]
    if result.get("q_ref") is not None:
        lines += [f"| reference q̂ | {result['q_ref']:.5g} |",
                  f"| prediction error \\|q_pred − q̂\\| / q̂ | {_pct(result['prediction_error'])} |",
                  f"| test error \\|q_min − q̂\\| / q̂ | {_pct(result['test_error'])} |"]
    lines += [f"| constant curvature on [0, e_max] | {result['fit']['constant_curvature']} |",
              f"| magnitude gradient check | {result['fit']['gradient_check']} |", "",
              "## Points", "", "| # | parameter | e | q | used |", "|---|---|---|---|---|"]
    for p in result["points"]:
        test = " (the test: q_min)" if p["e"] == result["e_min"] else ""
        lines.append(f"| {p['index']} | {p['parameter']:g} | {p['e']:.5g} | {p['q']:.5g} | "
                     f"{'yes' if p['used'] else 'no: ' + p['reason']}{test} |")
    if result.get("warnings"):
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result["warnings"]]
    lines += ["", f"![convergence plot]({png.name})", ""]
    paths = {"json": out / "face.json", "png": png, "report": out / "report.md"}
    tf = result.get("tau_fei")
    if tf:
        paths["tau_fei_png"] = plot_tau_fei(result, out / "tau_fei.png")
        fmt = lambda v: "–" if v is None else f"{v:.3f}"
        lines += ["## Equivalent delay against the added delay (§11.3.1)", "",
                  "| form | slope d τ_FEI / d τ_add | slope, lower half | slope, upper half |", "|---|---|---|---|",
                  f"| adapted | {fmt(tf['slope_adapted'])} | | |",
                  f"| standard | {fmt(tf['slope_standard'])} | {fmt(tf['slope_standard_low'])} | "
                  f"{fmt(tf['slope_standard_high'])} |", "",
                  f"Slopes over the runs with τ_add > 0; halves split at τ_add = {1e3 * tf['tau_add_mid_s']:.4g} ms.",
                  "", "![tau_FEI against tau_add](tau_fei.png)", ""]
    elif (out / "tau_fei.png").exists():
        (out / "tau_fei.png").unlink()          # left from an earlier analysis of another sweep
    (out / "report.md").write_text("\n".join(lines))
    return paths
