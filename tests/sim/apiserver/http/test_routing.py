"""Which paths the sim API server serves: a path it does not serve is answered as kube-apiserver's
mux answers it (found by the differential corpus, `lwsconf fidelity`, against kube-apiserver 1.37.2)."""

from __future__ import annotations

from tests.conftest import SimAPI


def test_unknown_resource_is_the_plain_not_found_status(sim_api: SimAPI) -> None:
    """requests/bad-requests/unknown-resource: kube-apiserver answers a path it does not serve with
    NotFound "the server could not find the requested resource" and empty details."""
    reply = sim_api.request("GET", "/api/v1/namespaces/default/frobnicators")
    assert reply.status_code == 404
    assert reply.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "the server could not find the requested resource", "reason": "NotFound",
                            "details": {}, "code": 404}
