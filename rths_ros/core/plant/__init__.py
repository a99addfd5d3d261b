"""The simulated plant (digital twin): the Plant protocol (base), legs and cascade (legs), specimen (specimen),
prosthetic foot (prosthetic_foot) and the twin itself (sim_plant)."""
