"""Helpers shared by the tests of spmlkit.ownership (tests/ownership/): folder snapshots, a
user's files, manifest lines, links swapped in at a chosen moment."""
import json
import os

import pytest

from spmlkit import ownership


def snapshot(folder):
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p)
                                         if p.is_symlink() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def user(tmp_path):
    """A folder of the user's, with a file in it."""
    u = tmp_path / "user"
    u.mkdir()
    (u / "notes.txt").write_text("mine\n")
    return u


def legacy_marked_build(tmp_path, kind):
    """A marked folder ``B`` of an older spmlkit without a manifest (kind ``kind``, layout
    meta.json + train/), replaced by a build that writes a new meta.json: the folder."""
    ownership.register_kind(kind, "a legacy marked build", layout=("meta.json", "train"))
    old = tmp_path / "B"
    (old / "train").mkdir(parents=True)
    (old / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": kind}))
    (old / "meta.json").write_text("{}")
    (old / "train" / "X.npy").write_text("x")
    return old


def manifest_lines(folder):
    return [ln.split(" ")[0] + " " + ln.split(" ", 2)[2] for ln in (folder / ownership.MANIFEST).read_text().splitlines()]



def _owned_then_replaced(tmp_path):
    """A folder spmlkit claimed and wrote into, then removed and made again by someone else
    with a file of theirs in it."""
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.rmtree(out)
    out.mkdir()
    (out / "theirs.txt").write_text("someone else's folder now")
    return out


def _mode(p):
    mask = os.umask(0)
    os.umask(mask)
    return os.stat(p).st_mode & 0o777, 0o666 & ~mask


def _restore_from_copy(folder, tmp_path):
    """``folder`` replaced by a copy of itself (moved away, copied back: a backup restored)."""
    import shutil

    away = tmp_path / "away"
    os.rename(folder, away)
    shutil.copytree(away, folder)
    shutil.rmtree(away)



def _list_by_hand(folder, t, rel, path):
    """A manifest line for ``path``'s inode as type ``t`` (an inode number a removed entry had, given by a file
    system without generation numbers to something of another type)."""
    st = os.lstat(path)
    with open(folder / ownership.MANIFEST, "a") as fh:
        fh.write(f"{t} {st.st_dev}:{st.st_ino}:-:-:- {rel}\n")



def opened_path(p, dir_fd=None) -> str:
    """The path ``os.open(p, ..., dir_fd=dir_fd)`` opens (spmlkit opens names inside an open folder)."""
    p = os.fspath(p)
    return p if dir_fd is None else os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)


def _before_open(monkeypatch, path, action, *, when=lambda flags: True):
    """Run ``action`` once, just before spmlkit next opens ``path`` (with flags ``when`` accepts): something
    done to the name by someone else between spmlkit's check and its open."""
    real, path, done = os.open, os.fspath(path), []

    def opened(p, flags, *a, **kw):
        if not done and opened_path(p, kw.get("dir_fd")) == path and when(flags):
            done.append(True)
            action()
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", opened)
    return done



def _to_link(path, to):
    def swap():
        os.unlink(path)
        os.symlink(to, path)
    return swap


def _permissions_as_for_a_user(monkeypatch):
    """The permission checks every user but root meets, applied to ``os.open`` (tests may run as
    root, whom the kernel lets open anything): a regular file without a write permission bit is
    not opened for writing, a folder without a read permission bit is not opened (its files can
    still be looked up by name)."""
    import errno
    import stat

    real = os.open

    def checked(p, flags, *a, **kw):
        try:
            st = os.stat(opened_path(p, kw.get("dir_fd")))
        except OSError:
            st = None
        if st is not None and ((stat.S_ISREG(st.st_mode) and flags & os.O_ACCMODE != os.O_RDONLY
                                and not st.st_mode & 0o222) or (stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o444)):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", checked)
