"""rlsched's trace-driven simulator: the event engine, schedulers, metrics, traces, workloads, experiments."""
