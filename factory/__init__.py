"""The factory: repository -> environment (image, baseline, coverage map) -> bugs -> task instances.

Entry points: `build_environment` (stage 1)."""

from bugforge.factory.environment import build_environment  # noqa: F401
