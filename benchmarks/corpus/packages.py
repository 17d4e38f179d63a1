"""Getting the packages: the tools installed, the text packages downloaded and unpacked."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

from .sources import PACKAGES, TOOLS


def apt(*args: str, cwd: str | None = None) -> str:
    """Runs apt-get non-interactively; its output, or exits with it if apt-get failed."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(["apt-get", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"make_corpus: apt-get {args[0]} failed:\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def deb_of(debs: str, package: str) -> str | None:
    """The downloaded .deb of `package` in `debs` (the first by name if several), or None."""
    found = sorted(glob.glob(os.path.join(glob.escape(debs), glob.escape(package) + "_*.deb")))
    return found[0] if found else None


def missing_tools() -> list[str]:
    return [t for t in TOOLS if subprocess.run(["dpkg", "-s", t], capture_output=True).returncode]


def fetch_packages(work: str, update: bool) -> None:
    """Installs the missing TOOLS, downloads the PACKAGES not in WORK/debs yet, and unpacks
    each .deb once into WORK/root (a stamp file there records it)."""
    debs, root = os.path.join(work, "debs"), os.path.join(work, "root")
    tools = missing_tools()
    wanted = [package for package in PACKAGES if deb_of(debs, package) is None]
    if (update or tools or wanted) and os.geteuid() != 0:
        sys.exit("make_corpus: needs root for apt-get (run it with sudo)")
    os.makedirs(debs, exist_ok=True)
    os.makedirs(root, exist_ok=True)
    if update:
        apt("update", "-qq")
    if tools:
        apt("install", "-y", "-qq", "--no-install-recommends", *tools)
    if wanted:
        print(f"downloading {len(wanted)} packages ...", flush=True)
        lines = apt("download", "-q", *wanted, cwd=debs).splitlines()
        lines = [line for line in lines if "unsandboxed" not in line]
        print(lines[-1] if lines else "", flush=True)
    for package in PACKAGES:
        deb = deb_of(debs, package)
        if deb is None:
            sys.exit(f"make_corpus: no {package}_*.deb in {debs} after apt-get download")
        stamp = os.path.join(root, ".unpacked-" + os.path.basename(deb))
        if not os.path.exists(stamp):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            open(stamp, "w").close()
