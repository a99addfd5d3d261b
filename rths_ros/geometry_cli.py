"""``rths geometry``: the derived geometry of a scenario's Stewart platform -- home leg lengths and joint angles,
the Jacobian's condition number at home and over the interface range, the reach along each interface axis and the
constraint that ends it, the safe pose (rths_ros/core/platform/geometry_report.py; docs/stewart_platform.md,
"Geometry of your rig").  An inconsistent geometry is refused when the scenario loads (exit 2)."""
from __future__ import annotations

import json
import math

from rths_ros.app import scenario as scn
from rths_ros.families import registry
from rths_ros.params import ParameterError


def _vec(v, fmt: str = "{:+.4f}") -> str:
    return "(" + ", ".join(fmt.format(float(x)) for x in v) + ")"


def _q(q) -> str:
    """Interface coordinates: translations in mm, rotation-vector components in deg."""
    return ("x, y, z = " + ", ".join(f"{1e3 * q[i]:+.1f}" for i in range(3)) + " mm; rx, ry, rz = "
            + ", ".join(f"{math.degrees(q[i]):+.2f}" for i in range(3, 6)) + " deg")


def format_report(rep, name: str, dofs: tuple[str, ...], note: str = "") -> str:
    """The report as a readable table (text)."""
    g_lo, g_hi = rep.stroke_m
    out = [f"rths geometry {name}: {rep.layout} joint layout; home TCP at {_vec(rep.home_tcp_m, '{:.4f}')} m"]
    if note:
        out.append(f"note: {note}")
    out.append("")
    out.append(f"{'leg':>3}  {'base joint (world) [m]':^26}  {'platform joint (joint plane) [m]':^32}  "
               f"{'home [m]':>8}  {'angle base/platf. [deg]':>23}  {'safe [m]':>8}")
    ang = rep.joint_angles_home_deg
    for i in range(6):
        out.append(f"{i + 1:>3}  {_vec(rep.base_joints_m[:, i]):^26}  {_vec(rep.platform_joints_m[:, i]):^32}  "
                   f"{rep.home_lengths_m[i]:8.6f}  {ang[0, i]:11.2f} {ang[1, i]:11.2f}  {rep.safe_lengths_m[i]:8.6f}")
    below, above = rep.home_margins_m
    (bd, bi, bj), (pd, pi, pj) = rep.joint_spacing_m
    d, li, lj = rep.leg_clearance
    out += [
        "",
        f"stroke                  [{g_lo:.6f}, {g_hi:.6f}] m; home {below * 1e3:.2f} mm above the minimum, "
        f"{above * 1e3:.2f} mm below the maximum",
        f"joint angles at home    at most {float(ang.max()):.2f} deg (limit {rep.joint_angle_max_deg:g} deg)",
        f"closest joints          base: legs {bi} and {bj}, {bd * 1e3:.1f} mm apart; platform: legs {pi} and {pj}, "
        f"{pd * 1e3:.1f} mm apart",
        f"closest legs at home    legs {li} and {lj}, axes {d * 1e3:.1f} mm apart",
        f"Jacobian condition      {rep.cond_home:.2f} at home; at most {rep.box.cond_max:.2f} over the interface box "
        "(body twist, m and rad)",
        f"safe pose               home moved {rep.safe_retract_m * 1e3:g} mm down: "
        + ("inside the stroke" if rep.safe_inside_stroke else "OUTSIDE the stroke"),
    ]
    b = rep.box
    out += ["", f"interface box: +-{b.interface_limit_m * 1e3:g} mm (safety.interface_limit_m) and "
            f"+-{b.rotation_limit_deg:g} deg (--rotation-deg) in every coordinate, {b.samples} poses on a grid",
            f"  interface frame       mount {rep.mount}, specimen offset {rep.specimen_offset_m:g} m "
            "(platform.interface)",
            f"  largest leg change    {b.leg_change_max_m * 1e3:.1f} mm",
            f"  largest condition     {b.cond_max:.2f} at {_q(b.cond_max_q)}"]
    if b.outside:
        out += [f"  beyond the limits     {b.outside} of {b.samples} poses",
                f"  worst                 {b.worst_limit} exceeded by {_excess(b.worst_limit)} at {_q(b.worst_q)}"]
    else:
        out.append(f"  beyond the limits     none of {b.samples} poses")
    for r in rep.reach:
        if r.axis in dofs and not r.rotation:
            short = min((r.plus, r.plus_limit), (r.minus, r.minus_limit), key=lambda x: x[0])
            verdict = ("within reach" if short[0] >= b.interface_limit_m else
                       f"BEYOND the reach: {short[1]} ends the motion at {short[0] * 1e3:.1f} mm")
            out.append(f"  {'scenario range ' + r.axis:<22}+-{b.interface_limit_m * 1e3:g} mm {verdict} "
                       f"(+{r.plus * 1e3:.1f} / -{r.minus * 1e3:.1f} mm)")
    out += ["", "reach from home along one interface axis (* = driven by the scenario: platform.interface.dofs)",
            f"{'axis':<6} {'+':>11}  {'ended by':<34} {'-':>11}  ended by"]
    for r in rep.reach:
        k, unit = (math.degrees(1.0), "deg") if r.rotation else (1e3, "mm")
        mark = "*" if r.axis in dofs else " "
        out.append(f"{mark}{r.axis:<5} {r.plus * k:7.1f} {unit:<3}  {str(r.plus_limit or 'no limit'):<34} "
                   f"{r.minus * k:7.1f} {unit:<3}  {r.minus_limit or 'no limit'}")
    return "\n".join(line.rstrip() for line in out)


