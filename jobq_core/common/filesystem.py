"""What the file system says of a path: the kind of file system it is on (a network one,
where file locks and shared memory do not work as on a local disk), and which file a path
names now (to tell a file deleted or replaced under an open descriptor), and a file created
owner-only."""
from __future__ import annotations

import os

NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph",
                       "glusterfs", "lustre", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse",
                       "fuse.rclone")


def filesystem_type(path: str, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path``, from /proc/self/mounts (None where
    that cannot be read, e.g. not on Linux)."""
    if mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                mounts = f.read()
        except OSError:
            return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def network_filesystem(path: str) -> str | None:
    """The type of the network filesystem the file ``path`` would be on (its directory's),
    or None for a local one (or where it cannot be told)."""
    kind = filesystem_type(os.path.dirname(os.path.abspath(path)) or ".")
    return kind if kind in NETWORK_FILESYSTEMS else None


def file_identity(path: str) -> tuple[int, int]:
    """The (device, inode) ``path`` names now; ``FileNotFoundError`` if nothing."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def moved(path: str, identity: tuple[int, int]) -> str | None:
    """"is gone" or "was replaced" once ``path`` no longer names the file ``identity``
    (``file_identity``) was read from: a file deleted or replaced under an open descriptor
    goes on being read as it was. None while it does."""
    try:
        return None if file_identity(path) == identity else "was replaced"
    except FileNotFoundError:
        return "is gone"


def create_private(path: str) -> None:
    """Create the file ``path`` owner-only (0600) from its first byte, unless another
    process created it first (theirs is kept); ``OSError`` otherwise. O_EXCL refuses a
    dangling symlink: the file it points to is created instead."""
    try:
        os.close(os.open(os.path.realpath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
