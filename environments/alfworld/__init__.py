"""ALFWorld: household tasks in text (the alfworld package's ALFRED PDDL domain and grammar).

Tasks are generated here from the shipped domain, grammar, scene layouts and object constants (the
official task files need a download), or loaded from the official files when `ALFWORLD_DATA` has them.
"""
