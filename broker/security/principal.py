"""Principals: Kafka's ``User:<name>`` strings, and the name a TLS client certificate gives.

A client certificate's subject becomes a distinguished name the way Java's
``X500Principal.getName()`` prints it (RFC 2253: the most specific attribute first,
``CN=alice,OU=eng,O=example,C=DE``), then ``ssl.principal.mapping.rules`` (Kafka's
``SslPrincipalMapper``: ``RULE:pattern/replacement/[LU]`` entries and ``DEFAULT``, tried in
order) turn it into the principal's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from broker.net.session import KafkaPrincipal

#: Java's RFC 2253 keywords for the attributes Python's ``getpeercert`` names
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
#: attributes Java prints as dotted OIDs with the value as hex DER (IA5String / PrintableString)
_OIDS = {
    "emailAddress": ("1.2.840.113549.1.9.1", 0x16),
    "serialNumber": ("2.5.4.5", 0x13),
    "title": ("2.5.4.12", 0x0C),
    "givenName": ("2.5.4.42", 0x0C),
    "surname": ("2.5.4.4", 0x0C),
}


def parse_principal(text: str) -> KafkaPrincipal:
    """``User:alice`` -> KafkaPrincipal (Kafka's SecurityUtils.parseKafkaPrincipal)."""
    kind, sep, name = text.partition(":")
    if not sep or not kind:
        raise ValueError(f"expected a principal as Type:name, got {text!r}")
    return KafkaPrincipal(kind, name)


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _der_hex(tag: int, value: str) -> str:
    raw = value.encode()
    if len(raw) < 128:
        length = bytes([len(raw)])
    else:
        n = len(raw).to_bytes((len(raw).bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(n)]) + n
    return "#" + (bytes([tag]) + length + raw).hex()


def distinguished_name(peercert: dict[str, Any]) -> str:
    """The certificate subject as Java's ``X500Principal.getName()`` (RFC 2253) prints it."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        parts = []
        for attr, value in rdn:
            if attr in _KEYWORDS:
                parts.append(f"{_KEYWORDS[attr]}={_escape(value)}")
            elif attr in _OIDS:
                oid, tag = _OIDS[attr]
                parts.append(f"{oid}={_der_hex(tag, value)}")
            else:
                parts.append(f"{attr}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        result = self.pattern.sub(self.replacement, dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result


_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


def _java_replacement(text: str) -> str:
    """A Java replacement string (``$1``, ``\\$``) as Python's re wants it (``\\g<1>``)."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        if ch == "$":
            m = re.match(r"\$(\d+)", text[i:])
            if m:
                out.append(f"\\g<{m.group(1)}>")
                i += len(m.group(0))
                continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule matching the distinguished name gives
    the principal's name; ``DEFAULT`` is the name itself."""

    def __init__(self, rules: str | None) -> None:
        text = (rules or "DEFAULT").strip()
        self.rules: list[_Rule] = []
        pos = 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(
                    f"invalid ssl.principal.mapping.rules at offset {pos}: {text[pos:]!r}"
                )
            if m.group(1) == "DEFAULT":
                self.rules.append(_Rule(None))
            else:
                self.rules.append(
                    _Rule(
                        re.compile(m.group(2).replace("\\/", "/")),
                        _java_replacement(m.group(3).replace("\\/", "/")),
                        lower=m.group(4) == "L",
                        upper=m.group(4) == "U",
                    )
                )
            pos = m.end()

    def name(self, dn: str) -> str:
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise ValueError(f"no ssl.principal.mapping.rules rule applies to {dn}")
