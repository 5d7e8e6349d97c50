"""Training: GRPO on SWE tasks with test-pass rewards (TRL GRPOTrainer + rollout_func, tool tokens
masked) and SFT on successful trajectories. Entry points: `train_grpo`, `train_sft`."""

from bugforge.training.config import GRPOTrainConfig, SFTTrainConfig, load_config  # noqa: F401
