"""Differences judged acceptable, by interaction id, each with its reason (printed on the page).

An entry here does not count as identical: the page's percentage counts only identical answers. An
entry is for a difference that is not the sim being wrong in a way a client can notice, or that
depends on something the sim deliberately does not have; the reason says which.
"""

from __future__ import annotations

_NO_5XX = ("kube-apiserver answers strconv.ParseUint's error unconverted, a reasonless 500; the sim gives the same "
           "words as a 400 BadRequest on purpose: it never answers a malformed request with a 5xx, which its fuzz "
           "tests hold it to (tests/sim/apiserver/test_bad_input.py, fuzz_oracle.judge)")

_POD_SPEC_DIFF = ("kube-apiserver's 'pod updates may not change fields' message ends with a unified diff of its "
                  "internal (unversioned) core.PodSpec Go struct dumped as indented JSON: Go field names, the internal "
                  "type's field order and every zero value, with line numbers into that dump (ValidatePodUpdate). The "
                  "sim has no internal types, only the served JSON, so it ends the same message with the changed "
                  "fields instead (validation_pods); code, reason, field and the sentence before the diff are "
                  "identical")

ACCEPTED: dict[str, str] = {
    "patches/patch-strategic/bad-directive": _NO_5XX.replace("strconv.ParseUint's", "mergepatch.ErrBadPatchType's"),
    "crud/crud-pods/replace": _POD_SPEC_DIFF,
    "versions/rv-concurrency/update-garbage-rv": _NO_5XX,
    "watch/watch-errors/garbage-rv": _NO_5XX,
}
