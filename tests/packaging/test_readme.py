"""README.md's Python examples run as written (from a directory holding the repository's data/)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_python_blocks_run(tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    assert blocks, "README.md has a Python example"
    (tmp_path / "data").symlink_to(ROOT / "data")
    for block in blocks:
        result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "example_api.h5").is_file()
