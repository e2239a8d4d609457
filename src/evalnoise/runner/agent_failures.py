"""What an external agent's reported exception means for its trial (no I/O).

An exec-protocol agent may end with ``{"done": true, "error": {"type": ..., "message": ...,
"phase": "setup" | "run"}}``: the exception that stopped it, as the Harbor bridge
(``agents/harbor_agent/bridge.py``) reports a Harbor agent's. The type is read with the
Harbor importer's one table (:data:`evalnoise.importers.harbor_jobs.STATUS_OF_EXCEPTION`, Harbor's
own taxonomy plus LiteLLM's and the OpenAI client's exception names), so a Harbor agent run by
evalnoise and a Harbor job imported from its ``result.json`` give the same outcome. A type
the table does not know is the agent's own failure when it happened in ``run()``
(``agent_error``, the importer's rule for the agent's phase) and :data:`AGENT_SETUP_ERROR`
when it happened in ``setup()``: the agent could not be installed or prepared in the task's
container (offline, an installed agent that downloads itself cannot), which measures neither
the agent's skill nor the task. So is a ``setup()`` failure the table calls the agent's
(``NonZeroAgentExitCodeError``: its install command exited non-zero); the table's
infrastructure statuses (a timeout, a refused credential) stay what they are in either
phase.

:func:`harbor_python` is where ``tools/install-harbor.sh`` puts Harbor's Python, the
interpreter of the bridge (``{harbor_python}`` in an agent's command).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalnoise.harbor_exceptions import STATUS_OF_EXCEPTION
from evalnoise.user_cache import cache_dir

#: The status of a trial whose agent failed in its own ``setup()``: it never ran.
AGENT_SETUP_ERROR = "agent_setup_error"
#: Status of a reported exception type the table does not know, by the phase it ended.
STATUS_OF_PHASE = {"setup": AGENT_SETUP_ERROR, "run": "agent_error"}
_MESSAGE_CHARS = 1000


def reported_failure(error: Any) -> tuple[str, str]:
    """``(status, error text)`` of an agent's reported exception (module docstring). A
    report that is not ``{"type": str, ...}`` is the agent's ``agent_error``: the agent does
    not follow the protocol."""
    if not isinstance(error, Mapping) or not isinstance(error.get("type"), str):
        return "agent_error", f"exec protocol: malformed error report {str(error)[:200]!r}"
    kind = error["type"]
    phase = error.get("phase") if error.get("phase") in STATUS_OF_PHASE else "run"
    message = str(error.get("message") or "")[:_MESSAGE_CHARS]
    status = STATUS_OF_EXCEPTION.get(kind) or STATUS_OF_PHASE[phase]
    if phase == "setup" and status == "agent_error":
        # the agent never ran: its setup's own failure (an install command that exited
        # non-zero: Harbor's NonZeroAgentExitCodeError) is no failure of its skill
        status = AGENT_SETUP_ERROR
    where = "setup()" if phase == "setup" else "run()"
    return status, f"agent {where} raised {kind}: {message}".rstrip(": ")


def harbor_python() -> str:
    """Harbor's Python wrapper: ``<evalnoise cache>/harbor/bin/python`` (the same folder
    ``tools/install-harbor.sh --prefix`` prints)."""
    return str(Path(cache_dir()) / "harbor" / "bin" / "python")
