"""`lwsconf fidelity record --out lwsconf/fidelity/heldout`: record real clients' traffic and convert it.

    lwsconf fidelity record [--out DIR] [--recordings DIR] [--kubernetes-version V] [--sources suite,kubectl,python]
                            [--suite-args "ARGS"] [--convert-only]

Three recordings, each of a real control plane (`--cluster=local`: real etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, simulated nodes) through the recording proxy (`recorder.py`):

* `suite`: the conformance suite with the reference reconciler, `pytest conformance --cluster=local
  --record-traffic=FILE -n 0 --profiles=LWS-CORE,LWS-EXTENDED --all-features` on SUITE_SUBSET (the whole suite
  takes 10-15 minutes here, the subset about 4; `--suite-args` chooses others); the tests' and the reconciler's
  requests are recorded, not the nodes' or kube-controller-manager's;
* `kubectl`: kubectl's everyday commands (`clients.kubectl_script`), kubectl of the pinned release;
* `python`: the official Python client (`clients.python_client`).

The raw recordings (JSON lines, scrubbed) go to `--recordings` (default: a new temporary folder, printed);
each is converted (`convert.py`) into `<out>/<source>.json`, whose `generated` header names this command,
the recording, the release and the commit. `--convert-only` converts the recordings already in `--recordings`.
Exit status 0 when every recording was made and converted (a failing test or kubectl command is traffic
too, and is only reported), 1 when a cluster did not start or a recording is empty, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lwsconf import project_files, suite_identity
from lwsconf.controlplane import build, versions
from lwsconf.controlplane.local import StartError
from lwsconf.fidelity import clients, convert, heldout, recorder
from lwsconf.waits.core import WaitTimeout

SOURCES = ("suite", "kubectl", "python")
SUITE_SUBSET = ("conformance/test_object_model.py", "conformance/test_labels.py", "conformance/test_env_injection.py",
                "conformance/test_scaling.py", "conformance/test_status_conditions.py",
                "conformance/test_defaulting_and_validation.py", "conformance/test_deletion.py",
                "conformance/test_self_healing.py", "conformance/test_subgroups.py", "conformance/test_events.py",
                "conformance/test_startup_policy.py", "conformance/test_rolling_update.py",
                "conformance/test_group_restart.py")
"""The suite's modules recorded by default: object model, labels, env, scaling, status, validation, deletion,
self-healing, subgroups, events, startup policy, rolling update and group restart (about a third of the suite)."""
SUITE_TIMEOUT = 3600.0
"""Seconds the recorded suite run may take."""
DESCRIPTIONS = {
    "suite": "the conformance suite with the reference reconciler (the tests' and the reconciler's requests)",
    "kubectl": "kubectl's everyday commands (lwsconf/fidelity/clients.py, kubectl_script)",
    "python": "the official Python client (lwsconf/fidelity/clients.py, python_client)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf fidelity record",
                                     description="record real clients' traffic to kube-apiserver and convert it "
                                                 "into the held-out corpus")
    parser.add_argument("--out", type=Path, default=heldout.FOLDER, help=f"where the corpus goes ({heldout.FOLDER})")
    parser.add_argument("--recordings", type=Path, default=None,
                        help="where the raw recordings go (default: a new temporary folder)")
    parser.add_argument("--kubernetes-version", default=None,
                        help=f"a pinned release ({', '.join(r.kubernetes for r in versions.RELEASES)})")
    parser.add_argument("--sources", default=",".join(SOURCES), help=f"which recordings ({', '.join(SOURCES)})")
    parser.add_argument("--suite-args", default=" ".join(SUITE_SUBSET),
                        help="pytest arguments choosing the suite's tests (default: SUITE_SUBSET in record.py)")
    parser.add_argument("--convert-only", action="store_true",
                        help="convert the recordings already in --recordings, record nothing")
    return parser


def record_suite(release: versions.Release, out: Path, suite_args: Sequence[str]) -> int:
    """The suite on `--cluster=local` with the recorder; pytest's exit status."""
    argv = [sys.executable, "-m", "pytest", "--cluster=local", f"--kubernetes-version={release.kubernetes}",
            f"--record-traffic={out}", "-n", "0", "-q", "--profiles=LWS-CORE,LWS-EXTENDED", "--all-features",
            *suite_args]
    print(f"record: {shlex.join(argv[1:])}", flush=True)
    done = subprocess.run(argv, cwd=project_files.roots()[0], timeout=SUITE_TIMEOUT, check=False)  # noqa: S603
    return done.returncode


