"""One pod's life on its node: admission, the stage engine, status writes, termination.

A `PodWorker` owns one pod (by UID) from the moment the agent sees it bound to its node until the
agent has finished deleting it. Its loop is KWOK's stage controller shrunk to one object: after every
change (a watch event, a process exit, a probe result, a timer) it builds the pod status and the
views the stages select on, lets `lifecycle` pick the stage for the pod and for each container,
arms a timer for the stage's delay, performs the steps of every stage whose time has come, and
writes the status once nothing is due. A stage is not applied twice to an unchanged object.

Writes go to `pods/NAME/status` as a JSON patch guarded by a `test` of the UID, so a worker of an old
pod can never write over a new pod that reused the name (StatefulSet pods do). The final DELETE
carries gracePeriodSeconds=0 and a UID precondition.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.nodes.kubelet import admission, containers, nodectx, status
from lwsconf.sim.nodes.kubelet import state as st
from lwsconf.sim.nodes.network import ipam
from lwsconf.sim.nodes.stages import lifecycle

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_VOLATILE_META = ("resourceVersion", "managedFields", "generation")
_DEVICE_PLUGIN_WAIT = 5.0
"""Seconds a pod needing device-plugin resources waits at admission for the plugin to list them."""


@dataclass
class _Timer:
    stage: lifecycle.Stage
    deadline: float


class PodGone(Exception):
    """The pod (this UID) no longer exists in the API."""


class PodWorker:
    """Drives one pod; `update` with every new version, `removed` when the API deleted it."""

    def __init__(self, ctx: nodectx.NodeContext, pod: Obj) -> None:
        self.ctx = ctx
        self.pod = pod
        meta = pod.get("metadata") or {}
        self.uid = str(meta.get("uid"))
        self.key = f"{meta.get('namespace')}/{meta.get('name')}"
        spec = pod.get("spec") or {}
        runtime = ctx.runtime
        force_emulated = (meta.get("annotations") or {}).get("lwsconf.dev/emulate") == "true"

        def record(c: Obj, init: bool) -> st.ContainerRecord:
            runnable = runtime is not None and ctx.launcher is not None and not force_emulated and \
                runtime.runnable(c)
            return st.ContainerRecord(spec=c, init=init, sidecar=init and c.get("restartPolicy") == "Always",
                                      emulated=not runnable)

        self.state = st.PodState(self.uid, ctx.host_ip,
                                 containers=[record(c, False) for c in spec.get("containers") or []],
                                 init_containers=[record(c, True) for c in spec.get("initContainers") or []])
        self.ops = containers.ContainerOps(ctx, self.state, lambda: self.pod, self.wake)
        self._wake = asyncio.Event()
        self._timers: dict[str, _Timer] = {}
        self._fired: dict[str, tuple[str, str]] = {}
        self._rng = ctx.rng_for(pod)
        self._written: Obj | None = None
        self._gone = False
        self._freed = False
        self.done = False

    # --- inputs --------------------------------------------------------------------------------------

    def update(self, pod: Obj) -> None:
        self.pod = pod
        self.wake()

    def removed(self) -> None:
        self._gone = True
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def resync(self) -> None:
        """Write the status again even if it looks written (others may have changed it meanwhile)."""
        self._written = None
        self.wake()

    # --- the loop ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Until the pod is deleted (by us or anyone); cancelling it stops the containers."""
        failures = 0
        try:
            st.adopt(self.state, self.pod.get("status") or {}, self.ctx.ips.reserve, self.ctx.addresses.to_loopback)
            while not self._gone and not self.done:
                try:
                    await self._step()
                    failures = 0
                except errors.KubeClientError as exc:
                    failures += 1
                    log.info("pod %s: API request failed (%s); retrying", self.key, exc)
                    await self._sleep(asyncio.get_running_loop().time() + min(2.0, 0.05 * 2 ** failures))
                except PodGone:
                    raise
                except Exception:  # a bug must not orphan the pod: log it and retry like the kubelet's sync
                    failures += 1
                    log.exception("pod %s: sync failed; retrying", self.key)
                    await self._sleep(asyncio.get_running_loop().time() + min(2.0, 0.05 * 2 ** failures))
        except PodGone:
            log.debug("pod %s (%s) is gone", self.key, self.uid)
        finally:
            await self._release(grace=0.5 if self._gone else 2.0)

    async def _step(self) -> None:
        """One round: admit, advance containers, apply due stages, or write status and wait."""
        self._wake.clear()
        if not self.state.admitted and not self.state.terminal:
            await self._admit()
        await self.ops.kill_unhealthy()
        if self.ops.exits_to_restart():
            # The kubelet writes the status it found (the container terminated, not ready) before it restarts
            # containers: Kubelet.SyncPod (pkg/kubelet/kubelet.go) calls statusManager.SetPodStatus, then the
            # runtime's SyncPod. So the pod leaves its Services' endpoints before a new process listens.
            await self._write_status()
        self.ops.advance()
        self._settle_terminal()
        due, deadline = self._plan()
        if due:
            for key, stage, obj in due:
                await self._apply(key, stage, obj)
            return
        await self._write_status()
        await self._sleep(deadline)

    async def _sleep(self, deadline: float | None) -> None:
        backoff = self.ops.next_deadline()
        times = [t for t in (deadline, backoff) if t is not None]
        timeout = None if not times else max(0.0, min(times) - asyncio.get_running_loop().time())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _release(self, *, grace: float) -> None:
        await self.ops.shutdown(grace)
        self._free_resources()

    def _free_resources(self) -> None:
        if self._freed:
            return
        self._freed = True
        self.ctx.ips.release(self.uid)
        if self.ctx.device_manager is not None:
            with contextlib.suppress(Exception):
                self.ctx.device_manager.release(self.uid)
        for pool in self.ctx.fake_devices.values():
            pool.release(self.uid)
        if self.ctx.launcher is not None:
            self.ctx.launcher.forget(self.uid)
        self.ctx.on_terminal(self.uid)

    # --- admission -----------------------------------------------------------------------------------

    async def _admit(self) -> None:
        if (self.pod.get("metadata") or {}).get("deletionTimestamp"):
            self.state.admitted = True  # nothing to run: the delete stage finishes it
            return
        await self._await_device_plugins()
        rejection = admission.selector_mismatch(self.pod, self.ctx.labels) or admission.fit(
            self.pod, self.ctx.admitted_pods(self.uid), self.ctx.allocatable())
        if rejection is None:
            self.state.admitted = True
            self.state.admitted_at = asyncio.get_running_loop().time()
            rejection = await self._allocate_devices()
        if rejection is not None:
            self._reject(*rejection)
            return
        self.state.start_time = st.now_rfc3339()

    async def _await_device_plugins(self) -> None:
        """Give a node's device plugins a moment to list their devices before admitting a pod that needs them.

        The node publishes its layout's device counts from the start, so the scheduler may bind a
        GPU pod before the fake plugin has registered; a real node would show 0 until then. Waiting
        (bounded) here keeps that start-up race from rejecting the pod.
        """
        manager = self.ctx.device_manager
        if manager is None:
            return
        wanted = {r for c in self.state.all_records() for r in admission.container_extended(c.spec)}
        wanted &= {r for r in self.ctx.fake_devices}
        deadline = asyncio.get_running_loop().time() + _DEVICE_PLUGIN_WAIT
        while wanted and asyncio.get_running_loop().time() < deadline:
            totals = getattr(manager, "capacity", manager.resources)()
            if all(totals.get(r, 0) > 0 for r in wanted):
                return
            await asyncio.sleep(0.02)

    def _reject(self, reason: str, message: str) -> None:
        self.state.admitted = True
        self.state.phase = "Failed"
        self.state.reason, self.state.message = reason, f"Pod was rejected: {message}"
        self.ctx.recorder.record(self.pod, "Warning", reason, message)

    async def _allocate_devices(self) -> tuple[str, str] | None:
        manager = self.ctx.device_manager
        served = manager.resources() if manager is not None else {}
        for rec in self.state.all_records():
            for resource, count in admission.container_extended(rec.spec).items():
                try:
                    if manager is not None and resource in served:
                        allocation = await manager.allocate(self.uid, rec.name, resource, count)
                        self.state.device_ids.setdefault(resource, []).extend(list(allocation.device_ids))
                        self.state.device_env.setdefault(rec.name, {}).update(dict(allocation.envs or {}))
                        continue
                    pool = self.ctx.fake_devices.get(resource)
                    ids = pool.allocate(self.uid, count) if pool is not None else None
                    if ids is None:
                        raise RuntimeError(f"requested {count} of {resource}, none free on node {self.ctx.node_name}")
                    self.state.device_ids.setdefault(resource, []).extend(ids)
                except Exception as exc:
                    self._free_resources()
                    return ("UnexpectedAdmissionError",
                            f"Allocate failed due to {exc}, which is unexpected")
        return None

    # --- stages -------------------------------------------------------------------------------------

    def _views(self) -> tuple[Obj, list[tuple[str, str, Obj]]]:
        current = status.pod_status(self.pod, self.state, addresses=self.ctx.addresses)
        podview = st.pod_view(self.pod, current, self.state)
        by_name = {s["name"]: s for s in [*current.get("initContainerStatuses", []), *current["containerStatuses"]]}
        subjects = [("pod", "Pod", podview)]
        for rec in self.state.all_records():
            subjects.append((f"container/{rec.name}", "Container",
                             st.container_view(podview, rec, by_name.get(rec.name, {}))))
        return current, subjects

    def _plan(self) -> tuple[list[tuple[str, lifecycle.Stage, Obj]], float | None]:
        """Stages due now, and the earliest future deadline."""
        _, subjects = self._views()
        now = asyncio.get_running_loop().time()
        due: list[tuple[str, lifecycle.Stage, Obj]] = []
        earliest: float | None = None
        for key, kind, obj in subjects:
            timer = self._timers.get(key)
            if timer is None or not timer.stage.matches(obj):
                stage = self.ctx.lifecycle.match(kind, obj, self._rng)
                fingerprint = _fingerprint(obj)
                if stage is None or self._fired.get(key) == (stage.name, fingerprint):
                    self._timers.pop(key, None)
                    continue
                timer = _Timer(stage, now + stage.delay_seconds(obj, self._rng))
                self._timers[key] = timer
            if timer.deadline <= now:
                due.append((key, timer.stage, obj))
            else:
                earliest = timer.deadline if earliest is None else min(earliest, timer.deadline)
        return due, earliest

    async def _apply(self, key: str, stage: lifecycle.Stage, obj: Obj) -> None:
        self._timers.pop(key, None)
        self._fired[key] = (stage.name, _fingerprint(obj))
        try:
            actions = stage.actions(obj)
        except (lifecycle.StageError, ValueError) as exc:
            log.warning("pod %s: stage %s cannot be applied: %s", self.key, stage.name, exc)
            return
        rec = self.state.record(key.split("/", 1)[1]) if key.startswith("container/") else None
        for action in actions:
            ok = await (self._container_action(rec, action) if rec is not None else self._pod_action(action))
            if not ok:
                return

    async def _container_action(self, rec: st.ContainerRecord, action: lifecycle.Action) -> bool:
        args = action.args
        if action.op == "event":
            self.ctx.recorder.record(self.pod, str(args.get("type", "Normal")), str(args.get("reason", "")),
                                     str(args.get("message", "")), container=rec.name)
        elif action.op == "start":
            return await self.ops.start(rec)
        elif action.op == "terminate":
            await self.ops.stop(rec, grace=0.0, exit_code=_as_int(args.get("exitCode"), 1),
                                reason=str(args.get("reason") or ""), message=str(args.get("message") or ""))
        elif action.op == "probe":
            for kind, value in args.items():
                rec.forced_probes[str(kind)] = str(value)
        elif action.op == "log":
            self.ops.append_log(rec, str(args.get("text", "")))
        return True

    async def _pod_action(self, action: lifecycle.Action) -> bool:
        args = action.args
        if action.op == "event":
            self.ctx.recorder.record(self.pod, str(args.get("type", "Normal")), str(args.get("reason", "")),
                                     str(args.get("message", "")))
        elif action.op == "createSandbox":
            try:
                self.state.pod_ip = self.state.pod_ip or self.ctx.ips.allocate(self.uid)
            except ipam.PodNetworkExhausted as exc:
                self.ctx.recorder.record(self.pod, "Warning", "FailedCreatePodSandBox", str(exc))
                return False
            self.state.sandbox = True
        elif action.op == "terminate":
            await self._terminate()
        elif action.op == "fail":
            await self.ops.stop_all(grace=0.0, exit_code=_as_int(args.get("exitCode"), 137), reason="Error")
            self.state.phase = "Failed"
            self.state.reason = str(args.get("reason") or "Failed")
            self.state.message = str(args.get("message") or "")
            self._settle_terminal()
        elif action.op == "delete":
            await self._finish_deletion()
            return False
        return True

    async def _terminate(self) -> None:
        self.state.terminating = True
        meta = self.pod.get("metadata") or {}
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        await self.ops.stop_all(grace=float(grace), prestop=True)
        self.ops.advance()

    async def _finish_deletion(self) -> None:
        """Write the final status, then DELETE with grace period 0 (only this UID)."""
        with contextlib.suppress(PodGone):
            await self._write_status()
        if self.ctx.before_write is not None:
            await self.ctx.before_write()
        meta = self.pod.get("metadata") or {}
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": self.uid}}
        try:
            await self.ctx.client.request("DELETE", kc.PODS.object_path(meta["name"], meta["namespace"]), body=body)
        except errors.ApiError as exc:
            if not (exc.is_not_found or exc.status == 409):
                raise
        self.done = True

    def _settle_terminal(self) -> None:
        """Make a terminal phase sticky and free the pod's IP and devices once it is reached."""
        if self.state.phase is None:
            phase = status.pod_phase(self.state, str((self.pod.get("spec") or {}).get("restartPolicy") or "Always"))
            if phase in ("Failed", "Succeeded") and not self.state.terminating:
                self.state.phase = phase
        if self.state.terminal and not any(r.state == "running" for r in self.state.all_records()):
            self._free_resources()

    # --- status --------------------------------------------------------------------------------------

    async def _write_status(self) -> None:
        current = status.pod_status(self.pod, self.state, now=None, addresses=self.ctx.addresses)
        if current == self._written or current == self.pod.get("status"):
            self._written = current
            return
        if self.ctx.before_write is not None:
            await self.ctx.before_write()
            if self._gone:
                raise PodGone(self.uid)
            current = status.pod_status(self.pod, self.state, now=None, addresses=self.ctx.addresses)
        meta = self.pod.get("metadata") or {}
        patch = [{"op": "test", "path": "/metadata/uid", "value": self.uid},
                 {"op": "replace", "path": "/status", "value": current}]
        try:
            await self.ctx.client.patch(kc.PODS, meta["name"], patch, namespace=meta["namespace"],
                                        patch_type="json", subresource="status")
        except errors.ApiError as exc:
            if exc.is_not_found or exc.status == 422:
                raise PodGone(self.uid) from None
            raise
        # The answer is not taken as the pod: the watch (`update`) is the only source of the pod's metadata and
        # spec, as the kubelet's pod config is, and it delivers this write too, in order. An answer can be older
        # than what the watch already gave: a deletion that landed while this patch was in flight came in by
        # `update`, and taking the answer put the pod back to "not deleted" for good (nothing else changes a
        # terminating pod, so no later event corrected it): the pod stayed Terminating with its containers
        # running (issue 30, the local flakes of ScaleDownDuringRollout and TemplateAndReplicasChangedTogether-
        # WithSurge: 2 in 20 runs of 3 tests on local).
        self._written = current


def _fingerprint(obj: Obj) -> str:
    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in _VOLATILE_META}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    return hashlib.sha1(json.dumps(scrub(obj), sort_keys=True, default=str).encode()).hexdigest()


def _as_int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
