//! The parallel ingest (`Ingest::parallel`) gives exactly the serial result: the same model
//! (every column, string and track id, detail and step) and the same report, or the same error,
//! on the bundled sample, generated traces, hand-made awkward inputs and every real trace in
//! `../shared/traces` (skipped, saying so, where it is absent), for several thread counts and
//! block sizes down to a few hundred bytes (where most cuts fall inside events and are framed
//! again), whether fed in chunks or reading their blocks from a file. Gzip read on two threads
//! (inflated by the feeding thread, framed in blocks by two others) reads as the plain input.
//!
//! The web app's workers (`ingest::blocks`) give the serial result too: byte ranges cut by
//! `range_start`, each framed alone, its state serialized with bincode (as a worker posts it),
//! read back and merged in order by `Ingest::blocks`, a range whose guess fails fed again.

mod common;
#[path = "common/twice.rs"]
mod twice;

use std::fmt::Write as _;
use std::hash::Hasher;
use std::io::Write as _;

use torchtraceap::ingest::blocks::{self, Framed, Start};
use torchtraceap::ingest::{ingest_bytes, Ingest, IngestOptions};
use torchtraceap_dev::synth::{self, Gpu, Model};

/// A digest of everything an ingest produced: the model's `Debug` form and the report's JSON,
/// or the error's `Debug` form.
fn digest(
    result: Result<torchtraceap::ingest::Ingested, torchtraceap::ingest::IngestError>,
) -> String {
    struct Hash(rustc_hash::FxHasher, usize);
    impl std::fmt::Write for Hash {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            self.1 += s.len();
            Ok(())
        }
    }
    let mut h = Hash(rustc_hash::FxHasher::default(), 0);
    match result {
        Ok(ingested) => {
            write!(h, "{:?}", ingested.trace).unwrap();
            let report = serde_json::to_string(&ingested.report).unwrap();
            format!("ok {:016x} ({} bytes of model) {report}", h.0.finish(), h.1)
        }
        Err(e) => format!("error {e:?}"),
    }
}

/// Feeds `bytes` in chunks of `chunk` to a parallel ingester.
fn parallel(bytes: &[u8], threads: usize, block: usize, chunk: usize) -> String {
    let mut ingest = Ingest::parallel(IngestOptions::default(), threads, block);
    for piece in bytes.chunks(chunk) {
        if let Err(e) = ingest.feed(piece) {
            return digest(Err(e));
        }
    }
    digest(ingest.finish())
}

/// A file in the temporary folder holding `bytes`, removed when dropped.
fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    file
}

/// Reads `bytes` from a file with an ingester on `threads` threads (`Ingest::read_file`: on
/// one, the file mapped in windows of `chunk` bytes; on more, each thread maps its own blocks
/// of a plain file).
fn from_file(bytes: &[u8], threads: usize, block: usize, chunk: usize) -> String {
    let path = temp_file(bytes);
    let file = std::fs::File::open(path.path()).unwrap();
    digest(
        Ingest::parallel(IngestOptions::default(), threads, block).read_file(&file, chunk, |_| {}),
    )
}

/// Checks every configuration against the serial ingest of `bytes`, fed in chunks and read
/// from a file (and on one thread, mapped in windows of the smallest chunk); returns the
/// serial digest.
fn same_as_serial(what: &str, bytes: &[u8], configs: &[(usize, usize, usize)]) -> String {
    let serial = digest(ingest_bytes(bytes, IngestOptions::default()));
    for &(threads, block, chunk) in configs {
        let got = parallel(bytes, threads, block, chunk);
        assert_eq!(
            got, serial,
            "{what}: {threads} threads, blocks of {block} B, chunks of {chunk} B differ from the serial ingest"
        );
        let got = from_file(bytes, threads, block, 1 << 16);
        assert_eq!(
            got, serial,
            "{what}: {threads} threads reading blocks of {block} B from a file differ from the serial ingest"
        );
    }
    let window = configs.iter().map(|c| c.2).min().unwrap_or(1 << 20);
    let got = from_file(bytes, 1, 0, window);
    assert_eq!(
        got, serial,
        "{what}: one thread reading a file in windows of {window} B differs from the serial ingest"
    );
    serial
}

