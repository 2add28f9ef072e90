"""The decision core: pure (no subprocess, no wall clock, no simulator import)."""
