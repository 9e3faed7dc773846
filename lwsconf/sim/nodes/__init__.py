"""The simulated nodes: one kubelet-like agent per node, as HTTP clients of the API server.

Why: LWS behaviour is about pods (leaders, workers, restarts, readiness, addresses), so the
simulated cluster needs kubelets that move pods through their life the way real ones do, with a
fake GPU inventory to schedule against. Each node agent registers its Node and Lease, watches the
pods bound to it and drives them: emulated containers through data-driven stages (KWOK's model,
`stages/<set>/*.yaml`, interpreted by `stages.lifecycle`), runnable ones as real processes on the node's
loopback addresses (`runtime`). Nothing here imports the API server.

One package per concept, in layers (`.importlinter`'s `nodes-layers`: a package imports only those below it,
and those side by side on one line import neither each other); each `__init__.py` says more:

* `fleet` (`NodeFleet`) - every agent of a cluster, with the cluster DNS and the fake device plugins, in the
  shape `SimCluster` runs controllers;
* `kubelet/` - the kubelet itself: `agent` (`NodeAgent`), the Node and its Lease, one `podworker` per pod
  (admission, containers, probes, hooks, status), what a process container gets before it starts (`processes`,
  `env`, `volumes`, `satoken`), node chaos, and the agent's answers on the kubelet port;
* side by side below the kubelet:
  `runtime/` - the container runtime: processes in namespaces or shimmed, the launcher, image runtimes, the
  Python and native interposers (`pyshim/`, `netshim/`);
  `streams/` - the kubelet port over HTTPS: `/containerLogs`, `/exec`, `/attach`, `/portForward` (protocols in
  `lwsconf.streaming`), exec'd commands, and who may call it (`kubeletauth`: webhook authn/authz, 401/403);
  `stages/` - the stage sets and their interpreter (`lifecycle`, `paths`, `settings`);
  `devices/` - the device manager that device plugins register with;
  `layout` - which nodes exist (`NodeSpec`, `default_layout`, `load_layout`);
* `network/` - the cluster's 127.X.0.0/16 (`ipam`), pod addresses as the API shows them (`podnet`), the
  cluster DNS (`dns`);
* `aio` - the asyncio helper every layer may use.

`testdata/` holds a workload for the node tests (`hello_http.py`), run by file path.

`start_nodes` runs a whole fleet on the current event loop (tests, tools); `SimCluster` instead
takes `NodeFleet(...).controllers()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lwsconf.kubeclient import client as kc
    from lwsconf.sim.nodes import fleet as fleet_mod
    from lwsconf.sim.nodes import layout
    from lwsconf.sim.nodes.network import ipam


@dataclass
class RunningNodes:
    """Node agents running in the background; `await stop()` ends them and releases the network."""

    fleet: fleet_mod.NodeFleet
    task: asyncio.Task[None]
    stop_event: asyncio.Event

    async def stop(self) -> None:
        self.stop_event.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 15.0)
        except TimeoutError:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        finally:
            self.fleet.close()


async def start_nodes(client_factory: Callable[[str], kc.Client],
                      specs: Sequence[layout.NodeSpec] | None = None, *,
                      pod_network: str | ipam.PodNetwork | None = None, workdir: str | Path | None = None,
                      stage_set: str = "fast", seed: int = 0, processes: bool = True,
                      device_plugins: bool = True) -> RunningNodes:
    """Start one agent per node of `specs` (default layout) as background tasks.

    Args:
        client_factory: client_factory(user_agent) -> a new API client; each agent gets its own, and
            they are closed when the nodes stop.
        specs, pod_network, workdir, stage_set, seed, processes, device_plugins: see `NodeFleet`.

    Returns:
        A handle whose `fleet` has `pod_network`, `agents` and `specs`; call `await handle.stop()`.
    """
    from lwsconf.sim.nodes import fleet as fleet_mod

    fleet = fleet_mod.NodeFleet(specs, pod_network=pod_network, workdir=workdir, stage_set=stage_set, seed=seed,
                                processes=processes, device_plugins=device_plugins)
    stop = asyncio.Event()
    task = asyncio.create_task(fleet.run(client_factory, stop), name="lwsconf-nodes")
    return RunningNodes(fleet, task, stop)


__all__ = ["RunningNodes", "start_nodes"]
