"""A user's own kernel (a recipe with `[sources]`) for real: built FROM a build's image by
its own compiler, fingerprinted per GPU target, benched on the CPU, and a source that does
not compile reported with the compiler's words and the recipe's name.

The ROCm half compiles for two targets (gfx1201, gfx942) with two stand-in compilers from
the mini llvm-project (tests/mini_llvm.py): its first commit adds nothing, the second adds
`-fno-unroll-loops` to the device code of `saxpy.hip` only. The kernels whose code the
option changes must be exactly those an independent compile changes (the compiler run
directly in a container, with and without the option, per target, its `llvm-objdump -d`
text compared by tests/objdump_kernels.py: no code shared with the product's probe).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from mini_llvm import make_mini_llvm
from objdump_kernels import DISASSEMBLE
from objdump_kernels import changed as objdump_changed

from orchestrator.codegen.model import Codegen
from orchestrator.codegen.targets import diff_targets
from orchestrator.core.errors import UserError
from orchestrator.core.settings import load_settings
from orchestrator.images import microbench, user_kernels
from orchestrator.images.microbench_image import MicrobenchImage
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.images.user_kernels import UserProgram
from orchestrator.runs.recipe import load_system
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec

pytestmark = [pytest.mark.engine, pytest.mark.slow]

USER = Path(__file__).parent / "data" / "user_recipes"
TARGETS = ("gfx1201", "gfx942")
OPTION = "-fno-unroll-loops"
#: `window` has a loop of 16 that -O3 unrolls; `saxpy` has no loop.
UNROLLED = {"window"}


def program(name: str) -> UserProgram:
    system = load_system(name, [USER / name])
    assert isinstance(system.program, UserProgram)  # type: ignore[union-attr]
    return system.program  # type: ignore[union-attr]


def changed_per_target(a: Codegen, b: Codegen) -> set[tuple[str, str]]:
    """(target, kernel) of every kernel whose code differs, each target diffed on its own."""
    return {(k.arch, k.name) for d in diff_targets(a, b).diffs.values() for k in d.changed}


def test_a_user_kernel_builds_on_the_rocm_stable_build_and_is_fingerprinted(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    """The GROMACS image's own targets (its `gpu_arch` label) decide the code objects."""
    saxpy = program("saxpy")
    image = microbench.ensure(engine, rocm_settings, rocm_stable.tag, saxpy)
    assert image.tag.startswith(f"gmxbench-kernels:{rocm_stable.build}-saxpy-")
    assert image.labels["gmxbench.kind"] == "kernels"
    found = user_kernels.kernel_codegen(engine, image)
    archs = (rocm_stable.gpu_arch or "gfx1201").split(",")
    assert found.archs == sorted(archs) and found.platform == "rocm"
    names = {(k.name, k.arch) for k in found.kernels.values() if k.kind == "kernel"}
    assert names == {(n, a) for n in ("saxpy", "window") for a in archs}
    assert {o.unit for o in found.code_objects} == {"saxpy.hip"}
    identity = microbench.code_identity(engine, image, saxpy)
    assert identity is not None and len(identity) == 64
    started = time.monotonic()  # keyed by its inputs, the source's digest included
    again = microbench.ensure(engine, rocm_settings, rocm_stable.tag, saxpy)
    assert again.id == image.id and time.monotonic() - started < 10


