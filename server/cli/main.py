"""`python run.py [serve|route|validate|reindex|mcp|fit-thresholds|tune-encoder] ...`: one entry point,
subcommands per job; `serve` is the default, and its options work without its name (`python run.py --port 9000`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from ..config.errors import ConfigError
from ..runtime.heap import pin_mmap_threshold
from ..runtime.loader import load_config
from .failures import EXPECTED, report

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "config"
DEFAULT_COMMAND = "serve"
GLOBAL_OPTIONS_WITH_VALUE = ("--config", "--log-level")  # the options given before a command
DEFAULT_ADAPTER = "default: server.default_adapter, else the first composite, else the first adapter"


def _parser() -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser and its command names. Every command has a description (its --help says what it does)
    and every option a help text: tests/unit/test_cli_reference.py and tests/test_docs.py
    hold run.py and docs/cli.md to this list."""
    parser = argparse.ArgumentParser(
        prog="run.py",
        description="Intent Router: routes natural-language questions to query templates and runs them.",
        epilog="serve is the default command; its options work without its name: run.py --port 9000",
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="config file or directory")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = _command(
        sub,
        "serve",
        "serve HTTP (the default)",
        "Serve the JSON API, /mcp, /dashboard, /docs and /metrics; reload when the YAML files change.",
    )
    serve.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: server.port, 8080)")
    serve.add_argument(
        "--workers", type=int, default=1, help="pre-forked processes sharing the port (SO_REUSEPORT), one model each"
    )
    serve.add_argument("--no-watch", action="store_true", help="do not reload when the YAML files change")
    route = _command(
        sub,
        "route",
        "print the routing decision (test_routing) for a question",
        "Route one question and print what POST /v1/test_routing answers (every candidate and score, the "
        "decision and why), or with --execute what POST /v1/query answers. Nothing listens.",
    )
    route.add_argument("question", help="the question, in quotes")
    route.add_argument("--adapter", help=f"the adapter to ask ({DEFAULT_ADAPTER})")
    route.add_argument("--execute", action="store_true", help="run the query and print the /v1/query response")
    validate = _command(
        sub,
        "validate",
        "check all YAML and every template against its source; exit 1 with file:line messages",
        "Load and check config.yaml, every adapter file and every template library as a server would (keys, "
        "types, bounds, parameters, query bodies, ${VAR} substitution), and check each template against its "
        "live source (SQL bodies planned or prepared, MongoDB collections and Elasticsearch indexes looked "
        "up; nothing runs, nothing is written) without binding a port. Prints a summary and exits 0 (a source "
        "that is down is reported as unchecked on stderr), or prints every problem as file:line and exits 1.",
    )
    reindex = _command(
        sub,
        "reindex",
        "rebuild every template store from scratch",
        "Empty every template store and index all templates again (vectors come from the embedding cache "
        "where the model already embedded the text); prints what was indexed as JSON.",
    )
    mcp = _command(
        sub,
        "mcp",
        "serve the MCP tools over stdio (for desktop assistants)",
        "Serve the MCP tools ask, explain_routing and list_templates over stdio, for a desktop assistant "
        "that launches this command; logs go to stderr, and the YAML files are watched as by serve.",
    )
    mcp.add_argument("--no-watch", action="store_true", help="do not reload when the YAML files change")
    fit = _command(
        sub,
        "fit-thresholds",
        "fit the confidence threshold and margin from labelled questions; report the acceptance self-calibration",
        "Route labelled questions with the server's own code and print, as JSON, the current accuracy, the "
        "confidence threshold (and ambiguity margin) that maximise it, and the questions the chosen threshold "
        "gets wrong with what to change where; with composite_retrieval.acceptance on, also the acceptance "
        "test's self-calibration and the threshold the labels fit. Without --labelled it prints the "
        "self-calibration alone. --write puts the fitted values into the adapter's YAML.",
    )
    fit.add_argument(
        "--labelled",
        type=Path,
        help="YAML questions: [{question, adapter, template}] (template null: must be rejected)",
    )
    fit.add_argument("--adapter", help=f"the adapter to fit ({DEFAULT_ADAPTER})")
    fit.add_argument(
        "--write",
        action="store_true",
        help="write the fitted values into the adapter's YAML entry (comments kept, a .bak beside it)",
    )
    tune = _command(
        sub,
        "tune-encoder",
        "tune the local encoder on the templates' examples (needs requirements-tune.txt)",
        "Fine-tune the local sentence encoder (all-MiniLM-L6-v2, or the embedding.model_path folder's base) on "
        "the templates' descriptions and nl_examples with a contrastive loss (pairs of one template's texts; the "
        "other templates in the batch, grouped with their nearest neighbours, as negatives), on CPU with JAX, "
        "within --max-seconds. Holds out examples within templates to validate; shows progress on stderr; writes "
        "a model folder (weights, tokenizer, manifest) and prints JSON whose last line names it as model_path. "
        "Serve it with embedding.model_path. Out-of-scope anchors (config `tune:`, --out-of-scope, and write "
        "commands made from the templates' own texts) are pushed below every template's texts.",
    )
    tune.add_argument("--out", type=Path, help="the folder to write (default: data/tuned-encoder beside config/)")
    tune.add_argument("--max-seconds", type=float, help="training time budget (default: tune.max_seconds, 600)")
    tune.add_argument("--steps", type=int, help="training steps at most (default: tune.steps, 300)")
    tune.add_argument(
        "--validation", type=float, default=0.15, help="share of each template's examples held out (default 0.15)"
    )
    tune.add_argument("--seed", type=int, default=0, help="random seed of the split and the batches (default 0)")
    tune.add_argument(
        "--out-of-scope",
        type=Path,
        help="questions no template may answer (YAML list, or one a line), added to the config's tune.out_of_scope",
    )
    for command in (serve, route, validate, reindex, mcp, fit, tune):  # `route ... --config PATH` works as well
        command.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="config file or directory")
    return parser, set(sub.choices)


