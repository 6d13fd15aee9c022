"""The README's Python example runs as printed."""
import pathlib
import re


def test_readme_example(capsys):
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out.split("\n")
    assert float(printed[0].split()[0]) > 0 and printed[0].endswith("(2, 4)")
