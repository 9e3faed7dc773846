"""Node scenarios: what a kubelet makes of a pod, the sim's simulated kubelet against the real kubelet 1.37.

Both sides run the same two nodes (`servers.NODES`: `fid-cpu`, and `fid-gpu` with 2 `nvidia.com/gpu` from the
same fake device plugin); every pod names its node through a nodeSelector, so placement is never the
schedulers' scoring. Every container runs `python:3.12-slim`'s interpreter on `-c` code: the one image both
sides have (the real nodes' catalogue, `lwsconf.realnodes.catalog`) and the one command the sim runs as a real
process (`lwsconf.sim.nodes.runtime.runtime`). What a container saw is read through the API only: its logs
subresource, or its termination message (`terminationMessagePath` / `terminationMessagePolicy`).

Every wait is an `until` on the state a kubelet must reach (a restart count together with the waiting reason
it is in, a phase, a condition), never a time. Events are compared as the ordered distinct reasons of one
pod (`view="event-reasons"`): when and how often the kubelet records them is timing.
"""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import CORE, configmap, create, delete, get
from lwsconf.fidelity.model import Scenario, Step, Until
from lwsconf.fidelity.servers import NODE_LABEL

PODS = f"{CORE}/pods"
EVENTS = f"{CORE}/events"
IMAGE = "python:3.12-slim"
NODE_WAIT = 120.0
"""Seconds a kubelet may take to reach a state (a crash loop's second back-off is 20 s; a loaded machine)."""


def _pod(name: str, code: str, *, node: str = "cpu", restart: str = "Always", **container: Any) -> dict[str, Any]:
    """A pod on the node labelled `node` whose one container `main` runs `python3 -c code`."""
    main = {"name": "main", "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": ["python3", "-c", code],
            **container}
    spec = {"containers": [main], "restartPolicy": restart, "nodeSelector": {NODE_LABEL: node},
            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 5, "enableServiceLinks": False}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _with(pod: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**pod, "spec": {**pod["spec"], **spec}}


def _until(name: str, pod: str, path: str, value: Any, *also: tuple[str, Any], **kw: Any) -> Step:
    return Step(name, "GET", f"{PODS}/{pod}", until=Until(path, value, NODE_WAIT, tuple(also)), **kw)


def _events(name: str, pod: str, reason: str) -> Step:
    """The pod's events, once `reason` is among them (the kubelet records them asynchronously)."""
    return Step(name, "GET", EVENTS, query={"fieldSelector": f"involvedObject.name={pod}"}, view="event-reasons",
                until=Until(f"body.seen.{reason}", True, NODE_WAIT))


def _log(name: str, pod: str, **query: str) -> Step:
    return get(name, f"{PODS}/{pod}/log", query=query)


MAIN = "body.status.containerStatuses.0"

CRASH = ("import os, sys, time\n"
         "run = len(os.listdir('/data')); open(f'/data/run{run}', 'w').close()\n"
         "if run < 2:\n"
         "    print(f'crashing on run {run}', flush=True); sys.exit(1)\n"
         "print('up on run 2', flush=True); time.sleep(3600)\n")
"""Crashes on its first two runs (counted in an emptyDir, which a restart keeps) and stays up on the third."""

# Waits for the state the crash loop ends in, not a moment inside it: restartCount 2, running. A step that read the
# previous log while the kubelet was in a back-off raced the next crash: once the third run had crashed, the real
# kubelet's container GC removed the run the API's lastState still named ("unable to retrieve container logs for
# containerd://..."), and the answer depended on when the step ran. With a third run that stays up, the previous
# log is the second run's on both sides, whenever it is read.
CRASHLOOP = Scenario("nodes", "node-crashloop", (
    create("create", PODS, _with(_pod("crash", CRASH, volumeMounts=[{"name": "work", "mountPath": "/data"}]),
                                 volumes=[{"name": "work", "emptyDir": {}}])),
    _until("up-after-two-crashes", "crash", f"{MAIN}.restartCount", 2, (f"{MAIN}.ready", True),
           (f"{MAIN}.lastState.terminated.exitCode", 1)),
    _log("previous-log", "crash", previous="true"),
    _log("log", "crash"),
    _events("events", "crash", "BackOff"),
    delete("delete", f"{PODS}/crash", {"gracePeriodSeconds": 0}),
))

