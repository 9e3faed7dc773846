"""The sim measured against the real kube-apiserver: a differential corpus (issue 14, part 4).

The same scripted API interactions (`corpus/`, data: method, path, body, media type, query, the
fields expected to vary) run against the simulated API server and the real kube-apiserver of a
pinned release; their answers are normalised (`normalise.py`: every rule named and justified) and
compared (`diff.py`). The comparison core (`model`, `normalise`, `diff`, `page`, `accepted`) is pure;
`client.py` sends requests, `servers.py` starts both servers, `run.py` drives a corpus, `cli.py` is
`lwsconf fidelity`, which writes docs/sim-fidelity.md.
"""
