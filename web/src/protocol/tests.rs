use serde::de::DeserializeOwned;
use serde::Serialize;
use torchtraceap::llm::protocol::{Endpoint, Protocol};
use torchtraceap::llm::summary::{Prompt, SummaryOptions};
use torchtraceap::ml::labels::WindowLabel;
use torchtraceap::timeline::inspect::{Details, Place};
use torchtraceap::timeline::layout::CounterPeak;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::*;

fn place(event: u32) -> Place {
    Place {
        event,
        name: "volta_sgemm_64x64_nn".into(),
        start: 1_000,
        dur: 250,
        lane: "stream 7".into(),
        group: "GPU 0".into(),
    }
}

/// Request `id` to the worker; ids pass a double's 53 bits, so they travel as `BigInt`s.
fn asked(request: Request) -> ToWorker {
    ToWorker::Request {
        id: (1 << 53) + 1,
        request,
    }
}

/// The reply to request `id`.
fn replied(reply: Reply) -> FromWorker {
    FromWorker::Reply {
        id: (1 << 53) + 1,
        reply,
    }
}

fn round_trip<M: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(message: M) {
    let value = encode(&message).expect("encodes");
    let back: M = decode(value).expect("decodes");
    assert_eq!(back, message);
}

/// Every reply the timeline gets crosses the page↔worker boundary whole, trace times in ns
/// since 1970 (beyond a double's 53 bits) to the nanosecond.
#[wasm_bindgen_test]
fn every_timeline_reply_survives_the_trip_to_the_page() {
    let details = Details {
        place: place(3),
        category: "kernel".into(),
        kind: "gpu_kernel".into(),
        self_time: 250,
        args: vec![("grid".into(), "[1, 2, 3]".into())],
        stack: vec![place(1)],
        launched_by: Some(place(2)),
        launched: Vec::new(),
        graph: Some("launched by graph launch 1 of 1 (of 544 kernels)".into()),
    };
    let replies = [
        TimelineReply::Opened(Opened {
            file: 0,
            span: (1_700_000_000_123_456_789, 1_700_000_000_987_654_321),
            slices: 5,
            rows: 2,
            bands: Vec::new(),
            layout_ms: 1.5,
        }),
        TimelineReply::Drawn(Drawn {
            file: 0,
            seq: 1 << 40,
            start: 1.5,
            end: 2e12,
            frame_at: 1_764_655_000_123.25,
            draw_ms: 0.7,
            content_height: 400.0,
            scroll: 10.0,
            spans: 12,
            selected_box: Some([1.0, 2.0, 3.0, 4.0]),
            in_range: vec![("gpu_kernel".into(), 3, 900)],
            memory_peaks: vec![[250.5, 90.0]],
        }),
        TimelineReply::Picked {
            file: 0,
            picked: Picked::Slice(Box::new(details)),
        },
        TimelineReply::Picked {
            file: 0,
            picked: Picked::Group { index: 2 },
        },
        TimelineReply::Picked {
            file: 1,
            picked: Picked::Band {
                finding: "dataloader-bottleneck".into(),
            },
        },
        TimelineReply::Picked {
            file: 1,
            picked: Picked::MemoryPeak {
                track: "memory, cuda:0".into(),
                peak: Box::new(CounterPeak {
                    at: 1_700_000_000_123_456_789,
                    allocated: 13_155_807_744,
                    reserved: Some(13_356_761_088),
                    op: Some("aten::empty".into()),
                    module: None,
                    capacity: Some(42_346_610_688),
                }),
            },
        },
        TimelineReply::Picked {
            file: 1,
            picked: Picked::Nothing,
        },
        TimelineReply::Found(Found {
            file: 1,
            text: "sgemm".into(),
            total: 1,
            places: vec![place(3)],
        }),
        TimelineReply::Failed {
            error: RequestError::NoTrace { file: 3 },
            drawing: true,
        },
        TimelineReply::Failed {
            error: RequestError::Draw {
                detail: "InvalidStateError".into(),
            },
            drawing: true,
        },
    ];
    for reply in replies {
        round_trip(FromWorker::Frame(Box::new(reply.clone())));
        round_trip(replied(Reply::Timeline(Box::new(reply))));
    }
    round_trip(FromWorker::Finished);
    let motion = Motion {
        zoom: -0.004,
        pan: 0.0012,
        x: 640.0,
    };
    let view = View {
        file: 1,
        start: 0.25,
        end: 3e12,
        width: 1280.0,
        height: 600.0,
        ratio: 2.0,
        scroll: 40.0,
        collapsed: vec![2],
        selected: Some(7),
        reveal: None,
        range: Some((1.0, 2.0)),
        finding: Some("host-device-sync".into()),
        seq: u64::MAX,
        motion: motion.clone(),
    };
    round_trip(asked(Request::Timeline(TimelineRequest::View(view))));
    round_trip(asked(Request::Timeline(TimelineRequest::Motion {
        file: 1,
        motion,
    })));
}

