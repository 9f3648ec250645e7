"""``python manage.py jobq_worker``: ``jobq run`` for the Django tasks of a JobqBackend."""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from jobq_core.errors import JobqError


class Command(BaseCommand):
    help = ("Run a jobq worker for the Django tasks of a JobqBackend: claim jobs, run the "
            "tasks, record the outcomes. SIGTERM or Ctrl-C stops it gracefully.")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--backend", default="default", metavar="ALIAS",
                            help="The TASKS backend whose queue to work (default: default).")
        parser.add_argument("--queue", action="append", metavar="QUEUE",
                            help="Only claim from this queue (repeatable; default: all).")
        parser.add_argument("--concurrency", type=int, default=8, metavar="N",
                            help="Jobs run at once.")
        parser.add_argument("--pool", choices=("thread", "process"), default="thread",
                            help="thread: tasks on threads of this process. process: in "
                                 "--concurrency child processes.")
        parser.add_argument("--max-jobs-per-child", type=int, metavar="K",
                            help="--pool process: replace a child process after K jobs.")
        parser.add_argument("--lease", type=float, default=30.0, metavar="SECONDS",
                            help="Lease term.")
        parser.add_argument("--grace", type=float, default=30.0, metavar="SECONDS",
                            help="How long running jobs get to finish on shutdown.")
        parser.add_argument("--burst", action="store_true",
                            help="Exit once no job is ready and none is running.")
        parser.add_argument("--log-level", default="INFO",
                            choices=("DEBUG", "INFO", "WARNING", "ERROR"))

    def handle(self, *args: Any, **options: Any) -> None:
        from jobq_core.contrib.django.worker import run_worker

        if options["concurrency"] < 1:
            raise CommandError(f"--concurrency must be >= 1, got {options['concurrency']}")
        logging.basicConfig(stream=sys.stderr, level=options["log_level"],
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        try:
            run_worker(options["backend"], queues=options["queue"],
                       concurrency=options["concurrency"], pool=options["pool"],
                       max_jobs_per_child=options["max_jobs_per_child"],
                       lease=options["lease"], grace=options["grace"],
                       burst=options["burst"])
        except (JobqError, ValueError) as e:
            raise CommandError(str(e)) from e
