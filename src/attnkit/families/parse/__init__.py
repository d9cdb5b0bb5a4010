"""Constituency parsing as sequence-to-sequence (Vaswani et al. 2017, sec. 6.3; Vinyals et al. 2015).

A pure layer (standard library and `attnkit.errors` only): `trees` reads and preprocesses Penn
Treebank trees, `linear` turns them into symbol sequences and back (with the constraint state a
constrained beam search needs), `evalb` scores parses exactly as EVALB (Sekine & Collins 1997)
does, and `baseline` gives the right-branching trees to compare against.
"""
