"""Where a step's time goes: the loop split into the transport of each topic and each node's own work, from the hop
logs of a run (``recording.hop_log``, :mod:`rths_ros.runtime.hop_log`).

For step k of the loop of separate processes (or composed, where the transport is the local bus):

==============================  =====================================================================
segment                          from → to (each on the machine's monotonic clock)
==============================  =====================================================================
raw_wrench transport             plant publishes raw_wrench k → ft_sensor takes it
ft_sensor work                   ft_sensor takes raw_wrench k → publishes interface_force k
interface_force transport        ft_sensor publishes → numerical_substructure takes it
numerical work                   takes interface_force k → publishes interface_command k+1
interface_command transport      numerical publishes → stewart_platform takes it
platform work                    takes interface_command k+1 → publishes leg_command k+1
leg_command transport            stewart_platform publishes leg_command k+1 → the plant takes it
step round trip                  the plant publishes raw_wrench k → takes leg_command k+1
==============================  =====================================================================

In realtime the plant uses the newest command at its next deadline, ``dt`` after it published step k: a round
trip longer than ``dt`` is a command that comes late.  A step missing from a log (a lost message, the capacity of
the log) leaves that step out of the segments that need it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rths_ros.runtime import hop_log
from rths_ros.runtime.topics import PLANT_PRODUCERS

#: (name, (node, "pub:" or "sub:" + topic, step offset) from, the same to); "plant" is the run's plant node
SEGMENTS = (
    ("raw_wrench transport", ("plant", "pub:/rths/raw_wrench", 0), ("ft_sensor", "sub:/rths/raw_wrench", 0)),
    ("ft_sensor work", ("ft_sensor", "sub:/rths/raw_wrench", 0), ("ft_sensor", "pub:/rths/interface_force", 0)),
    ("interface_force transport", ("ft_sensor", "pub:/rths/interface_force", 0),
     ("numerical_substructure", "sub:/rths/interface_force", 0)),
    ("numerical work", ("numerical_substructure", "sub:/rths/interface_force", 0),
     ("numerical_substructure", "pub:/rths/interface_command", 1)),
    ("interface_command transport", ("numerical_substructure", "pub:/rths/interface_command", 1),
     ("stewart_platform", "sub:/rths/interface_command", 1)),
    ("platform work", ("stewart_platform", "sub:/rths/interface_command", 1),
     ("stewart_platform", "pub:/rths/leg_command", 1)),
    ("leg_command transport", ("stewart_platform", "pub:/rths/leg_command", 1), ("plant", "sub:/rths/leg_command", 1)),
    ("step round trip", ("plant", "pub:/rths/raw_wrench", 0), ("plant", "sub:/rths/leg_command", 1)),
)


def _by_step(logs: dict, node: str, key: str) -> dict[int, int]:
    steps, t = logs.get(node, {}).get(key, (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
    return dict(zip(steps.tolist(), t.tolist()))        # (a repeated step: its last time)


def segments_by_step(timing_dir: Path) -> dict[str, dict[int, float]]:
    """{segment: {step k of the plant's measurement: duration [s]}} over the steps found at both ends."""
    logs = hop_log.load(timing_dir)
    plant = next((p for p in PLANT_PRODUCERS if p in logs), "sim_plant")
    out = {}
    for name, (n0, k0, d0), (n1, k1, d1) in SEGMENTS:
        a = _by_step(logs, plant if n0 == "plant" else n0, k0)
        b = _by_step(logs, plant if n1 == "plant" else n1, k1)
        out[name] = {k - d0: (b[k + d1 - d0] - a[k]) * 1e-9 for k in sorted(a) if k + d1 - d0 in b}
    return out


def segments(timing_dir: Path) -> dict[str, np.ndarray]:
    """{segment: durations [s] over the steps found at both ends} of a run's hop logs (:data:`SEGMENTS`)."""
    return {name: np.array(list(by.values())) for name, by in segments_by_step(timing_dir).items()}


def summary(seg: dict[str, np.ndarray], dt_s: float | None = None) -> dict[str, dict]:
    """Per segment: steps, mean, p50, p99, p99.9, max [s]; the round trip's share longer than ``dt_s``."""
    res = {}
    for name, x in seg.items():
        if x.size == 0:
            res[name] = {"steps": 0}
            continue
        r = {"steps": int(x.size), "mean_s": float(x.mean()), "p50_s": float(np.percentile(x, 50)),
             "p99_s": float(np.percentile(x, 99)), "p999_s": float(np.percentile(x, 99.9)), "max_s": float(x.max())}
        if dt_s and name == "step round trip":
            r["over_dt"] = float(np.mean(x > dt_s))
        res[name] = r
    return res


def markdown(summ: dict[str, dict]) -> str:
    lines = ["| segment | steps | mean [ms] | p50 [ms] | p99 [ms] | p99.9 [ms] | max [ms] |", "|---|---|---|---|---|---|---|"]
    for name, r in summ.items():
        if not r.get("steps"):
            lines.append(f"| {name} | 0 | | | | | |")
            continue
        lines.append(f"| {name} | {r['steps']} | {1e3 * r['mean_s']:.3f} | {1e3 * r['p50_s']:.3f} | "
                     f"{1e3 * r['p99_s']:.3f} | {1e3 * r['p999_s']:.3f} | {1e3 * r['max_s']:.3f} |")
    return "\n".join(lines)


def plot(seg: dict[str, np.ndarray], path: Path, title: str, dt_s: float | None = None) -> Path:
    """One histogram per segment (log counts, common axis), p50 and p99.9 marked, ``dt`` on the round trip."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [n for n, x in seg.items() if x.size]
    fig, axes = plt.subplots(max(1, len(names)), 1, figsize=(8, 1.6 * max(1, len(names)) + 0.8), sharex=True)
    axes = np.atleast_1d(axes)
    hi = max([float(np.percentile(seg[n], 99.95)) * 1e3 for n in names] + [(dt_s or 0.0) * 1e3 * 1.1, 0.05])
    bins = np.linspace(0.0, hi, 150)
    for ax, name in zip(axes, names):
        ms = seg[name] * 1e3
        ax.hist(np.clip(ms, 0.0, hi), bins=bins, color="tab:blue", alpha=0.85)
        for q, style in ((50, "--"), (99.9, ":")):
            v = float(np.percentile(ms, q))
            ax.axvline(v, color="k", ls=style, lw=1, label=f"p{q:g} {v:.3f} ms")
        if dt_s and name == "step round trip":
            ax.axvline(dt_s * 1e3, color="tab:red", lw=1.5, label=f"dt {dt_s * 1e3:g} ms")
        ax.set_yscale("log")
        ax.set_ylabel("steps", fontsize=8)
        ax.set_title(name, fontsize=9, loc="left")
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("duration [ms] (the last bin holds everything beyond)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
