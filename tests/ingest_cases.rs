//! Every input case the trace engine must handle, on small traces written here: the formats and
//! eras it reads, and the bad inputs it must refuse or survive.

use std::io::Write;

use torchtraceap::ingest::{
    ingest_bytes, skip_reasons, Ingest, IngestError, IngestOptions, Ingested,
};
use torchtraceap::model::{CopyDirection, EventKind, HostMemory, RuntimeClass, StepSource, NONE};

fn read(text: &str) -> Ingested {
    ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn read_err(bytes: &[u8]) -> IngestError {
    ingest_bytes(bytes, IngestOptions::default()).expect_err("input must be refused")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A small 2.x-era training step: a step, ops, a launch, its kernel, a memcpy, a memory event.
const MODERN: &str = r#"{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
                        "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 1000.0, "dur": 900.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 10, "tid": 10, "ts": 1010.5, "dur": 100.25,
     "args": {"External id": 5, "Input Dims": [[32, 3, 224, 224], [64, 3, 7, 7]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1020.0, "dur": 5.0,
     "args": {"correlation": 77, "External id": 5}},
    {"ph": "X", "cat": "kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": 7, "ts": 1030.0, "dur": 50.0,
     "args": {"correlation": 77, "device": 0, "stream": 7, "grid": [128, 1, 1], "block": [256, 1, 1],
              "registers per thread": 64, "shared memory": 4096, "est. achieved occupancy %": 50}},
    {"ph": "X", "cat": "kernel", "name": "zero_time_kernel", "pid": 0, "tid": 7, "ts": 1090.0, "dur": 0,
     "args": {"correlation": 78, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1100, "dur": 20,
     "args": {"correlation": 79, "device": 0, "stream": 7, "bytes": 1048576, "memory bandwidth (GB/s)": 52.4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 10, "tid": 10, "ts": 1200, "dur": 30,
     "args": {"correlation": 80}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": 10, "ts": 1015, "s": "t",
     "args": {"Bytes": 2048, "Total Allocated": 4096, "Total Reserved": 2097152, "Device Type": 1, "Device Id": 0, "Addr": 94000000}},
    {"ph": "s", "cat": "ac2g", "id": 77, "pid": 10, "tid": 10, "ts": 1020.0, "name": "ac2g"},
    {"ph": "f", "cat": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": 1030.0, "bp": "e", "name": "ac2g"},
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": "python main thread"}}
  ],
  "traceName": "rank3.pt.trace.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1700000000000000000
}"#;

#[test]
fn a_modern_kineto_trace_becomes_the_model() {
    let Ingested { trace: t, report } = read(MODERN);
    assert_eq!(report.elements, 12);
    assert_eq!(report.metadata_events, 2);
    assert_eq!(report.flow_events, 2);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(t.events.len(), 8);
    assert_eq!(t.meta.rank, Some(3));
    assert_eq!(t.meta.world_size, Some(8));
    assert_eq!(t.meta.backend.as_deref(), Some("nccl"));
    assert_eq!(t.meta.base_time_ns, Some(1_700_000_000_000_000_000));
    assert_eq!(
        t.meta.devices[0].name.as_deref(),
        Some("NVIDIA A100-SXM4-80GB")
    );
    assert_eq!(t.meta.devices[0].num_sms, Some(108));
    assert_eq!(t.meta.era, torchtraceap::model::Era::Torch2_2);

    let find = |name: &str| (0..t.events.len()).find(|&i| t.name_of(i) == name).unwrap();
    let conv = find("aten::conv2d");
    assert_eq!(t.events.start[conv], 1_010_500);
    assert_eq!(t.events.dur[conv], 100_250);
    let op = t.details.op(t.events.detail[conv]);
    assert_eq!(
        t.strings.get(op.input_dims.unwrap()),
        "[[32, 3, 224, 224], [64, 3, 7, 7]]"
    );
    assert_eq!(op.external_id, Some(5));

    // The call tree: step > conv2d > launch; the sync is a child of the step.
    let step = find("ProfilerStep#7");
    let launch = find("cudaLaunchKernel");
    let sync = find("cudaStreamSynchronize");
    assert_eq!(t.events.parent[conv], step as u32);
    assert_eq!(t.events.parent[launch], conv as u32);
    assert_eq!(t.events.depth[launch], 2);
    assert_eq!(t.events.parent[sync], step as u32);
    assert_eq!(
        t.details.runtime(t.events.detail[sync]).class,
        RuntimeClass::Synchronize
    );

    // Launch → kernel by correlation id, with the kernel's launch configuration.
    let kernel = find("implicit_convolve_sgemm");
    assert_eq!(t.launch_of(kernel as u32), Some(launch as u32));
    let k = t.details.kernel(t.events.detail[kernel]);
    assert_eq!(
        (k.grid, k.block, k.registers_per_thread),
        (Some([128, 1, 1]), Some([256, 1, 1]), Some(64))
    );
    assert_eq!(k.occupancy_pct, Some(50.0));

    let zero = find("zero_time_kernel");
    assert_eq!(
        (t.events.kind[zero], t.events.dur[zero]),
        (EventKind::GpuKernel, 0)
    );

    let copy = find("Memcpy HtoD (Pageable -> Device)");
    let c = t.details.copy(t.events.detail[copy]);
    assert_eq!(
        (c.direction, c.host_memory, c.bytes),
        (
            CopyDirection::HostToDevice,
            HostMemory::Pageable,
            Some(1 << 20)
        )
    );

    let mem = find("[memory]");
    assert_eq!(t.events.kind[mem], EventKind::Memory);
    let m = t.details.memory(t.events.detail[mem]);
    assert_eq!(
        (m.bytes, m.total_allocated, m.device_id),
        (2048, Some(4096), Some(0))
    );

    // Tracks: the GPU stream and the CPU thread, with their metadata names.
    let gpu = t.tracks.iter().find(|tr| tr.gpu).unwrap();
    assert_eq!((gpu.device, gpu.stream), (Some(0), Some(7)));
    assert_eq!(gpu.process_name.map(|s| t.strings.get(s)), Some("GPU 0"));
    let cpu = t.tracks.iter().find(|tr| !tr.gpu).unwrap();
    assert_eq!(
        cpu.thread_name.map(|s| t.strings.get(s)),
        Some("python main thread")
    );

    assert_eq!(t.step_source, StepSource::ProfilerSteps);
    assert_eq!(
        (t.steps[0].number, t.steps[0].start, t.steps[0].end),
        (7, 1_000_000, 1_900_000)
    );
}

#[test]
fn gzip_is_recognised_by_its_bytes_and_gives_the_same_model() {
    let plain = read(MODERN);
    let packed = ingest_bytes(&gzip(MODERN.as_bytes()), IngestOptions::default()).unwrap();
    assert!(packed.report.gzip && !plain.report.gzip);
    assert_eq!(packed.trace.events.start, plain.trace.events.start);
    assert_eq!(packed.trace.events.kind, plain.trace.events.kind);
    assert_eq!(packed.report.categories, plain.report.categories);
    assert_eq!(packed.report.json_bytes, MODERN.len() as u64);
}

#[test]
fn chunk_boundaries_anywhere_give_the_same_model() {
    let whole = read(MODERN);
    let gz = gzip(MODERN.as_bytes());
    for size in [1, 2, 3, 7, 64, 333] {
        for input in [MODERN.as_bytes(), &gz[..]] {
            let mut ingest = Ingest::new(IngestOptions::default());
            for chunk in input.chunks(size) {
                ingest.feed(chunk).unwrap();
            }
            let got = ingest.finish().unwrap();
            assert_eq!(
                got.trace.events.start, whole.trace.events.start,
                "chunk size {size}"
            );
            assert_eq!(
                got.trace.events.parent, whole.trace.events.parent,
                "chunk size {size}"
            );
            assert_eq!(
                got.trace.launches, whole.trace.launches,
                "chunk size {size}"
            );
        }
    }
}

/// PyTorch 1.8–1.10: capitalised categories, `async` flows, string tids, no correlation args.
const OLD: &str = r#"{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#2", "pid": 5, "tid": "5", "ts": 100, "dur": 500},
  {"ph": "X", "cat": "Operator", "name": "aten::addmm", "pid": 5, "tid": "5", "ts": 110, "dur": 50},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": "5", "ts": 120, "dur": 10},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x32_nt", "pid": 0, "tid": "stream 7", "ts": 140, "dur": 30},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": "stream 7", "ts": 200, "dur": 5},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 210, "dur": 1},
  {"ph": "s", "cat": "async", "id": 9, "pid": 5, "tid": "5", "ts": 120, "name": "launch"},
  {"ph": "f", "cat": "async", "id": 9, "pid": 0, "tid": "stream 7", "ts": 140, "bp": "e", "name": "launch"}
]}"#;

#[test]
fn the_capitalised_era_reads_the_same_kinds_and_links_launches_by_flow() {
    let Ingested { trace: t, .. } = read(OLD);
    assert_eq!(t.meta.era, torchtraceap::model::Era::Torch1_8);
    let kinds: Vec<EventKind> = t.count_by_kind().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        vec![
            EventKind::CpuOp,
            EventKind::ProfilerStep,
            EventKind::GpuKernel,
            EventKind::Memcpy,
            EventKind::Memset,
            EventKind::RuntimeCall
        ]
    );
    let kernel = (0..t.events.len())
        .find(|&i| t.events.kind[i] == EventKind::GpuKernel)
        .unwrap();
    let launch = t
        .launch_of(kernel as u32)
        .expect("linked by the async flow");
    assert_eq!(t.name_of(launch as usize), "cudaLaunchKernel");
    let gpu = t.tracks.iter().find(|tr| tr.gpu).unwrap();
    assert_eq!(t.strings.get(gpu.tid), "stream 7");
}

