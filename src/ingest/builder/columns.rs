//! What the builder writes: an event's row in each column and its details record, flow
//! points, the top-level values kept, categories as written; and room made ahead in the columns.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::caches::Classified;
use super::event::{self, RawEvent};
use super::Builder;
use crate::model::{
    CollectiveDetail, CopyDetail, EventKind, KernelDetail, MemoryDetail, OpDetail, RuntimeDetail,
    StrId, NONE,
};

/// A flow endpoint (`ph` `s`, `t` or `f`), bound to an event once all events are known.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(in crate::ingest) struct FlowPoint {
    pub id: u64,
    pub track: u32,
    pub ts: i64,
    pub launch: bool,
    pub start: bool,
}

/// The estimated rows of a column in the whole input, and how many may come before the next
/// estimate ([`Builder::make_room`]).
#[derive(Clone, Copy, Debug)]
pub(in crate::ingest) struct Room {
    pub total: usize,
    pub margin: usize,
}

impl Room {
    /// The rows to add to a column of `len` rows that holds `capacity`: none while `margin`
    /// are free (or the column is empty); else room for the estimate and the margin, and at
    /// least an eighth more (an estimate that proved low).
    fn more(self, len: usize, capacity: usize) -> Option<usize> {
        if len == 0 || capacity - len >= self.margin {
            return None;
        }
        let total = self.total.saturating_add(self.total / 32);
        Some(total.max(len + len / 8).saturating_add(self.margin) - len)
    }
}

/// Raw top-level values kept for `assemble`.
#[derive(Default, Serialize, Deserialize)]
pub(in crate::ingest) struct TopLevel {
    pub object: Option<bool>,
    pub keys: Vec<String>,
    #[serde(with = "json_text")]
    pub values: FxHashMap<String, serde_json::Value>,
}

