"""People sign up and log in with email through django-allauth, with email verification."""

from __future__ import annotations

import re

from django.core import mail
from django.urls import reverse

from tenants.models import Person


def test_signup_verification_and_login(client, db) -> None:
    response = client.post(
        reverse("account_signup"),
        {"email": "new@example.com", "password1": "a-long-password-42", "password2": "a-long-password-42"},
    )
    assert response.status_code == 302
    assert Person.objects.filter(email="new@example.com").exists()
    assert len(mail.outbox) == 1
    # The site is named from ATLAS_SITE_NAME / ATLAS_PUBLIC_URL on migrate, not Django's example.com.
    assert mail.outbox[0].subject == "[Atlas Memory] Please Confirm Your Email Address"
    assert "example.com" not in mail.outbox[0].body.replace("new@example.com", "")
    link = re.search(r"https?://[^\s]+/accounts/confirm-email/[^\s]+", mail.outbox[0].body).group(0)
    path = link.split("://", 1)[1].split("/", 1)[1]
    client.logout()
    # Unverified: logging in sends the person back to verification, not in.
    response = client.post(reverse("account_login"), {"login": "new@example.com", "password": "a-long-password-42"})
    assert response.status_code == 302
    assert response.url == reverse("account_email_verification_sent")
    confirm = client.post("/" + path)
    assert confirm.status_code == 302
    client.logout()
    response = client.post(reverse("account_login"), {"login": "new@example.com", "password": "a-long-password-42"})
    assert response.status_code == 302
    assert response.url == "/"
    assert client.get("/").context["user"].email == "new@example.com"


def test_login_page_renders(client, db) -> None:
    html = client.get(reverse("account_login")).content.decode()
    assert "Atlas Memory" in html
    assert 'name="login"' in html


def test_the_site_follows_the_settings_on_every_migrate(db, settings) -> None:
    from django.contrib.sites.models import Site
    from django.core.management import call_command

    settings.ATLAS_PUBLIC_URL = "https://memory.example.org"
    settings.ATLAS_SITE_NAME = "Acme Memory"
    call_command("migrate", verbosity=0)
    site = Site.objects.get_current()
    assert (site.domain, site.name) == ("memory.example.org", "Acme Memory")
