"""The wheel and the sdist, installed outside the repository (`make wheel-check`, a step of `make test`).

Builds both with `python -m build` (the wheel from the sdist, so a file the sdist lacks is missing from
the wheel too), runs `twine check` on them, and checks that every file git tracks under src/attnkit
is in each. Then, for each, a new venv in a temporary folder: the package installed there with
`--no-deps`, its dependencies seen through a `.pth` line naming this interpreter's site-packages (a
path line, so the editable install of attnkit there is never read, and torch is not installed
again), `attnkit.__file__` checked to lie inside that venv, and every package file checked to be
installed. In the wheel's venv, from a temporary folder: `attnkit doctor`, `presets`, a few updates
of `train toy-reverse`, `report`, `plot --metrics`, `init classification` on examples/, and `serve`
on a free local port: every page its navigation links to, every /static file those pages load,
/v1/models and one POST /v1/translate. Any failure is one line naming the step, and exit code 1.

    python scripts/check_wheel.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "attnkit"
SERVE_START_S = 120  # loading torch and the run on a busy 2-core machine
TRAIN_SETS = ("train.max_steps=4", "train.eval_every=2", "train.eval_decode=false", "train.log_every=1", "train.max_minutes=null")


class CheckFailed(Exception):
    """One step failed: the message says which and why."""


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, what: str | None = None) -> str:
    """Run `args`; its standard output, or `CheckFailed` with the end of its output."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise CheckFailed(f"{what or ' '.join(args)}: exit code {done.returncode}\n{tail}")
    return done.stdout


def tracked_files() -> set[str]:
    """The package's files as git tracks them, named as inside a wheel (attnkit/...)."""
    names = run(["git", "ls-files", f"src/{PACKAGE}"], ROOT, what="git ls-files").split()
    return {name.removeprefix("src/") for name in names}


def clean_copy(to: Path) -> Path:
    """The files git tracks (as they are in the work tree) copied to `to`: a tree as a fresh clone has it, without the
    egg-info that an editable install leaves in src/ (setuptools reads its file list back into the sdist)."""
    for name in run(["git", "ls-files", "-z"], ROOT, what="git ls-files").split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def build(out: Path) -> tuple[Path, Path]:
    """The sdist and the wheel (built from the sdist) in `out`, from a clean copy of the tree."""
    tree = clean_copy(out.parent / "tree")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)], tree, what="python -m build")
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise CheckFailed(f"python -m build: expected one sdist and one wheel in {out}, got {[p.name for p in out.iterdir()]}")
    return sdists[0], wheels[0]


def check_contents(sdist: Path, wheel: Path, tracked: set[str]) -> None:
    """Every tracked package file is in the wheel and in the sdist (under src/)."""
    with zipfile.ZipFile(wheel) as z:
        in_wheel = set(z.namelist())
    with tarfile.open(sdist) as t:
        in_sdist = {name.split("/", 1)[1].removeprefix("src/") for name in t.getnames() if "/" in name}
    for archive, names in ((wheel, in_wheel), (sdist, in_sdist)):
        missing = sorted(tracked - names)
        if missing:
            raise CheckFailed(f"{archive.name}: {len(missing)} package file(s) missing ({', '.join(missing[:5])}); "
                              "see [tool.setuptools.package-data] in pyproject.toml")  # fmt: skip


