"""A private directory held open, and files in it read and written without trusting paths.

The disk cache (`objcache`) and its secret key (`cachekey`) keep files that decide what
machine code this process runs, so every path is checked once and then not used again:

- `open_private(path)` resolves `path` once (symlinks the user chose are followed), then
  walks the real path from "/" one component at a time with O_NOFOLLOW | O_DIRECTORY,
  checking each opened directory with fstat as ssh's StrictModes does: owned by this
  user or root, and not writable by group or others unless it is sticky and owned by
  root (/tmp). The last component must be owned by this user and not writable by group
  or others at all. Missing components are created 0700. The result holds the last
  directory open: entries are opened relative to that descriptor, never through the path.
- `PrivateDir.read` opens an entry with O_NOFOLLOW | O_NONBLOCK (a symlink is refused, a
  FIFO does not block) and checks with fstat, before reading a byte, that it is a
  regular file owned by this user, not writable by group or others, and no larger than
  the caller's cap.
- `PrivateDir.write` writes a private temporary file in the directory and renames it
  into place relative to the descriptor: readers see a whole file or none.
- `PrivateDir.open_lock` opens (or makes, 0600) a lock file with O_NOFOLLOW | O_NONBLOCK
  and checks it as `read` checks an entry (a symlink, a FIFO, another user's or a
  group-writable file is refused): the caller takes an `fcntl.flock` on the descriptor.
- `PrivateDir.verify` re-checks the held directory (fstat of the descriptor) and that its
  path still names it; callers run it before each use instead of trusting it forever.

Every refusal is an `Unsafe` exception whose message says what was found.
"""
from __future__ import annotations

import errno
import os
import stat

__all__ = ["Unsafe", "PrivateDir", "open_private", "supported"]

_O = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | _O
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | _O
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | _O
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | _O


class Unsafe(Exception):
    """A directory or file failed a check; `cause` names the kind of failure (for
    reporting each kind once), the message says what was found."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause


def supported() -> bool:
    """Whether this platform has what the checks need: openat-style calls, O_NOFOLLOW,
    O_DIRECTORY and user ids (POSIX). Elsewhere the disk cache is not used."""
    return (hasattr(os, "getuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
            and os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd
            and os.rename in os.supports_dir_fd and os.unlink in os.supports_dir_fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _check_parent(st: os.stat_result, where: str) -> None:
    """A directory on the way to the private one: ssh's rule."""
    me = os.getuid()
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe("parent", f"{where} is not a directory")
    if st.st_uid not in (me, 0):
        raise Unsafe("parent", f"{where} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and st.st_uid == 0):
        raise Unsafe("parent", f"{where} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}) "
                               f"and not a sticky directory owned by root")


def _check_private(st: os.stat_result, where: str) -> None:
    """The private directory itself: this user's, written by nobody else."""
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe("directory", f"{where} is not a directory")
    if st.st_uid != os.getuid():
        raise Unsafe("directory", f"{where} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        raise Unsafe("directory", f"{where} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})")


def _check_file(st: os.stat_result, where: str, cap: int, secret: bool) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise Unsafe("not a regular file", f"{where} is {_kind(st.st_mode)}, not a regular file")
    if st.st_uid != os.getuid():
        raise Unsafe("owner", f"{where} belongs to another user (uid {st.st_uid})")
    if st.st_mode & (0o077 if secret else 0o022):
        raise Unsafe("mode", f"{where} is {'readable or writable' if secret else 'writable'} by group or "
                             f"others (mode {stat.S_IMODE(st.st_mode):o})")
    if st.st_size > cap:
        raise Unsafe("size", f"{where} is {st.st_size} bytes, more than the {cap} allowed")


