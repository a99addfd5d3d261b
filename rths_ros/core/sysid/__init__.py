"""Identification: closed-loop identification of the legs (legs) and the qualification tools of a transfer system
(qualification)."""
