"""REST storage semantics on top of the store: what create, update and delete *mean* in Kubernetes.

This is the counterpart of the apiserver's generic registry (`registry/generic/registry/store.go`):
system metadata (uid, creationTimestamp, generateName), optimistic concurrency on resourceVersion,
generation bumps on spec changes only, status-subresource isolation, dry-run, graceful and
finalizer-gated deletion, namespace lifecycle (no new content in a missing or terminating namespace).
Admission (defaulting and validation) is a separate step the handlers run before calling in here.

Objects come in and go out in the form of the resource the request named; a resource stored in
another form (events.k8s.io/v1 events are stored as core v1 events) is converted on the way to and
from the store (`conversion`). Reads for the handlers and watch streams go through here for that
reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lwsconf import jsoncodec
from lwsconf.sim.apiserver.apimachinery import errors, objects, selectors
from lwsconf.sim.apiserver.storage import conversion, jobs, resources, store

NAMESPACES: store.ResourceKey = ("", "namespaces")
PODS: store.ResourceKey = ("", "pods")


@dataclass(frozen=True)
class DeleteOptions:
    """The parts of metav1.DeleteOptions the server honours."""

    propagation_policy: str | None = None
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False

    @staticmethod
    def from_body(body: Any, query: dict[str, str]) -> DeleteOptions:
        """Merge the JSON body and query parameters (kubectl uses either); 400 naming a field of the wrong type."""
        if not isinstance(body, dict):
            raise errors.bad_request(f"DeleteOptions must be a JSON object, got {type(body).__name__}")
        pre = body.get("preconditions") or {}
        if not isinstance(pre, dict) or not all(isinstance(pre.get(k), str | None) for k in ("uid", "resourceVersion")):
            raise errors.bad_request(f"DeleteOptions.preconditions must be an object with string uid and "
                                     f"resourceVersion, got {pre!r}")
        policy = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents", query.get("orphanDependents"))
        if policy not in (None, "Background", "Foreground", "Orphan"):  # ValidateDeleteOptions' wording
            raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [errors.Cause(
                "propagationPolicy", f'Unsupported value: {json.dumps(policy)}: supported values: "Foreground", '
                '"Background", "Orphan", "nil"', "FieldValueNotSupported")])
        if policy is not None and orphan is not None:
            raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [errors.Cause(
                "propagationPolicy", f"Invalid value: {json.dumps(policy)}: orphanDependents and deletionPropagation "
                "cannot be both set")])
        if policy is None and orphan in (True, "true"):
            policy = "Orphan"
        return DeleteOptions(policy, _grace_seconds(body, query), pre.get("uid"), pre.get("resourceVersion"),
                             _delete_dry_run(body, query))


def _grace_seconds(body: dict[str, Any], query: dict[str, str]) -> int | None:
    grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    if grace is None:
        return None
    if isinstance(grace, str) and grace.lstrip("+-").isascii() and grace.lstrip("+-").isdigit():
        return int(grace)
    if isinstance(grace, int) and not isinstance(grace, bool):
        return grace
    raise errors.bad_request(f"gracePeriodSeconds must be an integer, got {grace!r}")


def _delete_dry_run(body: dict[str, Any], query: dict[str, str]) -> bool:
    """dryRun from the body (a list) or the query; the only value is All, as ValidateDeleteOptions checks."""
    dry = body.get("dryRun") if body.get("dryRun") is not None else ([query["dryRun"]] if "dryRun" in query else [])
    if not isinstance(dry, list) or any(value != "All" for value in dry):
        raise errors.bad_request(f"dryRun={dry!r} is not supported: the only accepted value is All")
    return bool(dry)


DAEMONSETS = ("apps", "daemonsets")
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""apps/v1 carries the internal DaemonSetSpec.TemplateGeneration as this annotation (kubernetes
pkg/apis/apps/v1/conversion.go); the strategy sets it to 1 on create and adds 1 when the template changes
(pkg/registry/apps/daemonset/strategy.go)."""


def _template_generation(obj: dict[str, Any]) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0


def _set_template_generation(obj: dict[str, Any], generation: int) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[TEMPLATE_GENERATION] = str(generation)


def _status_write_of_builtin(new: dict[str, Any], old: dict[str, Any], resets: tuple[str, ...]) -> dict[str, Any]:
    """A status write of a built-in kind as its status strategy prepares it: everything but metadata and status
    (the spec) from `old`, metadata as sent less `resets` (taken from `old`)."""
    out = {key: value for key, value in new.items() if key in ("apiVersion", "kind", "metadata", "status")}
    out.update({key: objects.deep_copy(value) for key, value in old.items()
                if key not in ("apiVersion", "kind", "metadata", "status")})
    meta = out.setdefault("metadata", {})
    for key in resets:
        if key in old["metadata"]:
            meta[key] = objects.deep_copy(old["metadata"][key])
        else:
            meta.pop(key, None)
    return out


