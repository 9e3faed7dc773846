"""`lwsconf nodes build`: what real nodes run, built from pinned Go modules, and their images made offline.

    lwsconf nodes build [--kubernetes-version 1.37.2]   kubelet, kube-proxy, containerd, runc, CNI plugins, pause,
                                                        then the images (pause, python via debootstrap)

Exit status: 0 built or up to date; 1 a build failed (its command and log tail are printed); 2 what a user can fix
(no Go, an unknown version, no libseccomp-dev or debootstrap), one line.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shutil
import sys

from lwsconf.controlplane import build as gobuild
from lwsconf.controlplane import versions
from lwsconf.realnodes import build, catalog


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf nodes", description="the parts of real nodes, built here")
    sub = parser.add_subparsers(dest="action", required=True)
    cmd = sub.add_parser("build", help="build the node parts and images into the cache (skipped when up to date)")
    cmd.add_argument("--kubernetes-version", default=None,
                     help=f"pinned Kubernetes release ({versions.DEFAULT.kubernetes}; default "
                          f"{versions.DEFAULT.kubernetes})")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        release = versions.resolve(args.kubernetes_version)
        go, go_version = gobuild.find_go(purpose="building real nodes", instead="use the simulated nodes")
        plans = build.plans(release, go=go, go_version=go_version, nice=shutil.which("nice"))
    except (versions.UnknownVersion, gobuild.BuildError) as exc:
        print(f"lwsconf nodes: {exc}", file=sys.stderr)
        return 2
    # debootstrap waits on the network and the disk while the Go builds use the CPU: run it beside them (about 3
    # minutes off a cold `make nodes`); python_rootfs holds a file lock, so build_all then finds it made
    rootfs = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="debootstrap")
    made = rootfs.submit(catalog.python_rootfs)
    try:
        for plan in plans:
            gobuild.execute(plan, sys.stdout)
        made.result()
        binaries = build.installed(release)
        assert binaries is not None, "every part was just built"
        for entry in catalog.build_all(binaries):
            print(f"image {entry.reference}: {entry.built.manifest_digest} ({entry.made_of}; "
                  f"{entry.built.layer_bytes / 2**20:.0f} MiB)", flush=True)
    except catalog.ImageBuildError as exc:
        print(f"lwsconf nodes: {exc}", file=sys.stderr)
        return 2
    except gobuild.BuildError as exc:
        hint = " (runc needs libseccomp-dev: apt-get install libseccomp-dev)" if "seccomp" in str(exc) else ""
        print(f"lwsconf nodes: {exc}{hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lwsconf nodes: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130
    finally:
        made.cancel()
        rootfs.shutdown(wait=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
