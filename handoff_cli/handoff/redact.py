"""Secrets out, before anything leaves the machine.

Every text of the request (the conversation, tool calls and results, the focus) is scanned for
credentials, each replaced by ``[REDACTED:kind:n]``: the same secret always gets the same number,
so the model (and the document, and the next session) can still tell two secrets apart without
seeing either. Only precise shapes and names are matched, never "random-looking" strings: the next
session needs its hashes, ids and paths exactly.

Why our own rules: on the corpus in ``tests/fixtures/secrets`` (262 fake secrets of 133 kinds,
41 records of traps, every string of the session fixtures) they mask every secret and change
nothing else (README, Safety, for how other scanners fared).

Three passes, each a table of rules below: first the secrets known by their shape (``sk-…``,
``ghp_…``, key blocks, JWTs), then those known by their name or place (``PASSWORD=…``,
``"client_secret": "…"``, ``Authorization: Bearer …``, a URL's password, a password given in
prose), then those encoded (base64 that decodes to a credential). Each pass reads the text as the
passes before it left it, their secrets already placeholders, so a value is judged as it will
read once masked; and the passes run again on what they made until they find nothing more. So
masking again finds nothing (``mask(mask(x)) == mask(x)``, which the tests check). A value
holding or touching a secret found before is one secret with it (``Bearer eyJ…_KEY=HRKU-…`` is
one ``bearer-token``); ``OPENAI_API_KEY=sk-…`` stays an ``openai-key``. Nothing is found inside a
placeholder, ours or one already in the text.

A token wrapped onto the next line (a shell continuation, ``\\`` and a newline; or a hard wrap,
a long line ending inside a token that the next line goes on with) is read as one: the rules run
on the text with those line breaks taken out, and a secret that spans one is masked whole.

Speed: every rule at every position runs at well under 1 MB/s. So each rule starts with an
*anchor*, a literal or a short regex that starts with one, which ``re`` finds about as fast as
``str.find``; the anchors are looked for first, in all the texts of a request at once, and the
rules run only where one was found, with ``match``. The result is that of running every rule at
every position: the tests compare the two.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from handoff_cli.handoff import randomness
from handoff_cli.handoff.prompt import ChatMessage
from handoff_cli.sessions.jsonl import dumps, parse_line

Verdict = tuple[int, int, str]
"""Where a secret is, and its kind."""


@dataclass(frozen=True)
class Rule:
    kind: str
    """The placeholder's middle part: ``[REDACTED:kind:n]``."""
    anchor: str
    """Where a match starts: a key of ``_ANCHORS``, or PREFIX."""
    pattern: str
    """Where only part of the match is the secret, that part is the group ``secret``."""
    prefix: str = ""
    """With the anchor PREFIX: how the pattern starts, ending with a separator (``sk-``)."""
    check: Callable[[str, int, int], Verdict | None] | None = None
    """Given the text and where the secret matched, where the secret is after all and its
    kind, or None when it is none (for encoded text: by what it decodes to; for a random token:
    by its characters and by what is before it; for a flag: by the command's program)."""


# Where matches start: anchors, found by scans of the texts as ASCII bytes, one scan for each
# character (a scan costs about as much as its character is frequent, and little more): an
# anchor is the character it is looked for by, the rarest of it (in session text), and a regex
# from it on. Where the match starts before that character, an empty group in a look-behind
# marks it (the first such group that took part). An anchor in the lower-cased text finds what
# a rule may match in any case (a superset, which the rule narrows). After a name, only what can
# follow it in a rule: an assignment (``=``, ``:``, ``=>``, ``:=``, perhaps after a closing
# quote), or, after ``-``, a flag's value, or, in prose, ``is``. Anchors that share a scan never
# match at the same place (the tests would tell: they compare with every rule everywhere).
# A name may end with what says which of several it is (DB_PASS_PROD, apiKeyV2, token_2).
_SUFFIXES = (
    "prod|production|dev|development|stage|staging|test|testing|live|qa|uat|local|new|old|"
    r"current|prev|previous|primary|secondary|main|backup|value|plain|raw|v\d{1,2}|\d{1,2}"
)
_SUFFIX_BYTES = rb"(?:[_.-]?(?:" + _SUFFIXES.encode() + rb"))*"
# After a name: an assignment, a list's next item, XML's value=, HCL's block, an element's end.
_THEN_ASSIGN = (
    rb"(?="
    + _SUFFIX_BYTES
    + rb"""(?:(?:\\?["'`]\]?)?[ \t]*[:=]|\\?["'`][ \t]*,|\\?["'][ \t]+(?:\w+:)?value="""
    + rb"""|\\?["'][ \t]*\{|>|[ \t]+[\w:-]+=\\?["'][^"'<>\n]{0,64}\\?["'][^<>\n]{0,128}>))"""
)
_THEN_ASSIGN_OR_CALL = rb"""(?=(?:\\?["'`]\]?)?[ \t]*[:=(])"""
_THEN_IS = rb"(?=[ \t]+(?:is|was)[ \t])"
# A Discord bot token starts with its user's id (17 to 20 digits) in base64: four characters for
# each three digits, from these sets; its length says how many digits.
_B64_DIGITS = "[MNO][DTjz][AEIMQUYcgk][w-z0-5]"
_DISCORD_IDS = (
    f"(?:{_B64_DIGITS}){{6}}[MNO][DTjz][AEIMQUYcgk]",
    f"(?:{_B64_DIGITS}){{6}}[MNO][AQgw]",
    f"(?:{_B64_DIGITS}){{6}}",
    f"(?:{_B64_DIGITS}){{5}}[MNO][DTjz][AEIMQUYcgk]",
)
_SEED_NAMES = [f"{w}{s}phrase" for w in ("seed", "recovery") for s in (" ", "_", "-", "")]
# PREFIX: a key's prefix (``sk-``, ``ghp_``, ``SG.``), found from the separator that ends it:
# followed by 16 characters of the key, one of the first 31 a digit or a capital (which a
# snake_case name has not), it ends a prefix at most ``_PREFIX_REACH`` characters long.
PREFIX = "prefix"
_AFTER_PREFIX = r"(?=[A-Za-z0-9_-]{16})(?=[a-z_-]{0,30}[A-Z0-9])"
_PREFIX_REACH = 24
_SEPARATORS = {f"{PREFIX}{sep}" for sep in "_-."}
# name: (in the lower-cased text?, the character, the regex from it on). Each alternative of a
# shared scan starts with a literal (``re`` skips the others at a glance).
_ANCHORS: dict[str, tuple[bool, bytes, bytes]] = {
    "login": (True, b"g", rb"in(?<=()login)"),
    "auth": (
        True,
        b"u",
        rb"th(?<=()auth)(?:orization)?(?:" + _THEN_ASSIGN_OR_CALL + rb"|(?=[ \t]+plain[ \t]))",
    ),
    "key": (
        True,
        b"k",
        rb"ey(?:"
        + _THEN_ASSIGN
        + rb"|(?<=-key)(?=[ \t])|(?<=_key)(?=[ \t]+[^\s=:])|(?=-data:)|"
        + _THEN_IS
        + rb")",
    ),
    "-apikey": (True, b"k", rb"ey(?:(?<=-()apikey)|(?<=-()api-key))(?=[ \t])"),  # -ApiKey …
    "token": (
        True,
        b"k",
        rb"en(?<=()token)(?:"
        + _THEN_ASSIGN
        + rb"|(?<=[-_]token)(?=[ \t])|(?=\$(?:production|sandbox)\$)|"
        + _THEN_IS
        + rb")",
    ),
    "cookie": (True, b"k", rb"ie(?<=()cookie)"),
    "identified": (True, b"d", rb"entified(?<=()identified)"),
    "mysql": (True, b"m", rb"(?:ysql|ariadb)"),
    "pass": (
        True,
        b"p",
        rb"ass(?:word|wd|phrase|code|wort|e)?(?:" + _THEN_ASSIGN + rb"|(?=[ \t>]))",
    ),
    "pwd": (True, b"p", rb"(?:wd|w(?<=_pw))(?:" + _THEN_ASSIGN + rb"|(?=[ \t]))"),
    "pin": (
        True,
        b"p",
        rb"in(?:(?<![a-z]pin)(?![a-z])|(?<=[a-z0-9_-]pin)(?=\\?[\"']?[ \t]*[:=]))",
    ),
    "phrase": (
        True,
        b"p",
        rb"hrase(?:" + b"|".join(rb"(?<=()" + n.encode() + rb")" for n in _SEED_NAMES) + rb")",
    ),
    "dapi": (True, b"d", rb"api"),
    "secret": (
        True,
        b"c",
        rb"ret(?<=()secret)(?:_?key_?base)?(?:"
        + _THEN_ASSIGN
        + rb"|(?<=[-_]secret)(?=[ \t])|"
        + _THEN_IS
        + rb")",
    ),
    "mnemonic": (True, b"m", rb"nemonic"),
    "echo": (True, b"c", rb"ho(?<=()echo)(?=[ \t])"),
    "printf": (True, b"p", rb"rintf(?=[ \t])"),
    "net": (True, b"u", rb"se(?:r(?<=()net user)|(?<=()net use))(?=[ \t])"),
    "psk": (True, b"k", rb"(?<=()psk)(?=[ \t]*=)"),
    "cred": (True, b"c", rb"red(?:entials?|s)?" + _THEN_ASSIGN),
    "salt": (True, b"l", rb"t(?<=()salt)" + _THEN_ASSIGN),
    "seed": (True, b"d", rb"(?<=()seed)" + _THEN_ASSIGN),
    "otp": (True, b"p", rb"(?<=()otp)" + _THEN_ASSIGN),
    "putty": (False, b"-", rb"Lines:(?<=()Private-Lines:)"),
    "sqlplus": (True, b"q", rb"lplus(?<=()sqlplus)"),
    "rabbitmqctl": (True, b"q", rb"ctl(?<=()rabbitmqctl)"),
    "code": (True, b"c", rb"ode(?==)"),
    "64": (True, b"6", rb"4(?:(?<=()base64)|(?<=()b64)(?=decode))"),
    "~": (True, b"~", rb"(?:(?<=()sha256~)|(?<=()[a-z0-9_~.]{3}[0-9]q~))"),  # OpenShift, Azure AD
    "!": (True, b"!", rb"(?<=()00[a-z0-9]{13}!)"),  # Salesforce
    "://": (True, b":", rb"//"),
    "/p:": (  # Windows' /p:…, /pass:…, /password:… (xfreerdp, cmdkey, wmic)
        True,
        b"p",
        rb"(?:assword:(?<=()/password:)|ass:(?<=()/pass:)|wd:(?<=()/pwd:)|w:(?<=()/pw:)"
        rb"|:(?<=()/p:))",
    ),
    "0x": (True, b"x", rb"(?<=()0x)[0-9a-f]{64}(?![0-9a-f])"),
    "[": (False, b"[", rb"(?=[ \t\r\n]*\d{1,3}[ \t\r\n]*,[ \t\r\n]*\d{1,3}[ \t\r\n]*,)"),
    "dsn": (True, b":", rb"""(?=[^\s:@/"'`]{3,128}@(?:tcp|unix|udp)\()"""),  # Go's MySQL DSN
    "pgpass": (  # host:port:database:user:password
        True,
        b":",
        rb"(?<=[\w.*-]:)(?=(?:\d{1,5}|\*):(?![0-9])[\w.*$-]{1,64}:[\w.*$@-]{1,64}:[^\s:]{3})",
    ),
    # AWS, Google, Atlassian, JFrog, Bedrock, Yandex, Tencent, 1Password, Firebase, Twitter; and
    # by the A inside them: Alibaba, EasyPost, Facebook and Square, Telegram's bot tokens.
    "A": (
        False,
        b"A",
        rb"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9]|Iza|TATT|TCTT|TBB|KCp|BSK|QVN|KID|3-"
        rb"|AAA[A-Za-z0-9_-]{7}:APA91b|A{20}|(?<=()LTA)I|(?<=()EZA)K|(?<=()EA)A[MCA]|tz[ar]\|IwE"
        rb"|C[0-9a-f]{32}\\?[\"'][ \t]*,"
        rb"|(?<=()[0-9]{10}:A)A|(?<=()[0-9]{9}:A)A|(?<=()[0-9]{8}:A)A)",
    ),
    "SK": (False, b"K", rb"(?<=()SK)[0-9a-fA-F]"),
    # JSON in base64 (JWTs, and encoded configs), an AWS session token, a key block in base64.
    "J": (False, b"J", rb"(?:(?<=()eyJ)|(?<=()IQoJ)|(?<=()LS0tLS1CRUdJ)|(?<=()ewogICJ))"),
    "Fwo": (False, b"F", rb"woGZXIvYXdz"),
    "signature": (True, b"g", rb"nature(?<=()signature)(?==)"),
    "response": (True, b"p", rb"onse(?<=()response)(?==)"),
    "-----BEGIN": (False, b"-", rb"----BEGIN "),
    "-u": (
        False,
        b"-",
        rb"""(?:u|-user|-proxy-user|-?auth|-(?:dest-|src-)?creds)(?=[ \t=]+["']?[^\s:"']+:)""",
    ),
    "-U%": (False, b"-", rb"""(?:U|-user)(?=[ \t=]+\\?["']?[^\s%"']{1,64}%)"""),  # smbclient
    "-u -p": (False, b"-", rb"(?<=[ \t]-)[uU](?=[ \t]*[^\s-]\S{0,63}[ \t]+-[pP][^\s-])"),
    "-flag": (False, b"-", rb"(?<=[ \t]-)[pPwkaNAXc](?=[ \t]+[^\s-]|[^\s=-])"),
    "-b": (False, b"-", rb"""b(?=[ \t]+\\?["']?[\w.%-]{1,64}=)"""),  # curl -b 'name=value'
    "redis-cli": (False, b"-", rb"cli(?<=()redis-cli)"),
    "-us": (False, b"-", rb"us(?<=()[0-9a-f]{32}-us)[0-9]"),  # Mailchimp
    # Discord, from its second dot: where the separator's first look-ahead holds too.
    ".": (
        False,
        b".",
        rb"(?=[A-Za-z0-9_-]{16})(?<=[A-Za-z0-9_-]{6}\.)(?=[A-Za-z0-9_-]{27})(?:"
        + b"|".join(rb"(?<=()" + head.encode() + rb"\.[A-Za-z0-9_-]{6}\.)" for head in _DISCORD_IDS)
        + rb")",
    ),
    **{sep: (False, sep[-1].encode(), _AFTER_PREFIX.encode()) for sep in sorted(_SEPARATORS)},
}


def _key(kind: str, prefix: str, body: str, anchor: str = PREFIX) -> Rule:
    """A key known by its prefix: a word of its own (it ends where its letters and digits do,
    or masking it would make the rest a word of its own), not a placeholder (``ghp_xxxx…``)."""
    after = _AFTER_PREFIX if anchor == PREFIX else ""
    pattern = (
        rf"\b(?:{prefix}){after}(?![\w.-]{{0,99}}?(?:xxxx|XXXX|EXAMPLE|(?i:your|here)[_-]))(?:{body})"
        r"(?![A-Za-z0-9])"
    )
    return Rule(kind, anchor, pattern, prefix if anchor == PREFIX else "")


_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
"""A random UUID, as a key is one: not one that holds a time (v1, v6, v7, ids in order)."""
_BASE64_LINE = r"[A-Za-z0-9+/=]"
_NEWLINE = r"(?:[ \t\r\n]|\\+[rn])+"  # also as \n inside JSON, or \\n inside JSON inside JSON
_PEM_HEADER = r"[A-Z][A-Za-z-]+: [^\r\n\\]*"  # Proc-Type:, DEK-Info:, Version:, Comment:
# A key block's body: base64 lines (the last one short, or the checksum of a PGP block), with or
# without the END line, which output cut short has lost.
_PEM_BODY = (
    rf"(?:{_NEWLINE}{_PEM_HEADER})*(?:{_NEWLINE}{_BASE64_LINE}{{16,}})+"
    rf"(?:{_NEWLINE}(?:{_BASE64_LINE}{{1,15}}(?={_NEWLINE}-----END)|=[A-Za-z0-9+/]{{4}}))*"
)


def _pem(kind: str, label: str) -> Rule:
    return Rule(
        kind,
        "-----BEGIN",
        rf"-----BEGIN {label}-----{_PEM_BODY}(?:{_NEWLINE}-----END {label}-----)?",
    )


def _wallet_key(text: str, start: int, end: int) -> Verdict | None:
    """``0x`` and 64 hex digits where the line says it is a private key, not a hash."""
    line = text[max(text.rfind("\n", 0, start), start - 200, 0) : start].lower()
    if _PRIVATE_WORDS.search(line) and not _PUBLIC_WORDS.search(line):
        return start, end, "private-key"
    return None


_PRIVATE_WORDS = re.compile(r"priv|secret|signer|wallet|seed|mnemonic|key")
_PUBLIC_WORDS = re.compile(r"\btx|hash|block|address|public|pub\b|pubkey|topic|root|commit|receipt")


