"""Cleaning: deleting expired CommitLog files and the queue and index files that pointed into them.

Rules (RocketMQ's `CleanCommitLogService`, with its keys):

* A CommitLog file other than the last one is expired `fileReservedTime`
  hours after its last record was stored. Expired files are deleted at the
  `deleteWhen` hours, or at any hour once disk use passes
  `diskMaxUsedSpaceRatio` percent.
* Past that ratio (or `diskSpaceCleanForciblyRatio`), with
  `cleanFileForciblyEnable`, files are deleted at once whether expired or
  not, oldest first, until use falls back below the ratio.
* Past `diskSpaceWarningLevelRatio` puts are refused (SERVICE_NOT_AVAILABLE)
  until use falls below it again.
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
from collections.abc import Callable
from typing import TYPE_CHECKING

from orbitmq.store.mapped_file import MappedFile

if TYPE_CHECKING:
    from orbitmq.store.store import DefaultMessageStore

log = logging.getLogger(__name__)

#: `disk_usage(path)` -> fraction of the disk holding `path` in use (0.0 .. 1.0).
DiskUsage = Callable[[str], float]

_DELETE_FILES_BATCH_MAX = 10
_HOUR_MS = 3_600_000


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
    """Runs a cleaning round every `clean_resource_interval` ms (owned by the store's loop)."""

    def __init__(self, store: DefaultMessageStore, disk_usage: DiskUsage) -> None:
        self.store = store
        self._disk_usage = disk_usage
        #: Puts are refused while True (disk over the warning ratio).
        self.disk_full = False
        self.last_ratio = 0.0

    async def run(self) -> None:
        interval = self.store.config.clean_resource_interval / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.clean_once()
            except OSError as exc:
                log.error("cleaning round failed: %s", exc)

    def check_disk(self) -> float:
        """Measure disk use and update the put watermark; returns the ratio."""
        config = self.store.config
        ratio = self._disk_usage(config.commit_log_dir)
        self.last_ratio = ratio
        warning = config.disk_space_warning_level_ratio
        if ratio > warning and not self.disk_full:
            log.error("disk use %.1f%% is over the warning level %.0f%%: refusing puts", ratio * 100, warning * 100)
            self.disk_full = True
        elif ratio < warning and self.disk_full:
            log.warning("disk use %.1f%% is back under the warning level: accepting puts", ratio * 100)
            self.disk_full = False
        return ratio

    def _over_max(self, ratio: float) -> bool:
        config = self.store.config
        return ratio > config.disk_max_used_space_ratio / 100.0 or ratio > config.disk_space_clean_forcibly_ratio

    async def clean_once(self, manual: bool = False) -> int:
        """One cleaning round; returns how many CommitLog files were deleted."""
        store = self.store
        config = store.config
        now = store.clock_ms()
        ratio = self.check_disk()
        space_full = self._over_max(ratio)
        hour = time.localtime(now / 1000).tm_hour
        if not (manual or space_full or hour in config.delete_hours):
            self._clean_logics(now)
            return 0
        reserved_ms = config.file_reserved_time * _HOUR_MS
        deleted = 0
        log_files = store.commitlog.log
        while deleted < _DELETE_FILES_BATCH_MAX and len(log_files.files) > 1:
            first = log_files.files[0]
            at_once = config.clean_file_forcibly_enable and self._over_max(ratio)
            if not (at_once or now >= _last_write_ms(first) + reserved_ms):
                break
            if not log_files.delete_first(config.destroy_mapped_file_interval_forcibly, store.clock_ms()):
                break  # held by a reader; retried next round until forced
            deleted += 1
            log.info("deleted CommitLog file %s", first.file_name)
            self._clean_logics(now)
            await asyncio.sleep(config.delete_commit_log_files_interval / 1000.0)
            ratio = self.check_disk()
        self._clean_logics(now)
        return deleted

    def _clean_logics(self, now: int) -> None:
        """Drop ConsumeQueue and index files below the CommitLog's min offset."""
        store = self.store
        min_phys = store.commitlog.min_offset
        forcibly = store.config.destroy_mapped_file_interval_forcibly
        for cq in store.queues:
            while cq.delete_expired_file(min_phys, forcibly, now):
                pass
            cq.correct_min_offset(min_phys)
        if store.index is not None:
            store.index.delete_expired_files(min_phys)


def _last_write_ms(mf: MappedFile) -> int:
    """When the file was last written: its newest record's store time, else its mtime."""
    if mf.last_store_timestamp:
        return mf.last_store_timestamp
    try:
        return int(os.path.getmtime(mf.path) * 1000)
    except OSError:
        return 0
