"""Fault injection: real processes, a fault injected, nothing lost (pytest -m faults)."""
