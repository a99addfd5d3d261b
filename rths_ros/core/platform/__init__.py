"""The Stewart platform as transfer system: kinematics (stewart), interface map (interface), leg commands and limits
(commander), safety limits and the safe-pose ramp (safety), force processing (force_processing) and the PlatformPath and
ForcePath protocols the nodes drive (paths)."""
