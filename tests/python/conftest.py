"""Shared fixtures of the Python tests (run: ``.venv/bin/python -m pytest tests/python``)."""

from __future__ import annotations

import pytest

import rtgpu


@pytest.fixture
def textbook() -> list[rtgpu.Task]:
    """Buttazzo's RTA example: τ1 = (1, 4), τ2 = (2, 6), τ3 = (3, 10)."""
    return [rtgpu.Task(1, 4), rtgpu.Task(2, 6), rtgpu.Task(3, 10)]


@pytest.fixture
def three_sixty() -> list[rtgpu.Task]:
    """Three implicit-deadline tasks of utilization 0.6 with period 10 ms:
    no two fit on one core, so two cores need task splitting."""
    return [rtgpu.Task("6 ms", "10 ms", id=i) for i in range(3)]


# Lines a test wants shown at the end of the run, even under -q (tests/python/test_docs_commands.py
# prints its counts here).
SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture
def docs_summary(request: pytest.FixtureRequest) -> list[str]:
    return request.config.stash.setdefault(SUMMARY, [])


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    lines = config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("docs commands")
        for line in lines:
            terminalreporter.write_line(line)
