//! What the builder keeps while reading: small direct-mapped caches of the last tracks, names
//! and category seen, and each name's class, that skip the text and the hash maps for the
//! many events that repeat them. Never serialized: a block's builder starts with them empty.

use super::event::{self, Raw, RawEvent};
use super::{Builder, Category};
use crate::model::kind::{self, classify, classify_memcpy, EventKind, RuntimeClass};
use crate::model::{CopyDirection, HostMemory, StrId, Track, NONE};

/// What an event's category and name say about it, cached per name.
#[derive(Clone, Copy)]
pub(super) struct Classified {
    pub(super) kind: EventKind,
    pub(super) runtime: RuntimeClass,
    pub(super) direction: CopyDirection,
    pub(super) host_memory: HostMemory,
    /// Whether the op's `Concrete Inputs` are kept ([`crate::model::keeps_concrete_inputs`]).
    pub(super) scalars: bool,
}

/// The caches, each checked against the bytes as written before it is trusted.
pub(super) struct Caches {
    /// Recently seen tracks, by [`track_slot`].
    tracks: Vec<CachedTrack>,
    /// The slot of the last event's track (most events are on the track of the one before).
    last_track_slot: usize,
    /// Recently seen names, by [`name_slot`].
    names: Vec<StrId>,
    /// Indexed by name id: the category and phase kind last seen with it, and what they gave.
    classified: Vec<Option<(StrId, bool, Classified)>>,
    /// The slot of the last event's category in `Builder::categories`.
    last_category: usize,
}

impl Default for Caches {
    fn default() -> Caches {
        Caches {
            tracks: vec![
                CachedTrack {
                    track: NONE,
                    ..CachedTrack::default()
                };
                TRACK_CACHE_SLOTS
            ],
            last_track_slot: 0,
            names: vec![NONE; NAME_CACHE_SLOTS],
            classified: Vec::new(),
            last_category: 0,
        }
    }
}

/// A track and the `pid` and `tid` as written in its events.
#[derive(Clone, Default)]
struct CachedTrack {
    pid: Vec<u8>,
    tid: Vec<u8>,
    track: u32,
}

impl Builder {
    pub(super) fn category(&mut self, raw: Option<Raw<'_>>) -> usize {
        let bytes = raw.map_or(&b""[..], |r| r.0);
        if self
            .categories
            .get(self.caches.last_category)
            .is_some_and(|c| same(&c.raw, bytes))
        {
            return self.caches.last_category;
        }
        let slot = match self.categories.iter().position(|c| c.raw == bytes) {
            Some(slot) => slot,
            None => {
                let text = raw.map(event::text).unwrap_or_default();
                let id = if text.is_empty() {
                    self.no_category
                } else {
                    self.strings.intern(&text)
                };
                self.categories.push(Category {
                    raw: bytes.to_vec(),
                    id,
                    count: 0,
                    kineto: kind::is_kineto_category(&text),
                    capitalised: matches!(text.as_ref(), "Operator" | "Kernel" | "Runtime"),
                    launch_flow: kind::is_launch_flow_category(&text),
                    fwdbwd: text == "fwdbwd",
                });
                self.categories.len() - 1
            }
        };
        self.caches.last_category = slot;
        slot
    }

    /// The track of an event's `pid` and `tid`. Most events are on the track of the one before,
    /// and events of a few tracks interleave: a small direct-mapped cache of them, checked by
    /// comparing bytes as written, skips the text and the hash maps.
    pub(super) fn track(&mut self, ev: &RawEvent<'_>) -> u32 {
        let pid = ev.pid.map_or(&b""[..], |r| r.0);
        let tid = ev.tid.map_or(&b""[..], |r| r.0);
        let is = |c: &CachedTrack| c.track != NONE && same(&c.pid, pid) && same(&c.tid, tid);
        let last = &self.caches.tracks[self.caches.last_track_slot];
        if is(last) {
            return last.track;
        }
        let slot = track_slot(pid, tid);
        self.caches.last_track_slot = slot;
        let cached = &self.caches.tracks[slot];
        if is(cached) {
            return cached.track;
        }
        let pid_id = self
            .strings
            .intern(&ev.pid.map(event::text).unwrap_or_default());
        let tid_id = self
            .strings
            .intern(&ev.tid.map(event::text).unwrap_or_default());
        let next = self.tracks.len() as u32;
        let id = *self.track_ids.entry((pid_id, tid_id)).or_insert(next);
        if id == next {
            self.tracks.push(Track {
                pid: pid_id,
                tid: tid_id,
                gpu: false,
                device: None,
                stream: None,
                process_name: None,
                thread_name: None,
                events: 0..0,
            });
        }
        let cached = &mut self.caches.tracks[slot];
        cached.pid.clear();
        cached.pid.extend_from_slice(pid);
        cached.tid.clear();
        cached.tid.extend_from_slice(tid);
        cached.track = id;
        id
    }