#[test]
fn forward_ops_are_linked_to_their_backward_by_fwdbwd_flows() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 2, "ts": 50, "dur": 8},
      {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 2, "ts": 51, "dur": 6},
      {"ph": "s", "cat": "fwdbwd", "id": 3, "pid": 1, "tid": 1, "ts": 10, "name": "fwdbwd"},
      {"ph": "f", "cat": "fwdbwd", "id": 3, "pid": 1, "tid": 2, "ts": 51, "bp": "e", "name": "fwdbwd"}
    ]}"#;
    let t = read(text).trace;
    assert_eq!(t.forward_backward.len(), 1);
    let link = t.forward_backward[0];
    assert_eq!(t.name_of(link.forward as usize), "aten::linear");
    assert_eq!(t.name_of(link.backward as usize), "AddmmBackward0");
}

#[test]
fn rocm_runtime_calls_and_rccl_kernels_are_classified() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 3}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipMalloc", "pid": 1, "tid": 1, "ts": 4, "dur": 2},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "pid": 2, "tid": 0, "ts": 5, "dur": 9,
       "args": {"correlation": 3, "device": 2, "stream": 0, "Collective name": "allreduce", "In msg nelems": 1024, "Group size": 8, "dtype": "Float"}}
    ]}"#;
    let t = read(text).trace;
    let classes: Vec<RuntimeClass> = (0..t.events.len())
        .filter(|&i| t.events.kind[i] == EventKind::RuntimeCall)
        .map(|i| t.runtime_class(i))
        .collect();
    assert!(classes.contains(&RuntimeClass::Launch) && classes.contains(&RuntimeClass::Malloc));
    let k = (0..t.events.len())
        .find(|&i| t.events.kind[i] == EventKind::Collective)
        .unwrap();
    let detail = t.details.kernel(t.events.detail[k]);
    let c = &t.collectives[detail.collective.unwrap() as usize];
    assert_eq!((c.in_elements, c.group_size), (Some(1024), Some(8)));
    assert_eq!(t.strings.get(c.name.unwrap()), "allreduce");
    assert!(t.launch_of(k as u32).is_some());
}

