"""`lwsconf controlplane ...`: the real Kubernetes control-plane components.

    lwsconf controlplane build [--kubernetes-version 1.37.2|1.36.3]   build them into the cache (or skip)
    lwsconf controlplane where [--kubernetes-version V]               print the cache's bin directory

Exit status: 0 built or up to date; 1 a `go build` failed (its command and log tail are printed);
2 a usage problem anyone can fix (no Go, an unpinned version, a missing module folder), in one line.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from lwsconf.controlplane import build, versions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf controlplane",
                                     description="real kube-apiserver, kube-controller-manager, kube-scheduler, "
                                                 "etcd and kubectl, built from their Go modules")
    sub = parser.add_subparsers(dest="action", required=True)
    known = ", ".join(r.kubernetes for r in versions.RELEASES)
    for name, text in (("build", "build the components into the cache (skipped when up to date)"),
                       ("where", "print the directory holding a version's binaries")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--kubernetes-version", default=None,
                         help=f"pinned Kubernetes release or minor ({known}; default "
                              f"{versions.DEFAULT.kubernetes})")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        release = versions.resolve(args.kubernetes_version)
        if args.action == "where":
            print(build.version_dir(release) / "bin")
            return 0
        go, go_version = build.find_go()
        plan = build.plan(release, go=go, go_version=go_version, nice=shutil.which("nice"))
    except (versions.UnknownVersion, build.BuildError) as exc:
        print(f"lwsconf controlplane: {exc}", file=sys.stderr)
        return 2
    try:
        build.execute(plan, sys.stdout)
    except build.BuildError as exc:
        print(f"lwsconf controlplane: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lwsconf controlplane: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
