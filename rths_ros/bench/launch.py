"""``rths bench launch``: each scenario through ``ros2 launch rths_ros rths.launch.py``: exit code, wall time,
whether metrics.json was written."""
from __future__ import annotations

import os
import time
from pathlib import Path

from rths_ros.app import scenario as scn


def ros2_command() -> str | None:
    """The `ros2` command of this environment (the venv's, else one on PATH), or None."""
    import shutil
    import sys
    here = Path(sys.prefix) / "bin" / "ros2"
    return str(here) if here.exists() else shutil.which("ros2")


def bench_launch(names: list[str], out_dir: Path, log=print) -> list[dict]:
    """Run each scenario with ``ros2 launch rths_ros rths.launch.py scenario:=X out:=OUT/X`` (its own ROS
    domain each), one after the other; exit code, wall time and whether metrics.json was written."""
    import subprocess

    from rths_ros.runner import DomainLease
    ros2 = ros2_command()
    if ros2 is None:
        raise scn.ParameterError("rths bench launch: no `ros2` command (source a ROS 2 distribution, or let "
                                 "scripts/setup_env.sh install the launch tooling)")
    rows = []
    for i, name in enumerate(names, 1):
        out = out_dir / name
        lease = DomainLease()
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id),
                   ROS_AUTOMATIC_DISCOVERY_RANGE=os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"))
        log(f"  [{i}/{len(names)}] ros2 launch rths_ros rths.launch.py scenario:={name} out:={out}")
        t0 = time.monotonic()
        with open(out_dir / f"{name}.launch.log", "wb") as fh:
            p = subprocess.run([ros2, "launch", "rths_ros", "rths.launch.py", f"scenario:={name}", f"out:={out}"],
                               stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        wall = time.monotonic() - t0
        lease.close()
        s = scn.load(name)
        row = {"scenario": name, "exit_code": p.returncode, "wall_s": wall, "steps": s.steps * s.loop.trials,
               "metrics": (out / "metrics.json").is_file(), "log": str(out_dir / f"{name}.launch.log")}
        rows.append(row)
        log(f"      exit {p.returncode}, {wall:.1f} s, metrics.json {'written' if row['metrics'] else 'MISSING'}")
    return rows


def markdown_launch(rows: list[dict]) -> str:
    lines = ["| scenario | steps | exit code | wall [s] | metrics.json |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['steps']} | {r['exit_code']} | {r['wall_s']:.1f} | "
                     f"{'yes' if r['metrics'] else 'no'} |")
    return "\n".join(lines)