#[test]
fn a_bare_array_with_begin_end_pairs_attr_string_numbers_and_huge_tids() {
    let text = r#"[
      {"attr": {"Power": "3620872431"}, "name": "outer", "ph": "B", "pid": 0, "tid": 15514734831341844875, "ts": "2097962447511.067", "cat": "cpu_op"},
      {"name": "inner", "ph": "B", "pid": 0, "tid": 15514734831341844875, "ts": 2097962447600, "cat": "cpu_op"},
      {"name": "inner", "ph": "E", "pid": 0, "tid": 15514734831341844875, "ts": 2097962447700.5},
      {"name": "outer", "ph": "E", "pid": 0, "tid": 15514734831341844875, "ts": 2097962448599.869},
      {"name": "dangling", "ph": "E", "pid": 0, "tid": 1, "ts": 1},
      {"name": "never ends", "ph": "B", "pid": 0, "tid": 2, "ts": 1, "cat": "cpu_op"}
    ]"#;
    let Ingested { trace: t, report } = read(text);
    assert_eq!(t.meta.container, torchtraceap::model::Container::Array);
    assert_eq!(t.events.len(), 2);
    let outer = (0..2).find(|&i| t.name_of(i) == "outer").unwrap();
    let inner = 1 - outer;
    assert_eq!(t.events.start[outer], 2_097_962_447_511_067);
    assert_eq!(t.events.dur[outer], 1_088_802);
    assert_eq!(t.events.parent[inner], outer as u32);
    assert_eq!(
        t.strings.get(t.tracks[t.events.track[0] as usize].tid),
        "15514734831341844875"
    );
    assert_eq!(
        report.skipped.get(skip_reasons::UNMATCHED_END),
        Some(&1),
        "{:?}",
        report.skipped
    );
    assert_eq!(report.skipped.get(skip_reasons::UNMATCHED_BEGIN), Some(&1));
}

