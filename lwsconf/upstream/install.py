"""Put upstream's CRDs and webhook configurations on the cluster under test, and take them off again.

Objects are created with field manager `lwsconf`; a LeaderWorkerSet CRD that someone else installed is
never replaced (removing ours deletes every LeaderWorkerSet). Order matters both ways: the CRDs (and the
Lease's namespace) before the manager starts, since its informers need the kinds served; the webhook
configurations only once it serves them, then a dry-run LeaderWorkerSet create retried until admitted,
as upstream's e2e suite waits for its webhooks (test/e2e/suite_test.go); on the way out the webhook
configurations go first, so that no request is left failing against a stopped webhook
(`failurePolicy: Fail`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubernetes import client

from lwsconf import lwsapi
from lwsconf.waits import core, observe

FIELD_MANAGER = "lwsconf"
LWS_CRD = lwsapi.CRD_NAME


class InstallError(Exception):
    """The cluster refused or never served what upstream needs; one message saying what to do."""


def foreign_crd(api: client.ApiClient) -> str | None:
    """Why installing would replace a LeaderWorkerSet CRD lwsconf did not create, or None."""
    try:
        crd = observe.raw(client.ApiextensionsV1Api(api).read_custom_resource_definition(
            LWS_CRD, _preload_content=False))
    except client.ApiException as exc:
        return None if exc.status == 404 else f"could not read CRD {LWS_CRD}: HTTP {exc.status} {exc.reason}"
    managers = {m.get("manager") for m in crd["metadata"].get("managedFields") or []}
    if FIELD_MANAGER in managers:
        return None
    return (f"LeaderWorkerSet is already installed on this cluster (CRD {LWS_CRD}, managed by "
            f"{', '.join(sorted(str(m) for m in managers)) or 'unknown'}); lwsconf will not replace it, since "
            "removing it deletes every LeaderWorkerSet. Test it with --lws-impl=installed, or remove it first.")


def _create_or_replace(create: Callable[..., Any], read: Callable[..., Any], replace: Callable[..., Any],
                       body: dict[str, Any]) -> None:
    try:
        create(body, field_manager=FIELD_MANAGER)
    except client.ApiException as exc:
        if exc.status != 409:
            raise InstallError(f"creating {body['kind']} {body['metadata']['name']}: HTTP {exc.status} "
                               f"{str(exc.body or exc.reason)[:300]}") from None
        name = body["metadata"]["name"]
        body = {**body, "metadata": {**body["metadata"], "resourceVersion": read(name).metadata.resource_version}}
        replace(name, body, field_manager=FIELD_MANAGER)


def install_crds(api: client.ApiClient, crds: list[dict[str, Any]], timeout: float, poll: float) -> None:
    """Create or replace each CRD and wait until all are Established."""
    ext = client.ApiextensionsV1Api(api)
    for body in crds:
        _create_or_replace(ext.create_custom_resource_definition, ext.read_custom_resource_definition,
                           ext.replace_custom_resource_definition, body)
    names = [c["metadata"]["name"] for c in crds]

    def established() -> None:
        for name in names:
            crd = observe.raw(ext.read_custom_resource_definition(name, _preload_content=False))
            conds = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("Established") != "True":
                raise core.NotYet(f"CRD {name} is not Established ({conds or 'no conditions'})")

    core.wait_until(established, what=f"upstream's CRDs {', '.join(names)} to be Established", timeout=timeout,
                    poll=poll)


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    try:
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)),
                                               field_manager=FIELD_MANAGER)
    except client.ApiException as exc:
        if exc.status != 409:
            raise InstallError(f"creating namespace {name}: HTTP {exc.status} {exc.reason}") from None


def delete_lease(api: client.ApiClient, namespace: str, name: str) -> None:
    """Delete a leader-election Lease (gone already is fine); InstallError when the API refuses."""
    try:
        client.CoordinationV1Api(api).delete_namespaced_lease(name, namespace)
    except client.ApiException as exc:
        if exc.status != 404:
            raise InstallError(f"deleting Lease {namespace}/{name}: HTTP {exc.status} "
                               f"{str(exc.body or exc.reason)[:300]}") from None


def install_webhooks(api: client.ApiClient, configurations: list[dict[str, Any]]) -> None:
    adm = client.AdmissionregistrationV1Api(api)
    verbs: dict[str, tuple[Callable[..., Any], ...]] = {
        "MutatingWebhookConfiguration": (adm.create_mutating_webhook_configuration,
                                         adm.read_mutating_webhook_configuration,
                                         adm.replace_mutating_webhook_configuration),
        "ValidatingWebhookConfiguration": (adm.create_validating_webhook_configuration,
                                           adm.read_validating_webhook_configuration,
                                           adm.replace_validating_webhook_configuration)}
    for body in configurations:
        create, read, replace = verbs[body["kind"]]
        _create_or_replace(create, read, replace, body)


def remove_webhooks(api: client.ApiClient, configurations: list[dict[str, Any]]) -> None:
    adm = client.AdmissionregistrationV1Api(api)
    delete = {"MutatingWebhookConfiguration": adm.delete_mutating_webhook_configuration,
              "ValidatingWebhookConfiguration": adm.delete_validating_webhook_configuration}
    for body in configurations:
        with contextlib.suppress(client.ApiException):
            delete[body["kind"]](body["metadata"]["name"])


def remove_crds(api: client.ApiClient, crds: list[dict[str, Any]], timeout: float, poll: float) -> None:
    """Delete the CRDs and wait until they are gone (their objects are deleted first, behind a finalizer),
    so that a next install on the same cluster does not meet a terminating CRD."""
    ext = client.ApiextensionsV1Api(api)
    names = [body["metadata"]["name"] for body in crds]
    for name in names:
        with contextlib.suppress(client.ApiException):
            ext.delete_custom_resource_definition(name)

    def gone() -> None:
        listed = observe.raw(ext.list_custom_resource_definition(_preload_content=False))
        left = {str(c["metadata"]["name"]) for c in listed.get("items") or []} & set(names)
        if left:
            raise core.NotYet(f"CRDs still present: {', '.join(sorted(left))}")

    core.wait_until(gone, what=f"upstream's CRDs {', '.join(names)} to be deleted", timeout=timeout, poll=poll)


def probe_lws() -> dict[str, Any]:
    """A minimal valid LeaderWorkerSet: what the dry-run create sends through the webhooks."""
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.10"}
    return {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND,
            "metadata": {"name": "lwsconf-webhook-check"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 1, "workerTemplate": {"spec": {
                "containers": [container]}}}}}


def admits_dry_run(api: client.ApiClient, namespace: str, request_timeout: float) -> None:
    """One dry-run create of `probe_lws()`; NotYet with the API server's answer until it is admitted."""
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            lwsapi.GROUP, lwsapi.VERSION, namespace, lwsapi.PLURAL, probe_lws(), dry_run="All",
            _request_timeout=request_timeout, _preload_content=False)
    except client.ApiException as exc:
        text = f"HTTP {exc.status}: {' '.join(str(exc.body or exc.reason).split())[:400]}"
        if exc.status == 403 and "cannot create" in str(exc.body):
            raise core.Terminal(f"not allowed to create LeaderWorkerSets ({text})") from None
        raise core.NotYet(text) from None
    except Exception as exc:  # noqa: BLE001 - a connection reset while the API server is busy: retry
        raise core.NotYet(f"{type(exc).__name__}: {exc}") from None


