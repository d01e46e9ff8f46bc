"""Secrets are masked before anything leaves the machine; nothing else is touched."""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from handoff_cli.handoff.builtin import write_document
from handoff_cli.handoff.pipeline import prepare
from handoff_cli.handoff.redact import _SHAPES, Redactor
from handoff_cli.options import Options

from . import secrets_corpus
from .conftest import CONTEXT_FIXTURES, Entries, quick_and_stress, tool_call, write_session

SECRETS = {
    "openai-key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "anthropic-key": "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2c",
    "aws-access-key": "AKIAQ3EGRTW5ZJ2X7KPD",
    "github-token": "ghp_" + "a1B2c3D4e5" * 4,
    "slack-token": "xoxb-2048123456-abcdefGHIJ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_masked(kind: str) -> None:
    redactor = Redactor()
    text = f"before {SECRETS[kind]} after"
    assert redactor.text(text) == f"before [REDACTED:{kind}:1] after"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "git clone https://bob:hunter22@example.com/r.git",
            "git clone https://bob:[REDACTED:url-password:1]@example.com/r.git",
        ),
        ("GET /api?token=abcdef123456&page=2", "GET /api?token=[REDACTED:token:1]&page=2"),
        ('export DB_PASSWORD="s3cr3t-pass"', 'export DB_PASSWORD="[REDACTED:password:1]"'),
        ("GITHUB_TOKEN=abcd1234efgh", "GITHUB_TOKEN=[REDACTED:token:1]"),
    ],
)
def test_values_in_urls_and_assignments(text: str, masked: str) -> None:
    assert Redactor().text(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "session 01a22ac6-037e-775c-8089-58f5d6db35c2",
        "MAX_TOKENS=4096 and API_TOKEN=$FROM_ENV and SECRET_KEY=<your key>",
        "password = request.form['password']",
        "/home/dev/.ssh/id_ed25519.pub",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
        "the token budget is 128000 tokens; sk-learn is a typo",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Redactor()
    assert redactor.text(text) == text and redactor.count == 0


def test_the_same_secret_keeps_its_number() -> None:
    redactor = Redactor()
    one, two = SECRETS["openai-key"], SECRETS["github-token"]
    assert redactor.text(f"{one} {two} {one}") == (
        "[REDACTED:openai-key:1] [REDACTED:github-token:2] [REDACTED:openai-key:1]"
    )
    assert redactor.count == 2


def test_real_sessions_hold_nothing_to_mask() -> None:
    """The fixtures are full of hashes, ids, paths and code, and hold no credentials."""
    for path in CONTEXT_FIXTURES:
        redactor = Redactor()
        for line in path.read_bytes().removeprefix(b"\xef\xbb\xbf").splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # the edge fixtures' malformed lines
            redactor.value(entry)
        assert redactor.count == 0, path


@pytest.mark.litellm
def test_request_is_masked_including_the_focus(tmp_path: Path, entries: Entries) -> None:
    key = SECRETS["anthropic-key"]
    entries.user(f"use the key {key} for the client")
    entries.assistant(
        "ok", {**tool_call("c1"), "arguments": {"command": f"curl -H 'x: {key}'"}}, stop="toolUse"
    )
    entries.result("c1", f"echoed {key}")
    path = write_session(tmp_path / "s.jsonl", entries.items)
    options = Options(model="openai/test-model", api_key="sk-none", focus=f"rotate {key}")
    request = prepare(path, options)
    sent = orjson.dumps([*request.conversation, request.prompt]).decode()
    assert key not in sent
    assert sent.count("[REDACTED:anthropic-key:1]") >= 4  # the conversation, facts and focus
    assert request.redacted == 1
    assert list(request.conversation)[-1]["tool_call_id"] == "c1"  # ids are never rewritten
    document = write_document(request.facts, request.focus)
    assert key not in document and "[REDACTED:anthropic-key:1]" in document
    unmasked = prepare(path, replace(options, redact=False))
    assert key in orjson.dumps(list(unmasked.conversation)).decode() and unmasked.redacted == 0
    builtin = prepare(path, Options(model="extractive", focus=f"rotate {key}"))
    assert key not in orjson.dumps(builtin.prompt).decode() and builtin.redacted == 1


# What a red-team pass found sent unmasked: each of these failed before the rules were redone.
RED_TEAM = [
    ("PASSWORD=Tr0ub4dor&3x", "Tr0ub4dor&3x"),
    ("SECRET=Ab3dEf6hIj9kLm", "Ab3dEf6hIj9kLm"),
    ("TOKEN=Vb7nM2kL9pQx4Rz", "Vb7nM2kL9pQx4Rz"),
    ("API_KEY=K7fQ2mZ9xKc4LpV8wRt1", "K7fQ2mZ9xKc4LpV8wRt1"),
    ("export TOKEN=eYh72kLz9QmW4pXv", "eYh72kLz9QmW4pXv"),
    (
        '{"command":"export API_TOKEN=\\"abc123def456ghi789\\" && ./deploy.sh"}',
        "abc123def456ghi789",
    ),
    ('{"SERVICE_TOKEN": "9f8e7d6c5b4a3f2e1d0c", "region": "eu-west-1"}', "9f8e7d6c5b4a3f2e1d0c"),
    (
        "aws_secret_access_key = uyWqX/nkYYv6RwBoaEisEw8xCNopcN/soo2s/knQ",
        "uyWqX/nkYYv6RwBoaEisEw8xCNopcN/soo2s/knQ",
    ),
    ("POST /oauth/token?client_secret=Rt6yU2iO9pLk&grant_type=x", "Rt6yU2iO9pLk"),
    ("redis-cli -u redis://:s3cr3t-R3d1s@cache.internal:6379 ping", "s3cr3t-R3d1s"),
    ("mysql://root:p@ss@w0rd@127.0.0.1:3306/shop", "p@ss@w0rd"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\ntg4Oj/GEY7DksropcDR08GSsaPcA9bArPcZm9Fveq\n[cut]",
        "tg4Oj/GEY7DksropcDR08GSsaPcA9bArPcZm9Fveq",
    ),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        "lQOYBGW8qRIBCAC4xJ2mV0n8LpHq3sTt5fQe0cNd7b\n=Xq7p\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGW8qRIBCAC4xJ2mV0n8LpHq3sTt5fQe0cNd7b",
    ),
    ("key=AIzaSyKE9PDXlPO-jWkw84jI9RZh2rXF3IgVQ4P", "AIzaSyKE9PDXlPO-jWkw84jI9RZh2rXF3IgVQ4P"),
    ("login 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", "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"),
    ("use glpat-Kmb40Uku-NlE9FXDc_yr", "glpat-Kmb40Uku-NlE9FXDc_yr"),
    ("npm_0tsBn7cViI5IZjNOvtNyDOuNsCjVYrhaFtJO", "npm_0tsBn7cViI5IZjNOvtNyDOuNsCjVYrhaFtJO"),
    (
        "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",
        "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",
    ),
    ("Authorization: Bearer 7fQ2mZ9xKc4LpV8wRt1nYb6sJd3hGa0e", "7fQ2mZ9xKc4LpV8wRt1nYb6sJd3hGa0e"),
    ("X-Api-Key: c0ffee1234567890deadbeefcafe", "c0ffee1234567890deadbeefcafe"),
]


