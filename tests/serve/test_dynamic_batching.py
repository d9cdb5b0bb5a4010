"""Dynamic batching: concurrent clients share model calls and get the answers they would get alone."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

from attnkit.families import load_run
from attnkit.families.translation.api import result as served
from attnkit.families.translation.explore import explore, explore_decode
from attnkit.serve.app import Batching, Limits, create_app
from attnkit.serve.batcher import DynamicBatcher

TEXTS = ["t1 t2 t3", "t4", "t5 t6 t7 t8 t9 t0", "t2 t2", "t9 t8 t7 t6", "t3 t1 t4 t1 t5", "t0 t0 t0", "t7 t8"]


@pytest.fixture
def http(live_server):
    with httpx.Client(base_url=live_server.url, timeout=30) as client:  # thread-safe: shared by the clients below
        yield client


def test_concurrent_requests_are_batched_and_batch_invariant(live_server, http):
    def ask(text):
        response = http.post("/v1/translate", json={"texts": [text], "beam": 2, "attention": True})
        assert response.status_code == 200, response.text
        return response.json()["results"][0]

    loaded = live_server.app.state.models["tiny"].loaded
    settings = explore_decode(loaded.run.decode, beam=2)
    alone = [served(e) for text in TEXTS for e in explore(loaded, [text], settings)]  # each text as its own batch
    before = http.get("/v1/models").json()[0]["batching"]
    with ThreadPoolExecutor(len(TEXTS)) as pool:
        together = list(pool.map(ask, TEXTS))
    after = http.get("/v1/models").json()[0]["batching"]
    assert after["texts"] - before["texts"] == len(TEXTS)
    assert after["calls"] - before["calls"] < len(TEXTS) and after["largest"] > 1  # requests shared calls
    for a, b in zip(alone, together):
        assert a["source"] == b["source"] and a["text"] == b["text"]
        assert [h["text"] for h in a["nbest"]] == [h["text"] for h in b["nbest"]]
        assert [h["score"] for h in a["nbest"]] == pytest.approx([h["score"] for h in b["nbest"]], abs=2e-4)
        for kind in ("encoder", "decoder_self", "cross"):  # padding in a shared batch leaks into no map
            torch.testing.assert_close(torch.tensor(a["maps"][kind]["layers"]), torch.tensor(b["maps"][kind]["layers"]), atol=2e-4, rtol=0)


def test_batcher_groups_by_key_caps_batches_and_survives_errors():
    calls = []

    def run(key, texts):
        calls.append((key, list(texts)))
        if "boom" in texts:
            raise ValueError("bad text")
        time.sleep(0.05)
        return [f"{key}:{t}" for t in texts]

    batcher = DynamicBatcher(run, window_s=0.2, max_batch=3)
    try:
        futures = [batcher.submit("a", ["1"]), batcher.submit("b", ["2"]), batcher.submit("a", ["3", "4"]), batcher.submit("a", ["5"])]
        assert [f.result(5) for f in futures] == [["a:1"], ["b:2"], ["a:3", "a:4"], ["a:5"]]
        # Batch 1: "1" and "2" ("3 4" would make 4 > max_batch texts, so it waits), keys a and b as
        # separate calls; batch 2: "3 4" and "5".
        assert calls == [("a", ["1"]), ("b", ["2"]), ("a", ["3", "4", "5"])]
        # A failing text fails its own request only: the shared call is retried job by job.
        failing, good = batcher.submit("a", ["boom"]), batcher.submit("a", ["6"])
        with pytest.raises(ValueError, match="bad text"):
            failing.result(5)
        assert good.result(5) == ["a:6"]
        assert calls[3:] == [("a", ["boom", "6"]), ("a", ["boom"]), ("a", ["6"])]
        assert (batcher.stats.calls, batcher.stats.texts, batcher.stats.largest) == (4, 6, 3)
    finally:
        batcher.close()


def test_two_workers_decode_two_batches_at_once_and_close_stops_both():
    both = threading.Barrier(2, timeout=120)  # passes only when two calls run at the same time (the timeout guards a hang)
    seen = []

    def run(key, texts):
        seen.append(threading.current_thread().name)
        both.wait()
        return [f"{key}:{t}" for t in texts]

    batcher = DynamicBatcher(run, window_s=0.0, max_batch=2, name="two", workers=2)
    try:
        first = batcher.submit("a", ["1", "2"])  # a full batch: the first worker takes it and waits at the barrier
        second = batcher.submit("b", ["3"])  # so the second worker collects and runs this one meanwhile
        assert second.result(120) == ["b:3"] and first.result(120) == ["a:1", "a:2"]
        assert sorted(seen) == ["attnkit-batcher-two-0", "attnkit-batcher-two-1"]
        assert (batcher.stats.calls, batcher.stats.texts, batcher.stats.largest) == (2, 3, 2)
    finally:
        batcher.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("attnkit-batcher-two-")]


def test_one_worker_runs_one_batch_at_a_time():
    """The barrier test above can fail: one worker is one thread, which takes the batches in turn."""
    threads = []

    def run(key, texts):
        threads.append(threading.current_thread().name)
        return texts

    batcher = DynamicBatcher(run, window_s=0.0, max_batch=2, name="one", workers=1)
    try:
        first, second = batcher.submit("a", ["1", "2"]), batcher.submit("b", ["3"])
        assert first.result(120) == ["1", "2"] and second.result(120) == ["3"]
        assert threads == ["attnkit-batcher-one-0"] * 2
        assert [t.name for t in threading.enumerate() if t.name.startswith("attnkit-batcher-one-")] == ["attnkit-batcher-one-0"]
    finally:
        batcher.close()


def test_two_batch_workers_answer_each_request_as_alone(tiny_transformer_run, serve_app):
    loaded = load_run(tiny_transformer_run)
    server = serve_app(create_app({"pair": loaded}, Limits(max_texts=16, max_chars=200), Batching(window_ms=50, max_batch=2, workers=2)))
    with httpx.Client(base_url=server.url, timeout=30) as http, ThreadPoolExecutor(len(TEXTS)) as pool:
        answers = list(pool.map(lambda text: http.post("/v1/translate", json={"texts": [text], "beam": 2}).json()["results"][0], TEXTS))
        info = http.get("/v1/models").json()[0]["batching"]
    server.stop()
    alone = [served(e) for text in TEXTS for e in explore(loaded, [text], explore_decode(loaded.run.decode, beam=2), maps=False)]
    assert [a["text"] for a in answers] == [a["text"] for a in alone] and [a["source"] for a in answers] == TEXTS
    assert info["workers"] == 2 and info["texts"] == len(TEXTS) and info["largest"] <= 2
    assert not [t for t in threading.enumerate() if t.name.startswith("attnkit-batcher-pair-")]  # the app's shutdown closed both
