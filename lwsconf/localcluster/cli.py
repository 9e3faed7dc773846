"""`lwsconf local up|down`: the real control plane with the simulated nodes on loopback (issue 14).

    lwsconf local up [--kubernetes-version V] [--kubeconfig PATH] [--nodes sim|real]
                                                                    run it in the foreground until Ctrl-C
    lwsconf local down                                              stop the one `up` is running

`up` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the simulated nodes
(`cluster.LocalCluster`), waits for every node to be Ready, then writes the kubeconfig
(client-certificate auth, cluster-admin) and a state file naming its own pid. `--nodes=real` runs real nodes
instead (`lwsconf.realnodes`: kubelet, containerd, runc, CNI and kube-proxy in a network namespace each; root,
and `lwsconf nodes build` first)
beside it; it stops on Ctrl-C, SIGTERM or `down`, and also when a component exits on its own (printing
which one and its log tail, exit status 1). `down` sends SIGTERM to that pid and waits for it to exit.
Exit status 2 with one line for what a user can fix (nothing built, bad version, nothing running).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from lwsconf import shutdown
from lwsconf.controlplane import build, versions
from lwsconf.controlplane.local import StartError
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.realnodes.catalog import ImageBuildError
from lwsconf.realnodes.cluster import NodeSpec, RealNodeCluster, RealNodesError
from lwsconf.realnodes.network import NetworkError
from lwsconf.realnodes.node import NodeError
from lwsconf.sim.nodes import layout
from lwsconf.waits.core import NotYet, WaitTimeout, wait_until

DEFAULT_KUBECONFIG = Path.home() / ".lwsconf" / "local" / "kubeconfig"
STATE_NAME = "local-up.json"
WATCH_INTERVAL = 1.0
"""Seconds between two checks that every component is still running."""
DOWN_TIMEOUT = 60.0
"""Seconds `down` waits for `up` to stop its components and exit."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf local",
                                     description="a real control plane with simulated nodes on loopback")
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("up", help="start it and stay in the foreground until Ctrl-C or `lwsconf local down`")
    up.add_argument("--kubernetes-version", default=None,
                    help=f"a pinned release ({', '.join(r.kubernetes for r in versions.RELEASES)})")
    up.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG,
                    help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})")
    up.add_argument("--nodes", choices=("sim", "real"), default="sim",
                    help="sim: our node agents on loopback (default); real: real kubelets, containerd and "
                         "kube-proxy, one network namespace each (needs root and `lwsconf nodes build`)")
    up.add_argument("--node-count", type=int, default=REAL_NODES,
                    help=f"with --nodes=real: how many nodes (default {REAL_NODES}: GPU-labelled but the last)")
    down = sub.add_parser("down", help="stop the control plane `lwsconf local up` runs")
    down.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG,
                      help="the kubeconfig `up` was given (its state file is beside it)")
    return parser


REAL_NODES = 3


def real_node_specs(count: int) -> list[NodeSpec]:
    """The first `count` nodes of the default topology, GPU nodes first and one CPU node last (names, labels and
    the layout's devices, each served by a fake device plugin of the node's own)."""
    specs = layout.default_layout(gpu_nodes=max(count - 1, 0), cpu_nodes=1 if count else 0)[:count]
    return [NodeSpec(s.name, dict(s.labels), devices=s.devices) for s in specs]


def _state_path(kubeconfig: Path) -> Path:
    return kubeconfig.parent / STATE_NAME


def _up(args: argparse.Namespace) -> int:
    try:
        release = versions.resolve(args.kubernetes_version)
        if build.installed(release) is None:
            raise StartError(f"no Kubernetes {release.kubernetes} control plane is built: run "
                             f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` "
                             f"(needs Go), or use --cluster=sim")
        cluster: LocalCluster | RealNodeCluster = (
            RealNodeCluster(release, real_node_specs(args.node_count)) if args.nodes == "real"
            else LocalCluster(release))
    except (versions.UnknownVersion, StartError, ValueError) as exc:
        print(f"lwsconf local: {exc}", file=sys.stderr)
        return 2
    shutdown.install()
    written: list[Path] = []
    try:
        cluster.start()
        print(f"kube-apiserver {cluster.release.kubernetes} listening on {cluster.url}; "
              f"{len(cluster.node_names)} {args.nodes} nodes Ready after {cluster.ready_seconds:.1f} s", flush=True)
        args.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        args.kubeconfig.write_bytes(cluster.kubeconfig.read_bytes())
        args.kubeconfig.chmod(0o600)
        written.append(args.kubeconfig)
        state = _state_path(args.kubeconfig)
        state.write_text(json.dumps({"pid": os.getpid(), "url": cluster.url, "kubernetes": cluster.release.kubernetes}))
        written.append(state)
        print(f"kubeconfig written to {args.kubeconfig}", flush=True)
        print(f"try: KUBECONFIG={args.kubeconfig} kubectl get nodes   (Ctrl-C or `lwsconf local down` to stop)",
              flush=True)
        return _watch(cluster)
    except (WaitTimeout, StartError, RealNodesError, NetworkError, NodeError, ImageBuildError) as exc:
        print(f"lwsconf local: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping the local control plane", flush=True)
        return 0
    finally:
        cluster.stop()
        for path in written:
            path.unlink(missing_ok=True)


def _watch(cluster: LocalCluster | RealNodeCluster) -> int:
    """Stay up until a signal (KeyboardInterrupt) or a component exits on its own (status 1)."""
    idle = threading.Event()  # never set: its timed wait is the watchdog's pause, and a signal interrupts it
    while True:
        dead = cluster.dead()
        if dead:
            for component in dead:
                print(f"lwsconf local: {component.describe()}", file=sys.stderr)
            return 1
        idle.wait(WATCH_INTERVAL)


def _down(args: argparse.Namespace) -> int:
    state = _state_path(args.kubeconfig)
    try:
        pid = int(json.loads(state.read_text())["pid"])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError) as exc:
        print(f"lwsconf local: no local control plane is running for {args.kubeconfig} ({exc}); "
              f"start one with `lwsconf local up`", file=sys.stderr)
        return 2

    def gone() -> bool:
        try:  # a zombie (exited, its parent has not reaped it yet) has stopped too
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            return True
        raise NotYet(f"pid {pid} is still running")

    try:
        wait_until(gone, what=f"`lwsconf local up` (pid {pid}) to stop", timeout=DOWN_TIMEOUT, poll=0.2)
    except (WaitTimeout, StartError, RealNodesError, NetworkError, NodeError, ImageBuildError) as exc:
        print(f"lwsconf local: {exc}", file=sys.stderr)
        return 1
    print("local control plane stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    return _up(args) if args.action == "up" else _down(args)


if __name__ == "__main__":
    sys.exit(main())
