"""Collectives in partitioned dumps: what each one is, which devices it joins, what it costs.

    model.py    a parsed collective (kind, groups, pairs, shapes, dtype, location)
    groups.py   replica groups in XLA's three spellings, source_target_pairs, axis groups
    scan.py     the streaming scan of HLO text and Shardy MLIR → CollectiveModules
    cost.py     bytes each device sends and receives (pure arithmetic)
    axes.py     which axes of a mesh give a collective's groups
    report.py   per module and per op_name totals, JSON

Data flows one way: text → model (scan) → cost and axes → report → rendering
(`render/comms_text.py`) and checks (MD201-MD203).
"""
