//! The simulator's priority queues.
//!
//! [`ReadyHeap`]: a scheduling domain's ready threads (a binary heap of
//! the ready ones only).
//!
//! [`MinTree`]: a tournament (winner) tree over a fixed set of slots, each
//! holding at most one key, four children per node; setting or clearing
//! a slot replays the matches on its path to the root (log4 of the slot
//! count), the minimum is read at the root. Unlike a binary heap with lazy
//! deletion it holds no stale entries: a slot's new key replaces its old
//! one.
//!
//! [`EventQueue`]: the event queue, a few tournament trees (one per group
//! of slots) and a binary heap. Segment ends (one live per core: a new one
//! always comes with a new core stamp, which makes the old one stale) and
//! bus completions (one live per bus, likewise) overwrite their core's or
//! bus's slot; releases and kernel completions (at most one outstanding per
//! task and per GPU in practice) take their task's or GPU's slot when it is
//! free. Everything else, and an event whose slot is taken, goes to the
//! heap. Pops take the smallest of the trees' and the heap's minima under
//! the same `(time, packed event)` order as a single heap, so events come
//! out in exactly the same order, less the stale segment and bus events,
//! which the engine would have dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rtgpu_policy::Time;

/// `(time or priority) << 64 | tie-break`, compared as one integer;
/// `EMPTY` marks a free slot.
pub(crate) type Key = u128;
pub(crate) const EMPTY: Key = u128::MAX;

#[inline]
pub(crate) fn key(hi: u64, lo: u64) -> Key {
    (hi as u128) << 64 | lo as u128
}

#[inline]
pub(crate) fn split(k: Key) -> (u64, u64) {
    ((k >> 64) as u64, k as u64)
}

/// A hint to load the cache line at `p` (nothing elsewhere than x86_64).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline; a prefetch reads no
    // memory the program sees and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Four tree keys, half a cache line: a node's children.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Line([u64; 4]);

impl Line {
    const FREE: Line = Line([u64::MAX; 4]);

    /// The smallest of the four keys (pairwise, for the pipeline).
    #[inline(always)]
    fn min(&self) -> u64 {
        let k = &self.0;
        let (a, b) = (k[0].min(k[1]), k[2].min(k[3]));
        a.min(b)
    }
}

/// Tournament (winner) tree over `n` slots with four children per node;
/// see the module docs. A node's children lie in one aligned half line,
/// so setting a slot replays log4 n levels, one load of four keys each.
/// (A binary tree took log2 n levels, whose lower lines missed in cache at
/// n = 10,000 release slots: four children give 20 % fewer L1 misses and
/// 4 % fewer instructions per CPU-only job there and the same instructions
/// per GPU job (callgrind; no wall-clock difference was measurable on the
/// 2-vCPU dev VM, docs/benchmarks.md); eight saved more misses but cost
/// 2.7 % more instructions per GPU job, scanning a line per level.) Keys of
/// set slots must differ (the engine's do: they carry the slot's index),
/// which is what lets a node hold just the winning key: the slot that won
/// is the one holding that key. `u64::MAX` marks a free slot.
#[derive(Debug, Clone)]
pub(crate) struct MinTree {
    /// The levels' lines, the slots' first: level 0 holds slot i in line
    /// i / 4, lane i % 4; level l + 1 holds in lane k of its line k / 4 the
    /// minimum of level l's line k. The last level has one line.
    lines: Vec<Line>,
    /// Per level: its first line in `lines`.
    level: Vec<usize>,
    /// The minimum of the last level's line.
    root: u64,
}

impl MinTree {
    pub(crate) fn new(n: usize) -> MinTree {
        let mut level = vec![0];
        let mut width = n.max(1).div_ceil(4);
        let mut total = width;
        while width > 1 {
            level.push(total);
            width = width.div_ceil(4);
            total += width;
        }
        MinTree {
            lines: vec![Line::FREE; total],
            level,
            root: u64::MAX,
        }
    }