@pytest.mark.parametrize(("text", "secret"), RED_TEAM)
def test_what_the_red_team_found_is_masked(text: str, secret: str) -> None:
    assert secret not in Redactor().text(text)


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_the_corpus_every_secret_masked_and_no_trap_touched() -> None:
    """``tests/fixtures/secrets``: recall 100%, no false positive, and the right kinds."""
    score = secrets_corpus.score(lambda text: Redactor().text(text))
    assert score.missed == [] and score.changed == [], score.summary()
    assert len(score.kinds) >= 120 and score.secrets >= 250 and len(secrets_corpus.traps()) >= 40
    for positive in secrets_corpus.positives():
        assert f"[REDACTED:{positive.kind}:" in Redactor().text(positive.text), positive.line


@pytest.mark.parametrize(
    ("folder", "secrets", "records", "recall", "changed"),
    [
        (secrets_corpus.DEV2, 905, 96, 0.945, 2),
        (secrets_corpus.DEV3, 922, 101, 0.875, 0),
        (secrets_corpus.DEV4, 604, 91, 0.82, 2),
    ],
    ids=["dev2", "dev3", "dev4"],
)
def test_the_development_sets_keep_their_scores(
    folder: Path, secrets: int, records: int, recall: float, changed: int
) -> None:
    """``tests/fixtures/secrets/dev2``, ``dev3`` and ``dev4`` (written by other hands without the
    masker in view): recall and ordinary records changed no worse than they were measured
    (dev2 94.7% and 2, dev3 87.7% and 0, dev4 82.6% and 2)."""
    score = secrets_corpus.dev_score(lambda text: Redactor().text(text), folder)
    assert score.secrets == secrets and score.records == records
    assert score.recall >= recall, score.missed
    assert len(score.changed) <= changed, score.changed


