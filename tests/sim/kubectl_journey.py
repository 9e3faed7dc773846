"""The everyday kubectl journey of issue 17, as data: the commands a new user types in their first minutes.

Why data: the journey is a script a person would follow (create, look, change, roll back, clean up), and
keeping it as a list of steps makes each command, the exit code it must end with and the part of its output
that shows it worked readable in one place, and lets a step that does not yet behave as on a real cluster
carry its reason (`known`) instead of being dropped. `tests/sim/test_kubectl_journey.py` runs the steps in
order against one sim. Every step checks its exit code and a regular expression over its output, so none can
pass while doing nothing. `{tmp}` in an argument is the test's scratch folder.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

IMAGE = "python:3.12-slim"
"""A Python image with a `python -c`/`-m` command: the sim runs such containers as real processes."""
NEXT_IMAGE = "python:3.13-slim"
"""The image `set image` rolls to (still a Python image, so the new pods run and become ready)."""
WAIT = "--timeout=60s"
"""kubectl wait's and rollout status's own limit: pods start at once on the sim, processes in well under 1 s."""

RUN, PORT_FORWARD = "run", "port-forward"


@dataclass(frozen=True)
class Step:
    """One command: `kubectl ARGV` must exit `code` with `expect` (a regex, re.S|re.M) in stdout+stderr.

    `kind` PORT_FORWARD starts the command in the background, GETs through the forwarded port and stops it.
    `known`, when set, says how a real cluster answers differently and why the sim does not (yet): the step
    still asserts what the sim does, so a change either way is noticed, and the run reports it. `real`, for
    such a step, is the (exit code, regex) the real kube-apiserver and kube-controller-manager give (the
    journey on `--cluster=local`, whose nodes are still the sim's: a difference of the nodes has no `real`).
    """

    argv: tuple[str, ...]
    expect: str
    code: int = 0
    kind: str = RUN
    known: str = ""
    real: tuple[int, str] | None = None

    def expected(self, real_control_plane: bool) -> tuple[int, str]:
        """(exit code, regex) on the sim, or on the real control plane when `real_control_plane`."""
        return self.real if real_control_plane and self.real is not None else (self.code, self.expect)

    def differs(self, real_control_plane: bool) -> bool:
        """A known difference from a real cluster on this backend (the real control plane has none of the API's)."""
        return bool(self.known) and not (real_control_plane and self.real is not None)


def step(*argv: str, expect: str, code: int = 0, kind: str = RUN, known: str = "",
         real: tuple[int, str] | None = None) -> Step:
    return Step(tuple(argv), expect, code, kind, known, real)


MANIFEST = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {{app: api}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: api}}
  template:
    metadata:
      labels: {{app: api}}
    spec:
      containers:
      - name: api
        image: {IMAGE}
        command: [python, -m, http.server, "8080"]
        ports: [{{containerPort: 8080}}]
        readinessProbe:
          tcpSocket: {{port: 8080}}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {{app: api}}
  ports:
  - port: 80
    targetPort: 8080
"""
"""What `kubectl apply -f` sends: a Deployment of a real HTTP server and the Service in front of it."""

COUNTER = "import time\nfor i in range(8):\n    print('count', i, flush=True)\n    time.sleep(0.4)"
"""A container that prints for about 3 s then exits: `logs -f` follows it to its end."""

EXPLAIN_BUILTIN = ("kubectl explain of a built-in kind reads the kind's schema, tagged with its GVK, from the "
                   "server's OpenAPI v3 documents. The sim serves Kubernetes' own documents once they are installed "
                   "(`lwsconf sim openapi fetch`, run by make test; a starting sim installs them itself from a warm "
                   "Go module cache); this sim had none, so it served built-ins a permissive schema without a GVK "
                   "(lwsconf/sim/apiserver/schema/openapi.py) and explain finds no schema. A real cluster prints the "
                   "field's type and description.")
EXPLAIN_NOT_FOUND = r"error: GVK map\[group:apps kind:Deployment version:v1\] not found in OpenAPI schema"


def steps_for(openapi_documents: bool) -> tuple[Step, ...]:
    """`JOURNEY` on a sim with or without Kubernetes' OpenAPI documents (`openapi_cache.for_sim_start` found them).

    Without them each explain step is the known difference `EXPLAIN_BUILTIN`, asserted as the sim then answers,
    its own expectation kept as the `real` answer (which `--cluster=local` checks).
    """
    if openapi_documents:
        return JOURNEY
    return tuple(replace(s, code=1, expect=EXPLAIN_NOT_FOUND, known=EXPLAIN_BUILTIN, real=(s.code, s.expect))
                 if s.argv[0] == "explain" else s for s in JOURNEY)



JOURNEY: tuple[Step, ...] = (
    # Where am I?
    step("version", expect=r"Client Version: v1\.37\.\d+.*Server Version: v1\.\d+\.\d+"),
    step("cluster-info", expect=r"Kubernetes control plane.* is running at https://127\.0\.0\.1:\d+"),
    step("get", "nodes", expect=r"^NAME\s+STATUS.*\n\S+\s+Ready"),
    step("api-versions", expect=r"^apps/v1$.*^batch/v1$.*^policy/v1$"),
    step("api-resources", expect=r"^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$"),
    step("explain", "deployment.spec.replicas", expect=r"^FIELD: replicas <integer>$.*^DESCRIPTION:\n +\w"),
    step("explain", "deployment.spec.strategy", "--recursive",
         expect=r"^  rollingUpdate\t<RollingUpdateDeployment>\n    maxSurge\t<IntOrString>$"),
    step("explain", "deployments.spec.template.spec.containers.env", "--api-version=apps/v1",
         expect=r"^VERSION: +v1$.*^FIELD: env <\[\]EnvVar>$.*^  name\t<string> -required-$"),
    step("auth", "can-i", "create", "deployments", expect=r"^yes$"),
    step("auth", "whoami", expect=r"^Username\s+lwsconf-(sim-)?admin$"),  # local: the client certificate's user
    # A namespace of one's own, made the default.
    step("create", "namespace", "journey", expect=r"^namespace/journey created$"),
    step("config", "set-context", "--current", "--namespace=journey", expect=r"Context \".*\" modified\."),
    # Generators.
    step("create", "configmap", "app-config", "--from-literal=greeting=hello",
         expect=r"^configmap/app-config created$"),
    step("create", "secret", "generic", "app-secret", "--from-literal=password=s3cret",
         expect=r"^secret/app-secret created$"),
    step("get", "configmap", "app-config", "-o", "jsonpath={.data.greeting}", expect=r"\Ahello\Z"),
    step("get", "secret", "app-secret", "-o", "jsonpath={.data.password}", expect=r"\AczNjcmV0\Z"),
    step("create", "deployment", "web", f"--image={IMAGE}", "--replicas=2", "--port=8080", "--",
         "python", "-m", "http.server", "8080", expect=r"^deployment\.apps/web created$"),
    step("apply", "-f", "{tmp}/api.yaml", expect=r"^deployment\.apps/api created\nservice/api created$"),
    step("wait", "--for=condition=Available", "deployment/web", "deployment/api", WAIT,
         expect=r"deployment\.apps/web condition met\ndeployment\.apps/api condition met"),
    step("rollout", "status", "deployment/web", WAIT, expect=r'deployment "web" successfully rolled out'),
    # Looking around.
    step("get", "deployments", "-o", "wide",
         expect=rf"^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$.*"
                rf"^web\s+2/2\s+2\s+2\s+\S+\s+python\s+{IMAGE}\s+app=web$"),
    step("get", "pods", "-o", "wide", expect=r"^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE.*"
                                             r"^web-\S+\s+1/1\s+Running\s+0"),
    step("get", "deployment", "web", "-o", "yaml", expect=r"^kind: Deployment$.*^  replicas: 2$"),
    step("get", "service", "api", "-o", "jsonpath={.spec.ports[0].port} {.spec.clusterIP}",
         expect=r"\A80 \d+\.\d+\.\d+\.\d+\Z"),
    # The EndpointSlice controller fills the slice after the pods are ready, as on a cluster: wait for it first
    # (a single `get` at once flaked under load: the slice was 1 s old, without ports yet).
    step("wait", "--for=jsonpath={.ports[0].port}=8080", "endpointslices", "-l", "kubernetes.io/service-name=api",
         WAIT, expect=r"^endpointslice\.discovery\.k8s\.io/api-\S+ condition met$"),
    step("get", "endpointslices", "-l", "kubernetes.io/service-name=api", expect=r"^api-\S+\s+IPv4\s+8080\s"),
    # A Deployment runs its pods through a ReplicaSet per revision (the sim's too: controllers/replicaset.py).
    step("describe", "deployment", "web",
         expect=r"^Replicas:\s+2 desired.*^NewReplicaSet:\s+web-\S+ \(2/2 replicas created\).*^Events:.*"
                r"ScalingReplicaSet\s.*Scaled up replica set web-\S+ from 0 to 2"),
    step("get", "replicasets", "-l", "app=web", "-o", "wide",
         expect=rf"^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$\n"
                rf"^web-\S+\s+2\s+2\s+2\s+\S+\s+python\s+{IMAGE}\s+app=web,pod-template-hash=\S+$"),
    step("describe", "rs", "-l", "app=web",
         expect=r"^Controlled By:\s+Deployment/web$.*^Pods Status:\s+2 Running.*^Events:.*"
                r"SuccessfulCreate\s.*replicaset-controller\s+Created pod: web-"),
    # A pod of one's own: exec, port-forward, logs, cp.
    step("run", "box", f"--image={IMAGE}", "--port=8080", "--", "python", "-m", "http.server", "8080",
         expect=r"^pod/box created$"),
    step("wait", "--for=condition=Ready", "pod/box", WAIT, expect=r"^pod/box condition met$"),
    step("describe", "pod", "box", expect=r"^Status:\s+Running$.*^Events:\n.*\n.*"
                                          r"(?=.*Scheduled\s+\S+\s+default-scheduler\s+"
                                          r"Successfully assigned journey/box)"
                                          r"(?=.*Pulled\s+\S+\s+kubelet\s)(?=.*Started\s+\S+\s+kubelet\s)"),
    step("exec", "box", "--", "python", "-c", "import os, socket; print(socket.gethostname(), os.getcwd())",
         expect=r"\Abox /\n\Z"),
    step("exec", "box", "--", "python", "-c", "import sys; sys.exit(3)", code=3,
         expect=r"command terminated with exit code 3"),
    step("port-forward", "pod/box", ":8080", kind=PORT_FORWARD, expect=r"Directory listing for /"),
    step("logs", "box", expect=r'"GET / HTTP/1\.1" 200'),
    step("logs", "box", "--tail=1", expect=r'\A[^\n]*"GET / HTTP/1\.1" 200[^\n]*\n\Z'),
    # cp is tar over exec (`tar -xmf - -C /tmp` fed on stdin, `tar cf - PATH` read back), run in the container's root.
    step("cp", "{tmp}/note.txt", "box:/tmp/note.txt", expect=r"\A\Z"),
    step("exec", "box", "--", "cat", "/tmp/note.txt", expect=r"\Acopied by kubectl cp\n\Z"),
    # tar's warning may come out cut short, on any cluster: kubectl cp runs the exec in a goroutine and returns as soon
    # as it has read the archive to its end, without waiting for that exec's stderr copy (kubectl v0.37.2
    # pkg/cmd/cp/cp.go:403-406), and GNU tar writes the warning in three writes ("tar: ", the text, "\n"), which reach
    # kubectl on a stream of their own. Seen once through the real API server: the line without its "\n". So the
    # output is a prefix of the warning; the steps after this one check the file that came back.
    step("cp", "box:/tmp/note.txt", "{tmp}/back/note.txt",
         expect=r"\A(tar: (Removing leading `/' from member names\n?)?)?\Z"),
    # What came back is the same file: copied in again under another name and read in the pod.
    step("cp", "{tmp}/back/note.txt", "box:/tmp/back.txt", expect=r"\A\Z"),
    step("exec", "box", "--", "cat", "/tmp/back.txt", expect=r"\Acopied by kubectl cp\n\Z"),
    step("run", "counter", f"--image={IMAGE}", "--restart=Never", "--", "python", "-c", COUNTER,
         expect=r"^pod/counter created$"),
    step("wait", "--for=condition=Ready", "pod/counter", WAIT, expect=r"condition met"),
    step("logs", "-f", "--tail=20", "counter", expect=r"count 0\n.*count 7\n\Z"),
    # Changing things: scale, roll out, roll back, label, annotate.
    step("scale", "deployment", "web", "--replicas=3", expect=r"^deployment\.apps/web scaled$"),
    step("wait", "--for=jsonpath={.status.readyReplicas}=3", "deployment/web", WAIT, expect=r"condition met"),
    step("set", "image", "deployment/web", f"python={NEXT_IMAGE}", expect=r"^deployment\.apps/web image updated$"),
    step("rollout", "status", "deployment/web", WAIT, expect=r'deployment "web" successfully rolled out'),
    step("rollout", "history", "deployment/web", expect=r"^REVISION\s+CHANGE-CAUSE$\n^1\s.*^2\s"),
    # undo is client-side: kubectl reads the ReplicaSets and puts revision 1's template back on the Deployment.
    step("rollout", "undo", "deployment/web", expect=r"^deployment\.apps/web rolled back$"),
    # The first image is back, so setting it again changes nothing (kubectl prints nothing).
    step("set", "image", "deployment/web", f"python={IMAGE}", expect=r"\A\Z"),
    step("rollout", "status", "deployment/web", WAIT, expect=r'deployment "web" successfully rolled out'),
    step("get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}",
         expect=rf"\A{IMAGE}\Z"),
    # The first ReplicaSet was taken back as revision 3 (its revision 1 kept in revision-history); no third one.
    step("rollout", "history", "deployment/web", expect=r"^REVISION\s+CHANGE-CAUSE$\n^2\s+<none>$\n^3\s+<none>$"),
    step("get", "rs", "-l", "app=web", "-o", "custom-columns=DESIRED:.spec.replicas,IMAGE:"
         ".spec.template.spec.containers[0].image", "--sort-by=.spec.replicas",
         expect=rf"\A\s*DESIRED\s+IMAGE\n0\s+{NEXT_IMAGE}\n3\s+{IMAGE}\n\Z"),
    step("label", "deployment", "web", "tier=frontend", expect=r"^deployment\.apps/web labeled$"),
    step("annotate", "deployment", "web", "owner=journey", expect=r"^deployment\.apps/web annotated$"),
    step("get", "deployments", "-l", "tier=frontend", "-o", "jsonpath={.items[*].metadata.annotations.owner}",
         expect=r"\Ajourney\Z"),
    # A Job, a budget, events, metrics.
    step("create", "job", "hello", f"--image={IMAGE}", "--", "python", "-c", "print('hello from a job')",
         expect=r"^job\.batch/hello created$"),
    step("wait", "--for=condition=Complete", "job/hello", WAIT, expect=r"^job\.batch/hello condition met$"),
    step("logs", "job/hello", expect=r"\Ahello from a job\n\Z"),
    step("get", "jobs", expect=r"^hello\s+Complete\s+1/1\s"),
    step("create", "pdb", "web", "--selector=app=web", "--min-available=1",
         expect=r"^poddisruptionbudget\.policy/web created$"),
    step("wait", "--for=jsonpath={.status.disruptionsAllowed}=2", "pdb/web", WAIT, expect=r"condition met"),
    step("get", "events", expect=r"^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$.*\sSuccessfulCreate\s+job/hello\s"),
    step("events", "--for=deployment/web", expect=r"ScalingReplicaSet\s+Deployment/web\s+Scaled up replica set web-"),
    step("top", "pods", code=1, expect=r"error: Metrics API not available"),
    # Cleaning up, with each propagation policy.
    step("delete", "deployment", "api", "--cascade=foreground", expect=r'^deployment\.apps "api" deleted'),
    step("get", "pods", "-l", "app=api", expect=r"No resources found in journey namespace\."),
    step("delete", "deployment", "web", "--cascade=orphan", expect=r'^deployment\.apps "web" deleted'),
    # Orphaning a Deployment orphans its ReplicaSets; their pods keep the ReplicaSet as owner.
    step("get", "pods", "-l", "app=web", "-o",
         "jsonpath={range .items[*]}{.metadata.name} owners={.metadata.ownerReferences}{'\\n'}{end}",
         expect=r'\A(web-\S+ owners=\[\{"apiVersion":"apps/v1",[^\n]*"kind":"ReplicaSet"[^\n]*\n)+\Z'),
    step("get", "rs", "-l", "app=web", "-o",
         "jsonpath={range .items[*]}{.metadata.name} owners={.metadata.ownerReferences}{'\\n'}{end}",
         expect=r"\A(web-\S+ owners=\n)+\Z"),
    step("delete", "job", "hello", "--cascade=background", expect=r'^job\.batch "hello" deleted'),
    step("wait", "--for=delete", "pods", "-l", "job-name=hello", WAIT, expect=r"\A(pod/hello-\S+ condition met\n)*\Z"),
    step("delete", "replicasets", "-l", "app=web", expect=r'^replicaset\.apps "web-\S+" deleted'),
    step("wait", "--for=delete", "pods", "-l", "app=web", WAIT, expect=r"\A(pod/web-\S+ condition met\n)*\Z"),
    step("delete", "pod", "box", "counter", "--now", expect=r'pod "box" deleted.*pod "counter" deleted'),
    step("delete", "namespace", "journey", expect=r'^namespace "journey" deleted'),
)
