"""volumeClaimTemplates (docs/lws-contract.md section 4.10): per-pod claims for leaders and workers alike.

Both StatefulSets get the claim templates, so every pod has its own claim named the StatefulSet way,
`<claim>-<pod>`: `data-N-i` for leaders and `data-N-i-j` for workers. The retention policy is copied
verbatim onto both StatefulSets, and every kept field of a claim template (`accessModes`, `storageClassName`,
`volumeMode`, `resources.requests/limits`) reaches both StatefulSets' templates and so the claims.
"""

from __future__ import annotations

from typing import Any

from conformance.harness import LWSHarness, assert_fields
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import observe

CLAIM = {"metadata": {"name": "data"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}
RETENTION = {"whenDeleted": "Delete", "whenScaled": "Delete"}


def _with_claims(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["spec"]["leaderWorkerTemplate"]["volumeClaimTemplates"] = [CLAIM]
    manifest["spec"]["leaderWorkerTemplate"]["persistentVolumeClaimRetentionPolicy"] = RETENTION

    def mount(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/data"})
    return workloads.edit_templates(manifest, mount)


def _claims(lws: LWSHarness) -> set[str]:
    items = observe.raw(lws.core.list_namespaced_persistent_volume_claim(lws.namespace, _preload_content=False))
    return {c["metadata"]["name"] for c in items["items"]}


@conformance(short_name="ClaimsNamedAfterPods", features={Feature.VOLUME_CLAIM_TEMPLATES},
             description="Leader and worker pods each get a claim data-<pod>; both StatefulSets carry the templates "
                         "and retention (4.10).")
def test_claims_named_after_pods(lws: LWSHarness) -> None:
    lws.create(_with_claims(workloads.probe_lws("pvc", replicas=2, size=2)))
    lws.ready("pvc", replicas=2, size=2)
    want = {"data-pvc-0", "data-pvc-0-1", "data-pvc-1", "data-pvc-1-1"}
    assert want <= _claims(lws), f"claims {sorted(_claims(lws))}, want {sorted(want)}"
    for name, sts in lws.statefulsets().items():
        what = f"{'leader' if name == 'pvc' else 'worker'} StatefulSet {name}"
        templates = [t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates") or []]
        assert templates == ["data"], f"{what} spec.volumeClaimTemplates names {templates}, want ['data']"
        assert_fields(f"{what} spec.persistentVolumeClaimRetentionPolicy", RETENTION,
                      sts["spec"].get("persistentVolumeClaimRetentionPolicy"), exact=True,
                      why=dict.fromkeys(RETENTION, "the LWS's value, copied verbatim, 4.10"))
    for name, pod in lws.pods("pvc").items():
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes") or []
                  if v.get("persistentVolumeClaim")]
        assert claims == [f"data-{name}"], f"pod {name} mounts claims {claims}"


KEPT = {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "storageClassName": "lwsconf-unserved",
        "volumeMode": "Block", "resources": {"requests": {"storage": "1Mi"}, "limits": {"storage": "2Mi"}}}
"""A claim template's spec of only kept fields (4.10), none at its default: a field dropped on the way would be
missing, or the API server's default (`volumeMode: Filesystem`, no class: the cluster's default one)."""
KEPT_WHY = dict.fromkeys(KEPT, "kept from the LWS's claim template, 4.10")


def _claim_specs(lws: LWSHarness) -> dict[str, Any]:
    items = observe.raw(lws.core.list_namespaced_persistent_volume_claim(lws.namespace, _preload_content=False))
    return {c["metadata"]["name"]: c.get("spec") for c in items["items"]}


@conformance(short_name="ClaimTemplateFieldsReachClaims", features={Feature.VOLUME_CLAIM_TEMPLATES},
             description="accessModes, storageClassName, volumeMode and resources of a claim template reach the "
                         "leader and worker StatefulSets' claim templates and the claims data-N-i, data-N-i-j (4.10).")
def test_claim_template_fields_reach_claims(lws: LWSHarness) -> None:
    # No provisioner serves the class, so the claims stay Pending and their pods are parked: the StatefulSet
    # controller makes a pod's claims before the pod, and the claims' spec is what is checked, not binding.
    manifest = workloads.parked(workloads.probe_lws("vct", replicas=1, size=2))
    manifest["spec"]["leaderWorkerTemplate"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": KEPT}]
    lws.create(manifest)

    def claims_carry_the_kept_fields() -> None:
        sets, claims = lws.statefulsets(), _claim_specs(lws)
        for sts_name, pod in (("vct", "vct-0"), ("vct-0", "vct-0-1")):
            what = f"{'leader' if sts_name == 'vct' else 'worker'} StatefulSet {sts_name}"
            assert sts_name in sets, f"no {what} yet (StatefulSets {sorted(sets)})"
            templates = {t["metadata"]["name"]: t for t in sets[sts_name]["spec"].get("volumeClaimTemplates") or []}
            assert sorted(templates) == ["data"], f"{what} spec.volumeClaimTemplates names {sorted(templates)}, " \
                                                  "want ['data'] (4.10)"
            assert_fields(f"{what} spec.volumeClaimTemplates[data].spec", KEPT, templates["data"].get("spec"),
                          why=KEPT_WHY)
            claim = f"data-{pod}"
            assert claim in claims, f"no claim {claim} yet (claims {sorted(claims)})"
            assert_fields(f"PersistentVolumeClaim {claim} spec", KEPT, claims[claim], why=KEPT_WHY)
    lws.wait(claims_carry_the_kept_fields, what="claims data-vct-0 and data-vct-0-1 with the template's kept fields",
             name="vct")
