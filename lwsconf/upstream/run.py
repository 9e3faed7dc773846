"""Upstream's manager against a cluster for the length of a block: build, install, start, wait, remove.

`upstream_local(spec, kubeconfig, context, timeouts, out)` is what `--lws-impl=upstream-local:SPEC`
runs: build the manager (`build.ensure`, skipped when up to date), read upstream's CRDs and webhook
configurations from its module folder, install the CRDs, start the manager (`ManagerProcess`), point the
webhook configurations at it and wait, under the LwsAvailable timeout, until a dry-run LeaderWorkerSet
create is admitted. Every failure on the way is one `UpstreamError` whose message ends with the
manager's log tail when the manager is involved; everything set up is removed again, in reverse order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kubernetes import client, config

from lwsconf.controlplane import build as gobuild
from lwsconf.timeouts import Timeouts
from lwsconf.upstream import build, install, manifests, source
from lwsconf.upstream.manager import LEADER_ELECTION, LEASE_NAME, LEASE_NAMESPACE, ManagerProcess
from lwsconf.waits import core

PROBE_NAMESPACE = "default"


class UpstreamError(Exception):
    """--lws-impl=upstream-local could not be set up; the message says why and what to do."""


@dataclass
class Running:
    """Upstream running against the cluster: what it was built from, the process, the objects installed."""

    built: build.Built
    manager: ManagerProcess
    api: client.ApiClient
    timeouts: Timeouts
    webhooks: list[dict[str, Any]]
    how: str = "stop upstream's LWS manager process (SIGTERM), start it again and wait until its webhooks answer"

    def wait_admitting(self, timeout: float) -> None:
        """Until a dry-run LeaderWorkerSet create passes the webhooks; UpstreamError with the log tail."""
        def check() -> None:
            self.manager.check_alive()
            install.admits_dry_run(self.api, PROBE_NAMESPACE, self.timeouts.request_timeout)
            install.calls_webhooks(self.api, PROBE_NAMESPACE, self.timeouts.request_timeout)

        try:
            core.wait_until(check, what="upstream's webhooks to admit a dry-run LeaderWorkerSet create "
                            "and refuse an invalid one",
                            timeout=timeout, poll=0.25, describe=self.manager.describe)
        except (core.WaitTimeout, core.Terminal) as exc:
            raise UpstreamError(f"{exc}\nRaise the limit with --timeout-overrides LwsAvailable:SECONDS.") from None

    def log_for(self, namespace: str) -> str:
        """The manager's log lines that mention `namespace` (before and after any restart), for failure artifacts."""
        lines = []
        for name in ("manager.previous.log", "manager.log"):
            try:
                text = (self.manager.folder / name).read_text(errors="replace")
            except OSError:
                continue
            lines += [line for line in text.splitlines() if namespace in line]
        return "\n".join(lines) + "\n"

    def restart(self) -> None:
        """The LWSControllerRestart tests' restart: a new process, then the webhooks answer again.

        Upstream's manager does not release its Lease when stopped (no LeaderElectionReleaseOnCancel in
        cmd/main.go), so a new one would wait out the whole `LEADER_ELECTION` lease (60s) before it
        reconciles anything. The old process has exited when `halt()` returns, so deleting its Lease is
        what a release on cancel would have done; the new manager then leads at once."""
        try:
            self.manager.halt()
            install.delete_lease(self.api, LEASE_NAMESPACE, LEASE_NAME)
            self.manager.launch()
        except (core.WaitTimeout, core.Terminal, install.InstallError) as exc:
            raise UpstreamError(str(exc)) from None
        self.wait_admitting(self.timeouts.controller_restart)

    def replace(self, built: build.Built) -> None:
        """Put the manager built from `built` in place of the running one, as an upgrade (or a downgrade) of an
        installation does: stop the old process and release its Lease, apply the new version's CRDs, start the
        new manager, point the webhook configurations at it (removing any the new version no longer has);
        returns once its webhooks admit again (ControllerRestart timeout). UpstreamError with the log tail."""
        old = self.manager
        new = ManagerProcess(built.binary, old.source_kubeconfig, old.context, ready_timeout=old.ready_timeout)
        try:
            crds = manifests.crds(built.facts.dir)
            old.stop()
            install.delete_lease(self.api, LEASE_NAMESPACE, LEASE_NAME)
            install.install_crds(self.api, crds, self.timeouts.create, self.timeouts.poll_interval)
            new.start()
            self.manager = new
            webhooks = manifests.webhook_configurations(built.facts.dir, new.webhook_url, new.ca)
            names = {w["metadata"]["name"] for w in webhooks}
            install.remove_webhooks(self.api, [w for w in self.webhooks if w["metadata"]["name"] not in names])
            install.install_webhooks(self.api, webhooks)
        except (core.WaitTimeout, core.Terminal, install.InstallError, manifests.ManifestError) as exc:
            raise UpstreamError(f"replacing upstream's manager {self.built.facts.version} by "
                                f"{built.facts.version}: {exc}") from None
        self.webhooks, self.built = webhooks, built
        self.wait_admitting(self.timeouts.controller_restart)

    def health(self) -> str | None:
        """None while the manager runs; once it has exited, what happened and its log tail.

        The plugin asks before every test (`Implementation.health`), so a manager that died mid-run (e.g.
        "leader election lost" under a slow API server) fails the run once, instead of every later
        test waiting out its timeouts against a cluster nobody reconciles."""
        component = self.manager.component
        code = component.exited() if component is not None else None
        if component is None or code is None:
            return None
        hint = (" It lost its leader-election Lease: the API server did not answer its renewals within the "
                f"{LEADER_ELECTION['renewDeadline']} renew deadline (a stalled API server, or a heavily loaded "
                "machine)." if "leader election lost" in component.tail() else "")
        return (f"upstream's LWS manager exited with status {code} during the run; no test from this "
                f"one on can pass without a controller.{hint}\n{self.manager.describe()}")


