"""What both the factory and the sandbox use to run tests in containers: test runs and the warm
Workbench, the coverage/lookup map and test selection, patch utilities, and grading (pure functions)."""
