"""Key terms: what a paraphrase of a text keeps, in any language, and whether a text holds them.

A term is a name, a path, a number or a content word, stemmed; in Chinese, Japanese and Korean,
which write no spaces, each pair of neighbouring characters. Identifiers (a path, a dotted or
snake_case name, camelCase, anything with a digit) are the same in every language: when a
document is written in another language than the text it is checked against, only those can
match, and a text with none cannot be judged by its words (``Judge``).
"""

from __future__ import annotations

import re
from collections import Counter

MOST_TERMS = 16
"""The key terms a text is judged by: its first ones (a long request is cut in a document,
and what it says first says what it is)."""
TERM_CHARS = 64
"""How far into a text its key terms are looked for, for each one wanted."""
HOLD_SHARE = 0.5
"""The share of a text's key terms a document must hold to hold the text."""

_STOP = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    but by can could did do does doing done for from further had has have having here how i if
    in into is it its itself just let me more most my no nor not now of off on once only or
    other our out over own same she should so some such than that the their them then there
    these they this those through to too under until up us very was we were what when whenever
    where which while who why will with would you your yours please thanks want need make sure
    one two get got use used using like way also lets let's it's that's i'm i'll we'll don't
    doesn't isn't can't won't""".split()
)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_KANA = re.compile("[\u3040-\u309f]+")
"""Hiragana alone: Japanese writes its little words so (a pair of them is no key term)."""
_TOKEN = re.compile(r"[\w][\w./@+-]*[\w]|\w")
_SUFFIXES = ("ies", "ing", "es", "ed", "s")
_IDENTIFIER = re.compile(r"\d|[./@_+-]\w|[a-z][A-Z]")


def _stem(word: str) -> str:
    """A word as terms compare: lower case, a plural or tense ending off a plain word."""
    word = word.casefold()
    if not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _tokens(text: str) -> list[str]:
    """The tokens of ``text``: words and names, and each pair of neighbouring characters of a
    run of Chinese, Japanese or Korean (set apart from the Latin letters around it)."""
    found: list[str] = []
    for token in _TOKEN.findall(_CJK_RUN.sub(r" \g<0> ", text)):
        if _CJK_RUN.fullmatch(token):
            pairs = (token[i : i + 2] for i in range(max(1, len(token) - 1)))
            found += [pair for pair in pairs if not _KANA.fullmatch(pair)]
        else:
            found.append(token.strip("."))
    return found


def identifier(token: str) -> bool:
    """A path, a dotted, snake_case or camelCase name, a number: the same in every language."""
    return _IDENTIFIER.search(token) is not None


def key_terms(text: str, most: int = MOST_TERMS) -> list[str]:
    """The first ``most`` distinct terms of ``text`` a paraphrase keeps, in order: names,
    paths, numbers and content words, stemmed; not the little words. Read no further than
    ``TERM_CHARS`` a term: a request can be megabytes long, and say little new."""
    found: dict[str, None] = {}
    for token in _tokens(text[: most * TERM_CHARS]):
        term = _stem(token)
        if (
            len(term) >= 2
            and term not in _STOP
            and not (len(term) < 3 and term.isascii() and term.isalpha())
        ):
            found.setdefault(term, None)
            if len(found) == most:
                break
    return list(found)


def identifiers(text: str, most: int = MOST_TERMS) -> list[str]:
    """The key terms of ``text`` that are identifiers."""
    return [_stem(t) for t in dict.fromkeys(_tokens(text[: most * TERM_CHARS])) if identifier(t)][
        :most
    ]


# --- languages ----------------------------------------------------------------------------------

_SCRIPTS = (
    ("cjk", re.compile(f"[{_CJK}]")),
    ("cyrillic", re.compile("[\u0400-\u04ff]")),
    ("arabic", re.compile("[\u0600-\u06ff]")),
    ("hebrew", re.compile("[\u0590-\u05ff]")),
    ("greek", re.compile("[\u0370-\u03ff]")),
    ("devanagari", re.compile("[\u0900-\u097f]")),
    ("thai", re.compile("[\u0e00-\u0e7f]")),
    ("latin", re.compile("[A-Za-z\u00c0-\u024f]")),
)
_LATIN_WORDS = {
    "en": "the and is are to of in that this with for it you not be have what",
    "es": "el la los las que de y es en con para por una un no se del al",
    "pt": "o a os as que de e é em com para por uma um não se do da dos",
    "fr": "le la les que de et est en avec pour par une un ne pas des du il",
    "de": "der die das und ist zu den mit für nicht ein eine auf im dem es",
    "it": "il la le che di e è in con per una un non del della sono",
    "nl": "de het een en is van in met voor niet op dat zijn te",
}
_WORD_SETS = {name: frozenset(words.split()) for name, words in _LATIN_WORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")
_CODE = re.compile(r"`[^`]*`")
"""Code in a text is in no language of people's."""
_SAMPLE = 4000
CJK_WEIGHT = 4


def language(text: str) -> str:
    """The language ``text`` is written in, roughly: its script, and for Latin letters the
    language whose little words it uses most ("" when it has too few words to tell)."""
    sample = text[:_SAMPLE]
    counts = Counter({name: len(rx.findall(sample)) for name, rx in _SCRIPTS})
    counts["cjk"] *= CJK_WEIGHT  # a character a word, where Latin letters take some five
    script, letters = counts.most_common(1)[0]
    if letters < 8:
        return ""
    if script != "latin":
        return script
    words = Counter(w.casefold() for w in _WORD.findall(_CODE.sub(" ", sample)))
    scores = {name: sum(words[w] for w in wanted) for name, wanted in _WORD_SETS.items()}
    best = max(scores, key=scores.__getitem__)
    return best if scores[best] >= 2 else ""


def same_language(one: str, other: str) -> bool:
    """Whether two languages (``language``) may be the same: one unknown counts as the same."""
    return not one or not other or one == other


# --- holding terms ------------------------------------------------------------------------------


class Terms:
    """The terms a document holds: each token, and each part of a path or a dotted name (a
    ``<files>`` block names a file by its folder and its name)."""

    def __init__(self, document: str) -> None:
        self.language = language(document)
        self.terms: set[str] = set()
        for token in _tokens(document):
            self.terms.add(_stem(token))
            for part in re.split(r"[/\\]", token):
                if part:
                    self.terms.add(_stem(part))

    def holds(self, term: str) -> bool:
        term = _stem(term).lstrip(".")  # a token starts with a letter: .zshrc is zshrc
        if term in self.terms:
            return True
        name = re.split(r"[/\\]", term)[-1]  # a path named by its file's name (or dotfile's)
        return ("/" in term or "\\" in term) and "." in name and name.lstrip(".") in self.terms

    def share(self, text: str) -> float:
        """The share of the key terms of ``text`` held (1.0 when it has none)."""
        terms = key_terms(text)
        return sum(map(self.holds, terms)) / len(terms) if terms else 1.0

    def keeps(self, text: str) -> bool | None:
        """Whether the document holds ``text``: half its key terms; in another language, half
        its identifiers. None: in another language and with no identifier, it cannot tell."""
        if same_language(language(text), self.language):
            return self.share(text) >= HOLD_SHARE
        names = identifiers(text)
        if not names:
            return None
        return sum(map(self.holds, names)) / len(names) >= HOLD_SHARE