def _api(kubeconfig: Path, context: str | None) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), context=context)
    return api


@contextlib.contextmanager
def upstream_local(spec: str | None, kubeconfig: Path, context: str | None, timeouts: Timeouts,
                   out: TextIO) -> Iterator[Running]:
    """Upstream running against the cluster for the block; all of it removed afterwards."""
    try:
        built = build.ensure(spec, out)
        crds = manifests.crds(built.facts.dir)
    except (source.SourceError, gobuild.BuildError, manifests.ManifestError) as exc:
        raise UpstreamError(f"--lws-impl=upstream-local:{spec or ''}: {exc}") from None
    api = _api(kubeconfig, context)
    try:
        foreign = install.foreign_crd(api)
        if foreign:
            raise UpstreamError(f"--lws-impl=upstream-local: {foreign}")
        refused = install.protobuf_refused(api, PROBE_NAMESPACE, timeouts.request_timeout)
        if refused:
            raise UpstreamError(f"--lws-impl=upstream-local: this cluster does not read Kubernetes' protobuf "
                                f"encoding ({refused}), in which upstream's manager (controller-runtime's client) "
                                f"writes built-in kinds: run it on a real API server (--cluster=local, kind or "
                                f"kubeconfig)")
        with _installed(api, built, crds, kubeconfig, context, timeouts) as running:
            yield running
    finally:
        api.close()  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def _installed(api: client.ApiClient, built: build.Built, crds: list[dict[str, Any]], kubeconfig: Path,
               context: str | None, timeouts: Timeouts) -> Iterator[Running]:
    manager = ManagerProcess(built.binary, kubeconfig, context, ready_timeout=timeouts.lws_available)
    webhooks: list[dict[str, Any]] = []
    running: Running | None = None
    try:
        install.install_crds(api, crds, timeouts.create, timeouts.poll_interval)
        install.ensure_namespace(api, LEASE_NAMESPACE)
        manager.start()
        webhooks = manifests.webhook_configurations(built.facts.dir, manager.webhook_url, manager.ca)
        install.install_webhooks(api, webhooks)
        running = Running(built, manager, api, timeouts, webhooks)
        running.wait_admitting(timeouts.lws_available)
        yield running
    except (core.WaitTimeout, core.Terminal, install.InstallError, manifests.ManifestError) as exc:
        raise UpstreamError(f"--lws-impl=upstream-local: {exc}") from None
    finally:
        if running is not None:  # an upgrade test may have replaced the manager and its webhooks
            manager, webhooks = running.manager, running.webhooks
        install.remove_webhooks(api, webhooks)
        manager.stop()
        install.remove_crds(api, crds, timeouts.delete, max(timeouts.poll_interval, 0.25))


@dataclass
class Upgrade:
    """The LWSControllerUpgrade test's handle: the workloads are made under `previous`, then the manager is
    replaced by the version under test (`current`), CRDs and webhooks included, as upstream's own upgrade test
    does (test/e2e/upgrade: the latest release, then the built one)."""

    running: Running
    previous: build.Built
    current: build.Built

    @property
    def how(self) -> str:
        return (f"replace upstream's manager {self.previous.facts.version} by {self.current.facts.version} (CRDs, "
                "manager process, webhook configurations)")

    def begin(self) -> None:
        """Run the previous version in place of the one under test, before the test creates its workloads."""
        self.running.replace(self.previous)

    def upgrade(self) -> None:
        self.running.replace(self.current)

    def finish(self) -> None:
        """The version under test runs again, whatever happened in between."""
        if self.running.built is not self.current:
            self.running.replace(self.current)
