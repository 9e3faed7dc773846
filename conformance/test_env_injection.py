"""Environment injection (docs/lws-contract.md section 3.3), observed inside the running containers.

What matters to a workload is what its process sees, so the probe reports its environment and
argv through the API server proxy. Checked: the three LWS variables with their documented values in
every container and init container, first in the pod spec so `$(VAR)` references in command, args
and later env entries expand, LWS values winning over user entries of the same name (T21), and the
leader address actually reaching the leader.
"""

from __future__ import annotations

from conformance.harness import LWSHarness, assert_fields, env_of
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

LWS_VARS = ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]


def _lws_first(where: str, container: dict[str, object]) -> None:
    """Every LWS variable is in the env, env[0] is LWS_LEADER_ADDRESS (upstream's assertion) and the LWS names
    come before every other entry."""
    names = [e["name"] for e in container.get("env") or []]  # type: ignore[attr-defined]
    missing = [v for v in LWS_VARS if v not in names]
    assert not missing, f"{where} env lacks {missing}, want all of {LWS_VARS} (3.3); its env names: {names}"
    assert names[:1] == ["LWS_LEADER_ADDRESS"], \
        f"{where} env starts with {names[:1]}, want ['LWS_LEADER_ADDRESS'] (3.3); its env names: {names}"
    first_other = next((i for i, n in enumerate(names) if n not in LWS_VARS), len(names))
    late = [v for v in LWS_VARS if v not in names[:first_other]]
    assert not late, (f"{where} env has {late} after the non-LWS entry {names[first_other]!r}, want every LWS "
                      f"variable before other entries (3.3); its env names: {names}")


def _expected(name: str, ns: str, pod: str, size: int) -> dict[str, str]:
    parts = pod[len(name) + 1:].split("-")
    return {"LWS_LEADER_ADDRESS": f"{name}-{parts[0]}.{name}.{ns}", "LWS_GROUP_SIZE": str(size),
            "LWS_WORKER_INDEX": parts[1] if len(parts) > 1 else "0"}


WHY = {"LWS_LEADER_ADDRESS": "<N>-<i>.<N>.<ns>: leader pod, Shared subdomain, namespace", "LWS_GROUP_SIZE": "size",
       "LWS_WORKER_INDEX": "the pod's worker index"}
"""How the contract (3.3) derives each expected value, for failure messages."""


@conformance(short_name="EnvVarsInEveryContainer", features={Feature.ENV_INJECTION},
             description="Each container sees LWS_LEADER_ADDRESS=N-i.N.ns, LWS_GROUP_SIZE=S, LWS_WORKER_INDEX=j, "
                         "first in its env (3.3).")
def test_env_vars_in_every_container(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("env", replicas=2, size=3))
    lws.ready("env", replicas=2, size=3)
    for pod_name, pod in lws.pods("env").items():
        want = _expected("env", lws.namespace, pod_name, 3)
        seen = lws.probe_json(pod_name)["lws"]
        assert {k: seen.get(k) for k in LWS_VARS} == want, f"{pod_name} sees {seen}, want {want}"
        for c in pod["spec"]["containers"]:
            _lws_first(f"{pod_name}/{c['name']}", c)


@conformance(short_name="LeaderAddressReachesLeader", features={Feature.ENV_INJECTION},
             description="From every worker, LWS_LEADER_ADDRESS resolves to its own group's leader and connects "
                         "(3.3, 2.6).")
def test_leader_address_reaches_leader(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("addr", replicas=2, size=3))
    lws.ready("addr", replicas=2, size=3)
    for pod_name in lws.pods("addr"):
        address = lws.probe_json(pod_name)["lws"]["LWS_LEADER_ADDRESS"]
        answer = lws.probe_json(pod_name, "/peer", host=address, port=str(workloads.PROBE_PORT))
        leader = f"addr-{pod_name.split('-')[1]}"
        assert (answer.get("answer") or {}).get("pod") == leader, f"{pod_name} -> {address}: {answer}, want {leader}"


@conformance(short_name="EnvVarExpansion", features={Feature.ENV_INJECTION},
             description="$(LWS_...) references in command, args and later env entries expand to the injected values "
                         "(3.3).")
def test_env_var_expansion(lws: LWSHarness) -> None:
    def edit(template: dict[str, object]) -> None:
        c = template["spec"]["containers"][0]  # type: ignore[index]
        c["command"] = [*c["command"], "--tag", "cmd=$(LWS_WORKER_INDEX)"]
        c["args"] = ["--tag", "leader=$(LWS_LEADER_ADDRESS)", "--tag", "size=$(LWS_GROUP_SIZE)"]
        c["env"].append({"name": "MY_LEADER", "value": "at-$(LWS_LEADER_ADDRESS)"})
    lws.create(workloads.edit_templates(workloads.probe_lws("expand", replicas=1, size=2), edit))
    lws.ready("expand", replicas=1, size=2)
    for pod_name in ("expand-0", "expand-0-1"):
        want = _expected("expand", lws.namespace, pod_name, 2)
        seen = lws.probe_json(pod_name)
        tags = {f"cmd={want['LWS_WORKER_INDEX']}": "'cmd=$(LWS_WORKER_INDEX)' in command",
                f"leader={want['LWS_LEADER_ADDRESS']}": "'leader=$(LWS_LEADER_ADDRESS)' in args",
                f"size={want['LWS_GROUP_SIZE']}": "'size=$(LWS_GROUP_SIZE)' in args"}
        wrong = [f"{got!r}, want {tag!r} ({source} expanded)"
                 for got, (tag, source) in zip(seen["tags"], tags.items(), strict=False) if got != tag]
        wrong = wrong or [f"{len(seen['tags'])} values, want {len(tags)}"]
        assert seen["tags"] == list(tags), f"{pod_name} argv --tag {'; '.join(wrong)}; argv {seen['argv']}"
        env, my_leader = lws.probe_json(pod_name, "/env"), f"at-{want['LWS_LEADER_ADDRESS']}"
        assert env.get("MY_LEADER") == my_leader, \
            f"{pod_name} env MY_LEADER is {env.get('MY_LEADER')!r}, want {my_leader!r} " \
            "('at-$(LWS_LEADER_ADDRESS)' expanded)"


