"""Waiting, the one way: named waits built on tenacity, failing with the observed state.

`core` holds the two primitives (`wait_until` for "eventually true", `must_converge` for "true N times
in a row"); subject modules (`lws`, `pods`, `services`) name the waits tests use, in the form
`<subject>_must_<predicate>`. No test sleeps to wait for a condition. `recorder` watches an LWS
while a test acts and fills a `lwsconf.timeline` model (judged by `lwsconf.timeline.analysis`);
`podwatch` hands every pod event, in order, to a test's callback and fails when the watch broke.
"""
