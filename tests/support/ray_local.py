"""A local Ray for the test session (a pytest plugin module): ``ray.init(num_cpus=2)``
once, on 127.0.0.1, without the dashboard or usage reporting; shut down at the end.
Missing Ray -> :func:`tests.support.components.missing`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.components import missing

__all__ = ["ray_address"]


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """The GCS address of the session's local Ray (a subprocess may join it)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    try:
        import ray
    except ImportError:
        missing("Ray", "ray is not installed (pip install -e '.[ray]')")
    try:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False)
    except Exception as exc:  # Ray reports start-up failures with many exception types
        missing("Ray", f"ray.init failed: {exc}")
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
