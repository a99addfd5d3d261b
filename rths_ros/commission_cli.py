"""``rths commission``: check a hexapod's leg wiring before the first test (docs/commissioning.md).

    rths commission SCENARIO [--set ...] [--amplitude-m 0.002] [--speed-m-per-s 0.01] [--hold-s 0.3]
                    [--home-tolerance-m 0.005] [--legs 1,2,...] [--out DIR] [--twin | --link [HOST:PORT]]

By default the rig is the scenario's ros2_control rig (``plant = ros2_control``, realtime; with
``ros2_control.emulate: true`` the emulator in process, with its wiring faults), through
:class:`~rths_ros.runtime.ros2_control_rig.Ros2ControlRig`.  ``--link`` checks the platform controller over the
platform link instead (lockstep; with ``hardware.emulate: true`` and no address the platform emulator in process),
``--twin`` the scenario's digital twin in process.  The analysis is :mod:`rths_ros.core.platform.commissioning`.
Prints the initial check, one row per jogged leg and the verdict, writes ``commission.json`` to ``--out`` and exits
0 when the check passed, 1 when it found a fault, 2 for a refused setting.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError, to_dict

__all__ = ["add_parsers", "cmd_commission", "TwinJogRig", "LinkJogRig"]


class _SteppedJogRig:
    """A rig stepped one command row at a time (``dt_s``, ``read_lengths``, ``play``): every trajectory is checked
    whole before its first row goes out (finite, stroke, leg speed), as the ros2_control rig client does."""

    def __init__(self, scenario):
        self.dt_s = float(scenario.loop.dt_s)
        g = scenario.platform.geometry
        self.limits = (g.leg_length_min_m, g.leg_length_max_m, g.leg_velocity_max_m_per_s)
        self._last = None

    def step_row(self, row) -> np.ndarray:
        """Command one row of leg lengths; the measured lengths after it."""
        raise NotImplementedError

    def play(self, lengths) -> dict:
        from rths_ros.runtime.ros2_control_rig import RigCommandRefused, command_refusal
        b = np.asarray(lengths, dtype=float)
        why = command_refusal(b, self._last if self._last is not None else self.read_lengths(), self.limits,
                              self.dt_s)
        if why is not None:
            raise RigCommandRefused(why)
        out = np.empty_like(b)
        for k, row in enumerate(b):
            out[k] = self.step_row(row)
        self._last = b[-1].copy()
        return {"lengths": out, "commanded": b}


class TwinJogRig(_SteppedJogRig):
    """The scenario's digital twin in process, one step per commanded row."""

    def __init__(self, scenario):
        from rths_ros.app import factory
        super().__init__(scenario)
        self.plant = factory.build_plant(scenario)
        self.out = self.plant.reset(factory.plant_seed(scenario, 0))

    def read_lengths(self, timeout_s: float = 1.0) -> np.ndarray:
        return np.array(self.out.lengths, dtype=float)

    def step_row(self, row) -> np.ndarray:
        self.out = self.plant.step(row)
        return self.out.lengths


class LinkJogRig(_SteppedJogRig):
    """The platform controller over the platform link, lockstep: RESET, then one COMMAND per row (the link's
    STATE of the next step is the measurement)."""

    def __init__(self, client, scenario):
        super().__init__(scenario)
        self.client = client
        self._state = client.reset()
        self._step = 0

    def read_lengths(self, timeout_s: float = 1.0) -> np.ndarray:
        return np.array(self._state.length, dtype=float)

    def step_row(self, row) -> np.ndarray:
        self._state = self.client.step(self._step, row)
        self._step += 1
        return self._state.length


def _legs(text: str) -> tuple[int, ...]:
    try:
        legs = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(f"--legs: {text!r} is not allowed; expected leg numbers 1..6, e.g. 1,2,3") from None
    if not legs or not all(1 <= v <= 6 for v in legs) or len(set(legs)) != len(legs):
        raise ParameterError(f"--legs: {text!r} is not allowed; expected distinct leg numbers 1..6")
    return legs


def _params(a):
    from rths_ros.core.platform.commissioning import CommissioningParams
    from rths_ros.params import build
    values = {"amplitude_m": a.amplitude_m, "speed_m_per_s": a.speed_m_per_s, "hold_s": a.hold_s,
              "home_tolerance_m": a.home_tolerance_m}
    values = {k: v for k, v in values.items() if v is not None}
    if a.legs:
        values["legs"] = list(_legs(a.legs))
    try:
        return build(CommissioningParams, values)
    except ParameterError as exc:      # name the options
        text = str(exc)
        for key in ("amplitude_m", "speed_m_per_s", "hold_s", "home_tolerance_m"):
            text = text.replace(key, "--" + key.replace("_", "-"), 1) if text.startswith(key) else text
        raise ParameterError(text) from None


