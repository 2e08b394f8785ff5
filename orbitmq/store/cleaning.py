"""Cleaning: deleting expired CommitLog files and the queue and index files that pointed into them.

Rules (RocketMQ's `CleanCommitLogService`, with its keys, and one deliberate difference):

* A CommitLog file other than the last one is expired `fileReservedTime`
  hours after its last record was stored. Expired files are deleted at the
  `deleteWhen` hours, or at any hour once disk use passes
  `diskMaxUsedSpaceRatio` percent or `diskSpaceCleanForciblyRatio`.
* A file that has not expired is never deleted, however full the disk.
  Past `diskSpaceCleanForciblyRatio` the store frees what it may (expired
  CommitLog files, then the ConsumeQueue and index files below the new min
  offset); when nothing expired is left and use is still past that ratio,
  puts are refused (SERVICE_NOT_AVAILABLE, "disk full") until use falls back
  below it or files expire. RocketMQ differs here: past the ratio it sets
  `cleanImmediately` and, with `cleanFileForciblyEnable` (on by default),
  deletes the oldest files whether expired or not, so acknowledged messages
  still inside their retention are lost to whatever filled the disk (another
  process, or a client creating topics). Here the retention is a promise:
  the operator frees space or shortens `fileReservedTime`, and a full disk
  costs availability, never acknowledged data. `cleanFileForciblyEnable`
  is accepted for broker.conf compatibility and no longer deletes retained
  files.
* Past `diskSpaceWarningLevelRatio` puts are refused (SERVICE_NOT_AVAILABLE)
  until use falls below it again, as in RocketMQ.
* One file at a time, `deleteCommitLogFilesInterval` ms apart, at most ten
  per round. A file a reader holds is deleted once released or, at the
  latest, `destroyMapedFileIntervalForcibly` ms after the first attempt.
* Then ConsumeQueue files whose entries all point below the CommitLog's new
  min offset go, queue min offsets move forward, and index files below it go.

The clock and the disk-use figure are injected, so tests need neither sleep
nor a full disk.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from orbitmq.store.commitlog import CommitLog
from orbitmq.store.config import StoreConfig
from orbitmq.store.consumequeue import ConsumeQueue
from orbitmq.store.mapped_file import MappedFile

log = logging.getLogger(__name__)

#: `disk_usage(path)` -> fraction of the disk holding `path` in use (0.0 .. 1.0).
DiskUsage = Callable[[str], float]

_DELETE_FILES_BATCH_MAX = 10
_HOUR_MS = 3_600_000


class ExpiringIndex(Protocol):
    """The index as cleaning sees it (IndexService)."""

    def delete_expired_files(self, min_commit_log_offset: int) -> int: ...


def disk_used_ratio(path: str) -> float:
    """Fraction of the file system holding `path` that is in use."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    usage = shutil.disk_usage(path)
    return usage.used / usage.total if usage.total else 0.0


