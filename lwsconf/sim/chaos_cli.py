"""`lwsconf sim chaos ...`: inject a fault into a running `lwsconf sim up` cluster from another shell.

    lwsconf sim chaos crash-container NS/POD [--container C] [--exit-code N] [--times K]
    lwsconf sim chaos fail-pod NS/POD [--reason Evicted] [--message TEXT]
    lwsconf sim chaos node-not-ready NODE [--mode unreachable|not-ready]
    lwsconf sim chaos node-ready NODE
    lwsconf sim chaos delete-node NODE
    lwsconf sim chaos slow-kubelet NODE --seconds S

Each talks to the cluster of `--kubeconfig` (default: the one `lwsconf sim up` writes) through
`lwsconf.sim.chaos` and prints one line saying what will happen. A bad target, an unreachable
cluster or a cluster that is not simulated gives one line saying what to do, and exit status 2;
never a traceback. `main(argv)` is what `lwsconf sim chaos` calls.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import urllib3
from kubernetes import client, config

from lwsconf.sim import chaos
from lwsconf.sim.apiserver.http.kubeconfig import DEFAULT_PATH as DEFAULT_KUBECONFIG

USAGE_ERROR = 2


class UsageError(Exception):
    """Something the user can fix; the message is printed as one line."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf sim chaos",
                                     description="inject faults into a simulated cluster (sim only)")
    parser.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG,
                        help=f"kubeconfig of the simulated cluster (default: {DEFAULT_KUBECONFIG})")
    sub = parser.add_subparsers(dest="fault", required=True, metavar="FAULT")
    crash = sub.add_parser("crash-container", help="make a container exit with a code (it restarts per restartPolicy)")
    crash.add_argument("target", metavar="NS/POD")
    crash.add_argument("--container", "-c", default=None, help="container name (default: the pod's default one)")
    crash.add_argument("--exit-code", type=int, default=1, help="exit code, 0-255 (default 1)")
    crash.add_argument("--times", type=int, default=1, help="how many more crashes (default 1)")
    fail = sub.add_parser("fail-pod", help="kill a pod's containers and set it Failed, as an eviction does")
    fail.add_argument("target", metavar="NS/POD")
    fail.add_argument("--reason", default="Evicted", help="status.reason (default Evicted)")
    fail.add_argument("--message", default=None, help="status.message")
    down = sub.add_parser("node-not-ready", help="cut a node off (Ready=Unknown) or make it report NotReady")
    down.add_argument("node", metavar="NODE")
    down.add_argument("--mode", choices=chaos.NOT_READY_MODES, default="unreachable",
                      help="unreachable: no heartbeats (default); not-ready: the kubelet reports Ready=False")
    up = sub.add_parser("node-ready", help="end node-not-ready")
    up.add_argument("node", metavar="NODE")
    delete = sub.add_parser("delete-node", help="delete a Node (its machine is gone); its pods are then removed")
    delete.add_argument("node", metavar="NODE")
    slow = sub.add_parser("slow-kubelet", help="delay a node's pod status writes and deletions (0 restores)")
    slow.add_argument("node", metavar="NODE")
    slow.add_argument("--seconds", type=float, required=True, help="delay in seconds")
    return parser


def _pod_target(target: str) -> tuple[str, str]:
    ns, sep, name = target.partition("/")
    if not sep:
        ns, name = "default", target
    if not ns or not name or "/" in name:
        raise UsageError(f"bad pod {target!r}; write it as NAMESPACE/POD (or POD for the default namespace)")
    return ns, name


def _run(args: argparse.Namespace, api: client.ApiClient) -> str:
    """Inject the fault; returns the line to print."""
    fault: str = args.fault
    if fault == "crash-container":
        ns, pod = _pod_target(args.target)
        obj = chaos.crash_container(api, ns, pod, args.container, exit_code=args.exit_code, times=args.times)
        name = obj["metadata"]["annotations"][chaos.PREFIX + "crash-container"]
        return f"pod {ns}/{pod}: container {name} will exit with code {args.exit_code} ({args.times} time(s))"
    if fault == "fail-pod":
        ns, pod = _pod_target(args.target)
        chaos.fail_pod(api, ns, pod, reason=args.reason, message=args.message)
        return f"pod {ns}/{pod} will fail with reason {args.reason} once it runs"
    node: str = args.node
    if fault == "node-not-ready":
        chaos.node_not_ready(api, node, mode=args.mode)
        return f"node {node} is now {args.mode}; `lwsconf sim chaos node-ready {node}` ends it"
    if fault == "node-ready":
        chaos.node_ready(api, node)
        return f"node {node} is back"
    if fault == "delete-node":
        chaos.delete_node(api, node)
        return f"node {node} deleted; its pods will be removed"
    chaos.slow_kubelet(api, node, args.seconds)
    return f"node {node}: pod status writes now wait {args.seconds:g}s"


def _client(path: Path) -> client.ApiClient:
    if not path.is_file():
        raise UsageError(f"no kubeconfig at {path}; start a cluster with `lwsconf sim up` or pass --kubeconfig")
    try:
        api: client.ApiClient = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
        return api
    except (config.ConfigException, ValueError, KeyError, OSError) as exc:
        raise UsageError(f"cannot use kubeconfig {path}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        api = _client(args.kubeconfig)
        try:
            print(_run(args, api))
        finally:
            api.close()  # type: ignore[no-untyped-call]
    except (UsageError, chaos.ChaosError) as exc:
        print(f"lwsconf sim chaos: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except urllib3.exceptions.HTTPError as exc:
        reason = getattr(exc, "reason", None) or exc
        print(f"lwsconf sim chaos: cannot reach the cluster of {args.kubeconfig} ({type(reason).__name__}); "
              "is `lwsconf sim up` running?", file=sys.stderr)
        return USAGE_ERROR
    except client.ApiException as exc:
        print(f"lwsconf sim chaos: the API server refused: {exc.status} {exc.reason}: {_status_message(exc)}",
              file=sys.stderr)
        return USAGE_ERROR
    return 0


def _status_message(exc: client.ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or "").splitlines()[0]
    except (ValueError, AttributeError, IndexError):
        return ""


if __name__ == "__main__":
    sys.exit(main())
