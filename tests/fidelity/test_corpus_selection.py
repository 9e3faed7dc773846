"""`lwsconf fidelity --corpus in-sample|held-out`: which scenarios run, what the last line says, and the
held-out prelude (cluster-scoped setup run on every server, compared once)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, compare, corpus, heldout
from lwsconf.fidelity import servers as fidelity_servers
from lwsconf.fidelity.model import Answer, Scenario, Step


def document(source: str) -> dict[str, Any]:
    step = {"name": "000-get-configmaps", "method": "GET", "path": "/api/v1/namespaces/${ns}/configmaps",
            "query": {}, "recordedCode": 200, "seq": 3}
    return {"generated": {"note": "test"}, "source": source, "recordedInteractions": 5, "steps": 3,
            "skipped": {"discovery or OpenAPI document": 2}, "rewritten": {},
            "prelude": [{"name": "000-post-things", "method": "POST", "path": "/apis/example.com/v1/things",
                         "body": {"metadata": {"name": "t"}}, "query": {}}],
            "scenarios": [{"name": f"{source}-001", "recordedNamespace": "x", "controllers": False, "steps": [step]},
                          {"name": f"{source}-002", "recordedNamespace": "y", "controllers": True, "steps": [step]}]}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for source in ("kubectl", "python"):
        (tmp_path / f"{source}.json").write_text(json.dumps(document(source)))
    monkeypatch.setattr(heldout, "FOLDER", tmp_path)
    return tmp_path


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], list[str]]]:
    """main() with the servers replaced: each run's (scenario names, prelude step names)."""
    seen: list[tuple[list[str], list[str]]] = []
    monkeypatch.setattr(fidelity_servers, "release_or_not_built", lambda version: versions.RELEASES[0])

    def run_both(release: versions.Release, scenarios: Sequence[Scenario],
                 prelude: Sequence[Step] = ()) -> list[compare.Result]:
        seen.append(([s.name for s in scenarios], [s.name for s in prelude]))
        return []

    monkeypatch.setattr(cli, "run_both", run_both)
    return seen


def test_held_out_runs_the_recorded_scenarios_and_says_so(folder: Path, runs: list[Any],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--corpus", "held-out"]) == 0
    assert runs == [(["kubectl-001", "kubectl-002", "python-001", "python-002"],
                     ["kubectl-000-post-things", "python-000-post-things"])]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("held-out corpus: 6 steps in 4 scenarios (+ a prelude of 2) from 10 recorded")
    assert "  left out 4: discovery or OpenAPI document" in out
    assert out[-1] == "held-out: 0 interactions, 0 identical (0.0%)"


def test_in_sample_is_the_default_and_unchanged(folder: Path, runs: list[Any],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 0
    assert cli.main(["--corpus", "in-sample"]) == 0
    wanted = [s.name for s in corpus.select(None)]
    assert runs == [(wanted, []), (wanted, [])]
    assert capsys.readouterr().out.splitlines()[-1].startswith("fidelity: ")


def test_a_held_out_source_can_be_chosen_and_an_unknown_one_is_refused(folder: Path, runs: list[Any],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--corpus", "held-out", "--topic", "python"]) == 0
    assert runs[0][0] == ["python-001", "python-002"]
    assert cli.main(["--corpus", "held-out", "--topic", "nope"]) == 2
    assert "unknown held-out source(s) nope; choose from kubectl, python" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--corpus", "other"])


class Echo:
    """A server that creates whatever is posted and lists nothing."""

    name = "echo"

    def __init__(self) -> None:
        self.paths: list[str] = []

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        self.paths.append(request["path"])
        return Answer(201, {}) if request["method"] == "POST" else Answer(200, {"items": []})

    def close(self) -> None:
        pass


def test_the_prelude_runs_on_every_server_and_is_compared_once(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    echoes: list[Echo] = []

    @contextlib.contextmanager
    def server(kind: str, controllers: bool) -> Iterator[Echo]:
        started.append(f"{kind}:{'controllers' if controllers else 'api'}")
        echoes.append(Echo())
        yield echoes[-1]

    monkeypatch.setattr(fidelity_servers, "sim", lambda controllers, nodes=False: server("sim", controllers))
    monkeypatch.setattr(fidelity_servers, "real", lambda release, controllers: server("real", controllers))
    held = heldout.load(sources=["kubectl"])
    results = cli.run_both(versions.RELEASES[0], held.scenarios, held.prelude)
    # the two servers are replayed at once: each side's groups in order, the sides interleaved as they go
    assert [s for s in started if s.startswith("sim:")] == ["sim:api", "sim:controllers"]
    assert [s for s in started if s.startswith("real:")] == ["real:api", "real:controllers"]
    assert [r.id for r in results] == ["held-out-prelude/prelude/kubectl-000-post-things",
                                       "held-out-kubectl/kubectl-001/000-get-configmaps",
                                       "held-out-kubectl/kubectl-002/000-get-configmaps"]
    assert all(r.identical for r in results)
    assert [e.paths[0] for e in echoes] == ["/apis/example.com/v1/things"] * 4  # before any namespace


def test_every_controller_the_sim_side_runs_for_controller_scenarios_exists() -> None:
    """The real side runs all of kube-controller-manager; the sim side the controllers named here, which must be
    the sim's own names (a misspelt one would silently not run), including the two that fill every namespace
    (its `default` ServiceAccount and `kube-root-ca.crt`), which kube-controller-manager runs too."""
    from lwsconf.fidelity import servers
    from lwsconf.sim import cluster
    names = {name for name, _ in cluster.default_controllers()}
    assert set(servers.SIM_CONTROLLERS) <= names, set(servers.SIM_CONTROLLERS) - names
    assert {"serviceaccount-controller", "root-ca-certificate-publisher-controller"} <= set(servers.SIM_CONTROLLERS)