class CleanService:
    """Runs a cleaning round every `clean_resource_interval` ms (owned by the store's loop).

    Its collaborators are exactly what it reads or deletes: the CommitLog,
    the ConsumeQueues (any iterable; iterated anew each round), the index,
    the clock and the disk-use figure.
    """

    def __init__(
        self,
        config: StoreConfig,
        commitlog: CommitLog,
        queues: Iterable[ConsumeQueue],
        index: ExpiringIndex | None,
        clock_ms: Callable[[], int],
        disk_usage: DiskUsage,
        on_deleted: Callable[[int], object] | None = None,
    ) -> None:
        #: Told the CommitLog's new min offset after a round deleted files (the epoch file).
        self._on_deleted = on_deleted
        self._config = config
        self._commitlog = commitlog
        self._queues = queues
        self._index = index
        self._clock_ms = clock_ms
        self._disk_usage = disk_usage
        #: Disk use is over the warning ratio.
        self._over_warning = False
        #: Disk use is over the clean-forcibly ratio and nothing expired is left to delete.
        self._nothing_to_free = False
        self.last_ratio = 0.0
        #: Rounds still to run as if at deleteWhen (DELETE_EXPIRED_COMMITLOG; RocketMQ's
        #: manualDeleteFileSeveralTimes).
        self.manual_rounds = 0
        #: Set when update_config changes clean_resource_interval (wakes `run`).
        self._interval_changed = asyncio.Event()

    @property
    def disk_full(self) -> bool:
        """Puts are refused while True (see the module's rules)."""
        return self._over_warning or self._nothing_to_free

    @property
    def full_remark(self) -> str:
        """Why puts are refused, fit for a response remark ("" when they are not)."""
        config = self._config
        if self._over_warning:
            return (
                f"disk is full: {self.last_ratio:.0%} used, over the warning level "
                f"{config.disk_space_warning_level_ratio:.0%}"
            )
        if self._nothing_to_free:
            return (
                f"disk is full: {self.last_ratio:.0%} used, over the clean-forcibly level "
                f"{config.disk_space_clean_forcibly_ratio:.0%}, and every CommitLog file is within "
                f"its retention of {config.file_reserved_time} h"
            )
        return ""

    async def run(self) -> None:
        """A round every `clean_resource_interval` ms, read anew for each wait: a new interval
        (UPDATE_BROKER_CONFIG) ends the wait under way and starts one of the new length."""
        while True:
            interval = self._config.clean_resource_interval / 1000.0
            self._interval_changed.clear()
            try:
                await asyncio.wait_for(self._interval_changed.wait(), timeout=interval)
            except TimeoutError:
                await self.run_round()

    async def run_round(self) -> int:
        """One periodic round: as at deleteWhen while manual rounds are left, else by the rules."""
        manual = self.manual_rounds > 0
        if manual:
            self.manual_rounds -= 1
        try:
            return await self.clean_once(manual)
        except OSError as exc:
            log.error("cleaning round failed: %s", exc)
            return 0

    def check_disk(self) -> float:
        """Measure disk use and update the put watermarks; returns the ratio."""
        config = self._config
        ratio = self._disk_usage(config.commit_log_dir)
        self.last_ratio = ratio
        warning = config.disk_space_warning_level_ratio
        if ratio > warning and not self._over_warning:
            log.error("disk use %.1f%% is over the warning level %.0f%%: refusing puts", ratio * 100, warning * 100)
            self._over_warning = True
        elif ratio < warning and self._over_warning:
            log.warning("disk use %.1f%% is back under the warning level: accepting puts", ratio * 100)
            self._over_warning = False
        if self._nothing_to_free and ratio <= config.disk_space_clean_forcibly_ratio:
            log.warning("disk use %.1f%% is back under the clean-forcibly level: accepting puts", ratio * 100)
            self._nothing_to_free = False
        return ratio

    def _over_max(self, ratio: float) -> bool:
        config = self._config
        return ratio > config.disk_max_used_space_ratio / 100.0 or ratio > config.disk_space_clean_forcibly_ratio

    async def clean_once(self, manual: bool = False) -> int:
        """One cleaning round; returns how many CommitLog files were deleted."""
        config = self._config
        now = self._clock_ms()
        ratio = self.check_disk()
        hour = time.localtime(now / 1000).tm_hour
        if not (manual or self._over_max(ratio) or hour in config.delete_hours):
            self._clean_logics(now)
            return 0
        reserved_ms = config.file_reserved_time * _HOUR_MS
        deleted = 0
        log_files = self._commitlog.log
        retained = False
        while deleted < _DELETE_FILES_BATCH_MAX and len(log_files.files) > 1:
            first = log_files.files[0]
            if now < _last_write_ms(first) + reserved_ms:
                retained = True  # within its retention: never deleted, however full the disk
                break
            if not log_files.delete_first(config.destroy_mapped_file_interval_forcibly, self._clock_ms()):
                break  # held by a reader; retried next round until forced
            deleted += 1
            log.info("deleted CommitLog file %s", first.file_name)
            self._clean_logics(now)
            await asyncio.sleep(config.delete_commit_log_files_interval / 1000.0)
            ratio = self.check_disk()
        self._clean_logics(now)
        if deleted:
            if self._on_deleted is not None:
                self._on_deleted(self._commitlog.min_offset)
            ratio = self.check_disk()
        self._note_nothing_to_free(ratio, retained or len(log_files.files) <= 1)
        return deleted

    def update_config(self, config: StoreConfig) -> None:
        """Use new retention, watermark and pacing settings from the next round on, and a new
        cleanResourceInterval from now on."""
        interval_changed = config.clean_resource_interval != self._config.clean_resource_interval
        self._config = config
        if interval_changed:
            self._interval_changed.set()

    def _note_nothing_to_free(self, ratio: float, only_retained_left: bool) -> None:
        """Refuse puts when the disk is past the clean-forcibly ratio and all that is left is retained."""
        limit = self._config.disk_space_clean_forcibly_ratio
        stuck = ratio > limit and only_retained_left
        if stuck and not self._nothing_to_free:
            log.error(
                "disk use %.1f%% is over the clean-forcibly level %.0f%% and every CommitLog file is "
                "within fileReservedTime: refusing puts rather than deleting retained messages",
                ratio * 100, limit * 100,
            )
            self._nothing_to_free = True
        elif not stuck and self._nothing_to_free:
            log.warning("expired CommitLog files can be deleted again: accepting puts")
            self._nothing_to_free = False

    def _clean_logics(self, now: int) -> None:
        """Drop ConsumeQueue and index files below the CommitLog's min offset."""
        min_phys = self._commitlog.min_offset
        forcibly = self._config.destroy_mapped_file_interval_forcibly
        for cq in self._queues:
            while cq.delete_expired_file(min_phys, forcibly, now):
                pass
            cq.correct_min_offset(min_phys)
        if self._index is not None:
            self._index.delete_expired_files(min_phys)


def _last_write_ms(mf: MappedFile) -> int:
    """When the file was last written: its newest record's store time, else its mtime."""
    if mf.last_store_timestamp:
        return mf.last_store_timestamp
    try:
        return int(os.path.getmtime(mf.path) * 1000)
    except OSError:
        return 0
