"""bugforge: a containerized SWE-task factory and code-agent RL gym."""

__version__ = "0.1.0"
