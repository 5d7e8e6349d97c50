# The two commands a newcomer needs (README): `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo test integrations
setup:
	bash scripts/setup.sh
demo: setup
	bugforge demo
test: setup integrations
	python3 -m pytest -q $(PYTEST_ARGS)
# The third-party harnesses the integration tests run, pinned, each in its own environment (reused when present).
integrations:
	bash scripts/setup-minisweagent.sh >/dev/null
	bash scripts/setup-harbor.sh >/dev/null
