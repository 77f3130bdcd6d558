"""Credentials out of every message the bridge writes, however the URL or setting that carried them was typed.

Two nets, each catching what the other may not:

- **Credentials in a URL**, well formed or not: in any whitespace-free run of text with an ``@``, what
  stands before its last ``@`` is someone's ``user:password`` when it holds a ``:`` (after a scheme, if
  there is one: ``http://``, ``htp:/``, ``HTTP:///``), or when a scheme stands before it with no path in
  between (``https://token@host``). An address without a scheme or a ``:`` (``git@host``,
  ``user@example.com``) is left as it is.
- **The secrets the environment holds**: the values of the settings that carry credentials (API keys,
  tokens, secret keys and passwords of OpenLineage, DataHub and AWS) and the credentials of a URL set in
  ``OPENLINEAGE_URL`` (or another OpenLineage or DataHub URL setting), however malformed, are replaced
  wherever they appear, whatever surrounds them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

SHOWN = "***"
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:/+")
_RUN = re.compile(r"\S+")
_OPENERS = "\"'([{<`"
_SECRET_SETTING = re.compile(r"(API_?KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_SETTING_PREFIXES = ("OPENLINEAGE", "DATAHUB", "AWS_", "TAXI_")
# The OpenLineage client copies OPENLINEAGE_URL into settings of its own (OPENLINEAGE__TRANSPORT__..._URL).
_URL_SETTING = re.compile(r"^(OPENLINEAGE|DATAHUB).*URL$", re.IGNORECASE)
# Shorter values are too likely to be ordinary words of a message (the loopback tests' "test" keys).
SHORTEST_SECRET = 6


def redact(text: str, environment: Mapping[str, str] | None = None) -> str:
    """``text`` with every credential in a URL, and every secret ``environment`` (the process's) holds, as ``***``."""
    shown = _RUN.sub(_without_userinfo, text)
    for secret in sorted(secrets_in(os.environ if environment is None else environment), key=len, reverse=True):
        shown = shown.replace(secret, SHOWN)
    return shown


def secrets_in(environment: Mapping[str, str]) -> set[str]:
    """The values of ``environment`` that are credentials: secret settings, and the passwords of URL settings."""
    found = {
        value
        for key, value in environment.items()
        if key.upper().startswith(_SETTING_PREFIXES) and _SECRET_SETTING.search(key)
    }
    found |= set(_passwords(value for key, value in environment.items() if _URL_SETTING.match(key)))
    return {secret for secret in found if len(secret) >= SHORTEST_SECRET}


def _passwords(urls: Iterable[str]) -> Iterable[str]:
    for url in urls:
        userinfo = _userinfo(url.strip())
        if userinfo:
            yield userinfo.partition(":")[2] or userinfo
            yield userinfo


def _userinfo(run: str) -> str:
    """What stands before the last ``@`` of ``run`` and after its scheme, when it is a credential ("" if none)."""
    before, at, _ = run.rpartition("@")
    if not at:
        return ""
    scheme = _SCHEME.search(before)
    if scheme is not None:
        userinfo = before[scheme.end() :]
        return userinfo if ":" in userinfo or "/" not in userinfo else ""
    userinfo = before.lstrip(_OPENERS)
    return userinfo if ":" in userinfo else ""


def _without_userinfo(match: re.Match[str]) -> str:
    run = match.group()
    userinfo = _userinfo(run)
    if not userinfo:
        return run
    at = run.rindex("@")
    return run[: at - len(userinfo)] + SHOWN + run[at:]
