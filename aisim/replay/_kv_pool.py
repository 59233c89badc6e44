"""A paged KV pool of fixed capacity with prefix caching over whole units and LRU eviction.

Pages are counted, not named: a request holds ``private_pages`` of its own plus, when prefix
caching is on, a prefix of shared ``CacheEntry`` units (``unit_pages`` pages each). A unit's
identity is interned from (parent unit, content), so two requests share a unit only when their
whole prefix up to it matches, like vLLM's block-hash chains. Entries no request references stay
cached and are evicted least-recently-released first when pages run out.

Fast path (``lazy_units``): units whose content is unique to one request (no trace ``hash_ids``
cover them) can only ever be matched by that request's own recompute. The pool counts them
(``KvHolding.lazy_units``) instead of interning an entry per unit; the owner turns them into
entries (``materialize``) before a release it may recompute from, and a final release (the
request finished or left the pool for good) puts them in the LRU as one anonymous run of units,
evicted unit by unit like the entries it stands for. Page counts, eviction order and every match
are the same as with one entry per unit (the step-by-step path, ``lazy_units=False``).

Lean tables: a unit whose content is one trace hash id (a prompt block of a Mooncake row) is
interned by that id (``_by_hash``, no key tuple) while no other cached unit carries the id; the
LRU is a list in release order where an entry taken back out leaves a stale copy that eviction
skips (compacted when stale copies are most of it), instead of an ordered dict keyed by id.
Matches, page counts and eviction order are those of one ``(parent, *content)`` table and one
ordered LRU (``tests/replay/test_replay_kv_pool.py`` compares them on random operations).
"""

from __future__ import annotations


class CacheEntry:
    """One cached unit: its chain key (parent entry id and content), a sequential id and how
    many requests hold it; or, in the LRU only, an anonymous run of ``units`` unique units
    nobody can match (``units`` > 0). A unit whose content is one trace hash id keeps the id
    (``hash_id`` >= 0) instead of a key tuple (see ``KvPool``)."""

    def __init__(
        self, entry_id: int, parent: int, content: tuple[int, ...], hash_id: int, units: int = 0
    ) -> None:
        self.entry_id = entry_id
        self.parent = parent
        self.content = content
        self.hash_id = hash_id
        self.refcount = 0
        self.units = units
        # Whether it sits in the pool's hash-id table (else in the key-tuple table).
        self.by_hash = False
        # LRU membership: evictable now, and how many copies of it the LRU queue holds (only
        # the last one counts; earlier ones are stale, see ``KvPool``).
        self.in_lru = False
        self.lru_copies = 0

    @property
    def key(self) -> tuple[int, ...]:
        """The interned chain key ``(parent, *content)``."""
        if self.hash_id >= 0:
            return (self.parent, self.hash_id)
        return (self.parent, *self.content)


class KvHolding:
    """The pages one request holds in one pool (reset when it leaves the pool)."""

    def __init__(self) -> None:
        self.shared: list[CacheEntry] = []
        self.private_pages = 0
        # Full units after ``shared`` that count as registered but have no entry yet (fast path).
        self.lazy_units = 0


