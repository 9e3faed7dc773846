"""An emulated multi-node inference server: what a vLLM LeaderWorkerSet group looks like to Kubernetes.

Why: the serving story LWS exists for (a leader and its workers rendezvous, one server answers through
the leader Service, a member failure takes the group down) must run on every cluster, with no GPU,
model or image of our own. This stdlib-only file is mounted from a ConfigMap into a stock python
image (as the probe is) and runs unchanged on sim, kind and real clusters (Python >= 3.9).

Roles come from the LWS environment: LWS_WORKER_INDEX 0 is the leader, others are workers.
* Rendezvous: the leader listens on the rendezvous port and waits for LWS_GROUP_SIZE - 1 workers;
  a worker connects to $LWS_LEADER_ADDRESS (retrying while the leader is not up or its name does not
  resolve yet), from its own bind address, and sends its index, group size and pod name, one JSON
  object per line. A duplicate or out-of-range index, or a group size other than the leader's, is a
  loud startup failure of both sides: exit 2, the reason on stderr (the pod log), as a misconfigured
  torch.distributed rank is. So is a group still incomplete after --rendezvous-timeout (leader) or a
  leader still unreachable after --join-timeout (worker). A connection that sends no join (a port
  probe) is logged and closed. A worker of another template revision (an old worker whose container
  restarted during a rollout and found the new leader under the same name) is turned away: it exits 2,
  the leader keeps waiting for its own worker.
* HTTP (port --port): /health answers 503 until the group is complete, then 200 (vLLM's health
  route); /v1/models, /v1/completions and /v1/chat/completions answer in the OpenAI shape with usage
  counts, deterministically (the text is a hash of model and prompt), and name the pod and revision
  that served them (an `lwsconf` field and X-Lwsconf-Pod / X-Lwsconf-Revision headers); /metrics is
  Prometheus text with vLLM's metric names (vllm:num_requests_running, vllm:num_requests_waiting,
  labelled model_name, as docs.vllm.ai "Production Metrics" lists them); /group shows the members
  and the addresses they joined from. Workers serve /health (200 once joined), /group and /metrics;
  completions and /v1/models belong to the leader, and a worker answers them 503 so misrouting shows.
* Ranks and a slow start, in vLLM's shape: once its group has formed (the leader: every worker joined;
  a worker: welcomed), each member logs one line per rank it holds, worded as vLLM's parallel_state
  logs them (`rank R in world size W is assigned as DP rank 0, PP rank P, TP rank T, EP rank 0`), the
  world being --tensor-parallel x --pipeline-parallel (default: 1 x the group size) split evenly
  over the group, member i holding ranks i*k..i*k+k-1 (what vLLM's multi-node backend gives node rank
  i); a world the group cannot split evenly is a startup failure (exit 2). Then it "loads the model"
  for --load-seconds (default 0), logging checkpoint-shard progress lines as vLLM does, and /health
  stays 503 (the leader refusing requests "while the model loads") until that is done. So a test
  can tell every rank joined from the pods' logs, and a readiness wait meets a server that takes its
  time to start, the same way as with real vLLM.
* Failure: workers heartbeat to the leader, which answers each beat. A worker that goes away (EOF, or
  no beat within the heartbeat timeout) makes the leader exit 3, as a collective-communication
  failure would; a worker whose leader goes away exits 3 too. The group-restart path is then driven
  by the workload itself. `POST /fault/crash?code=N` makes a member's process exit N (default 137) as a
  crashed rank would: tests fail a process, not a pod, through the pods proxy on any cluster.
* SIGTERM: the leader stops accepting, finishes in-flight requests (up to the drain timeout), tells
  its workers it is shutting down and exits 0; a worker stays in the group until its leader has left
  (or the drain timeout passes) and exits 0, so a group being replaced keeps serving until its
  leader is done (zero-error rollouts are possible when the implementation does its job); a worker
  terminated alone thus leaves after the drain timeout, and its leader then fails the group.

Revision: $LWSCONF_REVISION, which workloads fill through the downward API from the pod's
`leaderworkerset.sigs.k8s.io/template-revision-hash` label (fieldRef metadata.labels[...]); "unknown"
when unset. Pod: $POD_NAME, else $HOSTNAME, else the host name. Every address is what it is told: the
bind address is --host, else $LWSCONF_BIND, else $POD_IP, else all interfaces (the sim maps that to
the pod IP); tests bind 127.0.0.1. Ports and timeouts are options whose defaults come from the
LWSCONF_* variables named in `--help`. A request may carry `lwsconf_delay` (seconds) to be slow.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXIT_OK, EXIT_STARTUP, EXIT_GROUP_BROKEN = 0, 2, 3
VOCAB = ("lws", "leader", "worker", "group", "token", "rank", "shard", "tensor",
         "pipeline", "replica", "pod", "node", "serve", "model", "batch", "cache")


def log(message: str) -> None:
    sys.stderr.write(f"lwsconf-emulator: {message}\n")
    sys.stderr.flush()


OPTIONS: tuple[tuple[str, str, Any, Any, str], ...] = (  # flag, environment variable, type, default, meaning
    ("--port", "LWSCONF_PORT", int, 8080, "HTTP port"),
    ("--rendezvous-port", "LWSCONF_RENDEZVOUS_PORT", int, 29500, "the leader's rendezvous port"),
    ("--model", "LWSCONF_MODEL", str, "lwsconf/emulated-model", "the served model's name"),
    ("--heartbeat-interval", "LWSCONF_HEARTBEAT_INTERVAL", float, 1.0, "seconds between a worker's heartbeats"),
    ("--heartbeat-timeout", "LWSCONF_HEARTBEAT_TIMEOUT", float, 5.0, "a peer silent this long has gone away"),
    ("--join-timeout", "LWSCONF_JOIN_TIMEOUT", float, 300.0, "how long a worker keeps trying to reach its leader"),
    ("--rendezvous-timeout", "LWSCONF_RENDEZVOUS_TIMEOUT", float, 600.0,
     "how long the leader waits for its whole group (0: forever)"),
    ("--drain-timeout", "LWSCONF_DRAIN_TIMEOUT", float, 30.0,
     "on SIGTERM, the longest wait for in-flight requests (leader) or for the leader to leave (worker)"),
    ("--delay", "LWSCONF_COMPLETION_DELAY", float, 0.0, "seconds a completion takes unless it says lwsconf_delay"),
    ("--max-running", "LWSCONF_MAX_RUNNING", int, 16, "requests generated at once; more wait"),
    ("--load-seconds", "LWSCONF_LOAD_SECONDS", float, 0.0,
     "seconds the model takes to load once the group has formed; /health is 503 until then"),
    ("--tensor-parallel", "LWSCONF_TENSOR_PARALLEL", int, 1, "tensor-parallel ranks (the world is TP x PP)"),
    ("--pipeline-parallel", "LWSCONF_PIPELINE_PARALLEL", int, 0, "pipeline stages (0: the group size)"),
    ("--worker-index", "LWS_WORKER_INDEX", str, None, "this pod's index in its group (0: the leader)"),
    ("--group-size", "LWS_GROUP_SIZE", str, None, "pods in the group"),
    ("--leader-address", "LWS_LEADER_ADDRESS", str, None, "where workers find the leader"),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Options whose defaults come from the environment; a bad variable is named, never a traceback."""
    env = os.environ
    parser = argparse.ArgumentParser(description="lwsconf emulated multi-node inference server")
    parser.add_argument("--host", default=env.get("LWSCONF_BIND") or env.get("POD_IP") or "",
                        help="bind address (default $LWSCONF_BIND, else $POD_IP, else all interfaces)")
    for flag, variable, kind, default, meaning in OPTIONS:
        raw = env.get(variable)
        try:
            value = kind(raw) if raw else default
        except ValueError:
            parser.error(f"${variable}={raw!r} is not a valid {kind.__name__}: fix the variable or pass {flag}")
        parser.add_argument(flag, type=kind, default=value, help=f"{meaning} (default ${variable}, else {default})")
    return parser.parse_args(argv)


