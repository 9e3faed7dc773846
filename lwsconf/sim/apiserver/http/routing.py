"""URL -> what the request is about: resource type, namespace, name, subresource. No I/O here.

Kubernetes paths come in a few shapes, for the core group (`/api/v1/...`) and named groups
(`/apis/G/V/...`):

    <prefix>/R                          list/create/watch across namespaces (or cluster-scoped)
    <prefix>/R/NAME[/SUB[/...]]         cluster-scoped object (+ subresource)
    <prefix>/namespaces/NS/R[/NAME[/SUB[/...]]]
    <prefix>/watch/...                  legacy watch form of any of the above

`/api/v1/namespaces/NAME/status|finalize` are subresources of the Namespace object itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.storage import resources

NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class Target:
    info: resources.ResourceInfo
    namespace: str | None
    """The namespace from the URL; None for cluster-scoped types and all-namespace lists."""
    name: str | None
    subresource: str | None
    subpath: str
    """What follows the subresource (proxy paths)."""
    legacy_watch: bool = False


def _page_not_found(path: str) -> errors.StatusError:
    """kube-apiserver's answer for a resource path it does not serve, word for word (`path` unused)."""
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource", empty_details=True)


def group_version(segments: list[str]) -> tuple[str, str, list[str]] | None:
    """Split `api/v1/...` or `apis/G/V/...` into (group, version, rest)."""
    if len(segments) >= 2 and segments[0] == "api":
        return "", segments[1], segments[2:]
    if len(segments) >= 3 and segments[0] == "apis":
        return segments[1], segments[2], segments[3:]
    return None


def resolve(path: str, registry: resources.Registry) -> Target:
    """Parse a resource path; 404 (Status-shaped) when it names nothing this server serves."""
    segments = [s for s in path.split("/") if s]
    gv = group_version(segments)
    if gv is None or not gv[2]:
        raise _page_not_found(path)
    group, version, rest = gv
    if group and not registry.in_group_version(group, version):
        raise errors.page_not_found()  # no handler registered under /apis/G/V: the mux's plain 404
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        raise _page_not_found(path)
    info = registry.lookup(group, version, rest[0])
    if info is None:
        raise _page_not_found(path)
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if info.namespaced and name is not None and namespace is None:
        raise _page_not_found(path)
    if not info.namespaced and namespace is not None:
        raise _page_not_found(path)
    if sub is not None and sub not in info.subresources:
        raise _page_not_found(path)
    return Target(info, namespace, name, sub, "/".join(rest[3:]), legacy_watch)
