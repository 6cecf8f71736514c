//! The merge of parallel parts: a later block's builder, framed alone, appended to the builder
//! of everything before it as one pass over both would have built it.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::{Builder, Category, FlowPoint};
use crate::model::{CollectiveDetail, EventKind, KernelDetail, OpDetail, StrId, Track, NONE};

/// The `B` events not ended yet, and, in a later block's builder, the `E` events that found no
/// `B` in it.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct Open {
    /// Open `B` events per track.
    pub(super) begins: FxHashMap<u32, Vec<u32>>,
    /// Set on a builder of a later block of a parallel ingest: an `E` without its `B` may end
    /// a `B` of an earlier block, so it is kept in `deferred_ends` for [`Builder::merge`].
    pub(super) defer_ends: bool,
    /// The `E` events (track, time) that found no `B`, in order, when `defer_ends`.
    pub(super) deferred_ends: Vec<(u32, i64)>,
}

impl Builder {
    /// Appends what `next`, the builder of the input right after this one's, read: the result is
    /// the builder one pass over both inputs would have made (same string ids, track ids, event
    /// and detail order; `E` events of `next` end this builder's open `B` events).
    pub(in crate::ingest) fn merge(&mut self, next: Builder) {
        if self.bounds.stopped.is_some() {
            self.bounds.beyond_limit += next.elements + next.bounds.beyond_limit;
            self.top.keys.extend(next.top.keys);
            self.top.values.extend(next.top.values);
            return;
        }
        let ids: Vec<StrId> = next
            .strings
            .iter()
            .map(|s| self.strings.intern(s))
            .collect();
        let id = |s: StrId| ids[s as usize];
        let tracks: Vec<u32> = next
            .tracks
            .iter()
            .map(|t| {
                let new = self.tracks.len() as u32;
                let at = *self.track_ids.entry((id(t.pid), id(t.tid))).or_insert(new);
                if at == new {
                    self.tracks.push(Track {
                        pid: id(t.pid),
                        tid: id(t.tid),
                        ..t.clone()
                    });
                } else if t.gpu && !self.tracks[at as usize].gpu {
                    let mine = &mut self.tracks[at as usize];
                    (mine.gpu, mine.device, mine.stream) = (true, t.device, t.stream);
                }
                at
            })
            .collect();
        let first_event = self.events.len() as u32;
        for (track, ts) in next.open.deferred_ends {
            self.close(tracks[track as usize], ts);
        }
        let mut open: Vec<(u32, Vec<u32>)> = next.open.begins.into_iter().collect();
        open.sort_unstable();
        for (track, stack) in open {
            self.open
                .begins
                .entry(tracks[track as usize])
                .or_default()
                .extend(stack.into_iter().map(|i| i + first_event));
        }
        let collectives = self.collectives.len() as u32;
        let more = |c: Option<u32>| c.map(|c| c + collectives);
        // Column by column: each a tight loop. Details are written again, in event order, with
        // this builder's string and collective ids: the arena one pass would have made.
        let (mine, e) = (&mut self.events, next.events);
        mine.start.extend_from_slice(&e.start);
        mine.dur.extend_from_slice(&e.dur);
        mine.name.extend(e.name.iter().map(|&n| id(n)));
        mine.cat.extend(e.cat.iter().map(|&c| id(c)));
        mine.track
            .extend(e.track.iter().map(|&t| tracks[t as usize]));
        let (details, theirs) = (&mut self.details, &next.details);
        mine.detail
            .extend(e.detail.iter().zip(&e.kind).map(|(&d, &kind)| {
                if d == NONE {
                    return NONE;
                }
                match kind {
                    EventKind::GpuKernel | EventKind::Collective => {
                        let k = theirs.kernel(d);
                        details.push_kernel(&KernelDetail {
                            collective: more(k.collective),
                            ..k
                        })
                    }
                    EventKind::Memcpy | EventKind::Memset => details.push_copy(&theirs.copy(d)),
                    EventKind::RuntimeCall => details.push_runtime(&theirs.runtime(d)),
                    EventKind::CpuOp | EventKind::UserAnnotation | EventKind::ProfilerStep => {
                        let o = theirs.op(d);
                        details.push_op(&OpDetail {
                            input_dims: o.input_dims.map(id),
                            input_types: o.input_types.map(id),
                            concrete_inputs: o.concrete_inputs.map(id),
                            collective: more(o.collective),
                            ..o
                        })
                    }
                    EventKind::Memory => details.push_memory(&theirs.memory(d)),
                    EventKind::GpuUserAnnotation
                    | EventKind::GpuSync
                    | EventKind::PythonFunction
                    | EventKind::Profiler
                    | EventKind::Other => NONE,
                }
            }));
        mine.kind.extend_from_slice(&e.kind);
        self.collectives
            .extend(next.collectives.into_iter().map(|c| CollectiveDetail {
                name: c.name.map(id),
                dtype: c.dtype.map(id),
                process_group: c.process_group.map(id),
                ..c
            }));
        self.flows.extend(next.flows.into_iter().map(|f| FlowPoint {
            track: tracks[f.track as usize],
            ..f
        }));
        for (pid, name) in next.process_names {
            self.process_names.insert(id(pid), id(name));
        }
        for ((pid, tid), name) in next.thread_names {
            self.thread_names.insert((id(pid), id(tid)), id(name));
        }
        for c in next.categories {
            match self.categories.iter_mut().find(|mine| mine.raw == c.raw) {
                Some(mine) => mine.count += c.count,
                None => self.categories.push(Category { id: id(c.id), ..c }),
            }
        }
        for (reason, n) in next.skipped {
            *self.skipped.entry(reason).or_default() += n;
        }
        self.elements += next.elements;
        self.array_elements += next.array_elements;
        self.metadata_events += next.metadata_events;
        self.concrete_inputs |= next.concrete_inputs;
        self.repaired_utf8 += next.repaired_utf8;
        self.top.object = self.top.object.or(next.top.object);
        self.top.keys.extend(next.top.keys);
        self.top.values.extend(next.top.values);
        self.bounds.unchecked = 0;
    }

    /// Takes what `first`, the builder of the input's first block, read, keeping these limits.
    pub(in crate::ingest) fn replace_with(&mut self, first: Builder) {
        let limits = self.bounds.limits;
        *self = first;
        (self.bounds.limits, self.bounds.unchecked) = (limits, 0);
    }

    /// Whether [`Builder::merge`] of `next` gives what one pass gives: this builder stopped
    /// already, or it cannot reach a limit within `next` (ids are counted as if none repeated).
    pub(in crate::ingest) fn can_take(&self, next: &Builder) -> bool {
        let (mine, theirs) = (self.counts(), next.counts());
        self.bounds.stopped.is_some()
            || next.bounds.stopped.is_none()
                && (self.bounds.limits)
                    .passed(std::array::from_fn(|i| mine[i] + theirs[i]))
                    .is_none()
    }
}