ONFAILURE = ("import os, sys\n"
             "if os.path.exists('/data/ran'):\n"
             "    print('second run', flush=True); sys.exit(0)\n"
             "open('/data/ran', 'w').close(); print('first run', flush=True); sys.exit(2)\n")
_WORK: dict[str, Any] = {"volumeMounts": [{"name": "work", "mountPath": "/data"}]}
_EMPTYDIR = [{"name": "work", "emptyDir": {}}]

EXITS = Scenario("nodes", "node-exits", (
    create("never-succeeds", PODS, _pod("ok", "print('done')", restart="Never")),
    create("never-fails", PODS, _pod("fail", "import sys; sys.exit(3)", restart="Never")),
    create("onfailure", PODS, _with(_pod("retry", ONFAILURE, restart="OnFailure", **_WORK), volumes=_EMPTYDIR)),
    _until("succeeded", "ok", "body.status.phase", "Succeeded"),
    _until("failed", "fail", "body.status.phase", "Failed"),
    _until("retried-then-succeeded", "retry", "body.status.phase", "Succeeded"),
    _log("retry-log", "retry"),
    _log("retry-previous-log", "retry", previous="true"),
))

SERVE = ("import http.server, time\n"
         "ready_at = time.monotonic() + 6\n"
         "class H(http.server.BaseHTTPRequestHandler):\n"
         "    def do_GET(self):\n"
         "        self.send_response(200 if time.monotonic() > ready_at else 500); self.end_headers()\n"
         "    def log_message(self, *a):\n"
         "        pass\n"
         "http.server.HTTPServer(('', 8080), H).serve_forever()\n")
_PROBE = {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 1, "failureThreshold": 1,
          # the first probe after the server listens: an idle real kubelet probed before python had bound the port
          # and its first Unhealthy said "connection refused" where the sim's said 500 (a race, not a difference)
          "initialDelaySeconds": 3}

READINESS = Scenario("nodes", "node-readiness", (
    create("create", PODS, _pod("web", SERVE, readinessProbe=_PROBE, ports=[{"containerPort": 8080}])),
    # started and not ready: the probe has answered 500 at least once (the Unhealthy event says so)
    _events("probe-failed", "web", "Unhealthy"),
    get("not-ready", f"{PODS}/web"),
    _until("ready", "web", "body.status.conditions.type=Ready.status", "True"),
    _events("events", "web", "Unhealthy"),
    delete("delete", f"{PODS}/web", {"gracePeriodSeconds": 0}),
))

NOBODY_BUILT = "lwsconf.invalid/nobody-built:1"
"""An image of a registry that cannot exist (`.invalid`, RFC 2606): no node has it, and no pull can succeed."""

IMAGE_PULL = Scenario("nodes", "node-image-pull", (
    create("create", PODS, {**_pod("ghost", "pass"), "spec": {**_pod("ghost", "pass")["spec"], "containers": [
        {"name": "main", "image": NOBODY_BUILT}]}}),
    _until("back-off", "ghost", f"{MAIN}.state.waiting.reason", "ImagePullBackOff"),
    _events("events", "ghost", "BackOff"),
    delete("delete", f"{PODS}/ghost", {"gracePeriodSeconds": 0}),
))

SHOW_ENV = ("import json, os\n"
            "names = ['POD_NAME', 'POD_IP', 'NODE_NAME', 'CPU_LIMIT', 'MEMORY_LIMIT', 'FROM_CONFIGMAP', 'GIVEN']\n"
            "shown = {n: os.environ.get(n) for n in names}\n"
            "print(json.dumps(shown, sort_keys=True), flush=True)\n")