/// JSON values serialized as their text: formats without self-description (bincode) cannot
/// read a `serde_json::Value` back.
mod json_text {
    use rustc_hash::FxHashMap;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        values: &FxHashMap<String, serde_json::Value>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_map(values.iter().map(|(k, v)| (k, v.to_string())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<FxHashMap<String, serde_json::Value>, D::Error> {
        FxHashMap::<String, String>::deserialize(deserializer)?
            .into_iter()
            .map(|(k, text)| Ok((k, serde_json::from_str(&text).map_err(D::Error::custom)?)))
            .collect()
    }
}

/// The top-level keys whose values are read.
pub(in crate::ingest) fn wanted_key(key: &[u8]) -> bool {
    matches!(
        key,
        b"schemaVersion"
            | b"deviceProperties"
            | b"distributedInfo"
            | b"baseTimeNanoseconds"
            | b"displayTimeUnit"
            | b"traceName"
            | b"schema"
    )
}

/// One event's entry in each column.
pub(super) struct Row {
    pub(super) start: i64,
    pub(super) dur: i64,
    pub(super) name: StrId,
    pub(super) cat: StrId,
    pub(super) kind: EventKind,
    pub(super) track: u32,
    pub(super) detail: u32,
}

/// A category as written, with its count and what it tells about the trace.
#[derive(Serialize, Deserialize)]
pub(in crate::ingest) struct Category {
    pub(super) raw: Vec<u8>,
    pub id: StrId,
    pub count: u64,
    /// One Kineto writes.
    pub(super) kineto: bool,
    /// One of the capitalised categories of PyTorch 1.8–1.10.
    pub(super) capitalised: bool,
    pub(super) launch_flow: bool,
    pub(super) fwdbwd: bool,
}

impl Builder {
    /// Makes room for the events and flow points still to come, so that their columns grow to
    /// their final size once instead of doubling (a column that doubles holds up to twice its
    /// rows, and while it moves both copies exist): `events` and `flows` estimate each in the
    /// whole input and say how many may arrive before the next call. The details' bytes are
    /// estimated from the events', in the proportion so far. Room that memory cannot give (a
    /// trace too large for a wasm32 worker) is not taken: the columns then grow as they fill,
    /// and the worker stops reading at its memory limit, as before.
    pub(in crate::ingest) fn make_room(&mut self, events: Room, flows: Room) {
        let len = self.events.len();
        if let Some(rows) = events.more(len, self.events.capacity()) {
            self.events.try_reserve_exact(rows);
        }
        let (details, capacity) = self.details.bytes();
        let per_event = |n: usize| {
            let n = n as u128 * details as u128 / len.max(1) as u128;
            usize::try_from(n).unwrap_or(usize::MAX)
        };
        let details_room = Room {
            total: per_event(events.total),
            margin: per_event(events.margin),
        };
        if let Some(bytes) = details_room.more(details, capacity) {
            self.details.try_reserve_exact(bytes);
        }
        if let Some(more) = flows.more(self.flows.len(), self.flows.capacity()) {
            let _ = self.flows.try_reserve_exact(more);
        }
    }

    pub(in crate::ingest) fn top_value(&mut self, key: &[u8], bytes: &[u8]) {
        if let Ok(v) = serde_json::from_slice(bytes) {
            self.top
                .values
                .insert(String::from_utf8_lossy(key).into_owned(), v);
        }
    }

    pub(super) fn push(&mut self, row: Row) -> u32 {
        let e = &mut self.events;
        let index = e.start.len() as u32;
        e.start.push(row.start);
        e.dur.push(row.dur);
        e.name.push(row.name);
        e.cat.push(row.cat);
        e.kind.push(row.kind);
        e.track.push(row.track);
        e.detail.push(row.detail);
        index
    }

    /// Writes an event's details record from its arguments, as its kind has them, and marks
    /// the track of GPU work as a GPU's; gives the record's offset (`NONE` for kinds without).
    pub(super) fn detail(&mut self, ev: &RawEvent<'_>, track: u32, known: Classified) -> u32 {
        let Classified {
            kind,
            runtime: runtime_class,
            direction,
            host_memory,
            scalars,
        } = known;
        let args = &ev.args;
        match kind {
            EventKind::GpuKernel | EventKind::Collective => {
                let collective = self.collective(args);
                let k = KernelDetail {
                    device: args.device.and_then(event::int),
                    stream: args.stream.and_then(event::int),
                    correlation: args.correlation.and_then(event::uint),
                    grid: args.grid.and_then(event::dim3),
                    block: args.block.and_then(event::dim3),
                    registers_per_thread: args.registers.and_then(event::uint).map(|v| v as u32),
                    shared_memory: args.shared_memory.and_then(event::uint),
                    occupancy_pct: args.occupancy.and_then(event::float),
                    collective,
                };
                self.mark_gpu(track, ev, k.device, k.stream);
                self.details.push_kernel(&k)
            }
            EventKind::Memcpy | EventKind::Memset => {
                let c = CopyDetail {
                    device: args.device.and_then(event::int),
                    stream: args.stream.and_then(event::int),
                    correlation: args.correlation.and_then(event::uint),
                    bytes: args.bytes.and_then(event::uint),
                    bandwidth_gbps: args.bandwidth.and_then(event::float),
                    direction,
                    host_memory,
                };
                self.mark_gpu(track, ev, c.device, c.stream);
                self.details.push_copy(&c)
            }
            EventKind::GpuUserAnnotation | EventKind::GpuSync => {
                self.mark_gpu(
                    track,
                    ev,
                    args.device.and_then(event::int),
                    args.stream.and_then(event::int),
                );
                NONE
            }
            EventKind::RuntimeCall => self.details.push_runtime(&RuntimeDetail {
                class: runtime_class,
                correlation: args.correlation.and_then(event::uint),
            }),
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::ProfilerStep => {
                let collective = self.collective(args);
                let op = OpDetail {
                    external_id: args.external_id.and_then(event::uint),
                    sequence_number: args.sequence_number.and_then(event::uint),
                    input_dims: args.input_dims.map(|r| self.intern_raw(r)),
                    input_types: args.input_types.map(|r| self.intern_raw(r)),
                    concrete_inputs: args
                        .concrete_inputs
                        .filter(|_| scalars)
                        .map(|r| self.intern_raw(r)),
                    collective,
                };
                self.details.push_op(&op)
            }
            EventKind::Memory => match args.alloc_bytes.and_then(event::int) {
                Some(bytes) => self.details.push_memory(&MemoryDetail {
                    bytes,
                    total_allocated: args.total_allocated.and_then(event::int),
                    total_reserved: args.total_reserved.and_then(event::int),
                    device_type: args.device_type.and_then(event::int),
                    device_id: args.device_id.and_then(event::int),
                }),
                None => NONE,
            },
            EventKind::PythonFunction | EventKind::Profiler | EventKind::Other => NONE,
        }
    }

    fn collective(&mut self, args: &event::RawArgs<'_>) -> Option<u32> {
        let name = args.collective_name?;
        let c = CollectiveDetail {
            name: Some(self.strings.intern(&event::text(name))),
            in_elements: args.in_nelems.and_then(event::uint),
            out_elements: args.out_nelems.and_then(event::uint),
            group_size: args.group_size.and_then(event::uint),
            dtype: args.dtype.map(|r| self.strings.intern(&event::text(r))),
            process_group: args
                .process_group
                .map(|r| self.strings.intern(&event::text(r))),
        };
        self.collectives.push(c);
        Some(self.collectives.len() as u32 - 1)
    }

    fn mark_gpu(
        &mut self,
        track: u32,
        ev: &RawEvent<'_>,
        device: Option<i64>,
        stream: Option<i64>,
    ) {
        let t = &mut self.tracks[track as usize];
        if !t.gpu {
            t.gpu = true;
            t.device = device.or_else(|| ev.pid.and_then(event::int));
            t.stream = stream.or_else(|| ev.tid.and_then(event::int));
        }
    }
}
