//! Running the `ttap` binary from an integration test (`compare.rs`, `run.rs`).

use std::process::Command;

/// `ttap ARGS…`: its exit code and its stdout.
pub fn ttap(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ttap"))
        .args(args)
        .output()
        .expect("ttap runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}
