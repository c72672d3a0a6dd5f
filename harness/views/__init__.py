"""How results look: the house style of every figure (`style`: colours, head grids, layer
lines, titles, saving PNG and PDF) and its font (`font`). Nothing here imports torch, so the
commands that only draw start in a fraction of the time a run does."""