/// Ingests `bytes` as the web app's workers do, in ranges of `range` bytes: each range's block
/// framed alone, serialized, read back and merged in order; returns the digest and how many
/// blocks were fed again because their guess failed.
fn by_ranges(bytes: &[u8], range: usize) -> (String, usize) {
    let len = bytes.len() as u64;
    let range = range as u64;
    let in_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[');
    let cut = |from: u64| match from {
        0 => 0,
        _ if from >= len => len,
        _ => blocks::range_start(bytes, 0, from, (from + range).min(len)).unwrap(),
    };
    let mut ingest = Ingest::blocks(IngestOptions::default());
    // As the browser's merging worker does: past 32 MiB, columns are sized for the whole input.
    ingest.expect_input_bytes(len);
    let mut fed = 0;
    for i in 0..len.div_ceil(range).max(1) {
        let (start, end) = (cut(i * range), cut((i + 1) * range));
        let how = if i == 0 {
            Start::Document
        } else {
            Start::Between(in_object)
        };
        let framed = blocks::frame(how, start, &bytes[start as usize..end as usize]);
        let posted = bincode::serialize(&framed).unwrap();
        let received: Framed = bincode::deserialize(&posted).unwrap();
        if !ingest.merge(received) {
            fed += 1;
            if let Err(e) = ingest.feed(&bytes[start as usize..end as usize]) {
                return (digest(Err(e)), fed);
            }
        }
    }
    (digest(ingest.finish()), fed)
}

/// Checks that `bytes` read by ranges of each size give the serial result; returns the number
/// of blocks fed again.
fn ranges_same_as_serial(what: &str, bytes: &[u8], ranges: &[usize]) -> usize {
    let serial = digest(ingest_bytes(bytes, IngestOptions::default()));
    let mut fed = 0;
    for &range in ranges {
        let (got, again) = by_ranges(bytes, range);
        assert_eq!(
            got, serial,
            "{what}: ranges of {range} B differ from the serial ingest"
        );
        fed += again;
    }
    fed
}

const CONFIGS: [(usize, usize, usize); 4] = [
    (2, 1 << 20, 1 << 20),
    (3, 64 << 10, 1 << 20),
    (4, 4 << 10, 1 << 16),
    (2, 300, 4096),
];

#[test]
fn the_bundled_sample_ingests_the_same_in_parallel() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/www/samples/resnet50-a100-dataloader.pt.trace.json.gz"
    );
    let gz = std::fs::read(path).unwrap();
    let serial = same_as_serial("sample (gzip)", &gz, &CONFIGS);
    assert!(serial.starts_with("ok"), "{serial}");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    same_as_serial("sample (plain)", &plain, &CONFIGS);
    ranges_same_as_serial("sample (plain)", &plain, &RANGES);
}

/// Range sizes for the workers' ingest: most cuts good, many cuts inside events.
const RANGES: [usize; 3] = [1 << 20, 64 << 10, 300];

#[test]
fn generated_traces_ingest_the_same_in_parallel() {
    for seed in 1..=4 {
        let config = synth::scenario(&Model::ALL, &[Gpu::A100, Gpu::H100], seed);
        let trace = synth::generate(&config).trace;
        let what = format!("generated, seed {seed}");
        let serial = same_as_serial(&what, trace.as_bytes(), &CONFIGS);
        assert!(serial.starts_with("ok"), "{serial}");
        ranges_same_as_serial(&what, trace.as_bytes(), &RANGES);
    }
}

/// Gzip input fed to a two-thread ingester is inflated by the feeding thread and framed in
/// blocks by two others: the model and report equal the plain input's, but for saying gzip.
#[test]
fn gzip_on_two_threads_reads_in_blocks_as_the_plain_input_reads() {
    for seed in [3, 8] {
        let config = synth::scenario(&Model::ALL, &[Gpu::A100, Gpu::H100], seed);
        let plain = synth::generate(&config).trace.into_bytes();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let want = digest(ingest_bytes(&plain, IngestOptions::default()));
        assert!(want.starts_with("ok"), "{want}");
        for (block, chunk) in [(1 << 20, 1 << 20), (16 << 10, 4096), (16 << 10, 7)] {
            let mut ingest = Ingest::parallel(IngestOptions::default(), 2, block);
            for piece in gz.chunks(chunk) {
                ingest.feed(piece).unwrap();
            }
            let got = digest(ingest.finish()).replacen(
                &format!("\"gzip\":true,\"input_bytes\":{}", gz.len()),
                &format!("\"gzip\":false,\"input_bytes\":{}", plain.len()),
                1,
            );
            assert_eq!(
                got, want,
                "seed {seed}, gzip in blocks of {block} B fed in chunks of {chunk} B"
            );
        }
    }
}

