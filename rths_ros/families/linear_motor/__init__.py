"""A linear motor instead of the Stewart platform: one interface DoF on the motor's axis, Bartl's (2019) cubic-spring
rig (§6.2) with its harmonic AFF and its synchronisation measures."""
