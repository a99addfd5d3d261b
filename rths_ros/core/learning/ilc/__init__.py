"""PD-type ILC of the leg feedforward (learner) and its convergence condition in the loop (convergence)."""
