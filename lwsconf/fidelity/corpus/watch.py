"""Watches: resuming from a saved resourceVersion (ADDED, MODIFIED, DELETED replayed in order), with
selectors, a too-old resourceVersion (410 in an ERROR event), bookmarks, and WatchList's initial
events ending in the `k8s.io/initial-events-end` bookmark."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import CORE, configmap, create, delete, get, patch, put
from lwsconf.fidelity.model import MERGE, Scenario, Step

CMS = f"{CORE}/configmaps"


def _watch(name: str, path: str = CMS, **query: str) -> Step:
    return Step(name, "GET", path, query={"watch": "true", "timeoutSeconds": "2", **query}, watch=True)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("watch", "watch-resume", (
        get("list-start", CMS, save={"start": "metadata.resourceVersion"}),
        create("create-a", CMS, configmap("a", labels={"w": "yes"})),
        create("create-b", CMS, configmap("b")),
        patch("modify-a", f"{CMS}/a", {"data": {"x": "1"}}, MERGE, save={"mid": "metadata.resourceVersion"}),
        delete("delete-b", f"{CMS}/b"),
        _watch("resume-from-start", resourceVersion="${start}"),
        _watch("resume-from-mid", resourceVersion="${mid}"),
        _watch("resume-label-selector", resourceVersion="${start}", labelSelector="w=yes"),
        _watch("resume-field-selector", resourceVersion="${start}", fieldSelector="metadata.name=b"),
        _watch("resume-bookmarks", resourceVersion="${start}", allowWatchBookmarks="true"),
        _watch("no-rv-initial-state"),
        _watch("rv0-initial-state", resourceVersion="0"),
        _watch("single-object", f"{CMS}", fieldSelector="metadata.name=a", resourceVersion="0"),
    )),
    Scenario("watch", "watch-errors", (
        create("create", CMS, configmap("c")),
        _watch("too-old-rv", resourceVersion="1"),
        _watch("garbage-rv", resourceVersion="abc"),
        _watch("bad-label-selector", labelSelector="a>>b"),
        _watch("watch-list", sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
               allowWatchBookmarks="true"),
        _watch("send-initial-without-match", sendInitialEvents="true", allowWatchBookmarks="true"),
        _watch("send-initial-without-bookmarks", sendInitialEvents="true", resourceVersionMatch="NotOlderThan"),
        put("after-watch-update", f"{CMS}/c", configmap("c", {"a": "2"})),
        _watch("watch-named-path", f"{CMS}/c"),
    )),
)
