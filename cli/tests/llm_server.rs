//! The LLM client against a real OpenAI-compatible server: llama.cpp's llama-server with a tiny
//! random-weight model, started by `scripts/llm-server.sh start` (which prints the variables).
//! Without `TTAP_LLM_URL` and `TTAP_LLM_KEY` every test prints `SKIPPED:` and passes, or fails
//! where `TTAP_REQUIRE_LLM_SERVER` is set (CI).
//! The model answers with random fragments: the tests assert protocol behaviour, never content.

use std::net::TcpListener;
use std::process::Command;

use torchtraceap::llm::answer::{follows_schema, parse_answer};
use torchtraceap::llm::client::{send, send_body};
use torchtraceap::llm::protocol::{Endpoint, LlmError, Protocol};
use torchtraceap::llm::summary::{estimate_tokens, Prompt, SYSTEM};
use torchtraceap_dev::synth::AntiPattern;

#[path = "../../tests/common/llm_server.rs"]
mod llm_server;
mod synth;
use llm_server::{server, SCHEMA_TOKENS};

fn endpoint(url: &str, key: Option<&str>, stream: bool) -> Endpoint {
    let mut e = Endpoint::new(url, Protocol::OpenAi, "codellama-test");
    e.api_key = key.map(str::to_string);
    e.stream = stream;
    e.max_tokens = 32;
    e.timeout_s = 60;
    e
}

fn prompt(user: String) -> Prompt {
    Prompt {
        key: "test".into(),
        title: "test".into(),
        system: SYSTEM.to_string(),
        window_tokens: estimate_tokens(&user),
        tokens: estimate_tokens(SYSTEM) + estimate_tokens(&user),
        user,
        dropped_lines: 0,
    }
}

fn small() -> Prompt {
    prompt(
        "Window: step 12, forward, 3.2 ms; 48 aten::item calls; GPU idle 2.1 ms after them.".into(),
    )
}

#[test]
fn non_streaming_answer() {
    let Some((url, key)) = server("non_streaming_answer") else {
        return;
    };
    let mut pieces = 0;
    let text = send(&endpoint(&url, Some(&key), false), &small(), |_| {
        pieces += 1
    })
    .expect("an answer")
    .text;
    assert_eq!(pieces, 1);
    assert!(!text.is_empty());
}

#[test]
fn streaming_answer() {
    let Some((url, key)) = server("streaming_answer") else {
        return;
    };
    let mut pieces = Vec::new();
    let text = send(&endpoint(&url, Some(&key), true), &small(), |p| {
        pieces.push(p.to_string())
    })
    .expect("a streamed answer")
    .text;
    assert!(pieces.len() > 1, "one piece per token expected: {pieces:?}");
    assert_eq!(pieces.concat(), text);
}

#[test]
fn structured_answers_follow_the_schema() {
    let Some((url, key)) = server("structured_answers_follow_the_schema") else {
        return;
    };
    for stream in [false, true] {
        let mut e = endpoint(&url, Some(&key), stream);
        e.max_tokens = SCHEMA_TOKENS;
        assert!(e.body(&small()).contains("\"response_format\""));
        let reply = send(&e, &small(), |_| {}).expect("an answer");
        assert_eq!(reply.schema_refused, None);
        assert!(
            follows_schema(&reply.text),
            "stream {stream}: not the schema's object: {}",
            reply.text
        );
        assert!(parse_answer(&reply.text).structured());
        if !stream {
            let usage = reply.usage.expect("a whole answer counts its tokens");
            assert!(
                usage.prompt_tokens > 0 && usage.answer_tokens > 0,
                "{usage:?}"
            );
        }
    }
    // Without the schema, the same random model writes no such object.
    let mut e = endpoint(&url, Some(&key), false);
    e.structured = false;
    let text = send(&e, &small(), |_| {}).expect("an answer").text;
    assert!(!follows_schema(&text), "{text}");
}

