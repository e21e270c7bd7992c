//! A bounded memo from byte-string keys to values: `SETS` sets of `WAYS`
//! entries; a key's set comes from a hash seeded at random per memo, and
//! within a set the entry used longest ago makes room. A key is given in
//! two parts (`a`, `b`: a field line's name and value, or one string and
//! an empty one), compared whole, so two keys that concatenate alike stay
//! apart.
//!
//! Why set-associative rather than a map: the memos it serves sit on the
//! per-request path (QPACK strings a client or the server repeats), where a
//! lookup must cost a hash and a few compares, memory must have a fixed
//! ceiling whatever the peer sends, and a bad key costs only a miss. The
//! random seed keeps which keys share a set from being worked out from the
//! keys (nor a set's use timed to learn another client's strings).

use std::hash::Hasher;

/// One memo. Empty until the first insert (a thread-local memo costs nothing until used).
pub struct SetMemo<V, const SETS: usize, const WAYS: usize> {
    seed: u64,
    /// Each set most recently used first.
    sets: Vec<[Option<Entry<V>>; WAYS]>,
}

struct Entry<V> {
    /// `a` then `b`.
    key: Box<[u8]>,
    split: usize,
    value: V,
}

impl<V> Entry<V> {
    #[inline]
    fn is(&self, a: &[u8], b: &[u8]) -> bool {
        self.split == a.len() && self.key.len() == a.len() + b.len() && self.key[..a.len()] == *a && self.key[a.len()..] == *b
    }
}

impl<V, const SETS: usize, const WAYS: usize> SetMemo<V, SETS, WAYS> {
    /// An empty memo; `const` so that it can start a `thread_local!`.
    pub const fn new() -> Self {
        assert!(SETS.is_power_of_two() && SETS > 1 && WAYS > 0);
        SetMemo { seed: 0, sets: Vec::new() }
    }

    #[inline]
    fn set_of(&self, a: &[u8], b: &[u8]) -> usize {
        // FxHash: fast, and a poor spread only costs misses.
        let mut h = rustc_hash::FxHasher::with_seed(self.seed as usize);
        h.write(a);
        h.write_usize(a.len());
        h.write(b);
        (h.finish() >> (64 - SETS.trailing_zeros())) as usize
    }

    /// The value kept for the key, now its set's most recently used.
    /// Inlined into each caller: it runs for most lines of every request.
    #[inline(always)]
    pub fn get(&mut self, a: &[u8], b: &[u8]) -> Option<&V> {
        if self.sets.is_empty() {
            return None;
        }
        let index = self.set_of(a, b);
        let set = &mut self.sets[index];
        let way = set.iter().position(|e| e.as_ref().is_some_and(|e| e.is(a, b)))?;
        set[..=way].rotate_right(1);
        set[0].as_ref().map(|e| &e.value)
    }

    /// Keeps `value` for the key (not looked up first: call after `get`
    /// missed); the entry its set used longest ago goes.
    pub fn insert(&mut self, a: &[u8], b: &[u8], value: V) {
        if self.sets.is_empty() {
            self.sets.resize_with(SETS, || std::array::from_fn(|_| None));
            self.seed = random_seed();
        }
        let index = self.set_of(a, b);
        let set = &mut self.sets[index];
        set.rotate_right(1);
        set[0] = Some(Entry { key: [a, b].concat().into_boxed_slice(), split: a.len(), value });
    }

    /// Entries held now (tests).
    pub fn len(&self) -> usize {
        self.sets.iter().flatten().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V, const SETS: usize, const WAYS: usize> Default for SetMemo<V, SETS, WAYS> {
    fn default() -> Self {
        Self::new()
    }
}

fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_and_finds_values_by_both_parts() {
        let mut m: SetMemo<u32, 4, 2> = SetMemo::new();
        assert_eq!(m.get(b"a", b"b"), None);
        m.insert(b"a", b"b", 1);
        m.insert(b"ab", b"", 2);
        assert_eq!(m.get(b"a", b"b"), Some(&1));
        assert_eq!(m.get(b"ab", b""), Some(&2), "the split is part of the key");
        assert_eq!(m.get(b"", b"ab"), None);
    }

    #[test]
    fn never_holds_more_than_sets_times_ways_and_evicts_the_least_recently_used() {
        let mut m: SetMemo<usize, 4, 2> = SetMemo::new();
        for i in 0..100usize {
            m.insert(i.to_string().as_bytes(), b"", i);
            assert!(m.len() <= 8);
        }
        // In a set of two, a key used after the other one was inserted stays when a third comes.
        let mut m: SetMemo<u8, 2, 2> = SetMemo::new();
        let keys: Vec<Vec<u8>> = (0u8..=255).map(|i| vec![i]).collect();
        m.insert(&keys[0], b"", 0);
        let set0 = m.set_of(&keys[0], b"");
        let same: Vec<&Vec<u8>> = keys[1..].iter().filter(|k| m.set_of(k, b"") == set0).take(2).collect();
        m.insert(same[0], b"", 1);
        assert_eq!(m.get(&keys[0], b""), Some(&0));
        m.insert(same[1], b"", 2);
        assert_eq!(m.get(&keys[0], b""), Some(&0), "used most recently: kept");
        assert_eq!(m.get(same[0], b""), None, "used longest ago: gone");
    }
}