def record_clients(release: versions.Release, recordings: Path, sources: Sequence[str]) -> None:
    """kubectl's and the Python client's scripts, each through its own recorder on one local cluster."""
    from lwsconf.localcluster.cluster import LocalCluster

    binaries = build.installed(release)
    if binaries is None or "kubectl" not in binaries:
        raise StartError(f"kubectl {release.kubernetes} is not built: run `lwsconf controlplane build`")
    with LocalCluster(release) as cluster:
        assert cluster.controlplane is not None
        if "kubectl" in sources:
            proxy, kubeconfig = recorder.start_for(cluster.controlplane, recordings / "kubectl.jsonl")
            try:
                results = clients.run_kubectl(binaries["kubectl"], kubeconfig, clients.kubectl_script("rec-kubectl"))
            finally:
                proxy.stop()
            failed = [" ".join(c.args) for c, code in results if code != 0]
            print(f"record: kubectl: {len(results)} commands, {len(failed)} exited non-zero"
                  + (f": {'; '.join(failed)}" if failed else ""), flush=True)
        if "python" in sources:
            proxy, kubeconfig = recorder.start_for(cluster.controlplane, recordings / "python.jsonl")
            try:
                clients.python_client(kubeconfig, "rec-python")
            finally:
                proxy.stop()


def convert_recording(path: Path, source: str, out: Path, *, release: str, command: str) -> dict[str, Any]:
    """One recording into `<out>/<source>.json`; the document written."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    converted = convert.convert(records, source=source)
    started = min((r["started"] for r in records), default="")
    header = {"note": "generated by the command below from a recording of real traffic: never edit by hand, "
                      "record again", "command": command, "source": DESCRIPTIONS.get(source, source),
              "recording": f"{path.name}, {len(records)} interactions from {started}", "kubernetes": release,
              "commit": suite_identity.suite_commit() or "unknown",
              "made": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    document = converted.document(header)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{source}.json").write_text(dumps(document))
    return document


def dumps(document: dict[str, Any]) -> str:
    """The corpus file: JSON with one step per line (a refresh's diff shows which steps changed, and the file stays
    a few megabytes instead of ten with every nesting level indented)."""
    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    head = {k: v for k, v in document.items() if k not in ("prelude", "scenarios")}
    lines = ["{"] + [f" {compact(k)}: {compact(v)}," for k, v in head.items()]
    lines.append(' "prelude": [' + ",".join("\n  " + compact(step) for step in document["prelude"]) + "\n ],")
    scenarios = []
    for scenario in document["scenarios"]:
        fields = {k: v for k, v in scenario.items() if k != "steps"}
        inner = ",".join("\n   " + compact(step) for step in scenario["steps"])
        scenarios.append("\n  " + compact(fields)[:-1] + ',"steps":[' + inner + "\n  ]}")
    lines.append(' "scenarios": [' + ",".join(scenarios) + "\n ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown:
        print(f"lwsconf fidelity record: unknown source(s) {', '.join(unknown)}; choose from {', '.join(SOURCES)}",
              file=sys.stderr)
        return 2
    try:
        release = versions.resolve(args.kubernetes_version)
    except versions.UnknownVersion as exc:
        print(f"lwsconf fidelity record: {exc}", file=sys.stderr)
        return 2
    recordings = args.recordings or Path(tempfile.mkdtemp(prefix="lwsconf-recordings-"))
    recordings.mkdir(parents=True, exist_ok=True)
    print(f"record: raw recordings in {recordings}", flush=True)
    started = time.monotonic()
    if not args.convert_only:
        if build.installed(release) is None:
            print(f"lwsconf fidelity record: Kubernetes {release.kubernetes} is not built: run `lwsconf controlplane "
                  f"build --kubernetes-version {release.kubernetes}` (needs Go)", file=sys.stderr)
            return 2
        for source in sources:
            (recordings / f"{source}.jsonl").unlink(missing_ok=True)
        try:
            if "suite" in sources:
                status = record_suite(release, recordings / "suite.jsonl", shlex.split(args.suite_args))
                print(f"record: suite exited {status} ({time.monotonic() - started:.0f} s)", flush=True)
            if {"kubectl", "python"} & set(sources):
                record_clients(release, recordings, sources)
        except (StartError, WaitTimeout, subprocess.TimeoutExpired, OSError) as exc:
            print(f"lwsconf fidelity record: {exc}", file=sys.stderr)
            return 1
    command = f"lwsconf fidelity record --out {args.out} --sources {','.join(sources)}" + (
        " --convert-only (from the recordings an earlier record made)" if args.convert_only else "")
    for source in sources:
        path = recordings / f"{source}.jsonl"
        if not path.is_file() or not path.stat().st_size:
            print(f"lwsconf fidelity record: {path} is empty: nothing was recorded", file=sys.stderr)
            return 1
        document = convert_recording(path, source, args.out, release=release.kubernetes, command=command)
        print(f"record: {source}: {document['recordedInteractions']} interactions recorded, {document['steps']} "
              f"steps in {len(document['scenarios'])} scenarios -> {args.out / (source + '.json')}", flush=True)
    print(f"record: done in {time.monotonic() - started:.0f} s")
    return 0
