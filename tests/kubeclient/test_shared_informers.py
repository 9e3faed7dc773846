"""kubeclient.SharedInformers: one watch per resource for a component's controllers, client-go's sharing rules."""

from __future__ import annotations

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.sim.apiserver.http import app
from tests.kubeclient.test_kubeclient import CM, Recorder, api_server, configmap, eventually, run


def watches_of_configmaps(server: app.APIServer) -> int:
    tables = server.ctx.db.tables()
    return sum(len(t.watchers) for t in tables if t.key == ("", "configmaps"))


def test_controllers_share_one_watch_and_a_late_handler_sees_the_cache_first() -> None:
    async def scenario() -> None:
        async with api_server() as (server, client):
            await client.create(CM, configmap("before"))
            shared = kubeclient.SharedInformers("kube-controller-manager/shared-informers")
            first, second = shared.informer(client, CM), shared.informer(client, CM)
            seen_first, seen_second = Recorder(), Recorder()
            first.add_handler(seen_first)
            first.start()
            await first.wait_synced(timeout=5)
            second.add_handler(seen_second)  # after the sync: gets ADDED for the cached object, as client-go
            second.start()
            assert seen_second.events == [("ADDED", "before", None)]
            await client.create(CM, configmap("after"))
            await eventually(lambda: len(seen_first.events) == 2 and len(seen_second.events) == 2,
                             lambda: (seen_first.events, seen_second.events))
            assert watches_of_configmaps(server) == 1, "two controllers, one watch"
            assert shared.informer(client, CM, label_selector="app=x").shared is not first.shared

            second.stop()  # its handlers go; the watch stays for the other user
            await second.join()
            await client.create(CM, configmap("third"))
            await eventually(lambda: len(seen_first.events) == 3, lambda: seen_first.events)
            assert len(seen_second.events) == 2 and watches_of_configmaps(server) == 1
            first.stop()
            await first.join()
            await eventually(lambda: watches_of_configmaps(server) == 0, lambda: watches_of_configmaps(server))
            assert shared.running == 0
    run(scenario)


def test_the_shared_client_sends_the_components_user_agent() -> None:
    async def scenario() -> None:
        async with api_server() as (server, client):
            shared = kubeclient.SharedInformers("kube-controller-manager/shared-informers")
            informer = shared.informer(client, kc.NAMESPACES)
            informer.start()
            await informer.wait_synced(timeout=5)
            agents = {entry.user_agent for entry in server.ctx.journal if "namespaces" in entry.path}
            assert "kube-controller-manager/shared-informers" in agents, agents
            informer.stop()
            await informer.join()
    run(scenario)