#[test]
fn awkward_inputs_ingest_the_same_in_parallel() {
    let event = |i: usize| {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::op{}", "pid": 1, "tid": {}, "ts": {}, "dur": 5, "args": {{"shapes": [{{"a": 1}}, {{"b": 2}}]}}}}"#,
            i % 7,
            i % 3,
            10 * i
        )
    };
    let body: Vec<String> = (0..400).map(event).collect();
    let one_line = format!(
        r#"{{"schemaVersion": 1, "traceEvents": [{}]}}"#,
        body.join(",")
    );
    let lines = format!(
        "{{\"schemaVersion\": 1,\n\"traceEvents\": [\n{}\n],\n\"deviceProperties\": []}}\n",
        body.join(",\n")
    );
    // B in one block, E in a later one; E without B; B never ended.
    let mut pairs = vec![
        r#"{"ph": "E", "cat": "user_annotation", "name": "x", "pid": 1, "tid": 9, "ts": 1}"#
            .to_string(),
    ];
    for i in 0..300 {
        pairs.push(format!(
            r#"{{"ph": "B", "cat": "user_annotation", "name": "outer{i}", "pid": 1, "tid": 9, "ts": {}}}"#,
            100 * i
        ));
        pairs.push(event(i));
    }
    for i in 0..250 {
        pairs.push(format!(
            r#"{{"ph": "E", "cat": "user_annotation", "pid": 1, "tid": 9, "ts": {}}}"#,
            100_000 + i
        ));
    }
    let nested = format!("{{\"traceEvents\": [\n{}\n]}}", pairs.join(",\n"));
    let array = format!("[\n{}\n]", body.join(",\n"));
    let cut = &lines[..lines.len() * 2 / 3];
    let broken = lines.replacen("aten::op3\"", "aten::\"op3\"", 5);
    let not_json = format!("\n\n\n{}", "x".repeat(5000));
    let bad_later = format!("{lines} trailing");
    // One event longer than several ranges, with `,{` in its arguments.
    let long = format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "long", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {{"list": [{}]}}}}"#,
        vec![r#"{"k": "v"}"#; 200].join(",\n ")
    );
    let mut with_long = body.clone();
    with_long.insert(200, long);
    let long_event = format!("{{\"traceEvents\": [\n{}\n]}}", with_long.join(",\n"));
    for (what, input) in [
        ("one line", one_line.as_str()),
        ("one event per line", &lines),
        ("B/E across blocks", &nested),
        ("top-level array", &array),
        ("cut off", cut),
        ("malformed events", &broken),
        ("not JSON", &not_json),
        ("data after the document", &bad_later),
        ("an event longer than a range", &long_event),
    ] {
        same_as_serial(what, input.as_bytes(), &CONFIGS);
        let fed = ranges_same_as_serial(what, input.as_bytes(), &RANGES);
        // Ranges of 300 B cut inside events with `,{` in their arguments: those are fed again.
        assert!(
            fed > 0 || what == "not JSON",
            "{what}: no range's guess failed"
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(input.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        same_as_serial(&format!("{what} (gzip)"), &gz, &CONFIGS);
        same_as_serial(&format!("{what} (cut gzip)"), &gz[..gz.len() / 2], &CONFIGS);
    }
}

#[test]
fn every_shared_trace_ingests_the_same_in_parallel() {
    let Some(dir) = common::shared_traces("every_shared_trace_ingests_the_same_in_parallel") else {
        return;
    };
    let files = common::trace_files(&dir);
    assert!(
        files.len() > 50,
        "{} traces in {}",
        files.len(),
        dir.display()
    );
    let mut ok = 0;
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let what = file.display().to_string();
        let serial = same_as_serial(
            &what,
            &bytes,
            &[(2, 1 << 20, 1 << 20), (3, 32 << 10, 1 << 20)],
        );
        ok += usize::from(serial.starts_with("ok"));
        // The browser reads gzip in one stream; its plain traces by ranges.
        if !bytes.starts_with(&[0x1f, 0x8b]) {
            ranges_same_as_serial(&what, &bytes, &[1 << 20, 32 << 10]);
        }
    }
    eprintln!(
        "{} real traces compared, {ok} of them ingested",
        files.len()
    );
    assert!(ok > 50);
}

#[test]
fn ranges_past_the_size_estimate_merge_into_the_serial_model() {
    let Some(dir) = common::shared_traces("parallel_ingest") else {
        return;
    };
    let json = twice::largest_real_twice(&dir);
    ranges_same_as_serial("HTA's control trace twice", &json, &[16 << 20]);
}

/// A generated trace of a few MiB (a ResNet-like training run on eight steps).
fn realistic_trace() -> Vec<u8> {
    let config = synth::scenario(&Model::ALL, &[Gpu::A100, Gpu::H100], 5);
    synth::generate(&config).trace.into_bytes()
}

