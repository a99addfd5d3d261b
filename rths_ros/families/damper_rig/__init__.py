"""A hydraulic damper on a servo-hydraulic actuator with transfer-dynamics cancellation: the rig of du Bois et al.
(2010), one interface DoF, its force blend and its synchronisation measures."""
