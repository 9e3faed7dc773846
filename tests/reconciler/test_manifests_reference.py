"""The in-cluster manifests of the reference reconciler: parseable, consistent with the CLI and the code."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from lwsconf import cli
from lwsconf.reconciler import controller, eventrecorder, leaderelection

REFERENCE = Path(__file__).resolve().parents[2] / "manifests" / "reference"


def docs(name: str) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all((REFERENCE / name).read_text()) if d]


def test_deployment_args_are_accepted_by_the_cli() -> None:
    (deploy,) = docs("deployment.yaml")
    container = deploy["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    args = cli._parser().parse_args(container["args"])
    assert args.command == "reconciler" and args.in_cluster and args.leader_elect


def test_cluster_role_grants_every_resource_the_reconciler_touches() -> None:
    role = next(d for d in docs("rbac.yaml") if d["kind"] == "ClusterRole")
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}  # type: ignore[index]
    used = {(gvr.group, gvr.plural) for gvr in (controller.LWS, controller.STATEFULSETS, controller.REVISIONS,
                                                controller.PODS, controller.SERVICES, controller.NODES,
                                                eventrecorder.EVENTS)}
    used.add((controller.LWS.group, controller.LWS.plural + "/status"))
    assert used <= granted, f"missing from the ClusterRole: {sorted(used - granted)}"


def test_leader_election_lease_is_granted_in_its_namespace() -> None:
    role = next(d for d in docs("rbac.yaml") if d["kind"] == "Role")
    assert role["metadata"]["namespace"] == "kube-system"  # type: ignore[index]
    rule = role["rules"][0]  # type: ignore[index]
    assert rule["apiGroups"] == [leaderelection.LEASES.group] and rule["resources"] == ["leases"]


def test_dockerfile_entrypoint_is_the_lwsconf_command() -> None:
    text = (REFERENCE / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["lwsconf"\]$', text, re.M)
