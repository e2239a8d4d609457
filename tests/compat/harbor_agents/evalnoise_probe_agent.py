"""A Harbor agent (a ``BaseAgent`` subclass, loaded by the bridge as
``evalnoise_probe_agent:ProbeAgent``) for the tests of the bridge's fork server: it logs what
its process sees (seed, pid, parent, a draw of ``random``), sends one command carrying its
seed, then does what ``PROBE_MODE`` says for the trial ``PROBE_TRIAL`` (every trial when
unset): ``ok``, ``crash`` (SIGSEGV) or ``sleep`` (120 s). Imported in Harbor's Python."""

from __future__ import annotations

import asyncio
import os
import random
import signal

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities


class ProbeAgent(BaseAgent):
    capabilities = AgentCapabilities()

    @staticmethod
    def name() -> str:
        return "evalnoise-probe"

    def version(self) -> str:
        return "1"

    async def setup(self, environment) -> None:
        return None

    async def run(self, instruction, environment, context) -> None:
        seed = os.environ["EVALNOISE_SEED"]
        self.logger.info(
            "probe seed=%s pid=%d ppid=%d random=%r",
            seed,
            os.getpid(),
            os.getppid(),
            random.random(),
        )
        await environment.exec(f"echo seed {seed}")
        wanted = os.environ.get("PROBE_TRIAL")
        if wanted is not None and wanted != os.environ["EVALNOISE_TRIAL"]:
            return
        mode = os.environ.get("PROBE_MODE", "ok")
        if mode == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif mode == "sleep":
            await asyncio.sleep(120)
