//! A trace and its analysis as one Chrome-trace JSON that Perfetto UI and `chrome://tracing`
//! open: the trace's events as normalized, and, in a process of their own ("TorchTraceAP
//! analysis"), a track per finding (a slice over each window holding its evidence:
//! `FindingEntry::windows`), a track of the windows the window model flags (with their
//! scores) and a track of the steps with their time split.
//!
//! The events are written back as `ingest` reads them (times in exact decimal microseconds,
//! each detail under the argument name it was read from, launch and forward→backward links
//! as flows where no correlation id makes them), so re-ingesting an export gives the same
//! events (the same fingerprint) and the same findings. The analysis is written as async
//! (`b`/`e`) slices, which Perfetto draws as tracks and `ingest` skips (it counts them as
//! skipped: [`Exported::annotations`]). Every string from the trace or report is escaped:
//! the export is valid JSON whatever names the trace holds.
//!
//! A trace too big to open whole ([`MAX_EVENTS`]) is exported for a range of steps: the events
//! that overlap it, and the links and annotations whose ends are all in it ([`Exported::cut`]).

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::analysis::Analysis;
use crate::attribution::Part;
use crate::ml::Model;
use crate::model::{EventKind, Trace, NONE};
use crate::report::Report;

/// Events a whole export may hold (about 400 MB of JSON, near what a browser tab opens); past
/// it, a range of steps is exported.
pub(crate) const MAX_EVENTS: usize = 2_000_000;

/// The process id of the analysis tracks ("ttap" in ASCII), away from real pids.
const ANALYSIS_PID: u32 = 0x7474_6170;

/// The category of the export's own slices; `ingest` skips their phase.
const FINDING_CAT: &str = "ttap.finding";
const WINDOW_CAT: &str = "ttap.window_model";
const STEP_CAT: &str = "ttap.step_split";

/// What an export holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exported {
    /// Events of the trace written.
    pub events: u64,
    /// Async slice ends (`b` and `e`) of the analysis tracks: what `ingest` skips on reading
    /// the export back.
    pub annotations: u64,
    /// Flow points written (launches without a shared correlation id, forward→backward).
    pub flows: u64,
    /// What a range of steps leaves out, in words; `None` for a whole export.
    pub cut: Option<String>,
}

/// Why a trace cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("writing the export failed: {0}")]
    Write(#[from] io::Error),
    #[error(
        "the trace has {events} events, more than a whole export holds ({MAX_EVENTS}: about what \
         Perfetto UI opens in a browser tab); export a range of steps (`--steps A..B`; this \
         trace's steps are {first}..{last})"
    )]
    TooBig {
        events: usize,
        first: i64,
        last: i64,
    },
    #[error("no step numbered {0} in this trace (its steps are {1}..{2}): choose steps it holds")]
    NoStep(i64, i64, i64),
}

/// Writes the Perfetto export of analysis `a` with its `report` to `out`: the whole trace, or
/// the steps numbered `steps.0..=steps.1`.
pub fn write(
    out: &mut impl Write,
    a: &Analysis<'_>,
    report: &Report,
    steps: Option<(i64, i64)>,
) -> Result<Exported, ExportError> {
    let t = a.trace;
    let all = &a.steps.steps;
    let (first, last) = (
        all.first().map_or(0, |s| s.number),
        all.last().map_or(0, |s| s.number),
    );
    let chosen = match steps {
        None if t.events.len() > MAX_EVENTS => {
            return Err(ExportError::TooBig {
                events: t.events.len(),
                first,
                last,
            })
        }
        None => None,
        Some((from, to)) => {
            let find = |n: i64| {
                all.iter()
                    .position(|s| s.number == n)
                    .ok_or(ExportError::NoStep(n, first, last))
            };
            let (i, j) = (find(from)?, find(to)?);
            Some((i.min(j), i.max(j)))
        }
    };
    let range = chosen.map(|(i, j)| (all[i].start, all[j].end));
    let mut w = Writer {
        out,
        first: true,
        done: Exported::default(),
    };
    w.out.write_all(b"{\"traceEvents\": [\n")?;
    w.metadata(ANALYSIS_PID, "process_name", "TorchTraceAP analysis")?;
    let kept = w.events(t, range)?;
    w.flows(t, &kept)?;
    w.analysis(a, report, chosen)?;
    if let Some((i, j)) = chosen {
        w.done.cut = Some(format!(
            "steps {}..{} of {first}..{last}: {} of {} events (those overlapping the steps), \
             links with both ends kept; read again, the first step kept counts as warm-up",
            all[i].number,
            all[j].number,
            w.done.events,
            t.events.len()
        ));
    }
    w.out.write_all(b"\n],\n")?;
    // The object's other members follow the event array: its `{` is already written.
    let head = top_level(t, &w.done);
    let head = serde_json::to_string(&head).expect("JSON values serialize");
    w.out.write_all(&head.as_bytes()[1..])?;
    w.out.write_all(b"\n")?;
    Ok(w.done)
}

