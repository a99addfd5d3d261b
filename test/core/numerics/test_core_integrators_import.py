"""The DOP853 tableau (rths_ros.core.numerics.integrators) is SciPy's, loaded without importing all of
scipy.integrate, and SciPy's linear algebra is imported where it is used: every process that loads a scenario (each
node of a `ros2 launch`, each `rths` command) saves about 0.4 s of CPU."""
from __future__ import annotations

import subprocess
import sys

import numpy as np


def test_the_tableau_is_scipys_dop853_bit_for_bit():
    from scipy.integrate._ivp import dop853_coefficients as ref

    from rths_ros.core.numerics.integrators import DOP853
    ns = ref.N_STAGES
    assert np.array_equal(DOP853.a, ref.A[:ns, :ns]) and np.array_equal(DOP853.b, ref.B[:ns])
    assert np.array_equal(DOP853.c, ref.C[:ns]) and DOP853.order == 8


def test_loading_a_scenario_imports_neither_scipy_integrate_nor_scipy_linalg():
    """A node process imports every family (the scenario's schema) before it builds its own objects: SciPy's
    integrators and linear algebra (0.2 s each) come with the objects that use them, not with the modules."""
    code = ("import sys; from rths_ros.app import scenario as scn; scn.load('contact_1d'); "
            "import rths_ros.core.numerics.integrators as i, rths_ros.nodes.ft_sensor, rths_ros.nodes.supervisor, "
            "rths_ros.nodes.recorder; "
            "print(sorted(m for m in sys.modules if m.startswith(('scipy.integrate', 'scipy.linalg', "
            "'scipy.signal'))), i._dop853.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "rths_ros._scipy_dop853_coefficients"], out.stdout
