"""The vRTHS building benchmark (Silva et al. 2020): a 3-story building as the numerical part, the benchmark's
servo-hydraulic actuator and specimen as the plant, its tracking controller as the platform path, J1-J9."""
