"""Cleaning up, outside any window: the checks made before a file leaves, the trash, and plans.

No Qt here (the window and ``simscan apply`` both use it).

* **Checks** (:func:`refusal`): a file marked for removal must still be the file the scan saw,
  must not be another path of a file being kept, and a file kept in its place must still hold
  its content (a true copy is read again beside it).
* **Trash** (:func:`trash_file`): the freedesktop.org trash specification (1.0): the home trash
  ``$XDG_DATA_HOME/Trash`` for files on its device, ``$topdir/.Trash/$uid`` (when the
  administrator made it: a sticky folder, not a link) or ``$topdir/.Trash-$uid`` for files on
  other mounts; a ``.trashinfo`` file written first (created exclusively: the name is reserved),
  then one ``rename``.  A file that cannot be renamed into a trash on its own device is left in
  place: never copied and deleted, never deleted.
* **Plans** (:class:`Plan`): the files to remove and, for each, the files kept in its place, as
  JSON or as a shell script a person can read (running it hands it to ``simscan apply``);
  :func:`apply_plan` checks every file again -- each must still have the bytes the scan read
  (size, modification time and checksum) -- and moves the rest to the trash.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import xxhash

from simscan.display import display_path
from simscan.errors import SimscanError
from simscan.fingerprint import decode_file, open_unseen
from simscan.progress import Cancelled, CancelToken, Progress, ProgressSink


@dataclass(frozen=True)
class KeptFile:
    """An unmarked member of a marked file's group, as the scan saw it (bytes, ns)."""

    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class TrashTarget:
    """A marked file as the scan saw it, with the members of its group that stay.

    ``same_content``: the file belongs to a set of copies (same bytes, or the same text in another
    encoding or line ending), and ``kept`` then lists only the unmarked files of that set, each
    counting as the remaining copy only while its size and modification time are what the scan
    saw.  Otherwise ``kept`` is every unmarked member of its group.
    """

    path: str
    size: int
    mtime_ns: int
    kept: tuple[KeptFile, ...]
    same_content: bool


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


@dataclass(frozen=True)
class KeptState:
    """The kept members of one group as they are on disk now."""

    identities: dict[tuple[int, int], str]  # (device, inode) -> path, of every kept member that exists
    intact: frozenset[tuple[int, int]]  # those that still count as the kept copy (regular; copies: as scanned)
    digests: dict[tuple[str, bool], bytes | None] = field(default_factory=dict, compare=False)  # (path, text)


#: A "content" copy (same text, other bytes) larger than this is not decoded to be checked before it is
#: trashed (memory: the text and its decoded form), so it is refused; exact copies are checked at any size.
MAX_TEXT_CHECK_BYTES = 64 << 20


