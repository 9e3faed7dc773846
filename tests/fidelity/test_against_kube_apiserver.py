"""A slice of the differential corpus against the sim and the real kube-apiserver 1.37.2.

Needs the control plane in the cache; without it the test skips saying what to build
(LWSCONF_REQUIRE_GO=1 turns the skip into a failure, so CI cannot skip it silently). The full corpus
is `lwsconf fidelity`; this slice (the CRUD topic) checks that the whole path works (both servers
answer every interaction, the comparison runs) and pins the sim fixes the corpus found.
"""

from __future__ import annotations

import os

import pytest

from lwsconf.controlplane import versions
from lwsconf.fidelity import accepted, cli, corpus, servers
from lwsconf.fidelity.compare import Result

REQUIRE_ENV = "LWSCONF_REQUIRE_GO"


@pytest.fixture(scope="module")
def crud_results() -> list[Result]:
    try:
        release = servers.release_or_not_built(versions.DEFAULT.kubernetes)
    except servers.NotBuilt as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{exc}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
        pytest.skip(str(exc))
    return cli.run_both(release, corpus.select(["crud"]))


def test_every_interaction_is_answered_by_both_servers(crud_results: list[Result]) -> None:
    assert len(crud_results) == sum(len(s.steps) for s in corpus.select(["crud"]))
    unanswered = [r.id for r in crud_results if r.sim["code"] == 0 or r.real["code"] == 0]
    assert unanswered == [], unanswered


def test_what_the_corpus_fixed_stays_fixed(crud_results: list[Result]) -> None:
    by_id = {r.id: r for r in crud_results}
    for kind in ("configmaps", "deployments", "leases"):
        delete = by_id[f"crud/crud-{kind}/delete"]
        assert delete.identical, delete.lines  # a Success Status, as kube-apiserver answers
        assert by_id[f"crud/crud-{kind}/get-deleted"].identical
        listed = by_id[f"crud/crud-{kind}/list"]
        assert not [line for line in listed.lines if ".apiVersion" in line or ".kind" in line], listed.lines


def test_codes_and_reasons_agree_across_the_slice(crud_results: list[Result]) -> None:
    """Whatever else differs (see docs/sim-fidelity.md), status codes and Status reasons must not."""
    def reason(view: dict[str, object]) -> object:
        body = view.get("body")
        return body.get("reason") if isinstance(body, dict) else None

    mismatched = [(r.id, r.sim["code"], r.real["code"]) for r in crud_results
                  if (r.sim["code"], reason(r.sim)) != (r.real["code"], reason(r.real))
                  and r.id not in accepted.ACCEPTED]
    assert mismatched == [], mismatched
