"""Adaptive feedforward filters: parameters (params), the secondary-path model (secondary_path), the FIR filter with
filtered-x LMS (fxlms) and the harmonic basis on the legs (harmonic_legs; harmonic, harmonic_params,
harmonic_identification, harmonic_supervisor)."""