# Pass 1: secrets known by their shape.
_SHAPES = (
    # Key blocks.
    _pem("pgp-private-key", "PGP PRIVATE KEY BLOCK"),
    _pem("private-key", r"(?:[A-Z0-9]+ )*PRIVATE KEY"),
    Rule("private-key", "0x", r"0x[0-9a-fA-F]{64}(?![0-9a-fA-F])", check=_wallet_key),
    Rule(  # a Solana keypair: 64 bytes in a JSON array
        "private-key",
        "[",
        r"\[(?:[ \t\r\n]*(?:25[0-5]|2[0-4]\d|1?\d{1,2})[ \t\r\n]*,){63}[ \t\r\n]*"
        r"(?:25[0-5]|2[0-4]\d|1?\d{1,2})[ \t\r\n]*\]",
    ),
    Rule(  # PuTTY's .ppk: the lines after Private-Lines
        "private-key",
        "putty",
        rf"Private-Lines:[ \t]*[0-9]{{1,3}}(?P<secret>(?:{_NEWLINE}{_BASE64_LINE}{{8,}})+)",
    ),
    # AI providers.
    _key("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
    _key("openrouter-key", "sk-or-v1-", "[a-f0-9]{32,}"),
    _key("langfuse-key", "sk-lf-", _UUID),
    _key("openai-key", "sk-(?:proj-|svcacct-|admin-|None-)?", "[A-Za-z0-9_-]{20,}"),
    _key("elevenlabs-key", "sk_", "[a-f0-9]{48}(?![A-Za-z0-9])"),
    _key("groq-key", "gsk_", "[A-Za-z0-9]{40,}"),
    _key("nvidia-key", "nvapi-", "[A-Za-z0-9_-]{60,}"),
    _key("anyscale-key", "esecret_", "[A-Za-z0-9]{20,}"),
    _key("adafruit-key", "aio_", "[A-Za-z0-9]{28}"),
    _key("xai-key", "xai-", "[A-Za-z0-9]{40,}"),
    _key("perplexity-key", "pplx-", "[A-Za-z0-9]{32,}"),
    _key("huggingface-token", "hf_|api_org_", "[A-Za-z0-9]{30,}"),
    _key("replicate-token", "r8_", "[A-Za-z0-9]{30,}"),
    _key("tavily-key", "tvly-(?:dev-|prod-)?", "[A-Za-z0-9]{24,}"),
    _key("langsmith-key", "lsv2_(?:pt|sk)_", "[a-f0-9]{32}_[a-f0-9]{6,}"),
    _key("pinecone-key", "pcsk_", "[A-Za-z0-9]{4,8}_[A-Za-z0-9]{50,}"),
    _key("fireworks-key", "fw_", "[A-Za-z0-9]{24,}"),
    _key("jina-key", "jina_", "[A-Za-z0-9_-]{40,}"),
    _key("firecrawl-key", "fc-", "[a-f0-9]{32}(?![A-Za-z0-9])"),
    _key("e2b-key", "e2b_", "[a-f0-9]{40}"),
    _key("aws-bedrock-key", "ABSK", "[A-Za-z0-9+/]{100,}={0,2}", "A"),
    # Code hosting, packages, CI.
    _key("github-token", "gh[pousr]_", "[A-Za-z0-9]{36,}"),
    _key("github-token", "github_pat_", "[A-Za-z0-9_]{22,}"),
    _key(
        "gitlab-token",
        "gl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ffct|agent|ft|wt)-",
        "[A-Za-z0-9_.-]{20,}",
    ),
    _key("npm-token", "npm_", "[A-Za-z0-9]{36,}"),
    _key("pypi-token", "pypi-", "AgE[A-Za-z0-9_-]{50,}"),
    _key("docker-token", "dckr_(?:pat|oat)_", "[A-Za-z0-9_-]{20,}"),
    _key("sonar-token", "sq[upa]_", "[a-f0-9]{40}"),
    _key("circleci-token", "CCIP(?:AT|RJ)_", "[A-Za-z0-9_]{30,}"),
    _key("buildkite-token", "bkua_", "[a-f0-9]{40}"),
    _key("rubygems-key", "rubygems_", "[a-f0-9]{48}"),
    _key("clojars-token", "CLOJARS_", "[a-z0-9]{60}"),
    _key("pulumi-token", "pul-", "[a-f0-9]{40}"),
    _key("jfrog-token", "AKCp", "[A-Za-z0-9]{69}", "A"),
    _key("octopus-key", "API-", "(?=[A-Z]{0,30}[0-9])[A-Z0-9]{26,}"),
    _key("sourcegraph-token", "sgp_", "(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    _key("sourcegraph-token", "slk_", "[a-f0-9]{64}"),
    _key("harness-token", r"(?:pat|sat)\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    _key("atlassian-token", "AT(?:ATT|CTT)3", "[A-Za-z0-9_=-]{40,}", "A"),
    _key("bitbucket-token", "ATBB", "[A-Za-z0-9]{32,}", "A"),
    _key("linear-key", "lin_(?:api|oauth)_", "[A-Za-z0-9]{32,}"),
    _key("notion-token", "secret_", "[A-Za-z0-9]{43}"),
    _key("notion-token", "ntn_", "[A-Za-z0-9]{40,}"),
    _key("airtable-token", r"pat[A-Za-z0-9]{14}\.", "[a-f0-9]{64}"),
    _key("hubspot-token", r"pat-(?:na|eu|ap)[0-9]-", _UUID),
    _key("postman-key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}"),
    _key("sentry-token", "sntry[su]_", "[A-Za-z0-9+/=_-]{40,}"),
    _key("grafana-token", "glsa_", "[A-Za-z0-9]{32}_[a-f0-9]{8}"),
    _key("grafana-token", "glc_", "[A-Za-z0-9+/]{32,}={0,2}"),
    _key("figma-token", "fig[dpuohr]_", "[A-Za-z0-9_=-]{32,}"),
    _key("contentful-token", "CFPAT-", "[A-Za-z0-9_-]{43}"),
    _key("readme-key", "rdme_", "[a-z0-9]{70}"),
    _key("typeform-token", "tfp_", "[A-Za-z0-9_.=-]{50,}"),
    _key("prefect-key", "pnu_", "[A-Za-z0-9]{36}"),
    _key("posthog-key", "phx_", "[A-Za-z0-9_]{40,}"),
    _key("infracost-key", "ico-", "[A-Za-z0-9]{32}"),
    _key("frameio-token", "fio-u-", "[A-Za-z0-9_=-]{64}"),
    _key("scalingo-token", "tk-us-", "[A-Za-z0-9_-]{48}"),
    _key("settlemint-token", "sm_(?:pat|aat|sat)_", "[A-Za-z0-9]{16}"),
    _key("clickup-token", "pk_", "[0-9]{6,10}_[A-Z0-9]{32}"),
    _key("adobe-secret", "p8e-", "[A-Za-z0-9]{32}"),
    _key("intra42-secret", "s-s4t2(?:ud|af)-", "[a-f0-9]{64}"),
    # Cloud and infrastructure.
    _key("aws-access-key", "A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA", r"[A-Z2-7]{16}\b", "A"),
    _key("aws-session-token", "IQoJb3JpZ2luX2Vj", "[A-Za-z0-9+/]{100,}={0,2}", "J"),
    _key("aws-session-token", "FwoGZXIvYXdz", "[A-Za-z0-9+/]{100,}={0,2}", "Fwo"),
    _key("google-api-key", "AIza", "[A-Za-z0-9_-]{35}", "A"),
    _key("google-oauth", "GOCSPX-", "[A-Za-z0-9_-]{24,}"),
    _key("google-oauth", r"ya29\.", "[A-Za-z0-9_-]{20,}"),
    _key("alibaba-access-key", "LTAI", "[A-Za-z0-9]{17,21}(?![A-Za-z0-9])", "A"),
    _key("tencent-secret-id", "AKID", "[A-Za-z0-9]{32}(?![A-Za-z0-9])", "A"),
    _key("yandex-key", "AQVN", r"[A-Za-z0-9_-]{35,38}(?![\w-])", "A"),
    _key("yandex-key", r"t1\.", r"[A-Za-z0-9_-]{20,}={0,2}\.[A-Za-z0-9_-]{86}={0,2}"),
    _key("cloudflare-origin-ca-key", r"v1\.0-", "[a-f0-9]{24}-[a-f0-9]{146}"),
    _key("digitalocean-token", "do[por]_v1_", "[a-f0-9]{64}"),
    _key("shopify-token", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}"),
    _key("databricks-token", "dapi", r"[a-f0-9]{32}(?:-\d)?", "dapi"),
    _key("dynatrace-token", r"dt0c01\.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    # A service token names its config: dp.st.prd.…
    _key(
        "doppler-token",
        r"dp\.(?:pt|st(?:\.[a-z0-9_-]{1,16})?|sa|ct|scim|audit)\.",
        "[A-Za-z0-9]{40,}",
    ),
    _key("vault-token", r"hv[sb]\.", "[A-Za-z0-9_-]{24,}"),
    _key("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.", "[A-Za-z0-9_=-]{60,}"),
    _key("supabase-token", "sbp_", "[a-f0-9]{40}"),
    _key("supabase-token", "sb_secret_", "[A-Za-z0-9_-]{24,}"),
    _key("age-key", "AGE-SECRET-KEY-", "1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _key("newrelic-key", "NR(?:AK|II|IQ|JS|RA)-", "[A-Za-z0-9_-]{20,}"),
    _key("newrelic-key", "NRBR-", "[0-9a-f]{19}"),
    _key("heroku-token", "HRKU-", "[A-Za-z0-9_-]{40,}"),
    _key("netlify-token", "nfp_", "[A-Za-z0-9]{36,}"),
    _key("render-key", "rnd_", "[A-Za-z0-9]{28,}"),
    _key("neon-key", "napi_", "[a-z0-9]{60,}"),
    _key("planetscale-token", "pscale_(?:tkn|pw|oauth)_", "[A-Za-z0-9_.-]{32,}"),
    _key("fly-token", "fo1_", "[A-Za-z0-9_-]{30,}"),
    _key(
        "tailscale-key",
        "tskey-(?:auth|api|client|oauth|scim|webhook)-",
        "[A-Za-z0-9_]{4,64}-[A-Za-z0-9_]{16,}",
    ),
    _key("defined-networking-key", "dnkey-", "[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    _key("openshift-token", "sha256~", r"[A-Za-z0-9_-]{43}(?![\w-])", "~"),
    Rule(  # … 3 characters, a digit, Q~, then 31 to 34 more
        "azure-ad-client-secret",
        "~",
        r"(?<![\w~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
    ),
    _key(
        "onepassword-secret-key",
        "A3-",
        r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}\b",
        "A",
    ),
    _key("onepassword-token", "ops_", "eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    _key("plaid-token", "access-(?:sandbox|development|production)-", _UUID),
    # Payments, messaging, email.
    _key("stripe-key", "[sr]k_(?:live|test|prod)_", "[A-Za-z0-9]{16,}"),
    _key("stripe-client-secret", "pi_", "[A-Za-z0-9]{24}_secret_[A-Za-z0-9]{25}"),
    _key("stripe-webhook-secret", "whsec_", "[A-Za-z0-9]{24,}"),
    # More services' prefixes (facts from the public rule sets of gitleaks and trufflehog).
    _key("cloudflare-token", "cf[uak]t?_", "[A-Za-z0-9]{40}[0-9a-f]{8}"),
    _key("fly-token", "fm(?:1[ar]|2)_", "[A-Za-z0-9+/=,_-]{100,}"),
    _key("aws-bedrock-key", "bedrock-api-key-", "YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%]{40,}"),
    _key("aws-appsync-key", "da2-", "[a-z0-9]{26}"),
    _key("sonar-token", "sqco_", "[A-Za-z0-9]{59}"),
    _key("bitbucket-token", "BBDC-", "[A-Za-z0-9+/@_-]{40,50}"),
    _key("zoho-token", r"1000\.", "[0-9a-f]{32}\\.[0-9a-f]{32}"),
    _key("fullstory-key", r"na1\.", "[A-Za-z0-9+/]{100}"),
    _key("apify-token", "apify_api_", "[A-Za-z0-9-]{36}"),
    _key("ramp-secret", "ramp_sec_", "[A-Za-z0-9]{48}"),
    _key("robinhood-key", "rh-api-", "[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"),
    _key("teamwork-token", r"tkn\.v1_", "[A-Za-z0-9]{71}="),
    _key("voiceflow-key", r"VF\.(?:(?:DM|WS)\.)?", "[0-9a-f]{24}\\.[A-Za-z0-9]{16}"),
    _key("infisical-token", r"st\.", rf"{_UUID}\.[0-9a-f]{{32}}\.[0-9a-f]{{32}}"),
    _key("amazon-lwa-token", r"Atz[ar]\|", "IwE[A-Za-z0-9_-]{50,}", "A"),
    Rule(  # Twilio's auth token, given after its account's id: Client("AC…", "…")
        "twilio-token",
        "A",
        r"AC[0-9a-f]{32}\\?[\"'][ \t]*,[ \t]*\\?[\"'](?P<secret>[0-9a-f]{32})(?![0-9a-f])",
    ),
    _key("dropbox-token", r"sl\.(?:[A-Za-z]\.)?", "[A-Za-z0-9_-]{120,}"),
    _key("square-token", "sq0(?:atp|csp)-", "[A-Za-z0-9_-]{22,}"),
    _key("square-token", "EAAA", "[A-Za-z0-9_-]{60}", "A"),
    _key("facebook-token", "EAA[MC]", "[A-Za-z0-9]{100,}", "A"),
    _key("salesforce-token", "00", r"[A-Za-z0-9]{13}![A-Za-z0-9_.]{80,}", "!"),
    _key("shippo-token", "shippo_(?:live|test)_", "[a-fA-F0-9]{40}"),
    _key("duffel-token", "duffel_(?:test|live)_", "[A-Za-z0-9_=-]{43}"),
    _key("easypost-key", "EZAK", "[A-Za-z0-9]{54}", "A"),
    _key("flutterwave-key", "FLWSECK(?:_TEST)?-", "[a-zA-Z0-9]{32}-X"),
    _key("slack-token", r"(?:xoxe\.)?xox[abposrecd]-", "[A-Za-z0-9%-]{10,}"),
    _key("slack-token", "xapp-", r"\d-[A-Za-z0-9-]{10,}"),
    _key("sendgrid-key", r"SG\.", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _key("mailgun-key", "key-", "[a-z0-9]{32}"),
    _key("brevo-key", "x(?:keysib|smtpsib)-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _key("mailersend-token", r"mlsn\.", "[a-f0-9]{64}"),
    _key("resend-key", "re_", "[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    Rule("mailchimp-key", "-us", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    _key("twilio-key", "SK", r"[0-9a-fA-F]{32}\b", "SK"),
    _key("mapbox-token", r"sk\.", r"eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{16,}"),
    _key("fcm-server-key", "AAAA", "[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}", "A"),
    # Twitter's app tokens: 22 As, then URL-encoded base64.
    _key(
        "twitter-bearer-token",
        "A{22}",
        "(?=[A-Za-z0-9%]{0,200}%[0-9A-F]{2})[A-Za-z0-9%]{60,}",
        "A",
    ),
    Rule("telegram-bot-token", "A", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])"),
    Rule(
        "discord-bot-token",
        ".",
        rf"(?<![\w-])(?:{'|'.join(_DISCORD_IDS)})\.[A-Za-z0-9_-]{{6}}\.[A-Za-z0-9_-]{{27,38}}"
        r"(?![\w-])",
    ),
    # Tokens anyone can read: JSON Web Tokens (a header and a payload, both JSON).
    _key("jwt", "eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,})?", "J"),
    # Webhook and bot URLs: the path is the secret.
    Rule(
        "slack-webhook",
        "://",
        r"://hooks\.slack\.com/(?:services|workflows|triggers)/(?![X/]{20})"
        r"(?P<secret>[A-Za-z0-9+/_-]{20,})",
    ),
    Rule(
        "discord-webhook",
        "://",
        r"://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/(?P<secret>\d+/[A-Za-z0-9_-]{40,})",
    ),
    Rule(
        "telegram-bot-token",
        "://",
        r"://api\.telegram\.org/(?:file/)?bot(?P<secret>\d{6,12}:[A-Za-z0-9_-]{30,})",
    ),
    Rule(
        "teams-webhook",
        "://",
        r"://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/(?P<secret>[A-Za-z0-9@/_-]{40,})",
    ),
    Rule(
        "zapier-webhook",
        "://",
        r"://hooks\.zapier\.com/hooks/catch/(?P<secret>\d+/[A-Za-z0-9]+)",
    ),
    Rule(  # Mattermost, Rocket.Chat, n8n, …: a path part after /hooks/ as long as a token
        "webhook-url",
        "://",
        r"://[^\s\"'<>]{1,256}?/(?:hooks|webhooks?)/"
        rf"(?P<secret>(?!{_UUID}(?![\w-]))(?=[A-Za-z0-9_-]{{0,99}}[0-9])[A-Za-z0-9_-]{{20,}}"
        r"(?:/[A-Za-z0-9_-]{20,})?)",
    ),
)

# Pass 2: secrets known by their name or place. A value counts when it is written out, and not a
# reference ($VAR, ${VAR}, {{ var }}, %(var)s), a placeholder (<your key>, sk-ant-..., xxxx,
# changeme), a number, a path, a URL, or code (request.form['password'], get_token()).
# Every repetition is bounded (a value has at most 256 characters): with many anchors in a long
# run of characters, unbounded ones would cost the square of its length.
_QUOTE = r"""\\?["'`]"""  # \" inside JSON
_NAME_END = r"(?![\w-])"
# Sentry's DSN key is public; so are a client SDK's keys.
_PUBLIC_NAME = re.compile(r"(?i:public|publishable|sentry[_-]?(?:dsn|key)|client[_-]?key)")
_SUFFIX = rf"(?:[_.-]?(?i:{_SUFFIXES}))*"
_ASSIGN = (  # also ENV['KEY'] = '…', a type (token: &str = …), YAML's block (password: |, …)
    rf"(?:{_QUOTE}\]?)?[ \t]*(?:=>|:=|:[ \t]*[\w&<>\[\]., ]{{1,40}}?[ \t]*=(?!=)|[:=])[ \t]*"
    rf"(?:(?:@|N|[bru]{{1,2}})?{_QUOTE}|[|>][-+]?[ \t]*(?:\r?\n|\\[rn]){{1,2}}[ \t]+)?"
)
_CHAR = r"""[^\s"'`\\,;&|<>(){}\[\]]"""  # of a bare value, which stops at a delimiter
_END = rf"(?!{_CHAR})"  # the end of a value, bare or quoted
_STOPWORDS = (
    r"password|passwd|pass|secret|token|key|api[_-]?key|changeme|change_me|changeit|sample|"
    r"dummy|test|none|null|nil|undefined|true|false|yes|no|string|str|bytes|int|bool|any|"
    r"object|required|optional|empty|redacted|hidden|masked|default|value|todo|tbd|bearer|basic|"
    r"unset|not_set|incorrect|invalid|wrong|missing|expired|changed|updated|reset"
)
_PLACEHOLDER_WORDS = (
    "your|placeholder|example|password|passwd|secret|token|changeme|replace|dummy|sample|fake|here"
)
_NOT_A_SECRET = (
    r"(?![$%{<>=!*\[?/-]|~/|\.\.?/|\w+://"  # $REF, %(x)s, {{ x }}, <key>, !vault, ***, paths, URLs
    # A store's reference (vault:secret/data/app#password), a template's call (@Html.Token()).
    r"|[a-z][a-z0-9+-]{1,16}:[a-z][\w.-]{0,64}/|@[A-Za-z_][\w.]{0,64}\("
    # (and not the rest of an operator: => :=)
    rf"|{_CHAR}{{0,256}}?(?:\$[({{]|\.\.\.|…|\*\*\*|EXAMPLE"
    rf"|(?i:xxxx|your[_-]|[_-]here{_END}|not[_-]?real|[_-]fake|fake[_-]|placeholder))"
    # A value that is a placeholder (your-password-here, YOUR_API_KEY, changeme), not one that
    # holds a word among its digits and symbols (Password123!, Secret2024db).
    rf"|(?=[A-Za-z_.-]{{1,256}}{_END})[A-Za-z_.-]{{0,256}}?(?i:{_PLACEHOLDER_WORDS})"
    rf"|(?i:{_STOPWORDS}){_END}"
    rf"|[xX*#•●\u2217._-]{{1,256}}{_END}"
    rf"|[0-9.]{{1,256}}(?:[eE][-+]?[0-9]+)?{_END})"  # 4096, 1.5e-06
)
# For the names of tokens, secrets and keys, which also name pagination cursors, request ids and
# cache keys: the value holds a digit, and is no identifier (NextPageToken, S3AccessPoint,
# FirewallPoliciesV2), not a hex string in capitals.
_KEY_LIKE = (
    rf"(?={_CHAR}{{0,256}}?\d)(?![^\s\"'`\\()\[\]{{}}<>]{{0,256}}?[(\[{{<])"  # not a call
    rf"(?!(?=[A-Za-z0-9]{{0,256}}?[A-Z][a-z]{{2}})"
    rf"(?:[A-Z]{{1,4}}[a-z]{{2,256}}|[A-Z]{{1,4}}(?=\d|{_END})|\d{{1,256}}){{1,256}}{_END})"
)
_WORDS = rf"(?![a-z][a-z0-9]{{0,256}}(?:[-_][a-z0-9]{{1,256}}){{1,256}}{_END})"  # us-east-1
# In code, a snake_case or CONSTANT_CASE value is a variable (key=s3_object_key), unless a part
# of it is as random as a key's: 8 characters or more, letters and 3 digits (tok_bare_9f8e7d6c…,
# not a date: token_20240101).
_RANDOM_PART = (
    r"(?=[\w.-]{0,256}?(?<![A-Za-z0-9])(?=[A-Za-z0-9]{8})(?=[0-9]{0,256}[A-Za-z])"
    r"(?:[A-Za-z]{0,256}\d){3})"
)
_VARIABLE = (
    rf"(?:{_RANDOM_PART}|(?![a-z_][a-z0-9]{{0,256}}_[a-z0-9_]{{0,256}}{_END}"
    rf"|[A-Z][A-Z0-9]{{0,256}}(?:_[A-Z0-9]{{1,256}}){{1,256}}{_END}))"
)
# Eight letters and digits with a capital, a small letter and a digit among them: a random part.
_MIXED_8 = r"(?=[A-Za-z0-9]{0,7}[a-z])(?=[A-Za-z0-9]{0,7}[A-Z])(?=[A-Za-z0-9]{0,7}\d)[A-Za-z0-9]{8}"
# A bare value may hold & (Tr0ub4dor&3), but not where a query goes on (&page=2) or a command
# does (&&, & at the end).
_BARE_CHAR = rf"(?:{_CHAR}|(?<!&)&(?![&\s])(?![\w.-]{{0,64}}=))"


def _value(
    min_length: int,
    *,
    key_like: bool = False,
    loose: bool = False,
    code: bool = True,
    yaml: bool = False,
) -> str:
    """A value that is a secret: quoted, or bare (up to a space or a delimiter).

    Bare, after an upper-case ``NAME=`` (shell, env files), any value counts (it may hold ``&``
    and brackets, and underscores do not make it a variable); elsewhere (``code``) a bare value
    is more often a variable (``token=token``, ``key=s3_key``, ``apiKey: process.env.KEY``), so
    it needs a digit or a symbol. ``key_like``: see ``_KEY_LIKE``; an upper-case ``NAME=`` needs
    no more. ``loose``: for names as loose as ``key`` and ``*Key`` (cache keys, translations): no
    dots or colons, not words and dashes. ``yaml``: also a lower-case word alone after ``: `` at
    the end of a line or before a remark in brackets (``password: letmein`` in YAML, where code
    would have a comma, a semicolon or a type)."""
    checks = _KEY_LIKE if key_like else ""
    if loose:
        checks += rf"(?=[A-Za-z0-9+/=_-]{{1,256}}{_END}){_WORDS}"
    quoted = rf"(?<=[\"'`]){checks}{_VARIABLE}[^\s\"'`\\]{{{min_length},256}}(?=\\?[\"'`])"
    env = rf"(?<=[A-Z]=)[^\s\"'`\\;|]{{{min_length},256}}(?![^\s\"'`\\;|])"
    if code:
        checks += (
            r"(?=[A-Za-z_.]{0,256}[^A-Za-z_.\s\"'`\\,;&|<>(){}\[\]])"  # a digit or a symbol
            rf"(?![a-z_][a-z0-9_]{{0,256}}\.[A-Za-z_](?!{_CHAR}{{0,256}}?{_MIXED_8}))"  # a.b.KEY
            rf"(?![A-Za-z]{{1,256}}(?:-[A-Za-z]{{1,256}}){{1,256}}{_END}){_VARIABLE}"
        )
    bare = rf"(?<![\"'`]){checks}{_BARE_CHAR}{{{min_length},256}}(?!{_BARE_CHAR}|[(\[])"
    if yaml:
        bare += rf"|(?<=: )[a-z]{{{min_length},256}}(?=[ \t]*(?:\r?\n|\\[rn]|\Z)|[ \t]+\()"
    return rf"(?P<secret>{_NOT_A_SECRET}(?:{quoted}|{env}|{bare}))"


# ``define('DB_PASSWORD', '…')``, ``headers.set("X-Api-Key", "…")``: a key-like value, not the
# next word of a list (``["login", "password", "encoding"]``).
_COMMA = rf"{_QUOTE}[ \t]*,[ \t]*{_QUOTE}{_KEY_LIKE}{_WORDS}"


def _after_name(kind: str, anchor: str, name: str, min_length: int, **value: bool) -> Rule:
    """``name = value``, ``name: value``, ``"name": "value"``, ``NAME=value``, ``name => value``,
    ``name := value``, ``"name", "value"``, for names that end with ``name`` (``DB_PASSWORD``,
    ``clientSecret``), but not in ARNs (``arn:aws:secretsmanager:…:secret:name``)."""
    assign = f"(?:{_ASSIGN}|{_COMMA})"
    value_ = _value(min_length, **value)
    pattern = rf"(?<!:)(?:{name}){_SUFFIX}{_NAME_END}{assign}{value_}"
    return Rule(kind, anchor, pattern, check=_unless_ordinary(kind))


_CIPHER_PARTS = re.compile(r"""["']?(?:iv|nonce|tag|ciphertext)\\?["']?[ \t]*[:=]""")
_PUBLIC_LINK = re.compile(r"(?:badge\.svg|/delta)\?[^\s]*\Z")


def _unless_ordinary(kind: str) -> Callable[[str, int, int], Verdict | None]:
    """A check that a value's whole name is a secret's: not a cursor's (nextPageToken), an
    id's, a public one's (NEXT_PUBLIC_POSTHOG_KEY, publishable_key), a cache's key (``cache:
    hit key=…``)."""

    def check(text: str, start: int, end: int) -> Verdict | None:
        named = _name_before(text, start)
        if named and (_ordinary_name(named) or _PUBLIC_NAME.search(named)):
            return None
        if _PUBLIC_PREFIX.match(text, start):
            return None
        line = text[max(text.rfind("\n", 0, start) + 1, start - 240) : start].lower()
        if named and named.lower() == "key" and "cache" in line:
            return None
        if named and "salt" in named.lower() and _CIPHER_PARTS.search(line):
            return None  # a cipher's parameters, published with its text: iv, tag, salt
        if _PUBLIC_LINK.search(line):
            return None  # a badge's token, a sync's cursor
        return start, end, kind

    return check


# In a URL's query (?client_secret=…&), a value is data, never a variable: whatever its shape.
_IN_QUERY = "(?:" + "|".join(rf"(?<=[?&#][\w.-]{{{k}}})" for k in range(25)) + ")"  # # too


def _in_query(kind: str, anchor: str, name: str, min_length: int, key_like: bool = False) -> Rule:
    """``?name=value`` and ``&name=value``, for names that end with ``name``."""
    checks = _KEY_LIKE if key_like else ""
    value = rf"{_NOT_A_SECRET}{checks}[^\s&#\"'`<>\\()\[\]]{{{min_length},1024}}"
    return Rule(
        kind,
        anchor,
        rf"{_IN_QUERY}(?:{name}){_NAME_END}=(?P<secret>{value})(?![^\s&#\"'`<>\\()\[\]])",
        check=_unless_ordinary(kind),
    )


def _after_flag(kind: str, anchor: str, name: str, min_length: int, **value: bool) -> Rule:
    """``--name value`` (``--password``, ``--api-key``, ``--with-token``, ``-ApiKey``)."""
    pattern = rf"(?<=-)(?:{name}){_NAME_END}[ \t]+(?:{_QUOTE})?{_value(min_length, **value)}"
    return Rule(kind, anchor, pattern, check=_unless_ordinary(kind))


def _after(words: Iterable[str], separators: str = "_-.") -> str:
    """Look-behinds: one of ``words`` just before, or before one of ``separators``."""
    endings = {w + s for w in words for s in ("", *separators)}
    by_length: dict[int, list[str]] = {}
    for ending in sorted(endings):
        by_length.setdefault(len(ending), []).append(re.escape(ending))
    lookbehinds = (f"(?<=(?i:{'|'.join(e)}))" for _, e in sorted(by_length.items()))
    return f"(?:{'|'.join(lookbehinds)})"


# Prose: "the passphrase is …", "my password was …", "the token is now …".
_PROSE_IS = (
    r"[ \t]+(?i:is|was|will[ \t]+be)[ \t]+"
    r"(?:(?i:now|still|just|simply|set[ \t]+to|changed[ \t]+to)[ \t]+)?"
)
_PROSE_END = r"(?=[.,;:!?)]{0,3}(?:[\s\"'`\\]|\Z))"
# An ordinary word (incorrect, Required, case-sensitive, WRONG) is what prose says of a secret,
# not the secret: unquoted, only a value with a digit or a symbol counts.
_A_WORD = rf"(?:[A-Za-z][a-z]{{0,256}}|[A-Z]{{2,256}})(?:-[A-Za-z][a-z]{{0,256}})?{_PROSE_END}"


_OPENING = r"\u201c\u2018"  # and the curly quotes of prose
_CLOSING = r"\u201d\u2019"


def _prose_value(min_length: int, key_like: bool = False) -> str:
    """What prose gives as a secret: quoted (then it may be words: "correct horse battery
    staple"), or a bare word that is no ordinary word, without the sentence's punctuation."""
    checks = _KEY_LIKE if key_like else ""
    quoted = (
        rf"(?<=[\"'`{_OPENING}]){checks}(?![ \t])"
        rf"[^\"'`{_OPENING}{_CLOSING}\n\\]{{{min_length},256}}(?<![ \t])"
        rf"(?=\\?[\"'`]|[{_CLOSING}])"
    )
    bare = (
        rf"(?<![\"'`{_OPENING}]){checks}(?!{_A_WORD})(?![^\s\"'`\\]{{0,256}}?[(){{}}\[\]<>])"
        rf"[^\s\"'`\\]{{{min_length - 1},255}}[^\s\"'`\\.,;:!?)]{_PROSE_END}"
    )
    return rf"(?:{_QUOTE}|[{_OPENING}])?(?P<secret>{_NOT_A_SECRET}(?:{quoted}|{bare}))"


_PASSWORD = (  # and PASS, db_pass, dbPass, "pass"; not a lone pass, a word of prose
    r"(?i:pass(?:word|wd|phrase))|(?<![A-Za-z])PASS|(?<=[A-Za-z0-9]_)(?i:pass)|(?<=[a-z0-9])Pass"
    r"|(?<=[\"'])pass(?=\\?[\"'])"
)
_PWD = r"(?<![A-Za-z])(?i:pwd)|(?<=[a-z0-9])Pwd"
# *_KEY, *-key, *Key, key; not a public key (PublicKey = … in WireGuard, # public key: age1…)
_NOT_PUBLIC = r"(?<!(?i:public))(?<!(?i:public)[ _.-])(?<!(?i:pub))(?<!(?i:pub)[_-])"
_KEY = rf"{_NOT_PUBLIC}(?:(?<![A-Za-z])(?i:key)|(?<=[a-z0-9])Key)"
_API_KEY = _after(
    "api access auth master account signing encryption client app license subscription service "
    "admin deploy".split()
)
# A URL's password: not ${PASS}, <password>, mypassword, pass; a digit or a symbol, or 8 letters.
_URL_PASSWORD = (
    r"(?![\[$<{*]|[^@/\s]{0,256}?(?i:xxx)"
    rf"|[A-Za-z_.-]{{0,256}}?(?i:{_PLACEHOLDER_WORDS}|pass|pwd)[A-Za-z_.-]{{0,256}}@)"
    r"(?=[^\s/\"'<>,]{0,256}?[^A-Za-z\s/\"'<>,@][^\s/\"'<>,]{0,256}@|[A-Za-z]{8,256}@)"
    r"[^\s/\"'<>,]{3,256}"
)
# A PIN: 4 to 8 digits after "the pin", "PIN", "pin:", "pin is", "passcode"; not a pin of a
# board (pin 13), nor pinning a version (pin it to 4.2).
_PIN_OWNERS = (
    "the my your his her our their a new old card sim atm bank debit phone door safe default"
).split()
_PIN_VALUE = (
    rf"(?:{_QUOTE}?[ \t]*[:=][ \t]*{_QUOTE}?|{_PROSE_IS}|[ \t]+)"
    r"(?P<secret>[0-9]{4,8})(?![0-9%]|[.,:/-][0-9])"
)
# BIP-39 recovery phrases: 12 to 24 lower-case words.
_SEED_WORDS = r"(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8}(?![a-z])"
_SEED_ASSIGN = rf"(?:{_ASSIGN}|{_PROSE_IS}|:[ \t]*)"

# Cookies, when one of them holds a session: all of them, as a header's value.
_SESSION_COOKIES = (
    r"(?P<secret>(?=[^\n\"'`\\]{0,1024}?(?<![\w.%-])[\w.-]{0,64}"
    r"(?i:sess|sid|auth|token|jwt|remember|login)[\w.-]{0,64}=(?!\[)[^\s;,\"'`\\]{12})"
    r"[^\s\"'`\\](?:[^\n\"'`\\]{0,4094}[^\s\"'`\\])?)"
)


_FLAG_WORD = re.compile(r"(?:^|[\s\"'`])-{1,2}[a-z][a-z0-9]*(?:-[a-z0-9]+)*[ \t]+\S*\Z")


def _after_a_flag(text: str, start: int, end: int) -> Verdict | None:
    """A value after a word that is a command's flag (``--sftp-pass …``, not ``quick-pass …``)."""
    return (start, end, "password") if _FLAG_WORD.search(text, max(0, start - 80), start) else None


_HOST_LINE = re.compile(r"(?:\A|\n|\\n)[ \t]*[A-Za-z0-9*][\w.*-]{0,252}:\Z")


def _pgpass_line(text: str, start: int, end: int) -> Verdict | None:
    """A line of ``.pgpass``: a host (a name or ``*``, from the line's start) before the port."""
    port = text.rfind(":", 0, text.rfind(":", 0, text.rfind(":", 0, start - 1)))
    line = _HOST_LINE.search(text, max(0, port - 256), port + 1)
    return (start, end, "password") if line else None


def _in_authorization(text: str, start: int, end: int) -> Verdict | None:
    """A value on the line of an Authorization header (or OAuth's parameters)."""
    line = text[max(text.rfind("\n", 0, start) + 1, start - 2048) : start].lower()
    if "authorization" in line or "oauth_" in line:
        return start, end, "signature"
    return None


def _xml_value(kind: str, anchor: str, name: str) -> Rule:
    """``<add key="DbPassword" value="…"/>``, ``<property name="db.password" value="…"/>``."""
    return Rule(
        kind,
        anchor,
        rf"(?:{name}){_QUOTE}[ \t]+(?:\w+:)?value={_QUOTE}"
        rf"(?P<secret>{_NOT_A_SECRET}[^\"'`\\\n]{{3,256}})(?={_QUOTE})",
    )


def _xml_element(kind: str, anchor: str, name: str) -> Rule:
    """``<password>…</password>``, ``<ApiKey>…</ApiKey>``; but a password's, a key-like value
    (a plist's ``<key>CFBundleName</key>`` names a key)."""
    checks = "" if kind == "password" else _KEY_LIKE
    return Rule(
        kind,
        anchor,
        rf"(?:{name})(?:[ \t]+[\w:-]+={_QUOTE}[^\"'<>\n]{{0,64}}{_QUOTE}){{0,4}}>"
        rf"(?P<secret>{_NOT_A_SECRET}{checks}[^<\s]{{4,256}})</",
    )


def _hcl_default(kind: str, anchor: str, name: str) -> Rule:
    """Terraform's ``variable "db_password" { … default = "…" }``."""
    return Rule(
        kind,
        anchor,
        rf"(?:{name}){_QUOTE}[ \t]*\{{[^}}]{{0,512}}?\bdefault[ \t]*=[ \t]*{_QUOTE}"
        rf"(?P<secret>{_NOT_A_SECRET}[^\"'`\\\n]{{3,256}})(?={_QUOTE})",
    )


_LINK_WORDS = (
    r"(?:reset|forgot|recover)(?:[_-]?password)?|password[_-]?reset|verify(?:[_-]?email)?|"
    r"verification|confirm(?:ation)?|activate|activation|invite|invitation|join|magic(?:[_-]?link)?|"
    r"login|signin|sign-in|auth|token|access|unsubscribe|download|webhooks?|hooks?|incoming|"
    r"trigger|integration|keys?|k|t|s"
)
"""The path words that say the next part of a link is its token."""
_HOOK_WORDS = r"webhooks?|hooks?|trigger|incoming|bot|deploy|integrations?"
"""The words of a hook's link, whose token may be a UUID."""
_SEGMENTS = r"[^\s/?#\"'<>]{1,256}(?:/[^\s/?#\"'<>]{0,256}){0,12}?"
"""A link's host and the parts of its path up to a word."""
_MIXED_16 = (
    r"(?=[A-Za-z0-9]{0,255}[A-Z])(?=[A-Za-z0-9]{0,255}[a-z])(?=[A-Za-z0-9]{0,255}\d)"
    r"[A-Za-z0-9]{16,256}"
)
"""A user name as random as a key: 16 letters and digits of both cases or more."""
_MIXED = (
    r"(?=[A-Za-z0-9]{0,256}?[A-Z])(?=[A-Za-z0-9]{0,256}?[a-z])(?=[A-Za-z0-9]{0,256}?\d)"
    r"[A-Za-z0-9]{20,256}"
)
"""Letters of both cases and digits, as a random part of a link is."""

_CREDENTIAL_NAMES = (
    ("password", "pass", _PASSWORD),
    ("password", "pwd", _PWD),
    ("secret", "secret", "(?i:secret)"),
    ("token", "token", "(?i:token)"),
    ("api-key", "key", _KEY),
)
"""Names of credentials, with the anchor each is found by: for the rules of configuration
files that name a value apart from it."""

INTL = "intl"
"""The anchor of a password's name in a script other than Latin: found in the text itself."""
_INTL_PASSWORD = (
    "密码|密碼|口令|パスワード|暗証番号|비밀번호|암호|пароль|Пароль|ПАРОЛЬ|contraseña|Contraseña|"
    "hasło|Hasło|şifre|Şifre|jelszó|Jelszó|lösenord|Lösenord|mật khẩu|Mật khẩu|"
    "كلمة المرور|كلمة السر|סיסמה|पासवर्ड|รหัสผ่าน"
)
_INTL_NAME = re.compile(_INTL_PASSWORD)
_INTL_IS = r"[:\uff1a=是为為はが은는]|es|é|est|ist|jest|to|er|là|هي|है"
"""What says a name's value follows: a colon, or a word for "is"."""
_SAID_VALUE = (
    r"(?:[「『“\"'`])?"
    rf"(?P<secret>{_NOT_A_SECRET}(?=[!#-&(-9;-\[\]-_a-~]{{0,64}}?[0-9!#$%^&*~?@+=_.-])"
    r"[!#-&(-9;-\[\]-_a-~]{6,64}?)(?=[」』”\"'`]|[\s。\uff0c、\uff1b;)\uff09]|[,.](?:\s|\Z)|\Z)"
)
"""A password that prose gives: ASCII, with a digit or a symbol, up to a quote or a stop."""

_MESSAGE_WORDS = (
    "password|passwd|passphrase|required|invalid|must|enter|please|characters|incorrect|wrong|"
    "your|field|confirm|match|reset|forgot|length|least|empty|missing|change|new|old|current|"
    "not|is|are|the|to|for|of"
)
"""Words of what a program says of a password (``"Password is required"``), not of one."""

# What a password given on a command's input is piped to.
_STDIN_PASSWORD = (
    rf"(?:{_QUOTE})?(?P<secret>{_NOT_A_SECRET}[^\s\"'`\\|]{{3,256}})(?:{_QUOTE})?[ \t]*\|[ \t]*"
    r"(?=[^\n|;&]{0,256}?(?:--password-stdin|--pass(?:word)?-stdin|--with-token|"
    r"\bsudo(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*S|\bpasswd\b[^\n|;&]{0,64}--stdin|\bchpasswd\b|"
    r"\bcryptsetup\b|--passphrase-fd[ \t=]+0|-pass(?:in)?[ \t]+stdin))"
)
_FLAG_PROGRAMS = {
    "P": {
        "zip", "unzip", "zipcloak", "sqlcmd", "bcp", "osql", "isql", "ipmitool", "sqsh",
        "ssh-keygen", "mosquitto_pub", "mosquitto_sub",
    },
    "N": {"ssh-keygen"},
    "A": {"snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptrap"},
    "c": {"snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptrap"},
    "X": {"snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptrap"},
    "p": {
        "7z", "7za", "7zz", "7zr", "rar", "unrar", "mongo", "mongosh", "mongodump",
        "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop", "smbmap",
        "crackmapexec", "nxc", "netexec", "psexec", "psexec.py", "wmiexec.py", "smbexec.py",
        "evil-winrm", "hydra", "medusa", "rdesktop", "sshpass",
    },
    "w": {
        "ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldappasswd", "ldapwhoami",
        "ldapcompare", "ldapmodrdn", "ldapexop",
    },
    "k": {"openssl"},
    "a": {"redis-cli", "keydb-cli"},
}  # fmt: skip
"""The programs whose short flag takes a password (zip -P, 7z -p…, ldapsearch -w)."""
_ATTACHED = {"7z", "7za", "7zz", "7zr", "rar", "unrar"}
"""Those that take it attached to the flag (``-pSECRET``)."""
_COMMAND_MARKS = ("\n", ";", "|", "&", "\\n", "$(", "`")
"""Where a command starts: after a line, a separator, a pipe, a substitution."""
_PROGRAM = re.compile(
    r"[ \t]*(?:(?:PS[^>\n]{0,64}>|[$#%>])[ \t]+)?"
    r"(?:(?:sudo|env|time|exec|nohup|command|[A-Z_]\w*=\S*)[ \t]+)*(?:\S*[/\\])?([\w.+-]+)"
)
"""A command's program: its first word, after a prompt, sudo, env and variables, without its
folder."""
_FLAG_BEFORE = re.compile(r"(?<![\w-])-([pPwkaNAXc])[ \t]*(?:\\?[\"'`])?\Z")


def _flag_of_program(text: str, start: int, end: int) -> Verdict | None:
    """The password after a short flag, when the command's program takes one by it."""
    flag = _FLAG_BEFORE.search(text, max(0, start - 8), start)
    if flag is None:
        return None
    begin = max(
        (
            at + len(mark)
            for mark in _COMMAND_MARKS
            if (at := text.rfind(mark, 0, flag.start())) >= 0
        ),
        default=0,
    )
    command = _PROGRAM.match(text, begin)
    program = command.group(1).lower() if command else ""
    if program not in _FLAG_PROGRAMS[flag.group(1)]:
        return None
    if flag.end() - flag.start() == 2 and program not in _ATTACHED:
        return None  # -keyout is no -k: a password is given apart but to the archivers
    return start, end, "password"


_NAMES = (
    # Names that say which secret it is.
    Rule(
        "aws-secret-key",  # aws_secret_access_key, AWS_SECRET_KEY, SecretAccessKey
        "key",
        rf"{_after(['aws_secret', 'awssecret', 'secret_access', 'secretaccess'], '_')}(?i:key)"
        rf"{_NAME_END}(?:{_ASSIGN}|[ \t]+)"
        r"(?P<secret>(?![A-Za-z0-9/+=]{0,36}(?:(?i:xxxx)|EXAMPLE))"
        r"[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    Rule(
        "azure-key",
        "key",
        rf"{_after(['account', 'sharedaccess'], '')}(?i:key)="
        r"(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
    ),
    Rule("private-key", "key", r"(?<=client-)key-data:[ \t]*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
    # HTTP authorization (any scheme, or none: Bearer, token, Bot, SSWS, ApiKey, …), registry
    # credentials, cookies.
    Rule(
        "basic-auth",
        "auth",
        rf"(?i:authorization){_ASSIGN}(?i:basic)[ \t]+"
        r"(?P<secret>[A-Za-z0-9+/]{8,1024}={0,2})(?![\w+/=])",
    ),
    Rule(
        "bearer-token",
        "auth",
        rf"(?i:authorization){_ASSIGN}(?:(?!(?i:basic)[ \t])[A-Za-z][\w-]{{0,30}}[ \t]+)?"
        rf"(?P<secret>{_NOT_A_SECRET}(?=[^\s\"'`\\]{{0,256}}?\d)[A-Za-z0-9._~+/=!%:-]{{12,4096}})",
    ),
    Rule(
        "registry-auth",  # "auth" in ~/.docker/config.json, _auth in .npmrc
        "auth",
        r"(?:(?<=[\"'])auth\\?[\"'][ \t]*:[ \t]*\\?[\"']|(?<=_)auth[ \t]*=[ \t]*)"
        r"(?P<secret>[A-Za-z0-9+/]{12,1024}={0,2})(?![A-Za-z0-9+/=(])",
    ),
    Rule(
        "password",  # auth=("user", "password"), HTTPBasicAuth("user", "password")
        "auth",
        rf"(?i:auth)[ \t]*(?:=[ \t]*)?\([ \t]*{_QUOTE}[^\"'`\\\n]{{0,256}}{_QUOTE}[ \t]*,[ \t]*"
        rf"{_QUOTE}(?P<secret>{_NOT_A_SECRET}[^\s\"'`\\]{{4,256}})(?={_QUOTE})",
    ),
    Rule(  # Cookie: a=1; sessionid=…, Set-Cookie: session=…, --cookie "token=…": the value
        "session-cookie",
        "cookie",
        rf"(?i:cookie)(?:\\?[\"'`]?[ \t]*:[ \t]*|[ \t]+)(?:\\?[\"'`])?{_SESSION_COOKIES}",
    ),
    Rule("session-cookie", "-b", rf"(?<![\w-])-b[ \t]+(?:\\?[\"'])?{_SESSION_COOKIES}"),  # curl
    # URLs: a password before the host, a signature in the query.
    Rule(
        "url-password",
        "://",
        rf"://[^\s/:@\"'<>\[]{{0,256}}:(?P<secret>{_URL_PASSWORD})@(?=[\w.\[-])",
    ),
    Rule(  # https://<token>@github.com/…: a user name as long and mixed as a token
        "url-token",
        "://",
        r"://(?![0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}@)"
        r"(?![0-9a-f]{32}@[\w.-]{0,64}sentry)"  # a Sentry DSN's public key
        rf"(?P<secret>{_KEY_LIKE}(?=[\w-]{{0,256}}[A-Za-z])[A-Za-z0-9_-]{{32,256}}|{_MIXED_16})"
        r"@(?=[\w.\[-])",
    ),
    Rule(  # a reset, sign-in, invite or hook link: the path part after what it is for (not an id)
        "token",
        "://",
        r"://[^\s/?#\"'<>]{1,256}(?:/[^\s/?#\"'<>]{0,256}){0,12}?/"
        rf"(?<!/macros/)(?i:{_LINK_WORDS})/(?P<secret>(?!{_UUID}(?![\w-]))(?=[A-Za-z0-9_-]{{0,256}}?\d)"
        r"[A-Za-z0-9_-]{16,256})"
        r"(?![A-Za-z0-9_.-])",
    ),
    Rule(  # a hook's link: a UUID, hex or a random part, perhaps a few parts after the word
        "token",
        "://",
        rf"://(?:{_SEGMENTS}/(?:[A-Za-z]{{1,16}}[_-])?(?i:{_HOOK_WORDS})"
        rf"|(?:[\w-]{{1,64}}\.){{0,3}}(?i:{_HOOK_WORDS})\.[^\s/?#\"'<>]{{1,256}})"
        rf"(?:/[^\s/?#\"'<>]{{1,64}}){{0,3}}?/(?P<secret>{_UUID}|[0-9a-f]{{24,128}}|{_MIXED}"
        r"|(?=[a-z0-9]{0,63}\d)(?=(?:\d{0,63}[a-z]){8})[a-z0-9]{24,64})"  # or base36
        r"(?![A-Za-z0-9_.-])",
    ),
    Rule(  # a reset, sign-in or private link: hex or a random part, a few parts after the word
        "token",
        "://",
        rf"://{_SEGMENTS}/(?<!/macros/)(?:[A-Za-z]{{1,16}}[_-])?(?i:{_LINK_WORDS}|ical|feeds?)"
        rf"(?:/[^\s/?#\"'<>]{{1,64}}){{0,3}}?/(?:private-)?(?P<secret>[0-9a-f]{{32,128}}|{_MIXED})"
        r"(?![A-Za-z0-9_.-])",
    ),
    Rule(
        "url-signature",  # Azure SAS, presigned S3 and GCS URLs
        "://",
        r"://[^\s\"'<>?#]{0,1024}\?[^\s\"'<>#]{0,2048}?(?<=[?&])"
        r"(?i:[\w-]{0,16}sig|[\w-]{0,16}signature)=(?P<secret>[A-Za-z0-9%+/=]{16,1024})",
    ),
    # Passwords: in a query, assignments, XML, command lines, .netrc, prose.
    _in_query("password", "pass", _PASSWORD, 6),
    _after_name("password", "pass", _PASSWORD, 6, yaml=True),
    _after_name("password", "pwd", _PWD, 6),
    _after_name("password", "pwd", "(?<=_)(?:PW|pw)", 6),  # ES_ELASTIC_PW=…
    Rule(  # wpa_passphrase SSID …
        "password",
        "pass",
        r"(?<=wpa_)passphrase[ \t]+(?:\\?\"[^\"\n]{1,64}\\?\"|\S{1,64})[ \t]+"
        rf"(?:{_QUOTE})?{_value(8, code=False)}",
    ),
    _after_flag("password", "pass", _PASSWORD, 6),
    Rule(  # password …, and a router's password 0 … (clear) or 7 … (reversible)
        "password",
        "pass",
        rf"(?<!\S)(?i:password|passwd)[ \t]+(?:[07][ \t]+)?(?:{_QUOTE})?{_value(6)}",
    ),
    Rule(
        "password",
        "pass",
        r"(?i:pass(?:word|phrase|code))(?:[ \t]+(?i:for|of|to|on)(?:[ \t]+\S{1,64}?){1,3}?)?"
        rf"{_PROSE_IS}{_prose_value(4)}",
    ),
    Rule("pin", "pass", rf"(?i:passcode){_PIN_VALUE}"),
    Rule(
        "pin",
        "pin",
        rf"(?:{_after(_PIN_OWNERS, ' ')}(?i:pin)|PIN|(?i:pin)(?={_QUOTE}?[ \t]*[:=]|{_PROSE_IS}))"
        rf"(?:[ _-]?(?i:code|number))?{_PIN_VALUE}",
    ),
    Rule(  # unlockPin: …, admin_pin = …
        "pin",
        "pin",
        rf"(?:(?<=[a-z0-9])Pin|(?<=[_-])(?i:pin))(?={_QUOTE}?[ \t]*[:=]){_PIN_VALUE}",
    ),
    Rule("password", "pass", rf"(?<=ssh)pass[ \t]+-p[ \t]*(?:{_QUOTE})?{_value(4, code=False)}"),
    Rule(
        "password",
        "mysql",
        rf"mysql\w{{0,16}}\b[^\n\\|;&\[]{{0,256}}?[ \t]-p(?:{_QUOTE})?{_value(3, code=False)}",
    ),
    Rule(  # docker login -u bot -p …, helm registry login …
        "password",
        "login",
        rf"login\b[^\n\\|;&\[]{{0,256}}?[ \t]-p[ \t]+(?:{_QUOTE})?{_value(4, code=False)}",
    ),
    *(  # an Authorization header's signature: AWS4's, OAuth 1's, HTTP Digest's response
        Rule(
            "signature",
            anchor,
            rf"(?i:{anchor})=\\?\"?(?P<secret>[A-Za-z0-9+/=%_-]{{16,512}})(?![A-Za-z0-9+/=%_-])",
            check=_in_authorization,
        )
        for anchor in ("signature", "response")
    ),
    Rule(  # curl -u user:password, --user user:password, -auth user:token, --creds user:…
        "password",
        "-u",
        rf"-(?:u|-user|-proxy-user|-?auth|-(?:dest-|src-)?creds)[ \t=]+(?:{_QUOTE})?"
        rf"[^\s:\"'`\[]{{1,256}}:"
        rf"{_value(4, code=False)}",
    ),
    Rule("password", "pass", rf"(?<=require)pass[ \t]+{_value(4, code=False)}"),  # redis.conf
    Rule(
        "password",
        "redis-cli",
        rf"redis-cli\b[^\n\\|;&\[]{{0,256}}?[ \t]-a[ \t]+(?:{_QUOTE})?{_value(4, code=False)}",
    ),
    *(
        rule
        for kind, anchor, name in _CREDENTIAL_NAMES
        for rule in (
            _xml_value(kind, anchor, name),
            _hcl_default(kind, anchor, name),
            _xml_element(kind, anchor, name),
        )
    ),
    # Other names of secrets: credentials, salts, seeds, one-time passwords' secrets.
    _after_name(
        "secret",
        "cred",
        r"(?<![A-Za-z])(?i:cred(?:ential)?s?)|(?<=[a-z0-9])Cred(?:ential)?s?",
        8,
        key_like=True,
    ),
    _after_name(
        "secret", "salt", r"(?<![A-Za-z])(?i:salt)|(?<=[a-z0-9_])(?i:salt)", 8, key_like=True
    ),
    _after_name("secret", "seed", r"(?i:seed)", 12, key_like=True),
    _after_name(
        "secret", "otp", r"(?<![A-Za-z])(?i:otp)|(?<=[a-z0-9_])(?i:otp)", 12, key_like=True
    ),
    Rule("token", "auth", rf"(?i:auth)[ \t]*:[ \t]*(?:{_QUOTE})?{_value(8, key_like=True)}"),
    Rule(
        "password", "dsn", rf":(?P<secret>{_NOT_A_SECRET}[^\s:@/\"'`]{{3,128}})@(?:tcp|unix|udp)\("
    ),
    Rule(  # zip -P …, 7z -p…, ldapsearch -w …, openssl -k …: the flags that take a password
        "password",
        "-flag",
        rf"-[pPwkaNAXc](?:[ \t]+|(?=[^\s-]))(?:{_QUOTE})?{_value(3, code=False)}",
        check=_flag_of_program,
    ),
    Rule(
        "password",
        "/p:",
        rf"/(?i:p|pw|pwd|pass|password):(?P<secret>{_NOT_A_SECRET}[^\s\"'`/]{{3,128}})",
    ),
    Rule("password", "pass", rf"(?<=[ \t=])pass:{_value(4, code=False)}"),  # apksigner, openssl
    Rule(  # rabbitmqctl add_user name …
        "password",
        "rabbitmqctl",
        r"rabbitmqctl[ \t]+(?:add_user|change_password|authenticate_user)[ \t]+\S{1,64}[ \t]+"
        rf"(?:{_QUOTE})?{_value(3, code=False)}",
    ),
    *(  # netlify env:set API_KEY …, SetEnv DB_PASSWORD "…": an uppercase name and its value
        Rule(
            kind,
            anchor,
            rf"(?<=[A-Z0-9]_){word}[ \t]+(?:{_QUOTE})?{value}",
            check=_unless_ordinary(kind),
        )
        for kind, anchor, word, value in (
            ("secret", "key", "KEY", _value(8, key_like=True, loose=True)),
            ("token", "token", "TOKEN", _value(8, key_like=True, loose=True)),
            ("secret", "secret", "SECRET", _value(8, key_like=True, loose=True)),
            ("password", "pass", "(?:PASSWORD|PASS)", _value(6)),
            ("password", "pwd", "(?:PWD|PW)", _value(6)),
        )
    ),
    Rule(  # PayPal's (Braintree's) access token
        "token",
        "token",
        r"(?<=access_)token\$(?:production|sandbox)\$[0-9a-z]{16}\$(?P<secret>[0-9a-f]{32})",
    ),
    Rule(  # a password given in a phrase, with a digit or a symbol: password = "my 3 blue cats"
        "password",
        "pass",
        rf"(?<!:)(?:{_PASSWORD}){_SUFFIX}{_NAME_END}{_ASSIGN}(?<=[\"'`])"
        r"(?P<secret>(?=[^\"'`\\\n]{0,128} )(?=[^\"'`\\\n]{0,128}[0-9!@#$%^&*+=~])"
        r"(?![^\"'`\\\n]{0,128}?\b(?i:" + _MESSAGE_WORDS + r")\b)"
        r"[^\s\"'`\\][^\"'`\\\n]{6,126}[^\s\"'`\\.!?])(?=\\?[\"'`])",
    ),
    Rule(  # any tool's -u user -p…, -U user -P…, attached (apart, it may ask for one: mysql)
        "password",
        "-u -p",
        rf"-[uU][ \t]*[^\s-]\S{{0,63}}[ \t]+-[pP](?=(?:{_QUOTE})?[^\s-])(?:{_QUOTE})?"
        rf"{_value(3, code=False)}",
    ),
    Rule(  # smbclient -U user%…
        "password",
        "-U%",
        rf"-(?:U|-user)[ \t=]+(?:{_QUOTE})?[^\s%\"'`]{{1,64}}%{_value(3, code=False)}",
    ),
    Rule(  # echo … | docker login --password-stdin, echo … | sudo -S
        "password",
        "echo",
        rf"echo[ \t]+(?:-[neE]{{1,3}}[ \t]+)*{_STDIN_PASSWORD}",
    ),
    Rule(
        "password",
        "printf",
        rf"printf[ \t]+(?:{_QUOTE}%s(?:\\{{1,2}}n)?{_QUOTE}[ \t]+)?{_STDIN_PASSWORD}",
    ),
    Rule(  # net use \\host\share … /user:name, net user name … /add
        "password",
        "net",
        r"(?i:net[ \t]+use)\b[^\n|;&]{0,256}?[ \t](?!/)"
        rf"(?P<secret>{_NOT_A_SECRET}[^\s\"'`/]{{3,128}})(?=[ \t]+/(?i:user|u):)",
    ),
    Rule(
        "password",
        "net",
        rf"(?i:net[ \t]+user)[ \t]+[^\s/]{{1,64}}[ \t]+"
        rf"(?P<secret>(?![*/]){_NOT_A_SECRET}[^\s\"'`]{{3,128}})",
    ),
    Rule(  # htpasswd -b file user …, htpasswd -nb user …: the command's last word
        "password",
        "pass",
        r"(?<=ht)passwd(?:[ \t]+-[A-Za-z]{1,4})*?[ \t]+-[A-Za-z]{0,3}b[A-Za-z]{0,3}"
        rf"(?:[ \t]+-[A-Za-z]{{1,4}})*(?:[ \t]+[^\s-]\S{{0,255}}){{1,2}}?[ \t]+(?:{_QUOTE})?"
        rf"{_value(3, code=False)}(?:\\?[\"'])?[ \t]*(?=$|[\n;&|)]|\\n)",
    ),
    Rule(  # keytool -storepass …, -keypass …; rclone --sftp-pass …; openssl -pass … (not pass:)
        "password",
        "pass",
        r"(?<=[a-z-])pass[ \t]+(?!(?:pass|env|file|fd|stdin)(?::|\b))"
        rf"(?:{_QUOTE})?{_value(4, code=False)}",
        check=_after_a_flag,
    ),
    Rule("token", "token", rf"(?<=-)token[ \t]*<<<-?[ \t]*(?:{_QUOTE})?{_value(8, code=False)}"),
    _after_name("password", "psk", r"(?<![A-Za-z])(?i:psk)", 8),  # wpa_supplicant
    *(  # WordPress: define('AUTH_KEY', '…'), salts of any characters
        Rule("secret", anchor, rf"(?<=_){word}'[ \t]*,[ \t]*'(?P<secret>[^'\n]{{16,128}})'")
        for anchor, word in (("key", "KEY"), ("salt", "SALT"))
    ),
    _after_name("secret", "cookie", r"(?<=[_.])(?i:cookie)", 12, key_like=True),  # ERLANG_COOKIE
    Rule(  # ~/.pgpass: host:port:database:user:password, a line each
        "password",
        "pgpass",
        r"(?<=[\w.*-]):(?:\d{1,5}|\*):(?![0-9])[\w.*$-]{1,64}:[\w.*$@-]{1,64}:"
        r"(?P<secret>[^\s:\"'`\\]{3,128})(?=[ \t]*(?:\r?\n|\\[rn]|\Z))",
        check=_pgpass_line,
    ),
    Rule(  # sqlplus user/…@host
        "password",
        "sqlplus",
        r"sqlplus(?:[ \t]+-[A-Za-z]+)*[ \t]+[\w$#.]{1,64}/"
        rf"(?P<secret>{_NOT_A_SECRET}[^\s/@\"']{{3,128}})@",
    ),
    Rule(  # CREATE USER 'app'@'%' IDENTIFIED BY '…'
        "password",
        "identified",
        rf"(?i:identified[ \t]+by)[ \t]+{_QUOTE}{_value(4, code=False)}",
    ),
    Rule(  # openssl … -passin pass:…
        "password",
        "pass",
        rf"(?:(?<=-passin )|(?<=-passout ))pass:{_value(4, code=False)}",
    ),
    # Passwords named in other languages: in prose, or assigned.
    Rule(
        "password",
        "pass",
        r"(?:(?<=(?i:mot de ))passe|(?<=(?i:mot_de_))passe|(?i:passwort))"
        r"(?:[ \t]+\S{1,64}?){0,3}?(?:[ \t]*[:=][ \t]*|[ \t]+(?i:est|ist|lautet|:)[ \t]+)"
        rf"{_SAID_VALUE}",
    ),
    Rule("password", INTL, rf"(?:{_INTL_PASSWORD})(?:[ \t]*(?:{_INTL_IS}))*[ \t]*{_SAID_VALUE}"),
    # Recovery phrases.
    Rule(
        "mnemonic",
        "mnemonic",
        rf"(?i:mnemonic)(?:[ _-]?(?i:phrase|words|seed))?{_SEED_ASSIGN}(?P<secret>{_SEED_WORDS})",
    ),
    Rule(
        "mnemonic",
        "phrase",
        rf"(?i:seed|recovery)[ _-]?(?i:phrase){_SEED_ASSIGN}(?P<secret>{_SEED_WORDS})",
    ),
    # Any other name that ends with secret, token or key; in a query, in prose.
    _in_query("secret", "secret", "(?i:secret)", 8),
    _in_query("token", "token", "(?i:token)", 8, key_like=True),
    _in_query("api-key", "key", rf"{_API_KEY}(?i:key)", 8, key_like=True),
    _in_query("api-key", "key", r"(?<![A-Za-z])(?i:key)", 16, key_like=True),
    _in_query("token", "auth", "(?i:auth)", 12, key_like=True),
    _in_query("token", "code", "(?<![A-Za-z])(?i:code)", 16, key_like=True),
    _after_name("secret", "key", rf"{_after(['secret'])}(?i:key)", 8, key_like=True),
    _after_name("private-key", "key", rf"{_after(['private'])}(?i:key)", 8, key_like=True),
    _after_name("api-key", "key", rf"{_API_KEY}(?i:key)", 8, key_like=True),
    _after_name("api-key", "key", _KEY, 12, key_like=True, loose=True),
    _after_flag("api-key", "key", _KEY, 8, key_like=True),
    _after_flag("api-key", "-apikey", "(?i:api-?key)", 8, key_like=True),
    Rule(
        "api-key",
        "key",
        rf"{_after(['api', 'access', 'secret', 'license', 'private'], ' _-')}(?i:key)"
        rf"{_PROSE_IS}{_prose_value(8, key_like=True)}",
    ),
    _after_name("secret", "secret", "(?i:secret(?:_?key_?base)?)", 8, key_like=True),
    _after_flag("secret", "secret", "(?i:secret)", 8, key_like=True),
    Rule("secret", "secret", rf"(?i:secret){_PROSE_IS}{_prose_value(8, key_like=True)}"),
    _after_name("token", "token", "(?i:token)", 8, key_like=True),
    _after_flag("token", "token", "(?i:token)", 8, key_like=True),
    Rule("token", "token", rf"(?i:token){_PROSE_IS}{_prose_value(8, key_like=True)}"),
)


# Pass 3: secrets encoded in base64, where it is decoded (echo … | base64 -d, b64decode("…"),
# AUTH PLAIN …) or wherever it is JSON, an AWS session token or a key block: a secret if what
# it decodes to is a credential.
_B64_RUN = r"[A-Za-z0-9+/_-]{8,16384}={0,2}"
_B64_END = r"(?![A-Za-z0-9+/=_-])"
_DECODE_FLAG = r"(?:-[A-Za-z]{0,3}[dD][A-Za-z]{0,3}|--decode)"
# user:password (Basic), or AUTH PLAIN's [authzid]\0user\0password.
_USER_PASSWORD = re.compile(
    r"[\w.@+-]{1,256}:(?!//)\S{3,256}|[\w.@+-]{0,256}\0[\w.@+-]{1,256}\0\S{3,256}"
)


def _holds_credential(encoded: str) -> bool:
    """Whether ``encoded`` (base64, or base64url) decodes to text that is a credential: a
    ``user:password`` pair, or a text in which these rules find a secret (a config, a key)."""
    if len(encoded.rstrip("=")) % 4 == 1:
        return False
    try:
        text = base64.b64decode(encoded.translate(_URLSAFE) + "==").decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    if not text.strip() or not text.translate(_LAYOUT).isprintable():
        return False  # binary: an image, a hash, a key's bytes
    return bool(_USER_PASSWORD.fullmatch(text)) or Redactor().text(text) != text


def _credential_inside(text: str, start: int, end: int) -> Verdict | None:
    return (start, end, "base64-secret") if _holds_credential(text[start:end]) else None


_URLSAFE = str.maketrans("-_", "+/")
_LAYOUT = dict.fromkeys(map(ord, "\0\t\n\r"))
_ENCODED = (
    Rule(
        "base64-secret",
        "J",
        rf"(?<![A-Za-z0-9+/_-])(?:eyJ|IQoJ|LS0tLS1CRUdJ|ewogICJ)[A-Za-z0-9+/_-]{{12,16384}}={{0,2}}{_B64_END}",
        check=_credential_inside,
    ),
    Rule(
        "base64-secret",
        "echo",
        rf"echo[ \t]+(?:-[neE]{{1,3}}[ \t]+)*{_QUOTE}?(?P<secret>{_B64_RUN}){_QUOTE}?"
        rf"[ \t]*\|[ \t]*base64[ \t]+{_DECODE_FLAG}",
        check=_credential_inside,
    ),
    Rule(
        "base64-secret",
        "64",
        rf"base64[ \t]+{_DECODE_FLAG}[ \t]*<<<-?[ \t]*{_QUOTE}?(?P<secret>{_B64_RUN}){_B64_END}",
        check=_credential_inside,
    ),
    Rule(  # b64decode("…"), base64.b64decode(b"…"), Base64.decode64("…"), FromBase64String("…")
        "base64-secret",
        "64",
        r"(?i:base64|b64)[\w.:()]{0,40}?(?:(?i:decode)\w{0,16}|String)\([ \t]*[bu]?"
        rf"{_QUOTE}(?P<secret>{_B64_RUN}){_QUOTE}",
        check=_credential_inside,
    ),
    Rule(
        "base64-secret",
        "auth",
        rf"(?i:auth)[ \t]+(?i:plain)[ \t]+(?P<secret>{_B64_RUN}){_B64_END}",
        check=_credential_inside,
    ),
)


def _numbered(pattern: str, i: int) -> str:
    """``pattern`` with its groups renamed for rule ``i``: ``(?P<secret>`` to ``(?P<secret3>``."""
    return re.sub(r"\(\?P([<=])(\w+)", rf"(?P\1\g<2>{i}", pattern)


class _Pass:
    """A table of rules: run at every position, or from the anchors."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self.bit = {a: 1 << i for i, a in enumerate(sorted({rule.anchor for rule in rules}))}
        self.compiled: dict[int, re.Pattern[str]] = {}

    @property
    def everywhere(self) -> re.Pattern[str]:
        """All the rules in one alternation (compiled when first needed, as each is)."""
        return self.regex(sum(self.bit.values()))

    def regex(self, anchors: int) -> re.Pattern[str]:
        """One alternation of the rules with any of these anchors, in table order: the group
        ``r<i>`` is rule ``i``, its ``secret`` is ``secret<i>``."""
        if anchors not in self.compiled:
            self.compiled[anchors] = re.compile(
                "|".join(
                    f"(?P<r{i}>{_numbered(rule.pattern, i)})"
                    for i, rule in enumerate(self.rules)
                    if self.bit[rule.anchor] & anchors
                ),
                re.ASCII,
            )
        return self.compiled[anchors]

    def matches(
        self, text: str, starts: dict[int, int] | None, taken: list[tuple[int, int]]
    ) -> Iterator[re.Match[str]]:
        """The matches of the rules from the anchors in ``starts`` (or, with ``starts`` None,
        at every position: slow, the same), one after another by where they start, none
        starting inside a span of ``taken`` (placeholders, and the secrets the caller takes:
        it adds them as it goes). A match's context before its secret (``docker login … -p``)
        may hold another secret (``--with-token …``): the next match may start there."""
        if starts is None:
            at = 0
            while match := self.everywhere.search(text, at):
                end = _inside(taken, match.start())
                if end is None:
                    yield match
                at = match.start() + 1 if end is None else end
            return
        for start in sorted(starts):
            if _inside(taken, start) is None:
                match = self.regex(starts[start]).match(text, start)
                if match:
                    yield match

    def secret(self, match: re.Match[str]) -> tuple[Rule, int, int]:
        """The rule that matched, and where its secret starts and ends."""
        index = int(str(match.lastgroup)[1:])
        rule = self.rules[index]
        group = f"secret{index}" if "(?P<secret>" in rule.pattern else 0
        return rule, *match.span(group)


# Pass 4: random tokens, known by nothing but their characters (``randomness``), where what is
# before them does not say they are a hash, a digest or an id.
RUN = "run"
_TOKEN_CHARS = "A-Za-z0-9+/_-"  # and = at its end: base64's padding
# The anchor of a random token: where a run of token characters long enough starts that holds
# a capital, a small letter and a digit, or opens as a private key in hex DER. Found with
# bytes' own searches (a regex tries every position: several times slower).
_TOKEN_BYTES = bytes(
    0x61 if re.fullmatch(f"[{_TOKEN_CHARS}]", chr(i)) else 0x20 for i in range(256)
)
_CLASS_BYTES = (
    bytes(
        0x55
        if chr(i).isupper()
        else 0x4C
        if chr(i).islower()
        else 0x44
        if chr(i).isdigit()
        else 0x20
        for i in range(128)
    )
    + b" " * 128
)
_LONG_RUN = b"a" * randomness.MIN_LENGTH
_BEYOND_HEX = bytes(0x67 if "g" <= chr(i) <= "z" else 0x20 for i in range(256))
_BASE36 = re.compile(rb"(?<![a-z0-9])[a-z0-9]{32}")
"""Small letters that hex has not: of small letters and digits, random but no digest."""
_HEX_DER = re.compile(rb"30(?:8[12][0-9a-fA-F]{2,4}|[0-7][0-9a-fA-F])0201(?:00|01|03)")
# A key whose prefix (a service's short name) is not known here: a few small letters, then
# hex, a UUID, or small letters and digits as long as a key's (bkat_225d…, xaat-85627dac-…).
_NOT_A_SERVICE = (
    r"(?!(?i:sha\d*|md5|crc\d*|blake\d*|hash|chunk|commit|build|file|blob|tree|index|main|app|"
    r"vendor|node|run|job|task|pod|img|image|layer|cache|tmp|temp|test|pack|obj|ref|v\d+)[_-])"
)
_PREFIXED = (
    rf"(?<![A-Za-z0-9_-])(?:{_NOT_A_SERVICE}[a-z][a-z0-9]{{1,7}}"
    rf"(?:-{_UUID4}|[_-](?:[0-9a-f]{{32,64}}|(?![a-z]{{5}})(?=[a-z]{{0,64}}\d)[a-z0-9]{{40,64}}))"
    r"|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"  # and Mailgun's signing key
    r"|(?=(?:[A-Z-]{0,28}\d){4})(?=(?:[0-9-]{0,28}[A-Z]){4})[A-Z0-9]{5}(?:-[A-Z0-9]{5}){4}"
    r"|(?P<seed>nsec1[02-9ac-hj-np-z]{58}|S[A-Z2-7]{55}))"  # Nostr's and Stellar's secret keys
    r"(?![A-Za-z0-9_-])"
)
_PREFIXED_BYTES = re.compile(_PREFIXED.replace("?P<seed>", "").encode())
_PREFIXED_KEY = re.compile(
    rf"{_PREFIXED}|(?<![A-Za-z0-9_-]){_NOT_A_SERVICE}[a-z][a-z0-9]{{1,3}}[_-]"
    r"(?P<mixed>(?=[a-z0-9]{0,63}[A-Z])[A-Za-z0-9]{20,64})(?![A-Za-z0-9_-])"
)
"""Also a random part of letters of both cases and digits after a prefix too short to be a
word (``ak-qb5IDqPQGp90QKqe9Qr6l4``, not ``backup_mV8286Zc…``). Found in a run at the start of
any of its parts (a path's)."""


def _runs(raw: bytes, start: int, end: int) -> Iterator[int]:
    """Where the anchors of random tokens are in ``raw[start:end]``."""
    mapped = raw[start:end].translate(_TOKEN_BYTES)
    at = 0
    while (found := mapped.find(_LONG_RUN, at)) >= 0:
        stop = mapped.find(b" ", found)
        stop = len(mapped) if stop < 0 else stop
        if found == 0 and start > 0 and raw[start - 1 : start].translate(_TOKEN_BYTES) == b"a":
            at = stop  # a run that began before the window: found from its own start
            continue
        run = raw[start + found : start + stop]
        kinds = run.translate(_CLASS_BYTES)
        if (
            (b"U" in kinds and b"L" in kinds and b"D" in kinds)
            or (stop - found >= 32 and b"g" in run.translate(_BEYOND_HEX) and _BASE36.search(run))
            or _HEX_DER.match(raw, start + found)
            or _PREFIXED_BYTES.search(raw, start + found, start + stop)
        ):
            yield start + found
        at = stop


# A password made up at random: letters of both cases, a digit and a symbol, in a run of 8 to 64
# characters that reads as no word, no code and no address (``7f9@YVHH5tnl``, ``9~Q6NB%rDbJg``).
# Its anchor is found as a random token's is, by its characters' kinds.
PASSWORD_RUN = "password-run"
_PASSWORD_CHARS = "A-Za-z0-9!#$%^&*~?@._+=-"
_SYMBOLS = "!#$%^&*~?@"
"""The symbols of a password that base64, a name or a path rarely hold."""
_PASSWORD_BYTES = bytes(
    0x61 if re.fullmatch(f"[{_PASSWORD_CHARS}]", chr(i)) else 0x20 for i in range(256)
)
_KIND_BYTES = bytes(0x53 if chr(i) in _SYMBOLS else b for i, b in enumerate(_CLASS_BYTES))
_RUN_KINDS = bytes(
    kind if kind != 0x20 else 0x77 if ours == 0x61 else 0x20
    for kind, ours in zip(_KIND_BYTES, _PASSWORD_BYTES, strict=True)
)
"""A password character's kind (U, L, D, S, or w for . _ + = -), a space for any other."""


def _password_runs(raw: bytes, start: int, end: int) -> Iterator[int]:
    """Where runs of password characters start in ``raw[start:end]`` that hold a capital, a
    small letter, a digit and a symbol."""
    kinds = raw[start:end].translate(_RUN_KINDS)
    at = 0
    while (symbol := kinds.find(b"S", at)) >= 0:  # from a symbol, rarer than a run's start
        found = kinds.rfind(b" ", 0, symbol) + 1
        stop = kinds.find(b" ", symbol)
        stop = len(kinds) if stop < 0 else stop
        at = stop
        if found == 0 and start > 0 and raw[start - 1 : start].translate(_PASSWORD_BYTES) == b"a":
            continue  # a run that began before the window: found from its own start
        if 8 <= stop - found <= 64:
            run = kinds[found:stop]
            if b"U" in run and b"L" in run and b"D" in run:
                yield start + found


_CODE = re.compile(
    # Operators and a regex's ranges and repeats; a start that is no character of a token.
    r"&&|\|\||[!=]=|=!|\?\?|\*\*|->|\+\+|\.\.|\.\*|a-z|A-Z|0-9|\A[^A-Za-z0-9]"
    # A query, an anchor, a file's name, grep's file-line-, a Markdown heading, an entity.
    r"|\?[\w.-]+=|&[A-Za-z_]\w+=|#L\d|\.[a-z]{1,4}(?:\?\w|#[\w-]+\Z|\Z)|##"
    r"|\.(?:css|js|ts|html?|json|md|py|lua|txt|docx?|xlsx?|pdf|png|jpe?g|svg|log)(?![a-z])"
    r"|\.[a-z]{1,4}[-:]\d+[-:]|&(?:quot|amp|lt|gt|#\d)|#[a-z]+\Z"
    # A name assigned (labelType=…), a snake_case word, a version's range (V1~V4).
    r"|\A[a-z_]{4,}\w*=|\A[a-z]{2,}[A-Z][a-z]\w*=|[A-Za-z0-9]_[a-z]{3,}(?![A-Za-z0-9])|\d~[A-Za-z]?\d"
    # Arithmetic: a power, a decimal number; a format's field; percent-encoding alone.
    r"|[A-Za-z0-9)]\^\d+(?=[-+*/)=]|\Z)|\d\.\d|[a-z]{2}\*\d|%(?:[-0-9]*l[dxu]|[sd]|\.\d+f)(?![A-Za-z0-9])"
    r"|\*\Z|%[0-9A-F]{2}(?!.*[!#$^&*~?@])"
)
"""What in a run of password characters says it is code, math, a link, a file or markup."""
_REPEATED = re.compile(r"([!#$%^&*~?@])\1\1")
_PLACEHOLDER_END = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9]+\]\Z")
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_CHUNKS = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]")


def _made_up_password(text: str, start: int, end: int) -> Verdict | None:
    """A run of password characters that is a password: mixed as one made up at random (the
    words of a name run longer), and no code, address or hash."""
    cut = _PLACEHOLDER_END.search(text, max(0, start - 64), start)
    if cut or text.startswith("[REDACTED:", end):
        return None  # a run cut by a mask: a part of a longer one, found (or not) as it was
    while end > start and text[end - 1] in "._-":
        end -= 1  # a sentence's full stop
    if text[start - 1 : start] == "\\" and text[start] in "nrt":
        start += 1  # the letter of an escape: \n$session
    while start < end and text[start] in "-=+._":
        start += 1  # a flag's dash: -hpSECRET
    run = text[start:end]
    if len(run) < 10 or _CODE.search(run) or _REPEATED.search(run):
        return None
    kinds = run.encode("ascii", "replace").translate(_KIND_BYTES)
    if not (b"U" in kinds and b"L" in kinds and b"D" in kinds and b"S" in kinds):
        return None
    if _ADDRESS.fullmatch(run) or _ordinary_before(text, start):
        return None
    chunks = [len(c) for c in _CHUNKS.findall(run)]
    if not chunks or max(chunks) >= 6:
        return None
    symbols = sum(c in _SYMBOLS for c in run)
    if symbols * 2 > len(run):
        return None  # more symbols than a password has: text that lost its letters (a???a??)
    if symbols < 2 and sum(chunks) >= randomness.MEAN_CHUNK * len(chunks):
        return None  # small words with a symbol in a name, not two symbols among letters
    return start, end, "password"


# A value assigned to a name that holds a word of a key's anywhere (``db.pass.word``,
# ``WEBHOOK_HMAC``, ``otpauthSecret``), unless it says the value is an id, a hash or a public
# value: hex of 32 digits or more, or letters of both cases and digits mixed as at random
# (``siP53mtRyXyELIv``), too short for a random token alone.
NAMED_RUN = "named-run"
_ALNUM_BYTES = bytes(0x61 if chr(i).isascii() and chr(i).isalnum() else 0x20 for i in range(256))
_HEX_BYTES = bytes(0x68 if chr(i) in "0123456789abcdefABCDEF" else 0x20 for i in range(256))
_NAMED_RUN = b"a" * 12


def _named_runs(raw: bytes, start: int, end: int) -> Iterator[int]:
    """Where runs of letters and digits start in ``raw[start:end]`` that are hex of 32 digits
    or more, or hold a capital, a small letter and a digit in 12 to 64 characters."""
    kinds = raw[start:end].translate(_CLASS_BYTES)
    mapped = raw[start:end].translate(_ALNUM_BYTES)
    at = 0
    while (found := mapped.find(_NAMED_RUN, at)) >= 0:
        stop = mapped.find(b" ", found)
        stop = len(mapped) if stop < 0 else stop
        at = stop
        if found == 0 and start > 0 and raw[start - 1 : start].translate(_ALNUM_BYTES) == b"a":
            continue
        size, run = stop - found, kinds[found:stop]
        if b"D" not in run or not (
            (size >= 32 and b" " not in raw[start + found : start + stop].translate(_HEX_BYTES))
            or (size <= 64 and b"U" in run and b"L" in run)
        ):
            continue
        before = raw[max(0, start + found - 48) : start + found]
        word = before.rstrip(b" \t\"'`\\")
        word = word[max(word.rfind(b" "), word.rfind(b"\t")) + 1 :]
        if b"=" in before or b":" in before or b"," in before or word.startswith((b"-", b"/")):
            yield start + found  # after an assignment, a list's comma, a flag


_ASSIGNED = re.compile(  # a name, and an assignment: no name and a space (the hash is …)
    r"""([^\W\d][\w.-]{0,64})\\?["'`]?\]?[ \t]*(?:=>|:=|[:=])[ \t]*"""
    r"""(?:[\w.\[\]]{1,24}\([ \t]*)?(?:@|N|[bru]{1,2})?\\?["'`]?\Z"""
)
_LISTED = re.compile(  # a list's next item: KEYS=a,b,…
    r"""([A-Za-z_][\w.-]{0,64})[ \t]*[:=][ \t]*\\?["']?(?:[^\s,"']{8,256},[ \t]*){1,8}\Z"""
)
_FLAGGED = re.compile(  # a command's flag: -p, --password, /rp (Windows)
    r"""(?:(?<=\s)|\A)(?:--?|/)([A-Za-z][\w-]{0,30})[ \t]+\\?["']?\Z"""
)
_OTHER_NAMES = re.compile(
    r"(?:parent|head|base|tree|oid|blob|object|ref|reference|sha|sum|tx|block|root|span|trace|"
    r"thumbprint|state|si)s?$"
)
"""The names of git's objects, digests, traces and states, besides those of ids and hashes."""
_KEY_WORDS = re.compile(
    r"\A(?:secret|token|keys?|pass\w*|pwd|pw|pat|auth\w*|cred\w*|private|priv|bearer|api|hmac|"
    r"pepper|salt|seed|signing|pin|otp|mac|login)\Z"
)
"""What a name holds for its value to be a key: hex under another is a digest, letters and
digits an id."""
_FOREIGN_KEY_WORDS = re.compile(
    "passwort|kennwort|geheim|schl(?:ü|ue)ssel|passe|contrase(?:ñ|n)a|clave|chiave|segret|senha|"
    "segredo|chave|wachtwoord|sleutel|has(?:ł|l)o|klucz|heslo|kl(?:í|i)(?:č|c)|(?:ş|s)ifre|anahtar|"
    "gizli|parol|jelsz|kulcs|salasana|avain|l(?:ö|o)senord|nyckel|adgangskode|n(?:ø|o)gle|passord|"
    "khau|khoa|sandi|kunci|rahasia|lozinka|klju|пароль|ключ|секрет|密码|密碼|密钥|密鑰|令牌|口令|"
    "パスワード|鍵|비밀번호|암호|키|סיסמ|מפתח|كلمة|مفتاح|سر|पासवर्ड|कुंजी|รหัส|กุญแจ"
)
"""The words for a password, a key or a secret in other languages, in a name."""
_WORDS_OF = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+")
"""The words of a name: ``WEBHOOK_HMAC``, ``otpauth``, ``Secret``."""
_CAPITALIZED = re.compile(r"[A-Z][a-z]{2,}")
_WORD_GOES_ON = frozenset("-_./+=%")
_QUERY = frozenset("?&#;")


def _named_value(text: str, start: int, end: int) -> Verdict | None:
    """A value of letters and digits, whole, after a name of a key's that is not one of an id's,
    a hash's or a public value's."""
    if text[end : end + 1] in _WORD_GOES_ON or text[start - 1 : start] in _WORD_GOES_ON:
        return None  # a part of a longer word: a path, a UUID, base64, a name
    run = text[start:end]
    hexadecimal = len(run) >= 32 and all(c in "0123456789abcdefABCDEF" for c in run)
    kinds = run.encode().translate(_CLASS_BYTES)
    mixed = b"U" in kinds and b"L" in kinds and b"D" in kinds and randomness.mixed(run)
    if not hexadecimal and not (len(run) <= 64 and mixed):
        return None
    named = _ASSIGNED.search(text, max(0, start - 80), start) or _LISTED.search(
        text, max(0, start - 512), start
    )
    flag = None if named else _FLAGGED.search(text, max(0, start - 40), start)
    if flag and mixed:
        named = flag  # a flag's value that is random letters and digits, whatever the flag
    elif named is None or text[named.start() - 1 : named.start()] in _QUERY:
        return None  # a link's query names its keys
    elif not (
        any(_KEY_WORDS.match(word.lower()) for word in _WORDS_OF.findall(named.group(1)))
        or _FOREIGN_KEY_WORDS.search(named.group(1).lower())
    ):
        return None
    opened = text.rfind("[REDACTED:", max(0, named.start() - 64), start)
    if run.startswith("0x") or (opened >= 0 and text.find("]", opened) >= named.start()):
        return None  # a hex number; a name a placeholder makes (…:1]easypost.Client(")
    name = named.group(1)
    lower = name.lower()
    if _ordinary_name(name) or _PUBLIC_NAME.search(name) or _OTHER_NAMES.search(lower):
        return None
    if _PUBLIC_WORDS.search(lower) or _ordinary_before(text, start):
        return None
    if not hexadecimal and (randomness.base58check(run) or _printable(randomness.decoded(run))):
        return None  # an address with its checksum; text in base64
    if not hexadecimal and len(_CAPITALIZED.findall(run)) >= 2:
        return None  # a name in camelCase: hKdfSha256Size
    return start, end, "secret"


# Names whose values are random and no secret: ids, hashes, digests, cursors, public keys, a
# JSON Web Key's public members.
_ORDINARY_NAME = re.compile(
    r"(?:^|[^a-z])(?:id|ids|after|before|[a-z]*(?:id|uuid|guid|ulid|ksuid|nanoid|hash|digest|checksum|sha\d*|"
    r"md5|etag|integrity|cursor|marker|(?:page|next|continuation|pagination|sync|resume|request)token|"
    r"nonce|commit|revision|rev|version|fingerprint|address|cid|public(?:key)?|pubkey|peer|"
    r"challenge|timestamp|azp|aud|clientdatajson|authenticatordata|attestationobject|"
    r"(?:skip|delta|changes?)token|(?:cache|restore|primary|foreign|sort|partition|"
    r"idempotency|object|lookup|row|dedup|i18n|translation)key|idempotency(?:token)?|sitekey|writekey|gpgkey|verification|state|list)|"
    r"kid|x|y|n|e|b|bh|x5t|x5t#s|x5c)$"
)
_ASSIGNMENT_BEFORE = re.compile(  # an assignment, or a space (ksuid …)
    r"""\\?["'`]?\]?[ \t]*(?:=>|:=|[:=])[ \t]*\\?["'`]?\Z|[ \t]+\Z"""
)
_NAME_BACKWARDS = re.compile(r"[\w./#-]{0,64}")
_NOT_A_NAME_START = "0123456789./#-"


def _name_before(text: str, start: int, reach: int = 80) -> str | None:
    """The name a value at ``start`` is given to (``"request_id": …``, ``KEY=…``, ``ksuid …``),
    read backwards from the assignment: a regex searched up to an end is slow."""
    assignment = _ASSIGNMENT_BEFORE.search(text, max(0, start - 24), start)
    if assignment is None:
        return None
    at = assignment.start()
    back = _NAME_BACKWARDS.match(text[max(0, at - min(reach, 65)) : at][::-1])
    name = back.group()[::-1].lstrip(_NOT_A_NAME_START) if back else ""
    return name or None


# A digest's name (sha512-…, h1:…), a data URL, or a crypt hash's fields ($2b$12$…).
_HASH_BEFORE = re.compile(  # and a document's id in its link (docs.google.com/…/d/…)
    r"(?:sha(?:1|224|256|384|512)[-:]|md5[-:]|h1:|;base64,|\$|/d/|/folders/|\|1\|"
    r"|\|1\|[A-Za-z0-9+/=]{28}\||/macros/s/|(?<![\w.])pk\.|pub(?:lic)?[ _-]?key\W{1,4}"
    r"|secure:[ \t]*v1:[A-Za-z0-9+/=]{0,32}:|<master>\{)\Z",
    re.IGNORECASE,  # a hashed host in known_hosts (|1|salt|hash), a public key, Mapbox's pk.
)
_IDS = (
    r"(?:msg|toolu|srvtoolu|tool|call|req|chatcmpl|resp|rs|fc|run|thread|asst|step|file|batch|vs|"
    r"org|proj|user|cus|pi|ch|in|sub|ba|re|du|price|prod|evt|pm|seti|txn|acct|src|card|cs|po|tr|ii|il|"
    r"msgbatch|cmpl|icfg|ses|prt|per)(?:_\d\d)?[_-]"
)
_ID_PREFIX = re.compile(rf"(?<![A-Za-z0-9]){_IDS}\Z")
_AN_ID = re.compile(_IDS.encode())
"""The ids of model providers' objects (chatcmpl-…, toolu_…, call_00_…), of Stripe's (cus_…)
and of opencode's sessions and parts (ses_…, prt_…), right before the random part: searched for
in the run from its start to there."""
_ID_OR_DIGEST = re.compile(
    rf"{_IDS}|(?i:sha(?:1|224|256|384|512)|md5|nonce)-|Q1(?=[A-Za-z0-9+/]{{27}}=)"  # Alpine's
)
"""How a run that is an id or a digest starts (``pi_3Jhj…``, ``sha512-uFzb…``)."""


def _ordinary_name(name: str) -> bool:
    """Whether a key or a variable named ``name`` holds ids, hashes or public keys (a number
    after the name aside: x-amz-id-2; any part of an annotation's: checksum/secret)."""
    parts = name.lower().replace("_", "").replace("-", "").replace(".", "").split("/")
    return any(_ORDINARY_NAME.search(part.rstrip("0123456789")) for part in parts)


_ONE_CASE_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")


def _random_token(text: str, start: int, end: int) -> Verdict | None:
    """Where in ``text[start:end]`` (a run of token characters) a private key or a random token
    is, unless what is before it says it is a hash or an id, or it is text in base64 that holds
    no credential."""
    run = text[start:end]
    if _ONE_CASE_HEX.fullmatch(run) and not _HEX_DER.match(run.encode()):
        return None  # a digest, an id: hex is never random here (a key in hex is known by name)
    if randomness.private_key(run) or _jwk_private(text, start, end):
        return start, end, "private-key"
    if prefixed := _prefixed_key(text, start, end):
        return prefixed
    data = randomness.decoded(run)
    if (data is not None and randomness.is_data(data)) or _ordinary_before(text, start):
        return None  # a digest's or an image's base64, whole; the value of an id
    part = randomness.random_part(run)
    if part is None or _ID_PREFIX.search(text, start, start + part[0]) or _ID_OR_DIGEST.match(run):
        return None
    at, to = start + part[0], start + part[1]
    if _HASH_BEFORE.search(text, max(0, at - 48), at) or _in_public_armor(text, at):
        return None
    if randomness.private_key(text[at:to]):
        return at, to, "private-key"
    data = randomness.decoded(text[at:to])
    if data is not None and _printable(data):
        return (at, to, "base64-secret") if _holds_credential(text[at:to]) else None  # text
    return at, to, "token"


def _prefixed_key(text: str, start: int, end: int) -> Verdict | None:
    """A key with a prefix not known here, or a secret key of Nostr or Stellar, as a part of
    ``text[start:end]`` (a run of token characters)."""
    for found in _PREFIXED_KEY.finditer(text, start, end):
        at, to = found.span()
        if seed := found.group("seed"):
            if seed.startswith("nsec1") or randomness.stellar_secret(seed):
                return at, to, "private-key"
        elif (
            (found.group("mixed") is None or randomness.mixed(found.group("mixed")))
            and not _ID_OR_DIGEST.match(text, at)
            and not _ordinary_before(text, at)
        ):
            return at, to, "api-key"
    return None


def _ordinary_before(text: str, start: int) -> bool:
    """Whether what is before a value says it is a hash, an id, a public value: a digest's mark
    (sha512-…, h1:…) or a crypt hash's fields, a name that says so (``"request_id": …``,
    ``ksuid …``), or such words just before, with no word of a secret among them."""
    if _PUBLIC_PREFIX.match(text, start):
        return True
    mark = text[start - 1 : start]
    if (
        mark
        and not (mark.isalnum() or mark == "_")
        and _HASH_BEFORE.search(text, max(0, start - 48), start)
    ):
        return True  # (each of the marks ends with a symbol)
    sealed = text.rfind("ENC[", max(0, start - 1024), start)
    if sealed >= 0 and "]" not in text[sealed:start]:
        return True  # sops' encrypted value: its data, iv and tag
    named = _name_before(text, start)
    if named and _ordinary_name(named):
        return True
    before = text[max(0, start - 96) : start]
    if _PUBLIC_LINK.search(before):
        return True  # a badge's token, a sync's cursor
    said = before[before.rfind("\n") + 1 :].lower()
    if not said.strip():  # a line of its own: what the command before printed (shasum, dgst)
        said = before[before.rfind("\n", 0, max(0, len(before) - len(said) - 1)) + 1 :].lower()
    return _ORDINARY_WORDS.search(said) is not None and _SECRET_WORDS.search(said) is None


_ORDINARY_WORDS = re.compile(
    r"digest|dgst|hash|checksum|sha\d|md5|fingerprint|etag|integrity|commit|cursor|nonce|"
    r"signature|address|\bid\b|uuid|ksuid|ulid|request.?id|trace|version|revision|dnskey|rrsig"
)
_SECRET_WORDS = re.compile(r"secret|token|key|pass|pwd|auth|credential|private|bearer|api")
_PUBLIC_PREFIX = re.compile(
    r"(?:pk_(?:live|test)|phc|sb_publishable|pk-lf|rk_live_pub|dpl|prj|team|rzp_(?:live|test))_|client-"
    r"|pk-lf-|pk\.eyJ"
)
"""Keys published on purpose (Stripe's and Clerk's publishable, PostHog's project key) and
the ids of a deploy's objects (Vercel's dpl_, prj_, team_)."""


_JWK_PRIVATE = frozenset({"d", "p", "q", "dp", "dq", "qi", "k"})
"""A JSON Web Key's private members (``k``: a symmetric key's)."""


def _jwk_private(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a private member's value in a JSON Web Key."""
    named = _name_before(text, start, 16)
    return (
        named is not None
        and named in _JWK_PRIVATE
        and '"kty' in text[max(0, start - 4096) : end + 4096]
    )


def _in_public_armor(text: str, at: int) -> bool:
    """Whether ``at`` is inside an armored block that is no private key (a public key, a
    certificate, a signature): its base64 is random, and public."""
    begin = text.rfind("-----BEGIN ", max(0, at - 65_536), at)
    if begin < 0 or "-----END " in text[begin:at]:
        return False
    return "PRIVATE" not in text[begin : text.find("-----", begin + 11, begin + 80)]


def _printable(data: bytes | None) -> bool:
    if data is None:
        return False
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return False
    return text.translate(_LAYOUT).isprintable()


_RANDOM = (
    Rule(
        "token",
        RUN,
        rf"(?<![{_TOKEN_CHARS}])[{_TOKEN_CHARS}]{{24,4096}}(?![{_TOKEN_CHARS}])={{0,2}}",
        check=_random_token,
    ),
)
# Pass 6: values of letters and digits assigned to a name.
_NAMED_VALUES = (
    Rule(
        "secret",
        NAMED_RUN,
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{12,4096}(?![A-Za-z0-9])",
        check=_named_value,
    ),
)
# Pass 5, apart from pass 4 (a run of both may start at one place): passwords made up at random.
_MADE_UP = (
    Rule(
        "password",
        PASSWORD_RUN,
        rf"(?<![{_PASSWORD_CHARS}])[{_PASSWORD_CHARS}]{{8,64}}(?![{_PASSWORD_CHARS}])",
        check=_made_up_password,
    ),
)

_PASSES = (
    _Pass(_SHAPES),
    _Pass(_NAMES),
    _Pass(_ENCODED),
    _Pass(_RANDOM),
    _Pass(_MADE_UP),
    _Pass(_NAMED_VALUES),
)
_TOKENS = (3, 4, 5)  # the passes of random tokens, passwords and values by their characters


@dataclass(frozen=True)
class _Finder:
    """One scan: the anchors of one character, as one regex (without named groups, which would
    keep ``re`` from skipping alternatives at a glance); where it hits, each anchor's own regex
    tells which one it is, but a separator's (the most frequent), which its last group tells."""

    lower: bool
    regex: re.Pattern[bytes]
    anchors: tuple[tuple[str, re.Pattern[bytes]], ...]
    separator: str = ""
    group: int = 0
    """The group that only the separator's alternative ends with."""

    def which(self, data: bytes, hit: re.Match[bytes]) -> Iterator[tuple[str, re.Match[bytes]]]:
        """The anchors (not the separator) that ``hit`` is, each with its own match: all of them,
        as two may start matches at different places (``-apiKey =…``: a flag, and ``Key =``)."""
        if len(self.anchors) == 1:
            yield self.anchors[0][0], hit
            return
        for name, regex in self.anchors:
            if anchor := regex.match(data, hit.start()):
                yield name, anchor


def _finders() -> list[_Finder]:
    scans: dict[tuple[bool, bytes], list[tuple[str, bytes]]] = {}
    for name, (lower, char, rest) in _ANCHORS.items():
        scans.setdefault((lower, char), []).append((name, re.escape(char) + rest))
    finders = []
    for (lower, _), anchors in scans.items():
        others = [(name, regex) for name, regex in anchors if name not in _SEPARATORS]
        separator = next((name for name, _ in anchors if name in _SEPARATORS), "")
        alternatives = [regex for _, regex in others]
        if separator:
            alternatives.append(dict(anchors)[separator] + b"()")
        regex = re.compile(b"|".join(alternatives))
        compiled = tuple((name, re.compile(regex)) for name, regex in others)
        finders.append(_Finder(lower, regex, compiled, separator, regex.groups))
    return finders


_FINDERS = _finders()
# For each anchor: [(pass, bit)] of the passes that use it.
_USERS = {
    name: [(n, p.bit[name]) for n, p in enumerate(_PASSES) if name in p.bit]
    for name in [*_ANCHORS, PREFIX, RUN, PASSWORD_RUN, NAMED_RUN, INTL]
}
_PREFIXES = re.compile(
    rf"\b(?:{'|'.join(r.prefix for p in _PASSES for r in p.rules if r.prefix)})\Z".encode()
)
_SHORTEST = 8  # no secret is found in a shorter text
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9]+\]")

# Where a token goes on at the next line, as the texts' bytes: a shell continuation (a backslash
# and a newline, also \\\n inside JSON); or a hard wrap (a newline, also \n inside JSON) after a
# line of 40 characters at least, where the next line goes on with the token (not with a word,
# a list's number, a name followed by an assignment or a call, and not a path after a file's
# name; = may pad base64), _hard_wrap telling the rest. Or, where the next line starts with a
# word or a digit after a line whose last 4 characters are no word's (a digit, a capital, _ = or
# - among them), or with one of - . ~ : ! % / + and a letter or a digit (not a list's dash, a
# flag's --, an END line): a hard wrap only if the two parts are a key's shape together
# (``glpat`` and ``-Kmb4…``). The first empty group that took part marks where the break
# starts; the last says which it is.
_TOKEN = rb"[A-Za-z0-9+/=_-]"
_LEFT = rb"[A-Za-z0-9+/=_.-]"  # how a token ends before a line break (ya29., SG. end with a dot)
_GOES_ON = rb"(?=[^\s\\])"  # after a continuation, whatever is not a space goes on the word
# A word, or a name before an assignment or a call: what a line starts with, not a token.
_NAMED_NEXT = (
    rb"[A-Za-z][a-z]*(?![A-Za-z0-9+/=_-])"
    rb"|[A-Za-z0-9+/_-]{0,40}(?:[ \t]*:|\(|[ \t]+=|=[^=\s\"'`\\,;)\]}])"  # a name's length
)
_WRAPPED = rb"(?=[A-Za-z0-9_])(?!" + _NAMED_NEXT + rb")(?![0-9]{1,3}[.)][ \t])"
_NAMED = re.compile(_NAMED_NEXT)


def _line_breaks(newline: bytes, cr: bytes, backslash: bytes) -> re.Pattern[bytes]:
    """The regex for line breaks written as ``newline`` (after ``cr`` in a CRLF) and a shell's
    backslash as ``backslash``: as the text has them, or escaped inside JSON. The checks that
    rule the most out come first."""
    # The rest of a long line: in JSON, without a \n (the n before a break is not a token's).
    long = rb"[^\r\n\0]{39}" if newline == b"\n" else rb"(?:(?!\\[nr])[^\r\n\0]){39}"
    words = b"|".join(rb"(?<=[0-9A-Z_=-][A-Za-z0-9]{%d}" % n + newline + rb")" for n in range(4))
    # Not a list of paths, one a line: a file's name (.ts, .json), then a path (src/…, /Users/…).
    named = (
        rb"(?!(?=[A-Za-z0-9_.-]*/)(?:"
        + b"|".join(rb"(?<=\.[a-z]{%d}" % n + newline + rb")" for n in range(1, 5))
        + rb"))"
    )
    hard = (  # where it starts, a long line, then which kind it is
        rb"(?=[A-Za-z0-9_.~:!%/+-])(?:(?<="
        + _LEFT
        + rb"()"
        + cr
        + newline
        + rb")(?<="
        + long
        + _LEFT
        + cr
        + newline
        + rb")|(?<="
        + _LEFT
        + rb"()"
        + newline
        + rb")(?<="
        + long
        + _LEFT
        + newline
        + rb"))"
        + named
        + rb"(?:"
        + _WRAPPED
        + rb"()|(?:"
        + words
        + rb")(?=[A-Za-z0-9])()|(?=[-.~:!%/+][A-Za-z0-9])())"
    )
    continued = (
        rb"(?<=[^\s\\\0]()"
        + backslash
        + cr
        + newline
        + rb")"
        + _GOES_ON
        + rb"|(?<=[^\s\\\0]()"
        + backslash
        + newline
        + rb")"
        + _GOES_ON
    )
    return re.compile(
        newline
        + rb"(?<=[A-Za-z0-9+/=_.\\\r-]"
        + newline
        + rb")(?:"
        + continued
        + rb"|"
        + hard
        + rb")"
    )


_LINE_BREAKS = (_line_breaks(b"\n", b"\r", rb"\\"), _line_breaks(rb"\\n", rb"\\r", rb"\\\\"))
_WRAP = 5  # the marker groups: 1 and 2 a continuation, 3 or 4 a hard wrap; 5 a token goes on
_RUN = re.compile(_TOKEN + rb"*")
_LEFT_RUN = re.compile(_LEFT + rb"*")  # run on the bytes before a break, reversed
_PLAIN_WORD = re.compile(rb"[A-Za-z][a-z]*|[a-z]{2,}[0-9]{1,3}")  # a word, base64, sha256
_ALNUM = re.compile(rb"[A-Za-z0-9]")
_NOT_SPACE = re.compile(rb"[^\s\\\"'`]*")


def _hard_wrap(raw: bytes, start: int, end: int, as_a_shape: bool = False) -> bool:
    """Whether the line break ``raw[start:end]`` (after a line of 40 characters at least, ending
    in a token, the next going on with one) wraps one token: the two parts are a key's shape
    together (``dapi`` and ``b3215…``); or, neither a word nor without a letter or a digit (and
    not ``as_a_shape`` only, nor after a dot), they are long enough to be a token (4 characters
    before, 20 together), the next line not a key of its own."""
    if raw.endswith(b"-----", 0, start):
        return False  # a key block's armor (-----BEGIN … KEY-----)
    run = _LEFT_RUN.match(raw[max(0, start - 256) : start][::-1])
    first = start - (run.end() if run else 0)
    rest = _RUN.match(raw, end)
    after = rest.end() if rest else end
    shapes = _PASSES[0].everywhere
    ahead = _NOT_SPACE.match(raw, end)
    if (start - first) + ((ahead.end() if ahead else end) - end) >= 16:  # as long as a key
        key = shapes.match((raw[first:start] + raw[end : end + 512]).decode("ascii", "replace"))
        if key and key.end() > start - first:
            if not (as_a_shape and _NAMED.match(raw, end)):
                return True  # a key's shape goes on across it
            # A word or a name next (password:, mysql -p) goes on a key only if the key is
            # not whole before it: else it is the next line's own, and its anchor.
            alone = shapes.match(raw[first:start].decode("ascii", "replace"))
            return alone is None or alone.end() < start - first
    if as_a_shape or raw[start - 1] == ord(".") or _PLAIN_WORD.fullmatch(raw, first, start):
        return False  # a dot ends a prefix (ya29.), or a sentence
    if start - first < 4 or (start - first) + (after - end) < 20:
        return False
    if not _ALNUM.search(raw, first, start) or not _ALNUM.search(raw, end, after):
        return False  # a ruler (// =====), a comment
    # Not when the next line starts a key or an id of its own (a list of them, one a line), or a
    # table's row (a short word, then a column's spaces).
    if _AN_ID.match(raw, end) or (after - end < 12 and raw[after : after + 2] in (b"  ", b"\t")):
        return False
    return not shapes.match(raw[end : end + 512].decode("ascii", "replace"))


def _breaks(raw: bytes) -> list[tuple[int, int]]:
    """Where a token goes on at the next line in ``raw``: the line breaks to take out, in order."""
    found = []
    for finder in _LINE_BREAKS:
        for hit in finder.finditer(raw):
            start = next(hit.start(g) for g in range(1, _WRAP) if hit.start(g) >= 0)
            continuation = hit.start(1) >= 0 or hit.start(2) >= 0
            if continuation or _hard_wrap(raw, start, hit.end(), hit.start(_WRAP) < 0):
                found.append((start, hit.end()))
    return sorted(found)


@dataclass(frozen=True)
class _Unwrapped:
    """A text with the line breaks inside its tokens taken out, where the rules run."""

    text: str
    cuts: tuple[tuple[int, int], ...] = ()
    """(where in ``text``, how many characters were taken out there), in order."""
    written: tuple[int, ...] = ()
    """Where each of those line breaks is in the text as written."""

    @classmethod
    def of(cls, text: str, breaks: Iterable[tuple[int, int]]) -> _Unwrapped:
        parts: list[str] = []
        cuts: list[tuple[int, int]] = []
        done = removed = 0
        for start, end in breaks:
            parts.append(text[done:start])
            cuts.append((start - removed, end - start))
            removed += end - start
            done = end
        if not cuts:
            return cls(text)
        written = tuple(at + sum(n for _, n in cuts[:i]) for i, (at, _) in enumerate(cuts))
        return cls("".join([*parts, text[done:]]), tuple(cuts), written)

    def position(self, at: int) -> int | None:
        """Where ``at`` of the text as written is in ``text``: None inside a line break."""
        i = bisect_right(self.written, at) - 1
        if i < 0:
            return at
        cut, length = self.cuts[i]
        if at < self.written[i] + length:
            return None
        return at - self.written[i] - length + cut

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where ``text[start:end]`` is in the text as written: with the line breaks inside it,
        not those at its ends."""
        before = sum(n for at, n in self.cuts if at <= start)
        within = sum(n for at, n in self.cuts if start < at < end)
        return start + before, end + before + within


@dataclass(frozen=True, slots=True)
class _Found:
    start: int
    end: int
    kind: str


Starts = list[dict[int, int]]
"""For each pass: where a match can start, with which anchors (bits)."""


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _ascii(text: str) -> bytes:
    """``text`` as bytes, a character a byte (the same positions), a character that is not
    ASCII as SUB: no character of a secret (a ``?`` would be one of a password)."""
    if text.isascii():
        return text.encode()
    return _NON_ASCII.sub("\x1a", text).encode()


def _scan(texts: list[str]) -> tuple[dict[int, Starts], dict[int, list[tuple[int, int]]]]:
    """For each text where a match can start, by index, its starts; and for each text where a
    token wraps, its line breaks. The texts are scanned as one, joined by NUL (which no anchor
    holds): a scan costs little a character, but much a call."""
    joined = texts[0] if len(texts) == 1 else "\0".join(texts)
    raw = _ascii(joined)
    offsets = list(accumulate(map((1).__add__, map(len, texts)), initial=0))  # and a NUL each
    found: dict[int, Starts] = {}

    def add(at: int, users: list[tuple[int, int]]) -> None:
        i = bisect_right(offsets, at) - 1
        starts = found.get(i) or found.setdefault(i, [{} for _ in _PASSES])
        at -= offsets[i]
        for n, bit in users:
            starts[n][at] = starts[n].get(at, 0) | bit

    _find(raw, raw.lower(), add)
    if not joined.isascii():
        for name in _INTL_NAME.finditer(joined):
            add(name.start(), _USERS[INTL])
    wraps: dict[int, list[tuple[int, int]]] = {}
    for start, end in _breaks(raw):
        i = bisect_right(offsets, start) - 1
        wraps.setdefault(i, []).append((start - offsets[i], end - offsets[i]))
    return found, wraps


_RUN_SCANS = ((_runs, RUN), (_password_runs, PASSWORD_RUN), (_named_runs, NAMED_RUN))


def _find(
    raw: bytes,
    lower: bytes,
    add: Callable[[int, list[tuple[int, int]]], None],
    start: int = 0,
    stop: int | None = None,
) -> None:
    """Calls ``add`` for each anchor in ``raw`` (whose scan character is) from ``start`` to
    ``stop``: where its match starts, and which passes use it."""
    # Up to ``stop``, and far enough after it for the anchors' look-aheads.
    end = len(raw) if stop is None else min(len(raw), stop + _NEAR)
    for finder in _FINDERS:
        data = lower if finder.lower else raw
        for hit in finder.regex.finditer(data, start, end):
            if stop is not None and hit.start() >= stop:
                break
            if finder.separator and hit.start(finder.group) >= 0:  # a key's prefix may end here
                at = max(0, hit.end() - _PREFIX_REACH)
                while prefix := _PREFIXES.search(raw, at, hit.end()):
                    add(prefix.start(), _USERS[PREFIX])
                    at = prefix.start() + 1
                continue
            for name, anchor in finder.which(data, hit):
                at = hit.start()
                for group in range(1, anchor.re.groups + 1):  # where the match starts, if not there
                    if anchor.start(group) >= 0:
                        at = anchor.start(group)
                        break
                add(at, _USERS[name])
    for runs, name in _RUN_SCANS:  # the anchors found by their characters' kinds
        for at in runs(raw, start, end):
            if stop is not None and at >= stop:
                break
            add(at, _USERS[name])


# How near a joined line break an anchor may start, or be looked for, and see it: the reach of
# the anchors' look-behinds and look-aheads (40), where the match starts before the character
# it is found by (36), and the prefix's (24), with room.
_NEAR = 128


def _starts_in_view(starts: Starts | None, view: _Unwrapped) -> Starts:
    """The starts of a text where its tokens wrap, in ``view`` (the text with those line breaks
    taken out): those of the text moved, but near a line break, where they are found again."""
    raw = _ascii(view.text)
    moved: Starts = [{} for _ in _PASSES]
    near = [(at - _NEAR, at + _NEAR) for at, _ in view.cuts]
    lows = [low for low, _ in near]
    for n, each in enumerate(starts or ()):
        for at, bits in each.items():
            place = view.position(at)
            i = bisect_right(lows, place) - 1 if place is not None else -1
            if place is not None and not (i >= 0 and place < near[i][1]):
                moved[n][place] = moved[n].get(place, 0) | bits

    def add(at: int, users: list[tuple[int, int]]) -> None:
        for n, bit in users:
            moved[n][at] = moved[n].get(at, 0) | bit

    lower = raw.lower()
    for low, high in near:  # an anchor that starts near a break is found by then
        _find(raw, lower, add, max(0, low), high + 64)
    return moved


@dataclass
class Redactor:
    """Replaces secrets in texts; remembers which secret got which number."""

    numbers: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many distinct secrets were masked."""
        return len(self.numbers)

    def text(self, text: str) -> str:
        return self._texts([text])[0]

    def value(self, value: Any) -> Any:
        """``value`` with every string in it redacted (dicts and lists walked)."""
        return self._value(value)[0]

    def _value(self, value: Any) -> tuple[Any, bool]:
        """``value`` redacted, and whether any string in it changed (told, not compared: a
        value may be nested deeper than Python compares)."""
        top = [value]
        # Where each string is: the list or dict, and its index or key (two lists, not a pair
        # a string: the facts of a long session hold hundreds of thousands of them).
        wheres: list[Any] = []
        keys: list[Any] = []
        _copy(top, wheres, keys)
        texts = [where[key] for where, key in zip(wheres, keys, strict=True)]
        named = {i for i, key in enumerate(keys) if isinstance(key, str) and _ordinary_name(key)}
        masked = self._texts(texts, named)
        for index, key in enumerate(keys):
            if key == "arguments" and masked[index].startswith("{"):
                masked[index] = self._arguments(masked[index])
        changed = False
        for where, key, before, text in zip(wheres, keys, texts, masked, strict=True):
            if text is not before:  # most are not masked: leave them
                where[key] = text
                changed = True
        return top[0], changed

    def _arguments(self, text: str) -> str:
        """A tool call's arguments (JSON text, as a request carries them) masked once more
        value by value, where the rules read each string as it is and not as JSON escapes it
        (a key after an escaped newline, a token wrapped across one)."""
        try:
            arguments = parse_line(text.encode("utf-8", "surrogatepass"))
        except ValueError:
            return text
        if not isinstance(arguments, dict):
            return text
        masked, changed = self._value(arguments)
        return dumps(masked).decode() if changed else text

    def messages(self, messages: Iterable[ChatMessage]) -> list[ChatMessage]:
        return list(self.value(list(messages)))

    def _texts(self, texts: list[str], named: Container[int] = ()) -> list[str]:
        """``texts`` masked; those at the indices ``named`` are the values of keys that name
        an id or a hash (``toolCallId``), where a random token is no secret."""
        out = list(texts)
        long = [i for i, text in enumerate(texts) if len(text) >= _SHORTEST]
        if long:
            found, wraps = _scan([texts[i] for i in long])
            for i in sorted(found.keys() | wraps.keys()):
                text = texts[long[i]]
                view = _Unwrapped.of(text, wraps[i]) if i in wraps else _Unwrapped(text)
                starts = _starts_in_view(found.get(i), view) if i in wraps else found[i]
                if long[i] in named:
                    for n in _TOKENS:
                        starts[n] = {}
                out[long[i]] = self._mask(text, starts, view)
        return out

    def _mask(
        self,
        text: str,
        starts: list[dict[int, int]] | None = None,
        view: _Unwrapped | None = None,
    ) -> str:
        """``text`` masked: the rules run from the anchors in ``starts``, or, without them, at
        every position (slow, the same: the tests compare them), on ``view`` (``text`` with its
        wrapped tokens joined). Each pass reads the text as the ones before it left it; and the
        passes run again on what they made until they find nothing more (a value too long to be
        one, say, is one once a base64 key in it is masked): so masking again finds nothing."""
        if view is None:
            view = _Unwrapped.of(text, _breaks(_ascii(text)))
        found: list[_Found] = []  # apart, in order, where they are in view.text
        seen, marks = view.text, list[tuple[int, int, _Found]]()
        read: list[_Found] = []  # what ``seen`` has as placeholders
        for _ in range(_ROUNDS):
            before = list(found)
            for n, each in enumerate(_PASSES):
                where = None if starts is None else starts[n]
                if where == {}:
                    continue  # no anchor of this pass
                if found != read:
                    seen, marks = _provisional(view.text, found)
                    read = list(found)
                if marks and where is not None:
                    where = _moved(where, marks)
                    if RUN in each.bit:  # a run cut by a secret goes on after its placeholder
                        for _, after, _ in marks:
                            where[after] = where.get(after, 0) | each.bit[RUN]
                # Nothing inside a placeholder is a secret, ours or one already in the text.
                taken = (
                    [m.span() for m in _PLACEHOLDER.finditer(seen)] if "[REDACTED:" in seen else []
                )
                for match in each.matches(seen, where, taken):
                    rule, start, end = each.secret(match)
                    kind = rule.kind
                    if rule.check:
                        verdict = rule.check(seen, start, end)
                        if verdict is None:
                            continue
                        start, end, kind = verdict
                    _take(taken, start, end)
                    _place(found, _Found(*_in_view(marks, start, end), kind))
            if found == before:
                break
        parts: list[str] = []
        done = 0
        for secret in found:
            start, end = view.span(secret.start, secret.end)
            number = self.numbers.setdefault(
                view.text[secret.start : secret.end], len(self.numbers) + 1
            )
            parts += (text[done:start], f"[REDACTED:{secret.kind}:{number}]")
            done = end
        return "".join([*parts, text[done:]]) if parts else text


def _copy(value: list[Any] | dict[Any, Any], wheres: list[Any], keys: list[Any]) -> None:
    """Copies the lists and dicts in ``value``, in place, and notes where each string is (in
    ``wheres`` and ``keys``), in the order they are written; the values of keys in
    ``UNTOUCHED`` are left as they are. At any depth: a stack of its own, no recursion."""
    stack = [(value, _members(value))]
    while stack:
        container, members = stack[-1]
        for key, item in members:
            if isinstance(item, str):
                if key not in UNTOUCHED:
                    wheres.append(container)
                    keys.append(key)
            elif isinstance(item, (list, dict)) and key not in UNTOUCHED:
                container[key] = copy = type(item)(item)
                stack.append((copy, _members(copy)))
                break  # its strings come first, as written
        else:
            stack.pop()


def _members(value: list[Any] | dict[Any, Any]) -> Iterator[tuple[Any, Any]]:
    return iter(enumerate(value)) if isinstance(value, list) else iter(value.items())


_ROUNDS = 4  # a round that finds anything is followed by one that finds nothing, in practice


def _inside(taken: list[tuple[int, int]], at: int) -> int | None:
    """The end of the span of ``taken`` (apart, in order) that ``at`` is inside, if any."""
    i = bisect_right([start for start, _ in taken], at) - 1
    return taken[i][1] if i >= 0 and at < taken[i][1] else None


def _take(taken: list[tuple[int, int]], start: int, end: int) -> None:
    """Adds ``start:end`` to ``taken``, joined with the spans it overlaps."""
    first = bisect_left([e for _, e in taken], start)
    last = bisect_right([s for s, _ in taken], end)
    if first < last:
        start, end = min(start, taken[first][0]), max(end, taken[last - 1][1])
    taken[first:last] = [(start, end)]


def _provisional(text: str, found: list[_Found]) -> tuple[str, list[tuple[int, int, _Found]]]:
    """``text`` as the next pass reads it, its secrets so far placeholders (numbered 0: the
    numbers are given once all are found, in the order of the text); and where each placeholder
    is, with the secret it stands for."""
    parts: list[str] = []
    marks = []
    done = length = 0
    for secret in found:
        placeholder = f"[REDACTED:{secret.kind}:0]"
        length += secret.start - done
        parts += (text[done : secret.start], placeholder)
        marks.append((length, length + len(placeholder), secret))
        length += len(placeholder)
        done = secret.end
    return "".join([*parts, text[done:]]), marks


def _moved(starts: dict[int, int], marks: list[tuple[int, int, _Found]]) -> dict[int, int]:
    """The anchors ``starts`` (where they are in the text) where they are in the text with
    placeholders (``_provisional``), but those inside a placeholder: finding them again there
    would cost a scan, and give the same (the tests compare with every rule everywhere)."""
    lows = [secret.start for _, _, secret in marks]
    moved = {}
    for at, bits in starts.items():
        i = bisect_right(lows, at) - 1
        if i < 0:
            moved[at] = bits
        elif at >= marks[i][2].end:
            moved[at - marks[i][2].end + marks[i][1]] = bits
    return moved


def _in_view(marks: list[tuple[int, int, _Found]], start: int, end: int) -> tuple[int, int]:
    """Where ``start:end`` of the text with placeholders is in the text without them; a
    placeholder partly inside counts whole."""
    starts = [m[0] for m in marks]
    i = bisect_right(starts, start) - 1
    if i >= 0:
        _, to, secret = marks[i]
        start = secret.start if start < to else start - to + secret.end
    j = bisect_left(starts, end) - 1
    if j >= 0:
        _, to, secret = marks[j]
        end = secret.end if end <= to else end - to + secret.end
    return start, end


def _place(found: list[_Found], secret: _Found) -> None:
    """Adds a secret of a later pass to those found: with those it holds, overlaps or touches,
    it is one secret, of its kind (``Bearer eyJ…_KEY=HRKU-…`` is one ``bearer-token``: the
    value is the secret, the Heroku key a part of it)."""
    first = bisect_left([f.end for f in found], secret.start)  # the first that ends at or after
    last = bisect_right(
        [f.start for f in found], secret.end
    )  # after the last that starts by its end
    if first < last:
        secret = _Found(
            min(secret.start, found[first].start), max(secret.end, found[last - 1].end), secret.kind
        )
    found[first:last] = [secret]


OPAQUE = frozenset({"signature", "thinkingSignature", "thoughtSignature", "encrypted_content"})
"""Keys of the opaque blobs a provider made of its model's thinking, which it checks when they
come back: random, and no one's secret."""
UNTOUCHED = frozenset({"role", "type", "id", "tool_call_id", "image_url", "name"}) | OPAQUE
"""Keys whose values are never free text: ids, roles, image data, the blobs."""