/// The top-level values `ingest` reads, as the trace had them, and what the export holds.
fn top_level(t: &Trace, done: &Exported) -> Value {
    let m = &t.meta;
    let mut top = serde_json::Map::new();
    if let Some(v) = &m.schema_version {
        top.insert("schemaVersion".into(), number_or_text(v));
    }
    if let Some(v) = &m.trace_name {
        top.insert("traceName".into(), json!(v));
    }
    top.insert(
        "displayTimeUnit".into(),
        json!(m.display_time_unit.as_deref().unwrap_or("ms")),
    );
    if let Some(v) = m.base_time_ns {
        top.insert("baseTimeNanoseconds".into(), json!(v));
    }
    if !m.devices.is_empty() {
        let devices: Vec<Value> = m
            .devices
            .iter()
            .map(|d| {
                let fields = [
                    ("id", json!(d.id)),
                    ("name", json!(d.name)),
                    ("totalGlobalMem", json!(d.total_global_mem)),
                    ("computeMajor", json!(d.compute_major)),
                    ("computeMinor", json!(d.compute_minor)),
                    ("numSms", json!(d.num_sms)),
                    (
                        "maxThreadsPerMultiprocessor",
                        json!(d.max_threads_per_multiprocessor),
                    ),
                    ("regsPerMultiprocessor", json!(d.regs_per_multiprocessor)),
                    (
                        "sharedMemPerMultiprocessor",
                        json!(d.shared_mem_per_multiprocessor),
                    ),
                    ("warpSize", json!(d.warp_size)),
                ];
                Value::Object(
                    fields
                        .into_iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                )
            })
            .collect();
        top.insert("deviceProperties".into(), Value::Array(devices));
    }
    if m.rank.is_some() || m.world_size.is_some() || m.backend.is_some() {
        let mut d = serde_json::Map::new();
        for (k, v) in [
            ("rank", json!(m.rank)),
            ("world_size", json!(m.world_size)),
            ("backend", json!(m.backend)),
        ] {
            if !v.is_null() {
                d.insert(k.into(), v);
            }
        }
        top.insert("distributedInfo".into(), Value::Object(d));
    }
    top.insert(
        "ttapExport".into(),
        json!({
            "exporter": format!("torchtraceap@{}", env!("CARGO_PKG_VERSION")),
            "events": done.events,
            "analysis_events": done.annotations,
            "flows": done.flows,
            "cut": done.cut,
        }),
    );
    Value::Object(top)
}

/// `v` as a JSON number when it is an integer's canonical text, else as a string.
fn number_or_text(v: &str) -> Value {
    match v.parse::<i64>() {
        Ok(n) if n.to_string() == v => json!(n),
        _ => json!(v),
    }
}

