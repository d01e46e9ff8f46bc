"""Whether a run of characters is a random token: the secrets with no name, no place and no
prefix that says what they are.

A token of letters and digits drawn at random changes between capitals, small letters and
digits at most places (about 60% of them for base62), and holds few runs of small letters long
enough to read as words; a name in code (``handleOAuth2Callback``), a path or a word list does
neither. What is random but no secret is told apart by what it decodes to: a hash or a public
key in base64 has the structure of one (an SSH key's length prefix, DER's sequence), a base58
address or content id its checksum or hash code, an image its magic bytes. Hex, and letters of
one case with digits (hashes, content ids, ULIDs), are never random here: a secret of those
shapes is known only by its name or its place.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from itertools import pairwise

MIN_LENGTH = 24
"""Shorter runs are ids as often as secrets (a nanoid has 21 characters, a YouTube id 11)."""
MAX_LENGTH = 256
"""Longer runs of base64 are data (encrypted content, a blob): a key that long has a shape."""

_WORD_PREFIX = re.compile(r"(?:(?:[A-Za-z][a-z]{2,}|[A-Z]{3,})[_-])+")
"""A file's or a variable's words before a token glued to them: ``backup_``, ``API_KEY_``."""
_WORD_SUFFIX = re.compile(r"(?:[_-](?:[a-z]{3,}|[A-Z][a-z]{2,}))+$")
_READABLE = re.compile(r"[A-Z]?[a-z]{3,}")
"""What reads as a word in a path: ``src``, ``Callback``."""
_FOLDER = re.compile(r"[a-z][a-z0-9._-]{1,63}")
"""How a relative path starts: a folder's name in small letters (base64 opens with one rarely)."""
_CHUNK = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]")
"""The letters of a name in code, word by word: ``Shop``, ``V``, ``Main``, ``UI``."""
MEAN_CHUNK = 3.0
"""Words in a name are three letters long or more, on average; the case of random letters
changes sooner (an average of 2.1 for base62 and base64, 3.1 for one in a hundred)."""
_PART_WORD = re.compile(r"[A-Z][a-z]{2,}|[a-z]{4,}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+={0,2}")
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_DIGITS = {c: i for i, c in enumerate(_BASE58)}
_MAGIC = (
    b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF", b"PK\x03\x04", b"\x1f\x8b",
    b"BM", b"II*\x00", b"MM\x00*", b"\x00\x00\x01\x00", b"wOF", b"OTTO", b"\x00\x01\x00\x00",
    b"\x80\x00\x00\x00\x00",
)  # fmt: skip
"""The first bytes of images, documents, archives and fonts; of a Fernet token (data sealed
with a key, not the key)."""


def random_part(run: str) -> tuple[int, int] | None:
    """Where in ``run`` (a run of letters, digits and ``+/=_-``) a random token is, if one is:
    after the words a name glued to it (``backup_…``), before those after it; in a path, the
    segments between its words."""
    if "/" in run:
        segments = run.split("/")
        if (
            run.startswith("/")
            or _FOLDER.fullmatch(segments[0])
            or any(_READABLE.fullmatch(s) or s.isdigit() for s in segments)
        ):  # a path (src/…, ipv4address/…, 2025/10/…): each of its parts is judged on its own
            at, found = 0, []
            for segment in segments:
                part = random_part(segment)
                if part is not None:
                    found.append((at + part[0], at + part[1]))
                at += len(segment) + 1
            return (found[0][0], found[-1][1]) if found else None
    start = prefix.end() if (prefix := _WORD_PREFIX.match(run)) else 0
    suffix = _WORD_SUFFIX.search(run, start)
    end = suffix.start() if suffix else len(run)
    return (start, end) if looks_random(run[start:end]) else None


def looks_random(token: str) -> bool:
    """Whether ``token`` reads as drawn at random, and as no encoded structure; or is a private
    key in base64 or base58, whatever its length."""
    if private_key(token):
        return True
    body = token.rstrip("=")
    if not MIN_LENGTH <= len(body) <= MAX_LENGTH:
        return False
    if _ANY_HEX.fullmatch(body):
        return False  # a number, an address with its checksum in its case (EIP-55)
    if _BASE36.fullmatch(body):
        return _random_base36(body)
    upper, lower = sum(c.isupper() for c in body), sum(c.islower() for c in body)
    if min(upper, lower) < len(body) * 0.15 or not any(c.isdigit() for c in body):
        return False  # hex, digits, one case, a word or two on a hash: hashes and ids
    if _mean_chunk(body) >= MEAN_CHUNK:
        return False  # words: a name in code, a sentence run together
    if _HEX.fullmatch(_PART_WORD.sub("", _SEPARATOR.sub("", body))):
        return False  # a hash or a UUID with a name glued on: 2d99…e8dConfirmEditPage
    parts = _SEPARATOR.split(body)
    if len(parts) > 1 and not any(mixed(part) for part in parts):
        return False  # numbers, hex and short parts between dashes: a date, a UUID, a version
    letters = "".join(parts)
    switches = sum(_kind(a) != _kind(b) for a, b in pairwise(letters))
    if switches < len(letters) * 0.3:
        return False
    return not _structured(token)


