"""Pictures: the domain's execution graph and a plan, as Mermaid, Graphviz DOT or PNG (matplotlib).

- :mod:`planner.drawing.export`: ``to_mermaid``, ``to_dot``, ``draw_png``, ``acquisition_tree``, ``plan_graph``.
"""

__all__ = ["export"]