# Where a key known by its shape may be: alone, in prose, shell, YAML, JSON tool arguments (with
# escaped quotes), an HTTP header, a URL's path and query, code, Markdown, a file's path, HTML.
PLACES = [
    "{}",
    "I pasted {} into the config by mistake.",
    "export VALUE={}",
    "value: {}",
    '{{"command":"deploy --with \\"{}\\" --now"}}',
    "X-Custom: {}",
    "https://api.acme.dev/v1/{}/items?q=1",
    "https://api.acme.dev/v1/items?q={}&page=2",
    'client = Client("{}")',
    "`{}`",
    "build/{}/out.txt",
    "<td>{}</td>",
]


def _by_shape() -> list[tuple[str, str]]:
    """(kind, secret) for each of the corpus's keys that its shape alone gives away: tokens,
    on one line (a key block's lines are a key's shape together, not each)."""
    shapes = {rule.kind for rule in _SHAPES}
    found = []
    for positive in secrets_corpus.positives():
        for secret in positive.secrets:
            if "\n" in secret or "\\n" in secret:  # also as JSON escapes it
                continue
            alone = Redactor().text(secret)
            if positive.kind in shapes and alone == f"[REDACTED:{positive.kind}:1]":
                found.append((positive.kind, secret))
    return found


BY_SHAPE = _by_shape()
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9]+\]")


def test_a_key_known_by_its_shape_is_masked_wherever_it_is() -> None:
    """Each key of the corpus that its shape gives away, in each place (a matrix of kinds and
    places, not the corpus's one place a kind)."""
    assert len({kind for kind, _ in BY_SHAPE}) >= 90
    for kind, secret in BY_SHAPE:
        for place in PLACES:
            out = Redactor().text(place.format(secret))
            assert secret not in out and "[REDACTED:" in out, (kind, place)


# What a line may start with after a key at the end of a long line: another secret's anchor.
NEXT_LINES = [
    ("password: Hunter2isBad!", "Hunter2isBad!", "password: "),
    ("mysql -uroot -pS3cretPass99 db", "S3cretPass99", "mysql -uroot -p"),
    ("echo dXNlcjpwYXNzd29yZDEyMw== | base64 -d", "dXNlcjpwYXNzd29yZDEyMw==", "echo "),
    ("token=tok_9f8e7d6c5b4a39281706 --verbose", "tok_9f8e7d6c5b4a39281706", "token="),
]