_SEPARATOR = re.compile(r"[-_/]")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_ANY_HEX = re.compile(r"0x[0-9a-fA-F]+")


_BASE36 = re.compile(r"[a-z0-9]+")
_LETTERS = re.compile(r"[a-z]+")
_GLUED_HEX = re.compile(r"[a-z]{0,16}\d{0,8}[0-9a-f]{24,}")
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _random_base36(body: str) -> bool:
    """Small letters and digits drawn at random: 32 or more, not hex, a digit in every seven
    characters or more (base36 has one in 3.6, base32 one in 5.3), no word of seven letters, and
    no address with its checksum (bech32)."""
    if len(body) < 32 or _GLUED_HEX.fullmatch(body):
        return False  # hex, or a word glued to a hash (a grep's line, a file's name)
    digits = sum(c.isdigit() for c in body)
    if not len(body) / 7 <= digits <= len(body) * 0.6:
        return False
    if max(map(len, _LETTERS.findall(body)), default=0) >= 7:
        return False
    return not bech32(body)


def bech32(text: str) -> bool:
    """Whether ``text`` is bech32 or bech32m (a human part, 1, data with its checksum)."""
    human, one, data = text.rpartition("1")
    if not one or not human or len(data) < 6 or any(c not in _BECH32 for c in data):
        return False
    check = 1
    values = [ord(c) >> 5 for c in human] + [0] + [ord(c) & 31 for c in human]
    for value in values + [_BECH32.index(c) for c in data]:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i, generator in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            check ^= generator if top >> i & 1 else 0
    return check in (1, 0x2BC830A3)


def mixed(part: str) -> bool:
    """A part of a token that mixes kinds of characters (capitals, small letters, digits) as a
    random one does, in chunks shorter than words."""
    kinds = any(c.isupper() for c in part) + any(c.islower() for c in part)
    kinds += any(c.isdigit() for c in part)
    return (
        len(part) >= 6
        and kinds >= 2
        and not _HEX.fullmatch(part)
        and _mean_chunk(part) < MEAN_CHUNK
    )


def _mean_chunk(token: str) -> float:
    chunks = [c for word in _NOT_LETTERS.split(token) for c in _CHUNK.findall(word)]
    return sum(map(len, chunks)) / len(chunks) if chunks else 0.0


_NOT_LETTERS = re.compile(r"[^A-Za-z]+")