/// Exact decimal microseconds of `ns` nanoseconds (as `ingest` reads them back).
fn micros(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

/// A JSON string of `s`, escaped.
fn text(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// A pid or tid as written: a number when it is one, else a string.
fn id(s: &str) -> String {
    match number_or_text(s) {
        Value::Number(n) => n.to_string(),
        _ => text(s),
    }
}

/// A float argument; a non-finite one (which JSON cannot hold) is left out.
fn float(v: f32) -> Option<String> {
    v.is_finite().then(|| v.to_string())
}

struct Writer<'w, W: Write> {
    out: &'w mut W,
    first: bool,
    done: Exported,
}

impl<W: Write> Writer<'_, W> {
    /// Writes one element of the event array.
    fn element(&mut self, element: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(element.as_bytes())
    }

    fn metadata(&mut self, pid: u32, name: &str, value: &str) -> io::Result<()> {
        self.element(&format!(
            r#"{{"ph": "M", "name": {}, "pid": {pid}, "tid": 0, "args": {{"name": {}}}}}"#,
            text(name),
            text(value)
        ))
    }

    /// The trace's events (those overlapping `range`, if one is given) and the names of their
    /// processes and threads; which events were written.
    fn events(&mut self, t: &Trace, range: Option<(i64, i64)>) -> io::Result<Vec<bool>> {
        let e = &t.events;
        let s = |id: u32| t.strings.get(id);
        for track in &t.tracks {
            let (pid, tid) = (id(s(track.pid)), id(s(track.tid)));
            if let Some(name) = track.process_name {
                self.element(&format!(
                    r#"{{"ph": "M", "name": "process_name", "pid": {pid}, "tid": {tid}, "args": {{"name": {}}}}}"#,
                    text(s(name))
                ))?;
            }
            if let Some(name) = track.thread_name {
                self.element(&format!(
                    r#"{{"ph": "M", "name": "thread_name", "pid": {pid}, "tid": {tid}, "args": {{"name": {}}}}}"#,
                    text(s(name))
                ))?;
            }
        }
        // PyTorch 2.2 is told by `baseTimeNanoseconds` or by `Concrete Inputs` on an op.
        let mut concrete =
            t.meta.era == crate::model::Era::Torch2_2 && t.meta.base_time_ns.is_none();
        let mut kept = vec![false; e.len()];
        for (k, track) in t.tracks.iter().enumerate() {
            let (pid, tid) = (id(s(track.pid)), id(s(track.tid)));
            for i in track.events.clone().map(|i| i as usize) {
                let (start, end) = (e.start[i], e.start[i] + e.dur[i]);
                if range
                    .is_some_and(|(lo, hi)| start >= hi || end < lo || (end == lo && e.dur[i] > 0))
                {
                    continue;
                }
                kept[i] = true;
                let kind = e.kind[i];
                let mut args = self.args(t, i, k);
                if concrete && matches!(kind, EventKind::CpuOp) {
                    if !args.iter().any(|(key, _)| key == "Concrete Inputs") {
                        args.push(("Concrete Inputs".into(), "[]".into()));
                    }
                    concrete = false;
                }
                let instant =
                    kind == EventKind::Memory || (kind == EventKind::Profiler && e.dur[i] == 0);
                let timing = if instant {
                    format!(r#""ph": "i", "s": "t", "ts": {}"#, micros(start))
                } else {
                    // As written: reading the export back clips the same records again.
                    format!(
                        r#""ph": "X", "ts": {}, "dur": {}"#,
                        micros(start),
                        micros(t.written_dur(i))
                    )
                };
                let args: Vec<String> = args
                    .into_iter()
                    .map(|(k, v)| format!("{}: {v}", text(&k)))
                    .collect();
                let cat = s(e.cat[i]);
                let cat = if cat.is_empty() {
                    String::new()
                } else {
                    format!(r#""cat": {}, "#, text(cat))
                };
                self.element(&format!(
                    r#"{{{timing}, {cat}"name": {}, "pid": {pid}, "tid": {tid}, "args": {{{}}}}}"#,
                    text(s(e.name[i])),
                    args.join(", ")
                ))?;
                self.done.events += 1;
            }
        }
        Ok(kept)
    }

    /// Event `i`'s details (on track `k`) as the arguments `ingest` reads them from, each value
    /// as JSON text.
    fn args(&self, t: &Trace, i: usize, k: usize) -> Vec<(String, String)> {
        let e = &t.events;
        let d = e.detail[i];
        let mut args: Vec<(String, String)> = Vec::new();
        let mut put = |key: &str, v: Option<String>| {
            if let Some(v) = v {
                args.push((key.to_string(), v));
            }
        };
        let dim3 = |v: [u32; 3]| format!("[{}, {}, {}]", v[0], v[1], v[2]);
        let collective = |c: Option<u32>, put: &mut dyn FnMut(&str, Option<String>)| {
            let Some(c) = c.and_then(|c| t.collectives.get(c as usize)) else {
                return;
            };
            let s = |v: Option<u32>| v.map(|v| text(t.strings.get(v)));
            put("Collective name", s(c.name));
            put("In msg nelems", c.in_elements.map(|v| v.to_string()));
            put("Out msg nelems", c.out_elements.map(|v| v.to_string()));
            put("Group size", c.group_size.map(|v| v.to_string()));
            put("dtype", s(c.dtype));
            put("Process Group Name", s(c.process_group));
        };
        let n = |v: Option<i64>| v.map(|v| v.to_string());
        let u = |v: Option<u64>| v.map(|v| v.to_string());
        match e.kind[i] {
            EventKind::GpuKernel | EventKind::Collective if d != NONE => {
                let k = t.details.kernel(d);
                put("device", n(k.device));
                put("stream", n(k.stream));
                put("correlation", u(k.correlation));
                put("grid", k.grid.map(dim3));
                put("block", k.block.map(dim3));
                put(
                    "registers per thread",
                    k.registers_per_thread.map(|v| v.to_string()),
                );
                put("shared memory", u(k.shared_memory));
                put("est. achieved occupancy %", k.occupancy_pct.and_then(float));
                collective(k.collective, &mut put);
            }
            EventKind::Memcpy | EventKind::Memset if d != NONE => {
                let c = t.details.copy(d);
                put("device", n(c.device));
                put("stream", n(c.stream));
                put("correlation", u(c.correlation));
                put("bytes", u(c.bytes));
                put("memory bandwidth (GB/s)", c.bandwidth_gbps.and_then(float));
            }
            EventKind::GpuUserAnnotation | EventKind::GpuSync => {
                let track = &t.tracks[k];
                put("device", n(track.device));
                put("stream", n(track.stream));
            }
            EventKind::RuntimeCall if d != NONE => {
                put("correlation", u(t.details.runtime(d).correlation));
            }
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::ProfilerStep if d != NONE => {
                let o = t.details.op(d);
                put("External id", u(o.external_id));
                put("Sequence number", u(o.sequence_number));
                let raw = |v: Option<u32>| v.map(|v| raw_json(t.strings.get(v)));
                put("Input Dims", raw(o.input_dims));
                put("Input type", raw(o.input_types));
                put("Concrete Inputs", raw(o.concrete_inputs));
                collective(o.collective, &mut put);
            }
            EventKind::Memory if d != NONE => {
                let m = t.details.memory(d);
                put("Bytes", Some(m.bytes.to_string()));
                put("Total Allocated", n(m.total_allocated));
                put("Total Reserved", n(m.total_reserved));
                put("Device Type", n(m.device_type));
                put("Device Id", n(m.device_id));
            }
            _ => {}
        }
        args
    }

    /// Flow points for the links no correlation id makes (launches) and the forward→backward
    /// links, where both ends were written.
    fn flows(&mut self, t: &Trace, kept: &[bool]) -> io::Result<()> {
        let correlation = |i: u32| {
            let d = t.events.detail[i as usize];
            if d == NONE {
                return None;
            }
            match t.events.kind[i as usize] {
                EventKind::GpuKernel | EventKind::Collective => t.details.kernel(d).correlation,
                EventKind::Memcpy | EventKind::Memset => t.details.copy(d).correlation,
                EventKind::RuntimeCall => t.details.runtime(d).correlation,
                _ => None,
            }
        };
        let launches = t
            .launches
            .iter()
            .filter(|l| {
                correlation(l.launch).is_none() || correlation(l.launch) != correlation(l.gpu)
            })
            .map(|l| ("ac2g", l.launch, l.gpu));
        let fwdbwd = t
            .forward_backward
            .iter()
            .map(|f| ("fwdbwd", f.forward, f.backward));
        let mut next = 1u64;
        for (cat, from, to) in launches.chain(fwdbwd) {
            if !(kept[from as usize] && kept[to as usize]) {
                continue;
            }
            for (end, i) in [(false, from), (true, to)] {
                let track = &t.tracks[t.events.track[i as usize] as usize];
                let ph = if end { r#""f", "bp": "e""# } else { r#""s""# };
                self.element(&format!(
                    r#"{{"ph": {ph}, "cat": "{cat}", "name": "{cat}", "id": {next}, "pid": {}, "tid": {}, "ts": {}}}"#,
                    id(t.strings.get(track.pid)),
                    id(t.strings.get(track.tid)),
                    micros(t.events.start[i as usize])
                ))?;
                self.done.flows += 1;
            }
            next += 1;
        }
        Ok(())
    }

    /// An async slice from `start` to `end` on the analysis process's track `track`.
    fn slice(
        &mut self,
        cat: &str,
        track: u64,
        name: &str,
        (start, end): (i64, i64),
        args: Value,
    ) -> io::Result<()> {
        self.begin(cat, track, name, start, args)?;
        self.end(cat, track, name, end)
    }

    fn begin(&mut self, cat: &str, track: u64, name: &str, ts: i64, args: Value) -> io::Result<()> {
        self.done.annotations += 1;
        self.element(&format!(
            r#"{{"ph": "b", "cat": "{cat}", "id": {track}, "name": {}, "pid": {ANALYSIS_PID}, "tid": 0, "ts": {}, "args": {args}}}"#,
            text(name),
            micros(ts)
        ))
    }

    fn end(&mut self, cat: &str, track: u64, name: &str, ts: i64) -> io::Result<()> {
        self.done.annotations += 1;
        self.element(&format!(
            r#"{{"ph": "e", "cat": "{cat}", "id": {track}, "name": {}, "pid": {ANALYSIS_PID}, "tid": 0, "ts": {}}}"#,
            text(name),
            micros(ts)
        ))
    }

    /// The analysis tracks: findings over their windows, the flagged windows, the steps' split;
    /// of the steps `chosen` (indices), if given.
    fn analysis(
        &mut self,
        a: &Analysis<'_>,
        report: &Report,
        chosen: Option<(usize, usize)>,
    ) -> io::Result<()> {
        let steps = &a.steps.steps;
        let within = |k: usize| chosen.is_none_or(|(i, j)| (i..=j).contains(&k));
        let mut track = 0u64;
        for f in &report.findings {
            track += 1;
            let mut windows: Vec<_> = f
                .windows
                .iter()
                .filter_map(|w| {
                    let k = steps.iter().position(|s| s.number == w.step)?;
                    let win = steps[k].windows.get(w.window)?;
                    within(k).then_some((win.start, win.end, w))
                })
                .collect();
            windows.sort_by_key(|&(start, ..)| start);
            for (start, end, w) in windows {
                let args = json!({
                    "id": f.id,
                    "title": f.title,
                    "severity": f.severity,
                    "ms_per_step": f.impact_ms_per_step,
                    "pct_of_step": f.impact_pct_of_step,
                    "step": w.step,
                    "phase": w.phase,
                    "claimed_ms_in_window": w.claimed_ms,
                    "evidence_events_in_window": w.evidence_events,
                    "fix": f.fix,
                });
                self.slice(FINDING_CAT, track, &f.id, (start, end), args)?;
            }
        }
        track += 1;
        let model = Model::embedded();
        for (w, entry) in a.steps.windows().zip(&report.windows) {
            let (Some(p), Some(kind)) = (entry.anomaly_probability, &entry.predicted_type) else {
                continue;
            };
            if !model.flags(p) || !within(w.step) {
                continue;
            }
            let args = json!({
                "score": p,
                "predicted_type": kind,
                "step": entry.step,
                "phase": entry.phase,
                "unexplained": report.unexplained.iter().any(|u| u.step == entry.step && u.start_ms == entry.start_ms),
            });
            let name = format!("flagged: {kind} ({p:.2})");
            self.slice(WINDOW_CAT, track, &name, (w.start, w.end), args)?;
        }
        track += 1;
        for (k, (s, split)) in steps.iter().zip(&a.splits).enumerate() {
            if !within(k) {
                continue;
            }
            let name = format!("step {}", s.number);
            let args = json!({ "step": s.number, "warmup": s.warmup, "duration_ms": s.dur() as f64 / 1e6 });
            self.begin(STEP_CAT, track, &name, s.start, args)?;
            let mut parts: Vec<(i64, i64, Part)> = Part::ALL
                .iter()
                .flat_map(|&p| split.intervals(p).iter().map(move |&(x, y)| (x, y, p)))
                .collect();
            parts.sort_unstable();
            for (x, y, p) in parts {
                self.slice(
                    STEP_CAT,
                    track,
                    p.label(),
                    (x, y),
                    json!({ "part": p.id() }),
                )?;
            }
            self.end(STEP_CAT, track, &name, s.end)?;
        }
        Ok(())
    }
}

/// A raw JSON fragment as the trace held it (`Input Dims`), or as a string when it is not
/// valid JSON on its own.
fn raw_json(fragment: &str) -> String {
    match serde_json::from_str::<serde::de::IgnoredAny>(fragment) {
        Ok(_) => fragment.to_string(),
        Err(_) => text(fragment),
    }
}
