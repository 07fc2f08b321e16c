"""The README's AscendC section quotes the quickstart's files: each must be
there verbatim, after a comment naming it, so the README shows what
`./run test` builds and runs."""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
readme = (root / "README.md").read_text()
folder = "examples/ascendc_quickstart"
missing = []
for path in sorted((root / folder).iterdir()):
    comment = "#" if path.name == "CMakeLists.txt" else "//"
    quoted = f"{comment} {folder}/{path.name}\n{path.read_text().rstrip()}\n```"
    if quoted not in readme:
        missing.append(path.name)
if missing:
    sys.exit("README.md does not quote these files of " + folder + " as they are: " + ", ".join(missing))
print("README.md quotes", folder, "as it is")
