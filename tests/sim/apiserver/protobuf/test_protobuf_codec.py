"""The protobuf codec, envelope and negotiation on their own (no server): every served kind round-trips,
the special apimachinery types keep their JSON form, and the wire details match kube-apiserver's."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from lwsconf.sim.apiserver.protobuf import codec, envelope, negotiation, schema
from lwsconf.sim.apiserver.storage import resources
from tests.sim.apiserver.protobuf.protobuf_samples import SAMPLES


def assert_kept(sent: Any, back: Any, path: str = "") -> None:
    """Everything `sent` says survives in `back`, which may add the zero values Go writes (`spec: {}`) and drop
    the zero values Go's omitempty drops (`value: ""`): the same object to a Go client."""
    if isinstance(sent, dict):
        assert isinstance(back, dict), path
        for key, value in sent.items():
            if value is None or (key not in back and value in ("", 0, False, {}, [])):
                assert back.get(key) in (None, value), f"{path}.{key}"
                continue
            assert key in back, f"{path}.{key} was lost: {sorted(back)}"
            assert_kept(value, back[key], f"{path}.{key}")
    elif isinstance(sent, list):
        assert isinstance(back, list) and len(back) == len(sent), path
        for i, (a, b) in enumerate(zip(sent, back, strict=True)):
            assert_kept(a, b, f"{path}[{i}]")
    else:
        assert back == sent, f"{path}: sent {sent!r}, got back {back!r}"


def test_every_served_builtin_kind_has_a_sample() -> None:
    assert {info.key for info in resources.BUILTINS} == set(SAMPLES)


@pytest.mark.parametrize("key", sorted(SAMPLES), ids=lambda k: f"{k[1]}.{k[0] or 'core'}")
def test_each_served_kind_round_trips_through_its_message(key: tuple[str, str]) -> None:
    sent = SAMPLES[key]
    data = envelope.encode_object(sent)
    back = envelope.decode_object(data)
    assert_kept(sent, back)
    assert envelope.encode_object(back) == data, "decoding and re-encoding must give the same bytes"


def test_list_kinds_round_trip_with_their_items() -> None:
    cm = SAMPLES[("", "configmaps")]
    listed = {"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "9", "continue": "c"},
              "items": [{k: v for k, v in cm.items() if k not in ("apiVersion", "kind")}] * 2}
    back = envelope.decode_object(envelope.encode_object(listed))
    assert_kept(listed, back)