_ENV = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
        {"name": "MEMORY_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
        {"name": "FROM_CONFIGMAP", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {"name": "GIVEN", "value": "as-$(NODE_NAME)"}]
_LIMITS = {"limits": {"cpu": "250m", "memory": "64Mi"}}

ENV = Scenario("nodes", "node-env", (
    create("configmap", f"{CORE}/configmaps", configmap("settings", {"mode": "fast"})),
    create("create", PODS, _pod("env", SHOW_ENV, restart="Never", env=_ENV, resources=_LIMITS)),
    # the pod's IP saved: the log's POD_IP then reads ${pod_ip} when it is the pod's own (rule saved-values)
    _until("succeeded", "env", "body.status.phase", "Succeeded", save={"pod_ip": "status.podIP"}),
    _log("log", "env"),
))

FALLBACK = ("import sys\n"
            "print('line one'); print('last words', flush=True); sys.exit(4)\n")

TERMINATION_MESSAGE = Scenario("nodes", "node-termination-message", (
    create("file", PODS, _pod("file", "open('/dev/termination-log', 'w').write('written to the file')",
                              restart="Never")),
    create("custom-path", PODS, _pod("custom", "open('/tmp/said', 'w').write('at a path of its own')",
                                     restart="Never", terminationMessagePath="/tmp/said")),
    create("fallback-to-logs", PODS, _pod("fallback", FALLBACK, restart="Never",
                                          terminationMessagePolicy="FallbackToLogsOnError")),
    _until("file-read", "file", "body.status.phase", "Succeeded"),
    _until("custom-path-read", "custom", "body.status.phase", "Succeeded"),
    _until("logs-used", "fallback", "body.status.phase", "Failed"),
))

STOP = ("import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('SIGTERM', flush=True), sys.exit(0)))\n"
        "print('running', flush=True)\n"
        "while True:\n"
        "    time.sleep(0.2)\n")
_PRESTOP = {"preStop": {"exec": {"command": ["python3", "-c", "import time; time.sleep(2)"]}}}

GRACEFUL = Scenario("nodes", "node-graceful-delete", (
    create("create", PODS, _with(_pod("stop", STOP, lifecycle=_PRESTOP), terminationGracePeriodSeconds=20)),
    _until("running", "stop", "body.status.conditions.type=Ready.status", "True"),
    delete("delete", f"{PODS}/stop", {"gracePeriodSeconds": 15}),
    get("terminating", f"{PODS}/stop"),
    _until("gone", "stop", "code", 404),
    _events("events", "stop", "Killing"),
))

SHOW_GPU = ("import json, os\n"
            "shown = {k: v for k, v in os.environ.items() if 'VISIBLE_DEVICES' in k or k.startswith('LWSCONF_FAKE')}\n"
            "print(json.dumps(shown, sort_keys=True), flush=True)\n"
            "open('/dev/termination-log', 'w').write(json.dumps(shown, sort_keys=True))\n")

GPU = Scenario("nodes", "node-gpu", (
    create("create", PODS, _pod("gpu", SHOW_GPU, node="gpu", restart="Never",
                                resources={"limits": {"nvidia.com/gpu": "1"}})),
    _until("succeeded", "gpu", "body.status.phase", "Succeeded"),
    _log("log", "gpu"),
    create("too-many", PODS, _pod("greedy", "pass", node="gpu", restart="Never",
                                  resources={"limits": {"nvidia.com/gpu": "3"}})),
    _until("unschedulable", "greedy", "body.status.conditions.type=PodScheduled.reason", "Unschedulable"),
))

SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(s.topic, s.name, s.steps, controllers=True, nodes=True)
    for s in (CRASHLOOP, EXITS, READINESS, IMAGE_PULL, ENV, TERMINATION_MESSAGE, GRACEFUL, GPU))
