"""Composition: the scenario schema and loading (scenario), the builders of a scenario's objects from tables
(factory), the in-process virtual run (vrths), the ILC series across trials (ilc_series), the emulated rig
(emulated_rig) and the VPP initial-condition command line (gait_ic)."""
