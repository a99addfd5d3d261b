"""Transfer system of the damper rig: the actuator under its inner PID loop, as process models of
:mod:`rths_ros.core.methods.tdc` (du Bois et al. 2010 eq. 1).

The servo ``G`` (demand -> LVDT displacement of the unloaded actuator) is the cascade of a G2D model
(``K = w0^2``, unit static gain) and a G1 lag: third order plus delay, so none of the four process
models fits it exactly (the paper: the phase "extends well beyond -180 deg", "higher order dynamics
are in fact present").  The load ``f`` (the damper force) deflects the actuator and frame by
``f / k_load``; the inner loop rejects the deflection with its sensitivity ``1 - G``::

    x = G r - (1 - G) f / k_load = G (r + f / k_load) - f / k_load

so the transfer system depends on the specimen (du Bois et al. 2010 §2.2, first observation), and through the
damper's orifice and poppets on the amplitude.  The force is that of the previous sample (the load
cell is read before the servo moves).

:class:`StreamingProcessModel` runs one :class:`~rths_ros.core.methods.tdc.ProcessModelParams` sample by
sample exactly as its batch ``simulate`` (zero-order-hold rational part, delay by whole samples plus
linear interpolation).  Each zero-order-hold stage adds half a sample to the continuous model's delay,
so the sampled servo lags its continuous cascade by one sample (1 ms).
"""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.methods.tdc import ProcessModelParams
from rths_ros.core.models.dubois.params import ActuatorParams

__all__ = ["StreamingProcessModel", "servo_models", "Actuator"]


class StreamingProcessModel:
    """Sample-by-sample response of a process model (zero initial state)."""

    def __init__(self, model: ProcessModelParams, dt_s: float) -> None:
        self.model = model
        self.dt = float(dt_s)
        tau = model.effective_delay_s
        self._nd = int(math.floor(tau / self.dt + 1e-12)) if tau > 0.0 else 0
        self._frac = tau / self.dt - self._nd if tau > 0.0 else 0.0
        num, den = model.num_den()
        if model.order == 1 and model.tau_p_s == 0.0:
            self._b, self._a = np.array([model.gain]), np.array([1.0])
        else:
            from scipy import signal
            bd, ad, _ = signal.cont2discrete((num, den), self.dt, method="zoh")
            b = np.ravel(bd)
            self._b, self._a = b / ad[0], np.asarray(ad, dtype=float) / ad[0]
        n = max(self._a.size, self._b.size)
        # plain Python floats: one sample at a time is faster on lists than on small arrays
        self._bl = [float(v) for v in np.pad(self._b, (0, n - self._b.size))]
        self._al = [float(v) for v in np.pad(self._a, (0, n - self._a.size))]
        self._z = [0.0] * (n - 1)
        self._h = [0.0] * (self._nd + 2)
        self._k = 0

    def reset(self) -> None:
        self._z = [0.0] * len(self._z)
        self._h = [0.0] * len(self._h)
        self._k = 0

    def step(self, u: float) -> float:
        h = self._h
        h.pop()
        h.insert(0, float(u))
        nd, fr = self._nd, self._frac
        x = (1.0 - fr) * h[nd] + fr * h[nd + 1] if fr > 0.0 else h[nd]
        b, a, z = self._bl, self._al, self._z
        m = len(z)
        y = b[0] * x + (z[0] if m else 0.0)
        for i in range(m - 1):
            z[i] = b[i + 1] * x - a[i + 1] * y + z[i + 1]
        if m:
            z[m - 1] = b[m] * x - a[m] * y
        self._k += 1
        return y


def servo_models(p: ActuatorParams) -> tuple[ProcessModelParams, ProcessModelParams]:
    """The two stages of the servo: G2D (unit static gain, the delay) and G1 (the extra lag)."""
    w = 2.0 * math.pi * p.omega0_hz
    g2d = ProcessModelParams(kind="G2D", gain=w * w, zeta=p.zeta, omega0_rad_s=w, delay_s=p.delay_s)
    g1 = ProcessModelParams(kind="G1", gain=1.0, tau_p_s=p.tau_p_s, delay_s=0.0)
    return g2d, g1


class Actuator:
    """Streaming transfer system ``x = G (r + f / k_load) - f / k_load`` (true LVDT displacement)."""

    def __init__(self, params: ActuatorParams, dt_s: float) -> None:
        self.params = params
        self.stages = [StreamingProcessModel(m, dt_s) for m in servo_models(params)]
        self.x = 0.0

    def reset(self) -> None:
        for s in self.stages:
            s.reset()
        self.x = 0.0

    def step(self, r: float, load_n: float = 0.0) -> float:
        d = load_n / self.params.k_load_n_per_m
        y = r + d
        for s in self.stages:
            y = s.step(y)
        self.x = y - d
        return self.x

    def frequency_response(self, freqs_hz) -> np.ndarray:
        """``G(j w)`` of the unloaded servo."""
        g = np.ones(np.shape(freqs_hz), dtype=complex)
        for m in servo_models(self.params):
            g = g * m.frequency_response(freqs_hz)
        return g