#[test]
fn events_of_many_interleaved_tracks_each_land_on_their_own() {
    // More tracks than the reader's cache holds, interleaved, with pids and tids written as
    // numbers and as strings (one track: the text is the same) and swapped.
    let mut events = Vec::new();
    for round in 0..3 {
        for pid in 0..12 {
            for tid in 0..12 {
                let (p, t) = match (pid + tid + round) % 3 {
                    0 => (format!("{pid}"), format!("{tid}")),
                    1 => (format!("\"{pid}\""), format!("{tid}")),
                    _ => (format!("{pid}"), format!("\"{tid}\"")),
                };
                events.push(format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "{pid}/{tid}", "pid": {p}, "tid": {t}, "ts": {round}, "dur": 1}}"#
                ));
            }
        }
    }
    let t = read(&format!("[{}]", events.join(",\n"))).trace;
    assert_eq!(t.events.len(), 3 * 144);
    assert_eq!(t.tracks.len(), 144);
    for i in 0..t.events.len() {
        let track = &t.tracks[t.events.track[i] as usize];
        let written = format!("{}/{}", t.strings.get(track.pid), t.strings.get(track.tid));
        assert_eq!(t.name_of(i), written);
    }
}

#[test]
fn integers_beyond_64_bits_in_arguments_are_read() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
       "args": {"Comms Id": 10159970886766084423, "Huge": 123456789012345678901234567890, "External id": 99999999999999999999999}},
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 2, "dur": 3}
    ]}"#;
    let t = read(text).trace;
    assert_eq!(t.events.len(), 2);
    let op = (0..t.events.len())
        .find(|&i| t.events.kind[i] == EventKind::CpuOp)
        .unwrap();
    assert_eq!(
        t.details.op(t.events.detail[op]).external_id,
        Some(u64::MAX)
    );
}

