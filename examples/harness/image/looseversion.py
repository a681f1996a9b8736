"""A small stand-in for the PyPI package looseversion, which Debian bookworm does not package.

Salt 3006 imports looseversion.LooseVersion (salt/utils/versions.py subclasses it). This module
gives the classic distutils LooseVersion semantics: a version string is split into numbers and
letter runs, numbers compare as integers, and comparisons go through _cmp. It is part of the
oduflow-go harness image only; it is not Salt's code.
"""
import re

__all__ = ["LooseVersion"]

_COMPONENT = re.compile(r"(\d+|[a-z]+|\.)", re.IGNORECASE)


class LooseVersion:
    def __init__(self, vstring=None):
        if vstring:
            self.parse(vstring)

    def parse(self, vstring):
        self.vstring = vstring
        parts = []
        for piece in _COMPONENT.split(vstring):
            if not piece or piece == ".":
                continue
            parts.append(int(piece) if piece.isdigit() else piece)
        self.version = parts

    def __str__(self):
        return self.vstring

    def __repr__(self):
        return "LooseVersion(%r)" % str(self)

    def _cmp(self, other):
        if isinstance(other, str):
            other = LooseVersion(other)
        elif not isinstance(other, LooseVersion):
            return NotImplemented
        if self.version == other.version:
            return 0
        return -1 if self.version < other.version else 1

    def _compare(self, other, accept):
        c = self._cmp(other)
        return c if c is NotImplemented else accept(c)

    def __eq__(self, other):
        return self._compare(other, lambda c: c == 0)

    def __ne__(self, other):
        return self._compare(other, lambda c: c != 0)

    def __lt__(self, other):
        return self._compare(other, lambda c: c < 0)

    def __le__(self, other):
        return self._compare(other, lambda c: c <= 0)

    def __gt__(self, other):
        return self._compare(other, lambda c: c > 0)

    def __ge__(self, other):
        return self._compare(other, lambda c: c >= 0)

    def __hash__(self):
        return hash(tuple(str(p) for p in self.version))
