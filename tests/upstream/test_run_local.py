"""--lws-impl=upstream-local's setup against a real etcd + kube-apiserver (lwsconf's local control plane):
upstream's webhooks answer, default and refuse; its controller creates the leader StatefulSet; a restart
brings it back; afterwards nothing is left, neither on the cluster nor as a process or folder.

Needs the control plane and the manager built; without them it skips saying what to run
(LWSCONF_REQUIRE_GO=1 turns the skip into a failure)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from lwsconf.controlplane import build as cpbuild
from lwsconf.controlplane import local, versions
from lwsconf.timeouts import Timeouts
from lwsconf.upstream import build, install, run
from lwsconf.waits.core import NotYet, wait_until

REQUIRE_ENV = "LWSCONF_REQUIRE_GO"


def _skip(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[Path]:
    release = versions.DEFAULT
    bin_dir = cpbuild.version_dir(release) / "bin"
    binaries = {path.name: path for path in bin_dir.glob("[!.]*") if path.is_file()}
    if not {"etcd", "kube-apiserver"} <= binaries.keys():
        _skip(f"no Kubernetes {release.kubernetes} control plane is built: run `lwsconf controlplane build`")
    try:
        build.ensure(None, io.StringIO())
    except Exception as exc:  # noqa: BLE001 - no Go, no module: say so in the skip
        _skip(f"upstream's manager cannot be built here: {exc}")
    with local.LocalControlPlane(release, binaries) as plane:
        yield plane.kubeconfig


def _lws(name: str, **rollout: object) -> dict[str, object]:
    body = install.probe_lws()
    body["metadata"] = {"name": name}
    if rollout:
        body["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": rollout}
    return body


def _leader_statefulset(api: client.ApiClient, name: str, timeout: float) -> None:
    def made() -> None:
        try:
            client.AppsV1Api(api).read_namespaced_stateful_set(name, "default")
        except client.ApiException as exc:
            raise NotYet(f"statefulset default/{name}: HTTP {exc.status}") from None

    wait_until(made, what=f"upstream to create the leader StatefulSet {name}", timeout=timeout, poll=0.5)


def test_upstream_serves_its_webhooks_and_reconciles_then_leaves_nothing(kubeconfig: Path) -> None:
    timeouts = Timeouts(lws_available=120.0, controller_restart=60.0)
    with run.upstream_local(None, kubeconfig, None, timeouts, io.StringIO()) as up:
        assert up.built.facts.record()["how"] == "run out of cluster by lwsconf"
        objects = client.CustomObjectsApi(up.api)
        created = objects.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "default",
                                                          "leaderworkersets", _lws("first"))
        assert created["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
            "maxSurge": 0, "maxUnavailable": 1, "partition": 0}
        with pytest.raises(client.ApiException) as refused:
            objects.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "default", "leaderworkersets",
                                                    _lws("second", maxUnavailable=0, maxSurge=0))
        assert 'admission webhook \\"vleaderworkerset.kb.io\\" denied the request' in str(refused.value.body)
        _leader_statefulset(up.api, "first", 90)
        pid = up.manager.component.pid if up.manager.component else 0
        folder = up.manager.folder
        up.restart()
        assert up.manager.component is not None and up.manager.component.pid != pid
        objects.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "default", "leaderworkersets",
                                                _lws("after-restart"))
        # the new process took the Lease over at once: the restart deleted the stopped one's Lease, or it would
        # wait out the 60 s lease (manager.LEADER_ELECTION) before reconciling, past this 45 s
        _leader_statefulset(up.api, "after-restart", 45)
        pid = up.manager.component.pid
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not folder.exists()
    api = run._api(kubeconfig, None)
    try:
        adm = client.AdmissionregistrationV1Api(api)
        assert [w.metadata.name for w in adm.list_mutating_webhook_configuration().items] == []
        assert [w.metadata.name for w in adm.list_validating_webhook_configuration().items] == []
        names = [c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items]
        assert install.LWS_CRD not in names
    finally:
        api.close()  # type: ignore[no-untyped-call]
