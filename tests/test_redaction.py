"""No secret in any message, however the URL that carried it was typed (generated URLs, user:password anywhere)."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from bridge.redaction import redact, secrets_in

# A password as a person may type it into a URL: no whitespace (a URL cannot carry it unencoded).
PASSWORDS = st.text(alphabet=string.ascii_letters + string.digits + "/:#?[]@!$&'()*+,;=%-._~", min_size=6, max_size=24)
USERS = st.text(alphabet=string.ascii_letters + string.digits + " ._-", min_size=1, max_size=10)
SCHEMES = st.sampled_from(["http://", "https://", "HTTP://", "htp:/", "http:///", "kafka+ssl://", ""])
HOSTS = st.sampled_from(["127.0.0.1:5000", "127.0.0.1:P", "[::1", "[::1]:8080", "localhost", "gms:8080/api", ""])
# Where a URL lands in a message: alone, quoted, after a setting's name, in a repr, in parentheses.
AROUND = st.sampled_from(["{}", "'{}'", '"{}"', "OPENLINEAGE_URL={}", "{{'url': '{}'}}", "failed ({}).", "at {}: no"])


def message(scheme: str, user: str, password: str, host: str, around: str) -> str:
    return around.format(f"{scheme}{user}:{password}@{host}")


@settings(max_examples=400, deadline=None)
@given(SCHEMES, USERS, PASSWORDS, HOSTS, AROUND)
@example("http://", "user", "Pw3/Secret", "127.0.0.1:5000", "{}")
@example("htp:/", "user", "Pw5Secret", "127.0.0.1:5000", "{}")
@example("", "user", "Pw7Secret", "127.0.0.1:5000", "{}")
def test_a_url_s_password_is_never_shown_however_the_url_is_typed(scheme, user, password, host, around):
    said = message(scheme, user, password, host, around)
    assume(password not in said.replace(f"{user}:{password}@", "@"))  # the password is no other part of it
    assert password not in redact(said, environment={})


@settings(max_examples=300, deadline=None)
@given(SCHEMES, USERS, PASSWORDS, HOSTS, AROUND, st.sampled_from(["{}", "`{}`", "value {} as JSON", "{}{}"]))
@example("http://", "us er", "Pw8Secret", "[::1", "{}", "failed to parse `{}` as JSON")
def test_the_configured_url_s_password_is_never_shown_wherever_it_appears(scheme, user, password, host, around, said):
    url = f"{scheme}{user}:{password}@{host}"
    environment = {"OPENLINEAGE_URL": url}
    shown = redact(said.format(around.format(url), password), environment)
    assert password not in shown


@pytest.mark.parametrize(
    "key", ["OPENLINEAGE_API_KEY", "OPENLINEAGE__TRANSPORT__AUTH__APIKEY", "DATAHUB_GMS_TOKEN", "AWS_SECRET_ACCESS_KEY"]
)
def test_a_secret_setting_s_value_is_never_shown(key):
    secret = "k3y-" + key.lower()[-6:] + "-9f2"
    assert secret in secrets_in({key: secret})
    assert secret not in redact(f"Authorization: Bearer {secret} refused", {key: secret})


@pytest.mark.parametrize(
    "text",
    [
        "failed at http://host/api (user@example.com)",
        "git@github.com:org/repo",
        "diff nyc_taxi.raw_yellow@4 nyc_taxi.raw_yellow@5",
        "s3://bucket/events/part@v1",
        "test test",
    ],
)
def test_what_is_no_credential_is_left_as_it_is(text):
    assert redact(text, {"AWS_SECRET_ACCESS_KEY": "test"}) == text  # too short to be told from a word