def test_a_key_at_the_end_of_a_line_leaves_the_next_line_whole() -> None:
    """A key ending a long line is not read on into the next line's first word: that word is
    the next line's own, and may be the anchor of its secret."""
    for kind, secret in BY_SHAPE:
        for line, other, anchor in NEXT_LINES:
            for text in (
                f"2026-11-30T10:12:44.812Z DEBUG configured the client with {secret}\n{line}",
                json.dumps({"output": f"deploying with the key now: {secret}\n{line}"}),
            ):
                out = Redactor().text(text)
                assert secret not in out and other not in out, (kind, line)
                assert anchor in out.replace('\\"', '"'), (kind, out)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DB_PASSWORD=Password123!", "Password123!"),
        ("postgres://app:Secret2024db@db.internal:5432/app", "Secret2024db"),
        ("curl -u admin:Password1! https://api.acme.dev/v1/orders", "Password1!"),
        ("mysql -uroot -pSecretPass99 orders", "SecretPass99"),
        ("CREATE USER 'app'@'%' IDENTIFIED BY 'Password2024!';", "Password2024!"),
        ("redis-cli -h cache -a SecretRedis42 ping", "SecretRedis42"),
        ('password: "YourTeamRocks#9"', "YourTeamRocks#9"),
        ("smtp_password=example-Pa55!", "example-Pa55!"),
    ],
)
def test_a_value_holding_a_common_word_is_still_a_secret(text: str, secret: str) -> None:
    """A placeholder is a value that is one, not one that holds a word."""
    assert secret not in Redactor().text(text)


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=your-password-here",
        "API_KEY=YOUR_API_KEY",
        "password: changeme",
        "postgres://app:password@localhost/app",
        "SECRET=replace_me",
        "token: <token>",
    ],
)
def test_a_value_that_is_a_placeholder_is_left(text: str) -> None:
    assert Redactor().text(text) == text


def _wrapped(left: str, right: str) -> list[str]:
    """A token split into ``left`` and ``right``: by a shell continuation, also in JSON tool
    arguments, and by a log line wrapped at its width, also in JSON."""
    line = "2026-11-30T10:12:44.812Z DEBUG http.client: configured with"
    return [
        f"curl -H 'X-Key: {left}\\\n{right}' https://api.acme.dev/v2/orders",
        f'{{"command":"curl -H \\"X-Key: {left}\\\\\\n{right}\\" https://api.acme.dev"}}',
        f"{line} {left}\n{right} (ok)",
        f'{{"output":"{line} {left}\\n{right} (ok)"}}',
    ]