def test_a_hip_source_that_does_not_compile_names_the_recipe_and_the_error(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    broken = program("broken")
    with pytest.raises(UserError) as err:
        microbench.ensure(engine, rocm_settings, rocm_stable.tag, broken)
    said = err.value.message
    assert said.startswith(f"The kernel recipe broken ({USER / 'broken' / 'broken.toml'}) ")
    assert f"does not compile with {rocm_stable.compiler} for {rocm_stable.build}:" in said
    assert "broken.hip:6:" in said and "use of undeclared identifier 'alpha'" in said
    assert "Fix broken.hip (next to broken.toml) and run again." in said
    assert "Traceback" not in said and "Step " not in said


@pytest.fixture(scope="module")
def stand_ins(
    engine: Any, rocm_settings: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, str, str]:
    """ROCm settings for two targets, and the two stand-in toolchains' tags (built once)."""
    llvm = make_mini_llvm(tmp_path_factory.mktemp("llvm-user") / "llvm-project")
    settings = rocm_settings.model_copy(
        update={"llvm_source": str(llvm.path), "gpu_arch": ",".join(TARGETS)}
    )
    started = time.monotonic()
    plain = ensure_toolchain_llvm(engine, settings, llvm.head())
    first = time.monotonic() - started
    commit = llvm.commit("Do not unroll saxpy.hip's device loops", device_flags=[OPTION],
                         device_units=["saxpy.hip"])  # fmt: skip
    option = ensure_toolchain_llvm(engine, settings, commit)
    print(f"\ntoolchains: {first:.0f} s + {time.monotonic() - started - first:.0f} s")
    return settings, plain, option


INDEPENDENT = r"""set -euo pipefail
cd /src
for arch in {targets}; do
  for side in plain option; do
    extra=""; [ "$side" = option ] && extra="-Xarch_device {option}"
    mkdir -p /out/$side/$arch
    {compile} --offload-arch=$arch $extra -c -o /out/$side/$arch/saxpy.hip.o saxpy.hip
    {bin}/llvm-objdump --offloading /out/$side/$arch/saxpy.hip.o > /dev/null
    rm -f /out/$side/$arch/*.o /out/$side/$arch/*host-*
  done
done
"""


def independent(engine: Any, image: MicrobenchImage, work: Path) -> set[tuple[str, str]]:
    """(target, kernel) pairs whose code `OPTION` changes, compiled directly by Debian's
    clang 21 (which the stand-ins forward to) with the microbenchmark compiler's flags, one
    target at a time, in the first stand-in's microbenchmark image (our headers are there)."""
    flags = [f for f in image.compiler.flags if not f.startswith("--offload-arch=")]
    tools = "/usr/lib/llvm-21/bin"
    script = INDEPENDENT.format(
        targets=" ".join(TARGETS), option=OPTION, bin=tools,
        compile=" ".join([f"{tools}/clang++", *flags, "-I/opt/gmxbench/kernels/include"]),
    )  # fmt: skip
    script += DISASSEMBLE.format(roots="/out/plain /out/option", bin=tools)
    (work / "out").mkdir(parents=True)
    container = engine.containers.run(
        image.id, ["bash", "-c", script], detach=True, network_disabled=True,
        volumes={str(USER / "saxpy"): {"bind": "/src", "mode": "ro"},
                 str(work / "out"): {"bind": "/out", "mode": "rw"}},
    )  # fmt: skip
    try:
        status = container.wait(timeout=300)
        logs = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, logs[-3000:]
    found: set[tuple[str, str]] = set()
    for arch in TARGETS:
        pairs, units = objdump_changed(
            work / "out" / "plain" / arch, work / "out" / "option" / arch
        )
        assert units == {"saxpy.hip"}, units
        found |= {(arch, name) for _unit, name in pairs}
    return found


def test_two_stand_in_compilers_change_the_unrolled_kernel_on_every_target(
    engine: Any, stand_ins: tuple[Any, str, str], tmp_path: Path
) -> None:
    settings, plain_tag, option_tag = stand_ins
    saxpy = program("saxpy")
    plain = microbench.ensure(engine, settings, plain_tag, saxpy)
    option = microbench.ensure(engine, settings, option_tag, saxpy)
    for image in (plain, option):
        assert [f for f in image.compiler.flags if f.startswith("--offload-arch=")] == [
            f"--offload-arch={t}" for t in TARGETS
        ]
    a, b = user_kernels.kernel_codegen(engine, plain), user_kernels.kernel_codegen(engine, option)
    assert a.archs == b.archs == sorted(TARGETS)
    assert {f"{n}@{t}" for n in ("saxpy", "window") for t in TARGETS} <= set(a.kernels)
    found = changed_per_target(a, b)
    assert found == {(t, n) for t in TARGETS for n in UNROLLED}, found
    assert found == independent(engine, plain, tmp_path)
    assert microbench.code_identity(engine, plain, saxpy) != microbench.code_identity(
        engine, option, saxpy
    )


def test_bench_reports_the_per_target_diff_before_the_runs(
    engine: Any, stand_ins: tuple[Any, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench --against-toolchain <plain> --toolchain <option> --system saxpy`: the codegen
    summary per target comes first, then the GPU run is refused (no GPU here), and with
    the same compiler on both sides' code (plain against itself through another tag) it
    would be nothing to measure."""
    settings, plain_tag, option_tag = stand_ins
    monkeypatch.setenv("ORCH_RECIPES_DIRS", str(USER / "saxpy"))
    settings = settings.model_copy(update={"recipes_dirs": [USER / "saxpy"]})
    said: list[str] = []
    req = BenchRequest(baseline=CompilerSpec("toolchain", plain_tag),
                       candidate=CompilerSpec("toolchain", option_tag), system="saxpy:4MiB",
                       repeats=2)  # fmt: skip
    with pytest.raises(UserError, match=r"/dev/kfd"):
        bench(engine, settings, req, emit=lambda event: said.append(event.text))
    text = "\n".join(said)
    assert re.search(r"codegen after [\d.]+ s: 1 of 2 kernels changed on gfx1201", text), text
    assert "per target: gfx1201: 1 changed of 2; gfx942: 1 changed of 2" in text, text


def test_bench_judges_a_user_kernel_on_its_declared_metrics(
    engine: Any, cpu_settings: Any, stable_image: Any, toolchain_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The C++ twin on the CPU platform, the recipe folder named by ORCH_RECIPES_DIRS."""
    monkeypatch.setenv("ORCH_RECIPES_DIRS", str(USER / "saxpy"))
    settings = load_settings(platform="cpu", results_dir=cpu_settings.results_dir)
    req = BenchRequest(
        candidate=CompilerSpec("toolchain", toolchain_image), system="saxpy:4MiB", repeats=3
    )
    outcome = bench(engine, settings, req)
    cmp = outcome.comparison
    assert outcome.codegen is not None and outcome.codegen_seconds is not None
    assert {k.name for k in outcome.codegen.changed} <= {"saxpy", "window"}  # gcc vs clang
    assert outcome.codegen.changed and outcome.codegen_seconds < outcome.elapsed
    assert cmp.headline_name == "saxpy_gbs" and cmp.headline_unit == "GB/s"
    assert set(cmp.metrics) == {"saxpy_ms", "window_gbs", "window_ms"}
    assert cmp.metrics["saxpy_ms"].higher_is_better is False  # declared: lower is better
    assert cmp.metrics["window_gbs"].higher_is_better and cmp.headline.n_candidate >= 3
    assert all(name.startswith("toolchain-llvm-") for name in cmp.candidate)
    assert all(name.startswith(f"{stable_image.build}__saxpy-") for name in cmp.baseline)
    for name in cmp.baseline + cmp.candidate:
        assert (settings.results_dir / name / "kernel.json").is_file()
    image = microbench.ensure(engine, settings, toolchain_image, program("saxpy"))
    found = user_kernels.kernel_codegen(engine, image)  # the binary, the recipe's functions
    assert found.platform == "cpu" and found.pattern == "(saxpy|window)"
    assert {"saxpy", "window"} <= set(found.kernels)


def test_a_cpu_source_that_does_not_compile_names_the_recipe_and_the_error(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    with pytest.raises(UserError) as err:
        microbench.ensure(engine, cpu_settings, stable_image.tag, program("broken"))
    said = err.value.message
    assert "The kernel recipe broken (" in said and "broken.cpp:5:" in said
    assert "was not declared in this scope" in said and "Fix broken.cpp" in said


def test_an_edited_source_makes_a_new_microbench_image(
    engine: Any, cpu_settings: Any, stable_image: Any, tmp_path: Path
) -> None:
    """The image is keyed by its inputs, the source's digest among them."""
    folder = tmp_path / "saxpy"
    folder.mkdir()
    for name in ("saxpy.toml", "saxpy.cpp", "saxpy.hip", "saxpy.cu"):
        (folder / name).write_text((USER / "saxpy" / name).read_text())
    first = load_system("saxpy", [folder]).program
    assert isinstance(first, UserProgram)
    before = microbench.ensure(engine, cpu_settings, stable_image.tag, first)
    with (folder / "saxpy.cpp").open("a") as source:
        source.write("static int edited() { return 1; }\n")
    after = microbench.ensure(engine, cpu_settings, stable_image.tag, first)
    assert after.id != before.id and after.tag != before.tag
