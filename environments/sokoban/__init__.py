"""Sokoban: push every box onto a target (rooms by reverse play, an A* solver as the expert)."""