def test_a_key_wrapped_across_two_lines_is_masked_whole() -> None:
    """Each key known by its shape, split near its start, in its middle and near its end: no
    part of it stays, and it keeps its number, wrapped or not."""
    for kind, secret in BY_SHAPE:
        if len(secret) < 24:
            continue
        for at in (5, len(secret) // 2, len(secret) - 6):
            left, right = secret[:at], secret[at:]
            for text in _wrapped(left, right):
                redactor = Redactor()
                out = PLACEHOLDER.sub("", redactor.text(f"{secret} and {text}"))
                assert left not in out and right not in out, (kind, at, text)
                assert redactor.count == 1, (kind, text)


def test_masked_json_is_still_json_and_masking_twice_changes_nothing() -> None:
    for text in [p.text for p in secrets_corpus.positives()] + secrets_corpus.traps():
        masked = Redactor().text(text)
        if text.startswith("{") and text.endswith("}"):
            orjson.loads(masked)
        assert Redactor().text(masked) == masked


def test_the_same_secret_keeps_its_number_whatever_finds_it() -> None:
    redactor = Redactor()
    text = "PASSWORD=Zq8rLm2xVt6w\npostgres://app:Zq8rLm2xVt6w@db/app\nPASSWORD=Other-9xq"
    assert redactor.text(text) == (
        "PASSWORD=[REDACTED:password:1]\npostgres://app:[REDACTED:url-password:1]@db/app\n"
        "PASSWORD=[REDACTED:password:2]"
    )


def test_a_bearer_value_holding_a_key_is_masked_whole_at_once() -> None:
    """The first pass masks what a second would: once the Heroku key inside a bearer value was
    masked alone, masking again found the rest of the value."""
    text = (
        "Authorization: Bearer eyJhbGU_API_KEY="
        "HRKU-AAk3wOh9OXf9DM8eT-zwZ5KZJoGUm76swRmAAk3wOh9OXf9DM8eT"
    )
    once = Redactor().text(text)
    assert once == "Authorization: Bearer [REDACTED:bearer-token:1]"
    assert Redactor().text(once) == once


_WORDS = [
    *(
        "token secret password passwd pwd pass passphrase passcode pin PIN key api_key apiKey Key "
        "KEY auth Authorization Bearer Basic Cookie mysql sshpass echo base64 -d -p --password "
        "--token :// @ ? & sk- sk_live_ ghp_ hf_ SG. dp.pt. dp.st. tskey-auth- AKIA AIza AAAA "
        ':APA91b eyJ LS0tLS1CRUdJTi dapi SK -----BEGIN -----END PRIVATE KEY = : => := \' " \\" ` '
        "] [ ( ) { } $ ${ < > ... xxxx is was my the , ; | ~ ! é 🙂"
    ).split(),
    *(" ", "\n", "\\n", "\\\n", "\\\\\\n", "\t"),  # and the line breaks a token can wrap at
]


def _piece(texts: list[str]) -> st.SearchStrategy[str]:
    """A slice of one of ``texts``."""
    return st.sampled_from(texts).flatmap(
        lambda t: st.tuples(st.integers(0, len(t)), st.integers(1, 80)).map(
            lambda ij: t[ij[0] : ij[0] + ij[1]]
        )
    )


_CORPUS = [p.text for p in secrets_corpus.positives()] + secrets_corpus.traps()
_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(_CORPUS),
        _piece(_CORPUS),
        _piece([s for s in secrets_corpus.session_strings() if len(s) > 20]),
        st.sampled_from(_WORDS),
        st.text("abcXYZ019_-./:=@+ \n\"'\\", max_size=40),
    ),
    max_size=12,
).map("".join)
_QUICK = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
# What masking twice once changed, each found by this property: a bearer value holding a key,
# judged by words inside the key; a secret in a command's context (login … -p); a value after
# => read again after =; a value too long until a base64 key in it is masked; a flag's name
# and a name at one place; a key that ended mid-word, and the next one after it.
_FOUND = [
    "Authorization: Bearer eyJhbGU_API_KEY=HRKU-AAk3wOh9OXf9DM8eT-zwZ5KZJoGUm76swRm"
    "AAk3wOh9OXf9DM8eT",
    "> authorization: bearer Xk29fLq7Zv0RmT4cYw8sNp1bHd5gJa3USTRIPE_RESTRICTED_KEY"
    "=rk_live_2NyEN5qBHLVar1uFJtGed4GJsecret",
    "gh auth login --with-token Gt5hY6jU7kI8lO9pmkdir -p src/auth && ssh -p 2222 dev@host",
    "docker login -u acmebot -p Dk8sPass2026 registry.acme.devdocker run -p 5432:5432 pg",
    '{"SERVICE_TOKEN=>0190e0a0',
    "GCP_SA_KEY=GCP_SA_KEY="
    + base64.b64encode(
        json.dumps({"key": "x" * 200, "token": SECRETS["github-token"]}).encode()
    ).decode(),
    "-----END RSA PRIVATE KEY-----apiKey =pU3KGCUw",
    "prefect cloud login --key pnu_ZfUU6HlKq72wEMnCzuPw4Aq9bEtC5pRQiFpx"
    "pplx-FW2zT1KdRbiH40r9fwO60YlEtrBVF2gG",
]


def _counterexamples(test: Callable[[str], None]) -> Callable[[str], None]:
    for text in _FOUND:
        test = example(text)(test)
    return test