def lws_role(args: argparse.Namespace) -> tuple[int, int, str]:
    """Index, group size and leader address, or SystemExit(2) saying what is wrong and how to fix it."""
    try:
        index, size = int(args.worker_index), int(args.group_size)
    except (TypeError, ValueError):
        fatal(EXIT_STARTUP, f"LWS_WORKER_INDEX={args.worker_index!r} and LWS_GROUP_SIZE={args.group_size!r} must "
              "be integers: run this in a LeaderWorkerSet pod or pass --worker-index and --group-size")
    if size < 1 or not 0 <= index < size:
        fatal(EXIT_STARTUP, f"worker index {index} is out of range for group size {size} (valid: 0..{size - 1})")
    if index > 0 and not args.leader_address:
        fatal(EXIT_STARTUP, "a worker needs LWS_LEADER_ADDRESS (or --leader-address) to find its leader")
    return index, size, args.leader_address or ""


def rank_layout(index: int, size: int, tensor_parallel: int,
                pipeline_parallel: int) -> tuple[int, list[tuple[int, int, int]]]:
    """The world size and the (rank, PP rank, TP rank) this member holds, or SystemExit(2) when the group
    cannot split the world evenly. Ranks go TP fastest (rank = PP rank x TP + TP rank) and member i holds
    the i-th run of world/size ranks, as vLLM lays ranks out over the nodes of its multi-node backend."""
    pipeline = pipeline_parallel or size
    world = tensor_parallel * pipeline
    if tensor_parallel < 1 or pipeline < 1 or world % size:
        fatal(EXIT_STARTUP, f"a world of TP {tensor_parallel} x PP {pipeline} = {world} ranks cannot be split "
              f"evenly over a group of {size}: set LWSCONF_TENSOR_PARALLEL / LWSCONF_PIPELINE_PARALLEL so that "
              "the group size divides TP x PP")
    per = world // size
    return world, [(r, r // tensor_parallel, r % tensor_parallel) for r in range(index * per, (index + 1) * per)]


def fatal(code: int, reason: str) -> None:
    log(f"FATAL (exit {code}): {reason}")
    raise SystemExit(code)


def generate(model: str, prompt: str, max_tokens: int) -> str:
    """The same model and prompt always give the same text: answers are comparable across pods."""
    out: list[str] = []
    block = 0
    while len(out) < max_tokens:
        digest = hashlib.sha256(f"{model}\0{prompt}\0{block}".encode()).digest()
        out.extend(VOCAB[b % len(VOCAB)] for b in digest[: max_tokens - len(out)])
        block += 1
    return " " + " ".join(out)


def count_tokens(text: str) -> int:
    return max(1, len(text.split()))


class Peer:
    """One rendezvous connection, written by two threads (heartbeats and shutdown), hence the lock."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        self.sock, self.address = sock, address
        self.reader = sock.makefile("rb")
        self.lock = threading.Lock()
        self.info: dict[str, Any] = {}

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.sock.sendall(json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any]:
        """The next message; OSError (timeout included) or EOFError when the peer has gone."""
        line = self.reader.readline(65536)
        if not line:
            raise EOFError("connection closed")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError(f"not a message: {line[:80]!r}")
        return message

    def close(self) -> None:
        for closer in (self.reader.close, lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            with contextlib.suppress(OSError):
                closer()


class Emulator:
    """The whole server: rendezvous state, request accounting and the way the process ends."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.index, self.size, self.leader_address = lws_role(args)
        self.world, self.ranks = rank_layout(self.index, self.size, args.tensor_parallel, args.pipeline_parallel)
        self.pod = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or socket.gethostname()
        self.revision = os.environ.get("LWSCONF_REVISION") or "unknown"
        self.started = time.time()
        self.lock = threading.Lock()
        self.members: dict[int, Peer] = {}
        self.complete = threading.Event()
        self.loaded = threading.Event()
        self.loading = "not started: the group has not formed"
        self.terminating = threading.Event()
        self.ended = threading.Event()
        self.outcome: tuple[int, str] = (EXIT_OK, "")
        self.slots = threading.BoundedSemaphore(max(1, args.max_running))
        self.stats = {"running": 0, "waiting": 0, "success": 0, "prompt_tokens": 0, "generation_tokens": 0}
        self.sequence = 0

    @property
    def is_leader(self) -> bool:
        return self.index == 0

    def finish(self, code: int, reason: str) -> None:
        """End the process with `code` (the first call wins); the main thread does the exiting."""
        with self.lock:
            if self.ended.is_set():
                return
            self.outcome = (code, reason)
            self.ended.set()

    def group(self) -> dict[str, Any]:
        with self.lock:
            members = [{"index": 0, "pod": self.pod if self.is_leader else "", "address": self.leader_address or None}]
            members += [{"index": i, "pod": p.info.get("pod", ""), "address": p.address,
                         "joined": p.info.get("joined")} for i, p in sorted(self.members.items())]
        return {"role": "leader" if self.is_leader else "worker", "pod": self.pod, "address": self.args.host or None,
                "revision": self.revision,
                "index": self.index, "group_size": self.size, "complete": self.complete.is_set(),
                "world_size": self.world, "ranks": [r for r, _, _ in self.ranks], "loaded": self.loaded.is_set(),
                "joined": len(members) - 1 if self.is_leader else None,
                "members": members if self.is_leader else None, "model": self.args.model,
                "terminating": self.terminating.is_set()}

    # --- leader side of the rendezvous ---

    def accept_workers(self, listener: socket.socket) -> None:
        if self.size == 1:
            self.complete.set()
            self.formed()
        while not self.ended.is_set():
            try:
                sock, address = listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve_member, args=(Peer(sock, address[0]),), daemon=True).start()

    def stale_revision(self, peer: Peer, hello: dict[str, Any]) -> str | None:
        """Why a worker of another template revision may not join, else None. Such a worker is a member of a
        previous incarnation of this group: during a rollout the old worker pod outlives its leader (its
        StatefulSet is garbage-collected after the leader pod is gone), its container restarts when its
        leader leaves, and $LWS_LEADER_ADDRESS now names the new leader. It is turned away without failing
        this leader, which keeps waiting for its own worker."""
        theirs = hello.get("revision")
        if theirs in (None, "unknown") or self.revision == "unknown" or theirs == self.revision:
            return None
        return (f"worker {hello.get('index')} (pod {hello.get('pod', '?')} from {peer.address}) is of revision "
                f"{theirs}, this leader of {self.revision}: a member of a previous incarnation of the group")

    def admit(self, peer: Peer, hello: dict[str, Any]) -> int:
        """The joining worker's index, or ValueError with the reason the group cannot form."""
        index, size, pod = hello.get("index"), hello.get("group_size"), hello.get("pod", "?")
        if size != self.size:
            raise ValueError(f"worker {index} (pod {pod} from {peer.address}) has group size {size}, "
                             f"the leader has {self.size}: every pod of a group must see the same LWS_GROUP_SIZE")
        if not isinstance(index, int) or not 1 <= index < self.size:
            raise ValueError(f"worker index {index!r} (pod {pod} from {peer.address}) is out of range: "
                             f"workers of a group of {self.size} are 1..{self.size - 1}")
        with self.lock:
            if index in self.members:
                old = self.members[index]
                raise ValueError(f"duplicate worker index {index}: pod {pod} from {peer.address}, but pod "
                                 f"{old.info.get('pod')} from {old.address} already joined with it")
            peer.info = {"pod": pod, "joined": time.time()}
            self.members[index] = peer
            joined = len(self.members)
        log(f"worker {index} (pod {pod}) joined from {peer.address}: {joined}/{self.size - 1}")
        if joined == self.size - 1:
            self.complete.set()
            log(f"group complete: {self.size} members")
            self.formed()
        return index

    def serve_member(self, peer: Peer) -> None:
        peer.sock.settimeout(self.args.heartbeat_timeout)
        try:
            hello = peer.receive()
            if hello.get("type") != "join":
                raise EOFError(f"not a join message: {hello}")
        except (OSError, EOFError, ValueError) as exc:  # a port probe or a stray client: not a group member
            log(f"ignored a rendezvous connection from {peer.address}: {exc}")
            peer.close()
            return
        stale = self.stale_revision(peer, hello)
        if stale:
            log(f"refused a worker: {stale}")
            with contextlib.suppress(OSError):
                peer.send({"type": "reject", "reason": stale})
            peer.close()
            return
        try:
            index = self.admit(peer, hello)
            peer.send({"type": "welcome", "leader": self.pod, "group_size": self.size})
        except ValueError as exc:
            with contextlib.suppress(OSError):
                peer.send({"type": "reject", "reason": str(exc)})
            peer.close()
            self.finish(EXIT_STARTUP, f"rendezvous failed: {exc}")
            return
        except OSError as exc:
            why = f"left while joining: {exc}"
        else:
            why = self.heartbeats(peer)
        if self.terminating.is_set():
            log(f"worker {index} left while the leader drains: {why}")
            return
        self.finish(EXIT_GROUP_BROKEN, f"worker {index} (pod {peer.info.get('pod')} at {peer.address}) went away "
                    f"({why}): the group is broken, as a collective-communication failure would be")

    def heartbeats(self, peer: Peer) -> str:
        """Answer the peer's beats (leader) or read the leader's (worker) until it goes; why it went."""
        try:
            while not self.ended.is_set():
                message = peer.receive()
                if message.get("type") == "heartbeat" and self.is_leader:
                    peer.send({"type": "heartbeat"})
                elif message.get("type") == "shutdown":
                    return "shutdown"
        except TimeoutError:
            return f"no heartbeat for {self.args.heartbeat_timeout:g}s"
        except (OSError, EOFError, ValueError) as exc:
            return str(exc) or type(exc).__name__
        return "ended"

    # --- once the group has formed: ranks, then the model ---

    def formed(self) -> None:
        """Log the ranks this member holds (vLLM logs one such line per rank once its process group is up),
        then load the model beside the rest (heartbeats go on, a lost member still fails the group)."""
        for rank, pp_rank, tp_rank in self.ranks:
            log(f"INFO [parallel_state.py] rank {rank} in world size {self.world} is assigned as DP rank 0, "
                f"PP rank {pp_rank}, TP rank {tp_rank}, EP rank 0")
        threading.Thread(target=self.load_model, daemon=True).start()

    def load_model(self, shards: int = 4) -> None:
        """Emulated weight loading: --load-seconds in `shards` steps, each logged as vLLM logs checkpoint shards.
        The waits are the emulated work's duration (ended early by the process ending), not a wait for a
        condition."""
        total = max(0.0, float(self.args.load_seconds))
        for done in range(shards + 1):
            self.loading = f"{done}/{shards} checkpoint shards"
            if total > 0:
                log(f"Loading safetensors checkpoint shards: {100 * done // shards:3d}% Completed | {done}/{shards}")
            if done < shards and total > 0 and (self.ended.wait(total / shards) or self.terminating.is_set()):
                return
        self.loaded.set()
        log(f"model {self.args.model} loaded in {total:g}s (--load-seconds); serving")

    # --- worker side of the rendezvous ---

    def connect_leader(self) -> Peer | None:
        """Keep trying $LWS_LEADER_ADDRESS until the join timeout: the leader may start after us."""
        target = f"{self.leader_address}:{self.args.rendezvous_port}"
        deadline = time.monotonic() + self.args.join_timeout
        last_log = 0.0
        while not self.ended.is_set():
            try:
                # from our own bind address: the leader then sees the pod's address, also on the sim,
                # where every pod shares the host's loopback and would otherwise connect from 127.0.0.1
                source = (self.args.host, 0) if self.args.host else None
                sock = socket.create_connection((self.leader_address, self.args.rendezvous_port), timeout=2.0,
                                                source_address=source)
                return Peer(sock, target)
            except OSError as exc:
                if time.monotonic() >= deadline:
                    self.finish(EXIT_STARTUP, f"could not reach the leader at {target} within "
                                f"{self.args.join_timeout:g}s (--join-timeout): {exc}")
                elif time.monotonic() - last_log > 10:
                    log(f"leader {target} not reachable yet ({exc}); retrying")
                    last_log = time.monotonic()
            self.ended.wait(0.2)
        return None

    def join(self) -> None:
        peer = self.connect_leader()
        if peer is None:
            return
        peer.sock.settimeout(self.args.heartbeat_timeout)
        try:
            peer.send({"type": "join", "index": self.index, "group_size": self.size, "pod": self.pod,
                       "revision": self.revision})
            answer = peer.receive()
        except (OSError, EOFError, ValueError) as exc:
            self.finish(EXIT_GROUP_BROKEN, f"the leader at {peer.address} dropped the join: {exc}")
            return
        if answer.get("type") != "welcome":
            self.finish(EXIT_STARTUP, f"the leader rejected this worker: {answer.get('reason', answer)}")
            return
        self.complete.set()
        log(f"joined leader {answer.get('leader')} at {peer.address} as worker {self.index}/{self.size}")
        self.formed()
        threading.Thread(target=self.beat, args=(peer,), daemon=True).start()
        why = self.heartbeats(peer)
        if why == "shutdown" or self.terminating.is_set():
            self.finish(EXIT_OK, f"the leader left ({why}) and the group is ending")
        else:
            self.finish(EXIT_GROUP_BROKEN, f"the leader at {peer.address} went away ({why}): the group is broken")

    def beat(self, peer: Peer) -> None:
        while not self.ended.wait(self.args.heartbeat_interval):
            try:
                peer.send({"type": "heartbeat"})
            except OSError:
                return

    # --- requests ---

    def refusal(self) -> str | None:
        """Why this process cannot serve a request now, or None."""
        if not self.is_leader:
            return f"worker {self.index} (pod {self.pod}) serves no requests: send them to the leader (index 0)"
        if not self.complete.is_set():
            with self.lock:
                joined = len(self.members)
            return f"the group is not complete: {joined}/{self.size - 1} workers joined"
        if not self.loaded.is_set():
            return f"the model is still loading ({self.loading})"
        return None

    def generating(self, delay: float) -> None:
        """Hold a generation slot for `delay` seconds, counted as waiting while no slot is free."""
        with self.lock:
            self.stats["waiting"] += 1
        self.slots.acquire()
        with self.lock:
            self.stats["waiting"] -= 1
            self.stats["running"] += 1
        try:
            if delay > 0:
                time.sleep(delay)  # emulated generation time, not a wait for a condition
        finally:
            with self.lock:
                self.stats["running"] -= 1
            self.slots.release()

    def answer(self, body: dict[str, Any], *, chat: bool) -> tuple[int, dict[str, Any]]:
        """An OpenAI-shaped (chat) completion for `body`, or an OpenAI-shaped error."""
        model = body.get("model") or self.args.model
        if model != self.args.model:
            return error(404, f"The model `{model}` does not exist.", "NotFoundError")
        if body.get("stream"):
            return error(400, "stream=true is not emulated: send stream=false (or leave it out)", "BadRequestError")
        max_tokens = body.get("max_completion_tokens" if chat and "max_completion_tokens" in body else "max_tokens", 16)
        if not isinstance(max_tokens, int) or not 1 <= max_tokens <= 4096:
            return error(400, f"max_tokens must be an integer in 1..4096, got {max_tokens!r}", "BadRequestError")
        prompt = prompt_text(body, chat=chat)
        if prompt is None:
            return error(400, "pass 'messages' (a list of {role, content})" if chat else "pass 'prompt' (a string)",
                         "BadRequestError")
        delay = body.get("lwsconf_delay", self.args.delay)
        if not isinstance(delay, (int, float)) or not 0 <= delay <= 600:
            return error(400, f"lwsconf_delay must be seconds in 0..600, got {delay!r}", "BadRequestError")
        self.generating(float(delay))
        text, prompt_tokens = generate(model, prompt, max_tokens), count_tokens(prompt)
        with self.lock:
            self.sequence += 1
            self.stats["success"] += 1
            self.stats["prompt_tokens"] += prompt_tokens
            self.stats["generation_tokens"] += max_tokens
            sequence = self.sequence
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length", "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text.strip()}
        else:
            choice["text"] = text
        return 200, {"id": f"{'chatcmpl' if chat else 'cmpl'}-{self.pod}-{sequence}",
                     "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
                     "model": model, "choices": [choice],
                     "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": max_tokens,
                               "total_tokens": prompt_tokens + max_tokens},
                     "lwsconf": {"pod": self.pod, "revision": self.revision, "group_size": self.size}}

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.args.model, "object": "model", "created": int(self.started),
                                            "owned_by": "lwsconf", "root": self.args.model, "parent": None}]}

    def metrics(self) -> str:
        """Prometheus text: vLLM's names for the request gauges and counters, and the group's state."""
        with self.lock:
            stats, joined = dict(self.stats), len(self.members)
        model = self.args.model.replace("\\", "\\\\").replace('"', '\\"')
        label = '{model_name="' + model + '"}'
        rows = [("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
                 label, stats["running"]),
                ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
                 label, stats["waiting"]),
                ("vllm:request_success_total", "counter", "Count of successfully processed requests.",
                 label[:-1] + ',finished_reason="length"}', stats["success"]),
                ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", label,
                 stats["prompt_tokens"]),
                ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", label,
                 stats["generation_tokens"]),
                ("lwsconf_emulator_group_complete", "gauge", "1 once the rendezvous is complete.", "",
                 int(self.complete.is_set())),
                ("lwsconf_emulator_workers_joined", "gauge", "Workers joined to this leader.", "", joined)]
        lines: list[str] = []
        for name, kind, text, labels, value in rows:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name}{labels} {float(value)}"]
        return "\n".join(lines) + "\n"

    # --- the process ---

    def run(self) -> int:
        """Serve until the group breaks (non-zero) or SIGTERM has drained (0); the exit code."""
        signal.signal(signal.SIGTERM, lambda *_: self.terminating.set())
        signal.signal(signal.SIGINT, lambda *_: self.terminating.set())
        host = self.args.host
        try:
            http = Server((host, self.args.port), self)
            listener = listen(host, self.args.rendezvous_port) if self.is_leader else None
        except OSError as exc:
            log(f"FATAL (exit {EXIT_STARTUP}): cannot listen on {host or '*'} ({exc}): "
                "choose other ports with --port / --rendezvous-port")
            return EXIT_STARTUP
        threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        role = "leader" if self.is_leader else f"worker {self.index}"
        log(f"{role} of a group of {self.size}, pod {self.pod}, revision {self.revision}, model "
            f"{self.args.model}: HTTP on {host or '*'}:{self.args.port}, rendezvous "
            + (f"on {host or '*'}:{self.args.rendezvous_port}" if self.is_leader
               else f"with {self.leader_address}:{self.args.rendezvous_port}"))
        if listener is not None:
            threading.Thread(target=self.accept_workers, args=(listener,), daemon=True).start()
        else:
            threading.Thread(target=self.join, daemon=True).start()
        while not self.ended.wait(0.05):
            if self.terminating.is_set():
                return self.drain(http, listener)
            self.check_rendezvous_deadline()
        code, reason = self.outcome
        log(f"FATAL (exit {code}): {reason}" if code else f"exiting: {reason}")
        return code

    def check_rendezvous_deadline(self) -> None:
        limit = self.args.rendezvous_timeout
        if not self.is_leader or self.complete.is_set() or limit <= 0 or time.time() - self.started < limit:
            return
        with self.lock:
            missing = [i for i in range(1, self.size) if i not in self.members]
        self.finish(EXIT_STARTUP, f"the group did not complete within {limit:g}s (--rendezvous-timeout): "
                    f"workers {missing} never joined; check that they reach {self.pod}'s rendezvous port "
                    f"{self.args.rendezvous_port}")

    def drain(self, http: Server, listener: socket.socket | None) -> int:
        """Graceful stop: no new connections, in-flight requests finish, then the group ends."""
        log(f"SIGTERM: draining {http.in_flight} in-flight request(s), accepting no more")
        http.shutdown()
        http.server_close()
        if listener is not None:
            listener.close()
        if not http.drained(self.args.drain_timeout):
            log(f"drain timeout {self.args.drain_timeout:g}s passed with {http.in_flight} request(s) in flight")
        if self.is_leader:
            with self.lock:
                peers = list(self.members.values())
            for peer in peers:
                with contextlib.suppress(OSError):
                    peer.send({"type": "shutdown"})
                peer.close()
        elif self.complete.is_set() and not self.ended.wait(self.args.drain_timeout):
            log(f"the leader was still up after {self.args.drain_timeout:g}s (--drain-timeout); leaving the group")
        log("drained, exiting 0")
        return EXIT_OK


