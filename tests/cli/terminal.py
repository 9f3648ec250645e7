"""Running ``jobq`` as a subprocess at a given width, in a pipe ($COLUMNS) or on a
pseudo-terminal (the terminal's own size), and reading the tables it prints."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def jobq(cwd, *args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("JOBQ_DB", None)
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


class TtyResult:
    def __init__(self, returncode: int, raw: str):
        self.returncode = returncode
        self.raw = raw
        self.stdout = self.stderr = CSI.sub("", raw).replace("\r\n", "\n")
        self.styled = raw != self.stdout.replace("\n", "\r\n")  # it knew it had a terminal


def jobq_tty(cwd, *args, columns=80) -> TtyResult:
    """``jobq`` on a pseudo-terminal of ``columns`` x 24, its output with colours and
    other escape sequences taken out (stdout and stderr share the terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "JOBQ_DB")}
    env["TERM"] = "xterm-256color"
    p = subprocess.Popen([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd, env=env,
                         stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        p.wait(60)
    return TtyResult(p.returncode, b"".join(chunks).decode())


def lines_fit(out: str, width: int = 80) -> list[str]:
    lines = out.splitlines()
    assert lines and all(len(line) <= width for line in lines), out
    return lines


def table(out: str, header: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows (split on runs of two spaces or more) of the table whose
    header line starts with ``header``; every line of ``out`` fits 80 columns."""
    lines = lines_fit(out)
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(header + " "))
    assert set(lines[at + 1]) == {"─"}, out
    rows = []
    for line in lines[at + 2:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return re.split(r"\s{2,}", lines[at].strip()), rows