class KvPool:
    """``total_pages`` pages of ``page_tokens`` tokens; invariant
    ``used + free + evictable == total`` with every count >= 0."""

    def __init__(
        self,
        total_pages: int,
        page_tokens: int,
        unit_tokens: int,
        prefix_caching: bool,
        lazy_units: bool = False,
    ) -> None:
        self.total_pages = total_pages
        self.page_tokens = page_tokens
        self.unit_tokens = unit_tokens
        self.unit_pages = unit_tokens // page_tokens
        self.prefix_caching = prefix_caching
        self.lazy_units = lazy_units and prefix_caching
        self.free_pages = total_pages
        self.evictable_pages = 0
        self.peak_used_pages = 0
        # Interned units: one trace hash id as content -> ``_by_hash[hash_id]`` while no other
        # unit with that id is cached, else (and any other content) ``_entries[key]``.
        self._by_hash: dict[int, CacheEntry] = {}
        self._entries: dict[tuple[int, ...], CacheEntry] = {}
        # The LRU queue: ``_lru[_lru_head:]`` in release order, holding stale copies of
        # entries re-referenced or released again since (``CacheEntry.lru_copies``).
        self._lru: list[CacheEntry] = []
        self._lru_head = 0
        self._lru_stale = 0
        # Compact the queue past this many stale copies (when they are most of it); drop its
        # consumed head past this many slots (when it is most of it).
        self.lru_compact_min = 1024
        self.lru_trim_min = 4096
        self._next_entry_id = 0

    @property
    def used_pages(self) -> int:
        return self.total_pages - self.free_pages - self.evictable_pages

    @property
    def available_pages(self) -> int:
        """Pages an allocation may take (free, then evicted cache entries)."""
        return self.free_pages + self.evictable_pages

    def pages_for(self, tokens: int) -> int:
        """Pages covering ``tokens`` tokens."""
        return -(-tokens // self.page_tokens)

    def extra_pages_needed(self, holding: KvHolding, tokens: int) -> int:
        """Pages ``holding`` must add to cover ``tokens`` tokens (0 when it already does)."""
        private_tokens = tokens - (len(holding.shared) + holding.lazy_units) * self.unit_tokens
        if private_tokens <= 0:
            return 0
        needed = (private_tokens + self.page_tokens - 1) // self.page_tokens - holding.private_pages
        return needed if needed > 0 else 0

    def grow(self, holding: KvHolding, tokens: int) -> bool:
        """Atomically extend ``holding`` to cover ``tokens`` tokens; False (nothing taken) if the
        pool cannot."""
        needed = self.extra_pages_needed(holding, tokens)
        if needed == 0:
            return True
        if needed > self.free_pages + self.evictable_pages:
            return False
        if self.free_pages < needed:
            self._evict_until_free(needed)
        self.free_pages -= needed
        holding.private_pages += needed
        used = self.used_pages
        if used > self.peak_used_pages:
            self.peak_used_pages = used
        return True

    def shrink(self, holding: KvHolding, tokens: int) -> None:
        """Release private pages beyond those covering ``tokens`` tokens (rejected SD slots)."""
        private_tokens = tokens - (len(holding.shared) + holding.lazy_units) * self.unit_tokens
        keep = (
            (private_tokens + self.page_tokens - 1) // self.page_tokens if private_tokens > 0 else 0
        )
        if holding.private_pages > keep:
            self.free_pages += holding.private_pages - keep
            holding.private_pages = keep

    def can_start(self, hits: list[CacheEntry], tokens: int) -> bool:
        """Whether an empty holding that would start with ``hits`` could then cover ``tokens``
        tokens. Does not change the pool (so a refused admission leaves the LRU order as it
        was, as vLLM checks free blocks before touching its prefix hits)."""
        private_tokens = tokens - len(hits) * self.unit_tokens
        needed = self.pages_for(private_tokens) if private_tokens > 0 else 0
        available = self.free_pages + self.evictable_pages
        for entry in hits:
            if entry.refcount == 0:
                # Acquiring an idle cached unit takes it out of the evictable pages.
                available -= self.unit_pages
        return needed <= available

    def match(self, keys: list[tuple[int, ...]]) -> list[CacheEntry]:
        """The cached entries for the longest prefix of ``keys`` (``keys[k]`` is unit k's
        content; its parent is implied by the chain). Does not change the pool."""
        hits: list[CacheEntry] = []
        if not self.prefix_caching:
            return hits
        parent = -1
        for content in keys:
            entry = self.lookup(parent, content)
            if entry is None:
                break
            hits.append(entry)
            parent = entry.entry_id
        return hits

    def lookup(self, parent: int, content: tuple[int, ...]) -> CacheEntry | None:
        """The cached entry with chain key ``(parent, *content)``, if any."""
        if len(content) == 1 and content[0] >= 0:
            return self.lookup_hash(parent, content[0])
        if not self._entries:
            return None
        return self._entries.get((parent, *content))

    def lookup_hash(self, parent: int, hash_id: int) -> CacheEntry | None:
        """``lookup(parent, (hash_id,))`` without building the key."""
        entry = self._by_hash.get(hash_id)
        if entry is not None and entry.parent == parent:
            return entry
        if not self._entries:
            return None
        return self._entries.get((parent, hash_id))

    def acquire(self, holding: KvHolding, hits: list[CacheEntry]) -> None:
        """Reference ``hits`` as the start of an empty ``holding`` (removing them from LRU)."""
        for entry in hits:
            self._ref(entry)
            holding.shared.append(entry)
        used = self.used_pages
        if used > self.peak_used_pages:
            self.peak_used_pages = used

    def register(self, holding: KvHolding, content: tuple[int, ...]) -> None:
        """Turn ``holding``'s first private unit (now fully computed) into a shared entry, or,
        when an identical entry exists, drop the duplicate pages and share that one."""
        if len(content) == 1 and content[0] >= 0:
            self.register_hash(holding, content[0])
            return
        parent = holding.shared[-1].entry_id if holding.shared else -1
        entry = self.lookup(parent, content)
        holding.private_pages -= self.unit_pages
        if entry is None:
            entry = CacheEntry(self._next_entry_id, parent, content, -1)
            self._next_entry_id += 1
            self._entries[(parent, *content)] = entry
        else:
            self.free_pages += self.unit_pages
        self._ref(entry)
        holding.shared.append(entry)

    def register_hash(self, holding: KvHolding, hash_id: int) -> None:
        """``register(holding, (hash_id,))`` for a unit that is exactly one trace hash block
        (``hash_id`` >= 0), kept in the hash-id table while no other cached unit has that id
        (no key tuple built)."""
        self.register_hashes(holding, [hash_id], 0, 1)

    def register_hashes(
        self, holding: KvHolding, hash_ids: list[int], start: int, end: int
    ) -> None:
        """``register_hash`` of ``hash_ids[start:end]`` in order (a prompt's hashed blocks)."""
        shared = holding.shared
        parent = shared[-1].entry_id if shared else -1
        unit_pages = self.unit_pages
        by_hash = self._by_hash
        for index in range(start, end):
            hash_id = hash_ids[index]
            holding.private_pages -= unit_pages
            primary = by_hash.get(hash_id)
            if primary is not None and primary.parent == parent:
                entry: CacheEntry | None = primary
            else:
                entry = self._entries.get((parent, hash_id)) if self._entries else None
            if entry is None:
                entry = CacheEntry(self._next_entry_id, parent, (), hash_id)
                self._next_entry_id += 1
                if primary is None:
                    entry.by_hash = True
                    by_hash[hash_id] = entry
                else:
                    self._entries[(parent, hash_id)] = entry
                entry.refcount = 1
            else:
                self.free_pages += unit_pages
                self._ref(entry)
            shared.append(entry)
            parent = entry.entry_id

    def register_lazy(self, holding: KvHolding, units: int) -> None:
        """Fast path: ``units`` more full units of ``holding`` (unique content, following its
        shared ones) count as registered without an entry (see the module docstring)."""
        holding.private_pages -= units * self.unit_pages
        holding.lazy_units += units

    def materialize(self, holding: KvHolding, contents: list[tuple[int, ...]]) -> None:
        """Give ``holding``'s lazy units their entries (``contents``: one key per lazy unit, in
        order), as ``register`` would have one by one."""
        assert len(contents) == holding.lazy_units, "one content key per lazy unit"
        holding.private_pages += holding.lazy_units * self.unit_pages
        holding.lazy_units = 0
        for content in contents:
            self.register(holding, content)

    def release(self, holding: KvHolding) -> None:
        """Give back everything ``holding`` has; its cached units become evictable, the last
        unit first in line (as vLLM frees a request's blocks in reverse order). Lazy units
        (unmatchable once their owner is done with this pool) go first, as one anonymous run."""
        self.free_pages += holding.private_pages
        holding.private_pages = 0
        if holding.lazy_units > 0:
            run = CacheEntry(self._next_entry_id, -1, (), -1, holding.lazy_units)
            self._next_entry_id += 1
            self._push(run)
            self.evictable_pages += holding.lazy_units * self.unit_pages
            holding.lazy_units = 0
        shared = holding.shared
        index = len(shared) - 1
        while index >= 0:
            entry = shared[index]
            entry.refcount -= 1
            if entry.refcount == 0:
                self._push(entry)
                self.evictable_pages += self.unit_pages
            index -= 1
        holding.shared = []

    def evictable(self) -> list[tuple[tuple[int, ...], int]]:
        """``(key, units)`` of the evictable entries, next evicted first (``units`` > 0: an
        anonymous run, key ``()``): the LRU queue read as eviction reads it, stale copies
        skipped (for tests)."""
        found: list[tuple[tuple[int, ...], int]] = []
        copies: dict[int, int] = {}
        lru = self._lru
        for index in range(self._lru_head, len(lru)):
            entry = lru[index]
            left = copies.get(entry.entry_id, entry.lru_copies) - 1
            copies[entry.entry_id] = left
            if left == 0 and entry.in_lru:
                found.append(((), entry.units) if entry.units > 0 else (entry.key, 0))
        return found

    def _push(self, entry: CacheEntry) -> None:
        """Queue ``entry`` last in the LRU."""
        entry.in_lru = True
        entry.lru_copies += 1
        self._lru.append(entry)

    def _ref(self, entry: CacheEntry) -> None:
        if entry.refcount == 0 and entry.in_lru:
            # Out of the LRU: its queued copy goes stale (skipped when reached).
            entry.in_lru = False
            self.evictable_pages -= self.unit_pages
            self._lru_stale += 1
            if (
                self._lru_stale > self.lru_compact_min
                and 2 * self._lru_stale > len(self._lru) - self._lru_head
            ):
                self._compact()
        entry.refcount += 1

    def _compact(self) -> None:
        """Drop the LRU queue's stale copies (order kept)."""
        kept: list[CacheEntry] = []
        lru = self._lru
        for index in range(self._lru_head, len(lru)):
            entry = lru[index]
            entry.lru_copies -= 1
            if entry.lru_copies == 0 and entry.in_lru:
                kept.append(entry)
        for entry in kept:
            entry.lru_copies = 1
        self._lru = kept
        self._lru_head = 0
        self._lru_stale = 0

    def _evict_until_free(self, needed: int) -> None:
        """Evict least recently released entries until ``needed`` pages are free (bounded by
        the number of evictable entries)."""
        unit_pages = self.unit_pages
        lru = self._lru
        head = self._lru_head
        while self.free_pages < needed and head < len(lru):
            entry = lru[head]
            head += 1
            entry.lru_copies -= 1
            if entry.lru_copies > 0 or not entry.in_lru:
                self._lru_stale -= 1
                continue
            entry.in_lru = False
            if entry.units > 0:
                # An anonymous run: evict as many of its units as are still needed.
                wanted = (needed - self.free_pages + unit_pages - 1) // unit_pages
                taken = wanted if wanted < entry.units else entry.units
                entry.units -= taken
                self.evictable_pages -= taken * unit_pages
                self.free_pages += taken * unit_pages
                if entry.units > 0:
                    # The rest stays first in line.
                    head -= 1
                    entry.in_lru = True
                    entry.lru_copies += 1
                continue
            if entry.by_hash:
                del self._by_hash[entry.hash_id]
            elif entry.hash_id >= 0:
                del self._entries[(entry.parent, entry.hash_id)]
            else:
                del self._entries[(entry.parent, *entry.content)]
            self.evictable_pages -= unit_pages
            self.free_pages += unit_pages
        if head > self.lru_trim_min and 2 * head > len(lru):
            del lru[:head]
            head = 0
        self._lru_head = head
