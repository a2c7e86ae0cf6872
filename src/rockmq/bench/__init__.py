"""`rockmq bench`: drive a running broker over the RocketMQ 5 gRPC protocol and print figures, each beside its ceiling.

Point it at a broker (`--endpoint`) and pick a scenario (docs/benchmarks.md says what each does and
how to read the figures). Beside every scenario it runs the same load against a null broker it
starts itself (rockmq's gRPC services doing nothing: what no broker could beat on this machine)
and prints the ratios; `--no-ceiling` skips that, `--scenario ceiling` measures only the ceilings.

On a 2-core machine the load generator competes with the broker for CPU, and a single Python
process tops out near the broker's own unary-call ceiling (docs/architecture.md §7). So the client keeps
per-message work small (messages are copied from a template, ids come from a counter), can split
the load over `--processes`, and reports its own CPU next to the broker's: a figure only measures
the broker when the client has CPU to spare. Broker CPU and RSS come from /proc (`--broker-pid`, or
the process listening on the endpoint's port).

Modules: options (flags), jobs (Job, Tally), wire (the raw gRPC calls), load (raw load loops), own
(loops through rockmq's client), workers (processes, CPU sampling), scenarios, ceiling (+ null_broker,
rocks_ceiling: the ceiling servers), probe (/proc), report (figures, ratios, lines), cli.
"""
