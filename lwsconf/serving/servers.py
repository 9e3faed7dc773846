"""What a serving scenario deploys: one interface over the emulator and real vLLM.

Why: the LWS-SERVING scenarios (rendezvous, leader-only routing, member failure, rollout and
scale-out under load) are the same story whatever answers the requests. On every cluster they run
against the emulated server (`emulator.py`, mounted into a stock python image); on GPU clusters the
same scenarios run against real vLLM (`--serving-server=vllm`). A scenario asks its `ServingServer`
for the objects to create, the LWS and its leader-only Service, and reads answers through
`Answer`, so only the image and commands differ between the two. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from lwsconf import lwsapi, workloads
from lwsconf.timeouts import TimeoutName

Obj = dict[str, Any]
LEADER_ROLE_LABEL = "role"
"""The label only the leader template carries, as upstream's vLLM example sets it (`role: leader`)."""
NAME_LABEL = lwsapi.NAME


@dataclass(frozen=True)
class Answer:
    """What one completion said about who served it (None where the server does not tell)."""

    pod: str | None
    revision: str | None
    group_size: int | None
    text: str


class ServingServer(Protocol):
    """A multi-node inference server deployed as an LWS of `replicas` groups of `size` pods."""

    # Read-only members, so frozen dataclasses (EmulatorServer, vllm.VLLMServer) satisfy the protocol.
    @property
    def name(self) -> str:
        """`emulator` or `vllm` (the `--serving-server` value)."""
        ...

    @property
    def port(self) -> int:
        """The HTTP port of the leader (OpenAI API, /health, /metrics) and of the leader Service."""
        ...

    @property
    def model(self) -> str:
        ...

    @property
    def identifies_pods(self) -> bool:
        """Whether answers name the pod and revision that served them (the emulator does; vLLM does not)."""
        ...

    @property
    def label(self) -> str:
        """What reports call it: `name`, or what stands in for what (the emulator in vLLM's place)."""
        ...

    @property
    def ready_within(self) -> TimeoutName:
        """The named timeout of its readiness wait: model_ready for a server that loads a model (vLLM, and the
        emulator standing in with a slow start), lws_available for the quick emulator."""
        ...

    @property
    def gpus_per_pod(self) -> int:
        """GPUs each pod asks for; 0 for a server that needs none (then no GPU room or allocation is checked)."""
        ...

    @property
    def simulated_gpus(self) -> bool:
        """Whether simulated GPUs (nodes labelled lwsconf.dev/simulated-gpu=true) will do."""
        ...

    def objects(self) -> list[Obj]:
        """Namespaced objects to create before the LWS (ConfigMaps, Secrets)."""
        ...

    def lws(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None,
            prestop_seconds: int = 0, grace_seconds: int = 30, env: dict[str, str] | None = None) -> Obj:
        """The LWS; its leader template carries `role: leader`; `env` is passed to every container."""
        ...

    def answer(self, body: Any) -> Answer | None:
        """Read a completion's body; None when it is not a completion (an error page, a proxy's Status)."""
        ...


def leader_service(lws_name: str, port: int) -> Obj:
    """The Service users put in front of an LWS: its name label plus the leader-only label."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{lws_name}-leader"},
            "spec": {"selector": {NAME_LABEL: lws_name, LEADER_ROLE_LABEL: "leader"},
                     "ports": [{"name": "http", "port": port, "targetPort": port}]}}


def completion_request(model: str, prompt: str, max_tokens: int = 8) -> Obj:
    """A deterministic completion (temperature 0) of at most `max_tokens` tokens."""
    return {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}


def openai_text(body: Any) -> str | None:
    """The first choice's text of a completion or chat completion body, None when there is none."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return None
    first = choices[0]
    text = first.get("text")
    if text is None and isinstance(first.get("message"), dict):
        text = first["message"].get("content")
    return text if isinstance(text, str) else None


@dataclass(frozen=True)
class EmulatorServer:
    """The emulated server (`emulator.py`): runs on every cluster, names the pod and revision per answer."""

    model: str = "lwsconf/emulated-model"
    name: str = "emulator"
    port: int = workloads.EMULATOR_PORT
    identifies_pods: bool = True
    ready_within: TimeoutName = "lws_available"
    gpus_per_pod: int = 0
    simulated_gpus: bool = True

    @property
    def label(self) -> str:
        return self.name

    def objects(self) -> list[Obj]:
        return [workloads.emulator_configmap()]

    def lws(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None,
            prestop_seconds: int = 0, grace_seconds: int = 30, env: dict[str, str] | None = None) -> Obj:
        settings = {"LWSCONF_MODEL": self.model, **(env or {})}
        return workloads.emulator_lws(name, replicas=replicas, size=size, env=settings, rollout=rollout,
                                      grace_seconds=grace_seconds, prestop_seconds=prestop_seconds,
                                      leader_labels={LEADER_ROLE_LABEL: "leader"})

    def answer(self, body: Any) -> Answer | None:
        text = openai_text(body)
        if text is None:
            return None
        who = body.get("lwsconf") if isinstance(body.get("lwsconf"), dict) else {}
        size = who.get("group_size")
        return Answer(pod=who.get("pod"), revision=who.get("revision"),
                      group_size=size if isinstance(size, int) else None, text=text)
