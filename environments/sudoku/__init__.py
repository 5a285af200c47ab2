"""Sudoku 4x4: fill a 4x4 grid (2x2 boxes) so every row, column and box holds 1-4 once."""