def error(code: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    return code, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def prompt_text(body: dict[str, Any], *, chat: bool) -> str | None:
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return None
        return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return "\n".join(prompt)
    return prompt if isinstance(prompt, str) else None


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


class Server(ThreadingHTTPServer):
    """A threading HTTP server that counts requests in flight, so a drain knows when it is done."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], emulator: Emulator) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.emulator = emulator
        self.in_flight = 0
        self.idle = threading.Condition()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.idle:
            self.in_flight += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.idle:
                self.in_flight -= 1
                self.idle.notify_all()

    def drained(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.in_flight == 0, timeout)


class Handler(BaseHTTPRequestHandler):
    server_version = "lwsconf-emulator/1"
    server: Server

    def log_message(self, fmt: str, *args: Any) -> None:  # one line per request on stderr = the pod log
        sys.stderr.write(f"{self.address_string()} {fmt % args}\n")

    def reply(self, code: int, body: Any, content_type: str = "application/json") -> None:
        emulator = self.server.emulator
        data = body.encode() if isinstance(body, str) else json.dumps(body, sort_keys=True).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Lwsconf-Pod", emulator.pod)
        self.send_header("X-Lwsconf-Revision", emulator.revision)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        emulator = self.server.emulator
        route = self.path.split("?", 1)[0].rstrip("/") or "/"
        if route == "/health":
            ready = emulator.complete.is_set() and emulator.loaded.is_set()
            self.reply(200 if ready else 503, {**emulator.group(), "reason": None if ready else (
                emulator.refusal() if emulator.is_leader else "not joined to the leader yet"
                if not emulator.complete.is_set() else f"the model is still loading ({emulator.loading})")})
        elif route in ("/", "/group"):
            self.reply(200, emulator.group())
        elif route == "/metrics":
            self.reply(200, emulator.metrics(), "text/plain; version=0.0.4")
        elif route == "/v1/models":
            refusal = emulator.refusal()
            self.reply(*(error(503, refusal, "ServiceUnavailableError") if refusal else (200, emulator.models())))
        else:
            self.reply(*error(404, f"no route GET {route}", "NotFoundError"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        emulator = self.server.emulator
        route, _, query = self.path.partition("?")
        route = route.rstrip("/")
        if route == "/fault/crash":
            self.crash(query)
            return
        if route not in ("/v1/completions", "/v1/chat/completions"):
            self.reply(*error(404, f"no route POST {route}", "NotFoundError"))
            return
        refusal = emulator.refusal()
        if refusal:
            self.reply(*error(503, refusal, "ServiceUnavailableError"))
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError as exc:
            self.reply(*error(400, f"the body is not JSON: {exc}", "BadRequestError"))
            return
        if not isinstance(body, dict):
            self.reply(*error(400, "the body must be a JSON object", "BadRequestError"))
            return
        self.reply(*emulator.answer(body, chat=route.endswith("chat/completions")))


    def crash(self, query: str) -> None:
        """Fault injection: the process exits with `code` (default 137, as a SIGKILLed rank) right after
        answering, so a test can fail one member's process without touching the pod or the API."""
        raw = dict(p.partition("=")[::2] for p in query.split("&") if p).get("code", "137")
        if not raw.isdigit() or not 1 <= int(raw) <= 255:
            self.reply(*error(400, f"code={raw!r}: expected an exit code 1-255", "BadRequestError"))
            return
        self.reply(202, {"crashing": self.server.emulator.pod, "code": int(raw)})
        self.wfile.flush()
        self.server.emulator.finish(int(raw), "crashed on request (POST /fault/crash)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        emulator = Emulator(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return emulator.run()


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # daemon threads (HTTP, heartbeats) end with the process, never hold its exit
