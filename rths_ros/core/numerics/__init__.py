"""Time integration: fixed-step Runge-Kutta (integrators), Newmark (newmark), independent integration (independent_integration); the decorator of
the loop's allocation-free numba kernels (kernel)."""