    /// The key in slot `i` (`u64::MAX` if free).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.lines[i / 4].0[i % 4]
    }

    /// The smallest key (`u64::MAX` if no slot is set).
    #[inline]
    pub(crate) fn root(&self) -> u64 {
        self.root
    }

    /// Put `key` in slot `i`, replaying the matches up the tree until a
    /// node's winner stays what it was.
    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, key: u64) {
        // The slots' level (first line 0) without the level table.
        let line = &mut self.lines[i / 4];
        let lane = &mut line.0[i % 4];
        if *lane == key {
            return;
        }
        *lane = key;
        let mut v = line.min();
        let mut at = i / 4;
        for &first in &self.level[1..] {
            let line = &mut self.lines[first + at / 4];
            let lane = &mut line.0[at % 4];
            if *lane == v {
                return;
            }
            *lane = v;
            v = line.min();
            at /= 4;
        }
        self.root = v;
    }

    #[inline]
    pub(crate) fn clear(&mut self, i: usize) {
        self.set(i, u64::MAX);
    }

    /// A hint to load the lines of slot `i` and of its parent node, which
    /// a [`Self::set`] of the slot reads first (the levels above are few
    /// lines, mostly in the cache). No bounds to check: a prefetch of any
    /// address is harmless.
    #[inline(always)]
    pub(crate) fn prefetch(&self, i: usize) {
        let lines = self.lines.as_ptr();
        prefetch(lines.wrapping_add(i / 4).cast());
        if let Some(&first) = self.level.get(1) {
            prefetch(lines.wrapping_add(first + i / 16).cast());
        }
    }

    /// The smallest key, if any slot is set.
    #[cfg(test)]
    pub(crate) fn min(&self) -> Option<u64> {
        (self.root != u64::MAX).then_some(self.root)
    }
}

/// A scheduling domain's ready queue: a binary min-heap of the keys of its
/// ready threads only, `(priority << 64 | thread)`, so its size and the
/// memory an operation touches follow the threads ready there, not the
/// threads that exist (a tournament tree over every thread cost log2 of
/// all of them, mostly cache misses, per operation). The engine pushes a
/// thread that becomes ready and pops the most urgent one to run it; an
/// entry leaves from elsewhere only when a ready thread's key changes (an
/// interrupt thread re-keyed while it waits), by a scan of the domain's
/// ready threads.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadyHeap {
    heap: BinaryHeap<Reverse<Key>>,
}

impl ReadyHeap {
    /// The smallest key (`EMPTY` if none).
    #[inline(always)]
    pub(crate) fn root(&self) -> Key {
        self.heap.peek().map_or(EMPTY, |r| r.0)
    }

    /// Thread `i` (the low half of `key`) ready with `key`; it must not be
    /// in the heap already.
    #[inline(always)]
    pub(crate) fn push(&mut self, key: Key) {
        debug_assert!(
            self.heap.iter().all(|k| k.0 as u64 != key as u64),
            "a thread is in its ready heap once"
        );
        self.heap.push(Reverse(key));
    }

    /// Thread `i` leaves the heap (nothing if it is not in it).
    #[inline]
    pub(crate) fn remove(&mut self, i: usize) {
        if self.root() != EMPTY && self.root() as u64 == i as u64 {
            self.heap.pop();
        } else {
            self.heap.retain(|k| k.0 as u64 != i as u64);
        }
    }
}

/// Where an event goes in the [`EventQueue`]: `(group, slot)` names slot
/// `slot` of the group's tree.
pub(crate) enum Slot {
    /// Always this slot (its previous event, if any, is stale).
    Replace(usize, usize),
    /// This slot if free, else the heap.
    IfFree(usize, usize),
    Heap,
}

/// Number of slot groups of an [`EventQueue`].
pub(crate) const GROUPS: usize = 4;

