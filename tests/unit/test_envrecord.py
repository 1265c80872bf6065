"""A node's environment build: written by the agent, read by the leader, one record."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prsd.leader.run.initrule import NodeInit
from prsd.spool.badrecord import BadRecord
from prsd.spool.envrecord import EnvBuild
from prsd.spool.nodereport import NodeReport, environment_line

BUILDS = [
    EnvBuild("building", "2026-01-01T00:00:00+00:00", "resolving"),
    EnvBuild("failed", "2026-01-01T00:00:00+00:00", error="No solution found"),
    EnvBuild("ready", "2026-01-01T00:00:00+00:00"),
]


@pytest.mark.parametrize("build", BUILDS)
def test_round_trip_through_a_node_report(build: EnvBuild) -> None:
    """What the agent reports is what the leader reads and passes on to status.json."""
    data = NodeReport("n1", environment=build).encode()
    node = NodeInit.from_report(NodeReport.decode(data))
    assert node.environment == build
    assert EnvBuild.decode(build.to_obj()) == build


def test_the_phase_is_said_only_while_building() -> None:
    obj = EnvBuild("ready", "t", phase="resolving").to_obj()
    assert obj == {"state": "ready", "since": "t"}


def test_the_lines_prsctl_shows_read_the_record() -> None:
    now = datetime(2026, 1, 1, 0, 0, 12, tzinfo=UTC)
    lines = [environment_line(b, now) for b in BUILDS]
    assert lines == ["building environment: resolving (0:00:12)",
                     "environment failed: No solution found", ""]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"since": "t"}, "state"),
        ({"state": "done"}, "none of building, ready, failed"),
        ({"state": "building", "phase": 3}, "phase"),
        ({"state": "failed", "error": None}, "error"),
        (["building"], "environment"),
    ],
)
def test_a_bad_value_is_a_bad_record_naming_the_field(value: object, named: str) -> None:
    with pytest.raises(BadRecord, match=named) as caught:
        EnvBuild.decode(value)
    assert str(caught.value).startswith("environment")


def test_the_leader_shows_an_unreadable_environment_as_such() -> None:
    """A damaged report does not stop the leader: the node's build reads as failed, saying why."""
    data = b'{"node_id": "n1", "environment": {"state": "done", "since": "t"}}'
    node = NodeInit.from_report(NodeReport.decode(data))
    assert node.environment is not None and node.environment.state == "failed"
    assert "the node's environment report cannot be read" in node.environment.error
    assert "'done' is none of" in node.environment.error
