"""Compensation and analysis methods: passivity control (passivity), transfer-dynamics cancellation and force
blending (tdc), prediction (prediction) and command coupling (coupling), stability margins (stability), the linear vRTHS
test beds (linear_vrths) and the lumped-mass test bed (lumped_mass)."""
