"""The kubelet port answers only authorised callers (`lwsconf.sim.nodes.streams.kubeletauth`), and the API server
is one.

Direct calls to a node agent's kubelet port, as anyone on the host could make them: no credentials (401), a
token the API server does not vouch for (401), a client certificate of an identity the API server's
SubjectAccessReview denies (403), and the allowed ones: the API server's own kubelet client certificate and
the API token. Through the API server, logs and exec keep working with the official client. The attribute
mapping and the caches are checked on their own against kubernetes v1.37.2 pkg/kubelet/server/auth.go.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import tls
from lwsconf.sim.nodes.streams import kubeletauth
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.streams.test_streams import HTTP_SERVER, python_pod, start_pod


def _client_context(identity: tls.Identity | None) -> ssl.SSLContext:
    """Does not verify the kubelet's self-signed serving certificate; presents `identity` if given."""
    if identity is not None:
        return identity.client_context()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def _kubelet(sim: ks.Sim, node: str) -> str:
    obj = await sim.client.get(ks.NODES, node)
    ip = [a["address"] for a in obj["status"]["addresses"] if a["type"] == "InternalIP"][0]
    return f"https://{ip}:{obj['status']['daemonEndpoints']['kubeletEndpoint']['Port']}"


async def _get(url: str, *, identity: tls.Identity | None = None, token: str = "") -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(
            url, ssl=_client_context(identity), headers=headers) as response:
        return response.status, await response.text()


async def _ws_status(url: str, **kwargs: Any) -> int:
    """The status a WebSocket exec handshake to the kubelet gets (101 when it is accepted)."""
    try:
        async with aiohttp.ClientSession() as session, session.ws_connect(
                url, protocols=["v5.channel.k8s.io"], ssl=_client_context(None), **kwargs):
            return 101
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status


def test_the_kubelet_port_answers_only_authorised_callers(tmp_path: Path) -> None:
    """KubeletPortRefusesAnonymousCallers: 401 without credentials or with a token the API server rejects; 403
    for an authenticated identity the SubjectAccessReview denies; the API server's client certificate and the
    API token pass; logs and exec through the API server (the official client) and nodes/NAME/proxy still work."""
    from kubernetes import client, config
    from kubernetes.stream import stream

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path / "nodes", processes=True) as sim:
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            base = await _kubelet(sim, "cpu-0")
            logs = f"{base}/containerLogs/{ks.NS}/p/main"
            exec_url = f"{base}/exec/{ks.NS}/p/main?command=ls&output=1"

            assert await _get(logs) == (401, "Unauthorized")
            assert await _get(f"{base}/healthz") == (401, "Unauthorized")
            assert await _ws_status(exec_url) == 401
            assert await _get(logs, token="not-the-api-token") == (401, "Unauthorized")

            stranger = sim.server.identity.issue_client("someone", "some-team")
            assert await _get(logs, identity=stranger) == (
                403, "Forbidden (user=someone, verb=get, resource=nodes, subresource(s)=[proxy])\n")
            status, body = await _get(f"{base}/healthz", identity=stranger)
            assert (status, body) == (403, "Forbidden (user=someone, verb=get, resource=nodes, "
                                           "subresource(s)=[healthz proxy])\n")

            assert await _get(logs, identity=sim.server.kubelet_client) == (200, "serving\n")
            assert await _get(logs, token=sim.server.token) == (200, "serving\n")
            assert await _get(f"{base}/healthz", token=sim.server.token) == (200, "ok")
            assert await _ws_status(exec_url, headers={"Authorization": f"Bearer {sim.server.token}"}) == 101

            foreign = tls.self_signed("elsewhere").issue_client("kube-apiserver-kubelet-client", "system:masters")
            with pytest.raises(aiohttp.ClientError):  # a certificate from another CA: refused in the handshake
                await _get(logs, identity=foreign)

            api = ssl.create_default_context(cadata=sim.server.ca_pem.decode())
            async with aiohttp.ClientSession() as session, session.get(
                    f"{sim.server.url}/api/v1/nodes/cpu-0/proxy/healthz", ssl=api,
                    headers={"Authorization": f"Bearer {sim.server.token}"}) as response:
                assert (response.status, await response.text()) == (200, "ok")  # nodes/NAME/proxy: its certificate
            kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

            def through_the_api_server() -> tuple[str, str]:
                core = client.CoreV1Api(config.new_client_from_config(  # type: ignore[no-untyped-call]
                    config_file=str(kubeconfig)))
                log = core.read_namespaced_pod_log("p", ks.NS, container="main")
                out = stream(core.connect_get_namespaced_pod_exec, "p", ks.NS, command=["python", "-c", "print(3)"],
                             stderr=True, stdin=False, stdout=True, tty=False)
                return str(log), str(out)

            assert await asyncio.to_thread(through_the_api_server) == ("serving\n", "3\n")

    ks.run(scenario, timeout=120)


