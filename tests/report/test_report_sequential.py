"""The report's "Adaptive evaluation" section (evalnoise.report.sequential_section)."""

from __future__ import annotations

from html.parser import HTMLParser

from evalnoise.report.sequential_section import sequential_section


def summary(**overrides):
    base = {
        "enabled": True,
        "target": "accuracy",
        "goal": 0.2,
        "rounds": 7,
        "settings": {"max_tasks": 48, "max_trials_per_task": 4},
        "groups": {
            "chat@3x": {"rounds": 4, "tasks": 24, "trials": 30, "fixed_design_trials": 192},
            "tool_agent@3x": {"rounds": 7, "tasks": 42, "trials": 48, "fixed_design_trials": 192},
        },
        "units": [
            {"unit": "chat@3x", "groups": ["chat@3x"], "round": 3, "status": "target_met",
             "reason": "target met: half-width 0.1713 <= 0.2 (24 tasks)", "estimate": 0.083,
             "ci_low": 0.0, "ci_high": 0.3426, "achieved": 0.1713},
            {"unit": "tool_agent@3x", "groups": ["tool_agent@3x"], "round": 6,
             "status": "budget_spent", "reason": "budget spent: <1 left", "estimate": 0.44,
             "ci_low": 0.2423, "ci_high": 0.6412, "achieved": 0.1995},
        ],
    }  # fmt: skip
    return base | overrides


class Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self._row, self._in = [], None, False
        self.classes = []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row = []
            self.classes.append(dict(attrs).get("class"))
        elif tag in ("td", "th"):
            self._in = True
            self._row.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in = False
        elif tag == "tr":
            self.rows.append(self._row)

    def handle_data(self, data):
        if self._in:
            self._row[-1] += data


def cells(html_text):
    parser = Cells()
    parser.feed(html_text)
    return parser


def test_one_row_per_agent_with_why_when_and_how_precise():
    text = sequential_section(summary())
    parsed = cells(text)
    assert parsed.rows[1] == [
        "chat@3x",
        "target met",
        "3",
        "24",
        "30 of 192",
        "8.3 % [0.0 %, 34.3 %]",
        "0.171 (goal 0.2)",
    ]
    assert parsed.rows[2][1] == "target met: half-width 0.1713 <= 0.2 (24 tasks)"
    assert parsed.rows[3][1] == "budget spent"
    assert parsed.classes[3] == "warn"  # a stop without the precision reached stands out
    assert "budget spent: &lt;1 left" in text  # reasons are escaped
    assert "anytime-valid" in text


def test_every_round_decision_is_listed_when_given():
    rounds = [{"round": 0, "unit": "chat@3x", "reason": "continue with more tasks"}]
    text = sequential_section(summary(), rounds)
    assert "<li>round 0, chat@3x: continue with more tasks</li>" in text


def test_a_fixed_design_has_no_section():
    assert sequential_section(None) == ""
    assert sequential_section({"enabled": False, "units": [], "groups": {}}) == ""


def test_the_icc_target_says_it_is_not_anytime_valid():
    text = sequential_section(summary(target="icc", goal=0.03))
    assert "SE(ICC)" in text and "not an anytime-valid interval" in text
    assert "0.083 [0.000, 0.343]" in text
