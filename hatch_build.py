"""Install-time build of the hot path: compiled with mypyc where it can be, pure Python otherwise.

Hatchling runs this hook for every wheel it builds, the editable one of ``pip install -e .``
included. The compiling is hatch-mypyc's (the hook black ships its wheels with); this
subclass adds only what a source install needs: with no C compiler (or
``SIMSTACK_HOTPATH=pure``), or when mypyc fails, the install goes on in pure Python with a
one-line notice instead of failing. Either way it writes ``simstack/_hotpath_build.json``,
the build's record: the modules of the hot path (the hook's ``include`` list in
pyproject.toml, the one list of them), and the SHA-256 of each compiled module's source, or
why there is none.
``simstack.resources.hotpath`` reads it at import and passes over a compiled build whose sources have
changed since, so an edited module never runs its old compiled code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

try:
    from hatch_mypyc.plugin import MypycBuildHook as Base
except ImportError:  # a build without isolation and without hatch-mypyc: pure Python
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface as Base

RECORD = "simstack/_hotpath_build.json"
# The native event kernel (simstack.engine.native): a plain C extension, built beside its source
# by setuptools (which hatch-mypyc needs anyway), or left out with a one-line notice.
NATIVE = "simstack/engine/eventloop.c"
NATIVE_BUILT = "simstack/engine/eventloop.*"
NATIVE_SETUP = """from setuptools import Extension, setup
setup(name="simstack-native", ext_modules=[Extension("simstack.engine.eventloop", [{source!r}],
      extra_compile_args={flags!r})])
"""


def missing_compiler() -> str | None:
    """Why no C extension can be built here, or ``None`` when mypyc and a compiler are here."""
    if os.environ.get("SIMSTACK_HOTPATH", "") == "pure":
        return "SIMSTACK_HOTPATH=pure at install"
    if Base.__name__ != "MypycBuildHook":
        return "hatch-mypyc not installed"
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(command)
    if not words or shutil.which(words[0]) is None:
        return f"no C compiler ({command!r} not found) at install"
    return None


def build_native(root: Path) -> str | None:
    """Compile the native kernel into ``simstack/engine`` (a ``.so`` beside ``eventloop.c``); why
    not, or ``None`` when built. Floating-point contraction is off so that every operation rounds
    as Python's does (its results are compared with the SimPy kernel's bit for bit)."""
    if os.environ.get("SIMSTACK_KERNEL", "") == "simpy":
        return "SIMSTACK_KERNEL=simpy at install"
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(command)
    if not words or shutil.which(words[0]) is None:
        return f"no C compiler ({command!r} not found) at install"
    flags = [] if os.name == "nt" else ["-O2", "-ffp-contract=off"]
    with tempfile.TemporaryDirectory(prefix="simstack-native-") as temp:
        Path(temp, "setup.py").write_text(NATIVE_SETUP.format(source=str(Path(root, NATIVE).resolve()), flags=flags),
                                          encoding="utf-8")
        lib = Path(temp, "lib")
        done = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(lib), "--build-temp",
                               str(Path(temp, "tmp"))], cwd=temp, capture_output=True, text=True)
        built = sorted(lib.glob("simstack/engine/eventloop.*"))
        if done.returncode or not built:
            lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            return f"native kernel build failed at install: {lines[-1] if lines else done.returncode}"
        shutil.copy2(built[0], Path(root, "simstack/engine", built[0].name))
    return None


def dropped_extensions(root: Path, include: list[str]) -> list[Path]:
    """Compiled modules in the source tree whose source the hook's list no longer names: left by
    an earlier build, they would be imported instead of their sources, and their C code calls
    a shared library of that build which the next build replaces. (The native kernel's
    extension is built from C, not from a module beside it, and is left to its own step.)"""
    listed = {Path(root, path).with_suffix("") for path in include}
    return sorted(built for built in Path(root, "simstack").rglob("*.so")
                  if (source := built.with_name(built.name.split(".", 1)[0])).with_suffix(".py").is_file()
                  and source not in listed)


class HotPathBuildHook(Base):  # type: ignore[misc, valid-type]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        why = missing_compiler()
        in_tree = why is None or version == "editable"  # the source tree's extensions change
        if in_tree:  # Python imports an extension over its source: none may outlive its place in the list
            for old in dropped_extensions(Path(self.root), self.config.get("include", [])):
                old.unlink()
        if why is None:
            # hatch-mypyc compiles in place: the extensions land beside their sources, which is
            # what an editable install runs, so the record there is rewritten to match them.
            try:
                super().initialize(version, build_data)
            except Exception as exc:  # mypyc's own message is long: keep its last line
                lines = [line for line in str(exc).splitlines() if line.strip()]
                why = f"mypyc failed at install: {lines[-1] if lines else exc}"
        if why is not None and in_tree:
            self.clean([version])  # no old extension may outlive a pure build in place
        for old in Path(self.root).glob(NATIVE_BUILT):
            if old.suffix != ".c":
                old.unlink()
        native_why = build_native(Path(self.root))
        if native_why is None:
            build_data["artifacts"].append(f"/{NATIVE_BUILT}")
            build_data["infer_tag"] = True
            build_data["pure_python"] = False
        else:
            print(f"simstack: the SimPy kernel runs every model ({native_why})", file=sys.stderr)
        # The modules the hook list names, in its order: the one list of the hot path, which
        # simstack.resources.hotpath reads back from the record (built or not).
        compilable = [path[:-3].replace("/", ".") for path in self.config.get("include", [])]
        if why is None:
            modules = {path[:-3].replace("/", "."): hashlib.sha256(Path(self.root, path).read_bytes()).hexdigest()
                       for path in self.normalized_included_files}
            data: dict[str, Any] = {"build": "mypyc", "compilable": compilable, "modules": modules}
        else:
            print(f"simstack: installing the pure-Python hot path ({why})", file=sys.stderr)
            data = {"build": "pure", "compilable": compilable, "reason": why}
        # the native kernel's source hash, so a stale build is passed over (simstack.engine.kernel)
        data["native"] = hashlib.sha256(Path(self.root, NATIVE).read_bytes()).hexdigest() \
            if native_why is None else {"reason": native_why}
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
        if in_tree:
            Path(self.root, RECORD).write_text(text, encoding="utf-8")
            build_data["artifacts"].append(f"/{RECORD}")
        else:  # a pure wheel leaves the source tree (and an editable install's build in it) alone
            self._outside = tempfile.mkdtemp(prefix="simstack-hotpath-")
            record = Path(self._outside, "_hotpath_build.json")
            record.write_text(text, encoding="utf-8")
            build_data["force_include"][str(record)] = RECORD

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_outside", None):
            shutil.rmtree(self._outside, ignore_errors=True)

    def clean(self, versions: list[str]) -> None:
        """Remove the extensions and the record from the source tree (also before a build)."""
        root = Path(self.root)
        for source in self.config.get("include", []):
            for built in root.glob(source[:-3] + ".*.so"):
                built.unlink()
        for built in root.glob("*__mypyc.*.so"):
            built.unlink()
        for built in root.glob(NATIVE_BUILT):
            if built.suffix != ".c":
                built.unlink()
        (root / RECORD).unlink(missing_ok=True)


def get_build_hook() -> type:
    """Hatchling asks for the hook by name: the module also imports hatch-mypyc's base class."""
    return HotPathBuildHook
