"""Check what `./run wheel` built into dist/: the wheel's platform tag against the glibc symbols
it really needs (auditwheel), and that the wheel and the sdist hold every file they must.

    python tools/check_dist.py dist/          (exit 1 with one line per problem)

A wheel tagged manylinux2014 that needed a newer glibc would install on an old cluster and fail
at import; a file missing from the sdist would only show when someone builds from it.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The glibc baseline the wheel is built for (manylinux2014).
BASELINE = f"manylinux_2_17_{platform.machine()}"


def tracked(*folders: str) -> list[str]:
    """The files git tracks under `folders`, relative to the repository."""
    out = subprocess.run(
        ["git", "ls-files", "--", *folders], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines() if line]


def check_wheel(wheel: Path, auditwheel: str) -> list[str]:
    problems = []
    if "-cp310-abi3-" not in wheel.name or BASELINE.replace("_2_17", "2014") not in wheel.name:
        problems.append(f"{wheel.name}: expected a cp310-abi3 manylinux2014 wheel")
    shown = subprocess.run([auditwheel, "show", str(wheel)], capture_output=True, text=True)
    # auditwheel names the most compatible tag the symbols allow; a newer glibc symbol or an
    # external library moves it past the baseline.
    if shown.returncode != 0 or f'"{BASELINE}"' not in " ".join(shown.stdout.split()):
        problems.append(
            f"{wheel.name}: auditwheel does not find it {BASELINE}:\n{shown.stdout}{shown.stderr}"
        )
    names = set(zipfile.ZipFile(wheel).namelist())
    need = {p.removeprefix("src/") for p in tracked("src/bytepair") if not p.endswith(".so")}
    need |= {"bytepair/_core.abi3.so", "bytepair/py.typed", "bytepair/_core.pyi"}
    problems += [f"{wheel.name} lacks {n}" for n in sorted(need - names)]
    if not any(n.endswith("licenses/LICENSE") for n in names):
        problems.append(f"{wheel.name} lacks the LICENSE file")
    return problems


def check_sdist(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tar:
        root, *_ = tar.getnames()
        prefix = root.split("/")[0] + "/"
        names = {n.removeprefix(prefix) for n in tar.getnames()}
    need = tracked("src/bytepair", "rust/src", "rust/Cargo.toml", "rust/Cargo.lock")
    need += ["pyproject.toml", "README.md", "LICENSE"]
    # maturin moves the crate under the sdist's own layout; compare by path tails.
    tails = {n.split("/", 1)[1] if n.startswith("rust/") else n for n in names}
    return [
        f"{sdist.name} lacks {n}"
        for n in need
        if n not in names and n.removeprefix("rust/") not in tails
    ]


def main() -> int:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    auditwheel = str(Path(sys.executable).parent / "auditwheel")
    wheels, sdists = sorted(dist.glob("bytepair-*.whl")), sorted(dist.glob("bytepair-*.tar.gz"))
    problems = (
        []
        if len(wheels) == 1 and len(sdists) == 1
        else [
            f"{dist}: expected one wheel and one sdist, found {[p.name for p in wheels + sdists]}"
        ]
    )
    for wheel in wheels:
        problems += check_wheel(wheel, auditwheel)
    for sdist in sdists:
        problems += check_sdist(sdist)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_dist: {wheels[0].name} is {BASELINE} with every file; the sdist is whole")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
