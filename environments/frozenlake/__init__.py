"""FrozenLake: reach the goal without falling into a hole (gymnasium dynamics, random maps)."""