def cmd_commission(a) -> int:
    """The check on the chosen rig: initial check, jogs, verdict, commission.json."""

    from rths_ros.app import factory
    from rths_ros.core.platform.commissioning import commission
    p = _params(a)
    closers = []
    if a.twin:
        s = scn.load(a.scenario, a.set)
        rig = TwinJogRig(s)
        where = "the digital twin (in process)"
    elif a.link is not None:
        s = scn.load(a.scenario, a.set)
        from rths_ros.app.emulated_rig import open_platform_link
        client, where = open_platform_link(s, a.link, closers)
        rig = LinkJogRig(client, s)
        where = f"the {where}"
    else:
        from rths_ros.runtime.ros2_control_rig import Ros2ControlRig, load_rig_scenario
        s = load_rig_scenario(a.scenario, a.set)
        rig = Ros2ControlRig(s)
        rig.start()
        closers.append(rig)
        rc = s.ros2_control
        where = (f"the ros2_control rig ({rc.command_topic} -> {rc.joint_state_topic}"
                 + (", emulated" if rc.emulate else f", ROS domain {rig.domain_id}") + ")")
    g = s.platform.geometry
    expected = factory.start_lengths(s)
    out = Path(a.out) if a.out else Path("runs") / f"commission-{s.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    print(f"rths commission {s.name}: {where}; legs {', '.join(map(str, p.legs))} jogged {p.amplitude_m * 1e3:g} mm "
          f"at {p.speed_m_per_s * 1e3:g} mm/s, {p.hold_s:g} s holds")
    t0 = time.monotonic()
    try:
        if hasattr(rig, "wait_ready"):
            rig.wait_ready()
        res = commission(rig, expected, g.leg_length_min_m, g.leg_length_max_m, p,
                         progress=lambda j: print(f"  leg {j.leg} jogged ({time.monotonic() - t0:5.1f} s)",
                                                  flush=True))
        extra = rig.emulator_summary() if hasattr(rig, "emulator_summary") else {}
    except Exception as exc:
        from rths_ros.drivers.platform_link import PlatformLinkError
        from rths_ros.runtime.ros2_control_rig import RigError
        if isinstance(exc, (RigError, PlatformLinkError)):
            print(f"rths commission: error: {exc}", file=sys.stderr)
            return 1
        raise
    finally:
        for c in closers:
            c.close()
    m, e = res.measured_m, res.expected_m
    print("initial: measured " + ", ".join(f"{v:.6f}" for v in m) + " m")
    print("         expected " + ", ".join(f"{v:.6f}" for v in e) + f" m (stroke [{g.leg_length_min_m:.4f}, "
          f"{g.leg_length_max_m:.4f}] m)")
    print("         " + ("not as expected: see the verdict" if res.initial_faults
                         else f"inside the stroke, at the expected pose within {p.home_tolerance_m * 1e3:g} mm"))
    if res.jogged:
        print(res.table())
    else:
        print("no jog: a leg is outside the stroke (nothing was commanded)")
    print("PASS: legs, order, signs and gains as expected" if res.passed else
          "FAIL: " + "\n      ".join(res.faults))
    out.mkdir(parents=True, exist_ok=True)
    data = {"scenario": s.name, "rig": where, "params": to_dict(p), **res.to_dict(), "emulator": extra}
    (out / "commission.json").write_text(json.dumps(data, indent=2))
    print(f"-> {out / 'commission.json'} in {time.monotonic() - t0:.1f} s")
    return 0 if res.passed else 1


def add_parsers(sub, scenario_args) -> None:
    """The subcommand, on the ``rths`` parser's ``sub``; ``scenario_args`` adds SCENARIO and --set."""
    c = sub.add_parser("commission", help="check the legs' order, signs and mapping on the rig (jogs each leg)")
    scenario_args(c)
    rig = c.add_mutually_exclusive_group()
    rig.add_argument("--twin", action="store_true", help="check the digital twin in process")
    rig.add_argument("--link", nargs="?", const="", default=None, metavar="HOST:PORT",
                     help="check the platform controller over the platform link (without HOST:PORT the scenario's "
                          "hardware.platform_link, or the in-process emulator when hardware.emulate is true); "
                          "default: the ros2_control rig")
    c.add_argument("--amplitude-m", type=float, default=None, metavar="M", help="jog of each leg (default 0.002 m)")
    c.add_argument("--speed-m-per-s", type=float, default=None, metavar="M_PER_S",
                   help="peak leg speed of the jog's cosine ramps (default 0.01 m/s)")
    c.add_argument("--hold-s", type=float, default=None, metavar="S", help="hold before, at and after each jog "
                   "(default 0.3 s; extended until the legs settle)")
    c.add_argument("--home-tolerance-m", type=float, default=None, metavar="M",
                   help="initial check: largest distance of a leg from the expected pose (default 0.005 m)")
    c.add_argument("--legs", default="", metavar="1,2,...", help="legs to jog (default all six)")
    c.add_argument("--out", help="output directory for commission.json (default runs/commission-NAME-TIME)")
    c.set_defaults(func=cmd_commission)