@pytest.mark.parametrize("budget", quick_and_stress(_QUICK, settings(_QUICK, max_examples=5_000)))
def test_masking_twice_changes_nothing(budget: settings) -> None:
    """mask(mask(x)) == mask(x), on the corpus's records, pieces of them and of the sessions,
    keywords, prefixes, quotes, escapes and noise: with a fresh redactor, and with the same one,
    which finds no new secret in its own output."""

    @budget
    @given(_TEXTS)
    @_counterexamples
    def idempotent(text: str) -> None:
        redactor = Redactor()
        once = redactor.text(text)
        count = redactor.count
        assert redactor.text(once) == once and redactor.count == count
        assert Redactor().text(once) == once

    idempotent()


# Where base64 is decoded: a shell, Python, Ruby, .NET, Go; and SMTP's AUTH PLAIN.
DECODED = [
    "echo {} | base64 -d",
    "echo -n '{}' | base64 --decode > creds.txt",
    'base64 -d <<< "{}"',
    'creds = base64.b64decode("{}").decode()',
    'Base64.decode64("{}")',
    'Convert.FromBase64String("{}")',
    '{{"command":"echo \\"{}\\" | base64 -D"}}',
]


def test_a_credential_in_base64_is_masked_where_it_is_decoded() -> None:
    """Each key known by its shape, and user:password pairs, base64-encoded where the text
    decodes them; while base64 of what holds no credential stays."""
    pairs = ["deploy:Wq3rT8yU1iO6", "ci-bot:hunter22"]
    encoded = [base64.b64encode(s.encode()).decode() for s in [*(s for _, s in BY_SHAPE), *pairs]]
    for form in DECODED:
        for value in encoded:
            assert value not in Redactor().text(form.format(value)), (form, value)
        harmless = base64.b64encode(b"hello world, see https://acme.dev").decode()
        assert Redactor().text(form.format(harmless)) == form.format(harmless), form


def test_json_and_key_blocks_in_base64_are_masked_wherever_they_hold_a_secret() -> None:
    """A config or a key in base64 (a Kubernetes Secret's data, an env variable) is masked when
    what it decodes to holds a secret, and left alone when it does not (a cursor, a config)."""
    for _, secret in BY_SHAPE:
        for decoded in (
            json.dumps({"auths": {"registry": {"auth": "x", "token": secret}}}),
            json.dumps({"type": "service_account", "key": secret}, indent=2),
        ):
            value = base64.b64encode(decoded.encode()).decode()
            text = f"data:\n  config.json: {value}\nGCP_KEY={value}"
            assert value not in Redactor().text(text), secret
    for harmless in ({"offset": 100, "limit": 50}, {"level": "debug", "region": "eu-west-1"}):
        value = base64.b64encode(json.dumps(harmless, indent=2).encode()).decode()
        assert Redactor().text(f"config.json: {value}") == f"config.json: {value}"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # Quoted, a secret whatever it is made of; bare, only if it is no ordinary word.
        ('the passphrase is "correct horse battery staple"', "correct horse battery staple"),
        ("my password is `sunshine`", "sunshine"),
        ("the password is Hunter2!", "Hunter2!"),
        ("the passphrase is correct-horse-battery-staple.", "correct-horse-battery-staple"),
        ("The password for the staging db is pgDevPass2026, sorry.", "pgDevPass2026"),
        ("password: letmein (don't share)", "letmein"),
        ("the token is abc123def456ghi7, use it once", "abc123def456ghi7"),
        ("use the pin 4821 at the door", "4821"),
        ("PIN: 0619", "0619"),
        ("my passcode is 935172", "935172"),
        # Ordinary words, numbers and references are what prose says of a secret.
        ("the passphrase is correct horse battery staple", None),
        ("the password is incorrect, the password is required", None),
        ("my password is sunshine and the passphrase is stored in the keychain", None),
        ("the password is case-sensitive; the token is expired", None),
        ("the password is ${DB_PASSWORD}; the password is 12345678", None),
        ("connect it to pin 13; pin numpy to 1.26; the pin count is 4096", None),
    ],
)
def test_a_secret_given_in_prose(text: str, masked: str | None) -> None:
    """The rule for prose: after password, passphrase, passcode, token, secret or api key, and
    "is" (or "was", "will be"), a value counts when it is quoted (then words too), or when it
    is no ordinary word (it holds a digit or a symbol, or capitals inside); a PIN is 4 to 8
    digits after "the pin", "PIN", "pin is", "passcode". An unquoted passphrase of plain words
    is not found: it reads as prose."""
    out = Redactor().text(text)
    if masked is None:
        assert out == text
    else:
        assert masked not in out and "[REDACTED:" in out, out