def _excess(lim) -> str:
    return f"{lim.excess * 1e3:.1f} mm" if lim.unit == "m" else f"{lim.excess:.2f} deg"


def cmd_geometry(a) -> int:
    """Load the scenario (an inconsistent geometry raises ParameterError: exit 2), print the derived values."""
    from rths_ros.core.platform.geometry_report import geometry_report
    s = scn.load(a.scenario, a.set)
    if not 0.0 <= a.rotation_deg <= 90.0:
        raise ParameterError(f"--rotation-deg: {a.rotation_deg!r} is not allowed; expected a number in [0, 90] deg")
    if not 2 <= a.samples <= 9:
        raise ParameterError(f"--samples: {a.samples!r} is not allowed; expected an integer in [2, 9]")
    rep = geometry_report(s.platform.geometry, s.platform.interface, s.safety.interface_limit_m, a.rotation_deg,
                          s.safety.safe_retract_m, a.samples)
    note = ""
    fam = registry.family(s)
    if not fam.stewart:
        note = (f"numerical.model = {s.numerical.model!r} drives its own actuators; this scenario does not use the "
                "Stewart platform")
    else:
        note = fam.geometry_note
    if a.json:
        print(json.dumps({"scenario": s.name, "dofs": list(s.platform.interface.dofs), "note": note,
                          **rep.to_dict()}, indent=2))
        return 0
    print(format_report(rep, s.name, s.platform.interface.dofs, note))
    return 0


def add_parsers(sub, scenario_args) -> None:
    """``rths geometry``, on the ``rths`` parser's ``sub``; ``scenario_args`` adds SCENARIO and --set."""
    ge = sub.add_parser("geometry", help="derived geometry of the Stewart platform: home legs and joint angles, "
                        "Jacobian conditioning, reach per axis and its limit, safe pose")
    scenario_args(ge)
    ge.add_argument("--json", action="store_true", help="print the values as JSON")
    ge.add_argument("--rotation-deg", type=float, default=5.0, metavar="DEG",
                    help="rotation bound of the interface box, per rotation-vector component (default 5 deg; the "
                         "scenario bounds only translations, by safety.interface_limit_m)")
    ge.add_argument("--samples", type=int, default=5, metavar="N",
                    help="grid points per coordinate of the interface box (default 5: N^6 poses)")
    ge.set_defaults(func=cmd_geometry)
