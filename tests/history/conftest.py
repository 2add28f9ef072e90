"""Shared fixtures of the history tests: the samples, and a fixed time zone for local times."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
HISTORY = DATA / "history"


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """sacct's default times and the jobcomp file are local times: read them as UTC in these tests."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()
