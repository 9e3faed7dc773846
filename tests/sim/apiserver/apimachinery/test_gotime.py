"""Times in built-in bodies parse as Go's time.Parse does (metav1.Time: RFC3339, metav1.MicroTime: RFC3339Micro).

Found by the held-out fidelity corpus: the official Python client writes a Lease's renewTime as
`2026-01-01T00:00:00+00:00`, which kube-apiserver 1.37.2 refuses (400, recorded) and the sim stored. The expected
errors below are what Go 1.26 printed for each value (gotime/main.go; regenerate with
`cd tests/sim/apiserver/apimachinery/gotime && go run . < values.json`, values being the file's "values" list).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lwsconf.sim.apiserver.apimachinery import gotime
from tests.conftest import SimAPI

VECTORS = Path(__file__).parent / "gotime"
GO = json.loads((VECTORS / "go1.26.json").read_text())
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.mark.parametrize("value", GO["values"])
def test_each_value_parses_or_fails_with_gos_own_words(value: str) -> None:
    time_error, micro_error = GO["errors"][value]
    assert (gotime.parse_error(gotime.RFC3339, value) or "") == time_error
    assert (gotime.parse_error(gotime.RFC3339_MICRO, value) or "") == micro_error


def test_the_vectors_are_what_go_prints_here() -> None:
    """Run the Go program where Go is installed, so the vectors cannot drift from Go's time package."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go on PATH: the committed vectors stand")
    done = subprocess.run([go, "run", "."], cwd=VECTORS, input=json.dumps(GO["values"]), capture_output=True,
                          text=True, timeout=300, env={**os.environ, "GOFLAGS": "-buildvcs=false"}, check=False)
    assert done.returncode == 0, done.stderr
    assert {v: list(e) for v, e in json.loads(done.stdout).items()} == {v: list(e) for v, e in GO["errors"].items()}


def lease(renew: str) -> dict[str, object]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": renew}}


def test_a_lease_renew_time_without_microseconds_is_refused_as_kube_apiserver_does(sim_api: SimAPI) -> None:
    reply = sim_api.request("POST", LEASES, json=lease("2026-01-01T00:00:00+00:00"))
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00+00:00" as '
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse "+00:00" as ".000000"')
    reply = sim_api.request("POST", LEASES, json=lease("2026-01-01T00:00:00.000000Z"))
    assert reply.status_code == 201, reply.text