def _texts() -> list[str]:
    """Random texts made of pieces of the corpus and the sessions, keywords, prefixes, quotes,
    escapes and noise: where the anchors and the rules could disagree."""
    rng = random.Random(20261130)
    pieces = [p.text for p in secrets_corpus.positives()] + secrets_corpus.traps()
    strings = [s for s in secrets_corpus.session_strings() if len(s) > 20]
    words = (
        "token secret password passwd pwd pass key api_key apiKey Key KEY auth Authorization "
        "Bearer Basic mysql sshpass -p --password --token :// @ sk- sk_live_ ghp_ hf_ SG. dp.pt. "
        'AKIA AIza eyJ dapi SK -----BEGIN -----END PRIVATE KEY = : => := \' " \\" ` ] [ ( ) { } '
        "$ ${ < > ... xxxx \n \\n , ; & ? é 🙂 密码是 пароль: パスワードは「 mot_de_passe= DB_PW "
        "Passwort senha_db= wachtwoord: clave es"
    ).split()
    alphabet = "abcXYZ019_-./:=@+ \n\"'\\"
    texts = []
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 12)):
            choice = rng.random()
            if choice < 0.25:
                piece = rng.choice(pieces)
                start = rng.randrange(len(piece))
                parts.append(piece[start : start + rng.randint(1, 80)])
            elif choice < 0.35:
                piece = rng.choice(strings)
                start = rng.randrange(len(piece))
                parts.append(piece[start : start + rng.randint(1, 80)])
            elif choice < 0.75:
                parts.append(rng.choice(words))
            else:
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
        texts.append("".join(parts))
    return texts


@pytest.mark.heavy  # a whole corpus: make test-heavy
def test_the_anchors_find_what_every_rule_everywhere_finds() -> None:
    """Running the rules only from the anchors gives what running them at every position does:
    on the corpus and on random texts, one by one and all at once; and masking again finds
    nothing more."""
    texts = [p.text for p in secrets_corpus.positives()] + secrets_corpus.traps() + _texts()
    one_by_one = []
    for text in texts:
        fast, everywhere = Redactor(), Redactor()
        one_by_one.append(fast.text(text))
        assert one_by_one[-1] == everywhere._mask(text), text
        assert fast.numbers == everywhere.numbers
        assert Redactor().text(one_by_one[-1]) == one_by_one[-1]  # nothing left to mask
    together, sequential = Redactor(), Redactor()
    assert together.value(texts) == [sequential.text(t) for t in texts]
    assert together.numbers == sequential.numbers


def test_value_copies_and_leaves_ids_roles_and_images_alone() -> None:
    key = SECRETS["openai-key"]
    value = {
        "role": "user",
        "id": key,
        "name": key,
        "content": [
            {"type": "text", "text": f"use {key}"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{key}"}},
        ],
        "tags": [key, None, 3],
    }
    before = orjson.dumps(value)
    out = Redactor().value(value)
    assert orjson.dumps(value) == before  # the input is not changed
    assert out["id"] == out["name"] == key
    assert out["content"][0]["text"] == "use [REDACTED:openai-key:1]"
    assert out["content"][1] == value["content"][1]
    assert out["tags"] == ["[REDACTED:openai-key:1]", None, 3]
    assert Redactor().value(f"a {key}") == "a [REDACTED:openai-key:1]"
