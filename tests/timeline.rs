//! The timeline engine: rows (nesting, overlaps without nesting, zero-duration and out-of-order
//! events), level-of-detail merging, hit testing, details and search, on small hand-written
//! Kineto traces, on a generated trace, and on every shared real trace.

mod common;

use torchtraceap::ingest::{ingest_bytes, ingest_reader, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::model::Trace;
use torchtraceap::report::Report;
use torchtraceap::timeline::{bands, inspect, lod, Layout};
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};

fn trace(events: &str) -> Trace {
    let json = format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA A100"}}], "traceEvents": [{events}]}}"#
    );
    ingest_bytes(json.as_bytes(), IngestOptions::default())
        .expect("the test trace ingests")
        .trace
}

fn cpu(name: &str, ts: f64, dur: f64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

fn kernel(name: &str, ts: f64, dur: f64, stream: i64, correlation: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": {stream}, "ts": {ts}, "dur": {dur}, "args": {{"device": 0, "stream": {stream}, "correlation": {correlation}}}}}"#
    )
}

fn launch(ts: f64, correlation: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 2, "args": {{"correlation": {correlation}}}}}"#
    )
}

/// Row of the event named `name` within its lane (0 = top).
fn row_in_lane(t: &Trace, l: &Layout, name: &str) -> u32 {
    let i = (0..t.events.len())
        .find(|&i| t.name_of(i) == name)
        .unwrap_or_else(|| panic!("{name} is in the trace"));
    let row = l.row_of[i];
    row - l.lanes[l.lane_of_row(row)].rows.start
}

#[test]
fn nested_ops_take_their_depth_and_every_event_gets_a_row() {
    let t = trace(
        &[
            cpu("outer", 0.0, 100.0),
            cpu("child_a", 10.0, 30.0),
            cpu("grandchild", 12.0, 5.0),
            cpu("child_b", 50.0, 40.0),
        ]
        .join(","),
    );
    let l = Layout::new(&t);
    assert_eq!(row_in_lane(&t, &l, "outer"), 0);
    assert_eq!(row_in_lane(&t, &l, "child_a"), 1);
    assert_eq!(row_in_lane(&t, &l, "grandchild"), 2);
    assert_eq!(row_in_lane(&t, &l, "child_b"), 1);
    assert!(l.row_of.iter().all(|&r| r != u32::MAX));
}

#[test]
fn overlapping_kernels_zero_duration_and_out_of_order_events_are_all_drawn() {
    // Written out of time order; two kernels on stream 7 overlap without nesting (the first is
    // clipped to the second's start: one stream runs one at a time); one is zero-duration, at
    // the same time as another.
    let t = trace(
        &[
            kernel("k_late", 50.0, 10.0, 7, 3),
            kernel("k_first", 0.0, 30.0, 7, 1),
            kernel("k_overlap", 20.0, 25.0, 7, 2),
            kernel("k_zero", 50.0, 0.0, 7, 4),
        ]
        .join(","),
    );
    let l = Layout::new(&t);
    assert_eq!(l.groups.len(), 1);
    assert!(l.groups[0].gpu);
    assert_eq!(l.groups[0].label, "GPU 0 (NVIDIA A100)");
    assert_eq!(l.lanes[0].label, "stream 7");
    assert_eq!(row_in_lane(&t, &l, "k_first"), 0);
    assert_eq!(
        row_in_lane(&t, &l, "k_overlap"),
        0,
        "a clipped overlap shares the row"
    );
    let placed: usize = l.rows.iter().map(|r| r.events.len()).sum();
    assert_eq!(placed, 4, "no event is dropped");
    // No row holds overlapping events, and each is in start order.
    for r in &l.rows {
        for w in r.events.windows(2) {
            let (a, b) = (w[0] as usize, w[1] as usize);
            assert!(t.events.end(a) <= t.events.start[b]);
        }
    }
    // The zero-duration kernel can be hit with a little slop.
    let zero = (0..t.events.len())
        .find(|&i| t.name_of(i) == "k_zero")
        .unwrap();
    assert_eq!(
        l.hit(&t, l.row_of[zero], 50_000 + 300, 500),
        Some(zero as u32)
    );
}

#[test]
fn zero_duration_events_at_one_instant_get_rows_of_their_own() {
    let t = trace(&[kernel("z1", 5.0, 0.0, 7, 1), kernel("z2", 5.0, 0.0, 7, 2)].join(","));
    let l = Layout::new(&t);
    assert_ne!(row_in_lane(&t, &l, "z1"), row_in_lane(&t, &l, "z2"));
    for i in 0..2u32 {
        assert_eq!(l.hit(&t, l.row_of[i as usize], 5_000, 10), Some(i));
    }
}

