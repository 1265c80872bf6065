"""The wheel also carries ``prsd_azure_ai_ml.pth`` (site-packages' top level), which puts
the import hook of :mod:`prsd_azure_ai_ml.hook` in place at interpreter start."""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "prsd_azure_ai_ml.pth"


class BuildWithPth(build_py):
    """``build_py`` that also copies the ``.pth`` file beside the package."""

    def run(self) -> None:
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        self.copy_file(os.path.join(here, PTH), os.path.join(self.build_lib, PTH))


setup(cmdclass={"build_py": BuildWithPth})
