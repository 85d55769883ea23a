"""Writes the type stubs of the compiled module (twinbit/_twinbit/*.pyi) from an installed build:

    python python/gen_stubs.py [OUT_DIR]     (default: python/twinbit/_twinbit)

The stubs are committed and shipped; python/tests/test_stubs.py regenerates them and fails when
the committed ones differ, so they follow the module."""

import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
# The exception is created at import under the package's name (twinbit.TwinbitError); the stub
# declares it in place instead of importing it back from the package.
ERROR_IMPORT = "from twinbit import TwinbitError as TwinbitError\n"
ERROR_CLASS = '''class TwinbitError(RuntimeError):
    """An error of the twinbit library: .code is the status name, .message the library's message."""

    code: str
    message: str
'''


def generate(out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-r", "-P", "-m", "twinbit._twinbit",
                        "-O", tmp], check=True)
        out.mkdir(parents=True, exist_ok=True)
        for stub in sorted(pathlib.Path(tmp, "_twinbit").glob("*.pyi")):
            text = stub.read_text()
            if ERROR_IMPORT in text:
                text = text.replace(ERROR_IMPORT, "")
                marker = "\n\nclass "
                at = text.index(marker)
                text = text[:at] + "\n\n" + ERROR_CLASS + text[at:]
            (out / stub.name).write_text(text)


if __name__ == "__main__":
    generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "twinbit" / "_twinbit")
