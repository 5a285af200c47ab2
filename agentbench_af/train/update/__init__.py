"""The RL update: scoring a collected batch and the PPO/GRPO update (`step`), the update loop (`ppo`), the
loss pieces (`loss`), the separate critic (`critic`) and what an update changes (`learner`)."""
