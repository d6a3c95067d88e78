#!/usr/bin/env python
"""Django's command-line utility for Atlas Memory."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_site.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:  # a configuration to fix (settings say which): one line, no traceback
        sys.exit(f"manage.py: {exc}")


if __name__ == "__main__":
    main()
