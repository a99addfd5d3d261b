"""Large virtual parts of Bartl 2019 (§2.2-2.4): finite-element matrices (a cantilever beam, the benchmark's aluminium
plate, matrices from files), model-order reduction (Guyan, Craig-Bampton, modal truncation), implicit Newmark and
HHT-alpha steppers with a pre-factorised effective matrix, and FIR/IIR virtual parts built from impulse responses.
ROS-free; docs/fe_virtual_parts.md describes the choices and the checks."""