class Storage:
    """Create/update/delete with Kubernetes semantics over one `store.Store`."""

    def __init__(self, db: store.Store) -> None:
        self.db = db

    # --- reads ------------------------------------------------------------------------------

    def get(self, info: resources.ResourceInfo, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as `info` serves it (read-only: it may be the stored dict itself)."""
        obj = self.db.get(info.storage_key, namespace, name)
        return None if obj is None else conversion.from_storage(info, obj)

    def must_get(self, info: resources.ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        obj = self.get(info, namespace, name)
        if obj is None:
            raise errors.not_found(info.plural, info.group, name)
        return obj

    def list_keys(self, info: resources.ResourceInfo, namespace: str | None, label_sel: selectors.LabelSelector,
                  field_sel: selectors.FieldSelector) -> list[store.ObjKey]:
        """Keys of the matching objects in (namespace, name) order; `field_sel` uses stored labels
        (`conversion.field_selector`)."""
        return self.db.list_keys(info.storage_key, namespace, label_sel, field_sel)

    def read(self, info: resources.ResourceInfo, keys: list[store.ObjKey]) -> list[dict[str, Any]]:
        """The objects under `keys` (from `list_keys`), as `info` serves them."""
        objects_ = self.db.table(info.storage_key).objects
        return [conversion.from_storage(info, objects_[k]) for k in keys]

    def encoded(self, info: resources.ResourceInfo, k: store.ObjKey) -> bytes:
        """The JSON of one object as `info` serves it; cached by the store when no conversion applies."""
        if info.stored_as is None:
            return self.db.encoded(info.storage_key, k)
        obj = conversion.from_storage(info, self.db.table(info.storage_key).objects[k])
        return jsoncodec.dumps(obj)

    def encoded_list_item(self, info: resources.ResourceInfo, k: store.ObjKey) -> bytes:
        """The JSON of one object as an item of a list: built-in kinds without apiVersion and kind,
        as kube-apiserver's typed lists encode them (the list's own TypeMeta names the kind);
        custom resources (unstructured in kube-apiserver) keep theirs."""
        if info.is_custom:
            return self.encoded(info, k)
        obj = conversion.from_storage(info, self.db.table(info.storage_key).objects[k])
        return jsoncodec.dumps({key: value for key, value in obj.items() if key not in ("apiVersion", "kind")})

    # --- helpers ----------------------------------------------------------------------------

    def check_namespace_open(self, namespace: str, info: resources.ResourceInfo, obj: dict[str, Any]) -> None:
        """NamespaceLifecycle admission of a CREATE of `obj` as `info`: the namespace must exist and not be
        terminating.

        kube-apiserver's refusal (apiserver admission/plugin/namespace/lifecycle) names the object being
        created, not the namespace (`admission.NewForbidden`: its name, else its generateName, else
        "Unknown"), and carries one cause of type NamespaceTerminating on `metadata.namespace`; a
        controller writing into a namespace being deleted sees exactly this Status.
        """
        ns = self.db.get(NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            refusal = errors.forbidden(info.plural, info.group, objects.admission_name(obj),
                                       f"unable to create new content in namespace {namespace} "
                                       "because it is being terminated")
            refusal.causes.append(errors.Cause("metadata.namespace", f"namespace {namespace} is being terminated",
                                               "NamespaceTerminating"))
            raise refusal

    # --- create -----------------------------------------------------------------------------

    def create(self, info: resources.ResourceInfo, obj: dict[str, Any], *, dry_run: bool = False,
               stamped: bool = False) -> dict[str, Any]:
        """Stamp system metadata (unless `stamp_for_create` already did: `stamped`) and store a new object
        (the caller has run admission)."""
        meta = obj["metadata"]
        if info.namespaced:
            self.check_namespace_open(meta["namespace"], info, obj)
        if not stamped:
            self.stamp_for_create(info, obj)
        if self.db.get(info.storage_key, meta.get("namespace", ""), meta["name"]) is not None:
            raise errors.already_exists(info.plural, info.group, meta["name"])
        for system_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(system_field, None)
        if dry_run:  # nothing was stored, so there is no resourceVersion (kube-apiserver answers none)
            return obj
        return self._put(info, obj)

    def stamp_for_create(self, info: resources.ResourceInfo, obj: dict[str, Any]) -> None:
        """`rest.BeforeCreate`'s part before validating admission: a name from `generateName`, then `uid`,
        `creationTimestamp` and (for kinds that track it) `generation` 1, so validating admission policies and
        webhooks see them, as on kube-apiserver; `create(stamped=True)` keeps them."""
        meta = obj["metadata"]
        if not meta.get("name"):
            meta["name"] = self._free_generated_name(info, meta)
            if info.key == ("", "namespaces"):  # the namespace strategy labels it with its (generated) name
                labels = meta.setdefault("labels", {})
                if isinstance(labels, dict):
                    labels["kubernetes.io/metadata.name"] = meta["name"]
        meta["uid"] = objects.new_uid()
        meta["creationTimestamp"] = objects.now_rfc3339()
        if info.tracks_generation or info.is_custom:
            meta["generation"] = 1
        if info.key == DAEMONSETS:
            _set_template_generation(obj, max(1, _template_generation(obj)))
        if info.key == jobs.JOBS:  # the job strategy generates the selector from the uid (`jobs.generate_selector`)
            jobs.generate_selector(obj)

    def _free_generated_name(self, info: resources.ResourceInfo, meta: dict[str, Any]) -> str:
        prefix = meta.get("generateName") or ""
        for _ in range(8):
            name = objects.generated_name(prefix)
            if self.db.get(info.storage_key, meta.get("namespace", ""), name) is None:
                return name
        raise errors.StatusError(500, "AlreadyExists", f"could not find a free name with prefix {prefix!r}; retry")

    # --- update -----------------------------------------------------------------------------

    def prepare_update(self, info: resources.ResourceInfo, new: dict[str, Any], old: dict[str, Any], *,
                       subresource: str | None) -> dict[str, Any]:
        """Fold server-owned state from `old` into `new`, before admission validates it.

        Raises 409 when `new` names a stale resourceVersion. A status write changes only status
        (plus nothing else, as for CRDs); a main-resource write keeps the old status when the
        resource has a status subresource.
        """
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        sent_rv = meta.get("resourceVersion")
        if sent_rv and isinstance(sent_rv, str) and not (sent_rv.isascii() and sent_rv.isdigit()):
            # the storage's versioner parses it with strconv.ParseUint and kube-apiserver answers the error
            # unconverted, a reasonless 500 (lwsconf fidelity versions/rv-concurrency/update-garbage-rv); the sim
            # gives the same words as a 400, never a 5xx for a malformed request
            # (tests/sim/apiserver/http/test_bad_input.py)
            raise errors.bad_request(f'strconv.ParseUint: parsing "{sent_rv}": invalid syntax')
        if sent_rv and sent_rv != old_meta["resourceVersion"]:
            raise errors.stale_resource_version(info.plural, info.group, old_meta["name"])
        if not sent_rv and info.is_custom and subresource is None:
            raise errors.invalid(info.kind, info.group, old_meta["name"], [errors.Cause(
                "metadata.resourceVersion", "must be specified for an update", "FieldValueInvalid")])
        if subresource == "status":
            resets = info.status_write_resets
            if resets is None:
                merged = objects.deep_copy(old)
                if "status" in new:
                    merged["status"] = new["status"]
                else:
                    merged.pop("status", None)
                return merged
            new = _status_write_of_builtin(new, old, resets)
            meta = new["metadata"]
        for kept in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                     "generation", "namespace", "name"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        if subresource == "status":
            return new
        if info.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        return new

    def commit_update(self, info: resources.ResourceInfo, new: dict[str, Any], old: dict[str, Any], *,
                      dry_run: bool = False, strategy: bool = True) -> dict[str, Any]:
        """Store an admitted update; finishing a deletion when the last finalizer went away.

        `generation` moves when the spec changed once defaults are applied (kube-apiserver's strategies
        compare the decoded, defaulted objects), so a PUT that omits defaulted fields does not bump it.
        `strategy=False` is a write that bypasses the kind's strategy, as pods/binding's GuaranteedUpdate does
        (k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/storage/storage.go:230-271): generation stays.
        """
        if info.key == DAEMONSETS:  # the client's annotation is ignored; a changed template bumps it
            old_generation = max(1, _template_generation(old))
            changed = (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
            _set_template_generation(new, old_generation + 1 if changed else old_generation)
        if new == old:
            return old
        new_meta, old_meta = new["metadata"], old["metadata"]
        if strategy and (info.tracks_generation or info.is_custom) \
                and new_meta.get("generation") == old_meta.get("generation") and objects.spec_changed(old, new):
            new_meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if dry_run:  # the answer carries the stored object's resourceVersion, as kube-apiserver's does
            new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion", "")
            return new
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not self._blocks_removal(info, new):
            # the answer is the object as updated (its last finalizer gone), not the copy last stored
            # (lwsconf fidelity deletion/delete-finalizers/remove-finalizers)
            self._remove(info, meta.get("namespace", ""), meta["name"])
            return new
        return self._put(info, new)

    def _put(self, info: resources.ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """Store `obj` (in the served form) and return what was stored, in the served form."""
        return conversion.from_storage(info, self.db.put(info.storage_key, conversion.to_storage(info, obj)))

    def _remove(self, info: resources.ResourceInfo, namespace: str, name: str) -> dict[str, Any] | None:
        removed = self.db.remove(info.storage_key, namespace, name)
        return None if removed is None else conversion.from_storage(info, removed)

    @staticmethod
    def _blocks_removal(info: resources.ResourceInfo, obj: dict[str, Any]) -> bool:
        if obj["metadata"].get("finalizers"):
            return True
        if info.key == NAMESPACES and (obj.get("spec") or {}).get("finalizers"):
            return True
        # A graceful pod deletion waits for its kubelet to confirm with grace period 0.
        return info.key == PODS and bool(obj["metadata"].get("deletionGracePeriodSeconds"))

    # --- delete -----------------------------------------------------------------------------

    def delete(self, info: resources.ResourceInfo, namespace: str, name: str,
               opts: DeleteOptions) -> dict[str, Any]:
        """Delete now, or mark for deletion when finalizers or a grace period must run first."""
        old = self.must_get(info, namespace, name)
        meta = old["metadata"]
        # rest.BeforeDelete checks the preconditions early, naming the Kind (pkg/registry/rest/delete.go;
        # lwsconf fidelity versions/rv-concurrency/delete-stale-rv-precondition, delete-wrong-uid-precondition)
        if opts.precondition_uid and opts.precondition_uid != meta["uid"]:
            raise errors.conflict(info.kind, info.group, name,
                                  f"the UID in the precondition ({opts.precondition_uid}) does not match the UID in "
                                  f"record ({meta['uid']}). The object might have been deleted and then recreated")
        if opts.precondition_rv and opts.precondition_rv != meta["resourceVersion"]:
            raise errors.conflict(info.kind, info.group, name,
                                  f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not match "
                                  f"the ResourceVersion in record ({meta['resourceVersion']}). The object might have "
                                  "been modified")
        new = objects.deep_copy(old)
        nmeta = new["metadata"]
        finalizers: list[str] = list(nmeta.get("finalizers") or [])
        extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(opts.propagation_policy or "")
        if extra and extra not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(extra)
        if finalizers:
            nmeta["finalizers"] = finalizers
        grace = self._grace_seconds(info, new, opts)
        if grace and not (meta.get("deletionGracePeriodSeconds") or 0) and meta.get("deletionTimestamp"):
            grace = 0  # a second graceful delete cannot lengthen the first one
        if not meta.get("deletionTimestamp") or grace < (meta.get("deletionGracePeriodSeconds") or 0):
            nmeta["deletionTimestamp"] = objects.now_rfc3339()
            nmeta["deletionGracePeriodSeconds"] = grace
            # rest.BeforeDelete (pkg/registry/rest/delete.go) and markAsDeleting bump it when they first
            # set deletionTimestamp; shortening a graceful deletion keeps it (lwsconf fidelity
            # deletion/delete-grace/shorten-grace and force-now: kube-apiserver 1.37.2 answers generation 2)
            if int(nmeta.get("generation") or 0) > 0 and not meta.get("deletionTimestamp"):
                nmeta["generation"] = int(nmeta["generation"]) + 1
        if info.key == NAMESPACES:
            new.setdefault("status", {})["phase"] = "Terminating"
            if not meta.get("deletionTimestamp"):  # the namespace REST's own first delete sets the timestamp
                # and the phase, never a grace period (pkg/registry/core/namespace/storage Delete, 1.37.2)
                nmeta.pop("deletionGracePeriodSeconds", None)
        if self._blocks_removal(info, new):
            return self.commit_update(info, new, old, dry_run=opts.dry_run)
        if opts.dry_run:
            return old
        removed = self._remove(info, namespace, name)
        if info.key == PODS:  # graceful deletion: the answer is the pod as marked (grace 0), as kube-apiserver's
            if removed is not None:  # at the delete's revision, as the etcd3 store decodes what it deleted
                # (lwsconf fidelity crud/crud-pods/delete)
                new["metadata"]["resourceVersion"] = removed["metadata"]["resourceVersion"]
            return new
        return removed if removed is not None else old

    @staticmethod
    def _grace_seconds(info: resources.ResourceInfo, obj: dict[str, Any], opts: DeleteOptions) -> int:
        """Pods on a node terminate gracefully (their kubelet finishes the delete); others at once."""
        if info.key != PODS or not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if opts.grace_period_seconds is not None:
            return max(0, opts.grace_period_seconds)
        phase = (obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return 0
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
