"""A waiting line and the one loop that hands a resource's free units to it.

A thread pool, a lock and a hand-off queue all keep work waiting for something they hand
out (a thread, the lock, a consumer). When a unit comes free it goes to a waiter at the
same instant, and that waiter's work runs at once: it may give a unit back, or queue again,
before the hand-over returns. Rather than recursing, a hand-over asked for while one is
running only asks the running one for another pass, so a long chain of hand-overs at one
instant stays a loop (and the stack stays flat). Each resource says in one hook, ``_serve``,
what one pass hands out and in which order, as a SimPy resource does in ``_do_put``.
"""

from __future__ import annotations


class WaitingLine:
    __slots__ = ("handing", "_again")

    def __init__(self) -> None:
        self.handing = False  # a hand-over is running (further calls only ask for another pass)
        self._again = False

    def hand_over(self) -> None:
        """Give waiters what is free now, pass after pass until a pass is not asked for again."""
        if self.handing:
            self._again = True
            return
        self.handing = True
        try:
            self._again = True
            while self._again:
                self._again = False
                self._serve()
        finally:
            self.handing = False

    def _serve(self) -> None:
        """One pass: hand out what is free, in the line's order."""
        raise NotImplementedError
