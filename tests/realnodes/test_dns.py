"""lwsconf.realnodes.dns: the objects that run CoreDNS in a real-node cluster, and what our CoreDNS is built with."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Any

import pytest

from lwsconf import project_files
from lwsconf.controlplane import flags, versions
from lwsconf.realnodes import build, catalog, dns, network


def _by_kind(plan: network.NetworkPlan) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in dns.objects(plan)}


def _built_directives() -> list[str]:
    """The plugins nodes/coredns/main.go builds CoreDNS with, in its order."""
    source = (project_files.project_dir(build.SOURCE_DIR) / "coredns" / "main.go").read_text()
    block = re.search(r"var directives = \[\]string\{(.*?)\}", source, re.S)
    assert block is not None, "main.go sets dnsserver.Directives from a `directives` list"
    return re.findall(r'"([a-z0-9_]+)"', block.group(1))


def test_the_dns_service_ip_is_the_tenth_address_of_the_plans_service_range() -> None:
    for block in (0, 7, 15):
        plan = network.plan(block, ["a", "b"])
        ip = ipaddress.ip_address(dns.service_ip(plan))
        service_range = ipaddress.ip_network(plan.service_cidr)
        assert ip in service_range and ip == service_range.network_address + 10
        assert str(ip) != flags.kubernetes_service_ip(plan.service_cidr)
    assert dns.service_ip(network.plan(0, ["a"])) == "198.19.12.10"
    assert dns.service_ip(network.plan(1, ["a"])) == "198.19.28.10"


def test_the_kube_dns_service_has_the_fixed_ip_on_53_udp_and_tcp_and_selects_the_coredns_pods() -> None:
    plan = network.plan(3, ["a", "b", "c"])
    objs = _by_kind(plan)
    service, deployment = objs["Service"], objs["Deployment"]
    assert (service["metadata"]["name"], service["metadata"]["namespace"]) == ("kube-dns", "kube-system")
    assert service["spec"]["clusterIP"] == dns.service_ip(plan)
    assert {(p["port"], p["protocol"]) for p in service["spec"]["ports"]} == {(53, "UDP"), (53, "TCP")}
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= template_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= template_labels.items()


def test_the_deployment_runs_our_image_with_the_configmaps_corefile_and_probes_ready_and_health() -> None:
    objs = _by_kind(network.plan(0, ["a"]))
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    assert 1 <= objs["Deployment"]["spec"]["replicas"] <= 2
    (container,) = pod["containers"]
    assert container["image"] == catalog.COREDNS and container["imagePullPolicy"] == "Never"
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8181}
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": 8080}
    assert container["args"] == ["-conf", "/etc/coredns/Corefile"]
    (mount,) = container["volumeMounts"]
    (volume,) = pod["volumes"]
    assert mount["mountPath"] == "/etc/coredns" and volume["name"] == mount["name"]
    assert volume["configMap"]["name"] == objs["ConfigMap"]["metadata"]["name"]
    assert "Corefile" in objs["ConfigMap"]["data"]
    assert pod["serviceAccountName"] == objs["ServiceAccount"]["metadata"]["name"]
    assert pod["dnsPolicy"] == "Default", "CoreDNS must not be its own resolver"


def test_coredns_may_list_and_watch_what_its_kubernetes_plugin_watches() -> None:
    """coredns v1.15.0 plugin/kubernetes/controller.go: informers on Services, Pods, EndpointSlices, Namespaces."""
    objs = _by_kind(network.plan(0, ["a"]))
    granted = {(group, resource, verb) for rule in objs["ClusterRole"]["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    for group, resource in (("", "services"), ("", "pods"), ("", "namespaces"),
                            ("discovery.k8s.io", "endpointslices")):
        assert {(group, resource, "list"), (group, resource, "watch")} <= granted, resource
    assert all(verb in ("list", "watch") for _, _, verb in granted), "read only"
    binding = objs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == objs["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": objs["ServiceAccount"]["metadata"]["name"],
                                    "namespace": "kube-system"}]


def test_the_corefile_answers_the_cluster_domain_and_forwards_nothing() -> None:
    corefile = dns.corefile()
    plugins = [line.split()[0] for line in corefile.splitlines()[1:]
               if line.startswith("    ") and not line.startswith("        ") and line.strip() != "}"]
    assert plugins == ["errors", "health", "ready", "kubernetes", "cache"]
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa {" in corefile
    assert "forward" not in corefile and "/etc/resolv.conf" not in corefile
    built = _built_directives()
    assert set(plugins) <= set(built), "every plugin the Corefile names is built into our CoreDNS"
    assert "forward" not in built and "grpc" not in built, "our CoreDNS cannot send a query anywhere"


def _upstream_directives() -> list[str]:
    """dnsserver.Directives of coredns v1.15.0 (core/dnsserver/zdirectives.go), read from the Go module cache."""
    gomodcache = os.environ.get("GOMODCACHE") or str(Path(os.environ.get("GOPATH", Path.home() / "go")) / "pkg" / "mod")
    path = Path(gomodcache) / "github.com/coredns/coredns@v1.15.0/core/dnsserver/zdirectives.go"
    if not path.is_file():
        pytest.skip(f"{path} is not in the module cache (lwsconf nodes build downloads it)")
    block = re.search(r"var Directives = \[\]string\{(.*?)\}", path.read_text(), re.S)
    assert block is not None, path
    return re.findall(r'"([a-z0-9_]+)"', block.group(1))


def test_our_coredns_keeps_upstreams_plugin_order() -> None:
    """CoreDNS runs plugins in dnsserver.Directives' order; ours is upstream's with the plugins we leave out
    removed, and main.go imports exactly the plugins it lists."""
    upstream = _upstream_directives()
    built = _built_directives()
    assert set(built) <= set(upstream)
    assert built == [d for d in upstream if d in built]
    source = (project_files.project_dir(build.SOURCE_DIR) / "coredns" / "main.go").read_text()
    imported = set(re.findall(r'_ "github.com/coredns/coredns/plugin/([a-z0-9_]+)"', source))
    assert imported == set(built)


def test_coredns_is_a_static_part_of_the_node_build() -> None:
    (part,) = [p for p in build.parts(versions.DEFAULT) if p.name == "coredns"]
    assert part.env["CGO_ENABLED"] == "0" and part.binaries == {"coredns": "lwsconf.local/nodes/coredns"}
    go_mod = (project_files.project_dir(build.SOURCE_DIR) / "coredns" / "go.mod").read_text()
    assert "require github.com/coredns/coredns v1.15.0" in go_mod


def test_the_build_stamp_changes_with_our_main_go(tmp_path: Any) -> None:
    source = tmp_path / "nodes"
    (source / "pause").mkdir(parents=True)
    (source / "pause" / "go.mod").write_text("module x\n")
    (source / "pause" / "go.sum").write_text("")  # every module of ours pins its go.sum, empty when stdlib-only
    (source / "pause" / "main.go").write_text("package main\n")
    (part,) = [p for p in build.parts(versions.DEFAULT) if p.name == "pause"]

    def stamp() -> object:
        return build.plan(part, versions.DEFAULT, go="go", go_version="go1", source=source, cache=tmp_path).stamp

    before = stamp()
    (source / "pause" / "main.go").write_text("package main\n\nfunc main() {}\n")
    assert stamp() != before


def test_the_dns_wait_is_named_and_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dns.DNS_READY_ENV, raising=False)
    assert dns.dns_ready_timeout() == dns.DNS_READY
    monkeypatch.setenv(dns.DNS_READY_ENV, "7.5")
    assert dns.dns_ready_timeout() == 7.5
    monkeypatch.setenv(dns.DNS_READY_ENV, "soon")
    with pytest.raises(dns.DNSError, match="LWSCONF_REALNODES_DNS_READY"):
        dns.dns_ready_timeout()
