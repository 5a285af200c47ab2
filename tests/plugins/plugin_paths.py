"""Paths shared by the plugin tests: the repository root and the example plugin package."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugin"
