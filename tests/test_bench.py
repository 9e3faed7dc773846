"""The sim benchmarks still run end to end: tiny sizes, real `lwsconf sim up` subprocesses.

`make bench` is not part of `make test`, so without these a benchmark could rot unnoticed. Each
run writes into a results file that already holds another section, which must survive.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cluster as cluster_bench
from bench import fuzz_apiserver as fuzz_bench
from bench import reconciler as reconciler_bench
from bench import suite as suite_bench


def _results_with_other_section(tmp_path: Path) -> Path:
    out = tmp_path / "results.json"
    out.write_text(json.dumps({"apiserver": {"kept": True}}))
    return out


@pytest.mark.slow
def test_cluster_bench_records_ready_rates_and_rss_beside_other_sections(tmp_path: Path) -> None:
    out = _results_with_other_section(tmp_path)
    assert cluster_bench.main(["--out", str(out), "--pods", "12", "--probe-pods", "2", "--cpu-nodes", "1"]) == 0
    results = json.loads(out.read_text())
    assert results["apiserver"] == {"kept": True}, results.keys()
    section = results["cluster"]
    for run, pods in (("emulated", 12), ("probe_processes", 2)):
        assert section[run]["pods"] == pods, section[run]
        assert section[run]["pods_ready_per_s"] > 0, section[run]
        assert section[run]["rss_at_size"]["sim_process_mb"] > 0, section[run]
    assert section["probe_processes"]["rss_at_size"]["container_processes"] >= 2, section["probe_processes"]
    assert section["machine"]["cpus"] >= 1 and "sim up" in section["cluster_command"], section


@pytest.mark.slow
def test_reconciler_bench_records_latencies_and_throughput_beside_other_sections(tmp_path: Path) -> None:
    out = _results_with_other_section(tmp_path)
    assert reconciler_bench.main(["--out", str(out), "--runs", "2", "--replicas", "2", "--size", "3",
                                  "--cpu-nodes", "1"]) == 0
    results = json.loads(out.read_text())
    assert results["apiserver"] == {"kept": True}, results.keys()
    section = results["reconciler"]
    for figure in ("create_to_available_2x2", "group_restart"):
        for workload in ("probe", "emulated"):
            assert section[figure][workload]["runs"] == 2, section[figure]
            assert 0 < section[figure][workload]["p50_s"] <= section[figure][workload]["p90_s"], section[figure]
    assert section["throughput"]["pods"] == 6 and section["throughput"]["seconds_to_available"] > 0, section


def test_fuzz_bench_counts_requests_and_outcomes_beside_other_sections(tmp_path: Path) -> None:
    out = _results_with_other_section(tmp_path)
    assert fuzz_bench.main(["--out", str(out), "--requests", "25"]) == 0
    results = json.loads(out.read_text())
    assert results["apiserver"] == {"kept": True}, results.keys()
    section = results["fuzz_apiserver"]
    assert section["requests_tried"] == 25 == sum(section["by_status"].values()) + section["hangs"], section
    assert sum(section["by_family"].values()) == 25 and section["alive_at_end"] is True, section
    for figure in ("server_errors_5xx", "hangs", "lost_writes", "problems"):
        assert isinstance(section[figure], int), section


def test_suite_bench_records_wall_sum_slowest_and_the_targets(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    assert suite_bench.main(["--out", str(out), "--clusters", "sim,sim-serial", "-k", "object_names_and_ordinals"]) == 0
    section = json.loads(out.read_text())["suite"]
    for run, workers in (("sim", "2"), ("sim-serial", "0")):
        figures = section[run]
        assert (figures["cluster"], figures["workers"]) == ("sim", workers), figures
        # exit 1: a -k selection leaves the claimed LWS-EXTENDED and LWS-SERVING not-run, which the gate reports
        assert figures["outcomes"].get("SUCCEEDED", 0) >= 1 and "FAILED" not in figures["outcomes"], figures
        assert figures["slowest"][0]["seconds"] <= figures["sum_seconds"] <= figures["wall_seconds"] * 2
    sim = section["sim"]
    targets = json.loads(out.read_text())["suite"]["targets"]
    assert targets["sum_seconds"] == {"target": 150.0, "measured": sim["sum_seconds"], "met": True}