def content_digest(path: str, text: bool) -> bytes | None:
    """What a true copy must share with the copy kept, read now (None: unreadable, or not text):
    the bytes (``text`` False), or the decoded text with only what makes a "content" copy set
    aside -- the encoding, the line endings, a byte-order mark, Unicode composition -- so that
    files differing in indentation, spacing or wrapping (two different Python programs or YAML
    files) are never each other's copy, though their light forms match.  XXH3-128."""
    try:
        if not text:
            h = xxhash.xxh3_128()
            with open_unseen(path) as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            return h.digest()
        if os.path.getsize(path) > MAX_TEXT_CHECK_BYTES:
            return None
        dt = decode_file(path)
    except OSError:
        return None
    if dt.text is None or "+replace" in (dt.encoding or ""):
        # Bytes the decoder could not read became U+FFFD: two texts that differ there would read
        # alike (a Latin-1 "café" and "cafè" after 64 KiB of ASCII).  Only the same bytes prove it.
        return None
    decoded = dt.text
    strict = unicodedata.normalize("NFC", decoded.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
    return xxhash.xxh3_128_digest(strict.encode("utf-8", "surrogatepass"))


def kept_state(kept: tuple[KeptFile, ...], same_content: bool) -> KeptState:
    identities: dict[tuple[int, int], str] = {}
    intact: set[tuple[int, int]] = set()
    for k in kept:
        try:
            kst = os.stat(k.path)
        except OSError:
            continue
        ident = _identity(kst)
        identities.setdefault(ident, k.path)
        changed = kst.st_size != k.size or kst.st_mtime_ns != k.mtime_ns
        if stat.S_ISREG(kst.st_mode) and not (same_content and changed):
            intact.add(ident)
    return KeptState(identities, frozenset(intact))


#: Why a marked file whose group keeps nothing is left in place: the person marked every file (or, for a
#: copy, the reference and every copy of it).  Nothing changed on disk, so no "scan again" here: the
#: remedy is to unmark the file to keep, as the confirmation dialog says before the move.
ALL_MARKED = (
    "every file of its group is marked, so no copy would be kept; unmark the file to keep in that group (e.g. its "
    "reference), then move the others"
)
ALL_COPIES_MARKED = (
    "every file with its content (the reference and its copies) is marked, so no copy would be kept; unmark the "
    "one to keep (e.g. the reference), then move the others"
)


#: The end of a refusal that a new scan resolves (the file or its kept copy changed on disk).
RESCAN = "; scan again to update the results"


def refusal(target: TrashTarget, kept: KeptState | None = None) -> str:
    """Why ``target`` must not be moved now ("" when it may).

    The last line of defence before a file leaves: a file must not be marked with every other
    file of its group (:data:`ALL_MARKED`; a copy: with every file holding its content,
    :data:`ALL_COPIES_MARKED`), and the file must still be the regular file the
    scan saw (size and mtime in ns unchanged), must not be the very same file (device, inode) as
    a member that is kept (a hard link, or the same file reached through a symlinked folder), and
    at least one kept member must still exist as a separate file — for a true copy, a kept file
    with the same content, with the size and modification time the scan saw.  ``kept``: the group's :func:`kept_state`, shared by its marked members (stat
    each kept file once, not once per marked file).
    """
    rescan = RESCAN
    if not target.kept:  # marked with the rest of its group (or of its copies): the marks say so, not the disk
        return ALL_COPIES_MARKED if target.same_content else ALL_MARKED
    try:
        st = os.lstat(target.path)
    except OSError as e:
        return f"cannot be checked ({e.strerror or e})"
    if stat.S_ISDIR(st.st_mode):
        return "it is now a folder" + rescan
    if not stat.S_ISREG(st.st_mode):
        return "it is no longer a regular file" + rescan
    if st.st_size != target.size or st.st_mtime_ns != target.mtime_ns:
        return "it changed since the scan" + rescan
    if kept is None:
        kept = kept_state(target.kept, target.same_content)
    me = _identity(st)
    if me in kept.identities:
        return (
            f"it is the same file as the kept {kept.identities[me]} (a hard link or a path through a linked "
            "folder): trashing it would lose the only copy" + rescan
        )
    if not kept.intact:
        return "no other file of its group is left unchanged on disk, so no copy would be kept" + rescan
    if target.same_content and not _has_copy(target.path, kept):
        return (
            "no kept file holds its content now: either they differ in more than encoding and line endings "
            "(another document format, such as a DOCX beside its text or PDF, or another indentation, spacing or "
            "wrapping: not true copies, so it stays; move it by hand if you mean to), or "
            "one of them was rewritten since the scan with its size and time kept (scan again)"
        )
    return ""


def true_copies(pairs: Sequence[tuple[str, str]], progress: ProgressSink, cancel: CancelToken) -> list[bool]:
    """For each (copy, reference) the scan called "content" copies (other bytes): whether the copy
    holds the reference's text now (:func:`_same_content`, its text reading only: their bytes
    differ).  Each reference is read once."""
    seen: dict[tuple[str, bool], bytes | None] = {}
    out = []
    for i, (copy, ref) in enumerate(pairs):
        if cancel.cancelled:
            raise Cancelled()
        progress(Progress("verify", files_done=i, files_total=len(pairs), current=copy))
        out.append(_same_content(copy, [ref], seen, kinds=(True,)))
    return out


def _has_copy(path: str, kept: KeptState) -> bool:
    """Whether a kept, intact file holds ``path``'s content now (:func:`_same_content`)."""
    return _same_content(path, [kept.identities[i] for i in kept.intact], kept.digests)


def _same_content(
    path: str, others: Sequence[str], seen: dict[tuple[str, bool], bytes | None], kinds: Sequence[bool] = (False, True)
) -> bool:
    """Whether one of ``others`` holds ``path``'s content, read from both files at this moment: the
    same bytes, or the same text (:func:`content_digest`) -- a size and time unchanged since the scan
    do not prove the bytes are (``cp -p``, ``touch -r``, coarse file-system clocks).  ``seen``: the
    digests of ``others`` read so far (each is read once per kind); ``kinds``: the readings to try
    (False: bytes, True: text).  Bytes are compared only with files of the same size (a text copy
    in another encoding would otherwise read every kept file whole twice)."""
    size = _size(path) if False in kinds else None
    for text in kinds:
        candidates = others if text else [o for o in others if size is not None and _size(o) == size]
        if not candidates:
            continue
        mine = content_digest(path, text)
        if mine is None:
            continue
        for other in candidates:
            if (other, text) not in seen:
                seen[(other, text)] = content_digest(other, text)
            if seen[(other, text)] == mine:
                return True
    return False


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


# ------------------------------------------------------------------ the trash (freedesktop.org)
def _home_trash() -> bytes:
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(os.fsencode(os.path.abspath(data)), b"Trash")


def _mount_point(path: bytes) -> bytes:
    """The top folder of the mount holding ``path`` (the folder whose parent is on another device)."""
    path = os.path.realpath(path)
    dev = os.lstat(path).st_dev
    while True:
        parent = os.path.dirname(path)
        if parent == path or os.lstat(parent).st_dev != dev:
            return path
        path = parent


def _trash_for(src: bytes, st: os.stat_result) -> tuple[bytes, bytes | None]:
    """(trash folder, top folder the .trashinfo path is relative to, None: absolute) for a file."""
    home = _home_trash()
    data = os.path.dirname(home)
    os.makedirs(data, exist_ok=True)
    if os.stat(data).st_dev == st.st_dev:
        return home, None
    top = _mount_point(os.path.dirname(src))
    uid = str(os.getuid()).encode()
    admin = os.path.join(top, b".Trash")
    try:
        ast = os.lstat(admin)
        if stat.S_ISDIR(ast.st_mode) and ast.st_mode & stat.S_ISVTX:
            return os.path.join(admin, uid), top
    except OSError:
        pass
    return os.path.join(top, b".Trash-" + uid), top


def trash_file(path: str | bytes) -> bytes:
    """Move one file to the trash (freedesktop.org trash specification); returns its path in the
    trash.  Raises OSError when it cannot (no trash can be made on its device, no permission): the
    file is then where it was, never copied elsewhere nor deleted."""
    src = os.path.abspath(os.fsencode(path))
    st = os.lstat(src)
    trash, top = _trash_for(src, st)
    files, info = os.path.join(trash, b"files"), os.path.join(trash, b"info")
    for d in (trash, files, info):
        os.makedirs(d, mode=0o700, exist_ok=True)
    origin = os.path.relpath(src, top) if top is not None else src
    when = time.strftime("%Y-%m-%dT%H:%M:%S")
    record = f"[Trash Info]\nPath={urllib.parse.quote(origin, safe='/')}\nDeletionDate={when}\n".encode()
    base = os.path.basename(src)
    for n in range(1, 100_000):
        name = base if n == 1 else b"%s.%d" % (base, n)
        info_path = os.path.join(info, name + b".trashinfo")
        try:
            fd = os.open(info_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(record)
        dest = os.path.join(files, name)
        if os.path.lexists(dest):  # a file left without its record: keep both, try the next name
            os.unlink(info_path)
            continue
        try:
            os.rename(src, dest)
        except OSError:
            os.unlink(info_path)
            raise
        return dest
    raise OSError(f"no free name in the trash for {os.fsdecode(base)}")


# ------------------------------------------------------------------ plans
PLAN_FORMAT = "simscan-plan"
PLAN_VERSION = 1
#: The line that opens (and closes) a shell plan's JSON.
_SH_MARK = "SIMSCAN-PLAN"


def file_checksum(path: str) -> str | None:
    """The XXH3-128 of a file's bytes as the index stores it (hex), read now; None if unreadable."""
    h = xxhash.xxh3_128()
    try:
        with open_unseen(path) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


@dataclass(frozen=True)
class PlanEntry:
    """A file to move to the trash: as the scan saw it (``target``, with the files kept in its
    place) and its checksum then (XXH3-128 hex, "" when unknown); ``group``: its group's number."""

    target: TrashTarget
    checksum: str = ""
    group: int = 0


@dataclass(frozen=True)
class Plan:
    """Files to move to the trash, each with the files kept in its place."""

    entries: tuple[PlanEntry, ...]
    index: str = ""  # the index the scan wrote (updated after the move when it can be)
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    @property
    def size(self) -> int:
        return sum(e.target.size for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT, "version": PLAN_VERSION, "created": self.created, "index": self.index,
            "files": [
                {"path": e.target.path, "size": e.target.size, "mtime_ns": e.target.mtime_ns,
                 "checksum": e.checksum, "group": e.group, "same_content": e.target.same_content,
                 "keep": [asdict(k) for k in e.target.kept]}
                for e in self.entries
            ],
        }

    @staticmethod
    def from_json(doc: Any) -> Plan:
        """Raises PlanError for anything but a plan this version writes."""
        if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT:
            raise PlanError("this is not a simscan plan")
        if doc.get("version") != PLAN_VERSION:
            raise PlanError(f"plan version {doc.get('version')!r} is not known to this simscan",
                            "Export the plan again with this simscan.")
        try:
            entries = tuple(
                PlanEntry(TrashTarget(str(f["path"]), int(f["size"]), int(f["mtime_ns"]),
                                      tuple(KeptFile(str(k["path"]), int(k["size"]), int(k["mtime_ns"]))
                                            for k in f["keep"]),
                                      bool(f["same_content"])),
                          str(f.get("checksum", "")), int(f.get("group", 0)))
                for f in doc["files"]
            )
        except (KeyError, TypeError, ValueError) as e:
            raise PlanError(f"the plan is damaged ({type(e).__name__}: {e})") from e
        return Plan(entries, str(doc.get("index", "")), str(doc.get("created", "")))


class PlanError(SimscanError):
    """A plan file that cannot be used."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "Export the plan again from the window.") -> None:
        super().__init__(message, hint)


def _shown(path: str) -> str:
    """A path in a comment: one line, quoted, control characters and undecodable bytes escaped as the
    command line shows them (``\\xff``, ``\\n``)."""
    return f'"{display_path(path, terminal=True)}"'


def plan_script(plan: Plan) -> str:
    """The plan as a shell script a person can read: a comment per file (what moves, what is kept),
    then ``exec simscan apply "$0"`` (the simscan that wrote it while it is there, else the one on the
    PATH), which checks every file again before it moves anything; the
    JSON the command reads follows, in a here-document the shell never runs."""
    lines = [
        "#!/bin/sh",
        f"# simscan plan, {plan.created}: move {len(plan.entries):,} files ({plan.size:,} bytes) to the trash,",
        "# each listed with the file(s) kept in its place.",
        "# Run it (sh THIS_FILE) or: simscan apply THIS_FILE [--dry-run]. simscan first checks every file",
        "# again and refuses any that changed since the scan, or whose kept copy did; the rest go to the",
        "# trash. Nothing is deleted. Deleting a line below does not change the plan: edit the JSON at the end.",
        "#",
    ]
    for e in plan.entries:
        lines.append(f"# trash {_shown(e.target.path)}")
        lines.extend(f"#   keep {_shown(k.path)}" for k in e.target.kept[:3])
        if len(e.target.kept) > 3:
            lines.append(f"#   keep … and {len(e.target.kept) - 3} more")
    if sys.executable:  # the simscan that wrote the plan, while it is there: `simscan` need not be on the PATH
        py = shlex.quote(sys.executable)  # (the README's first command installs it in a venv, not activated)
        lines.append(f'if [ -x {py} ]; then exec {py} -m simscan apply "$0" "$@"; fi')
    lines += [
        'exec simscan apply "$0" "$@"',
        "exit 127",
        f": <<'{_SH_MARK}'",
        json.dumps(plan.to_json(), ensure_ascii=True),
        _SH_MARK,
        "",
    ]
    return "\n".join(lines)


def write_plan(plan: Plan, path: str | os.PathLike[str], fmt: str | None = None) -> None:
    """Write ``plan`` as JSON or as a shell script (``fmt`` "json" / "sh"; by default from the
    suffix: ``.sh`` a script, anything else JSON).  A script is made executable."""
    fmt = fmt or ("sh" if str(path).endswith(".sh") else "json")
    text = plan_script(plan) if fmt == "sh" else json.dumps(plan.to_json(), indent=1, ensure_ascii=True) + "\n"
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    if fmt == "sh":
        os.chmod(path, os.stat(path).st_mode | 0o111)


def read_plan(path: str | os.PathLike[str]) -> Plan:
    """A plan written by :func:`write_plan` (either form).  Raises PlanError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"cannot read the plan {os.fspath(path)}: {getattr(e, 'strerror', None) or e}",
                        "Check the path.") from e
    if text.startswith("#!"):
        lines = text.splitlines()
        try:
            start = lines.index(f": <<'{_SH_MARK}'")
            text = lines[start + 1]
        except (ValueError, IndexError):
            raise PlanError("this shell script holds no simscan plan") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise PlanError(f"the plan is not valid JSON ({e})") from e
    return Plan.from_json(doc)


@dataclass(frozen=True)
class ApplyOutcome:
    trashed: list[str]  # moved to the trash
    refused: list[tuple[str, str]]  # (path, why): checked and left in place
    failed: list[tuple[str, str]]  # (path, why): the trash refused them; left in place
    missing: list[str]  # already gone


def check_entry(entry: PlanEntry, kept: KeptState | None = None) -> str:
    """Why ``entry`` must not be moved now ("" when it may): :func:`refusal`, and its bytes must be
    those the scan read (the checksum, read again: a size and time kept by ``cp -p`` or ``touch
    -r`` prove nothing)."""
    if entry.checksum and entry.target.kept:
        now = file_checksum(entry.target.path)
        if now is None:
            return "cannot be read to check it"
        if now != entry.checksum:
            return "its bytes changed since the scan" + RESCAN
    return refusal(entry.target, kept)


def apply_plan(
    plan: Plan,
    *,
    dry_run: bool = False,
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
    trash: Callable[[str], object] = trash_file,
) -> ApplyOutcome:
    """Check every file of ``plan`` (:func:`check_entry`) before any moves, then move the rest to the
    trash (``dry_run``: check only; ``trashed`` then lists what would move)."""
    refused: list[tuple[str, str]] = []
    missing: list[str] = []
    todo: list[str] = []
    states: dict[tuple[tuple[KeptFile, ...], bool], KeptState] = {}
    for i, e in enumerate(plan.entries):
        if cancel is not None and cancel.cancelled:
            raise Cancelled()
        if progress is not None:
            progress(Progress("verify", files_done=i, files_total=len(plan.entries), current=e.target.path))
        if not os.path.lexists(e.target.path):
            missing.append(e.target.path)
            continue
        key = (e.target.kept, e.target.same_content)
        if key not in states:
            states[key] = kept_state(*key)
        why = check_entry(e, states[key])
        if why:
            refused.append((e.target.path, why))
        else:
            todo.append(e.target.path)
    if dry_run:
        return ApplyOutcome(todo, refused, [], missing)
    trashed: list[str] = []
    failed: list[tuple[str, str]] = []
    for i, p in enumerate(todo):
        if progress is not None:
            progress(Progress("trash", files_done=i, files_total=len(todo), current=p))
        try:
            trash(p)
        except OSError as err:
            failed.append((p, err.strerror or str(err)))
        else:
            trashed.append(p)
    return ApplyOutcome(trashed, refused, failed, missing)


def plan_for_copies(groups: Sequence[Any], checksum_of: Callable[[str], str] = lambda p: "", index: str = "") -> Plan:
    """The plan that removes every extra copy of the copy sets of ``groups`` (``Group`` objects:
    each member that is not the file kept of its set), each with its set's kept file in its place.
    ``checksum_of(path)``: the checksum the scan stored (hex), "" when unknown."""
    entries: list[PlanEntry] = []
    for n, g in enumerate(groups, 1):
        keepers = {m.copy_set: m for m in g.members if m.copy_set and m.keeper}
        for m in g.members:
            if m.keeper or not m.copy_set:
                continue
            k = keepers[m.copy_set]
            target = TrashTarget(m.path, m.size, m.mtime_ns, (KeptFile(k.path, k.size, k.mtime_ns),), True)
            entries.append(PlanEntry(target, checksum_of(m.path), n))
    return Plan(tuple(entries), index)


def true_copies_only(
    plan: Plan, checksum_of: Callable[[str], str], progress: ProgressSink | None = None,
) -> tuple[Plan, list[PlanEntry]]:
    """``plan`` without the copies whose text is not exactly their kept file's, read now as the window's
    Ctrl+M reads them (:func:`true_copies`): a document beside its text or PDF, or a text with another
    indentation, spacing or wrapping has the same words but is not a true copy, and ``apply`` would refuse
    it.  Copies with the kept file's checksum are not read, nor copies gone since the scan (they stay in the plan:
    ``apply`` says they are gone and forgets them).  Those left out do not hold that text as read now, or one of
    the two cannot be read as text (too large, not decodable, the kept file gone).  ``progress``: the reading
    (:func:`true_copies`' "verify" phase).  Returns (the plan, the entries left out)."""
    content = [e for e in plan.entries
               if (not e.checksum or e.checksum != checksum_of(e.target.kept[0].path)) and os.path.lexists(e.target.path)]
    ok = true_copies([(e.target.path, e.target.kept[0].path) for e in content], progress or (lambda p: None),
                     CancelToken())
    false = [e for e, good in zip(content, ok) if not good]
    left_out = {id(e) for e in false}
    return Plan(tuple(e for e in plan.entries if id(e) not in left_out), plan.index, plan.created), false


def forget_under(index_path: Path | str | None, folders: Sequence[str]) -> int:
    """Forget every indexed file at or below ``folders`` (fingerprints and results; the files are
    not touched); returns how many were forgotten."""
    from simscan.index import Index

    forms = {os.path.realpath(f) for f in folders} | {os.path.abspath(f) for f in folders}
    with Index.open(index_path) as idx:
        ids = sorted({r[1] for r in idx.identities_under([os.fsencode(f) for f in forms]).values()})
        return idx.remove_ids(ids)


def forget_outside(index_path: Path | str | None, folders: Sequence[str]) -> int:
    """Forget every indexed file that is not at or below one of ``folders`` (all of them when
    ``folders`` is empty); returns how many were forgotten."""
    import numpy as np

    from simscan.index import Index
    from simscan.similarity.core import under_roots

    with Index.open(index_path) as idx:
        t = idx.files()
        outside = ~under_roots(list(t.paths), tuple(folders)) if folders else np.ones(len(t.paths), dtype=bool)
        return idx.remove_ids(np.asarray(t.ids)[outside].tolist())
