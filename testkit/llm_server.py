"""A tiny local HTTP server speaking just enough of two LLM APIs for tests and benchmarks.

``POST /v1/messages`` (Anthropic Messages API) and ``POST /v1/chat/completions`` (OpenAI chat
completions). Binds 127.0.0.1 on a free port; never talks to the internet. Each request
consumes the next action of ``script`` (then ``"canned"`` forever):

* ``"canned"``: a well-formed answer whose text is the JSON object the prompt asks for; the
  name comes from the offline proposer run on the facts in the prompt (plumbing, not a model);
* ``("status", code)``: that HTTP error with the API's error body and ``retry-after-ms: 1``;
* ``("raw", text)``: status 200 with a body that is not the API's JSON;
* ``("text", text)``: a well-formed API envelope whose answer text is ``text``;
* ``("sleep", seconds)``: wait, then answer canned (for timeouts).

With ``key`` (an :class:`AnswerKey`) the canned answers come from a hidden answer key with a
realistic error rate instead. Every answer reports token usage counted by the fake's own
tokenizer (:func:`count_tokens`, with the chat framing: :func:`billed_input`);
``tokens_in``/``tokens_out`` add them up.

``requests`` records every request (path, model, body) for assertions.
``POST /v1/messages/count_tokens`` (Anthropic's token counter) answers
``{"input_tokens": n}`` with the count a call of the same prompt is billed; those requests
are recorded in ``count_requests``, not ``requests`` (they are not model calls).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_FACTS = re.compile(r"Facts about the function \(JSON\):\n(.*?)\n\nAnswer", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z]{1,6}|[0-9]{1,3}|\s{2,}|[^\sA-Za-z0-9]{1,2}")
#: the chat format's tokens around each message, and before the answer
MESSAGE_FRAMING = REPLY_FRAMING = 4


def count_tokens(text: str) -> int:
    """The fake provider's own token count (a word-piece split that is NOT kbtool's
    estimator: letters in pieces of up to 6, digits of up to 3, punctuation in pairs, a
    run of blanks one token). Like a real BPE vocabulary it merges common mark pairs
    (``->``, ``);``, ``==``); it counts 6-16 % more than OpenAI's o200k encoding on C,
    Python and English (a heavier tokenizer than OpenAI's, as other providers' are)."""
    return len(_TOKEN.findall(text))


def billed_input(system: str, user: str) -> int:
    """The input tokens one call is billed: both messages and the chat framing."""
    messages = 2 if system else 1
    return count_tokens(system) + count_tokens(user) + messages * MESSAGE_FRAMING + REPLY_FRAMING


def prompt_facts(prompt: str) -> dict[str, Any]:
    """What a naming prompt shows: function index, callee names, strings, C lines."""
    from kbtool.agents.prompts import function_index_of

    out: dict[str, Any] = {
        "index": function_index_of(prompt),
        "callees": [],
        "strings": [],
        "code": [],
    }
    section = None
    in_c = False
    for line in prompt.splitlines():
        if line.startswith("```c"):
            in_c = True
            continue
        if line.startswith("```"):
            in_c = False
            continue
        if in_c:
            if line.strip() and len(line.strip()) > 8 and not line.strip().startswith("/*"):
                out["code"].append(line.strip())
            continue
        if line.startswith("Calls (names"):
            section = "callees"
        elif line.startswith("Strings and data"):
            section = "strings"
        elif not line.startswith("- "):
            section = None
        elif section == "callees" and not line.startswith("- ..."):
            out["callees"].append(line[2:].split(" ")[0])
        elif section == "strings" and not line.startswith("- ..."):
            try:
                out["strings"].append(json.loads(line[2:]))
            except ValueError:
                pass
    return out


def canned_answer(prompt: str) -> str:
    """The answer text for a prompt: explanation first, then a name (offline rules on an old
    facts prompt, ``fake_named_N`` on a code prompt) and evidence from the prompt itself."""
    from kbtool.agents.offline import propose_offline

    m = _FACTS.search(prompt)
    if m:
        ctx = json.loads(m.group(1))
        p = propose_offline(ctx, min_confidence=0.0)
        name = p.name if p else f"fake_named_{ctx.get('index')}"
        evidence: dict[str, Any] = {}
    else:
        facts = prompt_facts(prompt)
        name = f"fake_named_{facts['index']}"
        evidence = {
            "callees": facts["callees"][:1],
            "strings": facts["strings"][:1],
            "code": facts["code"][:1],
        }
    return json.dumps(
        {
            "explanation": "canned answer from the fake server",
            "name": name,
            "summary": "canned",
            "evidence": evidence,
            "confidence": 0.99,
            "reasons": ["canned"],
        }
    )


class AnswerKey:
    """A fake model with a realistic error rate, answering from a hidden key (index -> true
    name). Per function (a stable hash of ``seed`` and the index) it is *right* (share
    ``right``), *plausibly wrong* (``wrong``) or *malformed* (the rest). A right answer names
    the function, cites facts really in the prompt and repeats itself on the second prompt
    with probability ``stable_right``. A wrong answer names another function of the key
    (a plausible name from the same program), repeats on the second prompt with probability
    ``stable_wrong``, and cites a made-up string (``hallucinate``), nothing (``bare``) or the
    prompt's real facts (the rest). Every answer claims confidence 0.9."""

    def __init__(
        self,
        key: dict[int, str],
        *,
        seed: int = 7,
        right: float = 0.7,
        wrong: float = 0.24,
        stable_right: float = 0.95,
        stable_wrong: float = 0.25,
        hallucinate: float = 0.4,
        bare: float = 0.3,
    ) -> None:
        self.key, self.seed = dict(key), seed
        self.right, self.wrong = right, wrong
        self.stable_right, self.stable_wrong = stable_right, stable_wrong
        self.hallucinate, self.bare = hallucinate, bare
        self.names = sorted(set(self.key.values()))

    def _u(self, *parts: Any) -> float:
        import hashlib

        h = hashlib.sha256(repr((self.seed, *parts)).encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64

    def kind(self, index: int) -> str:
        u = self._u("kind", index)
        return (
            "right" if u < self.right else "wrong" if u < self.right + self.wrong else "malformed"
        )

    def _other(self, index: int, salt: str) -> str:
        truth = self.key.get(index, "")
        for k in range(8):
            cand = self.names[int(self._u("other", index, salt, k) * len(self.names))]
            if cand != truth:
                return cand
        return f"{truth}_impl" if truth else "process_data"

    def answer(self, prompt: str) -> str:
        facts = prompt_facts(prompt)
        idx = facts["index"]
        variant = "b" if "a second reader names it independently" in prompt else "a"
        if idx is None or idx not in self.key:
            return canned_answer(prompt)
        kind = self.kind(idx)
        real = {
            "callees": facts["callees"][:2],
            "strings": facts["strings"][:2],
            "code": facts["code"][:1],
        }
        if kind == "malformed":
            return "I think this function is probably a helper. {name: unclear"
        if kind == "right":
            name = self.key[idx]
            if variant == "b" and self._u("stable", idx) >= self.stable_right:
                name = self._other(idx, "right-b")
            evidence = real
        else:
            name = self._other(idx, "wrong")
            if variant == "b" and self._u("stable", idx) >= self.stable_wrong:
                name = self._other(idx, "wrong-b")
            u = self._u("evidence", idx)
            if u < self.hallucinate:
                evidence = {"strings": ["cannot allocate %s buffer"], "callees": ["xmalloc"]}
            elif u < self.hallucinate + self.bare:
                evidence = {}
            else:
                evidence = real
        explanation = (  # two to four sentences, as the prompt asks (a realistic length)
            "The function checks its arguments, then walks the structure its first parameter "
            "points to and calls the helpers listed above on each element. The strings and "
            "the callee names show which subsystem it belongs to. It returns a status code "
            "that the callers test against zero."
        )
        return json.dumps(
            {
                "explanation": explanation,
                "name": name,
                "summary": f"{name}: validates its input and processes each "
                "element, returning a status code.",
                "evidence": evidence,
                "confidence": 0.9,
                "reasons": ["read the C"],
            }
        )


class FakeLLMServer:
    """Context manager running the fake server in a thread; ``url`` is ``http://127.0.0.1:N``."""

    def __init__(
        self, script: list[Any] | None = None, *, key: AnswerKey | None = None, delay: float = 0.0
    ) -> None:
        self.script = list(script or [])
        self.key, self.delay = key, delay
        self.tokens_in = self.tokens_out = 0  # what this provider "billed"
        self.requests: list[dict[str, Any]] = []
        self.count_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                owner._handle(self)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self) -> Any:
        with self._lock:
            return self.script.pop(0) if self.script else "canned"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        path = h.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            with self._lock:
                self.count_requests.append({"path": path, "model": body.get("model"), "body": body})
            n = billed_input(_system_of(body), _prompt_of("messages", body))
            return self._send(h, 200, {"input_tokens": n})
        with self._lock:
            self.requests.append({"path": path, "model": body.get("model"), "body": body})
        kind = (
            "messages"
            if path.endswith("/messages")
            else ("chat" if path.endswith("/chat/completions") else None)
        )
        if kind is None:
            return self._send(h, 404, {"error": {"message": "no such route"}})
        action = self._next()
        if isinstance(action, tuple) and action[0] == "sleep":
            time.sleep(float(action[1]))
            action = "canned"
        if isinstance(action, tuple) and action[0] == "status":
            code = int(action[1])
            err = {"type": "error", "error": {"type": "api_error", "message": f"fake {code}"}}
            return self._send(h, code, err, {"retry-after-ms": "1", "retry-after": "0"})
        if isinstance(action, tuple) and action[0] == "raw":
            return self._send_bytes(h, 200, str(action[1]).encode(), "application/json")
        prompt = _prompt_of(kind, body)
        if self.delay:
            time.sleep(self.delay)
        if isinstance(action, tuple) and action[0] == "text":
            text = str(action[1])
        elif self.key is not None:
            text = self.key.answer(prompt)
        else:
            text = canned_answer(prompt)
        tin = billed_input(_system_of(body), prompt)
        tout = count_tokens(text)
        with self._lock:
            self.tokens_in += tin
            self.tokens_out += tout
        model = body.get("model") or "fake-model"
        if kind == "messages":
            payload = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": tin, "output_tokens": tout},
            }
        else:
            payload = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {
                    "prompt_tokens": tin,
                    "completion_tokens": tout,
                    "total_tokens": tin + tout,
                },
            }
        return self._send(h, 200, payload)

    def _send(self, h, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(h, code, json.dumps(obj).encode(), "application/json", headers)

    @staticmethod
    def _send_bytes(h, code, data: bytes, ctype: str, headers=None) -> None:
        h.send_response(code)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout test) is expected; other errors still print."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _prompt_of(kind: str, body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return "".join(part.get("text", "") for part in c if isinstance(part, dict))
            return str(c or "")
    return ""


def _system_of(body: dict[str, Any]) -> str:
    if isinstance(body.get("system"), str):
        return body["system"]
    for m in body.get("messages") or []:
        if m.get("role") == "system":
            return str(m.get("content") or "")
    return ""
