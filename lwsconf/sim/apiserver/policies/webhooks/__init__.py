"""Admission webhooks in the sim API server: Mutating- and ValidatingWebhookConfiguration
(admissionregistration.k8s.io/v1).

kube-apiserver calls webhooks from two admission plugins, MutatingAdmissionWebhook and
ValidatingAdmissionWebhook (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`),
and this package does what they do, with the sim's objects:

* `config`: defaults and validation of the configurations themselves (`pkg/apis/admissionregistration/v1/defaults.go`,
  `validation/validation.go`), pure;
* `matching`: which webhooks a request calls (`generic/webhook.go` `ShouldCallHook`: namespace and object
  selectors, rules with `matchPolicy`, then `matchConditions` in CEL), pure;
* `review`: the AdmissionReview sent and the checks on the one received (`request/admissionreview.go`), and the
  Status a denial or a failed call becomes (`errors/statuserror.go`, `util/webhook/error.go`), pure;
* `client`: where a webhook is (`url`, or a `service` resolved to its ClusterIP, which is loopback on the sim),
  TLS verified with `caBundle`, the POST with `timeoutSeconds`; only loopback addresses are ever dialled;
* `dispatch`: the mutating pass (in order, JSON patches, reinvocation) and the validating pass (in parallel).

Part of `policies`, with the same imports; what the HTTP handlers call is `http.webhook_steps`.

Where it runs: `handlers` and `subresources` call `dispatch` between the MutatingAdmissionPolicies and the
object's validation (mutating) and after the ValidatingAdmissionPolicies (validating), which is
kube-apiserver's plugin order (`pkg/kubeapiserver/options/plugins.go`). Without any webhook configuration a
write never awaits, so it stays one synchronous step on the event loop.

Checked against kube-apiserver 1.37.2 by `tests/sim/apiserver/policies/test_webhooks_vs_kube_apiserver.py` (one webhook
server, both API servers) and the fidelity corpus topic `webhooks`. Not done in the sim: mutating webhooks on
the `scale`, `binding` and `eviction` subresources (validating ones are called), CONNECT requests (exec,
attach, port-forward, proxy), `options.fieldManager` in the review, audit annotations, credentials for
calling webhooks (kube-apiserver's admission kubeconfig), a deadline shared by all of a request's webhooks, and
a second mutating round started by MutatingAdmissionPolicies alone (their own reinvocation runs, webhooks are
not called again). Validating failures: the first in webhook order answers, not the first to arrive.
"""