def _kind(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


def decoded(token: str) -> bytes | None:
    """The bytes a base64 or base64url token stands for; None if it is neither."""
    if not _BASE64.fullmatch(token) or len(token.rstrip("=")) % 4 == 1:
        return None
    try:
        return base64.b64decode(token.translate(_URLSAFE) + "==")
    except binascii.Error:
        return None


_URLSAFE = str.maketrans("-_", "+/")


def is_data(data: bytes) -> bool:
    """Bytes with the structure of a file or a key that is no secret: an image, a document,
    an archive (by their magic bytes), a public key in SSH's wire format, DER but a private
    key's."""
    if data.startswith(_MAGIC) or data.startswith(b"\x00\x00\x00"):
        return True
    if data.startswith((b"Ed", b"ED")) and not data.startswith(b"EdS"):
        return True  # a minisign public key or signature (its secret key opens with EdS)
    return _der_length(data) is not None and not is_private_der(data)


def private_key(token: str) -> bool:
    """A private key: DER that opens as one, in base64 or hex; OpenSSH's without its armor; a
    WIF or BIP-32 private key in base58."""
    if token.startswith(_OPENSSH_KEY) or is_private_base58(token):
        return True
    data = bytes.fromhex(token) if _DER_HEX.match(token) and len(token) % 2 == 0 else None
    data = data or decoded(token)
    return data is not None and is_private_der(data)


_DER_HEX = re.compile(r"30[0-9a-fA-F]{2,6}0201(?:00|01|03)[0-9a-fA-F]*\Z")


_OPENSSH_KEY = "b3BlbnNzaC1rZXktdjE"  # "openssh-key-v1" in base64


def _structured(token: str) -> bool:
    """Whether ``token`` is something random that is no secret: an image or file in base64,
    a public key or certificate (SSH's wire format, DER), a base58 address or content id."""
    data = decoded(token)
    if data is not None and is_data(data):
        return True
    if base58check(token) is not None:
        return not is_private_base58(token)
    if ss58(token) or ripple_address(token):
        return True  # a Polkadot or Substrate address, an XRP Ledger address
    # A Solana address (32 bytes) or signature (64), an IPFS content id (Qm…).
    return len(token) in _BASE58_PUBLIC and all(c in _BASE58_DIGITS for c in token)


_BASE58_PUBLIC = {43, 44, 46, 87, 88}
"""The lengths of base58 public values without a checksum (a random base64 token of 43 or 44
characters avoids 0, O, I, l, +, / and _ once in 70)."""


_PRIVATE_EXTENDED = {
    bytes.fromhex(v)
    for v in ("0488ade4", "04358394", "049d7878", "04b2430c", "045f18bc", "044a4e28", "0295b005")
} | {bytes.fromhex(v) for v in ("02aa7a99", "0d0f3a07", "2bf64e07", "11a2e0c9", "1051eebd")}
"""The version bytes of BIP-32 private keys (xprv, tprv, yprv, zprv, vprv, uprv, Yprv, Zprv)
and the prefixes of Tezos' secret keys (edsk, spsk, p2sk)."""


def _base58(token: str, digits: dict[str, int] = _BASE58_DIGITS) -> bytes | None:
    """The bytes a base58 string of 25 to 120 characters stands for (in Bitcoin's alphabet, or
    in ``digits``)."""
    if not 25 <= len(token) <= 120 or any(c not in digits for c in token):
        return None
    number = 0
    for char in token:
        number = number * 58 + digits[char]
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    zero = next(iter(digits))
    return b"\x00" * (len(token) - len(token.lstrip(zero))) + raw


_RIPPLE = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"
_RIPPLE_DIGITS = {c: i for i, c in enumerate(_RIPPLE)}


def ripple_address(token: str) -> bool:
    """Whether ``token`` is an XRP Ledger address: r, 20 bytes and a double SHA-256 checksum in
    Ripple's alphabet."""
    raw = _base58(token, _RIPPLE_DIGITS) if token.startswith("r") else None
    if raw is None or len(raw) != 25:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def ss58(token: str) -> bool:
    """Whether ``token`` is an SS58 address (Polkadot's): a prefix, 32 bytes, and two bytes of
    BLAKE2b over "SS58PRE" and them."""
    raw = _base58(token)
    if raw is None or len(raw) not in (35, 36):
        return False
    payload, checksum = raw[:-2], raw[-2:]
    return hashlib.blake2b(b"SS58PRE" + payload).digest()[:2] == checksum


def base58check(token: str) -> bytes | None:
    """The payload of a Base58Check string (its version byte first), if its checksum holds."""
    raw = _base58(token)
    if raw is None:
        return None
    payload, checksum = raw[:-4], raw[-4:]
    if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != checksum:
        return None
    return payload


def is_private_base58(token: str) -> bool:
    """A private key in Wallet Import Format (a version byte, 32 bytes and perhaps 01: of any
    coin, an address has 20 bytes), a BIP-32 extended private key, a Tezos secret key."""
    payload = base58check(token)
    return payload is not None and (
        len(payload) == 33
        or (len(payload) == 34 and payload[-1] == 1)
        or payload[:4] in _PRIVATE_EXTENDED
    )


def stellar_secret(token: str) -> bool:
    """A Stellar secret seed: version byte 18 << 3, 32 bytes, and its CRC-16 (XModem)."""
    try:
        raw = base64.b32decode(token + "=" * (-len(token) % 8))
    except binascii.Error:
        return False
    if len(raw) != 35 or raw[0] != 0x90:
        return False
    crc = 0
    for byte in raw[:33]:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return raw[33:] == crc.to_bytes(2, "little")


def _der_length(data: bytes) -> int | None:
    """Where the first member of a DER sequence starts, if ``data`` opens as one whose length
    is the rest of ``data`` (or more: a key cut short); random bytes rarely do."""
    if len(data) < 8 or data[0] != 0x30:
        return None
    size = data[1]
    if size < 0x80:
        return 2 if size >= len(data) - 2 else None
    count = size & 0x7F
    if not 1 <= count <= 2:
        return None
    length = int.from_bytes(data[2 : 2 + count], "big")
    return 2 + count if length >= len(data) - 2 - count and length >= 0x80 else None


def is_private_der(data: bytes) -> bool:
    """DER that opens as a private key does (PKCS#1, PKCS#8, SEC 1): a sequence whose first
    member is its version, the integer 0 or 1; a public key or a certificate opens with a
    sequence inside."""
    at = _der_length(data)
    if at is None:
        return False
    if data[at : at + 3] in (b"\x02\x01\x00", b"\x02\x01\x01", b"\x02\x01\x03"):
        return True  # PKCS#1, PKCS#8, SEC 1; PKCS#12's store (version 3)
    return any(oid in data[:40] for oid in _ENCRYPTED_KEY)  # PKCS#8 encrypted


_ENCRYPTED_KEY = (bytes.fromhex("2a864886f70d01050d"), bytes.fromhex("2a864886f70d010c01"))
"""The OIDs of PBES2 and of PKCS#12's PBE schemes, first in an encrypted private key."""