/// The event queue; see the module docs.
pub(crate) struct EventQueue {
    /// One tree per group of slots (cores, buses, ...), so that a slot's
    /// update climbs only its group's tree. Slots are numbered across
    /// groups, a group's after those of the groups before it, and a tree
    /// key is `time << bits | slot` in one u64 (half the width of a
    /// `(time, code)` key); the code of the slot's event is kept in
    /// `codes`. This orders events as their codes would: at equal times
    /// the codes of a lower group's events are lower, and within a group
    /// (one kind of event) they differ first in the slot's index (see
    /// [`EventQueue::new`]).
    trees: [MinTree; GROUPS],
    /// Each tree's minimum, side by side for the pop's scan.
    roots: [u64; GROUPS],
    /// Bits of the slot index in a tree key.
    bits: u32,
    /// `u64::MAX >> bits`: event times from this one on do not fit a tree
    /// key.
    limit: u64,
    /// `(1 << bits) - 1`: a tree key's slot bits.
    mask: u64,
    /// Per group: its first slot.
    base: [usize; GROUPS],
    /// Per slot: its group.
    group: Vec<u8>,
    /// Per slot: the code of the event in the slot.
    codes: Vec<u64>,
    /// Per group, `(shift, mask)`: the slot of an event is
    /// `(code >> shift) & mask` (debug checks).
    slot_of: [(u32, u64); GROUPS],
    heap: BinaryHeap<Reverse<Key>>,
    /// `Some(c)` when the code of the last group's slot `i` is always
    /// `c | i` (the engine's releases): `codes` is then neither written
    /// nor read for that group, one cache line fewer per event at
    /// n = 10,000 tasks.
    last_code: Option<u64>,
    /// With `last_code`: the last group's first slot and that code, for
    /// [`Self::code`] (`usize::MAX` and 0 without), read on every pop.
    last_from: usize,
    last_or: u64,
    /// Slot popped last, cleared lazily (its owner usually refills it at
    /// once, which then costs one pass up the tree instead of two);
    /// `usize::MAX` when none.
    taken: usize,
    /// Events popped so far (the engine's [`crate::SimResult::events`]).
    popped: u64,
}

impl EventQueue {
    /// `groups[g] = (slots, shift, mask)`: group `g` has `slots` slots and
    /// the slot of its events' codes is `(code >> shift) & mask`. At equal
    /// times, the codes of group `g`'s events must be lower than those of
    /// any later group's, and order as their slots do within the group.
    #[cfg(test)]
    pub(crate) fn new(groups: [(usize, u32, u64); GROUPS]) -> EventQueue {
        Self::with_last_code(groups, None)
    }

    /// [`Self::new`], the code of the last group's slot `i` being
    /// `last_code | i` whenever given.
    pub(crate) fn with_last_code(
        groups: [(usize, u32, u64); GROUPS],
        last_code: Option<u64>,
    ) -> EventQueue {
        let mut base = [0; GROUPS];
        let mut group = Vec::new();
        for (g, &(slots, ..)) in groups.iter().enumerate() {
            base[g] = group.len();
            group.extend(std::iter::repeat_n(g as u8, slots));
        }
        let n = group.len();
        let bits = usize::BITS - (n.max(1) - 1).leading_zeros();
        EventQueue {
            trees: groups.map(|(n, ..)| MinTree::new(n)),
            roots: [u64::MAX; GROUPS],
            bits,
            limit: u64::MAX >> bits,
            mask: (1u64 << bits) - 1,
            base,
            group,
            codes: vec![0; n],
            slot_of: groups.map(|(_, s, m)| (s, m)),
            heap: BinaryHeap::with_capacity(16),
            last_code,
            last_from: last_code.map_or(usize::MAX, |_| base[GROUPS - 1]),
            last_or: last_code.unwrap_or(0),
            taken: usize::MAX,
            popped: 0,
        }
    }

    /// Events popped so far.
    pub(crate) fn popped(&self) -> u64 {
        self.popped
    }

    /// The slot, within its group, of group `g`'s earliest event (its
    /// tree's minimum), if any: what the engine will probably handle soon,
    /// for prefetching.
    #[inline(always)]
    pub(crate) fn group_min(&self, g: usize) -> Option<usize> {
        let k = self.roots[g];
        (k != u64::MAX).then(|| (k & self.mask) as usize - self.base[g])
    }

