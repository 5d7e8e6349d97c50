"""What a patch may not change before tests run, for every grader (docs/security.md)."""

from __future__ import annotations

# files a patch could plant to change how pytest or Python starts: removed before tests run
PLANTED = r"(^|/)(conftest\.py|sitecustomize\.py|usercustomize\.py|[^/]*\.pth|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$"
# test configuration: restored from the instance's commit before tests run
CONFIG_NAMES = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
