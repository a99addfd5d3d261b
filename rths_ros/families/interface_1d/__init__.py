"""The 1-D interface on the Stewart platform: one interface DoF z, the force along it, the contact test's plant
and metrics (Insam 2022 ch. 4), and the models that share it (Newmark, independent integration, the linear
oscillator, the finite-element beam)."""