    /// A hint to load what a push to slot `i` of group `g` reads first
    /// ([`MinTree::prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch_slot(&self, g: usize, i: usize) {
        self.trees[g].prefetch(i);
    }

    /// The code of the event in slot `s`.
    #[inline(always)]
    fn code(&self, s: usize) -> u64 {
        if s >= self.last_from {
            self.last_or | (s - self.last_from) as u64
        } else {
            self.codes[s]
        }
    }

    // Always inlined: the engine's call sites each pass one kind of slot,
    // so the placement folds to a constant there.
    #[inline(always)]
    pub(crate) fn push(&mut self, t: Time, code: u64, slot: Slot) {
        let (g, i) = match slot {
            Slot::Replace(g, i) => (g, i),
            Slot::IfFree(g, i)
                if self.taken == self.base[g] + i || self.trees[g].get(i) == u64::MAX =>
            {
                (g, i)
            }
            _ => {
                self.heap.push(Reverse(key(t, code)));
                return;
            }
        };
        debug_assert_eq!(
            (code >> self.slot_of[g].0) & self.slot_of[g].1,
            i as u64,
            "event code names its slot"
        );
        let s = self.base[g] + i;
        let b = self.bits;
        if t >= self.limit {
            // Beyond what a tree key holds (2^(64 - bits) ns, years for any
            // practical slot count): the heap. A slot's older event left in
            // its tree is stale, and the engine drops stale events by their
            // stamp (only segment and bus events replace).
            self.heap.push(Reverse(key(t, code)));
            return;
        }
        if self.taken == s {
            self.taken = usize::MAX;
        }
        match self.last_code {
            Some(c) if g == GROUPS - 1 => {
                debug_assert_eq!(code, c | i as u64, "a last-group code is its slot's");
            }
            _ => self.codes[s] = code,
        }
        self.trees[g].set(i, t << b | s as u64);
        self.roots[g] = self.trees[g].root();
    }

    /// The next event: `(time, code)`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(Time, u64)> {
        if self.taken != usize::MAX {
            let s = self.taken;
            let g = self.group[s] as usize;
            self.trees[g].clear(s - self.base[g]);
            self.roots[g] = self.trees[g].root();
            self.taken = usize::MAX;
        }
        let mut k = self.roots[0];
        for &r in &self.roots[1..] {
            k = k.min(r);
        }
        let b = self.bits;
        let s = (k & self.mask) as usize;
        if let Some(&Reverse(h)) = self.heap.peek() {
            if k == u64::MAX || h < key(k >> b, self.code(s)) {
                self.heap.pop();
                self.popped += 1;
                return Some(split(h));
            }
        } else if k == u64::MAX {
            return None;
        }
        self.taken = s;
        self.popped += 1;
        Some((k >> b, self.code(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtgpu_analysis::generate::Rng;

    #[test]
    fn tree_min_follows_sets_and_clears() {
        let mut rng = Rng::new(7);
        // One line, several levels, partial last lines, 4^k and 4^k + 1.
        for n in [1usize, 2, 3, 4, 5, 8, 13, 16, 17, 40, 64, 65, 257, 4097] {
            let mut t = MinTree::new(n);
            let mut model = vec![u64::MAX; n];
            for _ in 0..(2000 + 4 * n) {
                let i = rng.range(0, n as u64 - 1) as usize;
                if rng.range(0, 3) == 0 {
                    t.clear(i);
                    model[i] = u64::MAX;
                } else {
                    let k = rng.range(0, 20) << 13 | i as u64;
                    t.set(i, k);
                    model[i] = k;
                }
                let want = model.iter().copied().filter(|&k| k != u64::MAX).min();
                assert_eq!(t.min(), want, "n = {n}");
                assert_eq!(t.get(i), model[i]);
            }
        }
    }

    /// The ready heap's minimum is the smallest key pushed and not
    /// removed (a table of each thread's key as the model).
    #[test]
    fn ready_heap_min_follows_pushes_and_removals() {
        let mut rng = Rng::new(5);
        for n in [1usize, 2, 3, 7, 40, 300] {
            let mut h = ReadyHeap::default();
            let mut t = vec![EMPTY; n];
            let min = |t: &[Key]| t.iter().copied().min().unwrap_or(EMPTY);
            for _ in 0..5000 {
                let i = rng.range(0, n as u64 - 1) as usize;
                if rng.range(0, 2) == 0 {
                    h.remove(i);
                    t[i] = EMPTY;
                } else {
                    // A thread's new key replaces its old one.
                    h.remove(i);
                    let k = key(rng.range(0, 30), i as u64);
                    h.push(k);
                    t[i] = k;
                }
                assert_eq!(h.root(), min(&t), "n = {n}");
                if rng.range(0, 3) == 0 && h.root() != EMPTY {
                    // The engine's pop of the top.
                    let top = h.root() as u64 as usize;
                    h.remove(top);
                    t[top] = EMPTY;
                    assert_eq!(h.root(), min(&t), "n = {n}");
                }
            }
        }
    }

    /// Times beyond what a u64 tree key holds go to the heap and still pop
    /// in `(time, code)` order with the trees' events.
    #[test]
    fn far_future_events_pop_in_order() {
        let mut q = EventQueue::new([(3, 32, 0xffff), (1, 32, 0xffff), (0, 0, 0), (0, 0, 0)]);
        let far = u64::MAX >> 2; // 4 slots: 2 slot bits
        q.push(far, 2 << 32, Slot::IfFree(0, 2));
        q.push(far, 1 << 32, Slot::Replace(0, 1));
        q.push(far - 1, 0, Slot::Replace(0, 0));
        q.push(5, 0, Slot::Replace(1, 0));
        q.push(u64::MAX, 0, Slot::Replace(1, 0));
        // The replaced (stale) event of group 1 stays in the tree: the
        // engine drops such events by their stamp.
        assert_eq!(q.pop(), Some((5, 0)));
        assert_eq!(q.pop(), Some((far - 1, 0)));
        assert_eq!(q.pop(), Some((far, 1 << 32)));
        assert_eq!(q.pop(), Some((far, 2 << 32)));
        assert_eq!(q.pop(), Some((u64::MAX, 0)));
        assert_eq!(q.pop(), None);
    }

    /// The queue pops what one binary heap would, minus entries replaced in
    /// their slot (the stale events the engine drops).
    #[test]
    fn queue_pops_like_a_heap_without_replaced_entries() {
        let mut rng = Rng::new(11);
        let slots = 6;
        // Slots 0..3 in group 0, 3..6 in group 1; an event's code has its
        // group at bit 40 (a lower group's codes are lower) and its slot
        // in the group at bit 32.
        let mut q = EventQueue::new([(3, 32, 0xff), (3, 32, 0xff), (0, 0, 0), (0, 0, 0)]);
        let at = |s: usize| (s / 3, s % 3);
        // Model: a heap of (key, live) where replaced entries are dead.
        let mut model: BinaryHeap<Reverse<((Time, u64), u64)>> = BinaryHeap::new();
        let mut live_in_slot: Vec<Option<u64>> = vec![None; slots];
        let mut serial = 0u64;
        let mut dead = std::collections::HashSet::new();
        let mut now = 0;
        for _ in 0..20_000 {
            if rng.range(0, 2) > 0 {
                let t = now + rng.range(0, 50);
                let s = rng.range(0, slots as u64) as usize;
                serial += 1;
                let code = ((s / 3) as u64) << 40 | ((s % 3) as u64) << 32 | (serial & 0xffff);
                let slot = if s == slots {
                    Slot::Heap
                } else if s.is_multiple_of(2) {
                    if let Some(old) = live_in_slot[s].replace(serial) {
                        dead.insert(old);
                    }
                    Slot::Replace(at(s).0, at(s).1)
                } else {
                    // IfFree: the model never kills these.
                    Slot::IfFree(at(s).0, at(s).1)
                };
                q.push(t, code, slot);
                model.push(Reverse(((t, code), serial)));
            } else {
                let got = q.pop();
                let want = loop {
                    match model.pop() {
                        Some(Reverse((_, id))) if dead.contains(&id) => continue,
                        Some(Reverse((k, id))) => {
                            for l in live_in_slot.iter_mut() {
                                if *l == Some(id) {
                                    *l = None;
                                }
                            }
                            break Some(k);
                        }
                        None => break None,
                    }
                };
                assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
        }
    }
}
