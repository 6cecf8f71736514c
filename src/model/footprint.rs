//! The model's heap bytes, part by part: what the memory bound (`tests/footprint.rs`) and
//! `ttap inspect --memory` measure. Each part counts its used bytes and its allocated capacity
//! (the difference is growth slack).

use std::mem::size_of;

use super::{Details, Strings, Trace};

/// One part of the model: its name, bytes in use and bytes allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub name: &'static str,
    pub used: usize,
    pub allocated: usize,
}

fn part<T>(name: &'static str, v: &Vec<T>) -> Part {
    Part {
        name,
        used: v.len() * size_of::<T>(),
        allocated: v.capacity() * size_of::<T>(),
    }
}

fn details(d: &Details) -> Part {
    let (used, allocated) = d.bytes();
    Part {
        name: "details",
        used,
        allocated,
    }
}

/// The interned strings: their text, the id list and the lookup table (an estimate of the hash
/// map's table: a key and an id per bucket, buckets the next power of two past 8/7 of them).
fn strings(s: &Strings) -> Part {
    let text: usize = s.iter().map(str::len).sum();
    let entry = size_of::<Box<str>>() + size_of::<u32>();
    let buckets = (s.len() * 8 / 7 + 1).next_power_of_two();
    Part {
        name: "strings",
        used: 2 * text + s.len() * (size_of::<Box<str>>() + entry),
        allocated: 2 * text + s.len() * size_of::<Box<str>>() + buckets * (entry + 1),
    }
}

impl Trace {
    /// The heap bytes of each part of the model.
    pub fn footprint(&self) -> Vec<Part> {
        let e = &self.events;
        vec![
            part("events.start", &e.start),
            part("events.dur", &e.dur),
            part("events.name", &e.name),
            part("events.cat", &e.cat),
            part("events.kind", &e.kind),
            part("events.track", &e.track),
            part("events.detail", &e.detail),
            part("events.parent", &e.parent),
            part("events.depth", &e.depth),
            details(&self.details),
            part("collectives", &self.collectives),
            part("launches", &self.launches),
            part("forward_backward", &self.forward_backward),
            part("replayed_from", &self.replayed_from),
            part("tracks", &self.tracks),
            part("steps", &self.steps),
            strings(&self.strings),
        ]
    }
}
