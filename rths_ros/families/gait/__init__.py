"""The prosthetic-foot gait test: the VPP amputee walker (Insam 2022 Part III) as the numerical part, a 3-DoF
sagittal interface on the Stewart platform, the foot's force in the plate frame, the gait metrics."""
