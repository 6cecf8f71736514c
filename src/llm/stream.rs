//! Reading a model's answer as it arrives: an incremental parser of server-sent events
//! (OpenAI-compatible servers: `data: {chunk}` lines, then `data: [DONE]`) and of Ollama's
//! newline-delimited JSON, fed in any pieces, capped at [`MAX_RESPONSE_BYTES`]; and the text of
//! a whole (non-streamed) response. Its tests parse the same text cut at every byte.

use serde_json::{json, Value};

use super::protocol::{error_from_status, LlmError, Protocol, MAX_RESPONSE_BYTES};

/// The text of a whole (non-streamed) response.
pub fn parse_response(protocol: Protocol, body: &str) -> Result<String, LlmError> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(LlmError::TooLong { bytes: body.len() });
    }
    let v: Value = serde_json::from_str(body).map_err(|e| LlmError::Malformed {
        message: format!("the response is not JSON: {e}"),
    })?;
    if let Some(e) = v.get("error") {
        return Err(error_from_status(500, &json!({ "error": e }).to_string()));
    }
    let text = match protocol {
        Protocol::OpenAi => v.pointer("/choices/0/message/content"),
        Protocol::Ollama => v.pointer("/message/content"),
    };
    text.and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| LlmError::Malformed {
            message: "no message content in the response".to_string(),
        })
}

/// An incremental parser of a streamed answer: feed the bytes as they come, in any pieces.
#[derive(Clone, Debug)]
pub struct StreamParser {
    protocol: Protocol,
    line: Vec<u8>,
    done: bool,
    /// Bytes fed so far.
    bytes: usize,
}

impl StreamParser {
    pub fn new(protocol: Protocol) -> StreamParser {
        StreamParser {
            protocol,
            line: Vec::new(),
            done: false,
            bytes: 0,
        }
    }

    /// Whether the stream said it is complete (`data: [DONE]`, `"done": true`).
    pub fn done(&self) -> bool {
        self.done
    }

    /// The pieces of answer text completed by `bytes`; [`LlmError::TooLong`] once the stream
    /// passes [`MAX_RESPONSE_BYTES`] (the pieces before are already handed out).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, LlmError> {
        self.bytes = self.bytes.saturating_add(bytes.len());
        if self.bytes > MAX_RESPONSE_BYTES {
            return Err(LlmError::TooLong {
                bytes: MAX_RESPONSE_BYTES,
            });
        }
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, &mut out)?;
            } else {
                self.line.push(b);
            }
        }
        Ok(out)
    }

    /// The end of the stream: the last unterminated line, and an error when the stream stopped
    /// before its end marker.
    pub fn finish(&mut self) -> Result<Vec<String>, LlmError> {
        let mut out = Vec::new();
        let line = std::mem::take(&mut self.line);
        self.line_done(&line, &mut out)?;
        if self.done {
            Ok(out)
        } else {
            Err(LlmError::Malformed {
                message: match self.protocol {
                    Protocol::OpenAi => "the event stream ended before `data: [DONE]`",
                    Protocol::Ollama => "the stream ended before a `\"done\": true` object",
                }
                .to_string(),
            })
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<String>) -> Result<(), LlmError> {
        let line = std::str::from_utf8(line).map_err(|e| LlmError::Malformed {
            message: format!("a stream line is not UTF-8: {e}"),
        })?;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || self.done {
            return Ok(());
        }
        let json = match self.protocol {
            Protocol::OpenAi => {
                if line.starts_with(':') || !line.starts_with("data:") {
                    // Comments, and `event:`, `id:`, `retry:` fields: nothing to read.
                    return Ok(());
                }
                let data = line["data:".len()..].trim();
                if data == "[DONE]" {
                    self.done = true;
                    return Ok(());
                }
                data
            }
            Protocol::Ollama => line.trim(),
        };
        let v: Value = serde_json::from_str(json).map_err(|e| LlmError::Malformed {
            message: format!("a stream chunk is not JSON ({e}): {}", cut(json)),
        })?;
        if let Some(e) = v.get("error") {
            return Err(error_from_status(500, &json!({ "error": e }).to_string()));
        }
        let text = match self.protocol {
            Protocol::OpenAi => v.pointer("/choices/0/delta/content"),
            Protocol::Ollama => {
                self.done = v.get("done").and_then(Value::as_bool) == Some(true);
                v.pointer("/message/content")
            }
        };
        if let Some(t) = text.and_then(Value::as_str).filter(|t| !t.is_empty()) {
            out.push(t.to_string());
        }
        Ok(())
    }
}