#[test]
fn events_out_of_time_order_are_sorted_and_nested() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
      {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 50, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
      {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 40, "dur": 5}
    ]}"#;
    let t = read(text).trace;
    let names: Vec<&str> = (0..t.events.len()).map(|i| t.name_of(i)).collect();
    let cpu_first = names[0] == "parent";
    let order: Vec<&str> = if cpu_first {
        names.clone()
    } else {
        names[2..].iter().chain(&names[..2]).copied().collect()
    };
    assert_eq!(order, vec!["parent", "child", "k1", "k2"]);
    let child = names.iter().position(|&n| n == "child").unwrap();
    let parent = names.iter().position(|&n| n == "parent").unwrap();
    assert_eq!(t.events.parent[child], parent as u32);
    assert_eq!(t.events.parent[parent], NONE);
}

/// A track out of time order is sorted by start, longest first, and events that tie on both
/// keep their order in the file.
#[test]
fn an_unsorted_track_keeps_the_file_order_of_ties() {
    let events = [
        ("late", 90, 1),
        ("tie1", 20, 5),
        ("short", 20, 2),
        ("tie2", 20, 5),
        ("long", 20, 50),
        ("tie3", 20, 5),
        ("first", 10, 1),
    ]
    .map(|(name, ts, dur)| {
        format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#)
    });
    let t = read(&format!("{{\"traceEvents\": [{}]}}", events.join(",\n"))).trace;
    let names: Vec<&str> = (0..t.events.len()).map(|i| t.name_of(i)).collect();
    assert_eq!(
        names,
        ["first", "long", "tie1", "tie2", "tie3", "short", "late"]
    );
}

#[test]
fn malformed_single_events_are_skipped_and_counted_by_reason() {
    let text = "{\"traceEvents\": [
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"no ts\", \"pid\": 1, \"tid\": 1, \"dur\": 1},
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"no dur\", \"pid\": 1, \"tid\": 1, \"ts\": 1},
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"negative\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": -5},
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"absurd\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 7.6e18},
      {\"cat\": \"cpu_op\", \"name\": \"no phase\", \"ts\": 1},
      42,
      {\"ph\": \"X\", \"name\": \"bad json\" \"ts\": 1},
      {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\u{e9} \u{4e2d}\u{6587} \u{1f600}\", \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 1}
    ]}";
    let Ingested { trace: t, report } = read(text);
    assert_eq!(t.events.len(), 2);
    assert!(t
        .strings
        .find("caf\u{e9} \u{4e2d}\u{6587} \u{1f600}")
        .is_some());
    let s = &report.skipped;
    assert_eq!(s.get(skip_reasons::BAD_TS), Some(&1));
    assert_eq!(s.get(skip_reasons::BAD_DUR), Some(&2));
    assert_eq!(s.get(skip_reasons::NEGATIVE_DUR), Some(&1));
    assert_eq!(s.get(skip_reasons::NO_PHASE), Some(&1));
    assert_eq!(s.get(skip_reasons::MALFORMED), Some(&1));
    assert_eq!(s.get(skip_reasons::NOT_AN_OBJECT), Some(&1));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("7 events were skipped")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn an_unescaped_quote_breaks_one_event_not_the_rest() {
    // Old Kineto versions wrote some names without escaping their quotes.
    let text = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "torch.nn.Module: "my" block", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "aten::sub", "pid": 1, "tid": 1, "ts": 4, "dur": 1}
]}"#;
    let Ingested { trace: t, report } = read(text);
    let names: Vec<&str> = (0..t.events.len()).map(|i| t.name_of(i)).collect();
    assert_eq!(names, vec!["aten::add", "aten::mul", "aten::sub"]);
    assert_eq!(report.skipped.get(skip_reasons::MALFORMED), Some(&1));
}

