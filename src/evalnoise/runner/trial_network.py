"""The network an environment trial's container runs on, as its task declared it.

A Harbor task declares ``network_mode = "no-network"`` or ``"public"`` (also legacy
``allow_internet = true``, and nothing at all, which Harbor reads as public). The run's
``benchmark.network`` decides what a public task gets (:class:`NetworkChoice`):

- ``as_declared`` (the default): a network of the trial's own, created before the trial's
  container and removed after it (:meth:`TrialNetworks.open`, :meth:`TrialNetworks.close`),
  labelled with the shard so a killed run's leftovers are found (:meth:`TrialNetworks.
  cleanup`). On an engine with its default bridge network it is a plain bridge network, and
  the trial reaches whatever the engine's bridge reaches (the internet, on a usual machine).
  On an engine started without one (``dockerd --bridge=none``, as this project's own machines
  run it, with no iptables either) a bridge network would have no NAT, so the network is made
  ``--internal``: its members reach each other and nothing else, and the run says so once
  (:data:`NO_ROUTE_NOTICE`). With ``name`` set, the trials join that existing network
  instead (never created or removed here): how a test stands a local service in for the
  internet, or how a user gives the trials a network of their choosing.
- ``offline``: no network, as a ``no-network`` task always has (the container's own
  loopback only; :func:`evalnoise.runner.engine.container_network`).

A task with extra services (``environment/docker-compose.yaml``) always gets a network of its
own, so its services and its main container reach each other by name; a ``no-network`` task's
is ``--internal`` on every engine.

The trial row's ``network`` says which network the trial had (:attr:`TrialNetwork.label`):
``none``, ``trial-bridge`` / ``trial-internal`` (a network of its own), ``named:NAME``, or
both (``trial-internal+named:NAME``: a task with services on a named network; the services
stay on the trial's internal network, the main container is on both).
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from evalnoise.runner.docker_backend import SHARD_LABEL
from evalnoise.runner.engine import one_line

__all__ = [
    "NETWORK_CHOICES",
    "NO_ROUTE_NOTICE",
    "NetworkChoice",
    "TrialNetwork",
    "TrialNetworks",
    "offline_cause",
]

log = logging.getLogger(__name__)

#: what ``benchmark.network`` may be when a run starts trials (``reject`` never gets here)
NETWORK_CHOICES = ("as_declared", "offline")
#: the label every network created here carries (with the shard label)
NETWORK_LABEL = "evalnoise.trial-network"
#: said once per process when a public task's network has no route out
NO_ROUTE_NOTICE = (
    "the Docker engine has no default bridge network (dockerd --bridge=none): each "
    "public-network trial gets an --internal network of its own, with no route out of this "
    "machine"
)


@dataclass(frozen=True)
class NetworkChoice:
    """The run's ``benchmark.network`` (``mode``) and ``benchmark.network_name`` (``name``)."""

    mode: str = "as_declared"
    name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in NETWORK_CHOICES:
            raise ValueError(f"network must be one of {NETWORK_CHOICES}, got {self.mode!r}")
        if self.name is not None and (self.mode != "as_declared" or not self.name):
            raise ValueError("network_name needs network as_declared and a non-empty name")

    @property
    def default(self) -> bool:
        """Whether this is the default choice (the backend's name then stays unchanged)."""
        return self.mode == "as_declared" and self.name is None

    def key(self) -> str:
        """What the backend's name carries beyond the default (journal identity)."""
        return self.mode if self.name is None else f"{self.mode}:{self.name}"


@dataclass(frozen=True)
class TrialNetwork:
    """The network of one trial: ``mode`` is the container's ``network_mode`` (``none`` or
    the network's name), ``label`` the trial row's ``network``, ``created`` the id of a
    network made for this trial (removed with it), ``internal`` whether it has no route
    out."""

    mode: str
    label: str
    created: str | None = None
    internal: bool = False
    #: a named network the container joins too (a task with services on a named network)
    also: str | None = None

    @property
    def attached(self) -> bool:
        """Whether the container is on a network (other members reachable by name)."""
        return self.mode != "none"