@conformance(short_name="EnvVarsInInitContainers", features={Feature.ENV_INJECTION},
             description="Init containers get the same LWS variables: one writes its env to an emptyDir the probe "
                         "then serves (3.3).")
def test_env_vars_in_init_containers(lws: LWSHarness) -> None:
    def edit(template: dict[str, object]) -> None:
        spec = template["spec"]
        probe = spec["containers"][0]  # type: ignore[index]
        mounts = [*probe["volumeMounts"], {"name": "shared", "mountPath": "/shared"}]
        spec["initContainers"] = [{  # type: ignore[index]
            "name": "dump-env", "image": workloads.PROBE_IMAGE, "volumeMounts": mounts,
            "command": ["python", f"{workloads.PROBE_MOUNT}/probe.py", "--dump-env", "/shared/init-env.json"]}]
        probe["volumeMounts"] = mounts
        spec["volumes"].append({"name": "shared", "emptyDir": {}})  # type: ignore[index]
    lws.create(workloads.edit_templates(workloads.probe_lws("init", replicas=1, size=2), edit))
    lws.ready("init", replicas=1, size=2)
    for pod_name, pod in lws.pods("init").items():
        _lws_first(f"pod {pod_name} init container dump-env", pod["spec"]["initContainers"][0])
        dumped = lws.probe_json(pod_name, "/file", path="/shared/init-env.json")["content"]
        assert_fields(f"pod {pod_name} init container dump-env's environment (as it wrote it)",
                      _expected("init", lws.namespace, pod_name, 2), dumped, why=WHY)


@conformance(short_name="UserEnvSameNameOverridden", features={Feature.ENV_INJECTION},
             description="User env entries named like an LWS variable are replaced by the injected value, kept once "
                         "(3.3, T21).")
def test_user_env_same_name_overridden(lws: LWSHarness) -> None:
    bogus = {"LWS_LEADER_ADDRESS": "bogus.example", "LWS_GROUP_SIZE": "999", "LWS_WORKER_INDEX": "77"}
    lws.create(workloads.with_env(workloads.probe_lws("override", replicas=1, size=2), {**bogus, "KEEP": "me"}))
    lws.ready("override", replicas=1, size=2)
    for pod_name, pod in lws.pods("override").items():
        entries = pod["spec"]["containers"][0].get("env") or []
        kept = [e for e in entries if e["name"] in bogus and e.get("value") == bogus[e["name"]]]
        assert not kept, f"{pod_name} still carries the user's entries {kept}"
        assert env_of(pod["spec"]["containers"][0]).get("KEEP") == "me"
        seen = lws.probe_json(pod_name, "/env")
        want = _expected("override", lws.namespace, pod_name, 2)
        assert {k: seen.get(k) for k in LWS_VARS} == want, f"{pod_name} sees {[seen.get(k) for k in LWS_VARS]}"


@conformance(short_name="EnvListMatchesWebhookOrder", features={Feature.ENV_INJECTION},
             description="Each container's effective env is [LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX, "
                         "user entries minus those names] (3.3, T1); a name redefined by the next entry counts once.")
def test_env_list_matches_webhook_order(lws: LWSHarness) -> None:
    user = [{"name": "FIRST", "value": "1"}, {"name": "LWS_GROUP_SIZE", "value": "999"}, {"name": "LAST", "value": "2"}]
    lws.create(workloads.with_env(workloads.probe_lws("order", replicas=1, size=2),
                                  {e["name"]: e["value"] for e in user}))
    lws.ready("order", replicas=1, size=2)
    for pod_name, pod in lws.pods("order").items():
        for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
            # Kubernetes resolves env in order and a later entry of the same name replaces the earlier one,
            # so [X, X=$(X)...] is one variable as containers see it (the downward-API form of the leader
            # address); collapse such consecutive repeats before comparing the order.
            raw = [e["name"] for e in c.get("env") or []]
            names = [n for i, n in enumerate(raw) if i == 0 or raw[i - 1] != n]
            template_names = ["POD_NAME", "POD_NAMESPACE", "POD_IP", "NODE_NAME", "FIRST", "LAST"]
            assert names == [*LWS_VARS, *template_names], \
                f"{pod_name}/{c['name']} env names {names}, want {[*LWS_VARS, *template_names]}"
