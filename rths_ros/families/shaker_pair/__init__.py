"""Two force-controlled shakers driving a two-DoF plate interface: Bartl's (2019) coupled-beams experiment (§6.1)
with its two-DoF harmonic AFF."""