/// The LLM prompts, their request bodies, and the options and endpoint they were made with
/// (every window: `usize::MAX`) cross the boundary both ways; a file without a trace gets its
/// reason.
#[wasm_bindgen_test]
fn prompts_survive_the_trip_both_ways() {
    let options = SummaryOptions {
        max_windows: usize::MAX,
        redact: true,
        module_names: vec!["MyNet".into()],
        ..SummaryOptions::default()
    };
    let endpoint = Endpoint::new("http://127.0.0.1:8080", Protocol::Ollama, "qwen");
    round_trip(asked(Request::Prompts {
        file: 2,
        options: options.clone(),
        endpoint: endpoint.clone(),
    }));
    let prompt = Prompt {
        key: "finding:host-device-sync".into(),
        title: "Host-device sync (step 3)".into(),
        system: "S".into(),
        user: "Window: step 3 \"forward\"\n<name1>".into(),
        window_tokens: 5,
        tokens: 7,
        dropped_lines: 1,
    };
    round_trip(replied(Reply::Prompts {
        file: 2,
        options: options.clone(),
        endpoint: endpoint.clone(),
        result: Ok(vec![Question {
            body: endpoint.body(&prompt),
            prompt,
        }]),
    }));
    round_trip(replied(Reply::Prompts {
        file: 3,
        options,
        endpoint,
        result: Err(RequestError::NoTrace { file: 3 }),
    }));
}