#[test]
fn a_malformed_event_is_read_the_same_whatever_the_chunk_size() {
    // Found by the fuzzer: fed in small chunks, this once lost every event after the broken one.
    let text = "[\n{\"ph\":\"X\",\"name\":\"a\"},\n{\"ph\":\"X\",\"name\":\"un\"escaped\",\"ts\":1,\"dur\":1},\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c\",\"ts\":2,\"dur\":1},\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"d\",\"ts\":3,\"dur\":1}\n]";
    let whole = read(text);
    assert_eq!((whole.report.elements, whole.trace.events.len()), (4, 2));
    for size in 1..=64 {
        let mut ingest = Ingest::new(IngestOptions::default());
        for chunk in text.as_bytes().chunks(size) {
            ingest.feed(chunk).unwrap();
        }
        let got = ingest.finish().unwrap();
        assert_eq!(got.report.elements, 4, "chunk size {size}");
        assert_eq!(
            got.report.skipped, whole.report.skipped,
            "chunk size {size}"
        );
        assert_eq!(
            got.trace.events.start, whole.trace.events.start,
            "chunk size {size}"
        );
    }
}

#[test]
fn invalid_utf8_in_a_name_is_replaced_not_fatal() {
    let mut bytes = br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "bad "#.to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(br#"", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}"#);
    let got = ingest_bytes(&bytes, IngestOptions::default()).unwrap();
    assert_eq!(got.trace.name_of(0), "bad \u{fffd}\u{fffd}");
    assert!(got
        .report
        .warnings
        .iter()
        .any(|w| w.contains("invalid UTF-8")));
}

#[test]
fn a_trace_cut_anywhere_keeps_every_complete_event_and_warns() {
    let full = read(MODERN);
    let bytes = MODERN.as_bytes();
    let start = MODERN.find("\"traceEvents\"").unwrap();
    // Where each element of the event array ends (its closing brace, followed by ',' or ']').
    let ends: Vec<usize> = (start..bytes.len())
        .filter(|&p| bytes[p] == b'}' && MODERN[p + 1..].trim_start().starts_with([',', ']']))
        .map(|p| p + 1)
        .collect();
    assert_eq!(ends.len() as u64, full.report.elements);
    for cut in start..bytes.len() - 1 {
        let got = match ingest_bytes(&bytes[..cut], IngestOptions::default()) {
            Ok(g) => g,
            // A cut before the first timed event leaves nothing to show.
            Err(IngestError::NoEvents { .. } | IngestError::CutBeforeEvents { .. }) => continue,
            Err(e) => panic!("cut at {cut}: {e}"),
        };
        assert!(got.report.truncated, "cut at {cut}");
        assert!(
            got.report.warnings.iter().any(|w| w.contains("cut off")),
            "cut at {cut}: {:?}",
            got.report.warnings
        );
        let complete = ends.iter().filter(|&&e| e <= cut).count() as u64;
        assert_eq!(got.report.elements, complete, "cut at {cut}");
    }
}

