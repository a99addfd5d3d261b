"""The lab's single-axis voice-coil rig as a family of rths_ros: ``numerical.model = voice_coil_msd``.

A voice-coil actuator (moving coil and rod, force constant K_f) under its position controller drives a spring
specimen (k_s || c_s to the ground); a force sensor between rod and specimen measures the interface force.  The
numerical part is a mass-spring-damper with a harmonic drive.  Files: :mod:`.family` (parameters, model, parts,
the family object), :mod:`.rig` (the digital twin), :mod:`.analysis` (metrics, report, plot of a run).
"""
