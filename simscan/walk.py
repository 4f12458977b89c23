"""Walking folders: which files a scan considers, and why others are left out.

An explicit stack, not recursion (1,000-deep trees need no recursion limit); ``os.scandir``
so a folder is listed with one system call per block of entries; names handled as raw bytes
so undecodable names survive.  Entries of one folder are sorted by name, so two scans of one
tree see files in the same order (stable ids, and the same hard link is the one indexed).

Rules (the scan never opens a file here, it only stats it):
- symbolic links are not followed unless asked, and never to a place outside the real paths
  of the roots; broken links and link loops are problems; a folder is entered once (by
  (device, inode)), so link cycles end;
- FIFOs, sockets and devices are problems ("special file, skipped") and are never opened;
- a second path to an already-seen inode (hard link) is noted and not read again;
- hidden names (leading ".") are skipped when ``hidden`` is False;
- ``exclude`` globs prune files and folders; ``include`` globs (if any) admit files only.  A
  glob with a "/" is matched against the whole path, otherwise against the name;
- sparse files of at least :data:`SPARSE_MIN_BYTES` with less than 1/:data:`SPARSE_RATIO` of
  their size allocated are problems: reading terabytes of holes (e.g. VM images, lastlog)
  would stall a scan for nothing.
"""

from __future__ import annotations

import fnmatch
import operator
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Sparse-file rule: apparent size at least 1 GiB and under 1/8 of it allocated.
SPARSE_MIN_BYTES = 1 << 30
SPARSE_RATIO = 8


@dataclass(frozen=True, slots=True)
class WalkOptions:
    exclude: Sequence[str] = ()
    include: Sequence[str] = ()
    hidden: bool = True
    min_size: int = 0
    max_size: int | None = None
    follow_links: bool = False
    #: Absolute byte paths never to consider (the index file and its companions).
    skip_paths: frozenset[bytes] = frozenset()


#: (path, device, inode, size, mtime_ns) of a regular file to consider.
Entry = tuple[bytes, int, int, int, int]


@dataclass(slots=True)
class WalkResult:
    files: list[Entry] = field(default_factory=list)
    problems: list[tuple[bytes, str]] = field(default_factory=list)
    #: Folders that could not be listed: indexed files below them are kept, not removed.
    unreadable_dirs: list[bytes] = field(default_factory=list)
    #: Paths left out by the options (hidden, globs, size limits): indexed ones under the roots are forgotten.
    skipped: int = 0
    links_skipped: int = 0
    #: Regular files found (``len(files)`` unless the walk was told not to keep them).
    found: int = 0


def _compile(globs: Sequence[str]) -> tuple[re.Pattern[bytes] | None, re.Pattern[bytes] | None]:
    """Two byte regexes: one for globs matched against names, one for globs matched against paths."""
    by_name = [fnmatch.translate(g) for g in globs if "/" not in g]
    by_path = [fnmatch.translate(g.rstrip("/")) for g in globs if "/" in g]

    def one(parts: list[str]) -> re.Pattern[bytes] | None:
        return re.compile(os.fsencode("|".join(f"(?:{p})" for p in parts))) if parts else None

    return one(by_name), one(by_path)


def _matches(pats: tuple[re.Pattern[bytes] | None, re.Pattern[bytes] | None], name: bytes, path: bytes) -> bool:
    n, p = pats
    return bool((n is not None and n.match(name)) or (p is not None and p.match(path)))


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


_by_name = operator.attrgetter("name")


def _inside(real: bytes, real_roots: Sequence[bytes]) -> bool:
    return any(real == r or real.startswith(r if r.endswith(b"/") else r + b"/") for r in real_roots)


