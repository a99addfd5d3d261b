"""Time integration: fixed-step Runge-Kutta (integrators), Newmark (newmark), independent integration (independent_integration)."""
