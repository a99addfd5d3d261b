"""Numerical substructures: the NumericalModel protocol (base), the model table (registry) and the models
(contact1d, gait, building, oscillator)."""