#[test]
fn hit_testing_finds_the_slice_under_the_pointer_and_nothing_in_gaps() {
    let t = trace(&[cpu("a", 0.0, 10.0), cpu("b", 20.0, 10.0)].join(","));
    let l = Layout::new(&t);
    let row = l.lanes[0].rows.start;
    let name = |hit: Option<u32>| hit.map(|i| t.name_of(i as usize).to_string());
    assert_eq!(name(l.hit(&t, row, 5_000, 0)).as_deref(), Some("a"));
    assert_eq!(name(l.hit(&t, row, 25_000, 0)).as_deref(), Some("b"));
    assert_eq!(l.hit(&t, row, 15_000, 0), None, "a gap hits nothing");
    assert_eq!(
        name(l.hit(&t, row, 18_000, 3_000)).as_deref(),
        Some("b"),
        "the nearest within the slop"
    );
    assert_eq!(l.hit(&t, row + 1, 5_000, 0), None, "no such row");
}

#[test]
fn level_of_detail_merges_sub_pixel_runs_and_keeps_wide_slices() {
    // 1000 kernels of 100 ns, 50 ns apart, then a wide one after a gap.
    let mut events: Vec<String> = (0..1000)
        .map(|k| kernel("tiny", k as f64 * 0.15, 0.1, 7, k))
        .collect();
    events.push(kernel("wide", 1000.0, 500.0, 7, 5000));
    let t = trace(&events.join(","));
    let l = Layout::new(&t);
    let row = &l.rows[l.lanes[0].rows.start as usize].events;
    // Zoomed in: 1 ns per pixel, everything is drawn as itself.
    let near = lod::spans(&t, row, &[], 0, 1_000, 1.0);
    assert!(near.iter().all(|s| s.merged == 1));
    assert_eq!(near.len(), 7, "the slices starting at 0, 150, …, 900 ns");
    // Zoomed out: 1 µs per pixel over 1.5 ms: the tiny run is one block, the wide one stays.
    let far = lod::spans(&t, row, &[], 0, 1_500_000, 1_000.0);
    assert_eq!(far.len(), 2, "{far:?}");
    assert_eq!(far[0].merged, 1000);
    assert_eq!(far[0].start, 0);
    assert_eq!(far[0].end, 999 * 150 + 100);
    assert_eq!(far[1].merged, 1);
    assert_eq!(t.name_of(far[1].event as usize), "wide");
    // Spans never overlap and stand for every event in range exactly once.
    let total: u32 = far.iter().map(|s| s.merged).sum();
    assert_eq!(total, 1001);
}

/// A row of `n` tiny kernels with gaps of varied size, some wide kernels among them.
fn busy_row(n: usize) -> Trace {
    let mut events = Vec::with_capacity(n);
    let mut ts = 0.0;
    for k in 0..n {
        let dur = if k % 5000 == 0 { 400.0 } else { 0.1 };
        events.push(kernel("k", ts, dur, 7, k as u64));
        ts += dur + if k % 20 == 0 { 5.0 } else { 0.1 } + (k % 7) as f64 * 0.05;
    }
    trace(&events.join(","))
}

#[test]
fn level_of_detail_work_is_bounded_by_pixels_not_events() {
    // 200,000 slices in a row: a 1000-pixel view returns at most ~2 spans per pixel.
    let t = busy_row(200_000);
    let l = Layout::new(&t);
    let row = &l.rows[l.lanes[0].rows.start as usize];
    assert!(!row.levels.is_empty(), "a row this long gets levels");
    let (from, to) = l.span;
    let ns_per_px = (to - from) as f64 / 1000.0;
    let spans = lod::spans(&t, &row.events, &row.levels, from, to, ns_per_px);
    assert!(spans.len() <= 2000, "{} spans", spans.len());
    let total: u64 = spans.iter().map(|s| s.merged as u64).sum();
    assert_eq!(total, row.events.len() as u64, "every event is in one span");
    for w in spans.windows(2) {
        assert!(w[0].end <= w[1].start, "spans do not overlap");
    }
}

/// What a list of spans draws: each span's extent, and whether it is a merged block.
fn drawn(spans: &[lod::Span]) -> Vec<(i64, i64, bool)> {
    spans
        .iter()
        .map(|s| (s.start, s.end, s.merged > 1))
        .collect()
}

#[test]
fn levels_draw_exactly_what_merging_the_events_draws() {
    let t = busy_row(100_000);
    let l = Layout::new(&t);
    let row = &l.rows[l.lanes[0].rows.start as usize];
    assert!(row.levels.len() >= 2, "{} levels", row.levels.len());
    let (from, to) = l.span;
    let whole = (to - from) as f64;
    for (width_px, at, share) in [
        (1000.0, 0.0, 1.0),
        (1500.0, 0.2, 1.0),
        (800.0, 0.2, 0.5),
        (1000.0, 0.37, 0.1),
        (1000.0, 0.5, 0.001),
        (977.0, 0.123_456, 0.3),
    ] {
        let a = from + (whole * at) as i64;
        let b = from + (whole * (at + share)) as i64;
        let ns_per_px = (b - a) as f64 / width_px;
        let fast = lod::spans(&t, &row.events, &row.levels, a, b, ns_per_px);
        let slow = lod::spans(&t, &row.events, &[], a, b, ns_per_px);
        assert_eq!(
            drawn(&fast),
            drawn(&slow),
            "{share} of the trace from {at}, {width_px} px"
        );
    }
}

#[test]
fn a_view_starting_inside_a_merged_block_draws_it_from_its_first_event_in_view() {
    // 5000 kernels of 100 ns, 100 ns apart, then one a second later: the finest level merges
    // the 5000 into one block of about 1 ms.
    let mut events: Vec<String> = (0..5000)
        .map(|k| kernel("k", k as f64 * 0.2, 0.1, 7, k))
        .collect();
    events.push(kernel("late", 1_000_000.0, 1.0, 7, 5000));
    let t = trace(&events.join(","));
    let l = Layout::new(&t);
    let row = &l.rows[l.lanes[0].rows.start as usize];
    assert!(!row.levels.is_empty());
    let (from, to) = (l.span.0 + 500_000, l.span.0 + 2_000_000);
    let fast = lod::spans(&t, &row.events, &row.levels, from, to, 100_000.0);
    let slow = lod::spans(&t, &row.events, &[], from, to, 100_000.0);
    assert_eq!(drawn(&fast), drawn(&slow));
    // From the first kernel ending in the range (the one at 500 µs) to the last of the run.
    assert_eq!(drawn(&fast), vec![(from, l.span.0 + 999_900, true)]);
}

#[test]
fn counter_columns_carry_the_value_and_keep_peaks() {
    let points = [(0, 10), (5, 50), (6, 20), (30, 40)];
    let cols = lod::counter_columns(&points, -10, 10.0, 5);
    // Columns: [-10,0) nothing yet; [0,10) peak 50; [10,20) 20 holds; [20,30) 20; [30,40) 40.
    assert_eq!(cols, vec![None, Some(50), Some(20), Some(20), Some(40)]);
}

#[test]
fn details_link_a_launch_and_its_kernel_both_ways_and_search_finds_names() {
    let t = trace(
        &[
            cpu("aten::conv2d", 0.0, 50.0),
            launch(10.0, 42),
            kernel("implicit_gemm_conv", 20.0, 30.0, 7, 42),
            kernel("other_kernel", 60.0, 5.0, 7, 43),
        ]
        .join(","),
    );
    let l = Layout::new(&t);
    let find = |name: &str| (0..t.events.len()).find(|&i| t.name_of(i) == name).unwrap() as u32;
    let k = inspect::details(&t, &l, find("implicit_gemm_conv"));
    assert_eq!(k.place.lane, "stream 7");
    assert_eq!(k.place.dur, 30_000);
    let by = k.launched_by.expect("the kernel's launch is known");
    assert_eq!(by.name, "cudaLaunchKernel");
    assert!(k.args.contains(&("correlation".into(), "42".into())));
    assert_eq!(k.graph, None, "a kernel launched alone");
    let launch = inspect::details(&t, &l, find("cudaLaunchKernel"));
    assert_eq!(launch.launched.len(), 1);
    assert_eq!(launch.launched[0].name, "implicit_gemm_conv");
    assert_eq!(launch.stack.len(), 1, "the launch runs inside the op");
    assert_eq!(launch.stack[0].name, "aten::conv2d");
    let op = inspect::details(&t, &l, find("aten::conv2d"));
    assert_eq!(op.self_time, 48_000, "the op's time less its launch call");
    let found = inspect::search(&t, &l, "KERNEL");
    assert_eq!(found.len(), 2, "cudaLaunchKernel and other_kernel");
    assert!(found
        .windows(2)
        .all(|w| t.events.start[w[0] as usize] <= t.events.start[w[1] as usize]));
    assert!(inspect::search(&t, &l, "  ").is_empty());
}

#[test]
fn a_generated_trace_has_bands_where_the_stall_was_injected() {
    let generated = generate(&Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 8,
        batch: 32,
        seed: 3,
        // The DataLoader stalls in steps 4 to 7, half of the 7 steady steps or more (a stall in
        // one step is a note, and has no band).
        injections: (4..8)
            .map(|step| Injection {
                pattern: AntiPattern::DataLoader,
                step,
                severity: 1.0,
            })
            .collect(),
        noise: false,
    });
    let ingested = ingest_bytes(generated.trace.as_bytes(), IngestOptions::default()).unwrap();
    let t = &ingested.trace;
    let a = Analysis::new(t);
    let detected = detect::run(&a);
    let report = Report::new(&a, &detected);
    let findings = detected.findings;
    let l = Layout::new(t);
    // Every event but the memory ones has a row; rows never overlap.
    for (i, &r) in l.row_of.iter().enumerate() {
        assert!(r != u32::MAX || t.events.kind[i] == torchtraceap::model::EventKind::Memory);
    }
    let b = bands::bands(&a, &findings, &report);
    assert!(
        findings.iter().any(|f| f.id == "dataloader-bottleneck"),
        "{:?}",
        findings.iter().map(|f| f.id).collect::<Vec<_>>()
    );
    for f in &findings {
        assert!(
            b.iter().any(|band| band.finding == f.id),
            "a band for {}",
            f.id
        );
    }
    for band in &b {
        assert!(band.start <= band.end);
        assert!(band.start >= l.span.0 && band.end <= l.span.1);
    }
    let scores = bands::scores(&a, &report);
    assert_eq!(scores.len(), report.windows.len());
}

#[test]
fn every_shared_trace_lays_out_without_losing_an_event() {
    let Some(dir) = common::shared_traces("every_shared_trace_lays_out_without_losing_an_event")
    else {
        return;
    };
    let mut checked = 0;
    for path in common::trace_files(&dir) {
        let file = std::fs::File::open(&path).unwrap();
        let Ok(ingested) = ingest_reader(file, IngestOptions::default(), 1 << 16, |_| {}) else {
            continue;
        };
        let t = &ingested.trace;
        let l = Layout::new(t);
        let placed: usize = l.rows.iter().map(|r| r.events.len()).sum();
        let memory = t
            .events
            .kind
            .iter()
            .filter(|&&k| k == torchtraceap::model::EventKind::Memory)
            .count();
        assert_eq!(placed + memory, t.events.len(), "{}", path.display());
        for r in &l.rows {
            for w in r.events.windows(2) {
                let (a, b) = (w[0] as usize, w[1] as usize);
                assert!(
                    t.events.end(a) <= t.events.start[b],
                    "{}: overlapping events in one row",
                    path.display()
                );
            }
        }
        assert_eq!(l.lanes.len(), t.tracks.len(), "{}", path.display());
        checked += 1;
    }
    assert!(checked > 50, "{checked} shared traces laid out");
}

#[test]
fn the_heat_strip_keeps_each_columns_highest_window_and_every_narrow_one() {
    let score = |start, end, probability| bands::Score {
        start,
        end,
        probability,
    };
    // Columns of 10 ns from 100: windows narrower than a column, one across columns, and one
    // that ends exactly where a column starts (it does not reach into that column).
    let scores = [
        score(100, 103, 0.2),
        score(103, 107, 0.9),
        score(107, 130, 0.1),
        score(145, 146, 0.6),
        score(160, 170, 0.3),
        score(500, 600, 1.0),
    ];
    let cols = lod::score_columns(&scores, 100, 10.0, 8);
    assert_eq!(
        cols,
        vec![
            Some(0.9),
            Some(0.1),
            Some(0.1),
            None,
            Some(0.6),
            None,
            Some(0.3),
            None
        ]
    );
    // Against each window tested on each column, at several scales.
    for ns_per_px in [0.5, 1.0, 3.0, 7.5, 40.0] {
        let cols = lod::score_columns(&scores, 90, ns_per_px, 200);
        for (c, got) in cols.iter().enumerate() {
            let (a, b) = (
                90.0 + c as f64 * ns_per_px,
                90.0 + (c + 1) as f64 * ns_per_px,
            );
            let meets = |s: &&bands::Score| {
                let (x0, x1) = (s.start as f64, s.end as f64);
                x0 < b && (x1 > a || x0 >= a)
            };
            let want = scores
                .iter()
                .filter(meets)
                .map(|s| s.probability)
                .reduce(f32::max);
            assert_eq!(*got, want, "column {c} at {ns_per_px} ns per pixel");
        }
    }
}
