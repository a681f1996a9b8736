#!/usr/bin/env python3
"""Writes ../scalars.salt.json: how Salt 3006's SaltYamlSafeLoader reads each
plain scalar of SCALARS as the value of "k: <scalar>" (type and value), for
scalar_test.go. Run from this directory: python3 salt_scalars.py
"""
import json
import os

from salt_render import load

SCALARS = [
    # accepted as typed values
    "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE",
    "0", "-0", "7", "42", "-17", "9007199254740992", "-9007199254740992",
    "1.5", "-0.25", "0.1", "3.14159265358979323846", "0.000001", "123456.789",
    # accepted as strings
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-1-2",
    "10:00-12:00", "1.2.3", "v1", "10.0.0.1", "1e", "+x", "-foo", "~foo", "nullable",
    "Yes_please", "nope", "onward", "truely", "falsey", "abc", "a b", "0644x", "0x", "0b", "0o",
    "1_", "_1", "1-2", "1/2", "12:30:00x", "--", "-", ".", "..", "...x", "+", ".e1", "1.2e", "e3",
    # refused as ambiguous (Salt's reading shown for the record)
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
    "y", "Y", "n", "N", "0644", "00", "0o644", "0x1F", "0b101", "1_000", "1:30", "-1:30", "1:30:00",
    "190:20:30.15", "1e3", "1E3", "1.5e+3", "1.5e3", ".5", "1.", "2.0", "-3.0", "+1", "+1.5", ".inf",
    "-.inf", "+.inf", ".Inf", ".NAN", ".nan", "00.5", "1_0.5", "=", "007", "9007199254740993",
]


def main():
    out = []
    for s in SCALARS:
        try:
            v = load("k: " + s + "\n")["k"]
            t = type(v).__name__
            out.append({"plain": s, "salt_type": t, "salt_value": v if t != "float" or v == v and abs(v) != float("inf") else repr(v)})
        except Exception as e:  # noqa: BLE001
            out.append({"plain": s, "salt_type": "error", "salt_value": type(e).__name__})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scalars.salt.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
