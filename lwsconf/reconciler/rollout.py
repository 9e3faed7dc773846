"""The rolling-update arithmetic: leader StatefulSet `partition` and `replicas` for the next reconcile.

The unit of update is a group; the controller only moves the leader StatefulSet's partition (and its
replicas, for surge), and the StatefulSet controller replaces leaders above the partition
(docs/lws-contract.md section 4.4). `resolve_budget` is section 4.4.3 (percentages against the current
`spec.replicas`: maxUnavailable rounds down, maxSurge rounds up and is capped at replicas, trap T11);
`decide` is the reference algorithm of section 4.4.4, including its events. Group states come in as
values (`GroupState` per index), built by `group_states` from leader pods and worker StatefulSets.
No I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf.reconciler import events, labels, names, pods

IntOrStr = int | str
_PERCENT = re.compile(r"^([0-9]+)%$")


def scaled_value(value: IntOrStr, total: int, *, round_up: bool) -> int:
    """An IntOrString resolved against `total` (apimachinery's GetScaledValueFromIntOrPercent).

    Raises:
        ValueError: a string that is not `<digits>%`.
    """
    if isinstance(value, int):
        return value
    match = _PERCENT.match(value)
    if not match:
        raise ValueError(f"invalid value for IntOrString: {value!r} is not an integer or a '<digits>%' percentage")
    scaled = total * int(match.group(1))
    return -(-scaled // 100) if round_up else scaled // 100


@dataclass(frozen=True)
class Budget:
    """maxUnavailable/maxSurge resolved against `replicas` (section 4.4.3)."""

    replicas: int
    max_unavailable: int
    max_surge: int

    @property
    def burst(self) -> int:
        return self.replicas + self.max_surge

    @property
    def statefulset_max_unavailable(self) -> int:
        """The leader StatefulSet's own maxUnavailable: `max(1, maxUnavailable + maxSurge)`."""
        return max(1, self.max_unavailable + self.max_surge)


def resolve_budget(replicas: int, max_unavailable: IntOrStr, max_surge: IntOrStr) -> Budget:
    unavailable = scaled_value(max_unavailable, replicas, round_up=False)
    surge = min(scaled_value(max_surge, replicas, round_up=True), replicas)
    return Budget(replicas, unavailable, surge)


@dataclass(frozen=True)
class GroupState:
    """One index of the leader StatefulSet: ready (leader and workers) and updated (both on the current key)."""

    ready: bool
    updated: bool


MISSING = GroupState(ready=False, updated=False)
"""A missing leader pod or (size > 1) missing worker StatefulSet: neither ready nor updated."""


@dataclass(frozen=True)
class LeaderSet:
    """What `decide` reads from the existing leader StatefulSet."""

    replicas: int
    partition: int
    replicas_annotation: int | None
    """The `replicas` annotation (the spec.replicas it was last applied for); None when absent or unreadable."""

    @staticmethod
    def of(sts: Mapping[str, Any]) -> LeaderSet:
        body = sts.get("spec") or {}
        raw = ((sts.get("metadata") or {}).get("annotations") or {}).get(labels.REPLICAS)
        annotation = int(raw) if isinstance(raw, str) and raw.isdigit() else None
        partition = ((body.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0
        return LeaderSet(int(body.get("replicas") or 0), int(partition), annotation)


@dataclass(frozen=True)
class RolloutInput:
    lws_name: str
    replicas: int
    partition: int
    """`spec.rolloutStrategy.rollingUpdateConfiguration.partition` (the user's floor)."""
    budget: Budget
    leader_set: LeaderSet | None
    """The leader StatefulSet as it is now, or None before it exists."""
    updated_now: bool
    """A new revision was created in this reconcile."""
    states: Sequence[GroupState]
    """Index i = group i, for 0 .. leader_set.replicas - 1 (missing entries count as MISSING)."""


@dataclass(frozen=True)
class RolloutDecision:
    partition: int
    replicas: int
    events: tuple[events.Event, ...] = ()


def rolling_update_replicas(replicas: int, max_surge: int, max_unavailable: int, unready: int) -> int:
    """`wantReplicas`: keep surge while more than maxSurge groups are unready, then release it gradually."""
    if unready <= max_surge:
        return replicas + max(0, unready - max_unavailable)
    return replicas + max_surge


def unready_count(states: Sequence[GroupState], replicas: int) -> int:
    """Indices below `replicas` that are not (ready and updated); indices without a state count."""
    return sum(1 for i in range(replicas) if i >= len(states) or not (states[i].ready and states[i].updated))


def tail_ready_count(states: Sequence[GroupState]) -> int:
    """Consecutive ready-and-updated indices counting down from the last one."""
    count = 0
    for state in reversed(states):
        if not (state.ready and state.updated):
            break
        count += 1
    return count


def rolling_partition(states: Sequence[GroupState], sts_replicas: int, step: int, current: int) -> int:
    """Step 6 of section 4.4.4: the next partition, never above `current` (it only moves down)."""
    states = [*states, *[MISSING] * max(0, sts_replicas - len(states))]
    base = max(0, sts_replicas - tail_ready_count(states[:sts_replicas]) - step)
    partition = base + sum(1 for i in range(base) if not states[i].ready)
    for idx in range(min(partition, sts_replicas - 1), base - 1, -1):
        if not states[idx].ready or states[idx].updated:
            partition = idx
        else:
            break
    return min(partition, current)


def decide(inp: RolloutInput) -> RolloutDecision:
    """The (partition, replicas) to apply and the events of section 4.4.4; partition is at least the user's."""
    partition, replicas, found = _decide(inp)
    partition = max(partition, inp.partition)
    found = list(found)
    current = inp.leader_set
    if current is not None and not inp.updated_now and partition != current.partition:
        found.append(events.updating_replicas(partition, current.partition))
    return RolloutDecision(partition, replicas, tuple(found))


def _decide(inp: RolloutInput) -> tuple[int, int, list[events.Event]]:
    current, budget, replicas = inp.leader_set, inp.budget, inp.replicas
    if current is None:
        return 0, replicas, []
    found: list[events.Event] = []

    def want(unready: int) -> int:
        final = rolling_update_replicas(replicas, budget.max_surge, budget.max_unavailable, unready)
        if final < current.replicas:
            found.append(events.deleting_surge(inp.lws_name, final, current.replicas))
        return final

    if inp.updated_now:
        partition = min(replicas, current.replicas)
        if current.replicas < replicas:
            return partition, replicas, found
        return partition, want(replicas), found
    if current.partition == 0 and current.replicas == replicas:
        return 0, replicas, found
    if current.replicas < replicas:
        return current.partition, replicas, found
    unready = unready_count(inp.states, replicas)
    if current.replicas_annotation != replicas:
        return min(current.partition, budget.burst), want(unready), found
    step = budget.max_unavailable + budget.max_surge - (budget.burst - current.replicas)
    partition = rolling_partition(inp.states, current.replicas, step, current.partition)
    return partition, want(unready), found


def group_states(lws_name: str, *, size: int, current_key: str, sts_replicas: int,
                 leader_pods: Iterable[Mapping[str, Any]],
                 worker_statefulsets: Iterable[Mapping[str, Any]]) -> tuple[GroupState, ...]:
    """Per-index states for `decide` from leader pods (`N-i`) and worker StatefulSets (`N-i`).

    A leader pod (`worker-index: "0"`, this LWS's `name` label) is taken by its name `N-i` (its
    `group-index` label may not be patched on yet); a worker StatefulSet by its name `N-i`, and only when
    labelled with this LWS's name and `group-index: i` (trap T29). With `size == 1` none is expected.
    """
    leaders = {i: p for i, p in _by_index(lws_name, leader_pods).items()
               if pods.is_leader(p) and pods.pod_labels(p).get(labels.NAME) == lws_name}
    workers = {i: s for i, s in _by_index(lws_name, worker_statefulsets).items()
               if pods.pod_labels(s).get(labels.NAME) == lws_name
               and pods.pod_labels(s).get(labels.GROUP_INDEX) == str(i)}
    out = []
    for idx in range(sts_replicas):
        leader, worker = leaders.get(idx), workers.get(idx)
        if leader is None or (size > 1 and worker is None):
            out.append(MISSING)
            continue
        ready = pods.running_and_ready(leader) and (size == 1 or statefulset_ready(worker or {}))
        updated = _key(leader) == current_key and (size == 1 or _key(worker or {}) == current_key)
        out.append(GroupState(ready, updated))
    return tuple(out)


def statefulset_ready(sts: Mapping[str, Any]) -> bool:
    """A worker StatefulSet is ready when availableReplicas == spec.replicas and currentRevision == updateRevision."""
    status = sts.get("status") or {}
    replicas = (sts.get("spec") or {}).get("replicas")
    replicas = 1 if replicas is None else replicas
    return bool(status.get("availableReplicas", 0) == replicas
                and status.get("currentRevision", "") == status.get("updateRevision", ""))


def _key(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(labels.TEMPLATE_REVISION_HASH, ""))


def _by_index(lws_name: str, objs: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    out: dict[int, Mapping[str, Any]] = {}
    for obj in objs:
        idx = names.group_index_from_leader_name(lws_name, str((obj.get("metadata") or {}).get("name", "")))
        if idx is not None:
            out[idx] = obj
    return out

