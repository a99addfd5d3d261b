"""The building benchmark's trial loop of the virtual run (``Family.trial``): its objects stepped in the order of
the node graph, or the same loop in one compiled kernel."""
from __future__ import annotations

import numpy as np

from rths_ros.app import factory
from rths_ros.core.plant.base import PlantFault

__all__ = ["run_trial"]


def run_trial(self, j: int, rec: dict) -> bool:
    """One trial of the building benchmark in the virtual run ``self`` (a :class:`rths_ros.app.vrths.VirtualRun`), in
    the order of the node graph (rths_ros.core.models.building.rths)."""
    from rths_ros.core.models.building.rths import run_trial_compiled
    base = j * self.trial_len
    seed = factory.plant_seed(self.s, j)
    num, plat, force = self.numerical, self.platform, self.force
    if self.compiled and run_trial_compiled(num.inner, plat, self.plant, seed, self.n_steps, rec, base):
        return True     # the objects' loop in one compiled kernel (same numbers); else step the objects
    out = self.plant.reset(seed)                                     # sim_plant: measurement of sample 0
    num.reset()
    plat.reset()
    force.reset()
    y, yd = rec["y"], rec["ydot"]
    f_one = [0.0]
    for k in range(self.n_steps + 1):
        row = base + k
        f_m = force.process(out.wrench)[0][0]                        # ft_sensor
        x_m = float(out.lengths[0])
        y[row], yd[row] = num.command()
        rec["x_m"][row] = x_m
        rec["f_m"][row] = f_m
        rec["x"][row] = out.lengths[1]
        rec["xdot"][row] = out.velocities[0]
        rec["f_act"][row] = out.currents[0]
        rec["u_da"][row] = out.currents[1]
        rec["f_true"][row] = out.wrench[1]
        if k == self.n_steps:
            break
        u = plat.control(y[row, 0], x_m)                             # stewart_platform: u_k = C(y1_k, x_m,k)
        rec["u"][row] = u
        f_one[0] = f_m
        num.step(f_one)                                              # numerical_substructure: y_{k+1}
        try:
            out = self.plant.step(np.array([u, 0.0, 0.0, 0.0, 0.0, 0.0]))   # sim_plant: x_m,k+1, f_m,k+1
        except PlantFault as exc:
            rec["aborted"] = True
            rec["abort_reason"] = f"sim_plant: step {row + 1}: {exc}"
            rec["_abort_row"] = k
            return False
    return True