/// Bytes of `path` mapped in this process now (Linux: `/proc/self/maps` names each mapping's
/// file).
#[cfg(target_os = "linux")]
fn mapped_bytes(path: &std::path::Path) -> u64 {
    let name = path.to_str().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|line| line.ends_with(name))
        .map(|line| {
            let (from, to) = line.split_once(' ').unwrap().0.split_once('-').unwrap();
            u64::from_str_radix(to, 16).unwrap() - u64::from_str_radix(from, 16).unwrap()
        })
        .sum()
}

/// A plain file is read through memory maps, never copied, a few windows at a time, never all
/// of it: on one thread one window (64 KiB) is mapped while it is framed; on two, at most the
/// blocks in flight. Either way the model is the serial ingest's.
#[cfg(target_os = "linux")]
#[test]
fn a_file_is_read_through_maps_of_a_few_windows_at_a_time() {
    const WINDOW: usize = 64 << 10;
    const BLOCK: usize = 128 << 10;
    let trace = realistic_trace();
    assert!(trace.len() > 20 * BLOCK, "{} bytes", trace.len());
    let serial = digest(ingest_bytes(&trace, IngestOptions::default()));
    assert!(serial.starts_with("ok"), "{serial}");
    let path = temp_file(&trace);
    for threads in [1, 2] {
        let file = std::fs::File::open(path.path()).unwrap();
        let mut mapped = Vec::new();
        let got = Ingest::parallel(IngestOptions::default(), threads, BLOCK).read_file(
            &file,
            WINDOW,
            |_| mapped.push(mapped_bytes(path.path())),
        );
        assert_eq!(digest(got), serial, "{threads} threads");
        assert_eq!(
            mapped_bytes(path.path()),
            0,
            "{threads} threads: unmapped at the end"
        );
        // A window or block is mapped from the page before it, and a block ends at the first cut
        // point after its nominal end (here within a few hundred bytes).
        let most = match threads {
            1 => (WINDOW + 4096) as u64,
            _ => ((threads + 2) * (BLOCK + 8192)) as u64,
        };
        assert!(
            mapped.iter().all(|&m| m <= most) && mapped.iter().any(|&m| m > 0),
            "{threads} threads: bytes mapped after each window or block {mapped:?}, at most {most}"
        );
        if threads == 1 {
            assert_eq!(
                mapped.len(),
                trace.len().div_ceil(WINDOW),
                "one step per window"
            );
            assert!(mapped.iter().all(|&m| m > 0), "{mapped:?}");
        }
    }
}

/// What cannot be mapped (a pipe, as `cat trace | ttap analyze /dev/stdin` gives) is read as it
/// comes, with the serial ingest's result, on one thread and on two.
#[cfg(unix)]
#[test]
fn a_pipe_is_read_as_it_comes_with_the_same_result() {
    let trace = realistic_trace();
    let serial = digest(ingest_bytes(&trace, IngestOptions::default()));
    assert!(serial.starts_with("ok"), "{serial}");
    for threads in [1, 2] {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let bytes = trace.clone();
        let writing = std::thread::spawn(move || writer.write_all(&bytes));
        let file = std::fs::File::from(std::os::fd::OwnedFd::from(reader));
        let got = Ingest::parallel(IngestOptions::default(), threads, 128 << 10).read_file(
            &file,
            1 << 16,
            |_| {},
        );
        drop(file);
        assert_eq!(digest(got), serial, "{threads} threads");
        writing.join().unwrap().unwrap();
    }
}

/// A file cut between two of its windows gives a read error that says so, never a crash (a
/// mapped page past a file's end, once touched, kills the process with SIGBUS).
#[cfg(unix)]
#[test]
fn a_file_cut_while_it_is_read_gives_an_error_not_a_crash() {
    let trace = realistic_trace();
    let path = temp_file(&trace);
    let file = std::fs::File::open(path.path()).unwrap();
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(path.path())
        .unwrap();
    let mut windows = 0;
    let got = Ingest::new(IngestOptions::default()).read_file(&file, 1 << 16, |_| {
        windows += 1;
        if windows == 2 {
            writer.set_len(trace.len() as u64 / 2).unwrap();
        }
    });
    let got = digest(got);
    assert!(
        got.starts_with("error Read") && got.contains("shrank to"),
        "{got}"
    );
}