def test_the_envelope_is_the_magic_then_an_unknown_with_type_meta_and_empty_content_fields() -> None:
    data = envelope.encode_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    assert data.startswith(b"k8s\x00")
    unknown = schema.load().new(envelope.UNKNOWN)
    unknown.ParseFromString(data[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "ConfigMap")  # type: ignore[attr-defined]
    # gogo writes the empty contentEncoding and contentType too: the last bytes are their empty fields
    assert data.endswith(b'\x1a\x00"\x00')
    assert envelope.unwrap(data)[:2] == ("v1", "ConfigMap")


def test_a_body_without_the_magic_or_with_a_torn_message_is_refused_with_the_reason() -> None:
    with pytest.raises(envelope.EnvelopeError, match="magic"):
        envelope.unwrap(b'{"kind":"ConfigMap"}')
    with pytest.raises(envelope.EnvelopeError, match="does not parse"):
        envelope.decode_object(b"k8s\x00garbage")


def test_a_custom_resource_has_no_protobuf_form() -> None:
    assert not envelope.has_message("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    with pytest.raises(envelope.NoMessage, match="custom resources are JSON only"):
        envelope.encode_object({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"})


def test_meta_kinds_served_in_every_group_version_resolve_to_meta_v1() -> None:
    s = schema.load()
    assert s.message_name("v1", "Status") == "k8s.io.apimachinery.pkg.apis.meta.v1.Status"
    assert s.message_name("apps/v1", "DeleteOptions") == "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    assert s.message_name("apiextensions.k8s.io/v1", "CustomResourceDefinition") == \
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"


def test_watch_frames_are_length_prefixed_bare_watch_events_holding_an_enveloped_object() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "3"}}
    frame = envelope.watch_frame("ADDED", cm)
    (size,) = struct.unpack(">I", frame[:4])
    assert size == len(frame) - 4
    assert frame[4:11] == b"\n\x05ADDED"  # WatchEvent.type first, no magic: kube-apiserver's RawSerializer
    assert envelope.read_watch_frames(frame + envelope.watch_frame("DELETED", cm)) == [
        ("ADDED", {**cm, "data": None} if False else envelope.decode_object(envelope.encode_object(cm))),
        ("DELETED", envelope.decode_object(envelope.encode_object(cm)))]
    with pytest.raises(envelope.EnvelopeError, match="cut short"):
        envelope.read_watch_frames(frame[:-1])


def _pod_spec_field(obj: dict[str, Any]) -> Any:
    return codec.encode(obj, "k8s.io.api.core.v1.Pod")


def test_times_keep_seconds_and_micro_times_keep_microseconds() -> None:
    lease = codec.encode({"spec": {"acquireTime": "2026-01-02T03:04:05.123456789Z"}},
                         "k8s.io.api.coordination.v1.Lease")
    assert lease.spec.acquireTime.nanos == 123456000  # type: ignore[attr-defined]
    assert codec.decode(lease)["spec"]["acquireTime"] == "2026-01-02T03:04:05.123456Z"
    ns = codec.encode({"metadata": {"creationTimestamp": "2026-01-02T03:04:05.9+02:00"}},
                      "k8s.io.api.core.v1.Namespace")
    assert ns.metadata.creationTimestamp.nanos == 0  # type: ignore[attr-defined]
    assert codec.decode(ns)["metadata"]["creationTimestamp"] == "2026-01-02T01:04:05Z"


def test_a_zero_time_is_an_empty_message_and_reads_back_as_unset() -> None:
    template = codec.encode({"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}},
                            "k8s.io.api.apps.v1.StatefulSet")
    assert template.spec.template.metadata.creationTimestamp.ByteSize() == 0  # type: ignore[attr-defined]
    assert "creationTimestamp" not in codec.decode(template)["spec"]["template"]["metadata"]


def test_int_or_string_writes_all_three_fields_and_reads_back_either_form() -> None:
    svc = codec.encode({"spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]}},
                       "k8s.io.api.core.v1.Service")
    named, numbered = svc.spec.ports  # type: ignore[attr-defined]
    assert (named.targetPort.type, named.targetPort.intVal, named.targetPort.strVal) == (1, 0, "http")
    assert (numbered.targetPort.type, numbered.targetPort.intVal, numbered.targetPort.strVal) == (0, 8081, "")
    assert [p["targetPort"] for p in codec.decode(svc)["spec"]["ports"]] == ["http", 8081]


def test_pointer_zeros_survive_and_value_zeros_with_omitempty_are_dropped() -> None:
    sts = codec.decode(codec.encode({"spec": {"replicas": 0, "minReadySeconds": 0}}, "k8s.io.api.apps.v1.StatefulSet"))
    assert sts["spec"]["replicas"] == 0  # *int32: sent, kept
    assert "minReadySeconds" not in sts["spec"]  # int32 omitempty: zero means unset
    sa = codec.decode(codec.encode({"automountServiceAccountToken": False}, "k8s.io.api.core.v1.ServiceAccount"))
    assert sa["automountServiceAccountToken"] is False


def test_value_fields_without_omitempty_read_back_as_go_writes_them() -> None:
    status = codec.decode(codec.encode({"status": {}}, "k8s.io.api.apps.v1.StatefulSet"))["status"]
    assert status["replicas"] == 0  # `json:"replicas"`: kube-apiserver's JSON shows 0 too


def test_inlined_structs_flatten_into_their_parent() -> None:
    pod = codec.encode({"spec": {"volumes": [{"name": "v", "emptyDir": {}}], "containers": [
        {"name": "c", "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2}}]}},
        "k8s.io.api.core.v1.Pod")
    assert pod.spec.volumes[0].volumeSource.HasField("emptyDir")  # type: ignore[attr-defined]
    assert list(pod.spec.containers[0].readinessProbe.handler.exec.command) == ["true"]  # type: ignore[attr-defined]
    back = codec.decode(pod)["spec"]
    assert back["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert back["containers"][0]["readinessProbe"]["exec"] == {"command": ["true"]}


def test_bytes_are_base64_in_json_and_raw_in_protobuf() -> None:
    secret = codec.encode({"data": {"k": base64.b64encode(b"\x00\xffsecret").decode()}}, "k8s.io.api.core.v1.Secret")
    assert secret.data["k"] == b"\x00\xffsecret"  # type: ignore[attr-defined]
    assert codec.decode(secret)["data"] == {"k": "AP9zZWNyZXQ="}


def test_raw_json_fields_carry_compact_json() -> None:
    rev = codec.encode({"data": {"spec": {"a": [1, "b"]}}, "revision": 1}, "k8s.io.api.apps.v1.ControllerRevision")
    assert rev.data.raw == b'{"spec":{"a":[1,"b"]}}'  # type: ignore[attr-defined]
    assert codec.decode(rev)["data"] == {"spec": {"a": [1, "b"]}}


def test_durations_read_and_write_go_duration_strings() -> None:
    assert codec.parse_duration("1h2m3.5s") == 3723_500_000_000
    assert codec.parse_duration("300ms") == 300_000_000
    assert [codec.format_duration(n) for n in (0, 1_500_000_000, 3723_000_000_000, 300_000_000, -2_000)] == \
        ["0s", "1.5s", "1h2m3s", "300ms", "-2µs"]
    with pytest.raises(codec.CodecError, match="invalid duration"):
        codec.parse_duration("5 minutes")


def test_a_value_of_the_wrong_type_is_refused_naming_the_field() -> None:
    with pytest.raises(codec.CodecError, match=r"spec\.replicas: expected an integer"):
        codec.encode({"spec": {"replicas": "three"}}, "k8s.io.api.apps.v1.StatefulSet")


@pytest.mark.parametrize(("accept", "custom", "chosen"), [
    ("application/vnd.kubernetes.protobuf", False, "protobuf"),
    ("application/vnd.kubernetes.protobuf, application/json", False, "protobuf"),
    ("application/vnd.kubernetes.protobuf;q=0.5, application/json;q=0.9", False, "json"),
    ("application/json, application/vnd.kubernetes.protobuf", False, "json"),
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", False, "json"),
    ("application/vnd.kubernetes.protobuf, */*", True, "json"),
    ("application/vnd.kubernetes.protobuf", True, None),
    ("application/vnd.kubernetes.protobuf;stream=watch", False, "protobuf"),
    ("", False, "json"),
])
def test_negotiation_follows_kube_apiservers_answers(accept: str, custom: bool, chosen: str | None) -> None:
    assert negotiation.choose(accept, protobuf_possible=not custom) == chosen