WEBHOOK_ONLY_RULE = "must not be 0 when `maxSurge` is 0"
"""A rule upstream checks in its validating webhook only (pkg/webhooks/leaderworkerset_webhook.go), not in
its CRD schema: an API server that admits an LWS breaking it did not call the webhook."""


def calls_webhooks(api: client.ApiClient, namespace: str, request_timeout: float) -> None:
    """Terminal unless a dry-run create breaking `WEBHOOK_ONLY_RULE` is refused with upstream's message."""
    body = probe_lws()
    body["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {
        "maxUnavailable": 0, "maxSurge": 0}}
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            lwsapi.GROUP, lwsapi.VERSION, namespace, lwsapi.PLURAL, body, dry_run="All",
            _request_timeout=request_timeout, _preload_content=False)
    except client.ApiException as exc:
        if WEBHOOK_ONLY_RULE in str(exc.body):  # a webhook denial is 403 Forbidden
            return
        raise core.NotYet(f"HTTP {exc.status}: {' '.join(str(exc.body or exc.reason).split())[:400]}") from None
    raise core.Terminal("the cluster admitted a LeaderWorkerSet that upstream's validating webhook refuses "
                        f"(maxUnavailable 0 with maxSurge 0: {WEBHOOK_ONLY_RULE}), so its API server does not call "
                        "admission webhooks; upstream cannot be tested on it")


PROTOBUF = "application/vnd.kubernetes.protobuf"


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (payloads here are shorter than 128 bytes)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def protobuf_config_map(name: str) -> bytes:
    """A ConfigMap named `name` in Kubernetes' protobuf wire form: the `k8s\\0` magic, then a runtime.Unknown
    holding its TypeMeta (apiVersion v1, kind ConfigMap) and the ConfigMap message (metadata.name only)."""
    type_meta = _field(1, b"v1") + _field(2, b"ConfigMap")
    config_map = _field(1, _field(1, name.encode()))
    return b"k8s\x00" + _field(1, type_meta) + _field(2, config_map)


def protobuf_refused(api: client.ApiClient, namespace: str, request_timeout: float) -> str | None:
    """Why the cluster cannot take upstream's writes, or None: controller-runtime's client sends built-in kinds
    (Pods, StatefulSets, Services, Leases, Events) as protobuf, which kube-apiserver reads; probed by a dry-run
    ConfigMap create in that encoding."""
    method, url, headers, body, _ = api.param_serialize(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", query_params=[("dryRun", "All")],
        header_params={"Content-Type": PROTOBUF, "Accept": "application/json"},
        body=protobuf_config_map("lwsconf-protobuf-check"), auth_settings=["BearerToken"])
    try:
        reply = api.call_api(method, url, header_params=headers, body=body, _request_timeout=request_timeout)
        reply.read()  # type: ignore[no-untyped-call]
    except Exception as exc:  # noqa: BLE001 - an unreachable API server: the later waits say more
        return f"a dry-run ConfigMap create sent as {PROTOBUF} failed: {type(exc).__name__}: {exc}"
    if 200 <= reply.status < 300:
        return None
    text = " ".join((reply.data or b"").decode(errors="replace").split())[:300]
    return f"a dry-run ConfigMap create sent as {PROTOBUF} answered HTTP {reply.status}: {text}"
