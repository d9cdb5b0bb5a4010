"""`attnkit serve` fuzzed from its own OpenAPI schema (schemathesis): no 5xx, every answer as documented.

    .venv/bin/python benchmarks/fuzz_serve.py [RUN ...] [--hf SOURCE ...] [--examples 60] [--seed 0]

The script starts `attnkit serve` over the runs and Hugging Face models given (none given: the tests'
tiny translation run and classifier, `tests/conftest.py`, and a tiny random BERT classifier and GPT-2,
`tests/sources/hf_tiny.py`, built in a temporary folder), reads /openapi.json and, for every operation,
sends --examples requests generated to fit the schema and --examples generated to break it
(derandomized: the same requests on every run). Each answer goes through schemathesis' checks: no
server error, a documented status code and content type, a body that fits the schema of that status,
schema-valid requests accepted and invalid ones refused. After the last request the server must still
answer /healthz. It prints one JSON line (requests per operation and status, failures, CPU, date),
appends it to benchmarks/results/fuzz_serve.jsonl, and exits 1 on any failure. A correctness check, not
a timing: any machine, anything else running.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import platform
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seed_
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import Failure, FailureGroup

from serving import alive, record, serving  # beside this script

RESULTS = Path(__file__).parent / "results" / "fuzz_serve.jsonl"
TESTS = Path(__file__).resolve().parents[1] / "tests"
# A request that breaks the schema is refused as the API documents it: 413 when over a served limit (too many or too long
# texts), else 4xx; 5xx is a failure of its own (no server error).
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": ["400", "404", "405", "413", "415", "422"]}}})
# The refusals (422) of schema-valid requests that a JSON schema cannot state: a setting against another one, or against
# the served model. Each is one line that tests/serve checks; any other 422 to a schema-valid request is a failure.
CROSS_FIELD = [
    r"^decode: nbest \(\d+\) must be <= beam \(\d+\)$",  # /v1/translate, /v1/parse, /v1/caption
    r": --target is for Hugging Face models; an attnkit run attends over its own output$",  # /v1/attention on a run
    r": --attribute scores an attnkit run's pieces; leave out --words$",  # /v1/attention on a run
    r": --attribute-target \d+: the (model|output|vocabulary|target) has \d+ (classes|positions|tokens)",  # /v1/attention: output past the model's
]


def fuzz(url: str, examples: int, seed: int = 0) -> dict:
    """Send `examples` schema-fitting and `examples` schema-breaking requests to each operation of the
    server at `url`; the statuses seen (operation -> mode -> status -> count) and each failed check."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=CONFIG)
    statuses: dict[str, dict[str, collections.Counter]] = {}
    failures: list[dict] = []
    refused: collections.Counter = collections.Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            seen = statuses.setdefault(operation.label, {}).setdefault(mode.value, collections.Counter())
            _fuzz_operation(operation, mode, examples, seed, url, seen, failures)
    for failure in [f for f in failures if f["check"].startswith("ST202") and f["status"] == 422]:
        detail = json.loads(failure["response"])["detail"]
        for pattern in (p for p in CROSS_FIELD if re.search(p, detail)):
            failures.remove(failure)
            refused[pattern] += 1
            break
    return {"statuses": {op: {m: dict(c) for m, c in modes.items()} for op, modes in statuses.items()}, "failures": failures, "cross_field": dict(refused)}


def _fuzz_operation(operation, mode: GenerationMode, examples: int, seed: int, url: str, seen: collections.Counter, failures: list[dict]) -> None:
    """Generate and send the requests of one operation in one mode (no shrinking: each failure is kept as sent)."""

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case) -> None:
        response = case.call(base_url=url, timeout=120)
        seen[str(response.status_code)] += 1
        try:
            case.validate_response(response, transport_kwargs={"base_url": url})
        except (Failure, FailureGroup) as e:  # failed checks: kept with the request that caused them
            for failure in e.exceptions if isinstance(e, FailureGroup) else [e]:
                failures.append({"operation": operation.label, "mode": mode.value, "status": response.status_code, "check": f"{failure.code} {failure.title}",
                                 "message": " ".join(str(failure.message).split())[:300], "request": case.as_curl_command(), "response": response.text[:1000]})  # fmt: skip

    try:
        seed_(seed)(send)()
    except Unsatisfiable:  # nothing to break: an operation without parameters or body has no schema-breaking request
        pass


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _load_test_helper(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def tiny_models(folder: Path) -> tuple[list[str], list[str]]:
    """The tests' tiny translation run and classifier, and a tiny random BERT classifier and GPT-2: (runs, hf folders)."""
    runs = _load_test_helper(TESTS / "conftest.py")
    hf = _load_test_helper(TESTS / "sources" / "hf_tiny.py")
    made = [runs.make_tiny_run(folder / "tiny", runs.TINY_TRANSFORMER), runs.make_tiny_run(folder / "sase", runs.TINY_SASE)]
    return [str(p) for p in made], [str(hf.build(name, folder / f"hf-{name}")) for name in ("bert", "gpt2")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", help="run folders to serve (none, and no --hf: the tests' tiny models)")
    p.add_argument("--hf", action="append", default=[], metavar="SOURCE", help="a Hugging Face model folder or hub id (repeat for more)")
    p.add_argument("--examples", type=int, default=60, help="requests per operation and mode (schema-fitting, schema-breaking)")
    p.add_argument("--seed", type=int, default=0, help="another seed gives other requests")
    p.add_argument("--no-save", action="store_true", help="print only; do not append to " + str(RESULTS))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs, hf = (args.runs, args.hf) if args.runs or args.hf else tiny_models(Path(tmp))
        with serving([*runs, *(a for s in hf for a in ("--hf", s))]) as (url, _):
            began = time.monotonic()
            found = fuzz(url, args.examples, args.seed)
            ok_after = alive(url)
    requests = sum(n for modes in found["statuses"].values() for c in modes.values() for n in c.values())
    result = {
        "benchmark": "fuzz_serve", "requests": requests, "failures": len(found["failures"]), "alive_after": ok_after,
        "server_errors": sum(n for modes in found["statuses"].values() for c in modes.values() for s, n in c.items() if s.startswith("5")),
        "examples": args.examples, "seed": args.seed, "runs": [Path(r).name for r in runs], "hf": [Path(s).name for s in hf],
        "seconds": round(time.monotonic() - began, 1), "schemathesis": schemathesis.__version__,
        "cpu": cpu_name(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "statuses": found["statuses"], "cross_field": found["cross_field"], "failed": found["failures"],
    }  # fmt: skip
    record(result, RESULTS, save=not args.no_save)
    if result["failures"] or result["server_errors"] or not ok_after:
        sys.exit(1)


if __name__ == "__main__":
    main()
