"""An external agent's reported exception → its trial's status (evalnoise.runner.
agent_failures): Harbor's types through the Harbor importer's one table, a failed ``setup()``
of any other type ``agent_setup_error``, a failed ``run()`` ``agent_error``."""

from __future__ import annotations

import pytest

from evalnoise.importers.harbor_jobs import STATUS_OF_EXCEPTION
from evalnoise.runner.agent_failures import AGENT_SETUP_ERROR, reported_failure
from evalnoise.schema import STATUSES


@pytest.mark.parametrize(
    ("error", "status"),
    [
        # Harbor's and LiteLLM's own types: the importer's statuses, whatever the phase
        ({"type": "AgentTimeoutError", "phase": "run"}, "timeout"),
        ({"type": "AuthenticationError", "phase": "run"}, "infra_error"),
        ({"type": "APIConnectionError", "phase": "run"}, "infra_error"),
        ({"type": "ContextWindowExceededError", "phase": "run"}, "agent_error"),
        ({"type": "AgentSetupTimeoutError", "phase": "setup"}, "infra_error"),
        ({"type": "NonZeroAgentExitCodeError", "phase": "setup"}, AGENT_SETUP_ERROR),
        ({"type": "NonZeroAgentExitCodeError", "phase": "run"}, "agent_error"),
        # any other type: by the phase it ended
        (
            {"type": "RuntimeError", "message": "Agent install failed", "phase": "setup"},
            AGENT_SETUP_ERROR,
        ),
        ({"type": "ValueError", "phase": "run"}, "agent_error"),
        ({"type": "ValueError"}, "agent_error"),
        ({"type": "ValueError", "phase": "elsewhere"}, "agent_error"),
        # not a report: the agent breaks the protocol
        ("boom", "agent_error"),
        ({"message": "no type"}, "agent_error"),
    ],
)
def test_reported_exceptions_map_to_statuses(error, status):
    got, text = reported_failure(error)
    assert got == status
    assert got in STATUSES
    if isinstance(error, dict) and "type" in error:
        assert error["type"] in text


def test_the_table_is_the_importers():
    for name, status in STATUS_OF_EXCEPTION.items():
        assert reported_failure({"type": name, "phase": "run"})[0] == status
        # in setup() the agent never ran: what the table calls its own failure is a setup
        # failure; every other status stays
        in_setup = AGENT_SETUP_ERROR if status == "agent_error" else status
        assert reported_failure({"type": name, "phase": "setup"})[0] == in_setup


def test_the_message_is_kept_short_and_named():
    status, text = reported_failure(
        {"type": "RuntimeError", "message": "x" * 5000, "phase": "setup"}
    )
    assert status == AGENT_SETUP_ERROR
    assert text.startswith("agent setup() raised RuntimeError: ")
    assert len(text) < 1100