#[test]
fn a_gzip_stream_cut_anywhere_keeps_what_was_decoded_and_warns() {
    let text: String = {
        let events: Vec<String> = (0..2000)
            .map(|i| format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::op{}", "pid": 1, "tid": 1, "ts": {}, "dur": 1}}"#, i % 17, i * 2))
            .collect();
        format!("{{\"traceEvents\": [{}]}}", events.join(",\n"))
    };
    let gz = gzip(text.as_bytes());
    let mut previous = 0;
    for cut in (20..gz.len()).step_by(97) {
        let got = match ingest_bytes(&gz[..cut], IngestOptions::default()) {
            Ok(g) => g,
            Err(
                IngestError::NoEvents { .. }
                | IngestError::CutBeforeEvents { .. }
                | IngestError::BadGzip { .. },
            ) => continue,
            Err(e) => panic!("cut at {cut}: {e}"),
        };
        assert!(got.report.truncated);
        assert!(
            got.report
                .warnings
                .iter()
                .any(|w| w.contains("gzip stream is incomplete")),
            "{:?}",
            got.report.warnings
        );
        assert!(
            got.trace.events.len() >= previous,
            "more input never gives fewer events"
        );
        previous = got.trace.events.len();
    }
    assert!(previous > 1500, "late cuts keep most events ({previous})");
}

#[test]
fn non_json_input_is_named() {
    let e = read_err(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X");
    assert!(e.to_string().contains("AppleDouble"), "{e}");
    let e = read_err(b"PK\x03\x04rest of a zip");
    assert!(e.to_string().contains("zip archive"), "{e}");
    let e = read_err(b"hello world");
    assert!(matches!(e, IngestError::NotJson { .. }), "{e}");
    assert!(e.to_string().contains("cannot start a JSON document"));
    assert_eq!(read_err(b""), IngestError::Empty);
    assert_eq!(read_err(b" \n\t "), IngestError::Empty);
}

#[test]
fn json_that_is_no_trace_gets_its_own_message() {
    let e = read_err(br#"{"name": "resnet", "layers": [1, 2, 3]}"#);
    assert_eq!(
        e,
        IngestError::NoTraceEvents {
            keys: vec!["name".into(), "layers".into()]
        }
    );
    assert!(e.to_string().contains("without \"traceEvents\""));
    let e = read_err(br#"{"schema": "1.0.1", "pid": 7, "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]"}]}"#);
    assert!(matches!(e, IngestError::ExecutionTrace { .. }), "{e}");
    assert!(e.to_string().contains("execution trace") && e.to_string().contains("1.0.1"));
    let e = read_err(b"[[-1, 1, 37888, 7], [-1, 1, 512, 7]]");
    assert!(
        matches!(e, IngestError::MemoryTimeline { arrays: 2 }),
        "{e}"
    );
    let e = read_err(br#"{"traceEvents": []}"#);
    assert!(matches!(e, IngestError::NoEvents { .. }), "{e}");
    let e = read_err(br#"{"traceEvents": [] "x": 1}"#);
    assert!(matches!(e, IngestError::Syntax { offset: 19, .. }), "{e}");
}

#[test]
fn chrome_traces_from_other_tools_are_refused_unless_asked_for() {
    let tf = br#"{"traceEvents": [{"cat": "PERF", "pid": 1, "tid": 1, "ts": 826, "ph": "B", "name": "A"},
                                 {"cat": "PERF", "pid": 1, "tid": 1, "ts": 829, "ph": "E", "name": "A"}]}"#;
    let e = read_err(tf);
    assert!(
        matches!(e, IngestError::NotPyTorch { events: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("PERF (2)"));
    let accepted = ingest_bytes(
        tf,
        IngestOptions {
            accept_other_chrome_traces: true,
        },
    )
    .unwrap();
    assert_eq!(accepted.trace.events.len(), 1);
    assert_eq!(
        accepted.trace.meta.era,
        torchtraceap::model::Era::NotPyTorch
    );

    let paddle = br#"{"displayTimeUnit": "ms", "schemaVersion": "1.0.2", "span_indx": "0",
      "traceEvents": [{"name": "Conv2d", "cat": "Operator", "ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 2}], "ExtraInfo": {}}"#;
    assert_eq!(read_err(paddle), IngestError::PaddleTrace);
}

#[test]
fn a_trace_without_profiler_steps_is_one_step_over_its_span() {
    let t = read(
        r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 30, "dur": 5}
    ]}"#,
    )
    .trace;
    assert_eq!(t.step_source, StepSource::WholeTrace);
    assert_eq!(
        (t.steps.len(), t.steps[0].start, t.steps[0].end),
        (1, 10_000, 35_000)
    );
}

/// A CPU event on the main thread, times in µs.
fn cpu(cat: &str, name: &str, ts: i64, dur: i64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

/// `cudaLaunchKernel` at `ts` and its kernel on stream 7 from `at` for `dur` µs.
fn launch(correlation: u64, ts: i64, at: i64, dur: i64) -> [String; 2] {
    let args = format!(r#""args": {{"correlation": {correlation}, "device": 0, "stream": 7}}"#);
    [
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{"correlation": {correlation}}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": {at}, "dur": {dur}, {args}}}"#
        ),
    ]
}

fn trace_of(events: &[String]) -> String {
    format!(
        r#"{{"schemaVersion": 1, "traceEvents": [{}]}}"#,
        events.join(",\n")
    )
}

#[test]
fn a_loop_without_profiler_steps_is_cut_into_its_iterations() {
    // 4 iterations of 1 000 µs: the batch (400 µs), then `train_step` holding a matmul that
    // launches a 300 µs kernel; the last kernel ends 200 µs after the last `train_step`.
    let mut events = Vec::new();
    for k in 0..4 {
        let t = 1_000 + 1_000 * k;
        let next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
        events.push(cpu("user_annotation", next, t, 400));
        events.push(cpu("user_annotation", "train_step", t + 450, 500));
        events.push(cpu("cpu_op", "aten::mm", t + 460, 100));
        events.extend(launch(k as u64 + 1, t + 470, t + 650, 300 + 200 * (k / 3)));
    }
    let t = read(&trace_of(&events)).trace;
    assert_eq!(t.step_source, StepSource::RepeatedAnnotations);
    let steps: Vec<(i64, i64, i64)> = t.steps.iter().map(|s| (s.number, s.start, s.end)).collect();
    assert_eq!(
        steps,
        [
            (1, 1_000_000, 2_000_000),
            (2, 2_000_000, 3_000_000),
            (3, 3_000_000, 4_000_000),
            (4, 4_000_000, 5_150_000)
        ]
    );
}

#[test]
fn a_loop_of_ops_inside_one_range_is_cut_into_its_iterations() {
    // `torch.zeros` before `with record_function("model_inference")` around 5 iterations of
    // randn, to, linear, relu (100 µs apart).
    let mut events = vec![
        cpu("cpu_op", "aten::zeros", 0, 10),
        cpu("user_annotation", "model_inference", 100, 2_000),
    ];
    for k in 0..5 {
        for (j, op) in ["aten::randn", "aten::to", "aten::linear", "aten::relu"]
            .iter()
            .enumerate()
        {
            events.push(cpu("cpu_op", op, 110 + 400 * k + 100 * j as i64, 50));
        }
    }
    let t = read(&trace_of(&events)).trace;
    assert_eq!(t.step_source, StepSource::RepeatedOps);
    let starts: Vec<i64> = t.steps.iter().map(|s| s.start / 1_000).collect();
    assert_eq!(starts, [110, 510, 910, 1_310, 1_710]);
    assert_eq!(
        t.steps[4].end, 2_060_000,
        "the last iteration ends with its last op"
    );
}

#[test]
fn the_layers_of_one_forward_pass_are_not_iterations() {
    // An embedding, 6 identical layers, a head: one call.
    let mut names = vec!["aten::embedding"];
    for _ in 0..6 {
        names.extend(["aten::linear", "aten::relu"]);
    }
    names.push("aten::log_softmax");
    let events: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(k, op)| cpu("cpu_op", op, 100 * k as i64, 50))
        .collect();
    let t = read(&trace_of(&events)).trace;
    assert_eq!(t.step_source, StepSource::WholeTrace);
    assert_eq!(t.steps.len(), 1);
}

#[test]
fn the_first_batch_before_the_gpu_starts_is_in_the_step() {
    // Profiler start-up (an op at 0), the first batch from 1 000 to 9 000 µs, then the first
    // launch: the step runs from the batch to the end of the GPU work.
    let mut events = vec![
        cpu("cpu_op", "aten::empty", 0, 10),
        cpu(
            "user_annotation",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            1_000,
            8_000,
        ),
        cpu("cpu_op", "aten::mm", 9_100, 100),
    ];
    events.extend(launch(1, 9_110, 9_200, 500));
    let t = read(&trace_of(&events)).trace;
    assert_eq!(t.step_source, StepSource::WholeTrace);
    assert_eq!((t.steps[0].start, t.steps[0].end), (1_000_000, 9_700_000));
}
