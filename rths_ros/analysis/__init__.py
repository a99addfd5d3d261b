"""Offline analysis of recorded RTHS runs: fidelity measures, plots and reports (ROS-free)."""
