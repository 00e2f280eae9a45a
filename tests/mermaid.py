"""A strict parser for the Mermaid flowchart subset `planner draw` emits (shared by the picture and graph tests)."""

import re

_NODE = re.compile(r'^\s+(n\d+)(\["[^"]*"\]|\("[^"]*"\)|\{"[^"]*"\}|\[\["[^"]*"\]\]|\(\["[^"]*"\]\))$')
_EDGE = re.compile(r"^\s+(n\d+) -->(?:\|\"([^\"]*)\"\|)? (n\d+)$")
_SUB = re.compile(r'^\s+subgraph (\w+)\["([^"]*)"\]$')


def parse_mermaid(text: str, direction: str = "LR"):
    """A strict parser for the flowchart subset we emit: nodes, labelled edges, subgraphs."""
    lines = text.splitlines()
    assert lines[0] == f"flowchart {direction}"
    nodes, edges, groups, depth = {}, [], [], 0
    for line in lines[1:]:
        if m := _SUB.match(line):
            groups.append(m.group(2))
            depth += 1
            continue
        if line.strip() == "end":
            depth -= 1
            assert depth >= 0
            continue
        if m := _NODE.match(line):
            assert m.group(1) not in nodes, f"node {m.group(1)} defined twice"
            shape = m.group(2)
            opening = 2 if shape[:2] in ("[[", "([") else 1
            nodes[m.group(1)] = (shape[:opening], shape[opening + 1:-(opening + 1)])  # (shape, label)
            continue
        m = _EDGE.match(line)
        assert m, f"not mermaid flowchart syntax: {line!r}"
        assert m.group(1) in nodes and m.group(3) in nodes, f"edge to an undefined node: {line!r}"
        edges.append((m.group(1), m.group(3), m.group(2)))
    assert depth == 0
    return nodes, edges, groups
