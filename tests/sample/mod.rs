//! The bundled sample trace's report, for the tests of saved reports and exports.

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::report::Report;

pub fn sample_report() -> Report {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/www/samples/resnet50-a100-dataloader.pt.trace.json.gz"
    ))
    .unwrap();
    let trace = ingest_bytes(&bytes, IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&trace);
    Report::new(&a, &detect::run(&a))
}
