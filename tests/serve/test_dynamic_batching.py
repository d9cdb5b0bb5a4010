"""Dynamic batching: concurrent clients share model calls and get the answers they would get alone."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

from attnkit.families.translation.explore import explore, explore_decode, record
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
    alone = [record(e) for text in TEXTS for e in explore(loaded, [text], settings)]  # each text as its own batch
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
