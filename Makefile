# The two commands a newcomer needs (README): `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo test
setup:
	bash scripts/setup.sh
demo: setup
	bugforge demo
test: setup
	python3 -m pytest -q $(PYTEST_ARGS)
