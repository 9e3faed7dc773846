"""Server-side Tables: Accept parsing, ages, JSONPath, per-kind cells, watch events, and real `kubectl get`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.storage import resources
from lwsconf.sim.apiserver.tables import cells as table_cells
from lwsconf.sim.apiserver.tables import tables
from tests.conftest import SimAPI
from tests.sim.apiserver import kubectl_on_sim, registry_fixtures

NOW = datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)
KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
                  "g=meta.k8s.io,application/json")
REGISTRY = resources.Registry()


def info(group: str, plural: str) -> resources.ResourceInfo:
    return registry_fixtures.lookup(REGISTRY, plural, group)


def stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def obj(name: str = "x", ago: timedelta = timedelta(minutes=3, seconds=2), **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "creationTimestamp": stamp(ago),
                         "resourceVersion": "7"}, **fields}


def table_of(res: resources.ResourceInfo, *objects: dict[str, Any]) -> dict[str, Any]:
    return tables.to_table(res, list(objects), list_meta={"resourceVersion": "9"}, now=NOW)


def cells(res: resources.ResourceInfo, o: dict[str, Any]) -> dict[str, Any]:
    table = table_of(res, o)
    return dict(zip([c["name"] for c in table["columnDefinitions"]], table["rows"][0]["cells"], strict=True))


@pytest.mark.parametrize(("accept", "expected"), [
    (KUBECTL_ACCEPT, True),
    ("application/json", False),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", False),
    ("application/json; as=Table; g=meta.k8s.io; v=v1", True),
    ("", False),
])
def test_wants_table(accept: str, expected: bool) -> None:
    assert tables.wants_table(accept) is expected


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"), (182, "3m2s"),
    (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (5 * 3600 + 180, "5h3m"), (47 * 3600, "47h"),
    (52 * 3600, "2d4h"), (7 * 86400, "7d"), (8 * 86400, "8d"), (730 * 86400, "2y"), (740 * 86400, "2y10d"),
    (9 * 365 * 86400, "9y"),
])
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert table_cells.human_duration(seconds) == text


DOC = {"a": {"b": 1, "list": [{"b": "x", "type": "Ready", "status": "True"}, {"b": "y", "type": "Other"}]},
       "metadata": {"annotations": {"lws.x-k8s.io/size": "3"}}}


@pytest.mark.parametrize(("path", "found"), [
    (".a.b", [1]),
    ("{.a.b}", [1]),
    (".a.list[0].b", ["x"]),
    (".a.list[-1].b", ["y"]),
    (".a.list[*].b", ["x", "y"]),
    ('.a.list[?(@.type=="Ready")].status', ["True"]),
    (".a.list[?(@.type=='Other')].b", ["y"]),
    (".metadata.annotations['lws.x-k8s.io/size']", ["3"]),
    (r".metadata.annotations.lws\.x-k8s\.io/size", ["3"]),
    (".a.missing.deeper", []),
    (".a.list[5]", []),
])
def test_jsonpath_subset(path: str, found: list[Any]) -> None:
    assert tables.jsonpath(DOC, path) == found


def test_jsonpath_rejects_unsupported_syntax() -> None:
    with pytest.raises(ValueError, match="unsupported JSONPath"):
        tables.jsonpath(DOC, ".a..b")


def test_table_envelope_and_partial_object_metadata() -> None:
    pod = obj("p1", spec={"containers": [{"name": "c"}]})
    table = table_of(info("", "pods"), pod)
    assert (table["kind"], table["apiVersion"], table["metadata"]) == ("Table", "meta.k8s.io/v1",
                                                                      {"resourceVersion": "9"})
    row_object = table["rows"][0]["object"]
    assert (row_object["kind"], row_object["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    meta = client.V1ObjectMeta.from_dict(row_object["metadata"])
    assert meta is not None and meta.name == "p1"
    definition = table["columnDefinitions"][0]
    assert definition == {"name": "Name", "type": "string", "format": "name",
                          "description": definition["description"], "priority": 0}


@pytest.mark.parametrize(("include", "expected"), [("Object", "full"), ("None", None), ("Metadata", "partial")])
def test_include_object(include: str, expected: str | None) -> None:
    pod = obj("p1")
    row = tables.to_table(info("", "pods"), [pod], list_meta={}, include_object=include, now=NOW)["rows"][0]
    shown = {"full": pod, "partial": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                      "metadata": pod["metadata"]}, None: None}[expected]
    assert row.get("object") == shown


def running_pod(**status: Any) -> dict[str, Any]:
    container = {"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}
    return obj("p1", spec={"containers": [{"name": "c"}, {"name": "d"}], "nodeName": "node-1"},
               status={"phase": "Running", "podIP": "127.10.0.5", "containerStatuses": [container], **status})


def test_pod_columns_and_running_cells() -> None:
    table = table_of(info("", "pods"), running_pod())
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
        ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert table["rows"][0]["cells"] == ["p1", "1/2", "Running", 0, "3m2s", "127.10.0.5", "node-1", "<none>", "<none>"]


def test_pod_readiness_gates_cell_counts_gates_whose_condition_is_true() -> None:
    pod = running_pod(conditions=[{"type": "example.com/lb", "status": "True"}, {"type": "Ready", "status": "True"}])
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]
    assert cells(info("", "pods"), pod)["Readiness Gates"] == "1/2"


@pytest.mark.parametrize(("change", "status"), [
    ({"metadata": {"deletionTimestamp": "2026-01-10T11:59:00Z"}}, "Terminating"),
    ({"container": {"ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}}, "CrashLoopBackOff"),
    ({"container": {"ready": False, "state": {"terminated": {"reason": "Error"}}}}, "Error"),
    ({"status": {"phase": "Pending", "containerStatuses": []}}, "Pending"),
    ({"status": {"phase": "Failed", "reason": "Evicted"}}, "Evicted"),
])
def test_pod_status_cell(change: dict[str, Any], status: str) -> None:
    pod = running_pod()
    pod["metadata"].update(change.get("metadata", {}))
    pod["status"].update(change.get("status", {}))
    if "container" in change:
        pod["status"]["containerStatuses"][0].update(change["container"])
    assert cells(info("", "pods"), pod)["Status"] == status


def test_pod_restarts_show_time_since_last_termination() -> None:
    pod = running_pod()
    pod["status"]["containerStatuses"][0].update(
        restartCount=2, lastState={"terminated": {"finishedAt": stamp(timedelta(seconds=45))}})
    assert cells(info("", "pods"), pod)["Restarts"] == "2 (45s ago)"


def test_statefulset_namespace_and_generic_cells() -> None:
    sts = obj("s", spec={"replicas": 3}, status={"readyReplicas": 2})
    assert cells(info("apps", "statefulsets"), sts) == {"Name": "s", "Ready": "2/3", "Age": "3m2s"}
    assert cells(info("", "namespaces"), obj("ns1", status={"phase": "Terminating"}))["Status"] == "Terminating"
    assert cells(info("", "configmaps"), obj("cm", ago=timedelta(days=2, hours=4))) == {"Name": "cm",
                                                                                       "Age": "2d4h"}


@pytest.mark.parametrize(("spec", "status", "expected"), [
    ({"clusterIP": "None", "ports": [{"port": 8080, "protocol": "TCP"}]}, {},
     ("ClusterIP", "None", "<none>", "8080/TCP")),
    ({"type": "NodePort", "clusterIP": "10.0.0.5", "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                                                            {"port": 53, "protocol": "UDP"}]}, {},
     ("NodePort", "10.0.0.5", "<none>", "80:30080/TCP,53/UDP")),
    ({"type": "LoadBalancer", "clusterIP": "10.0.0.6"}, {}, ("LoadBalancer", "10.0.0.6", "<pending>", "<none>")),
    ({"type": "LoadBalancer"}, {"loadBalancer": {"ingress": [{"ip": "127.0.0.9"}]}},
     ("LoadBalancer", "<none>", "127.0.0.9", "<none>")),
    ({"type": "ExternalName", "externalName": "db.example"}, {}, ("ExternalName", "<none>", "db.example", "<none>")),
])
def test_service_cells(spec: dict[str, Any], status: dict[str, Any], expected: tuple[str, ...]) -> None:
    got = cells(info("", "services"), obj("svc", spec=spec, status=status))
    assert (got["Type"], got["Cluster-IP"], got["External-IP"], got["Port(s)"]) == expected


@pytest.mark.parametrize(("ready", "unschedulable", "status"), [
    ("True", False, "Ready"), ("False", False, "NotReady"), (None, False, "Unknown"),
    ("True", True, "Ready,SchedulingDisabled"),
])
def test_node_cells(ready: str | None, unschedulable: bool, status: str) -> None:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    node = obj("n1", spec={"unschedulable": unschedulable},
               status={"conditions": conditions, "nodeInfo": {"kubeletVersion": "v1.37.0-lwsconf-sim"}})
    node["metadata"]["labels"] = {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/gpu": ""}
    assert cells(info("", "nodes"), node) == {"Name": "n1", "Status": status, "Roles": "gpu,worker",
                                              "Age": "3m2s", "Version": "v1.37.0-lwsconf-sim"}


def test_crd_printer_columns_typed_cells() -> None:
    lws = obj("demo", spec={"replicas": 2, "leaderWorkerTemplate": {"size": 4}},
              status={"conditions": [{"type": "Available", "status": "True"}]})
    table = table_of(registry_fixtures.LWS, lws)
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0), ("Replicas", "integer", 0), ("Ready", "integer", 0),
        ("Available", "string", 0), ("Age", "date", 0), ("Size", "integer", 1)]
    assert table["rows"][0]["cells"] == ["demo", 2, None, "True", "3m2s", 4]


def test_crd_cell_type_mismatch_and_formats() -> None:
    columns = ({"name": "Count", "type": "integer", "jsonPath": ".spec.count"},
               {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "format": "float"},
               {"name": "On", "type": "boolean", "jsonPath": ".spec.on", "description": "switched on"},
               {"name": "Raw", "type": "string", "jsonPath": ".spec.raw"},
               {"name": "Bad", "type": "string", "jsonPath": ".spec..x"})
    res = resources.ResourceInfo(group="x.io", version="v1", plural="things", kind="Thing", namespaced=True,
                                 crd_name="things.x.io", printer_columns=columns)
    thing = obj("t", spec={"count": "three", "ratio": 0.5, "on": True, "raw": {"k": [1]}})
    table = table_of(res, thing)
    assert table["rows"][0]["cells"] == ["t", None, 0.5, True, '{"k":[1]}', None]
    assert table["columnDefinitions"][2]["format"] == "float"
    assert table["columnDefinitions"][3]["description"] == "switched on"


def test_crd_without_printer_columns_shows_name_and_age() -> None:
    res = resources.ResourceInfo(group="x.io", version="v1", plural="things", kind="Thing", namespaced=True,
                                 crd_name="things.x.io")
    assert cells(res, obj("t")) == {"Name": "t", "Age": "3m2s"}


def test_watch_events_carry_one_row_tables() -> None:
    pods = info("", "pods")
    event = tables.to_table_watch_event(pods, "MODIFIED", running_pod(), now=NOW)
    assert event["type"] == "MODIFIED"
    assert event["object"]["kind"] == "Table" and len(event["object"]["rows"]) == 1
    assert event["object"]["metadata"] == {"resourceVersion": "7"}
    bookmark = tables.to_table_watch_event(pods, "BOOKMARK", {"metadata": {"resourceVersion": "12"}}, now=NOW)
    assert (bookmark["object"]["rows"], bookmark["object"]["metadata"]) == ([], {"resourceVersion": "12"})
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410}
    assert tables.to_table_watch_event(pods, "ERROR", status) == {"type": "ERROR", "object": status}


def create_running_pod(sim: SimAPI) -> None:
    """`running_pod()` through the API: created on node-1, then its kubelet-style status written."""
    core = client.CoreV1Api(sim.api)
    spec = client.V1PodSpec(node_name="node-1", containers=[client.V1Container(name="c", image="busybox"),
                                                            client.V1Container(name="d", image="busybox")])
    core.create_namespaced_pod("default", client.V1Pod(metadata=client.V1ObjectMeta(name="p1"), spec=spec))
    status = running_pod()["status"]
    status["containerStatuses"][0].update(image="busybox", imageID="")  # both required by the v37 client
    core.patch_namespaced_pod_status("p1", "default", {"status": status})


@pytest.mark.kubectl
def test_kubectl_get_prints_server_side_tables(sim_api: SimAPI, tmp_path: Path) -> None:
    box = kubectl_on_sim.with_lws(sim_api, tmp_path / "home")
    create_running_pod(sim_api)
    client.CustomObjectsApi(sim_api.api).create_namespaced_custom_object(
        registry_fixtures.LWS_GROUP, "v1", "default", "leaderworkersets",
        {"apiVersion": f"{registry_fixtures.LWS_GROUP}/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "demo"},
         "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4}}})

    def lines(*args: str) -> list[list[str]]:
        got = box("get", *args)
        assert got.returncode == 0, got.stderr
        return [line.split() for line in got.stdout.splitlines()]

    pods = lines("pods")
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods[1][:4] == ["p1", "1/2", "Running", "0"]
    assert lines("pods", "-o", "wide")[0][-6:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert lines("pods", "-o", "wide")[1][-4:] == ["127.10.0.5", "node-1", "<none>", "<none>"]
    assert lines("pods", "-A")[1][:2] == ["default", "p1"]
    lws = lines("lws")
    assert lws[0] == ["NAME", "REPLICAS", "READY", "AVAILABLE", "AGE"]
    assert lws[1][:2] == ["demo", "2"] and len(lws[1]) == 3, "unset READY/AVAILABLE print blank"
    assert lines("lws", "-o", "wide")[1][-1] == "4"
    assert all(tables.wants_table(r.accept) for r in box.sent("GET", "/pods"))
    assert box.sent("GET", "/leaderworkersets") and all(
        tables.wants_table(r.accept) for r in box.sent("GET", "/leaderworkersets"))


@pytest.mark.kubectl
def test_kubectl_get_watch_prints_one_row_per_event(sim_api: SimAPI, tmp_path: Path) -> None:
    box = kubectl_on_sim.with_lws(sim_api, tmp_path / "home")
    create_running_pod(sim_api)
    proc = box.popen("get", "pods", "--watch", "--output-watch-events")
    try:
        output = kubectl_on_sim.Output(proc)
        output.until(lambda seen: any(line.startswith("ADDED") for line in seen))
        client.CoreV1Api(sim_api.api).patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "y"}}})
        watched = [line.split() for line in output.until(lambda seen: any(s.startswith("MODIFIED") for s in seen))]
    finally:
        proc.kill()
        proc.wait()
    assert [row[:3] for row in watched] == [["EVENT", "NAME", "READY"], ["ADDED", "p1", "1/2"],
                                            ["MODIFIED", "p1", "1/2"]]
    (listed,) = box.sent("GET", "/namespaces/default/pods")
    assert tables.wants_table(listed.accept), listed


def test_deployment_cells_as_print_deployment() -> None:
    """printDeployment: Ready is ready/desired; wide adds containers, images and the selector."""
    deployment = obj("web", spec={"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                  "template": {"spec": {"containers": [{"name": "py", "image": "python:3.12"}]}}},
                     status={"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2})
    assert cells(info("apps", "deployments"), deployment) == {
        "Name": "web", "Ready": "2/3", "Up-to-date": 3, "Available": 2, "Age": "3m2s", "Containers": "py",
        "Images": "python:3.12", "Selector": "app=web"}


def test_endpointslice_cells_list_three_then_more() -> None:
    """formatDiscoveryPorts/Endpoints: three items, then ' + N more...'; <unset> when there are none."""
    eps = obj("api-x", addressType="IPv4", ports=[{"port": 8080}, {"name": "http"}],
              endpoints=[{"addresses": [f"10.0.0.{n}"]} for n in range(1, 6)])
    assert cells(info("discovery.k8s.io", "endpointslices"), eps) == {
        "Name": "api-x", "AddressType": "IPv4", "Ports": "8080,http",
        "Endpoints": "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "Age": "3m2s"}
    empty = cells(info("discovery.k8s.io", "endpointslices"), obj("e", addressType="IPv4"))
    assert (empty["Ports"], empty["Endpoints"]) == ("<unset>", "<unset>")


def test_event_columns_as_print_event() -> None:
    """printEvent: Last Seen first and Name last (wide); the object as kind/name, count 1 for a singleton."""
    event = obj("box.1", type="Normal", reason="Scheduled", message=" Successfully assigned default/box to n0 ",
                involvedObject={"kind": "Pod", "name": "box", "fieldPath": ""},
                firstTimestamp=stamp(timedelta(seconds=40)), lastTimestamp=stamp(timedelta(seconds=5)),
                source={"component": "default-scheduler"}, reportingComponent="default-scheduler",
                reportingInstance="sched-0")
    assert cells(info("", "events"), event) == {
        "Last Seen": "5s", "Type": "Normal", "Reason": "Scheduled", "Object": "pod/box", "Subobject": "",
        "Source": "default-scheduler, sched-0", "Message": "Successfully assigned default/box to n0",
        "First Seen": "40s", "Count": 1, "Name": "box.1"}
    table = table_of(info("", "events"), event)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Last Seen", "Type", "Reason", "Object", "Message"]
