"""TextWorld: games generated offline by textworld's own challenges (cooking, treasure hunter, coin collector).

Games are generated on first use per (challenge, level, seed) and cached on disk; the engine is
textworld's Inform7/Z-machine stack. Inside this package the library is always imported absolutely
(`import textworld`), never relatively: this package is `agentbench_af.environments.textworld`.
"""
