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
"""

from __future__ import annotations

from collections import OrderedDict


class CacheEntry:
    """One cached unit: its interned key, a sequential id and how many requests hold it; or, in
    the LRU only, an anonymous run of ``units`` unique units nobody can match (``units`` > 0)."""

    def __init__(self, entry_id: int, key: tuple[int, ...], units: int = 0) -> None:
        self.entry_id = entry_id
        self.key = key
        self.refcount = 0
        self.units = units


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
        self._entries: dict[tuple[int, ...], CacheEntry] = {}
        self._evictable: OrderedDict[int, CacheEntry] = OrderedDict()
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
            entry = self._entries.get(_chain_key(parent, content))
            if entry is None:
                break
            hits.append(entry)
            parent = entry.entry_id
        return hits

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
        parent = holding.shared[-1].entry_id if holding.shared else -1
        key = _chain_key(parent, content)
        entry = self._entries.get(key)
        holding.private_pages -= self.unit_pages
        if entry is None:
            entry = CacheEntry(self._next_entry_id, key)
            self._next_entry_id += 1
            self._entries[key] = entry
        else:
            self.free_pages += self.unit_pages
        self._ref(entry)
        holding.shared.append(entry)

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
            run = CacheEntry(self._next_entry_id, (), holding.lazy_units)
            self._next_entry_id += 1
            self._evictable[run.entry_id] = run
            self.evictable_pages += holding.lazy_units * self.unit_pages
            holding.lazy_units = 0
        index = len(holding.shared) - 1
        while index >= 0:
            entry = holding.shared[index]
            entry.refcount -= 1
            if entry.refcount == 0:
                self._evictable[entry.entry_id] = entry
                self.evictable_pages += self.unit_pages
            index -= 1
        holding.shared = []

    def _ref(self, entry: CacheEntry) -> None:
        if entry.refcount == 0 and entry.entry_id in self._evictable:
            del self._evictable[entry.entry_id]
            self.evictable_pages -= self.unit_pages
        entry.refcount += 1

    def _evict_until_free(self, needed: int) -> None:
        """Evict least recently released entries until ``needed`` pages are free (bounded by
        the number of evictable entries)."""
        unit_pages = self.unit_pages
        while self.free_pages < needed and self._evictable:
            _, entry = self._evictable.popitem(last=False)
            if entry.units > 0:
                # An anonymous run: evict as many of its units as are still needed.
                wanted = (needed - self.free_pages + unit_pages - 1) // unit_pages
                taken = wanted if wanted < entry.units else entry.units
                entry.units -= taken
                self.evictable_pages -= taken * unit_pages
                self.free_pages += taken * unit_pages
                if entry.units > 0:
                    self._evictable[entry.entry_id] = entry
                    self._evictable.move_to_end(entry.entry_id, last=False)
                continue
            del self._entries[entry.key]
            self.evictable_pages -= unit_pages
            self.free_pages += unit_pages


def _chain_key(parent: int, content: tuple[int, ...]) -> tuple[int, ...]:
    return (parent, *content)
