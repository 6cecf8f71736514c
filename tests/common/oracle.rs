//! Running an independent oracle: a Python script of `tests/oracle/`, over trace files.

use std::path::Path;
use std::process::Command;

/// What `tests/oracle/{script}` prints for `files`; a failing oracle fails the test.
pub fn run<P: AsRef<Path>>(script: &str, files: &[P]) -> String {
    let path = crate::common::repo().join("tests/oracle").join(script);
    let out = Command::new("python3")
        .arg(path)
        .args(files.iter().map(|f| f.as_ref()))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the oracle {script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the oracle prints UTF-8")
}