NO_NETWORK = TrialNetwork("none", "none")


class TrialNetworks:
    """Creates and removes the trials' networks through ``client`` (``docker.DockerClient``)
    as ``choice`` says (module docstring)."""

    def __init__(self, client: Any, choice: NetworkChoice = NetworkChoice()) -> None:
        self.client = client
        self.choice = choice
        self._bridge: bool | None = None
        self._lock = threading.Lock()
        self._noticed = False

    def has_default_bridge(self) -> bool:
        """Whether the engine has its default ``bridge`` network (asked once)."""
        with self._lock:
            if self._bridge is None:
                found = self.client.api.networks(names=["bridge"])
                self._bridge = any(
                    n.get("Name") == "bridge" and n.get("Driver") == "bridge" for n in found
                )
            return self._bridge

    def wanted(self, network_mode: str, *, services: bool = False) -> bool:
        """Whether a trial of a task declaring ``network_mode`` gets a network."""
        public = network_mode == "public" and self.choice.mode == "as_declared"
        return public or services

    def open(self, network_mode: str, shard_id: str, *, services: bool = False) -> TrialNetwork:
        """The network of a trial of a task declaring ``network_mode`` (``services``: it has
        extra services). Creates it when the trial gets one of its own; raises the engine's
        error when that fails."""
        if not self.wanted(network_mode, services=services):
            return NO_NETWORK
        public = network_mode == "public" and self.choice.mode == "as_declared"
        named = self.choice.name if public else None
        if named is not None and not services:
            return TrialNetwork(named, f"named:{named}")
        # with services and a named network: an internal network of the trial's own for the
        # services, and the named one for the main container's way out
        internal = named is not None or not (public and self.has_default_bridge())
        if public and internal and named is None and not self._noticed:
            self._noticed = True
            log.warning("%s", NO_ROUTE_NOTICE)
        name = f"evalnoise-{shard_id}-{uuid.uuid4().hex[:12]}"
        created = self.client.api.create_network(
            name,
            driver="bridge",
            internal=internal,
            labels={SHARD_LABEL: shard_id, NETWORK_LABEL: "1"},
            check_duplicate=True,
        )
        label = "trial-internal" if internal else "trial-bridge"
        if named is not None:
            label += f"+named:{named}"
        return TrialNetwork(name, label, created=created["Id"], internal=internal, also=named)

    def close(self, network: TrialNetwork) -> str | None:
        """Remove a network made for a trial (after its containers); None when gone, else
        the note for the trial row's ``error``. Never raises."""
        if network.created is None:
            return None
        import docker.errors

        try:
            self.client.api.remove_network(network.created)
        except docker.errors.NotFound:
            return None
        except Exception as exc:  # left for cleanup(); the trial's outcome stands
            return f"network not removed: {one_line(exc, 200)}"
        return None

    def cleanup(self, shard_id: str) -> int:
        """Remove the networks a killed run of ``shard_id`` left (after its containers)."""
        import docker.errors

        removed = 0
        found = self.client.api.networks(
            filters={"label": [f"{SHARD_LABEL}={shard_id}", NETWORK_LABEL]}
        )
        for network in found:
            try:
                self.client.api.remove_network(network["Id"])
            except docker.errors.APIError:
                continue
            removed += 1
        return removed


def offline_cause(folder: Any, network: TrialNetwork) -> str | None:
    """Why a verifier without a network may have failed, in one line: the trial had none and
    the task's verifier fetches from it (:func:`evalnoise.tasks.fetches.network_fetches`);
    None when the trial had a network or nothing visibly fetches."""
    if network.attached:
        return None
    from evalnoise.tasks.fetches import network_fetches

    fetches = [f for f in network_fetches(folder) if not f.file.startswith("environment/")]
    if not fetches:
        return None
    return f"the trial had no network and its verifier fetches from it ({fetches[0]})"
