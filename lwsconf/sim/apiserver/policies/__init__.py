"""Admission policies of the sim API server: ValidatingAdmissionPolicy, MutatingAdmissionPolicy and the
admission webhooks, as kube-apiserver's policy and webhook admission plugins run them.

`admission_policy` (compile and evaluate one ValidatingAdmissionPolicy), `admission_policy_match` (which
requests a policy or binding selects), `admission_policies` (enforcing the bindings on a write, and the
invocations both policy kinds share), `mutating_policy` / `mutating_policies` (the same for
MutatingAdmissionPolicy), `validation` (defaults and validation of the policy kinds themselves), and
`webhooks/` (Mutating- and ValidatingWebhookConfigurations: config, matching, review, client, dispatch).

May import `protobuf`, `tables`, `patch`, `schema` (the CEL library is there), `storage` and
`apimachinery`; never `admission` or `http` (the admission chain calls policies, not the reverse).
"""
