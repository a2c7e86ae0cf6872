"""Regenerate deploy/prometheus/rules.yml from rockmq's one table of alert rules (src/rockmq/ui/alerts.py
RULES), which the dashboard's overview evaluates too (run after editing a rule)."""

from __future__ import annotations

from pathlib import Path

from rockmq.ui.alerts import rules_yaml

RULES_FILE = Path(__file__).resolve().parent.parent / "deploy" / "prometheus" / "rules.yml"

if __name__ == "__main__":
    RULES_FILE.write_text(rules_yaml())
    print(f"wrote {RULES_FILE}")
