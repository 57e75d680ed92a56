"""Running the command line as a user at a terminal sees it: on a pseudo-terminal with a
window size (progress bars draw only on a terminal of known width)."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

SIMSTACK = Path(sys.executable).with_name("simstack")


def run_in_terminal(args: list[str], timeout: float = 120) -> tuple[int, str]:
    """Exit code and everything written to the terminal (stdout and stderr, raw)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([str(SIMSTACK), *args], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")


def run_logged(args: list[str], timeout: float = 120) -> tuple[int, str]:
    """Exit code and output when stdout and stderr go to one log file, as in CI."""
    done = subprocess.run([str(SIMSTACK), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout
