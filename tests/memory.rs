//! Memory over time: every shared trace with `[memory]` events against an independent oracle
//! (`tests/oracle/memory_peaks.py`: peaks, the op at the peak, capacity), a written trace by
//! hand (series, peak, op, module, allocations per step), and the report's memory table.

mod common;
mod kineto;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::Path;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::memory::{DeviceId, Memory};
use torchtraceap::model::Trace;
use torchtraceap::report::Report;
use torchtraceap::timeline::Layout;

fn ingest(bytes: &[u8]) -> Option<Trace> {
    ingest_bytes(bytes, IngestOptions::default())
        .ok()
        .map(|i| i.trace)
}

fn read(path: &Path) -> Option<Trace> {
    ingest(&std::fs::read(path).expect("readable"))
}

#[test]
fn peaks_ops_and_capacity_agree_with_the_oracle_on_every_shared_trace() {
    let Some(dir) = common::shared_traces("the memory oracle checks") else {
        return;
    };
    let files = common::trace_files(&dir);
    let mut compared = 0;
    for line in oracle::run("memory_peaks.py", &files).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("oracle JSON");
        let path = Path::new(v["file"].as_str().expect("file"));
        // A trace the ingest refuses (`shared_traces.rs` checks which) has no memory to compare.
        let Some(t) = read(path) else { continue };
        let memory = Memory::of(&t);
        let want = v["devices"].as_object().expect("devices");
        assert_eq!(memory.devices.len(), want.len(), "{}", path.display());
        for d in &memory.devices {
            let key = format!("{}:{}", d.device.kind, d.device.index);
            let w = &want[&key];
            let at = format!("{}: {key}", path.display());
            assert_eq!(
                d.samples.len() as u64,
                w["events"].as_u64().unwrap(),
                "{at}"
            );
            assert_eq!(
                d.peak.as_ref().map(|p| p.allocated),
                w["peak_allocated"].as_i64(),
                "{at}"
            );
            assert_eq!(d.peak_reserved, w["peak_reserved"].as_i64(), "{at}");
            assert_eq!(d.capacity, w["capacity"].as_u64(), "{at}");
            let op = d
                .peak
                .as_ref()
                .and_then(|p| p.op)
                .map(|op| t.name_of(op as usize));
            assert_eq!(op, w["op"].as_str(), "{at}");
        }
        compared += 1;
    }
    assert!(
        compared >= 27,
        "only {compared} traces with memory events compared"
    );
}

/// Two steps on one thread: a module `Net_0` holding `Linear_0`, whose `aten::linear` reaches
/// the peak after its `aten::empty` ended; a host allocation; a 1 GiB device.
fn written() -> Trace {
    const MIB: u64 = 1 << 20;
    let c = |cat: &str, name: &str, span: (i64, i64)| kineto::complete(cat, name, (1, 1), span, "");
    let m = |ts: i64, bytes: i64, allocated: u64, reserved: u64| {
        kineto::memory(
            (1, 1),
            ts,
            (1, 0),
            bytes * MIB as i64,
            (allocated * MIB, reserved * MIB),
        )
    };
    let events = vec![
        c("user_annotation", "ProfilerStep#1", (0, 1000)),
        c("user_annotation", "ProfilerStep#2", (1000, 1000)),
        c("python_function", "nn.Module: Net_0", (10, 1900)),
        c("python_function", "nn.Module: Linear_0", (100, 400)),
        c("cpu_op", "aten::linear", (100, 300)),
        c("cpu_op", "aten::empty", (150, 10)),
        kineto::memory((1, 1), 50, (0, -1), 8, (8, 0)),
        m(155, 100, 100, 128),
        m(300, 50, 150, 256),
        m(600, -50, 100, 256),
        m(1100, 10, 110, 256),
        m(1200, -10, 100, 256),
    ];
    let text = kineto::document(
        &[kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 1 << 30)],
        "",
        &events,
        "memory",
    );
    ingest(text.as_bytes()).expect("the written trace is read")
}

#[test]
fn a_written_trace_by_hand() {
    const MIB: i64 = 1 << 20;
    let t = written();
    let memory = Memory::of(&t);
    assert_eq!(memory.events, 6);
    let devices: Vec<String> = memory.devices.iter().map(|d| d.device.label()).collect();
    assert_eq!(devices, ["cuda:0", "cpu"], "accelerators first");
    let gpu = &memory.devices[0];
    assert_eq!(gpu.device, DeviceId { kind: 1, index: 0 });
    let us = |ms: i64| ms * 1000;
    assert_eq!(
        gpu.series(false),
        [(155, 100), (300, 150), (600, 100), (1100, 110), (1200, 100)]
            .map(|(t, v)| (us(t), v * MIB))
    );
    assert_eq!(gpu.series(true).last(), Some(&(us(1200), 256 * MIB)));
    let peak = gpu.peak.as_ref().expect("a peak");
    assert_eq!(
        (peak.allocated, gpu.samples[peak.sample].at),
        (150 * MIB, us(300))
    );
    assert_eq!(
        peak.op.map(|op| t.name_of(op as usize)),
        Some("aten::linear")
    );
    assert_eq!(peak.module.as_deref(), Some("Net_0/Linear_0"));
    assert_eq!(gpu.peak_reserved, Some(256 * MIB));
    assert_eq!(gpu.capacity, Some(1 << 30));
    assert_eq!(gpu.allocations(0, us(1000)), (2, 150 * MIB));
    assert_eq!(gpu.allocations(us(1000), us(2000)), (1, 10 * MIB));
    assert_eq!(memory.devices[1].capacity, None, "the host has no capacity");

    let steady = [(1, 0, us(1000)), (2, us(1000), us(2000))];
    let s = memory.summary(&t, &steady);
    let d = &s.devices[0];
    assert_eq!((d.step, d.op.as_deref()), (Some(1), Some("aten::linear")));
    assert_eq!(d.allocations_per_step, Some(1.5));
    assert_eq!(d.allocated_bytes_per_step, Some(80.0 * MIB as f64));
    let pct = d.pct_of_capacity().unwrap();
    assert!((pct - 100.0 * 150.0 / 1024.0).abs() < 1e-9, "{pct}");
    assert_eq!(
        d.at_ms,
        Some(0.3 - 0.0),
        "from the trace's first event at 0"
    );
}

#[test]
fn the_timeline_track_draws_allocated_and_reserved_and_marks_the_peak() {
    const MIB: i64 = 1 << 20;
    let t = written();
    let layout = Layout::new(&t);
    let labels: Vec<&str> = layout.counters.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["memory, cuda:0", "memory, cpu"]);
    let gpu = &layout.counters[0];
    assert_eq!(gpu.points.len(), 5);
    assert_eq!(gpu.reserved.first(), Some(&(155_000, 128 * MIB)));
    assert_eq!(gpu.max, 256 * MIB, "reserved is the track's height");
    let peak = gpu.peak.as_ref().expect("the peak is marked");
    assert_eq!(
        (peak.at, peak.allocated, peak.reserved),
        (300_000, 150 * MIB, Some(256 * MIB))
    );
    assert_eq!(peak.op.as_deref(), Some("aten::linear"));
    assert_eq!(peak.capacity, Some(1 << 30));
}

fn report(t: &Trace) -> Report {
    let a = Analysis::new(t);
    Report::new(&a, &detect::run(&a))
}

#[test]
fn the_report_prints_the_table_and_says_when_there_are_no_memory_events() {
    let t = written();
    let md = report(&t).to_markdown("written");
    assert!(md.contains("## Memory\n\n6 memory events."), "{md}");
    assert!(
        md.contains("| cuda:0 | 150.0 MiB | 256.0 MiB | 14.6% of 1.0 GiB | `aten::linear` | `Net_0/Linear_0` | 1 |"),
        "{md}"
    );

    let Some(dir) = common::shared_traces("the report's memory table on real traces") else {
        return;
    };
    let with = read(&dir.join(
        "harryjmoss__particle_transformer/run1_chrome_traces__single_epoch_forward_pass_batch_size_512.json",
    ))
    .expect("read");
    let r = report(&with);
    let m = r.memory.as_ref().expect("a memory summary");
    assert_eq!(m.devices[0].device, "cuda:0");
    assert_eq!(m.devices[0].peak_allocated, Some(13_155_807_744));
    let back = Report::from_json(&serde_json::to_string(&r).unwrap()).expect("read back");
    assert_eq!(back.memory, r.memory);

    let without = read(&dir.join("AMD-AGI__TraceLens/tests__traces__b200__eager_trace.json.gz"))
        .expect("read");
    let r = report(&without);
    assert_eq!(r.memory.as_ref().map(|m| m.events), Some(0));
    assert!(r
        .to_markdown("b200")
        .contains("## Memory\n\nNo memory events (record with `profile_memory=True`)."));
}