def walk(
    roots: Sequence[bytes],
    opts: WalkOptions,
    on_dir: Callable[[bytes, list[Entry], int], None] | None = None,
    keep: bool = True,
) -> WalkResult:
    """List the regular files under ``roots`` (absolute, normalised byte paths) per ``opts``.

    ``on_dir(folder, files, start)`` is called after each folder is listed, with the list of files
    found so far of which ``files[start:]`` are new (the scanner starts reading them while the walk
    goes on; it may raise to stop the walk), and once more at the end if files are left unreported.
    With ``keep=False`` the list is emptied after each call (memory stays proportional to one
    folder, not the tree); ``WalkResult.found`` counts the files either way.
    """
    res = WalkResult()
    excl = _compile(opts.exclude)
    has_excl = bool(opts.exclude)
    incl = _compile(opts.include) if opts.include else None
    real_roots = [os.path.realpath(r) for r in roots]
    seen_inodes: dict[tuple[int, int], bytes] = {}
    seen_dirs: set[tuple[int, int]] = set()

    def add_file(path: bytes, st: os.stat_result) -> None:
        if st.st_size < opts.min_size or (opts.max_size is not None and st.st_size > opts.max_size):
            res.skipped += 1
            return
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 or opts.follow_links:
            first = seen_inodes.get(key)
            if first is not None:
                if first != path:
                    res.problems.append((path, f"same file as {os.fsdecode(first)} (hard link): indexed once"))
                return
            seen_inodes[key] = path
        if st.st_size >= SPARSE_MIN_BYTES and st.st_blocks * 512 * SPARSE_RATIO < st.st_size:
            res.problems.append(
                (
                    path,
                    f"sparse file: {st.st_size / 2**30:.1f} GiB long but only {st.st_blocks * 512 / 2**20:.1f} MiB"
                    + " on disk; skipped (mostly holes)",
                )
            )
            return
        res.files.append((path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))

    def consider_link(path: bytes) -> tuple[str, os.stat_result] | None:
        """Follow a link if allowed: ("dir"|"file", stat of the target) or None (problem recorded or skipped)."""
        try:
            st = os.stat(path)
        except OSError as e:
            if e.errno == 40:  # ELOOP
                res.problems.append((path, "symbolic link loop; skipped"))
            elif isinstance(e, FileNotFoundError):
                res.problems.append((path, f"broken symbolic link (to {os.fsdecode(os.readlink(path))}); skipped"))
            else:
                res.problems.append((path, f"symbolic link cannot be followed: {_reason(e)}"))
            return None
        if not opts.follow_links:
            res.links_skipped += 1
            return None
        if not _inside(os.path.realpath(path), real_roots):
            res.problems.append((path, "symbolic link to a place outside the scanned folders; not followed"))
            return None
        if stat.S_ISDIR(st.st_mode):
            return "dir", st
        if stat.S_ISREG(st.st_mode):
            return "file", st
        res.problems.append((path, f"symbolic link to a {_special_kind(st.st_mode)}; skipped"))
        return None

    stack: list[bytes] = []
    for root in reversed(list(roots)):
        try:
            st = os.stat(root)
        except OSError as e:
            res.problems.append((root, f"cannot scan: {_reason(e)}"))
            continue
        if stat.S_ISDIR(st.st_mode):
            stack.append(root)
        elif stat.S_ISREG(st.st_mode):
            if root not in opts.skip_paths:
                add_file(root, st)
        else:
            res.problems.append((root, f"{_special_kind(st.st_mode)}; skipped"))

    # The loop below runs once per file of the tree: the common case is kept inline, with locals.
    hidden, skip_paths, follow = opts.hidden, opts.skip_paths, opts.follow_links
    min_size = opts.min_size
    max_size = opts.max_size if opts.max_size is not None else SPARSE_MIN_BYTES
    fast_max = min(max_size, SPARSE_MIN_BYTES - 1)
    files_append = res.files.append
    is_reg = stat.S_ISREG
    reported = 0
    while stack:
        folder = stack.pop()
        try:
            dst = os.stat(folder)
            if (dst.st_dev, dst.st_ino) in seen_dirs:
                continue  # reached again through a followed link
            seen_dirs.add((dst.st_dev, dst.st_ino))
            with os.scandir(folder) as it:
                entries = sorted(it, key=_by_name)
        except OSError as e:
            res.problems.append((folder, f"folder cannot be read: {_reason(e)}"))
            res.unreadable_dirs.append(folder)
            continue
        subdirs: list[bytes] = []
        for entry in entries:
            name: bytes = entry.name  # type: ignore[assignment]
            path: bytes = entry.path  # type: ignore[assignment]
            if not hidden and name.startswith(b"."):
                res.skipped += 1
                continue
            if path in skip_paths:
                continue
            if has_excl and _matches(excl, name, path):
                res.skipped += 1
                continue
            try:
                if entry.is_symlink():
                    target = consider_link(path)
                    if target is None:
                        continue
                    kind, st = target
                    if kind == "dir":
                        subdirs.append(path)
                        continue
                elif entry.is_dir(follow_symlinks=False):
                    subdirs.append(path)
                    continue
                else:
                    st = entry.stat(follow_symlinks=False)
                    if not is_reg(st.st_mode):
                        res.problems.append((path, f"{_special_kind(st.st_mode)}; skipped (never opened)"))
                        continue
            except OSError as e:
                res.problems.append((path, f"cannot be examined: {_reason(e)}"))
                continue
            if incl is not None and not _matches(incl, name, path):
                res.skipped += 1
                continue
            size = st.st_size
            if min_size <= size <= fast_max and st.st_nlink == 1 and not follow:
                files_append((path, st.st_dev, st.st_ino, size, st.st_mtime_ns))
            else:
                add_file(path, st)  # size limits, hard links, followed links, sparse files
        stack.extend(reversed(subdirs))
        if on_dir is not None:
            on_dir(folder, res.files, reported)
            reported = len(res.files)
            if not keep:
                res.found += reported
                res.files.clear()
                reported = 0
    if on_dir is not None and reported < len(res.files):
        on_dir(b"", res.files, reported)
    res.found += len(res.files)
    if not keep:
        res.files.clear()
    return res
