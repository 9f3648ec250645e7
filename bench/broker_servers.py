"""The broker section's servers: the Redis database and the RabbitMQ server it measures
on (--redis-url, --amqp-url), whether each can be used, what the report says of them, and
the queue name that stands for a measurement.

Hazard: the Redis database is flushed before and after each measurement, so it is refused
when it holds keys this bench did not write (MARK says the database is the bench's).
The URLs are module globals set by use_servers before any process forks: read them as
``broker_servers.REDIS_URL`` at call time, never import their values.
"""
from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

REDIS_URL = "redis://127.0.0.1:6379/13"          # set by --redis-url (use_servers)
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"  # set by --amqp-url (use_servers)
MARK = "jobq-bench:peers_brokers"   # the key that says the Redis database is this script's


def use_servers(redis_url: str, amqp_url: str) -> None:
    """The servers the section measures on; set before any process forks."""
    global REDIS_URL, AMQP_URL
    REDIS_URL, AMQP_URL = redis_url, amqp_url


def redis_client():
    import redis
    return redis.Redis.from_url(REDIS_URL, socket_timeout=5, socket_connect_timeout=3)


def flush_redis() -> None:
    r = redis_client()
    try:
        r.flushdb()
        r.set(MARK, "1")
    finally:
        r.close()


def redis_available() -> tuple[bool, str]:
    try:
        import redis  # noqa: F401
    except ImportError as e:
        return False, f"redis-py is not installed ({e})"
    try:
        r = redis_client()
        try:
            r.ping()
            if r.dbsize() and not r.exists(MARK):
                return False, (f"the Redis database {REDIS_URL} holds {r.dbsize()} keys this "
                               "script did not write (it flushes its database): pick an empty "
                               "one with --redis-url")
        finally:
            r.close()
    except Exception as e:  # noqa: BLE001 - one line in the report
        return False, f"no Redis server at {REDIS_URL} ({e})"
    return True, ""


def amqp_connection():
    import pika
    params = pika.URLParameters(AMQP_URL)
    params.socket_timeout = 3
    params.blocked_connection_timeout = 5
    return pika.BlockingConnection(params)


def amqp_available() -> tuple[bool, str]:
    try:
        import pika  # noqa: F401
    except ImportError as e:
        return False, f"pika is not installed ({e}): pip install 'dramatiq[rabbitmq]'"
    try:
        amqp_connection().close()
    except Exception as e:  # noqa: BLE001 - one line in the report
        return False, f"no RabbitMQ server at {AMQP_URL} ({type(e).__name__}: {e})"
    return True, ""


def server_settings() -> dict:
    """What the report says about the two servers (best effort: a server that is not
    there is reported as such)."""
    out = {"redis_url": REDIS_URL, "amqp_url": AMQP_URL}
    try:
        r = redis_client()
        try:
            out["redis_version"] = r.info("server").get("redis_version")
            for key in ("appendonly", "appendfsync", "save"):
                out[f"redis_{key}"] = r.config_get(key).get(key)
        finally:
            r.close()
    except Exception as e:  # noqa: BLE001
        out["redis_error"] = str(e)
    try:
        c = amqp_connection()
        try:
            version = c._impl.server_properties.get("version", "?")
            out["rabbitmq_version"] = (version.decode() if isinstance(version, bytes)
                                       else str(version))
        finally:
            c.close()
    except Exception as e:  # noqa: BLE001
        out["rabbitmq_error"] = str(e)
    return out


def header() -> tuple[str, dict]:
    s = server_settings()
    redis = (f"Redis {s['redis_version']} at {REDIS_URL} (appendonly={s.get('redis_appendonly')}, "
             f"appendfsync={s.get('redis_appendfsync')}, save='{s.get('redis_save')}')"
             if "redis_version" in s else f"no Redis at {REDIS_URL}")
    amqp = (f"RabbitMQ {s['rabbitmq_version']} at {urlsplit(AMQP_URL).hostname}:"
            f"{urlsplit(AMQP_URL).port or 5672}" if "rabbitmq_version" in s
            else f"no RabbitMQ at {AMQP_URL}")
    return (f"{redis}, {amqp}; jobq-SQLite on a SQLite file (WAL, synchronous=NORMAL); "
            "same machine"), s


def namespace(d: str) -> str:
    """The queue name that stands for the harness's directory ``d``."""
    return "jobqbench_" + hashlib.sha1(d.encode()).hexdigest()[:12]
