"""volumeClaimTemplates (docs/lws-contract.md section 4.10): per-pod claims for leaders and workers alike.

Both StatefulSets get the claim templates, so every pod has its own claim named the StatefulSet way,
`<claim>-<pod>`: `data-N-i` for leaders and `data-N-i-j` for workers. The retention policy is copied
verbatim onto both StatefulSets.
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
