"""`lwsconf kind node-image build`: the kind node image of a pinned release, built offline here.

    lwsconf kind node-image build [--kubernetes-version 1.37.2] [--no-load]
        builds kind, kubeadm and crictl (Go modules under nodes/), the root filesystem (debootstrap), the preloaded
        images, the archive <cache>/kindnode/<release>/kind-node-v<release>.tar, and `docker load`s it as
        lwsconf.local/kind-node:v<release> (not with --no-load). Needs `make controlplane nodes` first.

Exit status: 0 built; 1 a build or a command failed (its command and output are printed); 2 what a user can fix (no
Go, an unknown version, the control plane or node parts not built, no debootstrap or docker), one line.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from lwsconf.controlplane import build as gobuild
from lwsconf.controlplane import versions
from lwsconf.kindnode import build
from lwsconf.realnodes import catalog


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf kind", description="kind's node image, built here offline")
    sub = parser.add_subparsers(dest="what", required=True)
    image = sub.add_parser("node-image", help="the kind node image")
    actions = image.add_subparsers(dest="action", required=True)
    cmd = actions.add_parser("build", help="build the image (needs `make controlplane nodes`; see lwsconf kind -h)")
    cmd.add_argument("--kubernetes-version", default=None,
                     help=f"pinned Kubernetes release (default {versions.DEFAULT.kubernetes})")
    cmd.add_argument("--no-load", action="store_true", help="write the archive only; no `docker load`")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        release = versions.resolve(args.kubernetes_version)
        go, go_version = gobuild.find_go(purpose="building the kind node image",
                                         instead="use --cluster=kind with kind's own node image")
        plans = build.go_plans(release, go=go, go_version=go_version, nice=shutil.which("nice"))
    except (versions.UnknownVersion, gobuild.BuildError) as exc:
        print(f"lwsconf kind: {exc}", file=sys.stderr)
        return 2
    try:
        for plan in plans:
            gobuild.execute(plan, sys.stdout)
        made = build.build(release, go=go, load=not args.no_load, notify=lambda line: print(line, flush=True))
    except (build.PrerequisiteMissing, catalog.ToolMissing) as exc:
        print(f"lwsconf kind: {exc}", file=sys.stderr)
        return 2
    except (catalog.ImageBuildError, build.NodeImageError) as exc:
        print(f"lwsconf kind: {exc}", file=sys.stderr)
        return 1
    except gobuild.BuildError as exc:
        print(f"lwsconf kind: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lwsconf kind: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130
    for image in made.preloaded:
        print(f"preloaded {image['reference']}: {image['digest']} ({image['made_of']})")
    state = "loaded into Docker" if made.loaded else "not loaded (--no-load)"
    print(f"kind node image {made.tag}: {made.image_id}, {made.layer_bytes / 2**20:.0f} MiB, {made.archive}; {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
