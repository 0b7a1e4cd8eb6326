"""What a person reads of a board's console: its terminal control sequences removed."""

from __future__ import annotations

from pytest_pinet.lab.strategy import readable


def test_a_bios_screen_clear_and_a_shell_s_bracketed_paste_are_not_shown():
    # what the QEMU board's console held while it booted (SeaBIOS resets and clears the screen)
    assert readable("\x1bc\x1b[?7l\x1b[2JSeaBIOS (version 1.16)\r\n") == "SeaBIOS (version 1.16)\n"
    assert readable("\x1b[?2004hroot@qpi:~# uname\tx") == "root@qpi:~# uname\tx"
    assert readable("plain text\nsecond line") == "plain text\nsecond line"