fn cut(s: &str) -> String {
    s.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SSE: &str = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
: keep-alive\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Hé\"}}]}\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"llo \\\"wörld\\\"\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

    const NDJSON: &str = "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hé\"},\"done\":false}\n\
{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"llo \\\"wörld\\\"\"},\"done\":false}\n\
{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"eval_count\":2}";

    /// The whole text of `input` fed in pieces split at `cuts`.
    fn parse_split(protocol: Protocol, input: &[u8], cuts: &[usize]) -> Result<String, LlmError> {
        let mut p = StreamParser::new(protocol);
        let mut text = String::new();
        let mut at = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            text.extend(p.feed(&input[at..c])?);
            at = c;
        }
        text.extend(p.finish()?);
        Ok(text)
    }

    #[test]
    fn streams_parse_the_same_at_every_chunk_boundary() {
        for (protocol, input) in [(Protocol::OpenAi, SSE), (Protocol::Ollama, NDJSON)] {
            let b = input.as_bytes();
            assert_eq!(parse_split(protocol, b, &[]).unwrap(), "Héllo \"wörld\"");
            for i in 0..=b.len() {
                assert_eq!(
                    parse_split(protocol, b, &[i]).unwrap(),
                    "Héllo \"wörld\"",
                    "{protocol:?} cut at {i}"
                );
                for j in (i..=b.len()).step_by(7) {
                    assert_eq!(
                        parse_split(protocol, b, &[i, j]).unwrap(),
                        "Héllo \"wörld\""
                    );
                }
            }
            let bytewise: Vec<usize> = (1..b.len()).collect();
            assert_eq!(
                parse_split(protocol, b, &bytewise).unwrap(),
                "Héllo \"wörld\""
            );
        }
    }

    #[test]
    fn answers_are_cut_at_the_byte_cap_with_what_came_before_kept() {
        let piece = "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n";
        let mut p = StreamParser::new(Protocol::OpenAi);
        let mut text = String::new();
        // Bounded loops: a parser without the cap fails the test rather than hanging it.
        let e = (0..2 * MAX_RESPONSE_BYTES / piece.len())
            .find_map(|_| match p.feed(piece.as_bytes()) {
                Ok(pieces) => {
                    text.extend(pieces);
                    None
                }
                Err(e) => Some(e),
            })
            .expect("cut at the cap");
        assert_eq!(
            e,
            LlmError::TooLong {
                bytes: MAX_RESPONSE_BYTES
            }
        );
        assert!(e.to_string().contains("cut after"), "{e}");
        assert_eq!(text.len(), 2 * (MAX_RESPONSE_BYTES / piece.len()));
        // One endless line, no newline ever: cut too, its bytes never all held.
        let mut p = StreamParser::new(Protocol::Ollama);
        let chunk = vec![b'x'; 1 << 16];
        let fed = (0..2 * MAX_RESPONSE_BYTES / chunk.len())
            .find(|_| p.feed(&chunk).is_err())
            .expect("cut at the cap");
        assert_eq!(fed, MAX_RESPONSE_BYTES / chunk.len());
        let whole = format!(
            "{{\"message\":{{\"content\":\"{}\"}}}}",
            "y".repeat(MAX_RESPONSE_BYTES)
        );
        assert!(matches!(
            parse_response(Protocol::Ollama, &whole),
            Err(LlmError::TooLong { .. })
        ));
    }

    #[test]
    fn broken_streams_are_errors() {
        let cut = &SSE[..SSE.find("data: [DONE]").unwrap()];
        let e = parse_split(Protocol::OpenAi, cut.as_bytes(), &[]).unwrap_err();
        assert!(matches!(e, LlmError::Malformed { .. }), "{e}");
        let e = parse_split(Protocol::OpenAi, b"data: {not json\n\n", &[]).unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
        let e = parse_split(
            Protocol::Ollama,
            b"{\"message\":{\"content\":\"a\"}}\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("done"), "{e}");
        let e = parse_split(
            Protocol::OpenAi,
            b"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e,
            LlmError::Http {
                status: 500,
                message: "boom".into()
            }
        );
        let e = parse_split(
            Protocol::Ollama,
            b"{\"error\":\"model 'x' not found\"}\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("model 'x' not found"), "{e}");
    }
}
