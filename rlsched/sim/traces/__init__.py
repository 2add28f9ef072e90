"""Workload traces: the Standard Workload Format reader and the archive fetcher."""
