"""The model (issue 53): the posterior step (fixed-point Forward/Backward, edge weights, pooled MEA)."""
