"""Synthetic workloads (the LAL-like default among them)."""
