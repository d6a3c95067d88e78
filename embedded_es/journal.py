"""The write journal: an acknowledged write survives the engine's death.

noida keeps documents in memory and rewrites ``noida/elasticsearch.json`` about a second after writes
go quiet (a temp file renamed over it, never fsynced), so a SIGKILL of the engine lost the writes it
had acknowledged in the last second. The gateway now answers a write only after the request is in
this journal, fsynced:

- **What is journaled:** every engine request that may change what the engine persists (documents,
  bulk, by-query, reindex, index/mapping/settings/alias/template changes, and every request the
  gateway does not know to be a read), once the engine has answered it with success (a by-query or
  reindex conflict too: it may have changed some documents first). Auto-generated ids are pinned
  (a replayed ``POST /i/_doc`` becomes ``PUT /i/_doc/<the id the client got>``), so a replay creates
  nothing twice.
- **Order:** writes reach the engine one at a time (an ``asyncio.Lock`` around the engine request
  and the append), so the journal's order is the order the engine applied them in; their fsyncs
  are grouped (one ``fdatasync`` for every write appended while the previous one ran). Reads never
  wait for the lock.
- **Base + journal = state.** ``journal/base-<M>.json`` is a copy (a hard link) of an engine
  snapshot that holds exactly the journal's records up to ``M``; the segments ``journal/<seq>.log``
  hold the records after it. On start the base is put back in place and every record after ``M``
  is sent to the engine again, in order: exactly once, from the state they were first applied to,
  so a scripted update is not applied twice and sequence numbers come out the same.
- **Compaction:** a new base is taken once writes have been quiet for a second and the journal
  holds FOLD_BYTES or a record FOLD_AFTER seconds old (each fold costs the engine one more snapshot
  of everything, so not after every burst), or at once past ``max_bytes``, or DELETE_FOLD_AFTER after
  a delete whatever the traffic (the journal holds a forgotten document's text until it is folded):
  the gateway stores a marker (the stored script ``embedded_es_journal``, whose source names the last
  record) and waits for the engine's next snapshot. A snapshot that holds the marker, taken while no write
  was sent after it, holds exactly the records up to it: it is hard-linked as the new base and the
  older segments are deleted. When writes are quiet this costs them nothing (the attempt is dropped
  if a write arrives); when the journal passes ``EMBEDDED_ES_JOURNAL_MAX_BYTES``, or a delete has waited
  DELETE_FOLD_AFTER, writes are held until the snapshot lands (the engine snapshots about every second
  while it has changes, under any write traffic). A clean stop makes the engine's final snapshot the base.

A record is ``>III`` (header length, body length, CRC-32 of both) then a JSON header
(``seq``, ``method``, ``path``, ``content_type``) and the body as sent. A torn last record (a crash
during its append, before its fsync, so never acknowledged) ends the replay and is cut off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import struct
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from . import routes, wire
from .private_files import DIR_MODE, FILE_MODE

log = logging.getLogger(__name__)

MARKER_ID = "embedded_es_journal"
_MARKER_SOURCE = "embedded_es journal mark {}"
_FRAME = struct.Struct(">III")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_BASE = re.compile(r"^base-(\d{20})\.(json|empty)$")
_TAIL_BYTES = 1 << 20  # the stored scripts come after the indices in noida's snapshot
#: "interval": a write is answered once appended (in the kernel's page cache: no process death loses it)
#: and fsynced within SYNC_INTERVAL; "request": answered only after its fsync (survives an OS crash too).
SYNC_MODES = ("interval", "request")
SYNC_INTERVAL = 0.1
#: A quiet fold waits until the journal holds this much, or its oldest record is FOLD_AFTER seconds old:
#: each fold makes the engine snapshot once more (it rewrites every document), so not after every burst.
FOLD_BYTES = 1 << 20
FOLD_AFTER = 30.0
#: A journaled delete (a forget) is folded by a fold that holds writes once it is this old, whatever other
#: tenants write: the journal holds the deleted documents' text until a fold, and a busy tenant would keep
#: a quiet fold from ever happening. The wait lets the rest of a forget's burst of deletes join the fold.
DELETE_FOLD_AFTER = 1.0

#: Engine requests that change nothing the engine persists (besides GET and HEAD).
READ_ACTIONS = frozenset(
    {
        routes.SEARCH,
        routes.SCROLL,
        routes.CLEAR_SCROLL,
        routes.GET,
        routes.MGET,
        routes.MSEARCH,
        routes.EXPLAIN,
        routes.FIELD_CAPS,
        routes.OPEN_PIT,
        routes.CLOSE_PIT,
        routes.TERMS_ENUM,
        routes.REFRESH,
        routes.VALIDATE_QUERY,
        routes.GET_INDEX,
        routes.GET_MAPPING,
        routes.GET_SETTINGS,
        routes.GET_ALIASES,
        routes.RESOLVE_INDEX,
        routes.INDEX_STATS,
    }
)
#: Path segments of read-only endpoints the gateway's route table does not list (the superuser's).
_READ_SEGMENTS = frozenset(
    {
        "_search",
        "_msearch",
        "_count",
        "_mget",
        "_explain",
        "_field_caps",
        "_terms_enum",
        "_validate",
        "_pit",
        "_refresh",
        "_flush",
        "_analyze",
        "_cache",
        "_rank_eval",
        "_render",
        "_termvectors",
        "_mtermvectors",
        "_async_search",
        "_knn_search",
        "_resolve",
        "_stats",
        "_nodes",
        "_cat",
        "_health_report",
        "_sql",
        "_eql",
        "_query",
        "_simulate",
    }
)
_PARTIAL_ON_CONFLICT = frozenset({routes.DELETE_BY_QUERY, routes.UPDATE_BY_QUERY, routes.REINDEX})


class Answer(Protocol):
    status: int
    body: bytes


Send = Callable[[str, str, "bytes | None", "str | None"], Awaitable[Answer]]


def write_action(method: str, path_qs: str) -> str | None:
    """The action of an engine request that may change persisted state ("write" when unknown), else None."""
    if method in ("GET", "HEAD"):
        return None
    route = routes.classify(method, path_qs)
    if route.action in READ_ACTIONS:
        return None
    if route.action is None:
        segments = path_qs.split("?", 1)[0].split("/")
        if any(s in _READ_SEGMENTS for s in segments):
            return None
        return "write"
    return route.action


def _deletes(method: str, path_qs: str, body: bytes | None) -> bool:
    """Whether a journaled request deletes documents (their text then lingers in the journal until a fold)."""
    path = path_qs.split("?", 1)[0]
    return (
        method == "DELETE"
        or path.endswith("/_delete_by_query")
        or (path.endswith("/_bulk") and body is not None and b'"delete"' in body)
    )


def _kept(action: str, status: int) -> bool:
    return 200 <= status < 300 or (status == 409 and action in _PARTIAL_ON_CONFLICT)


def _pin_ids(action: str, method: str, path_qs: str, body: bytes | None, answer: Any) -> tuple[str, str, bytes | None]:
    """The request with every engine-generated ``_id`` written in, so that a replay makes the same document."""
    try:
        return _pinned(action, method, path_qs, body, answer)
    except (ValueError, TypeError, AttributeError, StopIteration):  # a body the engine took but we cannot read
        log.warning("embedded_es journal: could not pin the ids of %s %s; journaled as sent", method, path_qs)
        return method, path_qs, body


def _pinned(action: str, method: str, path_qs: str, body: bytes | None, answer: Any) -> tuple[str, str, bytes | None]:
    if action == routes.INDEX_OP_INDEX and method == "POST":
        route = routes.classify(method, path_qs)
        if route.doc_id is None and isinstance(answer, dict) and isinstance(answer.get("_id"), str):
            path, _, query = path_qs.partition("?")
            pinned = f"{path.rstrip('/')}/{quote(answer['_id'], safe='')}"
            return "PUT", pinned + (f"?{query}" if query else ""), body
    if action == routes.BULK and body and isinstance(answer, dict) and isinstance(answer.get("items"), list):
        lines = body.split(b"\n")
        items = iter(answer["items"])
        changed = False
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            if not line:
                i += 1
                continue
            meta = json.loads(line)
            op, spec = next(iter(meta.items()))
            item = next(items, None)
            if op in ("index", "create") and isinstance(spec, dict) and "_id" not in spec:
                result = item.get(op) if isinstance(item, dict) else None
                if isinstance(result, dict) and isinstance(result.get("_id"), str):
                    lines[i] = wire.dumps({op: {**spec, "_id": result["_id"]}})
                    changed = True
            i += 2 if op in ("index", "create", "update") else 1
        if changed:
            return method, path_qs, b"\n".join(lines)
    return method, path_qs, body


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_or_copy(src: Path, dst: Path) -> None:
    """``dst`` becomes the file ``src`` names now: a hard link (the engine replaces its snapshot by rename,
    never in place), or a copy read through one open descriptor where links are refused."""
    try:
        os.link(src, dst)
    except FileNotFoundError:
        raise
    except OSError:
        with open(src, "rb") as fin, open(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as out:
            shutil.copyfileobj(fin, out, 1 << 20)


class ReplayFailed(RuntimeError):
    pass


class Journal:
    def __init__(
        self, *, directory: Path, snapshot: Path, max_bytes: int | None = None, sync: str | None = None
    ) -> None:
        self.directory = directory
        self.sync = sync or os.environ.get("EMBEDDED_ES_JOURNAL_SYNC", "interval")
        if self.sync not in SYNC_MODES:
            raise ValueError(f"EMBEDDED_ES_JOURNAL_SYNC must be one of {', '.join(SYNC_MODES)}, not {self.sync!r}")
        self.snapshot = snapshot  # the engine's own file: <data-dir>/noida/elasticsearch.json
        self.max_bytes = max_bytes or int(os.environ.get("EMBEDDED_ES_JOURNAL_MAX_BYTES", 64 << 20))
        self.send: Send | None = None  # the gateway's raw engine request, set when it opens
        self._lock = asyncio.Lock()
        self._open = asyncio.Event()  # cleared while the engine is being restarted (paused())
        self._open.set()
        self._sync_lock = asyncio.Lock()
        self._fd: int | None = None
        self._base = 0  # the last record the base holds
        self._seq = 0  # the last record appended
        self._durable = 0  # the last record fsynced
        self._started = 0  # writes sent to the engine (compaction needs none after its marker)
        self._bytes = 0  # journal bytes past the base
        self._last_write = 0.0
        self._first_unfolded = 0.0  # when the oldest record past the base was appended (this run)
        self.fold_after = float(os.environ.get("EMBEDDED_ES_JOURNAL_FOLD_AFTER", FOLD_AFTER))
        self._tried = -1  # the record a quiet compaction last tried to fold (not again until a new one)
        # The last journaled delete and when the oldest delete not yet folded was appended: the journal still
        # holds the deleted documents' text, and forgetting must leave no copy of it (issues 24 and 32).
        self._delete_seq = 0
        self._delete_since = 0.0
        self._hold_not_before = 0.0  # a fold that holds writes failed: not again before this time

    # ------------------------------------------------------------------ start
    def _bases(self) -> list[tuple[int, Path]]:
        found = []
        for entry in self.directory.iterdir():
            match = _BASE.match(entry.name)
            if match:
                found.append((int(match.group(1)), entry))
        return sorted(found)

    def _segments(self) -> list[tuple[int, Path]]:
        found = []
        for entry in self.directory.iterdir():
            match = _SEGMENT.match(entry.name)
            if match:
                found.append((int(match.group(1)), entry))
        return sorted(found)

    def _records(self) -> list[tuple[dict[str, Any], bytes]]:
        """Every intact record after the base, in order; a torn tail is cut off its segment."""
        out = []
        for _first, path in self._segments():
            data = path.read_bytes()
            pos = 0
            while pos < len(data):
                if pos + _FRAME.size > len(data):
                    break
                head_len, body_len, crc = _FRAME.unpack_from(data, pos)
                start = pos + _FRAME.size
                end = start + head_len + body_len
                if end > len(data) or zlib.crc32(data[start:end]) != crc:
                    break
                header = json.loads(data[start : start + head_len])
                if header["seq"] > self._base:
                    out.append((header, data[start + head_len : end]))
                pos = end
            if pos < len(data):
                log.warning("embedded_es journal: cutting a torn record off %s at byte %d", path.name, pos)
                with open(path, "r+b") as fh:
                    fh.truncate(pos)
                    os.fsync(fh.fileno())
        return out

    def restore(self) -> list[tuple[dict[str, Any], bytes]]:
        """Before the engine starts: put the base in place if records are to be replayed on it.

        Returns the records to replay. A data directory without a journal (a new one, or one from
        before the journal existed) takes the engine's current snapshot (or none) as its base.
        """
        self.directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        bases = self._bases()
        if not bases:
            self._base_set_from_snapshot(0)
            bases = self._bases()
        self._base, base = bases[-1]
        for _seq, older in bases[:-1]:
            older.unlink()
        records = self._records()
        expected = [self._base + 1 + i for i in range(len(records))]
        if [h["seq"] for h, _ in records] != expected:
            print(
                f"embedded_es: the write journal in {self.directory} has a gap after record {self._base}: "
                "writes acknowledged then may be missing",
                file=sys.stderr,
                flush=True,
            )
        self._seq = self._durable = max([self._base, *(h["seq"] for h, _ in records)])
        for header, body in records:  # deletes replayed from the journal are folded as soon as new ones
            if _deletes(header["method"], header["path"], body):
                self._delete_noted(header["seq"])
        self._bytes = sum(_FRAME.size + len(json.dumps(h)) + len(b) for h, b in records)
        if records:
            tmp = self.snapshot.with_name(self.snapshot.name + ".restoring")
            self.snapshot.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            if base.suffix == ".empty":
                self.snapshot.unlink(missing_ok=True)
            else:
                with open(base, "rb") as src, open(tmp, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
                    dst.flush()
                    os.fsync(dst.fileno())
                os.replace(tmp, self.snapshot)
            _fsync_dir(self.snapshot.parent)
        return records

    def _base_set_from_snapshot(self, seq: int) -> None:
        """Make the engine's current snapshot (or its absence) the base holding records up to ``seq``."""
        name = f"base-{seq:020d}"
        tmp = self.directory / f"{name}.tmp"
        tmp.unlink(missing_ok=True)
        try:
            _link_or_copy(self.snapshot, tmp)
            final = self.directory / f"{name}.json"
        except FileNotFoundError:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE))
            final = self.directory / f"{name}.empty"
        os.replace(tmp, final)
        _fsync_dir(self.directory)
        self._base_adopted(seq, final)

    def _base_adopted(self, seq: int, final: Path) -> None:
        """``final`` holds every record up to ``seq``: drop the older bases and the folded segments.

        Segments are closed at every marker, so one that starts at or before ``seq`` ends there too.
        """
        self._base = seq
        self._first_unfolded = 0.0 if self._seq == seq else time.monotonic()
        if seq >= self._delete_seq:
            self._delete_since = 0.0
        for _older_seq, older in self._bases():
            if older != final:
                older.unlink()
        for first, path in self._segments():
            if first <= seq:
                path.unlink()
        self._bytes = sum(p.stat().st_size for _f, p in self._segments())

    def replay(self, engine_url: str, records: list[tuple[dict[str, Any], bytes]]) -> int:
        """After the engine started on the base: send the records again, in order (blocking)."""
        refused = 0
        for header, body in records:
            request = urllib.request.Request(  # noqa: S310 (the engine's own http:// URL)
                engine_url + header["path"], data=body or None, method=header["method"]
            )
            if body and header.get("content_type"):
                request.add_header("content-type", header["content_type"])
            try:
                with urllib.request.urlopen(request, timeout=120) as resp:  # noqa: S310
                    resp.read()
            except urllib.error.HTTPError as exc:
                exc.read()
                if exc.code >= 500:
                    raise ReplayFailed(
                        f"the engine answered {exc.code} to journal record {header['seq']} "
                        f"({header['method']} {header['path']})"
                    ) from exc
                refused += 1
                log.warning(
                    "embedded_es journal: record %s (%s %s) was refused on replay (%s)",
                    header["seq"],
                    header["method"],
                    header["path"],
                    exc.code,
                )
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                raise ReplayFailed(f"the engine did not answer journal record {header['seq']}: {exc}") from exc
        if refused:
            print(
                f"embedded_es: {refused} of {len(records)} journal records were refused on replay (see the log)",
                file=sys.stderr,
                flush=True,
            )
        return len(records)

    # ----------------------------------------------------------------- writes
    async def write(self, method: str, path_qs: str, body: bytes | None, content_type: str | None, send: Send) -> Any:
        """Send an engine request; a write the engine took is journaled and fsynced before it returns."""
        if not self._open.is_set():
            await self._open.wait()
        action = write_action(method, path_qs)
        if action is None:
            return await send(method, path_qs, body, content_type)
        async with self._lock:
            self._started += 1
            answer = await send(method, path_qs, body, content_type)
            if not _kept(action, answer.status):
                return answer
            try:
                parsed = json.loads(answer.body) if action in (routes.INDEX_OP_INDEX, routes.BULK) else None
            except ValueError:
                parsed = None
            seq = self._append(*_pin_ids(action, method, path_qs, body, parsed), content_type)
            if _deletes(method, path_qs, body):
                self._delete_noted(seq)
        if self.sync == "request":
            await self._sync(seq)
        return answer

    def _delete_noted(self, seq: int) -> None:
        self._delete_seq = seq
        if self._delete_since == 0.0:
            self._delete_since = time.monotonic()

    def _append(self, method: str, path_qs: str, body: bytes | None, content_type: str | None) -> int:
        seq = self._seq + 1
        header = json.dumps(
            {"seq": seq, "method": method, "path": path_qs, "content_type": content_type}, separators=(",", ":")
        ).encode()
        payload = header + (body or b"")
        frame = _FRAME.pack(len(header), len(body or b""), zlib.crc32(payload)) + payload
        if self._fd is None:
            path = self.directory / f"{seq:020d}.log"
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
            _fsync_dir(self.directory)
        view = memoryview(frame)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._seq = seq
        self._bytes += len(frame)
        self._last_write = time.monotonic()
        if self._first_unfolded == 0.0:
            self._first_unfolded = self._last_write
        return seq

    async def _sync(self, seq: int) -> None:
        """Group commit: one fdatasync covers every record appended before it began."""
        async with self._sync_lock:
            if self._durable >= seq:
                return
            target, fd = self._seq, self._fd
            assert fd is not None
            await asyncio.to_thread(os.fdatasync, fd)
            self._durable = max(self._durable, target)

    async def segment_close(self) -> None:
        """Close the current segment, fsynced (held ``paused()``, before a restart)."""
        self._started += 1  # a fold in progress must not take a snapshot of the engine being replaced
        await self._rotate()

    async def _rotate(self) -> None:
        """Close the current segment (fsynced); the next record starts a new one. Under ``_lock``."""
        async with self._sync_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                await asyncio.to_thread(os.fdatasync, fd)
                os.close(fd)
            self._durable = self._seq

    # ------------------------------------------------------------- compaction
    async def compact(self, *, hold_writes: bool, timeout: float = 15.0) -> bool:
        """Fold the journal into a new base (see the module docstring). True when it did."""
        assert self.send is not None
        async with self._lock:
            mark = self._seq
            if mark == self._base:
                return True
            before = self._snapshot_id()  # that file cannot hold the marker: no need to read it
            source = _MARKER_SOURCE.format(mark)
            answer = await self.send(
                "PUT",
                f"/_scripts/{MARKER_ID}",
                wire.dumps({"script": {"lang": "mustache", "source": source}}),
                "application/json",
            )
            if answer.status != 200:
                log.warning("embedded_es journal: the engine refused the marker (%s)", answer.status)
                return False
            await self._rotate()
            started = self._started
            if hold_writes:
                return await self._fold(mark, started, timeout, before)
        return await self._fold(mark, started, timeout, before)

    def _snapshot_id(self) -> tuple[int, int] | None:
        try:
            stat = self.snapshot.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns

    async def _fold(self, mark: int, started: int, timeout: float, seen: tuple[int, int] | None) -> bool:
        needle = json.dumps(_MARKER_SOURCE.format(mark)).encode()
        tmp = self.directory / "base.linking"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._started != started:
                return False  # a write reached the engine: a later snapshot may hold it
            try:
                stat = self.snapshot.stat()
            except FileNotFoundError:
                stat = None
            if stat is not None and (stat.st_ino, stat.st_mtime_ns) != seen:
                seen = (stat.st_ino, stat.st_mtime_ns)
                tmp.unlink(missing_ok=True)
                try:
                    await asyncio.to_thread(_link_or_copy, self.snapshot, tmp)
                except FileNotFoundError:
                    continue
                if await asyncio.to_thread(self._holds, tmp, needle) and self._started == started:
                    await asyncio.to_thread(self._adopt, tmp, mark)
                    return True
                tmp.unlink(missing_ok=True)
            await asyncio.sleep(0.05)
        tmp.unlink(missing_ok=True)
        return False

    @staticmethod
    def _holds(path: Path, needle: bytes) -> bool:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - _TAIL_BYTES))
            tail = fh.read()
            if needle in tail:
                return True
            if size <= _TAIL_BYTES:
                return False
            fh.seek(0)
            return needle in fh.read()

    def _adopt(self, linked: Path, mark: int) -> None:
        with open(linked, "rb") as fh:
            os.fsync(fh.fileno())  # the engine never fsyncs its snapshot; the base must survive the OS
        final = self.directory / f"base-{mark:020d}.json"
        os.replace(linked, final)
        _fsync_dir(self.directory)
        self._base_adopted(mark, final)

    async def maintain(self, *, quiet: float = 1.0) -> None:
        """Runs with the gateway: fsyncs what was appended (``interval``) and starts the fold ``_fold_due``
        names: one when writes have gone quiet, or one that holds them (past ``max_bytes``, or a delete
        DELETE_FOLD_AFTER old)."""
        folding: asyncio.Task | None = None
        try:
            while True:
                await asyncio.sleep(SYNC_INTERVAL)
                if self._durable < self._seq and self._fd is not None:
                    try:
                        await self._sync(self._seq)
                    except OSError:
                        log.exception("embedded_es journal: fsync failed")
                if (folding is not None and not folding.done()) or self.send is None or self._seq == self._base:
                    continue
                due = self._fold_due(quiet)
                if due == "quiet":
                    self._tried = self._seq
                if due is not None:
                    folding = asyncio.create_task(self._fold_logged(hold_writes=due == "hold"))
        finally:
            if folding is not None:
                folding.cancel()

    def _fold_due(self, quiet: float) -> str | None:
        """Which fold to start now: "hold" (writes wait for the engine's next snapshot, about a second),
        "quiet" (dropped if a write arrives) or None."""
        now = time.monotonic()
        if now >= self._hold_not_before and (
            self._bytes > self.max_bytes
            or (self._delete_seq > self._base and now - self._delete_since >= DELETE_FOLD_AFTER)
        ):
            return "hold"
        if now - self._last_write < quiet or self._tried == self._seq:
            return None
        if self._bytes >= FOLD_BYTES or now - self._first_unfolded >= self.fold_after:
            return "quiet"
        return None

    async def _fold_logged(self, *, hold_writes: bool) -> None:
        folded = False
        try:
            folded = await self.compact(hold_writes=hold_writes)
        except Exception:  # the journal keeps every record: a failed fold only delays the next one
            log.exception("embedded_es journal: compaction failed")
        if hold_writes and not folded:
            self._hold_not_before = time.monotonic() + 30.0

    def stopped_cleanly(self) -> None:
        """The engine stopped on SIGINT and saved everything: its final snapshot is the new base."""
        if self._fd is not None:
            os.fdatasync(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._seq != self._base:
            self._base_set_from_snapshot(self._seq)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -------------------------------------------------------------- restarts
    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """While the engine is restarted and replayed: no request reaches it (reads would see half a replay)."""
        async with self._lock:
            self._open.clear()
            try:
                yield
            finally:
                self._open.set()
