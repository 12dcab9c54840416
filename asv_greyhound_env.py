"""asv environment plugin: a virtualenv per environment that sees the launching interpreter's packages.

torch and triton are never installed by asv: each environment's site-packages gets a .pth file listing the
launching interpreter's site-packages (and any PYTHONPATH entries, e.g. /tmp/site on the offline H200), so a
preinstalled torch/triton/asv_runner is used as is, and a per-commit build installs only greyhound (`--no-deps`).
The environment's own site-packages comes first, so the greyhound wheel of the commit under test wins over any
greyhound installed in the launching interpreter. Works offline (no index is contacted) and online alike.
"""
import os
import site
import sys

from asv import environment, util
from asv.console import log
from asv.plugins.virtualenv import Virtualenv


def _launcher_paths():
    paths = list(site.getsitepackages()) + [site.getusersitepackages()]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    seen, out = set(), []
    for p in map(os.path.abspath, paths):
        if os.path.isdir(p) and p not in seen:
            seen.add(p)
            out.append(p)
    return out


class LauncherVirtualenv(Virtualenv):
    """A virtualenv built from the interpreter running asv, layered over that interpreter's packages."""

    tool_name = "launcher-venv"

    def __init__(self, conf, python, requirements, tagged_env_vars):
        self._executable = sys.executable
        self._python = python
        self._requirements = requirements
        environment.Environment.__init__(self, conf, python, requirements, tagged_env_vars)

    @classmethod
    def matches(cls, python):
        return python == f"{sys.version_info[0]}.{sys.version_info[1]}"

    def _setup(self):
        log.info(f"Creating virtualenv for {self.name} over {sys.executable}'s packages")
        util.check_call([sys.executable, "-m", "virtualenv", "--no-download", "--no-periodic-update",
                         "-p", sys.executable, self._path], env=dict(os.environ))
        purelib = self.run(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
        with open(os.path.join(purelib, "_greyhound_launcher_packages.pth"), "w") as f:
            f.write("\n".join(_launcher_paths()) + "\n")
