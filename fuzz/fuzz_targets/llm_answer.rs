//! Fuzzes what reads an LLM endpoint's reply (`torchtraceap::llm::protocol`): the stream parser
//! fed in pieces, the whole-response reader and the lenient answer reader. Any input must give
//! text or an error, never a panic, a hang or unbounded memory.
//!
//! Input layout: `[control, payload...]`: bit 0 of `control` chooses the protocol (OpenAI's
//! server-sent events or Ollama's NDJSON); `(control >> 1) + 1` is the piece size the stream is
//! fed in (1..=128 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtraceap::llm::answer::parse_answer;
use torchtraceap::llm::protocol::Protocol;
use torchtraceap::llm::stream::{parse_response, StreamParser};

fuzz_target!(|data: &[u8]| {
    let Some((&control, payload)) = data.split_first() else {
        return;
    };
    let protocol = if control & 1 == 0 {
        Protocol::OpenAi
    } else {
        Protocol::Ollama
    };
    let piece = usize::from(control >> 1) + 1;
    // Fed in pieces or whole: the same ending, and the same text when complete.
    let read = |size: usize| {
        let mut parser = StreamParser::new(protocol);
        let mut text = String::new();
        for chunk in payload.chunks(size) {
            match parser.feed(chunk) {
                Ok(pieces) => text.extend(pieces),
                Err(_) => return (text, false),
            }
        }
        match parser.finish() {
            Ok(pieces) => {
                text.extend(pieces);
                (text, true)
            }
            Err(_) => (text, false),
        }
    };
    let (text, complete) = read(piece);
    let (whole, whole_complete) = read(payload.len().max(1));
    assert_eq!(complete, whole_complete, "pieces of {piece} bytes end differently");
    if complete {
        assert_eq!(text, whole, "pieces of {piece} bytes read differently");
    }
    // An answer's text comes from the stream's own bytes.
    assert!(text.len() <= payload.len());
    let body = String::from_utf8_lossy(payload);
    let _ = parse_response(protocol, &body);
    let answer = parse_answer(&body);
    assert_eq!(answer.text, body);
    assert!(answer.confidence.is_none_or(|c| (0.0..=1.0).contains(&c)));
});
