"""The checker: what the history log and the database must agree on after a chaos run.

  nothing lost          every acknowledged enqueue is in the database, in a final state
  one completion        at most one accepted completion per job
  the final token       an accepted completion carries the job's final token, and the job
                        is succeeded with it; a succeeded job's token is a logged claim's
  attempts bounded      attempts never exceed max_attempts
  one live lease        a job is claimed again only after the earlier claim ended or its
                        lease (at least its first term) ran out
  sound file            PRAGMA integrity_check says ok
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from jobq_core import Queue

FINAL = {"succeeded", "dead", "cancelled"}


@dataclass
class Report:
    violations: list[str] = field(default_factory=list)
    jobs: int = 0
    claims: int = 0
    accepted: int = 0
    rejected: int = 0
    reruns: int = 0  # jobs whose handler started more than once (at-least-once at work)

    def fail(self, msg: str) -> None:
        if len(self.violations) < 50:
            self.violations.append(msg)

    def __str__(self) -> str:
        return (f"{self.jobs} jobs, {self.claims} claims, {self.accepted} completions "
                f"accepted, {self.rejected} rejected, {self.reruns} jobs ran more than once; "
                f"{len(self.violations)} violation(s): {self.violations[:10]}")


def check(events: list[dict], db_path: str, *, expect_final: bool = True,
          check_leases: bool = True) -> Report:
    report = Report()
    acked = [i for e in events if e["ev"] == "enqueued" for i in e["ids"]]
    claims = collections.defaultdict(list)
    ended = {}  # token -> time its attempt ended (accepted, rejected, failed, released)
    accepted = collections.defaultdict(list)
    for e in events:
        if e["ev"] == "claimed":
            claims[e["job"]].append(e)
        elif e["ev"] in ("accepted", "rejected", "failed", "released"):
            ended.setdefault(e["token"], e["t"])
            if e["ev"] == "accepted":
                accepted[e["job"]].append(e["token"])
    report.claims = sum(len(c) for c in claims.values())
    report.accepted = sum(len(a) for a in accepted.values())
    report.rejected = sum(1 for e in events if e["ev"] == "rejected")
    report.reruns = sum(1 for c in claims.values() if len(c) > 1)
    with Queue(db_path, read_only=True) as q:
        integrity = q.store.integrity_check()
        if integrity != "ok":
            report.fail(f"integrity_check: {integrity}")
        jobs = {}
        for job_id in set(acked) | set(claims):
            job = q.get(job_id)
            if job is None:
                report.fail(f"job {job_id} was acknowledged but is not in the database")
            else:
                jobs[job_id] = job
    report.jobs = len(jobs)
    claimed_tokens = {e["token"] for cs in claims.values() for e in cs}
    for job_id, job in jobs.items():
        if expect_final and job.status not in FINAL:
            report.fail(f"job {job_id} is still {job.status}")
        if job.attempts > job.max_attempts:
            report.fail(f"job {job_id}: {job.attempts} attempts > max {job.max_attempts}")
        if job.status == "succeeded" and job.token not in claimed_tokens:
            report.fail(f"job {job_id} succeeded under token {job.token}, which no logged "
                        "claim holds (the history log is blind to some claim path)")
        tokens = accepted.get(job_id, [])
        if len(tokens) > 1:
            report.fail(f"job {job_id}: {len(tokens)} completions accepted")
        if tokens and (job.status != "succeeded" or job.token != tokens[0]):
            report.fail(f"job {job_id}: accepted token {tokens[0]} but the job is "
                        f"{job.status} with token {job.token}")
    if check_leases:
        for job_id, cs in claims.items():
            cs.sort(key=lambda e: e["t"])
            for a, b in zip(cs, cs[1:]):
                end = ended.get(a["token"])
                if b["t"] < a["t"] + a["lease"] - 0.05 and (end is None or end > b["t"] + 0.05):
                    report.fail(f"job {job_id}: claimed by {b['worker']} at {b['t']:.3f} while "
                                f"{a['worker']}'s lease from {a['t']:.3f} was live")
    return report
