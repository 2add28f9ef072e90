"""Build hook: the wheel carries the site files (etc/, plugins/, docs/*.md) as package data under rlsched/_dist,
where `rlsched install` finds them (rlsched/install.py).  Everything else is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: folder -> the files of it the wheel ships
SITE_FILES = {"etc": "**/*", "plugins": "**/*", "docs": "*.md"}


class BuildWithSiteFiles(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them from the checkout
        target = Path(self.build_lib) / "rlsched" / "_dist"
        for folder, pattern in SITE_FILES.items():
            for source in sorted((HERE / folder).glob(pattern)):
                if source.is_file() and "__pycache__" not in source.parts:
                    dest = target / source.relative_to(HERE)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, dest)  # keeps the hooks' executable bit


setup(cmdclass={"build_py": BuildWithSiteFiles})
