"""The generic `attnkit` verbs (train, config, average, demo, data, evaluate, plot, report, serve).

Each module adds its subparsers with `add(sub)`; every verb loads its inputs and calls one library
function. Verbs of one family (translate, classify, ...) come from the family (`add_commands`).
"""