def _step(parent: int, name: str, where: str, create: bool) -> tuple[int, bool]:
    """Open directory `name` under the descriptor `parent` without following a link;
    (descriptor, whether it was created here)."""
    made = False
    while True:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent), made
        except FileNotFoundError:
            if not create:
                raise Unsafe("missing", f"{where} does not exist") from None
            try:
                os.mkdir(name, 0o700, dir_fd=parent)
                made = True
            except FileExistsError:
                pass                              # another process made it: open theirs
            except OSError as e:
                raise Unsafe("create", f"{where} could not be created ({e.strerror})") from None
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                try:
                    kind = _kind(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
                except OSError:
                    kind = "not a directory"
                raced = " (it changed while s2sad opened it)" if kind == "a symbolic link" else ""
                raise Unsafe("parent", f"{where} is {kind}, not a directory{raced}") from None
            raise Unsafe("parent", f"{where} could not be opened ({e.strerror})") from None


def open_private(path: str, create: bool = True) -> "PrivateDir":
    """The private directory at `path` (created 0700 with its missing parents when
    `create`), held open after every component of its real path passed the checks."""
    real = os.path.realpath(os.path.abspath(path))
    parts = [p for p in real.split(os.sep) if p]
    where = os.sep
    try:
        fd = os.open(os.sep, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise Unsafe("directory", f"/ could not be opened ({e.strerror})") from None
    try:
        for name in parts:
            _check_parent(os.fstat(fd), where)
            where = os.path.join(where, name)
            child, made = _step(fd, name, where, create)
            os.close(fd)
            fd = child
            if made:
                os.fchmod(fd, 0o700)              # whatever the umask took away
        st = os.fstat(fd)
        _check_private(st, real)
    except OSError as e:
        os.close(fd)
        raise Unsafe("directory", f"{where} could not be checked ({e.strerror})") from None
    except BaseException:
        os.close(fd)
        raise
    return PrivateDir(path, real, fd, st)


class PrivateDir:
    """A checked private directory, held open; files are read and written relative to it."""

    def __init__(self, path: str, real: str, fd: int, st: os.stat_result) -> None:
        self.path = path                  # as the user named it
        self.real = real                  # its real path when it was opened
        self.fd = fd
        self.ident = (st.st_dev, st.st_ino)

    def __del__(self) -> None:
        fd, self.fd = getattr(self, "fd", -1), -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def verify(self) -> None:
        """Raise Unsafe unless the held directory still passes the checks and its path
        still names it (what a new process would open)."""
        st = os.fstat(self.fd)
        _check_private(st, self.real)
        if st.st_nlink == 0:
            raise Unsafe("changed", f"{self.path} was removed while this process ran")
        try:
            now = os.stat(self.path)
        except OSError as e:
            raise Unsafe("changed", f"{self.path} can no longer be opened ({e.strerror})") from None
        if (now.st_dev, now.st_ino) != self.ident:
            raise Unsafe("changed", f"{self.path} was replaced by another directory or a link while this "
                                    f"process ran")

    def read(self, name: str, cap: int, secret: bool = False) -> bytes | None:
        """The contents of file `name`; None if there is none. `secret`: readable by
        this user only (a key)."""
        where = os.path.join(self.path, name)
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if self._is_link(name):
                raise Unsafe("symlink", f"{where} is a symbolic link") from None
            raise Unsafe("unreadable", f"{where} could not be opened ({e.strerror})") from None
        try:
            st = os.fstat(fd)
            _check_file(st, where, cap, secret)
            chunks, left = [], st.st_size
            while left > 0:
                got = os.read(fd, left)
                if not got:
                    break                         # it shrank: the caller's checks see a short file
                chunks.append(got)
                left -= len(got)
            return b"".join(chunks)
        except OSError as e:
            raise Unsafe("unreadable", f"{where} could not be read ({e.strerror})") from None
        finally:
            os.close(fd)

    def open_lock(self, name: str) -> int:
        """A descriptor of lock file `name` (made 0600, empty, if missing), checked as an
        entry is before a byte of it is read: a regular file of this user's, not writable by
        group or others (a symlink is refused by O_NOFOLLOW, a FIFO opens without blocking
        and is refused by its fstat). Nothing is ever read from or written to it."""
        where = os.path.join(self.path, name)
        try:
            fd = os.open(name, _LOCK_FLAGS, 0o600, dir_fd=self.fd)
        except OSError as e:
            if self._is_link(name):
                raise Unsafe("symlink", f"{where} is a symbolic link") from None
            raise Unsafe("unreadable", f"{where} could not be opened ({e.strerror})") from None
        try:
            _check_file(os.fstat(fd), where, 0, False)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _is_link(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return False

    def _temporary(self, name: str, data: bytes) -> str:
        """A private file in the directory holding `data`; its name."""
        tmp = f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, _WRITE_FLAGS, 0o600, dir_fd=self.fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            self._discard(tmp)
            raise
        os.close(fd)
        return tmp

    def _discard(self, tmp: str) -> None:
        try:
            os.unlink(tmp, dir_fd=self.fd)
        except OSError:
            pass

    def write(self, name: str, data: bytes) -> None:
        """Replace file `name` with `data` atomically (raises OSError)."""
        tmp = self._temporary(name, data)
        try:
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self._discard(tmp)
            raise

    def create(self, name: str, data: bytes) -> bool:
        """Make file `name` hold `data` unless it exists (then False): whole or not at
        all, and the first of racing processes wins."""
        tmp = self._temporary(name, data)
        try:
            os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileExistsError:
            return False
        except OSError:                            # no hard links here: exclusive create, then fill
            try:
                fd = os.open(name, _WRITE_FLAGS, 0o600, dir_fd=self.fd)
            except FileExistsError:
                return False
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            return True
        finally:
            self._discard(tmp)
