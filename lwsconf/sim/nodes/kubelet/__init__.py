"""The kubelet of one simulated node: an HTTP client of the API server that moves its pods through their life.

The node: `agent` (`NodeAgent`: registers the Node, keeps its Lease, watches the pods bound to it and runs one
worker per pod), `nodeobj` (the Node object and its status), `lease` (the heartbeat), `events` (the event
recorder), `nodechaos` (node faults switched on by the Node's annotations), `nodectx` (what every pod worker of a
node shares, and the small interfaces of the runtime, device manager and launcher it drives).

A pod: `podworker` (one pod's life: admission, the stages, status writes, deletion), `admission` (does it fit),
`containers` (start, stop, restart back-off), `state` (the records), `status` (the pod status written), `prober`
(probe schedules) and `probes` (one attempt), `hooks` (preStop), `termination` (termination messages).

Before a container process starts: `processes` (`ProcessLauncher`: reads ConfigMaps, Secrets and Services, then
hands the runtime a launch), `env` (its environment), `volumes` (its volumes on disk), `satoken` (the projected
service-account token). On the kubelet port: `agentlogs` (serves the port; which file holds a container's log)
and `agentstreams` (which process an exec or attach enters), the agent's answers to `streams`' servers.

May import `stages`, `runtime`, `streams`, `network`, and the top-level `layout` and `aio`; never `fleet`. The
runtime, the launcher and the device manager are handed to it (built by the fleet or, for the launcher, by name)
and driven through `nodectx`'s protocols, so the kubelet runs without them (without a runtime, every container is
emulated by the stages).
"""
