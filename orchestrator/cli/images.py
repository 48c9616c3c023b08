"""Image commands: `base`, `build`, `images`, `prune`, `render`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabulate import tabulate

from orchestrator import engine
from orchestrator.cli.common import (
    Commands,
    add_option,
    add_options,
    engine_for,
    executor_option,
    request_of,
    with_executor,
)
from orchestrator.cli.console import Console
from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings, with_gpu_arch
from orchestrator.images import blocks, catalog, lint, native
from orchestrator.images.base import load_base_lock, make_base
from orchestrator.images.gromacs import build_gromacs
from orchestrator.images.llvm_tree import validate
from orchestrator.images.render import known, render
from orchestrator.images.toolchain_llvm import plan_toolchain_llvm, resolve_llvm
from orchestrator.workflows.build import BUILD_COMPILER, BuildRequest, toolchain_for
from orchestrator.workflows.options import DRY_RUN
from orchestrator.workflows.prune import DEFAULT_KEEP, prune
from orchestrator.workflows.rebuild import REBUILD_REPO


def register(sub: Commands) -> None:
    p = sub.add_parser("base", help="make a base image from a Debian mirror (debootstrap)")
    p.add_argument("--suite", default="bookworm")
    p.add_argument("--tag", default=None, help="image tag (default gmxbench-base/debian:<suite>)")
    p.add_argument(
        "--from-lock", type=Path, default=None, metavar="LOCKFILE",
        help="make the base of this lockfile again; tagged only if every package is the same",
    )  # fmt: skip
    p.set_defaults(handler=base)

    p = sub.add_parser("build", help="build stable, dev or toolchain images")
    add_options(p, BuildRequest)
    gpu_arch_option(p)
    executor_option(p)
    p.set_defaults(handler=build)

    p = sub.add_parser("images", help="list the project's images with their provenance")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="also toolchains, builders and bases")
    p.set_defaults(handler=images)

    p = sub.add_parser("prune", help="remove old LLVM toolchain images; never the build tree")
    p.add_argument(
        "--keep", type=int, default=DEFAULT_KEEP, metavar="N",
        help=f"LLVM toolchains kept per platform, newest first (default {DEFAULT_KEEP})",
    )  # fmt: skip
    add_option(p, DRY_RUN.but(help="say what would go; remove nothing"))
    p.add_argument(
        "--sizes", action="store_true",
        help="the workspace volumes' sizes too (the engine walks their files: seconds)",
    )  # fmt: skip
    p.set_defaults(handler=prune_toolchains)

    p = sub.add_parser("render", help="print a rendered Dockerfile")
    p.add_argument("template")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(handler=render_template)

    p = sub.add_parser("lint", help="hadolint every template as rendered, on every platform")
    p.set_defaults(handler=lint_templates)


def gpu_arch_option(p: argparse.ArgumentParser) -> None:
    """`--gpu-arch LIST`: the GPU targets of the GROMACS builds a command makes."""
    p.add_argument(
        "--gpu-arch", default=None, metavar="LIST",
        help="GPU targets of ROCm builds, comma-separated, primary first (gfx1201,gfx942); "
        "replaces ORCH_GPU_ARCH",
    )  # fmt: skip


def base(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    client, lock, tag = engine.connect(), None, args.tag
    if args.from_lock is not None:
        lock = load_base_lock(args.from_lock)
        if tag is None and engine.image(client, lock.tag) is not None:
            tag = f"{REBUILD_REPO}:base-{lock.suite}"  # the original keeps its tag
    image = make_base(client, settings, suite=args.suite, tag=tag, lock=lock, emit=console)
    print(image.tags[0] if image.tags else image.id)
    return 0


def build(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    settings = with_gpu_arch(settings, args.gpu_arch)
    request = request_of(BuildRequest, args)  # two compilers are said here
    _check_build(request, settings)  # every mistake said at once, before the engine is asked
    settings = with_executor(settings, args)
    client = engine_for(settings)
    if client is None:  # no engine: the stable compiler, installed natively
        if request.what != "stable":
            raise UsageError(
                "Without a container engine (--executor native) only `build stable` can be "
                "made (with ORCH_DEVICE_FLAGS for a compiler option): no toolchain images."
            )
        print(native.build_native(settings, "stable", console).native_prefix)
        return 0
    compiler = request.compiler
    if request.plan:
        if request.what != "toolchain" or compiler is None or compiler.kind != "llvm":
            raise UsageError("--plan goes with `build toolchain --llvm <commit>`.")
        plan = plan_toolchain_llvm(client, settings, compiler.name, emit=console)
        print(plan.summary())
        links = list(plan.linked)
        more = f" and {len(links) - 12} more" if len(links) > 12 else ""
        print(f"links: {', '.join(links[:12]) or 'nothing'}{more}")
        return 0
    toolchain = None
    if request.what != "stable":
        toolchain = toolchain_for(client, settings, compiler, emit=console)
    if request.what != "toolchain":
        print(build_gromacs(client, settings, request.what, toolchain_tag=toolchain,
                            emit=console).tag)  # fmt: skip
    elif toolchain is None or (compiler is not None and compiler.kind == "toolchain"):
        raise UsageError(
            "`build toolchain` needs --package <clang-N|gcc-N>, --llvm <commit> or "
            "--from-build <your LLVM build tree>."
        )
    else:
        print(toolchain)
    return 0


def _check_build(request: BuildRequest, settings: Settings) -> None:
    """The compiler choice, the commit and the build tree, in seconds and without the
    engine: a mistake must not wait for the builder image or an LLVM build."""
    compiler = request.compiler
    if request.what == "stable" and compiler is not None:
        flag = BUILD_COMPILER.flag(compiler.kind)
        raise UsageError(f"`build stable` uses the stable compiler; {flag} goes with "
                         "`build dev` or `build toolchain`.")  # fmt: skip
    if request.what == "toolchain" and (compiler is None or compiler.kind == "toolchain"):
        raise UsageError(
            "`build toolchain` needs --package <clang-N|gcc-N>, --llvm <commit> or "
            "--from-build <your LLVM build tree>."
        )
    if compiler is not None and compiler.kind == "tree":
        validate(compiler.name)
    if compiler is not None and compiler.kind == "llvm":
        resolve_llvm(settings, compiler.name)


def images(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    kinds = ("gromacs", "toolchain", "builder", "base") if args.all else ("gromacs",)
    records = catalog.list_images(engine.connect(), kinds, console)
    if args.json:
        print(catalog.records_json(records))
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


def prune_toolchains(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    done = prune(
        engine.connect(), keep=args.keep, dry_run=args.dry_run, sizes=args.sizes, emit=console
    )
    gone = "would remove" if args.dry_run else "removed"
    rows = [
        [gone if t.removed else "kept", t.tag, t.llvm_commit, t.created, t.why]
        for t in done.toolchains
    ]
    headers = ["", "LLVM toolchain", "llvm", "created", "kept because"]
    print(tabulate(rows, headers=headers) if rows else "no LLVM toolchain images")
    volumes = [[v.name, _size(v.size)] if args.sizes else [v.name] for v in done.volumes]
    headers = ["kept LLVM workspace volume", "size"][: 2 if args.sizes else 1]
    print("\n" + (tabulate(volumes, headers=headers) if volumes else "no LLVM workspace volumes"))
    print(f"\n{gone} {len(done.removed)} of {len(done.toolchains)} LLVM toolchain images; "
          "prune never removes a workspace volume (clone, build tree, ccache)")  # fmt: skip
    return 0


def _size(size: int | None) -> str:
    return "?" if size is None else f"{size / 1e9:.1f} GB"


def render_template(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    context = blocks.example_context(known(args.template), settings)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r} must look like key=value.")
        if key not in context:  # a typo would otherwise render the example unchanged
            raise UsageError(
                f"--set {key}: {args.template} has no such value. Its values: "
                f"{', '.join(sorted(context))}."
            )
        context[key] = value
    sys.stdout.write(render(args.template, context))
    return 0


def lint_templates(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    results = lint.hadolint_all()
    rows = [
        [label, f.line, f.level, f.code, f.message] for label, findings in results for f in findings
    ]
    if rows:
        print(tabulate(rows, headers=["template", "line", "level", "code", "message"]))
    failed = lint.errors(results)
    print(
        f"hadolint: {len(results)} renders, {len(rows)} findings, {len(failed)} errors"
        f"; ignored: {', '.join(sorted(lint.IGNORED))}"
    )
    return 1 if failed else 0
