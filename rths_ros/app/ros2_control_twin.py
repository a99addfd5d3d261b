"""The rig behind the ros2_control emulator: the scenario's digital twin seen through a ros2_control rig's joints,
with the wiring faults a lab meets when it brings its own hexapod up (ROS-free; the node around it is
:mod:`rths_ros.runtime.ros2_control_emulator`).

Joint positions and legs.  The emulated controller's command vector has one slot per joint of
``ros2_control.joint_names`` (slot n = the joint the rig calls leg n); the joint state reports each physical leg
under its own name.  Leg numbers in the fault settings are the physical legs, i.e. the joints the broadcaster
reports as ``joint_names[n - 1]``.  A command (6 joint positions ``q``) reaches the twin as follows
(``c`` = ``emulator_position_offset_m``, ``L_ref`` = the twin's start length of that leg):

1. ``emulator_swap_legs: [a, b]``: slot a drives physical leg b and slot b leg a (the controller's ``joints`` list
   in another order than the legs: the broadcaster still names every leg correctly, so the joint states show which
   leg moved);
2. every leg: length = ``q + c`` (a rig that reports the stroke, 0 at a 0.46 m leg, has ``c = 0.46``);
3. ``emulator_sign_flip_legs``: length = ``2 L_ref - (q + c)``, i.e. a command ``d`` above the leg's start moves
   the leg ``d`` below it (a hardware interface that writes that joint's command with the wrong sign); the joint
   state reports the true length, so a commanded ``+d`` shows as ``-d``;
4. ``emulator_stuck_legs``: the leg is held at ``L_ref`` whatever is commanded (a drive that does not enable);
5. the result is clipped to the stroke ``[platform.geometry.leg_length_min_m, leg_length_max_m]`` (the twin is
   never driven beyond it; every command with a clipped value is counted in ``clipped_commands``).

The joint state reports joint position = true measured length ``- c`` of every leg (the rig's encoders are
wired correctly; a swap or a sign flip of the encoders as well as of the commands would be invisible in joint
space and could only be found through the pose).  With all fault settings at their defaults the twin gets the
commands and the state carries the twin's measurements exactly as without this class (bit for bit).

``emulator_effort``: the effort reported is the twin's motor current of the step's last 10 kHz controller sample
(``last``, default) or its mean over the step (``mean``: the legs then get
:class:`~rths_ros.core.sysid.legs.InjectableLegCascade`, bit-identical otherwise).  The mean is what moves the leg;
the closed-loop identification needs it (docs/identify.md, "Why the step-mean current").
"""
from __future__ import annotations

import numpy as np

from rths_ros.app import factory

__all__ = ["Ros2ControlTwin"]


class Ros2ControlTwin:
    """The scenario's twin behind a ros2_control rig's joints, with its wiring faults (module doc)."""

    def __init__(self, scenario):
        p = scenario.ros2_control
        self.plant = factory.build_plant(scenario)
        seed = factory.plant_seed(scenario, 0)
        self._mean_effort = p.emulator_effort == "mean"
        if self._mean_effort:
            from rths_ros.app.emulated_rig import make_injectable
            make_injectable(self.plant, seed)
        self.out = self.plant.reset(seed)
        self.reference = np.array(self.plant.start_lengths, dtype=float)
        g = scenario.platform.geometry
        self.stroke = (float(g.leg_length_min_m), float(g.leg_length_max_m))
        self.offset = float(p.emulator_position_offset_m)
        perm = list(range(6))                 # slot -> physical leg
        if p.emulator_swap_legs:
            a, b = (int(v) - 1 for v in p.emulator_swap_legs)
            perm[a], perm[b] = b, a
        self._perm = np.array(perm)
        self._flip = np.array([i + 1 in p.emulator_sign_flip_legs for i in range(6)])
        self._stuck = np.array([i + 1 in p.emulator_stuck_legs for i in range(6)])
        self._identity = (self.offset == 0.0 and not p.emulator_swap_legs and not self._flip.any()
                          and not self._stuck.any())
        self.clipped_commands = 0

    def lengths_of(self, positions) -> np.ndarray:
        """The physical leg lengths the twin gets for the command vector ``positions`` (6 joint positions in slot
        order): steps 1-5 of the module doc."""
        q = np.array(positions, dtype=float)
        if self._identity:
            lengths = q
        else:
            lengths = np.empty(6)
            lengths[self._perm] = q
            lengths = lengths + self.offset
            lengths = np.where(self._flip, 2.0 * self.reference - lengths, lengths)
            lengths = np.where(self._stuck, self.reference, lengths)
        lo, hi = self.stroke
        if np.any(lengths < lo) or np.any(lengths > hi):
            self.clipped_commands += 1
            lengths = np.clip(lengths, lo, hi)
        return lengths

    def start_command(self) -> np.ndarray:
        """The twin's command before any arrived: its start lengths."""
        return self.reference.copy()

    def step(self, lengths, ff) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Advance the twin one step with physical ``lengths`` and feedforward ``ff``; returns the joint state
        (positions, velocities, efforts in leg order 1..6) and the raw wrench."""
        out = self.out = self.plant.step(lengths, ff)
        positions = out.lengths if self.offset == 0.0 else out.lengths - self.offset
        efforts = self.plant.legs.current_mean.copy() if self._mean_effort else out.currents
        return positions, out.velocities, efforts, out.wrench