def make_venv(folder: Path, artifact: Path, tracked: set[str]) -> Path:
    """A venv in `folder` with `artifact` installed (--no-deps) over this interpreter's packages; its python."""
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    purelib = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], folder).strip())
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (purelib / "_attnkit_check_deps.pth").write_text("".join(f"{path}\n" for path in deps))
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--no-build-isolation", "--quiet"]
    run([*pip, str(artifact)], folder, clean_env(folder), what=f"pip install {artifact.name}")
    where = run([str(python), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"], folder, clean_env(folder)).strip()
    if not Path(where).resolve().is_relative_to(folder.resolve()):
        raise CheckFailed(f"{artifact.name}: `import {PACKAGE}` in the new venv reads {where}, not the installed copy under {folder}")
    missing = sorted(name for name in tracked if not (purelib / name).is_file())
    if missing:
        raise CheckFailed(f"{artifact.name}: installed without {', '.join(missing[:5])}")
    return python


def clean_env(folder: Path) -> dict[str, str]:
    """The environment for the venv in `folder`: its bin first, nothing that points back at the repository."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{folder / 'bin'}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(folder), "OMP_NUM_THREADS": "1"}


def commands(folder: Path, work: Path) -> Path:
    """Run the user's commands from `work` with the venv's `attnkit`; the trained run."""
    env = clean_env(folder)
    attnkit = str(folder / "bin" / "attnkit")
    examples = ROOT / "examples" / "classification"
    run_dir = work / "run"
    sets = [word for s in TRAIN_SETS for word in ("--set", s)]
    steps = [
        ["doctor"],
        ["presets"],
        ["train", "toy-reverse", "--out", str(run_dir), *sets],
        ["report", str(run_dir), "a b c", "--out", str(work / "report.html")],
        ["plot", str(run_dir), "--metrics", "--out", str(work / "curves.png")],
        ["init", "classification", "--train", str(examples / "train.csv"), "--valid", str(examples / "valid.csv"), "--out", str(work / "my.yaml")],
    ]
    for step in steps:
        run([attnkit, *step], work, env, what=f"attnkit {step[0]} (installed wheel)")
    for made in ("report.html", "curves.png", "my.yaml"):
        if not (work / made).stat().st_size:
            raise CheckFailed(f"{made}: written empty")
    return run_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, body: dict | None = None) -> str:
    """GET `url` (POST `body` as JSON); the text, or `CheckFailed`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read().decode()
    except OSError as e:
        raise CheckFailed(f"attnkit serve (installed wheel): {url}: {e}") from None


def wait_up(base: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVE_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CheckFailed(f"attnkit serve (installed wheel): exited with code {server.returncode} before it answered")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise CheckFailed(f"attnkit serve (installed wheel): no answer on {base}/healthz within {SERVE_START_S} s")


def check_pages(base: str) -> int:
    """Every page the home page's navigation links to, and every /static file each loads; the number of files fetched."""
    home = fetch(base + "/")
    pages = {"/", *re.findall(r'href="(/[a-z-]*)"', home)}
    assets: set[str] = set()
    for page in sorted(pages):
        html = fetch(base + page)
        assets |= set(re.findall(r'(?:src|href)="(/static/[^"]+)"', html))
    if len(pages) < 4 or not assets:
        raise CheckFailed(f"attnkit serve (installed wheel): the home page links to {sorted(pages)} and loads {sorted(assets)}: too few")
    for asset in sorted(assets):
        fetch(base + asset)
    return len(pages) + len(assets)


def check_serve(folder: Path, work: Path, run_dir: Path) -> int:
    """`attnkit serve RUN` on a free port: pages, assets and the API; stopped after. The number of URLs fetched."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (work / "serve.log").open("w")
    server = subprocess.Popen([str(folder / "bin" / "attnkit"), "serve", str(run_dir), "--port", str(port)], cwd=work, env=clean_env(folder),
                              stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_up(base, server)
        fetched = check_pages(base)
        models = json.loads(fetch(base + "/v1/models"))
        answer = json.loads(fetch(base + "/v1/translate", {"texts": ["a b c"]}))
        if [m["name"] for m in models] != [run_dir.name] or len(answer["results"]) != 1:
            raise CheckFailed(f"attnkit serve (installed wheel): /v1/models {models}, /v1/translate {answer}")
        return fetched + 2
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def check(tmp: Path) -> None:
    started = time.monotonic()
    tracked = tracked_files()
    sdist, wheel = build(tmp / "dist")
    run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], tmp, what="twine check")
    check_contents(sdist, wheel, tracked)
    make_venv(tmp / "sdist-venv", sdist, tracked)
    folder, work = tmp / "wheel-venv", tmp / "work"
    make_venv(folder, wheel, tracked)
    work.mkdir()
    run_dir = commands(folder, work)
    fetched = check_serve(folder, work, run_dir)
    print(f"check_wheel: {wheel.name} and {sdist.name} hold all {len(tracked)} package files, pass twine check and install alone; "
          f"the wheel's doctor, presets, train, report, plot, init and serve ({fetched} URLs) work ({time.monotonic() - started:.0f} s)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR (kept) instead of a temporary folder")
    args = parser.parse_args()
    try:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=False)
            check(args.keep.resolve())
        else:
            with tempfile.TemporaryDirectory(prefix="attnkit-wheel-") as tmp:
                check(Path(tmp))
    except CheckFailed as e:
        print(f"check_wheel: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
