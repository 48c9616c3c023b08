"""`python -m orchestrator`: a thin front door over small task functions.

Each subcommand parses its arguments and calls one function; errors the user can fix
arrive as `UserError` and are printed as one paragraph, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tabulate import tabulate

from orchestrator.errors import UsageError, UserError
from orchestrator.settings import Settings, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]


def cmd_base(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import baseimage, engine

    client = engine.connect()
    image = baseimage.make_base(client, settings, suite=args.suite, tag=args.tag)
    print(image.tags[0] if image.tags else image.id)
    return 0


def cmd_build(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine, images, toolchains

    client = engine.connect()
    if args.what == "toolchain":
        if args.package:
            print(toolchains.ensure_toolchain_package(client, settings, args.package))
            return 0
        if args.llvm:
            print(toolchains.ensure_toolchain_llvm(client, settings, args.llvm))
            return 0
        raise UsageError("`build toolchain` needs --package <clang-N|gcc-N> or --llvm <commit>.")
    if args.what == "dev" and not args.toolchain:
        if args.llvm:
            args.toolchain = toolchains.ensure_toolchain_llvm(client, settings, args.llvm)
        elif args.package:
            args.toolchain = toolchains.ensure_toolchain_package(client, settings, args.package)
        else:
            raise UsageError(
                "`build dev` needs --toolchain <image>, --llvm <commit> or --package <clang-N>."
            )
    record = images.build_gromacs(client, settings, args.what, toolchain=args.toolchain)
    print(record.tag)
    return 0


def cmd_images(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine, images

    kinds = ("gromacs", "toolchain", "builder", "base") if args.all else ("gromacs",)
    records = images.list_images(engine.connect(), kinds)
    if args.json:
        print(images.records_json(records))
        return 0
    rows = [
        [
            r.tag,
            r.id[7:19],
            r.platform,
            r.compiler_version or r.compiler,
            r.simd,
            r.gromacs_commit and r.gromacs_commit[:19],
            r.llvm_commit,
            r.created,
        ]
        for r in records
    ]
    headers = ["tag", "id", "platform", "compiler", "simd", "gromacs", "llvm", "created"]
    print(tabulate(rows, headers=headers) if rows else "no project images yet")
    return 0


def cmd_render(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.contexts import example_context
    from orchestrator.render import render

    context = example_context(args.template, settings)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r} must look like key=value.")
        context[key] = value
    sys.stdout.write(render(args.template, context))
    return 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine, runner

    mdrun_args, profile = [], args.profile
    for arg in args.mdrun_args:
        if arg.startswith("--profile="):  # intercepted before mdrun, as gmxrun did
            profile = arg.split("=", 1)[1]
        else:
            mdrun_args.append(arg)
    if profile not in ("none", "trace", "counters"):
        raise UsageError(f"--profile={profile} is not a profile mode: use trace or counters.")
    request = runner.RunRequest(
        build=args.build,
        system=args.system,
        tag=args.tag,
        profile=profile,
        mdrun_args=mdrun_args,
        steps=args.steps,
        device=args.device,
        timeout=args.timeout,
        inputs_dir=args.inputs_dir,
    )
    client = engine.connect()
    plan = runner.plan_run(client, settings, request)
    if args.dry_run:
        print(runner.dry_run_text(plan))
        return 0
    result = runner.execute(client, settings, plan)
    print(plan.run_dir)
    if not result.finished:
        print(
            f"error: run {result.run_id} did not finish: {result.failure}; "
            f"recorded as unfinished in {plan.run_dir / 'result.json'}",
            file=sys.stderr,
        )
        return 130 if result.failure and "interrupted" in result.failure else 1
    print(f"{result.run_id}: {result.ns_per_day} ns/day", file=sys.stderr)
    return 0


def cmd_parse(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from orchestrator.parse_cmd import parse_path

    print(json.dumps(parse_path(args.path), indent=2))
    return 0


def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.compare import compare_runs, load_runs
    from orchestrator.notify import Notifier
    from orchestrator.report import render, webhook_text

    base = load_runs(settings.results, args.baseline)
    cand = load_runs(settings.results, args.candidate)
    cmp = compare_runs(base, cand, threshold_pct=args.threshold, alpha=args.alpha)
    print(render(cmp, args.format), end="")
    if args.notify:
        Notifier.from_settings(settings).post(webhook_text(cmp), {"headline": cmp.headline})
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine
    from orchestrator.bench import BenchRequest, bench

    given = [x for x in (args.llvm, args.toolchain, args.package) if x]
    if len(given) > 1:
        raise UsageError("Give at most one of --llvm, --toolchain and --package.")
    request = BenchRequest(
        llvm=args.llvm,
        toolchain=args.toolchain,
        package=args.package,
        system=args.system,
        tag=args.tag,
        steps=args.steps,
        repeats=args.repeats,
        no_llvm_rebuild=args.no_llvm_rebuild,
        no_gmx_rebuild=args.no_gmx_rebuild,
        mdrun_args=args.mdrun_args,
        threshold_pct=args.threshold,
        alpha=args.alpha,
        fmt=args.format,
    )
    bench(engine.connect(), settings, request)
    return 0


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine
    from orchestrator.rebuild import rebuild, summary

    report = rebuild(engine.connect(), settings, args.target)
    print(summary(report))
    return 1 if report.identical is False else 0


def cmd_share(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator import engine, share

    client = engine.connect()
    if args.action == "save":
        print(share.save(client, settings, args.tag, args.file))
    elif args.action == "load":
        print(share.load(client, settings, args.file).tag)
    else:
        print(share.push(client, settings, args.tag, args.destination))
    return 0


def cmd_settings(args: argparse.Namespace, settings: Settings) -> int:
    rows = sorted(settings.public_dump().items())
    print(tabulate(rows, headers=["setting", "value"]))
    return 0


def _verdict_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["simple", "markdown"], default="simple")
    p.add_argument("--threshold", type=float, default=2.0, help="marker threshold, percent")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator",
        description="Containerized, reproducible GROMACS benchmarks for compiler developers.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    p = sub.add_parser("base", help="make a base image from a Debian mirror (debootstrap)")
    p.add_argument("--suite", default="bookworm")
    p.add_argument("--tag", default=None, help="image tag (default gmxbench-base/debian:<suite>)")
    p.set_defaults(handler=cmd_base)

    p = sub.add_parser("build", help="build stable, dev or toolchain images")
    p.add_argument("what", choices=["stable", "dev", "toolchain"])
    p.add_argument("--toolchain", help="toolchain image holding the dev compiler")
    p.add_argument("--package", help="distribution compiler package for a toolchain (clang-16)")
    p.add_argument("--llvm", help="LLVM commit in ORCH_LLVM_SOURCE, or a checkout path (as it is)")
    p.set_defaults(handler=cmd_build)

    p = sub.add_parser("images", help="list the project's images with their provenance")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="also toolchains, builders and bases")
    p.set_defaults(handler=cmd_images)

    p = sub.add_parser("render", help="print a rendered Dockerfile")
    p.add_argument("template")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(handler=cmd_render)

    p = sub.add_parser(
        "run", help="one mdrun of a build on a system: results/<build>__<system>__<tag>"
    )
    p.add_argument("build", help="build name (stable-cpu-gcc12, dev-current) or image tag")
    p.add_argument("system", nargs="?", default=None, help="recipe system (default: water)")
    p.add_argument("tag", nargs="?", default=None, help="run tag (default: run-<UTC time>)")
    p.add_argument("--profile", default="none", choices=["none", "trace", "counters"])
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--device", type=int, default=0, help="GPU index (rocm)")
    p.add_argument("--timeout", type=float, default=3600.0, help="wall-clock limit, seconds")
    p.add_argument("--inputs-dir", type=Path, default=None, help="pre-downloaded archives")
    p.add_argument("--dry-run", action="store_true", help="print the container configuration")
    p.set_defaults(handler=cmd_run, mdrun_args=[])

    p = sub.add_parser("parse", help="parse an md.log, rocprof CSV(s) or a run directory to JSON")
    p.add_argument("path", type=Path)
    p.set_defaults(handler=cmd_parse)

    p = sub.add_parser("compare", help="compare two runs or groups of repeated runs")
    p.add_argument("baseline", help="run directory, run id, or group <build>__<system>__<tag>")
    p.add_argument("candidate", help="run directory, run id, or group")
    _verdict_options(p)
    p.add_argument("--notify", action="store_true", help="also post the table to the webhook")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("bench", help="the compiler loop: build, run both sides, diff")
    p.add_argument("--llvm", help="LLVM commit (short hash) or a path: the working tree as it is")
    p.add_argument("--toolchain", help="existing toolchain image holding the dev compiler")
    p.add_argument("--package", help="distribution compiler package for the toolchain (clang-16)")
    p.add_argument("--system", default=None, help="recipe system (default: water)")
    p.add_argument("--tag", default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-llvm-rebuild", action="store_true")
    p.add_argument("--no-gmx-rebuild", action="store_true")
    _verdict_options(p)
    p.set_defaults(handler=cmd_bench, mdrun_args=[])

    p = sub.add_parser(
        "rebuild", help="rebuild an image from its lockfile; compare its files with the original"
    )
    p.add_argument("target", help="image tag (gromacs:<build> or <build>) or a lockfile path")
    p.set_defaults(handler=cmd_rebuild)

    p = sub.add_parser("share", help="move images without a shared registry: save, load, push")
    actions = p.add_subparsers(dest="action", required=True, metavar="action")
    a = actions.add_parser("save", help="write <build>.gmxbench.tar.gz (image, lockfile, sha256)")
    a.add_argument("tag", help="gromacs:<build> or a bare build name")
    a.add_argument("file", type=Path, nargs="?", default=None, help="archive path or directory")
    a = actions.add_parser("load", help="verify an archive, then load and tag its image")
    a.add_argument("file", type=Path)
    a = actions.add_parser("push", help="push to a registry; record the digest in the lockfile")
    a.add_argument("tag")
    a.add_argument("destination", help="registry/repo[:tag] (default tag: the build name)")
    p.set_defaults(handler=cmd_share)

    p = sub.add_parser("settings", help="show the effective settings (secrets hidden)")
    p.set_defaults(handler=cmd_settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:  # everything after `--` goes to mdrun untouched
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    parser = build_parser()
    args = parser.parse_args(argv)
    if passthrough:
        args.mdrun_args = passthrough
    handler: Handler = args.handler
    try:
        return handler(args, load_settings())
    except UserError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
