#!/usr/bin/env python
"""The test Django project's manage.py: JOBQ_DJANGO_DB names its database (a file path
or a postgresql:// URL); the Tasks backend is jobq on that same database."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