    pub(super) fn name(&mut self, ev: &RawEvent<'_>) -> StrId {
        match ev.name {
            Some(raw) => {
                let content = raw.0.get(1..raw.0.len().saturating_sub(1)).unwrap_or(&[]);
                self.intern_cached(content, || {
                    let name = event::text(raw);
                    let repaired = matches!(name, std::borrow::Cow::Owned(_))
                        && std::str::from_utf8(raw.0).is_err();
                    (name, repaired)
                })
            }
            None => self.no_category,
        }
    }

    /// Interns the text that `bytes` stand for. Most names and argument texts repeat: a small
    /// direct-mapped cache, checked by comparing bytes with the interned text, skips UTF-8
    /// validation, unescaping and the hash map for them. `make` gives the text on a miss, and
    /// whether invalid UTF-8 had to be replaced.
    fn intern_cached<'b>(
        &mut self,
        bytes: &[u8],
        make: impl FnOnce() -> (std::borrow::Cow<'b, str>, bool),
    ) -> StrId {
        let slot = name_slot(bytes);
        let cached = self.caches.names[slot];
        if cached != NONE && same(self.strings.get(cached).as_bytes(), bytes) {
            return cached;
        }
        let (text, repaired) = make();
        if repaired {
            self.repaired_utf8 += 1;
        }
        let id = self.strings.intern(&text);
        self.caches.names[slot] = id;
        id
    }

    /// Interns a raw JSON fragment (`Input Dims`, `Input type`) as written.
    pub(super) fn intern_raw(&mut self, raw: Raw<'_>) -> StrId {
        self.intern_cached(raw.0, || (event::raw_text(raw), false))
    }

    pub(super) fn classify(&mut self, cat: StrId, name_id: StrId, instant: bool) -> Classified {
        let i = name_id as usize;
        if let Some(Some((c, inst, known))) = self.caches.classified.get(i) {
            if *c == cat && *inst == instant {
                return *known;
            }
        }
        let name = self.strings.get(name_id);
        let kind = classify(self.strings.get(cat), name, instant);
        let runtime = match kind {
            EventKind::RuntimeCall => RuntimeClass::of(name),
            _ => RuntimeClass::Other,
        };
        let (direction, host_memory) = match kind {
            EventKind::Memcpy => classify_memcpy(name),
            _ => (CopyDirection::Unknown, HostMemory::NotApplicable),
        };
        let known = Classified {
            kind,
            runtime,
            direction,
            host_memory,
            scalars: crate::model::keeps_concrete_inputs(name),
        };
        let classified = &mut self.caches.classified;
        if classified.len() <= i {
            classified.resize(i + 1, None);
        }
        classified[i] = Some((cat, instant, known));
        known
    }
}

const NAME_CACHE_SLOTS: usize = 4096;
const TRACK_CACHE_SLOTS: usize = 64;

/// A cheap hash of a name's length and its first and last eight bytes.
fn cheap_hash(name: &[u8]) -> u64 {
    let n = name.len();
    let (head, tail) = match (name.first_chunk::<8>(), name.last_chunk::<8>()) {
        (Some(head), Some(tail)) => (u64::from_le_bytes(*head), u64::from_le_bytes(*tail)),
        _ => {
            let word = name.iter().fold(0u64, |h, &c| (h << 8) | u64::from(c));
            (word, word)
        }
    };
    (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn name_slot(name: &[u8]) -> usize {
    (cheap_hash(name) >> 52) as usize & (NAME_CACHE_SLOTS - 1)
}

fn track_slot(pid: &[u8], tid: &[u8]) -> usize {
    let h = (cheap_hash(pid) ^ cheap_hash(tid).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58) as usize & (TRACK_CACHE_SLOTS - 1)
}

/// Whether two byte strings are equal. Most that are compared per event (categories, pids,
/// tids, names) are short: up to 16 bytes they are compared inline as two overlapping words
/// (of 1, 2, 4 or 8 bytes), without calling memcmp.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    fn ends<const N: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<N>() == b.first_chunk::<N>() && a.last_chunk::<N>() == b.last_chunk::<N>()
    }
    match a.len() {
        n if n != b.len() => false,
        0 => true,
        1 => a[0] == b[0],
        2..4 => ends::<2>(a, b),
        4..8 => ends::<4>(a, b),
        8..=16 => ends::<8>(a, b),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_strings_of_every_length_are_equal_only_when_every_byte_is() {
        for n in 0..40u8 {
            let a: Vec<u8> = (0..n).map(|i| b'a' + i % 26).collect();
            assert!(same(&a, &a.clone()), "{n}");
            for at in 0..a.len() {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same(&a, &b), "{n} bytes, differing at {at}");
            }
            assert!(!same(&a, &a[..a.len().saturating_sub(1)]) || n == 0);
        }
    }
}
