"""A pod's life as data (KWOK's model): the stage sets, and the interpreter that reads them.

The sets are the folders here (`fast/`, `general/`, `chaos/`: one YAML file per stage, an optional
`settings.yaml`; `README.md` is the reference of the format). `lifecycle` decides which stage applies to a pod or
container view, after how long and with which steps (no I/O), `paths` reads the fields a stage selects on, and
`settings` holds the kubelet timings a set carries (restart back-off, lease and node-status intervals).

It may import no other node package: the kubelet builds the views and performs what these decide.
"""
