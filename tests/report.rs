//! Saved reports read back: this version, the older one, and what is refused.

mod sample;

use sample::sample_report;
use torchtraceap::report::{Report, ReportError, VERSION};

#[test]
fn a_saved_report_reads_back_equal() {
    let report = sample_report();
    assert!(!report.findings.is_empty() && !report.windows.is_empty());
    let text = serde_json::to_string_pretty(&report).unwrap();
    assert_eq!(Report::from_json(&text).unwrap(), report);
}

#[test]
fn a_version_1_report_reads_without_the_window_scores() {
    let mut json = serde_json::to_value(sample_report()).unwrap();
    json["version"] = 1.into();
    json.as_object_mut().unwrap().remove("unexplained");
    for w in json["windows"].as_array_mut().unwrap() {
        let w = w.as_object_mut().unwrap();
        w.remove("anomaly_probability");
        w.remove("predicted_type");
    }
    let old = Report::from_json(&json.to_string()).unwrap();
    assert_eq!(old.version, 1);
    assert!(old.unexplained.is_empty());
    assert!(old.windows.iter().all(|w| w.anomaly_probability.is_none()));
    assert_eq!(old.findings, sample_report().findings);
}

#[test]
fn newer_foreign_and_damaged_documents_are_refused_with_the_reason() {
    let mut json = serde_json::to_value(sample_report()).unwrap();
    json["version"] = (VERSION + 1).into();
    let newer = Report::from_json(&json.to_string()).unwrap_err();
    assert!(matches!(newer, ReportError::Newer(v) if v == VERSION + 1));
    assert!(newer.to_string().contains("newer TorchTraceAP"), "{newer}");

    json["version"] = VERSION.into();
    json["format"] = "chrome.trace".into();
    let foreign = Report::from_json(&json.to_string()).unwrap_err();
    assert!(matches!(foreign, ReportError::OtherFormat(_)));
    assert!(
        foreign.to_string().contains("\"chrome.trace\""),
        "{foreign}"
    );

    json["format"] = "torchtraceap.report".into();
    json["findings"] = "none".into();
    let damaged = Report::from_json(&json.to_string()).unwrap_err();
    assert!(matches!(
        damaged,
        ReportError::Damaged {
            version: VERSION,
            ..
        }
    ));
    assert!(
        damaged.to_string().contains("damaged or edited"),
        "{damaged}"
    );

    let not_json = Report::from_json("{\"traceEvents\": [").unwrap_err();
    assert!(matches!(not_json, ReportError::NotAReport(_)));
    assert!(
        not_json
            .to_string()
            .starts_with("not a TorchTraceAP report"),
        "{not_json}"
    );
}
