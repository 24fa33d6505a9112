"""What a terminal would show for raw tty bytes: the observation text of `execute_bash`.

OpenHands reads its shell's output off a tmux pane, so the model sees the rendered terminal, not the byte
stream: a progress bar that redraws itself with carriage returns shows once, in its last state, and colour
codes are gone. Our shell reads the byte stream, so it renders it the same way here: escape sequences are
dropped, `\\r` returns to the start of the line and later text overwrites earlier text, backspace moves
left one column. Line wrapping is not emulated (upstream's pane is wide and its capture joins wrapped lines).
"""
from __future__ import annotations

import re

# CSI (colours, cursor moves, erase), OSC (window titles; ended by BEL or ESC \), and two-byte escapes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_ERASE_LINE = re.compile(r"\x1b\[[02]?K")  # "erase to end of line", what progress bars send after a \r
_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")  # other C0 controls a pane does not display


def render_line(line: str) -> str:
    """One line (no \\n) as it ends up on screen."""
    if "\r" not in line and "\b" not in line:
        return line
    cells: list[str] = []
    col = 0
    for ch in line:
        if ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        else:
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
    return "".join(cells)


def render(text: str) -> str:
    """Terminal output with escape sequences removed and carriage-return overwrites applied."""
    if "\x1b" in text:
        # An erase after a \r empties the rest of the line: mark it so the shorter redraw wins.
        text = _ERASE_LINE.sub("\x00", text)
        text = _ESCAPES.sub("", text)
    if "\x00" in text:
        text = "\n".join(_erase(line) for line in text.split("\n"))
    text = _CONTROLS.sub("", text.replace("\r\n", "\n"))
    if "\r" not in text and "\b" not in text:
        return text
    return "\n".join(render_line(line) for line in text.split("\n"))


def _erase(line: str) -> str:
    """Apply erase-to-end-of-line marks (\\x00) by rendering up to each mark and cutting there."""
    if "\x00" not in line:
        return line
    parts = line.split("\x00")
    out = parts[0]
    for part in parts[1:]:
        shown = render_line(out)
        col = _column(out)
        out = shown[:col] + part
    return out


def _column(text: str) -> int:
    """The cursor column after writing `text` on a fresh line."""
    col = 0
    for ch in text:
        col = 0 if ch == "\r" else max(0, col - 1) if ch == "\b" else col + 1
    return col
