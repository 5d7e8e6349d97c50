"""Training: GRPO on SWE tasks with test-pass rewards (TRL GRPOTrainer, through rollout_func with tool
tokens masked, or through TRL's environment_factory with the tool environment in `toolenv`) and SFT on
successful trajectories. Entry points: `train_grpo`, `train_sft`, `toolenv.ToolEnvFactory`."""

from bugforge.training.config import GRPOTrainConfig, SFTTrainConfig, load_config  # noqa: F401