def _command(sub: argparse._SubParsersAction, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subcommand: `summary` in the command list of run.py --help, `description` atop its own --help."""
    return sub.add_parser(name, help=summary, description=description)


def with_default_command(argv: list[str], commands: set[str]) -> list[str]:
    """`serve` is the default command, so its options work without its name: `run.py --port 9000` is
    `run.py serve --port 9000`. The command goes after the global options, where argparse expects it."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in GLOBAL_OPTIONS_WITH_VALUE:
            i += 2
        elif arg.startswith(tuple(f"{option}=" for option in GLOBAL_OPTIONS_WITH_VALUE)):
            i += 1
        else:
            break
    if i >= len(argv) or argv[i] in commands or argv[i] in ("-h", "--help") or not argv[i].startswith("-"):
        return argv  # a command named, nothing after the global options, help, or a word argparse will judge
    return [*argv[:i], DEFAULT_COMMAND, *argv[i:]]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, commands = _parser()
    args = parser.parse_args(with_default_command(argv, commands))
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    pin_mmap_threshold()  # before the runtime's arrays: a steady RSS (runtime/heap.py)
    command = args.command or DEFAULT_COMMAND
    try:
        if command == "validate":
            return _validate(args.config)
        if command == "route":
            return asyncio.run(_route(args.config, args.question, args.adapter, args.execute))
        if command == "fit-thresholds":
            from .fit import fit_command

            print(json.dumps(asyncio.run(fit_command(args.config, args.labelled, args.adapter, args.write)), indent=2))
            return 0
        if command == "tune-encoder":
            from .tune import tune_command

            body = tune_command(
                args.config, args.out, args.max_seconds, args.steps, args.validation, args.seed, args.out_of_scope
            )
            print(json.dumps(body))
            return 0
        if command == "mcp":
            from ..mcp.stdio import serve_stdio

            asyncio.run(serve_stdio(args.config, watch=not args.no_watch))
            return 0
        if command == "reindex":
            return asyncio.run(_reindex(args.config))
        from .serve import serve

        return serve(
            args.config,
            getattr(args, "host", None),
            getattr(args, "port", None),
            getattr(args, "workers", 1),
            watch=not getattr(args, "no_watch", False),
        )
    except EXPECTED as exc:  # said without a traceback
        code = report(exc)
        assert code is not None
        return code


def _validate(config: Path) -> int:
    """Load and check everything a server would load, and check every template against its live source
    (runtime/source_checks.py), without embedding, indexing or binding a port. A source that is down is
    reported as unchecked (a warning), not as an error."""
    from ..runtime.encoder_check import encoder_warnings
    from ..runtime.model_mix import mixed_model_warnings
    from ..runtime.reload_guard import start_issues
    from ..runtime.source_checks import check_config_sources

    loaded = load_config(config)
    refused = start_issues(loaded)
    if refused:
        raise ConfigError(refused)
    checks = asyncio.run(check_config_sources(loaded))  # a template its source refuses: ConfigError, exit 1
    count = sum(len(t) for t in loaded.templates.values())
    warnings = mixed_model_warnings(loaded) + encoder_warnings(loaded)
    for warning in warnings + [w for c in checks if (w := c.warning()) is not None]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"OK: {len(loaded.adapters)} adapters, {count} templates, {len(loaded.files)} files")
    checked = sum(c.templates for c in checks if c.status == "checked")
    print(f"checked against their sources: {checked} of {count} templates")
    return 0


async def _route(config: Path, question: str, adapter_name: str | None, execute: bool) -> int:
    from ..runtime.build import build_runtime
    from ..service import answer as answering

    runtime = await build_runtime(load_config(config))
    try:
        adapter = runtime.get(adapter_name) if adapter_name else runtime.default_adapter()
        if execute:
            body = (await answering.answer(adapter, question)).response.dump()
        else:
            body = (await answering.explain_routing(adapter, question)).response.dump()
        print(json.dumps(body, indent=2, default=str))
        return 0
    finally:
        await runtime.close()


async def _reindex(config: Path) -> int:
    """Empty every template store and index all templates again (vectors still come from the
    embedding cache where the model already embedded the text)."""
    from ..runtime.build import build_runtime

    loaded = load_config(config)
    runtime = await build_runtime(loaded, rebuild_stores=True)
    try:
        adapters = {
            name: {"templates": len(loaded.templates.get(name, [])), "texts_embedded": r.texts_embedded}
            for name, r in runtime.index_reports.items()
        }
        computed = sum(getattr(getattr(e, "stats", None), "computed", 0) for e in runtime.embedders.values())
        body = {
            "reindexed": adapters,
            "store_backend": loaded.app.store.backend,
            "texts_computed_by_model": computed,
            "seconds": round(runtime.build_seconds, 3),
        }
        if loaded.app.store.backend == "memory":
            body["note"] = (
                "the memory store lives inside the server process and is built when the server "
                "starts; this command refreshed the embedding cache and checked that every adapter starts"
            )
        print(json.dumps(body, indent=2))
        return 0
    finally:
        await runtime.close()
