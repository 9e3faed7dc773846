"""A small typed asyncio Kubernetes client, used by every sim controller (and later the reference reconciler).

The sim's controllers talk to the API server over HTTP exactly as kube-controller-manager does, so
they need what client-go gives a Go controller, and nothing more:

* `client` - `Client` (get/list/create/replace/patch/delete/watch on plain dicts, discovery) and
  `GVR` (how a resource type is addressed);
* `errors` - `KubeClientError`, split into `ApiError` (a failure `Status`) and `TransportError`;
* `informer` - `Informer`, a LIST+WATCH cache with add/update/delete callbacks that survives 410s and
  dropped connections by relisting;
* `shared` - `SharedInformers`, one informer per resource for all the controllers of a component, as
  kube-controller-manager's SharedInformerFactory;
* `dynamic` - `DynamicInformers`, one informer per discovered resource type, following discovery
  as CRDs come and go;
* `workqueue` - `WorkQueue`, a de-duplicating key queue with rate-limited retries, and `run_worker`;
* `backoff` - `Backoff`, the capped exponential delay both of the above use.

Conformance tests never import this package: they use the official `kubernetes` client.
"""

from lwsconf.kubeclient.backoff import Backoff
from lwsconf.kubeclient.client import GVR, Client, WatchEvent
from lwsconf.kubeclient.dynamic import DynamicInformers
from lwsconf.kubeclient.errors import ApiError, KubeClientError, TransportError
from lwsconf.kubeclient.informer import Informer
from lwsconf.kubeclient.shared import SharedInformer, SharedInformers
from lwsconf.kubeclient.workqueue import ShutDown, WorkQueue, run_worker, run_workers

__all__ = [
    "GVR",
    "ApiError",
    "Backoff",
    "Client",
    "DynamicInformers",
    "Informer",
    "KubeClientError",
    "SharedInformer",
    "SharedInformers",
    "ShutDown",
    "TransportError",
    "WatchEvent",
    "WorkQueue",
    "run_worker",
    "run_workers",
]
