"""Kind-specific side effects of writes that the real apiserver performs in its REST storage.

* CustomResourceDefinition: checked, given `Established` status, and (un)registered as a served
  type, so the next discovery request sees it (apiextensions-apiserver's job).
* ValidatingAdmissionPolicy: `status` gets `observedGeneration` and an empty `typeChecking`, as the
  kube-controller-manager's ValidatingAdmissionPolicy status controller writes it
  (`pkg/controller/validatingadmissionpolicystatus`); the sim cannot type-check expressions against
  the matched types' schemas (objects are dyn to its CEL), so there are never expression warnings.
* Service: a ClusterIP is allocated for non-headless Services from the server's loopback range
  (`ServerContext.service_range`: 127.96.0.0/16 by default, the cluster's own 127.X.128.0/17 under
  `SimCluster`, so clusters running side by side never hand out the same address), because nothing
  the simulator allocates may leave 127.0.0.0/8 (ARCHITECTURE.md, "Addresses on sim").
"""

from __future__ import annotations

import ipaddress
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.http.context import ServerContext
from lwsconf.sim.apiserver.patch.fieldmanager import entries as managed_fields
from lwsconf.sim.apiserver.schema import crds
from lwsconf.sim.apiserver.storage import resources

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
SERVICE_KEY = ("", "services")
NODE_KEY = ("", "nodes")
NOT_READY = "node.kubernetes.io/not-ready"
POLICY_KEY = ("admissionregistration.k8s.io", "validatingadmissionpolicies")


def before_create(ctx: ServerContext, info: resources.ResourceInfo, obj: dict[str, Any], *, dry_run: bool) -> None:
    if info.key == CRD_KEY:
        _check_crd(ctx, obj)
        # stored as the strategy leaves it; `after_write` then establishes it in a write of its own
        obj["status"] = crds.initial_status(obj)
    elif info.key == SERVICE_KEY:
        _allocate_cluster_ip(ctx, obj, dry_run=dry_run)
    elif info.key == NODE_KEY:
        _taint_not_ready(obj)
    elif info.key == POLICY_KEY:
        obj["status"] = {"observedGeneration": 1, "typeChecking": {}}


def before_update(ctx: ServerContext, info: resources.ResourceInfo, new: dict[str, Any], old: dict[str, Any]) -> None:
    if info.key == CRD_KEY and new.get("spec") != old.get("spec"):
        _check_crd(ctx, new)
        new["status"] = crds.established_status(new)
    elif info.key == POLICY_KEY and new.get("spec") != old.get("spec"):
        new["status"] = {"observedGeneration": new["metadata"].get("generation", 1), "typeChecking": {}}
    elif info.key == SERVICE_KEY:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        spec = new.setdefault("spec", {})
        if spec.get("clusterIP") in (None, "") and old_ip:
            spec["clusterIP"] = old_ip
            spec["clusterIPs"] = [old_ip]
        elif spec.get("clusterIP") != old_ip:
            raise errors.invalid("Service", "", new["metadata"]["name"], [errors.Cause(
                "spec.clusterIP", "field is immutable", "FieldValueInvalid")])


def after_write(ctx: ServerContext, info: resources.ResourceInfo, obj: dict[str, Any]) -> None:
    """Keep the registry in step with CRD objects (added, changed, or gone for good)."""
    if info.key != CRD_KEY:
        return
    name = obj["metadata"]["name"]
    still_there = ctx.db.get(CRD_KEY, "", name) is not None
    old_infos = ctx.registry.remove_crd(name)
    for old_info in old_infos:
        ctx.admission.forget(old_info)
    if still_there and not obj["metadata"].get("deletionTimestamp"):
        for new_info in crds.resource_infos(obj):
            ctx.registry.add(new_info)
        if (obj.get("status") or {}).get("conditions") is None:
            _establish(ctx, info, obj)
        return
    if still_there:
        for old_info in old_infos:  # terminating: keep serving until the finalizers are gone
            ctx.registry.add(old_info)
        return
    for old_info in old_infos[:1]:
        ctx.db.drop_table(old_info.storage_key)


def _establish(ctx: ServerContext, info: resources.ResourceInfo, created: dict[str, Any]) -> None:
    """What apiextensions-apiserver's naming and establishing controllers do right after a CRD is created: a
    status write of their own (manager kube-apiserver, subresource status, a new resourceVersion). The create's
    answer is the CRD as first stored, with empty accepted names and no conditions, as kube-apiserver 1.37.2
    answers it (lwsconf fidelity crd/crd-install/create-crd); watchers see ADDED, then MODIFIED. The sim does
    it in the same step, so the CRD is Established as soon as the create has returned."""
    established = objects.deep_copy(created)
    established["status"] = crds.established_status(created)
    managed_fields.record_update(created, established, manager="kube-apiserver", api_version=info.api_version,
                                 subresource="status", now=objects.now_rfc3339(), kind=info.kind, builtin=True)
    ctx.storage.commit_update(info, established, created)


def _taint_not_ready(node: dict[str, Any]) -> None:
    """kube-apiserver's TaintNodesByCondition admission plugin (plugin/pkg/admission/nodetaint): a Node is
    created with the `node.kubernetes.io/not-ready:NoSchedule` taint unless it has one of that key and effect,
    so nothing is scheduled there before the node lifecycle controller has seen it Ready and lifted it
    (`sim.controllers.nodelifecycle.desired_taints`; lwsconf fidelity controllers/ctl-endpointslices/node)."""
    spec = node.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    sent = spec.get("taints")
    taints: list[Any] = sent if isinstance(sent, list) else []
    if not any(isinstance(t, dict) and t.get("key") == NOT_READY and t.get("effect") == "NoSchedule" for t in taints):
        spec["taints"] = [*taints, {"key": NOT_READY, "effect": "NoSchedule"}]


def _check_crd(ctx: ServerContext, crd: dict[str, Any]) -> None:
    causes = crds.check(crd) or crds.conflicts(ctx.registry, crd)
    if causes:
        raise errors.invalid("CustomResourceDefinition", "apiextensions.k8s.io", crd["metadata"].get("name", ""),
                             causes)


def _allocate_cluster_ip(ctx: ServerContext, svc: dict[str, Any], *, dry_run: bool) -> None:
    spec = svc.setdefault("spec", {})
    wanted = spec.get("clusterIP")
    if wanted == "None":
        spec["clusterIPs"] = ["None"]
        return
    used = {(s.get("spec") or {}).get("clusterIP") for t in [ctx.db.table(SERVICE_KEY)] for s in t.objects.values()}
    service_range = ctx.service_range
    if wanted:
        try:
            addr = ipaddress.ip_address(wanted)
        except ValueError:
            addr = None
        if addr is None or addr not in service_range:
            raise errors.invalid("Service", "", svc["metadata"].get("name", ""), [errors.Cause(
                "spec.clusterIP", f"Invalid value: {wanted!r}: provided IP is not in the valid range. "
                f"The range of valid IPs is {service_range}")])
        if wanted in used:
            raise errors.invalid("Service", "", svc["metadata"].get("name", ""), [errors.Cause(
                "spec.clusterIP", f"Invalid value: {wanted!r}: provided IP is already allocated")])
        spec["clusterIPs"] = [wanted]
        return
    for host in service_range.hosts():
        ip = str(host)
        if ip not in used and not ip.endswith(".0"):
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
            return
    raise errors.StatusError(500, "InternalError", f"the ClusterIP range {service_range} is exhausted; "
                             "delete Services or give the API server a larger service_range")
