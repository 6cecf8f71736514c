//! The trace-event writer of the detector tests (`detectors.rs`, `op_patterns.rs`): Kineto's
//! JSON for one event and for the whole document, written in one place. What to write, and
//! when, is each test file's own builder.

/// A `deviceProperties` entry for device `id` (`totalGlobalMem` in bytes, 108 SMs).
pub fn device(id: i64, name: &str, compute_major: i64, total_memory: u64) -> String {
    format!(
        r#"{{"id": {id}, "name": "{name}", "totalGlobalMem": {total_memory}, "computeMajor": {compute_major}, "computeMinor": 0, "numSms": 108}}"#
    )
}

/// One complete (`"ph": "X"`) event at `(pid, tid)` over `(ts, dur)` in µs; `args` is the
/// inside of its `args` object, none when empty.
pub fn complete(cat: &str, name: &str, place: (i64, i64), span: (i64, i64), args: &str) -> String {
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(r#", "args": {{{args}}}"#)
    };
    let ((pid, tid), (ts, dur)) = (place, span);
    format!(
        r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, "ts": {ts}, "dur": {dur}{args}}}"#
    )
}

/// The trace document: its devices, other top-level members (`"key": value, ` each, or empty),
/// the events and the trace's name.
pub fn document(devices: &[String], members: &str, events: &[String], name: &str) -> String {
    format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{}],
  {members}"traceEvents": [
{}
  ], "traceName": "{name}", "displayTimeUnit": "ms"}}"#,
        devices.join(", "),
        events.join(",\n")
    )
}

/// One caching-allocator event (`[memory]`) at `(pid, tid)` and `ts` µs on device
/// `(Device Type, Device Id)`: `bytes` allocated (negative: freed), the totals after it.
#[allow(dead_code)] // `op_patterns.rs` writes no memory events.
pub fn memory(
    place: (i64, i64),
    ts: i64,
    device: (i64, i64),
    bytes: i64,
    totals: (u64, u64),
) -> String {
    let ((pid, tid), (kind, id), (allocated, reserved)) = (place, device, totals);
    format!(
        r#"{{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": {pid}, "tid": {tid}, "ts": {ts}, "s": "t", "args": {{"Bytes": {bytes}, "Total Allocated": {allocated}, "Total Reserved": {reserved}, "Device Type": {kind}, "Device Id": {id}, "Addr": 140000000000}}}}"#
    )
}