/// Tracks whose events come out of time order, with many ties of start and duration, and
/// launches linked by correlation (several kernels to one call) and by flows: on several
/// threads each track is sorted in halves and merged, and flow points are bound on the thread
/// that builds the call trees; the model is the serial one, and ties keep their input order.
#[test]
fn tracks_out_of_time_order_sort_and_link_as_on_one_thread() {
    let mut events = Vec::new();
    // Rounds whose times overlap the previous round's, as concatenated profiles do.
    for i in 0..3000u64 {
        let (round, k) = (i / 500, i % 500);
        let ts = 40 * round + (k * 7) % 90;
        let tid = 1 + i % 2;
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": {tid}, "ts": {ts}, "dur": {}}}"#,
            k % 3
        ));
        if k % 5 == 0 {
            events.push(format!(
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": {tid}, "ts": {ts}, "dur": 1, "args": {{"correlation": {}}}}}"#,
                i / 10
            ));
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {}, "dur": 2, "args": {{"correlation": {}, "device": 0, "stream": 7}}}}"#,
                ts + 3,
                i / 10
            ));
        }
        if k % 7 == 0 {
            // A kernel without correlation, linked by a launch flow; a forward→backward flow
            // to the next op, which runs on the other thread at `next` (and one to the op after
            // the next on that thread).
            let next = 40 * round + ((k + 1) * 7) % 90;
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "f{i}", "pid": 0, "tid": 8, "ts": {}, "dur": 1, "args": {{"device": 0, "stream": 8}}}}"#,
                ts + 5
            ));
            let mut points = vec![
                ("s", "ac2g", tid, ts),
                ("f", "ac2g", 8, ts + 5),
                ("s", "fwdbwd", tid, ts),
                ("f", "fwdbwd", 3 - tid, next),
            ];
            if i % 3 == 0 {
                // Groups of three points, too: the halves of the points cut inside a group.
                points.push(("f", "fwdbwd", 3 - tid, 40 * round + ((k + 3) * 7) % 90));
            }
            for (ph, cat, tid, at) in points {
                events.push(format!(
                    r#"{{"ph": "{ph}", "cat": "{cat}", "name": "{cat}", "id": {i}, "pid": {}, "tid": {tid}, "ts": {at}, "bp": "e"}}"#,
                    if tid > 2 { 0 } else { 1 }
                ));
            }
        }
    }
    // Thread 1 holds more than half the events: thread 2's call trees are built on the
    // second thread.
    for j in 3000..5500u64 {
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op{j}", "pid": 1, "tid": 1, "ts": {}, "dur": {}}}"#,
            (j * 13) % 240,
            j % 40
        ));
    }
    let json = format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"));
    let serial = ingest_bytes(json.as_bytes(), IngestOptions::default()).unwrap();
    let t = &serial.trace;
    assert!(t.launches.len() > 600, "{} launches", t.launches.len());
    // Each launch joins a runtime call to a kernel (by correlation), or an event on a CPU
    // thread to a kernel without correlation (by a launch flow).
    use torchtraceap::model::EventKind;
    let called = |l: &torchtraceap::model::Launch| {
        let [call, kernel] = [l.launch, l.gpu].map(|i| t.strings.get(t.events.name[i as usize]));
        let on_cpu = t.events.kind[l.launch as usize] != EventKind::GpuKernel;
        on_cpu && (kernel.starts_with('f') || call == "cudaLaunchKernel" && kernel.starts_with('k'))
    };
    assert!(t.launches.iter().all(called));
    // Every forward→backward end binds to an op on the other thread: one link each.
    let ends = (0..3000u64)
        .filter(|i| i % 500 % 7 == 0)
        .map(|i| if i % 3 == 0 { 2 } else { 1 })
        .sum::<usize>();
    assert_eq!(t.forward_backward.len(), ends);
    let number = |i: usize| -> u64 {
        let name = t.strings.get(t.events.name[i]);
        name.trim_start_matches(|c: char| c.is_alphabetic())
            .parse()
            .unwrap_or(0)
    };
    let mut ties = 0;
    for track in &t.tracks {
        for i in track.events.start as usize + 1..track.events.end as usize {
            let key = |i: usize| (t.events.start[i], std::cmp::Reverse(t.events.dur[i]));
            assert!(
                key(i - 1) <= key(i),
                "track {}: not in time order",
                track.tid
            );
            let ops = [i - 1, i].map(|j| t.events.kind[j] == EventKind::CpuOp);
            if key(i - 1) == key(i) && ops == [true, true] {
                ties += 1;
                assert!(
                    number(i - 1) < number(i),
                    "track {}: a tie out of input order",
                    track.tid
                );
            }
        }
    }
    assert!(ties > 100, "{ties} ties");
    same_as_serial("tracks out of time order", json.as_bytes(), &CONFIGS);
}
