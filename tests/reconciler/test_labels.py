"""Portable hashes (group-key, subgroup-key), the subgroup formula and name helpers (contract 3.1, 4.8, T6, T23)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from lwsconf.reconciler import labels, names


def test_group_key_is_sha1_of_namespace_slash_leader_name() -> None:
    assert labels.group_key("default", "test-sample-0") == hashlib.sha1(b"default/test-sample-0").hexdigest()


def test_group_key_literal_values_are_portable() -> None:
    # Computed independently with `printf 'default/test-sample-0' | sha1sum` (trap T6: portable).
    assert labels.group_key("default", "test-sample-0") == "40bb642a1417b0c5aea271dac9e8065b7e86f411"
    assert labels.group_key("ns1", "lws-1") == "52375c8b1c6ce2e73df4df6ab6c152ff666d446e"
    assert labels.subgroup_key("test-sample-1", 0) == "095fdab01c4ba6935cf75abe722d8af82c6d9079"


def test_group_key_depends_on_namespace_and_is_stable() -> None:
    assert labels.group_key("a", "x-0") != labels.group_key("b", "x-0")
    assert labels.group_key("a", "x-0") == labels.group_key("a", "x-0")


def test_subgroup_key_omits_namespace() -> None:
    assert labels.subgroup_key("test-sample-1", 0) == hashlib.sha1(b"test-sample-1/0").hexdigest()
    assert labels.subgroup_key("test-sample-1", 2) == hashlib.sha1(b"test-sample-1/2").hexdigest()


@dataclass(frozen=True)
class SubgroupCase:
    id: str
    size: int
    subgroup_size: int
    policy: str | None
    expected: tuple[int | None, ...]
    """Subgroup index for worker index 0 (leader) .. size-1."""


SUBGROUP_CASES = [
    SubgroupCase("S4-sgs2-LeaderWorker: {L,1},{2,3}", 4, 2, "LeaderWorker", (0, 0, 1, 1)),
    SubgroupCase("S5-sgs2: leader is the extra pod of subgroup 0", 5, 2, "LeaderWorker", (0, 0, 0, 1, 1)),
    SubgroupCase("S5-sgs2-LeaderExcluded: leader has none", 5, 2, "LeaderExcluded", (None, 0, 0, 1, 1)),
    SubgroupCase("S3-sgs1-LeaderExcluded: workers start at 1 (T23)", 3, 1, "LeaderExcluded", (None, 1, 2)),
    SubgroupCase("S10-sgs5: worker 3 in subgroup 0", 10, 5, "LeaderWorker", (0, 0, 0, 0, 0, 1, 1, 1, 1, 1)),
    SubgroupCase("S5-sgs4 (webhook test)", 5, 4, "LeaderWorker", (0, 0, 0, 0, 0)),
    SubgroupCase("S6-sgs3: size divisible", 6, 3, "LeaderWorker", (0, 0, 0, 1, 1, 1)),
    SubgroupCase("S7-sgs3: size-1 divisible", 7, 3, None, (0, 0, 0, 0, 1, 1, 1)),
    SubgroupCase("S3-sgs1-LeaderWorker", 3, 1, "LeaderWorker", (0, 1, 2)),
    SubgroupCase("S11-sgs5: worker 7 in subgroup 1", 11, 5, "LeaderWorker", (0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1)),
]


@pytest.mark.parametrize("case", SUBGROUP_CASES, ids=lambda c: c.id)
def test_subgroup_index_follows_divisibility_not_policy(case: SubgroupCase) -> None:
    got = tuple(labels.subgroup_index(case.size, case.subgroup_size, j, case.policy) for j in range(case.size))
    assert got == case.expected


def test_subgroup_index_for_workers_ignores_policy_type() -> None:
    for size, sgs in ((5, 2), (4, 2), (9, 4)):
        for j in range(1, size):
            assert (labels.subgroup_index(size, sgs, j, "LeaderExcluded")
                    == labels.subgroup_index(size, sgs, j, "LeaderWorker"))


def test_subgroup_index_rejects_zero_subgroup_size() -> None:
    with pytest.raises(ValueError, match="subgroup size must be >= 1"):
        labels.subgroup_index(4, 0, 1, None)


def test_pod_names_follow_statefulset_ordinals() -> None:
    assert names.leader_pod_name("vllm", 3) == "vllm-3"
    assert names.worker_pod_name("vllm", 3, 1) == "vllm-3-1"


@pytest.mark.parametrize(("name", "expected"), [
    ("vllm-3-1", ("vllm-3", 1)), ("vllm-3", ("vllm", 3)), ("a-b-c-12", ("a-b-c", 12)),
    ("vllm", None), ("vllm-", None), ("vllm-x", None), ("vllm-2147483648", None), ("v-2147483647", ("v", 2147483647)),
], ids=str)
def test_parent_and_ordinal_parses_the_trailing_ordinal(name: str, expected: tuple[str, int] | None) -> None:
    assert names.parent_and_ordinal(name) == expected


def test_group_index_from_leader_name_requires_exact_lws_prefix() -> None:
    assert names.group_index_from_leader_name("web", "web-4") == 4
    assert names.group_index_from_leader_name("web", "web-4-1") is None
    assert names.group_index_from_leader_name("web", "web-a-4") is None
    assert names.group_index_from_leader_name("web-1", "web-1-0") == 0


def test_revision_name_truncates_long_lws_names_to_220() -> None:
    assert names.revision_name("lws", "abc", 2) == "lws-abc-2"
    long = "x" * 300
    name = names.revision_name(long, "h" * 10, 12)
    assert name == "x" * 220 + "-" + "h" * 10 + "-12"
    assert len(name) <= 253