#[test]
fn a_refused_schema_is_asked_again_without_it() {
    let Some((url, key)) = server("a_refused_schema_is_asked_again_without_it") else {
        return;
    };
    // llama-server refuses a response_format type it does not know with HTTP 400, as servers
    // without structured output refuse the field.
    let e = endpoint(&url, Some(&key), false);
    let mut body: serde_json::Value = serde_json::from_str(&e.body(&small())).unwrap();
    body["response_format"] = serde_json::json!({"type": "xml_schema"});
    let reply = send_body(&e, &body.to_string(), |_| {}).expect("the answer to the plain request");
    match reply.schema_refused {
        Some(LlmError::Http {
            status: 400,
            message,
        }) => {
            assert!(message.contains("response_format"), "{message}")
        }
        other => panic!("expected the server's 400 on response_format, got {other:?}"),
    }
    assert!(!reply.text.is_empty());
    // A 400 about anything else (no schema to take out) stays an error.
    body.as_object_mut().unwrap().remove("response_format");
    body["messages"] = serde_json::json!("not a list");
    let refused = send_body(&e, &body.to_string(), |_| {}).unwrap_err();
    assert!(
        matches!(refused, LlmError::Http { status: 400, .. }),
        "{refused:?}"
    );
}

#[test]
fn wrong_or_missing_key_is_refused() {
    let Some((url, _)) = server("wrong_or_missing_key_is_refused") else {
        return;
    };
    for key in [Some("not-the-key"), None] {
        for stream in [false, true] {
            let e = send(&endpoint(&url, key, stream), &small(), |_| {}).unwrap_err();
            assert!(
                matches!(e, LlmError::Unauthorized { status: 401, .. }),
                "{key:?}: {e:?}"
            );
            assert!(e.to_string().contains("Invalid API Key"), "{e}");
        }
    }
}

#[test]
fn a_prompt_over_the_context_is_refused() {
    let Some((url, key)) = server("a_prompt_over_the_context_is_refused") else {
        return;
    };
    // The server's context is 32768 tokens over 2 slots; this is far more than 16384.
    let long = "aten::convolution 0.25 ms; ".repeat(8000);
    for stream in [false, true] {
        let e = send(
            &endpoint(&url, Some(&key), stream),
            &prompt(long.clone()),
            |_| {},
        )
        .unwrap_err();
        assert!(matches!(e, LlmError::ContextTooLong { .. }), "{e:?}");
        assert!(e.to_string().contains("--budget"), "{e}");
    }
}

#[test]
fn a_stopped_server_is_unreachable() {
    if server("a_stopped_server_is_unreachable").is_none() {
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = send(
        &endpoint(&format!("http://127.0.0.1:{port}"), None, true),
        &small(),
        |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, LlmError::Unreachable { .. }), "{e:?}");
}

#[test]
fn ttap_explain_end_to_end() {
    let Some((url, key)) = server("ttap_explain_end_to_end") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let trace = dir.join("t.json");
    let sync = synth::at(AntiPattern::HostSync, 2, 0.5);
    synth::synth(&trace, &synth::config(6, 1, vec![sync]), None);
    let ttap = env!("CARGO_BIN_EXE_ttap");
    for stream in [false, true] {
        let mut cmd = Command::new(ttap);
        cmd.arg("explain")
            .arg(&trace)
            .args([
                "--endpoint",
                &url,
                "--model",
                "codellama-test",
                "--max-tokens",
                "24",
            ])
            .env("TTAP_LLM_API_KEY", &key);
        if stream {
            cmd.arg("--stream");
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "stream {stream}: {stderr}");
        assert!(stderr.contains("== request 1 of "), "{stderr}");
        assert!(stdout.contains("## "), "{stdout}");
    }
    let refused = Command::new(ttap)
        .arg("explain")
        .arg(&trace)
        .args([
            "--endpoint",
            &url,
            "--api-key",
            "wrong",
            "--max-windows",
            "1",
        ])
        .env_remove("TTAP_LLM_API_KEY")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refused the API key"));
}
