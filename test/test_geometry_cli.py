"""`rths geometry`: the derived geometry of a scenario's platform; inconsistent geometries refused at load (exit 2)."""
from __future__ import annotations

import json
import math

import pytest

from rths_ros.app import scenario as scn
from rths_ros.core.platform.stewart import StewartGeometryParams, joint_layout

G = "platform.geometry."
SECOND = [f"--set={G}base_radius_m=0.5", f"--set={G}platform_radius_m=0.3", f"--set={G}base_joint_half_angle_deg=15",
          f"--set={G}platform_joint_half_angle_deg=20", f"--set={G}home_height_m=0.6",
          f"--set={G}leg_length_min_m=0.57", f"--set={G}leg_length_max_m=0.75"]


def _points(arr) -> str:
    return json.dumps(arr.T.tolist())


def test_default_geometry_table(rths_cli):
    p = rths_cli("geometry", "contact_1d")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("rths geometry contact_1d: symmetric joint layout; home TCP at (0.0000, 0.0000, 0.7000) m")
    assert out.count(" 0.701278 ") == 6                      # the home length of every leg
    assert "at most 22.05 deg (limit 45 deg)" in out
    assert "10.11 at home" in out
    # upside-down mount: interface +z is platform down, so the legs shorten and the stroke minimum ends it
    z = next(line for line in out.splitlines() if line.startswith("*z"))
    assert z.split()[1:4] == ["98.3", "mm", "leg"] and "stroke min 0.6113 m" in z and "stroke max 0.7913 m" in z
    assert "scenario range z      +-50 mm within reach" in out
    assert "safe pose               home moved 5 mm down: inside the stroke" in out


def test_second_geometry_via_set_and_json(rths_cli):
    p = rths_cli("geometry", "contact_1d", *SECOND, "--json", "--samples", "3")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    off = math.sqrt(0.5 ** 2 + 0.3 ** 2 - 2 * 0.5 * 0.3 * math.cos(math.radians(60 - 15 - 20)))
    assert r["home_lengths_m"] == pytest.approx([math.hypot(off, 0.6)] * 6, abs=1e-12)
    assert r["joint_angles_home_deg"]["base"] == pytest.approx([math.degrees(math.atan2(off, 0.6))] * 6, abs=1e-9)
    assert r["box"]["samples"] == 3 ** 6 and r["dofs"] == ["z"] and r["mount"] == "upside_down"
    z = next(x for x in r["reach"] if x["axis"] == "z")
    # interface +z = platform down; the legs shorten to the stroke minimum 0.57 m
    assert z["plus"] == pytest.approx(0.6 - math.sqrt(0.57 ** 2 - off ** 2), abs=1e-8)
    assert z["plus_limit"]["kind"] == "stroke min" and z["plus_limit"]["value"] == 0.57
    text = rths_cli("geometry", "contact_1d", *SECOND, "--samples", "2").stdout
    assert f" {math.hypot(off, 0.6):.6f} " in text


def test_explicit_joints_via_set_equal_the_symmetric_layout(rths_cli):
    a, p = joint_layout(StewartGeometryParams())
    sym = json.loads(rths_cli("geometry", "contact_1d", "--json", "--samples", "2").stdout)
    exp = rths_cli("geometry", "contact_1d", "--json", "--samples", "2", f"--set={G}base_joints_m={_points(a)}",
                   f"--set={G}platform_joints_m={_points(p)}")
    assert exp.returncode == 0, exp.stderr
    r = json.loads(exp.stdout)
    assert r.pop("layout") == "explicit" and sym.pop("layout") == "symmetric"
    assert r == sym


def test_explicit_joints_survive_the_resolved_scenario():
    """`rths check` prints the resolved scenario as YAML: the lists of points load back to the same geometry."""
    a, p = joint_layout(StewartGeometryParams())
    s = scn.load("contact_1d", [f"{G}base_joints_m={_points(a)}", f"{G}platform_joints_m={_points(p)}"])
    again = scn.from_data(scn.safe_yaml(scn.dump(s), "dump"), [])
    assert again.platform.geometry == s.platform.geometry and again.platform.geometry.explicit


@pytest.mark.parametrize("case, sets, key, words", [
    ("one side only", [f"{G}base_joints_m=BASE"], "platform.geometry.base_joints_m",
     "6 joints given but platform_joints_m is empty; expected both"),
    ("legs 1 and 2 cross", [f"{G}base_joints_m=BASE", f"{G}platform_joints_m=SWAPPED"],
     "platform.geometry.base_joints_m/platform_joints_m", "legs 1 and 2 cross at home"),
    ("pairs overlap", [f"{G}base_joint_half_angle_deg=59"], "platform.geometry.base_joint_half_angle_deg",
     "59.0 is out of range; expected number in [1, 30] deg"),
    ("joint limit below home", [f"{G}joint_angle_max_deg=20"], "platform.geometry.joint_angle_max_deg",
     "the home pose already has joint angles of 22.05 deg (leg 1)"),
])
def test_inconsistent_geometries_are_refused(rths_cli, case, sets, key, words):
    a, p = joint_layout(StewartGeometryParams())
    swapped = p[:, [1, 0, 2, 3, 4, 5]]
    args = []
    for s in sets:
        args += ["--set", s.replace("BASE", _points(a)).replace("SWAPPED", _points(swapped))]
    r = rths_cli("geometry", "contact_1d", *args)
    assert r.returncode == 2, (case, r.stdout, r.stderr)
    assert r.stdout == ""
    err = r.stderr.strip()
    assert err.startswith(f"rths geometry: error: {key}: "), err
    assert words in err, err
