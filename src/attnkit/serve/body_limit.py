"""A cap on request bodies, checked before anything parses them (a pure ASGI middleware).

A body whose `Content-Length` is over the cap is answered 413 without being kept; a body sent
without a length (chunked) is counted as it arrives and answered 413 as soon as it passes the cap.
Either way no more than the cap is ever held in memory. The rest of an oversize body is read and
thrown away (for at most `DRAIN_SECONDS`) before the answer: a server that closes a connection with
unread data resets it, and the client would never see the 413. A client that asked
`Expect: 100-continue` is answered before it sends the body at all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]

DRAIN_SECONDS = 10.0


class BodyLimit:
    """Refuse request bodies over `max_body` bytes (or the cap `paths` gives a path) with 413 `{"detail": "request body of ..."}`."""

    def __init__(self, app: ASGIApp, max_body: int, paths: dict[str, int] | None = None) -> None:
        self.app, self.default, self.paths = app, max_body, paths or {}

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.paths.get(scope["path"], self.default)
        headers = {k.lower(): v for k, v in scope["headers"]}
        declared = _content_length(headers.get(b"content-length"))
        if declared is not None and declared > cap:
            if headers.get(b"expect", b"").lower() != b"100-continue":  # the client sends the body anyway
                await _drain(receive)
            await _too_large(send, f"request body of {declared} bytes, at most {cap}")
            return
        body, state = await _read(receive, cap)
        if state == "over":
            await _too_large(send, f"request body of more than {cap} bytes (no Content-Length), at most {cap}")
        elif state == "done":
            await self.app(scope, _replay(body, receive), send)


def _content_length(value: bytes | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:  # the HTTP server refuses it before the app sees it; count the bytes then
        return None


async def _read(receive: Receive, cap: int) -> tuple[bytes, str]:
    """The body and "done"; or, once it passes `cap` bytes, "over" (what came is dropped, the rest
    drained); or "gone" if the client went away first (there is no one to answer)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", "gone"
        chunk, more = message.get("body", b""), message.get("more_body", False)
        size += len(chunk)
        if size > cap:
            if more:
                await _drain(receive)
            return b"", "over"
        chunks.append(chunk)
        if not more:
            return b"".join(chunks), "done"


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of the body, for at most `DRAIN_SECONDS`."""

    async def discard() -> None:
        while True:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return

    try:
        await asyncio.wait_for(discard(), DRAIN_SECONDS)
    except asyncio.TimeoutError:
        pass  # answer anyway; the connection closes after it


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the app the body read already, then passes on (e.g. a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


async def _too_large(send: Send, detail: str) -> None:
    payload = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
