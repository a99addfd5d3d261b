"""Learning feedforward: iterative learning control (ilc) and adaptive feedforward filters (aff)."""
