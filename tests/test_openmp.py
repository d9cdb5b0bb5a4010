"""How OpenMP's threads wait (attnkit.openmp): the `attnkit` command chooses PASSIVE before torch loads
libgomp, unless the user chose; `attnkit doctor` says which."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnkit.openmp import MARKER, choose_wait_policy, wait_policy


@pytest.mark.parametrize("user", [{}, {"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "300000"}])
def test_passive_unless_the_user_chose(user):
    environ = dict(user)
    choose_wait_policy(environ)
    assert environ == (user or {"OMP_WAIT_POLICY": "PASSIVE", MARKER: "PASSIVE"})


def test_doctor_words_name_who_chose():
    assert wait_policy({"OMP_WAIT_POLICY": "PASSIVE", MARKER: "PASSIVE"}).startswith("OMP_WAIT_POLICY=PASSIVE, chosen by attnkit")
    assert wait_policy({"OMP_WAIT_POLICY": "ACTIVE", MARKER: "PASSIVE"}) == "OMP_WAIT_POLICY=ACTIVE, as set in the environment"
    assert wait_policy({"GOMP_SPINCOUNT": "1000"}) == "GOMP_SPINCOUNT=1000, as set in the environment"
    assert wait_policy({}).startswith("libgomp's default")


def doctor(**settings: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", MARKER)}
    env.update(settings, OMP_DISPLAY_ENV="TRUE")  # libgomp prints the settings it read when torch loaded it
    return subprocess.run([sys.executable, "-m", "attnkit", "doctor"], capture_output=True, text=True, env=env, timeout=300)


def test_the_command_sets_it_before_torch_loads_libgomp():
    done = doctor()
    assert done.returncode == 0, done.stderr
    assert "  OMP_WAIT_POLICY = 'PASSIVE'" in done.stderr
    assert "OpenMP waiting threads: OMP_WAIT_POLICY=PASSIVE, chosen by attnkit" in done.stdout
    done = doctor(OMP_WAIT_POLICY="ACTIVE")
    assert "  OMP_WAIT_POLICY = 'ACTIVE'" in done.stderr
    assert "OpenMP waiting threads: OMP_WAIT_POLICY=ACTIVE, as set in the environment" in done.stdout