@pytest.mark.parametrize(("method", "path", "verb", "subresources"), [
    ("GET", "/containerLogs/ns/p/c", "get", ["proxy"]),
    ("GET", "/exec/ns/p/c", "get", ["proxy"]),
    ("POST", "/exec/ns/p/c", "create", ["proxy"]),
    ("POST", "/portForward/ns/p", "create", ["proxy"]),
    ("GET", "/healthz", "get", ["healthz", "proxy"]),
    ("GET", "/healthz/ping", "get", ["healthz", "proxy"]),
    ("GET", "/healthzz", "get", ["proxy"]),
    ("GET", "/pods", "get", ["pods", "proxy"]),
    ("GET", "/runningpods/", "get", ["pods", "proxy"]),
    ("GET", "/configz", "get", ["configz", "proxy"]),
    ("GET", "/stats/summary", "get", ["stats"]),
    ("GET", "/metrics/cadvisor", "get", ["metrics"]),
    ("GET", "/logs/syslog", "get", ["log"]),
    ("POST", "/checkpoint/ns/p/c", "create", ["checkpoint"]),
    ("GET", "/flagz", "get", ["configz"]),
    ("DELETE", "/pods", "delete", ["pods", "proxy"]),
])
def test_paths_map_to_node_subresources_as_the_kubelets(method: str, path: str, verb: str,
                                                         subresources: list[str]) -> None:
    """pkg/kubelet/server/auth.go:83-135 with KubeletFineGrainedAuthz (GA, locked on since 1.36)."""
    assert kubeletauth.attributes(method, path) == (verb, subresources)


class _FakeAPI:
    """Answers TokenReviews and SubjectAccessReviews as told, counting them."""

    def __init__(self, allowed: bool = True) -> None:
        self.allowed = allowed
        self.calls: list[str] = []
        self.fail = False

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> dict[str, Any]:
        self.calls.append(path.rsplit("/", 1)[-1])
        if self.fail:
            raise errors.TransportError("unreachable")
        if path.endswith("tokenreviews"):
            good = body["spec"]["token"] == "good"
            return {"status": {"authenticated": True, "user": {"username": "u", "groups": ["g"]}} if good else {}}
        return {"status": {"allowed": self.allowed}}


def test_reviews_are_cached_for_the_kubelets_default_times() -> None:
    now = [0.0]
    api = _FakeAPI(allowed=False)
    auth = kubeletauth.KubeletAuth(api, "cpu-0", None, clock=lambda: now[0])  # type: ignore[arg-type]

    async def scenario() -> None:
        user = await auth._review_token("good")
        assert user == kubeletauth.User("u", ("g", "system:authenticated"))
        assert await auth._review_token("bad") is None
        assert await auth._review_token("good") == user and await auth._review_token("bad") is None
        assert api.calls == ["tokenreviews", "tokenreviews"]
        assert not await auth.authorize(user, "get", "proxy")
        now[0] = kubeletauth.DENY_CACHE_TTL - 1
        assert not await auth.authorize(user, "get", "proxy")
        assert api.calls.count("subjectaccessreviews") == 1
        api.allowed = True
        now[0] = kubeletauth.DENY_CACHE_TTL + 1  # a denial is kept 30 s, then asked again
        assert await auth.authorize(user, "get", "proxy")
        now[0] += kubeletauth.ALLOW_CACHE_TTL - 1
        api.allowed = False
        assert await auth.authorize(user, "get", "proxy")  # an allowance 5 minutes
        assert api.calls.count("subjectaccessreviews") == 2
        now[0] = kubeletauth.TOKEN_CACHE_TTL + 1
        api.fail = True  # the API server unreachable: unauthenticated (401), nothing cached
        assert await auth._review_token("good") is None
        api.fail = False
        assert await auth._review_token("good") == user
        for n in range(kubeletauth.CACHE_SIZE + 5):  # random tokens: the cache stays bounded
            await auth._review_token(f"random-{n}")
        assert len(auth._tokens) <= kubeletauth.CACHE_SIZE

    asyncio.run(scenario())
