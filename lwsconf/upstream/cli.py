"""`lwsconf upstream ...`: upstream's LeaderWorkerSet manager, built from its Go module.

    lwsconf upstream build [--version v0.9.0|PATH]   build the manager into the cache (or skip when up to date)
    lwsconf upstream where [--version v0.9.0|PATH]   print the manager binary's path and what it is built from

    --version takes a pinned release (v0.9.0), a pinned source snapshot (v0.10.0, main) or a checkout's path.

Exit status: 0 built or up to date; 1 a `go build` failed (its command and log tail are printed);
2 a problem anyone can fix (no Go, a version the proxy does not serve or that is not pinned, a path
that is no LWS checkout), in one line; 3 a pinned snapshot's archive is absent (make skips that version
unless LWSCONF_REQUIRE_UPSTREAM_SNAPSHOTS=1).
"""

from __future__ import annotations

import argparse
import json
import sys

from lwsconf.controlplane import build as gobuild
from lwsconf.upstream import build, source, versions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf upstream",
                                     description="upstream's LeaderWorkerSet manager (sigs.k8s.io/lws), built from "
                                                 "its Go module for --lws-impl=upstream-local")
    sub = parser.add_subparsers(dest="action", required=True)
    pinned = ", ".join([r.version for r in versions.RELEASES] +
                       [f"{s.version} ({'/'.join(s.aliases) + ', ' if s.aliases else ''}source snapshot)"
                        for s in versions.SNAPSHOTS])
    for name, text in (("build", "build the manager into the cache (skipped when up to date)"),
                       ("where", "print the manager's path and the facts of its source (JSON), building nothing")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--version", default=None,
                         help=f"a pinned release ({pinned}; default {versions.DEFAULT.version}) or the path of an "
                              "LWS checkout")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.action == "where":
            go, _ = gobuild.find_go(**build.NO_GO)
            facts = source.facts(versions.parse(args.version), go)
            print(json.dumps({"binary": str(build.lws_dir(facts) / "bin" / "manager"), **facts.record()}, indent=2))
            return 0
        build.ensure(args.version, sys.stdout)
    except source.SnapshotMissing as exc:
        print(f"lwsconf upstream: {exc}", file=sys.stderr)
        return 3
    except (source.SourceError, versions.BadSource, gobuild.GoMissing) as exc:
        print(f"lwsconf upstream: {exc}", file=sys.stderr)
        return 2
    except gobuild.BuildError as exc:
        print(f"lwsconf upstream: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lwsconf upstream: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
