"""`rockmq bench` (and `python -m rockmq.bench`): run the chosen scenarios, each beside its ceiling."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from rockmq.bench import __doc__ as DESCRIPTION
from rockmq.bench.ceiling import CeilingError, Ceilings
from rockmq.bench.options import SCENARIOS, Options, parse_args
from rockmq.bench.probe import find_broker
from rockmq.bench.report import Figures, combined, render, render_storage
from rockmq.bench.scenarios import run_scenario
from rockmq.bench.wire import CONNECT_TIMEOUT, reachable


def failed(figures: Figures) -> bool:
    return bool(figures.get("errors") or figures.get("prefill_errors"))


def run(opts: Options, say: Callable[[list[str]], None]) -> tuple[dict[str, Figures], dict[str, Any]]:
    """The scenarios' figures (with ratios) and the ceilings' figures; `say` prints progress lines."""
    chosen = () if opts.scenario == "ceiling" else SCENARIOS if opts.scenario == "all" else (opts.scenario,)
    results: dict[str, Figures] = {}
    with contextlib.ExitStack() as stack:
        wanted = opts.scenario == "ceiling" or (opts.ceiling and opts.scenario != "soak")  # soak has no ceiling
        ceilings = Ceilings(opts, stack) if wanted else None
        for scenario in chosen:
            rounds, ceiling_rounds = [], []
            for _ in range(opts.repeats):  # the broker's round, then the ceilings', then again
                rounds.append(run_scenario(opts, scenario))
                if ceilings is not None:
                    ceiling_rounds.append(ceilings.measure(scenario))
            figures = combined(rounds)
            if ceilings is not None:
                ceilings.record(scenario, ceiling_rounds)
                figures = ceilings.beside(scenario, figures)
            results[scenario] = figures
            say(render(scenario, figures))
        if ceilings is None:
            return results, {}
        if opts.scenario == "ceiling":
            for scenario in SCENARIOS:
                ceilings.record(scenario, [ceilings.measure(scenario) for _ in range(opts.repeats)])
                say([line for key in ("null", "null_fsync") if scenario in ceilings.figures[key]
                     for line in render(f"ceiling {key} {scenario}", ceilings.figures[key][scenario])])
        if opts.scenario in ("all", "ceiling"):  # one scenario gets its own ceilings only
            ceilings.building_blocks()
            say(render("ceiling stream (ReceiveMessage frames, no ack)", ceilings.figures["stream"]))
            say([render_storage(ceilings.figures["rocksdb"])])
        return results, ceilings.figures


def main(argv: list[str] | None = None) -> int:
    """Run the chosen scenarios; exit status 1 if any message failed."""
    opts = parse_args(argv, (DESCRIPTION or "").split("\n\n")[0])
    note = f"broker PID {opts.broker_pid} (--broker-pid)"
    if opts.scenario == "ceiling":
        note = "no broker: ceilings only"
    elif not reachable(opts.endpoint, opts.tls):
        print(f"rockmq bench: no broker answers at {opts.endpoint} (waited {CONNECT_TIMEOUT:.0f} s)", file=sys.stderr)
        return 1
    elif opts.broker_pid is None:
        pid, note = find_broker(opts.endpoint, wait_s=CONNECT_TIMEOUT)
        opts = dataclasses.replace(opts, broker_pid=pid)

    def say(lines: list[str]) -> None:
        if not opts.json:
            print("\n".join(lines), flush=True)

    load = [round(x, 2) for x in os.getloadavg()]
    say([f"{note}; load average {load[0]:.2f} (the machine's other work competes with every figure)"])
    try:
        results, ceilings = run(opts, say)
    except CeilingError as exc:
        print(f"rockmq bench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the ceiling servers are stopped on the way out
        print("rockmq bench: interrupted", file=sys.stderr)
        return 130
    if opts.json:
        print(json.dumps({"endpoint": opts.endpoint, "broker_pid": opts.broker_pid, "broker": note,
                          "load_average": {"start": load, "end": [round(x, 2) for x in os.getloadavg()]},
                          "options": dataclasses.asdict(opts), "scenarios": results, "ceiling": ceilings}, indent=2))
    measured = [*results.values(), *ceilings.get("null", {}).values(), *ceilings.get("null_fsync", {}).values()]
    if "stream" in ceilings:
        measured.append(ceilings["stream"])
    return 1 if any(failed(figures) for figures in measured) else 0