/// The Perfetto export's request and its answer (the JSON, or why there is none).
#[wasm_bindgen_test]
fn the_perfetto_export_survives_the_trip() {
    let request = Request::Perfetto { file: 1 };
    assert_eq!(request.file(), Some(1));
    round_trip(asked(request));
    round_trip(replied(Reply::Perfetto {
        file: 1,
        result: Ok(r#"{"traceEvents": [{"name": "\"</script>"}]}"#.into()),
    }));
    round_trip(replied(Reply::Perfetto {
        file: 1,
        result: Err(RequestError::Export {
            detail: "disk full".into(),
        }),
    }));
}

/// Retraining's requests and replies cross the boundary whole: the labels, the model's file
/// and why labels were left out, or why there is no model.
#[wasm_bindgen_test]
fn retraining_survives_the_trip_both_ways() {
    round_trip(asked(Request::Retrain {
        labels: vec![WindowLabel {
            step: 12,
            phase: "forward".into(),
            pattern: "none".into(),
            window: Some(1),
            trace: Some("rank0.pt.trace.json".into()),
            fingerprint: Some("fp1-0123456789abcdef".into()),
        }],
    }));
    round_trip(asked(Request::BundledModel { labels: Vec::new() }));
    round_trip(replied(Reply::Retrained(Box::new(Ok(Retrained {
        model: Some(torchtraceap::ml::Model::embedded().to_json()),
        used: 1,
        left_out: vec![
            LeftOut::OtherTrace {
                labels: 1,
                trace: Some("other.json".into()),
                fingerprint: None,
            },
            LeftOut::NoClass {
                pattern: "your-gpu-is-broken".into(),
            },
        ],
        base_windows: 9436,
        base_ms: 80.5,
        fit_ms: 4900.0,
        files: Vec::new(),
    })))));
    round_trip(replied(Reply::Retrained(Box::new(Err(
        RetrainError::NoLabelHere {
            labels: 2,
            left_out: vec![LeftOut::NoWindow {
                step: 12,
                phase: "forward".into(),
                window: None,
                trace: None,
            }],
        },
    )))));
    round_trip(replied(Reply::Retrained(Box::new(Err(
        RetrainError::Fetch {
            url: "models/base-set.bin.gz".into(),
            detail: "HTTP 404".into(),
        },
    )))));
}

/// A message from another build of the site is refused with a message saying to reload,
/// whatever else it holds; a value that is no message at all is refused too.
#[wasm_bindgen_test]
fn a_message_of_another_version_is_refused() {
    let message = encode(&FromWorker::Finished).expect("encodes");
    js_sys::Reflect::set(&message, &"version".into(), &JsValue::from(1)).expect("sets");
    let refused = decode::<FromWorker>(message).expect_err("version 1 is not read");
    assert!(
        matches!(refused, ProtocolError::Version { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("reload the page"), "{refused}");
    let text = decode::<FromWorker>(JsValue::from_str("{\"type\":\"finished\"}"));
    assert!(
        matches!(text, Err(ProtocolError::Version { .. })),
        "{text:?}"
    );
    let wrong = encode(&FromWorker::Finished).expect("encodes");
    js_sys::Reflect::set(&wrong, &"message".into(), &JsValue::from(7)).expect("sets");
    assert!(matches!(
        decode::<FromWorker>(wrong),
        Err(ProtocolError::Decode(_))
    ));
}

/// A file's typed error crosses whole, with the figures the page words it from.
#[wasm_bindgen_test]
fn file_errors_survive_the_trip() {
    for error in [
        FileError::TooLarge {
            read: 48 << 20,
            total: 60 << 20,
            memory: 5 << 30,
            limit: 3 << 30,
        },
        FileError::Read {
            step: ReadStep::Bytes {
                at: 1 << 40,
                end: u64::MAX,
            },
            detail: "NotReadableError".into(),
        },
        FileError::Ended { at: 7, end: 512 },
    ] {
        round_trip(FromWorker::Done(Box::new(Outcome {
            file: 2,
            name: "rank2.json".into(),
            size: 60 << 20,
            worker_memory_bytes: 5 << 30,
            result: Err(error),
        })));
    }
}

/// The files to analyze travel as the browser's own handles, not as copies of their data.
#[wasm_bindgen_test]
fn files_travel_as_handles() {
    let blob = web_sys::Blob::new().expect("a blob");
    let files = js_sys::Array::of1(&blob);
    let value = encode(&ToWorker::Analyze {
        files: files.clone(),
        first: 3,
        memory_limit: 1 << 32,
        workers: 4,
        capture: blob.clone().into(),
    })
    .expect("encodes");
    let ToWorker::Analyze {
        files: back,
        first,
        memory_limit,
        workers,
        capture,
    } = decode(value).expect("decodes")
    else {
        panic!("not an Analyze");
    };
    let sent: &JsValue = blob.as_ref();
    assert!(&back.get(0) == sent, "the same Blob object");
    assert!(&capture == sent, "the capture travels as its handle too");
    assert_eq!((first, memory_limit, workers), (3, 1 << 32, 4));
    let analyze = ToWorker::Analyze {
        files,
        first,
        memory_limit,
        workers,
        capture,
    };
    assert_eq!(analyze.transfer().length(), 0);
}
